/* test_outbuf.c: the output buffer on its own: append and send order,
 * room made by dropping sent bytes before growing, shrinking when idle,
 * the watermark and the per-turn budget, and failed growth. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/server/outbuf.h"
#include "tests/engine_fake.h"

/* Appends n bytes counting up from first (mod 256). */
static void put(cnt_outbuf *o, size_t n, uint8_t first)
{
    uint8_t *p = cnt_outbuf_reserve(o, n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(first + i);
    cnt_outbuf_commit(o, n);
}

/* Checks the unsent bytes are n bytes counting up from first. */
static void check(cnt_outbuf *o, size_t n, uint8_t first)
{
    assert_int_equal(cnt_outbuf_pending(o), n);
    const uint8_t *p = cnt_outbuf_data(o);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(p[i], (uint8_t)(first + i));
}

static void test_append_and_consume(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    assert_int_equal(o.cap, 64);
    assert_int_equal(cnt_outbuf_pending(&o), 0);
    assert_false(cnt_outbuf_full(&o));
    put(&o, 10, 0);
    put(&o, 20, 10);
    check(&o, 30, 0);
    /* A partial send leaves the rest in order. */
    cnt_outbuf_consume(&o, 7);
    check(&o, 23, 7);
    assert_int_equal(o.head, 7);
    /* Sending the rest empties it back to the front. */
    cnt_outbuf_consume(&o, 23);
    assert_int_equal(cnt_outbuf_pending(&o), 0);
    assert_int_equal(o.head, 0);
    assert_int_equal(o.len, 0);
    assert_int_equal(o.total, 30);
    cnt_outbuf_destroy(&o);
}

static void test_room_before_growth(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    put(&o, 60, 0);
    cnt_outbuf_consume(&o, 40);
    /* 20 unsent at 40..60: 30 more fit once the sent bytes are dropped,
     * without any allocation (an armed failure would show). */
    cnt_fake_alloc_fail_at(1, 0);
    put(&o, 30, 60);
    assert_false(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    assert_int_equal(o.cap, 64);
    assert_int_equal(o.head, 0);
    check(&o, 50, 40);
    cnt_outbuf_destroy(&o);
}

static void test_growth_and_shrink(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    put(&o, 50, 0);
    cnt_outbuf_consume(&o, 10);
    /* Doubling until it fits: 40 unsent + 300 needs 512. */
    put(&o, 300, 50);
    assert_int_equal(o.cap, 512);
    check(&o, 340, 10);
    /* Not shrunk while bytes are pending. */
    cnt_outbuf_shrink(&o);
    assert_int_equal(o.cap, 512);
    cnt_outbuf_consume(&o, 340);
    cnt_outbuf_shrink(&o);
    assert_int_equal(o.cap, 64);
    /* Up to four times the initial size is kept (no churn). */
    put(&o, 200, 0);
    assert_int_equal(o.cap, 256);
    cnt_outbuf_consume(&o, 200);
    cnt_outbuf_shrink(&o);
    assert_int_equal(o.cap, 256);
    put(&o, 5, 9);
    check(&o, 5, 9);
    cnt_outbuf_destroy(&o);
}

/* Making room moves the unsent bytes to the front first, even when the
 * room was already there; a second time there is nothing to move. */
static void test_compact(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    put(&o, 30, 0);
    cnt_outbuf_consume(&o, 12);
    assert_non_null(cnt_outbuf_grow(&o, 1));
    assert_int_equal(o.head, 0);
    assert_int_equal(o.cap, 64);
    check(&o, 18, 12);
    assert_non_null(cnt_outbuf_grow(&o, 1));    /* nothing to move */
    assert_int_equal(o.head, 0);
    check(&o, 18, 12);
    cnt_outbuf_destroy(&o);
}

static void test_watermark(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    assert_int_equal(o.high, CNT_OUTBUF_HIGH);
    o.high = 100;
    put(&o, 99, 0);
    assert_false(cnt_outbuf_above_high(&o));
    assert_false(cnt_outbuf_full(&o));
    put(&o, 1, 99);
    assert_true(cnt_outbuf_above_high(&o));
    assert_true(cnt_outbuf_full(&o));
    /* Sending brings it back under. */
    cnt_outbuf_consume(&o, 1);
    assert_false(cnt_outbuf_full(&o));
    cnt_outbuf_destroy(&o);
}

static void test_turn_budget(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    /* No turn begun: no budget limit. */
    put(&o, 1000, 0);
    assert_false(cnt_outbuf_turn_over(&o));
    cnt_outbuf_begin_turn(&o, 50);
    put(&o, 49, 0);
    assert_false(cnt_outbuf_turn_over(&o));
    /* Sending does not give budget back: it counts production. */
    cnt_outbuf_consume(&o, 1049);
    put(&o, 1, 0);
    assert_true(cnt_outbuf_turn_over(&o));
    assert_true(cnt_outbuf_full(&o));
    assert_false(cnt_outbuf_above_high(&o));
    /* A new turn starts from what has been produced so far. */
    cnt_outbuf_begin_turn(&o, 10);
    assert_false(cnt_outbuf_full(&o));
    put(&o, 10, 0);
    assert_true(cnt_outbuf_turn_over(&o));
    /* A budget past the counter's range means no limit, not a wrap. */
    cnt_outbuf_begin_turn(&o, SIZE_MAX);
    put(&o, 10, 0);
    assert_false(cnt_outbuf_turn_over(&o));
    cnt_outbuf_destroy(&o);
}

/* Spending budget without output: it ends the turn as the same bytes of
 * output would, never reaches back before what was produced, and changes
 * nothing without a budget or once the turn is over (no wrap that would
 * give an unlimited turn back). */
static void test_turn_spend(void **state)
{
    cnt_outbuf o;
    (void)state;
    assert_true(cnt_outbuf_init(&o, 64));
    cnt_outbuf_spend(&o, 4096);
    put(&o, 10, 0);
    assert_false(cnt_outbuf_turn_over(&o));
    cnt_outbuf_begin_turn(&o, 100);
    cnt_outbuf_spend(&o, 60);
    put(&o, 39, 0);
    assert_false(cnt_outbuf_turn_over(&o));
    put(&o, 1, 0);
    assert_true(cnt_outbuf_turn_over(&o));
    cnt_outbuf_begin_turn(&o, 100);
    put(&o, 5, 0);
    cnt_outbuf_spend(&o, 4096);
    assert_true(cnt_outbuf_turn_over(&o));
    assert_true(o.turn_end == o.total);
    /* A turn produced past its end, then spent on: still over. */
    put(&o, 50, 0);
    cnt_outbuf_spend(&o, 4096);
    assert_true(cnt_outbuf_turn_over(&o));
    assert_true(o.turn_end < o.total);
    cnt_outbuf_destroy(&o);
}

static void test_out_of_memory(void **state)
{
    cnt_outbuf o;
    (void)state;
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_outbuf_init(&o, 64));
    assert_true(cnt_outbuf_init(&o, 64));
    put(&o, 60, 0);
    cnt_outbuf_consume(&o, 20);
    /* Growth fails: NULL, and the unsent bytes are all still there. */
    cnt_fake_alloc_fail_at(1, 0);
    assert_null(cnt_outbuf_reserve(&o, 100));
    assert_int_equal(o.cap, 64);
    check(&o, 40, 20);
    /* And the next try succeeds. */
    put(&o, 300, 60);
    assert_int_equal(o.cap, 512);
    check(&o, 340, 20);
    /* A failed shrink keeps the bigger buffer. */
    cnt_outbuf_consume(&o, 340);
    cnt_fake_alloc_fail_at(1, 0);
    cnt_outbuf_shrink(&o);
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(o.cap, 512);
    put(&o, 3, 1);
    check(&o, 3, 1);
    cnt_outbuf_destroy(&o);
}

/* Runs the output buffer tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_consume),
        cmocka_unit_test(test_room_before_growth),
        cmocka_unit_test(test_growth_and_shrink),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_watermark),
        cmocka_unit_test(test_turn_budget),
        cmocka_unit_test(test_turn_spend),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
