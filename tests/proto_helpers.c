/* proto_helpers.c: helpers shared by the protocol unit tests: hex fixtures,
 * byte comparison, the per-row test runner, and the two encoders only the
 * tests use (built on the library's own encoders). */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/response.h"
#include "tests/proto_helpers.h"

/* Converts a hex fixture (spaces allowed) into bytes; returns the count. */
size_t hex_to_bytes(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int half = -1;

    for (const char *p = hex; *p != '\0'; p++) {
        int v = -1;

        if (*p == ' ')
            continue;
        if (*p >= '0' && *p <= '9')
            v = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            v = *p - 'a' + 10;
        if (v < 0)
            fail_msg("bad hex character '%c' in fixture", *p);
        if (half < 0) {
            half = v;
            continue;
        }
        assert_true(n < cap);
        out[n++] = (uint8_t)(half << 4 | v);
        half = -1;
    }
    assert_int_equal(half, -1);     /* an odd number of digits is a typo */
    return n;
}

/* Returns an exact-size heap copy of a hex fixture. */
uint8_t *hex_dup(const char *hex, size_t *len)
{
    uint8_t tmp[FIXTURE_MAX];
    uint8_t *copy;

    *len = hex_to_bytes(hex, tmp, sizeof(tmp));
    copy = malloc(*len ? *len : 1);
    assert_non_null(copy);
    memcpy(copy, tmp, *len);
    return copy;
}

/* Compares an encoder's output with a hex fixture. */
void assert_bytes_hex(const uint8_t *got, size_t got_len, const char *hex)
{
    uint8_t want[FIXTURE_MAX];
    size_t want_len = hex_to_bytes(hex, want, sizeof(want));

    assert_int_equal(got_len, want_len);
    assert_memory_equal(got, want, want_len);
}

/* Runs one test function over every row of a table, one test per row. */
int run_rows(const char *group, CMUnitTestFunction fn, const void *rows,
             size_t row_size, size_t n_rows, size_t what_offset)
{
    struct CMUnitTest *tests = calloc(n_rows, sizeof(*tests));
    int failed;

    if (tests == NULL) {
        fprintf(stderr, "%s: out of memory\n", group);
        return 1;
    }
    for (size_t i = 0; i < n_rows; i++) {
        const char *row = (const char *)rows + i * row_size;

        tests[i].name = *(const char *const *)(row + what_offset);
        tests[i].test_func = fn;
        tests[i].initial_state = (void *)row;
    }
    failed = _cmocka_run_group_tests(group, tests, n_rows, NULL, NULL);
    free(tests);
    return failed;
}

/* Writes the empty status-0 response that ends a Dump series. */
size_t proto_encode_dump_end(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_empty(out, CNT_OP_DUMP, opaque);
}

/* Writes one Stats pair whose value is a decimal number. */
size_t proto_encode_stats_u64(uint8_t *out, const char *name, uint64_t value)
{
    char text[24];

    snprintf(text, sizeof(text), "%" PRIu64, value);
    return cnt_encode_stats_pair(out, name, text);
}
