/* server_int.h: the server's inner parts shared by server.c, listener.c and
 * worker.c: the worker threads and the acceptor. Not for other users;
 * engine/server/server.h is the interface.
 *
 * Ownership rule, written once for the whole server (and the only place
 * it is written):
 *   - a connection, its session and the session's holdings ledger and
 *     Dump cursor: only the worker thread that owns the connection touches
 *     them (after that thread is joined, the thread that joined it), with
 *     one exception: a connection's socket, direct_ok and direct_rest
 *     are shared under its direct lock (connection.h says the one store
 *     made without it), through which the worker that grants one of its
 *     tickets may write the granted event itself while the connection is
 *     idle;
 *   - a counter in the table: any thread, under its stripe lock (the
 *     locking rule is in engine/core/map.h);
 *   - a worker's mailbox: any thread posts, under the mailbox's lock, then
 *     rings its eventfd doorbell; only the worker takes. That is the one
 *     way another thread reaches a worker: work for a connection that lives
 *     on another worker travels as mail, never by touching the connection
 *     (a grant of a waiting ticket, decided under its counter's stripe lock
 *     by whichever thread released, is posted to the mailbox of the
 *     ticket's worker, which arms its lease and tells its client unless
 *     the granting worker could write the event already; a Lease_list
 *     asks every worker for its nearest lease deadlines the same way, as
 *     a survey each answers from its own wheel, see survey.h);
 *   - a worker's timing wheel and the tickets' timers in it: only the
 *     worker (the fields of a ticket itself follow engine/core/ticket.h);
 *   - a stats slot: a single writer, its owner (a worker, or the acceptor
 *     for its own slot), through cnt_stats_add; any thread reads;
 *   - a worker's event base: only its thread (it is built without locks);
 *     the acceptor's base: its thread, and the thread that stops it. */
#ifndef CNT_ENGINE_SERVER_INT_H
#define CNT_ENGINE_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "engine/server/connection.h"
#include "engine/server/mail.h"
#include "engine/server/server.h"

/* One worker thread: its own event base, the connections it owns, and the
 * mailbox through which other threads hand it work. */
typedef struct cnt_worker {
    cnt_server *server;
    unsigned index;
    pthread_t thread;
    bool running;
    struct event_base *base;
    cnt_mailbox mail;
    bool mail_ready;                /* cnt_mailbox_init succeeded */
    struct event *notify;           /* EV_READ on the mailbox's doorbell */
    atomic_bool stopping;           /* set before the stop ring */
    cnt_conn_env env;
    /* The deadlines of this worker's tickets (waits, leases), and the one
     * libevent timer that wakes the loop for the earliest of them. */
    cnt_wheel wheel;
    struct event *tick;
    uint64_t tick_at;               /* deadline tick is set for (ns of the
                                       monotonic clock); UINT64_MAX: none */
    /* Owned; touched only by the thread (an all-zero head is empty). */
    LIST_HEAD(, cnt_connection) conns;
    /* Grants this thread decided for its own connections: taken in the
     * same loop turn by the `local` event (made active, never added: no
     * fd, no lock, no doorbell), after the callback that granted them, so
     * an event never comes before an answer that callback produced. An
     * idle connection other than the one in its callback hears at once,
     * from the granting callback (its direct lock is free): those tickets
     * wait in local_told, which every connection callback takes first,
     * like the mailbox's. */
    cnt_grant_list local_grants;
    cnt_grant_list local_told;
    struct event *local;
    /* Set while the thread delivers grants: their events are sent at
     * once (cnt_connection_push) rather than on the next loop turn. */
    bool pushing;
    /* Lease listings waiting for a survey slot, oldest first (thread
     * only), and the flag that asks whoever frees a slot to ring this
     * worker's doorbell (any thread). */
    TAILQ_HEAD(, cnt_session) survey_waiters;
    atomic_bool survey_waiting;
} cnt_worker;

struct cnt_server {
    cnt_server_config config;
    cnt_table *table;
    cnt_stats *stats;
    const cnt_gc *gc;
    cnt_logger log;
    uint16_t port;
    cnt_auth_limit *auth_limit;     /* shared by every worker's sessions */

    int listen_fds[CNT_SERVER_MAX_BINDS];
    unsigned nlisten;
    /* The Throttr front's sockets (config.throttr_port; none when 0) on
     * the same addresses, and the port they got. */
    int throttr_fds[CNT_SERVER_MAX_BINDS];
    unsigned nthrottr;
    uint16_t throttr_port;
    /* The WebSocket front's sockets (config.http_port; none when 0). */
    int http_fds[CNT_SERVER_MAX_BINDS];
    unsigned nhttp;
    uint16_t http_port;

    unsigned nworkers;
    cnt_worker *workers;
    unsigned next_worker;           /* round robin; acceptor thread only */
    atomic_uint open_connections;   /* accepted and not yet closed */
    /* Lease_list surveys out at once, at most as many as workers: each
     * costs its asker one walk and every other worker at most one (batched
     * answers share a walk), so the walks listings cost a worker stay
     * bounded whatever the number of askers; the rest wait their turn, in
     * their workers' survey_waiters. */
    cnt_survey_gate survey_gate;

    /* The acceptor thread: libevent's listeners on the sockets above. */
    pthread_t acceptor;
    bool acceptor_running;
    struct event_base *abase;
    struct evconnlistener *listeners[CNT_SERVER_MAX_BINDS];
    struct evconnlistener *throttr_listeners[CNT_SERVER_MAX_BINDS];
    struct evconnlistener *http_listeners[CNT_SERVER_MAX_BINDS];
    struct event *accept_stop;
    struct event *accept_retry;     /* re-enables accepting after EMFILE */
    time_t fd_warned_at;            /* rate limit of the EMFILE warning */

    bool started;
};

/* Opens the listening sockets; false after logging the failure. */
bool cnt_listener_open(cnt_server *s);

/* Closes the listening sockets. */
void cnt_listener_close(cnt_server *s);

/* Starts the acceptor thread; returns 0 or an errno value. */
int cnt_listener_start(cnt_server *s);

/* Stops and joins the acceptor thread and frees its base. */
void cnt_listener_stop(cnt_server *s);

/* Prepares worker index i of s (its mailbox, no thread yet); false after
 * logging when that fails. */
bool cnt_worker_init(cnt_worker *w, cnt_server *s, unsigned i);

/* Starts the worker's thread and event base; returns 0 or an errno value. */
int cnt_worker_start(cnt_worker *w);

/* Stops and joins the worker's thread, leaving its connections open and
 * untouched (so that stopping several workers can first halt them all). */
void cnt_worker_halt(cnt_worker *w);

/* Stops and joins the thread, ends every connection it owned and closes
 * the sockets still in its mailbox. */
void cnt_worker_stop(cnt_worker *w);

/* Frees what cnt_worker_init prepared (the worker must be stopped). */
void cnt_worker_destroy(cnt_worker *w);

/* Makes the table hand every grant it decides to the mailbox of the
 * ticket's worker; call once the workers exist, before they start. */
void cnt_worker_route_grants(cnt_server *s);

/* Mails an accepted fd of front's listener to the worker (any thread);
 * false when memory is short (the caller still owns fd). */
bool cnt_worker_enqueue(cnt_worker *w, int fd, const cnt_front *front);

#endif
