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
/* Events: packets the server sends on its own (a wait granted or timed
 * out, a lease expired: see doc/protocol.md). The reference never sends
 * this magic, so clients that only know 0x91 can tell an event from an
 * answer. */
#define CNT_MAGIC_NOTICE   0x92

#define CNT_HEADER_SIZE 12
#define CNT_NAME_MAX    65535u
/* The largest legal body: Wait_acquire's 18 fixed bytes and the longest
 * name. It bounds every opcode whose body is needed (tests/test_wire.c
 * checks that no row's fixed part is larger than Wait_acquire's). */
#define CNT_BODY_MAX    (18u + CNT_NAME_MAX)
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

/* Request body offsets of the opcodes that carry a name (the name data
 * follows its length field directly). */
#define CNT_GET_OFF_NAMELEN      0
#define CNT_GET_FIXED            2
#define CNT_ACQ_OFF_RESOURCES    0
#define CNT_ACQ_OFF_MAXIMUM      4
#define CNT_ACQ_OFF_NAMELEN      8
#define CNT_ACQ_FIXED            10
#define CNT_REL_OFF_RESOURCES    0
#define CNT_REL_OFF_NAMELEN      4
#define CNT_REL_FIXED            6
#define CNT_WACQ_OFF_RESOURCES   0
#define CNT_WACQ_OFF_MAXIMUM     4
#define CNT_WACQ_OFF_WAIT        8
#define CNT_WACQ_OFF_LEASE       12
#define CNT_WACQ_OFF_NAMELEN     16
#define CNT_WACQ_FIXED           18
#define CNT_RENEW_OFF_LEASE      0
#define CNT_RENEW_OFF_NAMELEN    4
#define CNT_RENEW_FIXED          6
#define CNT_WREL_OFF_NAMELEN     0
#define CNT_WREL_FIXED           2

/* Wait_acquire's maximum, wait_ms and lease_ms, and Renew's lease_ms: take
 * the group's setting instead (for the maximum, 0 says so). */
#define CNT_USE_GROUP_DEFAULT    0xffffffffu

/* Dump record body offsets (current, max consumption, name length, name). */
#define CNT_DUMP_OFF_CURRENT     0
#define CNT_DUMP_OFF_MAX         4
#define CNT_DUMP_OFF_NAMELEN     8
#define CNT_DUMP_FIXED           10

/* Wait_acquire answer body (state, three zero bytes, position in the
 * queue, lease id, consumption); always this size. */
#define CNT_WANS_OFF_STATE       0
#define CNT_WANS_OFF_POSITION    4
#define CNT_WANS_OFF_LEASE_ID    8
#define CNT_WANS_OFF_CONSUMPTION 16
#define CNT_WANS_FIXED           20

/* Renew answer body: the lease id. */
#define CNT_RENEW_ANS_FIXED      8

/* Queues record body offsets (consumption, queue length, name length,
 * name). */
#define CNT_QUEUES_OFF_CONSUMPTION 0
#define CNT_QUEUES_OFF_LENGTH      4
#define CNT_QUEUES_OFF_NAMELEN     8
#define CNT_QUEUES_FIXED           10

/* Event body offsets (lease id, value, name length, name). */
#define CNT_EVENT_OFF_LEASE_ID   0
#define CNT_EVENT_OFF_VALUE      8
#define CNT_EVENT_OFF_NAMELEN    12
#define CNT_EVENT_FIXED          14

/* Stats pair: name length u16, value length u16, then name and value. */
#define CNT_STATS_PAIR_FIXED     4

/* Opcodes: the reference protocol's, then the extensions (waiting
 * acquisition and leases), which take codes from 0x20 up, a range the
 * reference answers with 0x81, so old servers refuse them cleanly. */
typedef enum cnt_opcode {
    CNT_OP_NOOP         = 0x00,
    CNT_OP_GET          = 0x01,
    CNT_OP_ACQUIRE      = 0x02,
    CNT_OP_RELEASE      = 0x03,
    CNT_OP_STATS        = 0x10,
    CNT_OP_DUMP         = 0x11,
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
    CNT_STATUS_EXISTS                 = 0x28,
    CNT_STATUS_BELOW_ZERO             = 0x29,
    CNT_STATUS_UNKNOWN_COMMAND        = 0x81,
    CNT_STATUS_OUT_OF_MEMORY          = 0x82
} cnt_status;

/* Event codes: the opcode byte of a packet with magic 0x92. */
typedef enum cnt_event {
    CNT_EVENT_GRANTED       = 0x01,  /* value: consumption after the grant */
    CNT_EVENT_TIMED_OUT     = 0x02,  /* value: 0 */
    CNT_EVENT_LEASE_EXPIRED = 0x03,  /* value: resources released */
    CNT_EVENT_SHUTDOWN      = 0x04   /* value: resources the request held */
} cnt_event;

/* Wait_acquire answer states. */
typedef enum cnt_wait_state {
    CNT_WAIT_GRANTED = 0,
    CNT_WAIT_QUEUED  = 1
} cnt_wait_state;

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

/* Returns a short printable name for an event code ("granted", ...; NULL
 * if unknown). */
const char *cnt_event_name(uint8_t code);

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
 * maximum not below resources, lease not 0), then the name (not empty,
 * not running past the body; implied by a name field). Each failure
 * answers 0x04. */
#define CNT_CHECK_RESOURCES_NONZERO 0x01u
#define CNT_CHECK_MAXIMUM_COVERS    0x02u
#define CNT_CHECK_LEASE_NONZERO     0x04u

/* One opcode's row: everything the decoder and cnt_opcode_name need to
 * know about it. A new opcode whose body is made of the field kinds below
 * costs one enum value and one row in CNT_OPCODE_ROWS; a new field kind
 * costs one offset member here, one field in cnt_request and one step in
 * the decoder. Offsets are from the start of the body. */
typedef struct cnt_opcode_row {
    const char *name;       /* printable name; NULL when not an opcode */
    uint8_t body;           /* a cnt_body_kind */
    uint8_t fixed;          /* bytes before the name data (the least legal
                             * body); 0 for a skipped body */
    uint8_t off_resources;  /* u32, or CNT_FIELD_NONE */
    uint8_t off_maximum;    /* u32, or CNT_FIELD_NONE */
    uint8_t off_wait;       /* u32 wait_ms, or CNT_FIELD_NONE */
    uint8_t off_lease;      /* u32 lease_ms, or CNT_FIELD_NONE */
    uint8_t off_namelen;    /* u16 followed by the name at fixed, or
                             * CNT_FIELD_NONE */
    uint8_t checks;         /* CNT_CHECK_* bits */
} cnt_opcode_row;

/* A row for an opcode whose body is skipped: nothing in it is read. */
#define CNT_ROW_SKIPPED_BODY(text)                                          \
    .name = (text), .body = CNT_BODY_SKIP, .fixed = 0,                      \
    .off_resources = CNT_FIELD_NONE, .off_maximum = CNT_FIELD_NONE,         \
    .off_wait = CNT_FIELD_NONE, .off_lease = CNT_FIELD_NONE,                \
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
        .off_wait = CNT_FIELD_NONE, .off_lease = CNT_FIELD_NONE,            \
        .off_namelen = CNT_GET_OFF_NAMELEN, .checks = 0)                    \
    ROW(CNT_OP_ACQUIRE,                                                     \
        .name = "acquire", .body = CNT_BODY_NEEDED, .fixed = CNT_ACQ_FIXED, \
        .off_resources = CNT_ACQ_OFF_RESOURCES,                             \
        .off_maximum = CNT_ACQ_OFF_MAXIMUM,                                 \
        .off_wait = CNT_FIELD_NONE, .off_lease = CNT_FIELD_NONE,            \
        .off_namelen = CNT_ACQ_OFF_NAMELEN,                                 \
        .checks = CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS)   \
    /* Releasing 0 resources is legal: the reference accepts it. */         \
    ROW(CNT_OP_RELEASE,                                                     \
        .name = "release", .body = CNT_BODY_NEEDED, .fixed = CNT_REL_FIXED, \
        .off_resources = CNT_REL_OFF_RESOURCES,                             \
        .off_maximum = CNT_FIELD_NONE,                                      \
        .off_wait = CNT_FIELD_NONE, .off_lease = CNT_FIELD_NONE,            \
        .off_namelen = CNT_REL_OFF_NAMELEN, .checks = 0)                    \
    ROW(CNT_OP_STATS, CNT_ROW_SKIPPED_BODY("stats"))                        \
    ROW(CNT_OP_DUMP, CNT_ROW_SKIPPED_BODY("dump"))                          \
    /* No maximum-covers check: a maximum below resources is the server's  \
     * 0x23, and 0 means the group's maximum. */                           \
    ROW(CNT_OP_WAIT_ACQUIRE,                                                \
        .name = "wait_acquire", .body = CNT_BODY_NEEDED,                    \
        .fixed = CNT_WACQ_FIXED,                                            \
        .off_resources = CNT_WACQ_OFF_RESOURCES,                            \
        .off_maximum = CNT_WACQ_OFF_MAXIMUM,                                \
        .off_wait = CNT_WACQ_OFF_WAIT, .off_lease = CNT_WACQ_OFF_LEASE,     \
        .off_namelen = CNT_WACQ_OFF_NAMELEN,                                \
        .checks = CNT_CHECK_RESOURCES_NONZERO)                              \
    ROW(CNT_OP_RENEW,                                                       \
        .name = "renew", .body = CNT_BODY_NEEDED, .fixed = CNT_RENEW_FIXED, \
        .off_resources = CNT_FIELD_NONE, .off_maximum = CNT_FIELD_NONE,     \
        .off_wait = CNT_FIELD_NONE, .off_lease = CNT_RENEW_OFF_LEASE,       \
        .off_namelen = CNT_RENEW_OFF_NAMELEN,                               \
        .checks = CNT_CHECK_LEASE_NONZERO)                                  \
    ROW(CNT_OP_WAIT_RELEASE,                                                \
        .name = "wait_release", .body = CNT_BODY_NEEDED,                    \
        .fixed = CNT_WREL_FIXED,                                            \
        .off_resources = CNT_FIELD_NONE, .off_maximum = CNT_FIELD_NONE,     \
        .off_wait = CNT_FIELD_NONE, .off_lease = CNT_FIELD_NONE,            \
        .off_namelen = CNT_WREL_OFF_NAMELEN, .checks = 0)                   \
    ROW(CNT_OP_QUEUES, CNT_ROW_SKIPPED_BODY("queues"))

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

/* Reads a big-endian 64-bit integer at p. */
static inline uint64_t cnt_get_u64(const uint8_t *p)
{
    return (uint64_t)cnt_get_u32(p) << 32 | cnt_get_u32(p + 4);
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

/* Writes v big-endian at p. */
static inline void cnt_put_u64(uint8_t *p, uint64_t v)
{
    cnt_put_u32(p, (uint32_t)(v >> 32));
    cnt_put_u32(p + 4, (uint32_t)v);
}

#endif
