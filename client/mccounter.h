/* mccounter.h: the public interface of libmccounter, the C client library
 * of the counter protocol (doc/protocol.md). It spreads names over several
 * servers with a weighted ketama continuum, keeps one pipelined connection
 * per server and offers every operation twice: blocking (mcc_<op>, driven
 * by poll() with a per-call timeout) and non-blocking (mcc_<op>_async,
 * for an application's own event loop: the library exposes each server's
 * fd, is told when it is readable or writable, and answers through
 * callbacks). Server-initiated events and lost connections reach the
 * application through one event callback, in the order they happen.
 *
 * This header stands alone (it includes only standard headers): the types
 * below mirror the wire answers so that applications never see the codec.
 * Every function that can fail returns an mcc_error: MCC_OK (0) or a
 * negative MCC_ERR_* code; mcc_strerror() names it. The few that return
 * a count or an index as well (mcc_client_add_server,
 * mcc_client_set_servers, mcc_get_lease, mcc_get_lease_name) return an
 * int that is negative for an error. The library keeps no global state;
 * one mcc_client must be used by one thread at a time.
 *
 * Changed in interface 1.1 (symbol version MCCOUNTER_1.1; interface 1.0
 * is MCCOUNTER_1). The old names keep working for this release, marked
 * deprecated, and go in the next one:
 * - the functions that returned an int error code return mcc_error
 *   (the same values, the same size: existing C code that stores it in
 *   an int still compiles and links; C++, which does not turn an int
 *   into an enum by itself, needs mcc_error where such an int is passed
 *   back, e.g. to mcc_strerror, or a cast);
 * - mcc_window_check and mcc_gcra_check (and _async) are replaced by
 *   mcc_check, which takes one mcc_check_item, so that a GCRA's burst,
 *   count and cost, or a window's limit and cost, cannot be swapped;
 * - mcc_wait_acquire (and _async) and mcc_lease_acquire_async are
 *   replaced by mcc_wait_for and mcc_lease_start, which take an
 *   mcc_wait_params (resources, maximum, wait_ms, lease_ms).
 * New in 1.1: the JSON throttle settings (mcc_tenant_set_json,
 * mcc_node_set_json) and logging in as a user (mcc_auth_user,
 * mcc_client_set_user, MCC_AUTH_NONBLOCKING; a Throttled answer's hint
 * in mcc_result.throttled).
 * Calls that still take adjacent integers of one type, kept because
 * each pair reads as one value or the wire fixes its meaning:
 * mcc_acquire (resources, maximum), mcc_ttl_insert (quota, ttl),
 * mcc_ttl_update (attribute, change, unit), mcc_tenant_set (reserved,
 * hard_limit) and mcc_client_set_max_queue (max_requests, max_bytes). */
#ifndef MCCOUNTER_H
#define MCCOUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility so that its internal
 * functions (mcc_-prefixed too) stay out of its ABI; what this header
 * declares is what it exports. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

/* Marks a name that goes in the next release (define
 * MCC_NO_DEPRECATION_WARNINGS to silence the warnings meanwhile). */
#if defined(__GNUC__) && !defined(MCC_NO_DEPRECATION_WARNINGS)
#define MCC_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define MCC_DEPRECATED(msg)
#endif

/* ---- Errors ---- */

/* Client error codes (negative; MCC_OK is 0), as every call returns them
 * (the same values as the int codes of 1.0). */
typedef enum mcc_error {
    MCC_OK = 0,
    MCC_ERR_INVALID = -1,      /* a bad argument, refused before sending */
    MCC_ERR_NAME = -2,         /* a name (or tenant, secret) empty or longer
                                * than MCC_NAME_MAX bytes */
    MCC_ERR_RESOURCES = -3,    /* resources above a non-zero maximum, or 0
                                * resources where the server refuses 0 */
    MCC_ERR_NOMEM = -4,        /* out of memory */
    MCC_ERR_CONNECT = -5,      /* the server could not be reached */
    MCC_ERR_IO = -6,           /* the connection was lost */
    MCC_ERR_TIMEOUT = -7,      /* no answer in time */
    MCC_ERR_PROTOCOL = -8,     /* the server's bytes make no sense (bad
                                * magic, wrong opaque, oversized body) */
    MCC_ERR_SERVER_DOWN = -9,  /* the name's server failed recently and is
                                * not retried yet (mcc_client_set_retry_ms) */
    MCC_ERR_STATUS = -10,      /* the server answered a non-zero status; it
                                * is in mcc_result.status */
    MCC_ERR_CROSS_SERVER = -11, /* multi-check items on different servers */
    MCC_ERR_BUSY = -12,        /* the server's output buffer or in-flight
                                * queue is full (mcc_client_set_max_queue) */
    MCC_ERR_AUTH = -13,        /* the Auth sent on connecting was refused */
    MCC_ERR_MEMCACHE_PORT = -14 /* the port answered in memcache's text
                                 * protocol: not the counter port */
} mcc_error;

/* Returns a short English text for an MCC_* code ("unknown error" for
 * others); never NULL. */
const char *mcc_strerror(mcc_error error);

/* Returns the server's text for a wire status ("Not found", ...; "" for 0,
 * "Unknown status" for a code the protocol does not define). */
const char *mcc_status_text(uint8_t status);

/* ---- Protocol values, mirrored ---- */

/* The longest name, tenant or secret, in bytes. */
#define MCC_NAME_MAX 65535u
/* The most items of one multi-check. */
#define MCC_MULTI_MAX 16
/* Wait_acquire's wait_ms/lease_ms and Renew's lease_ms: the group's
 * setting (a maximum of 0 asks the same of Wait_acquire). */
#define MCC_GROUP_DEFAULT 0xffffffffu
/* A hard limit, or a throttle answer's remaining, that is no limit. */
#define MCC_UNLIMITED 0xffffffffu
/* A check's retry_after_ns when it can never be allowed. */
#define MCC_RETRY_NEVER UINT64_MAX

/* Operations (the wire opcodes). */
typedef enum mcc_op {
    MCC_OP_NOOP = 0x00,
    MCC_OP_GET = 0x01,
    MCC_OP_ACQUIRE = 0x02,
    MCC_OP_RELEASE = 0x03,
    MCC_OP_STATS = 0x10,
    MCC_OP_DUMP = 0x11,
    MCC_OP_WAIT_ACQUIRE = 0x20,
    MCC_OP_RENEW = 0x21,
    MCC_OP_WAIT_RELEASE = 0x22,
    MCC_OP_QUEUES = 0x23,
    MCC_OP_TTL_INSERT = 0x30,
    MCC_OP_TTL_QUERY = 0x31,
    MCC_OP_TTL_UPDATE = 0x32,
    MCC_OP_TTL_PURGE = 0x33,
    MCC_OP_WINDOW_CHECK = 0x34,
    MCC_OP_GCRA_CHECK = 0x35,
    MCC_OP_MULTI_CHECK = 0x36,
    MCC_OP_AUTH = 0x40,
    MCC_OP_THROTTLE = 0x41,
    MCC_OP_TENANT_SHOW = 0x42,
    MCC_OP_TENANT_LIST = 0x43,
    MCC_OP_NODE_SHOW = 0x44,
    MCC_OP_TENANT_SET = 0x45,
    MCC_OP_TENANT_REMOVE = 0x46,
    MCC_OP_NODE_SET = 0x47,
    MCC_OP_UNTHROTTLE = 0x48,
    MCC_OP_RELOAD = 0x49,
    MCC_OP_AUTH_USER = 0x4a,
    MCC_OP_TENANT_SET_JSON = 0x2a,
    MCC_OP_NODE_SET_JSON = 0x2c,
    MCC_OP_LEASE_LIST = 0x24,
    MCC_OP_BUSIEST = 0x37
} mcc_op;

/* Wire statuses (mcc_result.status when error is MCC_ERR_STATUS). */
enum {
    MCC_STATUS_OK = 0x00,
    MCC_STATUS_NOT_FOUND = 0x01,
    MCC_STATUS_INVALID = 0x04,
    MCC_STATUS_RESOURCE_NOT_AVAILABLE = 0x21,
    MCC_STATUS_NOT_ACQUIRED = 0x22,
    MCC_STATUS_EXCEEDS_MAXIMUM = 0x23,
    MCC_STATUS_ALREADY_ACTIVE = 0x24,
    MCC_STATUS_UNKNOWN_GROUP = 0x25,
    MCC_STATUS_TOO_MANY_WAITS = 0x26,
    MCC_STATUS_LEASE_EXPIRED = 0x27,
    MCC_STATUS_EXISTS = 0x28,
    MCC_STATUS_BELOW_ZERO = 0x29,
    MCC_STATUS_NOT_PERMITTED = 0x2A,
    MCC_STATUS_AUTH_FAILED = 0x2B,
    MCC_STATUS_OVER_CAPACITY = 0x2C,
    MCC_STATUS_THROTTLED = 0x2D,  /* mcc_result.throttled says more */
    MCC_STATUS_UNKNOWN_COMMAND = 0x81,
    MCC_STATUS_OUT_OF_MEMORY = 0x82
};

/* Time units of the TTL operations. */
enum {
    MCC_UNIT_NS = 0, MCC_UNIT_US = 1, MCC_UNIT_MS = 2,
    MCC_UNIT_S = 3, MCC_UNIT_MIN = 4, MCC_UNIT_H = 5
};
/* Ttl_update's attribute and change. */
enum { MCC_TTL_ATTR_QUOTA = 0, MCC_TTL_ATTR_TTL = 1 };
enum { MCC_TTL_PATCH = 0, MCC_TTL_INCREASE = 1, MCC_TTL_DECREASE = 2 };

/* A Wait_acquire's state: the first two are the server's answer; the
 * third is what a blocking mcc_wait_acquire reports when the server's
 * timed-out event ended the wait. */
enum { MCC_WAIT_GRANTED = 0, MCC_WAIT_QUEUED = 1, MCC_WAIT_TIMED_OUT = 2 };
/* A check's state, a multi-check's overall state. */
enum { MCC_CHECK_ALLOWED = 0, MCC_CHECK_LIMITED = 1, MCC_CHECK_NEVER = 2 };
enum { MCC_MULTI_ALLOWED = 0, MCC_MULTI_DENIED = 1 };
/* A throttle answer's state and reason. */
enum { MCC_THROTTLE_ALLOWED = 0, MCC_THROTTLE_THROTTLED = 1 };
enum {
    MCC_REASON_NONE = 0, MCC_REASON_RESERVE = 1,
    MCC_REASON_POOL_EMPTY = 2, MCC_REASON_HARD_LIMIT = 3
};
/* Auth_user's flags: a request over the tenant's share this second is
 * answered MCC_STATUS_THROTTLED at once instead of waiting, unread, on
 * the server until the next second. */
#define MCC_AUTH_NONBLOCKING 0x01u

/* Tenant_set's flags: which values to set. */
#define MCC_TENANT_SET_RESERVED 0x01u
#define MCC_TENANT_SET_HARD     0x02u
/* A tenant view's flags. */
#define MCC_TENANT_CONFIGURED   0x01u

/* ---- Answers ---- */

/* A Wait_acquire answer. */
typedef struct mcc_wait_answer {
    uint8_t state;            /* MCC_WAIT_* */
    uint32_t position;        /* 1 = next in line; 0 when granted */
    uint64_t lease_id;        /* the fencing token; 0 unless granted */
    uint32_t consumption;     /* the counter's, just after the request */
} mcc_wait_answer;

/* A TTL record (Ttl_query, Ttl_update). */
typedef struct mcc_ttl_view {
    uint64_t quota;
    uint64_t ttl_left;        /* in unit, rounded up */
    uint8_t unit;             /* MCC_UNIT_* */
} mcc_ttl_view;

/* One check's answer (window, GCRA, a multi-check item). */
typedef struct mcc_check_answer {
    uint8_t state;            /* MCC_CHECK_* */
    uint32_t limit, remaining, used;
    uint64_t retry_after_ns;  /* 0 when allowed; MCC_RETRY_NEVER: never */
    uint64_t reset_after_ns;
} mcc_check_answer;

/* A multi-check answer: items[0..count) in request order. */
typedef struct mcc_multi_answer {
    uint8_t overall;          /* MCC_MULTI_* */
    uint8_t count;
    mcc_check_answer items[MCC_MULTI_MAX];
} mcc_multi_answer;

/* A Throttle answer (being throttled is an answer, not an error). */
typedef struct mcc_throttle_answer {
    uint8_t state, reason;    /* MCC_THROTTLE_*, MCC_REASON_* */
    uint32_t used, remaining; /* this second; remaining MCC_UNLIMITED */
    uint64_t retry_after_ns;
} mcc_throttle_answer;

/* A tenant as Tenant_show and Tenant_list show it. */
typedef struct mcc_tenant_view {
    uint32_t reserved, hard_limit, used;  /* hard_limit MCC_UNLIMITED */
    uint8_t flags;            /* MCC_TENANT_CONFIGURED */
    uint64_t throttled, units;
} mcc_tenant_view;

/* The node as Node_show shows it. */
typedef struct mcc_node_view {
    uint32_t capacity, used, pool, pool_used, reserved_sum, tenants;
    uint64_t throttled;
} mcc_node_view;

/* What a Throttled answer (status MCC_STATUS_THROTTLED, any op) adds:
 * the connection's tenant could not pay for the request this second, so
 * it was not run. */
typedef struct mcc_throttled_status {
    uint64_t retry_after_ns;  /* until the server's next second (>= 1) */
    uint8_t reason;           /* MCC_REASON_* */
} mcc_throttled_status;

/* The outcome of one operation. error is MCC_OK, MCC_ERR_STATUS (status
 * holds the wire status) or another MCC_ERR_*; the answer fields are set
 * only when error is MCC_OK, and only the one of op's kind, except
 * throttled, set when status is MCC_STATUS_THROTTLED (it lives in the
 * union so that the struct keeps the size of interface 1.0). */
typedef struct mcc_result {
    uint8_t op;               /* mcc_op */
    mcc_error error;
    uint8_t status;           /* wire status (0 unless MCC_ERR_STATUS) */
    size_t server;            /* index of the server that was asked */
    uint32_t opaque;          /* the request's opaque (events about a
                               * Wait_acquire carry it too) */
    union {
        uint32_t value;       /* get: consumption; acquire: resources;
                               * wait_release: resources returned */
        mcc_wait_answer wait; /* wait_acquire */
        uint64_t lease_id;    /* renew */
        mcc_ttl_view ttl;     /* ttl_query, ttl_update */
        mcc_check_answer check;   /* window_check, gcra_check */
        mcc_multi_answer multi;   /* multi_check */
        mcc_throttle_answer throttle;
        mcc_tenant_view tenant;   /* tenant_show */
        mcc_node_view node;       /* node_show */
        mcc_throttled_status throttled; /* status MCC_STATUS_THROTTLED */
    };
} mcc_result;

/* The kinds of rate limit a busiest record names. */
enum { MCC_KIND_TTL = 0, MCC_KIND_WINDOW = 1, MCC_KIND_GCRA = 2 };

/* Most names one Busiest lists. */
#define MCC_BUSIEST_MAX 16u

/* One record of a series (dump, queues, tenant_list, stats, busiest), or
 * its end.
 * Records come with more true; the series then ends with exactly one call
 * with more false, whose error/status say how it ended (MCC_OK after the
 * server's end marker). Pointers are valid only during the call. */
typedef struct mcc_record {
    uint8_t op;               /* MCC_OP_DUMP, _QUEUES, _TENANT_LIST, _STATS,
                               * _BUSIEST */
    bool more;
    mcc_error error;          /* set when more is false */
    uint8_t status;
    size_t server;
    const char *name;         /* counter, tenant, stat or rate-limit name
                               * (not NUL-terminated) */
    size_t name_len;
    uint32_t current, max;    /* dump: consumption, peak in the window */
    uint32_t consumption, queue_len;  /* queues */
    mcc_tenant_view tenant;   /* tenant_list */
    const char *value;        /* stats: ASCII decimal, not NUL-terminated */
    size_t value_len;
    /* lease_list: time left until the lease expires (ms), its lease id
     * and the resources it holds; name is the counter's */
    uint32_t left_ms;
    uint64_t lease_id;
    uint32_t resources;
    uint32_t checks;          /* busiest: checks in the last whole second */
    uint8_t kind;             /* busiest: MCC_KIND_TTL, _WINDOW, _GCRA */
} mcc_record;

/* One check: mcc_check's argument, or one item of a multi-check. Name
 * the fields (designated initializers), as the examples do. */
typedef struct mcc_check_item {
    uint8_t op;               /* MCC_OP_WINDOW_CHECK or MCC_OP_GCRA_CHECK */
    const void *name;
    size_t name_len;
    uint8_t slots;            /* window: 0 = 10 */
    uint32_t limit;           /* window: limit; GCRA: burst */
    uint32_t count;           /* GCRA: count per period */
    uint32_t cost;
    uint64_t period_ns;       /* window: window (0 = 1 s); GCRA: period */
} mcc_check_item;

/* What a Wait_acquire asks for (mcc_wait_for, mcc_lease_start). */
typedef struct mcc_wait_params {
    uint32_t resources;       /* 1..maximum */
    uint32_t maximum;         /* 0: the group's */
    uint32_t wait_ms;         /* how long to queue; 0: not at all;
                               * MCC_GROUP_DEFAULT: the group's */
    uint32_t lease_ms;        /* how long a grant lasts unrenewed;
                               * MCC_GROUP_DEFAULT: the group's */
} mcc_wait_params;

/* ---- Client setup ---- */

typedef struct mcc_client mcc_client;

/* Called with the outcome of an asynchronous operation (r valid only
 * during the call). It may issue new operations; it must not free c. */
typedef void (*mcc_callback)(mcc_client *c, const mcc_result *r, void *arg);
/* Called for each record of a series and once more at its end. */
typedef void (*mcc_record_callback)(mcc_client *c, const mcc_record *rec,
                                    void *arg);

/* Creates a client with no servers; NULL when out of memory. */
mcc_client *mcc_client_new(void);

/* Closes every connection and frees the client and its leases. Pending
 * requests get no callback. NULL is allowed. */
void mcc_client_free(mcc_client *c);

/* Adds a server (weight 0 counts as 1) and returns its index (>= 0) or an
 * error; the continuum is rebuilt. Nothing connects yet: connections are
 * opened when first needed. host is a name or an IPv4/IPv6 address. */
int mcc_client_add_server(mcc_client *c, const char *host, uint16_t port,
                          uint32_t weight);

/* Replaces the (still unused) server list with "HOST:PORT[:WEIGHT],..."
 * (IPv6 as [addr]:port[:weight]); returns the count or an error:
 * MCC_ERR_INVALID for a bad list, with a message naming the bad item in
 * err[0..errlen) when err is not NULL. */
int mcc_client_set_servers(mcc_client *c, const char *list, char *err,
                           size_t errlen);

/* Returns the number of servers. */
size_t mcc_client_server_count(const mcc_client *c);

/* Returns the index of the server a name maps to (ignoring failures), or
 * (size_t)-1 when there are no servers. */
size_t mcc_client_server_for(const mcc_client *c, const void *name,
                             size_t len);

/* Returns "host:port" of server i ("[addr]:port" for IPv6); NULL if i is
 * out of range. */
const char *mcc_client_server_name(const mcc_client *c, size_t i);

/* Sets the default timeout of blocking calls and of each asynchronous
 * request (milliseconds, > 0; default 5000). */
mcc_error mcc_client_set_timeout(mcc_client *c, int timeout_ms);

/* Sets the secret sent with Auth as the first request of every new
 * connection (len 1..MCC_NAME_MAX; NULL clears it). A refusal is reported
 * as an MCC_EVENT_ERROR event with error MCC_ERR_AUTH; the connection
 * stays usable for unprivileged operations. */
mcc_error mcc_client_set_secret(mcc_client *c, const void *secret, size_t len);

/* Sets the user (len 1..MCC_NAME_MAX; NULL clears it) every new
 * connection logs in as, with Auth_user and the secret of
 * mcc_client_set_secret, instead of Auth: its requests are then charged
 * to the user's tenant. flags: 0 or MCC_AUTH_NONBLOCKING. Nothing is sent
 * until a secret is set too; user and secret together must fit one
 * request (else MCC_ERR_NAME, from whichever call comes second). A
 * refusal is reported as with the secret alone (since 1.1). */
mcc_error mcc_client_set_user(mcc_client *c, const void *user, size_t len,
                              unsigned flags);

/* Sets how long a server that failed (connect refused, connection lost)
 * is left alone (default 1000 ms): meanwhile operations on its names fail
 * with MCC_ERR_SERVER_DOWN at once. */
mcc_error mcc_client_set_retry_ms(mcc_client *c, int retry_ms);

/* When on (default off), TTL, window, GCRA and multi-check operations
 * whose server is down go to the next live server on the continuum.
 * Semaphore, wait/lease and throttling operations never move: two servers
 * would each grant the maximum. */
void mcc_client_set_remap_rate_limits(mcc_client *c, bool on);

/* Bounds each connection: at most max_requests (>= 1) in flight and
 * max_bytes of unsent output (at least 65573, the largest request;
 * defaults 65536 and 4 MiB); beyond, operations fail with MCC_ERR_BUSY. */
mcc_error mcc_client_set_max_queue(mcc_client *c, size_t max_requests,
                                   size_t max_bytes);

/* ---- Events ---- */

typedef enum mcc_event_kind {
    MCC_EVENT_GRANTED = 1,       /* a queued wait was granted */
    MCC_EVENT_TIMED_OUT = 2,     /* a queued wait ran out of wait_ms */
    MCC_EVENT_LEASE_EXPIRED = 3, /* the server released a grant */
    MCC_EVENT_SHUTDOWN = 4,      /* the server is stopping */
    MCC_EVENT_ERROR = 16         /* a connection was lost (or its Auth
                                  * refused): error says why */
} mcc_event_kind;

/* An event. The server's events (1-4) are about the Wait_acquire whose
 * opaque is given; ERROR comes after every pending request of that server
 * got its callback (the oldest with the error that closed the connection,
 * the others with MCC_ERR_IO, or all with MCC_ERR_CONNECT when it never
 * came up). An event may come about a wait the application gave up (a
 * grant that crossed its Wait_release, which returns it): one whose
 * opaque it no longer follows is to be ignored. */
typedef struct mcc_event {
    mcc_event_kind kind;
    size_t server;
    uint32_t opaque;          /* of the Wait_acquire (0 for ERROR) */
    uint64_t lease_id;        /* 0 when nothing was granted */
    uint32_t value;           /* granted: consumption; lease expired,
                               * shutdown: resources released */
    const char *name;         /* not NUL-terminated; NULL for ERROR */
    size_t name_len;
    mcc_error error;          /* ERROR: MCC_ERR_IO, _CONNECT, _PROTOCOL,
                               * _TIMEOUT, _AUTH */
    uint8_t status;           /* ERROR with MCC_ERR_AUTH: the status */
} mcc_event;

typedef void (*mcc_event_callback)(mcc_client *c, const mcc_event *ev,
                                   void *arg);

/* Sets the callback of events (NULL: events are dropped). The events of
 * a blocking mcc_wait_acquire's request (until it returns) and of a lease
 * helper's go to them instead. */
void mcc_client_set_event_callback(mcc_client *c, mcc_event_callback fn,
                                   void *arg);

/* ---- Non-blocking API ---- */

/* mcc_wants() flags. */
#define MCC_WANT_READ  0x01
#define MCC_WANT_WRITE 0x02

/* Called whenever a server's fd or the flags it wants change (fd -1: the
 * connection closed), so an event loop can update its registration. */
typedef void (*mcc_watch_callback)(mcc_client *c, size_t server, int fd,
                                   int wants, void *arg);

/* Sets the watch callback (NULL: none; poll mcc_fd/mcc_wants instead). */
void mcc_client_set_watch_callback(mcc_client *c, mcc_watch_callback fn,
                                   void *arg);

/* Returns server i's socket, or -1 when it has no connection. */
int mcc_fd(const mcc_client *c, size_t i);

/* Returns what server i's socket waits for: MCC_WANT_READ and/or
 * MCC_WANT_WRITE (0 without a connection). */
int mcc_wants(const mcc_client *c, size_t i);

/* Tells the client server i's socket is readable: reads, decodes and runs
 * callbacks, then sends what they queued. Watch the socket
 * level-triggered: bytes may be left for the next readiness. Returns
 * MCC_OK or the error that closed the connection. */
mcc_error mcc_on_readable(mcc_client *c, size_t i);

/* Tells the client server i's socket is writable: finishes a connect and
 * sends buffered requests. Returns MCC_OK or the error that closed it. */
mcc_error mcc_on_writable(mcc_client *c, size_t i);

/* Returns the milliseconds until mcc_tick has work (a request's timeout,
 * a lease renewal); -1 when nothing is timed. */
int mcc_next_timeout_ms(const mcc_client *c);

/* Runs what is due: fails requests past their timeout (MCC_ERR_TIMEOUT;
 * a later answer is dropped) and renews leases. */
void mcc_tick(mcc_client *c);

/* Runs one round of a loop of the library's own, for programs without
 * one: waits with poll() up to timeout_ms (-1: until something happens;
 * at once when there is no connection and nothing timed) for a
 * connection to be ready or a timer to be due, handles what is ready and
 * runs mcc_tick. Call it in a loop to receive events and keep leases
 * renewed. Returns MCC_OK (MCC_ERR_BUSY from inside a callback). */
mcc_error mcc_poll(mcc_client *c, int timeout_ms);

/* Returns the number of the application's requests in flight on all
 * connections (the Noop and Auth the library sends on connecting are not
 * counted). */
size_t mcc_pending(const mcc_client *c);

/* Asynchronous operations: each validates its arguments, picks the server
 * (the name's, or server for the nameless ones), queues the request on
 * that server's connection (connecting if needed) and returns MCC_OK, or
 * an error without calling cb. cb runs later (from mcc_on_readable,
 * mcc_on_writable, mcc_tick or a blocking call) exactly once; cb may be
 * NULL to ignore the outcome. Any number of requests may be in flight.
 * Arguments are as for the blocking calls below. */
mcc_error mcc_noop_async(mcc_client *c, size_t server, mcc_callback cb,
                         void *arg);
mcc_error mcc_get_async(mcc_client *c, const void *name, size_t len,
                        mcc_callback cb, void *arg);
mcc_error mcc_acquire_async(mcc_client *c, const void *name, size_t len,
                            uint32_t resources, uint32_t maximum,
                            mcc_callback cb, void *arg);
mcc_error mcc_release_async(mcc_client *c, const void *name, size_t len,
                            uint32_t resources, mcc_callback cb, void *arg);
mcc_error mcc_stats_async(mcc_client *c, size_t server, mcc_record_callback cb,
                          void *arg);
mcc_error mcc_dump_async(mcc_client *c, size_t server, mcc_record_callback cb,
                         void *arg);
mcc_error mcc_wait_for_async(mcc_client *c, const void *name, size_t len,
                             const mcc_wait_params *params, mcc_callback cb,
                             void *arg);
mcc_error mcc_wait_acquire_async(mcc_client *c, const void *name, size_t len,
                                 uint32_t resources, uint32_t maximum,
                                 uint32_t wait_ms, uint32_t lease_ms,
                                 mcc_callback cb, void *arg)
    MCC_DEPRECATED("use mcc_wait_for_async");
mcc_error mcc_renew_async(mcc_client *c, const void *name, size_t len,
                          uint32_t lease_ms, mcc_callback cb, void *arg);
mcc_error mcc_wait_release_async(mcc_client *c, const void *name, size_t len,
                                 mcc_callback cb, void *arg);
mcc_error mcc_queues_async(mcc_client *c, size_t server,
                           mcc_record_callback cb, void *arg);
mcc_error mcc_lease_list_async(mcc_client *c, size_t server, uint32_t count,
                               mcc_record_callback cb, void *arg);
mcc_error mcc_ttl_insert_async(mcc_client *c, const void *name, size_t len,
                               uint64_t quota, uint64_t ttl, uint8_t unit,
                               mcc_callback cb, void *arg);
mcc_error mcc_ttl_query_async(mcc_client *c, const void *name, size_t len,
                              mcc_callback cb, void *arg);
mcc_error mcc_ttl_update_async(mcc_client *c, const void *name, size_t len,
                               uint8_t attribute, uint8_t change, uint8_t unit,
                               uint64_t value, mcc_callback cb, void *arg);
mcc_error mcc_ttl_purge_async(mcc_client *c, const void *name, size_t len,
                              mcc_callback cb, void *arg);
mcc_error mcc_check_async(mcc_client *c, const mcc_check_item *item,
                          bool peek, mcc_callback cb, void *arg);
mcc_error mcc_window_check_async(mcc_client *c, const void *name, size_t len,
                                 bool peek, uint8_t slots, uint32_t limit,
                                 uint32_t cost, uint64_t window_ns,
                                 mcc_callback cb, void *arg)
    MCC_DEPRECATED("use mcc_check_async");
mcc_error mcc_gcra_check_async(mcc_client *c, const void *name, size_t len,
                               bool peek, uint32_t burst, uint32_t count,
                               uint32_t cost, uint64_t period_ns,
                               mcc_callback cb, void *arg)
    MCC_DEPRECATED("use mcc_check_async");
mcc_error mcc_multi_check_async(mcc_client *c, const mcc_check_item *items,
                                size_t n, bool peek, mcc_callback cb,
                                void *arg);
mcc_error mcc_auth_async(mcc_client *c, size_t server, const void *secret,
                         size_t len, mcc_callback cb, void *arg);
mcc_error mcc_auth_user_async(mcc_client *c, size_t server,
                              const void *user, size_t user_len,
                              const void *secret, size_t secret_len,
                              unsigned flags, mcc_callback cb, void *arg);
mcc_error mcc_throttle_async(mcc_client *c, const void *tenant, size_t len,
                             uint32_t units, mcc_callback cb, void *arg);
mcc_error mcc_tenant_show_async(mcc_client *c, const void *tenant, size_t len,
                                mcc_callback cb, void *arg);
mcc_error mcc_tenant_list_async(mcc_client *c, size_t server,
                                mcc_record_callback cb, void *arg);
mcc_error mcc_node_show_async(mcc_client *c, size_t server, mcc_callback cb,
                              void *arg);
mcc_error mcc_busiest_async(mcc_client *c, size_t server, uint32_t count,
                            mcc_record_callback cb, void *arg);
mcc_error mcc_tenant_set_async(mcc_client *c, const void *tenant, size_t len,
                               uint8_t flags, uint32_t reserved,
                               uint32_t hard_limit, mcc_callback cb,
                               void *arg);
mcc_error mcc_tenant_remove_async(mcc_client *c, const void *tenant,
                                  size_t len, mcc_callback cb, void *arg);
mcc_error mcc_node_set_async(mcc_client *c, size_t server, uint32_t capacity,
                             mcc_callback cb, void *arg);
mcc_error mcc_unthrottle_async(mcc_client *c, size_t server, mcc_callback cb,
                               void *arg);
mcc_error mcc_reload_async(mcc_client *c, size_t server, mcc_callback cb,
                           void *arg);
mcc_error mcc_tenant_set_json_async(mcc_client *c, const void *tenant,
                                    size_t len, const char *doc,
                                    size_t doc_len, mcc_callback cb,
                                    void *arg);
mcc_error mcc_node_set_json_async(mcc_client *c, size_t server,
                                  const char *doc, size_t doc_len,
                                  mcc_callback cb, void *arg);

/* ---- Blocking API ---- */

/* Blocking operations: the same as the asynchronous ones, waiting with
 * poll() until the answer or timeout_ms (-1: the client's default). They
 * return out->error (out may be NULL). While they wait, callbacks of other
 * pending requests and events still run. A request that timed out stays
 * in the pipeline and its late answer is dropped. */

/* Sends a Noop to server i (checks the connection is alive). */
mcc_error mcc_noop(mcc_client *c, size_t server, int timeout_ms,
                   mcc_result *out);
/* Reads a counter's consumption (out->value). */
mcc_error mcc_get(mcc_client *c, const void *name, size_t len, int timeout_ms,
                  mcc_result *out);
/* Acquires resources (1..maximum) of a counter under maximum. */
mcc_error mcc_acquire(mcc_client *c, const void *name, size_t len,
                      uint32_t resources, uint32_t maximum, int timeout_ms,
                      mcc_result *out);
/* Releases resources this client's connection acquired. */
mcc_error mcc_release(mcc_client *c, const void *name, size_t len,
                      uint32_t resources, int timeout_ms, mcc_result *out);
/* Streams server i's Stats pairs to cb; returns how the series ended. */
mcc_error mcc_stats(mcc_client *c, size_t server, mcc_record_callback cb,
                    void *arg, int timeout_ms);
/* Streams server i's counters (Dump) to cb. */
mcc_error mcc_dump(mcc_client *c, size_t server, mcc_record_callback cb,
                   void *arg, int timeout_ms);
/* Waits for resources: when queued, waits on for the granted or timed-out
 * event (up to wait_ms more than timeout_ms) and reports it in out->wait
 * (state MCC_WAIT_GRANTED with the lease id and consumption, or
 * MCC_WAIT_TIMED_OUT). That event is not passed to the event callback.
 * If the call's own time runs out while queued, the wait is cancelled
 * with Wait_release and MCC_ERR_TIMEOUT returned (a grant that crossed
 * the cancel reaches the event callback, and the Wait_release returns
 * it). */
mcc_error mcc_wait_for(mcc_client *c, const void *name, size_t len,
                       const mcc_wait_params *params, int timeout_ms,
                       mcc_result *out);
/* The same with the four values apart (deprecated). */
mcc_error mcc_wait_acquire(mcc_client *c, const void *name, size_t len,
                           uint32_t resources, uint32_t maximum,
                           uint32_t wait_ms, uint32_t lease_ms, int timeout_ms,
                           mcc_result *out)
    MCC_DEPRECATED("use mcc_wait_for");
/* Renews the grant on name for lease_ms (out->lease_id). */
mcc_error mcc_renew(mcc_client *c, const void *name, size_t len,
                    uint32_t lease_ms, int timeout_ms, mcc_result *out);
/* Ends the wait or grant on name (out->value: resources returned). */
mcc_error mcc_wait_release(mcc_client *c, const void *name, size_t len,
                           int timeout_ms, mcc_result *out);
/* Streams server i's counters with waiters (Queues) to cb. */
mcc_error mcc_queues(mcc_client *c, size_t server, mcc_record_callback cb,
                     void *arg, int timeout_ms);
/* Streams server i's count leases nearest to expiry (Lease_list; count
 * 1..64, more is the server's 64), nearest first, to cb. */
mcc_error mcc_lease_list(mcc_client *c, size_t server, uint32_t count,
                         mcc_record_callback cb, void *arg, int timeout_ms);
/* Creates a TTL record (quota, ttl in unit). */
mcc_error mcc_ttl_insert(mcc_client *c, const void *name, size_t len,
                         uint64_t quota, uint64_t ttl, uint8_t unit,
                         int timeout_ms, mcc_result *out);
/* Reads a TTL record (out->ttl). */
mcc_error mcc_ttl_query(mcc_client *c, const void *name, size_t len,
                        int timeout_ms, mcc_result *out);
/* Changes a TTL record's quota or TTL (out->ttl: the record after). */
mcc_error mcc_ttl_update(mcc_client *c, const void *name, size_t len,
                         uint8_t attribute, uint8_t change, uint8_t unit,
                         uint64_t value, int timeout_ms, mcc_result *out);
/* Removes a TTL record. */
mcc_error mcc_ttl_purge(mcc_client *c, const void *name, size_t len,
                        int timeout_ms, mcc_result *out);
/* Checks (and unless peek charges) the sliding window or GCRA limit that
 * item describes (its op says which) on its name (out->check). */
mcc_error mcc_check(mcc_client *c, const mcc_check_item *item, bool peek,
                    int timeout_ms, mcc_result *out);
/* The same for a window, or a GCRA, with the values apart (deprecated). */
mcc_error mcc_window_check(mcc_client *c, const void *name, size_t len,
                           bool peek, uint8_t slots, uint32_t limit,
                           uint32_t cost, uint64_t window_ns, int timeout_ms,
                           mcc_result *out)
    MCC_DEPRECATED("use mcc_check");
mcc_error mcc_gcra_check(mcc_client *c, const void *name, size_t len,
                         bool peek, uint32_t burst, uint32_t count,
                         uint32_t cost, uint64_t period_ns, int timeout_ms,
                         mcc_result *out)
    MCC_DEPRECATED("use mcc_check");
/* Checks 1..16 limits as one (out->multi); all names must map to one
 * server (else MCC_ERR_CROSS_SERVER). */
mcc_error mcc_multi_check(mcc_client *c, const mcc_check_item *items, size_t n,
                          bool peek, int timeout_ms, mcc_result *out);
/* Authenticates server i's connection (privileged operations). */
mcc_error mcc_auth(mcc_client *c, size_t server, const void *secret,
                   size_t len, int timeout_ms, mcc_result *out);
/* Logs server i's connection in as a user of the server's users file
 * (flags: 0 or MCC_AUTH_NONBLOCKING): its requests are then charged to
 * the user's tenant (since 1.1). */
mcc_error mcc_auth_user(mcc_client *c, size_t server, const void *user,
                        size_t user_len, const void *secret,
                        size_t secret_len, unsigned flags, int timeout_ms,
                        mcc_result *out);
/* Charges units to a tenant (out->throttle). */
mcc_error mcc_throttle(mcc_client *c, const void *tenant, size_t len,
                       uint32_t units, int timeout_ms, mcc_result *out);
/* Shows a tenant (out->tenant). */
mcc_error mcc_tenant_show(mcc_client *c, const void *tenant, size_t len,
                          int timeout_ms, mcc_result *out);
/* Streams server i's tenants to cb. */
mcc_error mcc_tenant_list(mcc_client *c, size_t server, mcc_record_callback cb,
                          void *arg, int timeout_ms);
/* Shows server i's node view (out->node). */
mcc_error mcc_node_show(mcc_client *c, size_t server, int timeout_ms,
                        mcc_result *out);
/* Streams server i's (at most count, at most MCC_BUSIEST_MAX) rate-limit
 * names with the most checks in the last whole second to cb, busiest
 * first (since 1.2). */
mcc_error mcc_busiest(mcc_client *c, size_t server, uint32_t count,
                      mcc_record_callback cb, void *arg, int timeout_ms);
/* Configures a tenant (privileged; flags MCC_TENANT_SET_*). */
mcc_error mcc_tenant_set(mcc_client *c, const void *tenant, size_t len,
                         uint8_t flags, uint32_t reserved, uint32_t hard_limit,
                         int timeout_ms, mcc_result *out);
/* Removes a tenant's configuration (privileged). */
mcc_error mcc_tenant_remove(mcc_client *c, const void *tenant, size_t len,
                            int timeout_ms, mcc_result *out);
/* Sets server i's capacity (privileged). */
mcc_error mcc_node_set(mcc_client *c, size_t server, uint32_t capacity,
                       int timeout_ms, mcc_result *out);
/* Exempts this connection to server i from throttling (privileged). */
mcc_error mcc_unthrottle(mcc_client *c, size_t server, int timeout_ms,
                         mcc_result *out);
/* Makes server i reload its settings file (privileged). */
mcc_error mcc_reload(mcc_client *c, size_t server, int timeout_ms,
                     mcc_result *out);
/* Configures a tenant with a JSON document, {"reserved": N, "hard_limit":
 * N|"unlimited"}, a field left out keeping its value (privileged; at most
 * 4096 bytes; a refused document is MCC_ERR_STATUS with status 0x04 or
 * 0x2C). */
mcc_error mcc_tenant_set_json(mcc_client *c, const void *tenant, size_t len,
                              const char *doc, size_t doc_len, int timeout_ms,
                              mcc_result *out);
/* Sets server i's capacity with a JSON document, {"capacity": N}
 * (privileged; the same rules). */
mcc_error mcc_node_set_json(mcc_client *c, size_t server, const char *doc,
                            size_t doc_len, int timeout_ms, mcc_result *out);

/* ---- Lease helper ---- */

typedef struct mcc_lease mcc_lease;

/* What a lease callback reports. */
typedef enum mcc_lease_state {
    MCC_LEASE_WAITING = 0,    /* sent or queued (never reported) */
    MCC_LEASE_GRANTED = 1,    /* held; renewed in the background */
    MCC_LEASE_TIMED_OUT = 2,  /* the wait ran out (or wait_ms 0 and the
                               * resources were not available) */
    MCC_LEASE_LOST = 3,       /* expired, renew refused, connection lost
                               * or server shutdown: no longer held */
    MCC_LEASE_FAILED = 4      /* the Wait_acquire itself failed: error
                               * (and status) say why */
} mcc_lease_state;

/* Called when a lease changes state; the lease may be released from
 * inside (mcc_lease_release), which frees it. */
typedef void (*mcc_lease_callback)(mcc_client *c, mcc_lease *lease,
                                   mcc_lease_state state, mcc_error error,
                                   uint8_t status, void *arg);

/* Sends a Wait_acquire for a lease of lease_ms (1..0xfffffffe: the helper
 * must know how often to renew) and stores the helper in *out. On grant
 * it calls cb(GRANTED) and then renews every lease_ms/3 from mcc_tick (or
 * any call that drives the client), until released or lost. The lease
 * stays owned by the client until mcc_lease_release. */
mcc_error mcc_lease_start(mcc_client *c, const void *name, size_t len,
                          const mcc_wait_params *params,
                          mcc_lease_callback cb, void *arg, mcc_lease **out);
/* The same with the four values apart (deprecated). */
mcc_error mcc_lease_acquire_async(mcc_client *c, const void *name, size_t len,
                                  uint32_t resources, uint32_t maximum,
                                  uint32_t wait_ms, uint32_t lease_ms,
                                  mcc_lease_callback cb, void *arg,
                                  mcc_lease **out)
    MCC_DEPRECATED("use mcc_lease_start");

/* Gives the lease up: sends Wait_release if it is held or waiting, and
 * frees it (no further callbacks). Safe from inside its callback. */
void mcc_lease_release(mcc_lease *lease);

/* Returns the lease's current state. */
mcc_lease_state mcc_lease_get_state(const mcc_lease *lease);

/* Returns the lease id (fencing token) of a granted lease, else 0. */
uint64_t mcc_lease_id(const mcc_lease *lease);

/* ---- Quotas: get_lease ---- */

/* The seed's quota manager call, over the window check: whether the
 * action (user, domain, op) happened at most quota times in the last
 * second (a 1 s window of 10 slots of 100 ms) on the server ketama
 * assigns its name to. See doc/clients.md, "get_lease". */

/* Writes the name of (user, domain, op) into buf[0..cap): "getlease:",
 * then len(user) ":" user, len(domain) ":" domain (lengths in decimal
 * bytes), then op. Returns its length (not NUL-terminated),
 * MCC_ERR_NAME when longer than MCC_NAME_MAX, MCC_ERR_INVALID when an
 * argument is NULL or cap too small. */
int mcc_get_lease_name(char *buf, size_t cap, const char *user,
                       const char *domain, const char *op);

/* Sets the batch size max_lease (>= 1; default 1, exact). With B > 1,
 * a call that has no allowance charges min(B, quota) to the server at
 * once (or what is left of the window when that is less) and, when
 * allowed, answers the next B-1 calls of that name itself for 100 ms; a
 * refusal ends the allowance. Over any 0.9 s, K clients admit at most
 * quota + K*(B-1) calls of one name. */
mcc_error mcc_client_set_max_lease(mcc_client *c, uint32_t max_lease);

/* Returns the client's max_lease. */
uint32_t mcc_client_max_lease(const mcc_client *c);

/* The seed's init(): a client of the servers "HOST:PORT[:WEIGHT],..."
 * with batch size max_lease; NULL on a bad list or max_lease 0 (why in
 * err[0..errlen) when err is not NULL). Free it with mcc_client_free. */
mcc_client *mcc_quota_init(const char *servers, uint32_t max_lease,
                           char *err, size_t errlen);

/* Blocking (the client's timeout). Returns 1 when the action may
 * happen (it is counted), 0 when it happened quota times already in the
 * last second, or a negative MCC_ERR_* (MCC_ERR_NAME for a name above
 * MCC_NAME_MAX, MCC_ERR_SERVER_DOWN when its server is down and
 * remapping of rate limits is off). */
int mcc_get_lease(mcc_client *c, const char *user, const char *domain,
                  const char *op, uint32_t quota);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
