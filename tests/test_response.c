/* test_response.c: unit tests of protocol/response.c, responses and
 * events both ways: the server's encoders byte for byte against hex
 * fixtures, the client's incremental decoder and its body parsers (Dump and
 * Queues records, Stats pairs, the extension answers - waits, TTL records,
 * checks, throttle answers, tenant and node views - and events), and round
 * trips from one to the other. */
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
    { "unknown command keeps the unknown opcode", 0x24,
      CNT_STATUS_UNKNOWN_COMMAND, 0x55,
      "91"                  /* magic */
      "24"                  /* opcode: 0x24, copied (the reference
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
    { "exceeds maximum", CNT_OP_WAIT_ACQUIRE, CNT_STATUS_EXCEEDS_MAXIMUM,
      0x10,
      "91"                  /* magic */
      "20"                  /* opcode: Wait_acquire */
      "23"                  /* status: Exceeds maximum */
      "00"                  /* reserved */
      "0000000f"            /* body length: 15 */
      "00000010"            /* opaque */
      "45786365656473206d6178696d756d" /* "Exceeds maximum" */ },
    { "already active", CNT_OP_WAIT_ACQUIRE, CNT_STATUS_ALREADY_ACTIVE,
      0x11,
      "91"                  /* magic */
      "20"                  /* opcode: Wait_acquire */
      "24"                  /* status: Already active */
      "00"                  /* reserved */
      "0000000e"            /* body length: 14 */
      "00000011"            /* opaque */
      "416c726561647920616374697665" /* "Already active" */ },
    { "unknown group", CNT_OP_RENEW, CNT_STATUS_UNKNOWN_GROUP, 0x12,
      "91"                  /* magic */
      "21"                  /* opcode: Renew */
      "25"                  /* status: Unknown group */
      "00"                  /* reserved */
      "0000000d"            /* body length: 13 */
      "00000012"            /* opaque */
      "556e6b6e6f776e2067726f7570" /* "Unknown group" */ },
    { "too many waits", CNT_OP_WAIT_ACQUIRE, CNT_STATUS_TOO_MANY_WAITS,
      0x13,
      "91"                  /* magic */
      "20"                  /* opcode: Wait_acquire */
      "26"                  /* status: Too many waits */
      "00"                  /* reserved */
      "0000000e"            /* body length: 14 */
      "00000013"            /* opaque */
      "546f6f206d616e79207761697473" /* "Too many waits" */ },
    { "lease expired", CNT_OP_WAIT_RELEASE, CNT_STATUS_LEASE_EXPIRED, 0x14,
      "91"                  /* magic */
      "22"                  /* opcode: Wait_release */
      "27"                  /* status: Lease expired */
      "00"                  /* reserved */
      "0000000d"            /* body length: 13 */
      "00000014"            /* opaque */
      "4c656173652065787069726564" /* "Lease expired" */ },
    { "exists", CNT_OP_TTL_INSERT, CNT_STATUS_EXISTS, 0x15,
      "91"                  /* magic */
      "30"                  /* opcode: Ttl_insert */
      "28"                  /* status: Exists */
      "00"                  /* reserved */
      "00000006"            /* body length: 6 */
      "00000015"            /* opaque */
      "457869737473"        /* "Exists" */ },
    { "below zero", CNT_OP_TTL_UPDATE, CNT_STATUS_BELOW_ZERO, 0x16,
      "91"                  /* magic */
      "32"                  /* opcode: Ttl_update */
      "29"                  /* status: Below zero */
      "00"                  /* reserved */
      "0000000a"            /* body length: 10 */
      "00000016"            /* opaque */
      "42656c6f77207a65726f" /* "Below zero" */ },
    { "not permitted", CNT_OP_TENANT_SET, CNT_STATUS_NOT_PERMITTED, 0x17,
      "91"                  /* magic */
      "45"                  /* opcode: Tenant_set */
      "2a"                  /* status: Not permitted */
      "00"                  /* reserved */
      "0000000d"            /* body length: 13 */
      "00000017"            /* opaque */
      "4e6f74207065726d6974746564" /* "Not permitted" */ },
    { "auth failed", CNT_OP_AUTH, CNT_STATUS_AUTH_FAILED, 0x18,
      "91"                  /* magic */
      "40"                  /* opcode: Auth */
      "2b"                  /* status: Auth failed */
      "00"                  /* reserved */
      "0000000b"            /* body length: 11 */
      "00000018"            /* opaque */
      "41757468206661696c6564" /* "Auth failed" */ },
    { "over capacity", CNT_OP_NODE_SET, CNT_STATUS_OVER_CAPACITY, 0x19,
      "91"                  /* magic */
      "47"                  /* opcode: Node_set */
      "2c"                  /* status: Over capacity */
      "00"                  /* reserved */
      "0000000d"            /* body length: 13 */
      "00000019"            /* opaque */
      "4f766572206361706163697479" /* "Over capacity" */ },
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

/* The extensions' answers and the event packet. */
static void test_encode_extension_responses(void **state)
{
    uint8_t out[FIXTURE_MAX];
    size_t n;

    (void)state;
    n = cnt_encode_wait_answer(out, 0x30, CNT_WAIT_GRANTED, 0,
                               0x0102030405060708ull, 7);
    assert_int_equal(n, CNT_WAIT_ANSWER_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "20"            /* opcode: Wait_acquire */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000014"      /* body length: 20 */
        "00000030"      /* opaque */
        "00"            /* state: granted */
        "000000"        /* zero */
        "00000000"      /* position: 0 when granted */
        "0102030405060708" /* lease id */
        "00000007");    /* consumption */

    n = cnt_encode_wait_answer(out, 0x31, CNT_WAIT_QUEUED, 3, 0,
                               0xffffffff);
    assert_bytes_hex(out, n,
        "91" "20" "00" "00" /* magic, Wait_acquire, OK, reserved */
        "00000014"      /* body length: 20 */
        "00000031"      /* opaque */
        "01"            /* state: queued */
        "000000"        /* zero */
        "00000003"      /* position: third in line */
        "0000000000000000" /* lease id: none yet */
        "ffffffff");    /* consumption */

    n = cnt_encode_u64(out, CNT_OP_RENEW, 0x32, 0xfedcba9876543210ull);
    assert_int_equal(n, CNT_U64_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "21"            /* opcode: Renew */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000008"      /* body length */
        "00000032"      /* opaque */
        "fedcba9876543210"); /* lease id */

    n = cnt_encode_u32(out, CNT_OP_WAIT_RELEASE, 0x33, 2);
    assert_bytes_hex(out, n,
        "91" "22" "00" "00" /* magic, Wait_release, OK, reserved */
        "00000004"      /* body length */
        "00000033"      /* opaque */
        "00000002");    /* resources returned */

    n = cnt_encode_queues_record(out, 0x34, 4, 2, (const uint8_t *)"job", 3);
    assert_int_equal(n, CNT_QUEUES_RECORD_SIZE(3));
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "23"            /* opcode: Queues */
        "00"            /* status: OK */
        "00"            /* reserved */
        "0000000d"      /* body length: 10 + 3 */
        "00000034"      /* opaque */
        "00000004"      /* consumption */
        "00000002"      /* queue length */
        "0003"          /* name length */
        "6a6f62");      /* name "job" */

    n = cnt_encode_empty(out, CNT_OP_QUEUES, 0x34);
    assert_bytes_hex(out, n,
        "91" "23" "00" "00" /* magic, Queues, OK, reserved */
        "00000000"      /* body length: 0 ends the series */
        "00000034");    /* opaque */

    n = cnt_encode_event(out, CNT_EVENT_GRANTED, 0x35, 9, 5,
                         (const uint8_t *)"job", 3);
    assert_int_equal(n, CNT_EVENT_SIZE(3));
    assert_bytes_hex(out, n,
        "92"            /* magic: event */
        "01"            /* code: granted */
        "00"            /* status */
        "00"            /* reserved */
        "00000011"      /* body length: 14 + 3 */
        "00000035"      /* opaque of the Wait_acquire */
        "0000000000000009" /* lease id */
        "00000005"      /* value: consumption after the grant */
        "0003"          /* name length */
        "6a6f62");      /* name "job" */

    n = cnt_encode_event(out, CNT_EVENT_TIMED_OUT, 0x36, 0, 0,
                         (const uint8_t *)"j", 1);
    assert_bytes_hex(out, n,
        "92" "02" "00" "00" /* magic: event, timed out, status, reserved */
        "0000000f"      /* body length: 14 + 1 */
        "00000036"      /* opaque */
        "0000000000000000" /* lease id: none was granted */
        "00000000"      /* value */
        "0001"          /* name length */
        "6a");          /* name "j" */
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

/* Wait_acquire, Renew and Wait_release answers parse back. */
static void test_roundtrip_extension_answers(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    cnt_response res;
    cnt_wait_answer ans;
    uint64_t lease_id;
    uint32_t resources;
    size_t n;

    (void)state;
    n = cnt_encode_wait_answer(buf, 1, CNT_WAIT_GRANTED, 0, UINT64_MAX, 3);
    res = decode_response(buf, n, CNT_OP_WAIT_ACQUIRE, 0, 1);
    assert_false(cnt_response_is_event(&res));
    assert_true(cnt_parse_wait_answer(&res, &ans));
    assert_int_equal(ans.state, CNT_WAIT_GRANTED);
    assert_int_equal(ans.position, 0);
    assert_true(ans.lease_id == UINT64_MAX);
    assert_int_equal(ans.consumption, 3);

    n = cnt_encode_wait_answer(buf, 2, CNT_WAIT_QUEUED, 0xffffffff, 0, 0);
    res = decode_response(buf, n, CNT_OP_WAIT_ACQUIRE, 0, 2);
    assert_true(cnt_parse_wait_answer(&res, &ans));
    assert_int_equal(ans.state, CNT_WAIT_QUEUED);
    assert_int_equal(ans.position, 0xffffffff);
    assert_true(ans.lease_id == 0);
    assert_int_equal(ans.consumption, 0);
    /* Not the other answers. */
    assert_false(cnt_parse_renew_answer(&res, &lease_id));
    assert_false(cnt_parse_wait_release_answer(&res, &resources));

    n = cnt_encode_u64(buf, CNT_OP_RENEW, 3, 0x8000000000000001ull);
    res = decode_response(buf, n, CNT_OP_RENEW, 0, 3);
    assert_true(cnt_parse_renew_answer(&res, &lease_id));
    assert_true(lease_id == 0x8000000000000001ull);
    assert_false(cnt_parse_wait_answer(&res, &ans));

    n = cnt_encode_u32(buf, CNT_OP_WAIT_RELEASE, 4, 0);
    res = decode_response(buf, n, CNT_OP_WAIT_RELEASE, 0, 4);
    assert_true(cnt_parse_wait_release_answer(&res, &resources));
    assert_int_equal(resources, 0);
    n = cnt_encode_u32(buf, CNT_OP_WAIT_RELEASE, 5, 0xffffffff);
    res = decode_response(buf, n, CNT_OP_WAIT_RELEASE, 0, 5);
    assert_true(cnt_parse_wait_release_answer(&res, &resources));
    assert_int_equal(resources, 0xffffffff);

    /* Error answers carry the status text, never a body to parse. */
    n = cnt_encode_error(buf, CNT_OP_WAIT_ACQUIRE,
                         CNT_STATUS_TOO_MANY_WAITS, 6);
    res = decode_response(buf, n, CNT_OP_WAIT_ACQUIRE,
                          CNT_STATUS_TOO_MANY_WAITS, 6);
    assert_memory_equal(res.body, "Too many waits", res.body_len);
    assert_false(cnt_parse_wait_answer(&res, &ans));
    n = cnt_encode_error(buf, CNT_OP_RENEW, CNT_STATUS_LEASE_EXPIRED, 7);
    res = decode_response(buf, n, CNT_OP_RENEW, CNT_STATUS_LEASE_EXPIRED, 7);
    assert_false(cnt_parse_renew_answer(&res, &lease_id));
    n = cnt_encode_error(buf, CNT_OP_WAIT_RELEASE, CNT_STATUS_NOT_ACQUIRED,
                         8);
    res = decode_response(buf, n, CNT_OP_WAIT_RELEASE,
                          CNT_STATUS_NOT_ACQUIRED, 8);
    assert_false(cnt_parse_wait_release_answer(&res, &resources));
}

/* Parses an answer from an exact-size heap copy of a hex body. */
static cnt_response hex_response(const char *hex, uint8_t magic,
                                 uint8_t opcode, uint8_t status,
                                 uint8_t **body)
{
    size_t len;
    cnt_response res = { .magic = magic, .opcode = opcode,
                         .status = status };

    *body = hex_dup(hex, &len);
    res.body = *body;
    res.body_len = (uint32_t)len;
    return res;
}

/* Malformed or misdirected extension answers are refused, without
 * reading past their bodies. */
static void test_extension_answers_malformed(void **state)
{
    const char *granted = "00" "000000" /* state: granted, zero */
                          "00000000"    /* position */
                          "0000000000000001" /* lease id */
                          "00000002";   /* consumption */
    const uint8_t R = CNT_MAGIC_RESPONSE, E = CNT_MAGIC_NOTICE;
    cnt_wait_answer ans;
    uint64_t lease_id;
    uint32_t resources;
    uint8_t *body;
    cnt_response res;

    (void)state;
    res = hex_response(granted, R, CNT_OP_WAIT_ACQUIRE, 0, &body);
    assert_true(cnt_parse_wait_answer(&res, &ans));
    assert_true(ans.lease_id == 1);
    res.body_len--;             /* one byte short */
    assert_false(cnt_parse_wait_answer(&res, &ans));
    res.body_len++;
    res.magic = E;              /* an event with that opcode byte */
    assert_false(cnt_parse_wait_answer(&res, &ans));
    res.magic = R;
    res.status = CNT_STATUS_INVALID;
    assert_false(cnt_parse_wait_answer(&res, &ans));
    res.status = CNT_STATUS_OK;
    res.opcode = CNT_OP_ACQUIRE;
    assert_false(cnt_parse_wait_answer(&res, &ans));
    free(body);

    res = hex_response("02" "000000"    /* state: 2, unknown */
                       "00000000" "0000000000000000" "00000000",
                       R, CNT_OP_WAIT_ACQUIRE, 0, &body);
    assert_false(cnt_parse_wait_answer(&res, &ans));
    free(body);

    res = hex_response("00000000000000", /* 7 bytes of a lease id */
                       R, CNT_OP_RENEW, 0, &body);
    assert_false(cnt_parse_renew_answer(&res, &lease_id));
    free(body);
    res = hex_response("000000", /* 3 bytes of a u32 */
                       R, CNT_OP_WAIT_RELEASE, 0, &body);
    assert_false(cnt_parse_wait_release_answer(&res, &resources));
    free(body);
}

/* ---- Rate-limit answers ---- */

/* The rate-limit answers, byte for byte: a TTL record, a check, a
 * Multi_check of two items. */
static void test_encode_rate_limit_answers(void **state)
{
    uint8_t out[FIXTURE_MAX];
    const cnt_ttl_answer view = { .quota = 5, .ttl_left = 3,
                                  .unit = CNT_UNIT_S };
    const cnt_check_result limited = {
        .state = CNT_CHECK_LIMITED, .limit = 10, .remaining = 0,
        .used = 10, .retry_after_ns = 100000000,
        .reset_after_ns = 0x0102030405060708ull };
    const cnt_check_result items[2] = {
        { .state = CNT_CHECK_ALLOWED, .limit = 6, .remaining = 5,
          .used = 1, .retry_after_ns = 0, .reset_after_ns = 1000 },
        { .state = CNT_CHECK_NEVER, .limit = 0xffffffff,
          .remaining = 0xfffffffe, .used = 1,
          .retry_after_ns = CNT_RETRY_NEVER, .reset_after_ns = 0 },
    };
    size_t n;

    (void)state;
    n = cnt_encode_ttl_view(out, CNT_OP_TTL_QUERY, 0x40, &view);
    assert_int_equal(n, CNT_TTL_VIEW_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "31"            /* opcode: Ttl_query */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000011"      /* body length: 17 */
        "00000040"      /* opaque */
        "0000000000000005" /* quota */
        "0000000000000003" /* ttl left */
        "03");          /* unit: s */
    n = cnt_encode_ttl_view(out, CNT_OP_TTL_UPDATE, 0x41,
                            &(cnt_ttl_answer){ UINT64_MAX, 1, CNT_UNIT_H });
    assert_bytes_hex(out, n,
        "91" "32" "00" "00" /* magic, Ttl_update, OK, reserved */
        "00000011"      /* body length: 17 */
        "00000041"      /* opaque */
        "ffffffffffffffff" /* quota */
        "0000000000000001" /* ttl left */
        "05");          /* unit: h */

    n = cnt_encode_check_answer(out, CNT_OP_WINDOW_CHECK, 0x42, &limited);
    assert_int_equal(n, CNT_CHECK_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "34"            /* opcode: Window_check */
        "00"            /* status: OK, whatever the state */
        "00"            /* reserved */
        "00000020"      /* body length: 32 */
        "00000042"      /* opaque */
        "01"            /* state: limited */
        "000000"        /* zero */
        "0000000a"      /* limit */
        "00000000"      /* remaining */
        "0000000a"      /* used */
        "0000000005f5e100" /* retry_after_ns: 100 ms */
        "0102030405060708"); /* reset_after_ns */

    n = cnt_encode_multi_answer(out, 0x43, CNT_MULTI_DENIED, items, 2);
    assert_int_equal(n, CNT_MULTI_ANSWER_SIZE(2));
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "36"            /* opcode: Multi_check */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000042"      /* body length: 2 + 2 * 32 */
        "00000043"      /* opaque */
        "01"            /* overall: denied, nothing charged */
        "02"            /* count */
        "00" "000000"   /* item 0: allowed, zero */
        "00000006"      /*   limit */
        "00000005"      /*   remaining */
        "00000001"      /*   used */
        "0000000000000000" /*   retry_after_ns */
        "00000000000003e8" /*   reset_after_ns */
        "02" "000000"   /* item 1: never, zero */
        "ffffffff"      /*   limit */
        "fffffffe"      /*   remaining */
        "00000001"      /*   used */
        "ffffffffffffffff" /*   retry_after_ns: never */
        "0000000000000000"); /*   reset_after_ns */
}

/* Compares two check answers field by field. */
static void assert_check_equal(const cnt_check_result *a,
                               const cnt_check_result *b)
{
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->limit, b->limit);
    assert_int_equal(a->remaining, b->remaining);
    assert_int_equal(a->used, b->used);
    assert_true(a->retry_after_ns == b->retry_after_ns);
    assert_true(a->reset_after_ns == b->reset_after_ns);
}

/* TTL views, check answers and Multi_check answers of every size parse
 * back; each parser takes only its own opcodes. */
static void test_roundtrip_rate_limit_answers(void **state)
{
    uint8_t buf[CNT_MULTI_ANSWER_SIZE(CNT_MULTI_MAX)];
    cnt_check_result items[CNT_MULTI_MAX], got;
    cnt_ttl_answer view;
    cnt_multi_answer multi;
    cnt_response res;
    size_t n;

    (void)state;
    for (uint8_t unit = 0; unit <= CNT_UNIT_MAX; unit++) {
        const cnt_ttl_answer in = { 0x8000000000000001ull, unit + 1ull,
                                    unit };
        uint8_t op = unit % 2 ? CNT_OP_TTL_UPDATE : CNT_OP_TTL_QUERY;

        n = cnt_encode_ttl_view(buf, op, unit, &in);
        res = decode_response(buf, n, op, 0, unit);
        assert_true(cnt_parse_ttl_view(&res, &view));
        assert_true(view.quota == in.quota && view.ttl_left == in.ttl_left);
        assert_int_equal(view.unit, unit);
        assert_false(cnt_parse_check_answer(&res, &got));
        assert_false(cnt_parse_multi_answer(&res, &multi));
    }

    for (uint8_t st = CNT_CHECK_ALLOWED; st <= CNT_CHECK_NEVER; st++) {
        const cnt_check_result in = {
            .state = st, .limit = 1u << st, .remaining = 0xffffffffu - st,
            .used = 7, .retry_after_ns = UINT64_MAX - st,
            .reset_after_ns = 1ull << (40 + st) };
        uint8_t op = st % 2 ? CNT_OP_GCRA_CHECK : CNT_OP_WINDOW_CHECK;

        n = cnt_encode_check_answer(buf, op, 10 + st, &in);
        res = decode_response(buf, n, op, 0, 10 + st);
        assert_true(cnt_parse_check_answer(&res, &got));
        assert_check_equal(&got, &in);
        assert_false(cnt_parse_ttl_view(&res, &view));
        assert_false(cnt_parse_multi_answer(&res, &multi));
    }

    for (uint8_t i = 0; i < CNT_MULTI_MAX; i++)
        items[i] = (cnt_check_result){
            .state = i % 3, .limit = i, .remaining = 100u - i,
            .used = 1000u + i, .retry_after_ns = 5ull * i,
            .reset_after_ns = UINT64_MAX - i };
    for (uint8_t count = 1; count <= CNT_MULTI_MAX; count++) {
        uint8_t overall = count % 2 ? CNT_MULTI_DENIED : CNT_MULTI_ALLOWED;

        n = cnt_encode_multi_answer(buf, 20 + count, overall, items, count);
        assert_int_equal(n, CNT_MULTI_ANSWER_SIZE(count));
        res = decode_response(buf, n, CNT_OP_MULTI_CHECK, 0, 20 + count);
        assert_true(cnt_parse_multi_answer(&res, &multi));
        assert_int_equal(multi.overall, overall);
        assert_int_equal(multi.count, count);
        for (uint8_t i = 0; i < count; i++) {
            assert_true(cnt_multi_answer_item(&multi, i, &got));
            assert_check_equal(&got, &items[i]);
        }
        assert_false(cnt_multi_answer_item(&multi, count, &got));
        assert_false(cnt_parse_check_answer(&res, &got));
    }

    /* Errors carry the status text, never a body to parse. */
    n = cnt_encode_error(buf, CNT_OP_TTL_INSERT, CNT_STATUS_EXISTS, 50);
    res = decode_response(buf, n, CNT_OP_TTL_INSERT, CNT_STATUS_EXISTS, 50);
    assert_memory_equal(res.body, "Exists", res.body_len);
    n = cnt_encode_error(buf, CNT_OP_TTL_UPDATE, CNT_STATUS_BELOW_ZERO, 51);
    res = decode_response(buf, n, CNT_OP_TTL_UPDATE, CNT_STATUS_BELOW_ZERO,
                          51);
    assert_memory_equal(res.body, "Below zero", res.body_len);
    assert_false(cnt_parse_ttl_view(&res, &view));
    n = cnt_encode_error(buf, CNT_OP_MULTI_CHECK, CNT_STATUS_INVALID, 52);
    res = decode_response(buf, n, CNT_OP_MULTI_CHECK, CNT_STATUS_INVALID,
                          52);
    assert_false(cnt_parse_multi_answer(&res, &multi));
}

/* Malformed or misdirected rate-limit answers are refused, without
 * reading past their bodies (exact-size heap copies). */
static void test_rate_limit_answers_malformed(void **state)
{
    const char *view_hex = "0000000000000005" "0000000000000003" "03";
    const char *check_hex = "01" "000000" "0000000a" "00000000"
                            "0000000a" "0000000005f5e100"
                            "0000000000000001";
    const uint8_t R = CNT_MAGIC_RESPONSE, E = CNT_MAGIC_NOTICE;
    cnt_ttl_answer view;
    cnt_check_result got;
    cnt_multi_answer multi;
    cnt_response res;
    uint8_t *body;

    (void)state;
    res = hex_response(view_hex, R, CNT_OP_TTL_QUERY, 0, &body);
    assert_true(cnt_parse_ttl_view(&res, &view));
    res.body_len--;                     /* one byte short */
    assert_false(cnt_parse_ttl_view(&res, &view));
    res.body_len++;
    res.magic = E;                      /* an event with that code */
    assert_false(cnt_parse_ttl_view(&res, &view));
    res.magic = R;
    res.status = CNT_STATUS_NOT_FOUND;
    assert_false(cnt_parse_ttl_view(&res, &view));
    res.status = CNT_STATUS_OK;
    res.opcode = CNT_OP_TTL_INSERT;     /* answered with an empty body */
    assert_false(cnt_parse_ttl_view(&res, &view));
    res.opcode = CNT_OP_TTL_UPDATE;
    assert_true(cnt_parse_ttl_view(&res, &view));
    body[CNT_TTLV_OFF_UNIT] = CNT_UNIT_MAX + 1;     /* unknown unit */
    assert_false(cnt_parse_ttl_view(&res, &view));
    free(body);

    res = hex_response(check_hex, R, CNT_OP_GCRA_CHECK, 0, &body);
    assert_true(cnt_parse_check_answer(&res, &got));
    assert_int_equal(got.state, CNT_CHECK_LIMITED);
    res.body_len--;
    assert_false(cnt_parse_check_answer(&res, &got));
    res.body_len++;
    res.magic = E;
    assert_false(cnt_parse_check_answer(&res, &got));
    res.magic = R;
    res.opcode = CNT_OP_MULTI_CHECK;
    assert_false(cnt_parse_check_answer(&res, &got));
    res.opcode = CNT_OP_WINDOW_CHECK;
    body[CNT_CANS_OFF_STATE] = CNT_CHECK_NEVER + 1;  /* unknown state */
    assert_false(cnt_parse_check_answer(&res, &got));
    free(body);

    /* Multi_check: the header alone, a count of 0, 17, or one past the
     * items there are, an unknown overall or item state. */
    res = hex_response("00" "01", R, CNT_OP_MULTI_CHECK, 0, &body);
    assert_false(cnt_parse_multi_answer(&res, &multi));
    free(body);
    res = hex_response("00", R, CNT_OP_MULTI_CHECK, 0, &body);
    assert_false(cnt_parse_multi_answer(&res, &multi));
    free(body);
    {
        char hex[2 * (CNT_MANS_FIXED + 2 * CNT_CHECK_ANSWER_SIZE) + 1];

        snprintf(hex, sizeof(hex), "0002%s%s", check_hex, check_hex);
        res = hex_response(hex, R, CNT_OP_MULTI_CHECK, 0, &body);
        assert_true(cnt_parse_multi_answer(&res, &multi));
        assert_int_equal(multi.count, 2);
        assert_true(cnt_multi_answer_item(&multi, 1, &got));
        assert_int_equal(got.limit, 10);
        res.body_len--;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        res.body_len++;
        body[CNT_MANS_OFF_COUNT] = 3;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_OFF_COUNT] = 0;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_OFF_COUNT] = CNT_MULTI_MAX + 1;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_OFF_COUNT] = 1;   /* fewer than there are: fine */
        assert_true(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_OFF_COUNT] = 2;
        body[CNT_MANS_OFF_OVERALL] = CNT_MULTI_DENIED + 1;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_OFF_OVERALL] = CNT_MULTI_DENIED;
        body[CNT_MANS_FIXED + CNT_CHECK_ANSWER_SIZE] = 3;  /* item 1 */
        assert_false(cnt_parse_multi_answer(&res, &multi));
        body[CNT_MANS_FIXED + CNT_CHECK_ANSWER_SIZE] = CNT_CHECK_NEVER;
        res.magic = E;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        res.magic = R;
        res.status = CNT_STATUS_INVALID;
        assert_false(cnt_parse_multi_answer(&res, &multi));
        free(body);
    }
}

/* Queues: records then the empty end, parsed back; malformed records are
 * refused. */
static void test_roundtrip_queues(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    size_t n = 0, off = 0;
    cnt_response res;
    cnt_queues_record rec;
    cnt_dump_record dump;
    uint8_t *body;

    (void)state;
    n += cnt_encode_queues_record(buf + n, 9, 5, 1, (const uint8_t *)"a", 1);
    n += cnt_encode_queues_record(buf + n, 9, 0xffffffff, 0xffffffff,
                                  (const uint8_t *)"lock", 4);
    n += cnt_encode_empty(buf + n, CNT_OP_QUEUES, 9);

    res = decode_response(buf, CNT_QUEUES_RECORD_SIZE(1), CNT_OP_QUEUES, 0,
                          9);
    assert_false(cnt_response_is_queues_end(&res));
    assert_true(cnt_parse_queues_record(&res, &rec));
    assert_int_equal(rec.consumption, 5);
    assert_int_equal(rec.queue_len, 1);
    assert_int_equal(rec.name_len, 1);
    assert_memory_equal(rec.name, "a", 1);
    /* A Queues record is not a Dump record, and the other way round. */
    assert_false(cnt_dump_record_parse(&res, &dump));
    off += res.size;

    assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                     CNT_DECODE_OK);
    assert_true(cnt_parse_queues_record(&res, &rec));
    assert_int_equal(rec.consumption, 0xffffffff);
    assert_int_equal(rec.queue_len, 0xffffffff);
    assert_memory_equal(rec.name, "lock", 4);
    off += res.size;

    res = decode_response(buf + off, n - off, CNT_OP_QUEUES, 0, 9);
    assert_true(cnt_response_is_queues_end(&res));
    assert_false(cnt_response_is_dump_end(&res));
    assert_false(cnt_parse_queues_record(&res, &rec));
    assert_int_equal(off + res.size, n);

    n = cnt_encode_dump_record(buf, 10, 1, 2, (const uint8_t *)"a", 1);
    res = decode_response(buf, n, CNT_OP_DUMP, 0, 10);
    assert_false(cnt_parse_queues_record(&res, &rec));
    n = cnt_encode_empty(buf, CNT_OP_DUMP, 10);
    res = decode_response(buf, n, CNT_OP_DUMP, 0, 10);
    assert_false(cnt_response_is_queues_end(&res));

    res = hex_response("00000001"   /* consumption */
                       "00000002"   /* queue length */
                       "00",        /* half a name length */
                       CNT_MAGIC_RESPONSE, CNT_OP_QUEUES, 0, &body);
    assert_false(cnt_parse_queues_record(&res, &rec));
    free(body);
    res = hex_response("00000001"   /* consumption */
                       "00000002"   /* queue length */
                       "0003"       /* name length 3 */
                       "6162",      /* only 2 name bytes */
                       CNT_MAGIC_RESPONSE, CNT_OP_QUEUES, 0, &body);
    assert_false(cnt_parse_queues_record(&res, &rec));
    free(body);
    res = hex_response("00000001" "00000002" "0001" "61",
                       CNT_MAGIC_RESPONSE, CNT_OP_QUEUES,
                       CNT_STATUS_INVALID, &body);
    assert_false(cnt_parse_queues_record(&res, &rec));
    free(body);
}

/* Lease_list: a record's bytes, parsed back; the end marker; malformed
 * records are refused. */
static void test_roundtrip_lease_list(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    size_t n;
    cnt_response res;
    cnt_lease_record rec;
    cnt_queues_record q;
    uint8_t *body;

    (void)state;
    n = cnt_encode_lease_record(buf, 0x21, 1500, UINT64_C(0x0102030405060708),
                                3, (const uint8_t *)"job", 3);
    assert_int_equal(n, CNT_LEASE_RECORD_SIZE(3));
    uint8_t want[] = {0x91, 0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x15,
                      0x00, 0x00, 0x00, 0x21,
                      0x00, 0x00, 0x05, 0xdc,               /* 1500 ms */
                      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                      0x00, 0x00, 0x00, 0x03,               /* resources */
                      0x00, 0x03, 'j', 'o', 'b'};
    assert_int_equal(n, sizeof(want));
    assert_memory_equal(buf, want, sizeof(want));
    res = decode_response(buf, n, CNT_OP_LEASE_LIST, 0, 0x21);
    assert_false(cnt_response_is_lease_list_end(&res));
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_int_equal(rec.left_ms, 1500);
    assert_true(rec.lease_id == UINT64_C(0x0102030405060708));
    assert_int_equal(rec.resources, 3);
    assert_int_equal(rec.name_len, 3);
    assert_memory_equal(rec.name, "job", 3);
    /* Not a Queues record. */
    assert_false(cnt_parse_queues_record(&res, &q));

    n = cnt_encode_empty(buf, CNT_OP_LEASE_LIST, 0x21);
    res = decode_response(buf, n, CNT_OP_LEASE_LIST, 0, 0x21);
    assert_true(cnt_response_is_lease_list_end(&res));
    assert_false(cnt_parse_lease_record(&res, &rec));
    n = cnt_encode_empty(buf, CNT_OP_QUEUES, 0x21);
    res = decode_response(buf, n, CNT_OP_QUEUES, 0, 0x21);
    assert_false(cnt_response_is_lease_list_end(&res));

    res = hex_response("00000001" "0000000000000002" "00000003" "00",
                       CNT_MAGIC_RESPONSE, CNT_OP_LEASE_LIST, 0, &body);
    assert_false(cnt_parse_lease_record(&res, &rec));   /* short */
    free(body);
    res = hex_response("00000001" "0000000000000002" "00000003" "0003" "61",
                       CNT_MAGIC_RESPONSE, CNT_OP_LEASE_LIST, 0, &body);
    assert_false(cnt_parse_lease_record(&res, &rec));   /* name past body */
    free(body);
    res = hex_response("00000001" "0000000000000002" "00000003" "0001" "61",
                       CNT_MAGIC_RESPONSE, CNT_OP_LEASE_LIST,
                       CNT_STATUS_OUT_OF_MEMORY, &body);
    assert_false(cnt_parse_lease_record(&res, &rec));   /* not status 0 */
    free(body);
}

/* Busiest: records then the empty end, parsed back; malformed records
 * are refused. */
static void test_roundtrip_busiest(void **state)
{
    uint8_t buf[FIXTURE_MAX];
    size_t n = 0, off = 0;
    cnt_response res;
    cnt_busy_record rec;
    cnt_queues_record q;
    uint8_t *body;

    (void)state;
    n += cnt_encode_busy_record(buf + n, 9, 120, CNT_BUSY_KIND_GCRA,
                                (const uint8_t *)"api", 3);
    n += cnt_encode_busy_record(buf + n, 9, 0xffffffff, CNT_BUSY_KIND_TTL,
                                (const uint8_t *)"t", 1);
    n += cnt_encode_empty(buf + n, CNT_OP_BUSIEST, 9);
    assert_int_equal(n, CNT_BUSY_RECORD_SIZE(3) + CNT_BUSY_RECORD_SIZE(1) +
                            CNT_HEADER_SIZE);

    res = decode_response(buf, CNT_BUSY_RECORD_SIZE(3), CNT_OP_BUSIEST, 0,
                          9);
    assert_memory_equal(res.body, "\x00\x00\x00\x78\x02\x00\x03" "api",
                        10);
    assert_false(cnt_response_is_busiest_end(&res));
    assert_true(cnt_parse_busy_record(&res, &rec));
    assert_int_equal(rec.checks, 120);
    assert_int_equal(rec.kind, CNT_BUSY_KIND_GCRA);
    assert_int_equal(rec.name_len, 3);
    assert_memory_equal(rec.name, "api", 3);
    /* A Busiest record is not a Queues record. */
    assert_false(cnt_parse_queues_record(&res, &q));
    off += res.size;

    assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                     CNT_DECODE_OK);
    assert_true(cnt_parse_busy_record(&res, &rec));
    assert_int_equal(rec.checks, 0xffffffff);
    assert_int_equal(rec.kind, CNT_BUSY_KIND_TTL);
    assert_memory_equal(rec.name, "t", 1);
    off += res.size;

    res = decode_response(buf + off, n - off, CNT_OP_BUSIEST, 0, 9);
    assert_true(cnt_response_is_busiest_end(&res));
    assert_false(cnt_response_is_queues_end(&res));
    assert_false(cnt_parse_busy_record(&res, &rec));
    assert_int_equal(off + res.size, n);

    n = cnt_encode_empty(buf, CNT_OP_QUEUES, 10);
    res = decode_response(buf, n, CNT_OP_QUEUES, 0, 10);
    assert_false(cnt_response_is_busiest_end(&res));

    res = hex_response("00000001"   /* checks */
                       "01"         /* kind */
                       "00",        /* half a name length */
                       CNT_MAGIC_RESPONSE, CNT_OP_BUSIEST, 0, &body);
    assert_false(cnt_parse_busy_record(&res, &rec));
    free(body);
    res = hex_response("00000001"   /* checks */
                       "01"         /* kind */
                       "0003"       /* name length 3 */
                       "6162",      /* only 2 name bytes */
                       CNT_MAGIC_RESPONSE, CNT_OP_BUSIEST, 0, &body);
    assert_false(cnt_parse_busy_record(&res, &rec));
    free(body);
    res = hex_response("00000001" "01" "0001" "61",
                       CNT_MAGIC_RESPONSE, CNT_OP_BUSIEST,
                       CNT_STATUS_INVALID, &body);
    assert_false(cnt_parse_busy_record(&res, &rec));
    free(body);
}

/* ---- Tenant throttling answers ---- */

/* The throttling answers, byte for byte: a throttled charge, a tenant
 * view, a list record and its end marker, a node view. */
static void test_encode_throttle_answers(void **state)
{
    uint8_t out[FIXTURE_MAX];
    const cnt_throttle_answer thr = {
        .state = CNT_TSTATE_THROTTLED, .reason = CNT_TREASON_POOL_EMPTY,
        .used = 0x01020304, .remaining = 0x05060708,
        .retry_after_ns = 0x1112131415161718ull };
    const cnt_tenant_view tv = {
        .reserved = 10, .hard_limit = CNT_HARD_LIMIT_UNLIMITED, .used = 7,
        .flags = CNT_TENANT_CONFIGURED, .throttled = 0x0102030405060708ull,
        .units = 0x1112131415161718ull };
    const cnt_node_view nv = {
        .capacity = 1000, .used = 300, .pool = 900, .pool_used = 200,
        .reserved_sum = 100, .tenants = 3,
        .throttled = 0x0102030405060708ull };
    size_t n;

    (void)state;
    n = cnt_encode_throttle_answer(out, 0x50, &thr);
    assert_int_equal(n, CNT_THROTTLE_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "41"            /* opcode: Throttle */
        "00"            /* status: OK, whatever the state */
        "00"            /* reserved */
        "00000018"      /* body length: 24 */
        "00000050"      /* opaque */
        "01"            /* state: throttled */
        "02"            /* reason: pool empty */
        "0000"          /* zero */
        "01020304"      /* used */
        "05060708"      /* remaining */
        "00000000"      /* zero */
        "1112131415161718"); /* retry_after_ns */

    n = cnt_encode_tenant_view(out, 0x51, &tv);
    assert_int_equal(n, CNT_TENANT_VIEW_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "42"            /* opcode: Tenant_show */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000020"      /* body length: 32 */
        "00000051"      /* opaque */
        "0000000a"      /* reserved units */
        "ffffffff"      /* hard limit: unlimited */
        "00000007"      /* used */
        "01"            /* flags: configured */
        "000000"        /* zero */
        "0102030405060708"  /* throttled */
        "1112131415161718"); /* units */

    n = cnt_encode_tenant_record(out, 0x52, &tv, (const uint8_t *)"ab", 2);
    assert_int_equal(n, CNT_TENANT_RECORD_SIZE(2));
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "43"            /* opcode: Tenant_list */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000024"      /* body length: 34 + 2 */
        "00000052"      /* opaque */
        "0000000a"      /* reserved units */
        "ffffffff"      /* hard limit */
        "00000007"      /* used */
        "01" "000000"   /* flags, zero */
        "0102030405060708"  /* throttled */
        "1112131415161718"  /* units */
        "0002"          /* name length */
        "6162");        /* tenant "ab" */
    n = cnt_encode_empty(out, CNT_OP_TENANT_LIST, 0x52);
    assert_bytes_hex(out, n,
        "91" "43" "00" "00" /* magic, Tenant_list, OK, reserved */
        "00000000"      /* body length: the end of the list */
        "00000052");    /* opaque */

    n = cnt_encode_node_view(out, 0x53, &nv);
    assert_int_equal(n, CNT_NODE_VIEW_RESPONSE_SIZE);
    assert_bytes_hex(out, n,
        "91"            /* magic */
        "44"            /* opcode: Node_show */
        "00"            /* status: OK */
        "00"            /* reserved */
        "00000020"      /* body length: 32 */
        "00000053"      /* opaque */
        "000003e8"      /* capacity: 1000 */
        "0000012c"      /* used: 300 */
        "00000384"      /* pool: 900 */
        "000000c8"      /* pool used: 200 */
        "00000064"      /* reserved sum: 100 */
        "00000003"      /* tenants */
        "0102030405060708"); /* throttled */
}

/* Compares two tenant views field by field. */
static void assert_tenant_view_equal(const cnt_tenant_view *a,
                                     const cnt_tenant_view *b)
{
    assert_int_equal(a->reserved, b->reserved);
    assert_int_equal(a->hard_limit, b->hard_limit);
    assert_int_equal(a->used, b->used);
    assert_int_equal(a->flags, b->flags);
    assert_true(a->throttled == b->throttled);
    assert_true(a->units == b->units);
}

/* Every state and reason of a throttle answer, tenant views, list records
 * (the longest tenant included) and node views parse back; each parser
 * takes only its own opcode. */
static void test_roundtrip_throttle_answers(void **state)
{
    uint8_t *buf = malloc(CNT_TENANT_RECORD_SIZE(CNT_NAME_MAX));
    uint8_t *name = malloc(CNT_NAME_MAX);
    cnt_throttle_answer ta;
    cnt_tenant_view tv;
    cnt_tenant_record rec;
    cnt_node_view nv;
    cnt_response res;
    size_t n;

    (void)state;
    assert_non_null(buf);
    assert_non_null(name);
    for (uint8_t st = 0; st <= CNT_TSTATE_THROTTLED; st++)
        for (uint8_t why = 0; why <= CNT_TREASON_MAX; why++) {
            const cnt_throttle_answer in = {
                .state = st, .reason = why, .used = 0xfffffff0u + why,
                .remaining = 1u << (st * 8 + why),
                .retry_after_ns = st ? UINT64_MAX - why : 0 };

            n = cnt_encode_throttle_answer(buf, 4u * st + why, &in);
            res = decode_response(buf, n, CNT_OP_THROTTLE, 0,
                                  4u * st + why);
            memset(&ta, 0xa5, sizeof(ta));
            assert_true(cnt_parse_throttle_answer(&res, &ta));
            assert_int_equal(ta.state, st);
            assert_int_equal(ta.reason, why);
            assert_int_equal(ta.used, in.used);
            assert_int_equal(ta.remaining, in.remaining);
            assert_true(ta.retry_after_ns == in.retry_after_ns);
            assert_false(cnt_parse_tenant_view(&res, &tv));
            assert_false(cnt_parse_node_view(&res, &nv));
            assert_false(cnt_parse_tenant_record(&res, &rec));
        }

    for (unsigned i = 0; i < 4; i++) {
        const cnt_tenant_view in = {
            .reserved = i, .hard_limit = i ? 100u * i
                                           : CNT_HARD_LIMIT_UNLIMITED,
            .used = 0xffffffffu - i, .flags = i % 2,
            .throttled = UINT64_MAX - i, .units = 1ull << (32 + i) };

        n = cnt_encode_tenant_view(buf, 20 + i, &in);
        res = decode_response(buf, n, CNT_OP_TENANT_SHOW, 0, 20 + i);
        assert_true(cnt_parse_tenant_view(&res, &tv));
        assert_tenant_view_equal(&tv, &in);
        assert_false(cnt_parse_throttle_answer(&res, &ta));
        assert_false(cnt_parse_node_view(&res, &nv));
        assert_false(cnt_parse_tenant_record(&res, &rec));

        n = cnt_encode_tenant_record(buf, 30 + i, &in,
                                     (const uint8_t *)"tenant", 1 + i);
        assert_int_equal(n, CNT_TENANT_RECORD_SIZE(1 + i));
        res = decode_response(buf, n, CNT_OP_TENANT_LIST, 0, 30 + i);
        assert_true(cnt_parse_tenant_record(&res, &rec));
        assert_tenant_view_equal(&rec.view, &in);
        assert_int_equal(rec.name_len, 1 + i);
        assert_memory_equal(rec.name, "tenant", 1 + i);
        assert_ptr_equal(rec.name, buf + CNT_HEADER_SIZE + CNT_TREC_FIXED);
        assert_false(cnt_response_is_tenant_list_end(&res));
        assert_false(cnt_parse_tenant_view(&res, &tv));
    }

    for (size_t i = 0; i < CNT_NAME_MAX; i++)
        name[i] = (uint8_t)(i * 3 + 1);
    n = cnt_encode_tenant_record(buf, 40, &tv, name, CNT_NAME_MAX);
    res = decode_response(buf, n, CNT_OP_TENANT_LIST, 0, 40);
    assert_true(cnt_parse_tenant_record(&res, &rec));
    assert_int_equal(rec.name_len, CNT_NAME_MAX);
    assert_memory_equal(rec.name, name, CNT_NAME_MAX);

    n = cnt_encode_empty(buf, CNT_OP_TENANT_LIST, 41);
    res = decode_response(buf, n, CNT_OP_TENANT_LIST, 0, 41);
    assert_true(cnt_response_is_tenant_list_end(&res));
    assert_false(cnt_parse_tenant_record(&res, &rec));
    assert_false(cnt_response_is_dump_end(&res));
    assert_false(cnt_response_is_queues_end(&res));
    n = cnt_encode_empty(buf, CNT_OP_DUMP, 42);
    res = decode_response(buf, n, CNT_OP_DUMP, 0, 42);
    assert_false(cnt_response_is_tenant_list_end(&res));

    for (unsigned i = 0; i < 3; i++) {
        const cnt_node_view in = {
            .capacity = i ? 1000u * i : 0, .used = 1 + i, .pool = 2 + i,
            .pool_used = 0xfffffff0u + i, .reserved_sum = 4 + i,
            .tenants = 5 + i, .throttled = UINT64_MAX - i };

        n = cnt_encode_node_view(buf, 50 + i, &in);
        res = decode_response(buf, n, CNT_OP_NODE_SHOW, 0, 50 + i);
        assert_true(cnt_parse_node_view(&res, &nv));
        assert_int_equal(nv.capacity, in.capacity);
        assert_int_equal(nv.used, in.used);
        assert_int_equal(nv.pool, in.pool);
        assert_int_equal(nv.pool_used, in.pool_used);
        assert_int_equal(nv.reserved_sum, in.reserved_sum);
        assert_int_equal(nv.tenants, in.tenants);
        assert_true(nv.throttled == in.throttled);
        assert_false(cnt_parse_tenant_view(&res, &tv));
        assert_false(cnt_parse_throttle_answer(&res, &ta));
    }

    /* The new statuses carry their text, never a body to parse. */
    n = cnt_encode_error(buf, CNT_OP_THROTTLE, CNT_STATUS_NOT_PERMITTED, 60);
    res = decode_response(buf, n, CNT_OP_THROTTLE, CNT_STATUS_NOT_PERMITTED,
                          60);
    assert_memory_equal(res.body, "Not permitted", res.body_len);
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    n = cnt_encode_error(buf, CNT_OP_NODE_SET, CNT_STATUS_OVER_CAPACITY, 61);
    res = decode_response(buf, n, CNT_OP_NODE_SET, CNT_STATUS_OVER_CAPACITY,
                          61);
    assert_memory_equal(res.body, "Over capacity", res.body_len);
    n = cnt_encode_error(buf, CNT_OP_TENANT_LIST, CNT_STATUS_INVALID, 62);
    res = decode_response(buf, n, CNT_OP_TENANT_LIST, CNT_STATUS_INVALID,
                          62);
    assert_false(cnt_response_is_tenant_list_end(&res));
    assert_false(cnt_parse_tenant_record(&res, &rec));
    free(name);
    free(buf);
}

/* Malformed or misdirected throttling answers are refused, without
 * reading past their bodies (exact-size heap copies). */
static void test_throttle_answers_malformed(void **state)
{
    const char *thr_hex = "01" "03" "0000" "00000005" "00000000"
                          "00000000" "000000003b9aca00";
    const char *view_hex = "00000001" "00000002" "00000003" "01" "000000"
                           "0000000000000004" "0000000000000005";
    const uint8_t R = CNT_MAGIC_RESPONSE, E = CNT_MAGIC_NOTICE;
    cnt_throttle_answer ta;
    cnt_tenant_view tv;
    cnt_tenant_record rec;
    cnt_node_view nv;
    cnt_response res;
    uint8_t *body;
    char hex[2 * (CNT_TREC_FIXED + 4) + 1];

    (void)state;
    res = hex_response(thr_hex, R, CNT_OP_THROTTLE, 0, &body);
    assert_true(cnt_parse_throttle_answer(&res, &ta));
    assert_int_equal(ta.state, CNT_TSTATE_THROTTLED);
    assert_int_equal(ta.reason, CNT_TREASON_HARD_LIMIT);
    assert_true(ta.retry_after_ns == 1000000000);
    res.body_len--;                     /* one byte short */
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    res.body_len++;
    res.magic = E;                      /* an event with that code */
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    res.magic = R;
    res.status = CNT_STATUS_NOT_PERMITTED;
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    res.status = CNT_STATUS_OK;
    res.opcode = CNT_OP_TENANT_SHOW;
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    res.opcode = CNT_OP_THROTTLE;
    body[CNT_TANS_OFF_STATE] = CNT_TSTATE_THROTTLED + 1; /* unknown */
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    body[CNT_TANS_OFF_STATE] = CNT_TSTATE_ALLOWED;
    assert_true(cnt_parse_throttle_answer(&res, &ta));
    body[CNT_TANS_OFF_REASON] = CNT_TREASON_MAX + 1;     /* unknown */
    assert_false(cnt_parse_throttle_answer(&res, &ta));
    free(body);

    res = hex_response(view_hex, R, CNT_OP_TENANT_SHOW, 0, &body);
    assert_true(cnt_parse_tenant_view(&res, &tv));
    assert_int_equal(tv.used, 3);
    assert_true(tv.units == 5);
    res.body_len--;
    assert_false(cnt_parse_tenant_view(&res, &tv));
    res.body_len++;
    res.magic = E;
    assert_false(cnt_parse_tenant_view(&res, &tv));
    res.magic = R;
    res.status = CNT_STATUS_NOT_FOUND;
    assert_false(cnt_parse_tenant_view(&res, &tv));
    free(body);

    /* A node view is the same size; only its own opcode parses. */
    res = hex_response(view_hex, R, CNT_OP_NODE_SHOW, 0, &body);
    assert_true(cnt_parse_node_view(&res, &nv));
    assert_int_equal(nv.capacity, 1);
    assert_int_equal(nv.reserved_sum, 0);   /* throttled's high half */
    assert_int_equal(nv.tenants, 4);
    assert_true(nv.throttled == 5);
    res.body_len--;
    assert_false(cnt_parse_node_view(&res, &nv));
    res.body_len++;
    res.magic = E;
    assert_false(cnt_parse_node_view(&res, &nv));
    res.magic = R;
    res.opcode = CNT_OP_TENANT_SHOW;
    assert_false(cnt_parse_node_view(&res, &nv));
    free(body);

    /* List records: the view alone, half a name length, a name running
     * past the body, the right one, and a status that is not OK. */
    res = hex_response(view_hex, R, CNT_OP_TENANT_LIST, 0, &body);
    assert_false(cnt_parse_tenant_record(&res, &rec));
    assert_false(cnt_response_is_tenant_list_end(&res));
    free(body);
    snprintf(hex, sizeof(hex), "%s00", view_hex);
    res = hex_response(hex, R, CNT_OP_TENANT_LIST, 0, &body);
    assert_false(cnt_parse_tenant_record(&res, &rec));
    free(body);
    snprintf(hex, sizeof(hex), "%s0003" "6162", view_hex);
    res = hex_response(hex, R, CNT_OP_TENANT_LIST, 0, &body);
    assert_false(cnt_parse_tenant_record(&res, &rec));
    free(body);
    snprintf(hex, sizeof(hex), "%s0002" "6162", view_hex);
    res = hex_response(hex, R, CNT_OP_TENANT_LIST, 0, &body);
    assert_true(cnt_parse_tenant_record(&res, &rec));
    assert_int_equal(rec.name_len, 2);
    assert_int_equal(rec.view.flags, CNT_TENANT_CONFIGURED);
    res.magic = E;
    assert_false(cnt_parse_tenant_record(&res, &rec));
    res.magic = R;
    res.status = CNT_STATUS_INVALID;
    assert_false(cnt_parse_tenant_record(&res, &rec));
    res.status = CNT_STATUS_OK;
    res.opcode = CNT_OP_DUMP;
    assert_false(cnt_parse_tenant_record(&res, &rec));
    free(body);
}

/* Events: told from answers by the magic, parsed back, and decoded in
 * their place between answers. */
static void test_roundtrip_events(void **state)
{
    static const uint8_t codes[] = {
        CNT_EVENT_GRANTED, CNT_EVENT_TIMED_OUT, CNT_EVENT_LEASE_EXPIRED,
        CNT_EVENT_SHUTDOWN, 0x7f
    };
    uint8_t buf[FIXTURE_MAX];
    size_t n, off;
    cnt_response res;
    cnt_event_packet ev;
    cnt_wait_answer ans;
    uint8_t *body;

    (void)state;
    for (size_t i = 0; i < sizeof(codes); i++) {
        n = cnt_encode_event(buf, codes[i], 0x100 + (uint32_t)i,
                             0xa0a0a0a0a0a0a0a0ull + i, 10 + (uint32_t)i,
                             (const uint8_t *)"sem", 3);
        for (size_t k = 0; k < n; k++)
            assert_int_equal(cnt_response_decode(buf, k, &res),
                             CNT_DECODE_NEED_MORE);
        assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_OK);
        assert_int_equal(res.size, n);
        assert_int_equal(res.magic, CNT_MAGIC_NOTICE);
        assert_true(cnt_response_is_event(&res));
        assert_int_equal(res.opcode, codes[i]);
        assert_int_equal(res.status, 0);
        assert_int_equal(res.opaque, 0x100 + i);
        /* A client parses any code; it ignores the ones it does not
         * know. */
        assert_true(cnt_parse_event(&res, &ev));
        assert_int_equal(ev.code, codes[i]);
        assert_true(ev.lease_id == 0xa0a0a0a0a0a0a0a0ull + i);
        assert_int_equal(ev.value, 10 + i);
        assert_int_equal(ev.name_len, 3);
        assert_memory_equal(ev.name, "sem", 3);
    }

    /* An event between two answers: in its place, told apart by the
     * magic, even with an opcode byte equal to an answer's (granted is
     * 0x01, Get's opcode). */
    n = cnt_encode_u32(buf, CNT_OP_GET, 1, 4);
    n += cnt_encode_event(buf + n, CNT_EVENT_GRANTED, 2, 77, 4,
                          (const uint8_t *)"job", 3);
    n += cnt_encode_wait_answer(buf + n, 3, CNT_WAIT_QUEUED, 1, 0, 4);
    off = 0;
    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_OK);
    assert_false(cnt_response_is_event(&res));
    assert_false(cnt_parse_event(&res, &ev));
    off += res.size;
    assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                     CNT_DECODE_OK);
    assert_true(cnt_response_is_event(&res));
    assert_int_equal(res.opcode, CNT_OP_GET);
    assert_true(cnt_parse_event(&res, &ev));
    assert_int_equal(ev.code, CNT_EVENT_GRANTED);
    assert_true(ev.lease_id == 77);
    assert_int_equal(res.opaque, 2);
    off += res.size;
    assert_int_equal(cnt_response_decode(buf + off, n - off, &res),
                     CNT_DECODE_OK);
    assert_false(cnt_response_is_event(&res));
    assert_true(cnt_parse_wait_answer(&res, &ans));
    assert_int_equal(ans.position, 1);
    assert_int_equal(off + res.size, n);

    /* Malformed events. */
    res = hex_response("0000000000000001" /* lease id */
                       "00000002"   /* value */
                       "00",        /* half a name length */
                       CNT_MAGIC_NOTICE, CNT_EVENT_GRANTED, 0, &body);
    assert_false(cnt_parse_event(&res, &ev));
    free(body);
    res = hex_response("0000000000000001" /* lease id */
                       "00000002"   /* value */
                       "0004"       /* name length 4 */
                       "616263",    /* only 3 name bytes */
                       CNT_MAGIC_NOTICE, CNT_EVENT_GRANTED, 0, &body);
    assert_false(cnt_parse_event(&res, &ev));
    free(body);
    res = hex_response("0000000000000001" "00000002" "0001" "61",
                       CNT_MAGIC_NOTICE, CNT_EVENT_GRANTED, 0, &body);
    assert_true(cnt_parse_event(&res, &ev));
    res.magic = CNT_MAGIC_RESPONSE;     /* an answer, not an event */
    assert_false(cnt_parse_event(&res, &ev));
    res.magic = CNT_MAGIC_NOTICE;
    res.status = CNT_STATUS_INVALID;    /* events always carry status 0 */
    assert_false(cnt_parse_event(&res, &ev));
    free(body);
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
/* A memcache port's answers are text; a counter answer never is. */
static void test_response_is_text(void **state)
{
    static const uint8_t answer[] = { 0x91, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                      0x0d, 0x0a };
    static const char *const text[] = {
        "ERROR\r\n", "E", "SERVER_ERROR out of memory\r\n",
        "CLIENT_ERROR bad command line format\r\n",
    };

    (void)state;
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        assert_true(cnt_response_is_text((const uint8_t *)text[i],
                                         strlen(text[i])));
    assert_false(cnt_response_is_text(answer, sizeof answer));
    assert_false(cnt_response_is_text(answer, 1));
    assert_false(cnt_response_is_text((const uint8_t *)"", 0));
    assert_false(cnt_response_is_text((const uint8_t *)"error\r\n", 7));
    assert_false(cnt_response_is_text((const uint8_t *)"ER\x01", 3));
    assert_true(cnt_response_is_text((const uint8_t *)"ERROR\r\n\x91\x00", 9));
}

/* No bytes read is no text, whatever lies in the buffer beyond them;
 * a first byte from A to Z, both included, starts text. */
static void test_is_text_needs_bytes(void **state)
{
    const uint8_t buf[] = "ERROR\r\n";

    (void)state;
    assert_true(cnt_response_is_text(buf, 7));
    assert_false(cnt_response_is_text(buf, 0));
    assert_true(cnt_response_is_text((const uint8_t *)"A\r\n", 3));
    assert_true(cnt_response_is_text((const uint8_t *)"Z\r\n", 3));
    assert_false(cnt_response_is_text((const uint8_t *)"@\r\n", 3));
    assert_false(cnt_response_is_text((const uint8_t *)"[\r\n", 3));
}

/* Encoders that write over a dirty buffer: every byte of the answer is
 * theirs (text, retry hint and reason, tenant view), and none past it. */
static void test_encoders_over_dirty_buffers(void **state)
{
    uint8_t buf[CNT_TENANT_RECORD_SIZE(8) + 64];
    const char *text = cnt_status_text(CNT_STATUS_THROTTLED);
    size_t tlen = strlen(text), n;
    cnt_response res;
    cnt_tenant_record rec;
    const cnt_tenant_view tv = {
        .reserved = 3, .hard_limit = 9, .used = 4, .flags = 1,
        .throttled = 5, .units = 6 };
    cnt_check_result items[3];

    (void)state;
    memset(buf, 0xee, sizeof(buf));
    n = cnt_encode_text(buf, CNT_OP_STATS, 0x80, 1, "Hello", 5);
    assert_int_equal(n, CNT_HEADER_SIZE + 5);
    res = decode_response(buf, n, CNT_OP_STATS, 0x80, 1);
    assert_int_equal(res.body_len, 5);
    assert_memory_equal(buf + CNT_HEADER_SIZE, "Hello", 5);
    assert_int_equal(buf[n], 0xee);

    memset(buf, 0xee, sizeof(buf));
    n = cnt_encode_throttled(buf, CNT_OP_GET, 2, 0x0102030405060708ull, 3);
    assert_int_equal(n, CNT_HEADER_SIZE + CNT_THROTTLED_FIXED + tlen);
    assert_int_equal(buf[CNT_OFF_STATUS], CNT_STATUS_THROTTLED);
    assert_int_equal(cnt_get_u64(buf + CNT_HEADER_SIZE +
                                 CNT_THROTTLED_OFF_RETRY),
                     0x0102030405060708ull);
    assert_int_equal(buf[CNT_HEADER_SIZE + CNT_THROTTLED_OFF_REASON], 3);
    assert_memory_equal(buf + CNT_HEADER_SIZE + CNT_THROTTLED_FIXED, text,
                        tlen);

    memset(buf, 0xee, sizeof(buf));
    n = cnt_encode_tenant_record(buf, 3, &tv, (const uint8_t *)"t", 1);
    res = decode_response(buf, n, CNT_OP_TENANT_LIST, 0, 3);
    assert_true(cnt_parse_tenant_record(&res, &rec));
    assert_tenant_view_equal(&rec.view, &tv);

    /* A Multi_check answer of two items writes two, not the third. */
    memset(items, 0x11, sizeof(items));
    memset(buf, 0xee, sizeof(buf));
    n = cnt_encode_multi_answer(buf, 4, CNT_MULTI_DENIED, items, 2);
    assert_int_equal(n, CNT_MULTI_ANSWER_SIZE(2));
    for (size_t i = n; i < CNT_MULTI_ANSWER_SIZE(3); i++)
        assert_int_equal(buf[i], 0xee);
}

/* The empty cases the parsers accept: a Dump record and an event of an
 * empty name, a Stats pair with an empty name and value; an event's
 * reserved byte is written as 0 over a dirty buffer; '~' is text, and
 * text is judged on its first 32 bytes. */
static void test_empty_names_and_edges(void **state)
{
    uint8_t buf[64];
    cnt_response res;
    cnt_dump_record rec;
    cnt_event_packet ev;
    const char *name, *value;
    uint16_t name_len, value_len;
    size_t n, pos = 0;

    (void)state;
    n = cnt_encode_dump_record(buf, 1, 4, 5, NULL, 0);
    res = decode_response(buf, n, CNT_OP_DUMP, 0, 1);
    assert_true(cnt_dump_record_parse(&res, &rec));
    assert_int_equal(rec.current, 4);
    assert_int_equal(rec.max, 5);
    assert_int_equal(rec.name_len, 0);

    memset(buf, 0xee, sizeof(buf));
    n = cnt_encode_event(buf, 0x01, 2, 7, 8, NULL, 0);
    assert_int_equal(buf[CNT_OFF_RESERVED], 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(cnt_response_decode(buf, n, &res), CNT_DECODE_OK);
    assert_true(cnt_parse_event(&res, &ev));
    assert_int_equal(ev.lease_id, 7);
    assert_int_equal(ev.name_len, 0);

    n = cnt_encode_stats_pair(buf, "", "");
    assert_int_equal(n, CNT_STATS_PAIR_FIXED);
    res = (cnt_response){ .opcode = CNT_OP_STATS, .body = buf,
                          .body_len = (uint32_t)n };
    assert_true(cnt_stats_next(&res, &pos, &name, &name_len, &value,
                               &value_len));
    assert_int_equal(name_len, 0);
    assert_int_equal(value_len, 0);
    assert_int_equal(pos, n);
    assert_false(cnt_stats_next(&res, &pos, &name, &name_len, &value,
                                &value_len));

    assert_true(cnt_response_is_text((const uint8_t *)"ERROR ~\r\n", 9));
    /* Only the first 32 bytes are judged: a binary byte at the 33rd does
     * not count. */
    memset(buf, 'A', sizeof(buf));
    buf[32] = 0x01;
    assert_true(cnt_response_is_text(buf, 33));
    buf[31] = 0x01;
    assert_false(cnt_response_is_text(buf, 33));
}

int main(void)
{
    const struct CMUnitTest response_tests[] = {
        cmocka_unit_test(test_encode_success_responses),
        cmocka_unit_test(test_encode_extension_responses),
        cmocka_unit_test(test_encode_stats_pair_clamps),
        cmocka_unit_test(test_roundtrip_server_to_client),
        cmocka_unit_test(test_roundtrip_stats),
        cmocka_unit_test(test_stats_malformed),
        cmocka_unit_test(test_roundtrip_dump),
        cmocka_unit_test(test_dump_record_malformed),
        cmocka_unit_test(test_dump_end),
        cmocka_unit_test(test_roundtrip_extension_answers),
        cmocka_unit_test(test_extension_answers_malformed),
        cmocka_unit_test(test_roundtrip_queues),
        cmocka_unit_test(test_roundtrip_lease_list),
        cmocka_unit_test(test_roundtrip_busiest),
        cmocka_unit_test(test_encode_rate_limit_answers),
        cmocka_unit_test(test_roundtrip_rate_limit_answers),
        cmocka_unit_test(test_rate_limit_answers_malformed),
        cmocka_unit_test(test_encode_throttle_answers),
        cmocka_unit_test(test_roundtrip_throttle_answers),
        cmocka_unit_test(test_throttle_answers_malformed),
        cmocka_unit_test(test_roundtrip_events),
        cmocka_unit_test(test_response_magic),
        cmocka_unit_test(test_response_is_text),
        cmocka_unit_test(test_response_huge_body),
        cmocka_unit_test(test_response_pipelined),
        cmocka_unit_test(test_is_text_needs_bytes),
        cmocka_unit_test(test_encoders_over_dirty_buffers),
        cmocka_unit_test(test_empty_names_and_edges),
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
