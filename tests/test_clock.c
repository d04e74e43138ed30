/* test_clock.c: the clock interface: the system clock's two readings are
 * in the units they claim (wall ms since the epoch, monotonic ns that never
 * go back), both reach the callbacks with their context, and the fake
 * clock the other tests use moves each reading as documented. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "engine/core/clock.h"
#include "tests/engine_fake.h"

/* The wall reading is the epoch time in ms: between two time() calls
 * around it (the coarse clock may lag a tick, never a second). */
static void test_system_wall_ms(void **state)
{
    (void)state;
    time_t before = time(NULL);
    uint64_t ms = cnt_clock_wall_ms(&cnt_clock_system);
    time_t after = time(NULL);

    assert_true(ms >= ((uint64_t)before - 1) * 1000u);
    assert_true(ms < ((uint64_t)after + 1) * 1000u);
}

/* The monotonic reading never goes back and counts nanoseconds: after
 * sleeping at least 2 ms it has moved by at least 2,000,000. */
static void test_system_mono_ns(void **state)
{
    (void)state;
    uint64_t prev = cnt_clock_mono_ns(&cnt_clock_system);

    for (int i = 0; i < 1000; i++) {
        uint64_t now = cnt_clock_mono_ns(&cnt_clock_system);
        assert_true(now >= prev);
        prev = now;
    }
    struct timespec pause = { 0, 2 * 1000 * 1000 };
    uint64_t start = cnt_clock_mono_ns(&cnt_clock_system);
    while (nanosleep(&pause, &pause) != 0)
        ;
    assert_true(cnt_clock_mono_ns(&cnt_clock_system) - start >= 2000000u);
}

/* A clock of the test's own: each reading calls its callback with ctx. */
static uint64_t own_wall(void *ctx)
{
    return *(const uint64_t *)ctx + 1;
}

static uint64_t own_mono(void *ctx)
{
    return *(const uint64_t *)ctx + 2;
}

static void test_custom_clock_and_read(void **state)
{
    (void)state;
    uint64_t base = 40;
    cnt_clock own = { own_wall, own_mono, &base };
    cnt_clock_now now;

    assert_int_equal(cnt_clock_wall_ms(&own), 41);
    assert_int_equal(cnt_clock_mono_ns(&own), 42);
    cnt_clock_read(&own, &now);
    assert_int_equal(now.wall_ms, 41);
    assert_int_equal(now.mono_ns, 42);
}

/* The fake clock: advance moves both readings (ms and the same span in
 * ns), a step of the wall clock leaves the monotonic one alone (back or
 * forth), and advance_ns moves only the monotonic one. */
static void test_fake_clock(void **state)
{
    (void)state;
    cnt_fake_clock f;

    cnt_fake_clock_init(&f, 5000);
    uint64_t mono0 = cnt_clock_mono_ns(&f.clock);
    assert_int_equal(cnt_clock_wall_ms(&f.clock), 5000);
    assert_true(mono0 > 0);

    cnt_fake_clock_advance(&f, 250);
    assert_int_equal(cnt_clock_wall_ms(&f.clock), 5250);
    assert_int_equal(cnt_clock_mono_ns(&f.clock), mono0 + 250000000u);

    cnt_fake_clock_set(&f, 1000);               /* stepped back */
    assert_int_equal(cnt_clock_wall_ms(&f.clock), 1000);
    assert_int_equal(cnt_clock_mono_ns(&f.clock), mono0 + 250000000u);
    cnt_fake_clock_set(&f, 9000);               /* and forth */
    assert_int_equal(cnt_clock_mono_ns(&f.clock), mono0 + 250000000u);

    cnt_fake_clock_advance_ns(&f, 7);
    assert_int_equal(cnt_clock_wall_ms(&f.clock), 9000);
    assert_int_equal(cnt_clock_mono_ns(&f.clock), mono0 + 250000007u);

    cnt_clock_now now;
    cnt_clock_read(&f.clock, &now);
    assert_int_equal(now.wall_ms, 9000);
    assert_int_equal(now.mono_ns, mono0 + 250000007u);
}

/* Runs the clock tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_wall_ms),
        cmocka_unit_test(test_system_mono_ns),
        cmocka_unit_test(test_custom_clock_and_read),
        cmocka_unit_test(test_fake_clock),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
