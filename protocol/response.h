/* response.h: responses and events, both ways. Encoders (used by the
 * server) write into a caller-owned buffer, which must have room for the
 * size the matching *_SIZE macro or function gives, and return the number
 * of bytes written.
 * The incremental decoder and the body parsers (Dump and Queues records,
 * Stats pairs, the extension answers - waits, TTL records, checks,
 * throttle answers, tenant and node views - and events; used by clients:
 * counterctl, the benchmark, the tests) never trust a declared length for
 * memory. */
#ifndef CNT_PROTOCOL_RESPONSE_H
#define CNT_PROTOCOL_RESPONSE_H

#include <stdbool.h>
#include "protocol/wire.h"

/* ---- Encoders (server side) ---- */

/* Room an error response needs at most (header + longest status text). */
#define CNT_ERROR_RESPONSE_MAX (CNT_HEADER_SIZE + 32)
/* Size of a Dump record response for a name of n bytes. */
#define CNT_DUMP_RECORD_SIZE(n) (CNT_HEADER_SIZE + 10 + (size_t)(n))
/* Size of a Wait_acquire answer (status 0). */
#define CNT_WAIT_ANSWER_SIZE (CNT_HEADER_SIZE + CNT_WANS_FIXED)
/* Size of a status-0 response whose body is one u64 (Renew). */
#define CNT_U64_RESPONSE_SIZE (CNT_HEADER_SIZE + 8)
/* Size of a Queues record response for a name of n bytes. */
#define CNT_QUEUES_RECORD_SIZE(n)                                           \
    (CNT_HEADER_SIZE + CNT_QUEUES_FIXED + (size_t)(n))
/* Size of an event packet for a name of n bytes. */
#define CNT_EVENT_SIZE(n) (CNT_HEADER_SIZE + CNT_EVENT_FIXED + (size_t)(n))
/* Size of a status-0 Ttl_query or Ttl_update answer. */
#define CNT_TTL_VIEW_RESPONSE_SIZE (CNT_HEADER_SIZE + CNT_TTL_VIEW_SIZE)
/* Size of a status-0 Window_check or Gcra_check answer. */
#define CNT_CHECK_RESPONSE_SIZE (CNT_HEADER_SIZE + CNT_CHECK_ANSWER_SIZE)
/* Size of a status-0 Multi_check answer of n items. */
#define CNT_MULTI_ANSWER_SIZE(n)                                            \
    (CNT_HEADER_SIZE + CNT_MANS_FIXED + (size_t)(n) * CNT_CHECK_ANSWER_SIZE)

/* Size of a status-0 Throttle answer. */
#define CNT_THROTTLE_RESPONSE_SIZE (CNT_HEADER_SIZE + CNT_THROTTLE_ANSWER_SIZE)
/* Size of a status-0 Tenant_show answer. */
#define CNT_TENANT_VIEW_RESPONSE_SIZE (CNT_HEADER_SIZE + CNT_TENANT_VIEW_SIZE)
/* Size of a Tenant_list record response for a tenant of n bytes. */
#define CNT_TENANT_RECORD_SIZE(n)                                           \
    (CNT_HEADER_SIZE + CNT_TREC_FIXED + (size_t)(n))
/* Size of a Busiest record response for a name of n bytes. */
#define CNT_BUSY_RECORD_SIZE(n)                                             \
    (CNT_HEADER_SIZE + CNT_BUSY_FIXED + (size_t)(n))
/* Size of a status-0 Node_show answer. */
#define CNT_NODE_VIEW_RESPONSE_SIZE (CNT_HEADER_SIZE + CNT_NODE_VIEW_SIZE)

/* A TTL record as Ttl_query and Ttl_update answer it (the core's view,
 * field for field). */
typedef struct cnt_ttl_answer {
    uint64_t quota;
    uint64_t ttl_left;      /* in unit, rounded up: never 0 when live */
    uint8_t unit;           /* a cnt_time_unit: the record's own */
} cnt_ttl_answer;

/* One check's answer (Window_check, Gcra_check, a Multi_check item; the
 * core's check answer, field for field). */
typedef struct cnt_check_result {
    uint8_t state;          /* a cnt_check_state */
    uint32_t limit;
    uint32_t remaining;
    uint32_t used;
    uint64_t retry_after_ns;    /* 0 when allowed; CNT_RETRY_NEVER when
                                 * never */
    uint64_t reset_after_ns;
} cnt_check_result;

/* A Throttle answer (the throttle core's charge answer, field for
 * field). */
typedef struct cnt_throttle_answer {
    uint8_t state, reason;  /* a cnt_tstate, a cnt_treason */
    uint32_t used, remaining;   /* this second, after the call;
                                 * remaining 0xffffffff: no limit */
    uint64_t retry_after_ns;    /* 0 when allowed, else >= 1 */
} cnt_throttle_answer;

/* A tenant as Tenant_show and Tenant_list show it (the throttle core's
 * tenant view, field for field). */
typedef struct cnt_tenant_view {
    uint32_t reserved, hard_limit, used;    /* hard_limit 0xffffffff:
                                             * unlimited; used: this
                                             * second */
    uint8_t flags;          /* CNT_TENANT_CONFIGURED */
    uint64_t throttled, units;  /* since the tenant record exists */
} cnt_tenant_view;

/* The node as Node_show shows it (the throttle core's node view, field
 * for field). */
typedef struct cnt_node_view {
    uint32_t capacity, used, pool, pool_used, reserved_sum, tenants;
    uint64_t throttled;
} cnt_node_view;

/* Writes a response header (magic 0x91, reserved 0). */
size_t cnt_encode_response_header(uint8_t *out, uint8_t opcode, uint8_t status,
                                  uint32_t body_len, uint32_t opaque);

/* Writes a response with status and the reference's text for it as body. */
size_t cnt_encode_error(uint8_t *out, uint8_t opcode, cnt_status status,
                        uint32_t opaque);

/* Size of a response whose body is n bytes of text. */
#define CNT_TEXT_RESPONSE_SIZE(n) (CNT_HEADER_SIZE + (size_t)(n))

/* Writes a response with any status and text of its own as body
 * (Tenant_set_json and Node_set_json: what was applied, or what is wrong
 * with the document). */
size_t cnt_encode_text(uint8_t *out, uint8_t opcode, uint8_t status,
                       uint32_t opaque, const char *text, size_t len);
/* Size of a Throttled answer (status 0x2D). */
#define CNT_THROTTLED_RESPONSE_SIZE \
    (CNT_HEADER_SIZE + CNT_THROTTLED_FIXED + 9)

/* Writes a Throttled answer to any request a connection's tenant could
 * not pay for: retry_after_ns (>= 1) and reason (a cnt_treason), then
 * the text "Throttled". */
size_t cnt_encode_throttled(uint8_t *out, uint8_t opcode, uint32_t opaque,
                            uint64_t retry_after_ns, uint8_t reason);

/* Writes a status-0 response with an empty body (Noop, Release, Dump end). */
size_t cnt_encode_empty(uint8_t *out, uint8_t opcode, uint32_t opaque);

/* Writes a status-0 response whose body is one u32 (Get, Acquire,
 * Wait_release). */
size_t cnt_encode_u32(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint32_t value);

/* Writes one Dump record: current, max consumption, name length, name. */
size_t cnt_encode_dump_record(uint8_t *out, uint32_t opaque, uint32_t current,
                              uint32_t max, const uint8_t *name,
                              uint16_t name_len);

/* Writes a status-0 response whose body is one u64 (Renew: the lease id). */
size_t cnt_encode_u64(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint64_t value);

/* Writes a status-0 Wait_acquire answer (CNT_WAIT_ANSWER_SIZE bytes):
 * state (a cnt_wait_state), position in the queue (0 when granted), lease
 * id (0 when queued), the counter's consumption. */
size_t cnt_encode_wait_answer(uint8_t *out, uint32_t opaque, uint8_t state,
                              uint32_t position, uint64_t lease_id,
                              uint32_t consumption);

/* Writes one Busiest record: checks, kind, name length, name. The series
 * ends with cnt_encode_empty(out, CNT_OP_BUSIEST, opaque). */
size_t cnt_encode_busy_record(uint8_t *out, uint32_t opaque,
                              uint32_t checks, uint8_t kind,
                              const uint8_t *name, uint16_t name_len);

/* Writes one Queues record: consumption, queue length, name length, name.
 * The series ends with cnt_encode_empty(out, CNT_OP_QUEUES, opaque). */
size_t cnt_encode_queues_record(uint8_t *out, uint32_t opaque,
                                uint32_t consumption, uint32_t queue_len,
                                const uint8_t *name, uint16_t name_len);

/* Writes an event packet (magic 0x92, opcode = code, status 0) about the
 * Wait_acquire request with this opaque: lease id, value, name length,
 * name; CNT_EVENT_SIZE(name_len) bytes. */
size_t cnt_encode_event(uint8_t *out, uint8_t code, uint32_t opaque,
                        uint64_t lease_id, uint32_t value,
                        const uint8_t *name, uint16_t name_len);

/* Writes a status-0 Ttl_query or Ttl_update answer (opcode one of them;
 * CNT_TTL_VIEW_RESPONSE_SIZE bytes): quota, time left, unit. */
size_t cnt_encode_ttl_view(uint8_t *out, uint8_t opcode, uint32_t opaque,
                           const cnt_ttl_answer *view);

/* Writes a status-0 Window_check or Gcra_check answer (opcode one of
 * them; CNT_CHECK_RESPONSE_SIZE bytes). */
size_t cnt_encode_check_answer(uint8_t *out, uint8_t opcode, uint32_t opaque,
                               const cnt_check_result *result);

/* Writes a status-0 Multi_check answer (CNT_MULTI_ANSWER_SIZE(count)
 * bytes): overall (a cnt_multi_state), count, then items[0..count) in
 * request order. */
size_t cnt_encode_multi_answer(uint8_t *out, uint32_t opaque,
                               uint8_t overall,
                               const cnt_check_result *items,
                               uint8_t count);

/* Writes a status-0 Throttle answer (CNT_THROTTLE_RESPONSE_SIZE bytes). */
size_t cnt_encode_throttle_answer(uint8_t *out, uint32_t opaque,
                                  const cnt_throttle_answer *ans);

/* Writes a status-0 Tenant_show answer (CNT_TENANT_VIEW_RESPONSE_SIZE
 * bytes). */
size_t cnt_encode_tenant_view(uint8_t *out, uint32_t opaque,
                              const cnt_tenant_view *view);

/* Writes one Tenant_list record: the tenant view, the tenant's length and
 * the tenant; CNT_TENANT_RECORD_SIZE(name_len) bytes. The series ends
 * with cnt_encode_empty(out, CNT_OP_TENANT_LIST, opaque). */
size_t cnt_encode_tenant_record(uint8_t *out, uint32_t opaque,
                                const cnt_tenant_view *view,
                                const uint8_t *name, uint16_t name_len);

/* Writes a status-0 Node_show answer (CNT_NODE_VIEW_RESPONSE_SIZE
 * bytes). */
size_t cnt_encode_node_view(uint8_t *out, uint32_t opaque,
                            const cnt_node_view *view);

/* Writes one Stats pair (name length, value length, name, value) and
 * returns its size; with out NULL only returns the size. */
size_t cnt_encode_stats_pair(uint8_t *out, const char *name,
                             const char *value);

/* ---- Decoder and body parsers (client side) ---- */

/* A decoded response or event; body points into the caller's buffer. */
typedef struct cnt_response {
    uint8_t magic;          /* 0x91 an answer, 0x92 an event */
    uint8_t opcode;
    uint8_t status;
    uint32_t opaque;
    uint32_t body_len;
    const uint8_t *body;
    size_t size;            /* header + body */
} cnt_response;

/* Returns how many bytes the response at the front of buf[0..len) takes in
 * all: CNT_HEADER_SIZE while the header is incomplete, then the header and
 * the declared body (64-bit: a body length is up to 4 GiB). A client that
 * reads into a bounded buffer checks this against its capacity and
 * refuses, or discards, a response that would not fit. */
uint64_t cnt_response_size(const uint8_t *buf, size_t len);

/* Decodes the response at the front of buf[0..len) and says what it found:
 * - CNT_DECODE_OK: a whole response (magic 0x91) or event (magic 0x92)
 *   is buffered; res is filled (cnt_response_is_event tells which).
 * - CNT_DECODE_NEED_MORE: more bytes are needed. A huge declared body is
 *   never trusted for memory: it just keeps the answer here (see
 *   cnt_response_size).
 * - CNT_DECODE_CLOSE: the magic byte is neither 0x91 nor 0x92, judged on
 *   the first byte; the stream is not a counter server's.
 * It never answers CNT_DECODE_ERROR. res is only written on CNT_DECODE_OK. */
cnt_decode_result cnt_response_decode(const uint8_t *buf, size_t len,
                                      cnt_response *res);

/* Tells whether res is an event (magic 0x92) rather than an answer. An
 * event comes between two answers, never inside a series, and its opaque
 * is that of the Wait_acquire request it is about. */
bool cnt_response_is_event(const cnt_response *res);

/* A Dump record, decoded from a response body. */
typedef struct cnt_dump_record {
    uint32_t current;
    uint32_t max;
    const uint8_t *name;
    uint16_t name_len;
} cnt_dump_record;

/* Parses a Dump record body; false if res is not a status-0 Dump response
 * or its body is malformed (too short, name running past the body). */
bool cnt_dump_record_parse(const cnt_response *res, cnt_dump_record *rec);

/* Tells whether res is the status-0 empty response ending a Dump series. */
bool cnt_response_is_dump_end(const cnt_response *res);

/* A Wait_acquire answer, decoded from a response body. */
typedef struct cnt_wait_answer {
    uint8_t state;          /* a cnt_wait_state */
    uint32_t position;      /* 1 = next in line; 0 when granted */
    uint64_t lease_id;      /* 0 when queued */
    uint32_t consumption;
} cnt_wait_answer;

/* Parses a Wait_acquire answer; false if res is not a status-0
 * Wait_acquire answer (magic 0x91) with a 20-byte body and a known
 * state. */
bool cnt_parse_wait_answer(const cnt_response *res, cnt_wait_answer *ans);

/* Parses a Renew answer's lease id; false if res is not a status-0 Renew
 * answer (magic 0x91) of at least 8 bytes. */
bool cnt_parse_renew_answer(const cnt_response *res, uint64_t *lease_id);

/* Parses a Wait_release answer's resources returned (0: the wait was
 * cancelled); false if res is not a status-0 Wait_release answer (magic
 * 0x91) of at least 4 bytes. */
bool cnt_parse_wait_release_answer(const cnt_response *res,
                                   uint32_t *resources);

/* A Queues record, decoded from a response body. */
typedef struct cnt_queues_record {
    uint32_t consumption;
    uint32_t queue_len;
    const uint8_t *name;
    uint16_t name_len;
} cnt_queues_record;

/* Parses a Queues record body; false if res is not a status-0 Queues
 * answer (magic 0x91) or its body is malformed (too short, name running
 * past the body). */
bool cnt_parse_queues_record(const cnt_response *res, cnt_queues_record *rec);

/* Tells whether the first bytes a client reads (len >= 1) start with a
 * line of a text protocol, such as memcache's "ERROR\r\n": an upper-case
 * letter, then only printable ASCII and CR up to the first LF or the 32nd
 * byte, whichever comes first.
 * Such bytes mean the client reached a memcache text port rather than the
 * counter port. */
bool cnt_response_is_text(const uint8_t *buf, size_t len);

/* A Busiest record, decoded from a response body: the checks of the
 * last whole second, the kind (CNT_BUSY_KIND_*), the name. */
typedef struct cnt_busy_record {
    uint32_t checks;
    uint8_t kind;
    const uint8_t *name;
    uint16_t name_len;
} cnt_busy_record;

/* Parses a Busiest record; false if res is not a status-0 Busiest answer
 * (magic 0x91) or its body is malformed (too short, name running past
 * the body). Any kind byte is returned as it is. */
bool cnt_parse_busy_record(const cnt_response *res, cnt_busy_record *rec);

/* Tells whether res is the status-0 empty answer ending a Busiest
 * series. */
bool cnt_response_is_busiest_end(const cnt_response *res);

/* Tells whether res is the status-0 empty answer ending a Queues series. */
bool cnt_response_is_queues_end(const cnt_response *res);

/* An event, decoded from a packet with magic 0x92. */
typedef struct cnt_event_packet {
    uint8_t code;           /* a cnt_event; a client ignores codes it
                             * does not know */
    uint64_t lease_id;      /* 0 when none was granted */
    uint32_t value;         /* meaning depends on the code */
    const uint8_t *name;
    uint16_t name_len;
} cnt_event_packet;

/* Parses an event; false if res is not an event (magic 0x92, status 0) or
 * its body is malformed (too short, name running past the body). The
 * request it is about is the Wait_acquire whose opaque is res->opaque. */
bool cnt_parse_event(const cnt_response *res, cnt_event_packet *ev);

/* Parses a Ttl_query or Ttl_update answer; false if res is not a
 * status-0 answer (magic 0x91) to one of them of at least 17 bytes with a
 * known unit. */
bool cnt_parse_ttl_view(const cnt_response *res, cnt_ttl_answer *view);

/* Parses a Window_check or Gcra_check answer; false if res is not a
 * status-0 answer (magic 0x91) to one of them of at least 32 bytes with a
 * known state. */
bool cnt_parse_check_answer(const cnt_response *res,
                            cnt_check_result *result);

/* A Multi_check answer, checked whole by cnt_parse_multi_answer; its
 * items are read with cnt_multi_answer_item. */
typedef struct cnt_multi_answer {
    uint8_t overall;        /* a cnt_multi_state */
    uint8_t count;          /* items, 1..CNT_MULTI_MAX */
    const uint8_t *items;   /* the first item, in the response body */
} cnt_multi_answer;

/* Parses a Multi_check answer; false if res is not a status-0 answer
 * (magic 0x91) to Multi_check whose overall state and every item's state
 * are known and whose 1 to CNT_MULTI_MAX items lie inside the body. */
bool cnt_parse_multi_answer(const cnt_response *res, cnt_multi_answer *ans);

/* Reads item i (from 0) of a parsed Multi_check answer; false when i is
 * not below its count. */
bool cnt_multi_answer_item(const cnt_multi_answer *ans, uint8_t i,
                           cnt_check_result *result);

/* Parses a Throttle answer; false if res is not a status-0 answer (magic
 * 0x91) to Throttle of at least 24 bytes with a known state and a known
 * reason. */
bool cnt_parse_throttle_answer(const cnt_response *res,
                               cnt_throttle_answer *ans);

/* Parses a Tenant_show answer; false if res is not a status-0 answer
 * (magic 0x91) to Tenant_show of at least 32 bytes. */
bool cnt_parse_tenant_view(const cnt_response *res, cnt_tenant_view *view);

/* A Tenant_list record, decoded from a response body. */
typedef struct cnt_tenant_record {
    cnt_tenant_view view;
    const uint8_t *name;
    uint16_t name_len;
} cnt_tenant_record;

/* Parses a Tenant_list record; false if res is not a status-0 answer
 * (magic 0x91) to Tenant_list or its body is malformed (too short, name
 * running past the body). */
bool cnt_parse_tenant_record(const cnt_response *res, cnt_tenant_record *rec);

/* Tells whether res is the status-0 empty answer ending a Tenant_list
 * series. */
bool cnt_response_is_tenant_list_end(const cnt_response *res);

/* Parses a Node_show answer; false if res is not a status-0 answer (magic
 * 0x91) to Node_show of at least 32 bytes. */
bool cnt_parse_node_view(const cnt_response *res, cnt_node_view *view);

/* Iterates Stats pairs: *pos starts at 0; returns true and sets the four
 * outputs for each pair, false at the end or on a malformed body. */
bool cnt_stats_next(const cnt_response *res, size_t *pos,
                    const char **name, uint16_t *name_len,
                    const char **value, uint16_t *value_len);

/* Size of a Lease_list record response for a name of n bytes. */
#define CNT_LEASE_RECORD_SIZE(n)                                            \
    (CNT_HEADER_SIZE + CNT_LREC_FIXED + (size_t)(n))

/* Writes one Lease_list record (opcode 0x24, status 0): time left in ms,
 * lease id, resources, name length, name. The series ends with
 * cnt_encode_empty(out, CNT_OP_LEASE_LIST, opaque). */
size_t cnt_encode_lease_record(uint8_t *out, uint32_t opaque,
                               uint32_t left_ms, uint64_t lease_id,
                               uint32_t resources, const uint8_t *name,
                               uint16_t name_len);

/* A Lease_list record, decoded from a response body. */
typedef struct cnt_lease_record {
    uint32_t left_ms;
    uint64_t lease_id;
    uint32_t resources;
    const uint8_t *name;
    uint16_t name_len;
} cnt_lease_record;

/* Parses a Lease_list record body; false if res is not a status-0
 * Lease_list answer (magic 0x91) with a body of at least the fixed part
 * whose name stays inside it. The empty body ending the series is not a
 * record (cnt_response_is_lease_list_end). */
bool cnt_parse_lease_record(const cnt_response *res, cnt_lease_record *rec);

/* Tells whether res is the status-0 empty answer ending a Lease_list
 * series. */
bool cnt_response_is_lease_list_end(const cnt_response *res);

#endif
