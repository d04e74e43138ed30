/* conn.c: the connections of libmccounter: one non-blocking socket per
 * server, the pipeline of requests in flight, the submit path every
 * operation goes through, timeouts, the failure policy, and the poll()
 * loop the blocking calls and mcc_poll drive it with. Everything that
 * reads or writes a socket is here; what an answer means is answers.c's. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/internal.h"
#include "protocol/request.h"

/* ---- The clock of a driving call ---- */

/* The clock for a new request's deadline: inside a callback, the time
 * read when the call that runs it began (a millisecond clock does not move
 * much while a batch of answers is handled, and a read per request would
 * cost as much as the rest of queueing it); otherwise a fresh read. */
static int64_t client_now(mcc_client *c)
{
    if (c->in_callback && c->clock_valid)
        return c->clock_ms;
    return mcc_now_ms();
}

/* Starts a driving call (reading, writing, ticking): reads the clock
 * once for the callbacks it runs. */
static void clock_begin(mcc_client *c)
{
    c->clock_ms = mcc_now_ms();
    c->clock_valid = true;
}

/* Closes a connection's socket and forgets what it buffered (nothing is
 * reported: callers report). */
void mcc_conn_close(mcc_conn *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    k->gen++;
    k->state = MCC_CONN_CLOSED;
    k->out_off = k->out_len = 0;
    k->in_len = 0;
}

/* ---- Connections ---- */

/* What a connection waits for. */
static int conn_wants(const mcc_conn *k)
{
    switch (k->state) {
    case MCC_CONN_CONNECTING:
        return MCC_WANT_WRITE;
    case MCC_CONN_UP:
        return MCC_WANT_READ | (k->out_len > k->out_off ? MCC_WANT_WRITE : 0);
    default:
        return 0;
    }
}

/* Tells the watch callback when server i's fd or interest changed; while
 * answers are being handled (defer_notify) it only notes the change, and
 * notify_deferred tells it at the end. A socket that was closed and
 * replaced meanwhile, even by one with the same fd number (the kernel
 * reuses them at once), is told as fd -1 first, so that the application
 * drops its registration of the old socket before it adds the new one. */
static void notify(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;
    int wants;

    if (c->defer_notify > 0) {
        k->notify_pending = true;
        return;
    }
    k->notify_pending = false;
    if (k->seen_fd >= 0 && k->seen_gen != k->gen) {
        k->seen_fd = -1;
        k->seen_wants = 0;
        if (c->w_cb) {
            c->in_callback++;
            c->w_cb(c, i, -1, 0, c->w_arg);
            c->in_callback--;
        }
    }
    wants = conn_wants(k);
    if (k->seen_fd == k->fd && k->seen_wants == wants)
        return;
    k->seen_fd = k->fd;
    k->seen_gen = k->gen;
    k->seen_wants = wants;
    if (c->w_cb) {
        c->in_callback++;
        c->w_cb(c, i, k->fd, wants, c->w_arg);
        c->in_callback--;
    }
}

/* Tells the watch callback the changes noted while it was deferred. */
static void notify_deferred(mcc_client *c)
{
    for (size_t i = 0; i < c->n_servers; i++)
        if (c->servers[i].conn.notify_pending)
            notify(c, i);
}

/* Makes room for need more unsent bytes. */
static int out_reserve(mcc_conn *k, size_t need)
{
    if (k->out_off > 0) {
        memmove(k->out, k->out + k->out_off, k->out_len - k->out_off);
        k->out_len -= k->out_off;
        k->out_off = 0;
    }
    if (k->out_cap - k->out_len < need) {
        size_t cap = k->out_cap ? k->out_cap : 4096;
        uint8_t *nb;
        while (cap - k->out_len < need)
            cap *= 2;
        nb = realloc(k->out, cap);
        if (!nb)
            return MCC_ERR_NOMEM;
        k->out = nb;
        k->out_cap = cap;
    }
    return MCC_OK;
}

/* Appends an entry to the ring of requests in flight. */
static int queue_push(mcc_conn *k, const mcc_inflight *p)
{
    if (k->q_count == k->q_cap) {
        size_t cap = k->q_cap ? k->q_cap * 2 : 16;
        mcc_inflight *nq = malloc(cap * sizeof *nq);
        if (!nq)
            return MCC_ERR_NOMEM;
        /* Straighten the ring so that the oldest is at index 0. */
        for (size_t i = 0; i < k->q_count; i++)
            nq[i] = k->q[(k->q_head + i) & (k->q_cap - 1)];
        free(k->q);
        k->q = nq;
        k->q_cap = cap;
        k->q_head = 0;
    }
    k->q[(k->q_head + k->q_count) & (k->q_cap - 1)] = *p;
    k->q_count++;
    return MCC_OK;
}

/* How many of the requests in flight at the queue's front the library
 * sent itself on connecting (at most the probe and the Auth). */
static size_t internal_count(const mcc_conn *k)
{
    size_t n = 0;

    while (n < k->q_count && n < 2 &&
           k->q[(k->q_head + n) & (k->q_cap - 1)].internal_auth)
        n++;
    return n;
}

/* Queues the Noop a new connection starts with: its opaque ends in CR
 * LF, so a memcache text port answers it at once with a line of text,
 * which process_input recognises, rather than leaving the first request
 * to time out. */
static int queue_probe(mcc_client *c, mcc_conn *k)
{
    mcc_inflight p;
    int rc;

    rc = out_reserve(k, CNT_HEADER_SIZE);
    if (rc != MCC_OK)
        return rc;
    memset(&p, 0, sizeof p);
    p.opaque = CNT_TEXT_PROBE_OPAQUE;
    p.op = CNT_OP_NOOP;
    p.internal_auth = true;
    p.deadline = mcc_now_ms() + c->timeout_ms;
    rc = queue_push(k, &p);
    if (rc != MCC_OK)
        return rc;
    k->out_len += cnt_encode_simple(k->out + k->out_len, CNT_OP_NOOP,
                                    p.opaque);
    return MCC_OK;
}

/* Queues the Auth a new connection starts with: Auth_user when a user
 * is set, Auth with the secret alone otherwise. */
static int queue_auth(mcc_client *c, mcc_conn *k)
{
    mcc_inflight p;
    size_t len, need;
    int rc;

    need = c->user ? CNT_HEADER_SIZE + CNT_AUSER_FIXED + c->user_len +
                     c->secret_len
                   : CNT_HEADER_SIZE + CNT_AUTH_FIXED + c->secret_len;
    rc = out_reserve(k, need);
    if (rc != MCC_OK)
        return rc;
    memset(&p, 0, sizeof p);
    p.opaque = mcc_next_opaque(c);
    p.op = c->user ? CNT_OP_AUTH_USER : CNT_OP_AUTH;
    p.internal_auth = true;
    p.deadline = mcc_now_ms() + c->timeout_ms;
    rc = queue_push(k, &p);
    if (rc != MCC_OK)
        return rc;
    if (c->user)
        len = cnt_encode_auth_user(k->out + k->out_len, p.opaque,
                                   c->user_flags, c->user,
                                   (uint16_t)c->user_len, c->secret,
                                   (uint16_t)c->secret_len);
    else
        len = cnt_encode_auth(k->out + k->out_len, p.opaque, c->secret,
                              (uint16_t)c->secret_len);
    k->out_len += len;
    return MCC_OK;
}

/* Opens server i's connection (non-blocking connect). */
static int conn_open(mcc_client *c, size_t i)
{
    mcc_server *s = &c->servers[i];
    mcc_conn *k = &s->conn;
    struct addrinfo hints, *res = NULL, *ai;
    char port[8];
    int fd = -1, one = 1;

    if (!k->in) {
        k->in = malloc(MCC_RESPONSE_MAX);
        if (!k->in)
            return MCC_ERR_NOMEM;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(port, sizeof port, "%u", (unsigned)s->spec.port);
    if (getaddrinfo(s->spec.host, port, &hints, &res) != 0) {
        k->down_until = mcc_now_ms() + c->retry_ms;
        return MCC_ERR_CONNECT;
    }
    k->state = MCC_CONN_CLOSED;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            k->state = MCC_CONN_UP;
            break;
        }
        if (errno == EINPROGRESS) {
            k->state = MCC_CONN_CONNECTING;
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        k->down_until = mcc_now_ms() + c->retry_ms;
        return MCC_ERR_CONNECT;
    }
    k->fd = fd;
    k->connect_deadline = mcc_now_ms() + c->timeout_ms;
    k->in_len = 0;
    k->out_off = k->out_len = 0;
    {
        int rc = queue_probe(c, k);

        if (rc == MCC_OK && c->secret)
            rc = queue_auth(c, k);
        if (rc != MCC_OK) {
            mcc_conn_close(k);
            return rc;
        }
    }
    return MCC_OK;
}

/* Reports the end of a request with an error to its owner. */
static void fail_pending(mcc_client *c, size_t i, const mcc_inflight *p,
                         int error)
{
    if (p->orphan || p->internal_auth)
        return;
    if (p->rcb) {
        mcc_record rec;
        memset(&rec, 0, sizeof rec);
        rec.op = p->op;
        rec.error = error;
        rec.server = i;
        call_rcb(c, p->rcb, &rec, p->arg);
    } else {
        mcc_result r;
        memset(&r, 0, sizeof r);
        r.op = p->op;
        r.error = error;
        r.server = i;
        r.opaque = p->opaque;
        call_cb(c, p->cb, &r, p->arg);
    }
}

/* Closes server i's connection after a failure and reports it, in order:
 * the oldest request in flight gets error, the others MCC_ERR_IO (or
 * MCC_ERR_CONNECT when it never came up), then the watchers of waits, then
 * the ERROR event. The server is left alone for the retry pause. */
static void conn_fail(mcc_client *c, size_t i, int error)
{
    mcc_conn *k = &c->servers[i].conn;
    int rest = error == MCC_ERR_CONNECT ? MCC_ERR_CONNECT : MCC_ERR_IO;
    bool first = true;
    unsigned old_gen = k->gen;
    size_t old_count = k->q_count;
    mcc_event ev;

    mcc_conn_close(k);
    k->down_until = mcc_now_ms() + c->retry_ms;
    notify(c, i);
    /* Callbacks may already queue requests again (with a retry pause of
     * 0, on a new connection): those go to the tail, so exactly the old
     * ones are taken from the head, and they stay in place meanwhile so
     * that a callback can still make one an orphan. */
    while (old_count--) {
        mcc_inflight p = queue_pop(k);
        bool counts = !p.internal_auth;
        fail_pending(c, i, &p, first && counts ? error : rest);
        if (counts)
            first = false;
    }
    for (;;) {
        mcc_waiter *w, **pw;
        for (pw = &k->waiters; (w = *pw) != NULL; pw = &w->next)
            if (w->gen == old_gen)
                break;
        if (!w)
            break;
        *pw = w->next;
        w->next = NULL;
        w->linked = false;
        c->in_callback++;
        w->fn(c, w, NULL, rest);
        c->in_callback--;
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = MCC_EVENT_ERROR;
    ev.server = i;
    ev.error = error;
    call_event(c, &ev);
}

/* Decodes and handles every whole packet buffered on server i. */
static void process_input(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;
    unsigned gen = k->gen;
    size_t off = 0;

    while (k->gen == gen && k->state == MCC_CONN_UP) {
        cnt_response res;
        cnt_decode_result d =
            cnt_response_decode(k->in + off, k->in_len - off, &res);
        int rc;
        if (d == CNT_DECODE_NEED_MORE) {
            if (cnt_response_size(k->in + off, k->in_len - off) >
                MCC_RESPONSE_MAX) {
                conn_fail(c, i, MCC_ERR_PROTOCOL);
                return;
            }
            break;
        }
        if (d != CNT_DECODE_OK) {
            conn_fail(c, i, cnt_response_is_text(k->in + off, k->in_len - off)
                                ? MCC_ERR_MEMCACHE_PORT : MCC_ERR_PROTOCOL);
            return;
        }
        rc = mcc_handle_packet(c, i, &res);
        if (rc != MCC_OK) {
            conn_fail(c, i, rc);
            return;
        }
        off += res.size;
    }
    if (k->gen == gen && off > 0) {
        memmove(k->in, k->in + off, k->in_len - off);
        k->in_len -= off;
    }
}

/* Finishes a non-blocking connect once the socket is writable; false
 * while it is still going (or after failing it). */
static bool finish_connect(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;
    int err = 0;
    socklen_t len = sizeof err;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;

    if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
        conn_fail(c, i, MCC_ERR_CONNECT);
        return false;
    }
    if (getpeername(k->fd, (struct sockaddr *)&peer, &plen) != 0)
        return false;           /* still connecting */
    k->state = MCC_CONN_UP;
    return true;
}

/* Sends what server i's connection (up) has buffered, until the socket
 * takes no more; MCC_ERR_IO after failing the connection. */
static int flush_out(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;

    while (k->out_off < k->out_len) {
        ssize_t n = send(k->fd, k->out + k->out_off, k->out_len - k->out_off,
                         MSG_NOSIGNAL);
        if (n > 0) {
            k->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        conn_fail(c, i, MCC_ERR_IO);
        return MCC_ERR_IO;
    }
    if (k->out_off == k->out_len)
        k->out_off = k->out_len = 0;
    return MCC_OK;
}

/* Sends what server i has buffered. */
static int handle_writable(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;

    if (k->state == MCC_CONN_CLOSED)
        return MCC_OK;
    if (k->state == MCC_CONN_CONNECTING && !finish_connect(c, i)) {
        notify(c, i);
        return k->state == MCC_CONN_CLOSED ? MCC_ERR_CONNECT : MCC_OK;
    }
    if (flush_out(c, i) != MCC_OK)
        return MCC_ERR_IO;
    notify(c, i);
    return MCC_OK;
}

/* Reads what server i sent and handles it. */
static int handle_readable(mcc_client *c, size_t i)
{
    mcc_conn *k = &c->servers[i].conn;
    int fd = k->fd;
    unsigned gen = k->gen;

    int rc = MCC_OK;

    if (k->state == MCC_CONN_CLOSED)
        return MCC_OK;
    if (k->state == MCC_CONN_CONNECTING && !finish_connect(c, i))
        return k->state == MCC_CONN_CLOSED ? MCC_ERR_CONNECT : MCC_OK;
    clock_begin(c);
    c->defer_notify++;
    while (k->gen == gen && k->state == MCC_CONN_UP) {
        ssize_t n;
        size_t room = MCC_RESPONSE_MAX - k->in_len;
        if (k->in_len >= MCC_RESPONSE_MAX) {
            conn_fail(c, i, MCC_ERR_PROTOCOL);
            rc = MCC_ERR_PROTOCOL;
            break;
        }
        n = recv(fd, k->in + k->in_len, room, 0);
        if (n > 0) {
            k->in_len += (size_t)n;
            process_input(c, i);
            /* A read that left most of the buffer empty drained the
             * socket, most likely: save the recv that would say EAGAIN
             * (what is left, if anything, makes the socket readable
             * again: the application's poll is level-triggered). */
            if ((size_t)n < room / 2)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        conn_fail(c, i, MCC_ERR_IO);
        rc = MCC_ERR_IO;
        break;
    }
    /* The answers' callbacks queued their follow-up requests: send them
     * now, in one go, as a server sends its answers after a read; the
     * socket is only watched for writing if it did not take them all. */
    if (rc == MCC_OK && k->gen == gen && k->state == MCC_CONN_UP &&
        k->out_off < k->out_len && flush_out(c, i) != MCC_OK)
        rc = MCC_ERR_IO;
    c->defer_notify--;
    c->clock_valid = false;
    notify(c, i);
    notify_deferred(c);
    if (rc == MCC_OK && k->gen != gen)
        rc = MCC_ERR_IO;
    return rc;
}

/* ---- Submitting ---- */

/* Queues an encoded request on its server. */
int mcc_submit(mcc_client *c, const uint8_t *req, size_t len, uint8_t op,
               mcc_sub *s)
{
    mcc_conn *k;
    cnt_request dec;
    mcc_inflight p;
    int rc;

    /* The server's own decoder judges the request: whatever it would
     * answer 0x04 is refused here, before anything is sent. The hot
     * operations, whose few rules their callers check, skip it. */
    if (!s->checked && (cnt_request_decode(req, len, &dec) !=
                            CNT_DECODE_OK || dec.size != len))
        return MCC_ERR_INVALID;
    if (s->server >= c->n_servers)
        return MCC_ERR_INVALID;
    k = &c->servers[s->server].conn;
    if (k->state == MCC_CONN_CLOSED) {
        if (mcc_now_ms() < k->down_until)
            return MCC_ERR_SERVER_DOWN;
        rc = conn_open(c, s->server);
        if (rc != MCC_OK) {
            notify(c, s->server);
            return rc;
        }
    }
    /* The probe and Auth a new connection starts with do not count
     * against the application's bound; and a connection just opened is told to the
     * watch callback even when this request is refused, since its Auth
     * (or its connect) needs the socket watched. */
    if (k->q_count - internal_count(k) >=
            c->max_requests ||
        k->out_len - k->out_off + len > c->max_bytes) {
        notify(c, s->server);
        return MCC_ERR_BUSY;
    }
    rc = out_reserve(k, len);
    if (rc != MCC_OK) {
        notify(c, s->server);
        return rc;
    }
    memset(&p, 0, sizeof p);
    p.opaque = cnt_get_u32(req + CNT_OFF_OPAQUE);
    p.op = op;
    p.cb = s->cb;
    p.rcb = s->rcb;
    p.arg = s->arg;
    p.deadline = s->deadline ? s->deadline : client_now(c) + c->timeout_ms;
    rc = queue_push(k, &p);
    if (rc != MCC_OK) {
        notify(c, s->server);
        return rc;
    }
    memcpy(k->out + k->out_len, req, len);
    k->out_len += len;
    s->opaque = p.opaque;
    notify(c, s->server);
    return MCC_OK;
}

/* Marks one request in flight an orphan. */
void mcc_orphan(mcc_client *c, size_t server, uint32_t opaque)
{
    mcc_conn *k;

    if (server >= c->n_servers)
        return;
    k = &c->servers[server].conn;
    for (size_t j = 0; j < k->q_count; j++) {
        mcc_inflight *p = queue_at(k, j);
        if (p->opaque == opaque && !p->internal_auth)
            p->orphan = true;
    }
}

/* Marks every request in flight for arg an orphan. */
void mcc_orphan_arg(mcc_client *c, mcc_callback cb, void *arg)
{
    for (size_t i = 0; i < c->n_servers; i++) {
        mcc_conn *k = &c->servers[i].conn;
        for (size_t j = 0; j < k->q_count; j++) {
            mcc_inflight *p = queue_at(k, j);
            if (p->arg == arg && p->cb == cb)
                p->orphan = true;
        }
    }
}

/* Links an event watcher. */
void mcc_waiter_add(mcc_client *c, size_t server, mcc_waiter *w)
{
    mcc_conn *k = &c->servers[server].conn;

    w->gen = k->gen;
    w->next = k->waiters;
    k->waiters = w;
    w->linked = true;
}

/* Unlinks an event watcher (nothing if it is not linked). */
void mcc_waiter_remove(mcc_client *c, size_t server, mcc_waiter *w)
{
    mcc_waiter **pw;

    if (!w->linked || server >= c->n_servers)
        return;
    for (pw = &c->servers[server].conn.waiters; *pw; pw = &(*pw)->next)
        if (*pw == w) {
            *pw = w->next;
            break;
        }
    w->next = NULL;
    w->linked = false;
}

/* ---- The non-blocking API ---- */

/* Returns server i's socket or -1. */
int mcc_fd(const mcc_client *c, size_t i)
{
    if (!c || i >= c->n_servers)
        return -1;
    return c->servers[i].conn.fd;
}

/* Returns what server i's socket waits for. */
int mcc_wants(const mcc_client *c, size_t i)
{
    if (!c || i >= c->n_servers)
        return 0;
    return conn_wants(&c->servers[i].conn);
}

/* Handles readability of server i's socket. */
mcc_error mcc_on_readable(mcc_client *c, size_t i)
{
    if (!c || i >= c->n_servers)
        return MCC_ERR_INVALID;
    if (c->in_callback)
        return MCC_ERR_BUSY;
    return handle_readable(c, i);
}

/* Handles writability of server i's socket. */
mcc_error mcc_on_writable(mcc_client *c, size_t i)
{
    if (!c || i >= c->n_servers)
        return MCC_ERR_INVALID;
    if (c->in_callback)
        return MCC_ERR_BUSY;
    return handle_writable(c, i);
}

/* Returns the earliest time (monotonic ms) mcc_tick has work, or -1. */
static int64_t next_due(const mcc_client *c)
{
    int64_t due = mcc_leases_next(c);

    for (size_t i = 0; i < c->n_servers; i++) {
        const mcc_conn *k = &c->servers[i].conn;
        int64_t t = -1;
        if (k->state == MCC_CONN_CONNECTING)
            t = k->connect_deadline;
        for (size_t j = 0; j < k->q_count; j++) {
            const mcc_inflight *p = &k->q[(k->q_head + j) & (k->q_cap - 1)];
            /* An orphan at the head bounds how long a silent server is
             * waited for: one more timeout after its own. */
            int64_t d = p->orphan ? (j == 0 ? p->deadline + c->timeout_ms
                                            : -1)
                                  : p->deadline;
            if (d >= 0 && (t < 0 || d < t))
                t = d;
        }
        if (t >= 0 && (due < 0 || t < due))
            due = t;
    }
    return due;
}

/* Returns the milliseconds until mcc_tick has work, or -1. */
int mcc_next_timeout_ms(const mcc_client *c)
{
    int64_t due, now;

    if (!c)
        return -1;
    due = next_due(c);
    if (due < 0)
        return -1;
    now = mcc_now_ms();
    if (due <= now)
        return 0;
    return due - now > INT_MAX ? INT_MAX : (int)(due - now);
}

/* Fails what is past its time on every connection, renews leases. */
static void tick_all(mcc_client *c)
{
    int64_t now = mcc_now_ms();

    c->clock_ms = now;
    c->clock_valid = true;
    for (size_t i = 0; i < c->n_servers; i++) {
        mcc_conn *k = &c->servers[i].conn;
        if (k->state == MCC_CONN_CONNECTING && now >= k->connect_deadline) {
            conn_fail(c, i, MCC_ERR_CONNECT);
            continue;
        }
        if (k->q_count && queue_at(k, 0)->orphan &&
            now >= queue_at(k, 0)->deadline + c->timeout_ms) {
            conn_fail(c, i, MCC_ERR_TIMEOUT);
            continue;
        }
        /* Callbacks may queue more requests, which only go to the end:
         * the index of what is left to look at stays valid. */
        for (size_t j = 0; j < k->q_count; j++) {
            mcc_inflight *p = queue_at(k, j), copy;
            if (p->orphan || p->deadline > now)
                continue;
            p->orphan = true;
            if (p->internal_auth)
                continue;
            copy = *p;
            copy.orphan = false;
            fail_pending(c, i, &copy, MCC_ERR_TIMEOUT);
            if (k->state == MCC_CONN_CLOSED)
                break;
        }
    }
    mcc_leases_tick(c, now);
    c->clock_valid = false;
}

/* Runs what is due. */
void mcc_tick(mcc_client *c)
{
    if (!c || c->in_callback)
        return;
    tick_all(c);
}

/* Returns the number of requests in flight. */
size_t mcc_pending(const mcc_client *c)
{
    size_t n = 0;

    if (!c)
        return 0;
    for (size_t i = 0; i < c->n_servers; i++)
        n += c->servers[i].conn.q_count -
             internal_count(&c->servers[i].conn);
    return n;
}

/* One round of the loop: polls every connection for at most wait_ms
 * (-1: no bound), handles what is ready, then ticks. */
static void run_once(mcc_client *c, int64_t wait_ms)
{
    struct pollfd *pfd = c->pfd;
    size_t n = 0;
    int64_t due = next_due(c);

    if (due >= 0) {
        int64_t until = due - mcc_now_ms();
        if (until < 0)
            until = 0;
        if (wait_ms < 0 || until < wait_ms)
            wait_ms = until;
    }
    if (wait_ms > INT_MAX)
        wait_ms = INT_MAX;
    for (size_t i = 0; i < c->n_servers; i++) {
        int w = conn_wants(&c->servers[i].conn);
        if (c->servers[i].conn.fd < 0 || w == 0)
            continue;
        pfd[n].fd = c->servers[i].conn.fd;
        pfd[n].events = (short)((w & MCC_WANT_READ ? POLLIN : 0) |
                                (w & MCC_WANT_WRITE ? POLLOUT : 0));
        pfd[n].revents = 0;
        c->pidx[n].server = i;
        c->pidx[n++].gen = c->servers[i].conn.gen;
    }
    if (n == 0 && wait_ms < 0)
        wait_ms = 0;            /* nothing could ever wake us */
    if (poll(pfd, n, (int)wait_ms) > 0) {
        for (size_t j = 0; j < n; j++) {
            size_t i = c->pidx[j].server;
            unsigned gen = c->pidx[j].gen;
            short re = pfd[j].revents;
            if ((re & (POLLOUT | POLLERR | POLLHUP)) &&
                c->servers[i].conn.gen == gen)
                handle_writable(c, i);
            if ((re & (POLLIN | POLLERR | POLLHUP)) &&
                c->servers[i].conn.gen == gen)
                handle_readable(c, i);
        }
    }
    tick_all(c);
}

/* Drives the connections until *done or the deadline. */
int mcc_run_until(mcc_client *c, const bool *done, int64_t deadline)
{
    while (!*done) {
        int64_t now = mcc_now_ms();
        if (deadline >= 0 && now >= deadline)
            return MCC_ERR_TIMEOUT;
        if (mcc_pending(c) == 0 && mcc_leases_next(c) < 0 &&
            deadline < 0)
            return MCC_ERR_TIMEOUT;
        run_once(c, deadline < 0 ? -1 : deadline - now);
    }
    return MCC_OK;
}

/* Runs one round of the loop. */
mcc_error mcc_poll(mcc_client *c, int timeout_ms)
{
    if (!c || timeout_ms < -1)
        return MCC_ERR_INVALID;
    if (c->in_callback)
        return MCC_ERR_BUSY;
    run_once(c, timeout_ms);
    return MCC_OK;
}
