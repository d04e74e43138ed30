/* map.h: a generic striped hash map of named nodes, the storage under every
 * kind of record the engine keeps (the semaphore counters of table.c, the
 * rate limits of limits.c, the tenants of throttle.c; several maps may
 * share one memory budget). A
 * fixed array of buckets chained through nodes that hold their name
 * inline; a keyed hash picks the bucket; striped mutexes guard the
 * chains (bucket b by stripe b % CNT_MAP_STRIPES). Around that: the batch
 * look-ahead (bucket of a name, prefetch), a Dump cursor that can pause
 * inside a chain, an incremental sweep that asks the node's kind whether
 * each node may go, and the memory accounting of the nodes.
 *
 * Locking rule, written once for the map and the kinds built on it:
 * functions with do_ in their name (cnt_map_do_find, cnt_map_do_insert,
 * cnt_map_do_unlink, and the static do_* helpers of those files) expect the
 * caller to hold the stripe lock of the bucket they touch; every other
 * function takes and drops the locks it needs itself. No function holds
 * two stripe locks, with one exception: the rate limits' multi-check
 * (limits_check.c) holds the stripe locks of all its items at once, so that
 * they are judged and charged together. It takes them through
 * cnt_map_lock_many, in ascending stripe order, each stripe once, from
 * one map only, and takes no other lock
 * while holding them; every other holder keeps at most one stripe lock of
 * that map, so no cycle of waits can form and it cannot deadlock.
 *
 * The tenant throttle (throttle.c) adds two locks of its own around its
 * map, always in this order: its configuration lock (only calls that
 * change the configuration take it, first), then one stripe lock of its
 * map, then its node lock (the figures every charge shares). The node lock
 * is taken after a stripe lock, never before one, and nothing is locked
 * while it is held; so a charge (stripe, node) and a configuration change
 * (configuration, stripe, node) wait for each other in one direction only.
 *
 * Nodes: each kind defines its own node type, which starts with the map's
 * header and ends with the name:
 *
 *     struct my_record {
 *         cnt_map_node node;      the chain link, owned by the map
 *         ...                     the kind's own fields
 *         uint16_t name_len;      written by the map
 *         uint8_t name[];         written by the map
 *     };
 *     CNT_MAP_NODE_CHECK(struct my_record);
 *
 * and builds its map with name_offset = offsetof(struct my_record, name).
 * A node is allocated as exactly name_offset + name length bytes, so a kind
 * that needs a waiter-queue pointer or a lease link pays for it in its own
 * nodes and never bloats another kind's. */
#ifndef CNT_ENGINE_MAP_H
#define CNT_ENGINE_MAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/core/clock.h"
#include "engine/core/hash.h"

#define CNT_MAP_STRIPES 4096u

/* Bytes of a node cnt_map_prefetch asks the CPU to load: 40, the largest
 * request glibc serves from a 48-byte chunk, which spans at most two
 * cache lines. */
#define CNT_MAP_PREFETCH_SPAN 40u

/* Most nodes a Dump visits under one hold of a stripe lock; after them it
 * drops the lock (letting requests on that stripe in) and goes on. */
#define CNT_MAP_DUMP_PER_LOCK 64u

/* Most buckets one call of cnt_map_dump looks at: a Dump of a huge, mostly
 * empty map then costs its caller a bounded slice of work per call (about
 * a millisecond's worth of reads), not a walk of the whole bucket array. */
#define CNT_MAP_DUMP_SCAN 65536u

/* The map's part of every node: the bucket chain's link. Links are atomic
 * because bucket heads are read without the lock (prefetch, and the GC's
 * and Dump's skipping of empty buckets); every access is relaxed, the
 * stripe mutex orders everything else. */
typedef struct cnt_map_node {
    _Atomic(struct cnt_map_node *) next;
} cnt_map_node;

/* Checks at compile time that a kind's node type has the shape the map
 * relies on: the header first, the 16-bit name length just before the
 * name, the name last. */
#define CNT_MAP_NODE_CHECK(type)                                            \
    _Static_assert(offsetof(type, node) == 0,                               \
                   #type ": the map header must come first");               \
    _Static_assert(offsetof(type, name_len) + sizeof(uint16_t) ==           \
                   offsetof(type, name),                                    \
                   #type ": name_len must sit just before name")

/* Where a Dump has got to; start from {0}. A Dump may stop inside a
 * bucket's chain (its caller's output buffer is full); the cursor then
 * stays "paused" in that bucket: registered with the bucket's stripe, so
 * that unlinking the node it points at moves it to that node's successor.
 * Every node that exists for the whole Dump is visited exactly once,
 * however long the chain and however long the pause. The fields belong to
 * the map; the owner keeps the struct alive and calls cnt_map_dump_cancel
 * if it gives up before the end. */
typedef struct cnt_map_cursor {
    size_t bucket;                      /* next bucket to visit */
    cnt_map_node *at;                   /* paused: next node of bucket */
    struct cnt_map_cursor *prev, *next; /* the stripe's paused cursors */
    bool paused;
} cnt_map_cursor;

/* A stripe lock on a cache line of its own, so two workers locking
 * neighbouring stripes do not fight over one line. */
typedef struct cnt_map_stripe {
    _Alignas(64) pthread_mutex_t mutex;
    cnt_map_cursor *paused;     /* Dumps paused in this stripe's buckets */
    uint64_t swept_ns;          /* under the lock: the latest monotonic
                                   time a sweep judged a node of this
                                   stripe dead at and removed it */
} cnt_map_stripe;

/* A memory budget that several maps charge together, so that one limit
 * (counter.memory_limit) covers the semaphore counters, their tickets and
 * the rate-limit records: whichever kind fills it, the next allocation of
 * any kind is refused. Owned by whoever builds the maps, and must outlive
 * them. */
typedef struct cnt_map_budget {
    atomic_uint_fast64_t used;  /* bytes charged by every map on it */
    uint64_t limit;             /* 0 = unlimited */
} cnt_map_budget;

/* How to build a map. */
typedef struct cnt_map_config {
    size_t buckets;             /* 1 to UINT32_MAX (buckets come from 32
                                   bits of the hash) */
    uint64_t memory_limit;      /* bytes of nodes (not the bucket array and
                                   locks); 0 = unlimited; ignored when
                                   budget is set */
    size_t name_offset;         /* offsetof(kind's node, name); even, and
                                   room for the header and name_len */
    cnt_map_budget *budget;     /* a shared budget to charge; NULL = the
                                   map's own, with memory_limit */
    bool adaptive;              /* stripe locks spin a little before they
                                   sleep (for kinds whose hot records are
                                   locked by every worker at once) */
} cnt_map_config;

/* A map. The fields are the map's own; they are in the header only so that
 * the per-request helpers below can be inlined into the kinds' code. The
 * fields every request reads come first, apart from the counters that
 * change when nodes come and go. */
typedef struct cnt_map {
    _Atomic(cnt_map_node *) *buckets;
    size_t nbuckets;
    cnt_map_stripe *stripes;
    cnt_hash_key key;
    size_t name_offset;
    cnt_map_budget *budget;     /* &own or a shared one */
    cnt_map_budget own;
    uint64_t base_memory;       /* bucket array and stripes */
    atomic_uint_fast64_t objects;
    atomic_uint_fast64_t total_objects;
    atomic_uint_fast64_t node_memory;   /* bytes of live nodes */
    atomic_uint_fast64_t used_buckets;  /* buckets with at least one node */
} cnt_map;

/* Counts kept current by the map (read without locks, so approximate
 * while requests run). */
typedef struct cnt_map_stats {
    uint64_t objects;           /* live nodes */
    uint64_t total_objects;     /* nodes ever inserted */
    uint64_t used_memory;       /* bytes: bucket array, locks and nodes */
    uint64_t conflicts;         /* nodes sharing a bucket with another */
} cnt_map_stats;

/* A kind's answer to "may this node go now?", asked by a sweep under the
 * node's stripe lock with the time the sweep runs at. Say yes only when
 * nothing outside the map can reach the node any more: the sweep frees it
 * once the lock is dropped. */
typedef struct cnt_map_may_go {
    bool (*fn)(void *ctx, const cnt_map_node *node, const cnt_clock_now *now);
    void *ctx;
} cnt_map_may_go;

/* Called for each node during a Dump, under its stripe lock: copy, do not
 * call back into the map. Return false to stop after this node. */
typedef bool (*cnt_map_visit_fn)(void *ctx, const cnt_map_node *node);

/* Sets up a budget of limit bytes (0 = unlimited), nothing charged. */
void cnt_map_budget_init(cnt_map_budget *b, uint64_t limit);

/* Bytes charged to b now, by every map on it. */
uint64_t cnt_map_budget_used(const cnt_map_budget *b);

/* Builds an empty map in m; returns 0, EINVAL for a config out of range,
 * ENOMEM, or the error of the random source or of a mutex. */
int cnt_map_init(cnt_map *m, const cnt_map_config *cfg);

/* Frees every node, the buckets and the locks; no other thread may use m. */
void cnt_map_destroy(cnt_map *m);

/* Returns the bucket of a name: the upper half of its keyed hash, modulo
 * the bucket count. Nodes do not store the hash (it would not fit the
 * semaphore node's 48-byte chunk), so whoever holds a node and needs its
 * bucket calls this on the node's name. */
static inline size_t cnt_map_bucket_of(const cnt_map *m, const uint8_t *name,
                                       uint16_t len)
{
    uint32_t hash32 = (uint32_t)(cnt_hash(&m->key, name, len) >> 32);

    return hash32 % m->nbuckets;
}

/* Returns the name stored in node n. */
static inline const uint8_t *cnt_map_node_name(const cnt_map *m,
                                               const cnt_map_node *n)
{
    return (const uint8_t *)n + m->name_offset;
}

/* Returns the length of the name stored in node n. */
static inline uint16_t cnt_map_node_len(const cnt_map *m,
                                        const cnt_map_node *n)
{
    return *(const uint16_t *)((const uint8_t *)n + m->name_offset -
                               sizeof(uint16_t));
}

/* Hints the CPU to load what a request on bucket b will touch: with head
 * false the bucket slot and its stripe lock; with head true (call it later,
 * when the slot has likely arrived) the first node of the bucket. Reads
 * without locks, changes nothing. A connection with several requests
 * buffered computes their buckets first and prefetches them, so the cache
 * misses of a batch overlap instead of queueing one after another (with
 * 100,000 keys the requests are memory-bound). */
static inline void cnt_map_prefetch(cnt_map *m, size_t b, bool head)
{
    if (!head) {
        __builtin_prefetch(&m->buckets[b], 0, 3);
        __builtin_prefetch(&m->stripes[b % CNT_MAP_STRIPES].mutex, 1, 3);
        return;
    }
    const cnt_map_node *n = atomic_load_explicit(&m->buckets[b],
                                                 memory_order_relaxed);
    if (n != NULL) {
        /* A hint only, taken without the stripe lock: the node may change
         * or be collected at any moment, so nothing in it is read here
         * (reading its name length was a data race TSan caught). Two
         * prefetches cover the node's first CNT_MAP_PREFETCH_SPAN bytes,
         * all of a semaphore node with a name of up to 18 bytes. */
        __builtin_prefetch(n, 1, 3);
        __builtin_prefetch((const uint8_t *)n + CNT_MAP_PREFETCH_SPAN - 1,
                           0, 3);
    }
}

/* Takes the stripe lock of bucket b and returns it, for cnt_map_unlock
 * (handing it back saves finding the stripe again after the work). */
static inline pthread_mutex_t *cnt_map_lock(cnt_map *m, size_t b)
{
    pthread_mutex_t *lock = &m->stripes[b % CNT_MAP_STRIPES].mutex;

    pthread_mutex_lock(lock);
    return lock;
}

/* The latest monotonic time at which a sweep removed a node of bucket b's
 * stripe as dead (0: never); stripe lock held. A request that read its
 * time before taking the lock judges at no earlier time than this: the
 * node it would have found was judged dead at that time, and judging its
 * absence earlier could allow what the node would have refused. */
static inline uint64_t cnt_map_do_swept_ns(const cnt_map *m, size_t b)
{
    return m->stripes[b % CNT_MAP_STRIPES].swept_ns;
}

/* Drops a stripe lock cnt_map_lock returned. */
static inline void cnt_map_unlock(pthread_mutex_t *lock)
{
    pthread_mutex_unlock(lock);
}

/* Most buckets one cnt_map_lock_many takes the stripes of. */
#define CNT_MAP_LOCKSET_MAX 16u

/* The stripe locks cnt_map_lock_many holds, for cnt_map_unlock_many. */
typedef struct cnt_map_lockset {
    size_t n;                                   /* distinct stripes */
    size_t stripe[CNT_MAP_LOCKSET_MAX];         /* ascending */
} cnt_map_lockset;

/* Takes the stripe locks of the n buckets b[0..n) (1 to
 * CNT_MAP_LOCKSET_MAX) at once, as the one caller allowed to hold several
 * (see the locking rule above): each stripe once, in ascending order, so
 * that two such callers cannot wait for each other in a cycle. Fills *set
 * for cnt_map_unlock_many. Inline: a single rate-limit check comes here
 * with n = 1. */
static inline void cnt_map_lock_many(cnt_map *m, const size_t *b, size_t n,
                                     cnt_map_lockset *set)
{
    size_t *s = set->stripe, k = 0;

    /* Insertion sort of at most 16, then repeats dropped (two records of
     * one name share a stripe). */
    for (size_t i = 0; i < n; i++) {
        size_t v = b[i] % CNT_MAP_STRIPES, j = i;
        for (; j > 0 && s[j - 1] > v; j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
    for (size_t i = 0; i < n; i++)
        if (k == 0 || s[k - 1] != s[i])
            s[k++] = s[i];
    set->n = k;
    for (size_t i = 0; i < k; i++)
        pthread_mutex_lock(&m->stripes[s[i]].mutex);
}

/* Drops the stripe locks cnt_map_lock_many took, in reverse order. */
static inline void cnt_map_unlock_many(cnt_map *m,
                                       const cnt_map_lockset *set)
{
    for (size_t i = set->n; i-- > 0;)
        pthread_mutex_unlock(&m->stripes[set->stripe[i]].mutex);
}

/* Finds name in bucket b (stripe lock held), for a kind whose nodes have
 * their name at name_offset (the value the map was built with). A kind
 * that passes a compile-time constant gets the offset folded into the
 * addressing: the per-request lookup then costs what a lookup written for
 * that one node type would. With no stored hash each node costs a length
 * check and, for equal lengths, a memcmp; chains hold about one node when
 * nodes are about as many as buckets. NULL when absent. */
static inline cnt_map_node *cnt_map_do_find_with(cnt_map *m, size_t b,
                                                 const uint8_t *name,
                                                 uint16_t len,
                                                 size_t name_offset)
{
    cnt_map_node *n = atomic_load_explicit(&m->buckets[b],
                                           memory_order_relaxed);

    for (; n != NULL;
         n = atomic_load_explicit(&n->next, memory_order_relaxed)) {
        const uint8_t *p = (const uint8_t *)n + name_offset;
        if (*(const uint16_t *)(p - sizeof(uint16_t)) == len &&
            memcmp(p, name, len) == 0)
            return n;
    }
    return NULL;
}

/* Finds name in bucket b (stripe lock held); NULL when absent. */
static inline cnt_map_node *cnt_map_do_find(cnt_map *m, size_t b,
                                            const uint8_t *name, uint16_t len)
{
    return cnt_map_do_find_with(m, b, name, len, m->name_offset);
}

/* Inserts a node for name (absent: the caller looked) at the head of
 * bucket b (stripe lock held). The kind's fields are left uninitialised:
 * set them before dropping the lock. Returns NULL, changing nothing, when
 * the node would pass memory_limit or malloc fails. */
cnt_map_node *cnt_map_do_insert(cnt_map *m, size_t b, const uint8_t *name,
                                uint16_t len);

/* Unlinks n from bucket b (stripe lock held), moving Dumps paused at it on
 * to its successor; returns n, for the caller to pass to cnt_map_node_free
 * once the lock is dropped, or NULL when n is not in bucket b. */
cnt_map_node *cnt_map_do_unlink(cnt_map *m, size_t b, cnt_map_node *n);

/* Counts size bytes a kind keeps beside its nodes (records that hang off
 * them: waiters, queues) in the map's memory, against the same
 * memory_limit (the map's budget, maybe shared with other maps); false,
 * counting nothing, when that would pass the limit. Any thread, no lock
 * needed. */
bool cnt_map_charge(cnt_map *m, size_t size);

/* Gives back size bytes that cnt_map_charge counted. */
void cnt_map_uncharge(cnt_map *m, size_t size);

/* Frees a node that cnt_map_do_unlink returned. */
void cnt_map_node_free(cnt_map_node *n);

/* Visits nodes from the cursor, at most CNT_MAP_DUMP_PER_LOCK under one
 * stripe lock, until fn returns false (the cursor then points just past
 * that node, possibly inside a chain), CNT_MAP_DUMP_SCAN buckets have been
 * looked at, or the map ends. Returns true when the map is finished (the
 * cursor is then no longer paused); false means call again. */
bool cnt_map_dump(cnt_map *m, cnt_map_cursor *cur, cnt_map_visit_fn fn,
                  void *ctx);

/* Ends a Dump before the map is finished: unregisters a paused cursor.
 * Harmless on a finished or never-started cursor. */
void cnt_map_dump_cancel(cnt_map *m, cnt_map_cursor *cur);

/* Removes the nodes of buckets [first, first + n) that may_go lets go at
 * time now; returns how many. Takes each stripe lock for one bucket only,
 * and frees the nodes after dropping it. */
size_t cnt_map_sweep(cnt_map *m, size_t first, size_t n,
                     const cnt_map_may_go *may_go, const cnt_clock_now *now);

/* Number of buckets. */
size_t cnt_map_buckets(const cnt_map *m);

/* The limit of the map's budget (0 = unlimited). */
uint64_t cnt_map_memory_limit(const cnt_map *m);

/* Bytes a node named with len bytes costs in used_memory and against
 * memory_limit: exactly what it asks malloc for. */
size_t cnt_map_node_size(const cnt_map *m, uint16_t len);

/* Fills s with the map's current counts. */
void cnt_map_get_stats(const cnt_map *m, cnt_map_stats *s);

#endif
