/* workers.c: worker threads, each with its own event base. Accepted
 * sockets arrive through a pipe per worker, so bases stay single-threaded
 * and libevent needs no locks; -1 asks the worker to close all and stop. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "programs/mchost/conn.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/stats.h"
#include "programs/mchost/workers.h"

static struct mch_worker *workers;
static int nworkers;
static unsigned next_worker;

/* Closes every connection (firing ON_DISCONNECT) and ends the loop. */
static void worker_stop(struct mch_worker *w)
{
    while (w->conns != NULL)
        mch_conn_free(w->conns);
    event_base_loopbreak(w->base);
}

/* Reads the fds the listener sent; runs on the worker thread. */
static void worker_notify_cb(evutil_socket_t pipe_fd, short what, void *arg)
{
    struct mch_worker *w = arg;
    int fd;

    (void)what;
    while (read(pipe_fd, &fd, sizeof(fd)) == (ssize_t)sizeof(fd)) {
        if (fd < 0) {
            worker_stop(w);
            return;
        }
        mch_conn_new(w, fd);
    }
}

static void *worker_main(void *arg)
{
    struct mch_worker *w = arg;

    event_base_dispatch(w->base);
    return NULL;
}

/* Creates w's base and pipe; 0 or -1. */
static int worker_init(struct mch_worker *w, unsigned id)
{
    w->id = id;
    w->notify[0] = w->notify[1] = -1;
    w->base = event_base_new();
    if (w->base == NULL || pipe(w->notify) != 0)
        return -1;
    /* Non-blocking read side: the callback drains until EAGAIN. */
    if (fcntl(w->notify[0], F_SETFL, O_NONBLOCK) != 0)
        return -1;
    fcntl(w->notify[0], F_SETFD, FD_CLOEXEC);
    fcntl(w->notify[1], F_SETFD, FD_CLOEXEC);
    w->notify_event = event_new(w->base, w->notify[0], EV_READ | EV_PERSIST,
                                worker_notify_cb, w);
    if (w->notify_event == NULL || event_add(w->notify_event, NULL) != 0)
        return -1;
    return 0;
}

static void worker_destroy(struct mch_worker *w)
{
    if (w->notify_event != NULL)
        event_free(w->notify_event);
    if (w->notify[0] >= 0)
        close(w->notify[0]);
    if (w->notify[1] >= 0)
        close(w->notify[1]);
    if (w->base != NULL)
        event_base_free(w->base);
}

/* Starts n workers; 0 on success, -1 (logged) on failure. */
int mch_workers_start(int n)
{
    workers = calloc((size_t)n, sizeof(*workers));
    if (workers == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "cannot allocate %d workers", n);
        return -1;
    }
    for (nworkers = 0; nworkers < n; nworkers++) {
        struct mch_worker *w = &workers[nworkers];

        if (worker_init(w, (unsigned)nworkers) != 0 ||
            pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            mch_log(EXTENSION_LOG_WARNING, "cannot start worker thread %d",
                    nworkers);
            worker_destroy(w);
            mch_workers_stop();
            return -1;
        }
    }
    return 0;
}

/* Writes one int to w's pipe, retrying on EINTR; false on failure. */
static bool worker_send(struct mch_worker *w, int value)
{
    ssize_t r;

    do {
        r = write(w->notify[1], &value, sizeof(value));
    } while (r < 0 && errno == EINTR);
    return r == (ssize_t)sizeof(value);
}

/* Hands an accepted socket to the next worker (round robin). */
void mch_workers_dispatch(int fd)
{
    struct mch_worker *w = &workers[next_worker++ % (unsigned)nworkers];

    mch_count(curr_connections, 1);
    mch_count(total_connections, 1);
    if (!worker_send(w, fd)) {
        mch_log(EXTENSION_LOG_WARNING, "fd %d: cannot pass to worker %u",
                fd, w->id);
        close(fd);
        mch_count(curr_connections, (uint_fast64_t)-1);
    }
}

/* Stops every worker and joins its thread. */
void mch_workers_stop(void)
{
    for (int i = 0; i < nworkers; i++) {
        if (!worker_send(&workers[i], -1))
            mch_log(EXTENSION_LOG_WARNING, "cannot stop worker %d", i);
    }
    for (int i = 0; i < nworkers; i++) {
        pthread_join(workers[i].thread, NULL);
        worker_destroy(&workers[i]);
    }
    free(workers);
    workers = NULL;
    nworkers = 0;
}
