/* test_concurrency.c: worker threads hammer shared and private counters
 * with Acquire/Release, each through its own ledger and now and then
 * releasing all of it, while another thread moves the clock, sweeps and
 * dumps. Afterwards every total must be exact: consumption = sum of what
 * the threads hold, release-all brings all to 0 and GC removes every
 * counter. */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "engine/core/gc.h"
#include "tests/engine_fake.h"

#define NTHREADS 4
#define NSHARED 4               /* names every thread uses */
#define NPRIVATE 12             /* names only one thread uses */
#define NNAMES (NSHARED + NPRIVATE)
#define OPS 100000
#define DRAIN_EVERY 997         /* ops between a thread's own release-alls */

typedef struct worker {
    pthread_t thread;
    unsigned id;
    cnt_table *t;
    cnt_holdings ledger;
    uint32_t held[NNAMES];      /* the test's model of the ledger */
    char names[NNAMES][16];
    unsigned long refused, failures;
} worker;

typedef struct sweeper {
    pthread_t thread;
    cnt_fake_clock *clock;
    cnt_gc *gc;
    cnt_table *t;
    atomic_bool stop;
    unsigned long sweeps, removed, dumped;
    unsigned long below_peak;   /* records whose peak was below current */
} sweeper;

/* A thread that Dumps in small slices, so its cursor sits paused inside
 * chains while the sweeper's GC unlinks counters in another thread. */
typedef struct dumper {
    pthread_t thread;
    cnt_table *t;
    atomic_bool stop;
    unsigned long records, pauses, dumps;
} dumper;

/* xorshift32: a cheap per-thread pseudo-random sequence. */
static uint32_t next_random(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void worker_names(worker *w)
{
    for (unsigned k = 0; k < NNAMES; k++) {
        if (k < NSHARED)
            snprintf(w->names[k], sizeof w->names[k], "shared%u", k);
        else
            snprintf(w->names[k], sizeof w->names[k], "t%u.p%u", w->id, k);
    }
}

/* One Release step checked against the model; returns false on a
 * mismatch (asserting in a thread would not stop the test cleanly). */
static bool worker_release(worker *w, unsigned k, uint32_t r)
{
    const uint8_t *name = (const uint8_t *)w->names[k];
    uint16_t len = (uint16_t)strlen(w->names[k]);
    cnt_status st = cnt_table_release(w->t, &w->ledger, name, len, r);

    if (w->held[k] == 0)       /* maybe collected already: 0x01 or 0x22 */
        return st == CNT_STATUS_NOT_ACQUIRED || st == CNT_STATUS_NOT_FOUND;
    if (r > w->held[k])
        return st == CNT_STATUS_NOT_ACQUIRED;
    if (st != CNT_STATUS_OK)
        return false;
    w->held[k] -= r;
    return true;
}

static bool worker_acquire(worker *w, unsigned k, uint32_t r)
{
    /* Shared counters get a tight maximum so threads refuse each other. */
    uint32_t maximum = k < NSHARED ? 6 : 1000000;
    const uint8_t *name = (const uint8_t *)w->names[k];
    uint16_t len = (uint16_t)strlen(w->names[k]);
    cnt_status st = cnt_table_acquire(w->t, &w->ledger, name, len, r,
                                      maximum);

    if (st == CNT_STATUS_OK) {
        w->held[k] += r;
        return true;
    }
    w->refused++;
    return st == CNT_STATUS_RESOURCE_NOT_AVAILABLE && k < NSHARED;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint32_t seed = 0x9e3779b9u * (w->id + 1);

    for (int i = 0; i < OPS; i++) {
        uint32_t x = next_random(&seed);
        unsigned k = x % NNAMES;
        uint32_t r = (x >> 8) % 3;
        bool ok;

        uint32_t pick = (x >> 16) % 8;

        if (pick < 4)
            ok = worker_acquire(w, k, r + 1);
        else if (pick < 6)      /* give all back: counters reach 0 often */
            ok = worker_release(w, k, w->held[k]);
        else if (pick == 6)     /* one more than held: 0x22 */
            ok = worker_release(w, k, w->held[k] + 1);
        else
            ok = worker_release(w, k, r);
        if (!ok)
            w->failures++;
        /* A connection ends while the others keep going: release-all finds
         * each counter's stripe from its name as chains change around it. */
        if (i % DRAIN_EVERY == DRAIN_EVERY - 1) {
            cnt_table_release_all(w->t, &w->ledger);
            memset(w->held, 0, sizeof w->held);
        }
    }
    return NULL;
}

/* Dump callback of the sweeper: counts every record, and separately those
 * whose peak is below the consumption now, which a window never has. */
static bool count_record(void *ctx, const uint8_t *name, uint16_t len,
                         uint32_t current, uint32_t max)
{
    sweeper *s = ctx;

    (void)name;
    (void)len;
    s->dumped++;
    if (max < current)
        s->below_peak++;
    return true;
}

/* Dump callback of the dumper: counts, and asks to stop every third
 * record so that the cursor pauses in the middle of chains. */
static bool slice_record(void *ctx, const uint8_t *name, uint16_t len,
                         uint32_t current, uint32_t max)
{
    dumper *d = ctx;

    (void)name;
    (void)len;
    (void)current;
    (void)max;
    return ++d->records % 3 != 0;
}

/* Dumps the table again and again, three records at a time, until told
 * to stop (finishing the Dump under way, or cancelling it). */
static void *dumper_main(void *arg)
{
    dumper *d = arg;

    while (!atomic_load(&d->stop)) {
        cnt_map_cursor cur = { 0 };
        while (!cnt_table_dump(d->t, &cur, slice_record, d)) {
            d->pauses++;
            if (atomic_load(&d->stop)) {
                cnt_table_dump_cancel(d->t, &cur);
                break;
            }
        }
        d->dumps++;
    }
    return NULL;
}

/* Starts NTHREADS workers on table t, each with its own ledger and names. */
static void workers_start(worker *workers, cnt_table *t)
{
    for (unsigned i = 0; i < NTHREADS; i++) {
        workers[i].id = i;
        workers[i].t = t;
        cnt_holdings_init(&workers[i].ledger);
        worker_names(&workers[i]);
        assert_int_equal(pthread_create(&workers[i].thread, NULL, worker_main,
                                        &workers[i]), 0);
    }
}

/* Moves time a window on, sweeps and dumps, until told to stop. */
static void *sweeper_main(void *arg)
{
    sweeper *s = arg;

    while (!atomic_load(&s->stop)) {
        cnt_map_cursor cur = { 0 };
        cnt_fake_clock_advance(s->clock, 1000);
        s->removed += cnt_gc_run_once(s->gc);
        s->sweeps++;
        while (!cnt_table_dump(s->t, &cur, count_record, s))
            ;
    }
    return NULL;
}

static void test_concurrency_totals(void **state)
{
    static worker workers[NTHREADS];
    cnt_fake_clock clock;
    cnt_table_config cfg = { .buckets = 64, .interval = 1,
                             .clock = &clock.clock };
    sweeper sw = { 0 };
    cnt_map_stats ts;

    (void)state;
    cnt_fake_clock_init(&clock, UINT64_C(1700000000000));
    cnt_table *t = cnt_table_new(&cfg);
    cnt_map_stats base;
    assert_non_null(t);
    cnt_table_get_stats(t, &base);
    sw.clock = &clock;
    sw.t = t;
    sw.gc = cnt_gc_new(t);
    assert_non_null(sw.gc);
    atomic_init(&sw.stop, false);
    assert_int_equal(pthread_create(&sw.thread, NULL, sweeper_main, &sw), 0);
    dumper dp = { .t = t };
    atomic_init(&dp.stop, false);
    assert_int_equal(pthread_create(&dp.thread, NULL, dumper_main, &dp), 0);
    workers_start(workers, t);
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(workers[i].thread, NULL);
    atomic_store(&sw.stop, true);
    pthread_join(sw.thread, NULL);
    atomic_store(&dp.stop, true);
    pthread_join(dp.thread, NULL);
    print_message("sweeps %lu, removed %lu, dump records %lu; sliced "
                  "dumps %lu with %lu pauses\n", sw.sweeps, sw.removed,
                  sw.dumped, dp.dumps, dp.pauses);
    assert_true(dp.pauses > 0);
    /* The sweeper's Dumps saw records, and none had a peak below its
     * consumption. */
    assert_true(sw.dumped > 0);
    assert_int_equal(sw.below_peak, 0);

    /* Every answer matched the model, and the ledgers agree with it. */
    for (unsigned i = 0; i < NTHREADS; i++) {
        size_t holding = 0;
        assert_int_equal(workers[i].failures, 0);
        for (unsigned k = 0; k < NNAMES; k++)
            holding += workers[i].held[k] > 0;
        assert_int_equal(workers[i].ledger.count, holding);
    }
    /* Each counter's consumption is exactly what the threads hold. */
    for (unsigned i = 0; i < NTHREADS; i++) {
        for (unsigned k = 0; k < NNAMES; k++) {
            const char *name = workers[i].names[k];
            uint32_t expect = 0, got = 0;
            if (k < NSHARED)
                for (unsigned j = 0; j < NTHREADS; j++)
                    expect += workers[j].held[k];
            else
                expect = workers[i].held[k];
            cnt_status st = cnt_table_get(t, (const uint8_t *)name,
                                          (uint16_t)strlen(name), &got);
            if (st == CNT_STATUS_NOT_FOUND)
                assert_int_equal(expect, 0);
            else
                assert_int_equal(got, expect);
        }
    }
    /* Release-all for every connection: all counters at 0 ... */
    for (unsigned i = 0; i < NTHREADS; i++) {
        cnt_table_release_all(t, &workers[i].ledger);
        cnt_holdings_destroy(&workers[i].ledger);
    }
    for (unsigned i = 0; i < NTHREADS; i++) {
        for (unsigned k = 0; k < NNAMES; k++) {
            const char *name = workers[i].names[k];
            uint32_t got = 0;
            if (cnt_table_get(t, (const uint8_t *)name,
                              (uint16_t)strlen(name), &got) == CNT_STATUS_OK)
                assert_int_equal(got, 0);
        }
    }
    /* ... and the next window's GC removes every one. */
    cnt_fake_clock_advance(&clock, 1000);
    cnt_gc_run_once(sw.gc);
    cnt_table_get_stats(t, &ts);
    assert_int_equal(ts.objects, 0);
    assert_int_equal(ts.conflicts, 0);
    assert_int_equal(ts.used_memory, base.used_memory);
    cnt_gc_free(sw.gc);
    cnt_table_free(t);
}

/* The real GC thread beside workers on real time, with whole sweeps run
 * from this thread as well while the workers go, so sweeps race them even
 * if the workers finish before the thread's first wake-up; the thread's
 * own sweep is then awaited (bounded) so it is seen to run too. */
static void test_concurrency_gc_thread(void **state)
{
    static worker workers[NTHREADS];
    cnt_table_config cfg = { .buckets = 1024, .interval = 1 };
    cnt_table *t = cnt_table_new(&cfg);
    cnt_gc *gc = cnt_gc_new(t);
    cnt_map_stats ts;

    (void)state;
    assert_non_null(gc);
    assert_int_equal(cnt_gc_start(gc), 0);
    workers_start(workers, t);
    for (int i = 0; i < 50; i++)
        cnt_gc_run_once(gc);
    for (unsigned i = 0; i < NTHREADS; i++)
        pthread_join(workers[i].thread, NULL);
    cnt_gc_stats g;
    struct timespec pause = { 0, 10 * 1000 * 1000 };
    for (int i = 0; i < 3000; i++) {        /* gives up after ~30 s */
        cnt_gc_get_stats(gc, &g);
        if (g.gc_count > 50)
            break;
        nanosleep(&pause, NULL);
    }
    assert_true(g.gc_count > 50);
    cnt_gc_stop(gc);
    for (unsigned i = 0; i < NTHREADS; i++) {
        assert_int_equal(workers[i].failures, 0);
        cnt_table_release_all(t, &workers[i].ledger);
        cnt_holdings_destroy(&workers[i].ledger);
    }
    cnt_table_get_stats(t, &ts);
    assert_true(ts.objects <= NSHARED + NTHREADS * NPRIVATE);
    cnt_gc_free(gc);
    cnt_table_free(t);
}

/* Runs the concurrency tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrency_totals),
        cmocka_unit_test(test_concurrency_gc_thread),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
