/* clock.h: the engine's one time source. Injectable so tests can move time
 * (windows, GC) and later leases can share it. */
#ifndef CNT_ENGINE_CLOCK_H
#define CNT_ENGINE_CLOCK_H

#include <stdint.h>

/* Milliseconds since the Unix epoch, as the clock sees it. */
typedef uint64_t (*cnt_clock_fn)(void *ctx);

typedef struct cnt_clock {
    cnt_clock_fn now_ms;
    void *ctx;
} cnt_clock;

/* The real wall clock (CLOCK_REALTIME_COARSE where the kernel has it):
 * windows are epoch-aligned. */
extern const cnt_clock cnt_clock_system;

/* Returns the clock's current time in milliseconds since the epoch. */
static inline uint64_t cnt_clock_now_ms(const cnt_clock *c)
{
    return c->now_ms(c->ctx);
}

/* Returns a monotonic time in microseconds, for measuring elapsed time. */
uint64_t cnt_monotonic_us(void);

#endif
