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
    const char *name;       /* REQUEST rows with a name */
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
    { .what = "unknown opcode: 0x81, opcode kept, body skipped",
      .hex = "90"           /* magic */
             "24"           /* opcode: 0x24, unknown (the first one
                             * after the extensions) */
             "00"           /* flags */
             "00"           /* reserved */
             "00000003"     /* body length */
             "0000001c"     /* opaque */
             "010203",      /* body, to be skipped */
      .result = CNT_DECODE_ERROR, .at_header = true, .size = 15,
      .opcode = 0x24, .opaque = 28, .status = CNT_STATUS_UNKNOWN_COMMAND },
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
             "00010011"     /* body length: CNT_BODY_MAX */
             "00000020",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX, .opcode = CNT_OP_ACQUIRE, .opaque = 32,
      .status = CNT_STATUS_INVALID },
    { .what = "bad magic, body one past the largest: close",
      .hex = "00"           /* magic: wrong */
             "02"           /* opcode */
             "00"           /* flags */
             "00"           /* reserved */
             "00010012"     /* body length: CNT_BODY_MAX + 1 */
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
             "00010012"     /* body length: CNT_BODY_MAX + 1 */
             "00000023",    /* opaque */
      .result = CNT_DECODE_ERROR, .at_header = true,
      .size = CNT_REQUEST_MAX + 1, .opcode = CNT_OP_RELEASE,
      .opaque = 35, .status = CNT_STATUS_INVALID },
    { .what = "acquire declaring the largest body: waits for it",
      .hex = "90"           /* magic */
             "02"           /* opcode: Acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00010011"     /* body length: CNT_BODY_MAX (bytes after
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
             "00010011"     /* body length: CNT_BODY_MAX, 18 + 65535 */
             "00000046",    /* opaque */
      .result = CNT_DECODE_NEED_MORE, .size = CNT_REQUEST_MAX,
      .opcode = CNT_OP_WAIT_ACQUIRE, .opaque = 0x46 },
    { .what = "wait_acquire declaring one byte too many: 0x04 at the header",
      .hex = "90"           /* magic */
             "20"           /* opcode: Wait_acquire */
             "00"           /* flags */
             "00"           /* reserved */
             "00010012"     /* body length: CNT_BODY_MAX + 1 */
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
    len += cnt_encode_queues(buf + len, 8);
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

/* 65535-byte names for every opcode with a name; Wait_acquire's is
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
    assert_int_equal(len, CNT_REQUEST_MAX);
    check_long_request(buf, len, CNT_OP_WAIT_ACQUIRE, name);
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

    /* The longest name with a body one byte short: runs past the body. */
    len = cnt_encode_wait_acquire(buf, 4, 1, 1, 0, 0, name, CNT_NAME_MAX);
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
    n = cnt_encode_queues(out, 7);
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

    n = cnt_encode_queues(buf, 17);
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
    n = cnt_encode_simple(buf, 0x30, 13);
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

/* Every opcode byte: the six of the reference protocol and the four
 * extensions decode (Noop, Stats, Dump and Queues at the header, the ones
 * with a name refuse an empty body), every other byte is answered 0x81
 * with its body skipped. */
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
            assert_int_equal(r, CNT_DECODE_OK);
            break;
        case CNT_OP_GET:
        case CNT_OP_ACQUIRE:
        case CNT_OP_RELEASE:
        case CNT_OP_WAIT_ACQUIRE:
        case CNT_OP_RENEW:
        case CNT_OP_WAIT_RELEASE:
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
int main(void)
{
    const struct CMUnitTest request_tests[] = {
        cmocka_unit_test(test_decode_stream_every_split),
        cmocka_unit_test(test_decode_pipelined_buffer),
        cmocka_unit_test(test_decode_longest_names),
        cmocka_unit_test(test_decode_every_opcode_byte),
        cmocka_unit_test(test_encode_requests),
        cmocka_unit_test(test_roundtrip_client_to_server),
    };
    int failed = 0;

    failed += run_rows("request decoding", test_decode_row, decode_rows,
                       sizeof(decode_rows[0]), N_DECODE_ROWS,
                       offsetof(decode_row, what));
    failed += cmocka_run_group_tests_name("request codec", request_tests,
                                          NULL, NULL);
    return failed == 0 ? 0 : 1;
}
