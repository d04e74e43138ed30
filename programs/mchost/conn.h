/* conn.h: one memcache text connection on a worker: bounded line reading,
 * skipping refused data blocks, back-pressure, orderly close. */
#ifndef MCH_CONN_H
#define MCH_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "programs/mchost/cookie.h"

struct bufferevent;
struct mch_worker;

/* A client connection; head is what engines and callbacks see. */
struct mch_conn {
    struct mch_cookie head;
    struct mch_worker *worker;
    struct bufferevent *bev;
    struct mch_conn *prev, *next; /* in worker->conns */
    uint64_t swallow;             /* data-block bytes still to skip */
    bool closing;                 /* close once the output is flushed */
    bool paused;                  /* reading stopped for back-pressure */
};

/* Wraps accepted socket fd on worker w and fires ON_CONNECT; on failure
 * closes fd and returns NULL. */
struct mch_conn *mch_conn_new(struct mch_worker *w, int fd);

/* Fires ON_DISCONNECT and frees c (closing its socket). */
void mch_conn_free(struct mch_conn *c);

#endif /* MCH_CONN_H */
