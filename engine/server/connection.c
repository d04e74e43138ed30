/* connection.c: the request loop of one counter-protocol connection: read
 * once, decode every complete request, answer each in order into one output
 * buffer, send the batch with one call; back-pressure by a watermark. */
#include "config.h"

#include "engine/server/connection.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol/decode.h"
#include "protocol/encode.h"

/* Rounds of produce-and-send per callback before yielding to the other
 * connections of the worker (fairness under pipelined floods). */
#define CNT_CONN_ROUNDS 4
/* Most answer bytes one callback produces for its connection before
 * yielding to the worker's other connections. A read brings at most
 * CNT_CONN_IN_INITIAL bytes of ordinary requests, whose answers fit well
 * within it; what it cuts into slices is a Dump, so that a hundred
 * clients dumping a large table delay the others by one slice each. */
#define CNT_CONN_TURN_BYTES (64u * 1024)
/* Requests decoded (and their table memory prefetched) ahead of answering. */
#define CNT_CONN_AHEAD 32

/* A request decoded ahead: where it starts in the input, and its place in
 * the table when it names a counter. */
typedef struct conn_ahead {
    size_t at;
    cnt_request req;
    bool placed;
    cnt_table_place place;
} conn_ahead;

/* Makes room for n more bytes at the end of the output; NULL (and the
 * connection marked failed) when memory is short. */
static uint8_t *conn_out_reserve(cnt_connection *c, size_t n)
{
    if (c->out_cap - c->out_len >= n)
        return c->out + c->out_len;
    if (c->out_sent > 0) {
        /* Drop what the socket already took before growing. */
        memmove(c->out, c->out + c->out_sent, c->out_len - c->out_sent);
        c->out_len -= c->out_sent;
        c->out_sent = 0;
        if (c->out_cap - c->out_len >= n)
            return c->out + c->out_len;
    }
    size_t cap = c->out_cap;
    while (cap - c->out_len < n)
        cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (p == NULL) {
        c->failed = true;
        return NULL;
    }
    c->out = p;
    c->out_cap = cap;
    return c->out + c->out_len;
}

/* Appends an error answer with the reference's text. */
static void conn_answer_error(cnt_connection *c, uint8_t opcode,
                              cnt_status status, uint32_t opaque)
{
    uint8_t *p = conn_out_reserve(c, CNT_ERROR_RESPONSE_MAX);
    if (p != NULL)
        c->out_len += cnt_encode_error(p, opcode, status, opaque);
}

/* Appends a status-0 answer with an empty body. */
static void conn_answer_empty(cnt_connection *c, uint8_t opcode,
                              uint32_t opaque)
{
    uint8_t *p = conn_out_reserve(c, CNT_HEADER_SIZE);
    if (p != NULL)
        c->out_len += cnt_encode_empty(p, opcode, opaque);
}

/* Appends a status-0 answer whose body is one u32. */
static void conn_answer_u32(cnt_connection *c, uint8_t opcode,
                            uint32_t opaque, uint32_t value)
{
    uint8_t *p = conn_out_reserve(c, CNT_HEADER_SIZE + 4);
    if (p != NULL)
        c->out_len += cnt_encode_u32(p, opcode, opaque, value);
}

/* Stats item callback: appends one name/value pair. */
static void conn_stats_item(void *ctx, const char *name, const char *value)
{
    cnt_connection *c = ctx;
    if (c->failed)
        return;
    uint8_t *p = conn_out_reserve(c, cnt_encode_stats_pair(NULL, name, value));
    if (p != NULL)
        c->out_len += cnt_encode_stats_pair(p, name, value);
}

/* Appends the Stats answer. The header goes in last: the figures change
 * while we read them, so the body length is only known afterwards. */
static void conn_answer_stats(cnt_connection *c, uint32_t opaque)
{
    if (conn_out_reserve(c, CNT_HEADER_SIZE) == NULL)
        return;
    size_t at = c->out_len - c->out_sent;
    c->out_len += CNT_HEADER_SIZE;
    cnt_stats_report(c->env->stats, c->env->table, c->env->gc,
                     conn_stats_item, c);
    if (c->failed)
        return;
    /* conn_out_reserve may have moved the buffer and dropped sent bytes:
     * at is relative to the unsent start, which it keeps. */
    uint8_t *h = c->out + c->out_sent + at;
    size_t body = c->out_len - (c->out_sent + at) - CNT_HEADER_SIZE;
    cnt_encode_response_header(h, CNT_OP_STATS, CNT_STATUS_OK,
                               (uint32_t)body, opaque);
}

/* Dump callback: appends one record; asks to stop at the watermark. */
static bool conn_dump_record(void *ctx, const uint8_t *name, uint16_t len,
                             uint32_t current, uint32_t max_in_window)
{
    cnt_connection *c = ctx;
    if (c->failed)
        return false;
    uint8_t *p = conn_out_reserve(c, CNT_DUMP_RECORD_SIZE(len));
    if (p == NULL)
        return false;
    c->out_len += cnt_encode_dump_record(p, c->dump_opaque, current,
                                         max_in_window, name, len);
    return c->out_len - c->out_sent < c->out_stop;
}

/* Emits Dump records until the output reaches the watermark or the table
 * ends (then the end marker); returns true when the Dump is finished. */
static bool conn_dump_step(cnt_connection *c)
{
    bool done = cnt_table_dump(c->env->table, &c->dump, conn_dump_record, c);
    if (c->failed || !done)
        return false;
    conn_answer_empty(c, CNT_OP_DUMP, c->dump_opaque);
    c->dumping = false;
    return true;
}

/* Whether a request of this opcode looks up a counter by name. */
static bool conn_touches_table(uint8_t opcode)
{
    return opcode == CNT_OP_GET || opcode == CNT_OP_ACQUIRE ||
           opcode == CNT_OP_RELEASE;
}

/* Answers one valid request; place is where its name lives, computed
 * ahead by conn_look_ahead, or NULL. */
static void conn_dispatch(cnt_connection *c, const cnt_request *req,
                          const cnt_table_place *place)
{
    cnt_table *t = c->env->table;
    cnt_table_place here;
    cnt_status st;
    uint32_t v = 0;

    if (place == NULL && conn_touches_table(req->opcode)) {
        cnt_table_place_of(t, req->name, req->name_len, &here);
        place = &here;
    }
    switch (req->opcode) {
    case CNT_OP_NOOP:
        conn_answer_empty(c, req->opcode, req->opaque);
        break;
    case CNT_OP_GET:
        st = cnt_table_get_at(t, place, req->name, req->name_len, &v);
        if (st == CNT_STATUS_OK)
            conn_answer_u32(c, req->opcode, req->opaque, v);
        else
            conn_answer_error(c, req->opcode, st, req->opaque);
        break;
    case CNT_OP_ACQUIRE:
        st = cnt_table_acquire_at(t, &c->holdings, place, req->name,
                                  req->name_len, req->resources,
                                  req->maximum);
        if (st == CNT_STATUS_OK)
            conn_answer_u32(c, req->opcode, req->opaque, req->resources);
        else
            conn_answer_error(c, req->opcode, st, req->opaque);
        break;
    case CNT_OP_RELEASE:
        st = cnt_table_release_at(t, &c->holdings, place, req->name,
                                  req->name_len, req->resources);
        if (st == CNT_STATUS_OK)
            conn_answer_empty(c, req->opcode, req->opaque);
        else
            conn_answer_error(c, req->opcode, st, req->opaque);
        break;
    case CNT_OP_STATS:
        conn_answer_stats(c, req->opaque);
        break;
    case CNT_OP_DUMP:
        c->dumping = true;
        c->dump = (cnt_dump_cursor){0};
        c->dump_opaque = req->opaque;
        break;
    default:
        /* The decoder only passes the opcodes above as valid requests. */
        conn_answer_error(c, req->opcode, CNT_STATUS_UNKNOWN_COMMAND,
                          req->opaque);
        break;
    }
}

/* Counts a request in the worker's slot under its opcode, if known (a
 * wrong magic is not counted). */
static void conn_count(cnt_connection *c, const cnt_request *req)
{
    if (req->magic == CNT_MAGIC_REQUEST)
        cnt_stats_count_command(c->env->slot, req->opcode);
}

/* Grows the input buffer so a request of size bytes fits; false when
 * memory is short. Never past CNT_REQUEST_MAX (the decoder's bound). */
static bool conn_in_grow(cnt_connection *c, uint64_t size)
{
    if (size <= c->in_cap)
        return true;
    if (size > CNT_REQUEST_MAX)
        size = CNT_REQUEST_MAX;
    uint8_t *p = realloc(c->in, (size_t)size);
    if (p == NULL) {
        c->failed = true;
        return false;
    }
    c->in = p;
    c->in_cap = (size_t)size;
    return true;
}

/* Decodes up to CNT_CONN_AHEAD whole requests from the front of the input
 * and starts loading the table memory each will touch: first every bucket
 * slot and stripe lock, then every bucket's first counter. With many
 * counters (more than the CPU caches hold) each request costs a few cache
 * misses; issued together, they overlap. Returns how many were decoded;
 * conn_produce then uses them instead of decoding again. */
static size_t conn_look_ahead(cnt_connection *c, conn_ahead *ahead)
{
    size_t n = 0, off = 0;
    if (c->skip > 0 || c->dumping)
        return 0;
    while (n < CNT_CONN_AHEAD && off < c->in_len) {
        conn_ahead *a = &ahead[n];
        if (cnt_request_decode(c->in + off, c->in_len - off, &a->req) !=
                CNT_DECODE_REQUEST ||
            a->req.size > c->in_len - off)
            break;
        a->at = off;
        a->placed = conn_touches_table(a->req.opcode);
        if (a->placed) {
            cnt_table_place_of(c->env->table, a->req.name, a->req.name_len,
                               &a->place);
            cnt_table_prefetch(c->env->table, &a->place, false);
        }
        off += (size_t)a->req.size;
        n++;
    }
    if (n > 1)
        for (size_t k = 0; k < n; k++)
            if (ahead[k].placed)
                cnt_table_prefetch(c->env->table, &ahead[k].place, true);
    return n;
}

/* Decodes and answers buffered requests (and continues a Dump) until the
 * output passes the watermark, budget bytes have been produced, the input
 * runs out, or framing is lost. Returns the bytes produced. */
static size_t conn_produce(cnt_connection *c, size_t budget)
{
    conn_ahead ahead[CNT_CONN_AHEAD];
    size_t nahead = conn_look_ahead(c, ahead), next = 0;
    size_t pos = 0;
    /* Nothing is sent in here, so the unsent bytes only grow. */
    size_t unsent0 = c->out_len - c->out_sent;
    c->out_stop = CNT_CONN_OUT_HIGH;
    if (unsent0 < CNT_CONN_OUT_HIGH && budget < CNT_CONN_OUT_HIGH - unsent0)
        c->out_stop = unsent0 + budget;
    c->more = false;
    while (!c->failed && !c->closing) {
        if (c->out_len - c->out_sent >= c->out_stop) {
            c->more = c->dumping || pos < c->in_len;
            break;
        }
        if (c->dumping) {
            if (!conn_dump_step(c))
                continue;   /* the watermark test above ends the round */
        }
        size_t avail = c->in_len - pos;
        if (c->skip > 0) {
            size_t d = c->skip < avail ? (size_t)c->skip : avail;
            pos += d;
            c->skip -= d;
            if (c->skip > 0)
                break;
            continue;
        }
        cnt_request req;
        const cnt_table_place *place = NULL;
        cnt_decode_result r;
        if (next < nahead && ahead[next].at == pos) {
            req = ahead[next].req;
            place = ahead[next].placed ? &ahead[next].place : NULL;
            r = CNT_DECODE_REQUEST;
            next++;
        } else {
            r = cnt_request_decode(c->in + pos, avail, &req);
        }
        if (r == CNT_DECODE_NEED_MORE) {
            conn_in_grow(c, req.size);
            break;
        }
        if (r == CNT_DECODE_CLOSE) {
            c->closing = true;
            cnt_log(c->env->log, CNT_LOG_WARNING,
                    "counter: connection %d: lost request framing (magic "
                    "0x%02x); closing", c->fd, c->in[pos]);
            break;
        }
        conn_count(c, &req);
        if (r == CNT_DECODE_ERROR)
            conn_answer_error(c, req.opcode, req.status, req.opaque);
        else
            conn_dispatch(c, &req, place);
        /* Bodies not needed (Noop/Stats/Dump, errors) may be longer than
         * what is buffered: skip the rest as it arrives, never store it. */
        size_t have = req.size < avail ? (size_t)req.size : avail;
        pos += have;
        c->skip = req.size - have;
    }
    if (pos > 0) {
        memmove(c->in, c->in + pos, c->in_len - pos);
        c->in_len -= pos;
    }
    return c->out_len - c->out_sent - unsent0;
}

/* Sends unsent output with one call; false on a fatal socket error. */
static bool conn_flush(cnt_connection *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_sent,
                         c->out_len - c->out_sent, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_sent += (size_t)n;
            break;      /* the rest, if any, waits for EV_WRITE */
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* A peer that went away is routine; anything else is not. */
        int e = errno;
        cnt_log(c->env->log,
                e == EPIPE || e == ECONNRESET ? CNT_LOG_DEBUG
                                              : CNT_LOG_WARNING,
                "counter: connection %d: send failed: %s", c->fd,
                strerror(e));
        return false;
    }
    if (c->out_sent == c->out_len)
        c->out_sent = c->out_len = 0;
    return true;
}

/* Adds or removes an event so its pending state matches want. */
static void conn_event_set(struct event *ev, bool *on, bool want)
{
    if (want == *on)
        return;
    if (want)
        event_add(ev, NULL);
    else
        event_del(ev);
    *on = want;
}

/* Gives memory back after a large request or a Dump, once idle. */
static void conn_shrink(cnt_connection *c)
{
    if (c->in_len == 0 && c->in_cap > CNT_CONN_IN_INITIAL) {
        uint8_t *p = realloc(c->in, CNT_CONN_IN_INITIAL);
        if (p != NULL) {
            c->in = p;
            c->in_cap = CNT_CONN_IN_INITIAL;
        }
    }
    if (c->out_len == 0 && c->out_cap > 4 * CNT_CONN_OUT_INITIAL) {
        uint8_t *p = realloc(c->out, CNT_CONN_OUT_INITIAL);
        if (p != NULL) {
            c->out = p;
            c->out_cap = CNT_CONN_OUT_INITIAL;
        }
    }
}

/* Answers what is buffered, sends, and chooses which events to wait for;
 * returns false when the connection must end now. */
static bool conn_work(cnt_connection *c)
{
    size_t spent = 0;
    for (int round = 0; round < CNT_CONN_ROUNDS; round++) {
        spent += conn_produce(c, CNT_CONN_TURN_BYTES - spent);
        if (c->failed) {
            cnt_log(c->env->log, CNT_LOG_WARNING,
                    "counter: connection %d: out of memory; closing", c->fd);
            return false;
        }
        if (!conn_flush(c))
            return false;
        if (c->out_len > 0 || !c->more || spent >= CNT_CONN_TURN_BYTES)
            break;
    }
    bool pending = c->out_len > 0;
    if (c->closing && !pending)
        return false;
    /* A client that shut its write side gets every answer, then we close. */
    if (c->eof && !pending && !c->more)
        return false;
    /* Read only while the output is below the watermark and no Dump or
     * backlog is waiting: unread bytes stay in the kernel (back-pressure). */
    bool want_read = !c->eof && !c->closing && !c->more &&
                     c->out_len - c->out_sent < CNT_CONN_OUT_HIGH;
    /* With work left and the socket drained, EV_WRITE fires at once: it
     * resumes us after the worker's other connections had their turn. */
    bool want_write = pending || c->more;
    conn_event_set(c->rev, &c->reading, want_read);
    conn_event_set(c->wev, &c->writing, want_write);
    if (!pending && !c->more)
        conn_shrink(c);
    return true;
}

/* Reads once into the input buffer; false when the connection must end. */
static bool conn_read(cnt_connection *c)
{
    if (c->in_len == c->in_cap) {
        /* Only a request bigger than the buffer gets here; the decoder
         * has already said how big, and conn_in_grow made room. Nothing
         * to read into means the decoder is waiting on output instead. */
        return true;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n > 0) {
        c->in_len += (size_t)n;
        return true;
    }
    if (n == 0) {
        c->eof = true;
        return true;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return true;
    cnt_log(c->env->log, errno == ECONNRESET ? CNT_LOG_DEBUG : CNT_LOG_WARNING,
            "counter: connection %d: recv failed: %s", c->fd,
            strerror(errno));
    return false;
}

/* libevent callback for both events of a connection. */
static void conn_on_event(evutil_socket_t fd, short what, void *arg)
{
    cnt_connection *c = arg;
    (void)fd;
    if ((what & EV_READ) && !conn_read(c)) {
        cnt_connection_free(c);
        return;
    }
    if (!conn_work(c))
        cnt_connection_free(c);
}

/* Takes over fd (non-blocking, connected) and starts reading; NULL when
 * memory is short (fd is then left open for the caller to close). */
cnt_connection *cnt_connection_new(const cnt_conn_env *env, int fd)
{
    cnt_connection *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->fd = fd;
    c->env = env;
    c->in = malloc(CNT_CONN_IN_INITIAL);
    c->out = malloc(CNT_CONN_OUT_INITIAL);
    c->rev = event_new(env->base, fd, EV_READ | EV_PERSIST, conn_on_event, c);
    c->wev = event_new(env->base, fd, EV_WRITE | EV_PERSIST, conn_on_event,
                       c);
    if (c->in == NULL || c->out == NULL || c->rev == NULL || c->wev == NULL ||
        event_add(c->rev, NULL) != 0) {
        if (c->rev != NULL)
            event_free(c->rev);
        if (c->wev != NULL)
            event_free(c->wev);
        free(c->in);
        free(c->out);
        free(c);
        return NULL;
    }
    c->reading = true;
    c->in_cap = CNT_CONN_IN_INITIAL;
    c->out_cap = CNT_CONN_OUT_INITIAL;
    cnt_holdings_init(&c->holdings);
    cnt_stats_add(&env->slot->curr_connections, 1);
    cnt_stats_add(&env->slot->total_connections, 1);
    cnt_log(env->log, CNT_LOG_DEBUG, "counter: connection %d opened", fd);
    return c;
}

/* Ends the connection: releases everything it holds, closes the socket,
 * calls env->on_close and frees it. */
void cnt_connection_free(cnt_connection *c)
{
    const cnt_conn_env *env = c->env;
    if (c->dumping)
        cnt_table_dump_cancel(env->table, &c->dump);
    cnt_table_release_all(env->table, &c->holdings);
    cnt_holdings_destroy(&c->holdings);
    event_free(c->rev);
    event_free(c->wev);
    close(c->fd);
    cnt_stats_add(&env->slot->curr_connections, -1);
    cnt_log(env->log, CNT_LOG_DEBUG, "counter: connection %d closed", c->fd);
    if (env->on_close != NULL)
        env->on_close(env->owner, c);
    free(c->in);
    free(c->out);
    free(c);
}
