/* engine_fake.h: test doubles for the engine's unit tests: a clock the test
 * moves by hand (windows and GC without sleeping) and allocators that fail
 * on demand (the out-of-memory paths). */
#ifndef CNT_TESTS_ENGINE_FAKE_H
#define CNT_TESTS_ENGINE_FAKE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/clock.h"

/* A clock whose time (ms since the epoch) only the test changes; atomic so
 * a GC thread may read it while the test moves it. */
typedef struct cnt_fake_clock {
    cnt_clock clock;
    _Atomic uint64_t ms;
} cnt_fake_clock;

/* Sets up f at time ms; use &f->clock as the table's clock. */
void cnt_fake_clock_init(cnt_fake_clock *f, uint64_t ms);

/* Moves f to time ms. */
void cnt_fake_clock_set(cnt_fake_clock *f, uint64_t ms);

/* Moves f forward by ms. */
void cnt_fake_clock_advance(cnt_fake_clock *f, uint64_t ms);

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
