/* response.c: responses and events, both ways. Every response the server
 * encodes copies the request's opcode and opaque (also for unknown
 * opcodes, unlike the reference: see doc/protocol.md); an event carries
 * the opaque of the request it is about. The caller provides the room the
 * header asks for. The client-side decoder is incremental and never trusts
 * a declared body length for memory. */
#include "config.h"

#include <string.h>

#include "protocol/response.h"

/* ---- Encoders ---- */

/* Writes a response header (magic 0x91, reserved 0). */
size_t cnt_encode_response_header(uint8_t *out, uint8_t opcode, uint8_t status,
                                  uint32_t body_len, uint32_t opaque)
{
    out[CNT_OFF_MAGIC] = CNT_MAGIC_RESPONSE;
    out[CNT_OFF_OPCODE] = opcode;
    out[CNT_OFF_STATUS] = status;
    out[CNT_OFF_RESERVED] = 0;
    cnt_put_u32(out + CNT_OFF_BODYLEN, body_len);
    cnt_put_u32(out + CNT_OFF_OPAQUE, opaque);
    return CNT_HEADER_SIZE;
}

/* Writes a response with status and its reference text as body. */
size_t cnt_encode_error(uint8_t *out, uint8_t opcode, cnt_status status,
                        uint32_t opaque)
{
    const char *text = cnt_status_text(status);
    /* A status outside the table has no text; send it with an empty body
     * rather than inventing one. */
    size_t n = text ? strlen(text) : 0;

    cnt_encode_response_header(out, opcode, (uint8_t)status, (uint32_t)n,
                               opaque);
    memcpy(out + CNT_HEADER_SIZE, text ? text : "", n);
    return CNT_HEADER_SIZE + n;
}

/* Writes a response with text of its own as body. */
size_t cnt_encode_text(uint8_t *out, uint8_t opcode, uint8_t status,
                       uint32_t opaque, const char *text, size_t len)
{
    cnt_encode_response_header(out, opcode, status, (uint32_t)len, opaque);
    if (len > 0)
        memcpy(out + CNT_HEADER_SIZE, text, len);
    return CNT_HEADER_SIZE + len;
}

/* Writes a Throttled answer: the retry hint and the reason before the
 * status text. */
size_t cnt_encode_throttled(uint8_t *out, uint8_t opcode, uint32_t opaque,
                            uint64_t retry_after_ns, uint8_t reason)
{
    const char *text = cnt_status_text(CNT_STATUS_THROTTLED);
    size_t n = strlen(text);
    uint8_t *b = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, opcode, CNT_STATUS_THROTTLED,
                               (uint32_t)(CNT_THROTTLED_FIXED + n), opaque);
    cnt_put_u64(b + CNT_THROTTLED_OFF_RETRY, retry_after_ns);
    b[CNT_THROTTLED_OFF_REASON] = reason;
    memcpy(b + CNT_THROTTLED_FIXED, text, n);
    return CNT_HEADER_SIZE + CNT_THROTTLED_FIXED + n;
}

/* Writes a status-0 response with an empty body. */
size_t cnt_encode_empty(uint8_t *out, uint8_t opcode, uint32_t opaque)
{
    return cnt_encode_response_header(out, opcode, CNT_STATUS_OK, 0, opaque);
}

/* Writes a status-0 response whose body is one u32. */
size_t cnt_encode_u32(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint32_t value)
{
    cnt_encode_response_header(out, opcode, CNT_STATUS_OK, 4, opaque);
    cnt_put_u32(out + CNT_HEADER_SIZE, value);
    return CNT_HEADER_SIZE + 4;
}

/* Writes one Dump record response (opcode 0x11, status 0). */
size_t cnt_encode_dump_record(uint8_t *out, uint32_t opaque, uint32_t current,
                              uint32_t max, const uint8_t *name,
                              uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_DUMP, CNT_STATUS_OK,
                               CNT_DUMP_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_DUMP_OFF_CURRENT, current);
    cnt_put_u32(body + CNT_DUMP_OFF_MAX, max);
    cnt_put_u16(body + CNT_DUMP_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_DUMP_FIXED, name, name_len);
    return CNT_DUMP_RECORD_SIZE(name_len);
}

/* Writes a status-0 response whose body is one u64. */
size_t cnt_encode_u64(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint64_t value)
{
    cnt_encode_response_header(out, opcode, CNT_STATUS_OK, 8, opaque);
    cnt_put_u64(out + CNT_HEADER_SIZE, value);
    return CNT_U64_RESPONSE_SIZE;
}

/* Writes a status-0 Wait_acquire answer. */
size_t cnt_encode_wait_answer(uint8_t *out, uint32_t opaque, uint8_t state,
                              uint32_t position, uint64_t lease_id,
                              uint32_t consumption)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_WAIT_ACQUIRE, CNT_STATUS_OK,
                               CNT_WANS_FIXED, opaque);
    /* The state's byte and three zero bytes after it. */
    cnt_put_u32(body + CNT_WANS_OFF_STATE, (uint32_t)state << 24);
    cnt_put_u32(body + CNT_WANS_OFF_POSITION, position);
    cnt_put_u64(body + CNT_WANS_OFF_LEASE_ID, lease_id);
    cnt_put_u32(body + CNT_WANS_OFF_CONSUMPTION, consumption);
    return CNT_WAIT_ANSWER_SIZE;
}

/* Writes one Queues record response (opcode 0x23, status 0). */
size_t cnt_encode_queues_record(uint8_t *out, uint32_t opaque,
                                uint32_t consumption, uint32_t queue_len,
                                const uint8_t *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_QUEUES, CNT_STATUS_OK,
                               CNT_QUEUES_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_QUEUES_OFF_CONSUMPTION, consumption);
    cnt_put_u32(body + CNT_QUEUES_OFF_LENGTH, queue_len);
    cnt_put_u16(body + CNT_QUEUES_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_QUEUES_FIXED, name, name_len);
    return CNT_QUEUES_RECORD_SIZE(name_len);
}

/* Writes one Busiest record response (opcode 0x37, status 0). */
size_t cnt_encode_busy_record(uint8_t *out, uint32_t opaque,
                              uint32_t checks, uint8_t kind,
                              const uint8_t *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_BUSIEST, CNT_STATUS_OK,
                               CNT_BUSY_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_BUSY_OFF_CHECKS, checks);
    body[CNT_BUSY_OFF_KIND] = kind;
    cnt_put_u16(body + CNT_BUSY_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_BUSY_FIXED, name, name_len);
    return CNT_BUSY_RECORD_SIZE(name_len);
}

/* Writes an event packet (magic 0x92, status and reserved 0). */
size_t cnt_encode_event(uint8_t *out, uint8_t code, uint32_t opaque,
                        uint64_t lease_id, uint32_t value,
                        const uint8_t *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    out[CNT_OFF_MAGIC] = CNT_MAGIC_NOTICE;
    out[CNT_OFF_OPCODE] = code;
    out[CNT_OFF_STATUS] = CNT_STATUS_OK;
    out[CNT_OFF_RESERVED] = 0;
    cnt_put_u32(out + CNT_OFF_BODYLEN, CNT_EVENT_FIXED + (uint32_t)name_len);
    cnt_put_u32(out + CNT_OFF_OPAQUE, opaque);
    cnt_put_u64(body + CNT_EVENT_OFF_LEASE_ID, lease_id);
    cnt_put_u32(body + CNT_EVENT_OFF_VALUE, value);
    cnt_put_u16(body + CNT_EVENT_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_EVENT_FIXED, name, name_len);
    return CNT_EVENT_SIZE(name_len);
}

/* Writes a status-0 Ttl_query or Ttl_update answer. */
size_t cnt_encode_ttl_view(uint8_t *out, uint8_t opcode, uint32_t opaque,
                           const cnt_ttl_answer *view)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, opcode, CNT_STATUS_OK, CNT_TTL_VIEW_SIZE,
                               opaque);
    cnt_put_u64(body + CNT_TTLV_OFF_QUOTA, view->quota);
    cnt_put_u64(body + CNT_TTLV_OFF_TTL, view->ttl_left);
    body[CNT_TTLV_OFF_UNIT] = view->unit;
    return CNT_TTL_VIEW_RESPONSE_SIZE;
}

/* Writes one 32-byte check answer at p. */
static void put_check_result(uint8_t *p, const cnt_check_result *r)
{
    /* The state's byte and three zero bytes after it. */
    cnt_put_u32(p + CNT_CANS_OFF_STATE, (uint32_t)r->state << 24);
    cnt_put_u32(p + CNT_CANS_OFF_LIMIT, r->limit);
    cnt_put_u32(p + CNT_CANS_OFF_REMAINING, r->remaining);
    cnt_put_u32(p + CNT_CANS_OFF_USED, r->used);
    cnt_put_u64(p + CNT_CANS_OFF_RETRY, r->retry_after_ns);
    cnt_put_u64(p + CNT_CANS_OFF_RESET, r->reset_after_ns);
}

/* Writes a status-0 Window_check or Gcra_check answer. */
size_t cnt_encode_check_answer(uint8_t *out, uint8_t opcode, uint32_t opaque,
                               const cnt_check_result *result)
{
    cnt_encode_response_header(out, opcode, CNT_STATUS_OK,
                               CNT_CHECK_ANSWER_SIZE, opaque);
    put_check_result(out + CNT_HEADER_SIZE, result);
    return CNT_CHECK_RESPONSE_SIZE;
}

/* Writes a status-0 Multi_check answer. */
size_t cnt_encode_multi_answer(uint8_t *out, uint32_t opaque,
                               uint8_t overall,
                               const cnt_check_result *items,
                               uint8_t count)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_MULTI_CHECK, CNT_STATUS_OK,
                               (uint32_t)(CNT_MULTI_ANSWER_SIZE(count) -
                                          CNT_HEADER_SIZE),
                               opaque);
    body[CNT_MANS_OFF_OVERALL] = overall;
    body[CNT_MANS_OFF_COUNT] = count;
    for (uint8_t i = 0; i < count; i++)
        put_check_result(body + CNT_MANS_FIXED +
                         (size_t)i * CNT_CHECK_ANSWER_SIZE, &items[i]);
    return CNT_MULTI_ANSWER_SIZE(count);
}

/* Writes a status-0 Throttle answer. */
size_t cnt_encode_throttle_answer(uint8_t *out, uint32_t opaque,
                                  const cnt_throttle_answer *ans)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_THROTTLE, CNT_STATUS_OK,
                               CNT_THROTTLE_ANSWER_SIZE, opaque);
    /* The state's and the reason's bytes and two zero bytes after them. */
    cnt_put_u32(body + CNT_TANS_OFF_STATE,
                (uint32_t)ans->state << 24 | (uint32_t)ans->reason << 16);
    cnt_put_u32(body + CNT_TANS_OFF_USED, ans->used);
    cnt_put_u32(body + CNT_TANS_OFF_REMAINING, ans->remaining);
    /* Four zero bytes between remaining and retry_after_ns. */
    cnt_put_u32(body + CNT_TANS_OFF_REMAINING + 4, 0);
    cnt_put_u64(body + CNT_TANS_OFF_RETRY, ans->retry_after_ns);
    return CNT_THROTTLE_RESPONSE_SIZE;
}

/* Writes a 32-byte tenant view at p. */
static void put_tenant_view(uint8_t *p, const cnt_tenant_view *v)
{
    cnt_put_u32(p + CNT_TVIEW_OFF_RESERVED, v->reserved);
    cnt_put_u32(p + CNT_TVIEW_OFF_HARD, v->hard_limit);
    cnt_put_u32(p + CNT_TVIEW_OFF_USED, v->used);
    /* The flags' byte and three zero bytes after it. */
    cnt_put_u32(p + CNT_TVIEW_OFF_FLAGS, (uint32_t)v->flags << 24);
    cnt_put_u64(p + CNT_TVIEW_OFF_THROTTLED, v->throttled);
    cnt_put_u64(p + CNT_TVIEW_OFF_UNITS, v->units);
}

/* Writes a status-0 Tenant_show answer. */
size_t cnt_encode_tenant_view(uint8_t *out, uint32_t opaque,
                              const cnt_tenant_view *view)
{
    cnt_encode_response_header(out, CNT_OP_TENANT_SHOW, CNT_STATUS_OK,
                               CNT_TENANT_VIEW_SIZE, opaque);
    put_tenant_view(out + CNT_HEADER_SIZE, view);
    return CNT_TENANT_VIEW_RESPONSE_SIZE;
}

/* Writes one Tenant_list record response (opcode 0x43, status 0). */
size_t cnt_encode_tenant_record(uint8_t *out, uint32_t opaque,
                                const cnt_tenant_view *view,
                                const uint8_t *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_TENANT_LIST, CNT_STATUS_OK,
                               CNT_TREC_FIXED + (uint32_t)name_len, opaque);
    put_tenant_view(body, view);
    cnt_put_u16(body + CNT_TREC_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_TREC_FIXED, name, name_len);
    return CNT_TENANT_RECORD_SIZE(name_len);
}

/* Writes a status-0 Node_show answer. */
size_t cnt_encode_node_view(uint8_t *out, uint32_t opaque,
                            const cnt_node_view *view)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_NODE_SHOW, CNT_STATUS_OK,
                               CNT_NODE_VIEW_SIZE, opaque);
    cnt_put_u32(body + CNT_NVIEW_OFF_CAPACITY, view->capacity);
    cnt_put_u32(body + CNT_NVIEW_OFF_USED, view->used);
    cnt_put_u32(body + CNT_NVIEW_OFF_POOL, view->pool);
    cnt_put_u32(body + CNT_NVIEW_OFF_POOL_USED, view->pool_used);
    cnt_put_u32(body + CNT_NVIEW_OFF_RESERVED, view->reserved_sum);
    cnt_put_u32(body + CNT_NVIEW_OFF_TENANTS, view->tenants);
    cnt_put_u64(body + CNT_NVIEW_OFF_THROTTLED, view->throttled);
    return CNT_NODE_VIEW_RESPONSE_SIZE;
}

/* Clamps a string length to what a u16 length field can carry. */
static uint16_t stats_len(const char *s)
{
    size_t n = strlen(s);

    return n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
}

/* Writes one Stats pair and returns its size (only the size if out is
 * NULL). Longer names or values are cut at 65535 bytes, the most a u16
 * length can say; the server's own items are far shorter. */
size_t cnt_encode_stats_pair(uint8_t *out, const char *name,
                             const char *value)
{
    uint16_t nlen = stats_len(name);
    uint16_t vlen = stats_len(value);

    if (out != NULL) {
        cnt_put_u16(out, nlen);
        cnt_put_u16(out + 2, vlen);
        memcpy(out + CNT_STATS_PAIR_FIXED, name, nlen);
        memcpy(out + CNT_STATS_PAIR_FIXED + nlen, value, vlen);
    }
    return CNT_STATS_PAIR_FIXED + (size_t)nlen + vlen;
}

/* ---- Decoder and body parsers ---- */

/* Tells whether b is a magic byte a server may send. */
static bool response_magic_ok(uint8_t b)
{
    return b == CNT_MAGIC_RESPONSE || b == CNT_MAGIC_NOTICE;
}

/* Returns the total size of the response at the front of buf. */
uint64_t cnt_response_size(const uint8_t *buf, size_t len)
{
    if (len < CNT_HEADER_SIZE)
        return CNT_HEADER_SIZE;
    return (uint64_t)CNT_HEADER_SIZE + cnt_get_u32(buf + CNT_OFF_BODYLEN);
}

/* Decodes the response at the front of buf[0..len). */
cnt_decode_result cnt_response_decode(const uint8_t *buf, size_t len,
                                      cnt_response *res)
{
    uint64_t size;

    /* Judge the magic on its first byte: a client reading garbage learns
     * it at once instead of waiting for a header that may never come. */
    if (len >= 1 && !response_magic_ok(buf[CNT_OFF_MAGIC]))
        return CNT_DECODE_CLOSE;
    size = cnt_response_size(buf, len);
    /* Compared in 64 bits: a declared 4 GiB body only means "need more",
     * it is never used to size anything here. */
    if (len < CNT_HEADER_SIZE || (uint64_t)len < size)
        return CNT_DECODE_NEED_MORE;

    res->magic = buf[CNT_OFF_MAGIC];
    res->opcode = buf[CNT_OFF_OPCODE];
    res->status = buf[CNT_OFF_STATUS];
    res->body_len = cnt_get_u32(buf + CNT_OFF_BODYLEN);
    res->opaque = cnt_get_u32(buf + CNT_OFF_OPAQUE);
    res->body = buf + CNT_HEADER_SIZE;
    res->size = (size_t)size;
    return CNT_DECODE_OK;
}

/* Tells whether res is an event rather than an answer. */
bool cnt_response_is_event(const cnt_response *res)
{
    return res->magic == CNT_MAGIC_NOTICE;
}

/* Tells whether res is a status-0 answer (not an event) to opcode with at
 * least min body bytes. */
static bool answer_ok(const cnt_response *res, uint8_t opcode, uint32_t min)
{
    return res->magic == CNT_MAGIC_RESPONSE && res->opcode == opcode &&
           res->status == CNT_STATUS_OK && res->body_len >= min;
}

/* Finds a name whose u16 length is at fixed - 2 and whose bytes start at
 * fixed; false if it runs past the body. */
static bool body_name(const cnt_response *res, uint32_t fixed,
                      const uint8_t **name, uint16_t *name_len)
{
    uint16_t n = cnt_get_u16(res->body + fixed - 2);

    if ((uint64_t)fixed + n > res->body_len)
        return false;
    *name = res->body + fixed;
    *name_len = n;
    return true;
}

/* Parses a Dump record body; false if res is not a well-formed record. */
bool cnt_dump_record_parse(const cnt_response *res, cnt_dump_record *rec)
{
    uint16_t name_len;

    if (res->opcode != CNT_OP_DUMP || res->status != CNT_STATUS_OK ||
        res->body_len < CNT_DUMP_FIXED)
        return false;
    name_len = cnt_get_u16(res->body + CNT_DUMP_OFF_NAMELEN);
    if ((uint64_t)CNT_DUMP_FIXED + name_len > res->body_len)
        return false;
    rec->current = cnt_get_u32(res->body + CNT_DUMP_OFF_CURRENT);
    rec->max = cnt_get_u32(res->body + CNT_DUMP_OFF_MAX);
    rec->name_len = name_len;
    rec->name = res->body + CNT_DUMP_FIXED;
    return true;
}

/* Tells whether res is the empty response that ends a Dump series. */
bool cnt_response_is_dump_end(const cnt_response *res)
{
    return res->opcode == CNT_OP_DUMP && res->status == CNT_STATUS_OK &&
           res->body_len == 0;
}

/* Iterates the Stats pairs of res from *pos. */
bool cnt_stats_next(const cnt_response *res, size_t *pos,
                    const char **name, uint16_t *name_len,
                    const char **value, uint16_t *value_len)
{
    const uint8_t *p;
    uint16_t nlen, vlen;

    if (*pos > res->body_len ||
        res->body_len - *pos < CNT_STATS_PAIR_FIXED)
        return false;
    p = res->body + *pos;
    nlen = cnt_get_u16(p);
    vlen = cnt_get_u16(p + 2);
    if (res->body_len - *pos - CNT_STATS_PAIR_FIXED < (size_t)nlen + vlen)
        return false;
    *name = (const char *)p + CNT_STATS_PAIR_FIXED;
    *name_len = nlen;
    *value = *name + nlen;
    *value_len = vlen;
    *pos += CNT_STATS_PAIR_FIXED + (size_t)nlen + vlen;
    return true;
}

/* Parses a Wait_acquire answer; false if res is not a well-formed one. */
bool cnt_parse_wait_answer(const cnt_response *res, cnt_wait_answer *ans)
{
    uint8_t state;

    if (!answer_ok(res, CNT_OP_WAIT_ACQUIRE, CNT_WANS_FIXED))
        return false;
    state = res->body[CNT_WANS_OFF_STATE];
    if (state != CNT_WAIT_GRANTED && state != CNT_WAIT_QUEUED)
        return false;
    ans->state = state;
    ans->position = cnt_get_u32(res->body + CNT_WANS_OFF_POSITION);
    ans->lease_id = cnt_get_u64(res->body + CNT_WANS_OFF_LEASE_ID);
    ans->consumption = cnt_get_u32(res->body + CNT_WANS_OFF_CONSUMPTION);
    return true;
}

/* Parses a Renew answer's lease id. */
bool cnt_parse_renew_answer(const cnt_response *res, uint64_t *lease_id)
{
    if (!answer_ok(res, CNT_OP_RENEW, CNT_RENEW_ANS_FIXED))
        return false;
    *lease_id = cnt_get_u64(res->body);
    return true;
}

/* Parses a Wait_release answer's resources returned. */
bool cnt_parse_wait_release_answer(const cnt_response *res,
                                   uint32_t *resources)
{
    if (!answer_ok(res, CNT_OP_WAIT_RELEASE, 4))
        return false;
    *resources = cnt_get_u32(res->body);
    return true;
}

/* Parses a Queues record body; false if res is not a well-formed record. */
bool cnt_parse_queues_record(const cnt_response *res, cnt_queues_record *rec)
{
    const uint8_t *name;
    uint16_t name_len;

    if (!answer_ok(res, CNT_OP_QUEUES, CNT_QUEUES_FIXED) ||
        !body_name(res, CNT_QUEUES_FIXED, &name, &name_len))
        return false;
    rec->consumption = cnt_get_u32(res->body + CNT_QUEUES_OFF_CONSUMPTION);
    rec->queue_len = cnt_get_u32(res->body + CNT_QUEUES_OFF_LENGTH);
    rec->name = name;
    rec->name_len = name_len;
    return true;
}

/* Judges the first bytes read; see response.h. */
bool cnt_response_is_text(const uint8_t *buf, size_t len)
{
    if (len == 0 || buf[0] < 'A' || buf[0] > 'Z')
        return false;
    if (len > 32)
        len = 32;
    for (size_t i = 1; i < len; i++) {
        if (buf[i] == '\n')
            return true;    /* what follows the first line is not judged */
        if ((buf[i] < 0x20 || buf[i] > 0x7e) && buf[i] != '\r')
            return false;
    }
    return true;
}

/* Tells whether res is the empty answer that ends a Queues series. */
bool cnt_response_is_queues_end(const cnt_response *res)
{
    return answer_ok(res, CNT_OP_QUEUES, 0) && res->body_len == 0;
}

/* Parses a Busiest record; see response.h. */
bool cnt_parse_busy_record(const cnt_response *res, cnt_busy_record *rec)
{
    const uint8_t *name;
    uint16_t name_len;

    if (!answer_ok(res, CNT_OP_BUSIEST, CNT_BUSY_FIXED) ||
        !body_name(res, CNT_BUSY_FIXED, &name, &name_len))
        return false;
    rec->checks = cnt_get_u32(res->body + CNT_BUSY_OFF_CHECKS);
    rec->kind = res->body[CNT_BUSY_OFF_KIND];
    rec->name = name;
    rec->name_len = name_len;
    return true;
}

/* Tells whether res ends a Busiest series. */
bool cnt_response_is_busiest_end(const cnt_response *res)
{
    return answer_ok(res, CNT_OP_BUSIEST, 0) && res->body_len == 0;
}

/* Parses an event; false if res is not a well-formed event. */
bool cnt_parse_event(const cnt_response *res, cnt_event_packet *ev)
{
    const uint8_t *name;
    uint16_t name_len;

    if (res->magic != CNT_MAGIC_NOTICE || res->status != CNT_STATUS_OK ||
        res->body_len < CNT_EVENT_FIXED ||
        !body_name(res, CNT_EVENT_FIXED, &name, &name_len))
        return false;
    ev->code = res->opcode;
    ev->lease_id = cnt_get_u64(res->body + CNT_EVENT_OFF_LEASE_ID);
    ev->value = cnt_get_u32(res->body + CNT_EVENT_OFF_VALUE);
    ev->name = name;
    ev->name_len = name_len;
    return true;
}

/* Parses a Ttl_query or Ttl_update answer. */
bool cnt_parse_ttl_view(const cnt_response *res, cnt_ttl_answer *view)
{
    uint8_t unit;

    if (!answer_ok(res, CNT_OP_TTL_QUERY, CNT_TTL_VIEW_SIZE) &&
        !answer_ok(res, CNT_OP_TTL_UPDATE, CNT_TTL_VIEW_SIZE))
        return false;
    unit = res->body[CNT_TTLV_OFF_UNIT];
    if (unit > CNT_UNIT_MAX)
        return false;
    view->quota = cnt_get_u64(res->body + CNT_TTLV_OFF_QUOTA);
    view->ttl_left = cnt_get_u64(res->body + CNT_TTLV_OFF_TTL);
    view->unit = unit;
    return true;
}

/* Reads one 32-byte check answer at p; false if its state is unknown. */
static bool get_check_result(const uint8_t *p, cnt_check_result *r)
{
    uint8_t state = p[CNT_CANS_OFF_STATE];

    if (state > CNT_CHECK_NEVER)
        return false;
    r->state = state;
    r->limit = cnt_get_u32(p + CNT_CANS_OFF_LIMIT);
    r->remaining = cnt_get_u32(p + CNT_CANS_OFF_REMAINING);
    r->used = cnt_get_u32(p + CNT_CANS_OFF_USED);
    r->retry_after_ns = cnt_get_u64(p + CNT_CANS_OFF_RETRY);
    r->reset_after_ns = cnt_get_u64(p + CNT_CANS_OFF_RESET);
    return true;
}

/* Parses a Window_check or Gcra_check answer. */
bool cnt_parse_check_answer(const cnt_response *res,
                            cnt_check_result *result)
{
    cnt_check_result r;

    if (!answer_ok(res, CNT_OP_WINDOW_CHECK, CNT_CHECK_ANSWER_SIZE) &&
        !answer_ok(res, CNT_OP_GCRA_CHECK, CNT_CHECK_ANSWER_SIZE))
        return false;
    if (!get_check_result(res->body, &r))
        return false;
    *result = r;
    return true;
}

/* Parses a Multi_check answer, its items' states included. */
bool cnt_parse_multi_answer(const cnt_response *res, cnt_multi_answer *ans)
{
    uint8_t overall, count;
    cnt_check_result r;

    if (!answer_ok(res, CNT_OP_MULTI_CHECK, CNT_MANS_FIXED))
        return false;
    overall = res->body[CNT_MANS_OFF_OVERALL];
    count = res->body[CNT_MANS_OFF_COUNT];
    if (overall > CNT_MULTI_DENIED || count == 0 || count > CNT_MULTI_MAX ||
        res->body_len < CNT_MULTI_ANSWER_SIZE(count) - CNT_HEADER_SIZE)
        return false;
    for (uint8_t i = 0; i < count; i++)
        if (!get_check_result(res->body + CNT_MANS_FIXED +
                              (size_t)i * CNT_CHECK_ANSWER_SIZE, &r))
            return false;
    ans->overall = overall;
    ans->count = count;
    ans->items = res->body + CNT_MANS_FIXED;
    return true;
}

/* Reads item i of a parsed Multi_check answer. */
bool cnt_multi_answer_item(const cnt_multi_answer *ans, uint8_t i,
                           cnt_check_result *result)
{
    if (i >= ans->count)
        return false;
    return get_check_result(ans->items + (size_t)i * CNT_CHECK_ANSWER_SIZE,
                            result);
}

/* Parses a Throttle answer. */
bool cnt_parse_throttle_answer(const cnt_response *res,
                               cnt_throttle_answer *ans)
{
    uint8_t state, reason;

    if (!answer_ok(res, CNT_OP_THROTTLE, CNT_THROTTLE_ANSWER_SIZE))
        return false;
    state = res->body[CNT_TANS_OFF_STATE];
    reason = res->body[CNT_TANS_OFF_REASON];
    if (state > CNT_TSTATE_THROTTLED || reason > CNT_TREASON_MAX)
        return false;
    ans->state = state;
    ans->reason = reason;
    ans->used = cnt_get_u32(res->body + CNT_TANS_OFF_USED);
    ans->remaining = cnt_get_u32(res->body + CNT_TANS_OFF_REMAINING);
    ans->retry_after_ns = cnt_get_u64(res->body + CNT_TANS_OFF_RETRY);
    return true;
}

/* Reads a 32-byte tenant view at p. */
static void get_tenant_view(const uint8_t *p, cnt_tenant_view *v)
{
    v->reserved = cnt_get_u32(p + CNT_TVIEW_OFF_RESERVED);
    v->hard_limit = cnt_get_u32(p + CNT_TVIEW_OFF_HARD);
    v->used = cnt_get_u32(p + CNT_TVIEW_OFF_USED);
    v->flags = p[CNT_TVIEW_OFF_FLAGS];
    v->throttled = cnt_get_u64(p + CNT_TVIEW_OFF_THROTTLED);
    v->units = cnt_get_u64(p + CNT_TVIEW_OFF_UNITS);
}

/* Parses a Tenant_show answer. */
bool cnt_parse_tenant_view(const cnt_response *res, cnt_tenant_view *view)
{
    if (!answer_ok(res, CNT_OP_TENANT_SHOW, CNT_TENANT_VIEW_SIZE))
        return false;
    get_tenant_view(res->body, view);
    return true;
}

/* Parses a Tenant_list record; false if res is not a well-formed one. */
bool cnt_parse_tenant_record(const cnt_response *res, cnt_tenant_record *rec)
{
    const uint8_t *name;
    uint16_t name_len;

    if (!answer_ok(res, CNT_OP_TENANT_LIST, CNT_TREC_FIXED) ||
        !body_name(res, CNT_TREC_FIXED, &name, &name_len))
        return false;
    get_tenant_view(res->body, &rec->view);
    rec->name = name;
    rec->name_len = name_len;
    return true;
}

/* Tells whether res is the empty answer that ends a Tenant_list series. */
bool cnt_response_is_tenant_list_end(const cnt_response *res)
{
    return answer_ok(res, CNT_OP_TENANT_LIST, 0) && res->body_len == 0;
}

/* Parses a Node_show answer. */
bool cnt_parse_node_view(const cnt_response *res, cnt_node_view *view)
{
    const uint8_t *p = res->body;

    if (!answer_ok(res, CNT_OP_NODE_SHOW, CNT_NODE_VIEW_SIZE))
        return false;
    view->capacity = cnt_get_u32(p + CNT_NVIEW_OFF_CAPACITY);
    view->used = cnt_get_u32(p + CNT_NVIEW_OFF_USED);
    view->pool = cnt_get_u32(p + CNT_NVIEW_OFF_POOL);
    view->pool_used = cnt_get_u32(p + CNT_NVIEW_OFF_POOL_USED);
    view->reserved_sum = cnt_get_u32(p + CNT_NVIEW_OFF_RESERVED);
    view->tenants = cnt_get_u32(p + CNT_NVIEW_OFF_TENANTS);
    view->throttled = cnt_get_u64(p + CNT_NVIEW_OFF_THROTTLED);
    return true;
}

/* Writes one Lease_list record response (opcode 0x24, status 0). */
size_t cnt_encode_lease_record(uint8_t *out, uint32_t opaque,
                               uint32_t left_ms, uint64_t lease_id,
                               uint32_t resources, const uint8_t *name,
                               uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_LEASE_LIST, CNT_STATUS_OK,
                               CNT_LREC_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_LREC_OFF_LEFT, left_ms);
    cnt_put_u64(body + CNT_LREC_OFF_LEASE_ID, lease_id);
    cnt_put_u32(body + CNT_LREC_OFF_RESOURCES, resources);
    cnt_put_u16(body + CNT_LREC_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_LREC_FIXED, name, name_len);
    return CNT_LEASE_RECORD_SIZE(name_len);
}

/* Parses a Lease_list record body. */
bool cnt_parse_lease_record(const cnt_response *res, cnt_lease_record *rec)
{
    const uint8_t *name;
    uint16_t name_len;

    if (!answer_ok(res, CNT_OP_LEASE_LIST, CNT_LREC_FIXED) ||
        !body_name(res, CNT_LREC_FIXED, &name, &name_len))
        return false;
    rec->left_ms = cnt_get_u32(res->body + CNT_LREC_OFF_LEFT);
    rec->lease_id = cnt_get_u64(res->body + CNT_LREC_OFF_LEASE_ID);
    rec->resources = cnt_get_u32(res->body + CNT_LREC_OFF_RESOURCES);
    rec->name = name;
    rec->name_len = name_len;
    return true;
}

/* Tells whether res ends a Lease_list series. */
bool cnt_response_is_lease_list_end(const cnt_response *res)
{
    return answer_ok(res, CNT_OP_LEASE_LIST, 0) && res->body_len == 0;
}
