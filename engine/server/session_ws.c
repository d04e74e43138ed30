/* session_ws.c: the WebSocket front's side of a session: the HTTP/1.1
 * upgrade of GET /quota (protocol/ws_quota.h parses it), then RFC 6455
 * frames through wslay's event API, whose callbacks read from the
 * connection's buffered input and write into the session's output (wslay
 * never sees the socket), and the quota API's JSON messages turned into the
 * seam's calls: quota_request is cnt_session_wait_acquire on the group the
 * key names, quota_release is cnt_session_wait_release, and the session's
 * events come back as quota_passed, quota_timeout, quota_expired and
 * quota_error. A browser and a binary-port client asking for one group wait
 * in one FIFO queue. */
#include "config.h"

#include "engine/server/session_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wslay/wslay.h>

#include "engine/server/metrics.h"
#include "protocol/ws_quota.h"

/* The leases nearest to expiry a live snapshot shows, as `counterctl
 * top` does. */
#define CNT_LIVE_LEASES 10u

/* The wait when neither the message nor the group names one. */
#define WS_DEFAULT_WAIT_MS 60000u

/* What the front keeps per connection, beside the session. */
typedef struct ws_state {
    cnt_session *s;
    bool upgraded;
    wslay_event_context_ptr ctx;    /* after the upgrade */
    const uint8_t *in;              /* during a feed: its unread input */
    size_t in_len, in_pos;
    size_t hdr_scanned;             /* bytes of the upgrade request already
                                     * searched for its end */
    bool broken;                    /* the client broke RFC 6455 */
    bool live;                      /* the page's feed, not the quota API */
    bool live_wait;                 /* a snapshot waits for its survey of
                                       the nearest leases (s->survey) */
} ws_state;

/* Queues one text message and hands it to wslay's sender, which writes it
 * into the output at once (the sender never blocks). */
static void ws_send_text(ws_state *w, const char *text, size_t len)
{
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t *)text,
                                  len};
    int rv = wslay_event_queue_msg(w->ctx, &msg);

    if (rv == WSLAY_ERR_NOMEM) {
        w->s->failed = true;
        return;
    }
    if (rv != 0)
        return;         /* a close was sent: nothing more goes out */
    cnt_stats_add(&w->s->env->slot->ws_messages_out, 1);
    if (wslay_event_send(w->ctx) == WSLAY_ERR_NOMEM)
        w->s->failed = true;
}

/* Sends an error result for a message called name (its answer is
 * name_result; "error" when the message had no usable name). */
static void ws_error(ws_state *w, const char *name, const cnt_quota_msg *m,
                     int code)
{
    char out[CNT_QUOTA_OUT_MAX];
    char result[48];

    if (name[0] == '\0')
        snprintf(result, sizeof(result), "error");
    else
        snprintf(result, sizeof(result), "%s_result", name);
    cnt_stats_add(&w->s->env->slot->ws_errors, 1);
    ws_send_text(w, out, cnt_quota_encode_error(out, result, m->qid,
                                                m->qid_len, code));
}

/* Sends an event about key. */
static void ws_event_named(ws_state *w, const char *name, const uint8_t *key,
                           size_t key_len)
{
    char out[CNT_QUOTA_OUT_MAX];

    ws_send_text(w, out, cnt_quota_encode_event(out, name, key, key_len));
}

/* The session's event writer (cnt_session_event_fn) for this front. */
static void ws_event(cnt_session *s, uint8_t code, const cnt_ticket *k,
                     uint64_t lease_id, uint32_t value)
{
    ws_state *w = s->front_state;
    const char *name;

    (void)lease_id;
    (void)value;
    if (w == NULL || w->ctx == NULL)
        return;
    switch (code) {
    case CNT_EVENT_GRANTED:
        name = "quota_passed";
        break;
    case CNT_EVENT_TIMED_OUT:
        name = "quota_timeout";
        break;
    case CNT_EVENT_LEASE_EXPIRED:
        name = "quota_expired";
        break;
    default:
        name = "quota_error";
        break;
    }
    ws_event_named(w, name, k->name, k->name_len);
}

/* Counts a quota_passed the granting thread wrote to the socket itself. */
static void ws_told(cnt_session *s)
{
    cnt_stats_add(&s->env->slot->ws_messages_out, 1);
}

/* Whether a granted event may go straight to this connection's socket as
 * far as the front is concerned (the owner's thread; see session.h): the
 * quota API after its upgrade, wslay holding nothing to send and no close
 * sent or received. Its output buffer and the session's state are the
 * connection's to check. */
bool cnt_session_ws_quiet(const cnt_session *s)
{
    const ws_state *w = s->front_state;

    return w != NULL && w->upgraded && !w->live && !w->broken &&
           w->ctx != NULL && !wslay_event_want_write(w->ctx) &&
           !wslay_event_get_close_sent(w->ctx) &&
           !wslay_event_get_close_received(w->ctx);
}

/* k's quota_passed message as one final, unmasked text frame (a server
 * masks nothing), the bytes wslay would write for it; see session.h. The
 * frame is built here because wslay's context belongs to the owner's
 * thread and this runs on the granting one. */
size_t cnt_session_ws_granted_frame(const cnt_ticket *k, uint8_t *buf,
                                    size_t cap)
{
    char msg[CNT_QUOTA_OUT_MAX];

    if (k->name_len >= cap)
        return 0;                       /* not worth encoding */
    size_t len = cnt_quota_encode_event(msg, "quota_passed", k->name,
                                        k->name_len);
    size_t head = len <= 125 ? 2 : 4;

    if (len > 65535 || head + len > cap)
        return 0;
    buf[0] = 0x81;                          /* FIN, text */
    if (head == 2) {
        buf[1] = (uint8_t)len;
    } else {
        buf[1] = 126;                       /* a 16-bit length follows */
        buf[2] = (uint8_t)(len >> 8);
        buf[3] = (uint8_t)len;
    }
    memcpy(buf + head, msg, len);
    return head + len;
}

/* quota_request: waits in the group's queue for one of its places. */
static void ws_request(ws_state *w, const cnt_quota_msg *m)
{
    cnt_session *s = w->s;
    const cnt_group *g = cnt_groups_find(s->env->groups, m->key, m->key_len);
    char out[CNT_QUOTA_OUT_MAX];

    if (g == NULL) {
        ws_error(w, "quota_request", m, CNT_QUOTA_ERR_NOT_FOUND);
        return;
    }
    cnt_session_wait_args a = {
        .name = m->key, .name_len = m->key_len, .resources = 1,
        .maximum = 0,
        .wait_ms = m->has_timeout ? m->timeout_ms
                   : g->wait_ms != 0 ? g->wait_ms : WS_DEFAULT_WAIT_MS,
        .lease_ms = m->has_expires ? m->expires_ms : CNT_USE_GROUP_DEFAULT,
    };
    cnt_session_wait_outcome o;
    cnt_status st = cnt_session_wait_acquire(s, NULL, &a, &o);

    switch (st) {
    case CNT_STATUS_OK:
    case CNT_STATUS_RESOURCE_NOT_AVAILABLE:
        ws_send_text(w, out, cnt_quota_encode_ok(out, "quota_request_result",
                                                 m->qid, m->qid_len));
        /* Granted at once, or taken and not to be waited for (timeout 0):
         * the event follows the result, as it would have later. */
        if (st == CNT_STATUS_RESOURCE_NOT_AVAILABLE)
            ws_event_named(w, "quota_timeout", m->key, m->key_len);
        else if (o.granted)
            ws_event_named(w, "quota_passed", m->key, m->key_len);
        return;
    case CNT_STATUS_UNKNOWN_GROUP:
        ws_error(w, "quota_request", m, CNT_QUOTA_ERR_NOT_FOUND);
        return;
    case CNT_STATUS_ALREADY_ACTIVE:
        ws_error(w, "quota_request", m, CNT_QUOTA_ERR_ACTIVE);
        return;
    case CNT_STATUS_TOO_MANY_WAITS:
        ws_error(w, "quota_request", m, CNT_QUOTA_ERR_TOO_MANY);
        return;
    default:
        /* Memory (the table's budget or malloc), or a group that cannot
         * be given to anyone: the service cannot serve it now. */
        ws_error(w, "quota_request", m, CNT_QUOTA_ERR_UNAVAILABLE);
        return;
    }
}

/* quota_release: ends the wait or returns the grant. Silent when done,
 * as the specification has no answer for it; an expired grant is
 * acknowledged silently too. */
static void ws_release(ws_state *w, const cnt_quota_msg *m)
{
    uint32_t returned = 0;

    if (cnt_groups_find(w->s->env->groups, m->key, m->key_len) == NULL) {
        ws_error(w, "quota_release", m, CNT_QUOTA_ERR_NOT_FOUND);
        return;
    }
    if (cnt_session_wait_release(w->s, m->key, m->key_len, &returned) ==
        CNT_STATUS_NOT_ACQUIRED)
        ws_error(w, "quota_release", m, CNT_QUOTA_ERR_NOT_REQUESTED);
}

/* Appends the exposition of the server's figures now to body; false when
 * memory ran out. */
static bool ws_exposition(const cnt_session_env *env, cnt_outbuf *body)
{
    cnt_metrics_sources src = {
        .stats = {env->stats, env->table, env->limits, env->throttle,
                  env->gc},
        .table = env->table, .throttle = env->throttle,
        .limits = env->limits, .groups = env->groups,
    };
    cnt_metrics_snapshot *snap = malloc(sizeof(*snap));
    bool ok = false;

    if (snap == NULL)
        return false;
    if (cnt_metrics_collect(&src, snap)) {
        ok = cnt_metrics_write(body, snap);
        cnt_metrics_snapshot_free(snap);
    }
    free(snap);
    return ok;
}

/* Sends the snapshot a live ask waited for: the exposition, then the
 * nearest leases of its survey (when it has one that copied its names),
 * as one text message; lets go of the survey. */
static void ws_live_send(ws_state *w)
{
    cnt_session *s = w->s;
    cnt_survey *sv = s->survey;
    cnt_outbuf body;

    s->survey = NULL;
    w->live_wait = false;
    if (!cnt_outbuf_init(&body, 16384)) {
        s->failed = true;
    } else {
        uint64_t now_ns = cnt_clock_mono_ns(cnt_table_clock(s->env->table));
        bool ok = ws_exposition(s->env, &body);
        if (ok && sv != NULL && !sv->top.failed)
            ok = cnt_metrics_write_leases(&body, &sv->top, now_ns);
        if (ok)
            ws_send_text(w, (const char *)cnt_outbuf_data(&body),
                         cnt_outbuf_pending(&body));
        else
            s->failed = true;
        cnt_outbuf_destroy(&body);
    }
    if (sv != NULL)
        cnt_survey_orphan(sv);
}

/* The live feed: whatever text the page sends asks for a snapshot, which
 * goes back as one text message holding the exposition and the leases
 * nearest to expiry. Those live on every worker's wheel, so the ask starts
 * a survey, like Lease_list, and the snapshot goes when it comes home
 * (cnt_session_feed_ws, woken); until then the connection reads nothing,
 * and asks already read share the snapshot under way. The page asks once
 * a second; a client that asks faster and does not read is held back by
 * the output watermark like any other. */
static void ws_live(ws_state *w)
{
    cnt_session *s = w->s;

    if (w->live_wait)
        return;
    w->live_wait = true;
    s->survey = cnt_session_survey_start(s, CNT_LIVE_LEASES);
    /* Waiting for a slot among the surveys in flight, or for the workers'
     * answers: the snapshot goes when the connection is woken. No memory
     * for a survey: the figures still go, without leases. */
    if ((s->survey == NULL && s->survey_queued) ||
        (s->survey != NULL && !cnt_survey_ready(s->survey)))
        s->surveying = true;
    else
        ws_live_send(w);
}

/* Answers one whole text message. */
static void ws_message(ws_state *w, const uint8_t *text, size_t len)
{
    cnt_quota_msg m;

    if (w->live) {
        ws_live(w);
        return;
    }

    cnt_quota_decode(text, len, &m);
    switch (m.kind) {
    case CNT_QUOTA_REQUEST:
        ws_request(w, &m);
        break;
    case CNT_QUOTA_RELEASE:
        ws_release(w, &m);
        break;
    case CNT_QUOTA_MALFORMED:
        ws_error(w, m.name, &m, CNT_QUOTA_ERR_MALFORMED);
        break;
    case CNT_QUOTA_UNKNOWN:
        ws_error(w, m.name_cut ? "" : m.name, &m, CNT_QUOTA_ERR_UNKNOWN);
        break;
    case CNT_QUOTA_NOT_JSON:
        ws_error(w, "", &m, CNT_QUOTA_ERR_NOT_JSON);
        break;
    }
}

/* wslay's reader: the unread part of the input buffered on the connection;
 * would block at its end, and when the output is full (the rest waits,
 * unread, until the client takes its answers). */
static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf,
                          size_t len, int flags, void *user)
{
    ws_state *w = user;
    size_t left = w->in_len - w->in_pos;

    (void)flags;
    /* A paused tenant's connection reads nothing more this second. */
    if (left == 0 || w->s->failed || w->s->pause_ns > 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (cnt_outbuf_full(&w->s->out)) {
        w->s->more = true;
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    if (len > left)
        len = left;
    memcpy(buf, w->in + w->in_pos, len);
    w->in_pos += len;
    return (ssize_t)len;
}

/* wslay's writer: appends to the session's output, all of it. */
static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data,
                          size_t len, int flags, void *user)
{
    ws_state *w = user;
    uint8_t *p = cnt_session_reserve(w->s, len);

    (void)flags;
    if (p == NULL) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    memcpy(p, data, len);
    cnt_outbuf_commit(&w->s->out, len);
    return (ssize_t)len;
}

/* wslay's masking keys: a server sends unmasked frames, never called. */
static int ws_genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf,
                         size_t len, void *user)
{
    (void)ctx;
    (void)user;
    memset(buf, 0, len);
    return 0;
}

/* wslay hands over each whole message (fragments joined; pings are
 * answered and close frames handled by wslay itself). */
static void ws_msg_cb(wslay_event_context_ptr ctx,
                      const struct wslay_event_on_msg_recv_arg *arg,
                      void *user)
{
    ws_state *w = user;
    cnt_quota_msg none;

    (void)ctx;
    if (arg->opcode == WSLAY_TEXT_FRAME) {
        cnt_stats_add(&w->s->env->slot->ws_messages_in, 1);
        ws_message(w, arg->msg, arg->msg_length);
        /* wslay has taken the message from the input by now, so it is
         * paid for after it ran: one that finds the tenant over its share
         * is counted all the same and pauses the connection (nothing
         * more is read until the next second) instead of waiting
         * itself. */
        (void)cnt_session_pay(w->s, CNT_COST_ACQUIRE, true);
    } else if (arg->opcode == WSLAY_BINARY_FRAME && w->live) {
        cnt_stats_add(&w->s->env->slot->ws_messages_in, 1);
        ws_live(w);
    } else if (arg->opcode == WSLAY_BINARY_FRAME) {
        cnt_stats_add(&w->s->env->slot->ws_messages_in, 1);
        memset(&none, 0, sizeof(none));
        ws_error(w, "", &none, CNT_QUOTA_ERR_BINARY);
    }
}

/* Frees the front's state when the session ends (its tickets are ended
 * already: no event can come any more). */
static void ws_end(cnt_session *s)
{
    ws_state *w = s->front_state;

    if (w == NULL)
        return;
    if (w->ctx != NULL) {
        wslay_event_context_free(w->ctx);
        cnt_stats_add(&s->env->slot->ws_curr, -1);
    }
    free(w);
}

/* Answers GET /metrics or GET /: a 200 with the whole body and
 * Connection: close (each scrape or page load is one connection, which
 * keeps the front's state to the WebSocket's alone), or a 503 when memory
 * ran out on the way. */
static void ws_plain(cnt_session *s, cnt_http_result res)
{
    cnt_outbuf body;
    const char *type = res == CNT_HTTP_METRICS
                       ? "text/plain; version=0.0.4; charset=utf-8"
                       : "text/html; charset=utf-8";
    char head[256];
    bool inited = cnt_outbuf_init(&body, 16384);
    bool ok = inited;

    if (ok && res == CNT_HTTP_METRICS)
        ok = ws_exposition(s->env, &body);
    else if (ok) {
        size_t n = strlen(cnt_live_page);
        uint8_t *p = cnt_outbuf_reserve(&body, n);
        if ((ok = p != NULL))
            cnt_outbuf_commit(&body, (memcpy(p, cnt_live_page, n), n));
    }
    size_t blen = ok ? cnt_outbuf_pending(&body) : 0;
    int hn = snprintf(head, sizeof(head),
                      "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\nCache-Control: no-store\r\n"
                      "Connection: close\r\n\r\n",
                      ok ? "200 OK" : "503 Service Unavailable",
                      ok ? type : "text/plain", blen);
    uint8_t *p = cnt_session_reserve(s, (size_t)hn + blen);
    if (p != NULL) {
        memcpy(p, head, (size_t)hn);
        if (blen > 0)
            memcpy(p + hn, cnt_outbuf_data(&body), blen);
        cnt_outbuf_commit(&s->out, (size_t)hn + blen);
    }
    if (inited)
        cnt_outbuf_destroy(&body);
    s->closing = true;
    s->close_reason = "HTTP answer sent; closing";
}

/* Answers the upgrade request at in[0..len): the 101 answer and wslay's
 * context, or an HTTP error answer and the close. Returns the bytes used;
 * 0 with the request incomplete. */
static size_t ws_handshake(ws_state *w, const uint8_t *in, size_t len)
{
    cnt_session *s = w->s;
    const cnt_session_env *env = s->env;
    cnt_http_request r;
    char answer[CNT_HTTP_ANSWER_MAX];
    size_t n;

    /* Only what arrived since the last look is searched for the end of
     * the header (less the three bytes an end may straddle), so a client
     * that sends its request a byte at a time costs linear time. */
    bool whole = false;
    for (size_t i = w->hdr_scanned > 3 ? w->hdr_scanned - 3 : 0;
         i + 3 < len && !whole; i++)
        whole = memcmp(in + i, "\r\n\r\n", 4) == 0;
    w->hdr_scanned = len;
    if (!whole && len < env->ws_max_header) {
        s->need = env->ws_max_header;
        return 0;
    }
    cnt_http_result res = cnt_http_parse(in, len, env->ws_max_header, &r);
    if (res == CNT_HTTP_NEED_MORE) {
        s->need = env->ws_max_header;
        return 0;
    }
    if (res == CNT_HTTP_METRICS || res == CNT_HTTP_PAGE) {
        ws_plain(s, res);
        return len;
    }
    if (res != CNT_HTTP_UPGRADE) {
        n = cnt_http_error(answer, res);
        uint8_t *p = cnt_session_reserve(s, n);
        if (p != NULL)
            cnt_outbuf_commit(&s->out, (memcpy(p, answer, n), n));
        cnt_stats_add(&env->slot->ws_http_errors, 1);
        s->closing = true;
        s->close_reason = "HTTP request refused; closing";
        return len;
    }
    static const struct wslay_event_callbacks cbs = {
        ws_recv_cb, ws_send_cb, ws_genmask_cb, NULL, NULL, NULL, ws_msg_cb,
    };
    if (wslay_event_context_server_init(&w->ctx, &cbs, w) != 0) {
        w->ctx = NULL;
        s->failed = true;
        return 0;
    }
    wslay_event_config_set_max_recv_msg_length(w->ctx, env->ws_max_message);
    n = cnt_http_switching(answer, r.key);
    uint8_t *p = cnt_session_reserve(s, n);
    if (p == NULL) {
        /* Out of memory (the session is failed): not upgraded, so the
         * context goes now and the connection figures stay as they are. */
        wslay_event_context_free(w->ctx);
        w->ctx = NULL;
        return 0;
    }
    memcpy(p, answer, n);
    cnt_outbuf_commit(&s->out, n);
    w->upgraded = true;
    w->live = r.live;
    cnt_stats_add(&env->slot->ws_upgrades, 1);
    cnt_stats_add(&env->slot->ws_curr, 1);
    return r.size;
}

/* Feeds the bytes of a WebSocket front's connection; the contract is
 * cnt_session_feed's. */
size_t cnt_session_feed_ws(cnt_session *s, const uint8_t *in, size_t len)
{
    ws_state *w = s->front_state;
    size_t pos = 0;

    s->more = false;
    s->need = 0;
    s->pause_ns = 0;
    if (s->closing || s->failed)
        return 0;
    if (w == NULL) {
        w = calloc(1, sizeof(*w));
        if (w == NULL) {
            s->failed = true;
            return 0;
        }
        w->s = s;
        s->front_state = w;
        s->front_end = ws_end;
        s->event = ws_event;
        s->told = ws_told;
    }
    if (!w->upgraded) {
        pos = ws_handshake(w, in, len);
        if (!w->upgraded)
            return pos;
    }
    /* A live snapshot waits for its survey: nothing else is read until
     * it is out (the survey's home wakes the connection). */
    if (s->surveying)
        return pos;
    if (w->live_wait) {
        ws_live_send(w);
        if (s->failed)
            return pos;
    }
    w->in = in + pos;
    w->in_len = len - pos;
    w->in_pos = 0;
    int rv = wslay_event_recv(w->ctx);
    if (rv != 0 && rv != WSLAY_ERR_NOMEM && !s->failed) {
        /* What wslay's frame reader refused without closing itself (a
         * control frame of more than 125 bytes comes back as a callback
         * failure, though our callbacks did not fail): a protocol
         * error. wslay has queued a close without a status code by then,
         * which is what goes out. */
        w->broken = true;
        if (!wslay_event_get_close_sent(w->ctx))
            (void)wslay_event_queue_close(w->ctx, WSLAY_CODE_PROTOCOL_ERROR,
                                          NULL, 0);
        wslay_event_shutdown_read(w->ctx);
        rv = 0;
    }
    if (rv == 0)
        rv = wslay_event_send(w->ctx);
    pos += w->in_pos;
    w->in = NULL;
    w->in_len = w->in_pos = 0;
    if (rv == WSLAY_ERR_NOMEM || rv == WSLAY_ERR_CALLBACK_FAILURE) {
        s->failed = true;
        return pos;
    }
    if (!wslay_event_want_read(w->ctx) && !wslay_event_want_write(w->ctx)) {
        /* The close handshake is done (ours answered the client's, or the
         * client broke the RFC and our close said why). */
        uint16_t code = wslay_event_get_status_code_sent(w->ctx);
        if (w->broken || (code != WSLAY_CODE_NORMAL_CLOSURE &&
             code != WSLAY_CODE_GOING_AWAY &&
             code != WSLAY_CODE_NO_STATUS_RCVD))
            cnt_stats_add(&s->env->slot->ws_protocol_closes, 1);
        s->closing = true;
        s->close_reason = "WebSocket closed; closing";
        s->more = false;
    }
    return pos;
}
