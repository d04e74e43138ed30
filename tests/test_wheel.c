/* test_wheel.c: the timing wheel against the fake monotonic clock: timers
 * fire once each, in deadline order at millisecond resolution, at exactly
 * the tick they were armed for (slot and level boundaries, days ahead,
 * hours jumped at once); cancel and re-arm work from anywhere, including
 * the fire callback; a million timers due in one ms; and a randomized
 * differential run against a plain model. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "engine/core/wheel.h"
#include "tests/engine_fake.h"

#define MS UINT64_C(1000000)
#define HOUR (MS * 3600 * 1000)
#define DAY (HOUR * 24)

/* A record owning a timer, as a caller's would. */
typedef struct rec {
    cnt_timer timer;
    unsigned id;
    unsigned fired;                 /* times fired */
    uint64_t fired_tick;            /* wheel's tick when it last fired */
} rec;

/* What a callback may do when its record fires. */
enum action { ACT_NONE, ACT_CANCEL, ACT_ARM, ACT_REARM_SELF };

/* The callbacks' context: the wheel, the log of fired ids, and one action
 * per record. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_wheel wheel;
    rec *recs;
    size_t nrecs;
    unsigned *log;
    size_t logged;
    enum action *act;
    unsigned *act_target;
    uint64_t *act_deadline;
} fixture;

/* Records the firing of t and does its record's action. */
static void on_fire(cnt_timer *t, void *ctx)
{
    fixture *f = ctx;
    rec *r = (rec *)((char *)t - offsetof(rec, timer));

    assert_false(cnt_timer_armed(t));
    r->fired++;
    r->fired_tick = f->wheel.now_ms;
    f->log[f->logged++] = r->id;
    if (f->act == NULL)
        return;
    switch (f->act[r->id]) {
    case ACT_NONE:
        break;
    case ACT_CANCEL:
        cnt_timer_cancel(&f->wheel, &f->recs[f->act_target[r->id]].timer);
        break;
    case ACT_ARM:
        cnt_timer_arm(&f->wheel, &f->recs[f->act_target[r->id]].timer,
                      f->act_deadline[r->id]);
        break;
    case ACT_REARM_SELF:
        f->act[r->id] = ACT_NONE;   /* once */
        cnt_timer_arm(&f->wheel, t, f->act_deadline[r->id]);
        break;
    }
}

/* Sets up f with n records, a log large enough for 4n firings and, if
 * actions, an action table. */
static void fixture_init(fixture *f, size_t n, int actions)
{
    memset(f, 0, sizeof(*f));
    cnt_fake_clock_init(&f->clock, 1700000000000u);
    cnt_wheel_init(&f->wheel, cnt_clock_mono_ns(&f->clock.clock));
    f->recs = calloc(n, sizeof(*f->recs));
    f->log = calloc(4 * n + 1, sizeof(*f->log));
    assert_non_null(f->recs);
    assert_non_null(f->log);
    f->nrecs = n;
    for (size_t i = 0; i < n; i++) {
        cnt_timer_init(&f->recs[i].timer);
        f->recs[i].id = (unsigned)i;
    }
    if (actions) {
        f->act = calloc(n, sizeof(*f->act));
        f->act_target = calloc(n, sizeof(*f->act_target));
        f->act_deadline = calloc(n, sizeof(*f->act_deadline));
        assert_non_null(f->act);
        assert_non_null(f->act_target);
        assert_non_null(f->act_deadline);
    }
}

/* Destroys the wheel and frees f's arrays. */
static void fixture_free(fixture *f)
{
    cnt_wheel_destroy(&f->wheel);
    free(f->recs);
    free(f->log);
    free(f->act);
    free(f->act_target);
    free(f->act_deadline);
}

/* The fake clock's monotonic reading now. */
static uint64_t now_ns(fixture *f)
{
    return cnt_clock_mono_ns(&f->clock.clock);
}

/* Lets ns pass and advances the wheel to the new reading. */
static size_t pass(fixture *f, uint64_t ns)
{
    cnt_fake_clock_advance_ns(&f->clock, ns);
    return cnt_wheel_advance(&f->wheel, now_ns(f), on_fire, f);
}

/* Arms record i at deadline_ns. */
static void arm(fixture *f, size_t i, uint64_t deadline_ns)
{
    cnt_timer_arm(&f->wheel, &f->recs[i].timer, deadline_ns);
}

/* The sizes the header states: at most 32 bytes a timer, a fixed wheel. */
static void test_sizes(void **state)
{
    (void)state;
    print_message("sizeof(cnt_timer) = %zu, sizeof(cnt_wheel) = %zu\n",
                  sizeof(cnt_timer), sizeof(cnt_wheel));
    assert_true(sizeof(cnt_timer) <= 32);
    assert_true(sizeof(cnt_wheel) < 4400);

    cnt_timer zero;
    memset(&zero, 0, sizeof(zero));
    assert_false(cnt_timer_armed(&zero));
}

/* Timers armed in shuffled order over several levels fire in deadline
 * order, each once, each at its own tick when the clock moves 1 ms at a
 * time. */
static void test_order_exactly_once(void **state)
{
    (void)state;
    enum { N = 600 };
    fixture f;
    fixture_init(&f, N, 0);
    uint64_t base = now_ns(&f);

    srand(12345);
    for (size_t i = 0; i < N; i++)
        arm(&f, i, base + (uint64_t)(rand() % 5000) * MS +
                       (uint64_t)(rand() % 3) * MS / 2);
    assert_int_equal(cnt_wheel_count(&f.wheel), N);
    size_t fired = 0;
    for (int step = 0; step < 5002; step++)
        fired += pass(&f, MS);
    assert_int_equal(fired, N);
    assert_int_equal(f.logged, N);
    assert_int_equal(cnt_wheel_count(&f.wheel), 0);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(f.recs[i].fired, 1);
        assert_int_equal(f.recs[i].fired_tick, f.recs[i].timer.expires_ms);
        assert_false(cnt_timer_armed(&f.recs[i].timer));
    }
    for (size_t i = 1; i < N; i++)
        assert_true(f.recs[f.log[i - 1]].timer.expires_ms <=
                    f.recs[f.log[i]].timer.expires_ms);
    assert_int_equal(pass(&f, 100 * MS), 0);
    fixture_free(&f);
}

/* Rounding: a deadline of now fires at the next advance without the clock
 * moving; one 1 ns past a ms boundary waits for the next boundary; one on
 * a boundary fires when the clock reaches it. */
static void test_zero_and_one_ms(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 4, 0);
    uint64_t base = now_ns(&f);        /* a whole number of ms */

    arm(&f, 0, base);                   /* 0 ms: due already */
    arm(&f, 1, base + 1);               /* rounds up to base + 1 ms */
    arm(&f, 2, base + MS);              /* exactly 1 ms */
    arm(&f, 3, base - 5 * MS);          /* in the past */
    assert_int_equal(cnt_wheel_next_deadline(&f.wheel), base);
    assert_int_equal(cnt_wheel_advance(&f.wheel, base, on_fire, &f), 2);
    assert_int_equal(f.recs[0].fired, 1);
    assert_int_equal(f.recs[3].fired, 1);
    assert_int_equal(f.recs[1].fired, 0);
    assert_int_equal(cnt_wheel_next_deadline(&f.wheel), base + MS);
    assert_int_equal(pass(&f, MS - 1), 0);
    assert_int_equal(pass(&f, 1), 2);
    assert_int_equal(f.recs[1].fired, 1);
    assert_int_equal(f.recs[2].fired, 1);
    assert_int_equal(cnt_wheel_next_deadline(&f.wheel), UINT64_MAX);
    fixture_free(&f);
}

/* A timer due exactly at, just before and just after every slot boundary
 * of every level (64^L ms, relative and on the absolute grid) fires at
 * its own tick, not one earlier. */
static void test_level_boundaries(void **state)
{
    (void)state;
    for (unsigned level = 0; level < CNT_WHEEL_LEVELS; level++) {
        uint64_t span = UINT64_C(1) << (level * CNT_WHEEL_BITS);
        uint64_t offsets[6];
        unsigned n = 0;
        fixture f;
        fixture_init(&f, 6, 0);
        uint64_t base_ms = now_ns(&f) / MS;
        /* The next multiple of span and 64 span on the absolute grid. */
        uint64_t grid = (base_ms / span + 1) * span - base_ms;
        uint64_t grid2 = (base_ms / (span * 64) + 1) * span * 64 - base_ms;

        uint64_t cand[6] = {
            span - (span > 1), span, span + 1, grid, grid2 - 1, grid2,
        };
        /* Keep those the ns clock can name, in increasing order. */
        for (unsigned i = 0; i < 6; i++)
            if (cand[i] < UINT64_MAX / MS - base_ms - 1)
                offsets[n++] = cand[i] == 0 ? 1 : cand[i];
        for (unsigned i = 1; i < n; i++)
            for (unsigned j = i; j > 0 && offsets[j - 1] > offsets[j]; j--) {
                uint64_t tmp = offsets[j];
                offsets[j] = offsets[j - 1];
                offsets[j - 1] = tmp;
            }
        assert_true(n >= 4);
        for (unsigned i = 0; i < n; i++)
            arm(&f, i, (base_ms + offsets[i]) * MS);
        for (unsigned i = 0; i < n; i++) {
            uint64_t due = (base_ms + offsets[i]) * MS;
            if (due > now_ns(&f)) {
                /* Advancing to just before its tick must not fire it. */
                pass(&f, due - 1 - now_ns(&f));
                assert_int_equal(f.recs[i].fired, 0);
                assert_true(cnt_wheel_next_deadline(&f.wheel) <= due);
                pass(&f, 1);
            }
            assert_int_equal(f.recs[i].fired, 1);
            assert_int_equal(f.recs[i].fired_tick, due / MS);
        }
        assert_int_equal(cnt_wheel_count(&f.wheel), 0);
        fixture_free(&f);
    }
}

/* Days ahead: a timer 3 days out survives hourly advances, fires at its
 * own ms, and the bound the worker would sleep on never passes it. */
static void test_days_ahead(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 2, 0);
    uint64_t due = now_ns(&f) + 3 * DAY + 17 * MS + 3;
    uint64_t due2 = now_ns(&f) + 400 * DAY;

    arm(&f, 0, due);
    arm(&f, 1, due2);
    for (int h = 0; h < 72; h++) {
        assert_int_equal(pass(&f, HOUR), 0);
        assert_true(cnt_wheel_next_deadline(&f.wheel) <= (due / MS + 1) * MS);
    }
    /* Follow the bound as a worker's loop would. */
    unsigned wakeups = 0;
    while (f.recs[0].fired == 0) {
        uint64_t next = cnt_wheel_next_deadline(&f.wheel);
        assert_true(next <= (due / MS + 1) * MS);
        assert_true(next > now_ns(&f) - MS);
        pass(&f, next > now_ns(&f) ? next - now_ns(&f) : 0);
        wakeups++;
        assert_true(wakeups < 20);
    }
    assert_int_equal(f.recs[0].fired_tick, due / MS + 1);
    assert_int_equal(f.recs[1].fired, 0);
    assert_int_equal(cnt_wheel_count(&f.wheel), 1);
    pass(&f, due2 - now_ns(&f));
    assert_int_equal(f.recs[1].fired, 1);
    fixture_free(&f);
}

/* A jump of hours in one advance fires everything due, in order, and
 * nothing that is still ahead. */
static void test_clock_jump(void **state)
{
    (void)state;
    enum { N = 3000 };
    fixture f;
    fixture_init(&f, N, 0);
    uint64_t base = now_ns(&f);
    uint64_t hour = HOUR;

    srand(777);
    for (size_t i = 0; i < N; i++)
        arm(&f, i, base + ((uint64_t)rand() * 7919u) % (6 * hour));
    size_t due = 0;
    for (size_t i = 0; i < N; i++)
        due += f.recs[i].timer.expires_ms <= (base + 5 * hour) / MS;
    assert_int_equal(pass(&f, 5 * hour), due);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(f.recs[i].fired,
                         f.recs[i].timer.expires_ms <= (base + 5 * hour) / MS);
    for (size_t i = 1; i < f.logged; i++)
        assert_true(f.recs[f.log[i - 1]].timer.expires_ms <=
                    f.recs[f.log[i]].timer.expires_ms);
    assert_int_equal(pass(&f, hour), N - due);
    assert_int_equal(cnt_wheel_count(&f.wheel), 0);
    fixture_free(&f);
}

/* Cancel before the deadline (it never fires), after it fired (nothing
 * happens), twice (idempotent), and of a timer never armed. */
static void test_cancel_before_after(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 3, 0);
    uint64_t base = now_ns(&f);

    arm(&f, 0, base + 10 * MS);
    arm(&f, 1, base + 5000 * MS);       /* at a higher level */
    cnt_timer_cancel(&f.wheel, &f.recs[0].timer);
    cnt_timer_cancel(&f.wheel, &f.recs[0].timer);
    cnt_timer_cancel(&f.wheel, &f.recs[2].timer);
    assert_false(cnt_timer_armed(&f.recs[0].timer));
    assert_int_equal(cnt_wheel_count(&f.wheel), 1);
    assert_true(cnt_wheel_next_deadline(&f.wheel) > base + 10 * MS);
    cnt_timer_cancel(&f.wheel, &f.recs[1].timer);
    assert_int_equal(cnt_wheel_next_deadline(&f.wheel), UINT64_MAX);
    assert_int_equal(pass(&f, 6000 * MS), 0);

    arm(&f, 2, now_ns(&f) + MS);
    assert_int_equal(pass(&f, MS), 1);
    cnt_timer_cancel(&f.wheel, &f.recs[2].timer);
    assert_int_equal(cnt_wheel_count(&f.wheel), 0);
    assert_int_equal(f.recs[2].fired, 1);
    fixture_free(&f);
}

/* From a callback: cancelling a timer due in the same tick (it does not
 * fire), a later one, and itself; arming another at a past deadline (it
 * fires at the next advance, not this one) and within the advanced range
 * (it fires in this advance, in order). */
static void test_callback_cancel_and_arm(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 8, 1);
    uint64_t base = now_ns(&f);

    /* 0 and 1 due together: whichever fires first cancels the other. */
    arm(&f, 0, base + 3 * MS);
    arm(&f, 1, base + 3 * MS);
    f.act[0] = ACT_CANCEL; f.act_target[0] = 1;
    f.act[1] = ACT_CANCEL; f.act_target[1] = 0;
    /* 2 cancels 3, due later; 4 cancels itself. */
    arm(&f, 2, base + 4 * MS);
    arm(&f, 3, base + 9 * MS);
    f.act[2] = ACT_CANCEL; f.act_target[2] = 3;
    arm(&f, 4, base + 4 * MS);
    f.act[4] = ACT_CANCEL; f.act_target[4] = 4;
    /* 5 arms 6 in the past; 7 gets armed by... itself, re-armed later. */
    arm(&f, 5, base + 5 * MS);
    f.act[5] = ACT_ARM; f.act_target[5] = 6; f.act_deadline[5] = base;
    arm(&f, 7, base + 5 * MS);
    f.act[7] = ACT_REARM_SELF; f.act_deadline[7] = base + 8 * MS;

    assert_int_equal(pass(&f, 20 * MS), 6);
    assert_int_equal(f.recs[0].fired + f.recs[1].fired, 1);
    assert_int_equal(f.recs[2].fired, 1);
    assert_int_equal(f.recs[3].fired, 0);
    assert_int_equal(f.recs[4].fired, 1);
    assert_int_equal(f.recs[5].fired, 1);
    assert_int_equal(f.recs[6].fired, 0);       /* armed late: next time */
    assert_true(cnt_timer_armed(&f.recs[6].timer));
    assert_int_equal(f.recs[7].fired, 2);
    assert_int_equal(f.recs[7].fired_tick, (base / MS) + 8);
    assert_int_equal(f.log[f.logged - 1], 7);
    assert_int_equal(cnt_wheel_count(&f.wheel), 1);
    assert_int_equal(cnt_wheel_next_deadline(&f.wheel), now_ns(&f));
    assert_int_equal(pass(&f, 0), 1);
    assert_int_equal(f.recs[6].fired, 1);
    assert_int_equal(cnt_wheel_count(&f.wheel), 0);
    fixture_free(&f);
}

/* Re-arming an armed timer moves it: earlier fires earlier, later fires
 * later, and the count does not change. */
static void test_rearm(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 2, 0);
    uint64_t base = now_ns(&f);

    arm(&f, 0, base + 100000 * MS);
    arm(&f, 1, base + 10 * MS);
    arm(&f, 0, base + 5 * MS);          /* earlier, across levels */
    arm(&f, 1, base + 70 * MS);         /* later */
    assert_int_equal(cnt_wheel_count(&f.wheel), 2);
    assert_int_equal(pass(&f, 5 * MS), 1);
    assert_int_equal(f.recs[0].fired, 1);
    assert_int_equal(pass(&f, 64 * MS), 0);
    assert_int_equal(pass(&f, MS), 1);
    assert_int_equal(f.recs[1].fired_tick, base / MS + 70);
    assert_int_equal(pass(&f, 200000 * MS), 0);
    fixture_free(&f);
}

/* Destroying the wheel disarms what it still holds. */
static void test_destroy(void **state)
{
    (void)state;
    cnt_fake_clock c;
    cnt_wheel w;
    cnt_timer t[3];

    cnt_fake_clock_init(&c, 0);
    uint64_t base = cnt_clock_mono_ns(&c.clock);
    cnt_wheel_init(&w, base);
    for (int i = 0; i < 3; i++)
        cnt_timer_init(&t[i]);
    cnt_timer_arm(&w, &t[0], base);
    cnt_timer_arm(&w, &t[1], base + MS);
    cnt_timer_arm(&w, &t[2], base + 90000000 * MS);
    cnt_wheel_destroy(&w);
    for (int i = 0; i < 3; i++)
        assert_false(cnt_timer_armed(&t[i]));
}

/* Firings counted in a byte per timer of one array. */
typedef struct hit_count {
    const cnt_timer *base;
    uint8_t *hits;
} hit_count;

/* Counts t's firing in the byte of its index. */
static void count_fire(cnt_timer *t, void *ctx)
{
    hit_count *h = ctx;

    h->hits[t - h->base]++;
}

/* A million timers all due in the same ms: one advance fires each once.
 * The time taken is only reported. */
static void test_million_same_ms(void **state)
{
    (void)state;
    enum { N = 1000000 };
    cnt_timer *t = malloc(N * sizeof(*t));
    uint8_t *hits = calloc(N, 1);
    cnt_wheel *w = malloc(sizeof(*w));
    assert_non_null(t);
    assert_non_null(hits);
    assert_non_null(w);
    cnt_fake_clock c;
    cnt_fake_clock_init(&c, 0);
    uint64_t base = cnt_clock_mono_ns(&c.clock);
    struct timespec a, b, d;

    hit_count hc = {t, hits};

    cnt_wheel_init(w, base);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (uint32_t i = 0; i < N; i++) {
        cnt_timer_init(&t[i]);
        cnt_timer_arm(w, &t[i], base + 249 * MS + 1 + (i % 1000) * 999);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_int_equal(cnt_wheel_count(w), N);
    assert_int_equal(cnt_wheel_advance(w, base + 249 * MS, count_fire, &hc),
                     0);
    assert_int_equal(cnt_wheel_advance(w, base + 250 * MS, count_fire, &hc),
                     N);
    clock_gettime(CLOCK_MONOTONIC, &d);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(hits[i], 1);
    assert_int_equal(cnt_wheel_count(w), 0);
    print_message("1,000,000 timers: arm %.1f ms, advance+fire %.1f ms\n",
                  (double)(b.tv_sec - a.tv_sec) * 1e3 +
                      (double)(b.tv_nsec - a.tv_nsec) / 1e6,
                  (double)(d.tv_sec - b.tv_sec) * 1e3 +
                      (double)(d.tv_nsec - b.tv_nsec) / 1e6);
    cnt_wheel_destroy(w);
    free(w);
    free(hits);
    free(t);
}

/* Advancing with a budget fires at most that many; the rest stay due (the
 * next deadline is "now") and later calls fire them, each once, in
 * deadline order, also when the clock does not move between calls. */
static void test_advance_max(void **state)
{
    (void)state;
    enum { N = 2500 };
    cnt_timer *t = calloc(N, sizeof(*t));
    uint8_t *hits = calloc(N, 1);
    cnt_wheel *w = malloc(sizeof(*w));
    assert_non_null(t);
    assert_non_null(hits);
    assert_non_null(w);
    hit_count hc = {t, hits};

    cnt_wheel_init(w, 0);
    for (uint32_t i = 0; i < N; i++) {
        cnt_timer_init(&t[i]);
        /* Ticks 1..5, 500 timers each. */
        cnt_timer_arm(w, &t[i], (uint64_t)(1 + i / 500) * MS);
    }
    size_t total = 0, calls = 0;
    while (total < N) {
        size_t n = cnt_wheel_advance_max(w, 10 * MS, count_fire, &hc, 1000);
        assert_true(n <= 1000);
        assert_true(n > 0);
        total += n;
        calls++;
        if (total < N)
            assert_true(cnt_wheel_next_deadline(w) <= 10 * MS);
    }
    assert_int_equal(calls, 3);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(hits[i], 1);
    assert_int_equal(cnt_wheel_count(w), 0);
    assert_int_equal(cnt_wheel_next_deadline(w), UINT64_MAX);
    /* A budget of 0 fires nothing and loses nothing. */
    cnt_timer_arm(w, &t[0], 11 * MS);
    assert_int_equal(cnt_wheel_advance_max(w, 20 * MS, count_fire, &hc, 0),
                     0);
    assert_int_equal(cnt_wheel_advance(w, 20 * MS, count_fire, &hc), 1);
    assert_int_equal(hits[0], 2);
    cnt_wheel_destroy(w);
    free(w);
    free(hits);
    free(t);
}

/* How many timers the list at head holds. */
static size_t list_len(const cnt_timer *head)
{
    size_t n = 0;

    for (; head != NULL; head = head->next)
        n++;
    return n;
}

/* How many timers sit in the slots of levels below `below`, or firing. */
static size_t filed_low(const cnt_wheel *w, unsigned below)
{
    size_t n = list_len(w->firing);

    for (unsigned i = 0; i < below * CNT_WHEEL_SLOTS_PER_LEVEL; i++)
        n += list_len(w->slots[i]);
    return n;
}

/* A budget bounds the work of a call, not only its firing: when the clock
 * reaches a high slot holding many timers, one call files at most the
 * budget of them again (moving the whole slot at once stalls a worker
 * for milliseconds with a million leases), and the rest follow in later
 * calls, each timer fired once, in deadline order; cancelling or
 * re-arming a timer still waiting to be filed works. */
static void test_advance_max_moves(void **state)
{
    (void)state;
    enum { N = 3000, MAX = 10 };
    cnt_timer *t = calloc(N, sizeof(*t));
    uint8_t *hits = calloc(N, 1);
    cnt_wheel *w = malloc(sizeof(*w));
    assert_non_null(t);
    assert_non_null(hits);
    assert_non_null(w);
    hit_count hc = {t, hits};

    cnt_wheel_init(w, 0);
    /* Ticks 5000 (level 2 from 0) and, for the last 1000, 5001. */
    for (uint32_t i = 0; i < N; i++) {
        cnt_timer_init(&t[i]);
        cnt_timer_arm(w, &t[i], (uint64_t)(5000 + i / 2000) * MS);
    }
    size_t n = cnt_wheel_advance_max(w, 5001 * MS, count_fire, &hc, MAX);
    assert_true(n <= MAX);
    assert_true(filed_low(w, 2) <= 2 * MAX);
    assert_true(cnt_wheel_next_deadline(w) <= 5001 * MS);
    /* One still in a passed slot, cancelled; one re-armed later. */
    cnt_timer_cancel(w, &t[1500]);
    cnt_timer_arm(w, &t[1501], 6000 * MS);
    hits[1500] = 1;
    size_t total = n, calls = 1;
    uint32_t late_seen = 0;
    while (total < N - 2) {
        n = cnt_wheel_advance_max(w, 5001 * MS, count_fire, &hc, MAX);
        assert_true(n <= MAX);
        for (uint32_t i = 2000; i < N; i++)
            late_seen += hits[i];
        /* No tick-5001 timer fires before every tick-5000 one has. */
        if (late_seen > 0)
            for (uint32_t i = 0; i < 2000; i++)
                if (i != 1500 && i != 1501)
                    assert_int_equal(hits[i], 1);
        late_seen = 0;
        total += n;
        assert_true(++calls < 10 * N);
    }
    assert_int_equal(total, N - 2);
    assert_int_equal(cnt_wheel_count(w), 1);
    assert_int_equal(hits[1501], 0);
    assert_int_equal(cnt_wheel_advance(w, 6000 * MS, count_fire, &hc), 1);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(hits[i], 1);
    assert_int_equal(cnt_wheel_next_deadline(w), UINT64_MAX);
    /* Destroying with timers still waiting to be filed disarms them. */
    cnt_timer_arm(w, &t[0], 9000 * MS);
    cnt_timer_arm(w, &t[1], 9000 * MS);
    assert_int_equal(cnt_wheel_advance_max(w, 9000 * MS, count_fire, &hc, 1),
                     0);
    cnt_wheel_destroy(w);
    assert_int_equal(cnt_wheel_count(w), 0);
    assert_null(t[0].pprev);
    assert_null(t[1].pprev);
    free(w);
    free(hits);
    free(t);
}

/* The model: per timer, whether it is armed, its tick and the tick from
 * which it counts as due (its own, or the wheel's when armed late). */
typedef struct model_timer {
    int armed;
    uint64_t tick;
    uint64_t effective;
} model_timer;

/* Compares model entries by effective tick. */
static int cmp_effective(const void *a, const void *b)
{
    const model_timer *x = *(model_timer *const *)a;
    const model_timer *y = *(model_timer *const *)b;

    return x->effective < y->effective ? -1 : x->effective > y->effective;
}

/* A few thousand random arms, re-arms, cancels and advances (small steps,
 * slot-sized, hours) against the model, with a fixed seed: after every
 * advance the same timers fired, each once, in model order; the count
 * and the next-deadline bound agree with the model. */
static void test_differential(void **state)
{
    (void)state;
    enum { N = 400, STEPS = 6000 };
    fixture f;
    fixture_init(&f, N, 0);
    model_timer model[N];
    model_timer *due[N];
    uint64_t seed = 0x9e3779b97f4a7c15u;

    memset(model, 0, sizeof(model));
    for (int step = 0; step < STEPS; step++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        uint32_t r = (uint32_t)(seed >> 33);
        unsigned i = r % N;
        unsigned op = (r >> 9) % 16;
        uint64_t now = now_ns(&f);
        uint64_t wheel_tick = f.wheel.now_ms;

        if (op < 8) {                   /* arm or re-arm */
            static const uint64_t ranges[] = {
                1, MS, 64 * MS, 5000 * MS, 300000 * MS,
                4 * HOUR, 40 * DAY, 2 * MS,
            };
            uint64_t range = ranges[(r >> 14) % 8];
            uint64_t off = (seed >> 7) % range;
            uint64_t deadline = (r >> 17) % 10 == 0 ? now - off % now
                                                    : now + off;
            arm(&f, i, deadline);
            model[i].armed = 1;
            model[i].tick = deadline / MS + (deadline % MS != 0);
            model[i].effective = model[i].tick > wheel_tick ? model[i].tick
                                                            : wheel_tick;
        } else if (op < 11) {           /* cancel */
            cnt_timer_cancel(&f.wheel, &f.recs[i].timer);
            model[i].armed = 0;
        } else {                        /* advance */
            static const uint64_t steps[] = {
                0, 1, MS / 2, MS, 63 * MS, 4096 * MS, HOUR,
            };
            uint64_t by = (seed >> 11) % (steps[(r >> 13) % 7] + 1);
            uint64_t to = now + by;
            size_t ndue = 0;
            for (unsigned k = 0; k < N; k++)
                if (model[k].armed && model[k].effective <= to / MS)
                    due[ndue++] = &model[k];
            qsort(due, ndue, sizeof(*due), cmp_effective);
            for (unsigned k = 0; k < N; k++)
                f.recs[k].fired = 0;
            f.logged = 0;
            assert_int_equal(pass(&f, by), ndue);
            assert_int_equal(f.logged, ndue);
            for (size_t k = 0; k < ndue; k++) {
                /* Same effective tick in the same position: the order
                 * within one tick is free. */
                model_timer *m = &model[f.log[k]];
                assert_int_equal(m->effective, due[k]->effective);
                assert_true(m->armed);
                m->armed = 0;
                assert_int_equal(f.recs[f.log[k]].fired, 1);
            }
        }
        size_t armed = 0;
        uint64_t earliest = UINT64_MAX;
        for (unsigned k = 0; k < N; k++) {
            assert_int_equal(cnt_timer_armed(&f.recs[k].timer),
                             model[k].armed);
            if (model[k].armed) {
                armed++;
                if (model[k].effective < earliest)
                    earliest = model[k].effective;
            }
        }
        assert_int_equal(cnt_wheel_count(&f.wheel), armed);
        uint64_t next = cnt_wheel_next_deadline(&f.wheel);
        if (armed == 0)
            assert_int_equal(next, UINT64_MAX);
        else
            assert_true(next <= earliest * MS);
    }
    fixture_free(&f);
}

/* Runs the wheel tests. */
/* Only counts the timers it is given. */
static void tally_fire(cnt_timer *t, void *ctx)
{
    (void)t;
    (*(unsigned *)ctx)++;
}

/* Destroying a wheel disarms the timers a budgeted advance left due in
 * its firing list, as well as those in slots. */
static void test_destroy_with_firing_left(void **state)
{
    (void)state;
    cnt_wheel w;
    cnt_timer t[3];
    unsigned fired = 0;
    uint64_t t0 = UINT64_C(1000000000000);

    cnt_wheel_init(&w, t0);
    for (int i = 0; i < 3; i++) {
        cnt_timer_init(&t[i]);
        cnt_timer_arm(&w, &t[i], t0 + 5 * MS);
    }
    assert_int_equal(cnt_wheel_advance_max(&w, t0 + 10 * MS, tally_fire,
                                           &fired, 1), 1);
    assert_int_equal(fired, 1);
    assert_int_equal(cnt_wheel_count(&w), 2);
    cnt_wheel_destroy(&w);
    assert_int_equal(cnt_wheel_count(&w), 0);
    for (int i = 0; i < 3; i++)
        assert_false(cnt_timer_armed(&t[i]));
}

/* An advance that runs out of its budget stops at the tick it was
 * firing: the next deadline is that tick, not the target. */
static void test_budget_stops_at_its_tick(void **state)
{
    (void)state;
    cnt_wheel w;
    cnt_timer t[3];
    unsigned fired = 0;
    uint64_t t0 = UINT64_C(1000000000000);

    cnt_wheel_init(&w, t0);
    for (int i = 0; i < 3; i++) {
        cnt_timer_init(&t[i]);
        cnt_timer_arm(&w, &t[i], t0 + (i < 2 ? 5 : 8) * MS);
    }
    assert_int_equal(cnt_wheel_advance_max(&w, t0 + 10 * MS, tally_fire,
                                           &fired, 1), 1);
    assert_int_equal(cnt_wheel_next_deadline(&w), t0 + 5 * MS);
    assert_int_equal(cnt_wheel_advance(&w, t0 + 10 * MS, tally_fire,
                                       &fired), 2);
    assert_int_equal(fired, 3);
    cnt_wheel_destroy(&w);
}

/* ---- The ordered walk (cnt_wheel_walk) ---- */

/* A walker keeping the k nearest deadlines it was shown, sorted, and
 * counting the timers it visited. */
typedef struct nearest {
    size_t k, n, visited;
    uint64_t d[400];
} nearest;

static bool nearest_visit(const cnt_timer *t, void *ctx)
{
    nearest *x = ctx;
    uint64_t d = cnt_timer_deadline_ms(t);
    size_t i;

    x->visited++;
    if (x->n == x->k && d >= x->d[x->n - 1])
        return true;
    if (x->n < x->k)
        x->n++;
    for (i = x->n - 1; i > 0 && x->d[i - 1] > d; i--)
        x->d[i] = x->d[i - 1];
    x->d[i] = d;
    return true;
}

static bool nearest_enough(uint64_t from_ms, void *ctx)
{
    const nearest *x = ctx;

    return x->n == x->k && x->d[x->n - 1] <= from_ms;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Random deadlines over every level (1 ms to days), some armed late, some
 * left in passed slots by a bounded advance: for several k the walk keeps
 * the k nearest a sort finds, and stops early once it may; without
 * enough it visits every armed timer once; at its cap it says so. */
static void test_walk_nearest(void **state)
{
    enum { N = 6000 };
    static const size_t ks[] = {1, 2, 10, 64, 400};
    fixture f;
    uint64_t *all = calloc(N, sizeof(*all));
    nearest *x = malloc(sizeof(*x));
    unsigned moving_seen = 0, late_seen = 0;

    (void)state;
    assert_non_null(all);
    assert_non_null(x);
    fixture_init(&f, N, 0);
    srand(4242);
    for (int round = 0; round < 6; round++) {
        uint64_t base = now_ns(&f);
        for (size_t i = 0; i < N; i++) {
            uint64_t span;
            switch (rand() % 5) {
            case 0: span = 64 * MS; break;
            case 1: span = 4096 * MS; break;
            case 2: span = 300000 * MS; break;
            case 3: span = 3 * DAY; break;
            default: span = 20 * MS; break;
            }
            /* The last 500 crowd one higher-level slot, 9 s ahead. */
            if (i >= N - 500)
                span = 60 * MS;
            arm(&f, i, base + (i >= N - 500 ? 9000 * MS : 0) +
                           (uint64_t)rand() % span);
        }
        /* Up to just before the crowd, then into it with a small budget:
         * its slot is passed and only partly filed again (the moving
         * lists); then some armed already due (the late list). */
        f.logged = 0;
        cnt_wheel_advance(&f.wheel, base + 8990 * MS, on_fire, &f);
        cnt_fake_clock_advance_ns(&f.clock, 9030 * MS);
        f.logged = 0;
        cnt_wheel_advance_max(&f.wheel, now_ns(&f), on_fire, &f, 7);
        for (size_t i = 0; i < 50; i++)
            arm(&f, (size_t)rand() % N,
                now_ns(&f) - (uint64_t)(rand() % 5) * MS);
        for (unsigned l = 1; l < CNT_WHEEL_LEVELS; l++)
            moving_seen += f.wheel.moving[l] != NULL;
        late_seen += f.wheel.late != NULL || f.wheel.firing != NULL;
        size_t armed = 0;
        for (size_t i = 0; i < N; i++)
            if (cnt_timer_armed(&f.recs[i].timer))
                all[armed++] = cnt_timer_deadline_ms(&f.recs[i].timer);
        assert_int_equal(armed, cnt_wheel_count(&f.wheel));
        qsort(all, armed, sizeof(*all), cmp_u64);

        for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
            memset(x, 0, sizeof(*x));
            x->k = ks[j];
            assert_true(cnt_wheel_walk(&f.wheel, nearest_visit,
                                       nearest_enough, x, SIZE_MAX));
            assert_int_equal(x->n, ks[j] < armed ? ks[j] : armed);
            for (size_t i = 0; i < x->n; i++)
                assert_true(x->d[i] == all[i]);
            if (ks[j] <= 10)
                assert_true(x->visited < armed);
        }
        /* No enough: every armed timer, once. */
        memset(x, 0, sizeof(*x));
        x->k = 1;
        assert_true(cnt_wheel_walk(&f.wheel, nearest_visit, NULL, x,
                                   SIZE_MAX));
        assert_int_equal(x->visited, armed);
        assert_true(x->d[0] == all[0]);
        /* The cap: stops there and says the walk is not whole. */
        memset(x, 0, sizeof(*x));
        x->k = 1;
        assert_false(cnt_wheel_walk(&f.wheel, nearest_visit, NULL, x, 100));
        assert_int_equal(x->visited, 100);
        /* Time passes before the next round: some fire. */
        f.logged = 0;
        pass(&f, (uint64_t)(rand() % 100000) * MS);
    }
    /* The rounds walked past due timers and passed slots too. */
    assert_true(moving_seen > 0);
    assert_true(late_seen > 0);
    /* An empty wheel: nothing visited, whole. */
    cnt_wheel_destroy(&f.wheel);
    memset(x, 0, sizeof(*x));
    x->k = 3;
    assert_true(cnt_wheel_walk(&f.wheel, nearest_visit, nearest_enough, x,
                               0));
    assert_int_equal(x->visited, 0);
    fixture_free(&f);
    free(all);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_walk_nearest),
        cmocka_unit_test(test_order_exactly_once),
        cmocka_unit_test(test_zero_and_one_ms),
        cmocka_unit_test(test_level_boundaries),
        cmocka_unit_test(test_days_ahead),
        cmocka_unit_test(test_clock_jump),
        cmocka_unit_test(test_cancel_before_after),
        cmocka_unit_test(test_callback_cancel_and_arm),
        cmocka_unit_test(test_rearm),
        cmocka_unit_test(test_destroy),
        cmocka_unit_test(test_million_same_ms),
        cmocka_unit_test(test_advance_max),
        cmocka_unit_test(test_advance_max_moves),
        cmocka_unit_test(test_differential),
        cmocka_unit_test(test_destroy_with_firing_left),
        cmocka_unit_test(test_budget_stops_at_its_tick),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
