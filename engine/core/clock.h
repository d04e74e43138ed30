/* clock.h: the engine's one time source, injectable so that tests move time
 * by hand. Two readings: the wall clock (ms since the epoch) for what must
 * line up with calendar time (the epoch-aligned consumption windows), and
 * a monotonic, fine-grained one (ns) for deadlines and durations, which
 * clock steps must not disturb. */
#ifndef CNT_ENGINE_CLOCK_H
#define CNT_ENGINE_CLOCK_H

#include <stdint.h>

/* A clock: two readings of one context. Both must be callable from any
 * thread. */
typedef struct cnt_clock {
    uint64_t (*wall_ms)(void *ctx);     /* ms since the Unix epoch */
    uint64_t (*mono_ns)(void *ctx);     /* ns, never going back */
    void *ctx;
} cnt_clock;

/* Both readings taken together, for code that compares many things with
 * one "now" (a GC slice judges every node against the same instant). */
typedef struct cnt_clock_now {
    uint64_t wall_ms;
    uint64_t mono_ns;
} cnt_clock_now;

/* The real clocks: CLOCK_REALTIME_COARSE where the kernel has it (windows
 * are whole seconds) and CLOCK_MONOTONIC. */
extern const cnt_clock cnt_clock_system;

/* Returns the wall clock in milliseconds since the epoch. */
static inline uint64_t cnt_clock_wall_ms(const cnt_clock *c)
{
    return c->wall_ms(c->ctx);
}

/* Returns the monotonic clock in nanoseconds. */
static inline uint64_t cnt_clock_mono_ns(const cnt_clock *c)
{
    return c->mono_ns(c->ctx);
}

/* Fills now with both readings of c. */
static inline void cnt_clock_read(const cnt_clock *c, cnt_clock_now *now)
{
    now->wall_ms = cnt_clock_wall_ms(c);
    now->mono_ns = cnt_clock_mono_ns(c);
}

#endif
