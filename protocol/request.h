/* request.h: requests, both ways. Encoders (used by clients: counterctl,
 * the benchmark, the tests) write into caller buffers; the decoder (used by
 * the server) is a pure function over the bytes a connection has buffered:
 * it never allocates, never does I/O and keeps no state, so a connection
 * calls it in a loop until it needs more bytes. */
#ifndef CNT_PROTOCOL_REQUEST_H
#define CNT_PROTOCOL_REQUEST_H

#include <stdbool.h>

#include "protocol/wire.h"

/* ---- Encoders (client side) ---- */

/* Writes a request header (magic 0x90, flags and reserved 0). */
size_t cnt_encode_request_header(uint8_t *out, uint8_t opcode,
                                 uint32_t body_len, uint32_t opaque);

/* Writes a Noop, Stats, Dump or Queues request (no body). */
size_t cnt_encode_simple(uint8_t *out, uint8_t opcode, uint32_t opaque);

/* Writes a Get request; out needs CNT_HEADER_SIZE + 2 + name_len bytes. */
size_t cnt_encode_get(uint8_t *out, uint32_t opaque, const void *name,
                      uint16_t name_len);

/* Writes an Acquire request; out needs CNT_HEADER_SIZE + 10 + name_len. */
size_t cnt_encode_acquire(uint8_t *out, uint32_t opaque, uint32_t resources,
                          uint32_t maximum, const void *name,
                          uint16_t name_len);

/* Writes a Release request; out needs CNT_HEADER_SIZE + 6 + name_len. */
size_t cnt_encode_release(uint8_t *out, uint32_t opaque, uint32_t resources,
                          const void *name, uint16_t name_len);

/* Writes a Wait_acquire request; out needs CNT_HEADER_SIZE + 18 +
 * name_len bytes. maximum 0 and wait_ms or lease_ms CNT_USE_GROUP_DEFAULT
 * take the group's settings. */
size_t cnt_encode_wait_acquire(uint8_t *out, uint32_t opaque,
                               uint32_t resources, uint32_t maximum,
                               uint32_t wait_ms, uint32_t lease_ms,
                               const void *name, uint16_t name_len);

/* Writes a Renew request; out needs CNT_HEADER_SIZE + 6 + name_len. */
size_t cnt_encode_renew(uint8_t *out, uint32_t opaque, uint32_t lease_ms,
                        const void *name, uint16_t name_len);

/* Writes a Wait_release request; out needs CNT_HEADER_SIZE + 2 +
 * name_len. */
size_t cnt_encode_wait_release(uint8_t *out, uint32_t opaque,
                               const void *name, uint16_t name_len);

/* Writes a Ttl_insert request; out needs CNT_HEADER_SIZE + 19 + name_len.
 * ttl is in unit (a cnt_time_unit). */
size_t cnt_encode_ttl_insert(uint8_t *out, uint32_t opaque, uint64_t quota,
                             uint64_t ttl, uint8_t unit, const void *name,
                             uint16_t name_len);

/* Writes a Ttl_query request; out needs CNT_HEADER_SIZE + 2 + name_len. */
size_t cnt_encode_ttl_query(uint8_t *out, uint32_t opaque, const void *name,
                            uint16_t name_len);

/* Writes a Ttl_update request; out needs CNT_HEADER_SIZE + 13 + name_len.
 * attribute is a cnt_ttl_attribute, change a cnt_ttl_change, unit the
 * unit of a TTL value. */
size_t cnt_encode_ttl_update(uint8_t *out, uint32_t opaque, uint8_t attribute,
                             uint8_t change, uint8_t unit, uint64_t value,
                             const void *name, uint16_t name_len);

/* Writes a Ttl_purge request; out needs CNT_HEADER_SIZE + 2 + name_len. */
size_t cnt_encode_ttl_purge(uint8_t *out, uint32_t opaque, const void *name,
                            uint16_t name_len);

/* Writes a Window_check request; out needs CNT_HEADER_SIZE + 22 +
 * name_len. flags: CNT_CHECK_FLAG_PEEK or 0; slots 0 and window_ns 0 take
 * the defaults (10 slots, 1 s). */
size_t cnt_encode_window_check(uint8_t *out, uint32_t opaque, uint8_t flags,
                               uint8_t slots, uint32_t limit, uint32_t cost,
                               uint64_t window_ns, const void *name,
                               uint16_t name_len);

/* Writes a Gcra_check request; out needs CNT_HEADER_SIZE + 26 + name_len.
 * count per period_ns, with a burst of burst beyond it. */
size_t cnt_encode_gcra_check(uint8_t *out, uint32_t opaque, uint8_t flags,
                             uint32_t burst, uint32_t count, uint32_t cost,
                             uint64_t period_ns, const void *name,
                             uint16_t name_len);

/* One check of a Window_check, a Gcra_check or a Multi_check item, with
 * the fields of the core's check arguments under the same names and
 * types, so the server copies it field by field. Peek comes from the
 * request's flags (a Multi_check's for its items). */
typedef struct cnt_check_request {
    uint8_t opcode;             /* CNT_OP_WINDOW_CHECK or CNT_OP_GCRA_CHECK */
    bool peek;
    uint8_t slots;              /* window: 0 = 10 */
    uint32_t limit_or_burst;    /* window: limit; gcra: burst */
    uint32_t count;             /* gcra */
    uint32_t cost;
    uint64_t period_ns;         /* window: window_ns (0 = 1 s); gcra:
                                 * period */
    const uint8_t *name;
    uint16_t name_len;
} cnt_check_request;

/* Builds a Multi_check request in a caller buffer: begin, add items, then
 * finish. Every item must fit both the buffer and CNT_BODY_MAX, and at
 * most CNT_MULTI_MAX items are taken; an item that does not fit is left
 * out and its add says so, leaving what was built intact. */
typedef struct cnt_multi_builder {
    uint8_t *out;
    size_t cap;                 /* bytes of out */
    size_t len;                 /* bytes written, header included */
    uint8_t count;              /* items added */
} cnt_multi_builder;

/* Starts a Multi_check (flags: CNT_CHECK_FLAG_PEEK or 0) in out[0..cap);
 * false if cap cannot hold even the header and the fixed part. */
bool cnt_multi_begin(cnt_multi_builder *b, uint8_t *out, size_t cap,
                     uint32_t opaque, uint8_t flags);

/* Appends one item: item->opcode's body with its own flags 0 (item->peek
 * is not used: the Multi_check's flags apply to every item); false, and
 * nothing written, when it would pass the buffer, CNT_BODY_MAX or
 * CNT_MULTI_MAX items, or when the opcode is not a check. */
bool cnt_multi_add(cnt_multi_builder *b, const cnt_check_request *item);

/* Writes the body length and the item count; returns the request's size
 * (the server refuses one without items, like any malformed body). */
size_t cnt_multi_finish(cnt_multi_builder *b);

/* Writes an Auth_user request (flags: CNT_AUTH_NONBLOCKING); out needs
 * CNT_HEADER_SIZE + CNT_AUSER_FIXED + user_len + secret_len. */
size_t cnt_encode_auth_user(uint8_t *out, uint32_t opaque, uint8_t flags,
                            const void *user, uint16_t user_len,
                            const void *secret, uint16_t secret_len);

/* Writes an Auth request; out needs CNT_HEADER_SIZE + 2 + secret_len. */
size_t cnt_encode_auth(uint8_t *out, uint32_t opaque, const void *secret,
                       uint16_t secret_len);

/* Writes a Throttle request (charge units to tenant); out needs
 * CNT_HEADER_SIZE + 6 + name_len. */
size_t cnt_encode_throttle(uint8_t *out, uint32_t opaque, uint32_t units,
                           const void *name, uint16_t name_len);

/* Writes a Tenant_show request; out needs CNT_HEADER_SIZE + 2 +
 * name_len. */
size_t cnt_encode_tenant_show(uint8_t *out, uint32_t opaque,
                              const void *name, uint16_t name_len);

/* Writes a Node_show request (no body); out needs CNT_HEADER_SIZE. */
size_t cnt_encode_node_show(uint8_t *out, uint32_t opaque);

/* Writes a Tenant_set request; out needs CNT_HEADER_SIZE + 14 + name_len.
 * flags (CNT_TENANT_SET_*) say which of reserved and hard_limit to set;
 * the other is sent as given and not used. */
size_t cnt_encode_tenant_set(uint8_t *out, uint32_t opaque, uint8_t flags,
                             uint32_t reserved, uint32_t hard_limit,
                             const void *name, uint16_t name_len);

/* Writes a Tenant_remove request; out needs CNT_HEADER_SIZE + 2 +
 * name_len. */
size_t cnt_encode_tenant_remove(uint8_t *out, uint32_t opaque,
                                const void *name, uint16_t name_len);

/* Writes a Busiest request for at most count names; out needs
 * CNT_HEADER_SIZE + 4. */
size_t cnt_encode_busiest(uint8_t *out, uint32_t opaque, uint32_t count);

/* Writes a Node_set request; out needs CNT_HEADER_SIZE + 4. */
size_t cnt_encode_node_set(uint8_t *out, uint32_t opaque, uint32_t capacity);

/* Writes a Tenant_set_json request: the tenant and its JSON document
 * (doc_len <= CNT_JSON_DOC_MAX, not checked here). */
size_t cnt_encode_tenant_set_json(uint8_t *out, uint32_t opaque,
                                  const void *name, uint16_t name_len,
                                  const void *doc, size_t doc_len);

/* Writes a Node_set_json request: the node's JSON document (doc_len <=
 * CNT_JSON_DOC_MAX, not checked here). */
size_t cnt_encode_node_set_json(uint8_t *out, uint32_t opaque,
                                const void *doc, size_t doc_len);

/* Writes an Unthrottle request (no body); out needs CNT_HEADER_SIZE. */
size_t cnt_encode_unthrottle(uint8_t *out, uint32_t opaque);

/* Writes a Reload request (no body); out needs CNT_HEADER_SIZE. */
size_t cnt_encode_reload(uint8_t *out, uint32_t opaque);

/* ---- Decoder (server side) ---- */

/* A decoded request. Fields not used by the opcode are zero; values are
 * as sent (a 0 that means "the default" stays 0). The fields
 * are generic (named after their meaning, not an opcode), so a new opcode
 * whose body has the same kinds of fields reuses them; a new kind of field
 * gets a member here next to its offset in cnt_opcode_row. */
typedef struct cnt_request {
    uint8_t magic;
    uint8_t opcode;
    bool privileged;        /* the opcode's row says so (a valid request) */
    uint32_t opaque;
    uint32_t body_len;      /* as declared in the header */
    uint64_t size;          /* header + declared body */
    uint32_t resources;     /* Acquire, Release, Wait_acquire */
    uint32_t maximum;       /* Acquire, Wait_acquire */
    uint32_t wait_ms;       /* Wait_acquire */
    uint32_t lease_ms;      /* Wait_acquire, Renew */
    union {                 /* one u64, named for what it holds */
        uint64_t quota;     /* Ttl_insert */
        uint64_t value;     /* Ttl_update */
    };
    uint64_t ttl;           /* Ttl_insert, in unit */
    uint64_t period_ns;     /* Window_check: window_ns (0 = 1 s);
                             * Gcra_check: period */
    uint32_t limit;         /* Window_check: limit; Gcra_check: burst */
    uint32_t count;         /* Gcra_check */
    uint32_t cost;          /* Window_check, Gcra_check */
    uint8_t flags;          /* Window_check, Gcra_check, Multi_check,
                             * Tenant_set */
    uint8_t slots;          /* Window_check (0 = 10) */
    uint8_t unit;           /* Ttl_insert, Ttl_update */
    uint8_t attribute;      /* Ttl_update */
    uint8_t change;         /* Ttl_update */
    uint8_t item_count;     /* Multi_check: 1..CNT_MULTI_MAX */
    const uint8_t *items;   /* Multi_check: the first item, in buf */
    uint32_t items_len;     /* Multi_check: bytes of all the items */
    uint32_t units;         /* Throttle */
    uint32_t reserved;      /* Tenant_set */
    uint32_t hard_limit;    /* Tenant_set */
    uint32_t capacity;      /* Node_set */
    const uint8_t *secret;  /* Auth: points into buf; kept apart from the
                             * name so that nothing that shows names
                             * shows it */
    uint16_t secret_len;
    const uint8_t *name;    /* opcodes with a name (the tenant for the
                             * throttling ones): points into buf */
    uint16_t name_len;
    const uint8_t *doc;     /* Tenant_set_json, Node_set_json: the JSON
                             * document, in buf (never NUL-terminated) */
    uint32_t doc_len;
    cnt_status status;      /* CNT_DECODE_ERROR: the status to answer */
} cnt_request;

/* Decodes the request at the front of buf[0..len) and says what it found:
 * - CNT_DECODE_NEED_MORE: req->size is how many bytes the request needs in
 *   all once the header is in (CNT_HEADER_SIZE before that); it never
 *   exceeds CNT_REQUEST_MAX.
 * - CNT_DECODE_OK: a valid request; req->name (and Auth's req->secret)
 *   points into buf and req->size bytes belong to it. For an opcode whose
 *   body is skipped (Noop, Stats, Dump, Queues, Tenant_list, Node_show,
 *   Unthrottle, Reload) this comes as soon as the header is in, and the
 *   body may not be buffered yet.
 * - CNT_DECODE_ERROR: answer req->status (0x04 or 0x81) with its text.
 *   req->size bytes of the stream belong to the request; that may be more
 *   than is buffered (a huge declared body): the caller discards the rest
 *   as it arrives, without storing it.
 * - CNT_DECODE_CLOSE: a bad magic byte with an impossible body length.
 * req is written in every case. */
cnt_decode_result cnt_request_decode(const uint8_t *buf, size_t len,
                                     cnt_request *req);

/* An opaque whose last two bytes are CR LF. A client sends it with the
 * first request of a connection: the counter server echoes it like any
 * other, while a memcache text port, which reads our bytes as a command
 * line, sees the line end there and answers "ERROR\r\n" at once, which
 * the client recognises (cnt_response_is_text) instead of waiting for an
 * answer that would never come. */
#define CNT_TEXT_PROBE_OPAQUE 0x0d0aU

/* Fills out from a Window_check or Gcra_check request decoded with
 * CNT_DECODE_OK; false (out untouched) for any other opcode. */
bool cnt_request_check_args(const cnt_request *req, cnt_check_request *out);

/* Walks the items of a Multi_check decoded with CNT_DECODE_OK: *pos starts
 * at 0; returns true and fills out for each item in order, false after the
 * last one. Pure and bounded: it reads only req->items[0..items_len) and
 * also refuses (false) an item that is malformed, so it is safe on any
 * request; out->peek is the Multi_check's peek flag. */
bool cnt_multi_item_next(const cnt_request *req, size_t *pos,
                         cnt_check_request *out);

/* Writes a Lease_list request: the count of leases wanted (the server
 * answers at most CNT_LEASE_LIST_MAX; 0 is refused with 0x04). */
size_t cnt_encode_lease_list(uint8_t *out, uint32_t opaque, uint32_t count);

#endif
