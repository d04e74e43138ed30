/* test_request.c: unit tests of protocol/request.c, requests both ways.
 * Fixtures are hex with a comment per field; every row of the reference
 * table that the decoder decides is a row here, checked whole, at every
 * prefix and in a stream; the encoders are checked byte for byte and
 * against the decoder. */
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

#include "protocol/request.h"
#include "protocol/wire.h"
#include "tests/proto_helpers.h"

/* Decodes and checks what must hold whatever the input. */
static cnt_decode_result decode_checked(const uint8_t *buf, size_t len,
                                        cnt_request *req)
{
    cnt_decode_result r = cnt_request_decode(buf, len, req);

    assert_true(req->size >= CNT_HEADER_SIZE);
    switch (r) {
    case CNT_DECODE_NEED_MORE:
        /* Never asks for more than the largest legal request. */
        assert_true(req->size <= CNT_REQUEST_MAX);
        assert_true(req->size > len);
        break;
    case CNT_DECODE_OK:
        assert_int_equal(req->status, CNT_STATUS_OK);
        if (req->name != NULL) {
            /* The name lies inside the buffered request. */
            assert_true(req->name >= buf + CNT_HEADER_SIZE);
            assert_true(req->name + req->name_len <= buf + len);
            assert_true(req->size <= len);
        }
        break;
    case CNT_DECODE_ERROR:
        assert_true(req->status == CNT_STATUS_INVALID ||
                    req->status == CNT_STATUS_UNKNOWN_COMMAND);
        break;
    case CNT_DECODE_CLOSE:
        break;
    }
    return r;
}

/* ---- Server-side decoding, one row per case of the reference table ---- */

typedef struct decode_row {
    const char *what;
    const char *hex;
    cnt_decode_result result;
    bool at_header;         /* decided once the header is in */
    uint64_t size;          /* req->size once the header is in */
    uint8_t opcode;
    uint32_t opaque;
    cnt_status status;      /* ERROR rows */
    uint32_t resources;     /* REQUEST rows */
    uint32_t maximum;
    uint32_t wait_ms;
    uint32_t lease_ms;
    uint64_t quota;         /* also Ttl_update's value */
    uint64_t ttl;
    uint64_t period_ns;
    uint32_t limit;
    uint32_t count;
    uint32_t cost;
    uint8_t flags;
    uint8_t slots;
    uint8_t unit;
    uint8_t attribute;
    uint8_t change;
    uint8_t item_count;     /* Multi_check rows: items after 2 bytes */
    uint32_t units;         /* Throttle */
    uint32_t reserved;      /* Tenant_set */
    uint32_t hard_limit;    /* Tenant_set */
    uint32_t capacity;      /* Node_set */
    const char *secret;     /* Auth */
    const char *name;       /* REQUEST rows with a name */
    const char *doc;        /* Tenant_set_json, Node_set_json: the JSON
                             * document ("" for an empty one) */
} decode_row;

static const decode_row decode_rows[] = {
    { .what = "noop",
      .hex = "90"           /* magic: request */
             "00"           /* opcode: Noop */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000001",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_NOOP, .opaque = 1 },
    { .what = "noop with a body: answered at the header, body skipped",
      .hex = "90"           /* magic */
             "00"           /* opcode: Noop */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 3 */
             "00000002"     /* opaque */
             "616263",      /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 15,
      .opcode = CNT_OP_NOOP, .opaque = 2 },
    { .what = "stats",
      .hex = "90"           /* magic */
             "10"           /* opcode: Stats */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000003",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_STATS, .opaque = 3 },
    { .what = "stats with a body",
      .hex = "90"           /* magic */
             "10"           /* opcode: Stats */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000004"     /* opaque */
             "ffff",        /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 14,
      .opcode = CNT_OP_STATS, .opaque = 4 },
    { .what = "dump",
      .hex = "90"           /* magic */
             "11"           /* opcode: Dump */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000005",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_DUMP, .opaque = 5 },
    { .what = "dump with a body",
      .hex = "90"           /* magic */
             "11"           /* opcode: Dump */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 */
             "00000006"     /* opaque */
             "00",          /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 13,
      .opcode = CNT_OP_DUMP, .opaque = 6 },
    { .what = "get: valid",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "deadbeef"     /* opaque */
             "0003"         /* name length */
             "616263",      /* name "abc" */
      .result = CNT_DECODE_OK, .size = 17,
      .opcode = CNT_OP_GET, .opaque = 0xdeadbeef, .name = "abc" },
    { .what = "get: flags and reserved non-zero are ignored",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "ff"           /* flags: ignored */
             "a5"           /* reserved: ignored */
             "00000005"     /* body length */
             "00000007"     /* opaque */
             "0003"         /* name length */
             "616263",      /* name "abc" */
      .result = CNT_DECODE_OK, .size = 17,
      .opcode = CNT_OP_GET, .opaque = 7, .name = "abc" },
    { .what = "get: bytes after the name are ignored",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 2 + 3 + 4 */
             "00000008"     /* opaque */
             "0003"         /* name length */
             "616263"       /* name "abc" */
             "78797a77",    /* trailing "xyzw" */
      .result = CNT_DECODE_OK, .size = 21,
      .opcode = CNT_OP_GET, .opaque = 8, .name = "abc" },
    { .what = "get: empty body",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 2 */
             "00000009",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_GET,
      .opaque = 9, .status = CNT_STATUS_INVALID },
    { .what = "get: body shorter than 2",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "0000000a"     /* opaque */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 13, .opcode = CNT_OP_GET,
      .opaque = 10, .status = CNT_STATUS_INVALID },
    { .what = "get: name length 0",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length */
             "0000000b"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_GET,
      .opaque = 11, .status = CNT_STATUS_INVALID },
    { .what = "get: name runs past the body",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 2 + 2 */
             "0000000c"     /* opaque */
             "0003"         /* name length: 3 */
             "6162",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 16, .opcode = CNT_OP_GET,
      .opaque = 12, .status = CNT_STATUS_INVALID },
    { .what = "acquire: valid",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length: 10 + 3 */
             "0000000d"     /* opaque */
             "00000002"     /* resources */
             "00000005"     /* maximum */
             "0003"         /* name length */
             "73656d",      /* name "sem" */
      .result = CNT_DECODE_OK, .size = 25, .opcode = CNT_OP_ACQUIRE,
      .opaque = 13, .resources = 2, .maximum = 5, .name = "sem" },
    { .what = "acquire: resources equal to maximum, both 2^32-1",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length */
             "0000000e"     /* opaque */
             "ffffffff"     /* resources */
             "ffffffff"     /* maximum */
             "0003"         /* name length */
             "73656d",      /* name "sem" */
      .result = CNT_DECODE_OK, .size = 25, .opcode = CNT_OP_ACQUIRE,
      .opaque = 14, .resources = 0xffffffff, .maximum = 0xffffffff,
      .name = "sem" },
    { .what = "acquire: bytes after the name are ignored",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 10 + 3 + 2 */
             "0000000f"     /* opaque */
             "00000001"     /* resources */
             "00000001"     /* maximum */
             "0003"         /* name length */
             "73656d"       /* name "sem" */
             "0000",        /* trailing bytes */
      .result = CNT_DECODE_OK, .size = 27, .opcode = CNT_OP_ACQUIRE,
      .opaque = 15, .resources = 1, .maximum = 1, .name = "sem" },
    { .what = "acquire: body shorter than 10",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 9 < 10 */
             "00000010"     /* opaque */
             "00000001"     /* resources */
             "00000001"     /* maximum */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 21, .opcode = CNT_OP_ACQUIRE,
      .opaque = 16, .status = CNT_STATUS_INVALID },
    { .what = "acquire: resources 0",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length */
             "00000011"     /* opaque */
             "00000000"     /* resources: 0 */
             "00000005"     /* maximum */
             "0003"         /* name length */
             "73656d",      /* name "sem" */
      .result = CNT_DECODE_ERROR, .size = 25, .opcode = CNT_OP_ACQUIRE,
      .opaque = 17, .status = CNT_STATUS_INVALID },
    { .what = "acquire: maximum below resources",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length */
             "00000012"     /* opaque */
             "00000006"     /* resources: 6 */
             "00000005"     /* maximum: 5 */
             "0003"         /* name length */
             "73656d",      /* name "sem" */
      .result = CNT_DECODE_ERROR, .size = 25, .opcode = CNT_OP_ACQUIRE,
      .opaque = 18, .status = CNT_STATUS_INVALID },
    { .what = "acquire: name length 0",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000a"     /* body length: 10 */
             "00000013"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 22, .opcode = CNT_OP_ACQUIRE,
      .opaque = 19, .status = CNT_STATUS_INVALID },
    { .what = "acquire: name runs past the body",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000c"     /* body length: 10 + 2 */
             "00000014"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "0003"         /* name length: 3 */
             "7365",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 24, .opcode = CNT_OP_ACQUIRE,
      .opaque = 20, .status = CNT_STATUS_INVALID },
    { .what = "acquire: several faults at once still answer 0x04",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000a"     /* body length: 10 */
             "00000015"     /* opaque */
             "00000000"     /* resources: 0 (first fault) */
             "00000000"     /* maximum */
             "0005",        /* name length: 5, past the body */
      .result = CNT_DECODE_ERROR, .size = 22, .opcode = CNT_OP_ACQUIRE,
      .opaque = 21, .status = CNT_STATUS_INVALID },
    { .what = "release: valid",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000a"     /* body length: 6 + 4 */
             "00000016"     /* opaque */
             "00000001"     /* resources */
             "0004"         /* name length */
             "6c6f636b",    /* name "lock" */
      .result = CNT_DECODE_OK, .size = 22, .opcode = CNT_OP_RELEASE,
      .opaque = 22, .resources = 1, .name = "lock" },
    { .what = "release: resources 0 is valid",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000a"     /* body length */
             "00000017"     /* opaque */
             "00000000"     /* resources: 0 */
             "0004"         /* name length */
             "6c6f636b",    /* name "lock" */
      .result = CNT_DECODE_OK, .size = 22, .opcode = CNT_OP_RELEASE,
      .opaque = 23, .resources = 0, .name = "lock" },
    { .what = "release: bytes after the name are ignored",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000b"     /* body length: 6 + 4 + 1 */
             "00000018"     /* opaque */
             "00000003"     /* resources */
             "0004"         /* name length */
             "6c6f636b"     /* name "lock" */
             "21",          /* trailing byte */
      .result = CNT_DECODE_OK, .size = 23, .opcode = CNT_OP_RELEASE,
      .opaque = 24, .resources = 3, .name = "lock" },
    { .what = "release: body shorter than 6",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 5 < 6 */
             "00000019"     /* opaque */
             "00000001"     /* resources */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 17, .opcode = CNT_OP_RELEASE,
      .opaque = 25, .status = CNT_STATUS_INVALID },
    { .what = "release: name length 0",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length */
             "0000001a"     /* opaque */
             "00000001"     /* resources */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 18, .opcode = CNT_OP_RELEASE,
      .opaque = 26, .status = CNT_STATUS_INVALID },
    { .what = "release: name runs past the body",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000007"     /* body length: 6 + 1 */
             "0000001b"     /* opaque */
             "00000001"     /* resources */
             "0004"         /* name length: 4 */
             "6c",          /* only 1 name byte */
      .result = CNT_DECODE_ERROR, .size = 19, .opcode = CNT_OP_RELEASE,
      .opaque = 27, .status = CNT_STATUS_INVALID },
    { .what = "wait_acquire: valid",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000015"     /* body length: 18 + 3 */
             "00000030"     /* opaque */
             "00000002"     /* resources */
             "00000005"     /* maximum */
             "000003e8"     /* wait_ms: 1000 */
             "00007530"     /* lease_ms: 30000 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 33, .opcode = CNT_OP_WAIT_ACQUIRE,
      .opaque = 0x30, .resources = 2, .maximum = 5, .wait_ms = 1000,
      .lease_ms = 30000, .name = "job" },
    { .what = "wait_acquire: maximum 0, group's wait and lease",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000015"     /* body length: 18 + 3 */
             "00000031"     /* opaque */
             "00000001"     /* resources */
             "00000000"     /* maximum: 0, the group's */
             "ffffffff"     /* wait_ms: the group's default */
             "ffffffff"     /* lease_ms: the group's default */
             "0003"         /* name length */
             "677270",      /* name "grp" */
      .result = CNT_DECODE_OK, .size = 33, .opcode = CNT_OP_WAIT_ACQUIRE,
      .opaque = 0x31, .resources = 1, .maximum = 0,
      .wait_ms = CNT_USE_GROUP_DEFAULT, .lease_ms = CNT_USE_GROUP_DEFAULT,
      .name = "grp" },
    { .what = "wait_acquire: maximum below resources is the server's 0x23",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000015"     /* body length: 18 + 3 */
             "00000032"     /* opaque */
             "00000006"     /* resources: 6 */
             "00000005"     /* maximum: 5 */
             "00000000"     /* wait_ms: 0, do not queue */
             "00000000"     /* lease_ms: 0, no lease */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 33, .opcode = CNT_OP_WAIT_ACQUIRE,
      .opaque = 0x32, .resources = 6, .maximum = 5, .name = "job" },
    { .what = "wait_acquire: bytes after the name are ignored",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000014"     /* body length: 18 + 1 + 1 */
             "00000033"     /* opaque */
             "00000001"     /* resources */
             "00000001"     /* maximum */
             "00000002"     /* wait_ms */
             "00000003"     /* lease_ms */
             "0001"         /* name length */
             "6b"           /* name "k" */
             "ff",          /* trailing byte */
      .result = CNT_DECODE_OK, .size = 32, .opcode = CNT_OP_WAIT_ACQUIRE,
      .opaque = 0x33, .resources = 1, .maximum = 1, .wait_ms = 2,
      .lease_ms = 3, .name = "k" },
    { .what = "wait_acquire: body shorter than 18",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000011"     /* body length: 17 < 18 */
             "00000034"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "00000000"     /* wait_ms */
             "00000000"     /* lease_ms */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 29,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x34,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_acquire: an Acquire-sized body is too short",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length: 10 + 3, Acquire's layout */
             "00000035"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "0003"         /* Acquire's name length */
             "6a6f62",      /* Acquire's name */
      .result = CNT_DECODE_ERROR, .size = 25,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x35,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_acquire: resources 0",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000015"     /* body length: 18 + 3 */
             "00000036"     /* opaque */
             "00000000"     /* resources: 0 */
             "00000005"     /* maximum */
             "000003e8"     /* wait_ms */
             "00000000"     /* lease_ms */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 33,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x36,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_acquire: name length 0",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000012"     /* body length: 18 */
             "00000037"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "000003e8"     /* wait_ms */
             "00000000"     /* lease_ms */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 30,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x37,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_acquire: name runs past the body",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00000014"     /* body length: 18 + 2 */
             "00000038"     /* opaque */
             "00000001"     /* resources */
             "00000005"     /* maximum */
             "000003e8"     /* wait_ms */
             "00000000"     /* lease_ms */
             "0003"         /* name length: 3 */
             "6a6f",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 32,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x38,
      .status = CNT_STATUS_INVALID },
    { .what = "renew: valid",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 6 + 3 */
             "00000039"     /* opaque */
             "00001388"     /* lease_ms: 5000 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 21, .opcode = CNT_OP_RENEW,
      .opaque = 0x39, .lease_ms = 5000, .name = "job" },
    { .what = "renew: the group's default lease",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000a"     /* body length: 6 + 3 + 1 */
             "0000003a"     /* opaque */
             "ffffffff"     /* lease_ms: the group's default */
             "0003"         /* name length */
             "677270"       /* name "grp" */
             "00",          /* trailing byte, ignored */
      .result = CNT_DECODE_OK, .size = 22, .opcode = CNT_OP_RENEW,
      .opaque = 0x3a, .lease_ms = CNT_USE_GROUP_DEFAULT, .name = "grp" },
    { .what = "renew: lease 0",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 6 + 3 */
             "0000003b"     /* opaque */
             "00000000"     /* lease_ms: 0 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 21, .opcode = CNT_OP_RENEW,
      .opaque = 0x3b, .status = CNT_STATUS_INVALID },
    { .what = "renew: body shorter than 6",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 5 < 6 */
             "0000003c"     /* opaque */
             "00001388"     /* lease_ms */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 17, .opcode = CNT_OP_RENEW,
      .opaque = 0x3c, .status = CNT_STATUS_INVALID },
    { .what = "renew: name length 0",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length: 6 */
             "0000003d"     /* opaque */
             "00001388"     /* lease_ms */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 18, .opcode = CNT_OP_RENEW,
      .opaque = 0x3d, .status = CNT_STATUS_INVALID },
    { .what = "renew: name runs past the body",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "00000008"     /* body length: 6 + 2 */
             "0000003e"     /* opaque */
             "00001388"     /* lease_ms */
             "0003"         /* name length: 3 */
             "6a6f",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 20, .opcode = CNT_OP_RENEW,
      .opaque = 0x3e, .status = CNT_STATUS_INVALID },
    { .what = "wait_release: valid",
      .hex = "90"           /* magic */
             "22"           /* opcode: Wait_release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "0000003f"     /* opaque */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_WAIT_RELEASE,
      .opaque = 0x3f, .name = "job" },
    { .what = "wait_release: empty body",
      .hex = "90"           /* magic */
             "22"           /* opcode: Wait_release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 2 */
             "00000040",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12,
      .opcode = CNT_OP_WAIT_RELEASE, .opaque = 0x40,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_release: body shorter than 2",
      .hex = "90"           /* magic */
             "22"           /* opcode: Wait_release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "00000041"     /* opaque */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 13,
      .opcode = CNT_OP_WAIT_RELEASE, .opaque = 0x41,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_release: name length 0",
      .hex = "90"           /* magic */
             "22"           /* opcode: Wait_release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000042"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14,
      .opcode = CNT_OP_WAIT_RELEASE, .opaque = 0x42,
      .status = CNT_STATUS_INVALID },
    { .what = "wait_release: name runs past the body",
      .hex = "90"           /* magic */
             "22"           /* opcode: Wait_release */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 2 + 2 */
             "00000043"     /* opaque */
             "0003"         /* name length: 3 */
             "6a6f",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 16,
      .opcode = CNT_OP_WAIT_RELEASE, .opaque = 0x43,
      .status = CNT_STATUS_INVALID },
    { .what = "queues",
      .hex = "90"           /* magic */
             "23"           /* opcode: Queues */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000044",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_QUEUES, .opaque = 0x44 },
    { .what = "queues with a body: answered at the header, body skipped",
      .hex = "90"           /* magic */
             "23"           /* opcode: Queues */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000045"     /* opaque */
             "0001",        /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 14,
      .opcode = CNT_OP_QUEUES, .opaque = 0x45 },
    { .what = "ttl_insert: valid",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length: 19 + 3 */
             "00000050"     /* opaque */
             "0000000000000005" /* quota: 5 */
             "0000000000000003" /* ttl: 3 */
             "03"           /* unit: s */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x50, .quota = 5, .ttl = 3, .unit = 3, .name = "job" },
    { .what = "ttl_insert: quota 0, the longest ttl in hours",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000051"     /* opaque */
             "0000000000000000" /* quota: 0 */
             "00000000004e2fff" /* ttl: 5124095 */
             "05"           /* unit: h */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x51, .ttl = 5124095, .unit = 5, .name = "job" },
    { .what = "ttl_insert: ttl 2^64 - 1 ns",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000052"     /* opaque */
             "ffffffffffffffff" /* quota: 2^64 - 1 */
             "ffffffffffffffff" /* ttl: 2^64 - 1 */
             "00"           /* unit: ns */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x52, .quota = UINT64_MAX, .ttl = UINT64_MAX, .name = "job" },
    { .what = "ttl_insert: bytes after the name are ignored",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000018"     /* body length */
             "00000053"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "0000000000000001" /* ttl: 1 */
             "02"           /* unit: ms */
             "0003"         /* name length */
             "6a6f62"       /* name "job" */
             "7a7a",        /* trailing "zz" */
      .result = CNT_DECODE_OK, .size = 36, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x53, .quota = 1, .ttl = 1, .unit = 2, .name = "job" },
    { .what = "ttl_insert: ttl in ns past 2^64 - 1",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000054"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "00000000004e3000" /* ttl: 5124096 */
             "05"           /* unit: h */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x54, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: ttl 0",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000055"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "0000000000000000" /* ttl: 0 */
             "03"           /* unit: s */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x55, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: unit 6",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000056"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "0000000000000001" /* ttl: 1 */
             "06"           /* unit: 6, unknown */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x56, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: unit 255",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "00000057"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "0000000000000001" /* ttl: 1 */
             "ff"           /* unit: 255, unknown */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x57, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: body shorter than 19",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000012"     /* body length: 18 < 19 */
             "00000058"     /* opaque */
             "0000000000000001" /* quota */
             "0000000000000001" /* ttl */
             "03"           /* unit */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 30, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x58, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: name length 0",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000013"     /* body length */
             "00000059"     /* opaque */
             "0000000000000001" /* quota: 1 */
             "0000000000000001" /* ttl: 1 */
             "03"           /* unit: s */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 31, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x59, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert: name runs past the body",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "0000005a"     /* opaque */
             "0000000000000001" /* quota */
             "0000000000000001" /* ttl */
             "03"           /* unit */
             "0004"         /* name length: 4 */
             "6a6f62",      /* only 3 name bytes */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x5a, .status = CNT_STATUS_INVALID },
    { .what = "ttl_query: valid",
      .hex = "90"           /* magic */
             "31"           /* opcode: Ttl_query */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "0000005b"     /* opaque */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_TTL_QUERY,
      .opaque = 0x5b, .name = "job" },
    { .what = "ttl_query: empty body",
      .hex = "90"           /* magic */
             "31"           /* opcode: Ttl_query */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 2 */
             "0000005c",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_TTL_QUERY,
      .opaque = 0x5c, .status = CNT_STATUS_INVALID },
    { .what = "ttl_query: name length 0",
      .hex = "90"           /* magic */
             "31"           /* opcode: Ttl_query */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length */
             "0000005d"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_TTL_QUERY,
      .opaque = 0x5d, .status = CNT_STATUS_INVALID },
    { .what = "ttl_query: name runs past the body",
      .hex = "90"           /* magic */
             "31"           /* opcode: Ttl_query */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length */
             "0000005e"     /* opaque */
             "0003"         /* name length: 3 */
             "6a6f",        /* only 2 name bytes */
      .result = CNT_DECODE_ERROR, .size = 16, .opcode = CNT_OP_TTL_QUERY,
      .opaque = 0x5e, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: quota increase",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length: 13 + 3 */
             "0000005f"     /* opaque */
             "00"           /* attribute: 0 */
             "01"           /* change: 1 */
             "00"           /* unit: ns */
             "0000000000000007" /* value: 7 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x5f, .quota = 7, .change = 1, .name = "job" },
    { .what = "ttl_update: quota patch to 0",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000060"     /* opaque */
             "00"           /* attribute: 0 */
             "00"           /* change: 0 */
             "03"           /* unit: s */
             "0000000000000000" /* value: 0 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x60, .unit = 3, .name = "job" },
    { .what = "ttl_update: ttl patch",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000061"     /* opaque */
             "01"           /* attribute: 1 */
             "00"           /* change: 0 */
             "02"           /* unit: ms */
             "00000000000000fa" /* value: 250 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x61, .attribute = 1, .unit = 2, .quota = 250, .name = "job" },
    { .what = "ttl_update: ttl decrease of 2^64 - 1 hours: the server's",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000062"     /* opaque */
             "01"           /* attribute: 1 */
             "02"           /* change: 2 */
             "05"           /* unit: h */
             "ffffffffffffffff" /* value: 2^64 - 1 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x62, .attribute = 1, .change = 2, .unit = 5,
      .quota = UINT64_MAX, .name = "job" },
    { .what = "ttl_update: ttl increase by 0",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000063"     /* opaque */
             "01"           /* attribute: 1 */
             "01"           /* change: 1 */
             "03"           /* unit: s */
             "0000000000000000" /* value: 0 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x63, .attribute = 1, .change = 1, .unit = 3, .name = "job" },
    { .what = "ttl_update: ttl patch to 0",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000064"     /* opaque */
             "01"           /* attribute: 1 */
             "00"           /* change: 0 */
             "03"           /* unit: s */
             "0000000000000000" /* value: 0 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x64, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: attribute 2",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000065"     /* opaque */
             "02"           /* attribute: 2 */
             "00"           /* change: 0 */
             "03"           /* unit: s */
             "0000000000000001" /* value: 1 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x65, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: change 3",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000066"     /* opaque */
             "00"           /* attribute: 0 */
             "03"           /* change: 3 */
             "03"           /* unit: s */
             "0000000000000001" /* value: 1 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x66, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: unit 6 with the quota",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length */
             "00000067"     /* opaque */
             "00"           /* attribute: 0 */
             "01"           /* change: 1 */
             "06"           /* unit: 6, unknown */
             "0000000000000001" /* value: 1 */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_ERROR, .size = 28, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x67, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: body shorter than 13",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000b"     /* body length: 11 < 13 */
             "00000068"     /* opaque */
             "00"           /* attribute */
             "01"           /* change */
             "00"           /* unit */
             "0000000000000001", /* value */
      .result = CNT_DECODE_ERROR, .size = 23, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x68, .status = CNT_STATUS_INVALID },
    { .what = "ttl_update: name length 0",
      .hex = "90"           /* magic */
             "32"           /* opcode: Ttl_update */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length */
             "00000069"     /* opaque */
             "00"           /* attribute: 0 */
             "01"           /* change: 1 */
             "00"           /* unit: ns */
             "0000000000000001" /* value: 1 */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 25, .opcode = CNT_OP_TTL_UPDATE,
      .opaque = 0x69, .status = CNT_STATUS_INVALID },
    { .what = "ttl_purge: valid",
      .hex = "90"           /* magic */
             "33"           /* opcode: Ttl_purge */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "0000006a"     /* opaque */
             "0003"         /* name length */
             "6a6f62",      /* name "job" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_TTL_PURGE,
      .opaque = 0x6a, .name = "job" },
    { .what = "ttl_purge: body shorter than 2",
      .hex = "90"           /* magic */
             "33"           /* opcode: Ttl_purge */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "0000006b"     /* opaque */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 13, .opcode = CNT_OP_TTL_PURGE,
      .opaque = 0x6b, .status = CNT_STATUS_INVALID },
    { .what = "ttl_purge: name length 0",
      .hex = "90"           /* magic */
             "33"           /* opcode: Ttl_purge */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length */
             "0000006c"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_TTL_PURGE,
      .opaque = 0x6c, .status = CNT_STATUS_INVALID },
    { .what = "window_check: valid, defaults",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length: 22 + 3 */
             "0000006d"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x6d, .limit = 10, .cost = 1, .name = "api" },
    { .what = "window_check: peek, reserved ignored, limit 0",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "0000006e"     /* opaque */
             "01"           /* flags: 0x1 */
             "04"           /* slots: 4 */
             "abcd"         /* reserved: ignored */
             "00000000"     /* limit: 0 */
             "00000003"     /* cost: 3 */
             "0000000000000fa0" /* window_ns: 4000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x6e, .flags = 1, .slots = 4, .cost = 3, .period_ns = 4000,
      .name = "api" },
    { .what = "window_check: 64 slots of 1 us",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "0000006f"     /* opaque */
             "00"           /* flags */
             "40"           /* slots: 64 */
             "0000"         /* reserved */
             "00000005"     /* limit: 5 */
             "00000001"     /* cost: 1 */
             "000000000000fa00" /* window_ns: 64000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x6f, .slots = 64, .limit = 5, .cost = 1, .period_ns = 64000,
      .name = "api" },
    { .what = "window_check: 10 default slots of 1 us",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000070"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "00000005"     /* limit: 5 */
             "00000001"     /* cost: 1 */
             "0000000000002710" /* window_ns: 10000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x70, .limit = 5, .cost = 1, .period_ns = 10000,
      .name = "api" },
    { .what = "window_check: one slot of 2^64 - 1 ns",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000071"     /* opaque */
             "00"           /* flags */
             "01"           /* slots: 1 */
             "0000"         /* reserved */
             "00000005"     /* limit: 5 */
             "ffffffff"     /* cost: 4294967295 */
             "ffffffffffffffff" /* window_ns: 2^64 - 1 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x71, .slots = 1, .limit = 5, .cost = 0xffffffff,
      .period_ns = UINT64_MAX, .name = "api" },
    { .what = "window_check: flag bit 1",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000072"     /* opaque */
             "02"           /* flags: 0x2 */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x72, .status = CNT_STATUS_INVALID },
    { .what = "window_check: flags 0x81",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000073"     /* opaque */
             "81"           /* flags: 0x81 */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x73, .status = CNT_STATUS_INVALID },
    { .what = "window_check: 65 slots",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000074"     /* opaque */
             "00"           /* flags */
             "41"           /* slots: 65 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "000000000000fde8" /* window_ns: 65000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x74, .status = CNT_STATUS_INVALID },
    { .what = "window_check: slot of 999 ns",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000075"     /* opaque */
             "00"           /* flags */
             "40"           /* slots: 64 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "000000000000f9c0" /* window_ns: 63936 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x75, .status = CNT_STATUS_INVALID },
    { .what = "window_check: default slots, slot of 999 ns",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000076"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000002706" /* window_ns: 9990 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x76, .status = CNT_STATUS_INVALID },
    { .what = "window_check: window not a multiple of slots",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000077"     /* opaque */
             "00"           /* flags */
             "03"           /* slots: 3 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "000000003b9aca00" /* window_ns: 1000000000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x77, .status = CNT_STATUS_INVALID },
    { .what = "window_check: default window not a multiple of 7",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000078"     /* opaque */
             "00"           /* flags */
             "07"           /* slots: 7 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x78, .status = CNT_STATUS_INVALID },
    { .what = "window_check: cost 0",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000079"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000000"     /* cost: 0 */
             "0000000000000000" /* window_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x79, .status = CNT_STATUS_INVALID },
    { .what = "window_check: body shorter than 22",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000015"     /* body length: 21 < 22 */
             "0000007a"     /* opaque */
             "00"           /* flags */
             "00"           /* slots */
             "0000"         /* reserved */
             "00000001"     /* limit */
             "00000001"     /* cost */
             "0000000000000000" /* window_ns */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 33, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x7a, .status = CNT_STATUS_INVALID },
    { .what = "window_check: name length 0",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000016"     /* body length */
             "0000007b"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 34, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x7b, .status = CNT_STATUS_INVALID },
    { .what = "window_check: name runs past the body",
      .hex = "90"           /* magic */
             "34"           /* opcode: Window_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "0000007c"     /* opaque */
             "00"           /* flags */
             "00"           /* slots: 0 */
             "0000"         /* reserved */
             "0000000a"     /* limit: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* window_ns: 0 */
             "0004"         /* name length: 4 */
             "617069",      /* only 3 name bytes */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_WINDOW_CHECK,
      .opaque = 0x7c, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: valid",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length: 26 + 3 */
             "0000007d"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "0000000a"     /* count: 10 */
             "00000001"     /* cost: 1 */
             "000000003b9aca00" /* period_ns: 1000000000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x7d, .limit = 5, .count = 10, .cost = 1,
      .period_ns = 1000000000, .name = "api" },
    { .what = "gcra_check: peek, burst 0, reserved ignored",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "0000007e"     /* opaque */
             "01"           /* flags: 0x1 */
             "ffffff"       /* reserved: ignored */
             "00000000"     /* burst: 0 */
             "000f4240"     /* count: 1000000 */
             "00000002"     /* cost: 2 */
             "0000000000000001" /* period_ns: 1 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_OK, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x7e, .flags = 1, .count = 1000000, .cost = 2,
      .period_ns = 1, .name = "api" },
    { .what = "gcra_check: flag bit 7",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "0000007f"     /* opaque */
             "80"           /* flags: 0x80 */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "0000000a"     /* count: 10 */
             "00000001"     /* cost: 1 */
             "000000003b9aca00" /* period_ns: 1000000000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x7f, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: count 0",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "00000080"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "00000000"     /* count: 0 */
             "00000001"     /* cost: 1 */
             "000000003b9aca00" /* period_ns: 1000000000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x80, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: cost 0",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "00000081"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "0000000a"     /* count: 10 */
             "00000000"     /* cost: 0 */
             "000000003b9aca00" /* period_ns: 1000000000 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x81, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: period 0",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "00000082"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "0000000a"     /* count: 10 */
             "00000001"     /* cost: 1 */
             "0000000000000000" /* period_ns: 0 */
             "0003"         /* name length */
             "617069",      /* name "api" */
      .result = CNT_DECODE_ERROR, .size = 41, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x82, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: body shorter than 26",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length: 25 < 26 */
             "00000083"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000001"     /* burst */
             "00000001"     /* count */
             "00000001"     /* cost */
             "0000000000000001" /* period_ns */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x83, .status = CNT_STATUS_INVALID },
    { .what = "gcra_check: name length 0",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001a"     /* body length */
             "00000084"     /* opaque */
             "00"           /* flags */
             "000000"       /* reserved */
             "00000005"     /* burst: 5 */
             "0000000a"     /* count: 10 */
             "00000001"     /* cost: 1 */
             "000000003b9aca00" /* period_ns: 1000000000 */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 38, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x84, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: a window and a gcra on one name",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000003a"     /* body length */
             "00000085"     /* opaque */
             "00"           /* flags */
             "02"           /* count: 2 */
             "34"           /* item opcode: Window_check */
             "0017"         /* item length: 23 */
             "00"           /*   flags */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0001"         /*   name length */
             "61"           /*   name "a" */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_OK, .size = 70, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x85, .item_count = 2 },
    { .what = "multi_check: peek, one item",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000020"     /* body length */
             "00000086"     /* opaque */
             "01"           /* flags: 0x1 */
             "01"           /* count: 1 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_OK, .size = 44, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x86, .flags = 1, .item_count = 1 },
    { .what = "multi_check: empty body",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000087",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x87, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: body shorter than 2",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length */
             "00000088"     /* opaque */
             "01",          /* flags only */
      .result = CNT_DECODE_ERROR, .size = 13, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x88, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: flag bit 1",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000020"     /* body length */
             "00000089"     /* opaque */
             "02"           /* flags: 0x2 */
             "01"           /* count: 1 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 44, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x89, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: count 0",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length */
             "0000008a"     /* opaque */
             "00"           /* flags */
             "00",          /* count: 0 */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8a, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: count 0 with an item",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000020"     /* body length */
             "0000008b"     /* opaque */
             "00"           /* flags */
             "00"           /* count: 0 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 44, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8b, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: count 2, one item",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000020"     /* body length */
             "0000008c"     /* opaque */
             "00"           /* flags */
             "02"           /* count: 2 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 44, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8c, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: count 1, two items",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000003a"     /* body length */
             "0000008d"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "34"           /* item opcode: Window_check */
             "0017"         /* item length: 23 */
             "00"           /*   flags */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0001"         /*   name length */
             "61"           /*   name "a" */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 70, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8d, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: a byte after the items",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000021"     /* body length */
             "0000008e"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61"           /*   name "a" */
             "00",          /* one byte too many */
      .result = CNT_DECODE_ERROR, .size = 45, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8e, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: same kind and name twice",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000003e"     /* body length */
             "0000008f"     /* opaque */
             "00"           /* flags */
             "02"           /* count: 2 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000001"     /*   cost: 1 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61"           /*   name "a" */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000009"     /*   burst: 9 */
             "00000009"     /*   count: 9 */
             "00000009"     /*   cost: 9 */
             "0000000000000009" /*   period_ns: 9 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 74, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x8f, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item opcode Ttl_insert",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000019"     /* body length */
             "00000090"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "30"           /* item opcode: Ttl_insert */
             "0014"         /* item length: 20 */
             "0000000000000001" /*   quota: 1 */
             "0000000000000001" /*   ttl: 1 */
             "03"           /*   unit: s */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 37, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x90, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item opcode Multi_check",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000025"     /* body length */
             "00000091"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "36"           /* item opcode: Multi_check */
             "0020"         /* item length: 32 */
             "00"           /*   flags */
             "01"           /*   count: 1 */
             "35"           /*   item opcode: Gcra_check */
             "001b"         /*   item length: 27 */
             "00"           /*     flags */
             "000000"       /*     reserved */
             "00000005"     /*     burst: 5 */
             "0000000a"     /*     count: 10 */
             "00000001"     /*     cost: 1 */
             "000000003b9aca00" /*     period_ns: 1000000000 */
             "0001"         /*     name length */
             "61",          /*     name "a" */
      .result = CNT_DECODE_ERROR, .size = 49, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x91, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item with its own peek flag",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001c"     /* body length */
             "00000092"     /* opaque */
             "01"           /* flags: 0x1 */
             "01"           /* count: 1 */
             "34"           /* item opcode: Window_check */
             "0017"         /* item length: 23 */
             "01"           /*   flags: 0x1 */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 40, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x92, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item body invalid (cost 0)",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00000020"     /* body length */
             "00000093"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "35"           /* item opcode: Gcra_check */
             "001b"         /* item length: 27 */
             "00"           /*   flags */
             "000000"       /*   reserved */
             "00000005"     /*   burst: 5 */
             "0000000a"     /*   count: 10 */
             "00000000"     /*   cost: 0 */
             "000000003b9aca00" /*   period_ns: 1000000000 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 44, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x93, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item length past the body",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001c"     /* body length */
             "00000094"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "34"           /* item opcode: Window_check */
             "001a"         /* item length: 26 (one past) */
             "00"           /*   flags */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0001"         /*   name length */
             "61",          /*   name "a" */
      .result = CNT_DECODE_ERROR, .size = 40, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x94, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item header cut short",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001e"     /* body length */
             "00000095"     /* opaque */
             "00"           /* flags */
             "02"           /* count: 2 */
             "34"           /* item opcode: Window_check */
             "0017"         /* item length: 23 */
             "00"           /*   flags */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0001"         /*   name length */
             "61"           /*   name "a" */
             "34"           /* item opcode */
             "00",          /* half an item length */
      .result = CNT_DECODE_ERROR, .size = 42, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x95, .status = CNT_STATUS_INVALID },
    { .what = "multi_check: item name past its item",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0000001d"     /* body length */
             "00000096"     /* opaque */
             "00"           /* flags */
             "01"           /* count: 1 */
             "34"           /* item opcode: Window_check */
             "0017"         /* item length: 23 (one short) */
             "00"           /*   flags */
             "00"           /*   slots: 0 */
             "0000"         /*   reserved */
             "0000000a"     /*   limit: 10 */
             "00000001"     /*   cost: 1 */
             "0000000000000000" /*   window_ns: 0 */
             "0002"         /*   name length */
             "6162",        /*   name "ab" */
      .result = CNT_DECODE_ERROR, .size = 41, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x96, .status = CNT_STATUS_INVALID },
    { .what = "unknown opcode: 0x81, opcode kept, body skipped",
      .hex = "90"           /* magic */
             "25"           /* opcode: 0x25, unknown (the first one
                             * after the waiting extensions) */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length */
             "0000001c"     /* opaque */
             "010203",      /* body, to be skipped */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 15,
      .opcode = 0x25, .opaque = 28, .status = CNT_STATUS_UNKNOWN_COMMAND },
    { .what = "unknown opcode 0x04 without a body",
      .hex = "90"           /* magic */
             "04"           /* opcode: 0x04, unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "0000001d",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 12,
      .opcode = 0x04, .opaque = 29, .status = CNT_STATUS_UNKNOWN_COMMAND },
    { .what = "bad magic: 0x04, body skipped",
      .hex = "80"           /* magic: wrong */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length */
             "0000001e"     /* opaque */
             "0000",        /* body, to be skipped */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 14,
      .opcode = CNT_OP_GET, .opaque = 30, .status = CNT_STATUS_INVALID },
    { .what = "bad magic: a response magic sent as a request",
      .hex = "91"           /* magic: response, not request */
             "00"           /* opcode: Noop */
             "00"           /* status */
             "00"           /* reserved */
             "00000000"     /* body length */
             "0000001f",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 12,
      .opcode = CNT_OP_NOOP, .opaque = 31, .status = CNT_STATUS_INVALID },
    { .what = "bad magic, largest plausible body: 0x04 at the header",
      .hex = "00"           /* magic: wrong */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00010019"     /* body length: CNT_BODY_MAX */
             "00000020",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX, .opcode = CNT_OP_ACQUIRE, .opaque = 32,
      .status = CNT_STATUS_INVALID },
    { .what = "bad magic, body one past the largest: close",
      .hex = "00"           /* magic: wrong */
             "02"           /* opcode */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "00000021",    /* opaque */
      .result = CNT_DECODE_CLOSE, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_ACQUIRE, .opaque = 33 },
    { .what = "text protocol on the counter port: close",
      .hex = "67657420"     /* "get ": magic 'g', opcode 'e', ... */
             "636f756e"     /* "coun": body length 0x636f756e */
             "7465720a",    /* "ter\n": opaque */
      .result = CNT_DECODE_CLOSE, .at_header = true,
      .size = 12 + (uint64_t)0x636f756e, .opcode = 'e',
      .opaque = 0x7465720a },
    { .what = "get declaring 4 GiB: 0x04 at the header",
      .hex = "90"           /* magic */
             "01"           /* opcode: Get */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000022",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_GET,
      .opaque = 34, .status = CNT_STATUS_INVALID },
    { .what = "release declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "03"           /* opcode: Release */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "00000023",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_RELEASE,
      .opaque = 35, .status = CNT_STATUS_INVALID },
    { .what = "acquire declaring the largest body: waits for it",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00010019"     /* body length: CNT_BODY_MAX (bytes after
                             * the name are ignored) */
             "00000024",    /* opaque */
      .result = CNT_DECODE_NEED_MORE, .size = CNT_REQUEST_MAX,
      .opcode = CNT_OP_ACQUIRE, .opaque = 36 },
    { .what = "noop declaring 4 GiB: answered, body skipped",
      .hex = "90"           /* magic */
             "00"           /* opcode: Noop */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000025",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_NOOP,
      .opaque = 37 },
    { .what = "wait_acquire declaring the largest body: waits for it",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00010019"     /* body length: CNT_BODY_MAX (bytes after
                             * the name are ignored) */
             "00000046",    /* opaque */
      .result = CNT_DECODE_NEED_MORE, .size = CNT_REQUEST_MAX,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x46 },
    { .what = "wait_acquire declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "00000047",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_WAIT_ACQUIRE,
      .opaque = 0x47, .status = CNT_STATUS_INVALID },
    { .what = "renew declaring 4 GiB: 0x04 at the header",
      .hex = "90"           /* magic */
             "21"           /* opcode: Renew */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000048",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_RENEW,
      .opaque = 0x48, .status = CNT_STATUS_INVALID },
    { .what = "queues declaring 4 GiB: answered, body skipped",
      .hex = "90"           /* magic */
             "23"           /* opcode: Queues */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000049",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_QUEUES,
      .opaque = 0x49 },
    { .what = "gcra_check declaring the largest body: waits for it",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "00010019"     /* body length: CNT_BODY_MAX, 26 + 65535 */
             "00000097",    /* opaque */
      .result = CNT_DECODE_NEED_MORE, .size = CNT_REQUEST_MAX,
      .opcode = CNT_OP_GCRA_CHECK, .opaque = 0x97 },
    { .what = "gcra_check declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "35"           /* opcode: Gcra_check */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "00000098",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_GCRA_CHECK,
      .opaque = 0x98, .status = CNT_STATUS_INVALID },
    { .what = "multi_check declaring 4 GiB: 0x04 at the header",
      .hex = "90"           /* magic */
             "36"           /* opcode: Multi_check */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000099",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_MULTI_CHECK,
      .opaque = 0x99, .status = CNT_STATUS_INVALID },
    { .what = "ttl_insert declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "30"           /* opcode: Ttl_insert */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "0000009a",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_TTL_INSERT,
      .opaque = 0x9a, .status = CNT_STATUS_INVALID },
    { .what = "unknown opcode 0x38, after the rate limits: 0x81",
      .hex = "90"           /* magic */
             "38"           /* opcode: 0x38, unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length */
             "0000009b"     /* opaque */
             "00",          /* body, to be skipped */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 13,
      .opcode = 0x38, .opaque = 0x9b, .status = CNT_STATUS_UNKNOWN_COMMAND },
    { .what = "unknown opcode 0x2f, before the rate limits: 0x81",
      .hex = "90"           /* magic */
             "2f"           /* opcode: 0x2f, unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "0000009c",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 12,
      .opcode = 0x2f, .opaque = 0x9c, .status = CNT_STATUS_UNKNOWN_COMMAND },
    /* ---- Tenant throttling (0x40-0x49) ---- */
    { .what = "auth: valid",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "00000400"     /* opaque */
             "0003"         /* secret length */
             "736563",      /* secret "sec" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_AUTH,
      .opaque = 0x400, .secret = "sec" },
    { .what = "auth: bytes after the secret are ignored",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length: 2 + 1 + 3 */
             "00000401"     /* opaque */
             "0001"         /* secret length */
             "78"           /* secret "x" */
             "797a77",      /* trailing "yzw" */
      .result = CNT_DECODE_OK, .size = 18, .opcode = CNT_OP_AUTH,
      .opaque = 0x401, .secret = "x" },
    { .what = "auth: empty body",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 2 */
             "00000402",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_AUTH,
      .opaque = 0x402, .status = CNT_STATUS_INVALID },
    { .what = "auth: body shorter than 2",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "00000403"     /* opaque */
             "00",          /* half a secret length */
      .result = CNT_DECODE_ERROR, .size = 13, .opcode = CNT_OP_AUTH,
      .opaque = 0x403, .status = CNT_STATUS_INVALID },
    { .what = "auth: empty secret",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 2 + 1 */
             "00000404"     /* opaque */
             "0000"         /* secret length: 0 */
             "73",          /* a byte that is no secret */
      .result = CNT_DECODE_ERROR, .size = 15, .opcode = CNT_OP_AUTH,
      .opaque = 0x404, .status = CNT_STATUS_INVALID },
    { .what = "auth: secret running past the body",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 2 + 2 */
             "00000405"     /* opaque */
             "0003"         /* secret length: 3 > 2 left */
             "7365",        /* "se" */
      .result = CNT_DECODE_ERROR, .size = 16, .opcode = CNT_OP_AUTH,
      .opaque = 0x405, .status = CNT_STATUS_INVALID },
    { .what = "auth declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "40"           /* opcode: Auth */
             "00"           /* flags */
             "00"           /* reserved */
             "0001001a"     /* body length: CNT_BODY_MAX + 1 */
             "00000406",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_AUTH,
      .opaque = 0x406, .status = CNT_STATUS_INVALID },
    { .what = "throttle: valid",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 6 + 3 */
             "00000410"     /* opaque */
             "00000005"     /* units: 5 */
             "0003"         /* name length */
             "74656e",      /* tenant "ten" */
      .result = CNT_DECODE_OK, .size = 21, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x410, .units = 5, .name = "ten" },
    { .what = "throttle: the most units, bytes after the name ignored",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 6 + 1 + 2 */
             "00000411"     /* opaque */
             "ffffffff"     /* units: 2^32 - 1 */
             "0001"         /* name length */
             "74"           /* tenant "t" */
             "7878",        /* trailing "xx" */
      .result = CNT_DECODE_OK, .size = 21, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x411, .units = 0xffffffffu, .name = "t" },
    { .what = "throttle: units 0",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000009"     /* body length: 6 + 3 */
             "00000412"     /* opaque */
             "00000000"     /* units: 0 */
             "0003"         /* name length */
             "74656e",      /* tenant "ten" */
      .result = CNT_DECODE_ERROR, .size = 21, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x412, .status = CNT_STATUS_INVALID },
    { .what = "throttle: body shorter than 6",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 5 < 6 */
             "00000413"     /* opaque */
             "00000001"     /* units */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 17, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x413, .status = CNT_STATUS_INVALID },
    { .what = "throttle: empty tenant",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length: 6 */
             "00000414"     /* opaque */
             "00000001"     /* units */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 18, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x414, .status = CNT_STATUS_INVALID },
    { .what = "throttle: tenant running past the body",
      .hex = "90"           /* magic */
             "41"           /* opcode: Throttle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000008"     /* body length: 6 + 2 */
             "00000415"     /* opaque */
             "00000001"     /* units */
             "0003"         /* name length: 3 > 2 left */
             "7465",        /* "te" */
      .result = CNT_DECODE_ERROR, .size = 20, .opcode = CNT_OP_THROTTLE,
      .opaque = 0x415, .status = CNT_STATUS_INVALID },
    { .what = "tenant_show: valid",
      .hex = "90"           /* magic */
             "42"           /* opcode: Tenant_show */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "00000420"     /* opaque */
             "0003"         /* name length */
             "74656e",      /* tenant "ten" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_TENANT_SHOW,
      .opaque = 0x420, .name = "ten" },
    { .what = "tenant_show: empty body",
      .hex = "90"           /* magic */
             "42"           /* opcode: Tenant_show */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 2 */
             "00000421",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_TENANT_SHOW,
      .opaque = 0x421, .status = CNT_STATUS_INVALID },
    { .what = "tenant_show: empty tenant",
      .hex = "90"           /* magic */
             "42"           /* opcode: Tenant_show */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000422"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_TENANT_SHOW,
      .opaque = 0x422, .status = CNT_STATUS_INVALID },
    { .what = "tenant_show: tenant running past the body",
      .hex = "90"           /* magic */
             "42"           /* opcode: Tenant_show */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 2 + 1 */
             "00000423"     /* opaque */
             "0002"         /* name length: 2 > 1 left */
             "74",          /* "t" */
      .result = CNT_DECODE_ERROR, .size = 15, .opcode = CNT_OP_TENANT_SHOW,
      .opaque = 0x423, .status = CNT_STATUS_INVALID },
    { .what = "tenant_list",
      .hex = "90"           /* magic */
             "43"           /* opcode: Tenant_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000430",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_TENANT_LIST, .opaque = 0x430 },
    { .what = "tenant_list with a body: answered at the header, body "
              "skipped",
      .hex = "90"           /* magic */
             "43"           /* opcode: Tenant_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000431"     /* opaque */
             "0001",        /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 14,
      .opcode = CNT_OP_TENANT_LIST, .opaque = 0x431 },
    { .what = "node_show",
      .hex = "90"           /* magic */
             "44"           /* opcode: Node_show */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000440",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_NODE_SHOW, .opaque = 0x440 },
    { .what = "node_show declaring 4 GiB: answered, body skipped",
      .hex = "90"           /* magic */
             "44"           /* opcode: Node_show */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000441",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = CNT_OP_NODE_SHOW,
      .opaque = 0x441 },
    { .what = "tenant_set: the reserve only",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000011"     /* body length: 14 + 3 */
             "00000450"     /* opaque */
             "01"           /* flags: set reserved */
             "000000"       /* zero bytes */
             "0000000a"     /* reserved: 10 */
             "00000000"     /* hard limit: not set */
             "0003"         /* name length */
             "74656e",      /* tenant "ten" */
      .result = CNT_DECODE_OK, .size = 29, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x450, .flags = CNT_TENANT_SET_RESERVED, .reserved = 10,
      .name = "ten" },
    { .what = "tenant_set: the hard limit only",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000451"     /* opaque */
             "02"           /* flags: set hard limit */
             "000000"       /* zero bytes */
             "00000007"     /* reserved: not set */
             "00000064"     /* hard limit: 100 */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_OK, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x451, .flags = CNT_TENANT_SET_HARD, .reserved = 7,
      .hard_limit = 100, .name = "t" },
    { .what = "tenant_set: both, unlimited, zero bytes not zero ignored",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length: 14 + 1 + 1 */
             "00000452"     /* opaque */
             "03"           /* flags: both */
             "a5a5a5"       /* "zero" bytes: ignored */
             "00000003"     /* reserved: 3 */
             "ffffffff"     /* hard limit: unlimited */
             "0001"         /* name length */
             "74"           /* tenant "t" */
             "78",          /* trailing "x" */
      .result = CNT_DECODE_OK, .size = 28, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x452, .flags = CNT_TENANT_SET_ALL, .reserved = 3,
      .hard_limit = CNT_HARD_LIMIT_UNLIMITED, .name = "t" },
    { .what = "tenant_set: a hard limit below the reserve is the core's",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000453"     /* opaque */
             "03"           /* flags: both */
             "000000"       /* zero bytes */
             "0000000a"     /* reserved: 10 */
             "00000005"     /* hard limit: 5 */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_OK, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x453, .flags = CNT_TENANT_SET_ALL, .reserved = 10,
      .hard_limit = 5, .name = "t" },
    { .what = "tenant_set: no flag",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000454"     /* opaque */
             "00"           /* flags: none */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_ERROR, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x454, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: an unknown flag alone",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000455"     /* opaque */
             "04"           /* flags: bit 2, unknown */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_ERROR, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x455, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: an unknown flag beside known ones",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000456"     /* opaque */
             "83"           /* flags: both, and bit 7 */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_ERROR, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x456, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: every flag bit",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000f"     /* body length: 14 + 1 */
             "00000457"     /* opaque */
             "ff"           /* flags: all eight bits */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0001"         /* name length */
             "74",          /* tenant "t" */
      .result = CNT_DECODE_ERROR, .size = 27, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x457, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: body shorter than 14",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000d"     /* body length: 13 < 14 */
             "00000458"     /* opaque */
             "01"           /* flags */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 25, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x458, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: empty tenant",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000e"     /* body length: 14 */
             "00000459"     /* opaque */
             "01"           /* flags */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 26, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x459, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set: tenant running past the body",
      .hex = "90"           /* magic */
             "45"           /* opcode: Tenant_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000010"     /* body length: 14 + 2 */
             "0000045a"     /* opaque */
             "02"           /* flags */
             "000000"       /* zero bytes */
             "00000001"     /* reserved */
             "00000002"     /* hard limit */
             "0003"         /* name length: 3 > 2 left */
             "7465",        /* "te" */
      .result = CNT_DECODE_ERROR, .size = 28, .opcode = CNT_OP_TENANT_SET,
      .opaque = 0x45a, .status = CNT_STATUS_INVALID },
    { .what = "tenant_remove: valid",
      .hex = "90"           /* magic */
             "46"           /* opcode: Tenant_remove */
             "00"           /* flags */
             "00"           /* reserved */
             "00000005"     /* body length: 2 + 3 */
             "00000460"     /* opaque */
             "0003"         /* name length */
             "74656e",      /* tenant "ten" */
      .result = CNT_DECODE_OK, .size = 17, .opcode = CNT_OP_TENANT_REMOVE,
      .opaque = 0x460, .name = "ten" },
    { .what = "tenant_remove: body shorter than 2",
      .hex = "90"           /* magic */
             "46"           /* opcode: Tenant_remove */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "00000461"     /* opaque */
             "00",          /* half a name length */
      .result = CNT_DECODE_ERROR, .size = 13,
      .opcode = CNT_OP_TENANT_REMOVE, .opaque = 0x461,
      .status = CNT_STATUS_INVALID },
    { .what = "tenant_remove: empty tenant",
      .hex = "90"           /* magic */
             "46"           /* opcode: Tenant_remove */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 */
             "00000462"     /* opaque */
             "0000",        /* name length: 0 */
      .result = CNT_DECODE_ERROR, .size = 14,
      .opcode = CNT_OP_TENANT_REMOVE, .opaque = 0x462,
      .status = CNT_STATUS_INVALID },
    { .what = "tenant_remove: tenant running past the body",
      .hex = "90"           /* magic */
             "46"           /* opcode: Tenant_remove */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 2 + 2 */
             "00000463"     /* opaque */
             "ffff"         /* name length: 65535 > 2 left */
             "7465",        /* "te" */
      .result = CNT_DECODE_ERROR, .size = 16,
      .opcode = CNT_OP_TENANT_REMOVE, .opaque = 0x463,
      .status = CNT_STATUS_INVALID },
    { .what = "node_set: valid",
      .hex = "90"           /* magic */
             "47"           /* opcode: Node_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "00000470"     /* opaque */
             "000003e8",    /* capacity: 1000 */
      .result = CNT_DECODE_OK, .size = 16, .opcode = CNT_OP_NODE_SET,
      .opaque = 0x470, .capacity = 1000 },
    { .what = "node_set: capacity 0 (throttling off), bytes after it "
              "ignored",
      .hex = "90"           /* magic */
             "47"           /* opcode: Node_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length: 4 + 2 */
             "00000471"     /* opaque */
             "00000000"     /* capacity: 0 */
             "0001",        /* trailing bytes */
      .result = CNT_DECODE_OK, .size = 18, .opcode = CNT_OP_NODE_SET,
      .opaque = 0x471, .capacity = 0 },
    { .what = "node_set: the largest capacity",
      .hex = "90"           /* magic */
             "47"           /* opcode: Node_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "00000472"     /* opaque */
             "ffffffff",    /* capacity: 2^32 - 1 */
      .result = CNT_DECODE_OK, .size = 16, .opcode = CNT_OP_NODE_SET,
      .opaque = 0x472, .capacity = 0xffffffffu },
    { .what = "node_set: body shorter than 4",
      .hex = "90"           /* magic */
             "47"           /* opcode: Node_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 3 < 4 */
             "00000473"     /* opaque */
             "000003",      /* three bytes of a capacity */
      .result = CNT_DECODE_ERROR, .size = 15, .opcode = CNT_OP_NODE_SET,
      .opaque = 0x473, .status = CNT_STATUS_INVALID },
    { .what = "node_set: empty body",
      .hex = "90"           /* magic */
             "47"           /* opcode: Node_set */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 4 */
             "00000474",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_NODE_SET,
      .opaque = 0x474, .status = CNT_STATUS_INVALID },
    { .what = "tenant_set_json: a tenant and its document",
      .hex = "90"           /* magic */
             "2a"           /* opcode: Tenant_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000011"     /* body length: 2 + 1 + 14 */
             "00000480"     /* opaque */
             "0001" "61"    /* tenant "a" */
             "7b227265736572766564223a317d",  /* {"reserved":1} */
      .result = CNT_DECODE_OK, .size = 29,
      .opcode = CNT_OP_TENANT_SET_JSON, .opaque = 0x480, .name = "a",
      .doc = "{\"reserved\":1}" },
    { .what = "tenant_set_json: an empty document is the server's to judge",
      .hex = "90"           /* magic */
             "2a"           /* opcode: Tenant_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 2 + 1 */
             "00000481"     /* opaque */
             "0001" "61",   /* tenant "a" */
      .result = CNT_DECODE_OK, .size = 15,
      .opcode = CNT_OP_TENANT_SET_JSON, .opaque = 0x481, .name = "a",
      .doc = "" },
    { .what = "tenant_set_json: empty tenant",
      .hex = "90"           /* magic */
             "2a"           /* opcode: Tenant_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length */
             "00000482"     /* opaque */
             "0000" "7b7d", /* no tenant, {} */
      .result = CNT_DECODE_ERROR, .size = 16,
      .opcode = CNT_OP_TENANT_SET_JSON, .opaque = 0x482,
      .status = CNT_STATUS_INVALID },
    { .what = "tenant_set_json: tenant running past the body",
      .hex = "90"           /* magic */
             "2a"           /* opcode: Tenant_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length */
             "00000483"     /* opaque */
             "0005" "6162", /* 5 bytes announced, 2 there */
      .result = CNT_DECODE_ERROR, .size = 16,
      .opcode = CNT_OP_TENANT_SET_JSON, .opaque = 0x483,
      .status = CNT_STATUS_INVALID },
    { .what = "tenant_set_json: a body of 1 byte",
      .hex = "90"           /* magic */
             "2a"           /* opcode: Tenant_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 < 2 */
             "00000484"     /* opaque */
             "00",
      .result = CNT_DECODE_ERROR, .size = 13,
      .opcode = CNT_OP_TENANT_SET_JSON, .opaque = 0x484,
      .status = CNT_STATUS_INVALID },
    { .what = "node_set_json: the document is the body",
      .hex = "90"           /* magic */
             "2c"           /* opcode: Node_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000e"     /* body length: 14 */
             "00000490"     /* opaque */
             "7b226361706163697479223a397d",  /* {"capacity":9} */
      .result = CNT_DECODE_OK, .size = 26,
      .opcode = CNT_OP_NODE_SET_JSON, .opaque = 0x490,
      .doc = "{\"capacity\":9}" },
    { .what = "node_set_json: an empty body is an empty document",
      .hex = "90"           /* magic */
             "2c"           /* opcode: Node_set_json */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000491",    /* opaque */
      .result = CNT_DECODE_OK, .size = 12,
      .opcode = CNT_OP_NODE_SET_JSON, .opaque = 0x491, .doc = "" },
    { .what = "unthrottle",
      .hex = "90"           /* magic */
             "48"           /* opcode: Unthrottle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000480",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_UNTHROTTLE, .opaque = 0x480 },
    { .what = "unthrottle with a body: answered at the header, body "
              "skipped",
      .hex = "90"           /* magic */
             "48"           /* opcode: Unthrottle */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length: 1 */
             "00000481"     /* opaque */
             "01",          /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 13,
      .opcode = CNT_OP_UNTHROTTLE, .opaque = 0x481 },
    { .what = "reload",
      .hex = "90"           /* magic */
             "49"           /* opcode: Reload */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "00000490",    /* opaque */
      .result = CNT_DECODE_OK, .at_header = true, .size = 12,
      .opcode = CNT_OP_RELOAD, .opaque = 0x490 },
    { .what = "reload with a body: answered at the header, body skipped",
      .hex = "90"           /* magic */
             "49"           /* opcode: Reload */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length: 3 */
             "00000491"     /* opaque */
             "616263",      /* body, to be skipped */
      .result = CNT_DECODE_OK, .at_header = true, .size = 15,
      .opcode = CNT_OP_RELOAD, .opaque = 0x491 },
    { .what = "auth_user: valid, non-blocking",
      .hex = "90"           /* magic */
             "4a"           /* opcode: Auth_user */
             "00"           /* flags */
             "00"           /* reserved */
             "0000000c"     /* body length: 6 + 3 + 3 */
             "000004a2"     /* opaque */
             "01"           /* flags: non-blocking */
             "00"           /* zero */
             "0003"         /* secret length */
             "0003"         /* user length */
             "626f62"       /* user "bob" */
             "736563",      /* secret "sec" */
      .result = CNT_DECODE_OK, .size = 24, .opcode = CNT_OP_AUTH_USER,
      .opaque = 0x4a2, .flags = 1, .name = "bob", .secret = "sec" },
    { .what = "auth_user: unknown flag",
      .hex = "90"           /* magic */
             "4a"           /* opcode: Auth_user */
             "00"           /* flags */
             "00"           /* reserved */
             "00000008"     /* body length: 6 + 1 + 1 */
             "000004a3"     /* opaque */
             "02"           /* flags: unknown bit */
             "00"           /* zero */
             "0001"         /* secret length */
             "0001"         /* user length */
             "62"           /* user "b" */
             "73",          /* secret "s" */
      .result = CNT_DECODE_ERROR, .size = 20, .opcode = CNT_OP_AUTH_USER,
      .opaque = 0x4a3, .status = CNT_STATUS_INVALID },
    { .what = "auth_user: secret runs past the body",
      .hex = "90"           /* magic */
             "4a"           /* opcode: Auth_user */
             "00"           /* flags */
             "00"           /* reserved */
             "00000008"     /* body length: 6 + 1 + 1 */
             "000004a4"     /* opaque */
             "00"           /* flags */
             "00"           /* zero */
             "0002"         /* secret length: 2, one byte short */
             "0001"         /* user length */
             "62"           /* user "b" */
             "73",          /* secret "s" */
      .result = CNT_DECODE_ERROR, .size = 20, .opcode = CNT_OP_AUTH_USER,
      .opaque = 0x4a4, .status = CNT_STATUS_INVALID },
    { .what = "unknown opcode 0x4b, after tenant throttling: 0x81",
      .hex = "90"           /* magic */
             "4b"           /* opcode: 0x4b, unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "00000001"     /* body length */
             "000004a0"     /* opaque */
             "00",          /* body, to be skipped */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 13,
      .opcode = 0x4b, .opaque = 0x4a0, .status = CNT_STATUS_UNKNOWN_COMMAND },
    { .what = "unknown opcode 0x3f, before tenant throttling: 0x81",
      .hex = "90"           /* magic */
             "3f"           /* opcode: 0x3f, unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length */
             "000004a1",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 12,
      .opcode = 0x3f, .opaque = 0x4a1, .status = CNT_STATUS_UNKNOWN_COMMAND },
    { .what = "lease_list: count 10",
      .hex = "90"           /* magic */
             "24"           /* opcode: Lease_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "00000240"     /* opaque */
             "0000000a",    /* count: 10 */
      .result = CNT_DECODE_OK, .size = 16, .opcode = CNT_OP_LEASE_LIST,
      .opaque = 0x240, .count = 10 },
    { .what = "lease_list: a count above 64 is decoded as sent",
      .hex = "90"           /* magic */
             "24"           /* opcode: Lease_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "00000241"     /* opaque */
             "ffffffff",    /* count: 2^32 - 1 (the server clamps it) */
      .result = CNT_DECODE_OK, .size = 16, .opcode = CNT_OP_LEASE_LIST,
      .opaque = 0x241, .count = 0xffffffffu },
    { .what = "lease_list: count 0",
      .hex = "90"           /* magic */
             "24"           /* opcode: Lease_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "00000242"     /* opaque */
             "00000000",    /* count: 0 */
      .result = CNT_DECODE_ERROR, .size = 16, .opcode = CNT_OP_LEASE_LIST,
      .opaque = 0x242, .status = CNT_STATUS_INVALID },
    { .what = "lease_list: body shorter than 4",
      .hex = "90"           /* magic */
             "24"           /* opcode: Lease_list */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 < 4 */
             "00000243"     /* opaque */
             "0001",        /* half a count */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_LEASE_LIST,
      .opaque = 0x243, .status = CNT_STATUS_INVALID },
    { .what = "busiest: a count",
      .hex = "90"           /* magic */
             "37"           /* opcode: Busiest */
             "00"           /* flags */
             "00"           /* reserved */
             "00000004"     /* body length: 4 */
             "000004b0"     /* opaque */
             "00000010",    /* count: 16 */
      .result = CNT_DECODE_OK, .size = 16, .opcode = CNT_OP_BUSIEST,
      .opaque = 0x4b0, .count = 16 },
    { .what = "busiest: any count, bytes after it ignored",
      .hex = "90"           /* magic */
             "37"           /* opcode: Busiest */
             "00"           /* flags */
             "00"           /* reserved */
             "00000006"     /* body length: 4 + 2 */
             "000004b1"     /* opaque */
             "ffffffff"     /* count: 2^32 - 1, the server lists 16 */
             "0001",        /* trailing bytes */
      .result = CNT_DECODE_OK, .size = 18, .opcode = CNT_OP_BUSIEST,
      .opaque = 0x4b1, .count = 0xffffffffu },
    { .what = "busiest: body shorter than 4",
      .hex = "90"           /* magic */
             "37"           /* opcode: Busiest */
             "00"           /* flags */
             "00"           /* reserved */
             "00000002"     /* body length: 2 < 4 */
             "000004b2"     /* opaque */
             "0010",        /* half a count */
      .result = CNT_DECODE_ERROR, .size = 14, .opcode = CNT_OP_BUSIEST,
      .opaque = 0x4b2, .status = CNT_STATUS_INVALID },
    { .what = "busiest: empty body",
      .hex = "90"           /* magic */
             "37"           /* opcode: Busiest */
             "00"           /* flags */
             "00"           /* reserved */
             "00000000"     /* body length: 0 < 4 */
             "000004b3",    /* opaque */
      .result = CNT_DECODE_ERROR, .size = 12, .opcode = CNT_OP_BUSIEST,
      .opaque = 0x4b3, .status = CNT_STATUS_INVALID },
    { .what = "unknown opcode declaring 4 GiB: 0x81, body skipped",
      .hex = "90"           /* magic */
             "7f"           /* opcode: unknown */
             "00"           /* flags */
             "00"           /* reserved */
             "ffffffff"     /* body length: 2^32 - 1 */
             "00000026",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = 12 + (uint64_t)0xffffffff, .opcode = 0x7f, .opaque = 38,
      .status = CNT_STATUS_UNKNOWN_COMMAND },
};

#define N_DECODE_ROWS (sizeof(decode_rows) / sizeof(decode_rows[0]))

/* The shortest prefix of a row's fixture that decides it. */
static uint64_t row_decided(const decode_row *row)
{
    if (row->result == CNT_DECODE_NEED_MORE)
        return UINT64_MAX;
    return row->at_header ? CNT_HEADER_SIZE : row->size;
}

/* Checks the fields of a request decoded from a whole row fixture. */
static void check_row_fields(const decode_row *row, const uint8_t *buf,
                             size_t len, const cnt_request *req)
{
    assert_int_equal(req->size, row->size);
    assert_int_equal(req->magic, buf[0]);
    assert_int_equal(req->opcode, row->opcode);
    assert_int_equal(req->opaque, row->opaque);
    assert_int_equal(req->body_len, row->size - CNT_HEADER_SIZE);
    if (row->result == CNT_DECODE_ERROR)
        assert_int_equal(req->status, row->status);
    if (row->result != CNT_DECODE_OK)
        return;
    assert_int_equal(req->resources, row->resources);
    assert_int_equal(req->maximum, row->maximum);
    assert_int_equal(req->wait_ms, row->wait_ms);
    assert_int_equal(req->lease_ms, row->lease_ms);
    assert_true(req->quota == row->quota);
    assert_true(req->value == row->quota);
    assert_true(req->ttl == row->ttl);
    assert_true(req->period_ns == row->period_ns);
    assert_int_equal(req->limit, row->limit);
    assert_int_equal(req->count, row->count);
    assert_int_equal(req->cost, row->cost);
    assert_int_equal(req->flags, row->flags);
    assert_int_equal(req->slots, row->slots);
    assert_int_equal(req->unit, row->unit);
    assert_int_equal(req->attribute, row->attribute);
    assert_int_equal(req->change, row->change);
    assert_int_equal(req->item_count, row->item_count);
    if (row->item_count == 0) {
        assert_null(req->items);
        assert_int_equal(req->items_len, 0);
    } else {
        /* The items follow the flags and the count, up to the end. */
        assert_ptr_equal(req->items, buf + CNT_HEADER_SIZE + 2);
        assert_int_equal(req->items_len, row->size - CNT_HEADER_SIZE - 2);
    }
    assert_int_equal(req->units, row->units);
    assert_int_equal(req->reserved, row->reserved);
    assert_int_equal(req->hard_limit, row->hard_limit);
    assert_int_equal(req->capacity, row->capacity);
    if (row->secret == NULL) {
        assert_null(req->secret);
        assert_int_equal(req->secret_len, 0);
    } else {
        /* The secret, like a name, lies inside the buffered body. */
        assert_int_equal(req->secret_len, strlen(row->secret));
        assert_memory_equal(req->secret, row->secret, req->secret_len);
        assert_true(req->secret > buf && req->secret < buf + len);
        /* Auth_user's secret follows its user's name. */
        if (row->opcode != CNT_OP_AUTH_USER)
            assert_null(req->name);
        else
            assert_ptr_equal(req->secret, req->name + req->name_len);
    }
    if (row->doc == NULL) {
        assert_null(req->doc);
        assert_int_equal(req->doc_len, 0);
    } else {
        /* The document is the rest of the body, in the buffer. */
        assert_int_equal(req->doc_len, strlen(row->doc));
        assert_memory_equal(req->doc, row->doc, req->doc_len);
        assert_ptr_equal(req->doc + req->doc_len, buf + row->size);
    }
    if (row->name == NULL) {
        assert_null(req->name);
        assert_int_equal(req->name_len, 0);
        return;
    }
    assert_int_equal(req->name_len, strlen(row->name));
    assert_memory_equal(req->name, row->name, req->name_len);
    assert_true(req->name > buf && req->name < buf + len);
}

/* One row: decoded whole, then fed at every prefix length. */
static void test_decode_row(void **state)
{
    const decode_row *row = *state;
    size_t len;
    uint8_t *buf = hex_dup(row->hex, &len);
    uint64_t decided = row_decided(row);
    cnt_request req;

    /* A fixture holds the header, and the whole request unless it is
     * decided at the header. */
    assert_true(len >= CNT_HEADER_SIZE);
    if (!row->at_header && decided != UINT64_MAX)
        assert_int_equal(len, row->size);

    assert_int_equal(decode_checked(buf, len, &req), row->result);
    check_row_fields(row, buf, len, &req);

    /* Each prefix is its own exact-size copy: a decoder reading past what
     * it was given is caught by valgrind / ASan. */
    for (size_t k = 0; k <= len; k++) {
        uint8_t *prefix = malloc(k ? k : 1);
        cnt_decode_result r;

        assert_non_null(prefix);
        memcpy(prefix, buf, k);
        r = decode_checked(prefix, k, &req);
        if (k < decided) {
            assert_int_equal(r, CNT_DECODE_NEED_MORE);
            assert_int_equal(req.size,
                             k < CNT_HEADER_SIZE ? CNT_HEADER_SIZE : row->size);
        } else {
            assert_int_equal(r, row->result);
            check_row_fields(row, prefix, k, &req);
        }
        free(prefix);
    }
    free(buf);
}

/* ---- A connection's read loop, emulated over a byte stream ---- */

typedef struct stream_event {
    cnt_decode_result result;
    uint8_t opcode;
    uint32_t opaque;
    cnt_status status;
    uint32_t resources;
    uint32_t maximum;
    uint32_t wait_ms;
    uint32_t lease_ms;
    uint64_t quota;
    uint64_t ttl;
    uint64_t period_ns;
    uint32_t limit;
    uint32_t count;
    uint32_t cost;
    uint8_t flags;
    uint8_t slots;
    uint8_t unit;
    uint8_t attribute;
    uint8_t change;
    uint8_t item_count;
    uint32_t units;
    uint32_t reserved;
    uint32_t hard_limit;
    uint32_t capacity;
    char secret[16];
    char name[16];
} stream_event;

typedef struct stream_sim {
    uint8_t buf[CNT_REQUEST_MAX];   /* never needs more: huge bodies are
                                     * skipped, not stored */
    size_t len;
    uint64_t skip;                  /* body bytes still to discard */
    bool closed;
    stream_event events[N_DECODE_ROWS * 2];
    size_t n_events;
} stream_sim;

/* Records what one decoding step found. */
static void stream_record(stream_sim *sim, cnt_decode_result r,
                          const cnt_request *req)
{
    stream_event *ev;

    assert_true(sim->n_events < N_DECODE_ROWS * 2);
    ev = &sim->events[sim->n_events++];
    memset(ev, 0, sizeof(*ev));
    ev->result = r;
    ev->opcode = req->opcode;
    ev->opaque = req->opaque;
    ev->status = req->status;
    ev->resources = req->resources;
    ev->maximum = req->maximum;
    ev->wait_ms = req->wait_ms;
    ev->lease_ms = req->lease_ms;
    ev->quota = req->quota;
    ev->ttl = req->ttl;
    ev->period_ns = req->period_ns;
    ev->limit = req->limit;
    ev->count = req->count;
    ev->cost = req->cost;
    ev->flags = req->flags;
    ev->slots = req->slots;
    ev->unit = req->unit;
    ev->attribute = req->attribute;
    ev->change = req->change;
    ev->item_count = req->item_count;
    ev->units = req->units;
    ev->reserved = req->reserved;
    ev->hard_limit = req->hard_limit;
    ev->capacity = req->capacity;
    if (r == CNT_DECODE_OK && req->secret != NULL) {
        assert_true(req->secret_len < sizeof(ev->secret));
        memcpy(ev->secret, req->secret, req->secret_len);
    }
    if (r == CNT_DECODE_OK && req->name != NULL) {
        assert_true(req->name_len < sizeof(ev->name));
        memcpy(ev->name, req->name, req->name_len);
    }
}

/* Decodes everything buffered, as a connection's read callback does. */
static void stream_drain(stream_sim *sim)
{
    while (!sim->closed && sim->skip == 0) {
        cnt_request req;
        cnt_decode_result r = decode_checked(sim->buf, sim->len, &req);
        size_t used;

        if (r == CNT_DECODE_NEED_MORE)
            return;
        stream_record(sim, r, &req);
        if (r == CNT_DECODE_CLOSE) {
            sim->closed = true;
            return;
        }
        used = req.size < sim->len ? (size_t)req.size : sim->len;
        memmove(sim->buf, sim->buf + used, sim->len - used);
        sim->len -= used;
        sim->skip = req.size - used;
    }
}

/* Feeds n bytes that arrived from the peer. */
static void stream_feed(stream_sim *sim, const uint8_t *p, size_t n)
{
    while (n > 0 && !sim->closed) {
        size_t take;

        if (sim->skip > 0) {
            take = sim->skip < n ? (size_t)sim->skip : n;
            sim->skip -= take;
        } else {
            take = sizeof(sim->buf) - sim->len;
            take = take < n ? take : n;
            /* A full buffer that still needs more would be a codec bug. */
            assert_true(take > 0);
            memcpy(sim->buf + sim->len, p, take);
            sim->len += take;
        }
        p += take;
        n -= take;
        stream_drain(sim);
    }
}

/* Tells whether a row's fixture is one whole request for the stream test. */
static bool row_streamable(const decode_row *row, size_t len)
{
    return row->result != CNT_DECODE_NEED_MORE &&
           row->result != CNT_DECODE_CLOSE && len == row->size;
}

/* Builds one stream of every whole-request row; returns its length. */
static size_t stream_build(uint8_t *out, size_t cap, size_t *n_rows)
{
    size_t total = 0;

    *n_rows = 0;
    for (size_t i = 0; i < N_DECODE_ROWS; i++) {
        uint8_t one[FIXTURE_MAX];
        size_t len = hex_to_bytes(decode_rows[i].hex, one, sizeof(one));

        if (!row_streamable(&decode_rows[i], len))
            continue;
        assert_true(total + len <= cap);
        memcpy(out + total, one, len);
        total += len;
        (*n_rows)++;
    }
    return total;
}

/* Checks the events of a stream against the rows it was built from. */
static void stream_check(const stream_sim *sim, size_t n_rows)
{
    size_t e = 0;

    assert_int_equal(sim->n_events, n_rows);
    for (size_t i = 0; i < N_DECODE_ROWS; i++) {
        const decode_row *row = &decode_rows[i];
        uint8_t one[FIXTURE_MAX];
        const stream_event *ev;

        if (!row_streamable(row, hex_to_bytes(row->hex, one, sizeof(one))))
            continue;
        ev = &sim->events[e++];
        assert_int_equal(ev->result, row->result);
        assert_int_equal(ev->opcode, row->opcode);
        assert_int_equal(ev->opaque, row->opaque);
        if (row->result == CNT_DECODE_ERROR) {
            assert_int_equal(ev->status, row->status);
            continue;
        }
        assert_int_equal(ev->resources, row->resources);
        assert_int_equal(ev->maximum, row->maximum);
        assert_int_equal(ev->wait_ms, row->wait_ms);
        assert_int_equal(ev->lease_ms, row->lease_ms);
        assert_true(ev->quota == row->quota);
        assert_true(ev->ttl == row->ttl);
        assert_true(ev->period_ns == row->period_ns);
        assert_int_equal(ev->limit, row->limit);
        assert_int_equal(ev->count, row->count);
        assert_int_equal(ev->cost, row->cost);
        assert_int_equal(ev->flags, row->flags);
        assert_int_equal(ev->slots, row->slots);
        assert_int_equal(ev->unit, row->unit);
        assert_int_equal(ev->attribute, row->attribute);
        assert_int_equal(ev->change, row->change);
        assert_int_equal(ev->item_count, row->item_count);
        assert_int_equal(ev->units, row->units);
        assert_int_equal(ev->reserved, row->reserved);
        assert_int_equal(ev->hard_limit, row->hard_limit);
        assert_int_equal(ev->capacity, row->capacity);
        assert_string_equal(ev->secret, row->secret ? row->secret : "");
        assert_string_equal(ev->name, row->name ? row->name : "");
    }
}

/* Every whole-request row back to back, delivered in chunks of 1, 2, 3...
 * bytes and all at once: same answers, in order, at every split. */
static void test_decode_stream_every_split(void **state)
{
    static uint8_t stream[N_DECODE_ROWS * FIXTURE_MAX];
    static stream_sim sim;
    size_t n_rows;
    size_t total = stream_build(stream, sizeof(stream), &n_rows);
    const size_t chunks[] = { 1, 2, 3, 5, 7, 12, 13, 17, 64, 0 };

    (void)state;
    assert_true(n_rows >= 20);
    for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
        size_t step = chunks[c] ? chunks[c] : total;

        memset(&sim, 0, sizeof(sim));
        for (size_t off = 0; off < total; off += step)
            stream_feed(&sim, stream + off,
                        total - off < step ? total - off : step);
        stream_check(&sim, n_rows);
        assert_int_equal(sim.len, 0);
        assert_int_equal(sim.skip, 0);
    }
}

/* Several requests in one buffer, decoded in place one after the other. */
static void test_decode_pipelined_buffer(void **state)
{
    uint8_t buf[256];
    size_t len = 0, off = 0;
    cnt_request req;

    (void)state;
    len += cnt_encode_acquire(buf + len, 1, 3, 10, "a", 1);
    len += cnt_encode_get(buf + len, 2, "a", 1);
    len += cnt_encode_simple(buf + len, CNT_OP_NOOP, 3);
    len += cnt_encode_release(buf + len, 4, 3, "a", 1);
    len += cnt_encode_simple(buf + len, CNT_OP_STATS, 5);
    len += cnt_encode_wait_acquire(buf + len, 6, 1, 0, 100, 0, "a", 1);
    len += cnt_encode_renew(buf + len, 7, 50, "a", 1);
    len += cnt_encode_simple(buf + len, CNT_OP_QUEUES, 8);
    len += cnt_encode_wait_release(buf + len, 9, "a", 1);
    assert_true(len <= sizeof(buf));

    for (uint32_t want = 1; want <= 9; want++) {
        assert_int_equal(decode_checked(buf + off, len - off, &req),
                         CNT_DECODE_OK);
        assert_int_equal(req.opaque, want);
        off += (size_t)req.size;
    }
    assert_int_equal(off, len);
    assert_int_equal(decode_checked(buf + off, 0, &req), CNT_DECODE_NEED_MORE);
}

/* ---- Names of the largest legal length ---- */

/* Checks NEED_MORE at a few prefixes, then the whole request. */
static void check_long_request(const uint8_t *buf, size_t len,
                               uint8_t opcode, const uint8_t *name)
{
    cnt_request req;
    size_t probes[] = { 0, 11, 12, 13, 100, len / 2, len - 1 };

    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        assert_int_equal(decode_checked(buf, probes[i], &req),
                         CNT_DECODE_NEED_MORE);
        assert_int_equal(req.size,
                         probes[i] < CNT_HEADER_SIZE ? CNT_HEADER_SIZE : len);
    }
    assert_int_equal(decode_checked(buf, len, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, opcode);
    assert_int_equal(req.size, len);
    assert_int_equal(req.name_len, CNT_NAME_MAX);
    assert_memory_equal(req.name, name, CNT_NAME_MAX);
}

/* 65535-byte names for every opcode with a name; Gcra_check's is
 * exactly the largest legal request. */
static void test_decode_longest_names(void **state)
{
    uint8_t *name = malloc(CNT_NAME_MAX);
    uint8_t *buf = malloc(CNT_REQUEST_MAX + 1);
    size_t len;
    cnt_request req;

    (void)state;
    assert_non_null(name);
    assert_non_null(buf);
    for (size_t i = 0; i < CNT_NAME_MAX; i++)
        name[i] = (uint8_t)(i * 7 + 1);

    len = cnt_encode_get(buf, 1, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 2 + CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_GET, name);

    len = cnt_encode_acquire(buf, 2, 1, 1, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 10 + CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_ACQUIRE, name);

    len = cnt_encode_wait_acquire(buf, 2, 1, 1, 0, 0, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 18 + CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_WAIT_ACQUIRE, name);

    len = cnt_encode_gcra_check(buf, 2, 0, 1, 1, 1, 1, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_REQUEST_MAX);
    check_long_request(buf, len, CNT_OP_GCRA_CHECK, name);
    /* Every prefix of the largest request only asks for more. */
    for (size_t k = 0; k < len; k++)
        assert_int_equal(cnt_request_decode(buf, k, &req),
                         CNT_DECODE_NEED_MORE);

    len = cnt_encode_release(buf, 3, 1, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_RELEASE, name);
    len = cnt_encode_renew(buf, 3, 1, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_RENEW, name);
    len = cnt_encode_wait_release(buf, 3, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_WAIT_RELEASE, name);
    len = cnt_encode_ttl_insert(buf, 3, 1, 1, CNT_UNIT_S, name,
                                CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TTL_INSERT, name);
    len = cnt_encode_ttl_query(buf, 3, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TTL_QUERY, name);
    len = cnt_encode_ttl_update(buf, 3, CNT_TTL_ATTR_QUOTA, CNT_TTL_PATCH,
                                CNT_UNIT_NS, 1, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TTL_UPDATE, name);
    len = cnt_encode_ttl_purge(buf, 3, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TTL_PURGE, name);
    len = cnt_encode_window_check(buf, 3, 0, 0, 1, 1, 0, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_WINDOW_CHECK, name);

    /* The longest name with a body one byte short: runs past the body. */
    len = cnt_encode_gcra_check(buf, 4, 0, 1, 1, 1, 1, name, CNT_NAME_MAX);
    cnt_put_u32(buf + CNT_OFF_BODYLEN, CNT_BODY_MAX - 1);
    assert_int_equal(decode_checked(buf, len - 1, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    assert_int_equal(req.size, CNT_REQUEST_MAX - 1);

    free(buf);
    free(name);
}

/* ---- Request encoders and client -> server round trips ---- */

/* The request encoders write exactly the documented layout. */
static void test_encode_requests(void **state)
{
    uint8_t out[FIXTURE_MAX];
    size_t n;

    (void)state;
    n = cnt_encode_simple(out, CNT_OP_DUMP, 0x11223344);
    assert_bytes_hex(out, n,
        "90"            /* magic: request */
        "11"            /* opcode: Dump */
        "00"            /* flags */
        "00"            /* reserved */
        "00000000"      /* body length */
        "11223344");    /* opaque */
    n = cnt_encode_get(out, 1, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "01" "00" "00" /* magic, Get, flags, reserved */
        "00000005"      /* body length */
        "00000001"      /* opaque */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_acquire(out, 2, 3, 4, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "02" "00" "00" /* magic, Acquire, flags, reserved */
        "0000000d"      /* body length */
        "00000002"      /* opaque */
        "00000003"      /* resources */
        "00000004"      /* maximum */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_release(out, 3, 0, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "03" "00" "00" /* magic, Release, flags, reserved */
        "00000009"      /* body length */
        "00000003"      /* opaque */
        "00000000"      /* resources */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_wait_acquire(out, 4, 2, 5, 1000, CNT_USE_GROUP_DEFAULT,
                                "abc", 3);
    assert_bytes_hex(out, n,
        "90" "20" "00" "00" /* magic, Wait_acquire, flags, reserved */
        "00000015"      /* body length: 18 + 3 */
        "00000004"      /* opaque */
        "00000002"      /* resources */
        "00000005"      /* maximum */
        "000003e8"      /* wait_ms */
        "ffffffff"      /* lease_ms: the group's */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_renew(out, 5, 30000, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "21" "00" "00" /* magic, Renew, flags, reserved */
        "00000009"      /* body length: 6 + 3 */
        "00000005"      /* opaque */
        "00007530"      /* lease_ms */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_wait_release(out, 6, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "22" "00" "00" /* magic, Wait_release, flags, reserved */
        "00000005"      /* body length: 2 + 3 */
        "00000006"      /* opaque */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_simple(out, CNT_OP_QUEUES, 7);
    assert_bytes_hex(out, n,
        "90" "23" "00" "00" /* magic, Queues, flags, reserved */
        "00000000"      /* body length */
        "00000007");    /* opaque */
}

/* Every opcode encoded by the client decodes on the server side. */
static void test_roundtrip_client_to_server(void **state)
{
    const uint8_t simple[] = { CNT_OP_NOOP, CNT_OP_STATS, CNT_OP_DUMP };
    uint8_t buf[64];
    cnt_request req;
    size_t n;

    (void)state;
    for (size_t i = 0; i < sizeof(simple); i++) {
        n = cnt_encode_simple(buf, simple[i], 0x100 + (uint32_t)i);
        assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
        assert_int_equal(req.opcode, simple[i]);
        assert_int_equal(req.opaque, 0x100 + i);
        assert_int_equal(req.size, n);
    }

    n = cnt_encode_get(buf, 0xfeedface, "counter", 7);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_GET);
    assert_int_equal(req.opaque, 0xfeedface);
    assert_int_equal(req.size, n);
    assert_int_equal(req.name_len, 7);
    assert_memory_equal(req.name, "counter", 7);

    n = cnt_encode_acquire(buf, 9, 0x10000, 0x7fffffff, "k", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_ACQUIRE);
    assert_int_equal(req.opaque, 9);
    assert_int_equal(req.resources, 0x10000);
    assert_int_equal(req.maximum, 0x7fffffff);
    assert_int_equal(req.name_len, 1);
    assert_memory_equal(req.name, "k", 1);

    n = cnt_encode_release(buf, 10, 0xffffffff, "k", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_RELEASE);
    assert_int_equal(req.opaque, 10);
    assert_int_equal(req.resources, 0xffffffff);
    assert_int_equal(req.maximum, 0);
    assert_memory_equal(req.name, "k", 1);

    n = cnt_encode_wait_acquire(buf, 14, 3, 0, 0xfffffffe, 0x12345678,
                                "wk", 2);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_WAIT_ACQUIRE);
    assert_int_equal(req.opaque, 14);
    assert_int_equal(req.size, n);
    assert_int_equal(req.resources, 3);
    assert_int_equal(req.maximum, 0);
    assert_int_equal(req.wait_ms, 0xfffffffe);
    assert_int_equal(req.lease_ms, 0x12345678);
    assert_int_equal(req.name_len, 2);
    assert_memory_equal(req.name, "wk", 2);

    n = cnt_encode_renew(buf, 15, 0xffffffff, "wk", 2);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_RENEW);
    assert_int_equal(req.opaque, 15);
    assert_int_equal(req.lease_ms, 0xffffffff);
    assert_int_equal(req.resources, 0);
    assert_int_equal(req.wait_ms, 0);
    assert_memory_equal(req.name, "wk", 2);

    n = cnt_encode_wait_release(buf, 16, "wk", 2);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_WAIT_RELEASE);
    assert_int_equal(req.opaque, 16);
    assert_int_equal(req.lease_ms, 0);
    assert_int_equal(req.name_len, 2);
    assert_memory_equal(req.name, "wk", 2);

    n = cnt_encode_simple(buf, CNT_OP_QUEUES, 17);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_OK);
    assert_int_equal(req.opcode, CNT_OP_QUEUES);
    assert_int_equal(req.opaque, 17);
    assert_int_equal(req.size, n);

    /* A client may encode what the server must refuse. */
    n = cnt_encode_acquire(buf, 11, 0, 1, "k", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    n = cnt_encode_get(buf, 12, "", 0);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    n = cnt_encode_simple(buf, 0x38, 13);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_UNKNOWN_COMMAND);
    n = cnt_encode_wait_acquire(buf, 18, 0, 1, 0, 0, "k", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    n = cnt_encode_renew(buf, 19, 0, "k", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    n = cnt_encode_wait_release(buf, 20, "", 0);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
}

/* ---- Rate-limit requests ---- */

/* The rate-limit encoders write exactly the documented layout. */
static void test_encode_rate_limit_requests(void **state)
{
    uint8_t out[FIXTURE_MAX];
    cnt_multi_builder b;
    const cnt_check_request win = {
        .opcode = CNT_OP_WINDOW_CHECK, .peek = true, .slots = 4,
        .limit_or_burst = 10, .cost = 2, .period_ns = 4000,
        .name = (const uint8_t *)"w", .name_len = 1 };
    const cnt_check_request gcra = {
        .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 5, .count = 100,
        .cost = 1, .period_ns = 1000000000,
        .name = (const uint8_t *)"g", .name_len = 1 };
    size_t n;

    (void)state;
    n = cnt_encode_ttl_insert(out, 1, 5, 3, CNT_UNIT_S, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "30" "00" "00" /* magic, Ttl_insert, flags, reserved */
        "00000016"      /* body length: 19 + 3 */
        "00000001"      /* opaque */
        "0000000000000005" /* quota */
        "0000000000000003" /* ttl */
        "03"            /* unit: s */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_ttl_query(out, 2, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "31" "00" "00" /* magic, Ttl_query, flags, reserved */
        "00000005"      /* body length: 2 + 3 */
        "00000002"      /* opaque */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_ttl_update(out, 3, CNT_TTL_ATTR_TTL, CNT_TTL_DECREASE,
                              CNT_UNIT_MS, 0x0102030405060708ull, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "32" "00" "00" /* magic, Ttl_update, flags, reserved */
        "00000010"      /* body length: 13 + 3 */
        "00000003"      /* opaque */
        "01"            /* attribute: ttl */
        "02"            /* change: decrease */
        "02"            /* unit: ms */
        "0102030405060708" /* value */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_ttl_purge(out, 4, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "33" "00" "00" /* magic, Ttl_purge, flags, reserved */
        "00000005"      /* body length: 2 + 3 */
        "00000004"      /* opaque */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_window_check(out, 5, CNT_CHECK_FLAG_PEEK, 10, 100, 7,
                                2000000000, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "34" "00" "00" /* magic, Window_check, flags, reserved */
        "00000019"      /* body length: 22 + 3 */
        "00000005"      /* opaque */
        "01"            /* flags: peek */
        "0a"            /* slots: 10 */
        "0000"          /* reserved */
        "00000064"      /* limit: 100 */
        "00000007"      /* cost: 7 */
        "0000000077359400" /* window_ns: 2 s */
        "0003"          /* name length */
        "616263");      /* name */
    n = cnt_encode_gcra_check(out, 6, 0, 5, 1000000, 3, 1000000000, "abc",
                              3);
    assert_bytes_hex(out, n,
        "90" "35" "00" "00" /* magic, Gcra_check, flags, reserved */
        "0000001d"      /* body length: 26 + 3 */
        "00000006"      /* opaque */
        "00"            /* flags */
        "000000"        /* reserved */
        "00000005"      /* burst: 5 */
        "000f4240"      /* count: 1000000 */
        "00000003"      /* cost: 3 */
        "000000003b9aca00" /* period_ns: 1 s */
        "0003"          /* name length */
        "616263");      /* name */

    /* Items carry flags 0 whatever their peek: the multi's flags apply. */
    assert_true(cnt_multi_begin(&b, out, sizeof(out), 7,
                                CNT_CHECK_FLAG_PEEK));
    assert_true(cnt_multi_add(&b, &win));
    assert_true(cnt_multi_add(&b, &gcra));
    n = cnt_multi_finish(&b);
    assert_bytes_hex(out, n,
        "90" "36" "00" "00" /* magic, Multi_check, flags, reserved */
        "0000003a"      /* body length: 2 + 26 + 30 */
        "00000007"      /* opaque */
        "01"            /* flags: peek */
        "02"            /* count: 2 */
        "34"            /* item opcode: Window_check */
        "0017"          /* item length: 22 + 1 */
        "00"            /*   flags: 0 */
        "04"            /*   slots: 4 */
        "0000"          /*   reserved */
        "0000000a"      /*   limit: 10 */
        "00000002"      /*   cost: 2 */
        "0000000000000fa0" /*   window_ns: 4000 */
        "0001"          /*   name length */
        "77"            /*   name "w" */
        "35"            /* item opcode: Gcra_check */
        "001b"          /* item length: 26 + 1 */
        "00"            /*   flags */
        "000000"        /*   reserved */
        "00000005"      /*   burst: 5 */
        "00000064"      /*   count: 100 */
        "00000001"      /*   cost: 1 */
        "000000003b9aca00" /*   period_ns: 1 s */
        "0001"          /*   name length */
        "67");          /*   name "g" */
}

/* Decodes a whole request that must be valid. */
static void decode_ok(const uint8_t *buf, size_t n, uint8_t opcode,
                      uint32_t opaque, cnt_request *req)
{
    assert_int_equal(decode_checked(buf, n, req), CNT_DECODE_OK);
    assert_int_equal(req->opcode, opcode);
    assert_int_equal(req->opaque, opaque);
    assert_int_equal(req->size, n);
}

/* Every rate-limit request encoded by the client decodes on the server
 * side with the values it was given; checks convert to the core's
 * arguments field by field. */
static void test_roundtrip_rate_limits(void **state)
{
    uint8_t buf[128];
    cnt_request req;
    cnt_check_request args;
    size_t n;

    (void)state;
    n = cnt_encode_ttl_insert(buf, 1, UINT64_MAX, 7, CNT_UNIT_MIN, "t", 1);
    decode_ok(buf, n, CNT_OP_TTL_INSERT, 1, &req);
    assert_true(req.quota == UINT64_MAX && req.ttl == 7);
    assert_int_equal(req.unit, CNT_UNIT_MIN);
    assert_memory_equal(req.name, "t", 1);
    assert_false(cnt_request_check_args(&req, &args));

    n = cnt_encode_ttl_query(buf, 2, "tt", 2);
    decode_ok(buf, n, CNT_OP_TTL_QUERY, 2, &req);
    assert_int_equal(req.name_len, 2);
    assert_memory_equal(req.name, "tt", 2);

    n = cnt_encode_ttl_update(buf, 3, CNT_TTL_ATTR_QUOTA, CNT_TTL_INCREASE,
                              CNT_UNIT_H, 42, "t", 1);
    decode_ok(buf, n, CNT_OP_TTL_UPDATE, 3, &req);
    assert_int_equal(req.attribute, CNT_TTL_ATTR_QUOTA);
    assert_int_equal(req.change, CNT_TTL_INCREASE);
    assert_int_equal(req.unit, CNT_UNIT_H);
    assert_true(req.value == 42);
    assert_true(req.ttl == 0);

    n = cnt_encode_ttl_purge(buf, 4, "t", 1);
    decode_ok(buf, n, CNT_OP_TTL_PURGE, 4, &req);
    assert_memory_equal(req.name, "t", 1);

    n = cnt_encode_window_check(buf, 5, CNT_CHECK_FLAG_PEEK, 64, 0xffffffff,
                                0xfffffffe, 64000, "w", 1);
    decode_ok(buf, n, CNT_OP_WINDOW_CHECK, 5, &req);
    assert_true(cnt_request_check_args(&req, &args));
    assert_int_equal(args.opcode, CNT_OP_WINDOW_CHECK);
    assert_true(args.peek);
    assert_int_equal(args.slots, 64);
    assert_int_equal(args.limit_or_burst, 0xffffffff);
    assert_int_equal(args.count, 0);
    assert_int_equal(args.cost, 0xfffffffe);
    assert_true(args.period_ns == 64000);
    assert_ptr_equal(args.name, req.name);
    assert_int_equal(args.name_len, 1);

    n = cnt_encode_gcra_check(buf, 6, 0, 0, 1000000, 1, 1000000000, "g", 1);
    decode_ok(buf, n, CNT_OP_GCRA_CHECK, 6, &req);
    assert_true(cnt_request_check_args(&req, &args));
    assert_int_equal(args.opcode, CNT_OP_GCRA_CHECK);
    assert_false(args.peek);
    assert_int_equal(args.slots, 0);
    assert_int_equal(args.limit_or_burst, 0);
    assert_int_equal(args.count, 1000000);
    assert_int_equal(args.cost, 1);
    assert_true(args.period_ns == 1000000000);
    assert_memory_equal(args.name, "g", 1);

    /* A client may encode what the server must refuse. */
    n = cnt_encode_ttl_insert(buf, 7, 1, 0, CNT_UNIT_S, "t", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    n = cnt_encode_ttl_update(buf, 8, CNT_TTL_ATTR_TTL, CNT_TTL_PATCH,
                              CNT_UNIT_S, 0, "t", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    n = cnt_encode_window_check(buf, 9, 0, 3, 1, 1, 0, "w", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    n = cnt_encode_gcra_check(buf, 10, 0, 1, 1, 1, 0, "g", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    n = cnt_encode_ttl_purge(buf, 11, "", 0);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
}

/* The TTL's range, unit by unit: the largest ttl whose nanoseconds fit a
 * u64 is valid, one more is 0x04. */
static void test_ttl_insert_range(void **state)
{
    uint8_t buf[64];
    cnt_request req;

    (void)state;
    for (uint8_t unit = 0; unit <= CNT_UNIT_MAX; unit++) {
        uint64_t most = UINT64_MAX / cnt_unit_ns(unit);
        size_t n = cnt_encode_ttl_insert(buf, unit, 1, most, unit, "t", 1);

        decode_ok(buf, n, CNT_OP_TTL_INSERT, unit, &req);
        assert_true(req.ttl == most);
        if (unit == CNT_UNIT_NS)
            continue;
        n = cnt_encode_ttl_insert(buf, unit, 1, most + 1, unit, "t", 1);
        assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
        assert_int_equal(req.status, CNT_STATUS_INVALID);
    }
}

/* Every window shape: valid exactly when, defaults applied, there are at
 * most 64 slots, the window is a whole number of slots and a slot lasts
 * at least 1 us. */
static void test_window_shapes(void **state)
{
    const uint64_t windows[] = { 0, 1, 999, 1000, 9999, 10000, 63936, 64000,
                                 65000, 1000000000, 1000000001,
                                 3600000000000ull, UINT64_MAX };
    uint8_t buf[64];
    cnt_request req;

    (void)state;
    for (unsigned slots = 0; slots < 256; slots++) {
        for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
            uint64_t w = windows[i] ? windows[i] : 1000000000;
            uint64_t k = slots ? slots : 10;
            bool ok = k <= 64 && w % k == 0 && w / k >= 1000;
            size_t n = cnt_encode_window_check(buf, slots, 0, (uint8_t)slots,
                                               1, 1, windows[i], "w", 1);

            assert_int_equal(decode_checked(buf, n, &req),
                             ok ? CNT_DECODE_OK : CNT_DECODE_ERROR);
            if (ok) {
                assert_int_equal(req.slots, slots);
                assert_true(req.period_ns == windows[i]);
            }
        }
    }
}

/* Walks a decoded Multi_check's items into items[]; returns how many. */
static size_t multi_walk(const cnt_request *req, cnt_check_request *items,
                         size_t max)
{
    size_t pos = 0, n = 0;

    while (n < max && cnt_multi_item_next(req, &pos, &items[n]))
        n++;
    assert_false(n < max && cnt_multi_item_next(req, &pos, &items[n]));
    return n;
}

/* A Multi_check built by the client decodes and walks back item by item,
 * each under the multi's peek flag; the walk ends after the last item and
 * refuses other requests. */
static void test_multi_roundtrip_and_walk(void **state)
{
    uint8_t buf[512];
    cnt_multi_builder b;
    cnt_check_request in[3] = {
        { .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 9, .count = 3,
          .cost = 2, .period_ns = 5, .name = (const uint8_t *)"same",
          .name_len = 4 },
        { .opcode = CNT_OP_WINDOW_CHECK, .slots = 0, .limit_or_burst = 100,
          .cost = 1, .period_ns = 0, .name = (const uint8_t *)"same",
          .name_len = 4 },
        { .opcode = CNT_OP_WINDOW_CHECK, .slots = 2, .limit_or_burst = 0,
          .cost = 0xffffffff, .period_ns = 2000,
          .name = (const uint8_t *)"sam", .name_len = 3 },
    };
    cnt_check_request out[CNT_MULTI_MAX + 1];
    cnt_request req;
    size_t n, pos;

    (void)state;
    for (int peek = 0; peek <= 1; peek++) {
        assert_true(cnt_multi_begin(&b, buf, sizeof(buf), 40 + peek,
                                    peek ? CNT_CHECK_FLAG_PEEK : 0));
        for (size_t i = 0; i < 3; i++)
            assert_true(cnt_multi_add(&b, &in[i]));
        n = cnt_multi_finish(&b);
        decode_ok(buf, n, CNT_OP_MULTI_CHECK, 40 + peek, &req);
        assert_int_equal(req.flags, peek);
        assert_int_equal(req.item_count, 3);
        assert_null(req.name);
        assert_int_equal(multi_walk(&req, out, CNT_MULTI_MAX + 1), 3);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(out[i].opcode, in[i].opcode);
            assert_int_equal(out[i].peek, peek);
            assert_int_equal(out[i].slots, in[i].slots);
            assert_int_equal(out[i].limit_or_burst, in[i].limit_or_burst);
            assert_int_equal(out[i].count, in[i].count);
            assert_int_equal(out[i].cost, in[i].cost);
            assert_true(out[i].period_ns == in[i].period_ns);
            assert_int_equal(out[i].name_len, in[i].name_len);
            assert_memory_equal(out[i].name, in[i].name, in[i].name_len);
            /* Names point into the request's items. */
            assert_true(out[i].name > req.items &&
                        out[i].name + out[i].name_len <=
                        req.items + req.items_len);
        }
    }

    /* A position past the items, or any other request: nothing. */
    pos = req.items_len + 1;
    assert_false(cnt_multi_item_next(&req, &pos, &out[0]));
    n = cnt_encode_gcra_check(buf, 1, 0, 1, 1, 1, 1, "g", 1);
    decode_ok(buf, n, CNT_OP_GCRA_CHECK, 1, &req);
    pos = 0;
    assert_false(cnt_multi_item_next(&req, &pos, &out[0]));
    assert_int_equal(pos, 0);
}

/* Builds a Multi_check of count Gcra_check items named "n00".."n15" (or
 * all named "n00" with same_names) into buf; returns its size. */
static size_t multi_of(uint8_t *buf, size_t cap, unsigned count,
                       bool same_names)
{
    cnt_multi_builder b;
    char names[CNT_MULTI_MAX][4];

    assert_true(cnt_multi_begin(&b, buf, cap, 9, 0));
    for (unsigned i = 0; i < count && i < CNT_MULTI_MAX; i++) {
        cnt_check_request it = {
            .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 1, .count = 1,
            .cost = 1, .period_ns = 1, .name = (const uint8_t *)names[i],
            .name_len = 3 };

        snprintf(names[i], sizeof(names[i]), "n%02u", same_names ? 0 : i);
        assert_true(cnt_multi_add(&b, &it));
    }
    return cnt_multi_finish(&b);
}

/* The item count: 1 to 16 items decode, 0 and 17 are 0x04 (the builder
 * refuses a 17th, so that one is written by hand); names repeated within
 * one kind are 0x04 wherever the two items are. */
static void test_multi_count_and_duplicates(void **state)
{
    uint8_t buf[1024];
    cnt_check_request out[CNT_MULTI_MAX];
    cnt_request req;
    cnt_multi_builder b;
    size_t n;

    (void)state;
    for (unsigned count = 1; count <= CNT_MULTI_MAX; count++) {
        n = multi_of(buf, sizeof(buf), count, false);
        decode_ok(buf, n, CNT_OP_MULTI_CHECK, 9, &req);
        assert_int_equal(req.item_count, count);
        assert_int_equal(multi_walk(&req, out, CNT_MULTI_MAX), count);
        /* Two items, or more, with one name: refused. */
        if (count >= 2) {
            n = multi_of(buf, sizeof(buf), count, true);
            assert_int_equal(decode_checked(buf, n, &req),
                             CNT_DECODE_ERROR);
            assert_int_equal(req.status, CNT_STATUS_INVALID);
        }
    }
    n = multi_of(buf, sizeof(buf), 0, false);
    assert_int_equal(n, CNT_HEADER_SIZE + 2);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);

    /* A 17th item, appended by hand: the builder refuses it. */
    n = multi_of(buf, sizeof(buf), CNT_MULTI_MAX, false);
    {
        const size_t item = n - CNT_HEADER_SIZE - 2 - 15 * 32;
        cnt_check_request extra = {
            .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 1, .count = 1,
            .cost = 1, .period_ns = 1, .name = (const uint8_t *)"x",
            .name_len = 1 };

        assert_int_equal(item, 32);     /* 3 + 26 + 3 bytes per item */
        assert_true(cnt_multi_begin(&b, buf, sizeof(buf), 9, 0));
        b.len = n;
        b.count = CNT_MULTI_MAX;
        assert_false(cnt_multi_add(&b, &extra));
        memcpy(buf + n, buf + n - item, item);
        buf[n + CNT_MITEM_FIXED + CNT_GCRA_FIXED + 2] = 'x';
        n += item;
        cnt_put_u32(buf + CNT_OFF_BODYLEN, (uint32_t)(n - CNT_HEADER_SIZE));
        buf[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT] = CNT_MULTI_MAX + 1;
        assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
        assert_int_equal(req.status, CNT_STATUS_INVALID);
        /* The same bytes with count 16: the 17th item is one too many. */
        buf[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT] = CNT_MULTI_MAX;
        assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    }

    /* Duplicates far apart (first and last of 16), and one name that is
     * a prefix of another (distinct names). */
    n = multi_of(buf, sizeof(buf), CNT_MULTI_MAX, false);
    buf[n - 2] = '0';
    buf[n - 1] = '0';
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_true(cnt_multi_begin(&b, buf, sizeof(buf), 9, 0));
    for (uint16_t len = 1; len <= 3; len++) {
        cnt_check_request it = {
            .opcode = CNT_OP_WINDOW_CHECK, .limit_or_burst = 1, .cost = 1,
            .name = (const uint8_t *)"abc", .name_len = len };

        assert_true(cnt_multi_add(&b, &it));
    }
    n = cnt_multi_finish(&b);
    decode_ok(buf, n, CNT_OP_MULTI_CHECK, 9, &req);
    assert_int_equal(multi_walk(&req, out, CNT_MULTI_MAX), 3);
}

/* The builder never writes past its buffer or past CNT_BODY_MAX: an item
 * that does not fit is refused and leaves the request as it was. */
static void test_multi_builder_bounds(void **state)
{
    uint8_t small[CNT_HEADER_SIZE + 2 + 20];
    uint8_t *big = malloc(CNT_REQUEST_MAX + 64);
    uint8_t *name = malloc(CNT_NAME_MAX);
    cnt_multi_builder b;
    cnt_request req;
    cnt_check_request it = { .opcode = CNT_OP_GCRA_CHECK,
                             .limit_or_burst = 1, .count = 1, .cost = 1,
                             .period_ns = 1, .name_len = 1 };
    size_t n;

    (void)state;
    assert_non_null(big);
    assert_non_null(name);
    memset(name, 'q', CNT_NAME_MAX);
    it.name = name;

    /* Too small to begin: nothing taken, nothing finished. */
    assert_false(cnt_multi_begin(&b, small, CNT_HEADER_SIZE + 1, 1, 0));
    assert_false(cnt_multi_add(&b, &it));
    assert_int_equal(cnt_multi_finish(&b), 0);

    /* An item one byte too long for the buffer. */
    memset(small, 0xee, sizeof(small));
    assert_true(cnt_multi_begin(&b, small, sizeof(small) - 1, 1, 0));
    assert_false(cnt_multi_add(&b, &it));       /* needs 30 bytes */
    assert_int_equal(small[CNT_HEADER_SIZE + 2], 0xee);
    assert_int_equal(cnt_multi_finish(&b), CNT_HEADER_SIZE + 2);

    /* Not a check. */
    it.opcode = CNT_OP_TTL_INSERT;
    assert_true(cnt_multi_begin(&b, big, CNT_REQUEST_MAX + 64, 1, 0));
    assert_false(cnt_multi_add(&b, &it));
    it.opcode = CNT_OP_MULTI_CHECK;
    assert_false(cnt_multi_add(&b, &it));

    /* An item body must fit its u16 length: a Gcra_check item's name is
     * at most 65535 - 26 bytes, a Window_check's 65535 - 22. */
    it.opcode = CNT_OP_GCRA_CHECK;
    it.name_len = UINT16_MAX - CNT_GCRA_FIXED + 1;
    assert_false(cnt_multi_add(&b, &it));
    it.name_len = UINT16_MAX - CNT_GCRA_FIXED;
    assert_true(cnt_multi_add(&b, &it));
    n = cnt_multi_finish(&b);
    decode_ok(big, n, CNT_OP_MULTI_CHECK, 1, &req);

    /* Filled to exactly CNT_BODY_MAX: 2 + (29 + 65000) + (29 + 501) =
     * 65561 bytes; one name byte more does not fit. */
    assert_true(cnt_multi_begin(&b, big, CNT_REQUEST_MAX + 64, 2, 0));
    it.name_len = 65000;
    assert_true(cnt_multi_add(&b, &it));
    name[0] = 'r';                      /* not the first item's name */
    it.name_len = 502;
    assert_false(cnt_multi_add(&b, &it));
    it.name_len = 501;
    assert_true(cnt_multi_add(&b, &it));
    n = cnt_multi_finish(&b);
    assert_int_equal(n, CNT_REQUEST_MAX);
    decode_ok(big, n, CNT_OP_MULTI_CHECK, 2, &req);
    assert_int_equal(req.item_count, 2);
    /* A byte more, by hand: refused at the header. */
    cnt_put_u32(big + CNT_OFF_BODYLEN, CNT_BODY_MAX + 1);
    assert_int_equal(decode_checked(big, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);

    free(name);
    free(big);
}

/* Every single-byte change of a valid Multi_check body, and every shorter
 * declared body, decodes without reading past the buffer (each is an
 * exact-size heap copy), and whatever is accepted walks to exactly the
 * count it declares, each item inside the items. */
static void test_multi_mutations(void **state)
{
    const uint8_t values[] = { 0x00, 0x01, 0x02, 0x10, 0x34, 0x35, 0x7f,
                               0xff };
    uint8_t orig[256];
    cnt_multi_builder b;
    cnt_check_request items[3] = {
        { .opcode = CNT_OP_WINDOW_CHECK, .limit_or_burst = 3, .cost = 1,
          .name = (const uint8_t *)"ab", .name_len = 2 },
        { .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 3, .count = 1,
          .cost = 1, .period_ns = 1, .name = (const uint8_t *)"ab",
          .name_len = 2 },
        { .opcode = CNT_OP_WINDOW_CHECK, .limit_or_burst = 3, .cost = 1,
          .name = (const uint8_t *)"b", .name_len = 1 },
    };
    cnt_check_request out[CNT_MULTI_MAX];
    size_t n, accepted = 0;

    (void)state;
    assert_true(cnt_multi_begin(&b, orig, sizeof(orig), 3, 0));
    for (size_t i = 0; i < 3; i++)
        assert_true(cnt_multi_add(&b, &items[i]));
    n = cnt_multi_finish(&b);

    for (size_t at = CNT_HEADER_SIZE; at <= n; at++) {
        for (size_t v = 0; v < sizeof(values) + 1; v++) {
            uint8_t *copy = malloc(n);
            size_t len = n;
            cnt_request req;

            assert_non_null(copy);
            memcpy(copy, orig, n);
            if (at == n) {
                /* No change of a byte: a body declared v bytes shorter. */
                len = n - v;
                cnt_put_u32(copy + CNT_OFF_BODYLEN,
                            (uint32_t)(len - CNT_HEADER_SIZE));
            } else if (v < sizeof(values)) {
                copy[at] = values[v];
            } else {
                copy[at] ^= 0x80;
            }
            if (decode_checked(copy, len, &req) == CNT_DECODE_OK) {
                accepted++;
                assert_true(req.item_count >= 1 &&
                            req.item_count <= CNT_MULTI_MAX);
                assert_int_equal(multi_walk(&req, out, CNT_MULTI_MAX),
                                 req.item_count);
                for (size_t i = 0; i < req.item_count; i++)
                    assert_true(out[i].name >= req.items &&
                                out[i].name + out[i].name_len <=
                                req.items + req.items_len);
            }
            free(copy);
        }
    }
    /* Some changes keep the request valid (a limit, a cost, a name). */
    assert_true(accepted > 0);
}

/* ---- Tenant throttling requests ---- */

/* The throttling request encoders write exactly the documented layout. */
static void test_encode_throttle_requests(void **state)
{
    uint8_t out[FIXTURE_MAX];
    size_t n;

    (void)state;
    n = cnt_encode_auth(out, 1, "s3cr", 4);
    assert_bytes_hex(out, n,
        "90" "40" "00" "00" /* magic, Auth, flags, reserved */
        "00000006"      /* body length: 2 + 4 */
        "00000001"      /* opaque */
        "0004"          /* secret length */
        "73336372");    /* secret */
    n = cnt_encode_throttle(out, 2, 0x01020304, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "41" "00" "00" /* magic, Throttle, flags, reserved */
        "00000009"      /* body length: 6 + 3 */
        "00000002"      /* opaque */
        "01020304"      /* units */
        "0003"          /* name length */
        "616263");      /* tenant */
    n = cnt_encode_tenant_show(out, 3, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "42" "00" "00" /* magic, Tenant_show, flags, reserved */
        "00000005"      /* body length: 2 + 3 */
        "00000003"      /* opaque */
        "0003"          /* name length */
        "616263");      /* tenant */
    n = cnt_encode_simple(out, CNT_OP_TENANT_LIST, 4);
    assert_bytes_hex(out, n,
        "90" "43" "00" "00" /* magic, Tenant_list, flags, reserved */
        "00000000"      /* body length */
        "00000004");    /* opaque */
    n = cnt_encode_node_show(out, 5);
    assert_bytes_hex(out, n,
        "90" "44" "00" "00" /* magic, Node_show, flags, reserved */
        "00000000"      /* body length */
        "00000005");    /* opaque */
    n = cnt_encode_tenant_set(out, 6, CNT_TENANT_SET_ALL, 10,
                              CNT_HARD_LIMIT_UNLIMITED, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "45" "00" "00" /* magic, Tenant_set, flags, reserved */
        "00000011"      /* body length: 14 + 3 */
        "00000006"      /* opaque */
        "03"            /* flags: reserved and hard limit */
        "000000"        /* zero bytes */
        "0000000a"      /* reserved: 10 */
        "ffffffff"      /* hard limit: unlimited */
        "0003"          /* name length */
        "616263");      /* tenant */
    n = cnt_encode_tenant_remove(out, 7, "abc", 3);
    assert_bytes_hex(out, n,
        "90" "46" "00" "00" /* magic, Tenant_remove, flags, reserved */
        "00000005"      /* body length: 2 + 3 */
        "00000007"      /* opaque */
        "0003"          /* name length */
        "616263");      /* tenant */
    n = cnt_encode_node_set(out, 8, 100000);
    assert_bytes_hex(out, n,
        "90" "47" "00" "00" /* magic, Node_set, flags, reserved */
        "00000004"      /* body length */
        "00000008"      /* opaque */
        "000186a0");    /* capacity: 100000 */
    n = cnt_encode_busiest(out, 0x3e, 16);
    assert_bytes_hex(out, n,
        "90" "37" "00" "00" /* magic, Busiest, flags, reserved */
        "00000004"      /* body length */
        "0000003e"      /* opaque */
        "00000010");    /* count: 16 */
    n = cnt_encode_unthrottle(out, 9);
    assert_bytes_hex(out, n,
        "90" "48" "00" "00" /* magic, Unthrottle, flags, reserved */
        "00000000"      /* body length */
        "00000009");    /* opaque */
    n = cnt_encode_reload(out, 10);
    assert_bytes_hex(out, n,
        "90" "49" "00" "00" /* magic, Reload, flags, reserved */
        "00000000"      /* body length */
        "0000000a");    /* opaque */
}

/* Every throttling request encoded by the client decodes on the server
 * side with the values it was given, and no other field set. */
static void test_roundtrip_throttle(void **state)
{
    uint8_t buf[128];
    cnt_request req;
    size_t n;

    (void)state;
    n = cnt_encode_auth(buf, 1, "pw", 2);
    decode_ok(buf, n, CNT_OP_AUTH, 1, &req);
    assert_int_equal(req.secret_len, 2);
    assert_memory_equal(req.secret, "pw", 2);
    assert_null(req.name);
    assert_int_equal(req.name_len, 0);

    n = cnt_encode_throttle(buf, 2, 1, "t", 1);
    decode_ok(buf, n, CNT_OP_THROTTLE, 2, &req);
    assert_int_equal(req.units, 1);
    assert_int_equal(req.name_len, 1);
    assert_memory_equal(req.name, "t", 1);
    assert_null(req.secret);

    n = cnt_encode_throttle(buf, 3, UINT32_MAX, "tt", 2);
    decode_ok(buf, n, CNT_OP_THROTTLE, 3, &req);
    assert_int_equal(req.units, UINT32_MAX);

    n = cnt_encode_throttle(buf, 4, 0, "t", 1);
    assert_int_equal(decode_checked(buf, n, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);

    n = cnt_encode_tenant_show(buf, 5, "show", 4);
    decode_ok(buf, n, CNT_OP_TENANT_SHOW, 5, &req);
    assert_int_equal(req.name_len, 4);
    assert_memory_equal(req.name, "show", 4);

    n = cnt_encode_simple(buf, CNT_OP_TENANT_LIST, 6);
    decode_ok(buf, n, CNT_OP_TENANT_LIST, 6, &req);
    n = cnt_encode_node_show(buf, 7);
    decode_ok(buf, n, CNT_OP_NODE_SHOW, 7, &req);

    n = cnt_encode_tenant_set(buf, 8, CNT_TENANT_SET_RESERVED, 40,
                              0x12345678, "set", 3);
    decode_ok(buf, n, CNT_OP_TENANT_SET, 8, &req);
    assert_int_equal(req.flags, CNT_TENANT_SET_RESERVED);
    assert_int_equal(req.reserved, 40);
    assert_int_equal(req.hard_limit, 0x12345678);
    assert_memory_equal(req.name, "set", 3);
    assert_int_equal(req.units, 0);
    assert_int_equal(req.capacity, 0);

    n = cnt_encode_tenant_remove(buf, 9, "rm", 2);
    decode_ok(buf, n, CNT_OP_TENANT_REMOVE, 9, &req);
    assert_memory_equal(req.name, "rm", 2);

    n = cnt_encode_node_set(buf, 10, 0);
    decode_ok(buf, n, CNT_OP_NODE_SET, 10, &req);
    assert_int_equal(req.capacity, 0);
    assert_null(req.name);
    n = cnt_encode_node_set(buf, 11, UINT32_MAX);
    decode_ok(buf, n, CNT_OP_NODE_SET, 11, &req);
    assert_int_equal(req.capacity, UINT32_MAX);

    n = cnt_encode_lease_list(buf, 14, 64);
    decode_ok(buf, n, CNT_OP_LEASE_LIST, 14, &req);
    assert_int_equal(req.count, 64);
    assert_int_equal(n, CNT_HEADER_SIZE + 4);

    n = cnt_encode_unthrottle(buf, 12);
    decode_ok(buf, n, CNT_OP_UNTHROTTLE, 12, &req);
    n = cnt_encode_reload(buf, 13);
    decode_ok(buf, n, CNT_OP_RELOAD, 13, &req);
}

/* Tenant_set takes exactly the flags 1, 2 and 3; any other byte,
 * whatever the rest of the body, answers 0x04. Throttle takes any units
 * but 0. */
static void test_tenant_set_flags_and_units(void **state)
{
    uint8_t buf[64];
    cnt_request req;
    size_t n;
    unsigned accepted = 0;

    (void)state;
    for (unsigned f = 0; f < 256; f++) {
        bool valid = f >= 1 && f <= CNT_TENANT_SET_ALL;

        n = cnt_encode_tenant_set(buf, f, (uint8_t)f, 1, 2, "t", 1);
        assert_int_equal(decode_checked(buf, n, &req),
                         valid ? CNT_DECODE_OK : CNT_DECODE_ERROR);
        if (valid) {
            assert_int_equal(req.flags, f);
            accepted++;
        } else {
            assert_int_equal(req.status, CNT_STATUS_INVALID);
        }
    }
    assert_int_equal(accepted, 3);
    for (unsigned bit = 0; bit < 32; bit++) {
        n = cnt_encode_throttle(buf, bit, 1u << bit, "t", 1);
        decode_ok(buf, n, CNT_OP_THROTTLE, bit, &req);
        assert_int_equal(req.units, 1u << bit);
    }
}

/* The longest secret (65535 bytes) and the longest tenants decode; Auth
 * with the longest secret waits for all of it. */
/* The JSON commands: encoded and decoded back; a document of
 * CNT_JSON_DOC_MAX bytes passes, one byte more is 0x04; a long tenant
 * leaves the document where the body ends. */
static void test_json_documents(void **state)
{
    uint8_t *buf = malloc(CNT_REQUEST_MAX);
    char *doc = malloc(CNT_JSON_DOC_MAX + 1);
    cnt_request req;
    size_t len;

    (void)state;
    assert_non_null(buf);
    assert_non_null(doc);
    memset(doc, ' ', CNT_JSON_DOC_MAX + 1);
    len = cnt_encode_node_set_json(buf, 5, doc, CNT_JSON_DOC_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + CNT_JSON_DOC_MAX);
    decode_ok(buf, len, CNT_OP_NODE_SET_JSON, 5, &req);
    assert_int_equal(req.doc_len, CNT_JSON_DOC_MAX);
    assert_ptr_equal(req.doc, buf + CNT_HEADER_SIZE);
    len = cnt_encode_node_set_json(buf, 6, doc, CNT_JSON_DOC_MAX + 1);
    assert_int_equal(decode_checked(buf, len, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);

    len = cnt_encode_tenant_set_json(buf, 7, "acme", 4, doc,
                                     CNT_JSON_DOC_MAX);
    decode_ok(buf, len, CNT_OP_TENANT_SET_JSON, 7, &req);
    assert_int_equal(req.name_len, 4);
    assert_memory_equal(req.name, "acme", 4);
    assert_int_equal(req.doc_len, CNT_JSON_DOC_MAX);
    assert_ptr_equal(req.doc, buf + CNT_HEADER_SIZE + 6);
    len = cnt_encode_tenant_set_json(buf, 8, "acme", 4, doc,
                                     CNT_JSON_DOC_MAX + 1);
    assert_int_equal(decode_checked(buf, len, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);
    len = cnt_encode_tenant_set_json(buf, 9, "t", 1, "{}", 2);
    assert_int_equal(len, CNT_HEADER_SIZE + 5);
    decode_ok(buf, len, CNT_OP_TENANT_SET_JSON, 9, &req);
    assert_int_equal(req.doc_len, 2);
    assert_memory_equal(req.doc, "{}", 2);
    free(doc);
    free(buf);
}

static void test_throttle_longest(void **state)
{
    uint8_t *name = malloc(CNT_NAME_MAX);
    uint8_t *buf = malloc(CNT_REQUEST_MAX);
    cnt_request req;
    size_t len;

    (void)state;
    assert_non_null(name);
    assert_non_null(buf);
    for (size_t i = 0; i < CNT_NAME_MAX; i++)
        name[i] = (uint8_t)(i * 13 + 5);

    len = cnt_encode_throttle(buf, 1, 9, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 6 + CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_THROTTLE, name);
    len = cnt_encode_tenant_show(buf, 2, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TENANT_SHOW, name);
    len = cnt_encode_tenant_set(buf, 3, CNT_TENANT_SET_HARD, 0, 5, name,
                                CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 14 + CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TENANT_SET, name);
    len = cnt_encode_tenant_remove(buf, 4, name, CNT_NAME_MAX);
    check_long_request(buf, len, CNT_OP_TENANT_REMOVE, name);

    len = cnt_encode_auth(buf, 5, name, CNT_NAME_MAX);
    assert_int_equal(len, CNT_HEADER_SIZE + 2 + CNT_NAME_MAX);
    assert_int_equal(decode_checked(buf, len - 1, &req),
                     CNT_DECODE_NEED_MORE);
    assert_int_equal(req.size, len);
    decode_ok(buf, len, CNT_OP_AUTH, 5, &req);
    assert_int_equal(req.secret_len, CNT_NAME_MAX);
    assert_memory_equal(req.secret, name, CNT_NAME_MAX);
    /* One byte short of its declared secret: runs past the body. */
    cnt_put_u32(buf + CNT_OFF_BODYLEN, 2 + CNT_NAME_MAX - 1);
    assert_int_equal(decode_checked(buf, len - 1, &req), CNT_DECODE_ERROR);
    assert_int_equal(req.status, CNT_STATUS_INVALID);

    free(buf);
    free(name);
}

/* Every opcode byte: the six of the reference protocol, the four waiting
 * extensions, the seven rate limits and the ten tenant throttling opcodes
 * decode (Noop, Stats, Dump, Queues, Tenant_list, Node_show, Unthrottle
 * and Reload at the header, the ones with a body refuse an empty one),
 * every other byte is answered 0x81 with its body skipped. */
static void test_decode_every_opcode_byte(void **state)
{
    uint8_t buf[CNT_HEADER_SIZE];
    cnt_request req;

    (void)state;
    for (unsigned op = 0; op < 256; op++) {
        cnt_encode_request_header(buf, (uint8_t)op, 0, op);
        cnt_decode_result r = decode_checked(buf, sizeof(buf), &req);

        assert_int_equal(req.opcode, op);
        assert_int_equal(req.opaque, op);
        assert_int_equal(req.size, CNT_HEADER_SIZE);
        /* The decoder and the run-time table come from the same rows. */
        assert_int_equal(r == CNT_DECODE_ERROR &&
                         req.status == CNT_STATUS_UNKNOWN_COMMAND,
                         cnt_opcode_table[op].body == CNT_BODY_UNKNOWN);
        switch (op) {
        case CNT_OP_NOOP:
        case CNT_OP_STATS:
        case CNT_OP_DUMP:
        case CNT_OP_QUEUES:
        case CNT_OP_TENANT_LIST:
        case CNT_OP_NODE_SHOW:
        case CNT_OP_UNTHROTTLE:
        case CNT_OP_RELOAD:
        case CNT_OP_NODE_SET_JSON:   /* an empty document: the server's */
            assert_int_equal(r, CNT_DECODE_OK);
            break;
        case CNT_OP_GET:
        case CNT_OP_ACQUIRE:
        case CNT_OP_RELEASE:
        case CNT_OP_WAIT_ACQUIRE:
        case CNT_OP_RENEW:
        case CNT_OP_WAIT_RELEASE:
        case CNT_OP_TTL_INSERT:
        case CNT_OP_TTL_QUERY:
        case CNT_OP_TTL_UPDATE:
        case CNT_OP_TTL_PURGE:
        case CNT_OP_WINDOW_CHECK:
        case CNT_OP_GCRA_CHECK:
        case CNT_OP_MULTI_CHECK:
        case CNT_OP_AUTH:
        case CNT_OP_AUTH_USER:
        case CNT_OP_THROTTLE:
        case CNT_OP_TENANT_SHOW:
        case CNT_OP_TENANT_SET:
        case CNT_OP_TENANT_REMOVE:
        case CNT_OP_NODE_SET:
        case CNT_OP_TENANT_SET_JSON:
        case CNT_OP_LEASE_LIST:
        case CNT_OP_BUSIEST:
            assert_int_equal(r, CNT_DECODE_ERROR);
            assert_int_equal(req.status, CNT_STATUS_INVALID);
            break;
        default:
            assert_int_equal(r, CNT_DECODE_ERROR);
            assert_int_equal(req.status, CNT_STATUS_UNKNOWN_COMMAND);
        }
    }
}

/* Runs the request codec tests. */
/* The encoders write every header byte themselves, whatever the buffer
 * held before: flags, reserved and a new Multi_check's count are 0. */
static void test_encoders_clear_dirty_buffers(void **state)
{
    uint8_t out[64];
    cnt_multi_builder b;

    (void)state;
    memset(out, 0xee, sizeof out);
    assert_int_equal(cnt_encode_request_header(out, CNT_OP_GET, 3, 9),
                     CNT_HEADER_SIZE);
    assert_int_equal(out[CNT_OFF_MAGIC], CNT_MAGIC_REQUEST);
    assert_int_equal(out[CNT_OFF_FLAGS], 0);
    assert_int_equal(out[CNT_OFF_RESERVED], 0);
    memset(out, 0xee, sizeof out);
    assert_true(cnt_multi_begin(&b, out, sizeof out, 7, 1));
    assert_int_equal(out[CNT_OFF_FLAGS], 0);
    assert_int_equal(out[CNT_HEADER_SIZE + CNT_MULTI_OFF_FLAGS], 1);
    assert_int_equal(out[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT], 0);
}

/* A buffer of exactly a Multi_check's header and fixed part is enough to
 * begin one: the empty request it finishes is that long, flags and a
 * count of 0 in place; an item that fills the rest of a buffer exactly
 * is taken. */
static void test_multi_exact_fit(void **state)
{
    enum { ITEM = CNT_MITEM_FIXED + CNT_GCRA_FIXED + 3 };
    uint8_t buf[CNT_HEADER_SIZE + CNT_MULTI_FIXED + ITEM];
    cnt_check_request it = { .opcode = CNT_OP_GCRA_CHECK,
                             .limit_or_burst = 1, .count = 1, .cost = 1,
                             .period_ns = 1, .name = (const uint8_t *)"abc",
                             .name_len = 3 };
    cnt_multi_builder b;
    cnt_request req;

    (void)state;
    memset(buf, 0xee, sizeof(buf));
    assert_true(cnt_multi_begin(&b, buf, CNT_HEADER_SIZE + CNT_MULTI_FIXED,
                                3, 0x01));
    assert_int_equal(cnt_multi_finish(&b), CNT_HEADER_SIZE + CNT_MULTI_FIXED);
    assert_int_equal(buf[CNT_OFF_OPCODE], CNT_OP_MULTI_CHECK);
    assert_int_equal(buf[CNT_HEADER_SIZE + CNT_MULTI_OFF_FLAGS], 0x01);
    assert_int_equal(buf[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT], 0);

    assert_true(cnt_multi_begin(&b, buf, sizeof(buf), 4, 0));
    assert_true(cnt_multi_add(&b, &it));
    assert_int_equal(cnt_multi_finish(&b), sizeof(buf));
    decode_ok(buf, sizeof(buf), CNT_OP_MULTI_CHECK, 4, &req);
    assert_int_equal(req.items_len, ITEM);
}

/* Node_set_json carries its document's bytes, whatever the buffer held
 * before. */
static void test_node_set_json_copies_doc(void **state)
{
    static const char doc[] = "{\"capacity\":5}";
    uint8_t buf[CNT_HEADER_SIZE + sizeof(doc)];
    cnt_request req;
    size_t len;

    (void)state;
    memset(buf, 0xee, sizeof(buf));
    len = cnt_encode_node_set_json(buf, 2, doc, sizeof(doc) - 1);
    assert_int_equal(len, CNT_HEADER_SIZE + sizeof(doc) - 1);
    decode_ok(buf, len, CNT_OP_NODE_SET_JSON, 2, &req);
    assert_int_equal(req.doc_len, sizeof(doc) - 1);
    assert_memory_equal(req.doc, doc, sizeof(doc) - 1);
}

/* The item walk refuses a position past the end of the items, even when
 * a well-formed item happens to lie there in memory, and walks nothing in
 * a request that is not a Multi_check. */
static void test_multi_walk_pos_past_end(void **state)
{
    uint8_t buf[256];
    cnt_check_request it = { .opcode = CNT_OP_GCRA_CHECK,
                             .limit_or_burst = 1, .count = 1, .cost = 1,
                             .period_ns = 1, .name = (const uint8_t *)"a",
                             .name_len = 1 };
    cnt_check_request out;
    cnt_multi_builder b;
    cnt_request req, shorter;
    size_t pos = 0, first;

    (void)state;
    assert_true(cnt_multi_begin(&b, buf, sizeof(buf), 5, 0));
    assert_true(cnt_multi_add(&b, &it));
    it.name = (const uint8_t *)"b";
    assert_true(cnt_multi_add(&b, &it));
    decode_ok(buf, cnt_multi_finish(&b), CNT_OP_MULTI_CHECK, 5, &req);
    assert_true(cnt_multi_item_next(&req, &pos, &out));
    first = pos;
    /* The items end one byte before the second item starts. */
    shorter = req;
    shorter.items_len = (uint32_t)first - 1;
    pos = first;
    assert_false(cnt_multi_item_next(&shorter, &pos, &out));
    assert_int_equal(pos, first);
    /* On the whole request the same position reads the second item. */
    assert_true(cnt_multi_item_next(&req, &pos, &out));
    assert_int_equal(out.name_len, 1);
    assert_memory_equal(out.name, "b", 1);
    /* A request of another opcode has no items to walk, whatever its
     * items pointer says. */
    shorter = req;
    shorter.opcode = CNT_OP_GCRA_CHECK;
    pos = 0;
    assert_false(cnt_multi_item_next(&shorter, &pos, &out));
    assert_int_equal(pos, 0);
}

/* Auth_user byte for byte (flags, a zero byte, the secret's length, the
 * user's, the user, the secret), over a dirty buffer. */
static void test_encode_auth_user(void **state)
{
    static const uint8_t body[] = {
        0x01, 0x00, 0x00, 0x04, 0x00, 0x03,     /* flags, 0, lengths */
        'b', 'o', 'b', 'p', 'w', '!', 'x',
    };
    uint8_t buf[64], want[64];
    size_t n;

    (void)state;
    memset(buf, 0xee, sizeof(buf));
    memset(want, 0xee, sizeof(want));
    cnt_encode_request_header(want, CNT_OP_AUTH_USER, sizeof(body),
                              0x01020304);
    memcpy(want + CNT_HEADER_SIZE, body, sizeof(body));
    n = cnt_encode_auth_user(buf, 0x01020304, 0x01, "bob", 3, "pw!x", 4);
    assert_int_equal(n, CNT_HEADER_SIZE + sizeof(body));
    assert_memory_equal(buf, want, sizeof(buf));
}

/* A decoded request says whether its opcode needs an authenticated
 * connection, whatever the struct held before. */
static void test_decode_privileged(void **state)
{
    uint8_t buf[CNT_HEADER_SIZE];
    cnt_request req;
    size_t n;

    (void)state;
    n = cnt_encode_reload(buf, 1);
    memset(&req, 0, sizeof(req));
    decode_ok(buf, n, CNT_OP_RELOAD, 1, &req);
    assert_true(req.privileged);
    n = cnt_encode_simple(buf, CNT_OP_NOOP, 2);
    memset(&req, 0xff, sizeof(req));
    decode_ok(buf, n, CNT_OP_NOOP, 2, &req);
    assert_false(req.privileged);
}

int main(void)
{
    const struct CMUnitTest request_tests[] = {
        cmocka_unit_test(test_decode_stream_every_split),
        cmocka_unit_test(test_decode_pipelined_buffer),
        cmocka_unit_test(test_decode_longest_names),
        cmocka_unit_test(test_decode_every_opcode_byte),
        cmocka_unit_test(test_encode_requests),
        cmocka_unit_test(test_roundtrip_client_to_server),
        cmocka_unit_test(test_encode_rate_limit_requests),
        cmocka_unit_test(test_roundtrip_rate_limits),
        cmocka_unit_test(test_ttl_insert_range),
        cmocka_unit_test(test_window_shapes),
        cmocka_unit_test(test_multi_roundtrip_and_walk),
        cmocka_unit_test(test_multi_count_and_duplicates),
        cmocka_unit_test(test_multi_builder_bounds),
        cmocka_unit_test(test_multi_mutations),
        cmocka_unit_test(test_encode_throttle_requests),
        cmocka_unit_test(test_roundtrip_throttle),
        cmocka_unit_test(test_tenant_set_flags_and_units),
        cmocka_unit_test(test_throttle_longest),
        cmocka_unit_test(test_json_documents),
        cmocka_unit_test(test_encoders_clear_dirty_buffers),
        cmocka_unit_test(test_multi_exact_fit),
        cmocka_unit_test(test_node_set_json_copies_doc),
        cmocka_unit_test(test_multi_walk_pos_past_end),
        cmocka_unit_test(test_encode_auth_user),
        cmocka_unit_test(test_decode_privileged),
    };
    int failed = 0;

    failed += run_rows("request decoding", test_decode_row, decode_rows,
                       sizeof(decode_rows[0]), N_DECODE_ROWS,
                       offsetof(decode_row, what));
    failed += cmocka_run_group_tests_name("request codec", request_tests,
                                          NULL, NULL);
    return failed == 0 ? 0 : 1;
}
