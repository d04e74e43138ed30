/* engine_fake.h: test doubles for the engine's unit tests and the engine
 * fuzz target: a clock the test moves by hand (windows, deadlines and GC
 * without sleeping) and the one way tests make allocations fail.
 *
 * Allocation failures: a program that links engine_fake.c must be linked
 * with -Wl,--wrap for malloc, calloc, realloc, aligned_alloc and free
 * (FAKE_ALLOC_WRAP in tests/local.mk). The linker then sends every
 * call that the project's own statically linked objects (the engine
 * layers, the test itself) make to the wrappers here, and none that
 * libc, libevent or cmocka make internally. That one mechanism reaches
 * every allocation site of every layer (table nodes, ledgers, connections
 * and their buffers) without a hook in the production code, which is why
 * it was chosen over allocator pointers passed through each layer's
 * configuration. The wrappers count allocations while armed and fail the
 * chosen one; they also keep the count of live blocks, fill new blocks
 * from malloc and aligned_alloc with 0xa5 and freed ones (past the first
 * 16 bytes, which glibc uses) with 0x5a, so a field left unset or a block
 * read after free shows in the results. */
#ifndef CNT_TESTS_ENGINE_FAKE_H
#define CNT_TESTS_ENGINE_FAKE_H

#include <stdatomic.h>
#include <stdbool.h>
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
 * one while sticky is set; n = 0 disarms. Counts malloc, calloc, realloc
 * and aligned_alloc of the wrapped objects. */
void cnt_fake_alloc_fail_at(unsigned long n, int sticky);

/* Whether an allocation has failed on purpose since the last arming. */
bool cnt_fake_alloc_injected(void);

/* Blocks the wrapped objects allocated and have not freed yet. Compare
 * two readings: the test's own blocks count too. */
long cnt_fake_alloc_live(void);

/* Bytes asked of the latest malloc call (0 before any): what a map node
 * really requests from the allocator. */
size_t cnt_fake_malloc_last_size(void);

/* The linker's wrappers (the __wrap_ and __real_ names are its
 * convention). */
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
void __wrap_free(void *p);

/* A name argument from a string literal: pointer and length. */
#define CNT_NAME(s) (const uint8_t *)(s), (uint16_t)(sizeof(s) - 1)

#endif
