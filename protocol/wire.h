/* wire.h: constants, the opcode table, status texts and byte-order helpers
 * of the yrmcds counter protocol. Every packet is a 12-byte big-endian header
 * and an optional body; fields are read by byte offset, never through a
 * struct cast over the buffer. */
#ifndef CNT_PROTOCOL_WIRE_H
#define CNT_PROTOCOL_WIRE_H

#include <stdbool.h>
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
/* The largest legal body: Gcra_check's 26 fixed bytes and the longest
 * name. It bounds every opcode whose body is needed, Multi_check's and
 * Auth's included (tests/test_wire.c checks that no row's fixed part is
 * larger than Gcra_check's). */
#define CNT_BODY_MAX    (26u + CNT_NAME_MAX)
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

/* Rate-limit request bodies (doc/protocol.md, "Rate limits"). Ttl_insert:
 * quota, ttl, unit, name. */
#define CNT_TTLI_OFF_QUOTA       0
#define CNT_TTLI_OFF_TTL         8
#define CNT_TTLI_OFF_UNIT        16
#define CNT_TTLI_OFF_NAMELEN     17
#define CNT_TTLI_FIXED           19
/* Ttl_query and Ttl_purge: the name only. */
#define CNT_TTLQ_OFF_NAMELEN     0
#define CNT_TTLQ_FIXED           2
#define CNT_TTLP_OFF_NAMELEN     0
#define CNT_TTLP_FIXED           2
/* Ttl_update: attribute, change, unit, value, name. */
#define CNT_TTLU_OFF_ATTRIBUTE   0
#define CNT_TTLU_OFF_CHANGE      1
#define CNT_TTLU_OFF_UNIT        2
#define CNT_TTLU_OFF_VALUE       3
#define CNT_TTLU_OFF_NAMELEN     11
#define CNT_TTLU_FIXED           13
/* Window_check: flags, slots, 2 reserved bytes, limit, cost, window_ns,
 * name. */
#define CNT_WIN_OFF_FLAGS        0
#define CNT_WIN_OFF_SLOTS        1
#define CNT_WIN_OFF_RESERVED     2
#define CNT_WIN_OFF_LIMIT        4
#define CNT_WIN_OFF_COST         8
#define CNT_WIN_OFF_WINDOW       12
#define CNT_WIN_OFF_NAMELEN      20
#define CNT_WIN_FIXED            22
/* Gcra_check: flags, 3 reserved bytes, burst, count, cost, period_ns,
 * name. */
#define CNT_GCRA_OFF_FLAGS       0
#define CNT_GCRA_OFF_RESERVED    1
#define CNT_GCRA_OFF_BURST       4
#define CNT_GCRA_OFF_COUNT       8
#define CNT_GCRA_OFF_COST        12
#define CNT_GCRA_OFF_PERIOD      16
#define CNT_GCRA_OFF_NAMELEN     24
#define CNT_GCRA_FIXED           26
/* Multi_check: flags, item count, then the items; each item is an opcode
 * byte, a u16 length and that many bytes of the opcode's body. */
#define CNT_MULTI_OFF_FLAGS      0
#define CNT_MULTI_OFF_COUNT      1
#define CNT_MULTI_FIXED          2
#define CNT_MITEM_OFF_OPCODE     0
#define CNT_MITEM_OFF_LEN        1
#define CNT_MITEM_FIXED          3
/* The most items one Multi_check may carry. */
#define CNT_MULTI_MAX            16

/* Tenant throttling request bodies (doc/protocol.md, "Tenant
 * throttling"). Auth: the secret's u16 length, then the secret. */
#define CNT_AUTH_OFF_SECRETLEN   0
#define CNT_AUTH_FIXED           2
/* Throttle: units, tenant. */
#define CNT_THR_OFF_UNITS        0
#define CNT_THR_OFF_NAMELEN      4
#define CNT_THR_FIXED            6
/* Tenant_show and Tenant_remove: the tenant only. */
#define CNT_TSHOW_OFF_NAMELEN    0
#define CNT_TSHOW_FIXED          2
#define CNT_TREM_OFF_NAMELEN     0
#define CNT_TREM_FIXED           2
/* Tenant_set: flags, 3 zero bytes, reserved, hard limit, tenant. */
#define CNT_TSET_OFF_FLAGS       0
#define CNT_TSET_OFF_ZERO        1
#define CNT_TSET_OFF_RESERVED    4
#define CNT_TSET_OFF_HARD        8
#define CNT_TSET_OFF_NAMELEN     12
#define CNT_TSET_FIXED           14
/* Node_set: the capacity. */
#define CNT_NSET_OFF_CAPACITY    0
#define CNT_NSET_FIXED           4
/* Auth_user: flags, a zero byte, the secret's u16 length, the user's u16
 * length, then the user's name and the secret. */
#define CNT_AUSER_OFF_FLAGS      0
#define CNT_AUSER_OFF_ZERO       1
#define CNT_AUSER_OFF_SECRETLEN  2
#define CNT_AUSER_OFF_NAMELEN    4
#define CNT_AUSER_FIXED          6
/* Auth_user's flags: answer requests over the tenant's share with
 * Throttled instead of pausing the connection. No other bit, or 0x04. */
#define CNT_AUTH_NONBLOCKING     0x01u
#define CNT_AUTH_FLAGS_ALL       0x01u
/* The body of a Throttled answer: the u64 nanoseconds until a retry can
 * pass, the reason (a cnt_treason), then the status text. */
#define CNT_THROTTLED_OFF_RETRY  0
#define CNT_THROTTLED_OFF_REASON 8
#define CNT_THROTTLED_FIXED      9

/* Tenant_set_json: the tenant, then its JSON document to the end of the
 * body. Node_set_json: the body is the JSON document. */
#define CNT_TSETJ_OFF_NAMELEN    0
#define CNT_TSETJ_FIXED          2
#define CNT_NSETJ_FIXED          0
/* The longest JSON document either takes (a settings document is a few
 * dozen bytes; the bound keeps what the server parses small). */
#define CNT_JSON_DOC_MAX         4096u

/* Tenant_set's flags: which of the two values to set. At least one bit,
 * and no other, or 0x04. */
#define CNT_TENANT_SET_RESERVED  0x01u
#define CNT_TENANT_SET_HARD      0x02u
#define CNT_TENANT_SET_ALL       0x03u

/* A hard limit (and a throttle answer's remaining) that is no limit. */
#define CNT_HARD_LIMIT_UNLIMITED 0xffffffffu

/* Flags byte of Window_check, Gcra_check and Multi_check: only bit 0
 * (peek: evaluate, charge nothing) is defined; other bits are 0x04. */
#define CNT_CHECK_FLAG_PEEK      0x01u

/* Window_check defaults and bounds: slots 0 and window_ns 0 take the
 * defaults; a slot must last at least 1 us. */
#define CNT_WINDOW_DEFAULT_SLOTS 10u
#define CNT_WINDOW_MAX_SLOTS     64u
#define CNT_WINDOW_DEFAULT_NS    1000000000ull
#define CNT_WINDOW_MIN_SLOT_NS   1000ull

/* The one rule for a window's shape, shared by the request decoder and the
 * core's window limit: slots (0 = CNT_WINDOW_DEFAULT_SLOTS) and window_ns
 * (0 = CNT_WINDOW_DEFAULT_NS) make a shape the server keeps when there are
 * at most CNT_WINDOW_MAX_SLOTS slots, the window is a whole number of slots
 * and a slot lasts at least CNT_WINDOW_MIN_SLOT_NS. Then true, with the
 * defaults applied in *n and the slot's length in *slot_ns; else false.
 * Inline: the core asks it on every window check. */
static inline bool cnt_window_shape(uint8_t slots, uint64_t window_ns,
                                    uint8_t *n, uint64_t *slot_ns)
{
    uint8_t s = slots ? slots : CNT_WINDOW_DEFAULT_SLOTS;
    uint64_t w = window_ns ? window_ns : CNT_WINDOW_DEFAULT_NS;

    if (s > CNT_WINDOW_MAX_SLOTS || w % s != 0 ||
        w / s < CNT_WINDOW_MIN_SLOT_NS)
        return false;
    *n = s;
    *slot_ns = w / s;
    return true;
}

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

/* Lease_list request body: how many leases are wanted (1 or more; more
 * than CNT_LEASE_LIST_MAX are clamped to it). */
#define CNT_LLIST_OFF_COUNT      0
#define CNT_LLIST_FIXED          4
#define CNT_LEASE_LIST_MAX       64u

/* Lease_list record body offsets (time left in ms, lease id, resources
 * held, name length, name). */
#define CNT_LREC_OFF_LEFT        0
#define CNT_LREC_OFF_LEASE_ID    4
#define CNT_LREC_OFF_RESOURCES   12
#define CNT_LREC_OFF_NAMELEN     16
#define CNT_LREC_FIXED           18
/* Busiest request body: how many names to list (more than
 * CNT_BUSIEST_MAX are answered as CNT_BUSIEST_MAX). */
#define CNT_BUSIEST_OFF_COUNT    0
#define CNT_BUSIEST_FIXED        4
#define CNT_BUSIEST_MAX          16u

/* Busiest record body offsets (checks in the last whole second, kind,
 * name length, name) and the kinds. */
#define CNT_BUSY_OFF_CHECKS      0
#define CNT_BUSY_OFF_KIND        4
#define CNT_BUSY_OFF_NAMELEN     5
#define CNT_BUSY_FIXED           7
#define CNT_BUSY_KIND_TTL        0u
#define CNT_BUSY_KIND_WINDOW     1u
#define CNT_BUSY_KIND_GCRA       2u

/* Event body offsets (lease id, value, name length, name). */
#define CNT_EVENT_OFF_LEASE_ID   0
#define CNT_EVENT_OFF_VALUE      8
#define CNT_EVENT_OFF_NAMELEN    12
#define CNT_EVENT_FIXED          14

/* Ttl_query and Ttl_update answer body (the record after the request):
 * quota, time left in the record's unit (rounded up), that unit. */
#define CNT_TTLV_OFF_QUOTA       0
#define CNT_TTLV_OFF_TTL         8
#define CNT_TTLV_OFF_UNIT        16
#define CNT_TTL_VIEW_SIZE        17

/* Check answer body (Window_check, Gcra_check, each Multi_check item):
 * state, three zero bytes, limit, remaining, used, retry_after_ns,
 * reset_after_ns; always this size. */
#define CNT_CANS_OFF_STATE       0
#define CNT_CANS_OFF_LIMIT       4
#define CNT_CANS_OFF_REMAINING   8
#define CNT_CANS_OFF_USED        12
#define CNT_CANS_OFF_RETRY       16
#define CNT_CANS_OFF_RESET       24
#define CNT_CHECK_ANSWER_SIZE    32

/* Multi_check answer body: overall state, item count, then one check
 * answer per item in request order. */
#define CNT_MANS_OFF_OVERALL     0
#define CNT_MANS_OFF_COUNT       1
#define CNT_MANS_FIXED           2

/* Throttle answer body: state, reason, 2 zero bytes, used, remaining, 4
 * zero bytes, retry_after_ns; always this size. */
#define CNT_TANS_OFF_STATE       0
#define CNT_TANS_OFF_REASON      1
#define CNT_TANS_OFF_USED        4
#define CNT_TANS_OFF_REMAINING   8
#define CNT_TANS_OFF_RETRY       16
#define CNT_THROTTLE_ANSWER_SIZE 24

/* Tenant view (Tenant_show's answer, the front of each Tenant_list
 * record): reserved, hard limit, used this second, flags, 3 zero bytes,
 * throttled charges, allowed units. A list record adds the tenant's u16
 * length and the tenant. */
#define CNT_TVIEW_OFF_RESERVED   0
#define CNT_TVIEW_OFF_HARD       4
#define CNT_TVIEW_OFF_USED       8
#define CNT_TVIEW_OFF_FLAGS      12
#define CNT_TVIEW_OFF_THROTTLED  16
#define CNT_TVIEW_OFF_UNITS      24
#define CNT_TENANT_VIEW_SIZE     32
#define CNT_TREC_OFF_NAMELEN     32
#define CNT_TREC_FIXED           34

/* A tenant view's flags: bit 0, the tenant is configured (set over the
 * wire or by the settings file); other bits are 0. */
#define CNT_TENANT_CONFIGURED    0x01u

/* Node view (Node_show's answer): capacity, used this second, free pool,
 * pool used this second, sum of the reserves, configured tenants,
 * throttled charges. */
#define CNT_NVIEW_OFF_CAPACITY   0
#define CNT_NVIEW_OFF_USED       4
#define CNT_NVIEW_OFF_POOL       8
#define CNT_NVIEW_OFF_POOL_USED  12
#define CNT_NVIEW_OFF_RESERVED   16
#define CNT_NVIEW_OFF_TENANTS    20
#define CNT_NVIEW_OFF_THROTTLED  24
#define CNT_NODE_VIEW_SIZE       32

/* The retry_after_ns of a check that can never be allowed. */
#define CNT_RETRY_NEVER          UINT64_MAX

/* Stats pair: name length u16, value length u16, then name and value. */
#define CNT_STATS_PAIR_FIXED     4

/* Opcodes: the reference protocol's, then the extensions (waiting
 * acquisition and leases, rate limits, tenant throttling), which take
 * codes from 0x20 up, a
 * range the reference answers with 0x81, so old servers refuse them
 * cleanly. */
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
    CNT_OP_QUEUES       = 0x23,
    CNT_OP_TTL_INSERT   = 0x30,
    CNT_OP_TTL_QUERY    = 0x31,
    CNT_OP_TTL_UPDATE   = 0x32,
    CNT_OP_TTL_PURGE    = 0x33,
    CNT_OP_WINDOW_CHECK = 0x34,
    CNT_OP_GCRA_CHECK   = 0x35,
    CNT_OP_MULTI_CHECK  = 0x36,
    CNT_OP_AUTH         = 0x40,
    CNT_OP_THROTTLE     = 0x41,
    CNT_OP_TENANT_SHOW  = 0x42,
    CNT_OP_TENANT_LIST  = 0x43,
    CNT_OP_NODE_SHOW    = 0x44,
    CNT_OP_TENANT_SET   = 0x45,   /* privileged */
    CNT_OP_TENANT_REMOVE = 0x46,  /* privileged */
    CNT_OP_NODE_SET     = 0x47,   /* privileged */
    CNT_OP_UNTHROTTLE   = 0x48,   /* privileged */
    CNT_OP_RELOAD       = 0x49,   /* privileged */
    /* The seed's SetBucketThrottleProperties and SetNodeThrottleProperties:
     * JSON documents (doc/throttling.md). */
    CNT_OP_TENANT_SET_JSON = 0x2a, /* privileged */
    CNT_OP_NODE_SET_JSON = 0x2c, /* privileged */
    CNT_OP_AUTH_USER    = 0x4a,
    CNT_OP_LEASE_LIST   = 0x24,
    CNT_OP_BUSIEST      = 0x37
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
    CNT_STATUS_NOT_PERMITTED          = 0x2A,
    CNT_STATUS_AUTH_FAILED            = 0x2B,
    CNT_STATUS_OVER_CAPACITY          = 0x2C,
    CNT_STATUS_THROTTLED              = 0x2D,
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

/* Time units of the TTL opcodes: the unit a TTL or a TTL change is given
 * in, and the unit a record shows its time left in. */
typedef enum cnt_time_unit {
    CNT_UNIT_NS  = 0,
    CNT_UNIT_US  = 1,
    CNT_UNIT_MS  = 2,
    CNT_UNIT_S   = 3,
    CNT_UNIT_MIN = 4,
    CNT_UNIT_H   = 5
} cnt_time_unit;
#define CNT_UNIT_MAX CNT_UNIT_H

/* Ttl_update's attribute and change bytes. */
typedef enum cnt_ttl_attribute {
    CNT_TTL_ATTR_QUOTA = 0,
    CNT_TTL_ATTR_TTL   = 1
} cnt_ttl_attribute;
typedef enum cnt_ttl_change {
    CNT_TTL_PATCH    = 0,   /* set to the value */
    CNT_TTL_INCREASE = 1,
    CNT_TTL_DECREASE = 2
} cnt_ttl_change;

/* A check answer's state (Limited and Never are answers, not statuses). */
typedef enum cnt_check_state {
    CNT_CHECK_ALLOWED = 0,
    CNT_CHECK_LIMITED = 1,
    CNT_CHECK_NEVER   = 2   /* the cost can never fit the limit */
} cnt_check_state;

/* A Multi_check answer's overall state. */
typedef enum cnt_multi_state {
    CNT_MULTI_ALLOWED = 0,  /* every item allowed (and charged) */
    CNT_MULTI_DENIED  = 1   /* at least one item denied; nothing charged */
} cnt_multi_state;

/* A Throttle answer's state. */
typedef enum cnt_tstate {
    CNT_TSTATE_ALLOWED   = 0,
    CNT_TSTATE_THROTTLED = 1
} cnt_tstate;

/* Why a Throttle charge was throttled (none when allowed). */
typedef enum cnt_treason {
    CNT_TREASON_NONE       = 0,
    CNT_TREASON_RESERVE    = 1,   /* no free pool: the reserve is spent */
    CNT_TREASON_POOL_EMPTY = 2,
    CNT_TREASON_HARD_LIMIT = 3
} cnt_treason;
#define CNT_TREASON_MAX CNT_TREASON_HARD_LIMIT

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

/* Returns how many nanoseconds one of a time unit lasts (0 if the unit
 * is unknown). */
uint64_t cnt_unit_ns(uint8_t unit);

/* Returns a time unit's short name ("ns", "us", "ms", "s", "min", "h";
 * NULL if unknown). */
const char *cnt_unit_name(uint8_t unit);

/* The one conversion of a count of a time unit to nanoseconds: true with
 * *ns = value units, false (*ns untouched) when the unit is unknown or the
 * product does not fit 64 bits. */
bool cnt_unit_to_ns(uint64_t value, uint8_t unit, uint64_t *ns);

/* Returns a throttle reason's short name ("none", "reserve",
 * "pool_empty", "hard_limit"; NULL if unknown). */
const char *cnt_treason_name(uint8_t reason);

/* How the server treats a request's body, per opcode. Zero is "unknown" so
 * that every opcode byte without a row in the table is answered 0x81. */
typedef enum cnt_body_kind {
    CNT_BODY_UNKNOWN = 0,   /* not an opcode: 0x81, body skipped */
    CNT_BODY_SKIP,          /* answered at the header, body skipped */
    CNT_BODY_NEEDED         /* decoded from the whole buffered body */
} cnt_body_kind;

/* Argument checks of a body, as bits of cnt_opcode_row.checks. The decoder
 * always runs them in the reference's order, whatever the bit values:
 * body shorter than the fixed part, then the numbers (resources not 0,
 * maximum not below resources, lease not 0; then the rate-limit and
 * throttling fields in the order of the bits below), then the name (not
 * empty, not running past the body; implied by a name field), the items
 * of a Multi_check (implied by an items field) or Auth's secret (the same
 * rules as a name; implied by a secret field). Each failure answers
 * 0x04. */
#define CNT_CHECK_RESOURCES_NONZERO 0x0001u
#define CNT_CHECK_MAXIMUM_COVERS    0x0002u
#define CNT_CHECK_LEASE_NONZERO     0x0004u
/* No flag but peek set. */
#define CNT_CHECK_FLAGS_PEEK_ONLY   0x0008u
/* unit <= CNT_UNIT_MAX. */
#define CNT_CHECK_UNIT_KNOWN        0x0010u
/* ttl not 0, and ttl in nanoseconds (ttl times the unit) fits a u64. */
#define CNT_CHECK_TTL_FITS          0x0020u
/* attribute and change known; a TTL is never patched to 0. */
#define CNT_CHECK_TTL_CHANGE        0x0040u
/* count not 0. */
#define CNT_CHECK_COUNT_NONZERO     0x0080u
/* cost not 0. */
#define CNT_CHECK_COST_NONZERO      0x0100u
/* period not 0. */
#define CNT_CHECK_PERIOD_NONZERO    0x0200u
/* The window's shape, defaults applied (slots 0 is 10, window 0 is 1 s):
 * at most 64 slots, a window that is a whole number of slots, a slot of
 * at least 1 us. */
#define CNT_CHECK_WINDOW_SHAPE      0x0400u
/* units not 0. */
#define CNT_CHECK_UNITS_NONZERO     0x0800u
/* Tenant_set's flags: at least one of its two bits, no other. */
#define CNT_CHECK_TENANT_FLAGS      0x1000u
/* Auth_user's flags: no bit but CNT_AUTH_FLAGS_ALL. */
#define CNT_CHECK_AUTH_FLAGS        0x2000u
/* Every bit above. */
#define CNT_CHECK_ALL               0x3fffu

/* A field of a row is one byte: 0 when the opcode's body has no such
 * field, else the field's offset from the start of the body plus one.
 * Absent is the zero value, so a row names only the fields its body has
 * and designated initializers leave every other one absent. */
#define CNT_FIELD_NONE 0u
#define CNT_FIELD_AT(offset) ((uint8_t)((offset) + 1u))

/* Returns the offset from the start of the body of a present field. */
static inline unsigned cnt_field_offset(uint8_t field)
{
    return field - 1u;
}

/* One opcode's row: everything the decoder, cnt_opcode_name, the
 * privilege check and Stats need to know about it. A new opcode whose
 * body is made of the field kinds below costs one enum value and one row
 * in CNT_OPCODE_ROWS (Stats then counts it as "command:" and its name); a
 * new field kind costs one member here, one field in cnt_request and one
 * step in the decoder. */
typedef struct cnt_opcode_row {
    const char *name;       /* printable name; NULL when not an opcode */
    uint8_t body;           /* a cnt_body_kind */
    bool privileged;        /* needs an authenticated connection */
    uint8_t fixed;          /* bytes before the name data or the items
                             * (the least legal body); 0 for a skipped
                             * body */
    /* The fields, each a CNT_FIELD_AT(offset) or absent. */
    uint8_t off_resources;  /* u32 */
    uint8_t off_maximum;    /* u32 */
    uint8_t off_wait;       /* u32 wait_ms */
    uint8_t off_lease;      /* u32 lease_ms */
    uint8_t off_quota;      /* u64 quota or value */
    uint8_t off_ttl;        /* u64 ttl */
    uint8_t off_period;     /* u64 window_ns or period_ns */
    uint8_t off_limit;      /* u32 limit or burst */
    uint8_t off_count;      /* u32 count */
    uint8_t off_cost;       /* u32 cost */
    uint8_t off_flags;      /* u8 flags */
    uint8_t off_slots;      /* u8 slots */
    uint8_t off_unit;       /* u8 time unit */
    uint8_t off_attribute;  /* u8 attribute */
    uint8_t off_change;     /* u8 change */
    uint8_t off_namelen;    /* u16 followed by the name at fixed */
    uint8_t off_items;      /* u8 item count followed by the items at
                             * fixed */
    uint8_t off_units;      /* u32 units */
    uint8_t off_reserved;   /* u32 reserved units */
    uint8_t off_hard_limit; /* u32 hard limit */
    uint8_t off_capacity;   /* u32 node capacity */
    uint8_t off_secretlen;  /* u16 followed by the secret at fixed */
    bool doc;               /* a JSON document from the end of the fixed
                             * part (and the name) to the end of the body,
                             * at most CNT_JSON_DOC_MAX bytes */
    uint16_t checks;        /* CNT_CHECK_* bits */
} cnt_opcode_row;

/* A row for an opcode whose body is skipped: nothing in it is read. */
#define CNT_ROW_SKIPPED_BODY(text) .name = (text), .body = CNT_BODY_SKIP

/* A row for an opcode whose body is a name and nothing else. */
#define CNT_ROW_NAME_ONLY(text, offset, size)                               \
    .name = (text), .body = CNT_BODY_NEEDED, .fixed = (size),               \
    .off_namelen = CNT_FIELD_AT(offset)

/* The rows of the two checks, named on their own: Multi_check's items are
 * decoded with them too. Peek is the only flag; limit 0 is legal (every
 * cost is then "never"), as is any burst. */
#define CNT_ROW_WINDOW_CHECK                                                \
    .name = "window_check", .body = CNT_BODY_NEEDED,                        \
    .fixed = CNT_WIN_FIXED,                                                 \
    .off_period = CNT_FIELD_AT(CNT_WIN_OFF_WINDOW),                         \
    .off_limit = CNT_FIELD_AT(CNT_WIN_OFF_LIMIT),                           \
    .off_cost = CNT_FIELD_AT(CNT_WIN_OFF_COST),                             \
    .off_flags = CNT_FIELD_AT(CNT_WIN_OFF_FLAGS),                           \
    .off_slots = CNT_FIELD_AT(CNT_WIN_OFF_SLOTS),                           \
    .off_namelen = CNT_FIELD_AT(CNT_WIN_OFF_NAMELEN),                       \
    .checks = CNT_CHECK_FLAGS_PEEK_ONLY | CNT_CHECK_COST_NONZERO |          \
              CNT_CHECK_WINDOW_SHAPE
#define CNT_ROW_GCRA_CHECK                                                  \
    .name = "gcra_check", .body = CNT_BODY_NEEDED,                          \
    .fixed = CNT_GCRA_FIXED,                                                \
    .off_period = CNT_FIELD_AT(CNT_GCRA_OFF_PERIOD),                        \
    .off_limit = CNT_FIELD_AT(CNT_GCRA_OFF_BURST),                          \
    .off_count = CNT_FIELD_AT(CNT_GCRA_OFF_COUNT),                          \
    .off_cost = CNT_FIELD_AT(CNT_GCRA_OFF_COST),                            \
    .off_flags = CNT_FIELD_AT(CNT_GCRA_OFF_FLAGS),                          \
    .off_namelen = CNT_FIELD_AT(CNT_GCRA_OFF_NAMELEN),                      \
    .checks = CNT_CHECK_FLAGS_PEEK_ONLY | CNT_CHECK_COUNT_NONZERO |         \
              CNT_CHECK_COST_NONZERO | CNT_CHECK_PERIOD_NONZERO

/* The opcode table, one ROW(ID, designated initializers of its
 * cnt_opcode_row) per opcode, where CNT_OP_ID is the opcode; in the
 * reference's Stats order, which is the order Stats lists the commands
 * in. It is written once, here, and expanded three times: into
 * cnt_opcode_table (wire.c), into the request decoder (request.c), which
 * gets a copy of each row as a compile-time constant so that the compiler
 * drops the steps of fields an opcode does not have and decoding costs no
 * more than hand-written code per opcode, and into Stats' command
 * counters (engine/core/stats.h). */
#define CNT_OPCODE_ROWS(ROW)                                                \
    ROW(NOOP, CNT_ROW_SKIPPED_BODY("noop"))                                 \
    ROW(GET, CNT_ROW_NAME_ONLY("get", CNT_GET_OFF_NAMELEN, CNT_GET_FIXED))  \
    ROW(ACQUIRE,                                                            \
        .name = "acquire", .body = CNT_BODY_NEEDED, .fixed = CNT_ACQ_FIXED, \
        .off_resources = CNT_FIELD_AT(CNT_ACQ_OFF_RESOURCES),               \
        .off_maximum = CNT_FIELD_AT(CNT_ACQ_OFF_MAXIMUM),                   \
        .off_namelen = CNT_FIELD_AT(CNT_ACQ_OFF_NAMELEN),                   \
        .checks = CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS)   \
    /* Releasing 0 resources is legal: the reference accepts it. */         \
    ROW(RELEASE,                                                            \
        .name = "release", .body = CNT_BODY_NEEDED, .fixed = CNT_REL_FIXED, \
        .off_resources = CNT_FIELD_AT(CNT_REL_OFF_RESOURCES),               \
        .off_namelen = CNT_FIELD_AT(CNT_REL_OFF_NAMELEN))                   \
    ROW(STATS, CNT_ROW_SKIPPED_BODY("stats"))                               \
    ROW(DUMP, CNT_ROW_SKIPPED_BODY("dump"))                                 \
    /* No maximum-covers check: a maximum below resources is the server's  \
     * 0x23, and 0 means the group's maximum. */                           \
    ROW(WAIT_ACQUIRE,                                                       \
        .name = "wait_acquire", .body = CNT_BODY_NEEDED,                    \
        .fixed = CNT_WACQ_FIXED,                                            \
        .off_resources = CNT_FIELD_AT(CNT_WACQ_OFF_RESOURCES),              \
        .off_maximum = CNT_FIELD_AT(CNT_WACQ_OFF_MAXIMUM),                  \
        .off_wait = CNT_FIELD_AT(CNT_WACQ_OFF_WAIT),                        \
        .off_lease = CNT_FIELD_AT(CNT_WACQ_OFF_LEASE),                      \
        .off_namelen = CNT_FIELD_AT(CNT_WACQ_OFF_NAMELEN),                  \
        .checks = CNT_CHECK_RESOURCES_NONZERO)                              \
    ROW(RENEW,                                                              \
        .name = "renew", .body = CNT_BODY_NEEDED, .fixed = CNT_RENEW_FIXED, \
        .off_lease = CNT_FIELD_AT(CNT_RENEW_OFF_LEASE),                     \
        .off_namelen = CNT_FIELD_AT(CNT_RENEW_OFF_NAMELEN),                 \
        .checks = CNT_CHECK_LEASE_NONZERO)                                  \
    ROW(WAIT_RELEASE,                                                       \
        CNT_ROW_NAME_ONLY("wait_release", CNT_WREL_OFF_NAMELEN,             \
                          CNT_WREL_FIXED))                                  \
    ROW(QUEUES, CNT_ROW_SKIPPED_BODY("queues"))                             \
    /* Any quota is legal, 0 included. */                                   \
    ROW(TTL_INSERT,                                                         \
        .name = "ttl_insert", .body = CNT_BODY_NEEDED,                      \
        .fixed = CNT_TTLI_FIXED,                                            \
        .off_quota = CNT_FIELD_AT(CNT_TTLI_OFF_QUOTA),                      \
        .off_ttl = CNT_FIELD_AT(CNT_TTLI_OFF_TTL),                          \
        .off_unit = CNT_FIELD_AT(CNT_TTLI_OFF_UNIT),                        \
        .off_namelen = CNT_FIELD_AT(CNT_TTLI_OFF_NAMELEN),                  \
        .checks = CNT_CHECK_UNIT_KNOWN | CNT_CHECK_TTL_FITS)                \
    ROW(TTL_QUERY,                                                          \
        CNT_ROW_NAME_ONLY("ttl_query", CNT_TTLQ_OFF_NAMELEN,                \
                          CNT_TTLQ_FIXED))                                  \
    /* The unit must be known even when the attribute is the quota; what   \
     * a change does to the record (an overflow, a decrease below zero)    \
     * is the server's to say. */                                          \
    ROW(TTL_UPDATE,                                                         \
        .name = "ttl_update", .body = CNT_BODY_NEEDED,                      \
        .fixed = CNT_TTLU_FIXED,                                            \
        .off_quota = CNT_FIELD_AT(CNT_TTLU_OFF_VALUE),                      \
        .off_unit = CNT_FIELD_AT(CNT_TTLU_OFF_UNIT),                        \
        .off_attribute = CNT_FIELD_AT(CNT_TTLU_OFF_ATTRIBUTE),              \
        .off_change = CNT_FIELD_AT(CNT_TTLU_OFF_CHANGE),                    \
        .off_namelen = CNT_FIELD_AT(CNT_TTLU_OFF_NAMELEN),                  \
        .checks = CNT_CHECK_UNIT_KNOWN | CNT_CHECK_TTL_CHANGE)              \
    ROW(TTL_PURGE,                                                          \
        CNT_ROW_NAME_ONLY("ttl_purge", CNT_TTLP_OFF_NAMELEN,                \
                          CNT_TTLP_FIXED))                                  \
    ROW(WINDOW_CHECK, CNT_ROW_WINDOW_CHECK)                                 \
    ROW(GCRA_CHECK, CNT_ROW_GCRA_CHECK)                                     \
    /* The items are checked whole before anything is answered: count,    \
     * each item's body, the bytes they fill, distinct names. */           \
    ROW(MULTI_CHECK,                                                        \
        .name = "multi_check", .body = CNT_BODY_NEEDED,                     \
        .fixed = CNT_MULTI_FIXED,                                           \
        .off_flags = CNT_FIELD_AT(CNT_MULTI_OFF_FLAGS),                     \
        .off_items = CNT_FIELD_AT(CNT_MULTI_OFF_COUNT),                     \
        .checks = CNT_CHECK_FLAGS_PEEK_ONLY)                                \
    /* The secret is checked like a name (1..65535 bytes inside the        \
     * body); whether it is the right one is the server's to say. */       \
    ROW(AUTH,                                                               \
        .name = "auth", .body = CNT_BODY_NEEDED, .fixed = CNT_AUTH_FIXED,   \
        .off_secretlen = CNT_FIELD_AT(CNT_AUTH_OFF_SECRETLEN))              \
    ROW(THROTTLE,                                                           \
        .name = "throttle", .body = CNT_BODY_NEEDED,                        \
        .fixed = CNT_THR_FIXED,                                             \
        .off_units = CNT_FIELD_AT(CNT_THR_OFF_UNITS),                       \
        .off_namelen = CNT_FIELD_AT(CNT_THR_OFF_NAMELEN),                   \
        .checks = CNT_CHECK_UNITS_NONZERO)                                  \
    ROW(TENANT_SHOW,                                                        \
        CNT_ROW_NAME_ONLY("tenant_show", CNT_TSHOW_OFF_NAMELEN,             \
                          CNT_TSHOW_FIXED))                                 \
    ROW(TENANT_LIST, CNT_ROW_SKIPPED_BODY("tenant_list"))                   \
    ROW(NODE_SHOW, CNT_ROW_SKIPPED_BODY("node_show"))                       \
    /* H >= R and the capacity are the server's to judge (they depend on   \
     * the values kept); the zero bytes after the flags are ignored. */    \
    ROW(TENANT_SET,                                                         \
        .name = "tenant_set", .body = CNT_BODY_NEEDED, .privileged = true,  \
        .fixed = CNT_TSET_FIXED,                                            \
        .off_flags = CNT_FIELD_AT(CNT_TSET_OFF_FLAGS),                      \
        .off_reserved = CNT_FIELD_AT(CNT_TSET_OFF_RESERVED),                \
        .off_hard_limit = CNT_FIELD_AT(CNT_TSET_OFF_HARD),                  \
        .off_namelen = CNT_FIELD_AT(CNT_TSET_OFF_NAMELEN),                  \
        .checks = CNT_CHECK_TENANT_FLAGS)                                   \
    ROW(TENANT_REMOVE,                                                      \
        CNT_ROW_NAME_ONLY("tenant_remove", CNT_TREM_OFF_NAMELEN,            \
                          CNT_TREM_FIXED),                                  \
        .privileged = true)                                                 \
    /* Any capacity is legal: 0 turns throttling off. */                    \
    ROW(NODE_SET,                                                           \
        .name = "node_set", .body = CNT_BODY_NEEDED, .privileged = true,    \
        .fixed = CNT_NSET_FIXED,                                            \
        .off_capacity = CNT_FIELD_AT(CNT_NSET_OFF_CAPACITY))                \
    ROW(UNTHROTTLE, CNT_ROW_SKIPPED_BODY("unthrottle"), .privileged = true) \
    ROW(RELOAD, CNT_ROW_SKIPPED_BODY("reload"), .privileged = true)    \
    /* What the documents hold is the server's to judge. */                \
    ROW(TENANT_SET_JSON,                                                    \
        .name = "tenant_set_json", .body = CNT_BODY_NEEDED,                 \
        .privileged = true, .fixed = CNT_TSETJ_FIXED,                       \
        .off_namelen = CNT_FIELD_AT(CNT_TSETJ_OFF_NAMELEN), .doc = true)    \
    ROW(NODE_SET_JSON,                                                      \
        .name = "node_set_json", .body = CNT_BODY_NEEDED,                   \
        .privileged = true, .fixed = CNT_NSETJ_FIXED, .doc = true)    \
    /* The user is the name; the secret follows it. */                     \
    ROW(AUTH_USER,                                                          \
        .name = "auth_user", .body = CNT_BODY_NEEDED,                       \
        .fixed = CNT_AUSER_FIXED,                                           \
        .off_flags = CNT_FIELD_AT(CNT_AUSER_OFF_FLAGS),                     \
        .off_namelen = CNT_FIELD_AT(CNT_AUSER_OFF_NAMELEN),                 \
        .off_secretlen = CNT_FIELD_AT(CNT_AUSER_OFF_SECRETLEN),             \
        .checks = CNT_CHECK_AUTH_FLAGS)                                     \
    /* A count above CNT_LEASE_LIST_MAX is the server's to clamp. */       \
    ROW(LEASE_LIST,                                                         \
        .name = "lease_list", .body = CNT_BODY_NEEDED,                      \
        .fixed = CNT_LLIST_FIXED,                                           \
        .off_count = CNT_FIELD_AT(CNT_LLIST_OFF_COUNT),                     \
        .checks = CNT_CHECK_COUNT_NONZERO)                                  \
    /* Any count is legal: 0 lists nothing, more than CNT_BUSIEST_MAX      \
     * lists that many. */                                                 \
    ROW(BUSIEST,                                                            \
        .name = "busiest", .body = CNT_BODY_NEEDED,                         \
        .fixed = CNT_BUSIEST_FIXED,                                         \
        .off_count = CNT_FIELD_AT(CNT_BUSIEST_OFF_COUNT))

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
