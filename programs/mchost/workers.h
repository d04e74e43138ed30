/* workers.h: mchost's worker threads. Each has its own event base and owns
 * the memcache connections the listener hands it. */
#ifndef MCH_WORKERS_H
#define MCH_WORKERS_H

#include <pthread.h>

struct event_base;
struct event;
struct mch_conn;

/* One worker thread and the connections it serves. */
struct mch_worker {
    pthread_t thread;
    struct event_base *base;
    int notify[2];              /* pipe: accepted fds, -1 = stop */
    struct event *notify_event;
    struct mch_conn *conns;     /* list of live connections */
    unsigned id;
};

/* Starts n workers; 0 on success, -1 (logged) on failure. */
int mch_workers_start(int n);

/* Hands an accepted socket to the next worker (round robin); closes it if
 * no worker can take it. */
void mch_workers_dispatch(int fd);

/* Stops every worker: each closes its connections (ON_DISCONNECT fires)
 * and its thread is joined. */
void mch_workers_stop(void);

#endif /* MCH_WORKERS_H */
