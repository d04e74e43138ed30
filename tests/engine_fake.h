/* engine_fake.h: test doubles for the engine's unit tests and the engine
 * fuzz target: a clock the test moves by hand (windows, deadlines and GC
 * without sleeping) and allocators that fail on demand (the out-of-memory
 * paths). */
#ifndef CNT_TESTS_ENGINE_FAKE_H
#define CNT_TESTS_ENGINE_FAKE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/clock.h"

/* A clock whose readings only the test changes; atomic so a GC or worker
 * thread may read it while the test moves it. */
typedef struct cnt_fake_clock {
    cnt_clock clock;
    _Atomic uint64_t wall_ms;
    _Atomic uint64_t mono_ns;
} cnt_fake_clock;

/* Sets up f with the wall clock at ms and the monotonic clock at an
 * arbitrary non-zero start; use &f->clock as the engine's clock. */
void cnt_fake_clock_init(cnt_fake_clock *f, uint64_t ms);

/* Sets the wall clock to ms, as a clock step would (back or forth); the
 * monotonic clock does not move. */
void cnt_fake_clock_set(cnt_fake_clock *f, uint64_t ms);

/* Lets ms milliseconds pass: both readings move forward. */
void cnt_fake_clock_advance(cnt_fake_clock *f, uint64_t ms);

/* Lets ns nanoseconds pass on the monotonic clock alone (sub-millisecond
 * steps; the wall clock stays). */
void cnt_fake_clock_advance_ns(cnt_fake_clock *f, uint64_t ns);

/* Makes allocation number n from now (1 = the next) fail, and every later
 * one while sticky is set; n = 0 disarms. Counts malloc and calloc. */
void cnt_fake_alloc_fail_at(unsigned long n, int sticky);

/* Allocations made through the fakes and not yet freed. */
long cnt_fake_alloc_live(void);

/* Bytes asked of the latest cnt_fake_malloc call (0 before any): what a
 * table node really requests from the allocator. */
size_t cnt_fake_malloc_last_size(void);

/* malloc/calloc/free that obey cnt_fake_alloc_fail_at and count. */
void *cnt_fake_malloc(size_t size);
void *cnt_fake_calloc(size_t n, size_t size);
void cnt_fake_free(void *ptr);

/* A name argument from a string literal: pointer and length. */
#define CNT_NAME(s) (const uint8_t *)(s), (uint16_t)(sizeof(s) - 1)

#endif
