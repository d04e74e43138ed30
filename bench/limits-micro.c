/* limits-micro.c: an engine-level microbenchmark of the rate limits, no
 * sockets: two threads checking one name ("hot", the common case of one
 * limit per API) against two threads checking a name each ("spread"), for
 * GCRA and window checks, and the ratio hot / spread. A ratio near 1 means
 * a hot name costs what distinct names cost; the stripe lock of one hot
 * name must not make it collapse (doc/design.md records the runs).
 * Usage: limits-micro [seconds per case, default 1] [threads, default 2] */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/core/limits.h"

#define MICRO_MAX_THREADS 64

/* What one case's threads share. */
typedef struct micro_case {
    cnt_limits *limits;
    uint8_t opcode;
    bool hot;
    atomic_bool go, stop;
} micro_case;

/* One thread's part. */
typedef struct micro_thread {
    pthread_t tid;
    micro_case *mc;
    unsigned id;
    uint64_t ops, allowed;
} micro_thread;

/* Seconds of the monotonic clock. */
static double micro_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Checks as fast as it can until told to stop; limits large enough that
 * nearly every check is allowed and charged (the path that writes). */
static void *micro_main(void *arg)
{
    micro_thread *t = arg;
    micro_case *mc = t->mc;
    char name[32];
    int len = snprintf(name, sizeof name, "name-%u", mc->hot ? 0 : t->id);
    cnt_check_request a = {
        .opcode = mc->opcode,
        .limit_or_burst = UINT32_MAX,
        .count = UINT32_MAX,
        .cost = 1,
        .period_ns = mc->opcode == CNT_OP_GCRA_CHECK ? 1000000000u : 0,
        .name = (const uint8_t *)name,
        .name_len = (uint16_t)len,
    };
    cnt_check_result ans;

    while (!atomic_load_explicit(&mc->go, memory_order_acquire))
        ;
    while (!atomic_load_explicit(&mc->stop, memory_order_relaxed)) {
        for (int i = 0; i < 256; i++) {
            if (cnt_limits_check(mc->limits, &a, &ans) != CNT_STATUS_OK)
                abort();
            t->allowed += ans.state == CNT_CHECK_ALLOWED;
        }
        t->ops += 256;
    }
    return NULL;
}

/* Runs one case for the given seconds; returns checks per second. */
static double micro_run(uint8_t opcode, bool hot, double seconds,
                        unsigned nthreads)
{
    micro_case mc = { .opcode = opcode, .hot = hot };
    micro_thread th[MICRO_MAX_THREADS];
    uint64_t ops = 0;

    mc.limits = cnt_limits_new(NULL);
    if (mc.limits == NULL) {
        fprintf(stderr, "limits-micro: out of memory\n");
        exit(1);
    }
    atomic_init(&mc.go, false);
    atomic_init(&mc.stop, false);
    for (unsigned i = 0; i < nthreads; i++) {
        th[i] = (micro_thread){ .mc = &mc, .id = i };
        if (pthread_create(&th[i].tid, NULL, micro_main, &th[i]) != 0) {
            fprintf(stderr, "limits-micro: cannot start a thread\n");
            exit(1);
        }
    }
    double start = micro_now();
    atomic_store_explicit(&mc.go, true, memory_order_release);
    struct timespec ts = { (time_t)seconds,
                           (long)((seconds - (double)(time_t)seconds) *
                                  1e9) };
    nanosleep(&ts, NULL);
    atomic_store(&mc.stop, true);
    for (unsigned i = 0; i < nthreads; i++) {
        pthread_join(th[i].tid, NULL);
        ops += th[i].ops;
    }
    double elapsed = micro_now() - start;
    cnt_limits_free(mc.limits);
    return (double)ops / elapsed;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    unsigned nthreads = argc > 2 ? (unsigned)atoi(argv[2]) : 2;

    if (seconds <= 0 || nthreads < 1 || nthreads > MICRO_MAX_THREADS) {
        fprintf(stderr, "usage: limits-micro [seconds] [threads 1..%d]\n",
                MICRO_MAX_THREADS);
        return 2;
    }
    static const struct { uint8_t opcode; const char *name; } kinds[] = {
        { CNT_OP_GCRA_CHECK, "gcra" }, { CNT_OP_WINDOW_CHECK, "window" },
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        double spread = micro_run(kinds[k].opcode, false, seconds, nthreads);
        double hot = micro_run(kinds[k].opcode, true, seconds, nthreads);
        printf("%-6s threads %u  spread %.0f checks/s  hot %.0f checks/s  "
               "ratio %.2f\n", kinds[k].name, nthreads, spread, hot,
               hot / spread);
    }
    return 0;
}
