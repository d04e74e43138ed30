/* connection.c: moves bytes between a client socket and its session: reads
 * once, lets the session answer every whole request, sends the answers with
 * one call, and chooses which events to wait for (back-pressure by the
 * output's watermark, fairness by its per-turn budget). */
#include "config.h"

#include "engine/server/connection.h"

#include "protocol/response.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Rounds of produce-and-send per callback before yielding to the other
 * connections of the worker (fairness under pipelined floods). */
#define CNT_CONN_ROUNDS 4
/* Most answer bytes one callback produces for its connection before
 * yielding to the worker's other connections. A read brings at most
 * CNT_CONN_IN_INITIAL bytes of ordinary requests, whose answers fit well
 * within it; what it cuts into slices is a Dump, so that a hundred
 * clients dumping a large table delay the others by one slice each. */
#define CNT_CONN_TURN_BYTES (64u * 1024)

/* The binary front's granted event (cnt_front.direct_event): the 0x92
 * packet the owner would write; 0 when it does not fit in cap. */
static size_t conn_counter_event(const cnt_ticket *k, uint8_t *buf,
                                 size_t cap)
{
    if (CNT_EVENT_SIZE(k->name_len) > cap)
        return 0;
    return cnt_encode_event(buf, CNT_EVENT_GRANTED, k->opaque, k->lease_id,
                            k->granted_consumption, k->name, k->name_len);
}

const cnt_front cnt_front_counter = {"counter", "magic",
                                     cnt_session_feed, NULL,
                                     conn_counter_event};
const cnt_front cnt_front_throttr = {"throttr", "request type",
                                     cnt_session_feed_throttr, NULL, NULL};
const cnt_front cnt_front_websocket = {"websocket", "byte",
                                       cnt_session_feed_ws,
                                       cnt_session_ws_quiet,
                                       cnt_session_ws_granted_frame};

/* Grows the input buffer so a request of size bytes fits; false when
 * memory is short. Never past CNT_REQUEST_MAX (the decoder's bound). */
static bool conn_in_grow(cnt_connection *c, size_t size)
{
    if (size <= c->in_cap)
        return true;
    if (size > CNT_REQUEST_MAX)
        size = CNT_REQUEST_MAX;
    uint8_t *p = realloc(c->in, size);
    if (p == NULL)
        return false;
    c->in = p;
    c->in_cap = size;
    return true;
}

/* Lets the session answer the buffered input and drops what it consumed;
 * false when memory ran out (the connection must end). */
static bool conn_produce(cnt_connection *c)
{
    cnt_session *s = &c->session;
    bool was_closing = s->closing;
    size_t used = c->front->feed(s, c->in, c->in_len);
    if (s->closing && !was_closing && s->close_reason != NULL)
        cnt_log(c->env->log, CNT_LOG_DEBUG,
                "counter: connection %s (fd %d) on the %s port: %s",
                s->peer, c->fd, c->front->name, s->close_reason);
    else if (s->closing && !was_closing && s->auth_closed)
        cnt_log(c->env->log, CNT_LOG_WARNING,
                "counter: connection %s (fd %d): too many failed "
                "authentications; closing", s->peer, c->fd);
    else if (s->closing && !was_closing)
        cnt_log(c->env->log, CNT_LOG_WARNING,
                "counter: connection %s (fd %d) on the %s port: lost "
                "request framing (%s 0x%02x); closing", s->peer, c->fd,
                c->front->name, c->front->first_byte, c->in[used]);
    if (used > 0) {
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
    }
    if (s->failed || !conn_in_grow(c, s->need)) {
        cnt_log(c->env->log, CNT_LOG_WARNING,
                "counter: connection %s (fd %d): out of memory; closing",
                s->peer, c->fd);
        return false;
    }
    return true;
}

/* Logs a failed send (a peer that went away is routine). */
static void conn_send_failed(cnt_connection *c, int e)
{
    cnt_log(c->env->log,
            e == EPIPE || e == ECONNRESET ? CNT_LOG_DEBUG : CNT_LOG_WARNING,
            "counter: connection %s (fd %d): send failed: %s",
            c->session.peer, c->fd, strerror(e));
}

/* Sends what a direct write left (direct lock held); false on a fatal
 * socket error. */
static bool conn_flush_rest(cnt_connection *c)
{
    while (c->direct_rest_len > 0) {
        ssize_t n = send(c->fd, c->direct_rest, c->direct_rest_len,
                         MSG_NOSIGNAL);
        if (n > 0) {
            c->direct_rest_len = (uint8_t)(c->direct_rest_len - n);
            memmove(c->direct_rest, c->direct_rest + n, c->direct_rest_len);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        conn_send_failed(c, errno);
        return false;
    }
    return true;
}

/* Bytes waiting to be sent: the rest of a direct write, then the output. */
static size_t conn_pending(const cnt_connection *c)
{
    return c->direct_rest_len + cnt_outbuf_pending(&c->session.out);
}

/* Sends unsent output with one call; false on a fatal socket error. */
static bool conn_flush(cnt_connection *c)
{
    cnt_outbuf *o = &c->session.out;
    if (!conn_flush_rest(c))
        return false;
    if (c->direct_rest_len > 0)
        return true;    /* the rest first: the output waits for EV_WRITE */
    while (cnt_outbuf_pending(o) > 0) {
        ssize_t n = send(c->fd, cnt_outbuf_data(o), cnt_outbuf_pending(o),
                         MSG_NOSIGNAL);
        if (n > 0) {
            cnt_outbuf_consume(o, (size_t)n);
            break;      /* the rest, if any, waits for EV_WRITE */
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        conn_send_failed(c, errno);
        return false;
    }
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
    cnt_outbuf_shrink(&c->session.out);
}

static void conn_on_resume(evutil_socket_t fd, short what, void *arg);

/* Pauses the connection for ns nanoseconds: its session stopped at a
 * request its tenant cannot pay for this second. Its read event goes
 * (the worker spends nothing on it meanwhile; what the client sends
 * waits in the kernel) and one timer brings it back just after the
 * second turns. False when the timer cannot be made. */
static bool conn_pause(cnt_connection *c, uint64_t ns)
{
    if (c->resume == NULL) {
        c->resume = evtimer_new(c->env->base, conn_on_resume, c);
        if (c->resume == NULL)
            return false;
    }
    /* Rounded up to the microsecond, and one more: waking a hair early
     * would find the old second and pause again. */
    uint64_t us = (ns + 999u) / 1000u + 1u;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000u),
                         .tv_usec = (suseconds_t)(us % 1000000u)};
    if (evtimer_add(c->resume, &tv) != 0)
        return false;
    c->paused = true;
    return true;
}

/* Answers what is buffered, sends, and chooses which events to wait for;
 * returns false when the connection must end now. */
static bool conn_work(cnt_connection *c)
{
    cnt_session *s = &c->session;
    cnt_outbuf *o = &s->out;
    cnt_outbuf_begin_turn(o, CNT_CONN_TURN_BYTES);
    for (int round = 0; round < CNT_CONN_ROUNDS && !c->paused; round++) {
        if (!conn_produce(c) || !conn_flush(c))
            return false;
        if (s->pause_ns > 0 && !conn_pause(c, s->pause_ns)) {
            cnt_log(c->env->log, CNT_LOG_WARNING,
                    "counter: connection %s (fd %d): out of memory; "
                    "closing", s->peer, c->fd);
            return false;
        }
        if (conn_pending(c) > 0 || !s->more ||
            cnt_outbuf_turn_over(o))
            break;
    }
    /* Paused: events (grants, expiries) still go out, nothing is read. */
    if (c->paused && !conn_flush(c))
        return false;
    bool pending = conn_pending(c) > 0;
    if (c->paused) {
        conn_event_set(c->rev, &c->reading, false);
        conn_event_set(c->wev, &c->writing, pending);
        return true;
    }
    if (s->closing && !pending)
        return false;
    /* A client that shut its write side gets every answer, then we close. */
    if (c->eof && !pending && !s->more && !s->surveying)
        return false;
    /* Read only while the output is below the watermark and no Dump or
     * backlog is waiting: unread bytes stay in the kernel (back-pressure). */
    bool want_read = !c->eof && !s->closing && !s->more &&
                     !s->surveying && !cnt_outbuf_above_high(o);
    /* With work left and the socket drained, EV_WRITE fires at once: it
     * resumes us after the worker's other connections had their turn. */
    bool want_write = pending || s->more;
    conn_event_set(c->rev, &c->reading, want_read);
    conn_event_set(c->wev, &c->writing, want_write);
    if (!pending && !s->more)
        conn_shrink(c);
    return true;
}

/* Reads once into the input buffer; false when the connection must end. */
static bool conn_read(cnt_connection *c)
{
    if (c->in_len == c->in_cap) {
        /* Only a request bigger than the buffer gets here; the session
         * has already said how big, and conn_in_grow made room. Nothing
         * to read into means the session is waiting on output instead. */
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
            "counter: connection %s (fd %d): recv failed: %s",
            c->session.peer, c->fd, strerror(errno));
    return false;
}

static void conn_free(cnt_connection *c);

/* Whether a granting thread (another worker, or this one outside the
 * connection's callbacks) may write a granted event straight to the
 * socket now (direct lock held): a front that frames such events and has
 * nothing of its own under way, nothing unsent, no stream, no close begun
 * or due. */
static inline bool conn_idle(const cnt_connection *c)
{
    const cnt_session *s = &c->session;
    return c->front->direct_event != NULL &&
           (c->front->quiet == NULL || c->front->quiet(s)) && !c->eof && !s->closing && !s->failed && !s->ending && !s->more &&
           !s->surveying && conn_pending(c) == 0;
}

/* libevent callback for both events of a connection. The direct lock is
 * held throughout: answers produced here are sent, or the connection is
 * not idle, before another worker may write to the socket. */
static void conn_on_event(evutil_socket_t fd, short what, void *arg)
{
    cnt_connection *c = arg;
    (void)fd;
    pthread_mutex_lock(&c->direct_lock);
    c->owner_holds = true;
    c->direct_ok = false;
    if (c->env->take_mail != NULL)
        c->env->take_mail(c->env->owner);
    if (((what & EV_READ) && !conn_read(c)) || !conn_work(c)) {
        conn_free(c);
        return;
    }
    c->direct_ok = conn_idle(c);
    c->owner_holds = false;
    pthread_mutex_unlock(&c->direct_lock);
}

/* The pause's timer: the new second gives the tenant credit again; the
 * connection answers what waited (paying again, so it may pause once
 * more) and reads again. */
static void conn_on_resume(evutil_socket_t fd, short what, void *arg)
{
    cnt_connection *c = arg;
    (void)fd;
    (void)what;
    pthread_mutex_lock(&c->direct_lock);
    c->owner_holds = true;
    c->direct_ok = false;
    if (c->env->take_mail != NULL)
        c->env->take_mail(c->env->owner);
    c->paused = false;
    /* A paused connection reads nothing, so it would not see its client
     * vanish until its backlog is paid for, which a tenant that stays
     * over its share may never do: a reset seen by the kernel ends it. */
    int err = 0;
    socklen_t errlen = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &errlen) == 0 &&
        err != 0) {
        cnt_log(c->env->log, CNT_LOG_DEBUG,
                "counter: connection %s (fd %d) reset while paused: %s",
                c->session.peer, c->fd, strerror(err));
        conn_free(c);
        return;
    }
    if (!conn_work(c)) {
        conn_free(c);
        return;
    }
    c->direct_ok = conn_idle(c);
    c->owner_holds = false;
    pthread_mutex_unlock(&c->direct_lock);
}

/* The address (as text) and port of an IPv4 or IPv6 socket address;
 * false for any other family. */
bool cnt_sockaddr_text(const struct sockaddr *sa, char *addr,
                       uint16_t *port)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        *port = ntohs(a->sin_port);
        return inet_ntop(AF_INET, &a->sin_addr, addr,
                         CNT_PEER_ADDR_MAX) != NULL;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        *port = ntohs(a->sin6_port);
        return inet_ntop(AF_INET6, &a->sin6_addr, addr,
                         CNT_PEER_ADDR_MAX) != NULL;
    }
    return false;
}

/* Tells the session who its client is (the socket's peer), for the log
 * and the per-address limit of failed authentications. */
static void conn_peer(cnt_connection *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char addr[CNT_PEER_ADDR_MAX];
    uint16_t port;

    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0 &&
        cnt_sockaddr_text((const struct sockaddr *)&ss, addr, &port))
        cnt_session_set_peer(&c->session, addr, port);
}

/* Takes over fd (non-blocking, connected) and starts reading; NULL when
 * memory is short (fd is then left open for the caller to close). */
cnt_connection *cnt_connection_new(const cnt_conn_env *env, int fd)
{
    return cnt_connection_new_front(env, fd, &cnt_front_counter);
}

/* The same for a connection of the given front. */
cnt_connection *cnt_connection_new_front(const cnt_conn_env *env, int fd,
                                         const cnt_front *front)
{
    cnt_connection *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->fd = fd;
    c->env = env;
    c->front = front;
    c->in = malloc(CNT_CONN_IN_INITIAL);
    if (pthread_mutex_init(&c->direct_lock, NULL) != 0) {
        free(c->in);
        free(c);
        return NULL;
    }
    bool session = cnt_session_init(&c->session, &env->session);
    c->rev = event_new(env->base, fd, EV_READ | EV_PERSIST, conn_on_event, c);
    c->wev = event_new(env->base, fd, EV_WRITE | EV_PERSIST, conn_on_event,
                       c);
    if (c->in == NULL || !session || c->rev == NULL || c->wev == NULL ||
        event_add(c->rev, NULL) != 0) {
        if (c->rev != NULL)
            event_free(c->rev);
        if (c->wev != NULL)
            event_free(c->wev);
        if (session)
            cnt_session_end(&c->session);
        pthread_mutex_destroy(&c->direct_lock);
        free(c->in);
        free(c);
        return NULL;
    }
    c->reading = true;
    c->direct_ok = true;
    c->in_cap = CNT_CONN_IN_INITIAL;
    cnt_stats_slot *slot = env->session.slot;
    cnt_stats_add(&slot->curr_connections, 1);
    cnt_stats_add(&slot->total_connections, 1);
    conn_peer(c);
    cnt_log(env->log, CNT_LOG_DEBUG, "counter: connection %s (fd %d) opened",
            c->session.peer, fd);
    return c;
}

/* Session hook: events wait in s's output; the connection sends them
 * through its write callback, which the loop runs as soon as the socket
 * takes bytes. The write event is added, not made active by hand:
 * libevent does not put an event that is active but not added into its
 * poll set when event_add comes before the callback runs, so a read in
 * the same loop turn that wanted to write would leave the connection
 * believing in a write event that never comes (a stream then stalls for
 * good, and the connection outlives its client). */
void cnt_connection_wake(cnt_session *s)
{
    cnt_connection *c = (cnt_connection *)((uint8_t *)s -
                                           offsetof(cnt_connection,
                                                    session));
    /* Events queued outside the connection's callbacks (the wheel's
     * timeouts and expiries, grants from the mailbox) make it busy:
     * another worker's direct write must not pass them. No lock: this
     * may run inside another connection's callback, whose direct lock
     * the thread holds, and a second blocking lock there would nest the
     * two. A writer that claimed the lock before this store sends its
     * event first, which is the order it would have had with the lock;
     * the events queued here go out under the lock after it. */
    atomic_store(&c->direct_ok, false);
    conn_event_set(c->wev, &c->writing, true);
}

/* Sends events at once when nothing else is under way; see connection.h.
 * A connection not writing has nothing pending and is reading (conn_work
 * wants the write event whenever output or a stream waits), so sending it
 * all leaves its events as conn_work would have set them. */
void cnt_connection_push(cnt_session *s)
{
    cnt_connection *c = (cnt_connection *)((uint8_t *)s -
                                           offsetof(cnt_connection,
                                                    session));
    pthread_mutex_lock(&c->direct_lock);
    c->direct_ok = false;
    if (!c->writing && !s->more && !s->failed && conn_flush(c) &&
        conn_pending(c) == 0) {
        c->direct_ok = !c->owner_holds && conn_idle(c);
        pthread_mutex_unlock(&c->direct_lock);
        return;
    }
    pthread_mutex_unlock(&c->direct_lock);
    conn_event_set(c->wev, &c->writing, true);
}

/* Under k's stripe lock (k is live, so its connection is): takes the
 * connection's direct lock when it is free and the connection idle. */
static bool conn_direct_claim(void *ctx, cnt_ticket *k)
{
    cnt_session *s = k->owner;
    cnt_connection *c = (cnt_connection *)((uint8_t *)s -
                                           offsetof(cnt_connection,
                                                    session));
    (void)ctx;
    if (pthread_mutex_trylock(&c->direct_lock) != 0)
        return false;
    if (!c->direct_ok) {
        pthread_mutex_unlock(&c->direct_lock);
        return false;
    }
    return true;
}

/* Writes k's granted event straight to its owner's socket; see
 * connection.h. While the direct lock is held the owner cannot end k nor
 * free the connection, and nothing else writes to the socket. */
bool cnt_connection_try_direct(cnt_table *t, cnt_ticket *k,
                               void (*post)(void *ctx, cnt_ticket *k),
                               void *ctx)
{
    uint8_t buf[CNT_DIRECT_EVENT_MAX];

    if (!cnt_table_ticket_pinned(t, k, conn_direct_claim, NULL)) {
        post(ctx, k);
        return false;
    }
    cnt_connection *c = (cnt_connection *)((uint8_t *)k->owner -
                                           offsetof(cnt_connection,
                                                    session));
    /* Claimed, so the front frames events this way (conn_idle). */
    size_t n = c->front->direct_event(k, buf, sizeof(buf));
    ssize_t sent = 0;
    if (n != 0) {
        do
            sent = send(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (sent < 0 && errno == EINTR);
    }
    bool told = sent > 0;
    if (told) {
        /* The rest goes out first, by the owner, which the grant's mail
         * wakes; until then nobody else writes here. */
        c->direct_rest_len = (uint8_t)(n - (size_t)sent);
        memcpy(c->direct_rest, buf + sent, c->direct_rest_len);
        /* Only the owner makes the connection idle again: a store of
         * true here could undo the owner's false of a moment ago. */
        if (c->direct_rest_len != 0)
            c->direct_ok = false;
        k->flags |= CNT_TICKET_TOLD;
    } else {
        /* Not written (too long for this path, the socket full): the
         * owner sends it. Busy, since a later grant's event written here
         * would pass this one's; the owner makes the connection idle
         * again at the end of its next callback, which may come before
         * k reaches it, so this narrows the window in which events of
         * two names cross (which the protocol allows) and does not close
         * it. */
        c->direct_ok = false;
    }
    post(ctx, k);
    pthread_mutex_unlock(&c->direct_lock);
    return told;
}

/* Session hook: logs a failed authentication; see connection.h. */
void cnt_connection_auth_failed(cnt_session *s, unsigned attempt,
                                unsigned tries, bool refused)
{
    cnt_connection *c = (cnt_connection *)((uint8_t *)s -
                                           offsetof(cnt_connection,
                                                    session));
    cnt_log(c->env->log, CNT_LOG_WARNING,
            "counter: authentication failed on connection %s (fd %d, "
            "attempt %u of %u)%s", s->peer, c->fd, attempt, tries,
            refused ? ": refused unjudged, too many failed authentications "
                      "(counter.auth_fail_limit, "
                      "counter.auth_fail_limit_per_address)"
                    : "");
}

/* Session hook: logs a privileged change; see connection.h. */
void cnt_connection_privileged_change(cnt_session *s, const char *what)
{
    cnt_connection *c = (cnt_connection *)((uint8_t *)s -
                                           offsetof(cnt_connection,
                                                    session));
    cnt_log(c->env->log, CNT_LOG_WARNING,
            "counter: privileged change by connection %s (fd %d): %s",
            s->peer, c->fd, what);
}

/* The server is stopping: tells the session's waiters and holders, sends
 * what the socket takes at once, and ends the connection. */
void cnt_connection_shutdown(cnt_connection *c)
{
    pthread_mutex_lock(&c->direct_lock);
    c->owner_holds = true;
    c->direct_ok = false;
    cnt_session_shutdown(&c->session);
    if (!c->session.failed)
        (void)conn_flush(c);
    conn_free(c);
}

/* Ends the connection: ends its session (releasing everything it holds),
 * closes the socket, calls env->on_close and frees it. The caller holds
 * the direct lock: once the session has ended its tickets, no other
 * worker can reach the connection any more. */
static void conn_free(cnt_connection *c)
{
    const cnt_conn_env *env = c->env;
    c->direct_ok = false;
    cnt_session_end(&c->session);
    pthread_mutex_unlock(&c->direct_lock);
    pthread_mutex_destroy(&c->direct_lock);
    event_free(c->rev);
    event_free(c->wev);
    if (c->resume != NULL)
        event_free(c->resume);
    close(c->fd);
    cnt_stats_add(&env->session.slot->curr_connections, -1);
    cnt_log(env->log, CNT_LOG_DEBUG, "counter: connection %s (fd %d) closed",
            c->session.peer, c->fd);
    if (env->on_close != NULL)
        env->on_close(env->owner, c);
    free(c->in);
    free(c);
}
