/* gc.h: the garbage collector thread. Once per consumption window (and
 * about a second after start) it sweeps the table a slice of buckets at a
 * time, so requests never wait behind a sweep of millions of counters. */
#ifndef CNT_ENGINE_GC_H
#define CNT_ENGINE_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/core/table.h"

typedef struct cnt_gc cnt_gc;

/* Figures of the GC, for Stats (microseconds). */
typedef struct cnt_gc_stats {
    uint64_t gc_count;
    uint64_t last_gc_elapsed;
    uint64_t total_gc_elapsed;
} cnt_gc_stats;

/* Builds a stopped collector for t; NULL when memory is short. */
cnt_gc *cnt_gc_new(cnt_table *t);

/* Starts the thread; returns 0 or an errno value. */
int cnt_gc_start(cnt_gc *gc);

/* Stops the thread at once (it waits on a condition variable) and joins it. */
void cnt_gc_stop(cnt_gc *gc);

/* Frees a stopped collector. */
void cnt_gc_free(cnt_gc *gc);

/* Runs one whole sweep now, in the calling thread; returns how many
 * counters it removed. Used by the thread and by tests. */
size_t cnt_gc_run_once(cnt_gc *gc);

/* Buckets one cnt_table_sweep call covers: each bucket is locked on its
 * own, and between slices the thread checks whether it must stop. */
#define CNT_GC_SLICE 256u

/* Asks a started thread to sweep now instead of at its next wake-up (an
 * operator's nudge; tests use it to avoid waiting). */
void cnt_gc_kick(cnt_gc *gc);

/* Fills s with the collector's figures. */
void cnt_gc_get_stats(const cnt_gc *gc, cnt_gc_stats *s);

#endif
