/* test_hist.c: cmocka tests of counter-bench's latency histogram: exact
 * small values, the 1/32 relative error bound of the log buckets, merging,
 * and quantiles never reported above the largest recorded value. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "bench/hist.h"

/* Values below 32 have a bucket each, so every quantile is exact. */
static void test_small_values_exact(void **state)
{
    (void)state;
    static cnt_hist h;
    static const struct { uint64_t value; } rows[] = {
        { 0 }, { 1 }, { 7 }, { 31 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        cnt_hist_reset(&h);
        for (int n = 0; n < 3; n++)
            cnt_hist_record(&h, rows[i].value);
        assert_int_equal(cnt_hist_quantile(&h, 0.5), rows[i].value);
        assert_int_equal(cnt_hist_quantile(&h, 0.999), rows[i].value);
        assert_int_equal(h.count, 3);
    }
}

/* An empty histogram answers 0 for every quantile. */
static void test_empty(void **state)
{
    (void)state;
    static cnt_hist h;
    cnt_hist_reset(&h);
    assert_int_equal(cnt_hist_quantile(&h, 0.5), 0);
    assert_int_equal(cnt_hist_quantile(&h, 1.0), 0);
}

/* Uniform 1..100000: each quantile within 1/32 of the true rank value. */
static void test_uniform_quantiles(void **state)
{
    (void)state;
    static cnt_hist h;
    cnt_hist_reset(&h);
    for (uint64_t v = 1; v <= 100000; v++)
        cnt_hist_record(&h, v);
    static const struct { double q; uint64_t want; } rows[] = {
        { 0.50, 50000 },    /* p50 */
        { 0.99, 99000 },    /* p99 */
        { 0.999, 99900 },   /* p99.9 */
        { 1.0, 100000 },    /* max */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint64_t got = cnt_hist_quantile(&h, rows[i].q);
        uint64_t err = got > rows[i].want ? got - rows[i].want
                                          : rows[i].want - got;
        assert_true(err * 32 <= rows[i].want);
        assert_true(got <= h.max);
    }
}

/* Huge values (seconds in ns) land in the right power of two. */
static void test_large_values(void **state)
{
    (void)state;
    static cnt_hist h;
    cnt_hist_reset(&h);
    cnt_hist_record(&h, 1000000000000ull);     /* 1000 s in ns */
    cnt_hist_record(&h, UINT64_MAX);
    uint64_t p50 = cnt_hist_quantile(&h, 0.5);
    uint64_t want = 1000000000000ull;
    uint64_t err = p50 > want ? p50 - want : want - p50;
    assert_true(err <= want / 32);
    assert_int_equal(cnt_hist_quantile(&h, 1.0), UINT64_MAX);
}

/* Merging two halves equals recording everything in one. */
static void test_merge(void **state)
{
    (void)state;
    static cnt_hist a, b, all;
    cnt_hist_reset(&a);
    cnt_hist_reset(&b);
    cnt_hist_reset(&all);
    for (uint64_t v = 1; v <= 1000; v++) {
        cnt_hist_record(v % 2 ? &a : &b, v * 37);
        cnt_hist_record(&all, v * 37);
    }
    cnt_hist_merge(&a, &b);
    assert_int_equal(a.count, all.count);
    assert_int_equal(a.max, all.max);
    assert_int_equal(cnt_hist_quantile(&a, 0.99), cnt_hist_quantile(&all, 0.99));
    assert_int_equal(cnt_hist_quantile(&a, 0.5), cnt_hist_quantile(&all, 0.5));
    assert_int_equal(a.sum, all.sum);
}

/* The mean is exact (the sum, not the buckets), and 0 when empty; one
 * large value moves it as it would move a rate. */
static void test_mean(void **state)
{
    (void)state;
    static cnt_hist h;
    cnt_hist_reset(&h);
    assert_true(cnt_hist_mean(&h) == 0);
    for (uint64_t v = 1; v <= 99; v++)
        cnt_hist_record(&h, 1000);
    cnt_hist_record(&h, 100001000);
    assert_true(cnt_hist_mean(&h) == 1001000.0);
    assert_int_equal(cnt_hist_quantile(&h, 0.5) / 100, 10);
}

/* Runs the histogram tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_values_exact),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_uniform_quantiles),
        cmocka_unit_test(test_large_values),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
