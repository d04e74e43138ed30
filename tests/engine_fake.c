/* engine_fake.c: the test doubles declared in engine_fake.h: a hand-moved
 * clock with both readings, and the linker-wrapped allocator that fails on
 * demand. Their state is atomic because GC and worker threads use them
 * while the test drives them. */
#include "config.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "tests/engine_fake.h"

/* The real functions behind the wrappers (the linker's names). */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void __real_free(void *p);

static _Atomic unsigned long fail_countdown;   /* 0: disarmed */
static _Atomic int fail_sticky;
static _Atomic int fail_tripped;               /* sticky failure under way */
static _Atomic bool fail_injected;
static _Atomic long live_allocations;
static _Atomic size_t last_malloc_size;

/* A monotonic start far from 0, so code that subtracts readings never
 * sees an unrealistic origin. */
#define CNT_FAKE_MONO_START UINT64_C(1000000000000)

/* Reads the fake wall clock. */
static uint64_t cnt_fake_clock_wall(void *ctx)
{
    cnt_fake_clock *f = ctx;

    return atomic_load(&f->wall_ms);
}

/* Reads the fake monotonic clock. */
static uint64_t cnt_fake_clock_mono(void *ctx)
{
    cnt_fake_clock *f = ctx;

    return atomic_load(&f->mono_ns);
}

/* Sets up f at wall time ms. */
void cnt_fake_clock_init(cnt_fake_clock *f, uint64_t ms)
{
    f->clock.wall_ms = cnt_fake_clock_wall;
    f->clock.mono_ns = cnt_fake_clock_mono;
    f->clock.ctx = f;
    atomic_store(&f->wall_ms, ms);
    atomic_store(&f->mono_ns, CNT_FAKE_MONO_START);
}

/* Steps the wall clock to ms. */
void cnt_fake_clock_set(cnt_fake_clock *f, uint64_t ms)
{
    atomic_store(&f->wall_ms, ms);
}

/* Moves both readings forward by ms. */
void cnt_fake_clock_advance(cnt_fake_clock *f, uint64_t ms)
{
    atomic_fetch_add(&f->wall_ms, ms);
    atomic_fetch_add(&f->mono_ns, ms * 1000000u);
}

/* Moves the monotonic reading forward by ns. */
void cnt_fake_clock_advance_ns(cnt_fake_clock *f, uint64_t ns)
{
    atomic_fetch_add(&f->mono_ns, ns);
}

/* Arms the failure countdown. */
void cnt_fake_alloc_fail_at(unsigned long n, int sticky)
{
    atomic_store(&fail_countdown, n);
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_tripped, 0);
    atomic_store(&fail_injected, false);
}

/* Whether an armed failure has happened. */
bool cnt_fake_alloc_injected(void)
{
    return atomic_load(&fail_injected);
}

/* Returns true when this allocation must fail. */
static bool cnt_fake_should_fail(void)
{
    if (atomic_load(&fail_tripped))
        return true;
    unsigned long n = atomic_load(&fail_countdown);
    if (n == 0)
        return false;
    if (n == 1) {
        atomic_store(&fail_countdown, 0);
        if (atomic_load(&fail_sticky))
            atomic_store(&fail_tripped, 1);
        atomic_store(&fail_injected, true);
        return true;
    }
    atomic_store(&fail_countdown, n - 1);
    return false;
}

/* Counts a block that was handed out. */
static void *cnt_fake_count(void *p)
{
    if (p != NULL)
        atomic_fetch_add(&live_allocations, 1);
    return p;
}

/* Live blocks. */
long cnt_fake_alloc_live(void)
{
    return atomic_load(&live_allocations);
}

/* Size of the latest malloc request. */
size_t cnt_fake_malloc_last_size(void)
{
    return atomic_load(&last_malloc_size);
}

/* malloc of the wrapped objects: fails when armed, else the real one. */
/* Fills a new block with a pattern that is no valid count, length or
 * pointer, so code that reads a field it never set fails its tests
 * instead of finding the zeros a fresh page happens to hold. */
static void *poison_new(void *p, size_t size)
{
    if (p != NULL)
        memset(p, 0xa5, size);
    return p;
}

void *__wrap_malloc(size_t size)
{
    atomic_store(&last_malloc_size, size);
    return cnt_fake_should_fail()
               ? NULL
               : cnt_fake_count(poison_new(__real_malloc(size), size));
}

/* calloc of the wrapped objects: fails when armed, else the real one. */
void *__wrap_calloc(size_t n, size_t size)
{
    return cnt_fake_should_fail() ? NULL
                                  : cnt_fake_count(__real_calloc(n, size));
}

/* realloc of the wrapped objects: a failure leaves p as it was, as a real
 * one does. Growing an existing block keeps the live count. */
void *__wrap_realloc(void *p, size_t size)
{
    if (p == NULL)
        return __wrap_malloc(size);
    if (size == 0) {
        /* glibc frees p then; count it as the free it is. */
        void *q = __real_realloc(p, 0);
        if (q == NULL)
            atomic_fetch_sub(&live_allocations, 1);
        return q;
    }
    return cnt_fake_should_fail() ? NULL : __real_realloc(p, size);
}

/* aligned_alloc of the wrapped objects: fails when armed. */
void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
    return cnt_fake_should_fail()
               ? NULL
               : cnt_fake_count(poison_new(
                     __real_aligned_alloc(alignment, size), size));
}

/* free of the wrapped objects, keeping the live count. */
void __wrap_free(void *p)
{
    if (p != NULL) {
        atomic_fetch_sub(&live_allocations, 1);
        /* A freed block read again reads the pattern, not stale values.
         * The first 16 bytes are left to glibc, whose free list keeps its
         * link and a key there: the key is how it detects a block freed
         * twice, which a pattern over it would hide. */
        size_t n = malloc_usable_size(p);
        if (n > 16)
            memset((uint8_t *)p + 16, 0x5a, n - 16);
    }
    __real_free(p);
}
