/* server.c: builds, starts and stops the counter port as a whole: the
 * listening sockets, the worker threads and the acceptor, in the order
 * that keeps start-up failures early and shutdown clean. */
#include "config.h"

#include "engine/server/server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/thread.h>

#include "protocol/ws_quota.h"

static pthread_once_t server_evthread_once = PTHREAD_ONCE_INIT;
static int server_evthread_rc;

/* Turns on libevent's locking once per process, before any base exists.
 * Only the acceptor's base needs it (the stopping thread activates its
 * stop event); workers' bases are built without locks and other threads
 * reach a worker only through its mailbox. */
static void server_evthread_init(void)
{
    server_evthread_rc = evthread_use_pthreads();
}

/* Binds and listens on every configured address; starts no thread. */
cnt_server *cnt_server_new(const cnt_server_config *config, cnt_table *table,
                           cnt_stats *stats, const cnt_gc *gc,
                           const cnt_logger *logger)
{
    pthread_once(&server_evthread_once, server_evthread_init);
    cnt_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->config = *config;
    s->table = table;
    s->stats = stats;
    s->gc = gc;
    if (logger != NULL)
        s->log = *logger;
    if (server_evthread_rc != 0) {
        cnt_log(&s->log, CNT_LOG_WARNING,
                "counter: libevent thread support is unavailable");
        free(s);
        return NULL;
    }
    s->nworkers = config->threads > 0 ? config->threads : 1;
    s->workers = calloc(s->nworkers, sizeof(*s->workers));
    cnt_survey_gate_init(&s->survey_gate, s->nworkers);
    s->auth_limit = cnt_auth_limit_new(config->auth_fail_limit,
                                       config->auth_fail_limit_per_address);
    if (s->workers == NULL || s->auth_limit == NULL) {
        cnt_auth_limit_free(s->auth_limit);
        free(s->workers);
        free(s);
        return NULL;
    }
    unsigned i;
    for (i = 0; i < s->nworkers; i++)
        if (!cnt_worker_init(&s->workers[i], s, i))
            break;
    if (i < s->nworkers || !cnt_listener_open(s)) {
        while (i-- > 0)
            cnt_worker_destroy(&s->workers[i]);
        cnt_auth_limit_free(s->auth_limit);
        free(s->workers);
        free(s);
        return NULL;
    }
    cnt_worker_route_grants(s);
    return s;
}

/* Starts workers first, so the acceptor never hands a socket to a worker
 * without a loop; then the acceptor. */
int cnt_server_start(cnt_server *s)
{
    if (s->started)
        return 0;
    int rc = 0;
    cnt_table_stop_grants(s->table, false);
    /* Before any worker computes a handshake: see cnt_ws_crypto_init. */
    if (s->nhttp > 0 && !cnt_ws_crypto_init())
        rc = ENOMEM;
    for (unsigned i = 0; rc == 0 && i < s->nworkers; i++)
        rc = cnt_worker_start(&s->workers[i]);
    if (rc == 0)
        rc = cnt_listener_start(s);
    s->started = true;
    if (rc != 0) {
        cnt_log(&s->log, CNT_LOG_WARNING,
                "counter: cannot start the server threads: %s", strerror(rc));
        cnt_server_stop(s);
    } else {
        cnt_log(&s->log, CNT_LOG_INFO,
                "counter: serving on port %u with %u worker threads",
                (unsigned)s->port, s->nworkers);
        if (s->nthrottr > 0)
            cnt_log(&s->log, CNT_LOG_INFO,
                    "counter: serving the Throttr protocol on port %u "
                    "(values of %u bytes)", (unsigned)s->throttr_port,
                    s->config.throttr_value_size);
        if (s->nhttp > 0)
            cnt_log(&s->log, CNT_LOG_INFO,
                    "counter: serving the WebSocket quota API on port %u "
                    "(ws://HOST:%u/quota)", (unsigned)s->http_port,
                    (unsigned)s->http_port);
    }
    return rc;
}

/* Stops the acceptor, then every worker thread, and only then ends the
 * connections (releasing their holdings): a worker still running while
 * another's connections released could grant what they held to a client
 * of a server that is going away. For the same reason the table grants no
 * queued ticket from then on: ending one worker's connections would
 * otherwise grant a waiter of a worker not yet stopped, whose shutdown
 * event would then carry a lease it never held. The listening sockets
 * stay open. */
void cnt_server_stop(cnt_server *s)
{
    if (!s->started)
        return;
    cnt_listener_stop(s);
    for (unsigned i = 0; i < s->nworkers; i++)
        cnt_worker_halt(&s->workers[i]);
    cnt_table_stop_grants(s->table, true);
    for (unsigned i = 0; i < s->nworkers; i++)
        cnt_worker_stop(&s->workers[i]);
    s->started = false;
}

/* Stops the server if needed, closes the sockets and frees it. */
void cnt_server_free(cnt_server *s)
{
    if (s == NULL)
        return;
    cnt_server_stop(s);
    cnt_listener_close(s);
    for (unsigned i = 0; i < s->nworkers; i++)
        cnt_worker_destroy(&s->workers[i]);
    cnt_auth_limit_free(s->auth_limit);
    free(s->workers);
    free(s);
}

/* The port the server listens on (useful when counter.port was 0). */
uint16_t cnt_server_port(const cnt_server *s)
{
    return s->port;
}

/* The most surveys out at once so far. */
unsigned cnt_server_survey_peak(cnt_server *s)
{
    return atomic_load(&s->survey_gate.peak);
}

/* The port of the Throttr front, 0 when it is off. */
uint16_t cnt_server_throttr_port(const cnt_server *s)
{
    return s->throttr_port;
}

/* The WebSocket front's port; see server.h. */
uint16_t cnt_server_http_port(const cnt_server *s)
{
    return s->http_port;
}
