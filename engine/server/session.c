/* session.c: answers a client's requests without touching a socket: decodes
 * a batch of buffered requests, prefetches the table memory they will use,
 * runs each through the handler its opcode's row names, and writes the
 * answers, Dump records and Stats into the output buffer in order. */
#include "config.h"

#include "engine/server/session_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/response.h"

/* Requests decoded (and their table memory prefetched) ahead of answering:
 * with many counters each request costs a few cache misses, and issued
 * together for a batch they overlap instead of queueing. */
#define CNT_SESSION_AHEAD 32

/* What a binary request of one opcode needs before its handler runs: */
enum session_needs {
    SESSION_UNANSWERED = 0,     /* no handler: answered 0x81 */
    SESSION_NEEDS_NOTHING,      /* fn(s, req) */
    SESSION_NEEDS_PLACE,        /* at(s, req, place): the place of the
                                 * counter it names, computed and
                                 * prefetched ahead */
    SESSION_NEEDS_LIMITS,       /* fn(s, req), when the server keeps rate
                                 * limits (else 0x81) */
    SESSION_NEEDS_THROTTLE      /* fn(s, req), when the server throttles
                                 * tenants (else 0x81) */
};

/* What the server does with one opcode: one handler, and what it needs. */
typedef struct session_handler {
    uint8_t needs;              /* an enum session_needs */
    union {
        void (*fn)(cnt_session *s, const cnt_request *req);
        void (*at)(cnt_session *s, const cnt_request *req,
                   const cnt_table_place *place);
    };
} session_handler;

/* Whether a valid request names a semaphore counter whose place is worth
 * computing and prefetching ahead: its handler needs it, and the decoder
 * leaves the name empty for opcodes whose row has none. */
static inline bool session_names_counter(const session_handler *h,
                                         const cnt_request *req)
{
    return h->needs == SESSION_NEEDS_PLACE && req->name_len != 0;
}

/* Whether s may run req: an opcode whose row says privileged (the decoder
 * copies that into the request) needs a connection that authenticated
 * against a configured secret. */
static inline bool session_permitted(const cnt_session *s,
                                     const cnt_request *req)
{
    return !req->privileged || s->privileged;
}

/* Calls h's handler for req, or answers Not permitted when req needs a
 * privilege s lacks; false when the opcode has no handler on this server. */
static inline bool session_call(cnt_session *s, const session_handler *h,
                                const cnt_request *req,
                                const cnt_table_place *place)
{
    switch (h->needs) {
    case SESSION_NEEDS_NOTHING:
    case SESSION_NEEDS_PLACE:
        break;
    case SESSION_NEEDS_LIMITS:
        if (s->env->limits == NULL)
            return false;
        break;
    case SESSION_NEEDS_THROTTLE:
        if (s->env->throttle == NULL)
            return false;
        break;
    default:
        return false;
    }
    if (!session_permitted(s, req))
        cnt_session_put_error(s, req->opcode, CNT_STATUS_NOT_PERMITTED,
                              req->opaque);
    else if (h->needs == SESSION_NEEDS_PLACE)
        h->at(s, req, place);
    else
        h->fn(s, req);
    return true;
}

static void session_release_held(cnt_session *s);

/* Marks the session failed: memory ran out for its output. */
static void session_out_of_memory(cnt_session *s)
{
    s->failed = true;
}

/* Appends an error answer with the reference's text. */
static void session_put_error(cnt_session *s, uint8_t opcode,
                              cnt_status status, uint32_t opaque)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_ERROR_RESPONSE_MAX);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_error(p, opcode, status, opaque));
}

/* Appends a status-0 answer with an empty body. */
static void session_put_empty(cnt_session *s, uint8_t opcode,
                              uint32_t opaque)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_empty(p, opcode, opaque));
}

/* Room for n bytes of answer; see session_int.h. */
uint8_t *cnt_session_reserve(cnt_session *s, size_t n)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, n);
    if (p == NULL)
        session_out_of_memory(s);
    return p;
}

/* Appends an error answer; see session_int.h. */
void cnt_session_put_error(cnt_session *s, uint8_t opcode, cnt_status status,
                           uint32_t opaque)
{
    session_put_error(s, opcode, status, opaque);
}

/* Appends an empty status-0 answer; see session_int.h. */
void cnt_session_put_empty(cnt_session *s, uint8_t opcode, uint32_t opaque)
{
    session_put_empty(s, opcode, opaque);
}

/* Appends a status-0 answer whose body is one u32; see session_int.h. */
void cnt_session_put_u32(cnt_session *s, uint8_t opcode, uint32_t opaque,
                         uint32_t value)
{
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE + 4);
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_u32(p, opcode, opaque, value));
}

/* Noop: an empty answer. */
static void session_noop(cnt_session *s, const cnt_request *req)
{
    session_put_empty(s, req->opcode, req->opaque);
}

/* Get: the counter's current consumption, or Not found. */
static void session_get(cnt_session *s, const cnt_request *req,
                        const cnt_table_place *place)
{
    uint32_t v = 0;
    cnt_status st = cnt_table_get_at(s->env->table, place, req->name,
                                     req->name_len, &v);
    if (st == CNT_STATUS_OK)
        cnt_session_put_u32(s, req->opcode, req->opaque, v);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Acquire: takes resources into the ledger; answers what it took. */
static void session_acquire(cnt_session *s, const cnt_request *req,
                            const cnt_table_place *place)
{
    cnt_status st = cnt_table_acquire_at(s->env->table, &s->holdings, place,
                                         req->name, req->name_len,
                                         req->resources, req->maximum);
    if (st == CNT_STATUS_OK)
        cnt_session_put_u32(s, req->opcode, req->opaque, req->resources);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Release: gives back resources this session's ledger holds. */
static void session_release(cnt_session *s, const cnt_request *req,
                            const cnt_table_place *place)
{
    cnt_status st = cnt_table_release_at(s->env->table, &s->holdings, place,
                                         req->name, req->name_len,
                                         req->resources);
    if (st == CNT_STATUS_OK)
        session_put_empty(s, req->opcode, req->opaque);
    else
        session_put_error(s, req->opcode, st, req->opaque);
}

/* Stats item callback: appends one name/value pair. */
static void session_stats_item(void *ctx, const char *name, const char *value)
{
    cnt_session *s = ctx;
    if (s->failed)
        return;
    uint8_t *p = cnt_outbuf_reserve(&s->out,
                                    cnt_encode_stats_pair(NULL, name, value));
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(&s->out, cnt_encode_stats_pair(p, name, value));
}

/* Stats: every item as a pair. The header goes in last: the figures change
 * while we read them, so the body length is only known afterwards. */
static void session_stats(cnt_session *s, const cnt_request *req)
{
    if (cnt_outbuf_reserve(&s->out, CNT_HEADER_SIZE) == NULL) {
        session_out_of_memory(s);
        return;
    }
    /* Counted from the first unsent byte: growing the buffer may move it
     * and drop sent bytes, but keeps this offset. */
    size_t at = cnt_outbuf_pending(&s->out);
    cnt_outbuf_commit(&s->out, CNT_HEADER_SIZE);
    cnt_stats_sources src = { .stats = s->env->stats,
                              .table = s->env->table,
                              .limits = s->env->limits,
                              .throttle = s->env->throttle,
                              .gc = s->env->gc };
    cnt_stats_report(&src, session_stats_item, s);
    if (s->failed)
        return;
    size_t body = cnt_outbuf_pending(&s->out) - at - CNT_HEADER_SIZE;
    cnt_encode_response_header(cnt_outbuf_data(&s->out) + at, CNT_OP_STATS,
                               CNT_STATUS_OK, (uint32_t)body, req->opaque);
}

/* Starts a streamed answer (Dump or queue listing) from the beginning;
 * session_dump_step writes it as output drains. */
static void session_stream_start(cnt_session *s, const cnt_request *req)
{
    s->dumping = true;
    s->dump_opcode = req->opcode;
    s->dump = (cnt_map_cursor){0};
    s->queues_stripe = 0;
    s->dump_opaque = req->opaque;
}

/* Stops a streamed answer before its end (a Dump's paused cursor is
 * unregistered; a queue listing holds nothing). */
static void session_stream_stop(cnt_session *s)
{
    if (s->dumping && s->dump_opcode == CNT_OP_DUMP)
        cnt_table_dump_cancel(s->env->table, &s->dump);
    if (s->dumping && s->dump_opcode == CNT_OP_TENANT_LIST)
        cnt_throttle_list_cancel(s->env->throttle, &s->dump);
    if (s->survey != NULL)
        cnt_survey_orphan(s->survey);
    if (s->survey_queued && s->env->survey_cancel != NULL)
        s->env->survey_cancel(s);
    s->survey_queued = false;
    s->survey = NULL;
    s->surveying = false;
    s->dumping = false;
}

/* Dump: starts the series. */
static void session_dump(cnt_session *s, const cnt_request *req)
{
    session_stream_start(s, req);
}

/* ---- Events ---- */

/* Where an event goes: the output, or the held events while a Dump or a
 * queue listing streams (its records must not be split by an event).
 * NULL when memory is short. */
static cnt_outbuf *session_event_buffer(cnt_session *s)
{
    if (!s->dumping)
        return &s->out;
    if (s->held == NULL) {
        s->held = malloc(sizeof(*s->held));
        if (s->held == NULL || !cnt_outbuf_init(s->held, 256)) {
            free(s->held);
            s->held = NULL;
        }
    }
    return s->held;
}

/* The binary front's event writer (a cnt_session_event_fn): a packet
 * with magic 0x92 about ticket k. */
static void session_binary_event(cnt_session *s, uint8_t code,
                                 const cnt_ticket *k, uint64_t lease_id,
                                 uint32_t value)
{
    cnt_outbuf *o = session_event_buffer(s);
    uint8_t *p = o ? cnt_outbuf_reserve(o, CNT_EVENT_SIZE(k->name_len))
                   : NULL;
    if (p == NULL) {
        session_out_of_memory(s);
        return;
    }
    cnt_outbuf_commit(o, cnt_encode_event(p, code, k->opaque, lease_id,
                                          value, k->name, k->name_len));
}

/* Queues: starts the listing. */
static void session_queues(cnt_session *s, const cnt_request *req)
{
    session_stream_start(s, req);
}

/* A survey of this session's own wheel alone (a session without the
 * worker's hook: tests, a single-threaded front). */
static cnt_survey *session_survey_alone(cnt_session *s, uint32_t want)
{
    cnt_survey *sv = cnt_survey_new(1, 0, want, s);
    if (sv == NULL)
        return NULL;
    cnt_lease_top part;
    cnt_lease_top_init(&part, want);
    if (s->env->wheel != NULL)
        cnt_lease_top_collect(&part, s->env->wheel, CNT_LEASE_WALK_MAX);
    cnt_survey_answer(sv, &part);
    return sv;
}

/* Starts a survey of the want nearest leases; see session.h. */
cnt_survey *cnt_session_survey_start(cnt_session *s, uint32_t want)
{
    return s->env->survey_start != NULL ? s->env->survey_start(s, want)
                                        : session_survey_alone(s, want);
}

/* Lease_list: asks every worker for its nearest leases, then streams the
 * merged answer like Queues once all answered; until then later requests
 * wait unread. */
static void session_lease_list(cnt_session *s, const cnt_request *req)
{
    uint32_t want = req->count < CNT_LEASE_LIST_MAX ? req->count
                                                   : CNT_LEASE_LIST_MAX;
    cnt_survey *sv = cnt_session_survey_start(s, want);
    if (sv == NULL && s->survey_queued) {
        /* Waits for a slot: as while surveying, nothing more is read. */
        session_stream_start(s, req);
        s->survey = NULL;
        s->lease_next = 0;
        s->surveying = true;
        return;
    }
    if (sv == NULL) {
        session_put_error(s, req->opcode, CNT_STATUS_OUT_OF_MEMORY,
                          req->opaque);
        return;
    }
    session_stream_start(s, req);
    s->survey = sv;
    s->lease_next = 0;
    s->surveying = !cnt_survey_ready(sv);
}

/* The survey is ready; see session.h. */
void cnt_session_survey_done(cnt_session *s)
{
    s->surveying = false;
}

/* A queued listing's survey started; see session.h. */
void cnt_session_survey_started(cnt_session *s, cnt_survey *sv)
{
    s->survey_queued = false;
    if (sv == NULL) {
        s->surveying = false;
        /* A Lease_list answers 0x82; another asker (the live page's feed)
         * goes on without the leases. */
        if (s->dumping && s->dump_opcode == CNT_OP_LEASE_LIST) {
            s->dumping = false;
            session_put_error(s, CNT_OP_LEASE_LIST,
                              CNT_STATUS_OUT_OF_MEMORY, s->dump_opaque);
            session_release_held(s);
        }
        return;
    }
    s->survey = sv;
    s->lease_next = 0;
    s->surveying = !cnt_survey_ready(sv);
}

/* Tenant_list: every tenant record, streamed like a Dump. */
static void session_tenant_list(cnt_session *s, const cnt_request *req)
{
    session_stream_start(s, req);
}

/* Ends every ticket with a shutdown event; a stream in progress is cut
 * short (its held events go out first). */
void cnt_session_shutdown(cnt_session *s)
{
    session_stream_stop(s);
    session_release_held(s);
    cnt_session_end_tickets(s, true);
}

/* The cost class of each opcode a connection's tenant pays for: read
 * unless listed (the privileged ones are admin whatever this says);
 * authenticating is free, since it is what picks the tenant. */
#define COST_FREE 0xffu
static const uint8_t session_cost_class[256] = {
    [CNT_OP_AUTH] = COST_FREE,
    [CNT_OP_AUTH_USER] = COST_FREE,
    [CNT_OP_ACQUIRE] = CNT_COST_ACQUIRE,
    [CNT_OP_RELEASE] = CNT_COST_ACQUIRE,
    [CNT_OP_RENEW] = CNT_COST_ACQUIRE,
    [CNT_OP_WAIT_RELEASE] = CNT_COST_ACQUIRE,
    [CNT_OP_WAIT_ACQUIRE] = CNT_COST_WAIT,
    [CNT_OP_TTL_INSERT] = CNT_COST_LIMIT,
    [CNT_OP_TTL_UPDATE] = CNT_COST_LIMIT,
    [CNT_OP_TTL_PURGE] = CNT_COST_LIMIT,
    [CNT_OP_WINDOW_CHECK] = CNT_COST_LIMIT,
    [CNT_OP_GCRA_CHECK] = CNT_COST_LIMIT,
    [CNT_OP_MULTI_CHECK] = CNT_COST_LIMIT,
    [CNT_OP_THROTTLE] = CNT_COST_LIMIT,
};

/* What session_admit decided about a request. */
enum session_admission {
    ADMIT_RUN,          /* paid (or free): answer it */
    ADMIT_ANSWERED,     /* answered already (Throttled, or out of memory):
                         * consumed, not run */
    ADMIT_PAUSED        /* the tenant is over its share: not consumed, the
                         * session paused (s->pause_ns) */
};

/* Charges cls's cost to the session's tenant through the throttle, the
 * same charge as the Throttle opcode's: *a says how it went. False when
 * the charge itself failed (out of memory: *st). */
static bool session_charge(cnt_session *s, unsigned cls,
                           cnt_throttle_answer *a, cnt_status *st)
{
    const cnt_session_env *env = s->env;

    a->state = CNT_TSTATE_ALLOWED;
    *st = CNT_STATUS_OK;
    if (env->default_tenant == NULL || env->throttle == NULL ||
        cls >= CNT_COST_CLASSES || env->tenant_cost[cls] == 0)
        return true;
    *st = cnt_throttle_charge(env->throttle, s->tenant, s->tenant_len,
                              env->tenant_cost[cls], s->unthrottled, a);
    return *st == CNT_STATUS_OK;
}

/* Whether the session's requests cost its tenant anything: tenants on
 * connections are on (a default tenant) and there is a throttle. */
static inline bool session_pays(const cnt_session *s)
{
    return s->env->default_tenant != NULL && s->env->throttle != NULL;
}

/* Makes req's connection pay for it: runs, is answered Throttled (the
 * non-blocking mode, or Out of memory), or pauses the session. */
static enum session_admission session_admit(cnt_session *s,
                                            const cnt_request *req)
{
    unsigned cls = req->privileged ? CNT_COST_ADMIN
                                   : session_cost_class[req->opcode];
    cnt_throttle_answer a;
    cnt_status st;

    if (s->prepaid > 0 && cls != COST_FREE) {
        s->prepaid--;
        return ADMIT_RUN;
    }
    if (!session_charge(s, cls, &a, &st)) {
        cnt_stats_count_command(s->env->slot, req->opcode);
        session_put_error(s, req->opcode, st, req->opaque);
        return ADMIT_ANSWERED;
    }
    if (a.state == CNT_TSTATE_ALLOWED)
        return ADMIT_RUN;
    /* A cost no second could pay (above the hard limit, or above the
     * reserve and the whole pool) is answered at once in either mode:
     * pausing for it would stop the connection for good. */
    if (!s->nonblocking &&
        cnt_throttle_can_pass(s->env->throttle, s->tenant, s->tenant_len,
                              s->env->tenant_cost[cls])) {
        s->pause_ns = a.retry_after_ns;
        return ADMIT_PAUSED;
    }
    cnt_stats_count_command(s->env->slot, req->opcode);
    uint8_t *p = cnt_session_reserve(s, CNT_THROTTLED_RESPONSE_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_throttled(p, req->opcode, req->opaque,
                                               a.retry_after_ns, a.reason));
    return ADMIT_ANSWERED;
}

/* Charges a request of another front; see session.h. */
bool cnt_session_pay(cnt_session *s, unsigned cls, bool ran)
{
    cnt_throttle_answer a;
    cnt_status st;

    if (!session_charge(s, cls, &a, &st)) {
        s->failed = true;
        return false;
    }
    if (a.state == CNT_TSTATE_ALLOWED)
        return true;
    /* What ran is used whatever the share said: counted the way an
     * unthrottled charge is. */
    if (ran &&
        cnt_throttle_charge(s->env->throttle, s->tenant, s->tenant_len,
                            s->env->tenant_cost[cls], true, &a) !=
            CNT_STATUS_OK)
        s->failed = true;
    s->pause_ns = a.retry_after_ns > 0 ? a.retry_after_ns : 1;
    return false;
}

/* The handler table: one row per opcode the server answers. An opcode
 * without a row is answered 0x81 (the decoder refuses those already). */
static const session_handler session_handlers[256] = {
#define PLAIN(f) {.needs = SESSION_NEEDS_NOTHING, .fn = (f)}
#define AT(f) {.needs = SESSION_NEEDS_PLACE, .at = (f)}
#define LIMITS(f) {.needs = SESSION_NEEDS_LIMITS, .fn = (f)}
#define THROTTLE(f) {.needs = SESSION_NEEDS_THROTTLE, .fn = (f)}
    [CNT_OP_NOOP] = PLAIN(session_noop),
    [CNT_OP_GET] = AT(session_get),
    [CNT_OP_ACQUIRE] = AT(session_acquire),
    [CNT_OP_RELEASE] = AT(session_release),
    [CNT_OP_STATS] = PLAIN(session_stats),
    [CNT_OP_DUMP] = PLAIN(session_dump),
    [CNT_OP_WAIT_ACQUIRE] = AT(cnt_session_wait_acquire_op),
    [CNT_OP_RENEW] = PLAIN(cnt_session_renew_op),
    [CNT_OP_WAIT_RELEASE] = PLAIN(cnt_session_wait_release_op),
    [CNT_OP_QUEUES] = PLAIN(session_queues),
    [CNT_OP_TTL_INSERT] = LIMITS(cnt_session_ttl_insert),
    [CNT_OP_TTL_QUERY] = LIMITS(cnt_session_ttl_query),
    [CNT_OP_TTL_UPDATE] = LIMITS(cnt_session_ttl_update),
    [CNT_OP_TTL_PURGE] = LIMITS(cnt_session_ttl_purge),
    [CNT_OP_WINDOW_CHECK] = LIMITS(cnt_session_check),
    [CNT_OP_GCRA_CHECK] = LIMITS(cnt_session_check),
    [CNT_OP_MULTI_CHECK] = LIMITS(cnt_session_multi_check),
    [CNT_OP_AUTH] = THROTTLE(cnt_session_auth),
    [CNT_OP_THROTTLE] = THROTTLE(cnt_session_throttle),
    [CNT_OP_TENANT_SHOW] = THROTTLE(cnt_session_tenant_show),
    [CNT_OP_TENANT_LIST] = THROTTLE(session_tenant_list),
    [CNT_OP_NODE_SHOW] = THROTTLE(cnt_session_node_show),
    [CNT_OP_TENANT_SET] = THROTTLE(cnt_session_tenant_set),
    [CNT_OP_TENANT_REMOVE] = THROTTLE(cnt_session_tenant_remove),
    [CNT_OP_NODE_SET] = THROTTLE(cnt_session_node_set),
    [CNT_OP_UNTHROTTLE] = THROTTLE(cnt_session_unthrottle),
    [CNT_OP_RELOAD] = THROTTLE(cnt_session_reload),
    [CNT_OP_TENANT_SET_JSON] = THROTTLE(cnt_session_tenant_set_json),
    [CNT_OP_NODE_SET_JSON] = THROTTLE(cnt_session_node_set_json),
    [CNT_OP_AUTH_USER] = THROTTLE(cnt_session_auth_user),
    [CNT_OP_LEASE_LIST] = PLAIN(session_lease_list),
    [CNT_OP_BUSIEST] = LIMITS(cnt_session_busiest),
#undef PLAIN
#undef AT
#undef LIMITS
#undef THROTTLE
};

/* Dump callback: appends one record; asks to stop once the output is
 * full (watermark or turn budget). */
static bool session_dump_record(void *ctx, const uint8_t *name, uint16_t len,
                                uint32_t current, uint32_t max_in_window)
{
    cnt_session *s = ctx;
    if (s->failed)
        return false;
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_DUMP_RECORD_SIZE(len));
    if (p == NULL) {
        session_out_of_memory(s);
        return false;
    }
    cnt_outbuf_commit(&s->out,
                      cnt_encode_dump_record(p, s->dump_opaque, current,
                                             max_in_window, name, len));
    return !cnt_outbuf_full(&s->out);
}

/* Queue listing callback: appends one record; asks to stop once the
 * output is full. */
static bool session_queues_record(void *ctx, const uint8_t *name,
                                  uint16_t len, uint32_t consumption,
                                  uint32_t waiting)
{
    cnt_session *s = ctx;
    if (s->failed)
        return false;
    uint8_t *p = cnt_outbuf_reserve(&s->out, CNT_QUEUES_RECORD_SIZE(len));
    if (p == NULL) {
        session_out_of_memory(s);
        return false;
    }
    cnt_outbuf_commit(&s->out,
                      cnt_encode_queues_record(p, s->dump_opaque,
                                               consumption, waiting, name,
                                               len));
    return !cnt_outbuf_full(&s->out);
}

/* Writes the merged survey's records from s->lease_next until the output
 * is full; true when every record is out. A survey that could not copy a
 * name answers 0x82 instead, before any record. */
static bool session_lease_records(cnt_session *s)
{
    cnt_survey *sv = s->survey;
    const cnt_lease_top *top = &sv->top;    /* complete: nobody writes */
    uint64_t now_ns = cnt_clock_mono_ns(cnt_table_clock(s->env->table));

    if (top->failed)
        return true;
    while (s->lease_next < top->count) {
        if (cnt_outbuf_full(&s->out))
            return false;
        const cnt_lease_entry *e = &top->e[s->lease_next];
        uint64_t at_ns = e->deadline_ms * UINT64_C(1000000);
        /* Whole ms, rounded down: never more than the lease granted. */
        uint64_t left = at_ns > now_ns ? (at_ns - now_ns) / 1000000u : 0;
        uint8_t *p = cnt_outbuf_reserve(&s->out,
                                        CNT_LEASE_RECORD_SIZE(e->name_len));
        if (p == NULL) {
            session_out_of_memory(s);
            return false;
        }
        cnt_outbuf_commit(&s->out,
                          cnt_encode_lease_record(
                              p, s->dump_opaque,
                              left > UINT32_MAX ? UINT32_MAX : (uint32_t)left,
                              e->lease_id, e->resources, e->name,
                              e->name_len));
        s->lease_next++;
    }
    return true;
}

/* Moves the events held during a stream behind its end marker. */
static void session_release_held(cnt_session *s)
{
    cnt_outbuf *h = s->held;

    s->held = NULL;
    if (h == NULL)
        return;
    size_t n = cnt_outbuf_pending(h);
    uint8_t *p = n ? cnt_outbuf_reserve(&s->out, n) : NULL;
    if (n > 0 && p == NULL)
        session_out_of_memory(s);
    else if (n > 0) {
        memcpy(p, cnt_outbuf_data(h), n);
        cnt_outbuf_commit(&s->out, n);
    }
    cnt_outbuf_destroy(h);
    free(h);
}

/* Emits Dump (or queue listing) records until the output is full or the
 * table ends (then the end marker, and the stream is over). Returns true
 * when it stopped for neither: it looked at its share of (empty) buckets,
 * and the turn should end so that the worker's other connections get
 * theirs. */
static bool session_dump_step(cnt_session *s)
{
    bool done;

    if (s->dump_opcode == CNT_OP_QUEUES)
        done = cnt_table_queues(s->env->table, &s->queues_stripe,
                                session_queues_record, s);
    else if (s->dump_opcode == CNT_OP_LEASE_LIST)
        done = session_lease_records(s);
    else if (s->dump_opcode == CNT_OP_TENANT_LIST)
        done = cnt_throttle_list(s->env->throttle, &s->dump,
                                 cnt_session_tenant_record, s);
    else
        done = cnt_table_dump(s->env->table, &s->dump, session_dump_record,
                              s);
    if (s->failed)
        return false;
    if (!done)
        return !cnt_outbuf_full(&s->out);
    if (s->dump_opcode == CNT_OP_LEASE_LIST && s->survey->top.failed)
        session_put_error(s, CNT_OP_LEASE_LIST, CNT_STATUS_OUT_OF_MEMORY,
                          s->dump_opaque);
    else
        session_put_empty(s, s->dump_opcode, s->dump_opaque);
    s->dumping = false;
    if (s->survey != NULL)
        cnt_survey_orphan(s->survey);
    s->survey = NULL;
    session_release_held(s);
    return false;
}

/* Answers one request the decoder returned as CNT_DECODE_OK or
 * CNT_DECODE_ERROR (counting it in Stats); the caller deals with its bytes.
 * A Dump it starts continues in cnt_session_feed. */
static void session_handle(cnt_session *s, cnt_decode_result r,
                           const cnt_request *req)
{
    /* Stats counts what the reference counts: requests with the request
     * magic, valid or not, under their opcode. */
    if (req->magic == CNT_MAGIC_REQUEST)
        cnt_stats_count_command(s->env->slot, req->opcode);
    const session_handler *h = &session_handlers[req->opcode];
    if (r != CNT_DECODE_OK) {
        session_put_error(s, req->opcode, req->status, req->opaque);
        return;
    }
    cnt_table_place place = {0};
    if (session_names_counter(h, req))
        cnt_table_place_of(s->env->table, req->name, req->name_len, &place);
    if (!session_call(s, h, req, &place))
        session_put_error(s, req->opcode, CNT_STATUS_UNKNOWN_COMMAND,
                          req->opaque);
}

/* A request decoded ahead: its fields, its row, and where its counter
 * lives when it names one. */
typedef struct session_ahead {
    cnt_request req;
    const session_handler *h;
    cnt_table_place place;
} session_ahead;

/* Pays for the n requests decoded ahead with one charge when they fit
 * the tenant's share together: a charge takes the node's lock, which
 * every worker shares, so one per batch instead of one per request keeps
 * them from queueing on it. What it paid for is s->prepaid, spent by
 * session_admit request by request (those the output had no room for
 * come first in the next feed, still paid). When the batch does not fit,
 * or it logs in (which may change the tenant), each request pays alone,
 * so the share is used to its last unit. */
static void session_prepay(cnt_session *s, const session_ahead *ahead,
                           size_t n)
{
    const cnt_session_env *env = s->env;
    uint64_t units = 0;
    uint32_t paying = 0;

    if (env->default_tenant == NULL || env->throttle == NULL ||
        s->prepaid > 0 || n < 2)
        return;
    for (size_t k = 0; k < n; k++) {
        const cnt_request *req = &ahead[k].req;
        unsigned cls = req->privileged ? CNT_COST_ADMIN
                                       : session_cost_class[req->opcode];
        if (cls == COST_FREE)
            return;
        units += env->tenant_cost[cls];
        paying++;
    }
    if (units == 0 || units > UINT32_MAX)
        return;
    cnt_throttle_answer a;
    if (cnt_throttle_charge(env->throttle, s->tenant, s->tenant_len,
                            (uint32_t)units, s->unthrottled, &a) ==
            CNT_STATUS_OK &&
        a.state == CNT_TSTATE_ALLOWED)
        s->prepaid = paying;
}

/* Decodes up to CNT_SESSION_AHEAD whole requests from the front of in,
 * starts loading the table memory each will touch (first every bucket slot
 * and stripe lock, then every bucket's first counter), then answers them
 * in order while the output has room. What stops the decoding (an
 * incomplete request, lost framing, a refused request or one whose unneeded
 * body is not all in) is dealt with last, from the same decoding. Returns
 * the bytes consumed. */
static size_t session_batch(cnt_session *s, const uint8_t *in, size_t len)
{
    session_ahead ahead[CNT_SESSION_AHEAD];
    cnt_table *t = s->env->table;
    cnt_decode_result r = CNT_DECODE_OK;
    size_t n = 0, off = 0;

    while (n < CNT_SESSION_AHEAD && off < len) {
        session_ahead *a = &ahead[n];
        r = cnt_request_decode(in + off, len - off, &a->req);
        if (r != CNT_DECODE_OK || a->req.size > len - off)
            break;
        a->h = &session_handlers[a->req.opcode];
        if (session_names_counter(a->h, &a->req)) {
            cnt_table_place_of(t, a->req.name, a->req.name_len, &a->place);
            cnt_table_prefetch(t, &a->place, false);
        }
        off += (size_t)a->req.size;
        n++;
    }
    /* ahead[n] holds the decoding that stopped the loop, if one did. */
    bool stopped = n < CNT_SESSION_AHEAD && off < len;
    session_prepay(s, ahead, n);
    if (n > 1)
        for (size_t k = 0; k < n; k++)
            if (session_names_counter(ahead[k].h, &ahead[k].req))
                cnt_table_prefetch(t, &ahead[k].place, true);

    size_t pos = 0;
    bool pays = session_pays(s);
    for (size_t k = 0; k < n; k++) {
        const session_ahead *a = &ahead[k];
        if (k > 0 && (s->failed || cnt_outbuf_full(&s->out)))
            return pos;
        enum session_admission adm = pays ? session_admit(s, &a->req)
                                          : ADMIT_RUN;
        if (adm == ADMIT_PAUSED)
            return pos;
        if (adm == ADMIT_RUN) {
            cnt_stats_count_command(s->env->slot, a->req.opcode);
            if (!session_call(s, a->h, &a->req, &a->place))
                session_put_error(s, a->req.opcode,
                                  CNT_STATUS_UNKNOWN_COMMAND, a->req.opaque);
        }
        pos += (size_t)a->req.size;
        /* A Dump's records come before the next answer; a session that is
         * closing (too many failed authentications) answers nothing more,
         * not even what it had decoded ahead. */
        if (s->dumping || s->closing)
            return pos;
    }
    if (!stopped || (n > 0 && (s->failed || cnt_outbuf_full(&s->out))))
        return pos;

    const cnt_request *req = &ahead[n].req;
    if (r == CNT_DECODE_NEED_MORE) {
        s->need = (size_t)req->size;
        return pos;
    }
    if (r == CNT_DECODE_CLOSE) {
        s->closing = true;
        return pos;
    }
    enum session_admission adm = pays ? session_admit(s, req) : ADMIT_RUN;
    if (adm == ADMIT_PAUSED)
        return pos;
    if (adm == ADMIT_RUN)
        session_handle(s, r, req);
    /* Bodies not needed (Noop/Stats/Dump, refused requests) may be longer
     * than what is buffered: the rest is skipped as it arrives, never
     * stored. */
    size_t avail = len - pos;
    size_t have = req->size < avail ? (size_t)req->size : avail;
    s->skip = req->size - have;
    return pos + have;
}

/* Answers whole requests from in (continuing a Dump first) until the
 * input is used up or a stop reason is set; returns the bytes consumed. */
size_t cnt_session_feed(cnt_session *s, const uint8_t *in, size_t len)
{
    size_t pos = 0;
    s->more = false;
    s->need = 0;
    s->pause_ns = 0;
    while (!s->failed && !s->closing && s->need == 0 && s->pause_ns == 0) {
        if (cnt_outbuf_full(&s->out)) {
            s->more = s->dumping || pos < len;
            break;
        }
        /* A lease listing waiting for other workers: nothing to write and
         * nothing to read until its survey comes home. */
        if (s->surveying)
            break;
        if (s->dumping) {
            if (session_dump_step(s)) {
                s->more = true;
                break;
            }
            continue;       /* the test above ends the round */
        }
        if (s->skip > 0) {
            size_t d = s->skip < len - pos ? (size_t)s->skip : len - pos;
            pos += d;
            s->skip -= d;
            if (s->skip > 0)
                break;
            continue;
        }
        if (pos == len)
            break;
        pos += session_batch(s, in + pos, len - pos);
        /* Input used up and no Dump to go on with: done, without another
         * round of checks (the common end of a feed). */
        if (pos == len && !s->dumping)
            break;
    }
    return pos;
}

/* Prepares a session; false when memory is short. */
bool cnt_session_init(cnt_session *s, const cnt_session_env *env)
{
    memset(s, 0, sizeof(*s));
    s->env = env;
    s->event = session_binary_event;
    s->tenant = env->default_tenant;
    s->tenant_len = env->default_tenant_len;
    strcpy(s->peer, "unknown");
    if (!cnt_outbuf_init(&s->out, CNT_OUTBUF_INITIAL))
        return false;
    cnt_holdings_init(&s->holdings);
    cnt_tickets_init(&s->tickets);
    return true;
}

/* Records the client's address and port; see session.h. */
void cnt_session_set_peer(cnt_session *s, const char *addr, uint16_t port)
{
    snprintf(s->peer_addr, sizeof(s->peer_addr), "%.*s",
             (int)(sizeof(s->peer_addr) - 1), addr);
    bool v6 = strchr(s->peer_addr, ':') != NULL;
    snprintf(s->peer, sizeof(s->peer), v6 ? "[%s]:%u" : "%s:%u",
             s->peer_addr, (unsigned)port);
}

/* Ends the session: its Dump, its tickets, its holdings, its memory. */
void cnt_session_end(cnt_session *s)
{
    s->ending = true;
    session_stream_stop(s);
    cnt_session_end_tickets(s, false);
    cnt_tickets_destroy(&s->tickets);
    if (s->front_end != NULL)
        s->front_end(s);
    s->front_state = NULL;
    cnt_table_release_all(s->env->table, &s->holdings);
    cnt_holdings_destroy(&s->holdings);
    if (s->held != NULL) {
        cnt_outbuf_destroy(s->held);
        free(s->held);
        s->held = NULL;
    }
    cnt_outbuf_destroy(&s->out);
}
