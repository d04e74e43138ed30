/* worker.c: a worker thread of the counter port: its own lock-free event
 * base, the connections the acceptor hands it through a locked queue and an
 * eventfd doorbell, and a clean stop that releases every connection's
 * holdings. */
#include "config.h"

#include "engine/server/server_int.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* How many queued fds one notify callback takes before yielding. */
#define CNT_WORKER_BATCH 64

/* Connection close hook: unlinks c and frees its place in the limit. */
static void worker_on_close(void *owner, cnt_connection *c)
{
    cnt_worker *w = owner;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    atomic_fetch_sub(&w->server->open_connections, 1);
}

/* Prepares worker index i of s (no thread yet); false when memory is short. */
bool cnt_worker_init(cnt_worker *w, cnt_server *s, unsigned i)
{
    memset(w, 0, sizeof(*w));
    w->server = s;
    w->index = i;
    w->wake_fd = -1;
    if (pthread_mutex_init(&w->lock, NULL) != 0)
        return false;
    w->env.session.table = s->table;
    w->env.session.stats = s->stats;
    w->env.session.gc = s->gc;
    w->env.session.slot = cnt_stats_slot_get(s->stats, i);
    w->env.log = &s->log;
    w->env.on_close = worker_on_close;
    w->env.owner = w;
    return true;
}

/* Frees what cnt_worker_init prepared (the worker must be stopped). */
void cnt_worker_destroy(cnt_worker *w)
{
    free(w->queue);
    w->queue = NULL;
    pthread_mutex_destroy(&w->lock);
}

/* Rings the worker's doorbell (any thread). An eventfd adds up writes,
 * so a wake-up is never lost and many collapse into one read. */
static void worker_wake(cnt_worker *w)
{
    uint64_t one = 1;
    while (write(w->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

/* Hands an accepted fd to the worker (any thread); false when memory is
 * short (the caller still owns fd). */
bool cnt_worker_enqueue(cnt_worker *w, int fd)
{
    pthread_mutex_lock(&w->lock);
    if (w->qlen == w->qcap) {
        size_t cap = w->qcap ? w->qcap * 2 : 64;
        int *q = malloc(cap * sizeof(*q));
        if (q == NULL) {
            pthread_mutex_unlock(&w->lock);
            return false;
        }
        for (size_t k = 0; k < w->qlen; k++)
            q[k] = w->queue[(w->qhead + k) % w->qcap];
        free(w->queue);
        w->queue = q;
        w->qcap = cap;
        w->qhead = 0;
    }
    w->queue[(w->qhead + w->qlen) % w->qcap] = fd;
    w->qlen++;
    pthread_mutex_unlock(&w->lock);
    worker_wake(w);
    return true;
}

/* Takes up to max fds off the queue; returns how many, and whether more
 * remain in *more. */
static size_t worker_dequeue(cnt_worker *w, int *fds, size_t max, bool *more)
{
    pthread_mutex_lock(&w->lock);
    size_t n = 0;
    while (n < max && w->qlen > 0) {
        fds[n++] = w->queue[w->qhead];
        w->qhead = (w->qhead + 1) % w->qcap;
        w->qlen--;
    }
    *more = w->qlen > 0;
    pthread_mutex_unlock(&w->lock);
    return n;
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
static void worker_adopt(cnt_worker *w, int fd)
{
    /* Answers are small and batched already: never wait for Nagle. */
    worker_sockopt(w, fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
    worker_keepalive(w, fd);
    cnt_connection *c = cnt_connection_new(&w->env, fd);
    if (c == NULL) {
        cnt_log(&w->server->log, CNT_LOG_WARNING,
                "counter: out of memory for a new connection; closing it");
        close(fd);
        atomic_fetch_sub(&w->server->open_connections, 1);
        return;
    }
    c->next = w->conns;
    if (w->conns != NULL)
        w->conns->prev = c;
    w->conns = c;
}

/* Doorbell callback: ends the loop when stopping, else adopts the fds the
 * acceptor queued. */
static void worker_on_notify(evutil_socket_t fd, short what, void *arg)
{
    cnt_worker *w = arg;
    int fds[CNT_WORKER_BATCH];
    uint64_t rings;
    bool more;
    (void)what;
    /* Reset the count; EAGAIN means an earlier read already took it. */
    if (read(fd, &rings, sizeof(rings)) < 0 && errno != EAGAIN &&
        errno != EINTR)
        cnt_log(&w->server->log, CNT_LOG_WARNING,
                "counter: worker %u: reading its eventfd failed: %s",
                w->index, strerror(errno));
    if (atomic_load(&w->stopping)) {
        event_base_loopbreak(w->base);
        return;
    }
    size_t n = worker_dequeue(w, fds, CNT_WORKER_BATCH, &more);
    for (size_t k = 0; k < n; k++)
        worker_adopt(w, fds[k]);
    if (more)
        event_active(w->notify, EV_READ, 0);    /* our own thread: no lock */
}

/* The thread: runs the loop until stopped (idle is not a reason to end). */
static void *worker_main(void *arg)
{
    cnt_worker *w = arg;
    event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Frees the worker's event base, its doorbell event and eventfd. */
static void worker_free_base(cnt_worker *w)
{
    if (w->notify != NULL)
        event_free(w->notify);
    if (w->base != NULL)
        event_base_free(w->base);
    if (w->wake_fd >= 0)
        close(w->wake_fd);
    w->notify = NULL;
    w->base = NULL;
    w->wake_fd = -1;
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
    w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->wake_fd < 0)
        return errno;
    w->base = worker_base_new();
    if (w->base != NULL)
        w->notify = event_new(w->base, w->wake_fd, EV_READ | EV_PERSIST,
                              worker_on_notify, w);
    if (w->notify == NULL || event_add(w->notify, NULL) != 0) {
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

/* Stops and joins the thread, ends every connection it owned and closes
 * fds still queued. */
void cnt_worker_stop(cnt_worker *w)
{
    if (!w->running)
        return;
    /* The eventfd keeps the ring until the loop reads it, even when the
     * loop has not started yet, so the stop cannot be lost. */
    atomic_store(&w->stopping, true);
    worker_wake(w);
    pthread_join(w->thread, NULL);
    w->running = false;
    /* The thread is gone: this thread may now touch its connections. */
    while (w->conns != NULL)
        cnt_connection_free(w->conns);
    int fds[CNT_WORKER_BATCH];
    bool more = true;
    while (more) {
        size_t n = worker_dequeue(w, fds, CNT_WORKER_BATCH, &more);
        for (size_t k = 0; k < n; k++) {
            close(fds[k]);
            atomic_fetch_sub(&w->server->open_connections, 1);
        }
    }
    worker_free_base(w);
}
