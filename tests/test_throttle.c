/* test_throttle.c: the tenant throttle of engine/core/throttle.c on the
 * fake clock: every answer of random multi-tenant demand over many seconds
 * checked exactly against the model of doc/throttling.md written out
 * again here (reserves kept, hard limits at or below, throttled use never
 * above the capacity, unthrottled use counted against the pool); the
 * worked example of the documentation; refill boundaries and retry hints
 * to the nanosecond; the reasons; capacity 0; the over-capacity refusals
 * and the all-or-nothing apply; a listing paused while tenants come and
 * go; the shared memory budget and injected allocation failures; the GC
 * hook; two threads on one hot tenant and on a shared pool, with exact
 * totals; and applies watched by another thread, which never sees the
 * reserves above the capacity (the threads run under TSan in
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
#include "engine/core/table.h"
#include "engine/core/throttle.h"
#include "tests/engine_fake.h"

#define T0_MS 1700000000000ull
#define SEC 1000000000ull
#define UNL CNT_HARD_LIMIT_UNLIMITED
#define ALLOWED CNT_TSTATE_ALLOWED
#define THROTTLED CNT_TSTATE_THROTTLED

/* A throttle on the fake clock and a budget of its own. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_map_budget budget;
    cnt_throttle *t;
} fixture;

/* Builds a fixture with a budget of limit bytes (0 = unlimited) and the
 * given number of buckets. */
static fixture *fixture_new_with(uint64_t limit, size_t buckets)
{
    fixture *f = calloc(1, sizeof *f);

    assert_non_null(f);
    cnt_fake_clock_init(&f->clock, T0_MS);
    cnt_map_budget_init(&f->budget, limit);
    cnt_throttle_config cfg = { .buckets = buckets, .budget = &f->budget,
                                .clock = &f->clock.clock };
    f->t = cnt_throttle_new(&cfg);
    assert_non_null(f->t);
    return f;
}

/* Builds a fixture with 1024 buckets. */
static fixture *fixture_new(uint64_t limit)
{
    return fixture_new_with(limit, 1024);
}

/* Frees a fixture; the budget must be back to 0. */
static void fixture_free(fixture *f)
{
    cnt_throttle_free(f->t);
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

/* Nanoseconds from now until the next second starts. */
static uint64_t to_next(fixture *f)
{
    return SEC - now_ns(f) % SEC;
}

/* Moves the clock to the start of the next second. */
static void next_second(fixture *f)
{
    pass(f, to_next(f));
}

/* A name argument from a C string. */
#define NM(s) (const uint8_t *)(s), (uint16_t)strlen(s)

/* One charge that must answer OK; returns its answer. */
static cnt_throttle_answer charge(fixture *f, const char *name,
                                  uint32_t units, bool unthrottled)
{
    cnt_throttle_answer a;

    memset(&a, 0xee, sizeof a);
    assert_int_equal(cnt_throttle_charge(f->t, NM(name), units, unthrottled,
                                         &a), CNT_STATUS_OK);
    return a;
}

/* Checks an answer field by field. */
static void expect(cnt_throttle_answer a, uint8_t state, uint8_t reason,
                   uint32_t used, uint32_t remaining, uint64_t retry)
{
    assert_int_equal(a.state, state);
    assert_int_equal(a.reason, reason);
    assert_int_equal(a.used, used);
    assert_int_equal(a.remaining, remaining);
    assert_int_equal(a.retry_after_ns, retry);
}

/* Configures a tenant with both properties; must answer OK. */
static void set_tenant(fixture *f, const char *name, uint32_t reserved,
                       uint32_t hard)
{
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM(name), true, reserved,
                                             true, hard), CNT_STATUS_OK);
}

/* A tenant's view; must answer OK. */
static cnt_tenant_view view(fixture *f, const char *name)
{
    cnt_tenant_view v;

    memset(&v, 0xee, sizeof v);
    assert_int_equal(cnt_throttle_tenant(f->t, NM(name), &v),
                     CNT_STATUS_OK);
    return v;
}

/* The node's view. */
static cnt_node_view node(fixture *f)
{
    cnt_node_view v;

    memset(&v, 0xee, sizeof v);
    cnt_throttle_node(f->t, &v);
    return v;
}

/* Whether two node views are the same. */
static void same_node(cnt_node_view a, cnt_node_view b)
{
    assert_int_equal(a.capacity, b.capacity);
    assert_int_equal(a.used, b.used);
    assert_int_equal(a.pool, b.pool);
    assert_int_equal(a.pool_used, b.pool_used);
    assert_int_equal(a.reserved_sum, b.reserved_sum);
    assert_int_equal(a.tenants, b.tenants);
    assert_int_equal(a.throttled, b.throttled);
}

/* Whether two tenant views are the same. */
static void same_tenant(cnt_tenant_view a, cnt_tenant_view b)
{
    assert_int_equal(a.reserved, b.reserved);
    assert_int_equal(a.hard_limit, b.hard_limit);
    assert_int_equal(a.used, b.used);
    assert_int_equal(a.flags, b.flags);
    assert_int_equal(a.throttled, b.throttled);
    assert_int_equal(a.units, b.units);
}

/* Counts the tenant records with a whole listing. */
static bool count_visit(void *ctx, const uint8_t *name, uint16_t len,
                        const cnt_tenant_view *v)
{
    (void)name;
    (void)len;
    (void)v;
    (*(size_t *)ctx)++;
    return true;
}

/* The number of tenant records. */
static size_t records(fixture *f)
{
    cnt_map_cursor cur = { 0 };
    size_t n = 0;

    while (!cnt_throttle_list(f->t, &cur, count_visit, &n))
        ;
    return n;
}

/* ---- The model, written out again from doc/throttling.md ---- */

#define MT 6

typedef struct model_tenant {
    const char *name;
    bool configured;
    uint32_t R, H;
    uint64_t used;              /* this second */
    uint64_t conn_used;         /* of it, on throttled connections */
} model_tenant;

typedef struct model {
    uint32_t C, default_hard;
    uint64_t used, pool_used;
    model_tenant t[MT];
} model;

/* P = C - sum(R) over configured tenants. */
static uint64_t model_pool(const model *m)
{
    uint64_t sum = 0;

    for (int i = 0; i < MT; i++)
        if (m->t[i].configured)
            sum += m->t[i].R;
    return m->C > sum ? m->C - sum : 0;
}

/* A new second: every per-second figure back to 0. */
static void model_second(model *m)
{
    m->used = m->pool_used = 0;
    for (int i = 0; i < MT; i++)
        m->t[i].used = m->t[i].conn_used = 0;
}

/* What charging u to tenant i answers at time now, and its effect. */
static cnt_throttle_answer model_charge(model *m, int i, uint32_t u,
                                        bool unthrottled, uint64_t now)
{
    model_tenant *T = &m->t[i];
    uint64_t R = T->configured ? T->R : 0;
    uint64_t H = T->configured ? T->H : m->default_hard;
    uint64_t P = model_pool(m);
    uint64_t U = T->used;
    uint64_t rl = R > U ? R - U : 0;
    uint64_t fp = u > rl ? u - rl : 0;
    cnt_throttle_answer a = { ALLOWED, 0, 0, 0, 0 };

    if (m->C != 0 && !unthrottled) {
        if (H != UNL && U + u > H)
            a.reason = CNT_TREASON_HARD_LIMIT;
        else if (fp > 0 && m->pool_used + fp > P)
            a.reason = P == 0 ? CNT_TREASON_RESERVE
                              : CNT_TREASON_POOL_EMPTY;
    }
    if (a.reason != 0) {
        a.state = THROTTLED;
        a.retry_after_ns = (now / SEC + 1) * SEC - now;
    } else {
        T->used += u;
        if (!unthrottled)
            T->conn_used += u;
        m->used += u;
        if (m->C != 0)
            m->pool_used += fp;
    }
    U = T->used;
    uint64_t hl = U < H ? H - U : 0;
    uint64_t rem;
    if (m->C == 0) {
        rem = H == UNL ? UINT32_MAX : hl;
    } else {
        rem = (R > U ? R - U : 0) +
              (P > m->pool_used ? P - m->pool_used : 0);
        if (H != UNL && hl < rem)
            rem = hl;
    }
    a.used = U > UINT32_MAX ? UINT32_MAX : (uint32_t)U;
    a.remaining = rem > UINT32_MAX ? UINT32_MAX : (uint32_t)rem;
    return a;
}

/* Charges tenant i through the throttle and the model; the answers must
 * be the same, field by field. */
static cnt_throttle_answer both(fixture *f, model *m, int i, uint32_t u,
                                bool unthrottled)
{
    cnt_throttle_answer want = model_charge(m, i, u, unthrottled,
                                            now_ns(f));
    cnt_throttle_answer got = charge(f, m->t[i].name, u, unthrottled);

    expect(got, want.state, want.reason, want.used, want.remaining,
           want.retry_after_ns);
    return got;
}

/* Random demand of six tenants (reserves, hard limits at, above and
 * without their reserve, default ones) over 300 seconds, some of it on
 * unthrottled connections: every answer as the model's; within each
 * second no throttled-connection charge passes a hard limit, none within
 * a reserve is refused, every tenant topping up its demand gets at least
 * its reserve, and throttled-connection use adds up to at most the
 * capacity (exactly the capacity when nothing ran unthrottled). */
static void test_random_demand_model(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    model m = {
        .C = 1000, .default_hard = 500,
        .t = {
            { "res300", true, 300, UNL, 0, 0 },
            { "res200-h400", true, 200, 400, 0, 0 },
            { "h600", true, 0, 600, 0, 0 },
            { "res100-h100", true, 100, 100, 0, 0 },
            { "anon1", false, 0, 0, 0, 0 },
            { "anon2", false, 0, 0, 0, 0 },
        },
    };
    unsigned seed = 4242;
    unsigned throttled = 0, reasons[4] = { 0 };
    uint64_t every[4] = { 0 };  /* the top-ups' refusals too */

    assert_int_equal(cnt_throttle_set_capacity(f->t, m.C), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_default_hard(f->t, m.default_hard),
                     CNT_STATUS_OK);
    for (int i = 0; i < 4; i++)
        set_tenant(f, m.t[i].name, m.t[i].R, m.t[i].H);
    /* Start inside a second, not at its edge. */
    pass(f, 123456789);
    for (int sec = 0; sec < 300; sec++) {
        bool any_unthrottled = false;
        int n = 10 + (int)(seed % 40);
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            int i = (int)((seed >> 8) % MT);
            uint32_t u = 1 + (seed >> 12) % ((seed >> 20) % 4 == 0 ? 400
                                                                     : 60);
            bool unthr = (seed >> 16) % 17 == 0;
            uint64_t U = m.t[i].used;
            uint32_t R = m.t[i].configured ? m.t[i].R : 0;
            cnt_throttle_answer a = both(f, &m, i, u, unthr);
            any_unthrottled = any_unthrottled || unthr;
            if (a.state == THROTTLED) {
                throttled++;
                reasons[a.reason]++;
                every[a.reason]++;
                /* Nothing within the reserve is ever refused. */
                assert_true(U + u > R);
            } else if (!unthr) {
                uint32_t H = m.t[i].configured ? m.t[i].H
                                               : m.default_hard;
                assert_true(H == UNL || m.t[i].used <= H);
            }
            /* Move on inside the second, never past it here. */
            uint64_t left = to_next(f);
            pass(f, left > 2 ? (seed >> 3) % (left / 2) : 0);
        }
        /* Every tenant tops its demand up with single units. */
        for (int i = 0; i < MT; i++) {
            cnt_throttle_answer a;
            while ((a = both(f, &m, i, 1, false)).state == ALLOWED)
                ;
            every[a.reason]++;
        }
        uint64_t conn = 0;
        for (int i = 0; i < MT; i++) {
            if (m.t[i].configured)
                assert_true(m.t[i].used >= m.t[i].R);
            conn += m.t[i].conn_used;
        }
        assert_true(conn <= m.C);
        if (!any_unthrottled)
            assert_int_equal(conn, m.C);
        cnt_node_view nv = node(f);
        assert_int_equal(nv.used, m.used > UINT32_MAX ? UINT32_MAX
                                                      : m.used);
        assert_int_equal(nv.pool_used, m.pool_used);
        next_second(f);
        pass(f, (seed >> 5) % SEC);
        model_second(&m);
        /* Now and then a whole idle second goes by. */
        if (sec % 50 == 49)
            pass(f, SEC);
    }
    /* Every reason came up. */
    assert_true(throttled > 1000);
    assert_true(reasons[CNT_TREASON_HARD_LIMIT] > 0);
    assert_true(reasons[CNT_TREASON_POOL_EMPTY] > 0);
    /* The totals per reason are the answers' reasons, counted. */
    cnt_throttle_stats ts;
    cnt_throttle_stats_get(f->t, &ts);
    for (int r = 0; r <= CNT_TREASON_MAX; r++)
        assert_int_equal(ts.throttled_by[r], every[r]);
    /* Each tenant's split adds up to its throttled charges. */
    for (int i = 0; i < MT; i++) {
        uint64_t by[CNT_TREASON_MAX + 1], sum = 0;
        assert_int_equal(cnt_throttle_tenant_reasons(f->t, NM(m.t[i].name),
                                                     by), CNT_STATUS_OK);
        assert_int_equal(by[CNT_TREASON_NONE], 0);
        for (int r = 0; r <= CNT_TREASON_MAX; r++)
            sum += by[r];
        assert_int_equal(sum, view(f, m.t[i].name).throttled);
    }
    fixture_free(f);
}

/* The example of doc/throttling.md, step by step. */
static void test_worked_example(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("A"), true, 300,
                                             false, 0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("B"), false, 0, true,
                                             600), CNT_STATUS_OK);
    cnt_node_view nv = node(f);
    assert_int_equal(nv.pool, 700);
    assert_int_equal(nv.reserved_sum, 300);
    assert_int_equal(nv.tenants, 2);
    /* Second 1, 250 ms in. */
    pass(f, 250000000);
    expect(charge(f, "B", 500, false), ALLOWED, 0, 500, 100, 0);
    expect(charge(f, "C", 250, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 0, 200, 750000000);
    expect(charge(f, "C", 200, false), ALLOWED, 0, 200, 0, 0);
    expect(charge(f, "B", 100, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 500, 0, 750000000);
    expect(charge(f, "A", 300, false), ALLOWED, 0, 300, 0, 0);
    expect(charge(f, "A", 1, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 300, 0, 750000000);
    nv = node(f);
    assert_int_equal(nv.used, 1000);
    assert_int_equal(nv.pool_used, 700);
    /* Second 2: B takes its hard limit from the pool, A its reserve. */
    next_second(f);
    expect(charge(f, "B", 600, false), ALLOWED, 0, 600, 0, 0);
    expect(charge(f, "B", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 600, 0, SEC);
    expect(charge(f, "A", 250, false), ALLOWED, 0, 250, 150, 0);
    expect(charge(f, "C", 100, false), ALLOWED, 0, 100, 0, 0);
    expect(charge(f, "A", 100, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 250, 50, SEC);
    expect(charge(f, "A", 50, false), ALLOWED, 0, 300, 0, 0);
    /* An operator's unthrottled charge: allowed past the pool. */
    expect(charge(f, "C", 500, true), ALLOWED, 0, 600, 0, 0);
    nv = node(f);
    assert_int_equal(nv.used, 1500);
    assert_int_equal(nv.pool_used, 1200);
    /* Second 3: A reserves everything, so there is no pool. */
    next_second(f);
    set_tenant(f, "A", 1000, UNL);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("B"), true, 0, true,
                                             600), CNT_STATUS_OK);
    expect(charge(f, "A", 1000, false), ALLOWED, 0, 1000, 0, 0);
    expect(charge(f, "A", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 1000, 0, SEC);
    expect(charge(f, "B", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 0, 0, SEC);
    fixture_free(f);
}

/* A hard limit passes at the limit and refuses one unit more, before the
 * pool is looked at; H = R; a reserved tenant within its reserve is never
 * refused even when the pool is gone. */
static void test_hard_limit_at_or_below(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000), CNT_STATUS_OK);
    set_tenant(f, "h", 0, 10);
    set_tenant(f, "eq", 50, 50);
    expect(charge(f, "h", 10, false), ALLOWED, 0, 10, 0, 0);
    expect(charge(f, "h", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 10, 0, SEC);
    /* One at a time to exactly the limit. */
    next_second(f);
    for (uint32_t i = 1; i <= 10; i++)
        expect(charge(f, "h", 1, false), ALLOWED, 0, i, 10 - i, 0);
    assert_int_equal(charge(f, "h", 1, false).reason,
                     CNT_TREASON_HARD_LIMIT);
    /* H = R: the reserve, all of it, nothing more. */
    expect(charge(f, "eq", 51, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 0, 50, SEC);
    expect(charge(f, "eq", 50, false), ALLOWED, 0, 50, 0, 0);
    /* The hard limit comes first: the pool is also short here. */
    set_tenant(f, "big", 0, 2000);
    expect(charge(f, "big", 940, false), ALLOWED, 0, 940, 0, 0);
    set_tenant(f, "h2", 0, 5);
    expect(charge(f, "h2", 6, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 0, 0, SEC);
    expect(charge(f, "h2", 5, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 0, 0, SEC);
    fixture_free(f);
}

/* Unthrottled connections are always allowed (past hard limits and the
 * pool), counted reserve first, then pool, and what they take from the
 * pool leaves the others less. */
static void test_unthrottled_accounting(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_throttle_stats s;

    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    set_tenant(f, "A", 50, 60);
    /* A: 70 unthrottled = its reserve 50 and 20 from the pool. */
    expect(charge(f, "A", 70, true), ALLOWED, 0, 70, 0, 0);
    cnt_node_view nv = node(f);
    assert_int_equal(nv.used, 70);
    assert_int_equal(nv.pool_used, 20);
    /* B has 30 of the pool left, then nothing. */
    expect(charge(f, "B", 31, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 0, 30, SEC);
    expect(charge(f, "B", 30, false), ALLOWED, 0, 30, 0, 0);
    /* B unthrottled goes past the pool. */
    expect(charge(f, "B", 100, true), ALLOWED, 0, 130, 0, 0);
    nv = node(f);
    assert_int_equal(nv.used, 200);
    assert_int_equal(nv.pool_used, 150);
    assert_int_equal(nv.pool, 50);
    /* A is past its hard limit now: throttled for that first. */
    expect(charge(f, "A", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 70, 0, SEC);
    cnt_throttle_stats_get(f->t, &s);
    assert_int_equal(s.checks, 5);
    assert_int_equal(s.allowed, 3);
    assert_int_equal(s.throttled, 2);
    assert_int_equal(s.units, 200);
    assert_int_equal(s.unthrottled_units, 170);
    /* Next second: the reserve is A's again, whatever happened before. */
    next_second(f);
    expect(charge(f, "A", 50, false), ALLOWED, 0, 50, 10, 0);
    fixture_free(f);
}

/* The second rolls over exactly at the boundary: 1 ns before it
 * everything is still spent and the hint is 1 ns; at it everything is
 * back; the hint is exact from any point of a second. */
static void test_refill_boundaries(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 10), CNT_STATUS_OK);
    set_tenant(f, "r", 4, UNL);
    expect(charge(f, "r", 10, false), ALLOWED, 0, 10, 0, 0);
    pass(f, to_next(f) - 1);
    expect(charge(f, "r", 1, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 10, 0, 1);
    cnt_tenant_view v = view(f, "r");
    assert_int_equal(v.used, 10);
    assert_int_equal(node(f).used, 10);
    pass(f, 1);
    assert_int_equal(view(f, "r").used, 0);
    assert_int_equal(node(f).used, 0);
    expect(charge(f, "r", 10, false), ALLOWED, 0, 10, 0, 0);
    /* retry_after_ns from odd offsets. */
    static const uint64_t offsets[] = { 1, 999, 123456789, SEC - 2 };
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        next_second(f);
        expect(charge(f, "r", 10, false), ALLOWED, 0, 10, 0, 0);
        pass(f, offsets[i]);
        cnt_throttle_answer a = charge(f, "r", 1, false);
        assert_int_equal(a.state, THROTTLED);
        assert_int_equal(a.retry_after_ns, SEC - offsets[i]);
        pass(f, a.retry_after_ns - 1);
        assert_int_equal(charge(f, "r", 1, false).state, THROTTLED);
        pass(f, 1);
        assert_int_equal(charge(f, "r", 1, false).state, ALLOWED);
    }
    /* Seconds with nothing in between: the figures are of the new one. */
    pass(f, 5 * SEC + 17);
    expect(charge(f, "r", 3, false), ALLOWED, 0, 3, 7, 0);
    fixture_free(f);
}

/* Each reason: hard limit, pool empty (a pool exists), reserve (no pool:
 * the reserves take the whole capacity), also for a tenant with no
 * reserve; and a default hard limit for unconfigured tenants. */
/* What a listing with reasons saw: records, and their splits summed. */
typedef struct reason_seen {
    unsigned n;
    uint64_t sum[CNT_TREASON_MAX + 1];
} reason_seen;

static bool reason_visit(void *ctx, const uint8_t *name, uint16_t len,
                         const cnt_tenant_view *v, const uint64_t *by)
{
    reason_seen *s = ctx;
    uint64_t total = 0;

    (void)name;
    (void)len;
    s->n++;
    for (int r = 0; r <= CNT_TREASON_MAX; r++) {
        s->sum[r] += by[r];
        total += by[r];
    }
    assert_int_equal(total, v->throttled);
    return true;
}

static void test_reasons(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    set_tenant(f, "all", 100, UNL);
    expect(charge(f, "all", 100, false), ALLOWED, 0, 100, 0, 0);
    expect(charge(f, "all", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 100, 0, SEC);
    expect(charge(f, "other", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 0, 0, SEC);
    /* A pool of 40. */
    set_tenant(f, "all", 60, UNL);
    next_second(f);
    expect(charge(f, "other", 40, false), ALLOWED, 0, 40, 0, 0);
    expect(charge(f, "other", 1, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 40, 0, SEC);
    expect(charge(f, "all", 61, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 0, 60, SEC);
    /* The default hard limit. */
    assert_int_equal(cnt_throttle_set_default_hard(f->t, 5), CNT_STATUS_OK);
    next_second(f);
    expect(charge(f, "anon", 6, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 0, 5, SEC);
    expect(charge(f, "anon", 5, false), ALLOWED, 0, 5, 0, 0);
    cnt_tenant_view v = view(f, "anon");
    assert_int_equal(v.reserved, 0);
    assert_int_equal(v.hard_limit, 5);
    assert_int_equal(v.flags, 0);
    /* Its throttled charge came before it had a record. */
    assert_int_equal(v.throttled, 0);
    assert_int_equal(v.units, 5);
    expect(charge(f, "anon", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 5, 0, SEC);
    assert_int_equal(view(f, "anon").throttled, 1);
    /* Each throttled charge counted under its reason, for its tenant
     * (when it had a record) and for the node. */
    uint64_t want[][CNT_TREASON_MAX + 1] = {
        [0] = { 0, 1, 1, 0 },   /* all */
        [1] = { 0, 0, 1, 0 },   /* other: no record at its first */
        [2] = { 0, 0, 0, 1 },   /* anon: no record at its first */
    };
    const char *who[] = { "all", "other", "anon" };
    for (int i = 0; i < 3; i++) {
        uint64_t by[CNT_TREASON_MAX + 1];
        assert_int_equal(cnt_throttle_tenant_reasons(f->t, NM(who[i]), by),
                         CNT_STATUS_OK);
        assert_memory_equal(by, want[i], sizeof by);
    }
    reason_seen seen = { 0 };
    cnt_map_cursor cur = { 0 };
    while (!cnt_throttle_list_reasons(f->t, &cur, reason_visit, &seen))
        ;
    assert_int_equal(seen.n, 3);
    for (int r = 0; r <= CNT_TREASON_MAX; r++)
        assert_int_equal(seen.sum[r], want[0][r] + want[1][r] + want[2][r]);
    cnt_throttle_stats ts;
    cnt_throttle_stats_get(f->t, &ts);
    assert_int_equal(ts.throttled_by[CNT_TREASON_NONE], 0);
    assert_int_equal(ts.throttled_by[CNT_TREASON_RESERVE], 2);
    assert_int_equal(ts.throttled_by[CNT_TREASON_POOL_EMPTY], 2);
    assert_int_equal(ts.throttled_by[CNT_TREASON_HARD_LIMIT], 2);
    uint64_t none[CNT_TREASON_MAX + 1];
    assert_int_equal(cnt_throttle_tenant_reasons(f->t, NM("nobody"), none),
                     CNT_STATUS_OK);
    assert_int_equal(none[CNT_TREASON_HARD_LIMIT], 0);
    assert_int_equal(cnt_throttle_tenant_reasons(f->t, NM(""), none),
                     CNT_STATUS_INVALID);
    /* A configured tenant keeps its own hard limit. */
    assert_int_equal(view(f, "all").hard_limit, UNL);
    /* Arguments: units 0 or an empty name are refused. */
    cnt_throttle_answer a;
    assert_int_equal(cnt_throttle_charge(f->t, NM("x"), 0, false, &a),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_charge(f->t, NM(""), 1, false, &a),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_tenant(f->t, NM(""), &v),
                     CNT_STATUS_INVALID);
    fixture_free(f);
}

/* Capacity 0 is off: every charge allowed and counted (hard limits too
 * are not enforced), remaining all ones for an unlimited tenant and the
 * room below H otherwise; any reserves may be set meanwhile. */
static void test_capacity_zero_off(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    expect(charge(f, "a", 0xffffffffu, false), ALLOWED, 0, 0xffffffffu,
           0xffffffffu, 0);
    expect(charge(f, "a", 5, false), ALLOWED, 0, 0xffffffffu, 0xffffffffu,
           0);
    set_tenant(f, "h", 3000000000u, 3000000000u);
    set_tenant(f, "h2", 3000000000u, UNL);
    expect(charge(f, "h", 10, false), ALLOWED, 0, 10, 2999999990u, 0);
    expect(charge(f, "h", 3000000000u, false), ALLOWED, 0, 3000000010u, 0,
           0);
    cnt_node_view nv = node(f);
    assert_int_equal(nv.capacity, 0);
    assert_int_equal(nv.used, 0xffffffffu);
    assert_int_equal(nv.pool, 0);
    assert_int_equal(nv.pool_used, 0);
    assert_int_equal(nv.reserved_sum, 0xffffffffu);
    assert_int_equal(nv.tenants, 2);
    assert_int_equal(nv.throttled, 0);
    /* Turning throttling on must respect the reserves. */
    assert_int_equal(cnt_throttle_set_capacity(f->t, 0xffffffffu),
                     CNT_STATUS_OVER_CAPACITY);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("h2")),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 2999999999u),
                     CNT_STATUS_OVER_CAPACITY);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 3000000000u),
                     CNT_STATUS_OK);
    /* Now on, in the same second: a and h are over. */
    expect(charge(f, "a", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 0xffffffffu, 0, to_next(f));
    fixture_free(f);
}

/* 0x2C: a reserve or a capacity that would break sum(R) <= C is refused
 * and changes nothing; at exactly C it fits. Other refusals of set and
 * remove. */
static void test_over_capacity(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000), CNT_STATUS_OK);
    set_tenant(f, "A", 600, UNL);
    cnt_node_view before = node(f);
    uint64_t bytes = cnt_map_budget_used(&f->budget);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("B"), true, 401, false,
                                             0), CNT_STATUS_OVER_CAPACITY);
    same_node(before, node(f));
    assert_int_equal(view(f, "B").flags, 0);
    assert_int_equal(cnt_map_budget_used(&f->budget), bytes);
    /* Raising A past the capacity: refused, A as it was. */
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("A"), true, 1001,
                                             false, 0),
                     CNT_STATUS_OVER_CAPACITY);
    assert_int_equal(view(f, "A").reserved, 600);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("B"), true, 400, false,
                                             0), CNT_STATUS_OK);
    assert_int_equal(node(f).pool, 0);
    assert_int_equal(node(f).reserved_sum, 1000);
    /* A's reserve can move within what is free. */
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("A"), true, 500, false,
                                             0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("A"), true, 600, false,
                                             0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 999),
                     CNT_STATUS_OVER_CAPACITY);
    assert_int_equal(node(f).capacity, 1000);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("C"), true, 5000,
                                             false, 0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000),
                     CNT_STATUS_OVER_CAPACITY);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 6000), CNT_STATUS_OK);
    assert_int_equal(node(f).pool, 0);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 7000), CNT_STATUS_OK);
    /* Hard limit below the reserve, or neither property: 0x04. */
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("D"), true, 10, true,
                                             9), CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("A"), false, 0, true,
                                             599), CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_set_default_hard(f->t, 10),
                     CNT_STATUS_OK);
    /* A new tenant starts from the default hard limit. */
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("D"), true, 11, false,
                                             0), CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("D"), true, 10, false,
                                             0), CNT_STATUS_OK);
    assert_int_equal(view(f, "D").hard_limit, 10);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("D"), false, 0, false,
                                             0), CNT_STATUS_INVALID);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM(""), true, 0, false,
                                             0), CNT_STATUS_INVALID);
    assert_int_equal(view(f, "A").hard_limit, UNL);
    assert_int_equal(node(f).tenants, 4);
    assert_int_equal(node(f).reserved_sum, 6010);
    /* Remove: back to the defaults; 0x01 unless configured. */
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("C")),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("C")),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("never")),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("")),
                     CNT_STATUS_INVALID);
    cnt_tenant_view v = view(f, "C");
    assert_int_equal(v.reserved, 0);
    assert_int_equal(v.hard_limit, 10);
    assert_int_equal(v.flags, 0);
    assert_int_equal(node(f).tenants, 3);
    assert_int_equal(node(f).reserved_sum, 1010);
    assert_int_equal(node(f).pool, 5990);
    fixture_free(f);
}

/* Removing a tenant keeps its usage of this second: the pool part it
 * took stays taken, and its own use counts against the default hard
 * limit until the second ends. */
static void test_remove_keeps_usage(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_default_hard(f->t, 40),
                     CNT_STATUS_OK);
    set_tenant(f, "A", 30, 80);
    expect(charge(f, "A", 50, false), ALLOWED, 0, 50, 30, 0);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("A")),
                     CNT_STATUS_OK);
    cnt_tenant_view v = view(f, "A");
    assert_int_equal(v.used, 50);
    assert_int_equal(v.flags, 0);
    assert_int_equal(v.units, 50);
    assert_int_equal(node(f).pool, 100);
    assert_int_equal(node(f).pool_used, 20);
    expect(charge(f, "A", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 50, 0, SEC);
    next_second(f);
    expect(charge(f, "A", 40, false), ALLOWED, 0, 40, 0, 0);
    fixture_free(f);
}

/* ---- Apply ---- */

/* A settings set. */
static cnt_throttle_settings settings(cnt_throttle_setting *e, size_t n,
                                      bool has_c, uint32_t c,
                                      bool has_h, uint32_t h)
{
    cnt_throttle_settings s = {
        .has_capacity = has_c, .capacity = c, .has_default_hard = has_h,
        .default_hard = h, .ntenants = n, .tenants = e,
    };
    return s;
}

/* One setting. */
static cnt_throttle_setting one(const char *name, uint32_t r, uint32_t h)
{
    cnt_throttle_setting e = { NM(name), r, h };
    return e;
}

/* Everything a failed apply must leave as it was. */
typedef struct snapshot {
    cnt_node_view node;
    cnt_tenant_view v[4];
    uint64_t bytes;
    size_t records;
} snapshot;

static const char *const snap_names[4] = { "A", "B", "run", "new" };

/* Takes a snapshot. */
static snapshot snap(fixture *f)
{
    snapshot s;

    s.node = node(f);
    for (int i = 0; i < 4; i++)
        s.v[i] = view(f, snap_names[i]);
    s.bytes = cnt_map_budget_used(&f->budget);
    s.records = records(f);
    return s;
}

/* Checks that nothing changed since a snapshot. */
static void unchanged(fixture *f, const snapshot *s)
{
    snapshot now = snap(f);

    same_node(s->node, now.node);
    for (int i = 0; i < 4; i++)
        same_tenant(s->v[i], now.v[i]);
    assert_int_equal(s->bytes, now.bytes);
    assert_int_equal(s->records, now.records);
}

/* Apply: refusals change nothing (a hard limit below its reserve, an
 * empty name, a name twice, reserves past the capacity, the capacity
 * below the reserves); success replaces the capacity and the default,
 * configures what it names (the file wins over run-time values) and
 * leaves the rest; a capacity and reserves can move together, in either
 * direction, as long as the result fits. */
static void test_apply_all_or_nothing(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 1000), CNT_STATUS_OK);
    set_tenant(f, "A", 300, UNL);
    set_tenant(f, "B", 0, 600);
    set_tenant(f, "run", 100, 200);
    expect(charge(f, "A", 10, false), ALLOWED, 0, 10, 890, 0);
    snapshot s0 = snap(f);

    cnt_throttle_setting e[4];
    e[0] = one("A", 200, UNL);
    e[1] = one("new", 50, 100);
    e[2] = one("B", 10, 9);
    cnt_throttle_settings s = settings(e, 3, true, 500, true, 7);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_INVALID);
    unchanged(f, &s0);
    e[2] = one("", 10, 20);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_INVALID);
    unchanged(f, &s0);
    /* A name twice (the second time a new one made by this apply). */
    e[2] = one("new", 10, 20);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_INVALID);
    unchanged(f, &s0);
    /* Over the capacity: 200 + 50 + 100 (run stays) + 700 > 1000. */
    e[2] = one("B", 700, 800);
    s = settings(e, 3, false, 0, true, 7);
    assert_int_equal(cnt_throttle_apply(f->t, &s),
                     CNT_STATUS_OVER_CAPACITY);
    unchanged(f, &s0);
    /* The new capacity is below what the reserves would be. */
    e[2] = one("B", 100, 800);
    s = settings(e, 3, true, 449, true, 7);
    assert_int_equal(cnt_throttle_apply(f->t, &s),
                     CNT_STATUS_OVER_CAPACITY);
    unchanged(f, &s0);
    /* Exactly fits: 200 + 50 + 100 + 100 = 450. A shrinks, B and new
     * grow, the capacity shrinks. */
    s = settings(e, 3, true, 450, true, 7);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_OK);
    cnt_node_view nv = node(f);
    assert_int_equal(nv.capacity, 450);
    assert_int_equal(nv.reserved_sum, 450);
    assert_int_equal(nv.pool, 0);
    assert_int_equal(nv.tenants, 4);
    cnt_tenant_view v = view(f, "A");
    assert_int_equal(v.reserved, 200);
    assert_int_equal(v.hard_limit, UNL);
    assert_int_equal(v.used, 10);
    assert_int_equal(v.units, 10);
    v = view(f, "B");
    assert_int_equal(v.reserved, 100);
    assert_int_equal(v.hard_limit, 800);
    v = view(f, "new");
    assert_int_equal(v.reserved, 50);
    assert_int_equal(v.hard_limit, 100);
    assert_int_equal(v.flags, CNT_TENANT_FLAG_CONFIGURED);
    /* Not named: stays as it was set at run time. */
    v = view(f, "run");
    assert_int_equal(v.reserved, 100);
    assert_int_equal(v.hard_limit, 200);
    assert_int_equal(view(f, "anon").hard_limit, 7);
    /* The other way round: capacity up, reserves up; and a run-time
     * change of a named tenant is overwritten by the file's value. */
    set_tenant(f, "new", 0, 5);
    e[0] = one("A", 700, UNL);
    e[1] = one("new", 50, 100);
    s = settings(e, 2, true, 1000, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_OK);
    nv = node(f);
    assert_int_equal(nv.capacity, 1000);
    assert_int_equal(nv.reserved_sum, 950);
    assert_int_equal(nv.pool, 50);
    assert_int_equal(view(f, "new").hard_limit, 100);
    assert_int_equal(view(f, "anon").hard_limit, 7);
    /* Without a capacity the current one is the bound; an empty set
     * changes nothing. */
    e[0] = one("A", 751, UNL);
    s = settings(e, 1, false, 0, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s),
                     CNT_STATUS_OVER_CAPACITY);
    s = settings(NULL, 0, false, 0, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_OK);
    assert_int_equal(node(f).reserved_sum, 950);
    /* Capacity 0: any reserves. */
    e[0] = one("A", 5000, UNL);
    s = settings(e, 1, true, 0, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_OK);
    assert_int_equal(node(f).reserved_sum, 5250);
    fixture_free(f);
}

/* ---- Listing ---- */

#define KEEP 150
#define TMP 100
#define NEWN 40

/* What a paused listing saw. */
typedef struct seen {
    unsigned keep[KEEP], tmp[TMP], fresh[NEWN];
    unsigned visits;            /* in this call */
    unsigned stop_every;
    bool views_ok;
} seen;

/* Records one visited tenant; stops every stop_every visits. */
static bool seen_visit(void *ctx, const uint8_t *name, uint16_t len,
                       const cnt_tenant_view *v)
{
    seen *s = ctx;
    char buf[32];
    int i;

    assert_true(len < sizeof buf);
    memcpy(buf, name, len);
    buf[len] = 0;
    if (sscanf(buf, "keep%d", &i) == 1) {
        s->keep[i]++;
        if (v->flags != CNT_TENANT_FLAG_CONFIGURED ||
            v->reserved != (uint32_t)i || v->hard_limit != UNL)
            s->views_ok = false;
    } else if (sscanf(buf, "tmp%d", &i) == 1) {
        s->tmp[i]++;
        if (v->flags != 0 || v->units != 1)
            s->views_ok = false;
    } else if (sscanf(buf, "new%d", &i) == 1) {
        s->fresh[i]++;
    } else {
        s->views_ok = false;
    }
    return ++s->visits % s->stop_every != 0;
}

/* A listing over a few long chains, paused every 7 records (inside
 * chains) while idle tenants are swept away (some where the cursor
 * waits) and new ones come: every tenant that exists throughout is
 * visited exactly once, none twice; a cancelled listing leaves nothing
 * registered behind. */
static void test_list_paused_cursor(void **st)
{
    (void)st;
    fixture *f = fixture_new_with(0, 4);
    cnt_table_config tc = { .buckets = 16, .clock = &f->clock.clock };
    cnt_table *tab = cnt_table_new(&tc);
    cnt_gc *gc = cnt_gc_new(tab);
    char name[32];
    seen *s = calloc(1, sizeof *s);

    assert_non_null(gc);
    assert_non_null(s);
    assert_int_equal(cnt_gc_add_throttle(gc, f->t), 0);
    for (int i = 0; i < KEEP; i++) {
        snprintf(name, sizeof name, "keep%d", i);
        set_tenant(f, name, (uint32_t)i, UNL);
    }
    for (int i = 0; i < TMP; i++) {
        snprintf(name, sizeof name, "tmp%d", i);
        assert_int_equal(charge(f, name, 1, false).state, ALLOWED);
    }
    next_second(f);
    s->stop_every = 7;
    s->views_ok = true;
    cnt_map_cursor cur = { 0 };
    int calls = 0, added = 0;
    bool done = false;
    while (!done) {
        s->visits = 0;
        done = cnt_throttle_list(f->t, &cur, seen_visit, s);
        calls++;
        if (calls == 10)
            /* The idle tmp tenants go, the paused one's node perhaps. */
            assert_int_equal(cnt_gc_run_once(gc), TMP);
        if (added < NEWN) {
            snprintf(name, sizeof name, "new%d", added++);
            assert_int_equal(charge(f, name, 1, false).state, ALLOWED);
        }
    }
    assert_true(calls > 20);
    while (added < NEWN) {
        snprintf(name, sizeof name, "new%d", added++);
        assert_int_equal(charge(f, name, 1, false).state, ALLOWED);
    }
    assert_true(s->views_ok);
    for (int i = 0; i < KEEP; i++)
        assert_int_equal(s->keep[i], 1);
    for (int i = 0; i < TMP; i++)
        assert_true(s->tmp[i] <= 1);
    for (int i = 0; i < NEWN; i++)
        assert_true(s->fresh[i] <= 1);
    /* Cancel in the middle, then let the sweep unlink everything it may
     * (ASan would see a stale registration). */
    memset(s, 0, sizeof *s);
    s->stop_every = 3;
    s->views_ok = true;
    cnt_map_cursor c2 = { 0 };
    assert_false(cnt_throttle_list(f->t, &c2, seen_visit, s));
    assert_true(c2.paused);
    cnt_throttle_list_cancel(f->t, &c2);
    assert_false(c2.paused);
    cnt_throttle_list_cancel(f->t, &c2);
    next_second(f);
    assert_int_equal(cnt_gc_run_once(gc), NEWN);
    assert_int_equal(records(f), KEEP);
    free(s);
    cnt_gc_free(gc);
    cnt_table_free(tab);
    fixture_free(f);
}

/* ---- Memory ---- */

/* Beyond the budget: a charge that needs a new record, a new tenant's
 * configuration and an apply that names one answer 0x82 and change
 * nothing; a throttled charge of a new tenant needs no record and is
 * answered as usual; existing tenants are not affected. The budget is
 * shared with the semaphore table. */
static void test_memory_limit(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    uint64_t one_rec = cnt_map_node_size(cnt_throttle_map(f->t), 1);
    fixture_free(f);

    f = fixture_new(2 * one_rec);
    cnt_table_config tc = { .buckets = 64, .budget = &f->budget,
                            .clock = &f->clock.clock };
    cnt_table *tab = cnt_table_new(&tc);
    assert_non_null(tab);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    set_tenant(f, "a", 10, UNL);
    assert_int_equal(charge(f, "b", 5, false).state, ALLOWED);
    assert_int_equal(cnt_map_budget_used(&f->budget), 2 * one_rec);
    cnt_node_view nv = node(f);
    cnt_throttle_stats s0, s1;
    cnt_throttle_stats_get(f->t, &s0);
    cnt_throttle_answer a;

    assert_int_equal(cnt_throttle_charge(f->t, NM("c"), 1, false, &a),
                     CNT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(cnt_throttle_charge(f->t, NM("c"), 1, true, &a),
                     CNT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(cnt_throttle_set_tenant(f->t, NM("c"), true, 1, false,
                                             0), CNT_STATUS_OUT_OF_MEMORY);
    cnt_throttle_setting e[2] = { one("a", 20, UNL), one("c", 1, 2) };
    cnt_throttle_settings s = settings(e, 2, true, 200, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s),
                     CNT_STATUS_OUT_OF_MEMORY);
    same_node(nv, node(f));
    assert_int_equal(view(f, "a").reserved, 10);
    assert_int_equal(view(f, "c").flags, 0);
    assert_int_equal(cnt_map_budget_used(&f->budget), 2 * one_rec);
    cnt_throttle_stats_get(f->t, &s1);
    assert_int_equal(s1.checks, s0.checks + 2);
    assert_int_equal(s1.allowed, s0.allowed);
    assert_int_equal(s1.throttled, s0.throttled);
    assert_int_equal(s1.units, s0.units);
    /* A new tenant whose charge is throttled needs no record. */
    expect(charge(f, "c", 91, false), THROTTLED,
           CNT_TREASON_POOL_EMPTY, 0, 85, SEC);
    /* Existing tenants go on. */
    assert_int_equal(charge(f, "a", 10, false).state, ALLOWED);
    assert_int_equal(charge(f, "b", 5, true).state, ALLOWED);
    /* The table is out of room too; a freed tenant record makes some. */
    cnt_holdings h;
    cnt_holdings_init(&h);
    assert_int_equal(cnt_table_acquire(tab, &h, CNT_NAME("s"), 1, 1),
                     CNT_STATUS_OUT_OF_MEMORY);
    next_second(f);
    cnt_map_may_go go = cnt_throttle_may_go(f->t);
    cnt_clock_now now;
    cnt_clock_read(&f->clock.clock, &now);
    assert_int_equal(cnt_map_sweep(cnt_throttle_map(f->t), 0, 1024, &go,
                                   &now), 1);
    assert_int_equal(cnt_table_acquire(tab, &h, CNT_NAME("s"), 1, 1),
                     CNT_STATUS_OK);
    cnt_table_release_all(tab, &h);
    cnt_holdings_destroy(&h);
    cnt_table_free(tab);
    fixture_free(f);
}

/* Every allocation of a charge of a new tenant, of a new tenant's
 * configuration and of an apply naming three new tenants fails in turn:
 * OK or 0x82, and after 0x82 nothing changed and nothing leaked. */
static void test_memory_injected_failures(void **st)
{
    (void)st;
    unsigned long n;
    cnt_throttle_answer a;

    for (n = 1; n < 10; n++) {
        fixture *f = fixture_new(0);
        long live = cnt_fake_alloc_live();

        cnt_fake_alloc_fail_at(n, 0);
        cnt_status s = cnt_throttle_charge(f->t, NM("x"), 3, false, &a);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (s == CNT_STATUS_OUT_OF_MEMORY) {
            assert_true(injected);
            assert_int_equal(cnt_fake_alloc_live(), live);
            assert_int_equal(cnt_map_budget_used(&f->budget), 0);
            assert_int_equal(node(f).used, 0);
            assert_int_equal(records(f), 0);
            fixture_free(f);
            continue;
        }
        assert_int_equal(s, CNT_STATUS_OK);
        assert_int_equal(a.used, 3);
        fixture_free(f);
        break;
    }
    assert_int_equal(n, 2);
    for (n = 1; n < 10; n++) {
        fixture *f = fixture_new(0);
        long live = cnt_fake_alloc_live();

        cnt_fake_alloc_fail_at(n, 0);
        cnt_status s = cnt_throttle_set_tenant(f->t, NM("x"), true, 3, false,
                                               0);
        cnt_fake_alloc_fail_at(0, 0);
        if (s == CNT_STATUS_OUT_OF_MEMORY) {
            assert_int_equal(cnt_fake_alloc_live(), live);
            assert_int_equal(node(f).tenants, 0);
            assert_int_equal(node(f).reserved_sum, 0);
            fixture_free(f);
            continue;
        }
        assert_int_equal(s, CNT_STATUS_OK);
        fixture_free(f);
        break;
    }
    assert_int_equal(n, 2);
    for (n = 1; n < 20; n++) {
        fixture *f = fixture_new(0);

        assert_int_equal(cnt_throttle_set_capacity(f->t, 1000),
                         CNT_STATUS_OK);
        set_tenant(f, "A", 100, UNL);
        set_tenant(f, "run", 5, 6);
        expect(charge(f, "B", 7, false), ALLOWED, 0, 7, 888, 0);
        snapshot s0 = snap(f);
        long live = cnt_fake_alloc_live();
        cnt_throttle_setting e[4] = {
            one("A", 200, UNL), one("new", 1, 2), one("B", 3, 4),
            one("new2", 5, UNL),
        };
        cnt_throttle_settings s = settings(e, 4, true, 900, true, 50);
        cnt_fake_alloc_fail_at(n, 0);
        cnt_status r = cnt_throttle_apply(f->t, &s);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (r == CNT_STATUS_OUT_OF_MEMORY) {
            assert_true(injected);
            assert_int_equal(cnt_fake_alloc_live(), live);
            unchanged(f, &s0);
            assert_int_equal(view(f, "new2").flags, 0);
            fixture_free(f);
            continue;
        }
        assert_int_equal(r, CNT_STATUS_OK);
        assert_int_equal(node(f).reserved_sum, 214);
        assert_int_equal(node(f).tenants, 5);
        assert_int_equal(view(f, "B").used, 7);
        fixture_free(f);
        break;
    }
    assert_int_equal(n, 3);
}

/* ---- Collection ---- */

/* The GC (hooked with cnt_gc_add_throttle) frees only unconfigured
 * tenants without usage in the current second: configured ones stay
 * (idle or not), a removed one stays until its second ends. */
static void test_gc_idle_unconfigured(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_table_config tc = { .buckets = 16, .clock = &f->clock.clock };
    cnt_table *tab = cnt_table_new(&tc);
    cnt_gc *gc = cnt_gc_new(tab);

    assert_non_null(gc);
    assert_int_equal(cnt_gc_add_throttle(gc, f->t), 0);
    set_tenant(f, "conf-idle", 5, UNL);
    set_tenant(f, "conf-busy", 5, UNL);
    set_tenant(f, "removed", 5, UNL);
    assert_int_equal(charge(f, "old", 1, false).state, ALLOWED);
    next_second(f);
    assert_int_equal(charge(f, "conf-busy", 1, false).state, ALLOWED);
    assert_int_equal(charge(f, "removed", 1, false).state, ALLOWED);
    assert_int_equal(charge(f, "busy", 1, false).state, ALLOWED);
    assert_int_equal(cnt_throttle_remove_tenant(f->t, NM("removed")),
                     CNT_STATUS_OK);
    assert_int_equal(records(f), 5);
    assert_int_equal(cnt_gc_run_once(gc), 1);    /* old */
    assert_int_equal(view(f, "old").units, 0);
    assert_int_equal(view(f, "busy").units, 1);
    assert_int_equal(view(f, "removed").used, 1);
    pass(f, to_next(f) - 1);
    assert_int_equal(cnt_gc_run_once(gc), 0);
    pass(f, 1);
    assert_int_equal(cnt_gc_run_once(gc), 2);    /* busy, removed */
    assert_int_equal(records(f), 2);
    assert_int_equal(view(f, "conf-idle").flags, CNT_TENANT_FLAG_CONFIGURED);
    assert_int_equal(view(f, "conf-busy").units, 1);
    assert_int_equal(view(f, "removed").units, 0);
    /* A throttled charge of a new tenant left no record. */
    assert_int_equal(cnt_throttle_set_default_hard(f->t, 0), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    expect(charge(f, "zero", 1, false), THROTTLED,
           CNT_TREASON_HARD_LIMIT, 0, 0, SEC);
    assert_int_equal(records(f), 2);
    cnt_gc_free(gc);
    cnt_table_free(tab);
    fixture_free(f);
}

/* ---- Two threads ---- */

/* What the threads share, and each thread's own part. */
typedef struct hot_run {
    fixture *f;
    unsigned calls;
} hot_run;

typedef struct hot_arg {
    hot_run *r;
    const char *name;
    unsigned allowed;
    unsigned errors;            /* answers other than expected (cmocka's
                                   asserts are for the main thread) */
    uint8_t reason;             /* the one reason throttled charges give */
} hot_arg;

/* A thread's loop of single-unit charges; it counts its own allowed
 * answers and checks the reason of the others. */
static void *hot_main(void *arg)
{
    hot_arg *h = arg;
    cnt_throttle_answer a;
    size_t len = strlen(h->name);

    for (unsigned i = 0; i < h->r->calls; i++) {
        if (cnt_throttle_charge(h->r->f->t, (const uint8_t *)h->name,
                                (uint16_t)len, 1, false, &a) !=
            CNT_STATUS_OK)
            h->errors++;
        else if (a.state == ALLOWED)
            h->allowed++;
        else if (a.reason != h->reason)
            h->errors++;
    }
    return NULL;
}

/* Runs two threads of calls charges each, of tenants n0 and n1. */
static void hot_two(fixture *f, hot_arg arg[2], unsigned calls)
{
    hot_run r = { .f = f, .calls = calls };
    pthread_t th[2];

    for (int i = 0; i < 2; i++) {
        arg[i].r = &r;
        assert_int_equal(pthread_create(&th[i], NULL, hot_main, &arg[i]),
                         0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(arg[0].errors + arg[1].errors, 0);
}

/* A clock that, at its next monotonic reading, lets the GC sweep the
 * tenants at a later time first: a charge that read its time and then
 * waited for the stripe lock while the GC freed the tenant's record. */
typedef struct race_clock {
    cnt_clock clock;
    uint64_t ns;
    cnt_throttle *t;
    bool sweep;
    uint64_t sweep_at;
} race_clock;

/* Its monotonic reading: the time, after the sweep when one is due. */
static uint64_t race_mono(void *ctx)
{
    race_clock *c = ctx;

    if (c->sweep) {
        c->sweep = false;
        cnt_map_may_go go = cnt_throttle_may_go(c->t);
        cnt_clock_now now = { 0, c->sweep_at };
        assert_int_equal(cnt_map_sweep(cnt_throttle_map(c->t), 0, 1u << 20,
                                       &go, &now), 1);
    }
    return c->ns;
}

/* Its wall clock (the throttle does not read it). */
static uint64_t race_wall(void *ctx)
{
    (void)ctx;
    return 1700000000000ull;
}

/* The GC frees an unconfigured tenant's record (its usage was of a second
 * the GC saw as over) between a charge's clock reading and its lock: the
 * charge counts in the GC's second, not as a fresh start of the old one,
 * so the tenant never gets its hard limit twice in one second. */
static void test_gc_race_keeps_the_second(void **st)
{
    (void)st;
    race_clock c = { .ns = 100 * SEC + SEC / 2 };
    cnt_map_budget b;
    cnt_throttle_answer a;
    const uint8_t *x = (const uint8_t *)"x";

    c.clock = (cnt_clock){ race_wall, race_mono, &c };
    cnt_map_budget_init(&b, 0);
    cnt_throttle_config cfg = { .buckets = 64, .budget = &b,
                                .clock = &c.clock };
    c.t = cnt_throttle_new(&cfg);
    assert_non_null(c.t);
    assert_int_equal(cnt_throttle_set_capacity(c.t, 1000), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_default_hard(c.t, 10), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_charge(c.t, x, 1, 10, false, &a),
                     CNT_STATUS_OK);
    assert_int_equal(a.state, CNT_TSTATE_ALLOWED);
    c.sweep = true;
    c.sweep_at = 101 * SEC + 1;
    assert_int_equal(cnt_throttle_charge(c.t, x, 1, 10, false, &a),
                     CNT_STATUS_OK);
    assert_int_equal(a.state, CNT_TSTATE_ALLOWED);
    assert_int_equal(a.used, 10);
    /* Second 101 has its 10 now; another unit the same second is over. */
    assert_int_equal(cnt_throttle_charge(c.t, x, 1, 1, false, &a),
                     CNT_STATUS_OK);
    assert_int_equal(a.state, CNT_TSTATE_THROTTLED);
    assert_int_equal(a.reason, CNT_TREASON_HARD_LIMIT);
    /* Counted from the reading: to the end of second 101. */
    assert_int_equal(a.retry_after_ns, 101 * SEC + SEC - c.ns);
    cnt_throttle_free(c.t);
}

/* Two threads, time standing still. One hot tenant: exactly its hard
 * limit is allowed. Two tenants sharing the pool: together exactly the
 * capacity, each at least its reserve, the pool used exactly; the
 * figures agree with the counts. */
static void test_two_threads(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_throttle_stats s;

    assert_int_equal(cnt_throttle_set_capacity(f->t, 10000), CNT_STATUS_OK);
    set_tenant(f, "hot", 0, 7000);
    hot_arg one_hot[2] = {
        { .name = "hot", .reason = CNT_TREASON_HARD_LIMIT },
        { .name = "hot", .reason = CNT_TREASON_HARD_LIMIT },
    };
    hot_two(f, one_hot, 20000);
    assert_int_equal(one_hot[0].allowed + one_hot[1].allowed, 7000);
    assert_int_equal(view(f, "hot").used, 7000);
    assert_int_equal(view(f, "hot").throttled, 33000);
    assert_int_equal(node(f).used, 7000);
    cnt_throttle_stats_get(f->t, &s);
    assert_int_equal(s.checks, 40000);
    assert_int_equal(s.allowed, 7000);
    assert_int_equal(s.throttled, 33000);
    fixture_free(f);

    f = fixture_new(0);
    assert_int_equal(cnt_throttle_set_capacity(f->t, 5000), CNT_STATUS_OK);
    set_tenant(f, "A", 1000, UNL);
    set_tenant(f, "B", 500, UNL);
    hot_arg pool[2] = {
        { .name = "A", .reason = CNT_TREASON_POOL_EMPTY },
        { .name = "B", .reason = CNT_TREASON_POOL_EMPTY },
    };
    hot_two(f, pool, 10000);
    assert_int_equal(pool[0].allowed + pool[1].allowed, 5000);
    assert_true(pool[0].allowed >= 1000);
    assert_true(pool[1].allowed >= 500);
    assert_int_equal(view(f, "A").used, pool[0].allowed);
    assert_int_equal(view(f, "B").used, pool[1].allowed);
    cnt_node_view nv = node(f);
    assert_int_equal(nv.used, 5000);
    assert_int_equal(nv.pool_used, 3500);
    assert_int_equal(nv.throttled, 15000);
    /* The next second, the same again. */
    next_second(f);
    pool[0].allowed = pool[1].allowed = 0;
    hot_two(f, pool, 10000);
    assert_int_equal(pool[0].allowed + pool[1].allowed, 5000);
    assert_true(pool[0].allowed >= 1000);
    assert_true(pool[1].allowed >= 500);
    cnt_throttle_stats_get(f->t, &s);
    assert_int_equal(s.units, 10000);
    fixture_free(f);
}

/* What the reader of test_apply_while_reading shares with the main
 * thread. */
typedef struct apply_watch {
    fixture *f;
    atomic_bool stop;
    atomic_uint reads;
    unsigned broken;            /* views with reserves above the capacity */
    unsigned refused;           /* charges within a reserve refused */
} apply_watch;

/* Reads the node and charges X within its smallest reserve until told to
 * stop. */
static void *apply_watch_main(void *arg)
{
    apply_watch *w = arg;
    cnt_throttle_answer a;
    cnt_node_view v;

    while (!atomic_load(&w->stop)) {
        cnt_throttle_node(w->f->t, &v);
        if (v.capacity > 0 && v.reserved_sum > v.capacity)
            w->broken++;
        if (cnt_throttle_charge(w->f->t, (const uint8_t *)"X", 1, 1, false,
                                &a) != CNT_STATUS_OK ||
            (a.state != ALLOWED && a.used < 100))
            w->refused++;
        atomic_fetch_add(&w->reads, 1);
    }
    return NULL;
}

/* Applies that move reserves and the capacity in opposite directions,
 * again and again, while another thread looks: it never sees reserves
 * adding up to more than the capacity, and X's charges within the reserve
 * it has in both sets are never refused. */
static void test_apply_while_reading(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    apply_watch w = { .f = f };
    pthread_t th;
    cnt_throttle_setting s1[2] = { one("X", 900, UNL), one("Y", 100, UNL) };
    cnt_throttle_setting s2[2] = { one("X", 100, UNL), one("Y", 1900, UNL) };
    cnt_throttle_settings a = settings(s1, 2, true, 1000, false, 0);
    cnt_throttle_settings b = settings(s2, 2, true, 2000, false, 0);

    atomic_init(&w.stop, false);
    atomic_init(&w.reads, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &a), CNT_STATUS_OK);
    assert_int_equal(pthread_create(&th, NULL, apply_watch_main, &w), 0);
    /* At least 3000 applies, and on until the reader has looked often
     * (it may start late on a busy machine). */
    for (int i = 0; i < 3000 || atomic_load(&w.reads) < 3000; i++) {
        assert_int_equal(cnt_throttle_apply(f->t, i % 2 ? &a : &b),
                         CNT_STATUS_OK);
        /* X's usage starts again now and then, so its charges keep
         * testing the reserve. */
        if (i % 64 == 63)
            next_second(f);
    }
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    assert_int_equal(w.broken, 0);
    assert_int_equal(w.refused, 0);
    fixture_free(f);
}

/* Each allocation of cnt_throttle_new failing in turn: NULL, and nothing
 * left allocated. */
static void test_new_alloc_failure(void **st)
{
    (void)st;
    cnt_throttle_config cfg = { .buckets = 64 };

    for (unsigned long n = 1;; n++) {
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(n, 0);
        cnt_throttle *t = cnt_throttle_new(&cfg);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (t != NULL) {
            assert_false(injected);
            assert_true(n > 1);
            cnt_throttle_free(t);
            assert_int_equal(cnt_fake_alloc_live(), live);
            break;
        }
        assert_true(injected);
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
}

/* A new tenant whose first charge is throttled keeps no record: the one
 * made to judge it is freed. */
static void test_throttled_new_tenant_freed(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);

    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    set_tenant(f, "all", 100, UNL);
    long live = cnt_fake_alloc_live();
    size_t before = records(f);
    expect(charge(f, "other", 1, false), THROTTLED,
           CNT_TREASON_RESERVE, 0, 0, SEC);
    assert_int_equal(records(f), before);
    assert_int_equal(cnt_fake_alloc_live(), live);
    fixture_free(f);
}

/* An apply may set a tenant's hard limit equal to its reserve (like
 * set_tenant); only a hard limit below the reserve is refused. */
static void test_apply_hard_equal_reserve(void **st)
{
    (void)st;
    fixture *f = fixture_new(0);
    cnt_throttle_setting e[2] = { one("eq", 5, 5), one("lo", 5, 4) };
    cnt_throttle_settings s = settings(e, 1, true, 10, false, 0);

    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_OK);
    cnt_tenant_view v = view(f, "eq");
    assert_int_equal(v.reserved, 5);
    assert_int_equal(v.hard_limit, 5);
    s = settings(e + 1, 1, false, 0, false, 0);
    assert_int_equal(cnt_throttle_apply(f->t, &s), CNT_STATUS_INVALID);
    assert_int_equal(view(f, "lo").flags, 0);
    fixture_free(f);
}

/* Built without a configuration, a throttle takes every default: the
 * system clock, the default buckets, capacity 0 and no hard limit. */
static void test_new_without_config(void **st)
{
    (void)st;
    cnt_throttle *t = cnt_throttle_new(NULL);
    cnt_throttle_answer a;

    assert_non_null(t);
    assert_int_equal(cnt_throttle_charge(t, NM("x"), 7, false, &a),
                     CNT_STATUS_OK);
    assert_int_equal(a.state, ALLOWED);
    assert_int_equal(a.used, 7);
    assert_int_equal(a.remaining, UINT32_MAX);
    cnt_throttle_free(t);
}

/* Runs the throttle tests. */
/* can_pass: a charge no empty second could take (above the hard limit,
 * or above the reserve plus the whole free pool) is told apart from one
 * that only has to wait; the pool others used this second does not count,
 * and nothing is charged or recorded. */
static void test_can_pass(void **state)
{
    fixture *f = fixture_new(0);

    (void)state;
    assert_false(cnt_throttle_can_pass(f->t, NM("a"), 0));
    assert_false(cnt_throttle_can_pass(f->t, (const uint8_t *)"", 0, 1));
    /* Capacity 0: nothing is throttled, any cost can pass. */
    assert_true(cnt_throttle_can_pass(f->t, NM("a"), 1000000));
    assert_int_equal(cnt_throttle_set_capacity(f->t, 100), CNT_STATUS_OK);
    set_tenant(f, "r", 30, 50);
    /* Pool 70: an unconfigured tenant can pass up to 70 ... */
    assert_true(cnt_throttle_can_pass(f->t, NM("a"), 70));
    assert_false(cnt_throttle_can_pass(f->t, NM("a"), 71));
    /* ... r up to its hard limit 50 (reserve 30 + pool 70 is more). */
    assert_true(cnt_throttle_can_pass(f->t, NM("r"), 50));
    assert_false(cnt_throttle_can_pass(f->t, NM("r"), 51));
    /* The pool used up this second still leaves an empty second's. */
    assert_int_equal(charge(f, "b", 70, false).state, ALLOWED);
    assert_int_equal(charge(f, "a", 1, false).state, THROTTLED);
    assert_true(cnt_throttle_can_pass(f->t, NM("a"), 70));
    /* A default hard limit below the cost. */
    assert_int_equal(cnt_throttle_set_default_hard(f->t, 5), CNT_STATUS_OK);
    assert_true(cnt_throttle_can_pass(f->t, NM("a"), 5));
    assert_false(cnt_throttle_can_pass(f->t, NM("a"), 6));
    assert_int_equal(view(f, "a").units, 0);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_demand_model),
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_hard_limit_at_or_below),
        cmocka_unit_test(test_unthrottled_accounting),
        cmocka_unit_test(test_refill_boundaries),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_can_pass),
        cmocka_unit_test(test_capacity_zero_off),
        cmocka_unit_test(test_over_capacity),
        cmocka_unit_test(test_remove_keeps_usage),
        cmocka_unit_test(test_apply_all_or_nothing),
        cmocka_unit_test(test_list_paused_cursor),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_memory_injected_failures),
        cmocka_unit_test(test_gc_idle_unconfigured),
        cmocka_unit_test(test_gc_race_keeps_the_second),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_apply_while_reading),
        cmocka_unit_test(test_apply_hard_equal_reserve),
        cmocka_unit_test(test_new_without_config),
        cmocka_unit_test(test_new_alloc_failure),
        cmocka_unit_test(test_throttled_new_tenant_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
