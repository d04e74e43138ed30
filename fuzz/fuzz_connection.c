/* fuzz_connection.c: libFuzzer target for the server's connection code, the
 * real read / decode / answer / skip / back-pressure path, driven over a
 * socketpair and a private event base, with waiting acquisition wired as a
 * worker wires it (groups, a cap of waits, a timer wheel, grants taken
 * through a mailbox) and the rate limits beside it, on a clock the
 * harness moves. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "fuzz/fuzz.h"
#include "engine/core/clock.h"
#include "engine/core/groups.h"
#include "engine/core/wheel.h"
#include "engine/server/connection.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* The input arrives in random chunks, then the client shuts its write
 * side. Checks: the answers are exactly those the stream calls for, in order
 * (opcode, opaque, error status, Dump and Queues series), each status one
 * its opcode may answer; events (magic 0x92) come only between answers,
 * never inside a series, and only about a Wait_acquire answered before
 * them; the connection always ends after EOF; everything it acquired is
 * released when it ends. */

/* One answer the stream calls for. */
typedef struct expect {
    uint8_t opcode;
    uint32_t opaque;
    uint8_t status;         /* for decoder errors; 0xff: any allowed one */
} expect;

/* Everything one run needs. */
typedef struct run {
    expect *want;
    size_t nwant, next;     /* expected answers; index of the next one */
    bool in_dump;           /* inside a Dump or Queues series */
    bool closes;            /* the stream loses framing: the server closes */
    bool server_gone;       /* on_close was called */
    uint8_t *resp;          /* bytes read back, not yet parsed */
    size_t resp_len, resp_cap;
    uint32_t *waits;        /* opaques of Wait_acquire requests answered
                               with status 0: events may name them */
    size_t nwaits;
    uint64_t now_ns;        /* the monotonic clock the engine reads */
    cnt_grant_list grants;      /* the mailbox: grants to deliver */
} run;

/* Walks the stream as a server would and lists the answers it calls for. */
static void expect_answers(run *r, const uint8_t *p, size_t n)
{
    r->want = malloc((n / CNT_HEADER_SIZE + 1) * sizeof *r->want);
    r->waits = malloc((n / CNT_HEADER_SIZE + 1) * sizeof *r->waits);
    FUZZ_CHECK(r->want != NULL && r->waits != NULL);
    while (n > 0) {
        cnt_request req;
        cnt_decode_result d = cnt_request_decode(p, n, &req);
        if (d == CNT_DECODE_NEED_MORE)
            return;
        if (d == CNT_DECODE_CLOSE) {
            r->closes = true;
            return;
        }
        expect *e = &r->want[r->nwant++];
        e->opcode = req.opcode;
        e->opaque = req.opaque;
        e->status = d == CNT_DECODE_ERROR ? (uint8_t)req.status : 0xff;
        if (req.size >= n)
            return;
        p += req.size;
        n -= (size_t)req.size;
    }
}

/* Checks a status against what an opcode may answer. */
static bool status_allowed(uint8_t opcode, uint8_t status)
{
    switch (opcode) {
    case CNT_OP_GET: return status == 0x00 || status == 0x01;
    case CNT_OP_ACQUIRE: return status == 0x00 || status == 0x21 ||
                                status == 0x82;
    case CNT_OP_RELEASE: return status == 0x00 || status == 0x01 ||
                                status == 0x22;
    case CNT_OP_WAIT_ACQUIRE: return status == 0x00 || status == 0x21 ||
                                     (status >= 0x23 && status <= 0x26) ||
                                     status == 0x82;
    /* 0x04: the group's default lease is "none", and a renew needs one. */
    case CNT_OP_RENEW: return status == 0x00 || status == 0x04 ||
                              status == 0x22 || status == 0x25 ||
                              status == 0x27;
    case CNT_OP_WAIT_RELEASE: return status == 0x00 || status == 0x22 ||
                                     status == 0x27;
    case CNT_OP_TTL_INSERT: return status == 0x00 || status == 0x28 ||
                                   status == 0x82;
    case CNT_OP_TTL_QUERY:
    case CNT_OP_TTL_PURGE: return status == 0x00 || status == 0x01;
    /* 0x04: an increase past 64 bits, or a time left past 64 bits of ns
     * (the decoder cannot know the record's time left). */
    case CNT_OP_TTL_UPDATE: return status == 0x00 || status == 0x01 ||
                                   status == 0x04 || status == 0x29;
    case CNT_OP_WINDOW_CHECK:
    case CNT_OP_GCRA_CHECK:
    case CNT_OP_MULTI_CHECK: return status == 0x00 || status == 0x82;
    /* The harness's server has no admin secret: everything privileged,
     * and authentication itself, is not permitted. */
    case CNT_OP_AUTH:
    case CNT_OP_TENANT_SET:
    case CNT_OP_TENANT_REMOVE:
    case CNT_OP_NODE_SET:
    case CNT_OP_UNTHROTTLE:
    case CNT_OP_RELOAD:
    case CNT_OP_TENANT_SET_JSON:
    case CNT_OP_NODE_SET_JSON: return status == 0x2a;
    case CNT_OP_THROTTLE: return status == 0x00 || status == 0x82;
    /* 0x82: no memory for the survey or for a name it copies. */
    case CNT_OP_LEASE_LIST: return status == 0x00 || status == 0x82;
    /* 0x82: the copies of the names could not be made. */
    case CNT_OP_BUSIEST: return status == 0x00 || status == 0x82;
    default: return status == 0x00;
    }
}

/* Checks a status-0 answer of an extension opcode and remembers the
 * Wait_acquire requests that may get events. */
static void check_extension_answer(run *r, const cnt_response *res)
{
    uint64_t id;
    uint32_t returned;
    cnt_wait_answer a;
    cnt_ttl_answer v;
    cnt_check_result c;
    cnt_multi_answer m;
    cnt_throttle_answer ta;
    cnt_tenant_view tv;
    cnt_node_view nv;

    switch (res->opcode) {
    case CNT_OP_THROTTLE:
        FUZZ_CHECK(cnt_parse_throttle_answer(res, &ta) && ta.state <= 1 &&
                   ta.reason <= 3 && (ta.state == 0) == (ta.reason == 0) &&
                   (ta.state == 0) == (ta.retry_after_ns == 0));
        break;
    case CNT_OP_TENANT_SHOW:
        FUZZ_CHECK(cnt_parse_tenant_view(res, &tv) &&
                   tv.hard_limit >= tv.reserved);
        break;
    case CNT_OP_NODE_SHOW:
        FUZZ_CHECK(cnt_parse_node_view(res, &nv) &&
                   nv.reserved_sum <= nv.capacity);
        break;
    case CNT_OP_TTL_INSERT:
    case CNT_OP_TTL_PURGE:
        FUZZ_CHECK(res->body_len == 0);
        break;
    case CNT_OP_TTL_QUERY:
    case CNT_OP_TTL_UPDATE:
        FUZZ_CHECK(cnt_parse_ttl_view(res, &v) && v.ttl_left >= 1 &&
                   v.unit <= CNT_UNIT_MAX);
        break;
    case CNT_OP_WINDOW_CHECK:
    case CNT_OP_GCRA_CHECK:
        FUZZ_CHECK(cnt_parse_check_answer(res, &c) &&
                   c.state <= CNT_CHECK_NEVER);
        break;
    case CNT_OP_MULTI_CHECK:
        FUZZ_CHECK(cnt_parse_multi_answer(res, &m) && m.count >= 1);
        for (uint8_t i = 0; i < m.count; i++)
            FUZZ_CHECK(cnt_multi_answer_item(&m, i, &c) &&
                       c.state <= CNT_CHECK_NEVER);
        break;
    case CNT_OP_WAIT_ACQUIRE:
        FUZZ_CHECK(cnt_parse_wait_answer(res, &a));
        FUZZ_CHECK(a.state == CNT_WAIT_GRANTED
                       ? a.position == 0 && a.lease_id != 0
                       : a.position >= 1 && a.lease_id == 0);
        r->waits[r->nwaits++] = res->opaque;
        break;
    case CNT_OP_RENEW:
        FUZZ_CHECK(res->body_len == 8 && cnt_parse_renew_answer(res, &id) &&
                   id != 0);
        break;
    case CNT_OP_WAIT_RELEASE:
        FUZZ_CHECK(res->body_len == 4 &&
                   cnt_parse_wait_release_answer(res, &returned));
        break;
    default:
        break;
    }
}

/* Checks an event: well formed, between answers, about a Wait_acquire
 * already answered; no shutdown here (the server does not stop). */
static void check_event(run *r, const cnt_response *res)
{
    cnt_event_packet ev;

    FUZZ_CHECK(!r->in_dump);
    FUZZ_CHECK(cnt_parse_event(res, &ev) && res->size ==
               CNT_EVENT_SIZE(ev.name_len));
    FUZZ_CHECK(ev.name_len > 0);
    if (ev.code == CNT_EVENT_TIMED_OUT)
        FUZZ_CHECK(ev.lease_id == 0 && ev.value == 0);
    else
        FUZZ_CHECK((ev.code == CNT_EVENT_GRANTED ||
                    ev.code == CNT_EVENT_LEASE_EXPIRED) && ev.lease_id != 0);
    bool known = false;
    for (size_t i = 0; i < r->nwaits && !known; i++)
        known = r->waits[i] == res->opaque;
    FUZZ_CHECK(known);
}

/* Checks one answer against the head of the expected list. */
static void check_response(run *r, const cnt_response *res)
{
    if (res->magic == CNT_MAGIC_NOTICE) {
        check_event(r, res);
        return;
    }
    FUZZ_CHECK(res->magic == CNT_MAGIC_RESPONSE);
    FUZZ_CHECK(r->next < r->nwant);
    const expect *e = &r->want[r->next];
    FUZZ_CHECK(res->opcode == e->opcode && res->opaque == e->opaque);
    if (e->status != 0xff) {
        FUZZ_CHECK(res->status == e->status);
        r->next++;
        return;
    }
    FUZZ_CHECK(status_allowed(e->opcode, res->status));
    if (e->opcode == CNT_OP_DUMP && res->body_len > 0) {
        cnt_dump_record rec;
        FUZZ_CHECK(cnt_dump_record_parse(res, &rec));
        r->in_dump = true;
        return;
    }
    if (e->opcode == CNT_OP_TENANT_LIST && res->body_len > 0) {
        cnt_tenant_record rec;
        FUZZ_CHECK(res->status == 0 && cnt_parse_tenant_record(res, &rec) &&
                   rec.name_len > 0);
        r->in_dump = true;
        return;
    }
    if (e->opcode == CNT_OP_LEASE_LIST && res->body_len > 0 &&
        res->status == 0) {
        cnt_lease_record rec;
        FUZZ_CHECK(cnt_parse_lease_record(res, &rec) && rec.name_len > 0 &&
                   rec.lease_id > 0);
        r->in_dump = true;
        return;
    }
    if (e->opcode == CNT_OP_QUEUES && res->body_len > 0) {
        cnt_queues_record rec;
        FUZZ_CHECK(cnt_parse_queues_record(res, &rec) &&
                   rec.queue_len >= 1);
        r->in_dump = true;
        return;
    }
    if (e->opcode == CNT_OP_BUSIEST && res->body_len > 0) {
        cnt_busy_record rec;
        FUZZ_CHECK(res->status == 0 && cnt_parse_busy_record(res, &rec) &&
                   rec.name_len > 0 && rec.checks >= 1 &&
                   rec.kind <= CNT_BUSY_KIND_GCRA);
        r->in_dump = true;
        return;
    }
    if (res->status == 0x00)
        check_extension_answer(r, res);
    r->in_dump = false;
    r->next++;
}

/* Reads what the server sent and checks every whole answer; returns true
 * when something was read, and sets *eof when the server has closed. */
static bool drain_responses(run *r, int fd, bool *eof)
{
    bool got = false;
    for (;;) {
        if (r->resp_cap - r->resp_len < 65536) {
            r->resp_cap = r->resp_cap * 2 + 65536;
            r->resp = realloc(r->resp, r->resp_cap);
            FUZZ_CHECK(r->resp != NULL);
        }
        ssize_t n = read(fd, r->resp + r->resp_len, r->resp_cap - r->resp_len);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            *eof = true;
            break;
        }
        if (n < 0) {
            FUZZ_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        r->resp_len += (size_t)n;
        got = true;
    }
    size_t pos = 0;
    cnt_response res;
    while (cnt_response_decode(r->resp + pos, r->resp_len - pos, &res) ==
           CNT_DECODE_OK) {
        check_response(r, &res);
        pos += (size_t)res.size;
    }
    memmove(r->resp, r->resp + pos, r->resp_len - pos);
    r->resp_len -= pos;
    return got;
}

/* The harness's clock: a fixed wall clock (one consumption window) and a
 * monotonic one that moves only when the loop turns, so that waits and
 * leases run out as a function of the input alone. */
static uint64_t fake_wall_ms(void *ctx)
{
    (void)ctx;
    return 1700000000000ull;
}

static uint64_t fake_mono_ns(void *ctx)
{
    return ((const run *)ctx)->now_ns;
}

/* The table's grant sink: the grant waits in the harness's mailbox until
 * the loop's turn ends, as it waits in a worker's. */
static void post_grant(void *ctx, cnt_ticket *k)
{
    run *r = ctx;
    STAILQ_INSERT_TAIL(&r->grants, k, grant_link);
}

/* Delivers the grants in the mailbox (the worker's doorbell callback). */
static void take_grants(run *r, const cnt_session_env *env)
{
    cnt_ticket *k;

    while ((k = STAILQ_FIRST(&r->grants)) != NULL) {
        STAILQ_REMOVE_HEAD(&r->grants, grant_link);
        cnt_session_deliver(env, k);
    }
}

/* on_close of the connection environment. */
static void on_close(void *owner, cnt_connection *c)
{
    (void)c;
    ((run *)owner)->server_gone = true;
}

/* Checks that no counter has consumption left (all holders are gone). */
static bool dump_zero(void *ctx, const uint8_t *name, uint16_t len,
                      uint32_t current, uint32_t max_in_window)
{
    (void)ctx, (void)name, (void)len, (void)max_in_window;
    FUZZ_CHECK(current == 0);
    return true;
}

/* A tiny xorshift generator: chunk sizes must be a function of the input. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Input: one byte (bit 7: tiny socket buffers; all bits seed the chunking),
 * then the client's byte stream. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    run r = { .now_ns = 1000000000ull };
    STAILQ_INIT(&r.grants);
    const uint8_t *stream = data + 1;
    size_t n = size - 1, off = 0;
    uint32_t seed = 0x6a09e667u ^ data[0];
    expect_answers(&r, stream, n);

    const cnt_clock clock = { fake_wall_ms, fake_mono_ns, &r };
    cnt_table_config tcfg = { .buckets = 64, .interval = 10,
                              .clock = &clock };
    cnt_table *table = cnt_table_new(&tcfg);
    cnt_limits *limits = cnt_limits_new(&(cnt_limits_config){
        .buckets = 64, .clock = &clock });
    cnt_throttle *throttle = cnt_throttle_new(&(cnt_throttle_config){
        .buckets = 64, .clock = &clock });
    cnt_stats *stats = cnt_stats_new(1);
    struct event_base *base = event_base_new();
    int sv[2];
    FUZZ_CHECK(table != NULL && limits != NULL && throttle != NULL &&
               stats != NULL && base != NULL);
    /* A node with a capacity and one configured tenant, so that charges
     * meet each reason. */
    FUZZ_CHECK(cnt_throttle_set_capacity(throttle, 10) == CNT_STATUS_OK);
    FUZZ_CHECK(cnt_throttle_set_tenant(throttle, (const uint8_t *)"t", 1,
                                       true, 4, true, 6) == CNT_STATUS_OK);
    cnt_table_set_grant_sink(table, &(cnt_grant_sink){ post_grant, &r });
    /* Groups "g" (short default wait and lease) and "h" (a maximum only:
     * its default lease is none, which a Renew cannot use). */
    cnt_groups *groups = cnt_groups_new();
    FUZZ_CHECK(groups != NULL);
    FUZZ_CHECK(cnt_groups_set(groups, (const uint8_t *)"g", 1,
                              &(cnt_group){ 3, 5, 8 }));
    FUZZ_CHECK(cnt_groups_set(groups, (const uint8_t *)"h", 1,
                              &(cnt_group){ 1, 0, 0 }));
    cnt_wheel wheel;
    cnt_wheel_init(&wheel, r.now_ns);
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    if (data[0] & 0x80) {
        /* Tiny socket buffers: partial sends, the output watermark and
         * EV_WRITE resumption happen all the time. */
        int small = 4096;
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    }
    cnt_conn_env env = { .base = base,
                         .session = { .table = table, .limits = limits,
                                      .throttle = throttle,
                                      .stats = stats,
                                      .slot = cnt_stats_slot_get(stats, 0),
                                      .groups = groups, .max_waits = 3,
                                      .wheel = &wheel,
                                      .wake = cnt_connection_wake },
                         .on_close = on_close, .owner = &r };
    FUZZ_CHECK(cnt_connection_new(&env, sv[0]) != NULL);

    bool eof = false, shut = false;
    for (unsigned idle = 0; !eof && idle < 1000;) {
        bool progress = false;
        if (off < n) {
            size_t chunk = 1 + next_rand(&seed) % (1u << (next_rand(&seed) % 14));
            if (chunk > n - off)
                chunk = n - off;
            ssize_t w = send(sv[1], stream + off, chunk, MSG_NOSIGNAL);
            FUZZ_CHECK(w > 0 || errno == EAGAIN || errno == EPIPE ||
                       errno == ECONNRESET);
            if (w > 0) {
                off += (size_t)w;
                progress = true;
            } else if (errno != EAGAIN) {
                off = n;    /* the server closed: the rest is not read */
            }
        } else if (!shut) {
            shutdown(sv[1], SHUT_WR);
            shut = progress = true;
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        /* The turn ends: grants are delivered, a millisecond passes and
         * the timers due fire, as in a worker's loop. */
        take_grants(&r, &env.session);
        r.now_ns += 1000000u;
        cnt_wheel_advance(&wheel, r.now_ns, cnt_session_fire, &env.session);
        progress |= drain_responses(&r, sv[1], &eof);
        idle = progress ? 0 : idle + 1;
    }
    /* After EOF the server answers what is complete and closes. */
    FUZZ_CHECK(eof && r.server_gone);
    FUZZ_CHECK(r.resp_len == 0 && !r.in_dump);
    if (!r.closes)
        FUZZ_CHECK(r.next == r.nwant);
    /* Grants still in the mailbox belong to tickets ended with the
     * connection: delivering them frees them. */
    take_grants(&r, &env.session);
    FUZZ_CHECK(cnt_wheel_count(&wheel) == 0);
    cnt_map_cursor cur = { 0 };
    FUZZ_CHECK(cnt_table_dump(table, &cur, dump_zero, NULL));
    cnt_wait_stats ws;
    cnt_table_get_wait_stats(table, &ws);
    FUZZ_CHECK(ws.waiting == 0 && ws.leases == 0);

    close(sv[1]);
    event_base_free(base);
    cnt_wheel_destroy(&wheel);
    cnt_groups_free(groups);
    cnt_stats_free(stats);
    cnt_limits_free(limits);
    cnt_throttle_free(throttle);
    cnt_table_free(table);
    free(r.want);
    free(r.waits);
    free(r.resp);
    return 0;
}
