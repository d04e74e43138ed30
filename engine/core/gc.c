/* gc.c: the garbage collector. A thread that sleeps on a condition
 * variable (so stop is immediate), sweeps about a second after start and
 * then just after each window starts, each of its maps a slice of buckets
 * at a time, with that map's kind's test; the maps of records that die by
 * the clock (the rate limits) it also sweeps every second in between. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "engine/core/gc_int.h"

/* First sweep this long after start; later ones this long after a window
 * starts, so counters left at 0 just before the boundary are collected. */
#define CNT_GC_FIRST_DELAY_NS 1000000000u
#define CNT_GC_AFTER_WINDOW_NS 100000000u
/* The maps of records that die by the clock are swept this often: a rate
 * limit keyed per client must not hold memory for a whole window (a day by
 * default) after it stopped mattering. */
#define CNT_GC_RECORDS_PERIOD_NS 1000000000u

/* Builds a stopped collector whose condition variable times out on the
 * monotonic clock, so wall-clock steps neither stall nor rush it. */
cnt_gc *cnt_gc_new(cnt_table *t)
{
    cnt_gc *gc = calloc(1, sizeof *gc);
    pthread_condattr_t attr;

    if (gc == NULL)
        return NULL;
    gc->table = t;
    gc->targets[0].map = cnt_table_map(t);
    gc->targets[0].may_go = cnt_table_may_go(t);
    gc->ntargets = 1;
    if (pthread_condattr_init(&attr) != 0)
        goto fail_free;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&gc->cond, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        goto fail_free;
    }
    pthread_condattr_destroy(&attr);
    if (pthread_mutex_init(&gc->mutex, NULL) != 0) {
        pthread_cond_destroy(&gc->cond);
        goto fail_free;
    }
    return gc;
fail_free:
    free(gc);
    return NULL;
}

/* Frees a stopped collector. */
void cnt_gc_free(cnt_gc *gc)
{
    if (gc == NULL)
        return;
    pthread_mutex_destroy(&gc->mutex);
    pthread_cond_destroy(&gc->cond);
    free(gc);
}

/* Adds a map to every later sweep, judged by may_go; only while the
 * thread is stopped. Returns 0, EBUSY (running) or ENOSPC (already
 * CNT_GC_MAX_MAPS maps). */
static int add_map(cnt_gc *gc, cnt_map *map, cnt_map_may_go may_go)
{
    if (gc->started)
        return EBUSY;
    if (gc->ntargets == CNT_GC_MAX_MAPS)
        return ENOSPC;
    gc->targets[gc->ntargets].map = map;
    gc->targets[gc->ntargets].may_go = may_go;
    gc->ntargets++;
    return 0;
}

/* Adds the rate limits' map with their sweep test. */
int cnt_gc_add_limits(cnt_gc *gc, cnt_limits *l)
{
    int err = add_map(gc, cnt_limits_map(l), cnt_limits_may_go(l));

    if (err == 0)
        gc->targets[gc->ntargets - 1].every_second = true;
    return err;
}

/* Adds the throttle's tenant map with its sweep test. */
int cnt_gc_add_throttle(cnt_gc *gc, cnt_throttle *t)
{
    int err = add_map(gc, cnt_throttle_map(t), cnt_throttle_may_go(t));

    if (err == 0)
        gc->targets[gc->ntargets - 1].every_second = true;
    return err;
}

/* Sweeps one map in slices, each judged at the clock's time when it
 * starts; stops early if the thread is being stopped. */
static size_t gc_sweep_map(cnt_gc *gc, const cnt_gc_target *tg)
{
    const cnt_clock *clock = cnt_table_clock(gc->table);
    size_t n = cnt_map_buckets(tg->map);
    size_t removed = 0;

    for (size_t b = 0; b < n; b += CNT_GC_SLICE) {
        cnt_clock_now now;

        if (atomic_load(&gc->stopping))
            break;
        cnt_clock_read(clock, &now);
        removed += cnt_map_sweep(tg->map, b, CNT_GC_SLICE, &tg->may_go, &now);
    }
    return removed;
}

/* One whole sweep of every map; its duration comes from the table's
 * monotonic clock. */
size_t cnt_gc_run_once(cnt_gc *gc)
{
    const cnt_clock *clock = cnt_table_clock(gc->table);
    uint64_t start = cnt_clock_mono_ns(clock);
    size_t removed = 0;

    for (unsigned i = 0; i < gc->ntargets; i++)
        removed += gc_sweep_map(gc, &gc->targets[i]);
    uint64_t elapsed = (cnt_clock_mono_ns(clock) - start) / 1000u;
    atomic_store(&gc->last_gc_elapsed, elapsed);
    atomic_fetch_add(&gc->total_gc_elapsed, elapsed);
    atomic_fetch_add(&gc->gc_count, 1);
    return removed;
}

/* Sweeps the maps swept every second; returns how many records went. */
size_t cnt_gc_run_records(cnt_gc *gc)
{
    size_t removed = 0;

    for (unsigned i = 0; i < gc->ntargets; i++)
        if (gc->targets[i].every_second)
            removed += gc_sweep_map(gc, &gc->targets[i]);
    return removed;
}

/* Nanoseconds from now until just after the table's next window starts,
 * by the table's wall clock. */
static uint64_t gc_until_next_window(const cnt_gc *gc)
{
    uint64_t now = cnt_clock_wall_ms(cnt_table_clock(gc->table));
    uint64_t len = (uint64_t)cnt_table_interval(gc->table) * 1000u;
    uint64_t next = (now / len + 1) * len;

    return (next - now) * 1000000u + CNT_GC_AFTER_WINDOW_NS;
}

/* The real monotonic time in ns: the condition variable waits on
 * CLOCK_MONOTONIC, so its deadlines must come from that clock even when
 * the table runs on an injected one. */
static uint64_t gc_real_ns(void)
{
    return cnt_clock_mono_ns(&cnt_clock_system);
}

/* A monotonic time in ns as the timespec pthread_cond_timedwait takes. */
static struct timespec gc_timespec(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u),
                           (long)(ns % 1000000000u) };
    return ts;
}

/* The thread: wait for the deadline or stop; sweep; repeat. */
static void *gc_main(void *arg)
{
    cnt_gc *gc = arg;
    uint64_t full = gc_real_ns() + CNT_GC_FIRST_DELAY_NS;
    uint64_t records = gc_real_ns() + CNT_GC_RECORDS_PERIOD_NS;
    bool any_records = false;

    for (unsigned i = 0; i < gc->ntargets; i++)
        any_records |= gc->targets[i].every_second;
    pthread_mutex_lock(&gc->mutex);
    while (!gc->stop) {
        uint64_t now = gc_real_ns();
        uint64_t deadline = any_records && records < full ? records : full;
        if (now < deadline) {
            struct timespec ts = gc_timespec(deadline);
            pthread_cond_timedwait(&gc->cond, &gc->mutex, &ts);
            continue;           /* re-check stop and the deadline */
        }
        bool whole = now >= full;
        pthread_mutex_unlock(&gc->mutex);
        if (whole) {
            cnt_gc_run_once(gc);
            full = gc_real_ns() + gc_until_next_window(gc);
        } else {
            cnt_gc_run_records(gc);
        }
        records = gc_real_ns() + CNT_GC_RECORDS_PERIOD_NS;
        pthread_mutex_lock(&gc->mutex);
    }
    pthread_mutex_unlock(&gc->mutex);
    return NULL;
}

/* Starts the thread; returns 0 or an errno value. */
int cnt_gc_start(cnt_gc *gc)
{
    int err;

    if (gc->started)
        return EALREADY;
    gc->stop = false;
    atomic_store(&gc->stopping, false);
    err = pthread_create(&gc->thread, NULL, gc_main, gc);
    if (err == 0)
        gc->started = true;
    return err;
}

/* Stops the thread (even mid-sweep, between slices) and joins it. */
void cnt_gc_stop(cnt_gc *gc)
{
    if (!gc->started)
        return;
    atomic_store(&gc->stopping, true);
    pthread_mutex_lock(&gc->mutex);
    gc->stop = true;
    pthread_cond_signal(&gc->cond);
    pthread_mutex_unlock(&gc->mutex);
    pthread_join(gc->thread, NULL);
    gc->started = false;
    atomic_store(&gc->stopping, false);
}

/* Fills s with the collector's figures. */
void cnt_gc_get_stats(const cnt_gc *gc, cnt_gc_stats *s)
{
    s->gc_count = atomic_load(&gc->gc_count);
    s->last_gc_elapsed = atomic_load(&gc->last_gc_elapsed);
    s->total_gc_elapsed = atomic_load(&gc->total_gc_elapsed);
}
