/* gc.h: the garbage collector thread. Once per consumption window (and
 * about a second after start) it sweeps its maps (the semaphore counters,
 * the rate limits, the throttle's tenants) a slice of buckets at a time,
 * so requests never wait behind a sweep of millions of records; the maps
 * of records that die by the clock (the rate limits, the tenants) it also
 * sweeps every second in between. What may go is each map's kind's
 * decision (cnt_map_may_go), not the GC's. Only the whole sweeps count in
 * gc_count and the elapsed times. */
#ifndef CNT_ENGINE_GC_H
#define CNT_ENGINE_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/core/limits.h"
#include "engine/core/map.h"
#include "engine/core/table.h"
#include "engine/core/throttle.h"

typedef struct cnt_gc cnt_gc;

/* Figures of the GC, for Stats (microseconds). */
typedef struct cnt_gc_stats {
    uint64_t gc_count;
    uint64_t last_gc_elapsed;
    uint64_t total_gc_elapsed;
} cnt_gc_stats;

/* Most maps one collector sweeps. */
#define CNT_GC_MAX_MAPS 8u

/* Builds a stopped collector that sweeps t's counters with the semaphore
 * test, on the schedule of t's windows and clock; NULL when memory is
 * short. t must outlive the collector. */
cnt_gc *cnt_gc_new(cnt_table *t);

/* Adds the rate limits' map to every later sweep and to the sweeps every
 * second, judged by the limits' own test (dead records go, counted
 * expired); only while the thread is stopped. l must share the table's
 * clock and outlive the collector. Returns 0, EBUSY (running) or ENOSPC
 * (already CNT_GC_MAX_MAPS maps). */
int cnt_gc_add_limits(cnt_gc *gc, cnt_limits *l);

/* Adds the throttle's tenant map to every later sweep, judged by the
 * throttle's own test (unconfigured tenants with no usage in the current
 * second go); only while the thread is stopped. t must share the table's
 * clock and outlive the collector. Returns what cnt_gc_add_limits
 * returns. */
int cnt_gc_add_throttle(cnt_gc *gc, cnt_throttle *t);

/* Starts the thread; returns 0 or an errno value. */
int cnt_gc_start(cnt_gc *gc);

/* Stops the thread at once (it waits on a condition variable) and joins it. */
void cnt_gc_stop(cnt_gc *gc);

/* Frees a stopped collector. */
void cnt_gc_free(cnt_gc *gc);

/* Runs one whole sweep of every map now, in the calling thread; returns
 * how many records it removed. Used by the thread and by tests. */
size_t cnt_gc_run_once(cnt_gc *gc);

/* Sweeps only the maps swept every second, now, in the calling thread;
 * returns how many records it removed (not counted in gc_count). */
size_t cnt_gc_run_records(cnt_gc *gc);

/* Buckets one cnt_map_sweep call covers: each bucket is locked on its
 * own, and between slices the thread checks whether it must stop. */
#define CNT_GC_SLICE 256u

/* Fills s with the collector's figures. */
void cnt_gc_get_stats(const cnt_gc *gc, cnt_gc_stats *s);

#endif
