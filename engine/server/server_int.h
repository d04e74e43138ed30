/* server_int.h: the server's inner parts shared by server.c, listener.c and
 * worker.c: the worker threads and the acceptor. Not for other users;
 * engine/server.h is the interface. */
#ifndef CNT_ENGINE_SERVER_INT_H
#define CNT_ENGINE_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <event2/event.h>

#include "engine/server/connection.h"
#include "engine/server/server.h"

/* One worker thread: its own event base, the connections it owns, and the
 * queue through which the acceptor hands it new sockets. */
typedef struct cnt_worker {
    cnt_server *server;
    unsigned index;
    pthread_t thread;
    bool running;
    /* Built with EVENT_BASE_FLAG_NOLOCK: only the worker's thread touches
     * it, so libevent takes no lock per event. Other threads reach the
     * worker through wake_fd (an eventfd) alone. */
    struct event_base *base;
    int wake_fd;                    /* written when fds are queued or on stop */
    struct event *notify;           /* EV_READ on wake_fd */
    atomic_bool stopping;           /* set before the stop wake-up */
    cnt_conn_env env;

    pthread_mutex_t lock;           /* guards the queue below */
    int *queue;                     /* ring of accepted fds */
    size_t qhead, qlen, qcap;

    cnt_connection *conns;          /* owned; touched only by the thread */
} cnt_worker;

struct cnt_server {
    cnt_server_config config;
    cnt_table *table;
    cnt_stats *stats;
    const cnt_gc *gc;
    cnt_logger log;
    uint16_t port;

    int listen_fds[CNT_SERVER_MAX_BINDS];
    unsigned nlisten;

    unsigned nworkers;
    cnt_worker *workers;
    unsigned next_worker;           /* round robin; acceptor thread only */
    atomic_uint open_connections;   /* accepted and not yet closed */

    /* The acceptor thread. */
    pthread_t acceptor;
    bool acceptor_running;
    struct event_base *abase;
    struct event *accept_ev[CNT_SERVER_MAX_BINDS];
    struct event *accept_stop;
    struct event *accept_retry;     /* re-enables accepting after EMFILE */
    bool accept_paused;
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

/* Prepares worker index i of s (no thread yet); false when memory is short. */
bool cnt_worker_init(cnt_worker *w, cnt_server *s, unsigned i);

/* Starts the worker's thread and event base; returns 0 or an errno value. */
int cnt_worker_start(cnt_worker *w);

/* Stops and joins the thread, ends every connection it owned and closes
 * fds still queued. */
void cnt_worker_stop(cnt_worker *w);

/* Frees what cnt_worker_init prepared (the worker must be stopped). */
void cnt_worker_destroy(cnt_worker *w);

/* Hands an accepted fd to the worker (any thread); false when memory is
 * short (the caller still owns fd). */
bool cnt_worker_enqueue(cnt_worker *w, int fd);

#endif
