/* gc_int.h: the collector's inner parts, so that gc.c and the unit tests
 * that hand it a map of a kind the product never sweeps (to see every map
 * swept with its own test, and the sweep timed on the table's clock) share
 * one layout. Not for other users; engine/core/gc.h is the interface. */
#ifndef CNT_ENGINE_GC_INT_H
#define CNT_ENGINE_GC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "engine/core/gc.h"

/* One map to sweep and its kind's test. */
typedef struct cnt_gc_target {
    cnt_map *map;
    cnt_map_may_go may_go;
    bool every_second;          /* also swept every second */
} cnt_gc_target;

struct cnt_gc {
    cnt_table *table;           /* its windows and clock set the schedule */
    cnt_gc_target targets[CNT_GC_MAX_MAPS];
    unsigned ntargets;
    pthread_t thread;
    bool started;               /* owner's view: thread exists */
    pthread_mutex_t mutex;      /* guards stop */
    pthread_cond_t cond;        /* on CLOCK_MONOTONIC */
    bool stop;
    atomic_bool stopping;       /* read between slices of a sweep */
    atomic_uint_fast64_t gc_count;
    atomic_uint_fast64_t last_gc_elapsed;
    atomic_uint_fast64_t total_gc_elapsed;
};

#endif
