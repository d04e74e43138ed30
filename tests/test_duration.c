/* test_duration.c: unit tests of protocol/duration.c: every case of
 * tests/durations.txt (the table the Python client's test reads too, so
 * the two parsers cannot drift apart), the written unit, the wire unit a
 * value is sent in, and the messages. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/duration.h"
#include "protocol/wire.h"

#ifndef DURATIONS_FILE
#error "DURATIONS_FILE must name tests/durations.txt"
#endif

/* The refusal a case's "!kind" names. */
static cnt_duration_status kind_status(const char *kind)
{
    static const struct {
        const char *name;
        cnt_duration_status st;
    } kinds[] = {
        { "syntax", CNT_DURATION_SYNTAX }, { "negative", CNT_DURATION_NEGATIVE },
        { "unit", CNT_DURATION_UNIT },     { "case", CNT_DURATION_CASE },
        { "fine", CNT_DURATION_FINE },     { "range", CNT_DURATION_RANGE },
    };

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind, kinds[i].name) == 0)
            return kinds[i].st;
    fail_msg("unknown kind \"%s\" in " DURATIONS_FILE, kind);
    return CNT_DURATION_OK;
}

/* Every case of the shared table. */
static void test_table(void **state)
{
    FILE *f = fopen(DURATIONS_FILE, "r");
    char line[512];
    unsigned cases = 0, refusals = 0, lineno = 0;

    (void)state;
    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL) {
        char *q, *want;
        size_t len;
        cnt_duration d = { 0, 0, false };
        cnt_duration_status st;

        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        assert_int_equal(line[0], '"');
        q = strchr(line + 1, '"');
        assert_non_null(q);
        len = (size_t)(q - (line + 1));
        want = q + 1 + strspn(q + 1, " \t");
        st = cnt_duration_parse(line + 1, len, &d);
        cases++;
        if (want[0] == '!') {
            refusals++;
            if (st != kind_status(want + 1))
                fail_msg("line %u: \"%.*s\" gave status %d, not %s", lineno,
                         (int)len, line + 1, (int)st, want);
        } else {
            char *end;
            unsigned long long ns = strtoull(want, &end, 10);

            assert_int_equal(*end, '\0');
            if (st != CNT_DURATION_OK || d.ns != ns)
                fail_msg("line %u: \"%.*s\" gave status %d, %" PRIu64
                         " ns, not %s ns", lineno, (int)len, line + 1,
                         (int)st, d.ns, want);
        }
    }
    fclose(f);
    /* The file is read whole: a truncated table would pass silently. */
    assert_true(cases >= 60);
    assert_true(refusals >= 30);
}

/* The unit a value was written in, and whether it had one. */
static void test_written_unit(void **state)
{
    cnt_duration d;

    (void)state;
    assert_int_equal(cnt_duration_parse("30", 2, &d), CNT_DURATION_OK);
    assert_true(d.bare);
    assert_int_equal(d.unit, CNT_UNIT_S);
    assert_int_equal(cnt_duration_parse("2m", 2, &d), CNT_DURATION_OK);
    assert_false(d.bare);
    assert_int_equal(d.unit, CNT_UNIT_MIN);
    assert_int_equal(cnt_duration_parse("2min", 4, &d), CNT_DURATION_OK);
    assert_int_equal(d.unit, CNT_UNIT_MIN);
    assert_int_equal(cnt_duration_parse("1us", 3, &d), CNT_DURATION_OK);
    assert_int_equal(d.unit, CNT_UNIT_US);
    /* The length is what is parsed: no terminator is looked for. */
    assert_int_equal(cnt_duration_parse("250msXYZ", 5, &d), CNT_DURATION_OK);
    assert_true(d.ns == 250000000u);
    /* A refusal leaves *d alone. */
    d.ns = 77;
    assert_int_equal(cnt_duration_parse("5d", 2, &d), CNT_DURATION_UNIT);
    assert_true(d.ns == 77);
}

/* The wire unit a value goes out in: the written one when whole there,
 * else the largest smaller one in which it is. */
static void test_in_unit(void **state)
{
    static const struct {
        const char *in;
        uint64_t value;
        uint8_t unit;
    } cases[] = {
        { "2h", 2, CNT_UNIT_H },        { "1.5h", 90, CNT_UNIT_MIN },
        { "2m", 2, CNT_UNIT_MIN },      { "0.5min", 30, CNT_UNIT_S },
        { "90s", 90, CNT_UNIT_S },      { "1.5s", 1500, CNT_UNIT_MS },
        { "30", 30, CNT_UNIT_S },       { "0.5ms", 500, CNT_UNIT_US },
        { "1.000000001s", 1000000001, CNT_UNIT_NS },
        { "0h", 0, CNT_UNIT_H },        { "7ns", 7, CNT_UNIT_NS },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cnt_duration d;
        uint64_t value;
        uint8_t unit;

        assert_int_equal(cnt_duration_parse(cases[i].in, strlen(cases[i].in),
                                            &d), CNT_DURATION_OK);
        cnt_duration_in_unit(&d, &value, &unit);
        if (value != cases[i].value || unit != cases[i].unit)
            fail_msg("\"%s\" went out as %" PRIu64 " of unit %u", cases[i].in,
                     value, unit);
    }
}

/* Every refusal has a problem and a hint that shows the right form. */
static void test_messages(void **state)
{
    (void)state;
    assert_string_equal(cnt_duration_problem(CNT_DURATION_OK), "");
    assert_string_equal(cnt_duration_problem(CNT_DURATION_SYNTAX),
                        "is not a duration");
    assert_string_equal(cnt_duration_hint(CNT_DURATION_SYNTAX),
                        "write a number and a unit: 250ms, 3s, 5min, 2h");
    assert_string_equal(cnt_duration_problem(CNT_DURATION_CASE),
                        "has its unit in capitals");
    assert_string_equal(cnt_duration_hint(CNT_DURATION_CASE),
                        "units are lower case: ns, us, ms, s, m or min, h");
    assert_non_null(strstr(cnt_duration_hint(CNT_DURATION_UNIT), "5min"));
    assert_non_null(strstr(cnt_duration_hint(CNT_DURATION_RANGE), "584"));
    for (int st = CNT_DURATION_SYNTAX; st <= CNT_DURATION_RANGE; st++) {
        assert_true(strlen(cnt_duration_problem((cnt_duration_status)st)) > 0);
        assert_true(strlen(cnt_duration_hint((cnt_duration_status)st)) > 0);
    }
}

/* Runs the duration tests. */
int main(void)
{
    const struct CMUnitTest duration_tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_written_unit),
        cmocka_unit_test(test_in_unit),
        cmocka_unit_test(test_messages),
    };

    return cmocka_run_group_tests_name("duration", duration_tests, NULL,
                                       NULL);
}
