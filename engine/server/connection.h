/* connection.h: one client connection of the counter port: its buffers,
 * its holdings ledger and the libevent events that drive it. Internal to
 * the server; a worker thread owns each connection and is the only thread
 * that touches it. */
#ifndef CNT_ENGINE_CONNECTION_H
#define CNT_ENGINE_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "engine/core/gc.h"
#include "engine/core/holdings.h"
#include "engine/server/log.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"

/* Input buffer size to start with; it grows (up to CNT_REQUEST_MAX) only
 * when a declared, valid request needs more. */
#define CNT_CONN_IN_INITIAL (16u * 1024)
/* Output buffer size to start with. */
#define CNT_CONN_OUT_INITIAL (16u * 1024)
/* Above this many unsent bytes the connection stops decoding input and
 * stops reading (back-pressure); a Dump pauses at it too. */
#define CNT_CONN_OUT_HIGH (256u * 1024)

typedef struct cnt_connection cnt_connection;

/* What a connection needs from its worker; shared by all the worker's
 * connections and outliving them. */
typedef struct cnt_conn_env {
    struct event_base *base;
    cnt_table *table;
    const cnt_stats *stats;         /* for the Stats opcode */
    const cnt_gc *gc;               /* for the Stats opcode; may be NULL */
    cnt_stats_slot *slot;           /* the worker's own counters */
    const cnt_logger *log;
    /* Called once when the connection goes (for any reason), before its
     * memory is freed, so the owner can unlink it. */
    void (*on_close)(void *owner, cnt_connection *c);
    void *owner;
} cnt_conn_env;

struct cnt_connection {
    int fd;
    const cnt_conn_env *env;
    struct event *rev;              /* EV_READ | EV_PERSIST */
    struct event *wev;              /* EV_WRITE | EV_PERSIST, while needed */
    bool reading, writing;          /* whether rev / wev are added */

    uint8_t *in;                    /* received, not yet decoded bytes */
    size_t in_len, in_cap;
    uint64_t skip;                  /* body bytes still to discard unread */

    /* Answers in request order. Server-initiated packets (lease expiry,
     * wait grants: magic 0x92) will be appended here between answers, at
     * the moment they happen, so ordering needs no second queue. */
    uint8_t *out;
    size_t out_len, out_sent, out_cap;
    size_t out_stop;                /* unsent bytes that end this turn */

    cnt_holdings holdings;          /* what this connection has acquired */

    /* A Dump in progress: records stream out as the output drains; later
     * requests wait in the input buffer until its end marker is out. */
    bool dumping;
    cnt_dump_cursor dump;
    uint32_t dump_opaque;

    /* Outstanding operations that outlive one request (waits, leases) will
     * hang off the connection here, as a list the close path cancels. */

    bool eof;                       /* the peer shut its write side */
    bool more;                      /* stopped at the watermark with work left */
    bool closing;                   /* framing lost: flush, then close */
    bool failed;                    /* out of memory: close now */

    cnt_connection *prev, *next;    /* the owner's list */
};

/* Takes over fd (non-blocking, connected) and starts reading; NULL when
 * memory is short (fd is then left open for the caller to close). */
cnt_connection *cnt_connection_new(const cnt_conn_env *env, int fd);

/* Ends the connection: releases everything it holds, closes the socket,
 * calls env->on_close and frees it. */
void cnt_connection_free(cnt_connection *c);

#endif
