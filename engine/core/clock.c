/* clock.c: the real clocks behind engine/core/clock.h. The wall clock
 * drives the epoch-aligned consumption windows; the monotonic one measures
 * durations and deadlines (GC sweeps), so clock steps never distort them. */
#include "config.h"

#include <time.h>

#include "engine/core/clock.h"

/* Reads the wall clock in milliseconds; ctx is unused. The table reads it
 * on every Acquire and Release, and windows are whole seconds, so the
 * coarse clock (one tick, a few ms, behind) is plenty; it costs no TSC
 * read, which in a VM was the largest single user-space cost per request
 * in the profile of 100,000-key runs. Kernels without it get the precise
 * clock. */
static uint64_t clock_system_wall_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
#ifdef CLOCK_REALTIME_COARSE
    if (clock_gettime(CLOCK_REALTIME_COARSE, &ts) != 0)
#endif
        clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Reads CLOCK_MONOTONIC in nanoseconds; ctx is unused. The precise clock:
 * deadlines and durations want resolution, and nothing reads it per
 * request. */
static uint64_t clock_system_mono_ns(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const cnt_clock cnt_clock_system = {
    clock_system_wall_ms, clock_system_mono_ns, NULL
};
