/* session_waits.c: a session's waiting acquisitions and leases. The first
 * half is what every protocol front calls (wait, renew, wait release, and
 * the owner's side of grants, timeouts, expiries and the stop), with plain
 * arguments and results and nothing of any wire format: events go out
 * through the session's event writer, which the front chose. The second
 * half is the binary front's answers to opcodes 0x20-0x22 on top of it. */
#include "config.h"

#include "engine/server/session_int.h"

#include <stddef.h>

#include "protocol/response.h"

/* ---- The calls every front makes ---- */

/* The current reading of the monotonic clock. */
static uint64_t now_ns(const cnt_session_env *env)
{
    return cnt_clock_mono_ns(cnt_table_clock(env->table));
}

/* Arms k's one timer ms milliseconds from now, and tells the worker. */
static void arm(const cnt_session_env *env, cnt_ticket *k, uint8_t kind,
                uint32_t ms)
{
    uint64_t deadline = now_ns(env) + (uint64_t)ms * 1000000u;

    k->timer_kind = kind;
    cnt_timer_arm(env->wheel, &k->timer, deadline);
    if (env->timer_armed != NULL)
        env->timer_armed(env, deadline);
}

/* Writes an event about ticket k through the session's front, unless the
 * session's close began (then the client is gone or going, and nothing is
 * sent). */
static void put_event(cnt_session *s, uint8_t code, const cnt_ticket *k,
                      uint64_t lease_id, uint32_t value)
{
    if (s->ending || s->closing || s->failed)
        return;
    s->event(s, code, k, lease_id, value);
}

/* Tells the connection that events wait in the session's output. */
static void wake(cnt_session *s)
{
    if (s->env->wake != NULL)
        s->env->wake(s);
}

/* Forgets ticket k of this session, which is out of the table already
 * (timed out, or expired and acknowledged): out of the set, freed. */
static void forget(cnt_session *s, cnt_ticket *k)
{
    cnt_timer_cancel(s->env->wheel, &k->timer);
    cnt_tickets_remove(&s->tickets, k);
    cnt_table_ticket_free(s->env->table, k);
}

/* Ends k, which the session's set no longer holds, for its owner: its
 * timer, its place in the table (a wait cancelled, a grant returned);
 * with shutdown, the client hears of it; then frees it unless its grant
 * is in flight (the delivery frees it then). *o says how it ended. */
static void end_ticket(cnt_session *s, cnt_ticket *k, bool shutdown,
                       cnt_ticket_outcome *o)
{
    cnt_timer_cancel(s->env->wheel, &k->timer);
    cnt_table_ticket_end(s->env->table, k, o);
    /* A grant names its lease id, as every event about a grant does; the
     * ticket is ENDED now, so nobody else writes it any more. */
    if (shutdown && o->was != CNT_TICKET_EXPIRED)
        put_event(s, CNT_EVENT_SHUTDOWN, k,
                  o->was == CNT_TICKET_GRANTED ? k->lease_id : 0,
                  o->returned);
    if (o->free_now)
        cnt_table_ticket_free(s->env->table, k);
}

/* A duration a request may leave to its name's group (*ms is then
 * CNT_USE_GROUP_DEFAULT): the group's, group_ms. False when it is left to
 * a group and the name is none. */
static bool group_ms(uint32_t *ms, const cnt_group *g, uint32_t group_ms)
{
    if (*ms != CNT_USE_GROUP_DEFAULT)
        return true;
    if (g == NULL)
        return false;
    *ms = group_ms;
    return true;
}

/* Waits for a->resources of the counter a->name; see session.h. */
cnt_status cnt_session_wait_acquire(cnt_session *s,
                                    const cnt_table_place *place,
                                    const cnt_session_wait_args *a,
                                    cnt_session_wait_outcome *out)
{
    const cnt_session_env *env = s->env;
    const cnt_group *g = cnt_groups_find(env->groups, a->name, a->name_len);
    uint32_t maximum = g != NULL ? g->maximum : a->maximum;
    uint32_t wait_ms = a->wait_ms, lease_ms = a->lease_ms;
    cnt_table_place computed;

    if ((g == NULL && maximum == 0) ||
        !group_ms(&wait_ms, g, g ? g->wait_ms : 0) ||
        !group_ms(&lease_ms, g, g ? g->lease_ms : 0))
        return CNT_STATUS_UNKNOWN_GROUP;
    if (a->resources > maximum)
        return CNT_STATUS_EXCEEDS_MAXIMUM;
    cnt_ticket *old = cnt_tickets_find(&s->tickets, a->name, a->name_len);
    if (old != NULL && !old->told_expired)
        return CNT_STATUS_ALREADY_ACTIVE;
    if (old != NULL)
        forget(s, old);                 /* an expiry already told */
    if (s->tickets.count >= env->max_waits)
        return CNT_STATUS_TOO_MANY_WAITS;
    cnt_ticket *k = NULL;
    if (cnt_tickets_reserve(&s->tickets))
        k = cnt_table_ticket_new(env->table, a->name, a->name_len);
    if (k == NULL)
        return CNT_STATUS_OUT_OF_MEMORY;
    k->owner = s;
    k->worker = env->worker;
    k->resources = a->resources;
    k->maximum = maximum;
    k->lease_ms = lease_ms;
    k->opaque = a->opaque;

    if (place == NULL) {
        cnt_table_place_of(env->table, a->name, a->name_len, &computed);
        place = &computed;
    }
    cnt_wait_result r;
    cnt_status st = cnt_table_wait_acquire_at(env->table, place, k,
                                              wait_ms > 0, &r);
    if (st != CNT_STATUS_OK) {
        cnt_table_ticket_free(env->table, k);
        return st;
    }
    cnt_tickets_add(&s->tickets, k);
    /* Position 0 means granted here, by this thread: nobody else can have
     * touched k since. A queued k may be granted by another thread at any
     * moment, so nothing of it but the owner's fields is read. */
    out->granted = r.position == 0;
    out->position = r.position;
    out->consumption = r.consumption;
    out->lease_id = out->granted ? k->lease_id : 0;
    if (out->granted && lease_ms != 0)
        arm(env, k, CNT_TIMER_LEASE, lease_ms);
    else if (!out->granted)
        arm(env, k, CNT_TIMER_WAIT, wait_ms);
    return CNT_STATUS_OK;
}

/* Renews the lease of the session's grant on name; see session.h. */
cnt_status cnt_session_renew(cnt_session *s, const uint8_t *name,
                             uint16_t name_len, uint32_t lease_ms,
                             uint64_t *lease_id)
{
    const cnt_session_env *env = s->env;
    const cnt_group *g = NULL;

    if (lease_ms == CNT_USE_GROUP_DEFAULT)
        g = cnt_groups_find(env->groups, name, name_len);
    if (!group_ms(&lease_ms, g, g ? g->lease_ms : 0))
        return CNT_STATUS_UNKNOWN_GROUP;
    if (lease_ms == 0)
        return CNT_STATUS_INVALID;      /* the group's default: no lease */
    cnt_ticket *k = cnt_tickets_find(&s->tickets, name, name_len);
    if (k == NULL)
        return CNT_STATUS_NOT_ACQUIRED;
    cnt_status st = cnt_table_ticket_renew(env->table, k, lease_ms,
                                           lease_id);
    if (st == CNT_STATUS_OK)
        arm(env, k, CNT_TIMER_LEASE, lease_ms);
    else if (st == CNT_STATUS_LEASE_EXPIRED)
        forget(s, k);                   /* acknowledged now */
    return st;
}

/* Ends the session's wait or grant on name; see session.h. */
cnt_status cnt_session_wait_release(cnt_session *s, const uint8_t *name,
                                    uint16_t name_len, uint32_t *returned)
{
    cnt_ticket *k = cnt_tickets_find(&s->tickets, name, name_len);
    cnt_ticket_outcome o;

    if (k == NULL)
        return CNT_STATUS_NOT_ACQUIRED;
    cnt_tickets_remove(&s->tickets, k);
    end_ticket(s, k, false, &o);
    if (o.was == CNT_TICKET_EXPIRED)
        return CNT_STATUS_LEASE_EXPIRED;
    *returned = o.returned;
    return CNT_STATUS_OK;
}

/* Takes a grant delivered through the worker's mailbox. */
void cnt_session_deliver(const cnt_session_env *env, cnt_ticket *k)
{
    uint32_t consumption = 0;

    if (!cnt_table_ticket_delivered(env->table, k, &consumption)) {
        cnt_table_ticket_free(env->table, k);   /* its owner ended it */
        return;
    }
    cnt_session *s = k->owner;
    cnt_timer_cancel(env->wheel, &k->timer);
    if (k->lease_ms != 0)
        arm(env, k, CNT_TIMER_LEASE, k->lease_ms);
    /* TOLD: the granting thread sent the event already (what it could
     * not send goes out with the next write, which wake asks for). */
    if (!(k->flags & CNT_TICKET_TOLD))
        put_event(s, CNT_EVENT_GRANTED, k, k->lease_id, consumption);
    else if (s->told != NULL)
        s->told(s);
    wake(s);
}

/* A ticket's timer is due: its wait timed out or its lease expired. */
void cnt_session_fire(cnt_timer *t, void *ctx)
{
    const cnt_session_env *env = ctx;
    cnt_ticket *k = (cnt_ticket *)((uint8_t *)t - offsetof(cnt_ticket,
                                                             timer));
    cnt_session *s = k->owner;
    uint32_t released = 0;

    if (k->timer_kind == CNT_TIMER_WAIT) {
        /* False: granted meanwhile; its delivery is on the way. */
        if (!cnt_table_ticket_timeout(env->table, k))
            return;
        put_event(s, CNT_EVENT_TIMED_OUT, k, 0, 0);
        forget(s, k);
    } else {
        if (!cnt_table_ticket_expire(env->table, k, &released))
            return;
        /* The ticket stays, EXPIRED, until the client acknowledges it
         * (renew and release answer "lease expired") or asks again. */
        k->told_expired = true;
        put_event(s, CNT_EVENT_LEASE_EXPIRED, k, k->lease_id, released);
    }
    wake(s);
}

/* Ends one ticket of a stopping server's session, with a shutdown event. */
static void shutdown_one(cnt_ticket *k, void *ctx)
{
    cnt_ticket_outcome o;

    end_ticket(ctx, k, true, &o);
}

/* Ends one ticket of an ending session (no event: the client is gone). */
static void end_one(cnt_ticket *k, void *ctx)
{
    cnt_ticket_outcome o;

    end_ticket(ctx, k, false, &o);
}

/* Ends every ticket of s, each with a shutdown event when the server
 * stops, silently when the session ends; see session_int.h. */
void cnt_session_end_tickets(cnt_session *s, bool shutdown)
{
    cnt_tickets_drain(&s->tickets, shutdown ? shutdown_one : end_one, s);
}

/* ---- The binary front's answers ---- */

/* Wait_acquire: granted now, queued (a granted or timed-out event
 * follows), or refused with the reason. */
void cnt_session_wait_acquire_op(cnt_session *s, const cnt_request *req,
                                 const cnt_table_place *place)
{
    cnt_session_wait_args a = {
        .name = req->name, .name_len = req->name_len,
        .resources = req->resources, .maximum = req->maximum,
        .wait_ms = req->wait_ms, .lease_ms = req->lease_ms,
        .opaque = req->opaque,
    };
    cnt_session_wait_outcome o;
    cnt_status st = cnt_session_wait_acquire(s, place, &a, &o);

    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_WAIT_ANSWER_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_wait_answer(p, req->opaque,
                                                 o.granted ? CNT_WAIT_GRANTED
                                                           : CNT_WAIT_QUEUED,
                                                 o.position, o.lease_id,
                                                 o.consumption));
}

/* Renew: a granted request's lease now ends lease_ms from now. */
void cnt_session_renew_op(cnt_session *s, const cnt_request *req)
{
    uint64_t lease_id = 0;
    cnt_status st = cnt_session_renew(s, req->name, req->name_len,
                                      req->lease_ms, &lease_id);

    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_HEADER_SIZE + 8);
    if (p != NULL)
        cnt_outbuf_commit(&s->out, cnt_encode_u64(p, req->opcode,
                                                  req->opaque, lease_id));
}

/* Wait_release: cancels a queued request or returns a granted one; the
 * answer says which (resources returned, 0 for a cancelled wait). */
void cnt_session_wait_release_op(cnt_session *s, const cnt_request *req)
{
    uint32_t returned = 0;
    cnt_status st = cnt_session_wait_release(s, req->name, req->name_len,
                                             &returned);

    if (st != CNT_STATUS_OK)
        cnt_session_put_error(s, req->opcode, st, req->opaque);
    else
        cnt_session_put_u32(s, req->opcode, req->opaque, returned);
}
