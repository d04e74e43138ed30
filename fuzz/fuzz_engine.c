/* fuzz_engine.c: libFuzzer target for the counter table and the waiting
 * side of the sessions: scripted steps over four simulated connections,
 * checked against a shadow model after each. Reference requests go to the
 * table directly, on the ledger of the connection's session; waiting
 * requests (wait_acquire, renew, wait_release, queues) go through the
 * session itself, and its answers and events are decoded from its output.
 * The grant sink keeps granted tickets until a step delivers them, as a
 * worker's mailbox would. Time and allocation failures come from the test
 * doubles of tests/engine_fake.c (the target links with their -Wl,--wrap
 * flags). */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "engine/core/clock.h"
#include "engine/core/gc.h"
#include "engine/core/groups.h"
#include "engine/core/holdings.h"
#include "engine/core/limits.h"
#include "engine/core/map.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"
#include "engine/core/throttle.h"
#include "engine/core/ticket.h"
#include "engine/core/wheel.h"
#include "engine/server/session.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/throttr.h"
#include "tests/engine_fake.h"

/* Steps: wire requests, connection ends and server shutdowns, clock moves
 * (firing the timers of waits and leases), GC sweeps, failed allocations,
 * grant deliveries in any order, paused queue listings; rate-limit
 * operations straight to the limits core (TTL counters, window and GCRA
 * checks with and without peek, multi-checks, the limits' sweep) on the
 * same clock and memory budget. Invariants: every answer and event as the
 * model predicts (a shutdown event for each wait and grant of a stopping
 * connection), none missing and none more; consumption = ledgers +
 * granted tickets, never above the largest admitting maximum of a current
 * holder; every queued request ends exactly once (granted or timed-out
 * event, or its owner released it or went away); lease ids count up by one
 * per grant; no event for a closed connection or a released grant; the
 * waiting figures; zero, collected and back to the memory baseline at the
 * end. Rate limits: every answer as the model predicts, field by field;
 * no window lets more than its limit through in any interval of its
 * length, checked over a log of the allowed charges; no GCRA lets more
 * than burst + 1 + elapsed * count / period through (exact integers); a
 * TTL counter is gone once the clock passed its expiry; a peek, a denied
 * or refused multi-check charge nothing (the same peeks answer the same
 * after it); the figures per kind, used_memory and the shared budget as
 * the model counts them; empty and at the memory baseline at the end,
 * once everything expired and was swept.
 * Tenant throttling, straight to the throttle core on the same clock,
 * memory budget and GC (an escape step): capacity changes, tenants set
 * and removed (refusals included: 0x2C, 0x04, 0x01), whole settings sets
 * applied all or nothing, charges throttled and unthrottled, clock moves
 * to either side of a second's boundary, paused tenant listings, sweeps,
 * failing allocations and the shared memory limit. Every answer as the
 * model predicts (state, reason, used, remaining, retry); a charge its
 * reserve covers is never throttled, so a tenant demanding its reserve
 * gets it each second; no throttled-connection charge takes a tenant past
 * its hard limit; the units such charges are allowed since a second
 * began (or the configuration last changed) stay within the capacity;
 * unthrottled units are counted; every tenant view, the node view, the
 * totals and the map's records and memory as the model has them; no
 * record left and the memory back to its baseline at the end.
 * Tenants on connections (a throttle step's operation): two sessions
 * whose requests their tenant pays for (a users table the input's flags
 * byte builds; Auth_user with right and wrong secrets, unknown users and
 * the non-blocking flag; Noop and Acquire on a table of their own; input
 * left unread while paused, then read whole), charged through the same
 * model as the throttle steps, on the same clock. Every answer in
 * request order as the model predicts; a blocking connection over its
 * share consumes nothing until the next second starts; a non-blocking
 * one's request is answered 0x2D with the time to that second and the
 * reason, and not run (the counter unchanged); a third failed login
 * closes the connection; throttled-connection units stay within reserve
 * + pool, and with its Unthrottled users' units within the second. */

#define NCONN 4
#define NNAMES 32
#define INTERVAL 10u
#define START_MS 1700000000000ull
#define NS_PER_MS 1000000ull
#define EXPECT_MAX 256          /* packets expected of one connection */
#define MAX_GRANTS (NCONN * NNAMES)  /* grants one step can make */

/* Where the model has one connection's wait_acquire request on a name. */
enum { MT_NONE, MT_QUEUED, MT_FLIGHT, MT_GRANTED, MT_EXPIRED };

/* What the model knows of one wait_acquire request (the session's ticket):
 * MT_FLIGHT is granted but not yet delivered to its owner. */
typedef struct mticket {
    uint8_t state;
    bool fresh;                 /* granted in this step; the sink has not
                                   been seen to take it yet */
    uint32_t resources;
    uint32_t maximum;           /* the admitting maximum */
    uint32_t lease_ms;          /* 0 = no lease */
    uint32_t opaque;
    uint64_t lease_id;
    uint32_t granted_value;     /* in flight: the counter's consumption as
                                   the granting step left it, which its
                                   granted event reports */
    uint64_t seq;               /* place in the queue: lower is earlier */
    uint32_t timer;             /* CNT_TIMER_WAIT or _LEASE armed; 0 none */
    uint64_t expires_ms;        /* the armed timer's tick */
    cnt_ticket *k;              /* in flight: the ticket the sink took */
} mticket;

/* What the model knows of one counter name. */
typedef struct shadow {
    uint8_t *name;
    uint16_t len;
    bool exists;                /* the table has it */
    uint64_t held[NCONN];       /* what each connection's ledger holds */
    uint32_t held_max[NCONN];   /* largest maximum admitted since held[c]
                                   was last 0 */
    mticket tk[NCONN];          /* each connection's waiting request */
    uint32_t max_admitted;      /* largest maximum of an admitted Acquire */
    uint64_t last_change_ms;    /* last time its consumption changed */
    uint64_t last_touch_ms;     /* last Acquire/Release attempt on it */
    uint64_t peak;              /* max consumption in window peak_window */
    uint64_t peak_window;
} shadow;

/* The kinds of packets a connection's output must carry. */
enum { X_ERROR, X_WAIT, X_U32, X_U64, X_EVENT, X_STREAM };

/* One packet a connection's output must carry next. */
typedef struct expect {
    uint8_t kind;               /* X_* */
    uint8_t code;               /* the opcode, or the event's code */
    uint8_t status;             /* answers: the status */
    uint8_t state;              /* X_WAIT: granted or queued */
    uint32_t opaque;
    uint32_t value;             /* u32 body, consumption, event value */
    uint32_t position;          /* X_WAIT: place in the queue */
    uint64_t id;                /* lease id */
    const shadow *name;         /* X_EVENT: the request's name */
} expect;

/* One simulated client: its session and what its output must carry. */
typedef struct conn {
    cnt_session s;
    bool open;
    expect exp[EXPECT_MAX];     /* answers and events, in order */
    size_t nexp, xhead;         /* pushed; next to match */
    expect held[EXPECT_MAX];    /* events due after the listing's end */
    size_t nheld;
    /* A queue listing in progress (it may pause between stripes): the
     * names it listed, and those whose queue has existed all along. */
    bool streaming;
    bool listed[NNAMES];
    bool steady[NNAMES];
    unsigned wakes, want_wakes; /* wake hook calls: seen, expected */
} conn;

/* ---- The rate limits' model ---- */

#define NLIM 4                  /* names per kind of rate limit */
#define LOG_MAX 128             /* allowed charges remembered per record */
#define MULTI_ITEMS 17          /* one more than a multi-check may have */
/* At the end the clock moves this far (ns) so every window and GCRA
 * record is dead: beyond the longest GCRA tolerance the steps can ask
 * for (a 1e7 / 7 ns interval times 2^32, about 6e15 ns). */
#define LIMITS_FINISH_NS 100000000000000000ull

typedef unsigned __int128 u128;

/* One allowed, charged cost, for the guarantees. */
typedef struct lcharge {
    uint64_t t;                 /* monotonic ns of the charge */
    uint64_t cost;
    uint64_t epoch;             /* gcra: the emission interval's epoch */
} lcharge;

/* The count of one window slot. */
typedef struct lslot {
    uint64_t slot, count;
} lslot;

/* What the model knows of one rate-limit record (a kind and a name). */
typedef struct lshadow {
    bool present;               /* in the map, live or dead */
    /* ttl */
    uint64_t quota, expiry;
    uint8_t unit;
    /* window: the shape of the last charge (kept after the record went),
     * the newest charged slot and the counts of slots newest - N ..
     * newest */
    uint64_t slot_ns;
    uint8_t slots;
    uint64_t newest;
    lslot counts[CNT_WINDOW_MAX_SLOTS + 1];
    size_t ncounts;
    uint64_t floor;             /* window: charges before this time may
                                   have been forgotten by a reshape */
    /* gcra: TAT = tat_q + tat_f / tat_c ns; the last charge's rate */
    uint64_t tat_q, tat_f;
    uint32_t tat_c;
    uint64_t period, count, epoch;
    lcharge log[LOG_MAX];       /* the latest allowed charges, oldest
                                   first */
    size_t nlog;
} lshadow;

/* The limits' figures of one kind, as the model counts them. */
typedef struct lfigures {
    uint64_t objects, checks, allowed, limited, expired;
} lfigures;

/* ---- The throttle's model ---- */

#define NTEN 4                  /* tenant names of the throttle steps */
#define TSET_MAX 3              /* tenants a settings set names */

/* What the model knows of one tenant. */
typedef struct tshadow {
    bool present;               /* the throttle has a record of it */
    bool configured;
    uint32_t reserved, hard;    /* its own R and H, when configured */
    uint64_t second, used;      /* units allowed in that second */
    uint64_t units, throttled;  /* since its record exists */
    uint64_t covered;           /* units of inv_second's charges that its
                                   reserve covered */
    /* Units allowed in inv_second: on throttled connections since the
     * later of its start and the last change of the configuration, and
     * unthrottled ones since its start. */
    uint64_t lim_since, unthr;
} tshadow;

/* What the model knows of the throttle: the node's figures, rolled on to
 * a new second by a charge as the throttle does it, the totals, the
 * tenants, and a listing that may pause between steps. */
typedef struct tmodel {
    uint32_t capacity, default_hard;
    uint64_t second, used, pool_used;
    uint64_t reserved_sum;
    uint32_t tenants;           /* configured ones */
    cnt_throttle_stats st;
    tshadow ten[NTEN];
    /* The invariants' own figures: the second they belong to and the
     * units allowed on throttled connections (with a capacity) since the
     * later of its start and the last change of the configuration. */
    uint64_t inv_second, since_change;
    bool changed;               /* the configuration changed in inv_second */
    bool listing;
    cnt_map_cursor cursor;
    bool listed[NTEN];          /* reported by the listing */
    bool steady[NTEN];          /* a record all through the listing */
    uint64_t baseline;          /* used_memory of the empty map */
} tmodel;

/* ---- Tenants on connections ---- */

#define NUCON 2                 /* connections charged to their tenant */
#define NUSERS 4                /* users of the users table */
#define UPEND_MAX 8             /* requests a paused connection holds */
#define UREQ_MAX 64             /* bytes of one such request, at most */

/* The requests such a connection sends. */
enum { UR_NOOP, UR_ACQUIRE, UR_AUTH_USER };

/* One request sent and not yet consumed by the session. */
typedef struct ureq {
    uint8_t kind;               /* UR_* */
    uint32_t opaque;
    uint8_t user;               /* UR_AUTH_USER: NUSERS = unknown */
    bool right;                 /* UR_AUTH_USER: the user's own secret */
    bool nonblocking;           /* UR_AUTH_USER: the flag */
    size_t size;
} ureq;

/* A connection whose requests its tenant pays for: what the model knows
 * of its session, and the input it has not consumed (a paused session
 * leaves it unread, as the kernel's buffer would hold it). */
typedef struct ucon {
    cnt_session s;
    unsigned tenant;            /* index into thr_names */
    bool unthrottled, nonblocking;
    unsigned failures;          /* failed Auth_user attempts */
    uint8_t in[UPEND_MAX * UREQ_MAX];
    size_t nin;
    ureq req[UPEND_MAX];
    size_t nreq;
    uint64_t paused_until;      /* monotonic ns; 0 when not paused */
    uint64_t acquired;          /* Acquires it ran: its ledger on "u" */
    uint32_t opaque;
} ucon;

/* The whole simulation for one input. */
typedef struct sim {
    cnt_table *table;
    cnt_gc *gc;
    cnt_stats *stats;
    cnt_groups *groups;
    cnt_wheel wheel;
    cnt_session_env env;
    conn conn[NCONN];
    shadow names[NNAMES];
    size_t nnames;
    bool memory_limited;        /* 0x82 may come on any creation */
    /* An incremental Dump that advances a few records per Dump request,
     * paused in between while other steps (GC sweeps included) run. */
    bool dumping;
    cnt_map_cursor cursor;
    bool seen[NNAMES];          /* reported by the incremental Dump */
    bool steady[NNAMES];        /* existed since it began, never removed */
    /* Grants the sink took, oldest first, linked through their grant link
     * as a worker's mailbox links them, until a step delivers them. */
    cnt_grant_list pending;
    size_t npending;
    cnt_ticket *fresh[MAX_GRANTS];  /* the sink's calls during this step */
    size_t nfresh;
    size_t predicted;           /* grants the model made, not yet matched */
    uint64_t last_lease_id;     /* the last id the table gave */
    uint64_t seq;               /* queue order */
    uint64_t fire_to;           /* the tick a wheel advance goes to */
    uint64_t last_fired;        /* the tick of the last timer it fired */
    uint64_t used_baseline;     /* used_memory of the empty table */
    cnt_wait_stats ws;          /* the model's waiting figures */
    /* How queued requests ended: each exactly one way. */
    uint64_t queued, told_granted, told_timeout, cancelled, released_flying,
        closed_waiting;
    /* The rate limits, on the table's memory budget, and their model. */
    cnt_map_budget budget;
    cnt_limits *limits;
    lshadow lim[CNT_LIMITS_KINDS][NLIM];
    lfigures lfig[CNT_LIMITS_KINDS];
    size_t lsweep_next;         /* where cnt_limits_sweep goes on */
    unsigned lbusy_asks;        /* busiest-names listings made: picks n */
    uint64_t first_limit;       /* the memory limit the input set */
    uint64_t limits_baseline;   /* used_memory of the empty limits */
    /* The tenant throttle, on the same budget and clock, and its model. */
    cnt_throttle *throttle;
    tmodel thr;
    /* The Throttr front: sessions with 8-byte values (every number the
     * model makes fits) and 1-byte ones (QUERY's rule for what does not),
     * answering from the same limits. */
    cnt_session_env tenv[2];
    cnt_session tsess[2];
    /* Tenants on connections: the users table this input built, the
     * sessions' own table (one counter, "u", that only their Acquires
     * change), their environment and stats, and the connections. */
    cnt_user user[NUSERS];
    cnt_users users;
    cnt_map_budget ubudget;
    cnt_table *utable;
    cnt_stats *ustats;
    cnt_session_env uenv;
    ucon ucon[NUCON];
    uint64_t uvalue;            /* "u"'s consumption, as the model has it */
    bool ucreated;              /* "u" exists */
} sim;

/* The groups the sessions know (counter.group.NAME), mirrored here. */
static const struct {
    const char *name;
    cnt_group g;
} fuzz_groups[] = {
    { "G", { .maximum = 3, .wait_ms = 40, .lease_ms = 120 } },
    { "grp", { .maximum = 1, .wait_ms = 0, .lease_ms = 0 } },
};

static cnt_fake_clock fuzz_clock;   /* the table's and the GC's clock */
static bool fail_alloc;         /* the next Acquire's first allocation fails */

/* The fake wall clock, in ms. */
static uint64_t now_ms(void)
{
    return cnt_clock_wall_ms(&fuzz_clock.clock);
}

/* The fake monotonic clock, in ns (the wheel's). */
static uint64_t mono_ns(void)
{
    return cnt_clock_mono_ns(&fuzz_clock.clock);
}

/* Returns the current window number. */
static uint64_t window_now(void)
{
    return now_ms() / 1000 / INTERVAL;
}

/* Whether a waiting request holds resources on its counter. */
static bool mt_holds(const mticket *t)
{
    return t->state == MT_FLIGHT || t->state == MT_GRANTED;
}

/* Returns the counter's consumption as the model sees it: every ledger's
 * holdings and every granted ticket's resources. */
static uint64_t shadow_sum(const shadow *s)
{
    uint64_t sum = 0;
    for (int i = 0; i < NCONN; i++) {
        sum += s->held[i];
        if (mt_holds(&s->tk[i]))
            sum += s->tk[i].resources;
    }
    return sum;
}

/* Records a change of consumption from before to the model's new sum. */
static void shadow_changed(shadow *s, uint64_t before)
{
    uint64_t w = window_now();
    if (s->peak_window != w) {
        s->peak_window = w;
        s->peak = before;   /* a new window starts from what is carried over */
    }
    if (shadow_sum(s) > s->peak)
        s->peak = shadow_sum(s);
    s->last_change_ms = now_ms();
    s->last_touch_ms = now_ms();
    if (shadow_sum(s) == 0)
        s->max_admitted = 0;
}

/* Finds name in the model; NULL if it was never seen. */
static shadow *shadow_find(sim *m, const uint8_t *name, uint16_t len)
{
    for (size_t i = 0; i < m->nnames; i++)
        if (m->names[i].len == len && memcmp(m->names[i].name, name, len) == 0)
            return &m->names[i];
    return NULL;
}

/* Finds or adds name; NULL when the model is full (the step is skipped). */
static shadow *shadow_get(sim *m, const uint8_t *name, uint16_t len)
{
    shadow *s = shadow_find(m, name, len);
    if (s != NULL || m->nnames == NNAMES)
        return s;
    s = &m->names[m->nnames++];
    memset(s, 0, sizeof *s);
    s->name = malloc(len);
    FUZZ_CHECK(s->name != NULL);
    memcpy(s->name, name, len);
    s->len = len;
    return s;
}

/* The group settings of name, or NULL. */
static const cnt_group *group_of(const uint8_t *name, uint16_t len)
{
    for (size_t i = 0; i < sizeof fuzz_groups / sizeof fuzz_groups[0]; i++)
        if (strlen(fuzz_groups[i].name) == len &&
            memcmp(fuzz_groups[i].name, name, len) == 0)
            return &fuzz_groups[i].g;
    return NULL;
}

/* Number of requests queued on s. */
static size_t queue_len(const shadow *s)
{
    size_t n = 0;
    for (int c = 0; c < NCONN; c++)
        n += s->tk[c].state == MT_QUEUED;
    return n;
}

/* The first request in s's queue, or NULL. */
static mticket *queue_head(shadow *s)
{
    mticket *h = NULL;
    for (int c = 0; c < NCONN; c++)
        if (s->tk[c].state == MT_QUEUED &&
            (h == NULL || s->tk[c].seq < h->seq))
            h = &s->tk[c];
    return h;
}

/* Requests connection c has outstanding (the session's cap counts them). */
static size_t conn_tickets(const sim *m, int c)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nnames; i++)
        n += m->names[i].tk[c].state != MT_NONE;
    return n;
}

/* The model arms t's timer ms from now, as the session does: a deadline
 * in ns, due at the tick it rounds up to. */
static void mt_arm(mticket *t, uint32_t kind, uint32_t ms)
{
    uint64_t deadline = mono_ns() + (uint64_t)ms * NS_PER_MS;
    t->timer = kind;
    t->expires_ms = deadline / NS_PER_MS + (deadline % NS_PER_MS != 0);
}

/* Grants the heads of s's queue while they fit, as every release does; the
 * grants go in flight, and settle_grants matches them with the sink's. */
static void model_grant_heads(sim *m, shadow *s)
{
    mticket *h;
    while ((h = queue_head(s)) != NULL &&
           shadow_sum(s) + h->resources <= h->maximum) {
        uint64_t before = shadow_sum(s);
        h->state = MT_FLIGHT;
        h->fresh = true;
        m->predicted++;
        m->ws.waiting--;
        m->ws.queue_grants++;
        if (h->lease_ms != 0)
            m->ws.leases++;
        shadow_changed(s, before);
        if (h->maximum > s->max_admitted)
            s->max_admitted = h->maximum;
    }
}

/* A granted request gives its resources back (released, closed or its
 * lease ran out) and becomes next; the heads behind it may be granted. */
static void model_give_back(sim *m, shadow *s, mticket *t, uint8_t next)
{
    uint64_t before = shadow_sum(s);
    if (t->lease_ms != 0)
        m->ws.leases--;
    t->state = next;
    t->timer = 0;
    t->k = NULL;
    shadow_changed(s, before);
    model_grant_heads(m, s);
}

/* A queued request leaves its queue (cancelled or timed out); the heads
 * behind it may then be granted. */
static void model_unqueue(sim *m, shadow *s, mticket *t)
{
    t->state = MT_NONE;
    t->timer = 0;
    m->ws.waiting--;
    s->last_touch_ms = now_ms();
    model_grant_heads(m, s);
}

/* ---- What the sessions write ---- */

/* Adds what connection c's output must carry next; events that come while
 * its queue listing streams wait behind the listing's end. */
static void expect_push(conn *k, const expect *x)
{
    bool held = x->kind == X_EVENT && k->streaming;
    size_t *n = held ? &k->nheld : &k->nexp;
    FUZZ_CHECK(*n < EXPECT_MAX);
    (held ? k->held : k->exp)[(*n)++] = *x;
    if (x->kind == X_EVENT)
        k->want_wakes++;
}

/* Expects an error answer. */
static void expect_error(conn *k, uint8_t opcode, uint32_t opaque,
                         cnt_status st)
{
    expect x = { .kind = X_ERROR, .code = opcode, .status = (uint8_t)st,
                 .opaque = opaque };
    expect_push(k, &x);
}

/* Expects an event about request t on s. */
static void expect_event(conn *k, uint8_t code, const mticket *t,
                         const shadow *s, uint64_t id, uint32_t value)
{
    expect x = { .kind = X_EVENT, .code = code, .opaque = t->opaque,
                 .id = id, .value = value, .name = s };
    expect_push(k, &x);
}

/* Names whose queue emptied can no longer be owed to a listing. */
static void streams_update(sim *m)
{
    for (int c = 0; c < NCONN; c++)
        if (m->conn[c].streaming)
            for (size_t i = 0; i < m->nnames; i++)
                if (queue_len(&m->names[i]) == 0)
                    m->conn[c].steady[i] = false;
}

/* A queue listing's record or end marker, at the front of c's output. */
static void check_stream(sim *m, int c, const expect *x,
                         const cnt_response *res)
{
    conn *k = &m->conn[c];
    FUZZ_CHECK(res->magic == CNT_MAGIC_RESPONSE &&
               res->opcode == CNT_OP_QUEUES && res->status == 0 &&
               res->opaque == x->opaque);
    if (!cnt_response_is_queues_end(res)) {
        cnt_queues_record rec;
        FUZZ_CHECK(cnt_parse_queues_record(res, &rec));
        shadow *s = shadow_find(m, rec.name, rec.name_len);
        FUZZ_CHECK(s != NULL);
        size_t i = (size_t)(s - m->names);
        FUZZ_CHECK(!k->listed[i]);
        k->listed[i] = true;
        FUZZ_CHECK(rec.queue_len > 0 && rec.queue_len == queue_len(s));
        FUZZ_CHECK(rec.consumption == shadow_sum(s));
        return;
    }
    /* Every queue that existed all along was listed; the events held
     * meanwhile come right after the end marker. */
    for (size_t i = 0; i < m->nnames; i++)
        FUZZ_CHECK(!k->steady[i] || k->listed[i]);
    k->streaming = false;
    k->xhead++;
    FUZZ_CHECK(k->xhead == k->nexp);
    FUZZ_CHECK(k->nexp + k->nheld <= EXPECT_MAX);
    memcpy(&k->exp[k->nexp], k->held, k->nheld * sizeof k->held[0]);
    k->nexp += k->nheld;
    k->nheld = 0;
}

/* Checks one packet of c's output against what the model expects next. */
static void check_packet(sim *m, int c, const cnt_response *res)
{
    conn *k = &m->conn[c];
    FUZZ_CHECK(k->xhead < k->nexp);
    const expect *x = &k->exp[k->xhead];
    if (x->kind == X_STREAM) {
        check_stream(m, c, x, res);
        return;
    }
    k->xhead++;
    FUZZ_CHECK(res->opaque == x->opaque);
    if (x->kind == X_EVENT) {
        cnt_event_packet ev;
        FUZZ_CHECK(cnt_parse_event(res, &ev));
        FUZZ_CHECK(ev.code == x->code && ev.lease_id == x->id &&
                   ev.value == x->value);
        FUZZ_CHECK(ev.name_len == x->name->len &&
                   memcmp(ev.name, x->name->name, ev.name_len) == 0);
        m->told_granted += ev.code == CNT_EVENT_GRANTED;
        m->told_timeout += ev.code == CNT_EVENT_TIMED_OUT;
        return;
    }
    FUZZ_CHECK(res->magic == CNT_MAGIC_RESPONSE && res->opcode == x->code &&
               res->status == x->status);
    cnt_wait_answer a;
    uint32_t v;
    uint64_t id;
    switch (x->kind) {
    case X_ERROR:
        FUZZ_CHECK(res->body_len ==
                   strlen(cnt_status_text((cnt_status)x->status)));
        break;
    case X_WAIT:
        FUZZ_CHECK(cnt_parse_wait_answer(res, &a));
        FUZZ_CHECK(a.state == x->state && a.position == x->position &&
                   a.lease_id == x->id && a.consumption == x->value);
        break;
    case X_U32:
        FUZZ_CHECK(cnt_parse_wait_release_answer(res, &v) && v == x->value);
        break;
    default:
        FUZZ_CHECK(cnt_parse_renew_answer(res, &id) && id == x->id);
        break;
    }
}

/* Reads everything c's session wrote, packet by packet, against the model;
 * then nothing may be owed but events held behind a paused listing. */
static void drain(sim *m, int c)
{
    conn *k = &m->conn[c];
    if (!k->open)
        return;
    cnt_outbuf *o = &k->s.out;
    const uint8_t *p = cnt_outbuf_data(o);
    size_t n = cnt_outbuf_pending(o), off = 0;
    while (off < n) {
        cnt_response res;
        FUZZ_CHECK(cnt_response_decode(p + off, n - off, &res) ==
                   CNT_DECODE_OK);
        check_packet(m, c, &res);
        off += res.size;
    }
    cnt_outbuf_consume(o, n);
    if (!k->streaming) {
        FUZZ_CHECK(k->xhead == k->nexp && k->nheld == 0);
        k->xhead = k->nexp = 0;
    }
    FUZZ_CHECK(k->s.dumping == k->streaming);
    FUZZ_CHECK(k->wakes == k->want_wakes);
}

/* Drains every open connection. */
static void drain_all(sim *m)
{
    for (int c = 0; c < NCONN; c++)
        drain(m, c);
}

/* ---- Grants on their way ---- */

/* The table's grant sink: the grant waits until a step delivers it. */
static void fuzz_sink(void *ctx, cnt_ticket *k)
{
    sim *m = ctx;
    FUZZ_CHECK(m->nfresh < MAX_GRANTS);
    m->fresh[m->nfresh++] = k;
    STAILQ_INSERT_TAIL(&m->pending, k, grant_link);
    m->npending++;
}

/* The connection whose session is s, or -1. */
static int conn_of(sim *m, const void *s)
{
    for (int c = 0; c < NCONN; c++)
        if (m->conn[c].open && &m->conn[c].s == s)
            return c;
    return -1;
}

/* Matches the grants the sink took in this step with the model's: the
 * same requests, each lease id one more than the last. */
static void settle_grants(sim *m)
{
    for (size_t i = 0; i < m->nfresh; i++) {
        cnt_ticket *k = m->fresh[i];
        int c = conn_of(m, k->owner);
        FUZZ_CHECK(c >= 0);
        shadow *s = shadow_find(m, k->name, k->name_len);
        FUZZ_CHECK(s != NULL);
        mticket *t = &s->tk[c];
        FUZZ_CHECK(t->state == MT_FLIGHT && t->fresh);
        FUZZ_CHECK(k->state == CNT_TICKET_GRANTED &&
                   (k->flags & CNT_TICKET_IN_FLIGHT));
        FUZZ_CHECK(k->resources == t->resources && k->opaque == t->opaque);
        FUZZ_CHECK(k->lease_id == ++m->last_lease_id);
        t->fresh = false;
        t->k = k;
        t->lease_id = k->lease_id;
        t->granted_value = (uint32_t)shadow_sum(s);
        m->predicted--;
    }
    FUZZ_CHECK(m->predicted == 0);
    m->nfresh = 0;
}

/* Delivers pending grant number i (oldest = 0) to its owner, as the
 * owner's worker takes it from its mailbox: a granted event when the
 * request is still the owner's, nothing at all when it was released or
 * its connection closed meanwhile (the delivery frees it). */
static void deliver(sim *m, size_t i)
{
    cnt_ticket *k = STAILQ_FIRST(&m->pending);
    for (; i > 0; i--)
        k = STAILQ_NEXT(k, grant_link);
    STAILQ_REMOVE(&m->pending, k, cnt_ticket, grant_link);
    m->npending--;

    for (size_t n = 0; n < m->nnames; n++) {
        shadow *s = &m->names[n];
        for (int c = 0; c < NCONN; c++) {
            mticket *t = &s->tk[c];
            if (t->state != MT_FLIGHT || t->k != k)
                continue;
            t->state = MT_GRANTED;
            t->k = NULL;
            t->timer = 0;
            if (t->lease_ms != 0)
                mt_arm(t, CNT_TIMER_LEASE, t->lease_ms);
            expect_event(&m->conn[c], CNT_EVENT_GRANTED, t, s, t->lease_id,
                         t->granted_value);
        }
    }
    cnt_session_deliver(&m->env, k);
    drain_all(m);
}

/* The session's wake hook: output came outside a feed. */
static void fuzz_wake(cnt_session *s)
{
    sim *m = (sim *)s->env->owner;
    int c = conn_of(m, s);
    FUZZ_CHECK(c >= 0);
    m->conn[c].wakes++;
}

/* ---- Timers ---- */

/* Fires one due timer of the wheel: checks it is a timer the model armed
 * and due now, in tick order, and predicts what the session does. */
static void fire_one(cnt_timer *tm, void *ctx)
{
    sim *m = ctx;
    cnt_ticket *k = (cnt_ticket *)((uint8_t *)tm - offsetof(cnt_ticket,
                                                              timer));
    int c = conn_of(m, k->owner);
    FUZZ_CHECK(c >= 0);
    shadow *s = shadow_find(m, k->name, k->name_len);
    FUZZ_CHECK(s != NULL);
    mticket *t = &s->tk[c];
    uint64_t tick = cnt_timer_deadline_ms(tm);
    FUZZ_CHECK(t->timer == k->timer_kind && t->expires_ms == tick);
    FUZZ_CHECK(tick <= m->fire_to && tick >= m->last_fired);
    m->last_fired = tick;
    t->timer = 0;
    conn *cn = &m->conn[c];
    if (k->timer_kind == CNT_TIMER_WAIT) {
        /* In flight: the grant won the race; its delivery tells. */
        FUZZ_CHECK(t->state == MT_QUEUED || t->state == MT_FLIGHT);
        if (t->state == MT_QUEUED) {
            m->ws.timeouts++;
            expect_event(cn, CNT_EVENT_TIMED_OUT, t, s, 0, 0);
            model_unqueue(m, s, t);
        }
    } else {
        FUZZ_CHECK(k->timer_kind == CNT_TIMER_LEASE && t->state == MT_GRANTED);
        m->ws.expirations++;
        expect_event(cn, CNT_EVENT_LEASE_EXPIRED, t, s, t->lease_id,
                     t->resources);
        model_give_back(m, s, t, MT_EXPIRED);
    }
    cnt_session_fire(tm, &m->env);
    settle_grants(m);
    streams_update(m);
    drain_all(m);
}

/* Lets time pass (ms on both clocks, or ns on the monotonic one alone)
 * and fires what fell due; afterwards no due timer is left. */
static void step_clock(sim *m, uint64_t ms, uint64_t ns)
{
    if (ms > 0)
        cnt_fake_clock_advance(&fuzz_clock, ms);
    if (ns > 0)
        cnt_fake_clock_advance_ns(&fuzz_clock, ns);
    m->fire_to = mono_ns() / NS_PER_MS;
    m->last_fired = 0;
    cnt_wheel_advance(&m->wheel, mono_ns(), fire_one, m);
    size_t armed = 0;
    for (size_t i = 0; i < m->nnames; i++)
        for (int c = 0; c < NCONN; c++) {
            const mticket *t = &m->names[i].tk[c];
            if (t->timer == 0)
                continue;
            armed++;
            FUZZ_CHECK(t->expires_ms > m->fire_to);
        }
    FUZZ_CHECK(cnt_wheel_count(&m->wheel) == armed);
}

/* ---- Reference requests, straight to the table ---- */

/* Acquire on connection c, with the model's prediction checked. */
static void step_acquire(sim *m, int c, const cnt_request *req)
{
    shadow *s = shadow_get(m, req->name, req->name_len);
    if (s == NULL)
        return;
    /* Armed only around the call: the first allocation it makes (the
     * ledger's growth or a new counter's node) fails. A new counter always
     * needs one, so the call must then fail; an existing one needs one
     * only when the ledger grows. */
    bool must_fail = fail_alloc && !s->exists;
    uint64_t before = shadow_sum(s);
    if (fail_alloc)
        cnt_fake_alloc_fail_at(1, 0);
    cnt_status st = cnt_table_acquire(m->table, &m->conn[c].s.holdings,
                                      req->name, req->name_len,
                                      req->resources, req->maximum);
    bool failed = cnt_fake_alloc_injected();
    cnt_fake_alloc_fail_at(0, 0);
    s->last_touch_ms = now_ms();
    if (must_fail || failed ||
        (st == CNT_STATUS_OUT_OF_MEMORY && !s->exists && m->memory_limited)) {
        FUZZ_CHECK(st == CNT_STATUS_OUT_OF_MEMORY);
        fail_alloc = false;
        return;
    }
    /* Waiters come first: an Acquire may not overtake a queue. */
    if (before + req->resources <= req->maximum && queue_len(s) == 0) {
        FUZZ_CHECK(st == CNT_STATUS_OK);
        if (!s->exists) {
            s->exists = true;
            s->peak = 0;
            s->peak_window = window_now();
        }
        if (s->held[c] == 0 || req->maximum > s->held_max[c])
            s->held_max[c] = req->maximum;
        s->held[c] += req->resources;
        if (req->maximum > s->max_admitted)
            s->max_admitted = req->maximum;
        shadow_changed(s, before);
    } else {
        FUZZ_CHECK(st == CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    }
}

/* Release on connection c, with the model's prediction checked; the room
 * it makes may grant queued requests. */
static void step_release(sim *m, int c, const cnt_request *req)
{
    shadow *s = shadow_find(m, req->name, req->name_len);
    cnt_status st = cnt_table_release(m->table, &m->conn[c].s.holdings,
                                      req->name, req->name_len,
                                      req->resources);
    if (s == NULL || !s->exists) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
        return;
    }
    s->last_touch_ms = now_ms();
    if (req->resources > s->held[c] || s->held[c] == 0) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_ACQUIRED);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK);
    uint64_t before = shadow_sum(s);
    s->held[c] -= req->resources;
    if (req->resources > 0)
        shadow_changed(s, before);
    model_grant_heads(m, s);
}

/* Get, checked against the model. */
static void step_get(sim *m, const cnt_request *req)
{
    shadow *s = shadow_find(m, req->name, req->name_len);
    uint32_t v = 0xdeadbeef;
    cnt_status st = cnt_table_get(m->table, req->name, req->name_len, &v);
    if (s == NULL || !s->exists) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK && v == shadow_sum(s));
}

/* Connection c ends at once (its client reset it, whatever was in
 * flight): the session ends every request (cancelling waits, returning
 * grants, orphaning grants on their way) and releases its ledger. No
 * event is written for it, now or later. With reopen, a new client takes
 * its place. */
static void step_end(sim *m, int c, bool reopen)
{
    conn *k = &m->conn[c];
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        mticket *t = &s->tk[c];
        /* The session ends its tickets first, then releases its ledger:
         * per counter the model does the same. */
        if (t->state == MT_QUEUED) {
            m->ws.cancels++;
            m->closed_waiting++;
            model_unqueue(m, s, t);
        } else if (t->state == MT_FLIGHT) {
            m->closed_waiting++;
            model_give_back(m, s, t, MT_NONE);
        } else if (t->state == MT_GRANTED) {
            model_give_back(m, s, t, MT_NONE);
        }
        t->state = MT_NONE;
        t->timer = 0;
        if (s->held[c] == 0)
            continue;
        uint64_t before = shadow_sum(s);
        s->held[c] = 0;
        shadow_changed(s, before);
        model_grant_heads(m, s);
    }
    /* Events that waited behind a listing die with the connection. */
    for (size_t i = 0; i < k->nheld; i++)
        m->closed_waiting += k->held[i].code == CNT_EVENT_GRANTED ||
                             k->held[i].code == CNT_EVENT_TIMED_OUT;
    cnt_session_end(&k->s);
    k->open = false;
    k->nexp = k->xhead = k->nheld = 0;
    k->streaming = false;
    k->wakes = k->want_wakes = 0;
    settle_grants(m);
    if (reopen) {
        FUZZ_CHECK(cnt_session_init(&k->s, &m->env));
        k->open = true;
    }
}

/* The server stops while connection c is open: its session ends every
 * waiting request and grant with a shutdown event (in the order its set
 * holds them, so each is matched by name, exactly once: 0 and nothing
 * returned for a wait, the lease id and the resources for a grant,
 * delivered or not; nothing for an expired lease), then the connection
 * ends as in step_end. A connection in the middle of a queue listing just
 * ends (what a cut listing leaves is not modelled). */
static void step_shutdown(sim *m, int c)
{
    conn *k = &m->conn[c];
    bool owed[NNAMES] = { false };
    size_t nowed = 0;

    if (k->streaming) {
        step_end(m, c, true);
        return;
    }
    for (size_t i = 0; i < m->nnames; i++) {
        uint8_t st = m->names[i].tk[c].state;
        owed[i] = st == MT_QUEUED || st == MT_FLIGHT || st == MT_GRANTED;
        nowed += owed[i];
    }
    cnt_session_shutdown(&k->s);
    cnt_outbuf *o = &k->s.out;
    const uint8_t *p = cnt_outbuf_data(o);
    size_t n = cnt_outbuf_pending(o), off = 0;
    while (off < n) {
        cnt_response res;
        cnt_event_packet ev;
        FUZZ_CHECK(cnt_response_decode(p + off, n - off, &res) ==
                   CNT_DECODE_OK);
        FUZZ_CHECK(cnt_parse_event(&res, &ev) &&
                   ev.code == CNT_EVENT_SHUTDOWN);
        shadow *s = shadow_find(m, ev.name, ev.name_len);
        FUZZ_CHECK(s != NULL);
        size_t i = (size_t)(s - m->names);
        const mticket *t = &s->tk[c];
        FUZZ_CHECK(owed[i] && res.opaque == t->opaque);
        bool queued = t->state == MT_QUEUED;
        FUZZ_CHECK(ev.lease_id == (queued ? 0 : t->lease_id));
        FUZZ_CHECK(ev.value == (queued ? 0 : t->resources));
        owed[i] = false;
        nowed--;
        off += res.size;
    }
    FUZZ_CHECK(nowed == 0);
    cnt_outbuf_consume(o, n);
    step_end(m, c, true);
}

/* State shared with the Dump callback. */
typedef struct dump_check {
    sim *m;
    bool *seen;                 /* per name: reported already */
    size_t records;
    unsigned budget;            /* records before asking to stop; 0: all */
} dump_check;

/* Checks one Dump record against the model. */
static bool dump_record(void *ctx, const uint8_t *name, uint16_t len,
                        uint32_t current, uint32_t max_in_window)
{
    dump_check *d = ctx;
    shadow *s = shadow_find(d->m, name, len);
    FUZZ_CHECK(s != NULL && s->exists);
    size_t i = (size_t)(s - d->m->names);
    FUZZ_CHECK(!d->seen[i]);
    d->seen[i] = true;
    d->records++;
    FUZZ_CHECK(current == shadow_sum(s));
    uint64_t want = s->peak_window == window_now() ? s->peak : current;
    FUZZ_CHECK(max_in_window == want);
    return d->budget == 0 || --d->budget > 0;
}

/* Dump and Stats: every live counter once, with the model's figures. */
static void step_dump(sim *m)
{
    bool seen[NNAMES] = { false };
    dump_check d = { .m = m, .seen = seen, .records = 0 };
    cnt_map_cursor cur = { 0 };
    size_t live = 0;
    FUZZ_CHECK(cnt_table_dump(m->table, &cur, dump_record, &d));
    for (size_t i = 0; i < m->nnames; i++)
        live += m->names[i].exists;
    FUZZ_CHECK(d.records == live);
    cnt_map_stats ts;
    cnt_table_get_stats(m->table, &ts);
    FUZZ_CHECK(ts.objects == live && ts.total_objects >= live);
}

/* Advances the incremental Dump by 1 to 8 records (starting it if none
 * runs). Invariants: no counter twice, none after its removal (the
 * callback checks it exists), and at the end every counter that existed
 * all the way through was reported. */
static void step_dump_part(sim *m, uint32_t opaque)
{
    if (!m->dumping) {
        m->dumping = true;
        m->cursor = (cnt_map_cursor){ 0 };
        for (size_t i = 0; i < NNAMES; i++) {
            m->seen[i] = false;
            m->steady[i] = i < m->nnames && m->names[i].exists;
        }
    }
    dump_check d = { .m = m, .seen = m->seen, .budget = 1 + (opaque & 7) };
    if (!cnt_table_dump(m->table, &m->cursor, dump_record, &d))
        return;
    FUZZ_CHECK(!m->cursor.paused);
    for (size_t i = 0; i < m->nnames; i++)
        FUZZ_CHECK(!m->steady[i] || m->seen[i]);
    m->dumping = false;
}

static size_t lim_sweep_model(sim *m, size_t first, size_t n);
static size_t thr_sweep_model(sim *m);
static uint64_t thr_bytes(sim *m);

/* A GC sweep: removes exactly the deletable counters, the dead rate-limit
 * records and the idle records of unconfigured tenants. */
static void step_gc(sim *m)
{
    uint64_t start_ms = window_now() * INTERVAL * 1000;
    size_t removed = cnt_gc_run_once(m->gc), gone = 0;
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        uint32_t v;
        if (!s->exists)
            continue;
        cnt_status st = cnt_table_get(m->table, s->name, s->len, &v);
        if (st == CNT_STATUS_NOT_FOUND) {
            /* Only unheld counters untouched in this window may go. */
            FUZZ_CHECK(shadow_sum(s) == 0 && s->last_change_ms < start_ms);
            FUZZ_CHECK(queue_len(s) == 0);
            s->exists = false;
            m->steady[i] = false;
            gone++;
        } else {
            FUZZ_CHECK(st == CNT_STATUS_OK);
            FUZZ_CHECK(shadow_sum(s) > 0 || s->last_touch_ms >= start_ms);
        }
    }
    gone += lim_sweep_model(m, 0, cnt_map_buckets(cnt_limits_map(m->limits)));
    gone += thr_sweep_model(m);
    FUZZ_CHECK(removed == gone);
}

/* ---- Rate limits, straight to the limits core ---- */

/* The names of the rate limits: each used by all three kinds, which must
 * keep them apart (and apart from the counters of the same names). */
static const uint8_t lim_names[NLIM] = { 'a', 'b', 'c', 'd' };

/* Window shapes (window ns, slots) a step picks from; the last two are
 * invalid (a slot under 1 us, more than 64 slots). */
static const struct {
    uint64_t window_ns;
    uint8_t slots;
} win_shapes[8] = {
    { 1000000, 10 }, { 3000000, 3 }, { 0, 0 }, { 64000, 64 },
    { 7000, 7 }, { 2000000, 1 }, { 9990, 10 }, { 65000, 65 },
};

/* GCRA rates (count per period ns) a step picks from: fractional
 * emission intervals, 1e6 per second, two counts of one interval, one
 * event per ns; the last two are invalid. */
static const struct {
    uint32_t count;
    uint64_t period_ns;
} gcra_rates[8] = {
    { 1, 1000000 }, { 3, 1000000 }, { 1000000, 1000000000 },
    { 7, 10000000 }, { 3, 3000000 }, { 1, 1 }, { 0, 1000000 }, { 5, 0 },
};

/* Nanoseconds per TTL unit. */
static const uint64_t lim_unit_ns[6] = {
    1, 1000, 1000000, 1000000000, 60000000000ull, 3600000000000ull,
};

/* The record of kind k and name n in the model. */
static lshadow *lim_rec(sim *m, unsigned k, unsigned n)
{
    return &m->lim[k][n];
}

/* The bucket of name n in the limits' map. */
static size_t lim_bucket(sim *m, unsigned n)
{
    return cnt_map_bucket_of(cnt_limits_map(m->limits), &lim_names[n], 1);
}

/* Whether the model's record r of kind k is dead at now (the sweep frees
 * it): a TTL past its expiry, a window whose newest count aged out, a
 * GCRA whose TAT has passed. */
static bool lim_dead(const lshadow *r, unsigned k, uint64_t now)
{
    if (k == CNT_LIMITS_TTL)
        return now >= r->expiry;
    if (k == CNT_LIMITS_WINDOW)
        return now / r->slot_ns > r->newest + r->slots;
    return r->tat_q < now || (r->tat_q == now && r->tat_f == 0);
}

/* The record leaves the map; expired says it was past its expiry. */
static void lim_forget(sim *m, unsigned k, lshadow *r, bool expired)
{
    FUZZ_CHECK(r->present);
    r->present = false;
    r->ncounts = 0;
    m->lfig[k].objects--;
    m->lfig[k].expired += expired;
}

/* The record enters the map. */
static void lim_create(sim *m, unsigned k, lshadow *r)
{
    FUZZ_CHECK(!r->present);
    r->present = true;
    m->lfig[k].objects++;
}

/* A sweep of buckets [first, first + n) (going round) at now: every dead
 * record there goes, counted expired. Returns how many. */
static size_t lim_sweep_model(sim *m, size_t first, size_t n)
{
    size_t nb = cnt_map_buckets(cnt_limits_map(m->limits)), gone = 0;
    uint64_t now = mono_ns();
    for (unsigned i = 0; i < NLIM; i++) {
        size_t b = lim_bucket(m, i);
        if ((b + nb - first) % nb >= n)
            continue;
        for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
            lshadow *r = lim_rec(m, k, i);
            if (r->present && lim_dead(r, k, now)) {
                lim_forget(m, k, r, true);
                gone++;
            }
        }
    }
    return gone;
}

/* Arms the failure of the next allocation when fail is set; returns it. */
static bool lim_arm(bool fail)
{
    if (fail)
        cnt_fake_alloc_fail_at(1, 0);
    return fail;
}

/* Disarms the failure; whether one was injected since lim_arm. */
static bool lim_disarm(void)
{
    bool failed = cnt_fake_alloc_injected();
    cnt_fake_alloc_fail_at(0, 0);
    return failed;
}

/* Checks an out-of-memory answer, or its absence, against the model: a
 * call that allocates fails when the failure is armed, and may when the
 * memory limit is set; one that does not allocate never does. */
static void lim_check_oom(sim *m, cnt_status st, bool armed, bool failed,
                          bool allocates)
{
    FUZZ_CHECK(!failed || armed);
    FUZZ_CHECK(!failed || st == CNT_STATUS_OUT_OF_MEMORY);
    if (armed && allocates)
        FUZZ_CHECK(st == CNT_STATUS_OUT_OF_MEMORY);
    if (st == CNT_STATUS_OUT_OF_MEMORY)
        FUZZ_CHECK(allocates && (armed || m->memory_limited));
}

/* Counts a TTL operation's outcome. */
static void lim_ttl_count(sim *m, cnt_status st)
{
    lfigures *f = &m->lfig[CNT_LIMITS_TTL];
    f->checks++;
    f->allowed += st == CNT_STATUS_OK;
    f->limited += st == CNT_STATUS_EXISTS || st == CNT_STATUS_BELOW_ZERO ||
                  st == CNT_STATUS_NOT_FOUND;
}

/* The model's live TTL record of name n at now, or NULL; an expired one
 * leaves the map (lazy expiry). */
static lshadow *lim_ttl_live(sim *m, unsigned n, uint64_t now)
{
    lshadow *r = lim_rec(m, CNT_LIMITS_TTL, n);
    if (!r->present)
        return NULL;
    if (now < r->expiry)
        return r;
    lim_forget(m, CNT_LIMITS_TTL, r, true);
    return NULL;
}

/* Checks a TTL view against the model's live record at now: time left
 * rounded up in the record's unit, never 0. */
static void lim_ttl_view_check(const lshadow *r, uint64_t now,
                               const cnt_ttl_answer *v)
{
    uint64_t left = r->expiry - now, u = lim_unit_ns[r->unit];
    FUZZ_CHECK(v->quota == r->quota && v->unit == r->unit);
    FUZZ_CHECK(v->ttl_left == left / u + (left % u != 0));
    FUZZ_CHECK(v->ttl_left >= 1);
}

/* a + b, or UINT64_MAX when that does not fit (a TTL's expiry). */
static uint64_t lim_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* TTL insert of name n: quota from x (near 2^64 with bit 6), ttl y (or
 * near 2^44 with x's bit 7, which overflows in the larger units), unit z
 * % 8 (6 and 7 invalid). */
static void lim_ttl_insert(sim *m, unsigned n, bool fail, uint8_t x,
                           uint8_t y, uint8_t z)
{
    uint64_t quota = (x & 0x40) ? UINT64_MAX - (x & 0x3f) : (x & 0x3f);
    uint64_t ttl = (x & 0x80) ? (UINT64_MAX >> 20) + y : y;
    uint8_t unit = z % 8;
    lshadow *r = lim_rec(m, CNT_LIMITS_TTL, n);
    uint64_t now = mono_ns();
    bool armed = lim_arm(fail);
    cnt_status st = cnt_ttl_insert(m->limits, &lim_names[n], 1, quota, ttl,
                                   unit);
    bool failed = lim_disarm();
    uint64_t ns;

    if (ttl == 0 || unit > 5 ||
        __builtin_mul_overflow(ttl, lim_unit_ns[unit], &ns)) {
        FUZZ_CHECK(st == CNT_STATUS_INVALID && !failed);
    } else if (r->present && now < r->expiry) {
        FUZZ_CHECK(st == CNT_STATUS_EXISTS && !failed);
    } else {
        /* An expired record is reused in place: no allocation. */
        lim_check_oom(m, st, armed, failed, !r->present);
        if (st == CNT_STATUS_OK) {
            if (r->present)
                m->lfig[CNT_LIMITS_TTL].expired++;
            else
                lim_create(m, CNT_LIMITS_TTL, r);
            r->quota = quota;
            r->expiry = lim_sat_add(now, ns);
            r->unit = unit;
        } else {
            FUZZ_CHECK(st == CNT_STATUS_OUT_OF_MEMORY);
        }
    }
    lim_ttl_count(m, st);
}

/* TTL query of name n. */
static void lim_ttl_query(sim *m, unsigned n)
{
    cnt_ttl_answer v;
    uint64_t now = mono_ns();
    cnt_status st = cnt_ttl_query(m->limits, &lim_names[n], 1, &v);
    lshadow *r = lim_ttl_live(m, n, now);

    if (r == NULL) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
    } else {
        FUZZ_CHECK(st == CNT_STATUS_OK);
        lim_ttl_view_check(r, now, &v);
    }
    lim_ttl_count(m, st);
}

/* TTL update of name n: attribute x & 3 (2 and 3 invalid), change
 * (x >> 2) & 3 (3 invalid), unit (x >> 4) & 7 (6 and 7 invalid); value
 * y * 256 + z, or near 2^64 with x's bit 7. */
static void lim_ttl_update(sim *m, unsigned n, uint8_t x, uint8_t y,
                           uint8_t z)
{
    uint8_t attr = x & 3, change = (x >> 2) & 3, unit = (x >> 4) & 7;
    uint64_t value = (x & 0x80) ? UINT64_MAX - z : (uint64_t)y * 256 + z;
    uint64_t now = mono_ns(), ns = 0;
    cnt_ttl_answer v;
    cnt_status st = cnt_ttl_update(m->limits, &lim_names[n], 1, attr,
                                   change, unit, value, &v);
    cnt_status want = CNT_STATUS_OK;

    if (attr > 1 || change > 2 || unit > 5 ||
        (attr == 1 &&
         (__builtin_mul_overflow(value, lim_unit_ns[unit], &ns) ||
          (change == 0 && value == 0)))) {
        FUZZ_CHECK(st == CNT_STATUS_INVALID);
        lim_ttl_count(m, st);
        return;
    }
    lshadow *r = lim_ttl_live(m, n, now);
    if (r == NULL) {
        want = CNT_STATUS_NOT_FOUND;
    } else if (attr == 0) {
        if (change == 0)
            r->quota = value;
        else if (change == 1 && value > UINT64_MAX - r->quota)
            want = CNT_STATUS_INVALID;
        else if (change == 1)
            r->quota += value;
        else if (value > r->quota)
            want = CNT_STATUS_BELOW_ZERO;
        else
            r->quota -= value;
    } else {
        if (change == 0)
            r->expiry = lim_sat_add(now, ns);
        else if (change == 1)
            r->expiry = lim_sat_add(r->expiry, ns);
        else if (ns >= r->expiry - now)
            want = CNT_STATUS_BELOW_ZERO;
        else
            r->expiry -= ns;
    }
    FUZZ_CHECK(st == want);
    if (st == CNT_STATUS_OK)
        lim_ttl_view_check(r, now, &v);
    lim_ttl_count(m, st);
}

/* TTL purge of name n. */
static void lim_ttl_purge(sim *m, unsigned n)
{
    uint64_t now = mono_ns();
    cnt_status st = cnt_ttl_purge(m->limits, &lim_names[n], 1);
    lshadow *r = lim_ttl_live(m, n, now);

    if (r == NULL) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
    } else {
        FUZZ_CHECK(st == CNT_STATUS_OK);
        lim_forget(m, CNT_LIMITS_TTL, r, false);
    }
    lim_ttl_count(m, st);
}

/* Fills check arguments from step bytes: name n; sel & 7 the window shape
 * or GCRA rate, y the limit or burst (y & 15, or near 2^32 with bit 7), z
 * the cost (z & 7, 0 invalid, or near 2^32 with bit 7). */
static void lim_args(cnt_check_request *a, bool gcra, unsigned n, uint8_t sel,
                     uint8_t y, uint8_t z, bool peek)
{
    memset(a, 0, sizeof *a);
    a->opcode = gcra ? CNT_OP_GCRA_CHECK : CNT_OP_WINDOW_CHECK;
    a->peek = peek;
    if (gcra) {
        a->count = gcra_rates[sel & 7].count;
        a->period_ns = gcra_rates[sel & 7].period_ns;
    } else {
        a->slots = win_shapes[sel & 7].slots;
        a->period_ns = win_shapes[sel & 7].window_ns;
    }
    a->limit_or_burst = (y & 0x80) ? UINT32_MAX - (y & 0x7f) : (y & 15);
    a->cost = (z & 0x80) ? UINT32_MAX - (z & 0x7f) : (z & 7);
    a->name = &lim_names[n];
    a->name_len = 1;
}

/* One check as the model judges it. */
typedef struct ljudge {
    const cnt_check_request *a;
    unsigned kind, n;
    lshadow *r;
    uint64_t now;
    bool allocates;             /* charging it needs memory */
    /* window: shape, slot of now, counts seen (by slot), their sum; a
     * record of another shape remembering some */
    uint64_t S, N, k, used;
    bool other;
    lslot view[CNT_WINDOW_MAX_SLOTS + 1];
    size_t nview;
    /* gcra: times scaled by count */
    u128 tat_s, new_s;
    cnt_check_result ans;
} ljudge;

/* Adds cost to slot k of a list of slot counts. */
static void lim_slot_add(lslot *v, size_t *nv, uint64_t k, uint64_t cost)
{
    for (size_t i = 0; i < *nv; i++)
        if (v[i].slot == k) {
            v[i].count += cost;
            return;
        }
    FUZZ_CHECK(*nv <= CNT_WINDOW_MAX_SLOTS);
    v[(*nv)++] = (lslot){ k, cost };
}

/* When a record of another shape (which a refused call leaves as it is)
 * has forgotten enough, by its own slots, for the cost to fit: a slot's
 * count leaves at the end of that slot + its number of slots, oldest
 * first. */
static uint64_t lim_other_retry(const ljudge *j)
{
    const lshadow *r = j->r;
    uint64_t own = j->now / r->slot_ns, left = j->used, last = 0;
    bool started = false;

    for (;;) {
        /* The oldest remembered slot after last. */
        const lslot *o = NULL;
        for (size_t i = 0; i < r->ncounts; i++) {
            const lslot *c = &r->counts[i];
            if (c->count == 0 || c->slot + r->slots < own ||
                (started && c->slot <= last))
                continue;
            if (o == NULL || c->slot < o->slot)
                o = c;
        }
        FUZZ_CHECK(o != NULL);
        left -= o->count;
        if (left + j->a->cost <= j->a->limit_or_burst)
            return (o->slot + r->slots + 1) * r->slot_ns;
        last = o->slot;
        started = true;
    }
}

/* Judges a window check at j->now as the spec has it (changing nothing):
 * the same shape counts slots k - N .. k; a record of another shape
 * counts as what it remembers now by its own slots, all in slot k. */
static void lim_window_judge(ljudge *j)
{
    const cnt_check_request *a = j->a;
    const lshadow *r = j->r;
    cnt_check_result *ans = &j->ans;
    uint64_t limit = a->limit_or_burst, cost = a->cost;

    j->k = j->now / j->S;
    if (r->present && (r->slot_ns != j->S || r->slots != j->N)) {
        uint64_t own = j->now / r->slot_ns;
        for (size_t i = 0; i < r->ncounts; i++)
            if (r->counts[i].slot + r->slots >= own)
                j->used += r->counts[i].count;
        j->view[j->nview++] = (lslot){ j->k, j->used };
        j->other = j->used > 0;
    } else if (r->present) {
        for (size_t i = 0; i < r->ncounts; i++)
            if (r->counts[i].slot + j->N >= j->k) {
                j->view[j->nview++] = r->counts[i];
                j->used += r->counts[i].count;
            }
    }
    /* A new record, or a new number of slots, needs memory. */
    j->allocates = !r->present || r->slots != j->N;
    uint64_t used = j->used;
    ans->limit = a->limit_or_burst;
    if (cost > limit) {
        ans->state = CNT_CHECK_NEVER;
        ans->retry_after_ns = UINT64_MAX;
    } else if (used + cost <= limit) {
        ans->state = CNT_CHECK_ALLOWED;
        used += cost;
        lim_slot_add(j->view, &j->nview, j->k, cost);
    } else if (j->other) {
        ans->state = CNT_CHECK_LIMITED;
        ans->retry_after_ns = lim_other_retry(j) - j->now;
    } else {
        /* The first slot boundary where what is still remembered leaves
         * room for the cost; after N slots nothing is. */
        uint64_t i;
        ans->state = CNT_CHECK_LIMITED;
        for (i = 1; i <= j->N; i++) {
            uint64_t keep = 0;
            for (size_t v = 0; v < j->nview; v++)
                if (j->view[v].slot + j->N >= j->k + i)
                    keep += j->view[v].count;
            if (keep + cost <= limit)
                break;
        }
        ans->retry_after_ns = (j->k + i) * j->S - j->now;
    }
    ans->used = used > UINT32_MAX ? UINT32_MAX : (uint32_t)used;
    ans->remaining = used < limit ? (uint32_t)(limit - used) : 0;
    /* Everything is forgotten once the newest count's slot aged out. */
    bool any = false;
    uint64_t newest = 0;
    for (size_t v = 0; v < j->nview; v++)
        if (j->view[v].count != 0 && (!any || j->view[v].slot > newest)) {
            any = true;
            newest = j->view[v].slot;
        }
    ans->reset_after_ns = any ? (newest + j->N + 1) * j->S - j->now : 0;
    /* A refused call leaves a record of another shape as it is: it
     * forgets by its own slots. */
    if (j->other && ans->state != CNT_CHECK_ALLOWED)
        ans->reset_after_ns = (r->newest + r->slots + 1) * r->slot_ns -
                              j->now;
}

/* x clamped to 32 bits. */
static uint32_t lim_clamp32(u128 x)
{
    return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* ceil(x / d), clamped to 64 bits. */
static uint64_t lim_ceil64(u128 x, uint64_t d)
{
    u128 q = x / d + (x % d != 0);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* Judges a GCRA check at j->now as the spec has it, every time scaled by
 * count (so the emission interval is exactly the period): tat = max(TAT,
 * now), allowed iff tat + period * cost - now <= period * (burst + 1). A
 * TAT kept over another count is read rounded up. */
static void lim_gcra_judge(ljudge *j)
{
    const cnt_check_request *a = j->a;
    const lshadow *r = j->r;
    cnt_check_result *ans = &j->ans;
    uint64_t c = a->count, P = a->period_ns;
    uint64_t L = (uint64_t)a->limit_or_burst + 1;
    u128 now_s = (u128)j->now * c, tol = (u128)P * L, tat = now_s, after;
    u128 rem;

    if (r->present) {
        u128 f = r->tat_f;
        if (r->tat_c != c)
            f = (f * c + r->tat_c - 1) / r->tat_c;
        if ((u128)r->tat_q * c + f > tat)
            tat = (u128)r->tat_q * c + f;
    }
    j->allocates = !r->present;
    j->tat_s = tat;
    after = tat;
    rem = tat - now_s <= tol ? (tol - (tat - now_s)) / P : 0;
    ans->retry_after_ns = 0;
    if (a->cost > L) {
        ans->state = CNT_CHECK_NEVER;
        ans->retry_after_ns = UINT64_MAX;
    } else {
        j->new_s = tat + (u128)P * a->cost;
        if (j->new_s - now_s <= tol) {
            ans->state = CNT_CHECK_ALLOWED;
            rem = (tol - (j->new_s - now_s)) / P;
            after = j->new_s;
        } else {
            ans->state = CNT_CHECK_LIMITED;
            ans->retry_after_ns = lim_ceil64(j->new_s - now_s - tol, c);
        }
    }
    ans->limit = lim_clamp32(L);
    ans->remaining = lim_clamp32(rem);
    if (ans->remaining > ans->limit)
        ans->remaining = ans->limit;
    ans->used = ans->limit - ans->remaining;
    ans->reset_after_ns = after > now_s ? lim_ceil64(after - now_s, c) : 0;
}

/* Resolves a check's arguments as the spec has them; false when they are
 * invalid. Then judges it at now. */
static bool lim_judge(sim *m, ljudge *j, const cnt_check_request *a,
                      uint64_t now)
{
    memset(j, 0, sizeof *j);
    j->a = a;
    j->n = (unsigned)(a->name - lim_names);
    j->now = now;
    if (a->cost == 0)
        return false;
    if (a->opcode == CNT_OP_WINDOW_CHECK) {
        uint64_t w = a->period_ns ? a->period_ns : 1000000000u;
        uint64_t s = a->slots ? a->slots : 10;
        if (s > 64 || w % s != 0 || w / s < 1000)
            return false;
        j->kind = CNT_LIMITS_WINDOW;
        j->S = w / s;
        j->N = s;
        j->r = lim_rec(m, j->kind, j->n);
        lim_window_judge(j);
        return true;
    }
    if (a->count == 0 || a->period_ns == 0)
        return false;
    u128 tol = (u128)a->period_ns * ((uint64_t)a->limit_or_burst + 1);
    if (tol / a->count > ((u128)1 << 62))
        return false;
    j->kind = CNT_LIMITS_GCRA;
    j->r = lim_rec(m, j->kind, j->n);
    lim_gcra_judge(j);
    return true;
}

/* Checks an answer field by field against the model's. */
static void lim_answer_check(const cnt_check_result *got,
                             const cnt_check_result *want)
{
    FUZZ_CHECK(got->state == want->state && got->limit == want->limit);
    FUZZ_CHECK(got->remaining == want->remaining &&
               got->used == want->used);
    FUZZ_CHECK(got->retry_after_ns == want->retry_after_ns);
    FUZZ_CHECK(got->reset_after_ns == want->reset_after_ns);
}

/* Counts a judged check in its kind's figures. */
static void lim_check_count(sim *m, const ljudge *j)
{
    m->lfig[j->kind].checks++;
    if (j->ans.state == CNT_CHECK_ALLOWED)
        m->lfig[j->kind].allowed++;
    else
        m->lfig[j->kind].limited++;
}

/* Remembers an allowed charge of r. */
static void lim_log(lshadow *r, uint64_t t, uint64_t cost)
{
    if (r->nlog == LOG_MAX) {
        memmove(r->log, r->log + 1, (LOG_MAX - 1) * sizeof r->log[0]);
        r->nlog--;
    }
    r->log[r->nlog++] = (lcharge){ t, cost, r->epoch };
}

/* Charges an allowed check in the model, then checks the guarantees over
 * the charges remembered. Window: any interval of the window's length
 * ending at this charge holds at most the limit (charges before a
 * reshape's floor excepted: a shape that remembered less may have
 * forgotten them). GCRA: from any earlier charge of the same emission
 * interval T on, the cost allowed is at most burst + 1 + elapsed / T,
 * exactly: sum * period <= (burst + 1) * period + elapsed * count. */
static void lim_charge(sim *m, ljudge *j)
{
    lshadow *r = j->r;
    const cnt_check_request *a = j->a;
    uint64_t now = j->now;

    if (j->kind == CNT_LIMITS_WINDOW) {
        uint64_t W = j->S * j->N;
        bool same = r->slot_ns == j->S && r->slots == j->N;
        if (r->slot_ns != 0 && !same &&
            now - r->slot_ns * r->slots > r->floor)
            r->floor = now - r->slot_ns * r->slots;
        if (!r->present) {
            lim_create(m, CNT_LIMITS_WINDOW, r);
            r->ncounts = 0;
        } else if (!same) {
            r->ncounts = 0;
            r->counts[r->ncounts++] = (lslot){ j->k, j->used };
        } else {
            size_t keep = 0;
            for (size_t i = 0; i < r->ncounts; i++)
                if (r->counts[i].slot + j->N >= j->k)
                    r->counts[keep++] = r->counts[i];
            r->ncounts = keep;
        }
        r->slot_ns = j->S;
        r->slots = (uint8_t)j->N;
        r->newest = j->k;
        lim_slot_add(r->counts, &r->ncounts, j->k, a->cost);
        lim_log(r, now, a->cost);
        uint64_t from = now - W > r->floor ? now - W : r->floor, sum = 0;
        for (size_t i = 0; i < r->nlog; i++)
            if (r->log[i].t >= from)
                sum += r->log[i].cost;
        FUZZ_CHECK(sum <= a->limit_or_burst);
        return;
    }
    uint64_t c = a->count, P = a->period_ns;
    if (r->count != 0 && (u128)r->period * c != (u128)P * r->count)
        r->epoch++;
    r->period = P;
    r->count = c;
    if (!r->present)
        lim_create(m, CNT_LIMITS_GCRA, r);
    r->tat_q = (uint64_t)(j->new_s / c);
    r->tat_f = (uint64_t)(j->new_s % c);
    r->tat_c = (uint32_t)c;
    lim_log(r, now, a->cost);
    u128 sum = 0, L = (u128)a->limit_or_burst + 1;
    for (size_t i = r->nlog; i-- > 0 && r->log[i].epoch == r->epoch;) {
        sum += r->log[i].cost;
        FUZZ_CHECK(sum * P <= L * P + (u128)(now - r->log[i].t) * c);
    }
}

/* A window or GCRA check of name n (peek with x's bit 7), with the model's
 * answer checked; a peek or a refusal charges nothing, so the same call
 * again (a peek) answers the same. */
static void lim_check_step(sim *m, bool gcra, unsigned n, bool fail,
                           uint8_t x, uint8_t y, uint8_t z)
{
    cnt_check_request a;
    cnt_check_result out, again;
    ljudge j;

    lim_args(&a, gcra, n, x, y, z, (x & 0x80) != 0);
    bool valid = lim_judge(m, &j, &a, mono_ns());
    bool armed = lim_arm(fail);
    cnt_status st = cnt_limits_check(m->limits, &a, &out);
    bool failed = lim_disarm();
    if (!valid) {
        FUZZ_CHECK(st == CNT_STATUS_INVALID && !failed);
        m->lfig[gcra ? CNT_LIMITS_GCRA : CNT_LIMITS_WINDOW].checks++;
        return;
    }
    bool charges = j.ans.state == CNT_CHECK_ALLOWED && !a.peek;
    lim_check_oom(m, st, armed, failed, charges && j.allocates);
    if (st == CNT_STATUS_OUT_OF_MEMORY) {
        m->lfig[j.kind].checks++;
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK);
    lim_answer_check(&out, &j.ans);
    lim_check_count(m, &j);
    if (charges) {
        lim_charge(m, &j);
        return;
    }
    a.peek = true;
    FUZZ_CHECK(cnt_limits_check(m->limits, &a, &again) == CNT_STATUS_OK);
    lim_answer_check(&again, &out);
    lim_check_count(m, &j);
}

/* A multi-check: x & 0x1f items (0 and 17 invalid; 18-31 fold to 2-15),
 * peek with x's bit 7; each item three bytes at p: b0 bit 0 GCRA, bits
 * 1-2 the name, bits 3-5 the shape or rate; then limit and cost as
 * lim_args. Two items of one kind and name make it invalid. Each item
 * answers what a peek of it alone said just before; a multi-check that
 * charges nothing (peek, a denial, no memory) leaves every item as it
 * was: peeks after it answer as those before. Returns the bytes used, 0
 * when p is too short. */
static size_t lim_multi_step(sim *m, bool fail, uint8_t x, const uint8_t *p,
                             size_t avail)
{
    cnt_check_request it[MULTI_ITEMS];
    cnt_check_result out[MULTI_ITEMS], before[MULTI_ITEMS], after;
    ljudge j[MULTI_ITEMS];
    size_t n = x & 0x1f;
    bool peek = (x & 0x80) != 0, valid, all = true, allocates = false;
    uint8_t overall = 0xff;
    uint64_t now = mono_ns();

    if (n > MULTI_ITEMS)
        n -= 16;
    if (avail < n * 3)
        return 0;
    valid = n >= 1 && n <= CNT_MULTI_MAX;
    for (size_t i = 0; i < n; i++) {
        uint8_t b0 = p[3 * i];
        lim_args(&it[i], b0 & 1, (b0 >> 1) & 3, b0 >> 3, p[3 * i + 1],
                 p[3 * i + 2], false);
        if (!lim_judge(m, &j[i], &it[i], now)) {
            valid = false;
            continue;
        }
        for (size_t k = 0; k < i; k++)
            if (j[k].kind == j[i].kind && j[k].n == j[i].n)
                valid = false;
        all = all && j[i].ans.state == CNT_CHECK_ALLOWED;
        allocates = allocates || j[i].allocates;
    }
    if (valid)
        for (size_t i = 0; i < n; i++) {
            cnt_check_request a = it[i];
            a.peek = true;
            FUZZ_CHECK(cnt_limits_check(m->limits, &a, &before[i]) ==
                       CNT_STATUS_OK);
            lim_answer_check(&before[i], &j[i].ans);
            lim_check_count(m, &j[i]);
        }
    bool armed = lim_arm(fail);
    cnt_status st = cnt_limits_multi(m->limits, it, n, peek, out, &overall);
    bool failed = lim_disarm();
    if (!valid) {
        /* Refused whole before anything is counted. */
        FUZZ_CHECK(st == CNT_STATUS_INVALID && !failed);
        return n * 3;
    }
    bool charges = all && !peek;
    lim_check_oom(m, st, armed, failed, charges && allocates);
    if (st == CNT_STATUS_OK) {
        FUZZ_CHECK(overall == (all ? 0 : 1));
        for (size_t i = 0; i < n; i++) {
            lim_answer_check(&out[i], &before[i]);
            lim_check_count(m, &j[i]);
        }
        if (charges) {
            for (size_t i = 0; i < n; i++)
                lim_charge(m, &j[i]);
            return n * 3;
        }
    } else {
        /* Nothing judged: each item counts as a check only. */
        FUZZ_CHECK(st == CNT_STATUS_OUT_OF_MEMORY);
        for (size_t i = 0; i < n; i++)
            m->lfig[j[i].kind].checks++;
    }
    for (size_t i = 0; i < n; i++) {
        cnt_check_request a = it[i];
        a.peek = true;
        FUZZ_CHECK(cnt_limits_check(m->limits, &a, &after) == CNT_STATUS_OK);
        lim_answer_check(&after, &before[i]);
        lim_check_count(m, &j[i]);
    }
    return n * 3;
}

/* A partial sweep of the limits (x buckets from where the last one
 * stopped): exactly the dead records of those buckets go. */
static void lim_sweep_step(sim *m, uint8_t x)
{
    size_t nb = cnt_map_buckets(cnt_limits_map(m->limits));
    size_t first = m->lsweep_next % nb, n = x < nb ? x : nb;
    size_t removed = cnt_limits_sweep(m->limits, x);
    FUZZ_CHECK(removed == lim_sweep_model(m, first, n));
    m->lsweep_next = (first + n) % nb;
}

/* The GC's sweep of the maps of records that die by the clock (every
 * second, between its whole sweeps): exactly the dead rate-limit records
 * and the idle tenants go, the counters stay. */
static void lim_records_gc_step(sim *m)
{
    size_t removed = cnt_gc_run_records(m->gc);
    size_t gone = lim_sweep_model(m, 0, cnt_map_buckets(
                                            cnt_limits_map(m->limits)));
    FUZZ_CHECK(removed == gone + thr_sweep_model(m));
}

/* With the memory limit set, it becomes what both maps use now plus x * 4
 * bytes (x = 0: its first value again), so that the rate limits meet it
 * without the table having to fill it first. */
static void lim_budget_step(sim *m, uint8_t x)
{
    if (!m->memory_limited)
        return;
    m->budget.limit = x ? cnt_map_budget_used(&m->budget) + (uint64_t)x * 4
                        : m->first_limit;
}

/* Sends one Throttr request through session t (0: 8-byte values, 1:
 * 1-byte) and reads its answer: *ok, and a QUERY's view into *v. Returns
 * the outcome's class as the TTL figures saw it (OK; NOT_FOUND for the
 * refusals EXISTS, BELOW_ZERO and NOT_FOUND; INVALID for the rest), and
 * sets *called when the request reached the core at all. */
static cnt_status thr_call(sim *m, unsigned t, const uint8_t *req,
                           size_t len, uint8_t type, bool *ok,
                           cnt_ttl_answer *v, bool *called)
{
    cnt_session *s = &m->tsess[t];
    cnt_limits_stats before, after;
    uint64_t quota = 0, ttl = 0;
    uint8_t ttl_type = 0;
    size_t size = 0, need = 0;

    cnt_limits_stats_get(m->limits, &before);
    FUZZ_CHECK(cnt_session_feed_throttr(s, req, len) == len);
    FUZZ_CHECK(!s->failed && !s->closing && !s->more && s->need == 0);
    cnt_limits_stats_get(m->limits, &after);
    FUZZ_CHECK(cnt_throttr_decode_answer(cnt_outbuf_data(&s->out),
                                         cnt_outbuf_pending(&s->out),
                                         m->tenv[t].throttr_value_size, type,
                                         ok, &quota, &ttl_type, &ttl, &size,
                                         &need) == CNT_THROTTR_OK);
    FUZZ_CHECK(size == cnt_outbuf_pending(&s->out));
    cnt_outbuf_consume(&s->out, size);
    if (v != NULL && *ok) {
        FUZZ_CHECK(cnt_throttr_unit_of(ttl_type) >= 0);
        v->quota = quota;
        v->ttl_left = ttl;
        v->unit = (uint8_t)cnt_throttr_unit_of(ttl_type);
    }
    const uint64_t *b = &before.kind[CNT_LIMITS_TTL].checks;
    const uint64_t *a = &after.kind[CNT_LIMITS_TTL].checks;
    *called = *a != *b;
    FUZZ_CHECK(*a - *b <= 1);
    if (!*called)
        return CNT_STATUS_INVALID;
    if (after.kind[CNT_LIMITS_TTL].allowed !=
        before.kind[CNT_LIMITS_TTL].allowed)
        return CNT_STATUS_OK;
    if (after.kind[CNT_LIMITS_TTL].limited !=
        before.kind[CNT_LIMITS_TTL].limited)
        return CNT_STATUS_NOT_FOUND;
    return CNT_STATUS_INVALID;
}

/* Whether st and want fall in one class as thr_call tells them. */
static bool thr_same(cnt_status st, cnt_status want)
{
    int a = st == CNT_STATUS_OK ? 0 : st == CNT_STATUS_NOT_FOUND ? 1 : 2;
    int b = want == CNT_STATUS_OK ? 0
          : want == CNT_STATUS_EXISTS || want == CNT_STATUS_BELOW_ZERO ||
            want == CNT_STATUS_NOT_FOUND ? 1 : 2;
    return a == b;
}

/* Throttr INSERT of name n: quota and ttl as lim_ttl_insert has them, the
 * TTL type z % 8 (0 and 7 unknown: the failure byte, the core never
 * called). */
static void lim_thr_insert(sim *m, unsigned n, bool fail, uint8_t x,
                           uint8_t y, uint8_t z)
{
    uint64_t quota = (x & 0x40) ? UINT64_MAX - (x & 0x3f) : (x & 0x3f);
    uint64_t ttl = (x & 0x80) ? (UINT64_MAX >> 20) + y : y;
    uint8_t type = z % 8;
    int unit = cnt_throttr_unit_of(type);
    lshadow *r = lim_rec(m, CNT_LIMITS_TTL, n);
    uint64_t now = mono_ns(), ns;
    uint8_t req[CNT_THROTTR_REQUEST_MAX];
    size_t len = cnt_throttr_encode_insert(req, 8, quota, type, ttl,
                                           &lim_names[n], 1);
    bool ok, called;
    bool armed = lim_arm(fail);
    cnt_status st = thr_call(m, 0, req, len, CNT_THROTTR_INSERT, &ok, NULL,
                             &called);
    bool failed = lim_disarm();

    FUZZ_CHECK(ok == (st == CNT_STATUS_OK));
    if (unit < 0) {
        FUZZ_CHECK(!called && !ok && !failed);
        return;
    }
    cnt_status want;
    if (ttl == 0 ||
        __builtin_mul_overflow(ttl, lim_unit_ns[unit], &ns)) {
        want = CNT_STATUS_INVALID;
        FUZZ_CHECK(!failed);
    } else if (r->present && now < r->expiry) {
        want = CNT_STATUS_EXISTS;
        FUZZ_CHECK(!failed);
    } else {
        /* Only memory can fail here. */
        if (st != CNT_STATUS_OK)
            st = CNT_STATUS_OUT_OF_MEMORY;
        lim_check_oom(m, st, armed, failed, !r->present);
        want = st;
        if (st == CNT_STATUS_OK) {
            if (r->present)
                m->lfig[CNT_LIMITS_TTL].expired++;
            else
                lim_create(m, CNT_LIMITS_TTL, r);
            r->quota = quota;
            r->expiry = lim_sat_add(now, ns);
            r->unit = (uint8_t)unit;
        }
    }
    FUZZ_CHECK(called && thr_same(st, want));
    lim_ttl_count(m, want);
}

/* Throttr QUERY of name n, with 1-byte values when x's bit 0 is set: the
 * failure byte for a live record whose quota or time left is 256 or
 * more. */
static void lim_thr_query(sim *m, unsigned n, uint8_t x)
{
    unsigned t = x & 1;
    uint8_t req[CNT_THROTTR_REQUEST_MAX];
    size_t len = cnt_throttr_encode_query(req, &lim_names[n], 1);
    uint64_t now = mono_ns();
    cnt_ttl_answer v;
    bool ok, called;
    cnt_status st = thr_call(m, t, req, len, CNT_THROTTR_QUERY, &ok, &v,
                             &called);
    lshadow *r = lim_ttl_live(m, n, now);

    FUZZ_CHECK(called);
    if (r == NULL) {
        FUZZ_CHECK(thr_same(st, CNT_STATUS_NOT_FOUND) && !ok);
        lim_ttl_count(m, CNT_STATUS_NOT_FOUND);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK);
    uint64_t left = r->expiry - now, u = lim_unit_ns[r->unit];
    uint64_t shown = left / u + (left % u != 0);
    unsigned size = m->tenv[t].throttr_value_size;
    FUZZ_CHECK(ok == (cnt_throttr_fits(size, r->quota) &&
                      cnt_throttr_fits(size, shown)));
    if (ok)
        lim_ttl_view_check(r, now, &v);
    lim_ttl_count(m, CNT_STATUS_OK);
}

/* Throttr UPDATE of name n: attribute x & 3, change (x >> 2) & 3 (past 1
 * and 2: the failure byte, the core never called), value y * 256 + z or
 * near 2^64 with x's bit 7; a TTL change counts in the record's unit. */
static void lim_thr_update(sim *m, unsigned n, uint8_t x, uint8_t y,
                           uint8_t z)
{
    uint8_t attr = x & 3, change = (x >> 2) & 3;
    uint64_t value = (x & 0x80) ? UINT64_MAX - z : (uint64_t)y * 256 + z;
    uint64_t now = mono_ns(), ns = 0;
    uint8_t req[CNT_THROTTR_REQUEST_MAX];
    size_t len = cnt_throttr_encode_update(req, 8, attr, change, value,
                                           &lim_names[n], 1);
    bool ok, called;
    cnt_status st = thr_call(m, 0, req, len, CNT_THROTTR_UPDATE, &ok, NULL,
                             &called);
    cnt_status want = CNT_STATUS_OK;

    FUZZ_CHECK(ok == (st == CNT_STATUS_OK));
    if (attr > 1 || change > 2) {
        FUZZ_CHECK(!called && !ok);
        return;
    }
    FUZZ_CHECK(called);
    if (attr == 1 && change == 0 && value == 0) {
        FUZZ_CHECK(thr_same(st, CNT_STATUS_INVALID));
        lim_ttl_count(m, CNT_STATUS_INVALID);
        return;
    }
    lshadow *r = lim_ttl_live(m, n, now);
    if (r == NULL) {
        want = CNT_STATUS_NOT_FOUND;
    } else if (attr == 0) {
        if (change == 0)
            r->quota = value;
        else if (change == 1 && value > UINT64_MAX - r->quota)
            want = CNT_STATUS_INVALID;
        else if (change == 1)
            r->quota += value;
        else if (value > r->quota)
            want = CNT_STATUS_BELOW_ZERO;
        else
            r->quota -= value;
    } else if (__builtin_mul_overflow(value, lim_unit_ns[r->unit], &ns)) {
        want = CNT_STATUS_INVALID;
    } else if (change == 0) {
        r->expiry = lim_sat_add(now, ns);
    } else if (change == 1) {
        r->expiry = lim_sat_add(r->expiry, ns);
    } else if (ns >= r->expiry - now) {
        want = CNT_STATUS_BELOW_ZERO;
    } else {
        r->expiry -= ns;
    }
    FUZZ_CHECK(thr_same(st, want));
    lim_ttl_count(m, want);
}

/* Throttr PURGE of name n. */
static void lim_thr_purge(sim *m, unsigned n)
{
    uint8_t req[CNT_THROTTR_REQUEST_MAX];
    size_t len = cnt_throttr_encode_purge(req, &lim_names[n], 1);
    uint64_t now = mono_ns();
    bool ok, called;
    cnt_status st = thr_call(m, 0, req, len, CNT_THROTTR_PURGE, &ok, NULL,
                             &called);
    lshadow *r = lim_ttl_live(m, n, now);

    FUZZ_CHECK(called && ok == (st == CNT_STATUS_OK));
    if (r == NULL) {
        FUZZ_CHECK(thr_same(st, CNT_STATUS_NOT_FOUND));
        lim_ttl_count(m, CNT_STATUS_NOT_FOUND);
    } else {
        FUZZ_CHECK(st == CNT_STATUS_OK);
        lim_forget(m, CNT_LIMITS_TTL, r, false);
        lim_ttl_count(m, CNT_STATUS_OK);
    }
}

/* A rate-limit step: o's low 4 bits the operation (11-15 are 1-5), bits
 * 4-5 the name, bit 6 its first allocation fails; x, y, z its arguments,
 * then a multi-check's items. Returns the bytes used after o, 0 when too
 * few. */
static size_t step_limits(sim *m, const uint8_t *p, size_t avail)
{
    if (avail < 4)
        return 0;
    uint8_t o = p[0], x = p[1], y = p[2], z = p[3];
    unsigned op = o & 15, n = (o >> 4) & 3;
    bool fail = (o & 0x40) != 0;
    uint64_t v = x | (uint64_t)y << 8;

    if (op > 10)
        op -= 10;

    /* o's bit 7: a TTL operation goes through the Throttr front. */
    if ((o & 0x80) != 0 && op <= 3) {
        switch (op) {
        case 0: lim_thr_insert(m, n, fail, x, y, z); break;
        case 1: lim_thr_query(m, n, x); break;
        case 2: lim_thr_update(m, n, x, y, z); break;
        default: lim_thr_purge(m, n); break;
        }
        return 4;
    }

    switch (op) {
    case 0: lim_ttl_insert(m, n, fail, x, y, z); break;
    case 1: lim_ttl_query(m, n); break;
    case 2: lim_ttl_update(m, n, x, y, z); break;
    case 3: lim_ttl_purge(m, n); break;
    case 4: lim_check_step(m, false, n, fail, x, y, z); break;
    case 5: lim_check_step(m, true, n, fail, x, y, z); break;
    case 6: {
        size_t used = lim_multi_step(m, fail, x, p + 4, avail - 4);
        return used == 0 && (x & 0x1f) != 0 ? 0 : 4 + used;
    }
    case 7:
        /* v ns, v us, v ms (both clocks) or v x 0.1 s. */
        if ((z & 3) == 2)
            step_clock(m, v, 0);
        else
            step_clock(m, 0, v * ((z & 3) == 0 ? 1 : (z & 3) == 1
                                                    ? 1000 : 100000000));
        break;
    case 8: lim_sweep_step(m, x); break;
    case 9:
        if (x & 1)
            lim_records_gc_step(m);
        else
            step_gc(m);
        break;
    default: lim_budget_step(m, x); break;
    }
    return 4;
}

/* The busiest-names listing: never more than asked (nor more than
 * CNT_LIMITS_BUSIEST_MAX), busiest first, each name a record the model
 * has (a freed record is never named), each at most once, with a check. */
static void lim_busiest_check(sim *m)
{
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    size_t found = 99;
    uint32_t asked = (uint32_t)(m->lbusy_asks++ % 6);   /* 0..5 */

    if (asked == 5)
        asked = 1000;
    if (!cnt_limits_busiest(m->limits, asked, v, &found))
        return;
    FUZZ_CHECK(found <= asked && found <= CNT_LIMITS_BUSIEST_MAX);
    bool seen[CNT_LIMITS_KINDS][NLIM] = { { false } };
    for (size_t i = 0; i < found; i++) {
        FUZZ_CHECK(v[i].kind < CNT_LIMITS_KINDS && v[i].name_len == 1);
        const uint8_t *at = memchr(lim_names, v[i].name[0], NLIM);
        FUZZ_CHECK(at != NULL);
        unsigned n = (unsigned)(at - lim_names);
        FUZZ_CHECK(lim_rec(m, v[i].kind, n)->present);
        FUZZ_CHECK(!seen[v[i].kind][n]);
        seen[v[i].kind][n] = true;
        FUZZ_CHECK(v[i].checks >= 1);
        if (i > 0)
            FUZZ_CHECK(v[i - 1].checks >= v[i].checks);
    }
    cnt_limits_busiest_free(v, found);
}

/* The invariants of the limits after every step: the figures per kind as
 * the model counted them; used_memory = the empty limits + a node per
 * record + a window's ring; the shared budget holds exactly the nodes of
 * both maps, within the limit; the busiest-names listing. */
static void lim_check_all(sim *m)
{
    cnt_limits_stats ls;
    cnt_map_stats ts;
    uint64_t nodes = 0, node = cnt_map_node_size(cnt_limits_map(m->limits),
                                                 1);
    cnt_limits_stats_get(m->limits, &ls);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        const lfigures *f = &m->lfig[k];
        FUZZ_CHECK(ls.kind[k].objects == f->objects &&
                   ls.kind[k].checks == f->checks &&
                   ls.kind[k].allowed == f->allowed &&
                   ls.kind[k].limited == f->limited &&
                   ls.kind[k].expired == f->expired);
        for (unsigned n = 0; n < NLIM; n++) {
            const lshadow *r = &m->lim[k][n];
            if (r->present)
                nodes += node + (k == CNT_LIMITS_WINDOW
                                     ? ((uint64_t)r->slots + 1) * 4 : 0);
        }
    }
    FUZZ_CHECK(ls.used_memory == m->limits_baseline + nodes);
    cnt_table_get_stats(m->table, &ts);
    uint64_t used = cnt_map_budget_used(&m->budget);
    FUZZ_CHECK(used == ts.used_memory - m->used_baseline + nodes +
                       thr_bytes(m));
    FUZZ_CHECK(m->budget.limit == 0 || used <= m->budget.limit);
    lim_busiest_check(m);
}

/* At the end: the clock moves past every expiry, TTL counters that would
 * outlive that are purged, and a sweep leaves the limits empty, at their
 * memory baseline, the figures agreeing. */
static void lim_finish(sim *m)
{
    step_clock(m, 0, LIMITS_FINISH_NS);
    for (unsigned n = 0; n < NLIM; n++) {
        const lshadow *r = lim_rec(m, CNT_LIMITS_TTL, n);
        if (r->present && mono_ns() < r->expiry)
            lim_ttl_purge(m, n);
    }
    step_gc(m);
    lim_check_all(m);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++)
        FUZZ_CHECK(m->lfig[k].objects == 0);
    cnt_limits_stats ls;
    cnt_limits_stats_get(m->limits, &ls);
    FUZZ_CHECK(ls.used_memory == m->limits_baseline);
    FUZZ_CHECK(cnt_map_budget_used(&m->budget) == 0);
}

/* ---- Tenant throttling, straight to the throttle core ---- */

/* The tenants' names: lengths differ, so do their records' sizes. */
static const char *const thr_names[NTEN] = { "a", "b", "tenant-c", "d" };

/* A tenant's name and length. */
static const uint8_t *thr_name(unsigned n)
{
    return (const uint8_t *)thr_names[n];
}

static uint16_t thr_len(unsigned n)
{
    return (uint16_t)strlen(thr_names[n]);
}

/* The throttling second now. */
static uint64_t thr_second(void)
{
    return mono_ns() / CNT_THROTTLE_SECOND_NS;
}

/* x clamped to 32 bits, as the views show figures. */
static uint32_t thr_clamp(uint64_t x)
{
    return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* Bytes the record of tenant n costs. */
static uint64_t thr_node_bytes(sim *m, unsigned n)
{
    return cnt_map_node_size(cnt_throttle_map(m->throttle), thr_len(n));
}

/* Whether the shared memory limit lets extra more bytes be charged. */
static bool thr_fits_budget(sim *m, uint64_t extra)
{
    return m->budget.limit == 0 ||
           cnt_map_budget_used(&m->budget) + extra <= m->budget.limit;
}

/* The reserve and hard limit tenant t is judged with: its own when
 * configured, else 0 and the default hard limit. */
static void thr_limits(const tmodel *tm, const tshadow *t, uint32_t *R,
                       uint32_t *H)
{
    *R = t->configured ? t->reserved : 0;
    *H = t->configured ? t->hard : tm->default_hard;
}

/* Tenant t's units in second s. */
static uint64_t thr_used(const tshadow *t, uint64_t s)
{
    return t->present && t->second == s ? t->used : 0;
}

/* The free pool: the capacity the reserves leave (0 when they cover it). */
static uint64_t thr_pool(const tmodel *tm)
{
    return tm->capacity > tm->reserved_sum
               ? tm->capacity - tm->reserved_sum : 0;
}

/* A charge in second s: the node's figures start again in a new second,
 * and so do the invariants'. */
static void thr_roll(tmodel *tm, uint64_t s)
{
    if (s > tm->second) {
        tm->second = s;
        tm->used = 0;
        tm->pool_used = 0;
    }
    if (s > tm->inv_second) {
        tm->inv_second = s;
        tm->since_change = 0;
        tm->changed = false;
        for (unsigned n = 0; n < NTEN; n++)
            tm->ten[n].covered = tm->ten[n].lim_since = tm->ten[n].unthr = 0;
    }
}

/* The configuration changed: the units allowed from now on are bounded by
 * the capacity again (reserves and pool are judged afresh). */
static void thr_changed(tmodel *tm)
{
    tm->since_change = 0;
    tm->changed = true;
    for (unsigned n = 0; n < NTEN; n++)
        tm->ten[n].lim_since = 0;
}

/* Tenant n's record goes (a sweep freed it): it is as if never seen. */
static void thr_forget(tmodel *tm, unsigned n)
{
    tshadow *t = &tm->ten[n];
    FUZZ_CHECK(t->present && !t->configured);
    t->present = false;
    t->second = t->used = t->units = t->throttled = 0;
    t->lim_since = t->unthr = 0;
    tm->steady[n] = false;
}

/* A record for tenant n: fresh figures. */
static void thr_create(tmodel *tm, unsigned n)
{
    tshadow *t = &tm->ten[n];
    FUZZ_CHECK(!t->present);
    t->present = true;
    t->second = t->used = t->units = t->throttled = 0;
    t->reserved = t->hard = 0;
}

/* Tenant n becomes configured with R and H. */
static void thr_configure(tmodel *tm, unsigned n, uint32_t R, uint32_t H)
{
    tshadow *t = &tm->ten[n];
    tm->reserved_sum = tm->reserved_sum - (t->configured ? t->reserved : 0)
                       + R;
    tm->tenants += !t->configured;
    t->configured = true;
    t->reserved = R;
    t->hard = H;
}

/* The sweep at now: every unconfigured record without usage in the
 * current second goes. Returns how many. */
static size_t thr_sweep_model(sim *m)
{
    uint64_t s = thr_second();
    size_t gone = 0;
    for (unsigned n = 0; n < NTEN; n++) {
        const tshadow *t = &m->thr.ten[n];
        if (t->present && !t->configured &&
            (t->used == 0 || t->second < s)) {
            thr_forget(&m->thr, n);
            gone++;
        }
    }
    return gone;
}

/* The view of tenant t the model expects at second s. */
static void thr_view_model(const tmodel *tm, const tshadow *t, uint64_t s,
                           cnt_tenant_view *v)
{
    memset(v, 0, sizeof *v);
    thr_limits(tm, t, &v->reserved, &v->hard_limit);
    v->used = thr_clamp(thr_used(t, s));
    v->flags = t->configured ? CNT_TENANT_FLAG_CONFIGURED : 0;
    v->throttled = t->throttled;
    v->units = t->units;
}

/* Checks a tenant view field by field. */
static void thr_view_check(const cnt_tenant_view *got,
                           const cnt_tenant_view *want)
{
    FUZZ_CHECK(got->reserved == want->reserved &&
               got->hard_limit == want->hard_limit &&
               got->used == want->used && got->flags == want->flags);
    FUZZ_CHECK(got->throttled == want->throttled &&
               got->units == want->units);
}

/* Units a tenant with R, H and used units could still charge on a
 * throttled connection: min(H - used, reserve left + pool left); without
 * a capacity only H bounds it (none: 0xFFFFFFFF). */
static uint32_t thr_remaining(const tmodel *tm, uint32_t R, uint32_t H,
                              uint64_t used)
{
    uint64_t hard_left = used < H ? H - used : 0;
    if (tm->capacity == 0)
        return H == CNT_HARD_LIMIT_UNLIMITED ? UINT32_MAX
                                           : thr_clamp(hard_left);
    uint64_t pool = thr_pool(tm);
    uint64_t left = (R > used ? R - used : 0) +
                    (pool > tm->pool_used ? pool - tm->pool_used : 0);
    if (H != CNT_HARD_LIMIT_UNLIMITED && hard_left < left)
        left = hard_left;
    return thr_clamp(left);
}

/* The model of cnt_throttle_can_pass: whether units could pass for
 * tenant n in a second nobody has used yet (within its hard limit, and
 * within its reserve plus the whole pool). */
static bool thr_could_pass(sim *m, unsigned n, uint32_t units)
{
    tmodel *tm = &m->thr;
    uint32_t R, H;

    if (tm->capacity == 0)
        return true;
    thr_limits(tm, &tm->ten[n], &R, &H);
    if (H != CNT_HARD_LIMIT_UNLIMITED && units > H)
        return false;
    return units <= (uint64_t)R + thr_pool(tm);
}

/* The model's side of a charge of units to tenant n (unthrottled: the
 * connection's privilege; mem: its record exists or can be made): the
 * status and answer it predicts, its figures updated. The model judges
 * it as the design has it: without a capacity everything is allowed;
 * unthrottled,
 * always allowed, reserve first then pool (past the pool if need be);
 * else the hard limit first, then what the reserve leaves must fit the
 * pool. Only an allowed charge of a tenant without a record needs
 * memory. Invariants on the answer itself: a charge its reserve covers is
 * never throttled; an allowed throttled-connection charge leaves the
 * tenant at or below its hard limit, and the units so allowed since the
 * second began (or the configuration last changed) within the capacity. */
static cnt_status thr_predict(sim *m, unsigned n, bool mem, bool unthrottled,
                              uint32_t units, cnt_throttle_answer *w)
{
    tmodel *tm = &m->thr;
    tshadow *t = &tm->ten[n];
    uint64_t now = mono_ns(), s = now / CNT_THROTTLE_SECOND_NS;

    memset(w, 0, sizeof *w);
    tm->st.checks++;
    if (units == 0)
        return CNT_STATUS_INVALID;
    thr_roll(tm, s);
    uint32_t R, H;
    thr_limits(tm, t, &R, &H);
    uint64_t used = thr_used(t, s);
    uint64_t reserve_left = R > used ? R - used : 0;
    uint64_t from_pool = units > reserve_left ? units - reserve_left : 0;
    uint64_t pool = thr_pool(tm);
    uint8_t reason = CNT_TREASON_NONE;
    bool limited = tm->capacity > 0 && !unthrottled;

    if (tm->capacity == 0)
        from_pool = 0;
    if (limited && H != CNT_HARD_LIMIT_UNLIMITED && used + units > H)
        reason = CNT_TREASON_HARD_LIMIT;
    else if (limited && from_pool > 0 && tm->pool_used + from_pool > pool)
        reason = pool == 0 ? CNT_TREASON_RESERVE
                           : CNT_TREASON_POOL_EMPTY;
    if (reason == CNT_TREASON_NONE && !mem)
        return CNT_STATUS_OUT_OF_MEMORY;
    /* The guarantee of a reserve. */
    if (limited && used + units <= R)
        FUZZ_CHECK(reason == CNT_TREASON_NONE);
    if (reason == CNT_TREASON_NONE) {
        if (!t->present)
            thr_create(tm, n);
        used += units;
        t->second = s;
        t->used = used;
        t->units += units;
        tm->used += units;
        tm->pool_used += from_pool;
        tm->st.allowed++;
        tm->st.units += units;
        if (unthrottled)
            tm->st.unthrottled_units += units;
    } else {
        if (t->present)
            t->throttled++;
        tm->st.throttled++;
    }
    w->state = reason == CNT_TREASON_NONE ? CNT_TSTATE_ALLOWED
                                          : CNT_TSTATE_THROTTLED;
    w->reason = reason;
    w->used = thr_clamp(used);
    w->remaining = thr_remaining(tm, R, H, used);
    w->retry_after_ns = reason == CNT_TREASON_NONE
                            ? 0 : (s + 1) * CNT_THROTTLE_SECOND_NS - now;
    FUZZ_CHECK(reason == CNT_TREASON_NONE || w->retry_after_ns >= 1);
    if (reason == CNT_TREASON_NONE && unthrottled)
        t->unthr += units;
    if (reason != CNT_TREASON_NONE || !limited)
        return CNT_STATUS_OK;
    /* A tenant's share: on throttled connections, at most its reserve and
     * the pool since the configuration took its shape; in all, that and
     * what its Unthrottled users added, in a second the configuration did
     * not change. */
    t->lim_since += units;
    FUZZ_CHECK(t->lim_since <= (uint64_t)R + pool);
    FUZZ_CHECK(tm->changed || used <= (uint64_t)R + pool + t->unthr);
    FUZZ_CHECK(H == CNT_HARD_LIMIT_UNLIMITED || used <= H);
    if (used <= R)
        t->covered += units;
    FUZZ_CHECK(thr_used(t, s) >= t->covered);
    tm->since_change += units;
    FUZZ_CHECK(tm->since_change <= tm->capacity);
    return CNT_STATUS_OK;
}

/* Whether tenant n's record exists or can be made without failing. */
static bool thr_has_room(sim *m, unsigned n, bool fail)
{
    return m->thr.ten[n].present ||
           (!fail && thr_fits_budget(m, thr_node_bytes(m, n)));
}

/* A charge of units to tenant n through the throttle core, its first
 * allocation failing with fail: status and answer as thr_predict has
 * them. */
static void thr_charge(sim *m, unsigned n, bool fail, bool unthrottled,
                       uint32_t units)
{
    bool present = m->thr.ten[n].present;
    bool mem = thr_has_room(m, n, fail);
    cnt_throttle_answer a, w;
    bool armed = lim_arm(fail);
    cnt_status st = cnt_throttle_charge(m->throttle, thr_name(n), thr_len(n),
                                        units, unthrottled, &a);
    bool failed = lim_disarm();

    FUZZ_CHECK(!failed || (armed && !present));
    cnt_status want = thr_predict(m, n, mem, unthrottled, units, &w);
    FUZZ_CHECK(st == want);
    if (units == 0)
        FUZZ_CHECK(!failed);
    if (st != CNT_STATUS_OK)
        return;
    FUZZ_CHECK(a.state == w.state && a.reason == w.reason &&
               a.used == w.used && a.remaining == w.remaining &&
               a.retry_after_ns == w.retry_after_ns);
}

/* The hard limit a byte picks: v & 0x3f, near 2^32 with bit 7, or
 * unlimited (0xff). */
static uint32_t thr_hard_of(uint8_t v)
{
    if (v == 0xff)
        return CNT_HARD_LIMIT_UNLIMITED;
    return (v & 0x80) ? UINT32_MAX - 1 - (v & 0x7f) : (v & 0x3f);
}

/* The reserve a byte picks: v & 0x1f, or near 2^32 with bit 7. */
static uint32_t thr_reserve_of(uint8_t v)
{
    return (v & 0x80) ? UINT32_MAX - (v & 0x7f) : (v & 0x1f);
}

/* Tenant_set of tenant n: flags & 1 sets the reserve, flags & 2 the hard
 * limit (neither: invalid); a property not set keeps its value (the
 * defaults for a tenant not configured). Refused, changing nothing: H <
 * R (0x04), reserves past a capacity (0x2C), no memory for a new record
 * (0x82). */
static void thr_set(sim *m, unsigned n, bool fail, uint8_t flags,
                    uint32_t reserved, uint32_t hard)
{
    tmodel *tm = &m->thr;
    tshadow *t = &tm->ten[n];
    bool set_r = flags & 1, set_h = flags & 2;
    bool mem = t->present ||
               (!fail && thr_fits_budget(m, thr_node_bytes(m, n)));
    bool armed = lim_arm(fail);
    cnt_status st = cnt_throttle_set_tenant(m->throttle, thr_name(n),
                                            thr_len(n), set_r, reserved,
                                            set_h, hard);
    bool failed = lim_disarm();
    cnt_status want = CNT_STATUS_OK;
    uint32_t R, H;

    thr_limits(tm, t, &R, &H);
    uint64_t old = t->configured ? t->reserved : 0;
    if (set_r)
        R = reserved;
    if (set_h)
        H = hard;
    if (!set_r && !set_h)
        want = CNT_STATUS_INVALID;
    else if (H < R)
        want = CNT_STATUS_INVALID;
    else if (tm->capacity > 0 && tm->reserved_sum - old + R > tm->capacity)
        want = CNT_STATUS_OVER_CAPACITY;
    else if (!mem)
        want = CNT_STATUS_OUT_OF_MEMORY;
    FUZZ_CHECK(st == want);
    FUZZ_CHECK(!failed || (armed && want == CNT_STATUS_OUT_OF_MEMORY));
    if (st != CNT_STATUS_OK)
        return;
    if (!t->present)
        thr_create(tm, n);
    thr_configure(tm, n, R, H);
    thr_changed(tm);
}

/* Tenant_remove of tenant n: back on the defaults, its record and usage
 * staying; 0x01 when it was not configured. */
static void thr_remove(sim *m, unsigned n)
{
    tmodel *tm = &m->thr;
    tshadow *t = &tm->ten[n];
    cnt_status st = cnt_throttle_remove_tenant(m->throttle, thr_name(n),
                                               thr_len(n));
    if (!t->configured) {
        FUZZ_CHECK(st == CNT_STATUS_NOT_FOUND);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK && t->present);
    tm->reserved_sum -= t->reserved;
    tm->tenants--;
    t->configured = false;
    t->reserved = t->hard = 0;
    thr_changed(tm);
}

/* Node_set: the capacity, refused (0x2C) below the reserves. */
static void thr_capacity(sim *m, uint32_t capacity)
{
    tmodel *tm = &m->thr;
    cnt_status st = cnt_throttle_set_capacity(m->throttle, capacity);
    if (capacity > 0 && tm->reserved_sum > capacity) {
        FUZZ_CHECK(st == CNT_STATUS_OVER_CAPACITY);
        return;
    }
    FUZZ_CHECK(st == CNT_STATUS_OK);
    tm->capacity = capacity;
    thr_changed(tm);
}

/* The default hard limit: always taken. */
static void thr_default_hard(sim *m, uint32_t hard)
{
    FUZZ_CHECK(cnt_throttle_set_default_hard(m->throttle, hard) ==
               CNT_STATUS_OK);
    m->thr.default_hard = hard;
}

/* Applies a settings set, all or nothing: x bit 0 has a capacity (y, or
 * 2^32 - 1 - y with x's bit 4), bit 1 a default hard limit (z, as
 * thr_hard_of), bits 2-3 the number of tenants; three bytes each at p:
 * the name (b0 % 5; 4 is the empty name), the reserve and the hard limit
 * (thr_reserve_of, thr_hard_of). The model: an empty name or H < R
 * refuses it (0x04) first; then the records are made in order (the first
 * allocation fails with fail; the memory limit) until a name comes twice
 * (0x04) or one does not fit (0x82); then the reserves must fit the
 * capacity it leaves (0x2C). Returns the bytes used, 0 when p is too
 * short. */
static size_t thr_apply(sim *m, bool fail, uint8_t x, uint8_t y, uint8_t z,
                        const uint8_t *p, size_t avail)
{
    tmodel *tm = &m->thr;
    size_t nt = (x >> 2) & 3;
    cnt_throttle_setting set[TSET_MAX];
    unsigned idx[TSET_MAX];
    cnt_throttle_settings s = {
        .has_capacity = x & 1,
        .capacity = (x & 0x10) ? UINT32_MAX - y : y,
        .has_default_hard = (x & 2) != 0,
        .default_hard = thr_hard_of(z),
        .ntenants = nt,
        .tenants = set,
    };
    static const uint8_t empty[1];
    cnt_status want = CNT_STATUS_OK;

    if (avail < nt * 3)
        return 0;
    for (size_t i = 0; i < nt; i++) {
        idx[i] = p[3 * i] % 5;
        set[i].name = idx[i] < NTEN ? thr_name(idx[i]) : empty;
        set[i].len = idx[i] < NTEN ? thr_len(idx[i]) : 0;
        set[i].reserved = thr_reserve_of(p[3 * i + 1]);
        set[i].hard = thr_hard_of(p[3 * i + 2]);
        if (set[i].len == 0 || set[i].hard < set[i].reserved)
            want = CNT_STATUS_INVALID;
    }
    /* The records it makes, in order, and the reserves it replaces. */
    bool pinned[NTEN] = { false }, made[NTEN] = { false }, first = true;
    uint64_t extra = 0, old_named = 0, new_named = 0;
    for (size_t i = 0; i < nt && want == CNT_STATUS_OK; i++) {
        unsigned n = idx[i];
        const tshadow *t = &tm->ten[n];
        if (!t->present && !made[n]) {
            uint64_t b = thr_node_bytes(m, n);
            if ((fail && first) || !thr_fits_budget(m, extra + b)) {
                want = CNT_STATUS_OUT_OF_MEMORY;
                break;
            }
            first = false;
            extra += b;
            made[n] = true;
        } else if (pinned[n]) {
            want = CNT_STATUS_INVALID;
            break;
        }
        pinned[n] = true;
        old_named += t->configured ? t->reserved : 0;
        new_named += set[i].reserved;
    }
    uint32_t C = s.has_capacity ? s.capacity : tm->capacity;
    if (want == CNT_STATUS_OK && C > 0 &&
        tm->reserved_sum - old_named + new_named > C)
        want = CNT_STATUS_OVER_CAPACITY;

    bool armed = lim_arm(fail);
    cnt_status st = cnt_throttle_apply(m->throttle, &s);
    bool failed = lim_disarm();
    FUZZ_CHECK(st == want);
    FUZZ_CHECK(!failed || (armed && want == CNT_STATUS_OUT_OF_MEMORY));
    if (st == CNT_STATUS_OK) {
        for (size_t i = 0; i < nt; i++) {
            if (!tm->ten[idx[i]].present)
                thr_create(tm, idx[i]);
            thr_configure(tm, idx[i], set[i].reserved, set[i].hard);
        }
        if (s.has_capacity)
            tm->capacity = s.capacity;
        if (s.has_default_hard)
            tm->default_hard = s.default_hard;
        thr_changed(tm);
    }
    return nt * 3;
}

/* The calls with an empty name (what as selects), all refused (0x04)
 * changing nothing but the count of checks. */
static void thr_empty_name(sim *m, uint8_t what)
{
    static const uint8_t none[1];
    cnt_throttle_answer a;
    cnt_tenant_view v;
    cnt_status st;

    switch (what & 3) {
    case 0:
        st = cnt_throttle_charge(m->throttle, none, 0, 1, false, &a);
        m->thr.st.checks++;
        break;
    case 1: st = cnt_throttle_tenant(m->throttle, none, 0, &v); break;
    case 2:
        st = cnt_throttle_set_tenant(m->throttle, none, 0, true, 0, true, 0);
        break;
    default: st = cnt_throttle_remove_tenant(m->throttle, none, 0); break;
    }
    FUZZ_CHECK(st == CNT_STATUS_INVALID);
}

/* Checks one listed record against the model (under its stripe lock:
 * nothing but the model is touched). */
static bool thr_list_record(void *ctx, const uint8_t *name, uint16_t len,
                            const cnt_tenant_view *v)
{
    dump_check *d = ctx;
    tmodel *tm = &d->m->thr;
    unsigned n;
    for (n = 0; n < NTEN; n++)
        if (thr_len(n) == len && memcmp(thr_name(n), name, len) == 0)
            break;
    FUZZ_CHECK(n < NTEN && tm->ten[n].present && !tm->listed[n]);
    tm->listed[n] = true;
    cnt_tenant_view want;
    thr_view_model(tm, &tm->ten[n], thr_second(), &want);
    thr_view_check(v, &want);
    d->records++;
    return d->budget == 0 || --d->budget > 0;
}

/* A listing of the tenants advances by 1 to 8 records (starting one if
 * none runs), or with x's bit 7 is given up. Every record is reported as
 * the model has it, none twice, none the model does not have; at the end
 * every one that had a record all along was reported. */
static void thr_list_step(sim *m, uint8_t x)
{
    tmodel *tm = &m->thr;
    if (x & 0x80) {
        if (tm->listing)
            cnt_throttle_list_cancel(m->throttle, &tm->cursor);
        tm->listing = false;
        return;
    }
    if (!tm->listing) {
        tm->listing = true;
        tm->cursor = (cnt_map_cursor){ 0 };
        for (unsigned n = 0; n < NTEN; n++) {
            tm->listed[n] = false;
            tm->steady[n] = tm->ten[n].present;
        }
    }
    dump_check d = { .m = m, .budget = 1 + (x & 7) };
    if (!cnt_throttle_list(m->throttle, &tm->cursor, thr_list_record, &d))
        return;
    FUZZ_CHECK(!tm->cursor.paused);
    for (unsigned n = 0; n < NTEN; n++)
        FUZZ_CHECK(!tm->steady[n] || tm->listed[n]);
    tm->listing = false;
}

/* The monotonic clock moves to x ns (x us with y's bit 1) before the next
 * second starts, or after it with y's bit 0. */
static void thr_clock_step(sim *m, uint8_t x, uint8_t y)
{
    uint64_t now = mono_ns();
    uint64_t next = (now / CNT_THROTTLE_SECOND_NS + 1) *
                    CNT_THROTTLE_SECOND_NS;
    uint64_t d = (uint64_t)x * ((y & 2) ? 1000 : 1);
    uint64_t to = (y & 1) ? next + d : next - 1 - d;
    if (to > now)
        step_clock(m, 0, to - now);
}

/* ---- Tenants on connections: sessions charged to their tenant ---- */

/* The users table's names and secrets; each input picks the users'
 * tenants and privileges (uc_users). */
static const char *const user_names[NUSERS + 1] = {
    "alice", "bob", "carol", "dave", "mallory"
};
static const char *const user_secrets[NUSERS] = {
    "alice-secret", "bob-secret", "carol-secret", "dave-secret"
};
#define UC_DEFAULT_TENANT 3u    /* "d" */
#define UC_COUNTER "u"
#define UC_AUTH_TRIES 3u        /* failed logins that close, as the server
                                   has it */

/* What a request of kind costs its tenant (the costs uc_init gives each
 * class); 0 for Auth_user, which is free. */
static uint32_t uc_cost(const sim *m, uint8_t kind)
{
    switch (kind) {
    case UR_NOOP: return m->uenv.tenant_cost[CNT_COST_READ];
    case UR_ACQUIRE: return m->uenv.tenant_cost[CNT_COST_ACQUIRE];
    default: return 0;
    }
}

/* Builds the users table from the input's flags byte: alice, bob and
 * carol on tenants the flags pick, bob Unthrottled, carol Admin, dave
 * both; secrets from user_secrets. */
static void uc_users(sim *m, uint8_t flags)
{
    static const uint8_t priv[NUSERS] = {
        0, CNT_PRIV_UNTHROTTLED, CNT_PRIV_ADMIN,
        CNT_PRIV_ADMIN | CNT_PRIV_UNTHROTTLED
    };
    unsigned tenant[NUSERS] = {
        (flags >> 2) & 3u, (flags >> 4) & 3u, (flags >> 6) & 3u, flags & 3u
    };
    for (unsigned i = 0; i < NUSERS; i++)
        m->user[i] = (cnt_user){
            .name = (uint8_t *)user_names[i],
            .name_len = (uint16_t)strlen(user_names[i]),
            .tenant = (uint8_t *)thr_names[tenant[i]],
            .tenant_len = thr_len(tenant[i]),
            .secret = (uint8_t *)user_secrets[i],
            .secret_len = strlen(user_secrets[i]),
            .privileges = priv[i],
        };
    m->users = (cnt_users){ .n = NUSERS, .v = m->user };
}

/* The tenant index of user i (its tenant is one of thr_names). */
static unsigned uc_user_tenant(const sim *m, unsigned i)
{
    for (unsigned n = 0; n < NTEN; n++)
        if ((const char *)m->user[i].tenant == thr_names[n])
            return n;
    FUZZ_CHECK(false);
    return 0;
}

/* A fresh connection in place of u: the default tenant, throttled,
 * blocking, nothing sent. */
static void uc_open(sim *m, ucon *u)
{
    memset(u, 0, sizeof *u);
    FUZZ_CHECK(cnt_session_init(&u->s, &m->uenv));
    u->tenant = UC_DEFAULT_TENANT;
}

/* The connection goes: its holdings on "u" are released. */
static void uc_close(sim *m, ucon *u)
{
    cnt_session_end(&u->s);
    m->uvalue -= u->acquired;
    u->acquired = 0;
}

/* Builds the sessions' table, environment and users (flags: the input's
 * first byte) and opens the connections. */
static void uc_init(sim *m, uint8_t flags)
{
    cnt_map_budget_init(&m->ubudget, 0);
    cnt_table_config cfg = {
        .buckets = 4,
        .interval = INTERVAL,
        .budget = &m->ubudget,
        .clock = &fuzz_clock.clock,
    };
    m->utable = cnt_table_new(&cfg);
    FUZZ_CHECK(m->utable != NULL);
    m->ustats = cnt_stats_new(1);
    FUZZ_CHECK(m->ustats != NULL);
    uc_users(m, flags);
    m->uenv = m->env;
    m->uenv.table = m->utable;
    m->uenv.slot = cnt_stats_slot_get(m->ustats, 0);
    m->uenv.throttle = m->throttle;
    m->uenv.users = &m->users;
    m->uenv.default_tenant = (const uint8_t *)thr_names[UC_DEFAULT_TENANT];
    m->uenv.default_tenant_len = thr_len(UC_DEFAULT_TENANT);
    for (unsigned c = 0; c < CNT_COST_CLASSES; c++)
        m->uenv.tenant_cost[c] = 1;
    m->uenv.tenant_cost[CNT_COST_ACQUIRE] = 2;
    for (int c = 0; c < NUCON; c++)
        uc_open(m, &m->ucon[c]);
}

/* One answer the session must have written next. */
typedef struct uanswer {
    uint8_t opcode, status, reason;
    uint32_t opaque;
    uint64_t retry;             /* a Throttled answer's hint */
} uanswer;

/* Checks u's output against want[0..n) in order, then empties it. */
static void uc_answers(ucon *u, const uanswer *want, size_t n)
{
    cnt_outbuf *o = &u->s.out;
    const uint8_t *p = cnt_outbuf_data(o);
    size_t len = cnt_outbuf_pending(o), off = 0;
    for (size_t i = 0; i < n; i++) {
        cnt_response res;
        FUZZ_CHECK(off < len);
        FUZZ_CHECK(cnt_response_decode(p + off, len - off, &res) ==
                   CNT_DECODE_OK);
        FUZZ_CHECK(!cnt_response_is_event(&res));
        FUZZ_CHECK(res.opcode == want[i].opcode &&
                   res.opaque == want[i].opaque &&
                   res.status == want[i].status);
        if (res.status == CNT_STATUS_THROTTLED) {
            FUZZ_CHECK(res.body_len >= CNT_THROTTLED_FIXED);
            uint64_t retry = cnt_get_u64(res.body + CNT_THROTTLED_OFF_RETRY);
            FUZZ_CHECK(retry > 0 && retry == want[i].retry);
            FUZZ_CHECK(res.body[CNT_THROTTLED_OFF_REASON] == want[i].reason);
        }
        off += res.size;
    }
    FUZZ_CHECK(off == len);
    cnt_outbuf_consume(o, len);
}

/* Feeds u's whole unread input to its session in one call, as a worker
 * that reads it all at once does, and checks what the session did
 * against the model: the requests decoded together are paid for with one
 * charge when they fit the share together (none of them being free),
 * else each pays alone; one its tenant cannot pay for pauses a blocking
 * connection there (unread, its hint the time to the next second) and is
 * answered Throttled (0x2D, not run) on a non-blocking one; a third
 * failed Auth_user closes the connection (a new one takes its place). */
static void uc_feed(sim *m, ucon *u)
{
    uanswer want[UPEND_MAX];
    size_t nwant = 0, done = 0, consumed = 0;
    uint64_t pause = 0;
    uint32_t prepaid = 0;
    bool closing = false;
    uint64_t second = thr_second();

    if (u->nreq == 0)
        return;
    if (u->nreq >= 2) {
        uint64_t units = 0;
        bool free_one = false;
        for (size_t i = 0; i < u->nreq; i++) {
            free_one |= u->req[i].kind == UR_AUTH_USER;
            units += uc_cost(m, u->req[i].kind);
        }
        cnt_throttle_answer w;
        if (!free_one && units > 0 &&
            thr_predict(m, u->tenant, thr_has_room(m, u->tenant, false),
                        u->unthrottled, (uint32_t)units, &w) ==
                CNT_STATUS_OK &&
            w.state == CNT_TSTATE_ALLOWED)
            prepaid = (uint32_t)u->nreq;
    }
    for (; done < u->nreq && !closing; done++) {
        const ureq *r = &u->req[done];
        uint8_t op = r->kind == UR_NOOP      ? CNT_OP_NOOP
                     : r->kind == UR_ACQUIRE ? CNT_OP_ACQUIRE
                                             : CNT_OP_AUTH_USER;
        uanswer *a = &want[nwant];
        *a = (uanswer){ .opcode = op, .opaque = r->opaque };
        if (r->kind != UR_AUTH_USER) {
            if (prepaid > 0) {
                prepaid--;
            } else {
                cnt_throttle_answer w;
                cnt_status st = thr_predict(
                    m, u->tenant, thr_has_room(m, u->tenant, false),
                    u->unthrottled, uc_cost(m, r->kind), &w);
                /* A blocking connection waits for the next second unless
                 * no second could pay: then it is answered, as below. */
                if (st == CNT_STATUS_OK && w.state != CNT_TSTATE_ALLOWED &&
                    !u->nonblocking &&
                    thr_could_pass(m, u->tenant, uc_cost(m, r->kind))) {
                    pause = w.retry_after_ns;
                    FUZZ_CHECK(pause > 0);
                    break;
                }
                if (st != CNT_STATUS_OK || w.state != CNT_TSTATE_ALLOWED) {
                    /* Answered, not run: "u" and the figures stay. */
                    a->status = st != CNT_STATUS_OK ? (uint8_t)st
                                                    : CNT_STATUS_THROTTLED;
                    a->retry = w.retry_after_ns;
                    a->reason = w.reason;
                    consumed += r->size;
                    nwant++;
                    continue;
                }
            }
        }
        if (r->kind == UR_ACQUIRE) {
            u->acquired++;
            m->uvalue++;
            m->ucreated = true;
        } else if (r->kind == UR_AUTH_USER) {
            if (r->user < NUSERS && r->right) {
                u->tenant = uc_user_tenant(m, r->user);
                u->unthrottled = (m->user[r->user].privileges &
                                  CNT_PRIV_UNTHROTTLED) != 0;
                u->nonblocking = r->nonblocking;
            } else {
                a->status = CNT_STATUS_AUTH_FAILED;
                closing = ++u->failures >= UC_AUTH_TRIES;
            }
        }
        consumed += r->size;
        nwant++;
    }
    cnt_outbuf_begin_turn(&u->s.out, 1 << 20);
    size_t used = cnt_session_feed(&u->s, u->in, u->nin);
    FUZZ_CHECK(used == consumed);
    FUZZ_CHECK(u->s.pause_ns == pause && u->s.closing == closing);
    FUZZ_CHECK(!u->s.failed && u->s.need == 0 && u->s.skip == 0 &&
               u->s.prepaid == 0);
    uc_answers(u, want, nwant);
    if (closing) {
        uc_close(m, u);
        uc_open(m, u);
        return;
    }
    memmove(u->in, u->in + used, u->nin - used);
    u->nin -= used;
    memmove(u->req, u->req + done, (u->nreq - done) * sizeof u->req[0]);
    u->nreq -= done;
    u->paused_until = pause > 0 ? mono_ns() + pause : 0;
    /* Paused until the next second starts, never before. */
    if (pause > 0)
        FUZZ_CHECK(u->paused_until / CNT_THROTTLE_SECOND_NS == second + 1 &&
                   u->paused_until % CNT_THROTTLE_SECOND_NS == 0);
}

/* Writes request r into buf; returns its size. */
static size_t uc_encode(uint8_t *buf, const ureq *r)
{
    switch (r->kind) {
    case UR_NOOP: return cnt_encode_simple(buf, CNT_OP_NOOP, r->opaque);
    case UR_ACQUIRE:
        return cnt_encode_acquire(buf, r->opaque, 1, 1000000, UC_COUNTER, 1);
    default: {
        const char *name = user_names[r->user];
        const char *secret = r->user < NUSERS ? user_secrets[r->user]
                                              : "guess";
        size_t slen = strlen(secret) - (r->right ? 0 : 1);
        return cnt_encode_auth_user(
            buf, r->opaque, r->nonblocking ? CNT_AUTH_NONBLOCKING : 0, name,
            (uint16_t)strlen(name), secret, (uint16_t)slen);
    }
    }
}

/* Sends r on u: read at once unless the session is paused and its second
 * not over (then it waits unread behind the rest, answered in order once
 * the pause ends). */
static void uc_send(sim *m, ucon *u, ureq *r)
{
    if (u->nreq == UPEND_MAX)
        return;
    r->opaque = u->opaque++;
    r->size = uc_encode(u->in + u->nin, r);
    FUZZ_CHECK(r->size <= UREQ_MAX);
    u->nin += r->size;
    u->req[u->nreq++] = *r;
    if (u->paused_until == 0 || mono_ns() >= u->paused_until)
        uc_feed(m, u);
}

/* A tenant-connection step (the throttle step's operation 12): o's bit 4
 * the connection; x % 8 what happens: 0 and 6 Noop, 1 and 7 Acquire of
 * "u" (cost 2), 2 Auth_user (user y % 5, 4 an unknown one; its own
 * secret with z's bit 0, else one byte short; the non-blocking flag with
 * z's bit 1), 3 the clock moves to the end of the connection's pause and
 * its input is read, 4 the connection ends (a new one takes its place),
 * 5 2 + y % 4 Noops sent together. */
static void uc_step(sim *m, uint8_t o, uint8_t x, uint8_t y, uint8_t z)
{
    ucon *u = &m->ucon[(o >> 4) & 1];
    ureq r = { 0 };

    switch (x % 8) {
    case 2:
        r.kind = UR_AUTH_USER;
        r.user = y % (NUSERS + 1);
        r.right = (z & 1) != 0;
        r.nonblocking = (z & 2) != 0;
        break;
    case 3:
        if (u->paused_until > mono_ns())
            step_clock(m, 0, u->paused_until - mono_ns());
        uc_feed(m, u);
        return;
    case 4:
        uc_close(m, u);
        uc_open(m, u);
        return;
    case 5: {
        /* Sent together: read in one go once every one is in. */
        uint64_t paused = u->paused_until;
        u->paused_until = UINT64_MAX;
        for (unsigned i = 0; i < 2u + y % 4u; i++) {
            ureq q = { .kind = UR_NOOP };
            uc_send(m, u, &q);
        }
        u->paused_until = paused;
        if (paused == 0 || mono_ns() >= paused)
            uc_feed(m, u);
        return;
    }
    case 1:
    case 7:
        r.kind = UR_ACQUIRE;
        break;
    default: r.kind = UR_NOOP; break;
    }
    uc_send(m, u, &r);
}

/* "u" holds what the connections' ledgers say; every connection's output
 * was read. */
static void uc_check_all(sim *m)
{
    uint32_t v = 0;
    cnt_status st = cnt_table_get(m->utable, (const uint8_t *)UC_COUNTER,
                                  1, &v);
    FUZZ_CHECK(st == (m->ucreated ? CNT_STATUS_OK : CNT_STATUS_NOT_FOUND));
    FUZZ_CHECK(v == (m->ucreated ? m->uvalue : 0));
    uint64_t sum = 0;
    for (int c = 0; c < NUCON; c++) {
        sum += m->ucon[c].acquired;
        FUZZ_CHECK(cnt_outbuf_pending(&m->ucon[c].s.out) == 0);
    }
    FUZZ_CHECK(sum == m->uvalue);
}

/* Ends the connections (their holdings go) and frees their table. */
static void uc_finish(sim *m)
{
    for (int c = 0; c < NUCON; c++)
        uc_close(m, &m->ucon[c]);
    uc_check_all(m);
    FUZZ_CHECK(m->uvalue == 0);
    cnt_table_free(m->utable);
    cnt_stats_free(m->ustats);
}

/* A throttle step: o's low 4 bits the operation (13-15 are 0), bits 4-5
 * the tenant, bit 6 its first allocation fails, bit 7 an unthrottled
 * charge; x, y, z its arguments, then a settings set's tenants. Returns
 * the bytes used after the step byte, 0 when too few. */
static size_t step_throttle(sim *m, const uint8_t *p, size_t avail)
{
    if (avail < 4)
        return 0;
    uint8_t o = p[0], x = p[1], y = p[2], z = p[3];
    unsigned op = o & 15, n = (o >> 4) & 3;
    bool fail = (o & 0x40) != 0;
    uint64_t v = x | (uint64_t)y << 8;

    if (op > 12)
        op = 0;
    switch (op) {
    case 0:
        thr_charge(m, n, fail, (o & 0x80) != 0,
                   (x & 0x80) ? UINT32_MAX - (x & 0x7f) : (x & 0x3f));
        break;
    case 1:
        thr_set(m, n, fail, y & 3, thr_reserve_of(x), thr_hard_of(z));
        break;
    case 2: thr_remove(m, n); break;
    case 3: thr_capacity(m, (y & 1) ? UINT32_MAX - x : x); break;
    case 4: thr_default_hard(m, thr_hard_of(x)); break;
    case 5: {
        size_t used = thr_apply(m, fail, x, y, z, p + 4, avail - 4);
        return used == 0 && ((x >> 2) & 3) != 0 ? 0 : 4 + used;
    }
    case 6: thr_clock_step(m, x, y); break;
    case 7:
        /* v ns, v us, v ms (both clocks) or v x 0.1 s. */
        if ((z & 3) == 2)
            step_clock(m, v, 0);
        else
            step_clock(m, 0, v * ((z & 3) == 0 ? 1 : (z & 3) == 1
                                                    ? 1000 : 100000000));
        break;
    case 8: thr_list_step(m, x); break;
    case 9:
        if (x & 1)
            lim_records_gc_step(m);
        else
            step_gc(m);
        break;
    case 10: lim_budget_step(m, x); break;
    case 11: thr_empty_name(m, x); break;
    default: uc_step(m, o, x, y, z); break;
    }
    return 4;
}

/* Bytes of the tenant records the model has. */
static uint64_t thr_bytes(sim *m)
{
    uint64_t b = 0;
    for (unsigned n = 0; n < NTEN; n++)
        if (m->thr.ten[n].present)
            b += thr_node_bytes(m, n);
    return b;
}

/* The throttle's invariants after every step: each tenant's view, the
 * node's, the totals and the map's records and memory as the model has
 * them; the sum of the reserves within a capacity. */
static void thr_check_all(sim *m)
{
    const tmodel *tm = &m->thr;
    uint64_t s = thr_second();
    size_t records = 0;

    for (unsigned n = 0; n < NTEN; n++) {
        cnt_tenant_view got, want;
        FUZZ_CHECK(cnt_throttle_tenant(m->throttle, thr_name(n), thr_len(n),
                                       &got) == CNT_STATUS_OK);
        thr_view_model(tm, &tm->ten[n], s, &want);
        thr_view_check(&got, &want);
        records += tm->ten[n].present;
        FUZZ_CHECK(tm->ten[n].present || !tm->ten[n].configured);
    }
    cnt_node_view nv;
    cnt_throttle_node(m->throttle, &nv);
    bool current = tm->second == s;
    FUZZ_CHECK(nv.capacity == tm->capacity &&
               nv.used == thr_clamp(current ? tm->used : 0) &&
               nv.pool == thr_clamp(thr_pool(tm)) &&
               nv.pool_used == thr_clamp(current ? tm->pool_used : 0));
    FUZZ_CHECK(nv.reserved_sum == thr_clamp(tm->reserved_sum) &&
               nv.tenants == tm->tenants &&
               nv.throttled == tm->st.throttled);
    FUZZ_CHECK(tm->capacity == 0 || tm->reserved_sum <= tm->capacity);
    cnt_throttle_stats st;
    cnt_throttle_stats_get(m->throttle, &st);
    FUZZ_CHECK(st.checks == tm->st.checks && st.allowed == tm->st.allowed &&
               st.throttled == tm->st.throttled &&
               st.units == tm->st.units &&
               st.unthrottled_units == tm->st.unthrottled_units);
    FUZZ_CHECK(st.checks >= st.allowed + st.throttled);
    cnt_map_stats ms;
    cnt_map_get_stats(cnt_throttle_map(m->throttle), &ms);
    FUZZ_CHECK(ms.objects == records &&
               ms.used_memory == tm->baseline + thr_bytes(m));
}

/* At the end: a listing still paused is given up, every tenant goes back
 * to the defaults, and once the second is over a sweep leaves no record:
 * the map at its memory baseline. */
static void thr_finish(sim *m)
{
    if (m->thr.listing)
        cnt_throttle_list_cancel(m->throttle, &m->thr.cursor);
    m->thr.listing = false;
    for (unsigned n = 0; n < NTEN; n++)
        if (m->thr.ten[n].configured)
            thr_remove(m, n);
    step_clock(m, 0, CNT_THROTTLE_SECOND_NS);
    step_gc(m);
    thr_check_all(m);
    for (unsigned n = 0; n < NTEN; n++)
        FUZZ_CHECK(!m->thr.ten[n].present);
    cnt_map_stats ms;
    cnt_map_get_stats(cnt_throttle_map(m->throttle), &ms);
    FUZZ_CHECK(ms.objects == 0 && ms.used_memory == m->thr.baseline);
}

/* ---- Waiting requests, through the session ---- */

/* Hands connection c's session n request bytes (whole requests) within an
 * output budget of budget bytes; it must take them all. */
static void feed(sim *m, int c, const uint8_t *p, size_t n, size_t budget)
{
    static const uint8_t none[1];
    conn *k = &m->conn[c];
    cnt_outbuf_begin_turn(&k->s.out, budget);
    size_t used = cnt_session_feed(&k->s, n ? p : none, n);
    FUZZ_CHECK(used == n);
    FUZZ_CHECK(!k->s.failed && !k->s.closing && k->s.need == 0 &&
               k->s.skip == 0);
}

/* Runs c's paused queue listing to its end (a request on the connection
 * comes after it), or a part of it within budget bytes. */
static void continue_stream(sim *m, int c, size_t budget)
{
    if (!m->conn[c].streaming)
        return;
    feed(m, c, NULL, 0, budget);
    drain(m, c);
}

/* The status of the one answer c's session has just written. */
static uint8_t peek_status(sim *m, int c)
{
    cnt_outbuf *o = &m->conn[c].s.out;
    cnt_response res;
    FUZZ_CHECK(cnt_response_decode(cnt_outbuf_data(o), cnt_outbuf_pending(o),
                                   &res) == CNT_DECODE_OK);
    return res.status;
}

/* Wait_acquire on connection c: granted now, queued (its wait timer
 * armed) or refused, as the model predicts. */
static void step_wait_acquire(sim *m, int c, const uint8_t *p, size_t n,
                              const cnt_request *req)
{
    shadow *s = shadow_get(m, req->name, req->name_len);
    if (s == NULL)
        return;
    conn *k = &m->conn[c];
    mticket *t = &s->tk[c];
    const cnt_group *g = group_of(req->name, req->name_len);
    uint32_t maximum = req->maximum, wait = req->wait_ms;
    uint32_t lease = req->lease_ms;
    cnt_status st = CNT_STATUS_OK;

    /* A group's maximum always wins; its wait and lease are defaults. */
    if (g != NULL) {
        maximum = g->maximum;
        if (wait == CNT_USE_GROUP_DEFAULT)
            wait = g->wait_ms;
        if (lease == CNT_USE_GROUP_DEFAULT)
            lease = g->lease_ms;
    } else if (maximum == 0 || wait == CNT_USE_GROUP_DEFAULT ||
               lease == CNT_USE_GROUP_DEFAULT) {
        st = CNT_STATUS_UNKNOWN_GROUP;
    }
    if (st == CNT_STATUS_OK && req->resources > maximum)
        st = CNT_STATUS_EXCEEDS_MAXIMUM;
    else if (st == CNT_STATUS_OK && t->state != MT_NONE &&
             t->state != MT_EXPIRED)
        st = CNT_STATUS_ALREADY_ACTIVE;
    /* Asking again acknowledges an expired lease, whatever comes next. */
    if (st == CNT_STATUS_OK && t->state == MT_EXPIRED)
        t->state = MT_NONE;
    if (st == CNT_STATUS_OK && conn_tickets(m, c) >= m->env.max_waits)
        st = CNT_STATUS_TOO_MANY_WAITS;

    /* Past the checks every call allocates the ticket first. */
    bool arm = st == CNT_STATUS_OK && fail_alloc;
    if (arm)
        cnt_fake_alloc_fail_at(1, 0);
    feed(m, c, p, n, SIZE_MAX);
    bool failed = cnt_fake_alloc_injected();
    cnt_fake_alloc_fail_at(0, 0);
    FUZZ_CHECK(!failed || arm);
    if (failed)
        fail_alloc = false;
    if (st == CNT_STATUS_OK &&
        peek_status(m, c) == CNT_STATUS_OUT_OF_MEMORY &&
        (failed || m->memory_limited))
        st = CNT_STATUS_OUT_OF_MEMORY;     /* nothing changed */
    /* Armed, the allocation fails, unless the memory limit said no to
     * the ticket before it was allocated (the failure stays armed). */
    FUZZ_CHECK(!arm || st == CNT_STATUS_OUT_OF_MEMORY);
    FUZZ_CHECK(!arm || failed || m->memory_limited);
    if (st != CNT_STATUS_OK) {
        expect_error(k, req->opcode, req->opaque, st);
        return;
    }

    s->last_touch_ms = now_ms();
    bool fits = queue_len(s) == 0 &&
                shadow_sum(s) + req->resources <= maximum;
    if (!fits && wait == 0) {
        expect_error(k, req->opcode, req->opaque,
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
        return;
    }
    memset(t, 0, sizeof *t);
    t->resources = req->resources;
    t->maximum = maximum;
    t->lease_ms = lease;
    t->opaque = req->opaque;
    expect x = { .kind = X_WAIT, .code = req->opcode, .opaque = req->opaque };
    if (fits) {
        uint64_t before = shadow_sum(s);
        if (!s->exists) {
            s->exists = true;
            s->peak = 0;
            s->peak_window = window_now();
        }
        t->state = MT_GRANTED;
        t->lease_id = ++m->last_lease_id;
        if (lease != 0) {
            m->ws.leases++;
            mt_arm(t, CNT_TIMER_LEASE, lease);
        }
        shadow_changed(s, before);
        if (maximum > s->max_admitted)
            s->max_admitted = maximum;
        FUZZ_CHECK(shadow_sum(s) <= maximum);
        x.state = CNT_WAIT_GRANTED;
        x.id = t->lease_id;
    } else {
        t->state = MT_QUEUED;
        t->seq = ++m->seq;
        m->ws.waiting++;
        m->queued++;
        mt_arm(t, CNT_TIMER_WAIT, wait);
        x.state = CNT_WAIT_QUEUED;
        x.position = (uint32_t)queue_len(s);
    }
    x.value = (uint32_t)shadow_sum(s);
    expect_push(k, &x);
}

/* Renew on connection c: a granted request's lease restarts. */
static void step_renew(sim *m, int c, const uint8_t *p, size_t n,
                       const cnt_request *req)
{
    shadow *s = shadow_get(m, req->name, req->name_len);
    if (s == NULL)
        return;
    conn *k = &m->conn[c];
    mticket *t = &s->tk[c];
    const cnt_group *g = group_of(req->name, req->name_len);
    uint32_t lease = req->lease_ms;
    cnt_status st = CNT_STATUS_OK;

    if (g != NULL && lease == CNT_USE_GROUP_DEFAULT)
        lease = g->lease_ms;
    else if (g == NULL && lease == CNT_USE_GROUP_DEFAULT)
        st = CNT_STATUS_UNKNOWN_GROUP;
    if (st == CNT_STATUS_OK && lease == 0)
        st = CNT_STATUS_INVALID;        /* the group has no lease */
    else if (st == CNT_STATUS_OK && t->state == MT_EXPIRED)
        st = CNT_STATUS_LEASE_EXPIRED;
    else if (st == CNT_STATUS_OK && t->state != MT_GRANTED)
        st = CNT_STATUS_NOT_ACQUIRED;   /* none, queued, or in flight */
    feed(m, c, p, n, SIZE_MAX);
    if (st == CNT_STATUS_LEASE_EXPIRED)
        t->state = MT_NONE;             /* acknowledged */
    if (st != CNT_STATUS_OK) {
        expect_error(k, req->opcode, req->opaque, st);
        return;
    }
    if (t->lease_ms == 0)
        m->ws.leases++;
    t->lease_ms = lease;
    mt_arm(t, CNT_TIMER_LEASE, lease);
    expect x = { .kind = X_U64, .code = req->opcode, .opaque = req->opaque,
                 .id = t->lease_id };
    expect_push(k, &x);
}

/* Wait_release on connection c: cancels a wait or returns a grant (one on
 * its way included: no granted event may follow). */
static void step_wait_release(sim *m, int c, const uint8_t *p, size_t n,
                              const cnt_request *req)
{
    shadow *s = shadow_get(m, req->name, req->name_len);
    if (s == NULL)
        return;
    conn *k = &m->conn[c];
    mticket *t = &s->tk[c];
    uint32_t returned = 0;

    feed(m, c, p, n, SIZE_MAX);
    switch (t->state) {
    case MT_NONE:
        expect_error(k, req->opcode, req->opaque, CNT_STATUS_NOT_ACQUIRED);
        return;
    case MT_EXPIRED:
        t->state = MT_NONE;
        expect_error(k, req->opcode, req->opaque, CNT_STATUS_LEASE_EXPIRED);
        return;
    case MT_QUEUED:
        m->ws.cancels++;
        m->cancelled++;
        model_unqueue(m, s, t);
        break;
    default:
        m->released_flying += t->state == MT_FLIGHT;
        returned = t->resources;
        model_give_back(m, s, t, MT_NONE);
        break;
    }
    expect x = { .kind = X_U32, .code = req->opcode, .opaque = req->opaque,
                 .value = returned };
    expect_push(k, &x);
}

/* Queues on connection c: the listing starts; with the opaque's low bit
 * set it pauses once a small output budget is spent. */
static void step_queues(sim *m, int c, const uint8_t *p, size_t n,
                        const cnt_request *req)
{
    conn *k = &m->conn[c];
    expect x = { .kind = X_STREAM, .code = req->opcode,
                 .opaque = req->opaque };
    expect_push(k, &x);
    k->streaming = true;
    for (size_t i = 0; i < NNAMES; i++) {
        k->listed[i] = false;
        k->steady[i] = i < m->nnames && queue_len(&m->names[i]) > 0;
    }
    size_t budget = (req->opaque & 1) ? 1 + ((req->opaque >> 1) & 0xff) * 4
                                      : SIZE_MAX;
    feed(m, c, p, n, budget);
    drain(m, c);
}

/* A waiting request (or one the decoder refused) for connection c's
 * session; p[0..n) is the whole request. */
static void step_wait_request(sim *m, int c, const uint8_t *p, size_t n,
                              cnt_decode_result r, const cnt_request *req)
{
    continue_stream(m, c, SIZE_MAX);
    if (r == CNT_DECODE_ERROR) {
        feed(m, c, p, n, SIZE_MAX);
        expect_error(&m->conn[c], req->opcode, req->opaque, req->status);
    } else if (req->opcode == CNT_OP_WAIT_ACQUIRE) {
        step_wait_acquire(m, c, p, n, req);
    } else if (req->opcode == CNT_OP_RENEW) {
        step_renew(m, c, p, n, req);
    } else if (req->opcode == CNT_OP_WAIT_RELEASE) {
        step_wait_release(m, c, p, n, req);
    } else {
        step_queues(m, c, p, n, req);
    }
}

/* ---- Invariants ---- */

/* The invariants that hold after every step. */
static void check_all(sim *m)
{
    for (int c = 0; c < NCONN; c++) {
        if (!m->conn[c].open)
            continue;
        size_t entries = 0;
        for (size_t i = 0; i < m->nnames; i++)
            entries += m->names[i].held[c] > 0;
        FUZZ_CHECK(m->conn[c].s.holdings.count == entries);
        FUZZ_CHECK(m->conn[c].s.tickets.count == conn_tickets(m, c));
    }
    for (size_t i = 0; i < m->nnames; i++) {
        shadow *s = &m->names[i];
        uint32_t v = 0xdeadbeef;
        cnt_status st = cnt_table_get(m->table, s->name, s->len, &v);
        FUZZ_CHECK(st == (s->exists ? CNT_STATUS_OK : CNT_STATUS_NOT_FOUND));
        if (!s->exists) {
            FUZZ_CHECK(shadow_sum(s) == 0 && queue_len(s) == 0);
            continue;
        }
        FUZZ_CHECK(v == shadow_sum(s));
        FUZZ_CHECK(v <= s->max_admitted || v == 0);
        /* Each holder was admitted with consumption at or below its
         * maximum, and only releases followed the latest admission of
         * what is still held: the consumption is at or below the largest
         * maximum among the current holders. */
        uint64_t cap = 0;
        for (int c = 0; c < NCONN; c++) {
            if (s->held[c] > 0 && s->held_max[c] > cap)
                cap = s->held_max[c];
            if (mt_holds(&s->tk[c]) && s->tk[c].maximum > cap)
                cap = s->tk[c].maximum;
        }
        FUZZ_CHECK(v <= cap);
        /* A queue's head never fits (else it would have been granted), so
         * a counter with a queue is held. */
        mticket *h = queue_head(s);
        FUZZ_CHECK(h == NULL || v + (uint64_t)h->resources > h->maximum);
    }
    cnt_wait_stats ws;
    cnt_table_get_wait_stats(m->table, &ws);
    FUZZ_CHECK(ws.waiting == m->ws.waiting && ws.leases == m->ws.leases);
    FUZZ_CHECK(ws.queue_grants == m->ws.queue_grants &&
               ws.timeouts == m->ws.timeouts &&
               ws.expirations == m->ws.expirations &&
               ws.cancels == m->ws.cancels);
    FUZZ_CHECK(m->nfresh == 0 && m->predicted == 0);
    lim_check_all(m);
    thr_check_all(m);
    uc_check_all(m);
}

/* Runs one wire request for connection c; returns the bytes it used, or 0
 * to end the script (incomplete input or a closed stream). */
static size_t step_request(sim *m, int c, const uint8_t *p, size_t n)
{
    cnt_request req;
    cnt_decode_result r = cnt_request_decode(p, n, &req);
    if (req.magic == CNT_MAGIC_REQUEST &&
        req.opcode >= CNT_OP_WAIT_ACQUIRE && req.opcode <= CNT_OP_QUEUES &&
        (r == CNT_DECODE_OK || r == CNT_DECODE_ERROR) && req.size <= n) {
        step_wait_request(m, c, p, (size_t)req.size, r, &req);
        return (size_t)req.size;
    }
    if (r == CNT_DECODE_ERROR)
        return req.size < n ? (size_t)req.size : n;
    if (r != CNT_DECODE_OK || req.size > n)
        return 0;
    switch (req.opcode) {
    case CNT_OP_GET: step_get(m, &req); break;
    case CNT_OP_ACQUIRE: step_acquire(m, c, &req); break;
    case CNT_OP_RELEASE: step_release(m, c, &req); break;
    case CNT_OP_DUMP: step_dump_part(m, req.opaque); break;
    case CNT_OP_STATS: step_dump(m); break;
    default: break;
    }
    return (size_t)req.size;
}

/* Builds the table, collector, groups and sessions; flags pick the
 * table's shape and the cap of waits per connection. */
static void sim_init(sim *m, uint8_t flags)
{
    memset(m, 0, sizeof *m);
    STAILQ_INIT(&m->pending);
    cnt_fake_clock_init(&fuzz_clock, START_MS + (uint64_t)flags * 977);
    cnt_fake_alloc_fail_at(0, 0);
    fail_alloc = false;
    m->memory_limited = flags & 1;
    /* One memory limit for the counters, their tickets and the rate
     * limits, as the engine has it. */
    m->first_limit = m->memory_limited ? 4096 + (flags >> 2) * 64 : 0;
    cnt_map_budget_init(&m->budget, m->first_limit);
    cnt_table_config cfg = {
        .buckets = (flags & 2) ? 1 : 64,   /* one bucket: every name collides */
        .interval = INTERVAL,
        .budget = &m->budget,
        .clock = &fuzz_clock.clock,
    };
    m->table = cnt_table_new(&cfg);
    FUZZ_CHECK(m->table != NULL);
    cnt_map_stats ts;
    cnt_table_get_stats(m->table, &ts);
    m->used_baseline = ts.used_memory;
    cnt_limits_config lc = {
        .buckets = (flags & 2) ? 1 : 8,
        .budget = &m->budget,
        .clock = &fuzz_clock.clock,
    };
    m->limits = cnt_limits_new(&lc);
    FUZZ_CHECK(m->limits != NULL);
    cnt_limits_stats ls;
    cnt_limits_stats_get(m->limits, &ls);
    m->limits_baseline = ls.used_memory;
    cnt_grant_sink sink = { fuzz_sink, m };
    cnt_table_set_grant_sink(m->table, &sink);
    m->gc = cnt_gc_new(m->table);
    FUZZ_CHECK(m->gc != NULL);
    FUZZ_CHECK(cnt_gc_add_limits(m->gc, m->limits) == 0);
    cnt_throttle_config tc = {
        .buckets = (flags & 2) ? 1 : 8,
        .budget = &m->budget,
        .clock = &fuzz_clock.clock,
    };
    m->throttle = cnt_throttle_new(&tc);
    FUZZ_CHECK(m->throttle != NULL);
    FUZZ_CHECK(cnt_gc_add_throttle(m->gc, m->throttle) == 0);
    cnt_map_stats tms;
    cnt_map_get_stats(cnt_throttle_map(m->throttle), &tms);
    m->thr.baseline = tms.used_memory;
    m->thr.default_hard = CNT_HARD_LIMIT_UNLIMITED;
    m->stats = cnt_stats_new(1);
    FUZZ_CHECK(m->stats != NULL);
    m->groups = cnt_groups_new();
    FUZZ_CHECK(m->groups != NULL);
    for (size_t i = 0; i < sizeof fuzz_groups / sizeof fuzz_groups[0]; i++)
        FUZZ_CHECK(cnt_groups_set(m->groups,
                                  (const uint8_t *)fuzz_groups[i].name,
                                  (uint16_t)strlen(fuzz_groups[i].name),
                                  &fuzz_groups[i].g));
    cnt_wheel_init(&m->wheel, mono_ns());
    unsigned cap = (flags >> 2) & 7;
    m->env = (cnt_session_env){
        .table = m->table,
        .slot = cnt_stats_slot_get(m->stats, 0),
        .groups = m->groups,
        .max_waits = cap ? cap : 1024,
        .wheel = &m->wheel,
        .wake = fuzz_wake,
        .owner = m,
    };
    for (int c = 0; c < NCONN; c++) {
        FUZZ_CHECK(cnt_session_init(&m->conn[c].s, &m->env));
        m->conn[c].open = true;
    }
    for (int t = 0; t < 2; t++) {
        m->tenv[t] = m->env;
        m->tenv[t].limits = m->limits;
        m->tenv[t].throttr_value_size = t == 0 ? 8 : 1;
        FUZZ_CHECK(cnt_session_init(&m->tsess[t], &m->tenv[t]));
    }
    uc_init(m, flags);
}

/* Ends every connection and delivers what is still on its way (the
 * deliveries free it, telling nobody); then every counter is zero with no
 * waiter and no lease, every queued request ended exactly once, GC
 * collects everything and the table is back to its memory baseline; the
 * rate limits too once every record expired. */
static void sim_finish(sim *m)
{
    if (m->dumping)
        cnt_table_dump_cancel(m->table, &m->cursor);
    for (int c = 0; c < NCONN; c++)
        step_end(m, c, false);
    for (int t = 0; t < 2; t++)
        cnt_session_end(&m->tsess[t]);
    while (m->npending > 0)
        deliver(m, 0);
    check_all(m);
    for (size_t i = 0; i < m->nnames; i++)
        FUZZ_CHECK(shadow_sum(&m->names[i]) == 0);
    FUZZ_CHECK(m->ws.waiting == 0 && m->ws.leases == 0);
    FUZZ_CHECK(cnt_wheel_count(&m->wheel) == 0);
    FUZZ_CHECK(m->queued == m->told_granted + m->told_timeout +
                                m->cancelled + m->released_flying +
                                m->closed_waiting);
    step_clock(m, 2ull * INTERVAL * 1000, 0);
    step_gc(m);
    cnt_map_stats ts;
    cnt_table_get_stats(m->table, &ts);
    FUZZ_CHECK(ts.objects == 0);
    FUZZ_CHECK(ts.used_memory == m->used_baseline);
    uc_finish(m);
    thr_finish(m);
    lim_finish(m);
    for (size_t i = 0; i < m->nnames; i++) {
        FUZZ_CHECK(!m->names[i].exists);
        free(m->names[i].name);
    }
    cnt_wheel_destroy(&m->wheel);
    cnt_groups_free(m->groups);
    cnt_stats_free(m->stats);
    cnt_gc_free(m->gc);
    cnt_table_free(m->table);
    cnt_limits_free(m->limits);
    cnt_throttle_free(m->throttle);
}

/* Input: a flags byte (bit 0 a memory limit, shared by the counters, the
 * rate limits and the tenants; bit 1 one bucket in the table, the limits
 * and the throttle; bits
 * 2-4 the cap of waits per connection, 0 = 1024; bits 2-7 size the memory
 * limit), then steps. A step is one byte, conn = b % 4 and kind = b / 4:
 * 0-39 and 46-47 a wire request follows (the waiting ones go through the
 * session); 40-41 the pending grant numbered by the next byte is
 * delivered; 42 the clock moves by the next byte in ms; 43 the monotonic
 * clock alone moves by the next byte x 10007 ns; 44 conn's paused queue
 * listing goes on within the next byte x 4 + 1 bytes; 45 every pending
 * grant is delivered, oldest first; 48-49 the connection ends (a new one
 * takes its place); 50 a rate-limit step follows (below); 51 the server
 * stops for the connection (shutdown events, then it ends; a new one
 * takes its place); 52-55 the clock moves by the next byte x 250 ms;
 * 56-57 GC (the limits' and the tenants' sweeps included); 58-59 a
 * throttle step follows (below); 60-61 the next Acquire or wait_acquire
 * that allocates fails; 62-63 Dump and Stats.
 * A rate-limit step is four bytes o x y z, straight to the limits core on
 * the names a-d (each a TTL counter, a window and a GCRA limit): o % 16
 * the operation (11-15 are 1-5), (o >> 4) & 3 the name, o's bit 6 makes
 * the operation's first allocation fail, o's bit 7 sends operations 0-3
 * as Throttr requests through the Throttr front's session instead (8-byte
 * values; a QUERY with 1-byte values when x's bit 0 is set; TTL type z %
 * 8 for an INSERT; the record's own unit for an UPDATE of the TTL). Operations: 0 TTL insert (quota
 * x & 0x3f, or 2^64 - 1 - that with x's bit 6; ttl y, or 2^44 - 1 + y
 * with x's bit 7; unit z % 8, 6-7 invalid); 1 TTL query; 2 TTL update
 * (attribute x & 3, change (x >> 2) & 3, unit (x >> 4) & 7, value y * 256
 * + z, or 2^64 - 1 - z with x's bit 7); 3 TTL purge; 4 window check and 5
 * GCRA check (shape or rate x & 7 from win_shapes and gcra_rates, peek
 * with x's bit 7; limit or burst y & 15, or 2^32 - 1 - (y & 0x7f) with
 * y's bit 7; cost z & 7, or 2^32 - 1 - (z & 0x7f) with z's bit 7); 6
 * multi-check (x & 0x1f items, 18-31 folded to 2-15, peek with x's bit 7;
 * y and z unused; then three bytes per item, see lim_multi_step); 7 the
 * clock moves by y * 256 + x ns, us, ms (both clocks) or 0.1 s, as z & 3
 * says; 8 the limits' own sweep goes on over x buckets; 9 GC (with x's
 * bit 0 only its every-second sweep of the rate limits and the tenants);
 * 10 with the memory limit set, it becomes the memory in use + x * 4
 * bytes (x = 0: its first value).
 * A throttle step is four bytes o x y z, straight to the throttle core on
 * the tenants "a", "b", "tenant-c" and "d": o % 16 the operation (13-15
 * are 0), (o >> 4) & 3 the tenant, o's bit 6 makes the operation's first
 * allocation fail, bit 7 makes a charge unthrottled. Operations: 0 charge
 * (units x & 0x3f, 0 invalid, or 2^32 - 1 - (x & 0x7f) with x's bit 7);
 * 1 tenant_set (y & 3 its flags: bit 0 the reserve x, bit 1 the hard
 * limit z; a reserve byte is v & 0x1f, or 2^32 - 1 - (v & 0x7f) with bit
 * 7; a hard limit byte v & 0x3f, 2^32 - 2 - (v & 0x7f) with bit 7, or
 * unlimited for 0xff); 2 tenant_remove; 3 the capacity x, or 2^32 - 1 -
 * x with y's bit 0; 4 the default hard limit (x, a hard limit byte); 5 a
 * settings set applied whole (x bit 0 the capacity y, or 2^32 - 1 - y
 * with x's bit 4; x bit 1 the default hard limit z; (x >> 2) & 3
 * tenants, three bytes each: the tenant b0 % 5 (4: the empty name), a
 * reserve byte and a hard limit byte); 6 the monotonic clock moves to x
 * ns (x us with y's bit 1) before the next second starts, or after it
 * with y's bit 0; 7 the clock moves as the rate-limit step 7 has it; 8 a
 * tenant listing goes on by 1 + (x & 7) records (starting if none runs),
 * or is given up with x's bit 7; 9 GC as the rate-limit step 9 has it;
 * 10 the memory limit as the rate-limit step 10 has it; 11 a call with
 * the empty name (x & 3: charge, view, tenant_set, tenant_remove); 12 a
 * tenant-connection step (see uc_step: o's bit 4 the connection, x the
 * operation, y and z its arguments). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sim m;
    if (size < 1)
        return 0;
    long live = cnt_fake_alloc_live();
    sim_init(&m, data[0]);
    for (size_t off = 1; off < size;) {
        int c = data[off] % NCONN, kind = data[off] / NCONN;
        off++;
        if (kind < 40 || kind == 46 || kind == 47) {
            size_t used = step_request(&m, c, data + off, size - off);
            if (used == 0)
                break;
            off += used;
        } else if (kind < 42) {
            if (off < size && m.npending > 0)
                deliver(&m, data[off] % m.npending);
            off += off < size;
        } else if (kind == 42 || kind == 43) {
            if (off < size)
                step_clock(&m, kind == 42 ? data[off] : 0,
                           kind == 43 ? data[off] * 10007ull : 0);
            off += off < size;
        } else if (kind == 44) {
            if (off < size)
                continue_stream(&m, c, (size_t)data[off] * 4 + 1);
            off += off < size;
        } else if (kind == 45) {
            while (m.npending > 0)
                deliver(&m, 0);
        } else if (kind < 50) {
            step_end(&m, c, true);
        } else if (kind == 50) {
            size_t used = step_limits(&m, data + off, size - off);
            if (used == 0)
                break;
            off += used;
        } else if (kind == 51) {
            step_shutdown(&m, c);
        } else if (kind < 56) {
            if (off < size)
                step_clock(&m, (uint64_t)data[off++] * 250, 0);
        } else if (kind < 58) {
            step_gc(&m);
        } else if (kind < 60) {
            size_t used = step_throttle(&m, data + off, size - off);
            if (used == 0)
                break;
            off += used;
        } else if (kind < 62) {
            fail_alloc = true;
        } else {
            step_dump(&m);
        }
        settle_grants(&m);
        streams_update(&m);
        drain_all(&m);
        check_all(&m);
    }
    fail_alloc = false;
    sim_finish(&m);
    FUZZ_CHECK(cnt_fake_alloc_live() == live);
    return 0;
}
