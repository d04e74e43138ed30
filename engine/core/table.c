/* table.c: the counter table: a fixed bucket array of chained nodes with
 * names inline, striped mutexes, Acquire/Release/Get with the per-connection
 * ledger, max consumption per epoch-aligned window, Dump and GC sweeps.
 * Locking rule (see table.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/hash.h"
#include "engine/core/table.h"

/* One counter. The node is allocated as offsetof(name) + name_len bytes
 * (22 + len), so a 16-byte name asks malloc for 38 bytes, which glibc
 * serves from a 48-byte chunk; at 41 bytes or more it would take a 64-byte
 * one. That is why the name's hash is not stored: lookups compare the
 * length and then the bytes, and release-all hashes the name again to find
 * the stripe. Fields that grow the header must pay for it in issue 4's RSS
 * budget (see CNT_TABLE_HEADER_BUDGET). */
struct cnt_counter {
    struct cnt_counter *next;   /* bucket chain */
    uint32_t consumption;       /* sum of every ledger's amount on it */
    uint32_t max;               /* peak consumption within window `window` */
    uint32_t window;            /* window index of the last change */
    /* Roadmap: a waiting acquisition would add a pointer to a FIFO of
     * waiters here (woken by do_release), and leases a link into the
     * engine's timing wheel; neither exists yet. */
    uint16_t name_len;
    uint8_t name[];
};

/* Most bytes of header a node may have: with a 16-byte name the request
 * then stays within 40 bytes, the largest glibc serves from a 48-byte
 * chunk (tests/test_table.c checks the same through the public size). */
#define CNT_TABLE_HEADER_BUDGET 24u
_Static_assert(offsetof(struct cnt_counter, name) <= CNT_TABLE_HEADER_BUDGET,
               "counter header outgrew its 48-byte-chunk budget");

/* A stripe lock on a cache line of its own, so two workers locking
 * neighbouring stripes do not fight over one line. */
typedef struct cnt_table_stripe {
    _Alignas(64) pthread_mutex_t mutex;
    cnt_dump_cursor *paused;    /* Dumps paused in this stripe's buckets */
} cnt_table_stripe;

struct cnt_table {
    cnt_counter **buckets;
    size_t nbuckets;
    cnt_table_stripe *stripes;
    uint32_t interval;
    uint64_t memory_limit;
    const cnt_clock *clock;
    cnt_hash_key key;
    uint64_t base_memory;               /* table, buckets and stripes */
    atomic_uint_fast64_t objects;
    atomic_uint_fast64_t total_objects;
    atomic_uint_fast64_t node_memory;   /* bytes of live nodes */
    atomic_uint_fast64_t used_buckets;  /* buckets with at least one node */
};

/* Bytes a node with a len-byte name costs. */
size_t cnt_table_counter_size(uint16_t len)
{
    return offsetof(struct cnt_counter, name) + len;
}

/* Reads a table counter (relaxed: figures, not synchronisation). */
static uint64_t cnt_table_load(const atomic_uint_fast64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* Adds n to a table counter and returns the new value. */
static uint64_t cnt_table_add(atomic_uint_fast64_t *v, uint64_t n)
{
    return atomic_fetch_add_explicit(v, n, memory_order_relaxed) + n;
}

static void cnt_table_subtract(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

/* Checks cfg and copies it into t with the defaults filled in. */
static bool cnt_table_configure(cnt_table *t, const cnt_table_config *cfg)
{
    static const cnt_table_config none;

    if (cfg == NULL)
        cfg = &none;
    if ((uint64_t)cfg->buckets > UINT32_MAX)
        return false;
    t->nbuckets = cfg->buckets ? cfg->buckets : CNT_DEFAULT_BUCKETS;
    t->interval = cfg->interval ? cfg->interval : CNT_DEFAULT_INTERVAL;
    t->memory_limit = cfg->memory_limit;
    t->clock = cfg->clock ? cfg->clock : &cnt_clock_system;
    return true;
}

/* Builds a table; NULL when memory is short or cfg is out of range. */
cnt_table *cnt_table_new(const cnt_table_config *cfg)
{
    cnt_table *t = calloc(1, sizeof *t);
    size_t i;

    if (t == NULL)
        return NULL;
    if (!cnt_table_configure(t, cfg) || cnt_hash_key_random(&t->key) != 0)
        goto fail;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    t->stripes = aligned_alloc(_Alignof(cnt_table_stripe),
                               CNT_TABLE_STRIPES * sizeof *t->stripes);
    if (t->buckets == NULL || t->stripes == NULL)
        goto fail;
    for (i = 0; i < CNT_TABLE_STRIPES; i++) {
        t->stripes[i].paused = NULL;
        if (pthread_mutex_init(&t->stripes[i].mutex, NULL) != 0)
            break;
    }
    if (i < CNT_TABLE_STRIPES) {
        while (i-- > 0)
            pthread_mutex_destroy(&t->stripes[i].mutex);
        goto fail;
    }
    t->base_memory = sizeof *t + t->nbuckets * sizeof *t->buckets +
                     CNT_TABLE_STRIPES * sizeof *t->stripes;
    return t;
fail:
    free(t->stripes);
    free(t->buckets);
    free(t);
    return NULL;
}

/* Frees every node, the locks and the table. */
void cnt_table_free(cnt_table *t)
{
    if (t == NULL)
        return;
    for (size_t b = 0; b < t->nbuckets; b++) {
        cnt_counter *c = t->buckets[b];
        while (c != NULL) {
            cnt_counter *next = c->next;
            free(c);
            c = next;
        }
    }
    for (size_t i = 0; i < CNT_TABLE_STRIPES; i++)
        pthread_mutex_destroy(&t->stripes[i].mutex);
    free(t->stripes);
    free(t->buckets);
    free(t);
}

static pthread_mutex_t *cnt_table_stripe_of(cnt_table *t, size_t bucket)
{
    return &t->stripes[bucket % CNT_TABLE_STRIPES].mutex;
}

/* The current window index: floor(now_s / interval), epoch-aligned. */
static uint32_t cnt_table_window_now(const cnt_table *t)
{
    uint64_t s = cnt_clock_wall_ms(t->clock) / 1000u;

    return (uint32_t)(s / t->interval);
}

/* Bucket of a name: the upper half of its keyed hash, modulo the bucket
 * count. Nodes do not store the hash, so release-all finds a node's bucket
 * (and stripe) again by calling this on the node's name. */
static size_t cnt_table_bucket_of(const cnt_table *t, const uint8_t *name,
                                  uint16_t len)
{
    uint32_t hash32 = (uint32_t)(cnt_hash(&t->key, name, len) >> 32);

    return hash32 % t->nbuckets;
}

/* Stores a chain link. Bucket heads are also read without the lock (see
 * cnt_table_head_peek), so every store to a link is a (relaxed) atomic
 * one; on common CPUs that is a plain store. */
static void do_link_set(cnt_counter **link, cnt_counter *c)
{
    __atomic_store_n(link, c, __ATOMIC_RELAXED);
}

/* Whether bucket b looks empty, read without its lock. Only for walks over
 * the whole table (GC, Dump): a bucket seen empty may gain a counter just
 * after, which such a walk may miss anyway (it was created after the walk
 * passed, or it is too new to collect). A sweep over a big, mostly empty
 * table then costs a read per bucket, not a lock round trip. */
static bool cnt_table_head_empty(cnt_table *t, size_t b)
{
    return __atomic_load_n(&t->buckets[b], __ATOMIC_RELAXED) == NULL;
}

/* Finds name in bucket b. With no stored hash each node in the chain costs
 * a length check and, for equal lengths, a memcmp; chains hold about one
 * node when counters are about as many as buckets. */
static cnt_counter *do_find(cnt_table *t, size_t b, const uint8_t *name,
                            uint16_t len)
{
    for (cnt_counter *c = t->buckets[b]; c != NULL; c = c->next)
        if (c->name_len == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

/* Takes size bytes from memory_limit; false when that would pass it. A
 * concurrent creation may briefly see the other's bytes and be refused
 * too, but the limit itself is never exceeded. */
static bool cnt_table_charge(cnt_table *t, size_t size)
{
    uint64_t now = cnt_table_add(&t->node_memory, size);

    if (t->memory_limit != 0 && now > t->memory_limit) {
        cnt_table_subtract(&t->node_memory, size);
        return false;
    }
    return true;
}

/* Creates an empty counter at the head of bucket b, window w; NULL when
 * memory_limit or the allocator says no (then nothing has changed). */
static cnt_counter *do_create(cnt_table *t, size_t b, const uint8_t *name,
                              uint16_t len, uint32_t w)
{
    size_t size = cnt_table_counter_size(len);
    cnt_counter *c;

    if (!cnt_table_charge(t, size))
        return NULL;
    c = malloc(size);
    if (c == NULL) {
        cnt_table_subtract(&t->node_memory, size);
        return NULL;
    }
    c->consumption = 0;
    c->max = 0;
    c->window = w;
    c->name_len = len;
    memcpy(c->name, name, len);
    if (t->buckets[b] == NULL)
        cnt_table_add(&t->used_buckets, 1);
    c->next = t->buckets[b];
    do_link_set(&t->buckets[b], c);
    cnt_table_add(&t->objects, 1);
    cnt_table_add(&t->total_objects, 1);
    return c;
}

/* Unlinks c, whose predecessor link in bucket b is *link, and returns it
 * for the caller to free once the stripe lock is dropped. */
static cnt_counter *do_unlink(cnt_table *t, size_t b, cnt_counter **link)
{
    cnt_counter *c = *link;

    do_link_set(link, c->next);
    if (t->buckets[b] == NULL)
        cnt_table_subtract(&t->used_buckets, 1);
    cnt_table_subtract(&t->objects, 1);
    cnt_table_subtract(&t->node_memory, cnt_table_counter_size(c->name_len));
    return c;
}

/* Starts window w on c if c was last changed in an older one: the new
 * window's peak starts from the consumption carried over. */
static void do_roll(cnt_counter *c, uint32_t w)
{
    if (c->window < w) {
        c->max = c->consumption;
        c->window = w;
    }
}

/* The max consumption Dump reports: a stale window means nothing changed
 * since it ended, so the current window's peak is the consumption. */
static uint32_t do_max_in_window(const cnt_counter *c, uint32_t w)
{
    return c->window < w ? c->consumption : c->max;
}

/* Adds resources to c for ledger h if the 64-bit sum stays within maximum. */
static cnt_status do_acquire(cnt_counter *c, cnt_holdings *h,
                             uint32_t resources, uint32_t maximum,
                             uint32_t w)
{
    if ((uint64_t)c->consumption + resources > maximum)
        return CNT_STATUS_RESOURCE_NOT_AVAILABLE;
    do_roll(c, w);
    c->consumption += resources;
    if (c->consumption > c->max)
        c->max = c->consumption;
    cnt_holdings_add(h, c, resources);
    return CNT_STATUS_OK;
}

/* Takes amount off c (the ledger has already been checked or drained). */
static void do_give_back(cnt_counter *c, uint32_t amount, uint32_t w)
{
    do_roll(c, w);
    c->consumption -= amount;
}

/* Fills *p with the place of name. */
void cnt_table_place_of(const cnt_table *t, const uint8_t *name,
                        uint16_t len, cnt_table_place *p)
{
    p->bucket = cnt_table_bucket_of(t, name, len);
}

/* Prefetches a place's bucket slot and stripe, or its first counter. */
void cnt_table_prefetch(cnt_table *t, const cnt_table_place *p, bool head)
{
    if (!head) {
        __builtin_prefetch(&t->buckets[p->bucket], 0, 3);
        __builtin_prefetch(cnt_table_stripe_of(t, p->bucket), 1, 3);
        return;
    }
    const cnt_counter *c = __atomic_load_n(&t->buckets[p->bucket],
                                           __ATOMIC_RELAXED);
    if (c != NULL) {
        /* A hint only, taken without the stripe lock: the node may change
         * or be collected at any moment, so nothing in it is read here
         * (reading name_len was a data race TSan caught). A node for a
         * name of up to 18 bytes spans at most two cache lines. */
        __builtin_prefetch(c, 1, 3);
        __builtin_prefetch((const uint8_t *)c + 39, 0, 3);
    }
}

/* Acquire: creates the counter on first use; see table.h. */
cnt_status cnt_table_acquire(cnt_table *t, cnt_holdings *h,
                             const uint8_t *name, uint16_t len,
                             uint32_t resources, uint32_t maximum)
{
    cnt_table_place p;

    cnt_table_place_of(t, name, len, &p);
    return cnt_table_acquire_at(t, h, &p, name, len, resources, maximum);
}

/* Acquire at a known place. */
cnt_status cnt_table_acquire_at(cnt_table *t, cnt_holdings *h,
                                const cnt_table_place *p,
                                const uint8_t *name, uint16_t len,
                                uint32_t resources, uint32_t maximum)
{
    if (resources == 0 || maximum < resources || len == 0)
        return CNT_STATUS_INVALID;
    /* Room in the ledger first, outside the lock: the add under the lock
     * then cannot fail halfway through. */
    if (!cnt_holdings_reserve(h))
        return CNT_STATUS_OUT_OF_MEMORY;

    size_t b = p->bucket;
    uint32_t w = cnt_table_window_now(t);
    pthread_mutex_t *m = cnt_table_stripe_of(t, b);
    cnt_status st = CNT_STATUS_OUT_OF_MEMORY;

    pthread_mutex_lock(m);
    cnt_counter *c = do_find(t, b, name, len);
    if (c == NULL)
        c = do_create(t, b, name, len, w);
    if (c != NULL)
        st = do_acquire(c, h, resources, maximum, w);
    pthread_mutex_unlock(m);
    return st;
}

/* Release: only what this ledger holds; see table.h. */
cnt_status cnt_table_release(cnt_table *t, cnt_holdings *h,
                             const uint8_t *name, uint16_t len,
                             uint32_t resources)
{
    cnt_table_place p;

    cnt_table_place_of(t, name, len, &p);
    return cnt_table_release_at(t, h, &p, name, len, resources);
}

/* Release at a known place. */
cnt_status cnt_table_release_at(cnt_table *t, cnt_holdings *h,
                                const cnt_table_place *p,
                                const uint8_t *name, uint16_t len,
                                uint32_t resources)
{
    size_t b = p->bucket;
    uint32_t w = cnt_table_window_now(t);
    pthread_mutex_t *m = cnt_table_stripe_of(t, b);
    cnt_status st = CNT_STATUS_OK;

    pthread_mutex_lock(m);
    cnt_counter *c = do_find(t, b, name, len);
    if (c == NULL) {
        st = CNT_STATUS_NOT_FOUND;
    } else {
        uint32_t held = cnt_holdings_get(h, c);
        /* Release 0 is a probe: OK only while this connection holds some. */
        if (held == 0 || held < resources) {
            st = CNT_STATUS_NOT_ACQUIRED;
        } else {
            do_give_back(c, resources, w);
            cnt_holdings_sub(h, c, resources);
        }
    }
    pthread_mutex_unlock(m);
    return st;
}

/* What release-all needs inside the drain callback. */
typedef struct cnt_table_drain_ctx {
    cnt_table *t;
    uint32_t window;
} cnt_table_drain_ctx;

/* Gives one drained ledger entry back, under that counter's stripe. The
 * counter cannot have been freed: its consumption includes amount > 0. Its
 * name never changes after creation and this connection saw it under the
 * stripe lock when it acquired, so hashing it before locking is safe. */
static void cnt_table_drain_one(struct cnt_counter *c, uint32_t amount,
                                void *ctx)
{
    cnt_table_drain_ctx *d = ctx;
    size_t b = cnt_table_bucket_of(d->t, c->name, c->name_len);
    pthread_mutex_t *m = cnt_table_stripe_of(d->t, b);

    pthread_mutex_lock(m);
    do_give_back(c, amount, d->window);
    pthread_mutex_unlock(m);
}

/* Releases everything h holds, one stripe lock per entry. */
void cnt_table_release_all(cnt_table *t, cnt_holdings *h)
{
    cnt_table_drain_ctx d = { t, cnt_table_window_now(t) };

    cnt_holdings_drain(h, cnt_table_drain_one, &d);
}

/* Get: current consumption, or NOT_FOUND. */
cnt_status cnt_table_get(cnt_table *t, const uint8_t *name, uint16_t len,
                         uint32_t *consumption)
{
    cnt_table_place p;

    cnt_table_place_of(t, name, len, &p);
    return cnt_table_get_at(t, &p, name, len, consumption);
}

/* Get at a known place. */
cnt_status cnt_table_get_at(cnt_table *t, const cnt_table_place *p,
                            const uint8_t *name, uint16_t len,
                            uint32_t *consumption)
{
    size_t b = p->bucket;
    pthread_mutex_t *m = cnt_table_stripe_of(t, b);
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_lock(m);
    cnt_counter *c = do_find(t, b, name, len);
    if (c != NULL) {
        *consumption = c->consumption;
        st = CNT_STATUS_OK;
    }
    pthread_mutex_unlock(m);
    return st;
}

/* Registers cur as paused in bucket b at counter c (stripe lock held). */
static void do_dump_pause(cnt_table *t, cnt_dump_cursor *cur, size_t b,
                          cnt_counter *c)
{
    cnt_table_stripe *s = &t->stripes[b % CNT_TABLE_STRIPES];

    cur->bucket = b;
    cur->at = c;
    cur->paused = true;
    cur->prev = NULL;
    cur->next = s->paused;
    if (s->paused != NULL)
        s->paused->prev = cur;
    s->paused = cur;
}

/* Unregisters a paused cur (its stripe lock held). */
static void do_dump_unpause(cnt_table *t, cnt_dump_cursor *cur)
{
    cnt_table_stripe *s = &t->stripes[cur->bucket % CNT_TABLE_STRIPES];

    if (cur->prev != NULL)
        cur->prev->next = cur->next;
    else
        s->paused = cur->next;
    if (cur->next != NULL)
        cur->next->prev = cur->prev;
    cur->prev = cur->next = NULL;
    cur->paused = false;
}

/* Counter c of bucket b is about to be unlinked: Dumps paused at it go on
 * from its successor instead (stripe lock held). Usually no Dump is. */
static void do_dump_skip(cnt_table *t, size_t b, const cnt_counter *c)
{
    for (cnt_dump_cursor *cur = t->stripes[b % CNT_TABLE_STRIPES].paused;
         cur != NULL; cur = cur->next)
        if (cur->at == c)
            cur->at = c->next;
}

/* Reports counters of bucket b from c on, stripe lock held, at most
 * *budget of them. Returns where it stopped: NULL at the chain's end,
 * else the first counter not reported (fn said stop, or the budget ran
 * out). *stop tells whether fn said stop. */
static cnt_counter *do_dump_chain(cnt_counter *c, uint32_t w, cnt_dump_fn fn,
                                  void *ctx, unsigned *budget, bool *stop)
{
    *stop = false;
    while (c != NULL && *budget > 0) {
        (*budget)--;
        bool go_on = fn(ctx, c->name, c->name_len, c->consumption,
                        do_max_in_window(c, w));
        c = c->next;
        if (!go_on) {
            *stop = true;
            break;
        }
    }
    return c;
}

/* Dump from the cursor: a bucket at a time, each under its stripe lock for
 * at most CNT_TABLE_DUMP_PER_LOCK records; a long chain is reported over
 * several holds, the cursor paused in it between them. */
bool cnt_table_dump(cnt_table *t, cnt_dump_cursor *cursor, cnt_dump_fn fn,
                    void *ctx)
{
    uint32_t w = cnt_table_window_now(t);

    while (cursor->bucket < t->nbuckets) {
        size_t b = cursor->bucket;
        if (!cursor->paused && cnt_table_head_empty(t, b)) {
            cursor->bucket++;
            continue;
        }
        pthread_mutex_t *m = cnt_table_stripe_of(t, b);
        unsigned budget = CNT_TABLE_DUMP_PER_LOCK;
        bool stop;

        pthread_mutex_lock(m);
        cnt_counter *from = t->buckets[b];
        if (cursor->paused) {
            from = cursor->at;
            do_dump_unpause(t, cursor);
        }
        cnt_counter *rest = do_dump_chain(from, w, fn, ctx, &budget, &stop);
        if (rest != NULL)
            do_dump_pause(t, cursor, b, rest);
        else
            cursor->bucket = b + 1;
        pthread_mutex_unlock(m);
        if (stop)
            return cursor->bucket >= t->nbuckets;
    }
    return true;
}

/* Unregisters a paused cursor; nothing to do otherwise. */
void cnt_table_dump_cancel(cnt_table *t, cnt_dump_cursor *cursor)
{
    if (!cursor->paused)
        return;
    pthread_mutex_t *m = cnt_table_stripe_of(t, cursor->bucket);

    pthread_mutex_lock(m);
    do_dump_unpause(t, cursor);
    pthread_mutex_unlock(m);
}

/* Unlinks the deletable counters of bucket b onto *dead (chained through
 * next); returns how many. Consumption 0 means no ledger points at a
 * counter, so nobody can reach it once it is out of the bucket. */
static size_t do_sweep_bucket(cnt_table *t, size_t b, uint32_t w,
                              cnt_counter **dead)
{
    cnt_counter **link = &t->buckets[b];
    size_t removed = 0;

    while (*link != NULL) {
        cnt_counter *c = *link;
        if (c->consumption == 0 && c->window < w) {
            do_dump_skip(t, b, c);
            c = do_unlink(t, b, link);
            c->next = *dead;
            *dead = c;
            removed++;
        } else {
            link = &c->next;
        }
    }
    return removed;
}

/* Sweeps buckets [first, first + n), each under its stripe lock briefly;
 * the unlinked nodes are freed after the lock is dropped, so a request
 * never waits behind free() (the allocator's own locks included). */
size_t cnt_table_sweep(cnt_table *t, size_t first, size_t n)
{
    uint32_t w = cnt_table_window_now(t);
    size_t removed = 0;
    size_t end;

    if (first >= t->nbuckets)
        return 0;
    end = n < t->nbuckets - first ? first + n : t->nbuckets;

    for (size_t b = first; b < end; b++) {
        if (cnt_table_head_empty(t, b))
            continue;
        pthread_mutex_t *m = cnt_table_stripe_of(t, b);
        cnt_counter *dead = NULL;

        pthread_mutex_lock(m);
        removed += do_sweep_bucket(t, b, w, &dead);
        pthread_mutex_unlock(m);
        while (dead != NULL) {
            cnt_counter *next = dead->next;
            free(dead);
            dead = next;
        }
    }
    return removed;
}

/* Number of buckets. */
size_t cnt_table_buckets(const cnt_table *t)
{
    return t->nbuckets;
}

/* Window length in seconds. */
uint32_t cnt_table_interval(const cnt_table *t)
{
    return t->interval;
}

/* The table's clock. */
const cnt_clock *cnt_table_clock(const cnt_table *t)
{
    return t->clock;
}

/* The configured memory_limit. */
uint64_t cnt_table_memory_limit(const cnt_table *t)
{
    return t->memory_limit;
}

/* Current counts; conflicts = live counters minus non-empty buckets. */
void cnt_table_get_stats(const cnt_table *t, cnt_table_stats *s)
{
    uint64_t objects = cnt_table_load(&t->objects);
    uint64_t used = cnt_table_load(&t->used_buckets);

    s->objects = objects;
    s->total_objects = cnt_table_load(&t->total_objects);
    s->used_memory = t->base_memory + cnt_table_load(&t->node_memory);
    /* The two figures are read apart, so clamp a transient negative. */
    s->conflicts = objects > used ? objects - used : 0;
}
