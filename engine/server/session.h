/* session.h: one client's conversation with the counter service, without
 * the socket: request bytes go in (cnt_session_feed), answers come out in
 * request order in the session's output buffer. A session owns the client's
 * holdings ledger and its Dump in progress. connection.c moves the bytes
 * between a socket and a session; tests drive a session directly. */
#ifndef CNT_ENGINE_SESSION_H
#define CNT_ENGINE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/authlimit.h"
#include "engine/core/gc.h"
#include "engine/core/groups.h"
#include "engine/core/holdings.h"
#include "engine/core/limits.h"
#include "engine/core/throttle.h"
#include "engine/core/users.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"
#include "engine/core/ticket.h"
#include "engine/core/wheel.h"
#include "engine/server/outbuf.h"
#include "engine/server/survey.h"
#include "protocol/request.h"

typedef struct cnt_session cnt_session;

/* Writes a server event about ticket k (code CNT_EVENT_*: granted, timed
 * out, lease expired, shutdown; lease_id and value as the event carries
 * them) into the session's output, in the front's own format. Called only
 * by the session's owner, between answers, never once its close began. */
typedef void (*cnt_session_event_fn)(cnt_session *s, uint8_t code,
                                     const cnt_ticket *k, uint64_t lease_id,
                                     uint32_t value);
/* Room for a client's address as text (an IPv6 address is at most 45
 * characters) and for "[address]:port" with its NUL. */
#define CNT_PEER_ADDR_MAX 46u
#define CNT_PEER_MAX 56u

/* What a session needs from its worker; shared by all the worker's
 * sessions and outliving them. */
typedef struct cnt_session_env {
    cnt_table *table;
    cnt_limits *limits;             /* the rate limits; NULL: their
                                       opcodes answer 0x81 */
    /* Tenant throttling: the throttle (NULL: its opcodes answer 0x81),
     * the admin secret (NULL: none configured, every privileged opcode
     * answers Not permitted), the settings file's reload (NULL: none;
     * returns OK, NOT_FOUND without a file, INVALID when the file is
     * wrong, or the throttle's refusal), what hears of each failed
     * authentication (attempt of tries; refused: the limit refused it
     * without comparing; it logs, never the secret), the limit on failed
     * authentications shared by every session (NULL: none), and what
     * hears of each privileged change that was made (what, in words; it
     * logs). */
    cnt_throttle *throttle;
    const uint8_t *secret;
    size_t secret_len;
    cnt_status (*reload)(void *ctx);
    void *reload_ctx;
    void (*auth_failed)(cnt_session *s, unsigned attempt, unsigned tries,
                        bool refused);
    cnt_auth_limit *auth_limit;
    void (*privileged_change)(cnt_session *s, const char *what);
    const cnt_stats *stats;         /* for the Stats opcode; may be NULL */
    const cnt_gc *gc;               /* for the Stats opcode; may be NULL */
    cnt_stats_slot *slot;           /* where requests are counted */
    /* Waiting acquisition: the server-defined groups (NULL: none), the cap
     * of outstanding wait_acquire requests per session, the wheel that
     * holds the deadlines of this worker's sessions, and the index of the
     * worker (stamped on tickets, so grants find their way back). */
    const cnt_groups *groups;
    uint32_t max_waits;
    cnt_wheel *wheel;
    uint16_t worker;
    /* Called when a session got output outside cnt_session_feed (an event:
     * a grant, a timeout, an expiry), so that its connection sends it. */
    void (*wake)(cnt_session *s);
    /* Called after a session armed a timer due at deadline_ns, so that the
     * worker's loop wakes up in time for it. */
    void (*timer_armed)(const struct cnt_session_env *env,
                        uint64_t deadline_ns);
    void *owner;                    /* the worker, for the two hooks */
    /* The Throttr front's value size in bytes (1, 2, 4 or 8). */
    unsigned throttr_value_size;
    /* The WebSocket front's bounds: the HTTP upgrade request's header
     * block and one message (after reassembly of its fragments), in
     * bytes. */
    uint32_t ws_max_header;
    uint32_t ws_max_message;
    /* Tenants on connections: the users Auth_user knows (NULL: none), the
     * tenant of a connection that did not authenticate as one (NULL:
     * requests are not charged at all) and the units each class of
     * request costs its connection's tenant (0: free). Charges go to
     * throttle. */
    const cnt_users *users;
    const uint8_t *default_tenant;
    uint16_t default_tenant_len;
    uint32_t tenant_cost[CNT_COST_CLASSES];
    /* Lease_list: starts a survey of every worker's wheel for the want
     * nearest leases, asked by s (survey.h): posts it to every worker,
     * this one included; the survey comes back with one reference,
     * s's, and s is woken (cnt_session_survey_done) once it is ready.
     * NULL when memory is short. Without the hook a session surveys its
     * own wheel alone. When the server already has as many surveys out as
     * it allows, the hook queues s instead (sets s->survey_queued, keeps
     * want in s->survey_want, returns NULL): s waits, reading nothing,
     * until the owner starts its survey (cnt_session_survey_started). */
    cnt_survey *(*survey_start)(cnt_session *s, uint32_t want);
    /* Takes a queued s (survey_queued) off the owner's queue, at its
     * end; required with a survey_start that queues. */
    void (*survey_cancel)(cnt_session *s);
} cnt_session_env;

/* The fields are the session's; callers read out and the stop reasons. */
struct cnt_session {
    const cnt_session_env *env;
    /* Answers in request order. Server-initiated packets (events: magic
     * 0x92) are appended here between answers, at the moment they happen,
     * except while a Dump or a queue listing streams its records: they wait
     * in held (allocated then) and follow its end marker. */
    cnt_outbuf out;
    cnt_outbuf *held;
    cnt_holdings holdings;          /* what this client has acquired */
    uint64_t skip;                  /* body bytes still to discard unread */

    /* A Dump, a queue listing or a tenant listing in progress: records
     * stream out as the output drains; later requests wait in the input
     * until its end marker is out. */
    bool dumping;
    uint8_t dump_opcode;            /* CNT_OP_DUMP, _QUEUES, _TENANT_LIST */
    cnt_map_cursor dump;
    size_t queues_stripe;           /* where a queue listing has got to */
    uint32_t dump_opaque;
    /* A lease listing: its survey (one reference), whether the session
     * still waits for other workers' answers (it reads nothing then),
     * and the next record to write. */
    cnt_survey *survey;
    bool surveying;
    uint32_t lease_next;
    /* Queued for a survey slot (survey_start), the want it asked, and
     * its place in the owner's queue (the owner's to link). */
    bool survey_queued;
    uint32_t survey_want;
    TAILQ_ENTRY(cnt_session) survey_wait;

    /* The wait_acquire requests this client has outstanding (queued,
     * granted, or expired and not yet acknowledged), one per name. */
    cnt_tickets tickets;
    bool ending;                    /* cnt_session_end began: no events */
    /* How events are written: the binary front's 0x92 packets unless the
     * front that owns the session set its own after cnt_session_init. */
    cnt_session_event_fn event;
    /* Called when a grant whose event the granting thread wrote to the
     * socket itself is delivered (NULL: nothing to do), so the front can
     * count the message it did not send. */
    void (*told)(cnt_session *s);
    /* A front's own per-connection state (NULL: none), and what frees it
     * when the session ends, after its tickets ended. */
    void *front_state;
    void (*front_end)(cnt_session *s);

    /* Who the client is, for the log and the per-address limit of failed
     * authentications: its address ("" when unknown) and "address:port"
     * ("[address]:port" for IPv6; "unknown" when not known). Set once by
     * cnt_session_set_peer; the session never sees the socket. */
    char peer_addr[CNT_PEER_ADDR_MAX];
    char peer[CNT_PEER_MAX];

    /* Tenant throttling: what this connection was granted. */
    bool privileged;                /* authenticated with the secret, or
                                       as a user with Admin */
    bool unthrottled;               /* its charges are never throttled */
    /* The tenant its requests are charged to (env's default until it
     * authenticates as a user; the bytes outlive the session), and
     * whether a request over the tenant's share is answered Throttled
     * (true) or waits, unread, for the next second (false). */
    const uint8_t *tenant;
    uint16_t tenant_len;
    bool nonblocking;
    /* Set by a feed that stopped because the tenant is over its share:
     * nanoseconds until the next second, when the front feeds again; the
     * request that could not pay is not consumed. 0: not paused. */
    uint64_t pause_ns;
    /* Requests at the front of the input paid for already, together. */
    uint32_t prepaid;
    uint8_t auth_failures;
    bool auth_closed;               /* closing after too many failures */

    /* Why the last cnt_session_feed stopped, besides using up its input. */
    size_t need;                    /* the incomplete request at the front
                                       needs this many bytes in all (0: no
                                       such request) */
    bool more;                      /* stopped at the output's watermark or
                                       turn budget with work left */
    bool closing;                   /* framing lost, or too many failed
                                       authentications (auth_closed):
                                       takes no more input */
    bool failed;                    /* out of memory: end the session now */
    /* With closing: the front ends the connection as its protocol says
     * (an HTTP error answer, a WebSocket close handshake), not because
     * framing was lost; the words for the log's debug line. */
    const char *close_reason;
};

/* Prepares a session (allocates its output buffer); false when memory is
 * short. env must outlive it. */
bool cnt_session_init(cnt_session *s, const cnt_session_env *env);

/* Records who the client is: addr is its address as text (at most
 * CNT_PEER_ADDR_MAX - 1 characters; longer is cut) and port its port.
 * Until called, the session's client is "unknown". */
void cnt_session_set_peer(cnt_session *s, const char *addr, uint16_t port);

/* Ends the session: stops its Dump, ends its tickets (cancelling waits,
 * returning grants), releases everything its ledger holds and frees its
 * memory. */
void cnt_session_end(cnt_session *s);

/* Takes request bytes in[0..len) (the unconsumed input, oldest first) and
 * answers the whole requests among them into s->out, continuing a Dump
 * first, until the input is used up, the output is full (cnt_outbuf_full:
 * s->more tells whether work is left), the next request is incomplete
 * (s->need), framing is lost (s->closing) or memory runs out (s->failed).
 * Returns how many bytes it consumed; the caller drops them and passes the
 * rest, with whatever arrived since, next time. */
size_t cnt_session_feed(cnt_session *s, const uint8_t *in, size_t len);

/* The same for a connection of the Throttr front: takes Throttr v5
 * requests and answers each (session_throttr.c); an unknown request type
 * sets s->closing. */
size_t cnt_session_feed_throttr(cnt_session *s, const uint8_t *in,
                                size_t len);

/* The same for a connection of the WebSocket front: an HTTP/1.1 upgrade
 * of GET /quota, then the quota API's JSON messages in WebSocket frames
 * (session_ws.c). Ends with closing and close_reason set. */
size_t cnt_session_feed_ws(cnt_session *s, const uint8_t *in, size_t len);

/* The WebSocket front's direct-write hooks (cnt_front): whether its
 * session is an upgraded quota connection with nothing queued and no
 * close under way, and k's quota_passed message as one unmasked text
 * frame (0 when it does not fit in cap). */
bool cnt_session_ws_quiet(const cnt_session *s);
size_t cnt_session_ws_granted_frame(const cnt_ticket *k, uint8_t *buf,
                                    size_t cap);

/* Charges one request of class cls (a cnt_cost_class) to the session's
 * tenant, for the fronts that answer their own way (Throttr, WebSocket):
 * true when it may run; false when the tenant is over its share (the
 * session is then paused: s->pause_ns, and a request that has not run
 * must stay unconsumed) or memory ran out (s->failed). ran: the request
 * has run already (a front that cannot hold it back), so it is counted
 * even when over the share. */
bool cnt_session_pay(cnt_session *s, unsigned cls, bool ran);

/* Takes a grant that reached the session's worker through the mailbox
 * (any session of that worker: the ticket names its owner): tells the
 * client, arms the lease; or frees the ticket when its owner ended it
 * meanwhile. */
void cnt_session_deliver(const cnt_session_env *env, cnt_ticket *k);

/* Fires a due timer of the worker's wheel (a ticket's wait or lease); the
 * wheel's cnt_timer_fire_fn, with the env as context. */
void cnt_session_fire(cnt_timer *t, void *env);

/* The server is stopping: ends every ticket of the session, telling the
 * client of each with a shutdown event (the caller sends what it can
 * before closing). */
void cnt_session_shutdown(cnt_session *s);

/* ---- The seam: what a protocol front calls ----
 *
 * A front (the binary counter protocol is one) turns its own requests into
 * these calls and their results into its own answers; events come back
 * through s->event. Semaphores (Get, Acquire, Release) are the table's
 * calls with s->holdings (engine/core/table.h), the rate limits the limits'
 * calls on s->env->limits (engine/core/limits.h), the throttle's on
 * s->env->throttle; closing the connection is cnt_session_end, which
 * releases everything the session holds and waits for. */

/* A wait_acquire's arguments: maximum 0 and the durations
 * CNT_USE_GROUP_DEFAULT leave them to the name's group (whose maximum
 * applies whenever the name is a group); lease_ms 0 = no lease; opaque is
 * carried on the ticket into its events. */
typedef struct cnt_session_wait_args {
    const uint8_t *name;
    uint16_t name_len;
    uint32_t resources;
    uint32_t maximum;
    uint32_t wait_ms;
    uint32_t lease_ms;
    uint32_t opaque;
} cnt_session_wait_args;

/* A wait_acquire's result: granted at once (lease_id, the fencing token)
 * or queued at position, with the counter's consumption then. */
typedef struct cnt_session_wait_outcome {
    bool granted;
    uint32_t position;
    uint64_t lease_id;
    uint32_t consumption;
} cnt_session_wait_outcome;

/* Asks for a->resources of the counter a->name, waiting in its FIFO queue
 * up to the wait (0: not at all) when they are not free; a queued request
 * ends with a granted or timed-out event, a granted one with a lease may
 * end with an expiry event. place is the name's place when the caller
 * computed it, else NULL. OK with *out, or UNKNOWN_GROUP,
 * EXCEEDS_MAXIMUM, ALREADY_ACTIVE (one request per name and session),
 * TOO_MANY_WAITS, OUT_OF_MEMORY, or the table's refusal (RESOURCE_BUSY
 * when it may not wait). */
cnt_status cnt_session_wait_acquire(cnt_session *s,
                                    const cnt_table_place *place,
                                    const cnt_session_wait_args *a,
                                    cnt_session_wait_outcome *out);

/* Renews the lease of the session's grant on name: it now ends lease_ms
 * (CNT_USE_GROUP_DEFAULT: the group's) from now. OK with *lease_id, or
 * UNKNOWN_GROUP, INVALID (no lease to renew), NOT_ACQUIRED,
 * LEASE_EXPIRED (acknowledged: the request is forgotten). */
cnt_status cnt_session_renew(cnt_session *s, const uint8_t *name,
                             uint16_t name_len, uint32_t lease_ms,
                             uint64_t *lease_id);

/* Ends the session's request on name: cancels its wait (*returned 0) or
 * returns its grant (*returned its resources). OK, or NOT_ACQUIRED, or
 * LEASE_EXPIRED (it had expired; acknowledged now). */
cnt_status cnt_session_wait_release(cnt_session *s, const uint8_t *name,
                                    uint16_t name_len, uint32_t *returned);

/* Starts a survey of every worker's wheel for the want nearest leases,
 * asked by s (the env's survey_start, or s's own wheel alone without it):
 * one reference, s's; s must keep it in s->survey, and is woken
 * (cnt_session_survey_done, then the connection's write event) once it is
 * ready unless cnt_survey_ready says it is already. NULL when memory is
 * short, or when s was queued for a slot (s->survey_queued: it is woken
 * through cnt_session_survey_started). Lease_list uses it, and the live
 * page's feed for its leases. */
cnt_survey *cnt_session_survey_start(cnt_session *s, uint32_t want);

/* The survey a Lease_list of s started is ready (every worker answered):
 * the session writes its records at its next feed (the caller wakes the
 * connection). */
void cnt_session_survey_done(cnt_session *s);

/* The survey a queued listing of s waited for has started (the owner
 * took s off its queue): s writes its records once sv is ready, or, when
 * sv is NULL, a Lease_list answers an out-of-memory status and the live
 * feed goes on without leases (the caller wakes the connection). */
void cnt_session_survey_started(cnt_session *s, cnt_survey *sv);

#endif
