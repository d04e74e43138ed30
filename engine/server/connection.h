/* connection.h: one client connection of the counter port: its socket, its
 * input buffer, the libevent events that drive it, and the session that
 * answers it. Internal to the server; owned by one worker thread (see the
 * ownership rule in server_int.h). */
#ifndef CNT_ENGINE_CONNECTION_H
#define CNT_ENGINE_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "engine/core/stats.h"
#include "engine/server/log.h"
#include "engine/server/session.h"

/* Input buffer size to start with; it grows (up to CNT_REQUEST_MAX) only
 * when a declared, valid request needs more. */
#define CNT_CONN_IN_INITIAL (16u * 1024)

typedef struct cnt_connection cnt_connection;

/* A protocol front: what turns a connection's bytes into answers. Every
 * front shares the rest (the socket, the input buffer, the output's
 * watermark and turn budget, the session and its release at close), so a
 * front is only its decoder-and-handler and the words its log lines use. */
typedef struct cnt_front {
    const char *name;               /* "counter", "throttr" */
    const char *first_byte;         /* what a request's first byte is */
    /* cnt_session_feed's contract: answers the whole requests at the front
     * of in, returns the bytes consumed, sets need, more, closing (framing
     * lost: the first unconsumed byte is the bad one) or failed. */
    size_t (*feed)(cnt_session *s, const uint8_t *in, size_t len);
    /* A front whose waiters may hear of a grant straight from the granting
     * thread sets direct_event (else NULL): the bytes of k's granted event
     * as this front frames it, into buf (any thread: reads k alone), 0
     * when they do not fit in cap. quiet, when the front keeps state of
     * its own (else NULL): whether that has nothing under way (the
     * owner's thread, at the end of a callback). */
    bool (*quiet)(const cnt_session *s);
    size_t (*direct_event)(const cnt_ticket *k, uint8_t *buf, size_t cap);
} cnt_front;

/* The counter protocol (the default), the Throttr v5 protocol and the
 * WebSocket quota API. */
extern const cnt_front cnt_front_counter;
extern const cnt_front cnt_front_throttr;
extern const cnt_front cnt_front_websocket;

/* What a connection needs from its worker; shared by all the worker's
 * connections and outliving them. */
typedef struct cnt_conn_env {
    struct event_base *base;
    cnt_session_env session;        /* table, stats and the worker's slot */
    const cnt_logger *log;
    /* Called once when the connection goes (for any reason), before its
     * memory is freed, so the owner can unlink it. */
    void (*on_close)(void *owner, cnt_connection *c);
    /* Called at the start of each callback, with the direct lock held,
     * before any request is read: the owner takes the grants in its mail
     * (their events may have reached the client already). May be NULL. */
    void (*take_mail)(void *owner);
    void *owner;
} cnt_conn_env;

/* The most bytes of a granted event written straight to a socket (names
 * of up to 229 bytes; longer ones go the usual way). */
#define CNT_DIRECT_EVENT_MAX 255u

struct cnt_connection {
    int fd;
    const cnt_conn_env *env;
    const cnt_front *front;
    struct event *rev;              /* EV_READ | EV_PERSIST */
    struct event *wev;              /* EV_WRITE | EV_PERSIST, while needed */
    bool reading, writing;          /* whether rev / wev are added */
    bool eof;                       /* the peer shut its write side */
    /* Its tenant is over its share: nothing is read or answered until
     * the timer (made at the first pause) fires in the next second. */
    bool paused;
    struct event *resume;

    uint8_t *in;                    /* received, not yet consumed bytes */
    size_t in_len, in_cap;

    cnt_session session;            /* answers, ledger, Dump */

    /* Another worker may write a granted event straight to the socket
     * (cnt_connection_try_direct) while it holds direct_lock and finds
     * direct_ok; the owner holds the lock whenever it reads requests,
     * sends output or ends the connection, and sets direct_ok only when
     * the connection is idle: nothing unsent, no stream, no close begun.
     * Output queued outside the callbacks (timers' events, grants taken
     * in another connection's callback) first marks the connection busy
     * and is sent under the lock. What a direct write could not send
     * waits in direct_rest, which goes out before anything else. */
    pthread_mutex_t direct_lock;
    /* Set true only by the owner, under direct_lock (and once before the
     * connection is published); set false by the owner, with or without
     * the lock (cnt_connection_wake), or by a writer under it. */
    _Atomic bool direct_ok;
    /* The owner holds direct_lock in one of the connection's callbacks
     * (owner thread only): output queued from there is seen by the
     * conn_idle at the callback's end. */
    bool owner_holds;
    uint8_t direct_rest_len;        /* direct_lock */
    uint8_t direct_rest[CNT_DIRECT_EVENT_MAX];

    LIST_ENTRY(cnt_connection) link;    /* the owner's list */
};

/* Takes over fd (non-blocking, connected) and starts reading; NULL when
 * memory is short (fd is then left open for the caller to close). */
cnt_connection *cnt_connection_new(const cnt_conn_env *env, int fd);

/* The same for a connection of the given front. */
cnt_connection *cnt_connection_new_front(const cnt_conn_env *env, int fd,
                                         const cnt_front *front);
/* Writes the address of sa (IPv4 or IPv6) as text into addr, which has
 * room for CNT_PEER_ADDR_MAX bytes, and its port into *port; false for
 * another family or a failure (addr is then undefined). */
bool cnt_sockaddr_text(const struct sockaddr *sa, char *addr,
                       uint16_t *port);

/* Session hook (cnt_session_env.wake): events wait in the output of s,
 * the session of a connection; sends them on the loop's next turn. */
void cnt_connection_wake(cnt_session *s);

/* Events wait in the output of s, the session of a connection, and the
 * worker's loop is outside every callback of that connection (it is
 * delivering grants): sends them now, with one call, when the connection
 * waits for nothing else; a backlog, a stream, a partial send, an error or
 * a failed session leave them to the write event, as cnt_connection_wake. */
void cnt_connection_push(cnt_session *s);

/* From the thread that granted ticket k (another worker, or the owner's
 * own outside that connection's callbacks): writes k's granted event
 * straight to the owner connection's socket when that connection is idle
 * (nothing unsent, no stream, no close begun; a front with a
 * direct_event hook whose quiet hook, if any, says so) and marks k TOLD,
 * so the event leaves without waiting for the owner's thread to wake; a
 * connection it claimed but could not write to (the event too long, the
 * socket full) is marked busy until the owner's next callback. Then
 * hands k to post (the owner's mailbox or list), still under the direct
 * lock when it claimed one, so the owner has the grant before it can
 * read the client's next request (env->take_mail). Returns whether it
 * wrote; k is posted either way. */
bool cnt_connection_try_direct(cnt_table *t, cnt_ticket *k,
                               void (*post)(void *ctx, cnt_ticket *k),
                               void *ctx);

/* Session hook: logs a failed authentication of s's connection with the
 * client's address (which attempt of how many, and whether the limits on
 * failures refused it unjudged; never what was sent). */
void cnt_connection_auth_failed(cnt_session *s, unsigned attempt,
                                unsigned tries, bool refused);

/* Session hook: logs a privileged change s's client made (what: the
 * change and how it ended), with the client's address. */
void cnt_connection_privileged_change(cnt_session *s, const char *what);

/* The server is stopping (its worker halted): tells the session's waiters
 * and holders with shutdown events, sends what the socket takes at once,
 * and frees the connection. */
void cnt_connection_shutdown(cnt_connection *c);

#endif
