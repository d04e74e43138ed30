/* worker.c: a worker thread of the counter port: its own lock-free event
 * base, the connections it owns, the mail other threads send it (the
 * sockets the acceptor hands over, the grants of its waiting tickets), the
 * timing wheel of its tickets' deadlines with the one libevent timer that
 * drives it, and a clean stop that tells every waiter and holder and
 * releases every connection's holdings. */
#include "config.h"

#include "engine/server/server_int.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

/* How many messages one doorbell callback takes before yielding. */
#define CNT_WORKER_BATCH 64
/* How many due timers one timer callback fires before giving way to the
 * sockets and, when more are due, to other threads (worker_on_tick): a
 * storm of expiries then delays other clients' answers by one slice at a
 * time, not by the whole storm. Each slice pays a loop turn and a yield,
 * so smaller slices stretch the storm. Measured with a million leases
 * expiring together (wait-bench -W leases, 2-core machine otherwise idle,
 * three runs each): slices of 16 made the storm last 1.7 s and of 32
 * 0.9-1.0 s, so the last events came a second or more late; 64 kept every
 * event within 0.8 s and a probe's p99 at 1.6-3.7x its idle p99; 128 at
 * 2.9-4.0x. The same bound caps the timers of a passed high slot that one
 * callback files into a lower level. */
#define CNT_WORKER_TIMER_BATCH 64

/* The worker this thread runs, NULL on any other thread: the grant sink
 * asks it whether a grant's owner lives on the granting thread. */
static _Thread_local cnt_worker *worker_self;

/* Connection close hook: unlinks c and frees its place in the limit. */
static void worker_on_close(void *owner, cnt_connection *c)
{
    cnt_worker *w = owner;
    LIST_REMOVE(c, link);
    atomic_fetch_sub(&w->server->open_connections, 1);
}

/* The monotonic clock's reading for the worker's wheel. */
static uint64_t worker_now_ns(const cnt_worker *w)
{
    return cnt_clock_mono_ns(cnt_table_clock(w->server->table));
}

/* Sets the loop's timer for deadline (ns), or clears it for UINT64_MAX. */
static void worker_tick_set(cnt_worker *w, uint64_t deadline)
{
    w->tick_at = deadline;
    if (deadline == UINT64_MAX) {
        evtimer_del(w->tick);
        return;
    }
    uint64_t now = worker_now_ns(w);
    uint64_t wait = deadline > now ? deadline - now : 0;
    /* Rounded up to the microsecond: waking early would only find the
     * wheel's tick not yet due and set the timer again. */
    uint64_t us = (wait + 999u) / 1000u;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000u),
                         .tv_usec = (suseconds_t)(us % 1000000u)};
    evtimer_add(w->tick, &tv);
}

/* Session hook: a timer was armed for deadline; wake in time for it. */
static void worker_timer_armed(const cnt_session_env *env, uint64_t deadline)
{
    cnt_worker *w = env->owner;

    if (deadline < w->tick_at && w->tick != NULL)
        worker_tick_set(w, deadline);
}

/* The loop's timer: fires a slice of the due timers of the wheel, then
 * sets itself for the next deadline (at once when some are left: libevent
 * polls the sockets before running it again). */
static void worker_on_tick(evutil_socket_t fd, short what, void *arg)
{
    cnt_worker *w = arg;
    (void)fd;
    (void)what;
    w->tick_at = UINT64_MAX;
    uint64_t now = worker_now_ns(w);
    cnt_wheel_advance_max(&w->wheel, now, cnt_session_fire,
                          &w->env.session, CNT_WORKER_TIMER_BATCH);
    uint64_t next = cnt_wheel_next_deadline(&w->wheel);
    /* More is due: a storm. Between slices the thread gives its core to
     * whoever waits for it (the host's threads, a client on this machine,
     * the other worker) instead of running out the scheduler's slice,
     * which on a busy machine kept a probe waiting a millisecond and
     * more; with nothing else runnable the call returns at once. */
    if (next <= now)
        sched_yield();
    worker_tick_set(w, next);
}

/* Session hook: events wait in s's output. While the thread delivers
 * grants they go out at once; otherwise (a storm of expiries fired by the
 * wheel) on the loop's next turn, one write per connection for the lot. */
static void worker_wake(cnt_session *s)
{
    const cnt_worker *w = s->env->owner;

    if (w->pushing)
        cnt_connection_push(s);
    else
        cnt_connection_wake(s);
}

/* Tells the clients of a list of grants (or frees the tickets whose
 * owners ended meanwhile), sending each event at once when the loop
 * runs; the list is empty afterwards. */
static void worker_deliver_list(cnt_worker *w, cnt_grant_list *grants)
{
    cnt_ticket *k;

    w->pushing = worker_self == w;     /* false while stopping */
    while ((k = STAILQ_FIRST(grants)) != NULL) {
        STAILQ_REMOVE_HEAD(grants, grant_link);     /* before it is freed */
        cnt_session_deliver(&w->env.session, k);
    }
    w->pushing = false;
}

/* Takes the grants queued in the mailbox and tells their clients. */
static void worker_take_grants(cnt_worker *w)
{
    cnt_grant_list grants = STAILQ_HEAD_INITIALIZER(grants);

    cnt_mailbox_take_grants(&w->mail, &grants);
    worker_deliver_list(w, &grants);
}

/* Takes the grants this thread decided for its own connections. */
static void worker_take_local(cnt_worker *w)
{
    cnt_grant_list grants = STAILQ_HEAD_INITIALIZER(grants);

    STAILQ_CONCAT(&grants, &w->local_told);
    STAILQ_CONCAT(&grants, &w->local_grants);
    worker_deliver_list(w, &grants);
}

/* The local event: grants decided earlier in this loop turn. */
static void worker_on_local(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_take_local(arg);
}

/* Takes a survey slot. A worker that finds none first asks to be rung
 * when one frees, then tries again, so a slot freed in between is not
 * missed (the freer either sees the flag or frees before the retry). */
static bool worker_gate_enter(cnt_worker *w)
{
    cnt_survey_gate *g = &w->server->survey_gate;

    if (cnt_survey_gate_enter(g))
        return true;
    atomic_store(&w->survey_waiting, true);
    return cnt_survey_gate_enter(g);
}

/* Every worker answered a survey: its slot is free, and the workers with
 * listings waiting for one are rung (any worker's thread). */
static void worker_survey_finished(cnt_server *srv)
{
    cnt_survey_gate_leave(&srv->survey_gate);
    for (unsigned i = 0; i < srv->nworkers; i++)
        if (atomic_exchange(&srv->workers[i].survey_waiting, false))
            cnt_mailbox_ring(&srv->workers[i].mail);
}

/* Starts s's survey in a slot already taken: posted to every worker,
 * this one too, so that each answers it in its next mailbox batch, from
 * the one walk that batch makes. NULL (the slot given back) when memory
 * is short. */
static cnt_survey *worker_survey_begin(cnt_worker *w, cnt_session *s,
                                       uint32_t want)
{
    cnt_server *srv = w->server;
    cnt_survey *sv = cnt_survey_new(srv->nworkers, w->index, want, s);

    if (sv == NULL) {
        worker_survey_finished(srv);
        return NULL;
    }
    for (unsigned i = 0; i < srv->nworkers; i++) {
        cnt_survey_hold(sv);
        cnt_mailbox_post_survey(&srv->workers[i].mail, &sv->links[i]);
    }
    return sv;
}

/* Session hook (Lease_list): a survey of every worker when a slot is
 * free and no listing of this worker waits for one; else s waits in
 * line. See session.h. */
static cnt_survey *worker_survey_start(cnt_session *s, uint32_t want)
{
    cnt_worker *w = s->env->owner;

    if (TAILQ_EMPTY(&w->survey_waiters) && worker_gate_enter(w))
        return worker_survey_begin(w, s, want);
    atomic_store(&w->survey_waiting, true);
    s->survey_queued = true;
    s->survey_want = want;
    TAILQ_INSERT_TAIL(&w->survey_waiters, s, survey_wait);
    return NULL;
}

/* Session hook: a queued listing's session ends. */
static void worker_survey_cancel(cnt_session *s)
{
    cnt_worker *w = s->env->owner;

    TAILQ_REMOVE(&w->survey_waiters, s, survey_wait);
}

/* Starts the waiting listings, oldest first, while slots are free. */
static void worker_start_waiters(cnt_worker *w)
{
    cnt_session *s;

    while ((s = TAILQ_FIRST(&w->survey_waiters)) != NULL) {
        if (!worker_gate_enter(w))
            return;
        TAILQ_REMOVE(&w->survey_waiters, s, survey_wait);
        cnt_session_survey_started(s, worker_survey_begin(w, s,
                                                          s->survey_want));
        cnt_connection_wake(s);
    }
}

/* Takes the surveys in the mailbox: answers those asked of this worker
 * (its own askers' included), all from one walk of its wheel (sending a
 * survey home when its answer was the last, which frees its slot), and
 * hands those come home to their sessions. A stopped worker (answer false) lets go of them all instead. */
static void worker_take_surveys(cnt_worker *w, bool answer)
{
    cnt_survey_list list = STAILQ_HEAD_INITIALIZER(list);
    cnt_survey_list asked = STAILQ_HEAD_INITIALIZER(asked);
    cnt_survey_list done = STAILQ_HEAD_INITIALIZER(done);
    cnt_survey_link *l;

    cnt_mailbox_take_surveys(&w->mail, &list);
    while ((l = STAILQ_FIRST(&list)) != NULL) {
        STAILQ_REMOVE_HEAD(&list, next);
        cnt_survey *sv = l->survey;
        if (sv->home == w->index && !sv->home_answered && answer) {
            sv->home_answered = true;
            STAILQ_INSERT_TAIL(&asked, l, next);
        } else if (sv->home == w->index) {
            cnt_session *s = cnt_survey_requester(sv);
            if (answer && s != NULL) {
                cnt_session_survey_done(s);
                cnt_connection_wake(s);
            }
            cnt_survey_put(sv);
        } else if (answer) {
            STAILQ_INSERT_TAIL(&asked, l, next);
        } else {
            cnt_survey_put(sv);
        }
    }
    cnt_survey_answer_batch(&asked, &w->wheel, CNT_LEASE_WALK_MAX, &done);
    while ((l = STAILQ_FIRST(&done)) != NULL) {
        STAILQ_REMOVE_HEAD(&done, next);
        cnt_survey *sv = l->survey;
        /* Its reference goes home with it. */
        cnt_mailbox_post_survey(&w->server->workers[sv->home].mail, l);
        worker_survey_finished(w->server);
    }
}

/* Queues a grant of this thread's own connection for the local event
 * (cnt_connection_try_direct's post): a ticket whose event went out
 * already waits apart, so a callback of its connection that runs first
 * takes it before reading what the client answered to that event. */
static void worker_post_local(void *ctx, cnt_ticket *k)
{
    cnt_worker *w = ctx;
    bool idle = STAILQ_EMPTY(&w->local_grants) &&
                STAILQ_EMPTY(&w->local_told);
    if (k->flags & CNT_TICKET_TOLD)
        STAILQ_INSERT_TAIL(&w->local_told, k, grant_link);
    else
        STAILQ_INSERT_TAIL(&w->local_grants, k, grant_link);
    if (idle)
        event_active(w->local, EV_READ, 0);    /* our own thread */
}

/* Posts a grant to a mailbox (cnt_connection_try_direct's post). */
static void worker_post(void *ctx, cnt_ticket *k)
{
    cnt_mailbox_post_grant(ctx, k);
}

/* Connection hook, before a callback reads: takes the grants in the
 * mailbox and those of this thread already told, whose events may have
 * been written to their clients already, so a request that follows such
 * an event finds its grant delivered. Their other events go out with the
 * write event (this runs inside a connection's callback). */
static void worker_take_mail(void *owner)
{
    cnt_worker *w = owner;
    cnt_grant_list grants = STAILQ_HEAD_INITIALIZER(grants);
    cnt_ticket *k;

    STAILQ_CONCAT(&grants, &w->local_told);
    if (cnt_mailbox_has_grants(&w->mail))
        cnt_mailbox_take_grants(&w->mail, &grants);
    while ((k = STAILQ_FIRST(&grants)) != NULL) {
        STAILQ_REMOVE_HEAD(&grants, grant_link);
        cnt_session_deliver(&w->env.session, k);
    }
}

/* The table's grant sink. Either way the event is first written straight
 * to the owner's socket when that connection is idle (and, on the owner's
 * own thread, not the one whose callback granted). A ticket granted by its
 * owner's own thread is then taken later in the same loop turn, with no
 * doorbell; the waiter hears before the releasing client gets its answer.
 * One granted by another thread goes to the owner's mailbox, so the
 * client hears without waiting for the owner's thread to wake (which
 * still arms the lease). */
static void worker_grant_sink(void *ctx, cnt_ticket *k)
{
    cnt_server *s = ctx;
    cnt_worker *w = &s->workers[k->worker];

    if (w == worker_self) {
        (void)cnt_connection_try_direct(s->table, k, worker_post_local, w);
        return;
    }
    if (worker_self != NULL)
        (void)cnt_connection_try_direct(s->table, k, worker_post, &w->mail);
    else
        cnt_mailbox_post_grant(&w->mail, k);
}

/* Routes the table's grants to the workers' mailboxes. */
void cnt_worker_route_grants(cnt_server *s)
{
    cnt_grant_sink sink = {worker_grant_sink, s};

    cnt_table_set_grant_sink(s->table, &sink);
}

/* Prepares worker index i of s (its mailbox, no thread yet); false after
 * logging when that fails. */
bool cnt_worker_init(cnt_worker *w, cnt_server *s, unsigned i)
{
    memset(w, 0, sizeof(*w));
    w->server = s;
    w->index = i;
    int rc = cnt_mailbox_init(&w->mail);
    if (rc != 0) {
        cnt_log(&s->log, CNT_LOG_WARNING,
                "counter: cannot make worker %u's mailbox: %s", i,
                strerror(rc));
        return false;
    }
    w->mail_ready = true;
    STAILQ_INIT(&w->local_grants);
    STAILQ_INIT(&w->local_told);
    TAILQ_INIT(&w->survey_waiters);
    atomic_init(&w->survey_waiting, false);
    w->env.session.table = s->table;
    w->env.session.limits = s->config.limits;
    w->env.session.throttle = s->config.throttle;
    w->env.session.secret = s->config.secret;
    w->env.session.secret_len = s->config.secret_len;
    w->env.session.reload = s->config.reload;
    w->env.session.reload_ctx = s->config.reload_ctx;
    w->env.session.auth_failed = cnt_connection_auth_failed;
    w->env.session.auth_limit = s->auth_limit;
    w->env.session.privileged_change = cnt_connection_privileged_change;
    w->env.session.stats = s->stats;
    w->env.session.gc = s->gc;
    w->env.session.slot = cnt_stats_slot_get(s->stats, i);
    w->env.session.groups = s->config.groups;
    w->env.session.max_waits = s->config.max_waits;
    w->env.session.wheel = &w->wheel;
    w->env.session.worker = (uint16_t)i;
    w->env.session.wake = worker_wake;
    w->env.session.timer_armed = worker_timer_armed;
    w->env.session.owner = w;
    w->env.session.survey_start = worker_survey_start;
    w->env.session.survey_cancel = worker_survey_cancel;
    w->env.session.throttr_value_size = s->config.throttr_value_size;
    w->env.session.ws_max_header = s->config.http_max_header;
    w->env.session.ws_max_message = s->config.http_max_message;
    w->env.session.users = s->config.users;
    if (s->config.default_tenant != NULL) {
        w->env.session.default_tenant =
            (const uint8_t *)s->config.default_tenant;
        w->env.session.default_tenant_len =
            (uint16_t)strlen(s->config.default_tenant);
    }
    memcpy(w->env.session.tenant_cost, s->config.tenant_cost,
           sizeof(w->env.session.tenant_cost));
    w->tick_at = UINT64_MAX;
    cnt_wheel_init(&w->wheel,
                   cnt_clock_mono_ns(cnt_table_clock(s->table)));
    w->env.log = &s->log;
    w->env.on_close = worker_on_close;
    w->env.take_mail = worker_take_mail;
    w->env.owner = w;
    return true;
}

/* Frees what cnt_worker_init prepared (the worker must be stopped). */
void cnt_worker_destroy(cnt_worker *w)
{
    if (w->mail_ready)
        cnt_mailbox_destroy(&w->mail);
    w->mail_ready = false;
}

/* Mails an accepted fd to the worker (any thread); false when memory is
 * short (the caller still owns fd). */
bool cnt_worker_enqueue(cnt_worker *w, int fd, const cnt_front *front)
{
    cnt_mail m = {.fd = fd, .front = front};
    return cnt_mailbox_post(&w->mail, &m);
}

/* Sets one integer socket option; a failure is logged, not fatal (the
 * connection still works, only without that option). */
static void worker_sockopt(cnt_worker *w, int fd, int level, int name,
                           int value, const char *what)
{
    if (setsockopt(fd, level, name, &value, sizeof(value)) != 0)
        cnt_log(&w->server->log, CNT_LOG_DEBUG,
                "counter: %s on connection %d: %s", what, fd,
                strerror(errno));
}

/* Keepalive probes find a peer that vanished without a FIN or RST (power
 * loss, a cut network) while the connection is idle; the user timeout
 * ends it in the same bound when answers are stuck unacknowledged, where
 * keepalive does not probe. Either way its holdings are then released. */
static void worker_keepalive(cnt_worker *w, int fd)
{
    const cnt_server_config *cfg = &w->server->config;

    if (!cfg->keepalive)
        return;
    uint64_t bound_ms = 1000u * ((uint64_t)cfg->keepalive_idle +
                                 (uint64_t)cfg->keepalive_interval *
                                     cfg->keepalive_count);
    worker_sockopt(w, fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_KEEPIDLE,
                   (int)cfg->keepalive_idle, "TCP_KEEPIDLE");
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_KEEPINTVL,
                   (int)cfg->keepalive_interval, "TCP_KEEPINTVL");
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_KEEPCNT,
                   (int)cfg->keepalive_count, "TCP_KEEPCNT");
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_USER_TIMEOUT,
                   bound_ms > INT_MAX ? INT_MAX : (int)bound_ms,
                   "TCP_USER_TIMEOUT");
}

/* Turns one accepted fd into a connection, or closes it. */
static void worker_adopt(cnt_worker *w, int fd, const cnt_front *front)
{
    /* Answers are small and batched already: never wait for Nagle. */
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
    worker_keepalive(w, fd);
    cnt_connection *c = cnt_connection_new_front(
        &w->env, fd, front != NULL ? front : &cnt_front_counter);
    if (c == NULL) {
        cnt_log(&w->server->log, CNT_LOG_WARNING,
                "counter: out of memory for a new connection; closing it");
        close(fd);
        atomic_fetch_sub(&w->server->open_connections, 1);
        return;
    }
    LIST_INSERT_HEAD(&w->conns, c, link);
}

/* Disposes of a message a stopped worker will never act on: a socket
 * nobody adopted is closed (and leaves the connection count). */
static void worker_discard(cnt_worker *w, const cnt_mail *m)
{
    close(m->fd);
    atomic_fetch_sub(&w->server->open_connections, 1);
}

/* Acts on one message. */
static void worker_deliver(cnt_worker *w, const cnt_mail *m)
{
    worker_adopt(w, m->fd, m->front);
}

/* Doorbell callback: ends the loop when stopping, else acts on the mail. */
static void worker_on_notify(evutil_socket_t fd, short what, void *arg)
{
    cnt_worker *w = arg;
    cnt_mail mail[CNT_WORKER_BATCH];
    bool more;
    (void)fd;
    (void)what;
    /* EAGAIN means an earlier callback already silenced it. */
    int rc = cnt_mailbox_answer(&w->mail);
    if (rc != 0 && rc != EAGAIN && rc != EINTR)
        cnt_log(&w->server->log, CNT_LOG_WARNING,
                "counter: worker %u: reading its eventfd failed: %s",
                w->index, strerror(rc));
    if (atomic_load(&w->stopping)) {
        event_base_loopbreak(w->base);
        return;
    }
    worker_take_grants(w);
    worker_take_surveys(w, true);
    worker_start_waiters(w);
    size_t n = cnt_mailbox_take(&w->mail, mail, CNT_WORKER_BATCH, &more);
    for (size_t k = 0; k < n; k++)
        worker_deliver(w, &mail[k]);
    if (more)
        event_active(w->notify, EV_READ, 0);    /* our own thread: no lock */
}

/* The thread: runs the loop until stopped (idle is not a reason to end). */
static void *worker_main(void *arg)
{
    cnt_worker *w = arg;
    worker_self = w;
    event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
    worker_self = NULL;
    return NULL;
}

/* Frees the worker's event base and its doorbell and timer events. */
static void worker_free_base(cnt_worker *w)
{
    if (w->tick != NULL)
        event_free(w->tick);
    w->tick = NULL;
    if (w->local != NULL)
        event_free(w->local);
    w->local = NULL;
    w->tick_at = UINT64_MAX;
    if (w->notify != NULL)
        event_free(w->notify);
    if (w->base != NULL)
        event_base_free(w->base);
    w->notify = NULL;
    w->base = NULL;
}

/* A base without libevent's locks: it is only ever used by one thread. */
static struct event_base *worker_base_new(void)
{
    struct event_config *cfg = event_config_new();
    if (cfg == NULL)
        return NULL;
    struct event_base *base = NULL;
    if (event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK) == 0)
        base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

/* Starts the worker's thread and event base; returns 0 or an errno value. */
int cnt_worker_start(cnt_worker *w)
{
    atomic_store(&w->stopping, false);
    w->base = worker_base_new();
    if (w->base != NULL) {
        w->notify = event_new(w->base, cnt_mailbox_doorbell(&w->mail),
                              EV_READ | EV_PERSIST, worker_on_notify, w);
        w->tick = evtimer_new(w->base, worker_on_tick, w);
        w->local = event_new(w->base, -1, 0, worker_on_local, w);
    }
    if (w->notify == NULL || w->tick == NULL || w->local == NULL ||
        event_add(w->notify, NULL) != 0) {
        worker_free_base(w);
        return ENOMEM;
    }
    w->env.base = w->base;
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (rc != 0) {
        worker_free_base(w);
        return rc;
    }
    w->running = true;
    return 0;
}

/* Stops and joins the thread; its connections stay open and untouched. */
void cnt_worker_halt(cnt_worker *w)
{
    if (!w->running)
        return;
    /* The eventfd keeps the ring until the loop reads it, even when the
     * loop has not started yet, so the stop cannot be lost. */
    atomic_store(&w->stopping, true);
    cnt_mailbox_ring(&w->mail);
    pthread_join(w->thread, NULL);
    w->running = false;
}

/* Halts the thread, then ends every connection it owned (releasing their
 * holdings) and closes what is still in its mailbox. */
void cnt_worker_stop(cnt_worker *w)
{
    cnt_worker_halt(w);
    if (w->base == NULL)
        return;
    /* The thread is gone: this thread may now touch its connections.
     * Every waiter and holder hears of the shutdown first. */
    while (!LIST_EMPTY(&w->conns))
        cnt_connection_shutdown(LIST_FIRST(&w->conns));
    /* Grants still queued (in the mailbox, or decided by the thread in
     * the turn it stopped) are of tickets whose owners have just ended
     * (orphans, freed here). */
    worker_take_grants(w);
    worker_take_local(w);
    /* Surveys still queued: asked of a stopped worker, or come home to
     * sessions that have just ended; nobody will answer or read them. */
    worker_take_surveys(w, false);
    cnt_wheel_destroy(&w->wheel);
    cnt_mail mail[CNT_WORKER_BATCH];
    bool more = true;
    while (more) {
        size_t n = cnt_mailbox_take(&w->mail, mail, CNT_WORKER_BATCH, &more);
        for (size_t k = 0; k < n; k++)
            worker_discard(w, &mail[k]);
    }
    worker_free_base(w);
}
