/* test_table.c: the semaphore rules against every row of the reference
 * table they decide (Acquire/Release/Get, the per-connection 0x22 rules,
 * release-all, released-but-not-collected counters), deliberate difference
 * 1, memory_limit and failing allocations, max consumption windows, Dump
 * with a resume cursor and the GC test of the semaphore kind. Time is a
 * fake clock; nothing sleeps. The map underneath has its own tests in
 * test_map.c. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/table.h"
#include "tests/engine_fake.h"
#include "tests/table_hooks.h"

#define T0_MS UINT64_C(1700000000000)  /* a window start for interval 10 */
#define INTERVAL 10u

/* One table, a fake clock and two connections' ledgers. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_table *t;
    cnt_holdings a, b;
    long live;                  /* allocated blocks before the table */
} fixture;

static fixture *fixture_new(size_t buckets, uint64_t memory_limit)
{
    fixture *f = calloc(1, sizeof *f);

    assert_non_null(f);
    cnt_table_config cfg = { .buckets = buckets, .interval = INTERVAL,
                             .memory_limit = memory_limit,
                             .clock = &f->clock.clock };

    cnt_fake_clock_init(&f->clock, T0_MS);
    cnt_fake_alloc_fail_at(0, 0);
    f->live = cnt_fake_alloc_live();
    f->t = cnt_table_new(&cfg);
    assert_non_null(f->t);
    cnt_holdings_init(&f->a);
    cnt_holdings_init(&f->b);
    return f;
}

static int setup(void **state)
{
    *state = fixture_new(64, 0);
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    cnt_table_release_all(f->t, &f->a);
    cnt_table_release_all(f->t, &f->b);
    cnt_holdings_destroy(&f->a);
    cnt_holdings_destroy(&f->b);
    cnt_table_free(f->t);
    /* Every node, ledger slot array and the table itself freed. */
    assert_int_equal(cnt_fake_alloc_live(), f->live);
    free(f);
    return 0;
}

/* Current consumption, or -1 when Get says NOT_FOUND. */
static long get(fixture *f, const uint8_t *name, uint16_t len)
{
    uint32_t v = 0xdeadbeef;
    cnt_status st = cnt_table_get(f->t, name, len, &v);

    if (st == CNT_STATUS_NOT_FOUND)
        return -1;
    assert_int_equal(st, CNT_STATUS_OK);
    return (long)v;
}

static uint64_t stat_objects(fixture *f)
{
    cnt_map_stats s;

    cnt_table_get_stats(f->t, &s);
    return s.objects;
}

/* Dump records gathered in one place. */
typedef struct record {
    char name[32];
    uint32_t current, max;
    unsigned seen;
} record;

typedef struct dump_log {
    record r[600];
    unsigned n;
    unsigned calls;
    unsigned stop_every;    /* 0: never ask to stop */
} dump_log;

static bool dump_collect(void *ctx, const uint8_t *name, uint16_t len,
                         uint32_t current, uint32_t max)
{
    dump_log *log = ctx;
    unsigned i;

    assert_true(len < sizeof log->r[0].name);
    for (i = 0; i < log->n; i++)
        if (strlen(log->r[i].name) == len &&
            memcmp(log->r[i].name, name, len) == 0)
            break;
    if (i == log->n) {
        assert_true(log->n < sizeof log->r / sizeof log->r[0]);
        memcpy(log->r[i].name, name, len);
        log->r[i].name[len] = '\0';
        log->n++;
    }
    log->r[i].current = current;
    log->r[i].max = max;
    log->r[i].seen++;
    log->calls++;
    return log->stop_every == 0 || log->calls % log->stop_every != 0;
}

/* Dumps the whole table; returns the record of name, or NULL. */
static const record *dump_find(fixture *f, dump_log *log, const char *name)
{
    cnt_map_cursor cur = { 0 };

    memset(log, 0, sizeof *log);
    assert_true(cnt_table_dump(f->t, &cur, dump_collect, log));
    for (unsigned i = 0; i < log->n; i++)
        if (strcmp(log->r[i].name, name) == 0)
            return &log->r[i];
    return NULL;
}

/* Row: Acquire creates the counter with consumption = resources. */
static void test_create_on_first_acquire(void **state)
{
    fixture *f = *state;

    assert_int_equal(get(f, CNT_NAME("sem")), -1);
    assert_int_equal(stat_objects(f), 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("sem"), 3, 10),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("sem")), 3);
    assert_int_equal(cnt_holdings_get(&f->a, NULL), 0);
    assert_int_equal(f->a.count, 1);
    assert_int_equal(stat_objects(f), 1);
    /* Names are compared byte for byte, with their length. */
    assert_int_equal(get(f, CNT_NAME("se")), -1);
    assert_int_equal(get(f, CNT_NAME("sem\0")), -1);
}

/* Rows: consumption + resources <= maximum succeeds, beyond is 0x21 and
 * changes nothing; maximum is per call, not stored. */
static void test_acquire_limits(void **state)
{
    fixture *f = *state;
    static const struct {
        uint32_t resources, maximum;
        cnt_status expect;
        long after;                     /* consumption afterwards */
    } steps[] = {
        { 5, 10, CNT_STATUS_OK, 5 },
        { 5, 10, CNT_STATUS_OK, 10 },   /* equal to maximum: allowed */
        { 1, 10, CNT_STATUS_RESOURCE_NOT_AVAILABLE, 10 },
        { 3, 20, CNT_STATUS_OK, 13 },   /* a larger maximum of its own */
        { 1, 13, CNT_STATUS_RESOURCE_NOT_AVAILABLE, 13 },
        { 1, 1, CNT_STATUS_RESOURCE_NOT_AVAILABLE, 13 },
        { 7, 20, CNT_STATUS_OK, 20 },
    };

    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("lim"),
                                           steps[i].resources,
                                           steps[i].maximum),
                         steps[i].expect);
        assert_int_equal(get(f, CNT_NAME("lim")), steps[i].after);
    }
    /* The ledger holds exactly what succeeded. */
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("lim"), 21),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("lim"), 20),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("lim")), 0);
}

/* Arguments that break the documented preconditions change nothing. */
static void test_acquire_invalid(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("x"), 0, 5),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("x"), 6, 5),
                     CNT_STATUS_INVALID);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, (const uint8_t *)"x", 0,
                                       1, 5),
                     CNT_STATUS_INVALID);
    assert_int_equal(stat_objects(f), 0);
}

/* Rows: Release of an unknown counter is 0x01; a release more than this
 * connection holds is 0x22 even when another connection holds enough. */
static void test_release_rules(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("none"), 1),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("none"), 0),
                     CNT_STATUS_NOT_FOUND);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("r"), 5, 10),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("r"), 1, 10),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("r"), 2),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(get(f, CNT_NAME("r")), 6);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("r"), 1),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("r"), 1),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("r"), 2),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("r")), 3);
    assert_int_equal(cnt_holdings_get(&f->b, NULL), 0);
    assert_int_equal(f->b.count, 0);
    assert_int_equal(f->a.count, 1);
}

/* Row: Release 0 is OK while the connection holds some, else 0x22. */
static void test_release_zero(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("z"), 2, 2),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("z"), 0),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("z"), 0),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(get(f, CNT_NAME("z")), 2);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("z"), 2),
                     CNT_STATUS_OK);
    /* Holding nothing any more: Release 0 is refused again. */
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("z"), 0),
                     CNT_STATUS_NOT_ACQUIRED);
}

/* Row: a connection's end releases all it holds, and only that. */
static void test_release_all(void **state)
{
    fixture *f = *state;
    char name[16];

    for (int i = 0; i < 40; i++) {
        int len = snprintf(name, sizeof name, "c%d", i);
        assert_int_equal(cnt_table_acquire(f->t, &f->a, (uint8_t *)name,
                                           (uint16_t)len, 2, 100),
                         CNT_STATUS_OK);
        assert_int_equal(cnt_table_acquire(f->t, &f->a, (uint8_t *)name,
                                           (uint16_t)len, 1, 100),
                         CNT_STATUS_OK);
        if (i % 2 == 0)
            assert_int_equal(cnt_table_acquire(f->t, &f->b, (uint8_t *)name,
                                               (uint16_t)len, 4, 100),
                             CNT_STATUS_OK);
    }
    assert_int_equal(f->a.count, 40);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(f->a.count, 0);
    for (int i = 0; i < 40; i++) {
        int len = snprintf(name, sizeof name, "c%d", i);
        assert_int_equal(get(f, (uint8_t *)name, (uint16_t)len),
                         i % 2 == 0 ? 4 : 0);
    }
    assert_int_equal(f->b.count, 20);
    /* The ledger is usable again after a drain. */
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("c1"), 1, 1),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("c1")), 1);
}

/* Rows: a released counter not yet collected answers Get 0, Release 0x22
 * (not 0x01), and Dump lists it. */
static void test_released_not_collected(void **state)
{
    fixture *f = *state;
    dump_log *log = malloc(sizeof *log);
    const record *r;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("gone"), 4, 4),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("gone"), 4),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("gone")), 0);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("gone"), 1),
                     CNT_STATUS_NOT_ACQUIRED);
    r = dump_find(f, log, "gone");
    assert_non_null(r);
    assert_int_equal(r->current, 0);
    assert_int_equal(r->max, 4);
    assert_int_equal(stat_objects(f), 1);
    /* Even in a later window, until a sweep removes it. */
    cnt_fake_clock_advance(&f->clock, 3 * INTERVAL * 1000);
    assert_int_equal(get(f, CNT_NAME("gone")), 0);
    assert_int_equal(table_sweep(f->t, 0, cnt_table_buckets(f->t)), 1);
    assert_int_equal(get(f, CNT_NAME("gone")), -1);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("gone"), 1),
                     CNT_STATUS_NOT_FOUND);
    free(log);
}

/* Deliberate difference 1: sums are checked in 64 bits. The reference
 * wraps here and later aborts on the release. */
static void test_overflow_sequence(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("o"), 1, 10),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("o"),
                                       0xffffffffu, 0xffffffffu),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("o"),
                                       0xffffffffu),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(get(f, CNT_NAME("o")), 1);
}

/* Consumption near 2^32 reaches exactly 0xffffffff and never wraps. */
static void test_near_u32_max(void **state)
{
    fixture *f = *state;
    dump_log *log = malloc(sizeof *log);
    const record *r;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("big"),
                                       0xfffffffeu, 0xffffffffu),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("big"), 2,
                                       0xffffffffu),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("big"), 1,
                                       0xffffffffu),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("big")), 0xffffffffL);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("big"), 1,
                                       0xffffffffu),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    r = dump_find(f, log, "big");
    assert_non_null(r);
    assert_int_equal(r->max, 0xffffffffu);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("big"),
                                       0xffffffffu),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("big")), 0);
    free(log);
}

/* The example of reference-behavior.md, read through Dump: acquire 5,
 * release 4: cur 1 max 5; next window, no activity: max 1; then acquire 2,
 * release 2: max 3. */
static void test_max_windows(void **state)
{
    fixture *f = *state;
    dump_log *log = malloc(sizeof *log);
    const record *r;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("m"), 5, 10),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("m"), 4),
                     CNT_STATUS_OK);
    r = dump_find(f, log, "m");
    assert_int_equal(r->current, 1);
    assert_int_equal(r->max, 5);

    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000);
    r = dump_find(f, log, "m");
    assert_int_equal(r->current, 1);
    assert_int_equal(r->max, 1);

    /* Dump computed that without writing: back in the old window the
     * stored peak is still there. */
    cnt_fake_clock_set(&f->clock, T0_MS + INTERVAL * 1000 - 1);
    r = dump_find(f, log, "m");
    assert_int_equal(r->max, 5);
    cnt_fake_clock_set(&f->clock, T0_MS + INTERVAL * 1000);

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("m"), 2, 10),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("m"), 2),
                     CNT_STATUS_OK);
    r = dump_find(f, log, "m");
    assert_int_equal(r->current, 1);
    assert_int_equal(r->max, 3);

    /* A release-all in a new window also starts it from the carry-over. */
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000);
    cnt_table_release_all(f->t, &f->a);
    r = dump_find(f, log, "m");
    assert_int_equal(r->current, 0);
    assert_int_equal(r->max, 1);
    free(log);
}

/* Dump with a cursor: stopping every few records and resuming visits each
 * counter exactly once. Many counters share the 64 buckets. */
static void test_dump_resume(void **state)
{
    fixture *f = *state;
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };
    char name[16];
    unsigned rounds = 0;
    enum { N = 500 };

    for (int i = 0; i < N; i++) {
        int len = snprintf(name, sizeof name, "d%03d", i);
        assert_int_equal(cnt_table_acquire(f->t, &f->a, (uint8_t *)name,
                                           (uint16_t)len, (uint32_t)i + 1,
                                           1000),
                         CNT_STATUS_OK);
    }
    log->stop_every = 7;
    while (!cnt_table_dump(f->t, &cur, dump_collect, log))
        rounds++;
    assert_true(rounds > 10);             /* it really stopped and resumed */
    assert_int_equal(log->n, N);
    assert_int_equal(log->calls, N);
    for (unsigned i = 0; i < log->n; i++) {
        int k = atoi(log->r[i].name + 1);
        assert_int_equal(log->r[i].seen, 1);
        assert_int_equal(log->r[i].current, k + 1);
        assert_int_equal(log->r[i].max, k + 1);
    }
    /* A finished cursor stays finished. */
    assert_true(cnt_table_dump(f->t, &cur, dump_collect, log));
    assert_int_equal(log->calls, N);
    free(log);
}

/* A Dump of a huge, mostly empty table comes back after looking at
 * CNT_MAP_DUMP_SCAN buckets, unfinished, so its caller's turn stays
 * bounded; called again it goes on and reports each counter once. */
static void test_dump_sparse_table(void **state)
{
    enum { BUCKETS = 3 * CNT_MAP_DUMP_SCAN + 5 };
    fixture *f = fixture_new(BUCKETS, 0);
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };
    unsigned calls = 0;

    (void)state;
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("lone"), 1, 1),
                     CNT_STATUS_OK);
    while (!cnt_table_dump(f->t, &cur, dump_collect, log))
        calls++;
    assert_int_equal(calls, 3);     /* three full slices, then the rest */
    assert_int_equal(log->calls, 1);
    free(log);
    teardown((void **)&f);
}

/* Stopping in the last bucket still reports the table finished. */
static void test_dump_stop_at_end(void **state)
{
    fixture *f = fixture_new(1, 0);
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };

    (void)state;
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("one"), 1, 1),
                     CNT_STATUS_OK);
    log->stop_every = 1;
    assert_true(cnt_table_dump(f->t, &cur, dump_collect, log));
    assert_int_equal(log->calls, 1);
    free(log);
    teardown((void **)&f);
}

/* Acquires one resource of "c%03d" for i in [from, to) through ledger h. */
static void make_counters(fixture *f, cnt_holdings *h, int from, int to)
{
    char name[16];

    for (int i = from; i < to; i++) {
        int len = snprintf(name, sizeof name, "c%03d", i);
        assert_int_equal(cnt_table_acquire(f->t, h, (uint8_t *)name,
                                           (uint16_t)len, 1, 1),
                         CNT_STATUS_OK);
    }
}

/* With one bucket every counter is in one chain: a Dump still stops right
 * after the record that asked, resuming inside the chain, so the records
 * a caller gets per call are bounded by what it asks for, not by the
 * chain's length. */
static void test_dump_long_chain(void **state)
{
    fixture *f = fixture_new(1, 0);
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };
    unsigned rounds = 0;

    (void)state;
    make_counters(f, &f->a, 0, 500);
    log->stop_every = 10;
    for (;;) {
        unsigned before = log->calls;
        bool done = cnt_table_dump(f->t, &cur, dump_collect, log);
        assert_true(log->calls - before <= 10);
        rounds++;
        if (done)
            break;
    }
    assert_int_equal(rounds, 50);
    assert_int_equal(log->n, 500);
    assert_int_equal(log->calls, 500);
    assert_false(cur.paused);
    free(log);
    teardown((void **)&f);
}

/* A Dump paused inside a chain survives what may happen before it
 * resumes: the GC removing the counter it stopped at and others around
 * it, and new counters created at the chain's head. Counters that live
 * through the whole Dump are reported exactly once; removed ones never
 * after their removal. Under ASan this also proves no freed node is read. */
static void test_dump_paused_survives_gc(void **state)
{
    fixture *f = fixture_new(1, 0);
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };

    (void)state;
    make_counters(f, &f->a, 0, 100);     /* will be collected */
    make_counters(f, &f->b, 100, 200);   /* stay held */
    /* The chain is newest first: c199 .. c100, then c099 .. c000. Stop
     * after 150 records: paused at c049, among the ones to be collected. */
    log->stop_every = 150;
    assert_false(cnt_table_dump(f->t, &cur, dump_collect, log));
    assert_true(cur.paused);
    assert_int_equal(log->calls, 150);
    cnt_table_release_all(f->t, &f->a);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, 1), 100);
    make_counters(f, &f->b, 200, 210);   /* new heads, after the pause */
    log->stop_every = 0;
    assert_true(cnt_table_dump(f->t, &cur, dump_collect, log));
    assert_false(cur.paused);
    assert_int_equal(log->calls, 150);   /* the rest had all gone */
    for (unsigned i = 0; i < log->n; i++)
        assert_int_equal(log->r[i].seen, 1);
    free(log);
    teardown((void **)&f);
}

/* Only the counters the GC removes are skipped: a pause just before a
 * held counter resumes exactly there. */
static void test_dump_paused_partial_gc(void **state)
{
    fixture *f = fixture_new(1, 0);
    dump_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };

    (void)state;
    make_counters(f, &f->b, 0, 10);      /* stay held: the chain's tail */
    make_counters(f, &f->a, 10, 20);     /* collected */
    make_counters(f, &f->b, 20, 30);     /* held: the chain's head */
    log->stop_every = 12;                /* paused at c017 */
    assert_false(cnt_table_dump(f->t, &cur, dump_collect, log));
    cnt_table_release_all(f->t, &f->a);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, 1), 10);
    log->stop_every = 0;
    assert_true(cnt_table_dump(f->t, &cur, dump_collect, log));
    assert_int_equal(log->calls, 22);    /* 12, then c009 .. c000 */
    for (unsigned i = 0; i < log->n; i++)
        assert_int_equal(log->r[i].seen, 1);
    free(log);
    teardown((void **)&f);
}

/* A cancelled Dump leaves nothing registered: the GC can then free the
 * counter it was paused at, and other cursors in the same stripe keep
 * working (they are unlinked from the middle of the stripe's list). */
static void test_dump_cancel(void **state)
{
    fixture *f = fixture_new(1, 0);
    dump_log *l1 = calloc(1, sizeof *l1), *l2 = calloc(1, sizeof *l2),
             *l3 = calloc(1, sizeof *l3);
    cnt_map_cursor c1 = { 0 }, c2 = { 0 }, c3 = { 0 };

    (void)state;
    make_counters(f, &f->a, 0, 20);
    l1->stop_every = l2->stop_every = l3->stop_every = 5;
    assert_false(cnt_table_dump(f->t, &c1, dump_collect, l1));
    assert_false(cnt_table_dump(f->t, &c2, dump_collect, l2));
    assert_false(cnt_table_dump(f->t, &c3, dump_collect, l3));
    cnt_table_dump_cancel(f->t, &c2);
    assert_false(c2.paused);
    cnt_table_dump_cancel(f->t, &c2);    /* twice is harmless */
    cnt_table_release_all(f->t, &f->a);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, 1), 20);
    l1->stop_every = l3->stop_every = 0;
    assert_true(cnt_table_dump(f->t, &c1, dump_collect, l1));
    assert_true(cnt_table_dump(f->t, &c3, dump_collect, l3));
    assert_int_equal(l1->calls, 5);
    assert_int_equal(l3->calls, 5);
    cnt_map_cursor never = { 0 };
    cnt_table_dump_cancel(f->t, &never);
    free(l1);
    free(l2);
    free(l3);
    teardown((void **)&f);
}

/* memory_limit: a new counter past it gets 0x82; nothing else changes and
 * existing counters keep working. */
static void test_memory_limit(void **state)
{
    fixture *f = fixture_new(16, 2 * table_counter_size(3));
    cnt_map_stats before, after;

    (void)state;
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("aaa"), 1, 5),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("bbb"), 1, 5),
                     CNT_STATUS_OK);
    cnt_table_get_stats(f->t, &before);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("ccc"), 1, 5),
                     CNT_STATUS_OUT_OF_MEMORY);
    cnt_table_get_stats(f->t, &after);
    assert_memory_equal(&before, &after, sizeof before);
    assert_int_equal(get(f, CNT_NAME("ccc")), -1);
    assert_int_equal(f->b.count, 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("aaa"), 2, 5),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("aaa")), 3);
    assert_int_equal(cnt_table_memory_limit(f->t),
                     2 * table_counter_size(3));
    /* Once a counter is collected its bytes are free again. */
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("bbb"), 1),
                     CNT_STATUS_OK);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000);
    assert_int_equal(table_sweep(f->t, 0, 16), 1);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("ccc"), 1, 5),
                     CNT_STATUS_OK);
    teardown((void **)&f);
}

/* A node allocation that fails gets 0x82 and disturbs nothing. */
static void test_alloc_failure(void **state)
{
    fixture *f = *state;
    cnt_map_stats before, after;

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("ok"), 1, 5),
                     CNT_STATUS_OK);
    cnt_table_get_stats(f->t, &before);
    cnt_fake_alloc_fail_at(1, 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("no"), 1, 5),
                     CNT_STATUS_OUT_OF_MEMORY);
    assert_true(cnt_fake_alloc_injected());
    cnt_table_get_stats(f->t, &after);
    assert_memory_equal(&before, &after, sizeof before);
    assert_int_equal(get(f, CNT_NAME("no")), -1);
    assert_int_equal(f->a.count, 1);
    /* An existing counter needs no allocation. */
    cnt_fake_alloc_fail_at(1, 1);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("ok"), 1, 5),
                     CNT_STATUS_OK);
    assert_false(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("no"), 1, 5),
                     CNT_STATUS_OK);
    assert_int_equal(get(f, CNT_NAME("ok")), 2);
}

/* A ledger that cannot grow gets 0x82 before anything is created. */
static void test_ledger_failure(void **state)
{
    fixture *f = *state;

    cnt_fake_alloc_fail_at(1, 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("l"), 1, 5),
                     CNT_STATUS_OUT_OF_MEMORY);
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(get(f, CNT_NAME("l")), -1);
    assert_int_equal(stat_objects(f), 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("l"), 1, 5),
                     CNT_STATUS_OK);
    cnt_table_release_all(f->t, &f->a);
    cnt_holdings_destroy(&f->a);
}

/* Every name in one bucket: the chain keeps them apart, and conflicts
 * counts the extra ones. */
static void test_collisions(void **state)
{
    fixture *f = fixture_new(1, 0);
    cnt_map_stats s;
    char name[16];

    (void)state;
    for (int i = 0; i < 50; i++) {
        int len = snprintf(name, sizeof name, "k%d", i);
        assert_int_equal(cnt_table_acquire(f->t, &f->a, (uint8_t *)name,
                                           (uint16_t)len, (uint32_t)i + 1,
                                           100),
                         CNT_STATUS_OK);
    }
    for (int i = 0; i < 50; i++) {
        int len = snprintf(name, sizeof name, "k%d", i);
        assert_int_equal(get(f, (uint8_t *)name, (uint16_t)len), i + 1);
    }
    cnt_table_get_stats(f->t, &s);
    assert_int_equal(s.objects, 50);
    assert_int_equal(s.total_objects, 50);
    assert_int_equal(s.conflicts, 49);
    /* Removing from the middle, the head and the tail of the chain. */
    cnt_table_release_all(f->t, &f->a);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000);
    assert_int_equal(table_sweep(f->t, 0, 1), 50);
    cnt_table_get_stats(f->t, &s);
    assert_int_equal(s.objects, 0);
    assert_int_equal(s.conflicts, 0);
    assert_int_equal(s.total_objects, 50);
    teardown((void **)&f);
}

/* Counts, used_memory and the accessors. */
static void test_stats_and_accessors(void **state)
{
    fixture *f = *state;
    cnt_map_stats s0, s1;

    cnt_table_get_stats(f->t, &s0);
    assert_true(s0.used_memory >= 64 * sizeof(void *));
    assert_int_equal(cnt_table_acquire(f->t, &f->a,
                                       CNT_NAME("0123456789abcdef"), 1, 1),
                     CNT_STATUS_OK);
    cnt_table_get_stats(f->t, &s1);
    assert_int_equal(s1.used_memory - s0.used_memory,
                     table_counter_size(16));
    assert_int_equal(s1.objects, 1);
    assert_int_equal(s1.conflicts, 0);
    assert_int_equal(cnt_table_buckets(f->t), 64);
    assert_int_equal(cnt_table_interval(f->t), INTERVAL);
    assert_ptr_equal(cnt_table_clock(f->t), &f->clock.clock);
    assert_int_equal(cnt_table_memory_limit(f->t), 0);
    /* Sweeping past the end or an empty range removes nothing. */
    assert_int_equal(table_sweep(f->t, 64, 10), 0);
    assert_int_equal(table_sweep(f->t, 1000, 10), 0);
    assert_int_equal(table_sweep(f->t, 0, 0), 0);
}

/* The memory budget of 1,000,000 counters: a node is its header plus the
 * name, no padding (offsetof, not sizeof), and a 16-byte name asks for at
 * most 40 bytes, the largest request glibc serves from a 48-byte chunk
 * (chunk = request + 8 rounded up to 16). The allocator sees exactly
 * table_counter_size, and used_memory grows by the same amount. */
static void test_node_size(void **state)
{
    fixture *f = *state;
    static const uint16_t lens[] = { 1, 15, 16, 17, 18, 255, 1000 };
    uint8_t name[1000];
    cnt_map_stats before, after;

    assert_true(table_counter_size(16) <= 40);
    print_message("node for a 16-byte name: %zu bytes\n",
                  table_counter_size(16));
    memset(name, 'n', sizeof name);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint16_t len = lens[i];

        assert_int_equal(table_counter_size(len),
                         table_counter_size(1) + len - 1);
        cnt_table_get_stats(f->t, &before);
        assert_int_equal(cnt_table_acquire(f->t, &f->a, name, len, 1, 1),
                         CNT_STATUS_OK);
        assert_int_equal(cnt_fake_malloc_last_size(),
                         table_counter_size(len));
        cnt_table_get_stats(f->t, &after);
        assert_int_equal(after.used_memory - before.used_memory,
                         table_counter_size(len));
        /* Names that share a prefix stay apart: lookups compare lengths. */
        assert_int_equal(after.objects, i + 1);
    }
    /* Release-all finds every node's stripe again from its name alone. */
    cnt_table_release_all(f->t, &f->a);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        assert_int_equal(get(f, name, lens[i]), 0);
}

/* Defaults and rejected configurations. */
static void test_table_config(void **state)
{
    cnt_table_config too_many = { .buckets = (size_t)UINT32_MAX + 1 };
    cnt_map_stats s;
    cnt_table *t;

    (void)state;
    assert_null(cnt_table_new(&too_many));
    t = cnt_table_new(NULL);
    assert_non_null(t);
    assert_int_equal(cnt_table_buckets(t), CNT_DEFAULT_BUCKETS);
    assert_int_equal(cnt_table_interval(t), CNT_DEFAULT_INTERVAL);
    assert_ptr_equal(cnt_table_clock(t), &cnt_clock_system);
    cnt_table_get_stats(t, &s);
    /* The base table with default buckets stays well under 16 MB. */
    assert_true(s.used_memory < 10u * 1024 * 1024);
    print_message("default table used_memory: %llu bytes; node for a "
                  "16-byte name: %zu bytes\n",
                  (unsigned long long)s.used_memory,
                  table_counter_size(16));
    cnt_table_free(t);
    cnt_table_free(NULL);
}

/* A table whose building runs out of memory at any of its allocations
 * (table, bucket array, stripes) is refused cleanly: NULL, nothing left
 * allocated. */
static void test_table_new_alloc_failure(void **state)
{
    cnt_table_config cfg = { .buckets = 64, .interval = INTERVAL };
    unsigned long k;

    (void)state;
    for (k = 1;; k++) {
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(k, 0);
        cnt_table *t = cnt_table_new(&cfg);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_non_null(t);
            cnt_table_free(t);
            break;
        }
        assert_null(t);
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
    assert_true(k >= 4);    /* table, buckets, stripes, then no failure */
}

/* The semaphore kind's sweep test, asked directly through the map: only
 * counters at consumption 0 last changed before the window of the sweep's
 * "now" may go. */
static void test_may_go_rule(void **state)
{
    fixture *f = *state;
    cnt_map_may_go may_go = cnt_table_may_go(f->t);
    cnt_map *map = cnt_table_map(f->t);
    cnt_clock_now now = { T0_MS, 0 };

    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("held"), 1, 5),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("idle"), 1, 5),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_release(f->t, &f->a, CNT_NAME("idle"), 1),
                     CNT_STATUS_OK);
    /* The window they changed in: nothing goes. */
    now.wall_ms = T0_MS + INTERVAL * 1000 - 1;
    assert_int_equal(cnt_map_sweep(map, 0, 64, &may_go, &now), 0);
    /* The next window: the idle one goes, the held one stays. The table's
     * own clock has not moved; the sweep's "now" is what counts. */
    now.wall_ms = T0_MS + INTERVAL * 1000;
    assert_int_equal(cnt_map_sweep(map, 0, 64, &may_go, &now), 1);
    assert_int_equal(get(f, CNT_NAME("idle")), -1);
    assert_int_equal(get(f, CNT_NAME("held")), 1);
    now.wall_ms += 100u * INTERVAL * 1000;
    assert_int_equal(cnt_map_sweep(map, 0, 64, &may_go, &now), 0);
}

/* The memory a table reports is its map's plus its own. */
static void test_used_memory_includes_table(void **state)
{
    cnt_table_config cfg = { .buckets = 64, .interval = INTERVAL };
    cnt_map_stats ts, ms;
    cnt_table *t = cnt_table_new(&cfg);

    (void)state;
    assert_non_null(t);
    cnt_table_get_stats(t, &ts);
    cnt_map_get_stats(cnt_table_map(t), &ms);
    assert_true(ts.used_memory > ms.used_memory);
    cnt_table_free(t);
}

/* Runs the table tests. */
int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_create_on_first_acquire),
        T(test_acquire_limits),
        T(test_acquire_invalid),
        T(test_release_rules),
        T(test_release_zero),
        T(test_release_all),
        T(test_released_not_collected),
        T(test_overflow_sequence),
        T(test_near_u32_max),
        T(test_max_windows),
        T(test_dump_resume),
        cmocka_unit_test(test_dump_stop_at_end),
        cmocka_unit_test(test_dump_sparse_table),
        cmocka_unit_test(test_dump_long_chain),
        cmocka_unit_test(test_dump_paused_survives_gc),
        cmocka_unit_test(test_dump_paused_partial_gc),
        cmocka_unit_test(test_dump_cancel),
        cmocka_unit_test(test_memory_limit),
        T(test_alloc_failure),
        T(test_ledger_failure),
        cmocka_unit_test(test_collisions),
        T(test_stats_and_accessors),
        T(test_node_size),
        cmocka_unit_test(test_table_config),
        cmocka_unit_test(test_table_new_alloc_failure),
        cmocka_unit_test(test_used_memory_includes_table),
        T(test_may_go_rule),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
