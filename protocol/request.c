/* request.c: requests, both ways. The encoders write the documented layout
 * into caller buffers. The decoder is one generic body reader expanded
 * once per row of the opcode table (CNT_OPCODE_ROWS in wire.h); it decides
 * a request from the bytes buffered so far, checking hard limits as soon
 * as the header is in, so a connection never has to hold more than
 * CNT_REQUEST_MAX bytes. A Multi_check's items are read by the same body
 * reader with the rows of the checks they carry. */
#include "config.h"

#include <string.h>

#include "protocol/request.h"

/* ---- Encoders ---- */

/* Writes a request header (magic 0x90, flags and reserved 0). */
size_t cnt_encode_request_header(uint8_t *out, uint8_t opcode,
                                 uint32_t body_len, uint32_t opaque)
{
    out[CNT_OFF_MAGIC] = CNT_MAGIC_REQUEST;
    out[CNT_OFF_OPCODE] = opcode;
    out[CNT_OFF_FLAGS] = 0;
    out[CNT_OFF_RESERVED] = 0;
    cnt_put_u32(out + CNT_OFF_BODYLEN, body_len);
    cnt_put_u32(out + CNT_OFF_OPAQUE, opaque);
    return CNT_HEADER_SIZE;
}

/* Writes a request without a body (Noop, Stats, Dump, Queues). */
size_t cnt_encode_simple(uint8_t *out, uint8_t opcode, uint32_t opaque)
{
    return cnt_encode_request_header(out, opcode, 0, opaque);
}

/* Copies a name after its u16 length at p; returns the bytes written. */
static size_t put_name(uint8_t *p, const void *name, uint16_t name_len)
{
    cnt_put_u16(p, name_len);
    if (name_len > 0)
        memcpy(p + 2, name, name_len);
    return 2 + (size_t)name_len;
}

/* Writes a request whose body is just a name (or a secret): its length
 * at offset 0, then its bytes; every such opcode's row says so (fixed
 * part 2, name length at 0; tests/test_wire.c checks the rows). */
static size_t encode_named(uint8_t *out, uint8_t opcode, uint32_t opaque,
                           const void *name, uint16_t name_len)
{
    cnt_encode_request_header(out, opcode, 2u + (uint32_t)name_len, opaque);
    return CNT_HEADER_SIZE + put_name(out + CNT_HEADER_SIZE, name, name_len);
}

/* Writes a Get request. */
size_t cnt_encode_get(uint8_t *out, uint32_t opaque, const void *name,
                      uint16_t name_len)
{
    return encode_named(out, CNT_OP_GET, opaque, name, name_len);
}

/* Writes an Acquire request. */
size_t cnt_encode_acquire(uint8_t *out, uint32_t opaque, uint32_t resources,
                          uint32_t maximum, const void *name,
                          uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_ACQUIRE,
                              CNT_ACQ_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_ACQ_OFF_RESOURCES, resources);
    cnt_put_u32(body + CNT_ACQ_OFF_MAXIMUM, maximum);
    return CNT_HEADER_SIZE + CNT_ACQ_OFF_NAMELEN +
           put_name(body + CNT_ACQ_OFF_NAMELEN, name, name_len);
}

/* Writes a Release request. */
size_t cnt_encode_release(uint8_t *out, uint32_t opaque, uint32_t resources,
                          const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_RELEASE,
                              CNT_REL_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_REL_OFF_RESOURCES, resources);
    return CNT_HEADER_SIZE + CNT_REL_OFF_NAMELEN +
           put_name(body + CNT_REL_OFF_NAMELEN, name, name_len);
}

/* Writes a Wait_acquire request. */
size_t cnt_encode_wait_acquire(uint8_t *out, uint32_t opaque,
                               uint32_t resources, uint32_t maximum,
                               uint32_t wait_ms, uint32_t lease_ms,
                               const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_WAIT_ACQUIRE,
                              CNT_WACQ_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_WACQ_OFF_RESOURCES, resources);
    cnt_put_u32(body + CNT_WACQ_OFF_MAXIMUM, maximum);
    cnt_put_u32(body + CNT_WACQ_OFF_WAIT, wait_ms);
    cnt_put_u32(body + CNT_WACQ_OFF_LEASE, lease_ms);
    return CNT_HEADER_SIZE + CNT_WACQ_OFF_NAMELEN +
           put_name(body + CNT_WACQ_OFF_NAMELEN, name, name_len);
}

/* Writes a Renew request. */
size_t cnt_encode_renew(uint8_t *out, uint32_t opaque, uint32_t lease_ms,
                        const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_RENEW,
                              CNT_RENEW_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_RENEW_OFF_LEASE, lease_ms);
    return CNT_HEADER_SIZE + CNT_RENEW_OFF_NAMELEN +
           put_name(body + CNT_RENEW_OFF_NAMELEN, name, name_len);
}

/* Writes a Wait_release request. */
size_t cnt_encode_wait_release(uint8_t *out, uint32_t opaque,
                               const void *name, uint16_t name_len)
{
    return encode_named(out, CNT_OP_WAIT_RELEASE, opaque, name, name_len);
}

/* Writes a Ttl_insert request. */
size_t cnt_encode_ttl_insert(uint8_t *out, uint32_t opaque, uint64_t quota,
                             uint64_t ttl, uint8_t unit, const void *name,
                             uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_TTL_INSERT,
                              CNT_TTLI_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u64(body + CNT_TTLI_OFF_QUOTA, quota);
    cnt_put_u64(body + CNT_TTLI_OFF_TTL, ttl);
    body[CNT_TTLI_OFF_UNIT] = unit;
    return CNT_HEADER_SIZE + CNT_TTLI_OFF_NAMELEN +
           put_name(body + CNT_TTLI_OFF_NAMELEN, name, name_len);
}

/* Writes a Ttl_query request. */
size_t cnt_encode_ttl_query(uint8_t *out, uint32_t opaque, const void *name,
                            uint16_t name_len)
{
    return encode_named(out, CNT_OP_TTL_QUERY, opaque, name, name_len);
}

/* Writes a Ttl_update request. */
size_t cnt_encode_ttl_update(uint8_t *out, uint32_t opaque, uint8_t attribute,
                             uint8_t change, uint8_t unit, uint64_t value,
                             const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_TTL_UPDATE,
                              CNT_TTLU_FIXED + (uint32_t)name_len, opaque);
    body[CNT_TTLU_OFF_ATTRIBUTE] = attribute;
    body[CNT_TTLU_OFF_CHANGE] = change;
    body[CNT_TTLU_OFF_UNIT] = unit;
    cnt_put_u64(body + CNT_TTLU_OFF_VALUE, value);
    return CNT_HEADER_SIZE + CNT_TTLU_OFF_NAMELEN +
           put_name(body + CNT_TTLU_OFF_NAMELEN, name, name_len);
}

/* Writes a Ttl_purge request. */
size_t cnt_encode_ttl_purge(uint8_t *out, uint32_t opaque, const void *name,
                            uint16_t name_len)
{
    return encode_named(out, CNT_OP_TTL_PURGE, opaque, name, name_len);
}

/* Writes a Window_check body at body; returns its size. */
static size_t put_window_body(uint8_t *body, uint8_t flags, uint8_t slots,
                              uint32_t limit, uint32_t cost,
                              uint64_t window_ns, const void *name,
                              uint16_t name_len)
{
    body[CNT_WIN_OFF_FLAGS] = flags;
    body[CNT_WIN_OFF_SLOTS] = slots;
    cnt_put_u16(body + CNT_WIN_OFF_RESERVED, 0);
    cnt_put_u32(body + CNT_WIN_OFF_LIMIT, limit);
    cnt_put_u32(body + CNT_WIN_OFF_COST, cost);
    cnt_put_u64(body + CNT_WIN_OFF_WINDOW, window_ns);
    return CNT_WIN_OFF_NAMELEN +
           put_name(body + CNT_WIN_OFF_NAMELEN, name, name_len);
}

/* Writes a Gcra_check body at body; returns its size. */
static size_t put_gcra_body(uint8_t *body, uint8_t flags, uint32_t burst,
                            uint32_t count, uint32_t cost, uint64_t period_ns,
                            const void *name, uint16_t name_len)
{
    body[CNT_GCRA_OFF_FLAGS] = flags;
    memset(body + CNT_GCRA_OFF_RESERVED, 0,
           CNT_GCRA_OFF_BURST - CNT_GCRA_OFF_RESERVED);
    cnt_put_u32(body + CNT_GCRA_OFF_BURST, burst);
    cnt_put_u32(body + CNT_GCRA_OFF_COUNT, count);
    cnt_put_u32(body + CNT_GCRA_OFF_COST, cost);
    cnt_put_u64(body + CNT_GCRA_OFF_PERIOD, period_ns);
    return CNT_GCRA_OFF_NAMELEN +
           put_name(body + CNT_GCRA_OFF_NAMELEN, name, name_len);
}

/* Writes a Window_check request. */
size_t cnt_encode_window_check(uint8_t *out, uint32_t opaque, uint8_t flags,
                               uint8_t slots, uint32_t limit, uint32_t cost,
                               uint64_t window_ns, const void *name,
                               uint16_t name_len)
{
    cnt_encode_request_header(out, CNT_OP_WINDOW_CHECK,
                              CNT_WIN_FIXED + (uint32_t)name_len, opaque);
    return CNT_HEADER_SIZE +
           put_window_body(out + CNT_HEADER_SIZE, flags, slots, limit, cost,
                           window_ns, name, name_len);
}

/* Writes a Gcra_check request. */
size_t cnt_encode_gcra_check(uint8_t *out, uint32_t opaque, uint8_t flags,
                             uint32_t burst, uint32_t count, uint32_t cost,
                             uint64_t period_ns, const void *name,
                             uint16_t name_len)
{
    cnt_encode_request_header(out, CNT_OP_GCRA_CHECK,
                              CNT_GCRA_FIXED + (uint32_t)name_len, opaque);
    return CNT_HEADER_SIZE +
           put_gcra_body(out + CNT_HEADER_SIZE, flags, burst, count, cost,
                         period_ns, name, name_len);
}

/* Starts a Multi_check in out[0..cap). */
bool cnt_multi_begin(cnt_multi_builder *b, uint8_t *out, size_t cap,
                     uint32_t opaque, uint8_t flags)
{
    b->out = out;
    b->cap = cap;
    b->len = 0;
    b->count = 0;
    if (cap < CNT_HEADER_SIZE + CNT_MULTI_FIXED)
        return false;
    cnt_encode_request_header(out, CNT_OP_MULTI_CHECK, CNT_MULTI_FIXED,
                              opaque);
    out[CNT_HEADER_SIZE + CNT_MULTI_OFF_FLAGS] = flags;
    out[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT] = 0;
    b->len = CNT_HEADER_SIZE + CNT_MULTI_FIXED;
    return true;
}

/* Appends one item to a Multi_check being built. */
bool cnt_multi_add(cnt_multi_builder *b, const cnt_check_request *item)
{
    size_t fixed, need, body_len;
    uint8_t *p;

    if (item->opcode == CNT_OP_WINDOW_CHECK)
        fixed = CNT_WIN_FIXED;
    else if (item->opcode == CNT_OP_GCRA_CHECK)
        fixed = CNT_GCRA_FIXED;
    else
        return false;
    need = CNT_MITEM_FIXED + fixed + item->name_len;
    /* A builder that failed to begin has len 0 and takes nothing; an
     * item's body must fit its u16 length. */
    if (b->len < CNT_HEADER_SIZE + CNT_MULTI_FIXED ||
        fixed + item->name_len > UINT16_MAX ||
        b->count >= CNT_MULTI_MAX || need > b->cap - b->len ||
        b->len - CNT_HEADER_SIZE + need > CNT_BODY_MAX)
        return false;
    p = b->out + b->len;
    p[CNT_MITEM_OFF_OPCODE] = item->opcode;
    if (item->opcode == CNT_OP_WINDOW_CHECK)
        body_len = put_window_body(p + CNT_MITEM_FIXED, 0, item->slots,
                                   item->limit_or_burst, item->cost,
                                   item->period_ns, item->name,
                                   item->name_len);
    else
        body_len = put_gcra_body(p + CNT_MITEM_FIXED, 0,
                                 item->limit_or_burst, item->count,
                                 item->cost, item->period_ns, item->name,
                                 item->name_len);
    cnt_put_u16(p + CNT_MITEM_OFF_LEN, (uint16_t)body_len);
    b->len += CNT_MITEM_FIXED + body_len;
    b->count++;
    return true;
}

/* Writes a Multi_check's body length and item count; returns its size. */
size_t cnt_multi_finish(cnt_multi_builder *b)
{
    if (b->len < CNT_HEADER_SIZE + CNT_MULTI_FIXED)
        return 0;
    cnt_put_u32(b->out + CNT_OFF_BODYLEN,
                (uint32_t)(b->len - CNT_HEADER_SIZE));
    b->out[CNT_HEADER_SIZE + CNT_MULTI_OFF_COUNT] = b->count;
    return b->len;
}

/* Writes an Auth_user request. */
size_t cnt_encode_auth_user(uint8_t *out, uint32_t opaque, uint8_t flags,
                            const void *user, uint16_t user_len,
                            const void *secret, uint16_t secret_len)
{
    uint32_t body = CNT_AUSER_FIXED + (uint32_t)user_len + secret_len;

    cnt_encode_request_header(out, CNT_OP_AUTH_USER, body, opaque);
    uint8_t *b = out + CNT_HEADER_SIZE;
    b[CNT_AUSER_OFF_FLAGS] = flags;
    b[CNT_AUSER_OFF_ZERO] = 0;
    cnt_put_u16(b + CNT_AUSER_OFF_SECRETLEN, secret_len);
    cnt_put_u16(b + CNT_AUSER_OFF_NAMELEN, user_len);
    memcpy(b + CNT_AUSER_FIXED, user, user_len);
    memcpy(b + CNT_AUSER_FIXED + user_len, secret, secret_len);
    return CNT_HEADER_SIZE + body;
}

/* Writes an Auth request. */
size_t cnt_encode_auth(uint8_t *out, uint32_t opaque, const void *secret,
                       uint16_t secret_len)
{
    return encode_named(out, CNT_OP_AUTH, opaque, secret, secret_len);
}

/* Writes a Throttle request. */
size_t cnt_encode_throttle(uint8_t *out, uint32_t opaque, uint32_t units,
                           const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_THROTTLE,
                              CNT_THR_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_THR_OFF_UNITS, units);
    return CNT_HEADER_SIZE + CNT_THR_OFF_NAMELEN +
           put_name(body + CNT_THR_OFF_NAMELEN, name, name_len);
}

/* Writes a Tenant_show request. */
size_t cnt_encode_tenant_show(uint8_t *out, uint32_t opaque,
                              const void *name, uint16_t name_len)
{
    return encode_named(out, CNT_OP_TENANT_SHOW, opaque, name, name_len);
}

/* Writes a Node_show request. */
size_t cnt_encode_node_show(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_request_header(out, CNT_OP_NODE_SHOW, 0, opaque);
}

/* Writes a Tenant_set request. */
size_t cnt_encode_tenant_set(uint8_t *out, uint32_t opaque, uint8_t flags,
                             uint32_t reserved, uint32_t hard_limit,
                             const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_TENANT_SET,
                              CNT_TSET_FIXED + (uint32_t)name_len, opaque);
    body[CNT_TSET_OFF_FLAGS] = flags;
    memset(body + CNT_TSET_OFF_ZERO, 0,
           CNT_TSET_OFF_RESERVED - CNT_TSET_OFF_ZERO);
    cnt_put_u32(body + CNT_TSET_OFF_RESERVED, reserved);
    cnt_put_u32(body + CNT_TSET_OFF_HARD, hard_limit);
    return CNT_HEADER_SIZE + CNT_TSET_OFF_NAMELEN +
           put_name(body + CNT_TSET_OFF_NAMELEN, name, name_len);
}

/* Writes a Tenant_remove request. */
size_t cnt_encode_tenant_remove(uint8_t *out, uint32_t opaque,
                                const void *name, uint16_t name_len)
{
    return encode_named(out, CNT_OP_TENANT_REMOVE, opaque, name, name_len);
}

/* Writes a Node_set request. */
size_t cnt_encode_node_set(uint8_t *out, uint32_t opaque, uint32_t capacity)
{
    cnt_encode_request_header(out, CNT_OP_NODE_SET, CNT_NSET_FIXED, opaque);
    cnt_put_u32(out + CNT_HEADER_SIZE + CNT_NSET_OFF_CAPACITY, capacity);
    return CNT_HEADER_SIZE + CNT_NSET_FIXED;
}

/* Writes a Busiest request. */
size_t cnt_encode_busiest(uint8_t *out, uint32_t opaque, uint32_t count)
{
    cnt_encode_request_header(out, CNT_OP_BUSIEST, CNT_BUSIEST_FIXED,
                              opaque);
    cnt_put_u32(out + CNT_HEADER_SIZE + CNT_BUSIEST_OFF_COUNT, count);
    return CNT_HEADER_SIZE + CNT_BUSIEST_FIXED;
}

/* Writes a Tenant_set_json request. */
size_t cnt_encode_tenant_set_json(uint8_t *out, uint32_t opaque,
                                  const void *name, uint16_t name_len,
                                  const void *doc, size_t doc_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;
    size_t n;

    cnt_encode_request_header(out, CNT_OP_TENANT_SET_JSON,
                              CNT_TSETJ_FIXED + (uint32_t)name_len +
                                  (uint32_t)doc_len,
                              opaque);
    n = CNT_TSETJ_OFF_NAMELEN +
        put_name(body + CNT_TSETJ_OFF_NAMELEN, name, name_len);
    if (doc_len > 0)
        memcpy(body + n, doc, doc_len);
    return CNT_HEADER_SIZE + n + doc_len;
}

/* Writes a Node_set_json request. */
size_t cnt_encode_node_set_json(uint8_t *out, uint32_t opaque,
                                const void *doc, size_t doc_len)
{
    cnt_encode_request_header(out, CNT_OP_NODE_SET_JSON, (uint32_t)doc_len,
                              opaque);
    if (doc_len > 0)
        memcpy(out + CNT_HEADER_SIZE, doc, doc_len);
    return CNT_HEADER_SIZE + doc_len;
}

/* Writes an Unthrottle request. */
size_t cnt_encode_unthrottle(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_request_header(out, CNT_OP_UNTHROTTLE, 0, opaque);
}

/* Writes a Reload request. */
size_t cnt_encode_reload(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_request_header(out, CNT_OP_RELOAD, 0, opaque);
}

/* ---- Decoder ---- */

/* decode_body must be inlined into each case of the opcode switch: that
 * is what turns the row's constants into straight-line code. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define NEVER_INLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE inline
#define NEVER_INLINE
#endif

/* Marks req as answered with an error status; the caller skips req->size. */
static cnt_decode_result decode_error(cnt_request *req, cnt_status status)
{
    req->status = status;
    return CNT_DECODE_ERROR;
}

/* Tells whether a window of window_ns cut into slots is one the server
 * keeps (wire.h's rule). */
static bool window_shape_ok(uint8_t slots, uint64_t window_ns)
{
    uint8_t n;
    uint64_t slot_ns;

    return cnt_window_shape(slots, window_ns, &n, &slot_ns);
}

/* Tells whether a TTL is not 0 and its nanoseconds fit a u64. */
static bool ttl_fits(uint64_t ttl, uint8_t unit)
{
    uint64_t ns;

    return ttl != 0 && cnt_unit_to_ns(ttl, unit, &ns);
}

/* Tells whether a Ttl_update's attribute and change are known, and does
 * not set a TTL to 0. */
static bool ttl_change_ok(const cnt_request *req)
{
    if (req->attribute > CNT_TTL_ATTR_TTL || req->change > CNT_TTL_DECREASE)
        return false;
    return !(req->attribute == CNT_TTL_ATTR_TTL &&
             req->change == CNT_TTL_PATCH && req->value == 0);
}

static bool multi_items_ok(const cnt_request *req);

/* Reads and checks a body whose bytes are all in body[0..body_len), for
 * the given row: the fields the row lists, then its checks. The checks
 * run in the reference's order, which decides the answer when a body has
 * several faults: too short a body, then the numbers, then an empty name,
 * then a name running past the body (the extension opcodes follow the
 * same order; every fault answers 0x04 anyway). */
/* The bytes of the body at a field the row has. */
#define FIELD(member) (body + cnt_field_offset(row.member))

static ALWAYS_INLINE bool
decode_body(const uint8_t *body, uint32_t body_len, cnt_request *req,
            const cnt_opcode_row row)
{
    if (body_len < row.fixed)
        return false;
    if (row.off_resources != CNT_FIELD_NONE)
        req->resources = cnt_get_u32(FIELD(off_resources));
    if (row.off_maximum != CNT_FIELD_NONE)
        req->maximum = cnt_get_u32(FIELD(off_maximum));
    if (row.off_wait != CNT_FIELD_NONE)
        req->wait_ms = cnt_get_u32(FIELD(off_wait));
    if (row.off_lease != CNT_FIELD_NONE)
        req->lease_ms = cnt_get_u32(FIELD(off_lease));
    if (row.off_quota != CNT_FIELD_NONE)
        req->quota = cnt_get_u64(FIELD(off_quota));
    if (row.off_ttl != CNT_FIELD_NONE)
        req->ttl = cnt_get_u64(FIELD(off_ttl));
    if (row.off_period != CNT_FIELD_NONE)
        req->period_ns = cnt_get_u64(FIELD(off_period));
    if (row.off_limit != CNT_FIELD_NONE)
        req->limit = cnt_get_u32(FIELD(off_limit));
    if (row.off_count != CNT_FIELD_NONE)
        req->count = cnt_get_u32(FIELD(off_count));
    if (row.off_cost != CNT_FIELD_NONE)
        req->cost = cnt_get_u32(FIELD(off_cost));
    if (row.off_flags != CNT_FIELD_NONE)
        req->flags = *FIELD(off_flags);
    if (row.off_slots != CNT_FIELD_NONE)
        req->slots = *FIELD(off_slots);
    if (row.off_unit != CNT_FIELD_NONE)
        req->unit = *FIELD(off_unit);
    if (row.off_attribute != CNT_FIELD_NONE)
        req->attribute = *FIELD(off_attribute);
    if (row.off_change != CNT_FIELD_NONE)
        req->change = *FIELD(off_change);
    if (row.off_units != CNT_FIELD_NONE)
        req->units = cnt_get_u32(FIELD(off_units));
    if (row.off_reserved != CNT_FIELD_NONE)
        req->reserved = cnt_get_u32(FIELD(off_reserved));
    if (row.off_hard_limit != CNT_FIELD_NONE)
        req->hard_limit = cnt_get_u32(FIELD(off_hard_limit));
    if (row.off_capacity != CNT_FIELD_NONE)
        req->capacity = cnt_get_u32(FIELD(off_capacity));

    if ((row.checks & CNT_CHECK_RESOURCES_NONZERO) && req->resources == 0)
        return false;
    if ((row.checks & CNT_CHECK_MAXIMUM_COVERS) &&
        req->maximum < req->resources)
        return false;
    if ((row.checks & CNT_CHECK_LEASE_NONZERO) && req->lease_ms == 0)
        return false;
    if ((row.checks & CNT_CHECK_FLAGS_PEEK_ONLY) &&
        (req->flags & ~CNT_CHECK_FLAG_PEEK) != 0)
        return false;
    if ((row.checks & CNT_CHECK_UNIT_KNOWN) && req->unit > CNT_UNIT_MAX)
        return false;
    if ((row.checks & CNT_CHECK_TTL_FITS) && !ttl_fits(req->ttl, req->unit))
        return false;
    if ((row.checks & CNT_CHECK_TTL_CHANGE) && !ttl_change_ok(req))
        return false;
    if ((row.checks & CNT_CHECK_COUNT_NONZERO) && req->count == 0)
        return false;
    if ((row.checks & CNT_CHECK_COST_NONZERO) && req->cost == 0)
        return false;
    if ((row.checks & CNT_CHECK_PERIOD_NONZERO) && req->period_ns == 0)
        return false;
    if ((row.checks & CNT_CHECK_WINDOW_SHAPE) &&
        !window_shape_ok(req->slots, req->period_ns))
        return false;
    if ((row.checks & CNT_CHECK_UNITS_NONZERO) && req->units == 0)
        return false;
    if ((row.checks & CNT_CHECK_TENANT_FLAGS) &&
        (req->flags == 0 || (req->flags & ~CNT_TENANT_SET_ALL) != 0))
        return false;
    if ((row.checks & CNT_CHECK_AUTH_FLAGS) &&
        (req->flags & ~CNT_AUTH_FLAGS_ALL) != 0)
        return false;

    if (row.off_namelen != CNT_FIELD_NONE) {
        uint16_t name_len = cnt_get_u16(FIELD(off_namelen));

        if (name_len == 0 || (uint32_t)row.fixed + name_len > body_len)
            return false;
        req->name = body + row.fixed;
        req->name_len = name_len;
    }
    if (row.off_secretlen != CNT_FIELD_NONE) {
        uint16_t secret_len = cnt_get_u16(FIELD(off_secretlen));
        /* After the name when the row has one (Auth_user's user). */
        uint32_t at = (uint32_t)row.fixed + req->name_len;

        if (secret_len == 0 || at + secret_len > body_len)
            return false;
        req->secret = body + at;
        req->secret_len = secret_len;
    }
    if (row.doc) {
        uint32_t start = row.fixed + req->name_len;

        if (body_len - start > CNT_JSON_DOC_MAX)
            return false;
        req->doc = body + start;
        req->doc_len = body_len - start;
    }
    if (row.off_items != CNT_FIELD_NONE) {
        req->item_count = *FIELD(off_items);
        req->items = body + row.fixed;
        req->items_len = body_len - row.fixed;
        if (!multi_items_ok(req))
            return false;
    }
    return true;
}
#undef FIELD

/* Reads the Multi_check item at items[*pos..len) into item (zeroed
 * first): an opcode byte, a u16 length and that many bytes, which must be
 * a valid body of the opcode (a Window_check or a Gcra_check) with its
 * own flags 0. Steps *pos past it; false, *pos unchanged, when anything
 * is wrong, without reading past items + len. */
static bool multi_item_read(const uint8_t *items, uint32_t len, size_t *pos,
                            cnt_request *item)
{
    const uint8_t *p = items + *pos;
    uint16_t item_len;
    bool ok;

    memset(item, 0, sizeof(*item));
    if (*pos > len || len - *pos < CNT_MITEM_FIXED)
        return false;
    item_len = cnt_get_u16(p + CNT_MITEM_OFF_LEN);
    if (item_len > len - *pos - CNT_MITEM_FIXED)
        return false;
    item->opcode = p[CNT_MITEM_OFF_OPCODE];
    item->body_len = item_len;
    switch (item->opcode) {
    case CNT_OP_WINDOW_CHECK:
        ok = decode_body(p + CNT_MITEM_FIXED, item_len, item,
                         (cnt_opcode_row){ CNT_ROW_WINDOW_CHECK });
        break;
    case CNT_OP_GCRA_CHECK:
        ok = decode_body(p + CNT_MITEM_FIXED, item_len, item,
                         (cnt_opcode_row){ CNT_ROW_GCRA_CHECK });
        break;
    default:
        ok = false;
    }
    if (!ok || item->flags != 0)
        return false;
    *pos += CNT_MITEM_FIXED + (size_t)item_len;
    return true;
}

/* Checks a Multi_check's items whole: 1 to CNT_MULTI_MAX of them, each
 * valid, filling the rest of the body exactly, no two of the same kind
 * with the same name (one record cannot be charged twice in one step).
 * Never inlined: the items are read by decode_body itself, with the rows
 * of the checks. */
static NEVER_INLINE bool multi_items_ok(const cnt_request *req)
{
    cnt_request item[CNT_MULTI_MAX];
    size_t pos = 0;

    if (req->item_count == 0 || req->item_count > CNT_MULTI_MAX)
        return false;
    for (unsigned i = 0; i < req->item_count; i++) {
        if (!multi_item_read(req->items, req->items_len, &pos, &item[i]))
            return false;
        for (unsigned j = 0; j < i; j++)
            if (item[j].opcode == item[i].opcode &&
                item[j].name_len == item[i].name_len &&
                memcmp(item[j].name, item[i].name, item[i].name_len) == 0)
                return false;
    }
    return pos == req->items_len;
}

/* Decodes a request whose header is in and whose opcode has the given row:
 * at once when the body is skipped, else once the whole body is buffered,
 * reading the fields the row lists and running its checks. */
static ALWAYS_INLINE cnt_decode_result
decode_known(const uint8_t *buf, size_t len, cnt_request *req,
             const cnt_opcode_row row)
{
    req->privileged = row.privileged;
    if (row.body == CNT_BODY_SKIP) {
        /* No body is needed: answer now; the caller skips any body. */
        return CNT_DECODE_OK;
    }
    /* Refused before the body arrives: the caller skips it as it streams
     * in instead of buffering it, so no connection ever holds more than
     * CNT_REQUEST_MAX bytes (doc/protocol.md, "Differences from the
     * reference"). */
    if (req->body_len > CNT_BODY_MAX)
        return decode_error(req, CNT_STATUS_INVALID);
    if (len < req->size)
        return CNT_DECODE_NEED_MORE;
    if (!decode_body(buf + CNT_HEADER_SIZE, req->body_len, req, row))
        return decode_error(req, CNT_STATUS_INVALID);
    return CNT_DECODE_OK;
}

/* One case of the opcode switch per row of CNT_OPCODE_ROWS, the row passed
 * as a constant (a code listed twice is a duplicate case: an error). */
#define DECODE_CASE(id, ...)                                                \
    case CNT_OP_##id:                                                       \
        return decode_known(buf, len, req, (cnt_opcode_row){ __VA_ARGS__ });

/* Decodes the request at the front of buf[0..len). */
cnt_decode_result cnt_request_decode(const uint8_t *buf, size_t len,
                                     cnt_request *req)
{
    memset(req, 0, sizeof(*req));
    if (len < CNT_HEADER_SIZE) {
        req->size = CNT_HEADER_SIZE;
        return CNT_DECODE_NEED_MORE;
    }

    /* Flags (byte 2) and reserved (byte 3) are ignored, as the reference
     * does. */
    req->magic = buf[CNT_OFF_MAGIC];
    req->opcode = buf[CNT_OFF_OPCODE];
    req->body_len = cnt_get_u32(buf + CNT_OFF_BODYLEN);
    req->opaque = cnt_get_u32(buf + CNT_OFF_OPAQUE);
    req->size = (uint64_t)CNT_HEADER_SIZE + req->body_len;

    if (req->magic != CNT_MAGIC_REQUEST) {
        /* A wrong magic with a plausible length is a broken request we can
         * answer and step over; with an impossible one the bytes are most
         * likely another protocol (a text client on the wrong port). */
        if (req->body_len > CNT_BODY_MAX)
            return CNT_DECODE_CLOSE;
        return decode_error(req, CNT_STATUS_INVALID);
    }

    switch (req->opcode) {
    CNT_OPCODE_ROWS(DECODE_CASE)
    default:
        return decode_error(req, CNT_STATUS_UNKNOWN_COMMAND);
    }
}

/* Copies the fields of a check from a decoded request or item. */
static void check_args_from(const cnt_request *r, bool peek,
                            cnt_check_request *out)
{
    out->opcode = r->opcode;
    out->peek = peek;
    out->slots = r->slots;
    out->limit_or_burst = r->limit;
    out->count = r->count;
    out->cost = r->cost;
    out->period_ns = r->period_ns;
    out->name = r->name;
    out->name_len = r->name_len;
}

/* Fills out from a decoded Window_check or Gcra_check. */
bool cnt_request_check_args(const cnt_request *req, cnt_check_request *out)
{
    if (req->opcode != CNT_OP_WINDOW_CHECK &&
        req->opcode != CNT_OP_GCRA_CHECK)
        return false;
    check_args_from(req, (req->flags & CNT_CHECK_FLAG_PEEK) != 0, out);
    return true;
}

/* Yields the next item of a decoded Multi_check. */
bool cnt_multi_item_next(const cnt_request *req, size_t *pos,
                         cnt_check_request *out)
{
    cnt_request item;

    if (req->opcode != CNT_OP_MULTI_CHECK || req->items == NULL ||
        !multi_item_read(req->items, req->items_len, pos, &item))
        return false;
    check_args_from(&item, (req->flags & CNT_CHECK_FLAG_PEEK) != 0, out);
    return true;
}

/* Writes a Lease_list request. */
size_t cnt_encode_lease_list(uint8_t *out, uint32_t opaque, uint32_t count)
{
    cnt_encode_request_header(out, CNT_OP_LEASE_LIST, CNT_LLIST_FIXED,
                              opaque);
    cnt_put_u32(out + CNT_HEADER_SIZE + CNT_LLIST_OFF_COUNT, count);
    return CNT_HEADER_SIZE + CNT_LLIST_FIXED;
}
