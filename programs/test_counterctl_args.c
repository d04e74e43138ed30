/* test_counterctl_args.c: cmocka tests of counterctl's argument parsers
 * (counterctl_args.c): durations with units, kept as written, and the
 * refusals (a bare number, an unknown unit, too large) that counterctl
 * turns into usage errors naming the argument. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "programs/counterctl.h"

/* One duration as written and what it parses to. */
struct duration_row {
    const char *text;
    ctl_duration result;
    uint64_t value;
    uint8_t unit;
};

static const struct duration_row duration_rows[] = {
    { "10ns", CTL_DURATION_OK, 10, CNT_UNIT_NS },
    { "100us", CTL_DURATION_OK, 100, CNT_UNIT_US },
    { "250ms", CTL_DURATION_OK, 250, CNT_UNIT_MS },
    { "3s", CTL_DURATION_OK, 3, CNT_UNIT_S },
    { "5min", CTL_DURATION_OK, 5, CNT_UNIT_MIN },
    { "2h", CTL_DURATION_OK, 2, CNT_UNIT_H },
    { "0s", CTL_DURATION_OK, 0, CNT_UNIT_S },
    { "007ms", CTL_DURATION_OK, 7, CNT_UNIT_MS },
    { "18446744073709551615ns", CTL_DURATION_OK, UINT64_MAX, CNT_UNIT_NS },
    { "18446744073709551616ns", CTL_DURATION_RANGE, 0, 0 },
    { "99999999999999999999999h", CTL_DURATION_RANGE, 0, 0 },
    /* A bare number: the unit is never guessed. */
    { "3", CTL_DURATION_NO_UNIT, 0, 0 },
    { "0", CTL_DURATION_NO_UNIT, 0, 0 },
    { "3600", CTL_DURATION_NO_UNIT, 0, 0 },
    { "", CTL_DURATION_BAD, 0, 0 },
    { "s", CTL_DURATION_BAD, 0, 0 },
    { "3parsecs", CTL_DURATION_BAD, 0, 0 },
    { "3S", CTL_DURATION_BAD, 0, 0 },
    { "3 s", CTL_DURATION_BAD, 0, 0 },
    { "3m", CTL_DURATION_BAD, 0, 0 },
    { "3mins", CTL_DURATION_BAD, 0, 0 },
    { "3sec", CTL_DURATION_BAD, 0, 0 },
    { "1.5s", CTL_DURATION_BAD, 0, 0 },
    { "-3s", CTL_DURATION_BAD, 0, 0 },
    { "+3s", CTL_DURATION_BAD, 0, 0 },
    { " 3s", CTL_DURATION_BAD, 0, 0 },
    { "3s ", CTL_DURATION_BAD, 0, 0 },
    { "3hs", CTL_DURATION_BAD, 0, 0 },
    { "0x10s", CTL_DURATION_BAD, 0, 0 },
};

/* Every row parses as listed; a refusal leaves the outputs alone. */
static void test_parse_duration(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof duration_rows / sizeof duration_rows[0];
         i++) {
        const struct duration_row *r = &duration_rows[i];
        uint64_t value = 12345;
        uint8_t unit = 99;

        print_message("%s\n", r->text);
        assert_int_equal(ctl_parse_duration(r->text, &value, &unit),
                         r->result);
        if (r->result == CTL_DURATION_OK) {
            assert_true(value == r->value);
            assert_int_equal(unit, r->unit);
        } else {
            assert_true(value == 12345);
            assert_int_equal(unit, 99);
        }
    }
}

/* Nanoseconds: exact up to UINT64_MAX, refused beyond it. */
static void test_duration_ns(void **state)
{
    uint64_t ns = 0;

    (void)state;
    assert_true(ctl_duration_ns(250, CNT_UNIT_MS, &ns));
    assert_true(ns == 250000000u);
    assert_true(ctl_duration_ns(2, CNT_UNIT_H, &ns));
    assert_true(ns == 7200000000000u);
    assert_true(ctl_duration_ns(0, CNT_UNIT_MIN, &ns));
    assert_true(ns == 0);
    assert_true(ctl_duration_ns(UINT64_MAX, CNT_UNIT_NS, &ns));
    assert_true(ns == UINT64_MAX);
    /* The largest whole number of hours, and one more. */
    assert_true(ctl_duration_ns(UINT64_MAX / 3600000000000u, CNT_UNIT_H,
                                &ns));
    assert_true(ns == UINT64_MAX / 3600000000000u * 3600000000000u);
    ns = 7;
    assert_false(ctl_duration_ns(UINT64_MAX / 3600000000000u + 1,
                                 CNT_UNIT_H, &ns));
    assert_false(ctl_duration_ns(UINT64_MAX / 1000 + 1, CNT_UNIT_US, &ns));
    assert_false(ctl_duration_ns(1, CNT_UNIT_MAX + 1, &ns));
    assert_true(ns == 7);
}

/* u64: digits only, the whole range, nothing beyond it. */
static void test_parse_u64(void **state)
{
    uint64_t v = 0;

    (void)state;
    assert_true(ctl_parse_u64("0", &v));
    assert_true(v == 0);
    assert_true(ctl_parse_u64("18446744073709551615", &v));
    assert_true(v == UINT64_MAX);
    assert_false(ctl_parse_u64("18446744073709551616", &v));
    assert_false(ctl_parse_u64("", &v));
    assert_false(ctl_parse_u64("-1", &v));
    assert_false(ctl_parse_u64("+1", &v));
    assert_false(ctl_parse_u64(" 1", &v));
    assert_false(ctl_parse_u64("1 ", &v));
    assert_false(ctl_parse_u64("1s", &v));
    assert_true(v == UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_duration_ns),
        cmocka_unit_test(test_parse_u64),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
