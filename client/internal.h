/* internal.h: what the sources of libmccounter share and the application
 * never sees: the client, its servers and connections, the queue of
 * requests in flight, and the submit path every operation goes through
 * (client.c, conn.c, answers.c), which the operations (ops.c) and the
 * lease helper (lease.c) build on. */
#ifndef MCC_INTERNAL_H
#define MCC_INTERNAL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/mccounter.h"
#include "client/ketama.h"
#include "client/servers.h"
#include "protocol/response.h"

/* The largest answer a connection buffers (like counterctl): a Dump record
 * with the longest name fits with room to spare; a server declaring more
 * is not speaking the protocol. */
#define MCC_RESPONSE_MAX (128u * 1024u)

/* Defaults of the client's settings. */
#define MCC_DEFAULT_TIMEOUT_MS 5000
#define MCC_DEFAULT_RETRY_MS   1000
#define MCC_DEFAULT_MAX_REQUESTS 65536u
#define MCC_DEFAULT_MAX_BYTES  (4u * 1024u * 1024u)

/* How a request is to be answered, and what submitting it chose. */
typedef struct mcc_sub {
    mcc_callback cb;          /* single answers */
    mcc_record_callback rcb;  /* series and stats */
    void *arg;
    int64_t deadline;         /* monotonic ms; 0: now + the client default */
    size_t server;            /* out: the server it went to */
    uint32_t opaque;          /* out: its opaque */
    bool checked;             /* the operation's own checks cover every
                               * rule the server's decoder has for it, so
                               * mcc_submit need not decode it again */
} mcc_sub;

/* A request in flight. An orphan's answer is read and dropped: its caller
 * was already told (timeout) or is gone (a released lease). */
typedef struct mcc_inflight {
    uint32_t opaque;
    uint8_t op;
    bool orphan;
    bool internal_auth;       /* sent by the library on connecting: the
                               * probe Noop or the Auth; no owner */
    mcc_callback cb;
    mcc_record_callback rcb;
    void *arg;
    int64_t deadline;
} mcc_inflight;

/* Something that wants the events of one Wait_acquire (a blocking wait,
 * a lease helper) instead of the event callback. fn gets ev NULL when the
 * connection is lost (error says why); the watcher is unlinked before fn
 * runs when once is set, or always when the connection is lost. */
typedef struct mcc_waiter {
    uint32_t opaque;
    unsigned gen;             /* the connection's gen when linked */
    bool once;
    bool linked;
    void (*fn)(mcc_client *c, struct mcc_waiter *w,
               const cnt_event_packet *ev, int error);
    void *ctx;
    struct mcc_waiter *next;
} mcc_waiter;

typedef enum mcc_conn_state {
    MCC_CONN_CLOSED,
    MCC_CONN_CONNECTING,
    MCC_CONN_UP
} mcc_conn_state;

/* One server's connection. */
typedef struct mcc_conn {
    int fd;
    unsigned gen;             /* changes whenever the socket closes, so a
                               * loop over one socket notices (an fd number
                               * may come back at once) */
    mcc_conn_state state;
    int64_t connect_deadline;
    int64_t down_until;       /* no reconnect before this (monotonic ms) */
    uint8_t *out;             /* requests not yet sent: out[off..len) */
    size_t out_off, out_len, out_cap;
    uint8_t *in;              /* MCC_RESPONSE_MAX bytes once connected */
    size_t in_len;
    mcc_inflight *q;           /* ring of requests in flight, oldest first */
    size_t q_head, q_count, q_cap;  /* q_cap: 0 or a power of two */
    mcc_waiter *waiters;
    int seen_fd, seen_wants;  /* last told to the watch callback */
    unsigned seen_gen;        /* gen of the socket seen_fd was */
    bool notify_pending;      /* a change not yet told (deferred) */
} mcc_conn;

typedef struct mcc_server {
    mcc_server_spec spec;
    char label[300];          /* "host:port" */
    mcc_conn conn;
} mcc_server;

struct mcc_client {
    mcc_server *servers;
    size_t n_servers, cap_servers;
    mcc_ketama *ketama;
    bool *up;                 /* scratch of n_servers flags for remaps */
    struct pollfd *pfd;       /* scratch of the poll() loop */
    struct mcc_pollref {
        size_t server;
        unsigned gen;         /* a socket closed and replaced meanwhile,
                               * even under the same fd number, is not
                               * the one poll() spoke of */
    } *pidx;                  /* server of each pfd entry */
    int timeout_ms, retry_ms;
    bool remap;
    uint8_t *secret;
    size_t secret_len;
    uint8_t *user;            /* with the secret: Auth_user on connecting */
    size_t user_len;
    uint8_t user_flags;       /* MCC_AUTH_NONBLOCKING */
    size_t max_requests, max_bytes;
    uint32_t next_opaque;
    uint8_t *scratch;         /* CNT_REQUEST_MAX bytes: requests are
                               * encoded and checked here, then queued */
    mcc_event_callback ev_cb;
    void *ev_arg;
    mcc_watch_callback w_cb;
    void *w_arg;
    struct mcc_lease *leases; /* every live lease helper */
    struct mcc_quota *quota;  /* get_lease's allowances (NULL: max_lease
                               * 1, nothing kept) */
    int in_callback;          /* depth of application callbacks running */
    int defer_notify;         /* > 0 while answers are being handled: the
                               * requests their callbacks queue are sent
                               * at the end, without a round of watch
                               * callbacks (and epoll_ctl) per request */
    bool clock_valid;         /* clock_ms may be used for deadlines */
    int64_t clock_ms;         /* the clock read once per driving call */
};

/* Monotonic clock in milliseconds. */
int64_t mcc_now_ms(void);

/* Runs an application callback, counting the depth so that calls that
 * must not run inside one (blocking calls, the loop) can refuse. */
static inline void call_cb(mcc_client *c, mcc_callback cb, const mcc_result *r,
                    void *arg)
{
    if (!cb)
        return;
    c->in_callback++;
    cb(c, r, arg);
    c->in_callback--;
}

/* Same for a record callback. */
static inline void call_rcb(mcc_client *c, mcc_record_callback cb,
                     const mcc_record *rec, void *arg)
{
    if (!cb)
        return;
    c->in_callback++;
    cb(c, rec, arg);
    c->in_callback--;
}

/* Same for the event callback. */
static inline void call_event(mcc_client *c, const mcc_event *ev)
{
    if (!c->ev_cb)
        return;
    c->in_callback++;
    c->ev_cb(c, ev, c->ev_arg);
    c->in_callback--;
}

/* Returns the i-th oldest request in flight. */
static inline mcc_inflight *queue_at(mcc_conn *k, size_t i)
{
    return &k->q[(k->q_head + i) & (k->q_cap - 1)];
}

/* Removes and returns the oldest request in flight. */
static inline mcc_inflight queue_pop(mcc_conn *k)
{
    mcc_inflight p = k->q[k->q_head];

    k->q_head = (k->q_head + 1) & (k->q_cap - 1);
    k->q_count--;
    return p;
}


/* Closes a connection's socket and forgets what it buffered (conn.c). */
void mcc_conn_close(mcc_conn *k);

/* Handles one decoded packet from server i (answers.c): MCC_OK, or an
 * error code that makes the caller close the connection. */
int mcc_handle_packet(mcc_client *c, size_t i, const cnt_response *res);

/* Returns the scratch buffer (allocated on first use) or NULL. */
uint8_t *mcc_scratch(mcc_client *c);

/* Returns a fresh non-zero opaque. */
uint32_t mcc_next_opaque(mcc_client *c);

/* Checks a name's length: MCC_OK or MCC_ERR_NAME. */
int mcc_check_name(const void *name, size_t len);
/* Checks an Auth_user's user, secret and flags; MCC_OK or an MCC_ERR_*. */
int mcc_check_user(const void *user, size_t user_len, const void *secret,
                   size_t secret_len, unsigned flags);

/* Picks the server of a name (remappable: rate-limit operations may move
 * to a live server when remapping is on); MCC_OK with *server set,
 * MCC_ERR_INVALID without servers, MCC_ERR_SERVER_DOWN. */
int mcc_pick_server(mcc_client *c, const void *name, size_t len,
                    bool remappable, size_t *server);

/* Queues the encoded request req[0..len) (opaque s->opaque already in it)
 * on server s->server: checks it with the protocol's own decoder
 * (MCC_ERR_INVALID if a server would refuse it), the server's state
 * (MCC_ERR_SERVER_DOWN, MCC_ERR_CONNECT) and the bounds (MCC_ERR_BUSY). */
int mcc_submit(mcc_client *c, const uint8_t *req, size_t len, uint8_t op,
               mcc_sub *s);

/* Marks a request in flight an orphan (its callback will not run). */
void mcc_orphan(mcc_client *c, size_t server, uint32_t opaque);

/* Marks every request in flight that would call cb with arg an orphan
 * (the application's own requests may carry the same arg: they keep
 * their callbacks). */
void mcc_orphan_arg(mcc_client *c, mcc_callback cb, void *arg);

/* Links or unlinks an event watcher on a server's connection. */
void mcc_waiter_add(mcc_client *c, size_t server, mcc_waiter *w);
void mcc_waiter_remove(mcc_client *c, size_t server, mcc_waiter *w);

/* Drives the connections with poll() until *done or the deadline
 * (monotonic ms; -1: none); MCC_OK or MCC_ERR_TIMEOUT. */
int mcc_run_until(mcc_client *c, const bool *done, int64_t deadline);

/* The operations the lease helper sends (ops.c), with a mcc_sub. */
int mcc_send_wait_acquire(mcc_client *c, const void *name, size_t len,
                          uint32_t resources, uint32_t maximum,
                          uint32_t wait_ms, uint32_t lease_ms, mcc_sub *s);
int mcc_send_renew(mcc_client *c, const void *name, size_t len,
                   uint32_t lease_ms, mcc_sub *s);
int mcc_send_wait_release(mcc_client *c, const void *name, size_t len,
                          mcc_sub *s);

/* Renews the leases that are due (lease.c; called by mcc_tick). */
void mcc_leases_tick(mcc_client *c, int64_t now);
/* Returns the earliest renewal time of the leases, or -1. */
int64_t mcc_leases_next(const mcc_client *c);
/* Frees every lease helper (mcc_client_free). */
void mcc_leases_free(mcc_client *c);
/* Frees get_lease's allowance table (quota.c). */
void mcc_quota_free(mcc_client *c);

#endif
