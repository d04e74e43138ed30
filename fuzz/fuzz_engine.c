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
#include "engine/core/stats.h"
#include "engine/core/table.h"
#include "engine/core/ticket.h"
#include "engine/core/wheel.h"
#include "engine/server/session.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "tests/engine_fake.h"

/* Steps: wire requests, connection ends and server shutdowns, clock moves
 * (firing the timers of waits and leases), GC sweeps, failed allocations,
 * grant deliveries in any order, paused queue listings. Invariants: every
 * answer and event as the model predicts (a shutdown event for each wait
 * and grant of a stopping connection), none missing and none more; consumption = ledgers +
 * granted tickets, never above the largest admitting maximum of a current
 * holder; every queued request ends exactly once (granted or timed-out
 * event, or its owner released it or went away); lease ids count up by one
 * per grant; no event for a closed connection or a released grant; the
 * waiting figures; zero, collected and back to the memory baseline at the
 * end. */

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
    cnt_dump_cursor cursor;
    bool seen[NNAMES];          /* reported by the incremental Dump */
    bool steady[NNAMES];        /* existed since it began, never removed */
    /* Grants the sink took, oldest first, linked through their next field
     * as a worker's mailbox links them, until a step delivers them. */
    cnt_ticket *pending, *pending_tail;
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
    k->next = NULL;
    if (m->pending_tail != NULL)
        m->pending_tail->next = k;
    else
        m->pending = k;
    m->pending_tail = k;
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
    cnt_ticket **pp = &m->pending, *prev = NULL;
    for (; i > 0; i--) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    cnt_ticket *k = *pp;
    *pp = k->next;
    if (m->pending_tail == k)
        m->pending_tail = prev;
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
                         (uint32_t)shadow_sum(s));
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
    cnt_dump_cursor cur = { 0 };
    size_t live = 0;
    FUZZ_CHECK(cnt_table_dump(m->table, &cur, dump_record, &d));
    for (size_t i = 0; i < m->nnames; i++)
        live += m->names[i].exists;
    FUZZ_CHECK(d.records == live);
    cnt_table_stats ts;
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
        m->cursor = (cnt_dump_cursor){ 0 };
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

/* A GC sweep: removes exactly the deletable counters. */
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
    FUZZ_CHECK(removed == gone);
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
    cnt_fake_clock_init(&fuzz_clock, START_MS + (uint64_t)flags * 977);
    cnt_fake_alloc_fail_at(0, 0);
    fail_alloc = false;
    m->memory_limited = flags & 1;
    cnt_table_config cfg = {
        .buckets = (flags & 2) ? 1 : 64,   /* one bucket: every name collides */
        .interval = INTERVAL,
        .memory_limit = m->memory_limited ? 4096 + (flags >> 2) * 64 : 0,
        .clock = &fuzz_clock.clock,
    };
    m->table = cnt_table_new(&cfg);
    FUZZ_CHECK(m->table != NULL);
    cnt_table_stats ts;
    cnt_table_get_stats(m->table, &ts);
    m->used_baseline = ts.used_memory;
    cnt_grant_sink sink = { fuzz_sink, m };
    cnt_table_set_grant_sink(m->table, &sink);
    m->gc = cnt_gc_new(m->table);
    FUZZ_CHECK(m->gc != NULL);
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
}

/* Ends every connection and delivers what is still on its way (the
 * deliveries free it, telling nobody); then every counter is zero with no
 * waiter and no lease, every queued request ended exactly once, GC
 * collects everything and the table is back to its memory baseline. */
static void sim_finish(sim *m)
{
    if (m->dumping)
        cnt_table_dump_cancel(m->table, &m->cursor);
    for (int c = 0; c < NCONN; c++)
        step_end(m, c, false);
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
    cnt_table_stats ts;
    cnt_table_get_stats(m->table, &ts);
    FUZZ_CHECK(ts.objects == 0);
    FUZZ_CHECK(ts.used_memory == m->used_baseline);
    for (size_t i = 0; i < m->nnames; i++) {
        FUZZ_CHECK(!m->names[i].exists);
        free(m->names[i].name);
    }
    cnt_wheel_destroy(&m->wheel);
    cnt_groups_free(m->groups);
    cnt_stats_free(m->stats);
    cnt_gc_free(m->gc);
    cnt_table_free(m->table);
}

/* Input: a flags byte (bit 0 a memory limit, bit 1 one bucket, bits 2-4
 * the cap of waits per connection, 0 = 1024; bits 2-7 size the memory
 * limit), then steps. A step is one byte, conn = b % 4 and kind = b / 4:
 * 0-39 and 46-47 a wire request follows (the waiting ones go through the
 * session); 40-41 the pending grant numbered by the next byte is
 * delivered; 42 the clock moves by the next byte in ms; 43 the monotonic
 * clock alone moves by the next byte x 10007 ns; 44 conn's paused queue
 * listing goes on within the next byte x 4 + 1 bytes; 45 every pending
 * grant is delivered, oldest first; 48-50 the connection ends (a new one
 * takes its place); 51 the server stops for the connection (shutdown
 * events, then it ends; a new one takes its place); 52-55 the clock moves by the next byte x 250 ms;
 * 56-59 GC; 60-61 the next Acquire or wait_acquire that allocates fails;
 * 62-63 Dump and Stats. */
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
        } else if (kind < 51) {
            step_end(&m, c, true);
        } else if (kind == 51) {
            step_shutdown(&m, c);
        } else if (kind < 56) {
            if (off < size)
                step_clock(&m, (uint64_t)data[off++] * 250, 0);
        } else if (kind < 60) {
            step_gc(&m);
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
