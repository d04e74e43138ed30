/* lease.c: the lease helper. It sends one Wait_acquire with a lease,
 * follows its answer and events, renews the grant every lease_ms/3 from
 * mcc_tick (so the lease never lapses while the application's loop runs)
 * and tells the application, through one callback, when the lease is
 * granted, when the wait timed out and when the lease is lost. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

struct mcc_lease {
    mcc_client *c;
    struct mcc_lease *next, *prev;
    size_t server;
    uint8_t *name;
    uint16_t len;
    uint32_t lease_ms;
    mcc_lease_state state;
    uint64_t lease_id;
    int64_t next_renew;         /* -1: nothing to renew */
    bool renewing;              /* a Renew is in flight */
    bool needs_release;         /* the server still has the request */
    mcc_waiter w;
    mcc_lease_callback cb;
    void *arg;
};

/* Sets the state and tells the application; the lease may be freed by
 * the callback, so callers touch it no more. */
static void report(mcc_lease *l, mcc_lease_state state, int error,
                   uint8_t status)
{
    mcc_client *c = l->c;

    l->state = state;
    if (state != MCC_LEASE_GRANTED)
        l->next_renew = -1;
    if (!l->cb)
        return;
    c->in_callback++;
    l->cb(c, l, state, error, status, l->arg);
    c->in_callback--;
}

/* Takes a grant, from the answer or from the granted event. */
static void granted(mcc_lease *l, uint64_t lease_id)
{
    uint32_t step = l->lease_ms / 3 ? l->lease_ms / 3 : 1;

    l->lease_id = lease_id;
    l->next_renew = mcc_now_ms() + step;
    report(l, MCC_LEASE_GRANTED, MCC_OK, 0);
}

/* Tells whether the application was told the lease's end. */
static bool lease_ended(const mcc_lease *l)
{
    return l->state == MCC_LEASE_TIMED_OUT || l->state == MCC_LEASE_LOST ||
           l->state == MCC_LEASE_FAILED;
}

/* The Wait_acquire's answer. */
static void lease_answer(mcc_client *c, const mcc_result *r, void *arg)
{
    mcc_lease *l = arg;

    /* A broken server sent the wait's end (an event) before its answer:
     * the application was told already and hears nothing more; should
     * the late answer grant, mcc_lease_release gives the grant back. */
    if (lease_ended(l)) {
        if (r->error == MCC_OK && r->wait.state == MCC_WAIT_GRANTED)
            l->needs_release = true;
        return;
    }
    if (r->error != MCC_OK) {
        mcc_waiter_remove(c, l->server, &l->w);
        l->needs_release = false;
        if (r->error == MCC_ERR_IO || r->error == MCC_ERR_CONNECT)
            report(l, MCC_LEASE_LOST, r->error, 0);
        else if (r->error == MCC_ERR_STATUS &&
                 r->status == MCC_STATUS_RESOURCE_NOT_AVAILABLE)
            report(l, MCC_LEASE_TIMED_OUT, r->error, r->status);
        else
            report(l, MCC_LEASE_FAILED, r->error, r->status);
        return;
    }
    if (r->wait.state == MCC_WAIT_GRANTED)
        granted(l, r->wait.lease_id);
    /* Queued: the granted or timed-out event comes later. */
}

/* The events of the lease's Wait_acquire, or the loss of its connection
 * (ev NULL). */
static void lease_event(mcc_client *c, mcc_waiter *w,
                        const cnt_event_packet *ev, int error)
{
    mcc_lease *l = w->ctx;

    if (!ev) {
        l->needs_release = false;   /* the server let go with the socket */
        report(l, MCC_LEASE_LOST, error, 0);
        return;
    }
    switch (ev->code) {
    case CNT_EVENT_GRANTED:
        granted(l, ev->lease_id);
        return;
    case CNT_EVENT_TIMED_OUT:
        mcc_waiter_remove(c, l->server, w);
        l->needs_release = false;
        report(l, MCC_LEASE_TIMED_OUT, MCC_OK, 0);
        return;
    case CNT_EVENT_LEASE_EXPIRED:
        /* The server waits for a Wait_release (answered 0x27) before it
         * forgets the request: mcc_lease_release sends it. */
        mcc_waiter_remove(c, l->server, w);
        report(l, MCC_LEASE_LOST, MCC_OK, MCC_STATUS_LEASE_EXPIRED);
        return;
    default:                        /* shutdown */
        mcc_waiter_remove(c, l->server, w);
        l->needs_release = false;
        report(l, MCC_LEASE_LOST, MCC_ERR_IO, 0);
        return;
    }
}

/* A Renew's answer. */
static void lease_renewed(mcc_client *c, const mcc_result *r, void *arg)
{
    mcc_lease *l = arg;

    (void)c;
    l->renewing = false;
    if (l->state != MCC_LEASE_GRANTED)
        return;
    if (r->error == MCC_OK) {
        uint32_t step = l->lease_ms / 3 ? l->lease_ms / 3 : 1;
        l->next_renew = mcc_now_ms() + step;
        return;
    }
    /* 0x27 and 0x22 leave nothing on the server; a timeout may. */
    l->needs_release = r->error == MCC_ERR_TIMEOUT;
    mcc_waiter_remove(c, l->server, &l->w);
    report(l, MCC_LEASE_LOST, r->error, r->status);
}

/* Starts a lease helper. */
mcc_error mcc_lease_start(mcc_client *c, const void *name, size_t len,
                          const mcc_wait_params *params,
                          mcc_lease_callback cb, void *arg, mcc_lease **out)
{
    mcc_lease *l;
    mcc_sub s;
    int rc;
    uint32_t resources, maximum, wait_ms, lease_ms;

    if (!c || !out || !params)
        return MCC_ERR_INVALID;
    resources = params->resources;
    maximum = params->maximum;
    wait_ms = params->wait_ms;
    lease_ms = params->lease_ms;
    if (lease_ms == 0 || lease_ms == MCC_GROUP_DEFAULT)
        return MCC_ERR_INVALID;
    *out = NULL;
    rc = mcc_check_name(name, len);
    if (rc != MCC_OK)
        return rc;
    l = calloc(1, sizeof *l);
    if (!l)
        return MCC_ERR_NOMEM;
    l->name = malloc(len);
    if (!l->name) {
        free(l);
        return MCC_ERR_NOMEM;
    }
    memcpy(l->name, name, len);
    l->len = (uint16_t)len;
    l->c = c;
    l->lease_ms = lease_ms;
    l->cb = cb;
    l->arg = arg;
    l->next_renew = -1;
    memset(&s, 0, sizeof s);
    s.cb = lease_answer;
    s.arg = l;
    rc = mcc_send_wait_acquire(c, name, len, resources, maximum, wait_ms,
                               lease_ms, &s);
    if (rc != MCC_OK) {
        free(l->name);
        free(l);
        return rc;
    }
    l->server = s.server;
    l->state = MCC_LEASE_WAITING;
    l->needs_release = true;
    l->w.opaque = s.opaque;
    l->w.fn = lease_event;
    l->w.ctx = l;
    mcc_waiter_add(c, s.server, &l->w);
    l->next = c->leases;
    if (c->leases)
        c->leases->prev = l;
    c->leases = l;
    *out = l;
    return MCC_OK;
}

/* The same, the values apart (kept for one release). */
mcc_error mcc_lease_acquire_async(mcc_client *c, const void *name, size_t len,
                                  uint32_t resources, uint32_t maximum,
                                  uint32_t wait_ms, uint32_t lease_ms,
                                  mcc_lease_callback cb, void *arg,
                                  mcc_lease **out)
{
    mcc_wait_params p = {
        .resources = resources, .maximum = maximum,
        .wait_ms = wait_ms, .lease_ms = lease_ms
    };
    return mcc_lease_start(c, name, len, &p, cb, arg, out);
}

/* Unlinks and frees a lease without telling the server. */
static void lease_drop(mcc_lease *l)
{
    mcc_client *c = l->c;

    mcc_orphan_arg(c, lease_answer, l);
    mcc_orphan_arg(c, lease_renewed, l);
    mcc_waiter_remove(c, l->server, &l->w);
    if (l->prev)
        l->prev->next = l->next;
    else
        c->leases = l->next;
    if (l->next)
        l->next->prev = l->prev;
    free(l->name);
    free(l);
}

/* Gives a lease up. */
void mcc_lease_release(mcc_lease *l)
{
    if (!l)
        return;
    if (l->needs_release) {
        mcc_sub s;
        memset(&s, 0, sizeof s);
        /* Best effort: a server that is down has let go already. */
        (void)mcc_send_wait_release(l->c, l->name, l->len, &s);
    }
    lease_drop(l);
}

/* Returns the lease's state. */
mcc_lease_state mcc_lease_get_state(const mcc_lease *l)
{
    return l ? l->state : MCC_LEASE_FAILED;
}

/* Returns the lease id of a granted lease. */
uint64_t mcc_lease_id(const mcc_lease *l)
{
    return l && l->state == MCC_LEASE_GRANTED ? l->lease_id : 0;
}

/* Sends the Renew of every lease that is due. A report may free leases,
 * so the walk starts over after one. */
void mcc_leases_tick(mcc_client *c, int64_t now)
{
    mcc_lease *l;

again:
    for (l = c->leases; l; l = l->next) {
        mcc_sub s;
        int rc;
        if (l->state != MCC_LEASE_GRANTED || l->renewing ||
            l->next_renew < 0 || now < l->next_renew)
            continue;
        memset(&s, 0, sizeof s);
        s.cb = lease_renewed;
        s.arg = l;
        rc = mcc_send_renew(c, l->name, l->len, l->lease_ms, &s);
        if (rc == MCC_OK) {
            l->renewing = true;
            continue;
        }
        if (rc == MCC_ERR_BUSY) {
            l->next_renew = now + 1;    /* the queue drains; try again */
            continue;
        }
        mcc_waiter_remove(c, l->server, &l->w);
        l->needs_release = false;
        report(l, MCC_LEASE_LOST, rc, 0);
        goto again;
    }
}

/* Returns the earliest renewal time, or -1. */
int64_t mcc_leases_next(const mcc_client *c)
{
    int64_t t = -1;

    for (const mcc_lease *l = c->leases; l; l = l->next)
        if (l->state == MCC_LEASE_GRANTED && !l->renewing &&
            l->next_renew >= 0 && (t < 0 || l->next_renew < t))
            t = l->next_renew;
    return t;
}

/* Frees every lease (the client is going away). */
void mcc_leases_free(mcc_client *c)
{
    while (c->leases)
        lease_drop(c->leases);
}
