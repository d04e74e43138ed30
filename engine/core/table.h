/* table.h: the semaphore counters: named counters with Acquire/Release/Get
 * through a per-connection ledger, release-all when a connection ends, the
 * peak consumption per epoch-aligned window, Dump records and the GC rule,
 * kept in a striped map (map.h) of counter nodes; and, on the same
 * counters, waiting acquisition: tickets queued first come first served,
 * granted (with a lease id) as releases make room, ended by their owner,
 * their wait's timeout or their lease's expiry. The locking rule is
 * map.h's: functions named do_* expect the caller to hold the stripe lock
 * of the bucket they touch. */
#ifndef CNT_ENGINE_TABLE_H
#define CNT_ENGINE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"
#include "engine/core/clock.h"
#include "engine/core/holdings.h"
#include "engine/core/map.h"
#include "engine/core/ticket.h"

#define CNT_DEFAULT_BUCKETS 1000000u
#define CNT_DEFAULT_INTERVAL 86400u

typedef struct cnt_table cnt_table;
typedef struct cnt_counter cnt_counter;

/* How to build a table. Zero fields take the defaults. */
typedef struct cnt_table_config {
    size_t buckets;             /* default CNT_DEFAULT_BUCKETS; at most
                                   UINT32_MAX (buckets come from 32 bits
                                   of the hash) */
    uint32_t interval;          /* consumption window, seconds; default 86400 */
    uint64_t memory_limit;      /* bytes of counter nodes (not the fixed
                                   bucket array and locks); 0 = unlimited;
                                   ignored when budget is set */
    cnt_map_budget *budget;     /* a budget shared with the other maps
                                   (the rate limits); NULL = the table's
                                   own, with memory_limit */
    const cnt_clock *clock;     /* default cnt_clock_system; must outlive t */
} cnt_table_config;

/* Builds a table; NULL when memory is short or cfg is out of range. */
cnt_table *cnt_table_new(const cnt_table_config *cfg);

/* Frees the table and every counter; no other thread may use it. */
void cnt_table_free(cnt_table *t);

/* Where a name lives: its bucket, from one keyed hash. A connection that
 * has several requests buffered computes the places first and prefetches
 * them, so the cache misses of a batch overlap instead of queueing one
 * after another (with 100,000 keys the requests are memory-bound). */
typedef struct cnt_table_place {
    size_t bucket;
} cnt_table_place;

/* Fills *p with the place of name (hashes it). */
void cnt_table_place_of(const cnt_table *t, const uint8_t *name,
                        uint16_t len, cnt_table_place *p);

/* Hints the CPU to load what a request at p will touch: with head false
 * the bucket slot and its stripe lock; with head true (call it later, when
 * the slot has likely arrived) the first counter of the bucket. Reads
 * without locks, changes nothing. */
void cnt_table_prefetch(cnt_table *t, const cnt_table_place *p, bool head);

/* cnt_table_get, cnt_table_acquire and cnt_table_release with the place
 * already computed by cnt_table_place_of for the same name. */
cnt_status cnt_table_get_at(cnt_table *t, const cnt_table_place *p,
                            const uint8_t *name, uint16_t len,
                            uint32_t *consumption);
cnt_status cnt_table_acquire_at(cnt_table *t, cnt_holdings *h,
                                const cnt_table_place *p,
                                const uint8_t *name, uint16_t len,
                                uint32_t resources, uint32_t maximum);
cnt_status cnt_table_release_at(cnt_table *t, cnt_holdings *h,
                                const cnt_table_place *p,
                                const uint8_t *name, uint16_t len,
                                uint32_t resources);

/* Get: current consumption of name, or CNT_STATUS_NOT_FOUND. */
cnt_status cnt_table_get(cnt_table *t, const uint8_t *name, uint16_t len,
                         uint32_t *consumption);

/* Acquire resources of name against maximum for the connection whose ledger
 * is h (creates the counter). The caller has validated the arguments
 * (resources >= 1, maximum >= resources, len >= 1). Returns OK,
 * RESOURCE_NOT_AVAILABLE or OUT_OF_MEMORY (ledger room, memory_limit or a
 * failed allocation; nothing is changed then). Sums are checked in 64 bits.
 * Arguments that break the preconditions get INVALID and change nothing. */
cnt_status cnt_table_acquire(cnt_table *t, cnt_holdings *h,
                             const uint8_t *name, uint16_t len,
                             uint32_t resources, uint32_t maximum);

/* Release resources of name held through h. Returns OK, NOT_FOUND or
 * NOT_ACQUIRED (more than h holds, or 0 when h holds none). */
cnt_status cnt_table_release(cnt_table *t, cnt_holdings *h,
                             const uint8_t *name, uint16_t len,
                             uint32_t resources);

/* Releases everything h holds (a connection ended), in time proportional
 * to the number of entries in h. */
void cnt_table_release_all(cnt_table *t, cnt_holdings *h);

/* Called for each counter during a Dump, under its stripe lock: copy, do
 * not call back into the table. Return false to stop after this record. */
typedef bool (*cnt_dump_fn)(void *ctx, const uint8_t *name, uint16_t len,
                            uint32_t current, uint32_t max_in_window);

/* Visits counters from the cursor (the map's, start from {0}: a GC sweep
 * unlinking the counter it points at moves it on, so every counter that
 * exists for the whole Dump is reported exactly once; the owner keeps it
 * alive and calls cnt_table_dump_cancel if it gives up early), at most
 * CNT_MAP_DUMP_PER_LOCK under one stripe lock, until fn returns false (the
 * cursor then points just past that record, possibly inside a chain),
 * CNT_MAP_DUMP_SCAN buckets have been looked at, or the table ends. Returns true when the table is
 * finished (the cursor is then no longer paused); false means call again. */
bool cnt_table_dump(cnt_table *t, cnt_map_cursor *cursor, cnt_dump_fn fn,
                    void *ctx);

/* Ends a Dump before the table is finished: unregisters a paused cursor.
 * Harmless on a finished or never-started cursor. */
void cnt_table_dump_cancel(cnt_table *t, cnt_map_cursor *cursor);

/* The map that holds t's counters, for the collector to sweep. */
cnt_map *cnt_table_map(cnt_table *t);

/* The semaphore kind's sweep test for t's map: a counter may go when its
 * consumption is 0 (no ledger points at it) and it last changed before the
 * window the sweep runs in. */
cnt_map_may_go cnt_table_may_go(cnt_table *t);

/* Number of buckets. */
size_t cnt_table_buckets(const cnt_table *t);

/* Window length in seconds. */
uint32_t cnt_table_interval(const cnt_table *t);

/* The table's clock. */
const cnt_clock *cnt_table_clock(const cnt_table *t);

/* The limit of the table's memory budget (0 = unlimited). */
uint64_t cnt_table_memory_limit(const cnt_table *t);

/* Fills s with the table's current counts: its map's (counters are the
 * map's nodes), with used_memory including the table's own struct. Read
 * without locks, so approximate while requests run. */
void cnt_table_get_stats(const cnt_table *t, cnt_map_stats *s);

/* ---- Waiting acquisition and leases ----
 *
 * A ticket (ticket.h) is one wait_acquire request. Its owner (the
 * connection's worker) builds it with cnt_table_ticket_new, offers it with
 * cnt_table_wait_acquire_at and ends it with cnt_table_ticket_end (release,
 * cancel, connection closed), cnt_table_ticket_timeout (its wait ran out)
 * or cnt_table_ticket_expire (its lease ran out). Any thread's release may
 * grant queued tickets: the grant is decided under the counter's stripe
 * lock (resources counted, lease id given, CNT_TICKET_IN_FLIGHT set), and
 * after the lock is dropped the ticket goes to the table's grant sink,
 * which must get it to its owner (the server mails it to the owner's
 * worker); the owner then calls cnt_table_ticket_delivered. A ticket ended
 * while its grant is in flight is freed by whoever takes the delivery. */

/* Where grants decided by any thread go: fn(ctx, ticket) is called once
 * per granted ticket, by the thread that granted it, with no lock held. It
 * must not fail (the server links the ticket into the owner's mailbox). */
typedef struct cnt_grant_sink {
    void (*fn)(void *ctx, cnt_ticket *k);
    void *ctx;
} cnt_grant_sink;

/* Sets the grant sink; call before any ticket is queued. */
void cnt_table_set_grant_sink(cnt_table *t, const cnt_grant_sink *sink);

/* With stopped true, no queued ticket is granted any more: releases of
 * every kind give their resources back and leave the queues waiting (the
 * lease id counter does not move), so a server on its way down tells a
 * waiter "shutdown, nothing held" rather than granting it a lease in its
 * last moment. With false, grants resume at the next release of each
 * counter. Any thread; the server stops grants once its workers halted. */
void cnt_table_stop_grants(cnt_table *t, bool stopped);

/* Builds a ticket for name (state NEW, every other field zero, timer not
 * armed), counting its bytes against memory_limit; NULL when the limit or
 * the allocator says no. */
cnt_ticket *cnt_table_ticket_new(cnt_table *t, const uint8_t *name,
                                 uint16_t len);

/* Frees a ticket that is NEW or ENDED/EXPIRED (out of the table) and
 * gives its bytes back. */
void cnt_table_ticket_free(cnt_table *t, cnt_ticket *k);

/* What a wait acquisition tells its client. */
typedef struct cnt_wait_result {
    uint32_t position;          /* queued: place in line, 1 = next */
    uint32_t consumption;       /* the counter's, after the request */
} cnt_wait_result;

/* Offers ticket k (NEW; resources >= 1, maximum >= resources, lease_ms,
 * opaque, owner and worker set; p is the place of its name) on its
 * counter, creating the counter. Granted at once when the queue is empty
 * and it fits (k->state GRANTED, lease id set, not in flight); otherwise
 * queued at the tail when may_queue (k->state QUEUED, position set), else
 * RESOURCE_NOT_AVAILABLE. OUT_OF_MEMORY when the counter or the queue
 * cannot be made (nothing changes); INVALID for broken preconditions. */
cnt_status cnt_table_wait_acquire_at(cnt_table *t, const cnt_table_place *p,
                                     cnt_ticket *k, bool may_queue,
                                     cnt_wait_result *a);

/* How a ticket ended at its owner's request. */
typedef struct cnt_ticket_outcome {
    uint8_t was;                /* its state before: QUEUED (the wait is
                                   cancelled), GRANTED (returned), EXPIRED
                                   (its lease had run out) */
    uint32_t returned;          /* resources given back (GRANTED only) */
    bool free_now;              /* false: its grant is in flight, and the
                                   delivery frees it */
} cnt_ticket_outcome;

/* Ends k for its owner (release, cancel, connection closed): a queued
 * ticket leaves its queue, a granted one gives its resources back (which
 * may grant the tickets behind it); k is then ENDED. */
void cnt_table_ticket_end(cnt_table *t, cnt_ticket *k,
                          cnt_ticket_outcome *o);

/* k's wait ran out: a ticket still QUEUED leaves its queue (the ones
 * behind it may then be granted) and is ENDED; returns true (tell the
 * client, free it). False when it was granted meanwhile (the grant is on
 * its way; nothing changes). */
bool cnt_table_ticket_timeout(cnt_table *t, cnt_ticket *k);

/* k's lease ran out: a GRANTED ticket gives its resources back (granting
 * the tickets behind it) and becomes EXPIRED; returns true and sets
 * *released. False when it was not granted (nothing changes). */
bool cnt_table_ticket_expire(cnt_table *t, cnt_ticket *k,
                             uint32_t *released);

/* Sets a granted ticket's lease time to lease_ms (>= 1) from now, for its
 * owner, who re-arms the timer: OK (with *lease_id), LEASE_EXPIRED (an
 * EXPIRED ticket), NOT_ACQUIRED (queued, or its grant not delivered). */
cnt_status cnt_table_ticket_renew(cnt_table *t, cnt_ticket *k,
                                  uint32_t lease_ms, uint64_t *lease_id);

/* The owner takes a grant that arrived through the sink: true when k is
 * GRANTED and still its (tell the client; *consumption is the counter's
 * as the granting release left it, carried in the ticket); false when the
 * owner ended it meanwhile (free it). Takes no lock: only the owner's
 * thread may call it, once per grant. */
bool cnt_table_ticket_delivered(cnt_table *t, cnt_ticket *k,
                                uint32_t *consumption);

/* Runs fn(ctx, k) under the stripe lock of k's counter when k's grant is
 * in flight to an owner that has not ended it (GRANTED, IN_FLIGHT, not
 * ORPHAN): while the lock is held the owner cannot end k, so its
 * connection is still there. Returns what fn returned, false otherwise.
 * For the granting thread, between the grant and the sink. */
bool cnt_table_ticket_pinned(cnt_table *t, cnt_ticket *k,
                             bool (*fn)(void *ctx, cnt_ticket *k),
                             void *ctx);

/* Called for each counter with a queue during cnt_table_queues, under its
 * stripe lock: copy, do not call back. Return false to stop after this
 * stripe. */
typedef bool (*cnt_queues_fn)(void *ctx, const uint8_t *name, uint16_t len,
                              uint32_t consumption, uint32_t waiting);

/* Lists the counters that have waiters, stripe by stripe from *stripe
 * (start at 0); returns true when done, false when fn asked to stop
 * (*stripe is then where to go on). */
bool cnt_table_queues(cnt_table *t, size_t *stripe, cnt_queues_fn fn,
                      void *ctx);

/* The waiting side's figures (approximate while requests run). */
typedef struct cnt_wait_stats {
    uint64_t waiting;           /* tickets queued now */
    uint64_t leases;            /* granted tickets with a lease now */
    uint64_t queue_grants;      /* tickets granted from a queue, ever */
    uint64_t timeouts;          /* waits that ran out */
    uint64_t expirations;       /* leases that ran out */
    uint64_t cancels;           /* queued tickets their owner ended */
} cnt_wait_stats;

/* Fills s with the waiting side's figures. */
void cnt_table_get_wait_stats(const cnt_table *t, cnt_wait_stats *s);

#endif
