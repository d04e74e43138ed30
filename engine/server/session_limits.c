/* session_limits.c: the session's answers to the rate-limit opcodes: TTL
 * counters (insert, query, update, purge), the window and GCRA checks and
 * the all-or-nothing multi-check. Each turns the decoded request into a
 * call of the limits core (engine/core/limits.h) and its result into one
 * answer; the decoder has refused malformed bodies already, and the core
 * checks again what it relies on. */
#include "config.h"

#include "engine/server/session_int.h"

#include "engine/core/limits.h"
#include "protocol/response.h"

/* Appends the 17-byte view of a TTL counter. */
static void put_ttl_view(cnt_session *s, const cnt_request *req,
                         const cnt_ttl_answer *v)
{
    uint8_t *p = cnt_session_reserve(s, CNT_TTL_VIEW_RESPONSE_SIZE);

    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_ttl_view(p, req->opcode, req->opaque,
                                              v));
}

/* Ttl_insert: a new TTL counter; an empty answer, or why not. */
void cnt_session_ttl_insert(cnt_session *s, const cnt_request *req)
{
    cnt_status st = cnt_ttl_insert(s->env->limits, req->name, req->name_len,
                                   req->quota, req->ttl, req->unit);
    if (st == CNT_STATUS_OK)
        cnt_session_put_empty(s, req->opcode, req->opaque);
    else
        cnt_session_put_error(s, req->opcode, st, req->opaque);
}

/* Ttl_query: the counter's quota and time left. */
void cnt_session_ttl_query(cnt_session *s, const cnt_request *req)
{
    cnt_ttl_answer v;
    cnt_status st = cnt_ttl_query(s->env->limits, req->name, req->name_len,
                                  &v);
    if (st == CNT_STATUS_OK)
        put_ttl_view(s, req, &v);
    else
        cnt_session_put_error(s, req->opcode, st, req->opaque);
}

/* Ttl_update: changes the quota or the time left; answers the result. */
void cnt_session_ttl_update(cnt_session *s, const cnt_request *req)
{
    cnt_ttl_answer v;
    cnt_status st = cnt_ttl_update(s->env->limits, req->name, req->name_len,
                                   req->attribute, req->change, req->unit,
                                   req->value, &v);
    if (st == CNT_STATUS_OK)
        put_ttl_view(s, req, &v);
    else
        cnt_session_put_error(s, req->opcode, st, req->opaque);
}

/* Ttl_purge: removes the counter. */
void cnt_session_ttl_purge(cnt_session *s, const cnt_request *req)
{
    cnt_status st = cnt_ttl_purge(s->env->limits, req->name, req->name_len);
    if (st == CNT_STATUS_OK)
        cnt_session_put_empty(s, req->opcode, req->opaque);
    else
        cnt_session_put_error(s, req->opcode, st, req->opaque);
}

/* Window_check and Gcra_check: allowed, limited or never, with the
 * figures. */
void cnt_session_check(cnt_session *s, const cnt_request *req)
{
    cnt_check_request c;
    cnt_check_result a;
    cnt_status st = cnt_request_check_args(req, &c)
        ? cnt_limits_check(s->env->limits, &c, &a) : CNT_STATUS_INVALID;

    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_CHECK_RESPONSE_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out, cnt_encode_check_answer(p, req->opcode,
                                                           req->opaque, &a));
}

/* Multi_check: every item judged, all charged or none; the overall state
 * and each item's answer. */
void cnt_session_multi_check(cnt_session *s, const cnt_request *req)
{
    cnt_check_request items[CNT_MULTI_MAX];
    cnt_check_result answers[CNT_MULTI_MAX];
    size_t n = 0, pos = 0;
    uint8_t overall = 0;

    while (n < CNT_MULTI_MAX && cnt_multi_item_next(req, &pos, &items[n]))
        n++;
    cnt_status st = n == req->item_count
        ? cnt_limits_multi(s->env->limits, items, n,
                           (req->flags & CNT_CHECK_FLAG_PEEK) != 0, answers,
                           &overall)
        : CNT_STATUS_INVALID;
    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_MULTI_ANSWER_SIZE(n));
    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_multi_answer(p, req->opaque, overall,
                                                  answers, (uint8_t)n));
}

_Static_assert(CNT_LIMITS_TTL == CNT_BUSY_KIND_TTL &&
                   CNT_LIMITS_WINDOW == CNT_BUSY_KIND_WINDOW &&
                   CNT_LIMITS_GCRA == CNT_BUSY_KIND_GCRA,
               "the wire's kinds are the core's");
_Static_assert(CNT_LIMITS_BUSIEST_MAX == CNT_BUSIEST_MAX,
               "the wire's bound is the core's");

/* What one Busiest costs of its connection's turn budget besides its
 * answer: a listing copies up to CNT_LIMITS_BUSIEST_MAX names out of the
 * shared cache under its lock, and the first of a second computes it
 * over every stripe; counted as this many bytes of output, a turn of
 * 64 KiB answers at most 16 of them. */
#define SESSION_BUSIEST_COST (4u * 1024)

/* Busiest: the names with the most checks in the last whole second,
 * busiest first, one packet each, then an empty one. The listing is
 * taken whole before anything is written, so the answer is at most
 * CNT_BUSIEST_MAX records (each name at most 65535 bytes). */
void cnt_session_busiest(cnt_session *s, const cnt_request *req)
{
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found = 0;

    cnt_outbuf_spend(&s->out, SESSION_BUSIEST_COST);

    if (!cnt_limits_busiest(s->env->limits, req->count, v, &found)) {
        cnt_session_put_error(s, req->opcode, CNT_STATUS_OUT_OF_MEMORY,
                              req->opaque);
        return;
    }
    bool ok = true;
    for (size_t i = 0; i < found && ok; i++) {
        uint8_t *p =
            cnt_session_reserve(s, CNT_BUSY_RECORD_SIZE(v[i].name_len));
        ok = p != NULL;
        if (ok)
            cnt_outbuf_commit(&s->out,
                              cnt_encode_busy_record(p, req->opaque,
                                                     v[i].checks, v[i].kind,
                                                     v[i].name,
                                                     v[i].name_len));
    }
    cnt_limits_busiest_free(v, found);
    if (ok)
        cnt_session_put_empty(s, req->opcode, req->opaque);
}
