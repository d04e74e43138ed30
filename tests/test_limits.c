/* test_limits.c: the rate limits of engine/core/limits.c on the fake
 * clock: each algorithm's exact guarantee (the window's "no interval of
 * its length holds more than the limit", checked by brute force under
 * random arrivals; GCRA as redis-cell, exact at a million per second),
 * retry hints that are exactly the first allowed instant, every TTL
 * operation and edge, peeks and denied multi-checks that charge nothing,
 * the shared memory budget (0x82 changing nothing, injected allocation
 * failures), the sweep and the GC hook, the figures per kind, and two
 * threads on one hot name allowed exactly the limit (run under TSan by
 * scripts/robustness.sh). */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/core/gc.h"
#include "engine/core/limits.h"
#include "engine/core/table.h"
#include "tests/engine_fake.h"

#define T0_MS 1700000000000ull

typedef unsigned __int128 cnt_u128_t;
#define SEC 1000000000ull
#define MS 1000000ull

/* A limits object on the fake clock and a budget of its own. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_map_budget budget;
    cnt_limits *l;
} fixture;

/* Builds a fixture with a budget of limit bytes (0 = unlimited). */
static fixture *fixture_new(uint64_t limit)
{
    fixture *f = calloc(1, sizeof *f);

    assert_non_null(f);
    cnt_fake_clock_init(&f->clock, T0_MS);
    cnt_map_budget_init(&f->budget, limit);
    cnt_limits_config cfg = { .buckets = 1024, .budget = &f->budget,
                              .clock = &f->clock.clock };
    f->l = cnt_limits_new(&cfg);
    assert_non_null(f->l);
    return f;
}

/* Frees a fixture; the budget must be back to 0. */
static void fixture_free(fixture *f)
{
    cnt_limits_free(f->l);
    assert_int_equal(cnt_map_budget_used(&f->budget), 0);
    free(f);
}

/* Lets ns pass. */
static void pass(fixture *f, uint64_t ns)
{
    cnt_fake_clock_advance_ns(&f->clock, ns);
}

/* The fake monotonic time now. */
static uint64_t now_ns(fixture *f)
{
    return cnt_clock_mono_ns(&f->clock.clock);
}

/* Window check arguments. */
static cnt_check_request win(const char *name, uint32_t limit, uint32_t cost,
                          uint64_t window, uint8_t slots, bool peek)
{
    cnt_check_request a = {
        .opcode = CNT_OP_WINDOW_CHECK, .peek = peek, .slots = slots,
        .limit_or_burst = limit, .cost = cost, .period_ns = window,
        .name = (const uint8_t *)name, .name_len = (uint16_t)strlen(name),
    };
    return a;
}

/* GCRA check arguments. */
static cnt_check_request gcra(const char *name, uint32_t burst, uint32_t count,
                           uint64_t period, uint32_t cost, bool peek)
{
    cnt_check_request a = {
        .opcode = CNT_OP_GCRA_CHECK, .peek = peek,
        .limit_or_burst = burst, .count = count, .cost = cost,
        .period_ns = period,
        .name = (const uint8_t *)name, .name_len = (uint16_t)strlen(name),
    };
    return a;
}

/* One check that must answer OK; returns its answer. */
static cnt_check_result check(fixture *f, cnt_check_request a)
{
    cnt_check_result ans;

    memset(&ans, 0xee, sizeof ans);
    assert_int_equal(cnt_limits_check(f->l, &a, &ans), CNT_STATUS_OK);
    return ans;
}

/* The state of one check. */
static uint8_t state(fixture *f, cnt_check_request a)
{
    return check(f, a).state;
}

/* ---- Window ---- */

/* Random arrivals at arbitrary offsets: no closed interval of length W
 * (its start checked at every allowed arrival, where the maximum is
 * reached) holds more than the limit of allowed cost; and each "limited"
 * answer's retry hint is exact: one ns earlier limited, at it allowed. */
static void test_window_guarantee_random(void **st)
{
    (void)st;
    enum { N = 4000 };
    static uint64_t at[N];
    static uint32_t cost[N];
    size_t nal = 0;
    const uint64_t W = 1 * SEC;
    const uint32_t limit = 40;
    fixture *f = fixture_new(0);
    unsigned seed = 12345;

    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        /* Bursts and gaps: most steps tiny, some about a slot or more. */
        uint64_t step = (seed >> 8) % 7 == 0 ? (seed >> 4) % (300 * MS)
                                             : (seed >> 6) % (3 * MS);
        pass(f, step);
        uint32_t c = 1 + (seed >> 12) % 4;
        cnt_check_result a = check(f, win("w", limit, c, W, 10, false));
        if (a.state == CNT_CHECK_ALLOWED) {
            at[nal] = now_ns(f);
            cost[nal++] = c;
            assert_int_equal(a.retry_after_ns, 0);
            assert_true(a.used <= limit);
            assert_int_equal(a.remaining, limit - a.used);
        } else {
            assert_int_equal(a.state, CNT_CHECK_LIMITED);
            if (i % 16 == 0) {
                /* The hint is the first instant the same call passes. */
                pass(f, a.retry_after_ns - 1);
                assert_int_equal(state(f, win("w", limit, c, W, 10, true)),
                                 CNT_CHECK_LIMITED);
                pass(f, 1);
                assert_int_equal(state(f, win("w", limit, c, W, 10, true)),
                                 CNT_CHECK_ALLOWED);
            }
        }
    }
    assert_true(nal > 100);
    uint64_t worst = 0;
    for (size_t i = 0; i < nal; i++) {
        uint64_t sum = 0;
        for (size_t j = i; j < nal && at[j] <= at[i] + W; j++)
            sum += cost[j];
        assert_true(sum <= limit);
        if (sum > worst)
            worst = sum;
    }
    /* Not vacuous: some interval is full. */
    assert_true(worst > limit - 4);
    fixture_free(f);
}

/* Slot arithmetic: counts age out a slot at a time; used, remaining,
 * reset and retry come out exactly. */
static void test_window_slots_exact(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t W = 1 * SEC, S = 100 * MS;
    /* Start at a slot boundary plus 30 ms. */
    pass(f, S - now_ns(f) % S + 30 * MS);
    cnt_check_result a = check(f, win("x", 3, 2, W, 10, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.limit, 3);
    assert_int_equal(a.used, 2);
    assert_int_equal(a.remaining, 1);
    /* The count falls out once slot k + 11 begins. */
    assert_int_equal(a.reset_after_ns, 11 * S - 30 * MS);
    pass(f, 5 * S);
    a = check(f, win("x", 3, 1, W, 10, false));
    assert_int_equal(a.used, 3);
    a = check(f, win("x", 3, 1, W, 10, false));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.used, 3);
    assert_int_equal(a.remaining, 0);
    /* The 2 of slot k leave at the start of slot k + 11, 6 slots on. */
    assert_int_equal(a.retry_after_ns, 6 * S - 30 * MS);
    assert_int_equal(a.reset_after_ns, 11 * S - 30 * MS);
    pass(f, a.retry_after_ns);
    a = check(f, win("x", 3, 1, W, 10, true));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.used, 2);
    fixture_free(f);
}

/* cost > limit is never (nothing charged, even without peek); peek
 * charges nothing; a changed limit applies on the next call. */
static void test_window_never_peek_limit(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_limits_stats s;

    cnt_check_result a = check(f, win("n", 3, 4, 0, 0, false));
    assert_int_equal(a.state, CNT_CHECK_NEVER);
    assert_int_equal(a.retry_after_ns, UINT64_MAX);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].objects, 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(state(f, win("n", 1, 1, 0, 0, true)),
                         CNT_CHECK_ALLOWED);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].objects, 0);
    assert_int_equal(state(f, win("n", 1, 1, 0, 0, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, win("n", 1, 1, 0, 0, false)),
                     CNT_CHECK_LIMITED);
    /* The limit is the call's: raise it and the next call passes. */
    a = check(f, win("n", 2, 1, 0, 0, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.used, 2);
    /* Lower it below what is used: limited, remaining 0. */
    a = check(f, win("n", 1, 1, 0, 0, false));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.remaining, 0);
    fixture_free(f);
}

/* Another shape keeps everything remembered (never allows more than
 * either shape), in the new shape's current slot. */
static void test_window_reshape(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    for (int i = 0; i < 5; i++) {
        assert_int_equal(state(f, win("r", 10, 1, SEC, 10, false)),
                         CNT_CHECK_ALLOWED);
        pass(f, 150 * MS);
    }
    /* 750 ms on: all five still remembered by the 1 s shape. */
    cnt_check_result a = check(f, win("r", 10, 1, 2 * SEC, 4, true));
    assert_int_equal(a.used, 6);
    a = check(f, win("r", 10, 1, 2 * SEC, 4, false));
    assert_int_equal(a.used, 6);
    /* Now all six sit in one 500 ms slot; they stay 2.5 s at most. */
    assert_int_equal(state(f, win("r", 6, 1, 2 * SEC, 4, true)),
                     CNT_CHECK_LIMITED);
    pass(f, 2500 * MS);
    a = check(f, win("r", 6, 1, 2 * SEC, 4, true));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.used, 1);
    fixture_free(f);
}

/* Arguments out of range are refused by the core itself. */
static void test_window_invalid(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result ans;
    cnt_check_request bad[] = {
        win("i", 5, 0, 0, 0, false),            /* cost 0 */
        win("i", 5, 1, 0, 65, false),           /* slots > 64 */
        win("i", 5, 1, 1000001, 10, false),     /* not a multiple */
        win("i", 5, 1, 9990, 10, false),        /* slot < 1 us */
        win("", 5, 1, 0, 0, false),             /* empty name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cnt_limits_check(f->l, &bad[i], &ans),
                         CNT_STATUS_INVALID);
    cnt_check_request a = win("i", 5, 1, 0, 0, false);
    a.opcode = 0x36;
    assert_int_equal(cnt_limits_check(f->l, &a, &ans), CNT_STATUS_INVALID);
    /* The smallest slot, 1 us, and 64 slots are fine. */
    assert_int_equal(state(f, win("i", 5, 1, 64000, 64, false)),
                     CNT_CHECK_ALLOWED);
    fixture_free(f);
}

/* ---- GCRA ---- */

/* redis-cell's example: CL.THROTTLE user123 15 30 60 1 answers limit 16,
 * remaining 15, retry -1 (here 0), reset 2 s. */
static void test_gcra_redis_cell(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result a = check(f, gcra("u", 15, 30, 60 * SEC, 1, false));

    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.limit, 16);
    assert_int_equal(a.remaining, 15);
    assert_int_equal(a.used, 1);
    assert_int_equal(a.retry_after_ns, 0);
    assert_int_equal(a.reset_after_ns, 2 * SEC);
    /* The burst: 15 more at once, then limited with retry 2 s. */
    for (int i = 0; i < 15; i++)
        assert_int_equal(state(f, gcra("u", 15, 30, 60 * SEC, 1, false)),
                         CNT_CHECK_ALLOWED);
    a = check(f, gcra("u", 15, 30, 60 * SEC, 1, false));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.remaining, 0);
    assert_int_equal(a.used, 16);
    assert_int_equal(a.retry_after_ns, 2 * SEC);
    assert_int_equal(a.reset_after_ns, 32 * SEC);
    pass(f, 2 * SEC - 1);
    assert_int_equal(state(f, gcra("u", 15, 30, 60 * SEC, 1, true)),
                     CNT_CHECK_LIMITED);
    pass(f, 1);
    a = check(f, gcra("u", 15, 30, 60 * SEC, 1, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.remaining, 0);
    fixture_free(f);
}

/* 1,000,000 per second is legal and exact; a rate of 3 per microsecond
 * (T = 333.33 ns) never drifts: the k-th spaced call is allowed exactly
 * at ceil(k * 1000 / 3) ns, each retry hint rounded up. */
static void test_gcra_fine_rates(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(state(f, gcra("m", 0, 1000000, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 999);
    cnt_check_result a = check(f, gcra("m", 0, 1000000, SEC, 1, false));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.retry_after_ns, 1);
    pass(f, 1);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(state(f, gcra("m", 0, 1000000, SEC, 1, false)),
                         CNT_CHECK_ALLOWED);
        pass(f, 1000);
    }
    /* Ten million per second, and more, work too. */
    assert_int_equal(state(f, gcra("m2", 0, 4000000000u, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);

    /* Burst 1 keeps TAT ahead of the (rounded up) retries, so what is
     * measured is the arithmetic, not GCRA's max(TAT, now). */
    uint64_t t0 = now_ns(f);
    for (int i = 0; i < 2; i++)
        assert_int_equal(state(f, gcra("third", 1, 3, 1000, 1, false)),
                         CNT_CHECK_ALLOWED);
    for (uint64_t k = 1; k <= 3000; k++) {
        a = check(f, gcra("third", 1, 3, 1000, 1, false));
        assert_int_equal(a.state, CNT_CHECK_LIMITED);
        uint64_t due = t0 + (k * 1000 + 2) / 3;
        assert_int_equal(now_ns(f) + a.retry_after_ns, due);
        pass(f, a.retry_after_ns - 1);
        assert_int_equal(state(f, gcra("third", 1, 3, 1000, 1, true)),
                         CNT_CHECK_LIMITED);
        pass(f, 1);
        assert_int_equal(state(f, gcra("third", 1, 3, 1000, 1, false)),
                         CNT_CHECK_ALLOWED);
    }
    fixture_free(f);
}

/* Random arrivals of random cost: between any two allowed calls i <= j,
 * the allowed cost is at most L + (t_j - t_i) / T (the burst plus the
 * rate), checked exactly as cost * period <= L * period + dt * count; and
 * each "limited" hint is the first instant the same call passes. */
static void test_gcra_guarantee_random(void **st)
{
    (void)st;
    enum { N = 3000 };
    static uint64_t at[N];
    static uint32_t cost[N];
    size_t nal = 0;
    const uint32_t burst = 5, count = 7;
    const uint64_t period = 10 * MS;
    fixture *f = fixture_new(0);
    unsigned seed = 777;

    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        pass(f, (seed >> 8) % 5 == 0 ? (seed >> 3) % (20 * MS)
                                     : (seed >> 5) % 500000);
        uint32_t c = 1 + (seed >> 13) % 3;
        cnt_check_result a = check(f, gcra("r", burst, count, period, c,
                                           false));
        if (a.state == CNT_CHECK_ALLOWED) {
            at[nal] = now_ns(f);
            cost[nal++] = c;
        } else if (i % 8 == 0) {
            assert_int_equal(a.state, CNT_CHECK_LIMITED);
            pass(f, a.retry_after_ns - 1);
            assert_int_equal(state(f, gcra("r", burst, count, period, c,
                                           true)), CNT_CHECK_LIMITED);
            pass(f, 1);
            assert_int_equal(state(f, gcra("r", burst, count, period, c,
                                           true)), CNT_CHECK_ALLOWED);
        }
    }
    assert_true(nal > 100);
    for (size_t i = 0; i < nal; i++) {
        cnt_u128_t sum = 0;
        for (size_t j = i; j < nal; j++) {
            sum += cost[j];
            assert_true(sum * period <=
                        (cnt_u128_t)(burst + 1) * period +
                            (cnt_u128_t)(at[j] - at[i]) * count);
        }
    }
    fixture_free(f);
}

/* cost > burst + 1 is never and charges nothing; peek charges nothing; a
 * changed burst applies on the next call; arguments out of range are
 * refused. */
static void test_gcra_never_peek_change(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result a = check(f, gcra("g", 2, 1, SEC, 4, false));
    cnt_limits_stats s;

    assert_int_equal(a.state, CNT_CHECK_NEVER);
    assert_int_equal(a.retry_after_ns, UINT64_MAX);
    assert_int_equal(a.limit, 3);
    assert_int_equal(a.remaining, 3);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].objects, 0);
    /* cost = burst + 1 is fine. */
    for (int i = 0; i < 5; i++)
        assert_int_equal(state(f, gcra("g", 2, 1, SEC, 3, true)),
                         CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, gcra("g", 2, 1, SEC, 3, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, gcra("g", 2, 1, SEC, 1, false)),
                     CNT_CHECK_LIMITED);
    /* A bigger burst on the next call lets one more through. */
    a = check(f, gcra("g", 3, 1, SEC, 1, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.remaining, 0);
    /* A changed count: TAT stays (now + 4 s), the interval is now 0.5 s. */
    a = check(f, gcra("g", 3, 2, SEC, 1, true));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.retry_after_ns, 2500 * MS);

    cnt_check_result ans;
    cnt_check_request bad[] = {
        gcra("g", 1, 0, SEC, 1, false),
        gcra("g", 1, 1, 0, 1, false),
        gcra("g", 1, 1, SEC, 0, false),
        gcra("g", UINT32_MAX, 1, UINT64_MAX, 1, false),
        gcra("", 1, 1, SEC, 1, false),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cnt_limits_check(f->l, &bad[i], &ans),
                         CNT_STATUS_INVALID);
    fixture_free(f);
}

/* ---- TTL ---- */

/* Insert, query (time left rounded up in the record's unit), exists,
 * expiry at the exact instant, an expired record replaced. */
static void test_ttl_insert_query(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;
    cnt_limits_stats s;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 5, 3, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &v), CNT_STATUS_OK);
    assert_int_equal(v.quota, 5);
    assert_int_equal(v.ttl_left, 3);
    assert_int_equal(v.unit, 3);
    pass(f, 1);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &v), CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 3);
    pass(f, 2 * SEC);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &v), CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 1);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 1, 0),
                     CNT_STATUS_EXISTS);
    pass(f, SEC - 2);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &v), CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 1);
    assert_int_equal(v.quota, 5);
    pass(f, 1);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &v),
                     CNT_STATUS_NOT_FOUND);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, 1);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 0);
    /* Insert over an expired record replaces it. */
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("u"), 1, 1, 1),
                     CNT_STATUS_OK);
    pass(f, 1000);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("u"), 9, 2, 2),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("u"), &v), CNT_STATUS_OK);
    assert_int_equal(v.quota, 9);
    assert_int_equal(v.ttl_left, 2);
    assert_int_equal(v.unit, 2);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, 2);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 1);
    fixture_free(f);
}

/* Every unit; ttl 0, unit 6 and ns overflow refused. */
static void test_ttl_units(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    static const uint64_t ns[] = { 1, 1000, MS, SEC, 60 * SEC,
                                   3600 * SEC };
    cnt_ttl_answer v;

    for (uint8_t u = 0; u <= 5; u++) {
        char name[8] = { 'u', (char)('0' + u), 0 };
        assert_int_equal(cnt_ttl_insert(f->l, (const uint8_t *)name, 2, 0,
                                        7, u), CNT_STATUS_OK);
        pass(f, 6 * ns[u]);
        assert_int_equal(cnt_ttl_query(f->l, (const uint8_t *)name, 2, &v),
                         CNT_STATUS_OK);
        assert_int_equal(v.ttl_left, 1);
        assert_int_equal(v.unit, u);
        pass(f, ns[u]);
        assert_int_equal(cnt_ttl_query(f->l, (const uint8_t *)name, 2, &v),
                         CNT_STATUS_NOT_FOUND);
    }
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("x"), 1, 0, 3),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("x"), 1, 1, 6),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("x"), 1,
                                    UINT64_MAX / 3600000000000ull + 1, 5),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("x"), 1, UINT64_MAX, 0),
                     CNT_STATUS_OK);
    fixture_free(f);
}

/* Quota changes: set, add (overflow refused), subtract (below zero
 * refused, nothing changed). */
static void test_ttl_update_quota(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("q"), 5, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 1, 0, 3, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.quota, 8);
    assert_int_equal(v.ttl_left, 10);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 2, 0, 8, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.quota, 0);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 2, 0, 1, &v),
                     CNT_STATUS_BELOW_ZERO);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 0, 0, 42, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.quota, 42);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 2, 0, 43, &v),
                     CNT_STATUS_BELOW_ZERO);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 1, 0,
                                    UINT64_MAX - 41, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("q"), &v), CNT_STATUS_OK);
    assert_int_equal(v.quota, 42);
    /* Malformed attribute, change, unit. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 2, 0, 0, 1, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 3, 0, 1, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("q"), 0, 0, 6, 1, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("none"), 0, 0, 0, 1, &v),
                     CNT_STATUS_NOT_FOUND);
    fixture_free(f);
}

/* Time changes in the record's own unit (CNT_TTL_UNIT_RECORD, the
 * Throttr front's): a record inserted in minutes is changed in minutes, one
 * in ms in ms; a change too large for 64 bits of ns is refused under the
 * lock, as a patch to 0 is before it. */
static void test_ttl_update_record_unit(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("m"), 1, 2, 4),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("s"), 1, 2000, 2),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("m"), 1, 1,
                                    CNT_TTL_UNIT_RECORD, 3, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 5);
    assert_int_equal(v.unit, 4);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("s"), 1, 2,
                                    CNT_TTL_UNIT_RECORD, 500, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 1500);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("s"), 1, 0,
                                    CNT_TTL_UNIT_RECORD, 7, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 7);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("s"), 1, 0,
                                    CNT_TTL_UNIT_RECORD, 0, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("m"), 1, 1,
                                    CNT_TTL_UNIT_RECORD, UINT64_MAX / 1000,
                                    &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("s"), 1, 2,
                                    CNT_TTL_UNIT_RECORD, 7, &v),
                     CNT_STATUS_BELOW_ZERO);
    /* Quota changes ignore the unit. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("m"), 0, 1,
                                    CNT_TTL_UNIT_RECORD, 4, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.quota, 5);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("none"), 1, 1,
                                    CNT_TTL_UNIT_RECORD, 1, &v),
                     CNT_STATUS_NOT_FOUND);
    /* Any other unit past 5 stays invalid. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("m"), 1, 1, 6, 1, &v),
                     CNT_STATUS_INVALID);
    pass(f, 5 * 60 * SEC);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("m"), &v),
                     CNT_STATUS_NOT_FOUND);
    fixture_free(f);
}

/* Time changes: set, extend, shorten (to 0 or below refused), each
 * rescheduling the expiry; the display unit stays. */
static void test_ttl_update_time(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("e"), 1, 2, 3),
                     CNT_STATUS_OK);
    /* Extend by 1500 ms: 3.5 s left, shown as 4 s. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 1, 2, 1500, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 4);
    assert_int_equal(v.unit, 3);
    pass(f, 3 * SEC);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("e"), &v), CNT_STATUS_OK);
    /* 500 ms left: shortening by 500 ms (or more) is refused. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 2, 2, 500, &v),
                     CNT_STATUS_BELOW_ZERO);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 2, 2, 499, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 1);
    pass(f, MS - 1);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("e"), &v), CNT_STATUS_OK);
    /* Set: 2 minutes from now, shown in seconds. */
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 0, 4, 2, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.ttl_left, 120);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 0, 4, 0, &v),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 1, 5,
                                    UINT64_MAX / 1000, &v),
                     CNT_STATUS_INVALID);
    pass(f, 120 * SEC - 1);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("e"), &v), CNT_STATUS_OK);
    pass(f, 1);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("e"), 1, 1, 3, 5, &v),
                     CNT_STATUS_NOT_FOUND);
    fixture_free(f);
}

/* Purge; purging an absent or expired record says not found. */
static void test_ttl_purge(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;
    cnt_limits_stats s;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")), CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("p"), &v),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 1, 1, 3),
                     CNT_STATUS_OK);
    pass(f, SEC);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")),
                     CNT_STATUS_NOT_FOUND);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 0);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, 1);
    /* checks: 2 inserts, query, 2 purges... all 6 operations. */
    assert_int_equal(s.kind[CNT_LIMITS_TTL].checks, 6);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].allowed, 3);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].limited, 3);
    fixture_free(f);
}

/* One name, four objects: the kinds (and the semaphores, in another map)
 * are separate namespaces. */
static void test_namespaces(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_limits_stats s;
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("same"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(state(f, win("same", 1, 1, 0, 0, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, gcra("same", 0, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, win("same", 1, 1, 0, 0, false)),
                     CNT_CHECK_LIMITED);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("same"), &v),
                     CNT_STATUS_OK);
    cnt_limits_stats_get(f->l, &s);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++)
        assert_int_equal(s.kind[k].objects, 1);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].checks, 2);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].allowed, 1);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].limited, 1);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].checks, 1);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].allowed, 1);
    fixture_free(f);
}

/* ---- Multi-check ---- */

/* All allowed: all charged. One denied: nothing charged, each item as a
 * peek of it alone would say. Peek: nothing charged. Items of one name
 * and different kinds share a stripe (locked once). */
static void test_multi_all_or_nothing(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result out[CNT_MULTI_MAX];
    uint8_t overall = 9;
    cnt_check_request items[3] = {
        win("k", 2, 1, 0, 0, false),
        gcra("k", 0, 1, SEC, 1, false),
        win("other", 5, 2, 0, 0, false),
    };

    assert_int_equal(cnt_limits_multi(f->l, items, 3, true, out, &overall),
                     CNT_STATUS_OK);
    assert_int_equal(overall, 0);
    assert_int_equal(out[2].used, 2);
    assert_int_equal(state(f, gcra("k", 0, 1, SEC, 1, true)),
                     CNT_CHECK_ALLOWED);     /* the peek charged nothing */
    assert_int_equal(cnt_limits_multi(f->l, items, 3, false, out, &overall),
                     CNT_STATUS_OK);
    assert_int_equal(overall, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i].state, CNT_CHECK_ALLOWED);
    /* Now the GCRA item is limited: nothing at all is charged. */
    assert_int_equal(cnt_limits_multi(f->l, items, 3, false, out, &overall),
                     CNT_STATUS_OK);
    assert_int_equal(overall, 1);
    assert_int_equal(out[0].state, CNT_CHECK_ALLOWED);
    assert_int_equal(out[0].used, 2);       /* as a peek would say */
    assert_int_equal(out[1].state, CNT_CHECK_LIMITED);
    assert_int_equal(out[1].retry_after_ns, SEC);
    assert_int_equal(out[2].state, CNT_CHECK_ALLOWED);
    cnt_check_result a = check(f, win("k", 2, 1, 0, 0, true));
    assert_int_equal(a.used, 2);            /* still 1 used before */
    a = check(f, win("other", 5, 2, 0, 0, true));
    assert_int_equal(a.used, 4);
    /* A never item denies the whole request too. */
    items[1] = gcra("k", 0, 1, SEC, 2, false);
    assert_int_equal(cnt_limits_multi(f->l, items, 3, false, out, &overall),
                     CNT_STATUS_OK);
    assert_int_equal(overall, 1);
    assert_int_equal(out[1].state, CNT_CHECK_NEVER);
    fixture_free(f);
}

/* Malformed multi-checks: count out of range, a bad item, two items of
 * one kind and name. The same name under two kinds is fine. */
static void test_multi_invalid(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result out[CNT_MULTI_MAX + 1];
    cnt_check_request items[CNT_MULTI_MAX + 1];
    uint8_t overall;
    char names[CNT_MULTI_MAX + 1][8];

    for (int i = 0; i <= (int)CNT_MULTI_MAX; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        items[i] = win(names[i], 1, 1, 0, 0, false);
    }
    assert_int_equal(cnt_limits_multi(f->l, items, 0, false, out, &overall),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_limits_multi(f->l, items, CNT_MULTI_MAX + 1,
                                      false, out, &overall),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_limits_multi(f->l, items, CNT_MULTI_MAX,
                                      false, out, &overall), CNT_STATUS_OK);
    assert_int_equal(overall, 0);
    items[1] = win("n0", 3, 1, 0, 0, false);
    assert_int_equal(cnt_limits_multi(f->l, items, 2, false, out, &overall),
                     CNT_STATUS_INVALID);
    items[1] = gcra("n0", 3, 1, SEC, 1, false);
    assert_int_equal(cnt_limits_multi(f->l, items, 2, true, out, &overall),
                     CNT_STATUS_OK);
    items[1] = gcra("n1", 3, 0, SEC, 1, false);
    assert_int_equal(cnt_limits_multi(f->l, items, 2, false, out, &overall),
                     CNT_STATUS_INVALID);
    fixture_free(f);
}

/* ---- Memory ---- */

/* Beyond the budget: 0x82, nothing changed (no record, same bytes); the
 * budget is shared with the semaphore table, so either side can fill it
 * and freeing on one side makes room for the other. */
static void test_memory_limit_shared(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result ans;
    cnt_ttl_answer v;

    /* Measure one GCRA record, then allow exactly two of them. */
    uint64_t before = cnt_map_budget_used(&f->budget);
    assert_int_equal(state(f, gcra("aa", 0, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    uint64_t one = cnt_map_budget_used(&f->budget) - before;
    assert_true(one > 0);
    fixture_free(f);

    f = fixture_new(2 * one);
    cnt_table_config tc = { .buckets = 64, .budget = &f->budget,
                            .clock = &f->clock.clock };
    cnt_table *t = cnt_table_new(&tc);
    assert_non_null(t);
    assert_int_equal(cnt_table_memory_limit(t), 2 * one);
    assert_int_equal(state(f, gcra("aa", 0, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, gcra("bb", 0, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    uint64_t full = cnt_map_budget_used(&f->budget);
    cnt_check_request a = gcra("cc", 0, 1, SEC, 1, false);
    assert_int_equal(cnt_limits_check(f->l, &a, &ans),
                     CNT_STATUS_OUT_OF_MEMORY);
    a = win("cc", 1, 1, 0, 0, false);
    assert_int_equal(cnt_limits_check(f->l, &a, &ans),
                     CNT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("cc"), 1, 1, 3),
                     CNT_STATUS_OUT_OF_MEMORY);
    /* A peek, a limited or a charge on an existing record needs nothing. */
    a = gcra("cc", 0, 1, SEC, 1, true);
    assert_int_equal(cnt_limits_check(f->l, &a, &ans), CNT_STATUS_OK);
    pass(f, SEC);
    assert_int_equal(state(f, gcra("aa", 0, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(cnt_map_budget_used(&f->budget), full);
    /* The table is out of room too. */
    cnt_holdings h;
    cnt_holdings_init(&h);
    assert_int_equal(cnt_table_acquire(t, &h, CNT_NAME("sem"), 1, 1),
                     CNT_STATUS_OUT_OF_MEMORY);
    /* Both records' TATs have passed: the sweep frees them, and the
     * table gets the room. */
    pass(f, 2 * SEC);
    assert_int_equal(cnt_limits_sweep(f->l, 1024), 2);
    assert_int_equal(cnt_table_acquire(t, &h, CNT_NAME("sem"), 1, 1),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("cc"), &v),
                     CNT_STATUS_NOT_FOUND);
    cnt_table_release_all(t, &h);
    cnt_holdings_destroy(&h);
    cnt_table_free(t);
    fixture_free(f);
}

/* Every allocation a charge makes fails in turn: the answer is OK or
 * 0x82, and after 0x82 nothing changed and nothing leaked. */
static void test_memory_injected_failures(void **st)
{
    (void)st;
    for (unsigned long n = 1; n < 40; n++) {
        fixture *f = fixture_new(0);
        cnt_check_result out[4];
        uint8_t overall;
        /* Two existing records (one to reshape), two new ones. */
        assert_int_equal(state(f, win("old", 9, 1, SEC, 10, false)),
                         CNT_CHECK_ALLOWED);
        assert_int_equal(state(f, gcra("g", 9, 1, SEC, 1, false)),
                         CNT_CHECK_ALLOWED);
        cnt_check_request items[4] = {
            win("old", 9, 1, 2 * SEC, 5, false),
            gcra("g", 9, 1, SEC, 1, false),
            win("new", 9, 1, SEC, 10, false),
            gcra("new", 9, 1, SEC, 1, false),
        };
        uint64_t used = cnt_map_budget_used(&f->budget);
        long live = cnt_fake_alloc_live();

        cnt_fake_alloc_fail_at(n, 0);
        cnt_status s = cnt_limits_multi(f->l, items, 4, false, out,
                                        &overall);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (s == CNT_STATUS_OUT_OF_MEMORY) {
            assert_true(injected);
            assert_int_equal(cnt_map_budget_used(&f->budget), used);
            assert_int_equal(cnt_fake_alloc_live(), live);
            cnt_limits_stats st2;
            cnt_limits_stats_get(f->l, &st2);
            assert_int_equal(st2.kind[CNT_LIMITS_WINDOW].objects, 1);
            assert_int_equal(st2.kind[CNT_LIMITS_GCRA].objects, 1);
            cnt_check_result a = check(f, win("old", 9, 1, SEC, 10, true));
            assert_int_equal(a.used, 2);
            a = check(f, gcra("g", 9, 1, SEC, 1, true));
            assert_int_equal(a.remaining, 8);
        } else {
            assert_int_equal(s, CNT_STATUS_OK);
            assert_int_equal(overall, 0);
            fixture_free(f);
            assert_true(n > 2);     /* at least two allocations were made */
            break;
        }
        fixture_free(f);
    }
}

/* ---- Requests that waited for the lock ---- */

/* A clock whose next monotonic reading runs something first: the GC's
 * sweep or another check, after time moved by delta. It stands for a
 * request that read its time, then waited for the stripe lock while the
 * other thing happened. */
typedef struct hooked_clock {
    cnt_clock clock;
    uint64_t ns;
    cnt_limits *l;
    int hook;                   /* 0 none, 1 sweep, 2 another check */
    uint64_t delta;
    cnt_check_request other;
    cnt_check_result other_ans;
} hooked_clock;

/* The hooked clock's monotonic reading: the time, then the hook. */
static uint64_t hooked_mono(void *ctx)
{
    hooked_clock *h = ctx;
    uint64_t t = h->ns;
    int hook = h->hook;

    h->hook = 0;
    if (hook != 0)
        h->ns += h->delta;
    if (hook == 1)
        (void)cnt_limits_sweep(h->l, 1u << 20);
    else if (hook == 2)
        assert_int_equal(cnt_limits_check(h->l, &h->other, &h->other_ans),
                         CNT_STATUS_OK);
    return t;
}

/* Its wall clock (the limits do not read it). */
static uint64_t hooked_wall(void *ctx)
{
    return ((hooked_clock *)ctx)->ns / MS;
}

/* Builds limits on a hooked clock at 1000 s. */
static void hooked_init(hooked_clock *h)
{
    memset(h, 0, sizeof *h);
    h->clock = (cnt_clock){ hooked_wall, hooked_mono, h };
    h->ns = 1000 * SEC;
    cnt_limits_config cfg = { .buckets = 64, .clock = &h->clock };
    h->l = cnt_limits_new(&cfg);
    assert_non_null(h->l);
}

/* A check on the hooked clock; returns its answer. */
static cnt_check_result hooked_check(hooked_clock *h, cnt_check_request a)
{
    cnt_check_result ans;

    assert_int_equal(cnt_limits_check(h->l, &a, &ans), CNT_STATUS_OK);
    return ans;
}

/* The GC removes a record as dead at a time after a request read its own
 * and before it takes the lock: the request is judged no earlier than the
 * GC judged, so the record's absence allows nothing the record would have
 * refused (two GCRA calls 1 ns short of the period; two window charges
 * within one window). */
static void test_sweep_while_waiting(void **st)
{
    (void)st;
    hooked_clock h;

    hooked_init(&h);
    cnt_check_request g = gcra("g", 0, 1, SEC, 1, false);
    uint64_t t0 = h.ns;
    assert_int_equal(hooked_check(&h, g).state, CNT_CHECK_ALLOWED);
    h.ns = t0 + SEC - 1;
    g.peek = true;
    assert_int_equal(hooked_check(&h, g).state, CNT_CHECK_LIMITED);
    g.peek = false;
    h.hook = 1;
    h.delta = 1;
    /* Read at t0 + 1 s - 1 ns, judged at t0 + 1 s, when the GC found
     * the record dead: a whole period after the first call. */
    cnt_check_result a = hooked_check(&h, g);
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.reset_after_ns, SEC + 1);    /* from the read */
    g.peek = true;
    assert_int_equal(hooked_check(&h, g).state, CNT_CHECK_LIMITED);
    cnt_limits_free(h.l);

    hooked_init(&h);
    cnt_check_request w = win("w", 1, 1, SEC, 10, false);
    h.ns = 1000 * SEC + 99 * MS;
    assert_int_equal(hooked_check(&h, w).state, CNT_CHECK_ALLOWED);
    h.ns = 1001 * SEC;
    h.hook = 1;
    h.delta = 100 * MS;
    a = hooked_check(&h, w);
    /* Judged at 1001.1 s: more than a window after the first charge. */
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.reset_after_ns, 1200 * MS);
    cnt_limits_free(h.l);
}

/* A window request judged in a later slot than the one it read its time
 * in (another request charged that later slot first) counts its retry
 * hint from its own reading: retrying then is allowed. */
static void test_hint_from_the_read(void **st)
{
    (void)st;
    hooked_clock h;

    hooked_init(&h);
    cnt_check_request w = win("d", 2, 1, 200 * MS, 2, false);
    assert_int_equal(hooked_check(&h, w).state, CNT_CHECK_ALLOWED);
    h.ns = 1000 * SEC + 50 * MS;
    h.hook = 2;
    h.delta = 50 * MS;
    h.other = w;
    cnt_check_result a = hooked_check(&h, w);
    assert_int_equal(h.other_ans.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.retry_after_ns, 250 * MS);
    h.ns = 1000 * SEC + 50 * MS + a.retry_after_ns;
    assert_int_equal(hooked_check(&h, w).state, CNT_CHECK_ALLOWED);
    cnt_limits_free(h.l);
}

/* A call refused under another shape than the record's gets hints by the
 * record's own ageing (a refusal does not reshape it): retrying at the
 * hint is allowed, and not a nanosecond before. */
static void test_reshape_hints(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(check(f, win("a", 5, 5, 10 * SEC, 10, false)).state,
                     CNT_CHECK_ALLOWED);
    cnt_check_result a = check(f, win("a", 5, 1, SEC, 10, false));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.retry_after_ns, 11 * SEC);
    assert_int_equal(a.reset_after_ns, 11 * SEC);
    pass(f, a.retry_after_ns - 1);
    assert_int_equal(check(f, win("a", 5, 1, SEC, 10, true)).state,
                     CNT_CHECK_LIMITED);
    pass(f, 1);
    assert_int_equal(check(f, win("a", 5, 1, SEC, 10, false)).state,
                     CNT_CHECK_ALLOWED);
    fixture_free(f);
}

/* ---- Collection and figures ---- */

/* Dead records are freed by the sweep (and by the GC's sweeps, whole and
 * every second, hooked with cnt_gc_add_limits) and counted expired; live
 * ones stay. */
static void test_sweep_and_gc(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_limits_stats s;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t1"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t2"), 1, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(state(f, win("w", 5, 1, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(state(f, gcra("g", 5, 1, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(cnt_limits_sweep(f->l, 1024), 0);
    pass(f, SEC);
    /* t1 expired, g's TAT passed; w's count is still remembered. */
    assert_int_equal(cnt_limits_sweep(f->l, 1024), 2);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 1);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, 1);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].objects, 0);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].expired, 1);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].objects, 1);
    pass(f, 100 * MS);
    /* Through the GC, sweeping the table's map and the limits'. */
    cnt_table_config tc = { .buckets = 64, .clock = &f->clock.clock };
    cnt_table *t = cnt_table_new(&tc);
    cnt_gc *gc = cnt_gc_new(t);
    assert_non_null(gc);
    assert_int_equal(cnt_gc_add_limits(gc, f->l), 0);
    assert_int_equal(cnt_gc_run_once(gc), 1);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].objects, 0);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].expired, 1);
    /* The sweep of every second takes the rest, and is not a whole sweep
     * (gc_count counts the window sweeps only). */
    pass(f, 9 * SEC);
    assert_int_equal(cnt_gc_run_records(gc), 1);
    cnt_gc_stats gs;
    cnt_gc_get_stats(gc, &gs);
    assert_int_equal(gs.gc_count, 1);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 0);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, 2);
    /* Nothing left but the map itself. */
    assert_int_equal(cnt_map_budget_used(&f->budget), 0);
    cnt_gc_free(gc);
    cnt_table_free(t);
    fixture_free(f);
}

/* ---- Two threads, one hot name ---- */

/* What the threads share, and each thread's own part. */
typedef struct hot_run {
    fixture *f;
    cnt_check_request a;
    unsigned calls;
} hot_run;

typedef struct hot_arg {
    hot_run *r;
    unsigned allowed;
    unsigned errors;            /* answers other than OK (cmocka's asserts
                                   are for the main thread) */
} hot_arg;

/* A thread's loop; it counts its own allowed answers. */
static void *hot_main(void *arg)
{
    hot_arg *h = arg;
    cnt_check_result ans;

    for (unsigned i = 0; i < h->r->calls; i++) {
        if (cnt_limits_check(h->r->f->l, &h->r->a, &ans) != CNT_STATUS_OK)
            h->errors++;
        else if (ans.state == CNT_CHECK_ALLOWED)
            h->allowed++;
    }
    return NULL;
}

/* Runs two threads of calls checks each on a; returns the total
 * allowed. */
static unsigned hot_two(fixture *f, cnt_check_request a, unsigned calls)
{
    hot_run r = { .f = f, .a = a, .calls = calls };
    hot_arg arg[2] = { { .r = &r }, { .r = &r } };
    pthread_t th[2];

    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hot_main, &arg[i]),
                         0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(arg[0].errors + arg[1].errors, 0);
    return arg[0].allowed + arg[1].allowed;
}

/* Two threads on one name, time standing still: exactly the limit is
 * allowed, for GCRA (burst + 1) and for the window (limit), and a
 * multi-check on two hot names stays all-or-nothing. */
static void test_hot_name_two_threads(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(hot_two(f, gcra("hot", 4999, 1, SEC, 1, false), 20000),
                     5000);
    assert_int_equal(hot_two(f, win("hot", 7000, 1, 0, 0, false), 20000),
                     7000);
    /* Time moves between two runs: the next GCRA call is allowed 1 s
     * later, and only one. */
    pass(f, SEC);
    assert_int_equal(hot_two(f, gcra("hot", 4999, 1, SEC, 1, false), 1000),
                     1);
    fixture_free(f);
}

/* ---- Lifetime, figures and the sliced sweep ---- */

/* Freeing limits frees every block they took: records of each kind (a
 * window's ring too) and the limits themselves. Built without a
 * configuration, the defaults apply. */
static void test_free_releases_everything(void **st)
{
    (void)st;
    long live = cnt_fake_alloc_live();
    cnt_limits *l = cnt_limits_new(NULL);
    cnt_check_request w = win("w", 5, 1, SEC, 10, false);
    cnt_check_request g = gcra("g", 5, 1, SEC, 1, false);
    cnt_check_result ans;

    assert_non_null(l);
    assert_int_equal(cnt_map_buckets(cnt_limits_map(l)),
                     CNT_LIMITS_DEFAULT_BUCKETS);
    assert_int_equal(cnt_ttl_insert(l, CNT_NAME("t"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_limits_check(l, &w, &ans), CNT_STATUS_OK);
    assert_int_equal(cnt_limits_check(l, &g, &ans), CNT_STATUS_OK);
    assert_true(cnt_fake_alloc_live() > live + 1);
    cnt_limits_free(l);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* Fresh limits report zero of everything but the memory they hold, which
 * grows with a record. */
static void test_fresh_figures(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_limits_stats s;

    cnt_limits_stats_get(f->l, &s);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        assert_int_equal(s.kind[k].objects, 0);
        assert_int_equal(s.kind[k].checks, 0);
        assert_int_equal(s.kind[k].allowed, 0);
        assert_int_equal(s.kind[k].limited, 0);
        assert_int_equal(s.kind[k].expired, 0);
    }
    uint64_t empty = s.used_memory;
    assert_true(empty > 0);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 1, 3),
                     CNT_STATUS_OK);
    cnt_limits_stats_get(f->l, &s);
    assert_true(s.used_memory > empty);
    fixture_free(f);
}

/* Sweeps of a few buckets at a time go on where the last one stopped,
 * wrapping at the end of the map: expired records are removed only once
 * the sweeps have covered every bucket, and then all of them; a sweep
 * asked for more buckets than there are covers each one once. */
static void test_sweep_in_slices(void **st)
{
    (void)st;
    enum { NAMES = 300, SLICE = 100 };
    fixture *f = fixture_new(0);
    char name[16];

    for (unsigned i = 0; i < NAMES; i++) {
        int n = snprintf(name, sizeof name, "s%u", i);
        assert_int_equal(cnt_ttl_insert(f->l, (const uint8_t *)name,
                                        (uint16_t)n, 1, 1, 3),
                         CNT_STATUS_OK);
    }
    pass(f, 2 * SEC);
    /* 1024 buckets: ten slices of 100 leave 24 unswept, the eleventh
     * slice wraps around to the start. */
    size_t removed = 0;
    for (unsigned k = 0; k < 10; k++)
        removed += cnt_limits_sweep(f->l, SLICE);
    assert_true(removed < NAMES);
    removed += cnt_limits_sweep(f->l, SLICE);
    assert_int_equal(removed, NAMES);
    cnt_limits_stats s;
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].objects, 0);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].expired, NAMES);

    for (unsigned i = 0; i < NAMES; i++) {
        int n = snprintf(name, sizeof name, "u%u", i);
        assert_int_equal(cnt_ttl_insert(f->l, (const uint8_t *)name,
                                        (uint16_t)n, 1, 1, 3),
                         CNT_STATUS_OK);
    }
    pass(f, 2 * SEC);
    assert_int_equal(cnt_limits_sweep(f->l, 5000), NAMES);
    assert_int_equal(cnt_limits_sweep(f->l, 5000), 0);
    fixture_free(f);
}

/* A refused check of a known kind counts as a check of that kind, and of
 * no other; one of an unknown opcode counts nowhere. */
static void test_refused_checks_counted(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result ans;
    cnt_limits_stats s;
    cnt_check_request bw = win("i", 5, 0, 0, 0, false);         /* cost 0 */
    cnt_check_request bg = gcra("g", 3, 0, SEC, 1, false);      /* count 0 */
    cnt_check_request bu = win("i", 5, 1, 0, 0, false);

    bu.opcode = 0x36;
    assert_int_equal(cnt_limits_check(f->l, &bw, &ans), CNT_STATUS_INVALID);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].checks, 1);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].checks, 0);
    assert_int_equal(cnt_limits_check(f->l, &bg, &ans), CNT_STATUS_INVALID);
    assert_int_equal(cnt_limits_check(f->l, &bg, &ans), CNT_STATUS_INVALID);
    assert_int_equal(cnt_limits_check(f->l, &bu, &ans), CNT_STATUS_INVALID);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_WINDOW].checks, 1);
    assert_int_equal(s.kind[CNT_LIMITS_GCRA].checks, 2);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].checks, 0);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        assert_int_equal(s.kind[k].allowed, 0);
        assert_int_equal(s.kind[k].limited, 0);
    }
    fixture_free(f);
}

/* A multi-check writes exactly n answers: the slot after them keeps
 * what the caller had there. */
static void test_multi_writes_n_answers(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_request items[2] = { win("a", 5, 1, SEC, 10, false),
                                   gcra("b", 5, 1, SEC, 1, false) };
    cnt_check_result out[3];
    uint8_t overall;

    memset(out, 0xee, sizeof out);
    assert_int_equal(cnt_limits_multi(f->l, items, 2, false, out, &overall),
                     CNT_STATUS_OK);
    assert_int_equal(overall, 0);
    assert_int_equal(out[0].state, CNT_CHECK_ALLOWED);
    assert_int_equal(out[1].state, CNT_CHECK_ALLOWED);
    const uint8_t *guard = (const uint8_t *)&out[2];
    for (size_t i = 0; i < sizeof out[2]; i++)
        assert_int_equal(guard[i], 0xee);
    fixture_free(f);
}

/* The tolerance may reach 2^62 ns, not beyond. */
static void test_gcra_tolerance_bound(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_check_result ans;
    cnt_check_request at = gcra("big", 0, 1, UINT64_C(1) << 62, 1, false);
    cnt_check_request over = gcra("big", 0, 1, (UINT64_C(1) << 62) + 1, 1,
                                  false);

    assert_int_equal(cnt_limits_check(f->l, &at, &ans), CNT_STATUS_OK);
    assert_int_equal(cnt_limits_check(f->l, &over, &ans),
                     CNT_STATUS_INVALID);
    fixture_free(f);
}

/* A GCRA record whose TAT is now plus a fraction of a nanosecond still
 * limits something, so a sweep keeps it; a nanosecond later it goes. */
static void test_gcra_dead_after_fraction(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    /* 3 per second: the TAT moves by 333333333 + 1/3 ns. */
    assert_int_equal(state(f, gcra("g", 5, 3, SEC, 1, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 333333333);
    assert_int_equal(cnt_limits_sweep(f->l, 1024), 0);
    pass(f, 1);
    assert_int_equal(cnt_limits_sweep(f->l, 1024), 1);
    fixture_free(f);
}

/* Every way a TTL record is unlinked frees its node: a query, an update
 * or a purge that finds it expired, and a purge of a live one. */
static void test_ttl_frees_what_it_unlinks(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;
    long live = cnt_fake_alloc_live();

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("q"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("u"), 1, 1, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 1, 1, 3),
                     CNT_STATUS_OK);
    pass(f, 2 * SEC);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("q"), &v),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("u"), CNT_TTL_ATTR_QUOTA,
                                    CNT_TTL_PATCH, 3, 5, &v),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_fake_alloc_live(), live);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 1, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")), CNT_STATUS_OK);
    assert_int_equal(cnt_fake_alloc_live(), live);
    fixture_free(f);
}

/* TTL figures: OK is allowed; EXISTS, BELOW_ZERO and NOT_FOUND are
 * limited; INVALID is a check only. */
static void test_ttl_figures(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;
    cnt_limits_stats s;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_purge(f->l, (const uint8_t *)"", 0),
                     CNT_STATUS_INVALID);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].checks, 2);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].allowed, 1);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].limited, 0);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 10, 3),
                     CNT_STATUS_EXISTS);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("t"), CNT_TTL_ATTR_QUOTA,
                                    CNT_TTL_DECREASE, 3, 2, &v),
                     CNT_STATUS_BELOW_ZERO);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("none"), &v),
                     CNT_STATUS_NOT_FOUND);
    cnt_limits_stats_get(f->l, &s);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].checks, 5);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].allowed, 1);
    assert_int_equal(s.kind[CNT_LIMITS_TTL].limited, 3);
    fixture_free(f);
}

/* An increase may take the quota to exactly 2^64 - 1, not past it. */
static void test_ttl_increase_to_max(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("t"), CNT_TTL_ATTR_QUOTA,
                                    CNT_TTL_INCREASE, 3, UINT64_MAX - 1, &v),
                     CNT_STATUS_OK);
    assert_true(v.quota == UINT64_MAX);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("t"), CNT_TTL_ATTR_QUOTA,
                                    CNT_TTL_INCREASE, 3, 1, &v),
                     CNT_STATUS_INVALID);
    fixture_free(f);
}

/* A window's ring: one per record, charged to the budget by its size
 * (slots + 1 counts), kept while the shape stays, replaced (the old one
 * freed) when it changes. */
static void test_window_ring_lifecycle(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    long live = cnt_fake_alloc_live();

    assert_int_equal(state(f, win("a", 5, 1, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    uint64_t ten = cnt_map_budget_used(&f->budget);
    long blocks = cnt_fake_alloc_live();
    assert_true(blocks > live);
    for (int i = 0; i < 3; i++)
        assert_int_equal(state(f, win("a", 5, 1, SEC, 10, false)),
                         CNT_CHECK_ALLOWED);
    assert_int_equal(cnt_fake_alloc_live(), blocks);
    assert_int_equal(cnt_map_budget_used(&f->budget), ten);
    /* 60 slots: the same blocks, 50 counts more charged. */
    assert_int_equal(state(f, win("a", 5, 1, 6 * SEC, 60, false)),
                     CNT_CHECK_ALLOWED);
    assert_int_equal(cnt_fake_alloc_live(), blocks);
    assert_int_equal(cnt_map_budget_used(&f->budget),
                     ten + 50 * sizeof(uint32_t));
    fixture_free(f);
}

/* Slots the ring moves past are emptied: a count from a full window ago
 * does not come back in the slot that reuses its place. An allowed
 * answer has no retry time. */
static void test_window_slots_emptied(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, S - now_ns(f) % S + 10 * MS);
    assert_int_equal(state(f, win("e", 5, 5, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    /* Slot k + 11 sits where slot k was in the ring of 11. */
    pass(f, 11 * S);
    cnt_check_result a = check(f, win("e", 5, 1, SEC, 10, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.retry_after_ns, 0);
    a = check(f, win("e", 5, 1, SEC, 10, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.used, 2);
    fixture_free(f);
}

/* A multi-check making three new records runs out of memory at each of
 * its allocations in turn: the records already made are all undone
 * (several at once), and nothing leaks. */
static void test_multi_undoes_several(void **st)
{
    (void)st;
    for (unsigned long n = 1; n < 20; n++) {
        fixture *f = fixture_new(0);
        cnt_check_result out[3];
        uint8_t overall;
        cnt_check_request items[3] = {
            win("n1", 9, 1, SEC, 10, false),
            gcra("n1", 9, 1, SEC, 1, false),
            win("n2", 9, 1, SEC, 10, false),
        };
        long live = cnt_fake_alloc_live();

        cnt_fake_alloc_fail_at(n, 0);
        cnt_status s = cnt_limits_multi(f->l, items, 3, false, out,
                                        &overall);
        cnt_fake_alloc_fail_at(0, 0);
        if (s == CNT_STATUS_OK) {
            assert_true(n > 4);     /* two rings and three records */
            fixture_free(f);
            break;
        }
        assert_int_equal(s, CNT_STATUS_OUT_OF_MEMORY);
        assert_int_equal(cnt_fake_alloc_live(), live);
        assert_int_equal(cnt_map_budget_used(&f->budget), 0);
        cnt_limits_stats st2;
        cnt_limits_stats_get(f->l, &st2);
        for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++)
            assert_int_equal(st2.kind[k].objects, 0);
        fixture_free(f);
    }
}

/* Each allocation of cnt_limits_new failing in turn: NULL, and nothing
 * left allocated. */
static void test_new_alloc_failure(void **st)
{
    (void)st;
    cnt_limits_config cfg = { .buckets = 64 };

    for (unsigned long n = 1;; n++) {
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(n, 0);
        cnt_limits *l = cnt_limits_new(&cfg);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (l != NULL) {
            assert_false(injected);
            assert_true(n > 1);
            cnt_limits_free(l);
            assert_int_equal(cnt_fake_alloc_live(), live);
            break;
        }
        assert_true(injected);
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
}

/* The memory reported is the map's plus the limits' own, so a record
 * adds exactly what it adds to the map. */
static void test_used_memory_follows_map(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_limits_stats s0, s1;
    cnt_map_stats m0, m1;

    cnt_limits_stats_get(f->l, &s0);
    cnt_map_get_stats(cnt_limits_map(f->l), &m0);
    assert_true(s0.used_memory > m0.used_memory);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 10, 3),
                     CNT_STATUS_OK);
    cnt_limits_stats_get(f->l, &s1);
    cnt_map_get_stats(cnt_limits_map(f->l), &m1);
    assert_true(m1.used_memory > m0.used_memory);
    assert_int_equal(s1.used_memory - s0.used_memory,
                     m1.used_memory - m0.used_memory);
    fixture_free(f);
}

/* A check's record sits in the bucket of its name, where every other
 * path (TTL requests, the map's own lookups) looks for it. */
static void test_check_record_in_its_bucket(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_map *m = cnt_limits_map(f->l);
    static const char *const names[] = { "alpha", "beta", "gamma", "delta" };

    for (size_t i = 0; i < 4; i++) {
        const uint8_t *p = (const uint8_t *)names[i];
        uint16_t len = (uint16_t)strlen(names[i]);
        cnt_check_request a = i % 2 ? gcra(names[i], 5, 1, SEC, 1, false)
                                    : win(names[i], 5, 1, SEC, 10, false);
        assert_int_equal(state(f, a), CNT_CHECK_ALLOWED);
        size_t b = cnt_map_bucket_of(m, p, len);
        pthread_mutex_t *lock = cnt_map_lock(m, b);
        cnt_map_node *n = cnt_map_do_find(m, b, p, len);
        cnt_map_unlock(lock);
        assert_non_null(n);
    }
    fixture_free(f);
}

/* An update may give its value in the largest unit (hours), not beyond. */
static void test_ttl_update_largest_unit(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer v;

    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 1, 10, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("t"), CNT_TTL_ATTR_TTL,
                                    CNT_TTL_INCREASE, CNT_UNIT_MAX, 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_update(f->l, CNT_NAME("t"), CNT_TTL_ATTR_TTL,
                                    CNT_TTL_INCREASE, CNT_UNIT_MAX + 1, 1,
                                    &v),
                     CNT_STATUS_INVALID);
    fixture_free(f);
}

/* A new shape with the same slot length but fewer slots still sees the
 * old shape's counts, and its retry hint follows the old shape's ageing:
 * three counted by a 1 s window of 10 slots, checked 7 slots later by a
 * 500 ms window of 5, leave at the start of slot k + 11. */
static void test_window_reshape_same_slot(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, S - now_ns(f) % S + 10 * MS);
    assert_int_equal(state(f, win("x", 3, 3, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 7 * S);
    cnt_check_result a = check(f, win("x", 3, 1, 5 * S, 5, true));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.used, 3);
    assert_int_equal(a.retry_after_ns, 4 * S - 10 * MS);
    assert_int_equal(a.reset_after_ns, 4 * S - 10 * MS);
    fixture_free(f);
}

/* Another shape's retry hint is the first of its slots whose leaving
 * makes room: counts of 1 in slots k, k + 2 and k + 4 of a 1 s window of
 * 10 slots, a limit of 3 checked by a 500 ms window of 5 at slot k + 5:
 * room comes when slot k leaves, at the start of slot k + 11; all are
 * gone at the start of k + 15. */
static void test_window_reshape_first_room(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, S - now_ns(f) % S + 10 * MS);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(state(f, win("h", 3, 1, SEC, 10, false)),
                         CNT_CHECK_ALLOWED);
        pass(f, i < 2 ? 2 * S : S);         /* on to slot k + 5 */
    }
    cnt_check_result a = check(f, win("h", 3, 1, 5 * S, 5, true));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.used, 3);
    assert_int_equal(a.retry_after_ns, 6 * S - 10 * MS);
    assert_int_equal(a.reset_after_ns, 10 * S - 10 * MS);
    fixture_free(f);
}

/* A count only the oldest slot still holds sets the reset time: it
 * leaves at the start of the next slot. */
static void test_window_reset_oldest_slot(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, S - now_ns(f) % S + 10 * MS);
    assert_int_equal(state(f, win("o", 1, 1, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 10 * S);
    cnt_check_result a = check(f, win("o", 1, 1, SEC, 10, true));
    assert_int_equal(a.state, CNT_CHECK_LIMITED);
    assert_int_equal(a.retry_after_ns, S - 10 * MS);
    assert_int_equal(a.reset_after_ns, S - 10 * MS);
    fixture_free(f);
}

/* A new slot length with the same number of slots reuses the ring, which
 * then holds only what the old shape remembered, in the current slot. */
static void test_window_reshape_reuses_ring(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, 2 * S - now_ns(f) % (2 * S) + 10 * MS);
    assert_int_equal(state(f, win("r", 10, 2, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 3 * S);
    assert_int_equal(state(f, win("r", 10, 1, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, S);
    cnt_check_result a = check(f, win("r", 10, 1, 2 * SEC, 10, false));
    assert_int_equal(a.state, CNT_CHECK_ALLOWED);
    assert_int_equal(a.used, 4);
    a = check(f, win("r", 10, 1, 2 * SEC, 10, true));
    assert_int_equal(a.used, 5);
    fixture_free(f);
}

/* A cost above the limit against another shape's record whose counts
 * have all left: never, and nothing to wait for before a reset. */
static void test_window_never_on_empty_other_shape(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    const uint64_t S = 100 * MS;

    pass(f, S - now_ns(f) % S + 10 * MS);
    assert_int_equal(state(f, win("z", 3, 1, SEC, 10, false)),
                     CNT_CHECK_ALLOWED);
    pass(f, 30 * S);
    cnt_check_result a = check(f, win("z", 3, 5, 5 * S, 5, false));
    assert_int_equal(a.state, CNT_CHECK_NEVER);
    assert_int_equal(a.used, 0);
    assert_int_equal(a.reset_after_ns, 0);
    fixture_free(f);
}

/* Runs the limits tests. */
/* ---- The busiest names ---- */

/* The names ranked by their checks in the last whole second: allowed,
 * limited and peeking checks and TTL operations all count, a name
 * checked in the current second only does not show yet, a name with no
 * check in the ranked second does not show, and n bounds the answer. */
static void test_busiest(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    cnt_ttl_answer ta;
    size_t found;

    /* Start just after a second begins. */
    pass(f, SEC - now_ns(f) % SEC + 1000);
    for (int i = 0; i < 5; i++)         /* a: 2 allowed, 3 limited */
        check(f, gcra("a", 1, 1, SEC, 1, false));
    for (int i = 0; i < 3; i++)
        check(f, win("b", 100, 1, SEC, 10, false));
    check(f, gcra("b", 10, 10, SEC, 1, false));   /* another kind */
    check(f, gcra("a", 1, 1, SEC, 1, true));      /* a peek: 6 */
    check(f, gcra("never", 0, 1, SEC, 5, false)); /* no record: not shown */
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("t"), 5, 9, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("t"), &ta),
                     CNT_STATUS_OK);                /* t: 2 */
    assert_true(cnt_limits_busiest(f->l, 10, v, &found));
    assert_int_equal(found, 0);                   /* the second is running */
    pass(f, SEC);
    check(f, gcra("late", 10, 10, SEC, 1, false)); /* this second's */
    assert_true(cnt_limits_busiest(f->l, 10, v, &found));
    assert_int_equal(found, 4);
    assert_int_equal(v[0].kind, CNT_LIMITS_GCRA);
    assert_memory_equal(v[0].name, "a", 1);
    assert_int_equal(v[0].checks, 6);
    assert_int_equal(v[1].kind, CNT_LIMITS_WINDOW);
    assert_memory_equal(v[1].name, "b", 1);
    assert_int_equal(v[1].checks, 3);
    assert_int_equal(v[2].kind, CNT_LIMITS_TTL);  /* ties: by kind */
    assert_memory_equal(v[2].name, "t", 1);
    assert_int_equal(v[2].checks, 2);
    assert_int_equal(v[3].kind, CNT_LIMITS_GCRA);
    assert_int_equal(v[3].name_len, 1);
    assert_memory_equal(v[3].name, "b", 1);
    assert_int_equal(v[3].checks, 1);
    cnt_limits_busiest_free(v, found);
    assert_true(cnt_limits_busiest(f->l, 1, v, &found));
    assert_int_equal(found, 1);
    assert_int_equal(v[0].checks, 6);
    cnt_limits_busiest_free(v, found);
    /* A check in the new second keeps the last one's count. */
    check(f, gcra("a", 1, 1, SEC, 1, false));
    assert_true(cnt_limits_busiest(f->l, 1, v, &found));
    assert_int_equal(v[0].checks, 6);
    cnt_limits_busiest_free(v, found);
    /* Next second: only what was checked in the one before. */
    pass(f, SEC);
    assert_true(cnt_limits_busiest(f->l, 10, v, &found));
    assert_int_equal(found, 2);
    assert_memory_equal(v[0].name, "a", 1);
    assert_int_equal(v[0].checks, 1);
    assert_memory_equal(v[1].name, "late", 4);
    cnt_limits_busiest_free(v, found);
    /* A quiet second: nothing. */
    pass(f, SEC);
    assert_true(cnt_limits_busiest(f->l, 10, v, &found));
    assert_int_equal(found, 0);
    assert_true(cnt_limits_busiest(f->l, 0, v, &found));
    assert_int_equal(found, 0);
    fixture_free(f);
}

/* Many names: the n busiest come out, in order, at most
 * CNT_LIMITS_BUSIEST_MAX of them however many are asked for. */
static void test_busiest_many(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found;
    char name[16];

    pass(f, SEC - now_ns(f) % SEC + 1000);
    for (int k = 0; k < 300; k++) {
        snprintf(name, sizeof name, "n%d", k);
        int times = (k * 7919) % 300 + 1;     /* a permutation of 1..300 */
        for (int i = 0; i < times; i++)
            check(f, win(name, 1000, 1, SEC, 10, false));
    }
    pass(f, SEC);
    assert_true(cnt_limits_busiest(f->l, 1000, v, &found));
    assert_int_equal(found, CNT_LIMITS_BUSIEST_MAX);
    for (size_t i = 0; i < found; i++)
        assert_int_equal(v[i].checks, 300 - i);
    cnt_limits_busiest_free(v, found);
    fixture_free(f);
}

/* Fills names[0..n) with names that share one stripe. */
static void same_stripe(fixture *f, char (*names)[16], size_t n)
{
    size_t k = 0, want = 0;

    for (unsigned i = 0; k < n; i++) {
        char name[16];
        int len = snprintf(name, sizeof name, "h%u", i);
        size_t s = cnt_map_bucket_of(cnt_limits_map(f->l),
                                     (const uint8_t *)name, (uint16_t)len) %
                   CNT_MAP_STRIPES;
        if (k == 0)
            want = s;
        if (s == want)
            memcpy(names[k++], name, sizeof name);
        assert_true(i < 10000000u);
    }
}

/* Checks name times times in the current second. */
static void check_times(fixture *f, const char *name, int times)
{
    for (int i = 0; i < times; i++)
        check(f, gcra(name, 1000, 1000, SEC, 1, false));
}

/* Whether a listing of the last second names name (and with what count,
 * into *checks). */
static bool listed(fixture *f, const char *name, uint32_t *checks)
{
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found;
    bool seen = false;

    assert_true(cnt_limits_busiest(f->l, CNT_LIMITS_BUSIEST_MAX, v, &found));
    assert_true(found <= CNT_LIMITS_BUSIEST_MAX);
    for (size_t i = 0; i < found; i++) {
        if (i > 0)
            assert_true(v[i - 1].checks >= v[i].checks);
        if (v[i].name_len == strlen(name) &&
            memcmp(v[i].name, name, v[i].name_len) == 0) {
            seen = true;
            if (checks != NULL)
                *checks = v[i].checks;
        }
    }
    cnt_limits_busiest_free(v, found);
    return seen;
}

/* One stripe's table full: a colder name stays out, a hotter one takes
 * the coldest entry's place (that name is then missed: the listing's one
 * approximation), and the table turns over with the seconds. */
static void test_busiest_hot_table_full(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    char n[CNT_LIMITS_HOT + 2][16];
    uint32_t c = 0;

    same_stripe(f, n, CNT_LIMITS_HOT + 2);
    pass(f, SEC - now_ns(f) % SEC + 1000);
    for (unsigned i = 0; i < CNT_LIMITS_HOT; i++)
        check_times(f, n[i], 10 * (int)(i + 1));  /* 10, 20, 30, 40 */
    check_times(f, n[CNT_LIMITS_HOT], 5);         /* colder: stays out */
    check_times(f, n[CNT_LIMITS_HOT + 1], 50);    /* replaces the 10 */
    pass(f, SEC);
    assert_false(listed(f, n[0], NULL));
    assert_false(listed(f, n[CNT_LIMITS_HOT], NULL));
    assert_true(listed(f, n[CNT_LIMITS_HOT + 1], &c));
    assert_int_equal(c, 50);
    for (unsigned i = 1; i < CNT_LIMITS_HOT; i++) {
        assert_true(listed(f, n[i], &c));
        assert_int_equal(c, 10 * (i + 1));
    }
    /* The next second: the names checked then, whichever entries they
     * had; the colder one of before gets in over the quiet ones. */
    check_times(f, n[CNT_LIMITS_HOT], 2);
    check_times(f, n[0], 1);
    /* The listing of the second before is still whole. */
    assert_true(listed(f, n[CNT_LIMITS_HOT + 1], &c));
    assert_int_equal(c, 50);
    assert_false(listed(f, n[CNT_LIMITS_HOT], NULL));
    pass(f, SEC);
    assert_true(listed(f, n[CNT_LIMITS_HOT], &c));
    assert_int_equal(c, 2);
    assert_true(listed(f, n[0], &c));
    assert_int_equal(c, 1);
    assert_false(listed(f, n[CNT_LIMITS_HOT + 1], NULL));
    /* A second skipped: nothing of before shows. */
    pass(f, SEC);
    assert_false(listed(f, n[CNT_LIMITS_HOT], NULL));
    fixture_free(f);
}

/* Records that go leave the hot table, in the second they are counted
 * in (cur) and the one after (prev): a TTL purge and the GC's sweep of a
 * dead record. A listing that met a freed record would read freed memory
 * (and name it). */
static void test_busiest_freed(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer ta;

    pass(f, SEC - now_ns(f) % SEC + 1000);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p1"), 5, 60, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p2"), 5, 60, 3),
                     CNT_STATUS_OK);
    check_times(f, "g", 3);             /* dead once its TAT has passed */
    check_times(f, "k", 3);
    /* p1 goes in the second it is counted in, g by the GC's sweep. */
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p1")), CNT_STATUS_OK);
    pass(f, SEC / 2);
    assert_true(cnt_limits_sweep(f->l, 1024) >= 2);   /* g and k */
    pass(f, SEC / 2);
    assert_false(listed(f, "p1", NULL));
    assert_false(listed(f, "g", NULL));
    assert_false(listed(f, "k", NULL));
    assert_true(listed(f, "p2", NULL));
    /* A query turns p2's table over: p2 is in prev (and in cur), which
     * the listing reads; it goes from both. */
    assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("p2"), &ta),
                     CNT_STATUS_OK);
    assert_true(listed(f, "p2", NULL));
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p2")), CNT_STATUS_OK);
    assert_false(listed(f, "p2", NULL));
    pass(f, SEC);
    assert_false(listed(f, "p2", NULL));
    /* A name made again is a new record, counted from 0. */
    check_times(f, "g", 1);
    pass(f, SEC);
    uint32_t c = 0;
    assert_true(listed(f, "g", &c));
    assert_int_equal(c, 1);
    fixture_free(f);
}

/* A record in prev at one entry and in cur at a lower one when the
 * second turns: the turn must leave it marked at its new prev entry only,
 * or freeing it leaves that entry pointing at freed memory (which the
 * listing then reads and names). */
static void test_busiest_turn_moves_entry(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    char n[7][16];
    const char *c;
    cnt_ttl_answer ta;

    same_stripe(f, n, 7);
    c = n[2];
    pass(f, SEC - now_ns(f) % SEC + 1000);
    /* Second 1: cur holds n0, n1, c (entries 1 to 3). */
    check_times(f, n[0], 10);
    check_times(f, n[1], 20);
    assert_int_equal(cnt_ttl_insert(f->l, (const uint8_t *)c, strlen(c),
                                     5, 60, 3), CNT_STATUS_OK);
    for (int i = 0; i < 29; i++)
        assert_int_equal(cnt_ttl_query(f->l, (const uint8_t *)c, strlen(c),
                                       &ta), CNT_STATUS_OK);
    /* Second 2: prev is that; four names of 5 checks push n0, n1 and c
     * out of cur, then c comes back at the first entry, hotter. */
    pass(f, SEC);
    for (int k = 3; k < 7; k++)
        check_times(f, n[k], 5);
    for (int i = 0; i < 6; i++)
        assert_int_equal(cnt_ttl_query(f->l, (const uint8_t *)c, strlen(c),
                                       &ta), CNT_STATUS_OK);
    /* Second 3: the turn (any check of the stripe) makes prev the ranking
     * of second 2, with c in it; then c goes, before any listing of the
     * second has been made (and kept). */
    pass(f, SEC);
    check_times(f, n[3], 1);
    assert_int_equal(cnt_ttl_purge(f->l, (const uint8_t *)c, strlen(c)),
                     CNT_STATUS_OK);
    assert_false(listed(f, c, NULL));
    for (int k = 4; k < 7; k++)
        assert_true(listed(f, n[k], NULL));
    fixture_free(f);
}

/* A check whose new record the budget refuses leaves nothing in the
 * table: the record it made is undone under the lock. */
static void test_busiest_out_of_memory(void **st)
{
    (void)st;
    fixture *f = fixture_new(1);
    cnt_check_request a = gcra("big", 10, 10, SEC, 1, false);
    cnt_check_result ans;

    pass(f, SEC - now_ns(f) % SEC + 1000);
    assert_int_equal(cnt_limits_check(f->l, &a, &ans),
                     CNT_STATUS_OUT_OF_MEMORY);
    pass(f, SEC);
    assert_false(listed(f, "big", NULL));
    fixture_free(f);
}

/* How many listings the limits have computed so far. */
static uint64_t computed(fixture *f)
{
    cnt_limits_stats ls;

    cnt_limits_stats_get(f->l, &ls);
    return ls.busiest_computed;
}

/* The listing of a whole second is computed once: the later listings of
 * the next second copy it, whatever n they ask for, even when a check
 * that read the clock before the second ended counts in it afterwards
 * (a worker that waited for its stripe lock); the second after is
 * computed anew. */
static void test_busiest_cached(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    uint32_t c = 0;

    pass(f, SEC - now_ns(f) % SEC + 1000);
    check_times(f, "a", 5);
    check_times(f, "b", 3);
    uint64_t late = now_ns(f);
    pass(f, SEC);
    assert_int_equal(computed(f), 0);
    assert_true(listed(f, "a", &c));
    assert_int_equal(c, 5);
    assert_int_equal(computed(f), 1);
    /* A straggler of the ranked second: b passes a in the tables. */
    uint64_t t = now_ns(f);
    atomic_store(&f->clock.mono_ns, late);
    check_times(f, "b", 10);
    atomic_store(&f->clock.mono_ns, t);
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found;
    assert_true(cnt_limits_busiest(f->l, 1, v, &found));
    assert_int_equal(found, 1);
    assert_memory_equal(v[0].name, "a", 1);
    assert_int_equal(v[0].checks, 5);
    cnt_limits_busiest_free(v, found);
    assert_true(listed(f, "b", &c));
    assert_int_equal(c, 3);
    assert_int_equal(computed(f), 1);
    /* Asking for none computes nothing. */
    pass(f, SEC);
    assert_true(cnt_limits_busiest(f->l, 0, v, &found));
    assert_int_equal(found, 0);
    assert_int_equal(computed(f), 1);
    /* The next second: computed again, once. Nothing was checked in the
     * second before it but the straggler's count, which stays in b's
     * second. */
    assert_false(listed(f, "a", NULL));
    assert_false(listed(f, "b", NULL));
    assert_int_equal(computed(f), 2);
    fixture_free(f);
}

/* A record that goes while the listing of its second is cached is not
 * served again (nor is its slot given to a name the listing had not
 * ranked), and the cache is not computed again for it; a record made
 * again under the same name afterwards is not the one listed. */
static void test_busiest_cached_freed(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_ttl_answer ta;
    uint32_t c = 0;

    pass(f, SEC - now_ns(f) % SEC + 1000);
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 5, 60, 3),
                     CNT_STATUS_OK);
    for (int i = 0; i < 9; i++)
        assert_int_equal(cnt_ttl_query(f->l, CNT_NAME("p"), &ta),
                         CNT_STATUS_OK);                /* p: 10 */
    check_times(f, "k", 4);
    pass(f, SEC);
    assert_true(listed(f, "p", &c));
    assert_int_equal(c, 10);
    assert_int_equal(computed(f), 1);
    assert_int_equal(cnt_ttl_purge(f->l, CNT_NAME("p")), CNT_STATUS_OK);
    assert_false(listed(f, "p", NULL));
    assert_true(listed(f, "k", &c));
    assert_int_equal(c, 4);
    /* A new p: this second's record, not the one that was listed. */
    assert_int_equal(cnt_ttl_insert(f->l, CNT_NAME("p"), 5, 60, 3),
                     CNT_STATUS_OK);
    assert_false(listed(f, "p", NULL));
    assert_int_equal(computed(f), 1);
    /* The GC's sweep takes k (its TAT has passed) out of the cache too. */
    pass(f, SEC / 2);
    assert_true(cnt_limits_sweep(f->l, 1024) >= 1);
    assert_false(listed(f, "k", NULL));
    assert_int_equal(computed(f), 1);
    pass(f, SEC / 2);
    assert_true(listed(f, "p", &c));
    assert_int_equal(c, 1);
    assert_int_equal(computed(f), 2);
    fixture_free(f);
}

/* A multi-check whose first item made its record and whose second could
 * not get memory undoes that record (unlinked and forgotten under the
 * stripe locks) while a busy record of the same name, another kind,
 * sits in the stripe's hot table and in the cached listing: that one
 * stays listed with its count, the undone one never shows, and nothing
 * is left allocated. */
static void test_busiest_multi_undo(void **st)
{
    (void)st;
    for (unsigned long n = 1; n < 20; n++) {
        fixture *f = fixture_new(0);
        cnt_check_result out[2];
        uint8_t overall;
        cnt_check_request items[2] = {
            win("u", 9, 1, SEC, 10, false),
            win("v", 9, 1, SEC, 10, false),
        };
        uint32_t c = 0;

        pass(f, SEC - now_ns(f) % SEC + 1000);
        check_times(f, "u", 3);             /* gcra u: in the hot table */
        pass(f, SEC);
        assert_true(listed(f, "u", &c));    /* and in the cache */
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(n, 0);
        cnt_status s = cnt_limits_multi(f->l, items, 2, false, out,
                                        &overall);
        cnt_fake_alloc_fail_at(0, 0);
        if (s == CNT_STATUS_OK) {
            assert_true(n > 2);     /* two records, two rings */
            fixture_free(f);
            break;
        }
        assert_int_equal(s, CNT_STATUS_OUT_OF_MEMORY);
        assert_int_equal(cnt_fake_alloc_live(), live);
        cnt_limits_stats ls;
        cnt_limits_stats_get(f->l, &ls);
        assert_int_equal(ls.kind[CNT_LIMITS_WINDOW].objects, 0);
        assert_int_equal(ls.kind[CNT_LIMITS_GCRA].objects, 1);
        assert_true(listed(f, "u", &c));
        assert_int_equal(c, 3);
        check_times(f, "u", 1);
        pass(f, SEC);
        cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
        size_t found;
        assert_true(cnt_limits_busiest(f->l, CNT_LIMITS_BUSIEST_MAX, v,
                                       &found));
        assert_int_equal(found, 1);
        assert_int_equal(v[0].kind, CNT_LIMITS_GCRA);
        assert_int_equal(v[0].checks, 1);
        cnt_limits_busiest_free(v, found);
        fixture_free(f);
    }
}

/* A lister for test_busiest_concurrent: lists until told to stop,
 * checking each answer's shape, and counts its listings. */
typedef struct lister_arg {
    cnt_limits *l;
    atomic_bool *stop;
    unsigned long lists, bad;
} lister_arg;

static void *lister_main(void *p)
{
    lister_arg *a = p;
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found;

    while (!atomic_load(a->stop) || a->lists == 0) {
        if (!cnt_limits_busiest(a->l, CNT_LIMITS_BUSIEST_MAX, v, &found)) {
            a->bad++;
            continue;
        }
        for (size_t i = 0; i < found; i++)
            if (v[i].checks == 0 || v[i].name_len == 0 ||
                (i > 0 && v[i - 1].checks < v[i].checks))
                a->bad++;
        cnt_limits_busiest_free(v, found);
        a->lists++;
    }
    return NULL;
}

/* Listings on two threads while this one makes, checks, purges and
 * sweeps away records and moves the clock through many seconds: the
 * cache is computed, copied and emptied of freed records concurrently
 * (a run for the sanitizers of the robustness stages: a listing reads a
 * record only under its stripe lock, and the cache's slots are atomic). */
static void test_busiest_concurrent(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    atomic_bool stop;
    lister_arg a[2] = { { .l = f->l, .stop = &stop },
                        { .l = f->l, .stop = &stop } };
    pthread_t th[2];
    cnt_ttl_answer ta;
    char name[16];

    atomic_init(&stop, false);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, lister_main, &a[i]),
                         0);
    for (int i = 0; i < 20000; i++) {
        int len = snprintf(name, sizeof name, "c%d", i % 40);
        const uint8_t *nm = (const uint8_t *)name;
        if (cnt_ttl_insert(f->l, nm, (uint16_t)len, 5, 60, 3) ==
            CNT_STATUS_EXISTS)
            (void)cnt_ttl_query(f->l, nm, (uint16_t)len, &ta);
        check_times(f, name, i % 3);
        if (i % 7 == 0)
            (void)cnt_ttl_purge(f->l, nm, (uint16_t)len);
        if (i % 500 == 0) {
            pass(f, SEC / 3);
            (void)cnt_limits_sweep(f->l, 1024);
        }
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(a[0].bad + a[1].bad, 0);
    assert_true(a[0].lists > 0 && a[1].lists > 0);
    assert_true(computed(f) >= 1);
    fixture_free(f);
}

/* Each allocation of a listing failing in turn, on a cache not yet
 * made: false, and what stays allocated is at most the cache's names
 * (kept when only the copy out failed, and then the second's listing is
 * not computed again); freeing the limits frees them. */
static void test_busiest_cache_out_of_memory(void **st)
{
    (void)st;
    for (unsigned long n = 1;; n++) {
        long at_start = cnt_fake_alloc_live();
        fixture *f = fixture_new(0);
        cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
        size_t found = 99;

        pass(f, SEC - now_ns(f) % SEC + 1000);
        check_times(f, "a", 2);
        check_times(f, "b", 1);
        pass(f, SEC);
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_limits_busiest(f->l, CNT_LIMITS_BUSIEST_MAX, v,
                                     &found);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (ok) {
            assert_false(injected);
            assert_int_equal(found, 2);
            cnt_limits_busiest_free(v, found);
            assert_true(n > 4);     /* two names kept, two copied */
            fixture_free(f);
            assert_int_equal(cnt_fake_alloc_live(), at_start);
            break;
        }
        assert_true(injected);
        assert_int_equal(found, 0);
        if (computed(f) == 0) {
            assert_int_equal(cnt_fake_alloc_live(), live);
        } else {
            assert_int_equal(cnt_fake_alloc_live(), live + 2);
            assert_true(listed(f, "a", NULL));
            assert_int_equal(computed(f), 1);
        }
        fixture_free(f);
        assert_int_equal(cnt_fake_alloc_live(), at_start);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_guarantee_random),
        cmocka_unit_test(test_window_slots_exact),
        cmocka_unit_test(test_window_never_peek_limit),
        cmocka_unit_test(test_window_reshape),
        cmocka_unit_test(test_window_invalid),
        cmocka_unit_test(test_gcra_redis_cell),
        cmocka_unit_test(test_gcra_fine_rates),
        cmocka_unit_test(test_gcra_guarantee_random),
        cmocka_unit_test(test_gcra_never_peek_change),
        cmocka_unit_test(test_ttl_insert_query),
        cmocka_unit_test(test_ttl_units),
        cmocka_unit_test(test_ttl_update_quota),
        cmocka_unit_test(test_ttl_update_time),
        cmocka_unit_test(test_ttl_update_record_unit),
        cmocka_unit_test(test_ttl_purge),
        cmocka_unit_test(test_namespaces),
        cmocka_unit_test(test_multi_all_or_nothing),
        cmocka_unit_test(test_multi_invalid),
        cmocka_unit_test(test_memory_limit_shared),
        cmocka_unit_test(test_memory_injected_failures),
        cmocka_unit_test(test_sweep_while_waiting),
        cmocka_unit_test(test_hint_from_the_read),
        cmocka_unit_test(test_reshape_hints),
        cmocka_unit_test(test_sweep_and_gc),
        cmocka_unit_test(test_hot_name_two_threads),
        cmocka_unit_test(test_free_releases_everything),
        cmocka_unit_test(test_fresh_figures),
        cmocka_unit_test(test_sweep_in_slices),
        cmocka_unit_test(test_refused_checks_counted),
        cmocka_unit_test(test_multi_writes_n_answers),
        cmocka_unit_test(test_gcra_tolerance_bound),
        cmocka_unit_test(test_gcra_dead_after_fraction),
        cmocka_unit_test(test_ttl_frees_what_it_unlinks),
        cmocka_unit_test(test_ttl_figures),
        cmocka_unit_test(test_ttl_increase_to_max),
        cmocka_unit_test(test_window_ring_lifecycle),
        cmocka_unit_test(test_window_slots_emptied),
        cmocka_unit_test(test_multi_undoes_several),
        cmocka_unit_test(test_new_alloc_failure),
        cmocka_unit_test(test_used_memory_follows_map),
        cmocka_unit_test(test_check_record_in_its_bucket),
        cmocka_unit_test(test_ttl_update_largest_unit),
        cmocka_unit_test(test_window_reshape_same_slot),
        cmocka_unit_test(test_window_reshape_first_room),
        cmocka_unit_test(test_window_reset_oldest_slot),
        cmocka_unit_test(test_window_reshape_reuses_ring),
        cmocka_unit_test(test_window_never_on_empty_other_shape),
        cmocka_unit_test(test_busiest),
        cmocka_unit_test(test_busiest_many),
        cmocka_unit_test(test_busiest_hot_table_full),
        cmocka_unit_test(test_busiest_freed),
        cmocka_unit_test(test_busiest_turn_moves_entry),
        cmocka_unit_test(test_busiest_out_of_memory),
        cmocka_unit_test(test_busiest_cached),
        cmocka_unit_test(test_busiest_cached_freed),
        cmocka_unit_test(test_busiest_multi_undo),
        cmocka_unit_test(test_busiest_concurrent),
        cmocka_unit_test(test_busiest_cache_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
