/* waits.c: waiting acquisition on the semaphore counters: tickets queued
 * first come first served on their counter, granted under the counter's
 * stripe lock as soon as the head fits (whichever thread's release made
 * the room), handed to the table's grant sink once the lock is dropped,
 * and ended by their owner, their wait's timeout or their lease's expiry.
 * The rules of who may touch a ticket's fields are ticket.h's; the locking
 * rule is map.h's (do_* expect the stripe lock). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core/table_int.h"

/* Bytes a ticket named with len bytes is allocated and charged with: at
 * least the whole struct, so no field lies past the allocation. */
static size_t ticket_alloc_size(uint16_t len)
{
    size_t size = cnt_ticket_size(len);

    return size < sizeof(cnt_ticket) ? sizeof(cnt_ticket) : size;
}

/* The bucket of a ticket's counter (its name is the counter's). */
static size_t ticket_bucket(const cnt_table *t, const cnt_ticket *k)
{
    return cnt_map_bucket_of(&t->map, k->name, k->name_len);
}

/* Sets the grant sink. */
void cnt_table_set_grant_sink(cnt_table *t, const cnt_grant_sink *sink)
{
    t->sink = *sink;
}

/* Stops or resumes the grants of queued tickets; see table.h. */
void cnt_table_stop_grants(cnt_table *t, bool stopped)
{
    atomic_store(&t->grants_stopped, stopped);
}

/* Builds a NEW ticket for name, charged against memory_limit. */
cnt_ticket *cnt_table_ticket_new(cnt_table *t, const uint8_t *name,
                                 uint16_t len)
{
    size_t size = ticket_alloc_size(len);

    if (!cnt_map_charge(&t->map, size))
        return NULL;
    cnt_ticket *k = calloc(1, size);
    if (k == NULL) {
        cnt_map_uncharge(&t->map, size);
        return NULL;
    }
    cnt_timer_init(&k->timer);
    k->name_len = len;
    memcpy(k->name, name, len);
    return k;
}

/* Frees a ticket out of the table and gives its bytes back. */
void cnt_table_ticket_free(cnt_table *t, cnt_ticket *k)
{
    if (k == NULL)
        return;
    cnt_map_uncharge(&t->map, ticket_alloc_size(k->name_len));
    free(k);
}

/* Where the link to c's queue is in its stripe's list (stripe lock held);
 * points at NULL when c has none. */
static cnt_queue **do_queue_link(cnt_table *t, size_t b, const cnt_counter *c)
{
    cnt_queue **qp = &SLIST_FIRST(&t->queues[b % CNT_MAP_STRIPES]);

    while (*qp != NULL && (*qp)->counter != c)
        qp = &SLIST_NEXT(*qp, link);
    return qp;
}

/* Whether k's resources fit on c under k's own maximum (64-bit sum). */
static bool do_fits(const cnt_counter *c, const cnt_ticket *k)
{
    return (uint64_t)c->consumption + k->resources <= k->maximum;
}

/* Counts k's resources on c and makes k GRANTED with a new lease id. */
static void do_grant(cnt_table *t, cnt_counter *c, cnt_ticket *k, uint32_t w)
{
    do_roll(c, w);
    c->consumption += k->resources;
    if (c->consumption > c->max)
        c->max = c->consumption;
    k->state = CNT_TICKET_GRANTED;
    k->lease_id = atomic_fetch_add_explicit(&t->next_lease_id, 1,
                                            memory_order_relaxed);
    if (k->lease_ms != 0)
        cnt_table_count(&t->leases, 1);
}

/* Grants queue heads while they fit (none while grants are stopped);
 * frees the queue once empty. */
void do_grant_heads(cnt_table *t, size_t b, cnt_counter *c,
                    cnt_grant_list *granted)
{
    if (!(c->flags & CNT_COUNTER_QUEUED))
        return;
    cnt_queue **qp = do_queue_link(t, b, c);
    cnt_queue *q = *qp;
    uint32_t w = cnt_table_window_now(t);
    bool stopped = atomic_load_explicit(&t->grants_stopped,
                                        memory_order_relaxed);

    cnt_ticket *k, *first = NULL;

    while (!stopped && (k = TAILQ_FIRST(&q->tickets)) != NULL &&
           do_fits(c, k)) {
        TAILQ_REMOVE(&q->tickets, k, queue_link);
        q->len--;
        do_grant(t, c, k, w);   /* the lease id takes the back link's word */
        k->flags |= CNT_TICKET_IN_FLIGHT;
        STAILQ_INSERT_TAIL(granted, k, grant_link);
        if (first == NULL)
            first = k;
        cnt_table_count(&t->waiting, (uint64_t)-1);
        cnt_table_count(&t->queue_grants, 1);
    }
    /* Each event reports the counter as this release leaves it, like the
     * answer of a wait_acquire granted at once. The figure takes the
     * maximum's word, which only admission reads, so the owner reports it
     * without coming back for the lock. */
    for (k = first; k != NULL; k = STAILQ_NEXT(k, grant_link))
        k->granted_consumption = c->consumption;
    if (TAILQ_EMPTY(&q->tickets)) {
        *qp = SLIST_NEXT(q, link);
        c->flags &= (uint8_t)~CNT_COUNTER_QUEUED;
        free(q);
        cnt_map_uncharge(&t->map, sizeof(*q));
    }
}

/* Hands the granted tickets to the sink, oldest grant first. Each ticket
 * leaves the list before the sink gets it: from then on its link is the
 * sink's (the owner's mailbox threads it through the same field). */
void cnt_table_sink_list(cnt_table *t, cnt_grant_list *granted)
{
    cnt_ticket *k;

    while ((k = STAILQ_FIRST(granted)) != NULL) {
        STAILQ_REMOVE_HEAD(granted, grant_link);
        STAILQ_NEXT(k, grant_link) = NULL;
        t->sink.fn(t->sink.ctx, k);
    }
}

/* Takes queued k out of its counter's queue; the ones behind it may now
 * be granted (when k was the head that blocked them). */
static void do_unqueue(cnt_table *t, size_t b, cnt_ticket *k,
                       cnt_grant_list *granted)
{
    cnt_counter *c = do_find(t, b, k->name, k->name_len);
    cnt_queue *q = *do_queue_link(t, b, c);

    TAILQ_REMOVE(&q->tickets, k, queue_link);
    /* Out of the queue without a grant: no link, and lease id 0. */
    STAILQ_NEXT(k, grant_link) = NULL;
    k->lease_id = 0;
    q->len--;
    cnt_table_count(&t->waiting, (uint64_t)-1);
    do_grant_heads(t, b, c, granted);
}

/* Queues k at the tail of c's queue, making the queue if c has none;
 * false when memory is short (nothing changes). */
static bool do_enqueue(cnt_table *t, size_t b, cnt_counter *c, cnt_ticket *k,
                       uint32_t *position)
{
    cnt_queue *q;

    if (c->flags & CNT_COUNTER_QUEUED) {
        q = *do_queue_link(t, b, c);
    } else {
        if (!cnt_map_charge(&t->map, sizeof(*q)))
            return false;
        q = malloc(sizeof(*q));
        if (q == NULL) {
            cnt_map_uncharge(&t->map, sizeof(*q));
            return false;
        }
        q->counter = c;
        TAILQ_INIT(&q->tickets);
        q->len = 0;
        SLIST_INSERT_HEAD(&t->queues[b % CNT_MAP_STRIPES], q, link);
        c->flags |= CNT_COUNTER_QUEUED;
    }
    TAILQ_INSERT_TAIL(&q->tickets, k, queue_link);
    q->len++;
    k->state = CNT_TICKET_QUEUED;
    *position = q->len;
    cnt_table_count(&t->waiting, 1);
    return true;
}

/* Offers k on its counter: granted, queued, or refused; see table.h. */
cnt_status cnt_table_wait_acquire_at(cnt_table *t, const cnt_table_place *p,
                                     cnt_ticket *k, bool may_queue,
                                     cnt_wait_result *a)
{
    if (k->state != CNT_TICKET_NEW || k->resources == 0 ||
        k->maximum < k->resources || k->name_len == 0)
        return CNT_STATUS_INVALID;

    size_t b = p->bucket;
    uint32_t w = cnt_table_window_now(t);
    cnt_status st = CNT_STATUS_OK;

    a->position = 0;
    a->consumption = 0;
    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    cnt_counter *c = do_find(t, b, k->name, k->name_len);
    if (c == NULL)
        c = do_create(t, b, k->name, k->name_len, w);
    if (c == NULL)
        st = CNT_STATUS_OUT_OF_MEMORY;
    else if (!(c->flags & CNT_COUNTER_QUEUED) && do_fits(c, k))
        do_grant(t, c, k, w);
    else if (!may_queue)
        st = CNT_STATUS_RESOURCE_NOT_AVAILABLE;
    else if (!do_enqueue(t, b, c, k, &a->position))
        st = CNT_STATUS_OUT_OF_MEMORY;
    if (c != NULL)
        a->consumption = c->consumption;
    cnt_map_unlock(lock);
    return st;
}

/* Gives a granted ticket's resources back to its counter (stripe lock
 * held) and grants the queue heads that now fit. */
static uint32_t do_return(cnt_table *t, size_t b, cnt_ticket *k,
                          cnt_grant_list *granted)
{
    cnt_counter *c = do_find(t, b, k->name, k->name_len);

    do_give_back(c, k->resources, cnt_table_window_now(t));
    if (k->lease_ms != 0)
        cnt_table_count(&t->leases, (uint64_t)-1);
    do_grant_heads(t, b, c, granted);
    return k->resources;
}

/* Ends k for its owner; see table.h. */
void cnt_table_ticket_end(cnt_table *t, cnt_ticket *k, cnt_ticket_outcome *o)
{
    size_t b = ticket_bucket(t, k);
    cnt_grant_list granted = STAILQ_HEAD_INITIALIZER(granted);

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    o->was = k->state;
    o->returned = 0;
    o->free_now = true;
    if (k->state == CNT_TICKET_QUEUED) {
        do_unqueue(t, b, k, &granted);
        cnt_table_count(&t->cancels, 1);
    } else if (k->state == CNT_TICKET_GRANTED) {
        o->returned = do_return(t, b, k, &granted);
        if (k->flags & CNT_TICKET_IN_FLIGHT) {
            k->flags |= CNT_TICKET_ORPHAN;
            o->free_now = false;
        }
    }
    k->state = CNT_TICKET_ENDED;
    cnt_map_unlock(lock);
    cnt_table_sink_all(t, &granted);
}

/* k's wait ran out; see table.h. */
bool cnt_table_ticket_timeout(cnt_table *t, cnt_ticket *k)
{
    size_t b = ticket_bucket(t, k);
    cnt_grant_list granted = STAILQ_HEAD_INITIALIZER(granted);
    bool timed_out = false;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    if (k->state == CNT_TICKET_QUEUED) {
        do_unqueue(t, b, k, &granted);
        cnt_table_count(&t->timeouts, 1);
        k->state = CNT_TICKET_ENDED;
        timed_out = true;
    }
    cnt_map_unlock(lock);
    cnt_table_sink_all(t, &granted);
    return timed_out;
}

/* k's lease ran out; see table.h. */
bool cnt_table_ticket_expire(cnt_table *t, cnt_ticket *k, uint32_t *released)
{
    size_t b = ticket_bucket(t, k);
    cnt_grant_list granted = STAILQ_HEAD_INITIALIZER(granted);
    bool expired = false;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    if (k->state == CNT_TICKET_GRANTED &&
        !(k->flags & CNT_TICKET_IN_FLIGHT)) {
        *released = do_return(t, b, k, &granted);
        cnt_table_count(&t->expirations, 1);
        k->state = CNT_TICKET_EXPIRED;
        expired = true;
    }
    cnt_map_unlock(lock);
    cnt_table_sink_all(t, &granted);
    return expired;
}

/* Sets a granted ticket's lease time; see table.h. */
cnt_status cnt_table_ticket_renew(cnt_table *t, cnt_ticket *k,
                                  uint32_t lease_ms, uint64_t *lease_id)
{
    size_t b = ticket_bucket(t, k);
    cnt_status st = CNT_STATUS_NOT_ACQUIRED;

    if (lease_ms == 0)
        return CNT_STATUS_INVALID;
    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    if (k->state == CNT_TICKET_GRANTED &&
        !(k->flags & CNT_TICKET_IN_FLIGHT)) {
        if (k->lease_ms == 0)
            cnt_table_count(&t->leases, 1);
        k->lease_ms = lease_ms;
        *lease_id = k->lease_id;
        st = CNT_STATUS_OK;
    } else if (k->state == CNT_TICKET_EXPIRED) {
        st = CNT_STATUS_LEASE_EXPIRED;
    }
    cnt_map_unlock(lock);
    return st;
}

/* The owner takes a grant that came through the sink; see table.h. No
 * lock: the grant took k out of its queue, so only its owner (this thread)
 * can reach it now, and the sink's hand-over orders this after the grant
 * (a mailbox's mutex, or the same thread). */
bool cnt_table_ticket_delivered(cnt_table *t, cnt_ticket *k,
                                uint32_t *consumption)
{
    (void)t;
    k->flags &= (uint8_t)~CNT_TICKET_IN_FLIGHT;
    if ((k->flags & CNT_TICKET_ORPHAN) || k->state != CNT_TICKET_GRANTED)
        return false;
    *consumption = k->granted_consumption;
    return true;
}

/* Runs fn under k's stripe lock while k's grant is live; see table.h. */
bool cnt_table_ticket_pinned(cnt_table *t, cnt_ticket *k,
                             bool (*fn)(void *ctx, cnt_ticket *k),
                             void *ctx)
{
    size_t b = ticket_bucket(t, k);
    bool done = false;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    if (k->state == CNT_TICKET_GRANTED &&
        (k->flags & (CNT_TICKET_IN_FLIGHT | CNT_TICKET_ORPHAN)) ==
            CNT_TICKET_IN_FLIGHT)
        done = fn(ctx, k);
    cnt_map_unlock(lock);
    return done;
}

/* Lists the counters with waiters, a stripe per lock hold. */
bool cnt_table_queues(cnt_table *t, size_t *stripe, cnt_queues_fn fn,
                      void *ctx)
{
    for (; *stripe < CNT_MAP_STRIPES; (*stripe)++) {
        /* Any bucket of the stripe names its lock: b % STRIPES == stripe. */
        pthread_mutex_t *lock = cnt_map_lock(&t->map, *stripe);
        bool more = true;
        cnt_queue *q;
        SLIST_FOREACH(q, &t->queues[*stripe], link) {
            const cnt_counter *c = q->counter;
            if (!fn(ctx, c->name, c->name_len, c->consumption, q->len))
                more = false;
        }
        cnt_map_unlock(lock);
        if (!more) {
            (*stripe)++;
            return false;
        }
    }
    return true;
}

/* Reads one relaxed figure. */
static uint64_t table_figure(const atomic_uint_fast64_t *f)
{
    return atomic_load_explicit(f, memory_order_relaxed);
}

/* Fills s with the waiting side's figures. */
void cnt_table_get_wait_stats(const cnt_table *t, cnt_wait_stats *s)
{
    s->waiting = table_figure(&t->waiting);
    s->leases = table_figure(&t->leases);
    s->queue_grants = table_figure(&t->queue_grants);
    s->timeouts = table_figure(&t->timeouts);
    s->expirations = table_figure(&t->expirations);
    s->cancels = table_figure(&t->cancels);
}
