/* session_throttr.c: the Throttr front's side of a session: turns the
 * Throttr v5 requests buffered on a connection (protocol/throttr.h) into
 * calls of the same TTL functions of the limits core that the counter
 * port's opcodes 0x30-0x33 call, and their results into one answer each,
 * in request order, in the session's output. A Throttr key is a TTL
 * counter's name: both ports see one namespace. */
#include "config.h"

#include "engine/server/session_int.h"

#include "engine/core/limits.h"
#include "protocol/throttr.h"

/* Appends one status byte, counting a failure. */
static void put_status(cnt_session *s, bool ok)
{
    uint8_t *p = cnt_session_reserve(s, 1);

    if (p == NULL)
        return;
    cnt_outbuf_commit(&s->out, cnt_throttr_encode_status(p, ok));
    if (!ok)
        cnt_stats_add(&s->env->slot->throttr_failures, 1);
}

/* QUERY: the record's quota, TTL type and time left (in its unit, rounded
 * up by the core), or the failure byte when it is missing or a figure does
 * not fit the configured value size. */
static void throttr_query(cnt_session *s, const cnt_throttr_request *r)
{
    cnt_ttl_answer v;

    if (cnt_ttl_query(s->env->limits, r->key, r->key_len, &v) !=
        CNT_STATUS_OK) {
        put_status(s, false);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_THROTTR_ANSWER_MAX);
    if (p == NULL)
        return;
    size_t n = cnt_throttr_encode_query_answer(
        p, s->env->throttr_value_size, v.quota,
        cnt_throttr_type_of_unit(v.unit), v.ttl_left);
    cnt_outbuf_commit(&s->out, n);
    if (n == 1)
        cnt_stats_add(&s->env->slot->throttr_failures, 1);
}

/* Answers one framed request. */
static void throttr_handle(cnt_session *s, const cnt_throttr_request *r)
{
    cnt_limits *l = s->env->limits;
    cnt_ttl_answer v;
    cnt_status st = CNT_STATUS_INVALID;

    cnt_stats_add(&s->env->slot->throttr_requests[r->type - 1], 1);
    if (!r->valid || l == NULL) {
        put_status(s, false);
        return;
    }
    switch (r->type) {
    case CNT_THROTTR_INSERT:
        st = cnt_ttl_insert(l, r->key, r->key_len, r->quota, r->ttl,
                            (uint8_t)cnt_throttr_unit_of(r->ttl_type));
        break;
    case CNT_THROTTR_QUERY:
        throttr_query(s, r);
        return;
    case CNT_THROTTR_UPDATE:
        /* Attribute and change bytes are the core's constants. */
        st = cnt_ttl_update(l, r->key, r->key_len, r->attribute, r->change,
                            CNT_TTL_UNIT_RECORD, r->value, &v);
        break;
    case CNT_THROTTR_PURGE:
        st = cnt_ttl_purge(l, r->key, r->key_len);
        break;
    }
    put_status(s, st == CNT_STATUS_OK);
}

/* Feeds Throttr request bytes; the contract is cnt_session_feed's. */
size_t cnt_session_feed_throttr(cnt_session *s, const uint8_t *in,
                                size_t len)
{
    size_t pos = 0;

    s->more = false;
    s->need = 0;
    s->pause_ns = 0;
    while (!s->failed && !s->closing && pos < len) {
        if (cnt_outbuf_full(&s->out)) {
            s->more = true;
            break;
        }
        cnt_throttr_request r;
        size_t need = 0;
        cnt_throttr_decode_result d =
            cnt_throttr_decode(in + pos, len - pos,
                               s->env->throttr_value_size, &r, &need);
        if (d == CNT_THROTTR_NEED_MORE) {
            s->need = need;
            break;
        }
        /* Its connection's tenant pays first: over its share, the
         * request waits unconsumed for the next second. */
        if (d == CNT_THROTTR_OK &&
            !cnt_session_pay(s, r.type == CNT_THROTTR_QUERY
                                    ? CNT_COST_READ : CNT_COST_LIMIT,
                             false))
            break;
        if (d == CNT_THROTTR_BAD_FRAMING) {
            /* Nothing after an unknown type can be framed: the answers
             * before it go out, then the connection closes. */
            s->closing = true;
            cnt_stats_add(&s->env->slot->throttr_bad_framing, 1);
            break;
        }
        throttr_handle(s, &r);
        if (s->failed)
            break;
        pos += r.size;
    }
    return pos;
}
