/* table_int.h: the semaphore kind's inner parts shared by table.c (Acquire,
 * Release, Get, Dump, GC) and waits.c (waiting acquisition and leases):
 * the counter node, the table, the queue of waiting tickets and the
 * helpers both use. Not for other users; engine/core/table.h is the
 * interface. The locking rule is map.h's: do_* expect the stripe lock. */
#ifndef CNT_ENGINE_TABLE_INT_H
#define CNT_ENGINE_TABLE_INT_H

#include <stdatomic.h>

#include "engine/core/table.h"

/* One counter. The node is allocated as offsetof(name) + name_len bytes
 * (24 + len), so a 16-byte name asks malloc for 40 bytes, which glibc
 * serves from a 48-byte chunk; at 41 bytes or more it would take a 64-byte
 * one, and 1,000,000 counters would need a third more memory. That is why
 * the name's hash is not stored (lookups compare the length and then the
 * bytes, and release-all hashes the name again to find the stripe), and
 * why a counter's waiters are not linked from it: a counter with waiters
 * only carries a flag, and its queue hangs off its stripe (cnt_queue). */
struct cnt_counter {
    cnt_map_node node;          /* bucket chain */
    uint32_t consumption;       /* sum of every ledger's amount on it and
                                   every granted ticket's resources */
    uint32_t max;               /* peak consumption within window `window` */
    uint32_t window;            /* window index of the last change */
    uint8_t flags;              /* CNT_COUNTER_QUEUED */
    uint16_t name_len;
    uint8_t name[];
};
CNT_MAP_NODE_CHECK(struct cnt_counter);

/* Most bytes of header a node may have: with a 16-byte name the request
 * then stays within 40 bytes, the largest glibc serves from a 48-byte
 * chunk (tests/test_table.c checks the same through the node's size). */
#define CNT_TABLE_HEADER_BUDGET 24u
_Static_assert(offsetof(struct cnt_counter, name) <= CNT_TABLE_HEADER_BUDGET,
               "counter header outgrew its 48-byte-chunk budget");

/* The counter has a queue of waiting tickets (found through its stripe's
 * list of queues): a reference Acquire may not overtake them, and the GC
 * may not collect the counter. */
#define CNT_COUNTER_QUEUED 0x01u

/* The waiting tickets of one counter, first come first served: the head
 * is granted as soon as it fits, and blocks the ones behind it until then.
 * Linked from its stripe's list (table->queues[stripe]) under that
 * stripe's lock; exists exactly while the counter's QUEUED flag is set. */
typedef struct cnt_queue {
    SLIST_ENTRY(cnt_queue) link;    /* the stripe's other queues */
    cnt_counter *counter;
    cnt_ticket_queue tickets;       /* oldest first */
    uint32_t len;
} cnt_queue;

/* A stripe's queues (an all-zero head is an empty list). */
SLIST_HEAD(cnt_queue_list, cnt_queue);

/* The clock and window length first: with the map's per-request fields
 * right after them, everything a request reads shares one cache line.
 * The waiting side comes after: only wait_acquire and the releases of a
 * counter with a queue read it. */
struct cnt_table {
    const cnt_clock *clock;
    uint32_t interval;
    cnt_map map;
    struct cnt_queue_list *queues;  /* CNT_MAP_STRIPES lists, each under
                                       its stripe's lock */
    cnt_grant_sink sink;        /* set before any wait_acquire */
    /* Set while the server stops: releases grant no queued ticket, so a
     * client about to hear of the shutdown is never handed a lease it
     * could not use (read under stripe locks, written with none held). */
    atomic_bool grants_stopped;
    atomic_uint_fast64_t next_lease_id;
    /* cnt_wait_stats figures, relaxed atomics changed under stripe locks */
    atomic_uint_fast64_t waiting, leases, queue_grants, timeouts,
        expirations, cancels;
};

/* The counter a map node of this table is (the node is its first member). */
static inline cnt_counter *cnt_counter_of(cnt_map_node *n)
{
    return (cnt_counter *)n;
}

/* The window index of wall-clock time ms: floor(s / interval), aligned on
 * the epoch. */
static inline uint32_t cnt_table_window_at(const cnt_table *t,
                                           uint64_t ms)
{
    return (uint32_t)(ms / 1000u / t->interval);
}

/* The current window index. */
static inline uint32_t cnt_table_window_now(const cnt_table *t)
{
    return cnt_table_window_at(t, cnt_clock_wall_ms(t->clock));
}

/* Creates an empty counter in bucket b, window w; NULL when memory_limit
 * or the allocator says no (then nothing has changed). */
static inline cnt_counter *do_create(cnt_table *t, size_t b,
                                     const uint8_t *name, uint16_t len,
                                     uint32_t w)
{
    cnt_map_node *n = cnt_map_do_insert(&t->map, b, name, len);

    if (n == NULL)
        return NULL;
    cnt_counter *c = cnt_counter_of(n);
    c->consumption = 0;
    c->max = 0;
    c->window = w;
    c->flags = 0;
    return c;
}

/* Finds the counter of name in bucket b, or NULL. The node layout is
 * passed as the constant it is, which keeps the lookup as cheap as one
 * written for this node type alone. */
static inline cnt_counter *do_find(cnt_table *t, size_t b,
                                   const uint8_t *name, uint16_t len)
{
    return cnt_counter_of(cnt_map_do_find_with(
        &t->map, b, name, len, offsetof(struct cnt_counter, name)));
}

/* Starts window w on c if c was last changed in an older one: the new
 * window's peak starts from the consumption carried over. */
static inline void do_roll(cnt_counter *c, uint32_t w)
{
    if (c->window < w) {
        c->max = c->consumption;
        c->window = w;
    }
}

/* The max consumption Dump reports: a stale window means nothing changed
 * since it ended, so the current window's peak is the consumption. */
static inline uint32_t do_max_in_window(const cnt_counter *c,
                                        uint32_t w)
{
    return c->window < w ? c->consumption : c->max;
}

/* Takes amount off c (the ledger has already been checked or drained). */
static inline void do_give_back(cnt_counter *c, uint32_t amount,
                                uint32_t w)
{
    do_roll(c, w);
    c->consumption -= amount;
}

/* Adds n to one of the table's relaxed figures (n may wrap to subtract). */
static inline void cnt_table_count(atomic_uint_fast64_t *f, uint64_t n)
{
    atomic_fetch_add_explicit(f, n, memory_order_relaxed);
}

/* Grants the tickets at the head of c's queue while they fit (stripe lock
 * held), appending them to granted for cnt_table_sink_all; a no-op for a
 * counter without a queue. Defined in waits.c. */
void do_grant_heads(cnt_table *t, size_t b, cnt_counter *c,
                    cnt_grant_list *granted);

/* Hands each granted ticket of the list to the table's sink, oldest grant
 * first, leaving the list empty (stripe lock dropped). Defined in
 * waits.c. */
void cnt_table_sink_list(cnt_table *t, cnt_grant_list *granted);

/* do_grant_heads for a release (stripe lock held): inline, so that a
 * release of a counter nobody waits on pays one flag test, not a call. */
static inline void do_grant_waiting(cnt_table *t, size_t b, cnt_counter *c,
                                    cnt_grant_list *granted)
{
    if (c->flags & CNT_COUNTER_QUEUED)
        do_grant_heads(t, b, c, granted);
}

/* cnt_table_sink_list after a release: nothing to do for an empty list. */
static inline void cnt_table_sink_all(cnt_table *t, cnt_grant_list *granted)
{
    if (!STAILQ_EMPTY(granted))
        cnt_table_sink_list(t, granted);
}

#endif
