/* answers.c: what the packets of a server mean to libmccounter: an answer
 * matched to the oldest request in flight and turned into its mcc_result,
 * a series' records, an event for its watcher or the event callback. The
 * bytes come from conn.c, which closes the connection when this says they
 * make no sense. */
#include "config.h"

#include <string.h>

#include "client/internal.h"

/* The one place a check's answer (window, GCRA, a multi-check item) is
 * copied from the codec's form to the client's. */
static void check_answer(const cnt_check_result *a, mcc_check_answer *out)
{
    out->state = a->state;
    out->limit = a->limit;
    out->remaining = a->remaining;
    out->used = a->used;
    out->retry_after_ns = a->retry_after_ns;
    out->reset_after_ns = a->reset_after_ns;
}

/* Likewise for a tenant (Tenant_show, a Tenant_list record). */
static void tenant_view(const cnt_tenant_view *v, mcc_tenant_view *out)
{
    out->reserved = v->reserved;
    out->hard_limit = v->hard_limit;
    out->used = v->used;
    out->flags = v->flags;
    out->throttled = v->throttled;
    out->units = v->units;
}

/* Fills r's answer from a status-0 answer; false if its body is not what
 * the operation answers. */
static bool parse_answer(const cnt_response *res, mcc_result *r)
{
    switch (res->opcode) {
    case CNT_OP_GET:
    case CNT_OP_ACQUIRE:
        if (res->body_len < 4)
            return false;
        r->value = cnt_get_u32(res->body);
        return true;
    case CNT_OP_WAIT_RELEASE:
        return cnt_parse_wait_release_answer(res, &r->value);
    case CNT_OP_WAIT_ACQUIRE: {
        cnt_wait_answer a;
        if (!cnt_parse_wait_answer(res, &a))
            return false;
        r->wait.state = a.state;
        r->wait.position = a.position;
        r->wait.lease_id = a.lease_id;
        r->wait.consumption = a.consumption;
        return true;
    }
    case CNT_OP_RENEW:
        return cnt_parse_renew_answer(res, &r->lease_id);
    case CNT_OP_TTL_QUERY:
    case CNT_OP_TTL_UPDATE: {
        cnt_ttl_answer a;
        if (!cnt_parse_ttl_view(res, &a))
            return false;
        r->ttl.quota = a.quota;
        r->ttl.ttl_left = a.ttl_left;
        r->ttl.unit = a.unit;
        return true;
    }
    case CNT_OP_WINDOW_CHECK:
    case CNT_OP_GCRA_CHECK: {
        cnt_check_result a;
        if (!cnt_parse_check_answer(res, &a))
            return false;
        check_answer(&a, &r->check);
        return true;
    }
    case CNT_OP_MULTI_CHECK: {
        cnt_multi_answer m;
        if (!cnt_parse_multi_answer(res, &m))
            return false;
        r->multi.overall = m.overall;
        r->multi.count = m.count;
        for (uint8_t j = 0; j < m.count; j++) {
            cnt_check_result a;
            if (!cnt_multi_answer_item(&m, j, &a))
                return false;
            check_answer(&a, &r->multi.items[j]);
        }
        return true;
    }
    case CNT_OP_THROTTLE: {
        cnt_throttle_answer a;
        if (!cnt_parse_throttle_answer(res, &a))
            return false;
        r->throttle.state = a.state;
        r->throttle.reason = a.reason;
        r->throttle.used = a.used;
        r->throttle.remaining = a.remaining;
        r->throttle.retry_after_ns = a.retry_after_ns;
        return true;
    }
    case CNT_OP_TENANT_SHOW: {
        cnt_tenant_view v;
        if (!cnt_parse_tenant_view(res, &v))
            return false;
        tenant_view(&v, &r->tenant);
        return true;
    }
    case CNT_OP_NODE_SHOW: {
        cnt_node_view v;
        if (!cnt_parse_node_view(res, &v))
            return false;
        r->node.capacity = v.capacity;
        r->node.used = v.used;
        r->node.pool = v.pool;
        r->node.pool_used = v.pool_used;
        r->node.reserved_sum = v.reserved_sum;
        r->node.tenants = v.tenants;
        r->node.throttled = v.throttled;
        return true;
    }
    default:
        /* Noop, Release, Ttl_insert, Ttl_purge, Auth and the privileged
         * ones answer an empty body; anything after it is ignored. */
        return true;
    }
}

/* Fills r->throttled from a Throttled answer (status 0x2D): the retry
 * hint and the reason before the text; false if the body is too short. */
static bool throttled_answer(const cnt_response *res, mcc_result *r)
{
    if (res->body_len < CNT_THROTTLED_FIXED)
        return false;
    r->throttled.retry_after_ns =
        cnt_get_u64(res->body + CNT_THROTTLED_OFF_RETRY);
    r->throttled.reason = res->body[CNT_THROTTLED_OFF_REASON];
    return true;
}

/* Tells whether an operation's answer is a series ended by an empty
 * packet. */
static bool is_series(uint8_t op)
{
    return op == CNT_OP_DUMP || op == CNT_OP_QUEUES ||
           op == CNT_OP_TENANT_LIST || op == CNT_OP_LEASE_LIST ||
           op == CNT_OP_BUSIEST;
}

/* Fills rec from one series packet (status 0, non-empty body); false if
 * it is malformed. */
static bool parse_record(const cnt_response *res, mcc_record *rec)
{
    switch (res->opcode) {
    case CNT_OP_DUMP: {
        cnt_dump_record d;
        if (!cnt_dump_record_parse(res, &d))
            return false;
        rec->current = d.current;
        rec->max = d.max;
        rec->name = (const char *)d.name;
        rec->name_len = d.name_len;
        return true;
    }
    case CNT_OP_QUEUES: {
        cnt_queues_record q;
        if (!cnt_parse_queues_record(res, &q))
            return false;
        rec->consumption = q.consumption;
        rec->queue_len = q.queue_len;
        rec->name = (const char *)q.name;
        rec->name_len = q.name_len;
        return true;
    }
    case CNT_OP_LEASE_LIST: {
        cnt_lease_record l;
        if (!cnt_parse_lease_record(res, &l))
            return false;
        rec->left_ms = l.left_ms;
        rec->lease_id = l.lease_id;
        rec->resources = l.resources;
        rec->name = (const char *)l.name;
        rec->name_len = l.name_len;
        return true;
    }
    case CNT_OP_BUSIEST: {
        cnt_busy_record b;
        if (!cnt_parse_busy_record(res, &b))
            return false;
        rec->checks = b.checks;
        rec->kind = b.kind;
        rec->name = (const char *)b.name;
        rec->name_len = b.name_len;
        return true;
    }
    default: {
        cnt_tenant_record t;
        if (!cnt_parse_tenant_record(res, &t))
            return false;
        tenant_view(&t.view, &rec->tenant);
        rec->name = (const char *)t.name;
        rec->name_len = t.name_len;
        return true;
    }
    }
}

/* Ends the oldest request, a series, with error/status. */
static void finish_series(mcc_client *c, size_t i, int error, uint8_t status)
{
    mcc_inflight p = queue_pop(&c->servers[i].conn);
    mcc_record rec;

    if (p.orphan)
        return;
    memset(&rec, 0, sizeof rec);
    rec.op = p.op;
    rec.error = error;
    rec.status = status;
    rec.server = i;
    call_rcb(c, p.rcb, &rec, p.arg);
}

/* Handles one packet of a series or Stats; an error code when the server's
 * bytes make no sense. */
static int handle_series(mcc_client *c, size_t i, const cnt_response *res)
{
    mcc_conn *k = &c->servers[i].conn;
    mcc_inflight *head = queue_at(k, 0);
    mcc_record rec;

    if (res->status != CNT_STATUS_OK) {
        finish_series(c, i, MCC_ERR_STATUS, res->status);
        return MCC_OK;
    }
    memset(&rec, 0, sizeof rec);
    rec.op = head->op;
    rec.more = true;
    rec.server = i;
    if (res->opcode == CNT_OP_STATS) {
        size_t pos = 0;
        const char *name, *value;
        uint16_t nl, vl;
        while (cnt_stats_next(res, &pos, &name, &nl, &value, &vl)) {
            head = queue_at(k, 0);
            if (head->orphan)
                continue;
            rec.name = name;
            rec.name_len = nl;
            rec.value = value;
            rec.value_len = vl;
            call_rcb(c, head->rcb, &rec, head->arg);
        }
        if (pos != res->body_len)
            return MCC_ERR_PROTOCOL;
        finish_series(c, i, MCC_OK, 0);
        return MCC_OK;
    }
    if (res->body_len == 0) {
        finish_series(c, i, MCC_OK, 0);
        return MCC_OK;
    }
    if (!parse_record(res, &rec))
        return MCC_ERR_PROTOCOL;
    /* A long series is progress, not a hang: its deadline moves on. */
    head->deadline = mcc_now_ms() + c->timeout_ms;
    if (!head->orphan)
        call_rcb(c, head->rcb, &rec, head->arg);
    return MCC_OK;
}

/* Handles an event packet: to the watcher of its Wait_acquire if any,
 * else to the event callback; unknown codes are ignored. */
static int handle_event(mcc_client *c, size_t i, const cnt_response *res)
{
    mcc_conn *k = &c->servers[i].conn;
    cnt_event_packet ev;
    mcc_waiter *w, **pw;
    mcc_event e;

    if (res->opcode < CNT_EVENT_GRANTED || res->opcode > CNT_EVENT_SHUTDOWN)
        return MCC_OK;
    if (!cnt_parse_event(res, &ev))
        return MCC_ERR_PROTOCOL;
    for (pw = &k->waiters; (w = *pw) != NULL; pw = &w->next) {
        if (w->opaque != res->opaque)
            continue;
        if (w->once) {
            *pw = w->next;
            w->next = NULL;
            w->linked = false;
        }
        c->in_callback++;
        w->fn(c, w, &ev, MCC_OK);
        c->in_callback--;
        return MCC_OK;
    }
    memset(&e, 0, sizeof e);
    e.kind = (mcc_event_kind)ev.code;
    e.server = i;
    e.opaque = res->opaque;
    e.lease_id = ev.lease_id;
    e.value = ev.value;
    e.name = (const char *)ev.name;
    e.name_len = ev.name_len;
    call_event(c, &e);
    return MCC_OK;
}

/* Handles one decoded packet; an error code closes the connection. */
int mcc_handle_packet(mcc_client *c, size_t i, const cnt_response *res)
{
    mcc_conn *k = &c->servers[i].conn;
    mcc_inflight *head, p;
    mcc_result r;

    if (cnt_response_is_event(res))
        return handle_event(c, i, res);
    if (k->q_count == 0)
        return MCC_ERR_PROTOCOL;
    head = queue_at(k, 0);
    if (res->opaque != head->opaque || res->opcode != head->op)
        return MCC_ERR_PROTOCOL;
    if (is_series(head->op) || head->op == CNT_OP_STATS)
        return handle_series(c, i, res);
    /* Only the header fields are cleared: the answer fields are set by
     * parse_answer, the one of op's kind, and clearing the whole union
     * (a multi-check's 16 items) would cost more than the answer. */
    r.op = head->op;
    r.error = MCC_OK;
    r.status = 0;
    r.server = i;
    r.opaque = head->opaque;
    r.lease_id = 0;             /* the union's first 8 bytes: value too */
    if (res->status != CNT_STATUS_OK) {
        r.error = MCC_ERR_STATUS;
        r.status = res->status;
        if (res->status == CNT_STATUS_THROTTLED &&
            !throttled_answer(res, &r))
            return MCC_ERR_PROTOCOL;
    } else if (!parse_answer(res, &r)) {
        return MCC_ERR_PROTOCOL;
    }
    p = queue_pop(k);
    if (p.internal_auth) {
        if (r.error != MCC_OK &&
            (p.op == CNT_OP_AUTH || p.op == CNT_OP_AUTH_USER)) {
            mcc_event e;
            memset(&e, 0, sizeof e);
            e.kind = MCC_EVENT_ERROR;
            e.server = i;
            e.error = MCC_ERR_AUTH;
            e.status = r.status;
            call_event(c, &e);
        }
        return MCC_OK;
    }
    if (!p.orphan)
        call_cb(c, p.cb, &r, p.arg);
    return MCC_OK;
}
