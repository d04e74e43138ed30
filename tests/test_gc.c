/* test_gc.c: garbage collection driven by the fake clock: only counters at
 * consumption 0 last changed before the current window go; other maps
 * added to the collector are swept with their own kind's test; sweep
 * durations come from the clock's monotonic reading; the thread sweeps on
 * its own, again after a restart, and stops at once. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "engine/core/gc_int.h"
#include "tests/engine_fake.h"

#define T0_MS UINT64_C(1700000000000)
#define INTERVAL 10u
#define WINDOW_MS (INTERVAL * 1000u)

typedef struct fixture {
    cnt_fake_clock clock;
    cnt_table *t;
    cnt_gc *gc;
    cnt_holdings a;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    cnt_table_config cfg = { .buckets = 1000, .interval = INTERVAL,
                             .clock = &f->clock.clock };

    cnt_fake_clock_init(&f->clock, T0_MS);
    f->t = cnt_table_new(&cfg);
    f->gc = cnt_gc_new(f->t);
    assert_non_null(f->t);
    assert_non_null(f->gc);
    cnt_holdings_init(&f->a);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    cnt_gc_stop(f->gc);
    cnt_gc_free(f->gc);
    cnt_table_release_all(f->t, &f->a);
    cnt_holdings_destroy(&f->a);
    cnt_table_free(f->t);
    free(f);
    return 0;
}

static cnt_status acquire(fixture *f, const char *name, uint32_t n)
{
    return cnt_table_acquire(f->t, &f->a, (const uint8_t *)name,
                             (uint16_t)strlen(name), n, 100);
}

static cnt_status release(fixture *f, const char *name, uint32_t n)
{
    return cnt_table_release(f->t, &f->a, (const uint8_t *)name,
                             (uint16_t)strlen(name), n);
}

static bool exists(fixture *f, const char *name)
{
    uint32_t v;

    return cnt_table_get(f->t, (const uint8_t *)name, (uint16_t)strlen(name),
                         &v) == CNT_STATUS_OK;
}

/* Only deletable counters go; one released in the current window waits
 * for the next window. */
static void test_gc_deletable_only(void **state)
{
    fixture *f = *state;
    cnt_map_stats s;
    cnt_gc_stats g;

    assert_int_equal(acquire(f, "held", 2), CNT_STATUS_OK);
    assert_int_equal(acquire(f, "freed", 2), CNT_STATUS_OK);
    assert_int_equal(release(f, "freed", 2), CNT_STATUS_OK);
    /* Same window: nothing is deletable yet. */
    assert_int_equal(cnt_gc_run_once(f->gc), 0);
    assert_true(exists(f, "freed"));

    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(acquire(f, "late", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "late", 1), CNT_STATUS_OK);
    assert_int_equal(cnt_gc_run_once(f->gc), 1);
    assert_false(exists(f, "freed"));
    assert_true(exists(f, "held"));
    assert_true(exists(f, "late"));      /* released in this window */

    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_run_once(f->gc), 1);
    assert_false(exists(f, "late"));
    assert_true(exists(f, "held"));      /* held counters never go */

    cnt_table_get_stats(f->t, &s);
    assert_int_equal(s.objects, 1);
    assert_int_equal(s.total_objects, 3);
    cnt_gc_get_stats(f->gc, &g);
    assert_int_equal(g.gc_count, 3);
    assert_true(g.total_gc_elapsed >= g.last_gc_elapsed);

    /* After release-all and a window change, everything is collected. */
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(cnt_gc_run_once(f->gc), 0);
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_run_once(f->gc), 1);
    cnt_table_get_stats(f->t, &s);
    assert_int_equal(s.objects, 0);
}

/* A counter touched again after it fell to 0 is no longer deletable. */
static void test_gc_reused_counter(void **state)
{
    fixture *f = *state;

    assert_int_equal(acquire(f, "again", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "again", 1), CNT_STATUS_OK);
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(acquire(f, "again", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "again", 1), CNT_STATUS_OK);
    assert_int_equal(cnt_gc_run_once(f->gc), 0);
    assert_true(exists(f, "again"));
}

/* Many counters spread over more buckets than one slice. */
static void test_gc_slices(void **state)
{
    fixture *f = *state;
    char name[16];

    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(acquire(f, name, 1), CNT_STATUS_OK);
        if (i % 3 != 0)
            assert_int_equal(release(f, name, 1), CNT_STATUS_OK);
    }
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_run_once(f->gc), 2000);
    assert_int_equal(cnt_gc_run_once(f->gc), 0);
}

/* A second kind of record, in a map of its own: it may go when marked
 * doomed. Judging one "takes" 3 us on the fake monotonic clock, which
 * shows where the collector measures its sweeps. */
typedef struct tagged {
    cnt_map_node node;
    uint32_t doomed;
    uint16_t name_len;
    uint8_t name[];
} tagged;
CNT_MAP_NODE_CHECK(tagged);

static bool tagged_may_go(void *ctx, const cnt_map_node *n,
                          const cnt_clock_now *now)
{
    (void)now;
    cnt_fake_clock_advance_ns(ctx, 3000);
    return ((const tagged *)n)->doomed != 0;
}

/* Hands the collector a map of a kind the engine never gives it (the
 * engine adds only its own kinds, through cnt_gc_add_limits and
 * cnt_gc_add_throttle): a test-only step, done on the collector's inner
 * layout while it is stopped. */
static void add_tagged_map(cnt_gc *gc, cnt_map *map, cnt_map_may_go may_go)
{
    assert_false(gc->started);
    assert_true(gc->ntargets < CNT_GC_MAX_MAPS);
    gc->targets[gc->ntargets].map = map;
    gc->targets[gc->ntargets].may_go = may_go;
    gc->targets[gc->ntargets].every_second = false;
    gc->ntargets++;
}

/* The collector sweeps every map it was given, each with its own test,
 * and times the whole sweep on the clock's monotonic reading. */
static void test_gc_several_maps(void **state)
{
    fixture *f = *state;
    cnt_map_config mc = { .buckets = 16,
                          .name_offset = offsetof(tagged, name) };
    cnt_map other;
    char name[16];
    cnt_gc_stats g;

    assert_int_equal(cnt_map_init(&other, &mc), 0);
    for (int i = 0; i < 10; i++) {
        int len = snprintf(name, sizeof name, "t%d", i);
        size_t b = cnt_map_bucket_of(&other, (uint8_t *)name, (uint16_t)len);
        pthread_mutex_t *lock = cnt_map_lock(&other, b);
        tagged *t = (tagged *)cnt_map_do_insert(&other, b, (uint8_t *)name,
                                                (uint16_t)len);
        assert_non_null(t);
        t->doomed = i % 2 == 0;
        cnt_map_unlock(lock);
    }
    cnt_map_may_go may_go = { tagged_may_go, &f->clock };
    add_tagged_map(f->gc, &other, may_go);

    assert_int_equal(acquire(f, "freed", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "freed", 1), CNT_STATUS_OK);
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_run_once(f->gc), 1 + 5);
    assert_false(exists(f, "freed"));
    cnt_map_stats ms;
    cnt_map_get_stats(&other, &ms);
    assert_int_equal(ms.objects, 5);
    cnt_gc_get_stats(f->gc, &g);
    assert_int_equal(g.last_gc_elapsed, 10 * 3);    /* 10 judged, 3 us each */
    assert_int_equal(cnt_gc_run_once(f->gc), 0);
    cnt_gc_get_stats(f->gc, &g);
    assert_int_equal(g.last_gc_elapsed, 5 * 3);
    assert_int_equal(g.total_gc_elapsed, 15 * 3);

    /* Maps are added only while stopped, and only so many, whichever
     * kind (the limits' here). */
    cnt_limits_config lc = { .buckets = 16, .clock = &f->clock.clock };
    cnt_limits *l = cnt_limits_new(&lc);
    assert_non_null(l);
    assert_int_equal(cnt_gc_start(f->gc), 0);
    assert_int_equal(cnt_gc_add_limits(f->gc, l), EBUSY);
    cnt_gc_stop(f->gc);
    cnt_gc *full = cnt_gc_new(f->t);
    assert_non_null(full);
    for (unsigned i = 1; i < CNT_GC_MAX_MAPS; i++)
        assert_int_equal(cnt_gc_add_limits(full, l), 0);
    assert_int_equal(cnt_gc_add_limits(full, l), ENOSPC);
    cnt_gc_free(full);
    cnt_limits_free(l);
    cnt_gc_free(f->gc);         /* before the map it sweeps goes */
    f->gc = cnt_gc_new(f->t);
    assert_non_null(f->gc);
    cnt_map_destroy(&other);
}

/* Waits (bounded) until the collector has swept at least n times. */
static bool wait_for_sweeps(fixture *f, uint64_t n)
{
    struct timespec pause = { 0, 10 * 1000 * 1000 };
    cnt_gc_stats g;

    for (int i = 0; i < 3000; i++) {        /* gives up after ~30 s */
        cnt_gc_get_stats(f->gc, &g);
        if (g.gc_count >= n)
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

/* The thread's first sweep comes by itself soon after start. */
static void test_gc_thread_first_sweep(void **state)
{
    fixture *f = *state;

    assert_int_equal(acquire(f, "old", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "old", 1), CNT_STATUS_OK);
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_start(f->gc), 0);
    assert_int_equal(cnt_gc_start(f->gc), EALREADY);
    assert_true(wait_for_sweeps(f, 1));
    assert_false(exists(f, "old"));
    cnt_gc_stop(f->gc);
    cnt_gc_stop(f->gc);                     /* stopping twice is harmless */
}

/* Stop works after a sweep, and the collector started again sweeps
 * again by itself. */
static void test_gc_thread_restart(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_gc_start(f->gc), 0);
    assert_true(wait_for_sweeps(f, 1));
    cnt_gc_stop(f->gc);

    assert_int_equal(acquire(f, "k", 1), CNT_STATUS_OK);
    assert_int_equal(release(f, "k", 1), CNT_STATUS_OK);
    cnt_fake_clock_advance(&f->clock, WINDOW_MS);
    assert_int_equal(cnt_gc_start(f->gc), 0);
    assert_true(wait_for_sweeps(f, 2));
    assert_false(exists(f, "k"));
}

/* Stopping a thread that waits for a whole day returns without waiting. */
static void test_gc_thread_stop_at_once(void **state)
{
    fixture *f = *state;

    assert_int_equal(cnt_gc_start(f->gc), 0);
    cnt_gc_stop(f->gc);
    /* Not started: stop does nothing. */
    cnt_gc_stop(f->gc);
}

/* Runs the GC tests. */
int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_gc_deletable_only),
        T(test_gc_reused_counter),
        T(test_gc_slices),
        T(test_gc_several_maps),
        T(test_gc_thread_first_sweep),
        T(test_gc_thread_restart),
        T(test_gc_thread_stop_at_once),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
