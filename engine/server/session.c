/* session.c: answers a client's requests without touching a socket: decodes
 * a batch of buffered requests, prefetches the table memory they will use,
 * runs each through the handler its opcode's row names, and writes the
 * answers, Dump records and Stats into the output buffer in order. */
#include "config.h"

#include "engine/server/session.h"

#include <string.h>

#include "protocol/response.h"

/* Requests decoded (and their table memory prefetched) ahead of answering:
 * with many counters each request costs a few cache misses, and issued
 * together for a batch they overlap instead of queueing. */
#define CNT_SESSION_AHEAD 32

/* What the server does with one opcode: the handler that answers a valid
 * request. Whether the request names a counter (its place in the table is
 * then computed, and prefetched, before the handler runs) is not restated
 * here: the protocol's row decides it, and a valid request that names
 * one has a non-empty name (see session_names_counter). */
typedef struct session_handler {
    void (*handle)(cnt_session *s, const cnt_request *req,
                   const cnt_table_place *place);
} session_handler;

/* Whether a valid request names a counter: the decoder leaves the name
 * empty for opcodes whose row has none, and refuses an empty one. */
static inline bool session_names_counter(const cnt_request *req)
{
    return req->name_len != 0;
}

/* Marks the session failed: memory ran out for its output. */
static void session_out_of_memory(cnt_session *s)
{
    s->failed = true;
}

/* Appends an error answer with the reference's text. */
static void session_put_error(cnt_session *s, uint8_t opcode,
                              cnt_status status, uint32_t opaque)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_ERROR_RESPONSE_MAX);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_error(p, opcode, status, opaque));
}

/* Appends a status-0 answer with an empty body. */
static void session_put_empty(cnt_session *s, uint8_t opcode,
                              uint32_t opaque)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_empty(p, opcode, opaque));
}

/* Appends a status-0 answer whose body is one u32. */
static void session_put_u32(cnt_session *s, uint8_t opcode, uint32_t opaque,
                            uint32_t value)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE + 4);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_u32(p, opcode, opaque, value));
}

/* Noop: an empty answer. */
static void session_noop(cnt_session *s, const cnt_request *req,
                         const cnt_table_place *place)
{
    (void)place;
    session_put_empty(s, req->opcode, req->opaque);
}

/* Get: the counter's current consumption, or Not found. */
static void session_get(cnt_session *s, const cnt_request *req,
                        const cnt_table_place *place)
{
    uint32_t v = 0;
    cnt_status st = cnt_table_get_at(s->env->table, place, req->name,
                                     req->name_len, &v);
    if (st == CNT_STATUS_OK)
        session_put_u32(s, req->opcode, req->opaque, v);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Acquire: takes resources into the ledger; answers what it took. */
static void session_acquire(cnt_session *s, const cnt_request *req,
                            const cnt_table_place *place)
{
    cnt_status st = cnt_table_acquire_at(s->env->table, &s->holdings, place,
                                         req->name, req->name_len,
                                         req->resources, req->maximum);
    if (st == CNT_STATUS_OK)
        session_put_u32(s, req->opcode, req->opaque, req->resources);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Release: gives back resources this session's ledger holds. */
static void session_release(cnt_session *s, const cnt_request *req,
                            const cnt_table_place *place)
{
    cnt_status st = cnt_table_release_at(s->env->table, &s->holdings, place,
                                         req->name, req->name_len,
                                         req->resources);
    if (st == CNT_STATUS_OK)
        session_put_empty(s, req->opcode, req->opaque);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Stats item callback: appends one name/value pair. */
static void session_stats_item(void *ctx, const char *name, const char *value)
{
    cnt_session *s = ctx;
    if (s->failed)
        return;
    uint8_t *p = cnt_outbuf_reserve(&s->out,
                                    cnt_encode_stats_pair(NULL, name, value));
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_stats_pair(p, name, value));
}

/* Stats: every item as a pair. The header goes in last: the figures change
 * while we read them, so the body length is only known afterwards. */
static void session_stats(cnt_session *s, const cnt_request *req,
                          const cnt_table_place *place)
{
    (void)place;
    if (cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE) == NULL) {
        session_out_of_memory(s);
        return;
    }
    /* Counted from the first unsent byte: growing the buffer may move it
     * and drop sent bytes, but keeps this offset. */
    size_t at = cnt_outbuf_pending(&s->out);
    cnt_outbuf_commit(&s->out, CNT_HEADER_SIZE);
    cnt_stats_report(s->env->stats, s->env->table, s->env->gc,
                     session_stats_item, s);
    if (s->failed)
        return;
    size_t body = cnt_outbuf_pending(&s->out) - at - CNT_HEADER_SIZE;
    cnt_encode_response_header(cnt_outbuf_data(&s->out) + at, CNT_OP_STATS,
                               CNT_STATUS_OK, (uint32_t)body, req->opaque);
}

/* Dump: starts the series; session_dump_step writes it as output drains. */
static void session_dump(cnt_session *s, const cnt_request *req,
                         const cnt_table_place *place)
{
    (void)place;
    s->dumping = true;
    s->dump = (cnt_dump_cursor){0};
    s->dump_opaque = req->opaque;
}

/* The handler table: one row per opcode the server answers. An opcode
 * without a row is answered 0x81 (the decoder refuses those already). */
static const session_handler session_handlers[256] = {
    [CNT_OP_NOOP] = {session_noop},
    [CNT_OP_GET] = {session_get},
    [CNT_OP_ACQUIRE] = {session_acquire},
    [CNT_OP_RELEASE] = {session_release},
    [CNT_OP_STATS] = {session_stats},
    [CNT_OP_DUMP] = {session_dump},
};

/* Dump callback: appends one record; asks to stop once the output is
 * full (watermark or turn budget). */
static bool session_dump_record(void *ctx, const uint8_t *name, uint16_t len,
                                uint32_t current, uint32_t max_in_window)
{
    cnt_session *s = ctx;
    if (s->failed)
        return false;
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_DUMP_RECORD_SIZE(len));
    if (p == NULL) {
        session_out_of_memory(s);
        return false;
    }
    cnt_outbuf_commit(&s->out,
                      cnt_encode_dump_record(p, s->dump_opaque, current,
                                             max_in_window, name, len));
    return !cnt_outbuf_full(&s->out);
}

/* Emits Dump records until the output is full or the table ends (then the
 * end marker, and the Dump is over). Returns true when it stopped for
 * neither: it looked at its share of (empty) buckets, and the turn should
 * end so that the worker's other connections get theirs. */
static bool session_dump_step(cnt_session *s)
{
    bool done = cnt_table_dump(s->env->table, &s->dump, session_dump_record,
                               s);
    if (s->failed)
        return false;
    if (!done)
        return !cnt_outbuf_full(&s->out);
    session_put_empty(s, CNT_OP_DUMP, s->dump_opaque);
    s->dumping = false;
    return false;
}

/* Answers one request the decoder returned as a request or an error. */
void cnt_session_handle(cnt_session *s, cnt_decode_result r,
                        const cnt_request *req)
{
    /* Stats counts what the reference counts: requests with the request
     * magic, valid or not, under their opcode. */
    if (req->magic == CNT_MAGIC_REQUEST)
        cnt_stats_count_command(s->env->slot, req->opcode);
    const session_handler *h = &session_handlers[req->opcode];
    if (r != CNT_DECODE_OK || h->handle == NULL) {
        session_put_error(s, req->opcode,
                          r == CNT_DECODE_ERROR
                              ? req->status : CNT_STATUS_UNKNOWN_COMMAND,
                          req->opaque);
        return;
    }
    cnt_table_place place = {0};
    if (session_names_counter(req))
        cnt_table_place_of(s->env->table, req->name, req->name_len, &place);
    h->handle(s, req, &place);
}

/* A request decoded ahead: its fields, its row, and where its counter
 * lives when it names one. */
typedef struct session_ahead {
    cnt_request req;
    const session_handler *h;
    cnt_table_place place;
} session_ahead;

/* Decodes up to CNT_SESSION_AHEAD whole requests from the front of in,
 * starts loading the table memory each will touch (first every bucket slot
 * and stripe lock, then every bucket's first counter), then answers them
 * in order while the output has room. What stops the decoding (an
 * incomplete request, lost framing, a refused request or one whose unneeded
 * body is not all in) is dealt with last, from the same decoding. Returns
 * the bytes consumed. */
static size_t session_batch(cnt_session *s, const uint8_t *in, size_t len)
{
    session_ahead ahead[CNT_SESSION_AHEAD];
    cnt_table *t = s->env->table;
    cnt_decode_result r = CNT_DECODE_OK;
    size_t n = 0, off = 0;

    while (n < CNT_SESSION_AHEAD && off < len) {
        session_ahead *a = &ahead[n];
        r = cnt_request_decode(in + off, len - off, &a->req);
        if (r != CNT_DECODE_OK || a->req.size > len - off)
            break;
        a->h = &session_handlers[a->req.opcode];
        if (session_names_counter(&a->req)) {
            cnt_table_place_of(t, a->req.name, a->req.name_len, &a->place);
            cnt_table_prefetch(t, &a->place, false);
        }
        off += (size_t)a->req.size;
        n++;
    }
    /* ahead[n] holds the decoding that stopped the loop, if one did. */
    bool stopped = n < CNT_SESSION_AHEAD && off < len;
    if (n > 1)
        for (size_t k = 0; k < n; k++)
            if (session_names_counter(&ahead[k].req))
                cnt_table_prefetch(t, &ahead[k].place, true);

    size_t pos = 0;
    for (size_t k = 0; k < n; k++) {
        const session_ahead *a = &ahead[k];
        if (k > 0 && (s->failed || cnt_outbuf_full(&s->out)))
            return pos;
        cnt_stats_count_command(s->env->slot, a->req.opcode);
        if (a->h->handle != NULL)
            a->h->handle(s, &a->req, &a->place);
        else
            session_put_error(s, a->req.opcode, CNT_STATUS_UNKNOWN_COMMAND,
                              a->req.opaque);
        pos += (size_t)a->req.size;
        if (s->dumping)
            return pos;     /* its records come before the next answer */
    }
    if (!stopped || (n > 0 && (s->failed || cnt_outbuf_full(&s->out))))
        return pos;

    const cnt_request *req = &ahead[n].req;
    if (r == CNT_DECODE_NEED_MORE) {
        s->need = (size_t)req->size;
        return pos;
    }
    if (r == CNT_DECODE_CLOSE) {
        s->closing = true;
        return pos;
    }
    cnt_session_handle(s, r, req);
    /* Bodies not needed (Noop/Stats/Dump, refused requests) may be longer
     * than what is buffered: the rest is skipped as it arrives, never
     * stored. */
    size_t avail = len - pos;
    size_t have = req->size < avail ? (size_t)req->size : avail;
    s->skip = req->size - have;
    return pos + have;
}

/* Answers whole requests from in (continuing a Dump first) until the
 * input is used up or a stop reason is set; returns the bytes consumed. */
size_t cnt_session_feed(cnt_session *s, const uint8_t *in, size_t len)
{
    size_t pos = 0;
    s->more = false;
    s->need = 0;
    while (!s->failed && !s->closing && s->need == 0) {
        if (cnt_outbuf_full(&s->out)) {
            s->more = s->dumping || pos < len;
            break;
        }
        if (s->dumping) {
            if (session_dump_step(s)) {
                s->more = true;
                break;
            }
            continue;       /* the test above ends the round */
        }
        if (s->skip > 0) {
            size_t d = s->skip < len - pos ? (size_t)s->skip : len - pos;
            pos += d;
            s->skip -= d;
            if (s->skip > 0)
                break;
            continue;
        }
        if (pos == len)
            break;
        pos += session_batch(s, in + pos, len - pos);
        /* Input used up and no Dump to go on with: done, without another
         * round of checks (the common end of a feed). */
        if (pos == len && !s->dumping)
            break;
    }
    return pos;
}

/* Prepares a session; false when memory is short. */
bool cnt_session_init(cnt_session *s, const cnt_session_env *env)
{
    memset(s, 0, sizeof(*s));
    s->env = env;
    if (!cnt_outbuf_init(&s->out, CNT_OUTBUF_INITIAL))
        return false;
    cnt_holdings_init(&s->holdings);
    return true;
}

/* Ends the session: its Dump, its holdings, its memory. */
void cnt_session_end(cnt_session *s)
{
    if (s->dumping)
        cnt_table_dump_cancel(s->env->table, &s->dump);
    s->dumping = false;
    cnt_table_release_all(s->env->table, &s->holdings);
    cnt_holdings_destroy(&s->holdings);
    cnt_outbuf_destroy(&s->out);
}
