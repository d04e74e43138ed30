/* test_response.c: unit tests of protocol/response.c, responses both
 * ways: the server's encoders byte for byte against hex fixtures, the
 * client's incremental decoder and its Dump-record and Stats-body parsers,
 * and round trips from one to the other. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/response.h"
#include "protocol/wire.h"
#include "tests/proto_helpers.h"

/* ---- Response encoders ---- */

typedef struct error_row {
    const char *what;
    uint8_t opcode;
    cnt_status status;
    uint32_t opaque;
    const char *hex;
} error_row;

static const error_row error_rows[] = {
    { "not found", CNT_OP_GET, CNT_STATUS_NOT_FOUND, 0x01020304,
      "91"                  /* magic: response */
      "01"                  /* opcode: Get, copied */
      "01"                  /* status: Not found */
      "00"                  /* reserved */
      "00000009"            /* body length */
      "01020304"            /* opaque, copied */
      "4e6f7420666f756e64"  /* "Not found" */ },
    { "invalid arguments", CNT_OP_ACQUIRE, CNT_STATUS_INVALID, 7,
      "91"                  /* magic */
      "02"                  /* opcode: Acquire */
      "04"                  /* status: Invalid arguments */
      "00"                  /* reserved */
      "00000011"            /* body length: 17 */
      "00000007"            /* opaque */
      "496e76616c696420617267756d656e7473" /* "Invalid arguments" */ },
    { "resource not available", CNT_OP_ACQUIRE,
      CNT_STATUS_RESOURCE_NOT_AVAILABLE, 0xffffffff,
      "91"                  /* magic */
      "02"                  /* opcode: Acquire */
      "21"                  /* status: Resource not available */
      "00"                  /* reserved */
      "00000016"            /* body length: 22 */
      "ffffffff"            /* opaque */
      "5265736f75726365206e6f7420617661696c61626c65" /* the text */ },
    { "not acquired", CNT_OP_RELEASE, CNT_STATUS_NOT_ACQUIRED, 0,
      "91"                  /* magic */
      "03"                  /* opcode: Release */
      "22"                  /* status: Not acquired */
      "00"                  /* reserved */
      "0000000c"            /* body length: 12 */
      "00000000"            /* opaque */
      "4e6f74206163717569726564" /* "Not acquired" */ },
    { "unknown command keeps the unknown opcode", 0x20,
      CNT_STATUS_UNKNOWN_COMMAND, 0x55,
      "91"                  /* magic */
      "20"                  /* opcode: 0x20, copied (the reference
                             * writes 0x12 here) */
      "81"                  /* status: Unknown command */
      "00"                  /* reserved */
      "0000000f"            /* body length: 15 */
      "00000055"            /* opaque */
      "556e6b6e6f776e20636f6d6d616e64" /* "Unknown command" */ },
    { "out of memory", CNT_OP_ACQUIRE, CNT_STATUS_OUT_OF_MEMORY, 9,
      "91"                  /* magic */
      "02"                  /* opcode: Acquire */
      "82"                  /* status: Out of memory */
      "00"                  /* reserved */
      "0000000d"            /* body length: 13 */
      "00000009"            /* opaque */
      "4f7574206f66206d656d6f7279" /* "Out of memory" */ },
    { "status OK has an empty body", CNT_OP_NOOP, CNT_STATUS_OK, 1,
      "91"                  /* magic */
      "00"                  /* opcode: Noop */
      "00"                  /* status: OK */
      "00"                  /* reserved */
      "00000000"            /* body length */
      "00000001"            /* opaque */ },
    { "status outside the table: no text", CNT_OP_GET, (cnt_status)0x05, 2,
      "91"                  /* magic */
      "01"                  /* opcode: Get */
      "05"                  /* status: 0x05, not in the table */
      "00"                  /* reserved */
      "00000000"            /* body length */
      "00000002"            /* opaque */ },
};

/* One error status encoded, compared byte for byte. */
static void test_encode_error_row(void **state)
{
    const error_row *row = *state;
    uint8_t want[FIXTURE_MAX];
    size_t want_len = hex_to_bytes(row->hex, want, sizeof(want));
    uint8_t out[CNT_ERROR_RESPONSE_MAX + 8];

    memset(out, 0xee, sizeof(out));
    assert_int_equal(cnt_encode_error(out, row->opcode, row->status,
                                      row->opaque), want_len);
    assert_true(want_len <= CNT_ERROR_RESPONSE_MAX);
    assert_memory_equal(out, want, want_len);
    /* No trailing NUL or anything else past the response. */
    assert_int_equal(out[want_len], 0xee);
}

/* Success responses: empty, u32, Dump record, Dump end, Stats pairs. */
static void test_encode_success_responses(void **state)
{
    uint8_t out[FIXTURE_MAX];
    size_t n;

    (void)state;
    n = cnt_encode_empty(out, CNT_OP_RELEASE, 0x0a0b0c0d);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "03"            /* opcode: Release */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000000"      /* body length */
        "0a0b0c0d");    /* opaque */

    n = cnt_encode_u32(out, CNT_OP_GET, 5, 0x89abcdef);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "01"            /* opcode: Get */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000004"      /* body length */
        "00000005"      /* opaque */
        "89abcdef");    /* consumption */

    n = cnt_encode_dump_record(out, 6, 1, 5, (const uint8_t *)"sem", 3);
    assert_int_equal(n, CNT_DUMP_RECORD_SIZE(3));
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "11"            /* opcode: Dump */
        "00"            /* status: OK */
        "00"            /* reserved */
        "0000000d"      /* body length: 10 + 3 */
        "00000006"      /* opaque */
        "00000001"      /* current consumption */
        "00000005"      /* max consumption */
        "0003"          /* name length */
        "73656d");      /* name "sem" */

    n = proto_encode_dump_end(out, 6);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "11"            /* opcode: Dump */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000000"      /* body length: 0 ends the series */
        "00000006");    /* opaque */

    assert_int_equal(cnt_encode_stats_pair(NULL, "objects", "42"), 13);
    n = cnt_encode_stats_pair(out, "objects", "42");
    n += proto_encode_stats_u64(out + n, "curr_connections", 7);
    assert_bytes_hex(out, n,
        "0007"          /* name length */
        "0002"          /* value length */
        "6f626a65637473" /* "objects" */
        "3432"          /* "42" */
        "0010"          /* name length */
        "0001"          /* value length */
        "637572725f636f6e6e656374696f6e73" /* "curr_connections" */
        "37");          /* "7" */
    assert_int_equal(proto_encode_stats_u64(NULL, "x", UINT64_MAX),
                     4 + 1 + 20);
    assert_true(proto_encode_stats_u64(NULL, "x", UINT64_MAX) <=
                PROTO_STATS_U64_PAIR_SIZE(1));
}

/* A Stats value longer than a u16 can say is cut at 65535 bytes. */
static void test_encode_stats_pair_clamps(void **state)
{
    char *value = malloc(70000);
    uint8_t *out = malloc(4 + 1 + 70000);

    (void)state;
    assert_non_null(value);
    assert_non_null(out);
    memset(value, '9', 69999);
    value[69999] = '\0';
    assert_int_equal(cnt_encode_stats_pair(out, "n", value), 4 + 1 + 65535);
    assert_int_equal(cnt_get_u16(out), 1);
    assert_int_equal(cnt_get_u16(out + 2), 65535);
    free(out);
    free(value);
}

/* ---- Client-side response decoding and server -> client round trips ---- */

/* Decodes one whole response and checks its header fields. */
static cnt_response decode_response(const uint8_t *buf, size_t len,
                                    uint8_t opcode, uint8_t status,
                                    uint32_t opaque)
{
    cnt_response res;

    /* Incremental: every shorter prefix only asks for more. */
    for (size_t k = 0; k < len; k++)
        assert_int_equal(cnt_response_decode(buf, k, &res),
                         CNT_DECODE_NEED_MORE);
    assert_int_equal(cnt_response_decode(buf, len, &res), CNT_DECODE_OK);
    assert_int_equal(res.magic, CNT_MAGIC_RESPONSE);
    assert_int_equal(res.opcode, opcode);
    assert_int_equal(res.status, status);
    assert_int_equal(res.opaque, opaque);
    assert_int_equal(res.size, len);
    assert_int_equal(res.body_len, len - CNT_HEADER_SIZE);
    assert_ptr_equal(res.body, buf + CNT_HEADER_SIZE);
    return res;
}

/* Every kind of server response decodes on the client side. */
static void test_roundtrip_server_to_client(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    cnt_response res;
    size_t n;

    (void)state;
    n = cnt_encode_empty(buf, CNT_OP_NOOP, 1);
    res = decode_response(buf, n, CNT_OP_NOOP, 0, 1);
    assert_int_equal(res.body_len, 0);

    n = cnt_encode_u32(buf, CNT_OP_GET, 2, 17);
    res = decode_response(buf, n, CNT_OP_GET, 0, 2);
    assert_int_equal(cnt_get_u32(res.body), 17);

    n = cnt_encode_u32(buf, CNT_OP_ACQUIRE, 3, 0xffffffff);
    res = decode_response(buf, n, CNT_OP_ACQUIRE, 0, 3);
    assert_int_equal(cnt_get_u32(res.body), 0xffffffff);

    n = cnt_encode_empty(buf, CNT_OP_RELEASE, 4);
    decode_response(buf, n, CNT_OP_RELEASE, 0, 4);

    n = cnt_encode_error(buf, 0x42, CNT_STATUS_UNKNOWN_COMMAND, 5);
    res = decode_response(buf, n, 0x42, CNT_STATUS_UNKNOWN_COMMAND, 5);
    assert_int_equal(res.body_len, strlen("Unknown command"));
    assert_memory_equal(res.body, "Unknown command", res.body_len);

    n = cnt_encode_error(buf, CNT_OP_RELEASE, CNT_STATUS_NOT_ACQUIRED, 6);
    res = decode_response(buf, n, CNT_OP_RELEASE, CNT_STATUS_NOT_ACQUIRED, 6);
    assert_memory_equal(res.body, "Not acquired", res.body_len);
}

/* Stats: a header then pairs, iterated back in order. */
static void test_roundtrip_stats(void **state)
{
    static const char *const names[] = { "objects", "gc_count", "x" };
    static const char *const values[] = { "3", "0", "" };
    uint8_t buf[FIXTURE_MAX];
    size_t body = 0, pos = 0, n;
    cnt_response res;
    const char *name, *value;
    uint16_t name_len, value_len;

    (void)state;
    for (size_t i = 0; i < 3; i++)
        body += cnt_encode_stats_pair(NULL, names[i], values[i]);
    n = cnt_encode_response_header(buf, CNT_OP_STATS, 0, (uint32_t)body, 7);
    for (size_t i = 0; i < 3; i++)
        n += cnt_encode_stats_pair(buf + n, names[i], values[i]);
    assert_int_equal(n, CNT_HEADER_SIZE + body);

    res = decode_response(buf, n, CNT_OP_STATS, 0, 7);
    for (size_t i = 0; i < 3; i++) {
        assert_true(cnt_stats_next(&res, &pos, &name, &name_len, &value,
                                   &value_len));
        assert_int_equal(name_len, strlen(names[i]));
        assert_memory_equal(name, names[i], name_len);
        assert_int_equal(value_len, strlen(values[i]));
        assert_memory_equal(value, values[i], value_len);
    }
    assert_false(cnt_stats_next(&res, &pos, &name, &name_len, &value,
                                &value_len));
    assert_int_equal(pos, body);
}

/* Checks that a Stats body ends the iteration at once, without reading
 * past it (the body is an exact-size heap copy). */
static void check_stats_refused(const char *hex, size_t start)
{
    size_t len, pos = start;
    uint8_t *body = hex_dup(hex, &len);
    cnt_response res = { .opcode = CNT_OP_STATS, .body = body,
                         .body_len = (uint32_t)len };
    const char *name, *value;
    uint16_t name_len, value_len;

    assert_false(cnt_stats_next(&res, &pos, &name, &name_len, &value,
                                &value_len));
    assert_int_equal(pos, start);
    free(body);
}

/* Malformed Stats bodies end the iteration instead of reading past them. */
static void test_stats_malformed(void **state)
{
    (void)state;
    check_stats_refused("000100",   /* name length 1, half a value length */
                        0);
    check_stats_refused("0001"      /* name length 1 */
                        "0005"      /* value length 5 */
                        "61"        /* name "a" */
                        "3132",     /* only 2 value bytes */
                        0);
    check_stats_refused("0001"      /* name length 1 */
                        "0000"      /* value length 0 */
                        "61",       /* name "a" */
                        8);         /* a position past the end */
    check_stats_refused("", 0);     /* an empty body has no pairs */
}

/* Dump: records then the empty end, parsed back. */
static void test_roundtrip_dump(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    size_t n = 0, off = 0;
    cnt_response res;
    cnt_dump_record rec;

    (void)state;
    n += cnt_encode_dump_record(buf + n, 8, 1, 5, (const uint8_t *)"a", 1);
    n += cnt_encode_dump_record(buf + n, 8, 0, 0xffffffff,
                                (const uint8_t *)"lock", 4);
    n += proto_encode_dump_end(buf + n, 8);

    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_OK);
    assert_false(cnt_response_is_dump_end(&res));
    assert_true(cnt_dump_record_parse(&res, &rec));
    assert_int_equal(rec.current, 1);
    assert_int_equal(rec.max, 5);
    assert_int_equal(rec.name_len, 1);
    assert_memory_equal(rec.name, "a", 1);
    off += res.size;

    assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                     CNT_DECODE_OK);
    assert_true(cnt_dump_record_parse(&res, &rec));
    assert_int_equal(rec.current, 0);
    assert_int_equal(rec.max, 0xffffffff);
    assert_memory_equal(rec.name, "lock", 4);
    off += res.size;

    res = decode_response(buf + off, n - off, CNT_OP_DUMP, 0, 8);
    assert_true(cnt_response_is_dump_end(&res));
    assert_false(cnt_dump_record_parse(&res, &rec));
    assert_int_equal(off + res.size, n);
}

/* Parses a Dump record from an exact-size heap copy of a hex body. */
static bool parse_dump_hex(const char *hex, uint8_t opcode, uint8_t status)
{
    size_t len;
    uint8_t *body = hex_dup(hex, &len);
    cnt_response res = { .opcode = opcode, .status = status, .body = body,
                         .body_len = (uint32_t)len };
    cnt_dump_record rec;
    bool ok = cnt_dump_record_parse(&res, &rec);

    free(body);
    return ok;
}

/* Dump records that are not records are refused. */
static void test_dump_record_malformed(void **state)
{
    const char *good = "00000001"   /* current */
                       "00000002"   /* max */
                       "0001"       /* name length 1 */
                       "61";        /* name "a" */

    (void)state;
    assert_true(parse_dump_hex(good, CNT_OP_DUMP, CNT_STATUS_OK));
    assert_false(parse_dump_hex("00000001"  /* current */
                                "00000002"  /* max */
                                "00",       /* half a name length */
                                CNT_OP_DUMP, CNT_STATUS_OK));
    assert_false(parse_dump_hex("00000001"  /* current */
                                "0000",     /* half a max */
                                CNT_OP_DUMP, CNT_STATUS_OK));
    assert_false(parse_dump_hex("00000001"  /* current */
                                "00000002"  /* max */
                                "0003"      /* name length 3 */
                                "6162",     /* only 2 name bytes */
                                CNT_OP_DUMP, CNT_STATUS_OK));
    /* A well-formed body under an error status or another opcode. */
    assert_false(parse_dump_hex(good, CNT_OP_DUMP, CNT_STATUS_INVALID));
    assert_false(parse_dump_hex(good, CNT_OP_GET, CNT_STATUS_OK));
}

/* Only a status-0 Dump response with an empty body ends a series. */
static void test_dump_end(void **state)
{
    cnt_response res = { .opcode = CNT_OP_DUMP, .status = CNT_STATUS_OK };

    (void)state;
    assert_true(cnt_response_is_dump_end(&res));
    res.status = CNT_STATUS_INVALID;
    assert_false(cnt_response_is_dump_end(&res));
    res.status = CNT_STATUS_OK;
    res.opcode = CNT_OP_NOOP;
    assert_false(cnt_response_is_dump_end(&res));
    res.opcode = CNT_OP_DUMP;
    res.body_len = 1;
    assert_false(cnt_response_is_dump_end(&res));
}

/* Bad magic is reported on the first byte; 0x92 notices are accepted. */
static void test_response_magic(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    cnt_response res;
    size_t n;

    (void)state;
    n = cnt_encode_empty(buf, CNT_OP_NOOP, 1);
    buf[0] = CNT_MAGIC_REQUEST;
    assert_int_equal(cnt_response_decode(buf, 1, &res), CNT_DECODE_CLOSE);
    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_CLOSE);
    buf[0] = 0x00;
    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_CLOSE);
    buf[0] = CNT_MAGIC_NOTICE;
    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_OK);
    assert_int_equal(res.magic, CNT_MAGIC_NOTICE);
}

/* A huge declared body is only a need, never an allocation. */
static void test_response_huge_body(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    cnt_response res;

    (void)state;
    cnt_encode_response_header(buf, CNT_OP_GET, 0, 0xffffffff, 1);
    assert_int_equal(cnt_response_size(buf, 0), CNT_HEADER_SIZE);
    assert_int_equal(cnt_response_size(buf, 11), CNT_HEADER_SIZE);
    assert_int_equal(cnt_response_size(buf, 12), 12 + (uint64_t)0xffffffff);
    assert_int_equal(cnt_response_decode(buf, sizeof(buf), &res),
                     CNT_DECODE_NEED_MORE);
    assert_int_equal(cnt_response_size(buf, sizeof(buf)),
                     12 + (uint64_t)0xffffffff);
}

/* Several responses in one buffer decode in order. */
static void test_response_pipelined(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    size_t n = 0, off = 0;
    cnt_response res;

    (void)state;
    n += cnt_encode_u32(buf + n, CNT_OP_ACQUIRE, 1, 3);
    n += cnt_encode_error(buf + n, CNT_OP_GET, CNT_STATUS_NOT_FOUND, 2);
    n += cnt_encode_empty(buf + n, CNT_OP_RELEASE, 3);
    for (uint32_t want = 1; want <= 3; want++) {
        assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                         CNT_DECODE_OK);
        assert_int_equal(res.opaque, want);
        assert_int_equal(cnt_response_size(buf + off, n - off), res.size);
        off += res.size;
    }
    assert_int_equal(off, n);
    assert_int_equal(cnt_response_decode(buf + off, 0, &res),
                     CNT_DECODE_NEED_MORE);
}

/* Runs the response codec tests. */
int main(void)
{
    const struct CMUnitTest response_tests[] = {
        cmocka_unit_test(test_encode_success_responses),
        cmocka_unit_test(test_encode_stats_pair_clamps),
        cmocka_unit_test(test_roundtrip_server_to_client),
        cmocka_unit_test(test_roundtrip_stats),
        cmocka_unit_test(test_stats_malformed),
        cmocka_unit_test(test_roundtrip_dump),
        cmocka_unit_test(test_dump_record_malformed),
        cmocka_unit_test(test_dump_end),
        cmocka_unit_test(test_response_magic),
        cmocka_unit_test(test_response_huge_body),
        cmocka_unit_test(test_response_pipelined),
    };
    int failed = 0;

    failed += run_rows("error responses", test_encode_error_row, error_rows,
                       sizeof(error_rows[0]),
                       sizeof(error_rows) / sizeof(error_rows[0]),
                       offsetof(error_row, what));
    failed += cmocka_run_group_tests_name("response codec", response_tests,
                                          NULL, NULL);
    return failed == 0 ? 0 : 1;
}
