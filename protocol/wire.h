/* wire.h: constants, the opcode table, status texts and byte-order helpers
 * of the yrmcds counter protocol. Every packet is a 12-byte big-endian header
 * and an optional body; fields are read by byte offset, never through a
 * struct cast over the buffer. */
#ifndef CNT_PROTOCOL_WIRE_H
#define CNT_PROTOCOL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define CNT_MAGIC_REQUEST  0x90
#define CNT_MAGIC_RESPONSE 0x91
/* Reserved for server-initiated packets (lease expiry, wait grants: see
 * doc/protocol.md); the reference never sends it, so clients that only
 * know 0x91 can tell such a packet from an answer. */
#define CNT_MAGIC_NOTICE   0x92

#define CNT_HEADER_SIZE 12
#define CNT_NAME_MAX    65535u
/* The largest legal body: Acquire's 10 fixed bytes and the longest name.
 * It bounds every opcode whose body is needed (tests/test_wire.c checks
 * that no row's fixed part is larger than Acquire's). */
#define CNT_BODY_MAX    (10u + CNT_NAME_MAX)
#define CNT_REQUEST_MAX (CNT_HEADER_SIZE + CNT_BODY_MAX)

/* Header offsets (requests and responses share the layout; byte 2 is flags
 * in a request and status in a response). */
#define CNT_OFF_MAGIC    0
#define CNT_OFF_OPCODE   1
#define CNT_OFF_STATUS   2
#define CNT_OFF_FLAGS    2
#define CNT_OFF_RESERVED 3
#define CNT_OFF_BODYLEN  4
#define CNT_OFF_OPAQUE   8

/* Request body offsets of the three opcodes that carry a name (the name
 * data follows its length field directly). */
#define CNT_GET_OFF_NAMELEN      0
#define CNT_GET_FIXED            2
#define CNT_ACQ_OFF_RESOURCES    0
#define CNT_ACQ_OFF_MAXIMUM      4
#define CNT_ACQ_OFF_NAMELEN      8
#define CNT_ACQ_FIXED            10
#define CNT_REL_OFF_RESOURCES    0
#define CNT_REL_OFF_NAMELEN      4
#define CNT_REL_FIXED            6

/* Dump record body offsets (current, max consumption, name length, name). */
#define CNT_DUMP_OFF_CURRENT     0
#define CNT_DUMP_OFF_MAX         4
#define CNT_DUMP_OFF_NAMELEN     8
#define CNT_DUMP_FIXED           10

/* Stats pair: name length u16, value length u16, then name and value. */
#define CNT_STATS_PAIR_FIXED     4

/* Opcodes of the reference protocol. Extensions (leases, waits, rate
 * limits) take codes from 0x20 up, a range the reference answers with
 * 0x81, so old servers refuse them cleanly. */
typedef enum cnt_opcode {
    CNT_OP_NOOP    = 0x00,
    CNT_OP_GET     = 0x01,
    CNT_OP_ACQUIRE = 0x02,
    CNT_OP_RELEASE = 0x03,
    CNT_OP_STATS   = 0x10,
    CNT_OP_DUMP    = 0x11,
    CNT_OP_WAIT_ACQUIRE = 0x20,
    CNT_OP_RENEW        = 0x21,
    CNT_OP_WAIT_RELEASE = 0x22,
    CNT_OP_QUEUES       = 0x23
} cnt_opcode;

/* Response statuses. */
typedef enum cnt_status {
    CNT_STATUS_OK                     = 0x00,
    CNT_STATUS_NOT_FOUND              = 0x01,
    CNT_STATUS_INVALID                = 0x04,
    CNT_STATUS_RESOURCE_NOT_AVAILABLE = 0x21,
    CNT_STATUS_NOT_ACQUIRED           = 0x22,
    CNT_STATUS_EXCEEDS_MAXIMUM        = 0x23,
    CNT_STATUS_ALREADY_ACTIVE         = 0x24,
    CNT_STATUS_UNKNOWN_GROUP          = 0x25,
    CNT_STATUS_TOO_MANY_WAITS         = 0x26,
    CNT_STATUS_LEASE_EXPIRED          = 0x27,
    CNT_STATUS_UNKNOWN_COMMAND        = 0x81,
    CNT_STATUS_OUT_OF_MEMORY          = 0x82
} cnt_status;

/* What one decoding step found at the front of a buffer; the request
 * decoder (request.h) and the response decoder (response.h) both answer
 * with it, and each value means the same thing for both. */
typedef enum cnt_decode_result {
    /* Less than one whole packet is buffered; read more. */
    CNT_DECODE_NEED_MORE,
    /* One valid packet; its fields are in the output struct. */
    CNT_DECODE_OK,
    /* One framed packet the decoder refuses, to be answered with a status
     * and stepped over (its size is known). Only requests can be refused
     * this way: a client has nobody to answer. */
    CNT_DECODE_ERROR,
    /* The stream cannot be a counter-protocol stream any more (wrong
     * magic where framing cannot be trusted); close the connection. */
    CNT_DECODE_CLOSE
} cnt_decode_result;

/* Returns the exact error body text the reference sends for a status
 * ("" for OK, NULL for a code outside the table). */
const char *cnt_status_text(cnt_status status);

/* How the server treats a request's body, per opcode. Zero is "unknown" so
 * that every opcode byte without a row in the table is answered 0x81. */
typedef enum cnt_body_kind {
    CNT_BODY_UNKNOWN = 0,   /* not an opcode: 0x81, body skipped */
    CNT_BODY_SKIP,          /* answered at the header, body skipped */
    CNT_BODY_NEEDED         /* decoded from the whole buffered body */
} cnt_body_kind;

/* Marks a field an opcode's body does not have. */
#define CNT_FIELD_NONE 0xffu

/* Argument checks of a body, as bits of cnt_opcode_row.checks. The decoder
 * always runs them in the reference's order, whatever the bit values:
 * body shorter than the fixed part, then the numbers (resources not 0,
 * maximum not below resources), then the name (not empty, not running
 * past the body; implied by a name field). Each failure answers 0x04. */
#define CNT_CHECK_RESOURCES_NONZERO 0x01u
#define CNT_CHECK_MAXIMUM_COVERS    0x02u

/* One opcode's row: everything the decoder and cnt_opcode_name need to
 * know about it. A new opcode whose body is made of the field kinds below
 * costs one enum value and one row in CNT_OPCODE_ROWS; a new field kind
 * (say a lease time) costs one offset member here, one field in
 * cnt_request and one step in the decoder. Offsets are from the start of
 * the body. */
typedef struct cnt_opcode_row {
    const char *name;       /* printable name; NULL when not an opcode */
    uint8_t body;           /* a cnt_body_kind */
    uint8_t fixed;          /* bytes before the name data (the least legal
                             * body); 0 for a skipped body */
    uint8_t off_resources;  /* u32, or CNT_FIELD_NONE */
    uint8_t off_maximum;    /* u32, or CNT_FIELD_NONE */
    uint8_t off_namelen;    /* u16 followed by the name at fixed, or
                             * CNT_FIELD_NONE */
    uint8_t checks;         /* CNT_CHECK_* bits */
} cnt_opcode_row;

/* A row for an opcode whose body is skipped: nothing in it is read. */
#define CNT_ROW_SKIPPED_BODY(text)                                          \
    .name = (text), .body = CNT_BODY_SKIP, .fixed = 0,                      \
    .off_resources = CNT_FIELD_NONE, .off_maximum = CNT_FIELD_NONE,         \
    .off_namelen = CNT_FIELD_NONE, .checks = 0

/* The opcode table, one ROW(opcode, designated initializers of its
 * cnt_opcode_row) per opcode. It is written once, here, and expanded
 * twice: into cnt_opcode_table (wire.c) and into the request decoder
 * (request.c), which gets a copy of each row as a compile-time constant
 * so that the compiler drops the steps of fields an opcode does not have
 * and decoding costs no more than hand-written code per opcode. */
#define CNT_OPCODE_ROWS(ROW)                                                \
    ROW(CNT_OP_NOOP, CNT_ROW_SKIPPED_BODY("noop"))                          \
    ROW(CNT_OP_GET,                                                         \
        .name = "get", .body = CNT_BODY_NEEDED, .fixed = CNT_GET_FIXED,     \
        .off_resources = CNT_FIELD_NONE, .off_maximum = CNT_FIELD_NONE,     \
        .off_namelen = CNT_GET_OFF_NAMELEN, .checks = 0)                    \
    ROW(CNT_OP_ACQUIRE,                                                     \
        .name = "acquire", .body = CNT_BODY_NEEDED, .fixed = CNT_ACQ_FIXED, \
        .off_resources = CNT_ACQ_OFF_RESOURCES,                             \
        .off_maximum = CNT_ACQ_OFF_MAXIMUM,                                 \
        .off_namelen = CNT_ACQ_OFF_NAMELEN,                                 \
        .checks = CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS)   \
    /* Releasing 0 resources is legal: the reference accepts it. */         \
    ROW(CNT_OP_RELEASE,                                                     \
        .name = "release", .body = CNT_BODY_NEEDED, .fixed = CNT_REL_FIXED, \
        .off_resources = CNT_REL_OFF_RESOURCES,                             \
        .off_maximum = CNT_FIELD_NONE,                                      \
        .off_namelen = CNT_REL_OFF_NAMELEN, .checks = 0)                    \
    ROW(CNT_OP_STATS, CNT_ROW_SKIPPED_BODY("stats"))                        \
    ROW(CNT_OP_DUMP, CNT_ROW_SKIPPED_BODY("dump"))

/* The opcode table indexed by the opcode byte itself (256 rows, most of
 * them zero, i.e. unknown): for names and for code that looks an opcode
 * up at run time. */
extern const cnt_opcode_row cnt_opcode_table[256];

/* Returns a short printable name for an opcode ("get", ...; NULL if unknown). */
const char *cnt_opcode_name(uint8_t opcode);

/* Reads a big-endian 16-bit integer at p. */
static inline uint16_t cnt_get_u16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* Reads a big-endian 32-bit integer at p. */
static inline uint32_t cnt_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Writes v big-endian at p. */
static inline void cnt_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Writes v big-endian at p. */
static inline void cnt_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

#endif
