/* map.c: the generic striped map of map.h: building and freeing it, node
 * insertion and unlinking with their memory accounting, the Dump cursor
 * that pauses inside a chain, and the incremental sweep.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "engine/core/map.h"

/* A node's name may not start further in than this: no kind needs
 * kilobytes of fields per record, so a larger offset is a mistake. */
#define CNT_MAP_NAME_OFFSET_MAX 4096u

/* Reads a map counter (relaxed: figures, not synchronisation). */
static uint64_t map_load(const atomic_uint_fast64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* Adds n to a map counter and returns the new value. */
static uint64_t map_add(atomic_uint_fast64_t *v, uint64_t n)
{
    return atomic_fetch_add_explicit(v, n, memory_order_relaxed) + n;
}

/* Subtracts n from a map counter. */
static void map_subtract(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

/* Reads a chain link or bucket head (relaxed: under the stripe lock the
 * mutex orders it; without the lock it is only a hint). */
static cnt_map_node *map_link_get(_Atomic(cnt_map_node *) *link)
{
    return atomic_load_explicit(link, memory_order_relaxed);
}

/* Stores a chain link. Bucket heads are also read without the lock, so
 * every store to a link is a (relaxed) atomic one; on common CPUs that is
 * a plain store. */
static void do_link_set(_Atomic(cnt_map_node *) *link, cnt_map_node *n)
{
    atomic_store_explicit(link, n, memory_order_relaxed);
}

/* Checks cfg; true when a map can be built from it. */
static bool map_config_ok(const cnt_map_config *cfg)
{
    if (cfg == NULL || cfg->buckets == 0 ||
        (uint64_t)cfg->buckets > UINT32_MAX)
        return false;
    return cfg->name_offset >= sizeof(cnt_map_node) + sizeof(uint16_t) &&
           cfg->name_offset <= CNT_MAP_NAME_OFFSET_MAX &&
           cfg->name_offset % _Alignof(uint16_t) == 0;
}

/* Sets up a budget; see map.h. */
void cnt_map_budget_init(cnt_map_budget *b, uint64_t limit)
{
    atomic_init(&b->used, 0);
    b->limit = limit;
}

/* Bytes charged to b now. */
uint64_t cnt_map_budget_used(const cnt_map_budget *b)
{
    return map_load(&b->used);
}

/* The attributes of the stripe locks: default, or adaptive (glibc's
 * PTHREAD_MUTEX_ADAPTIVE_NP spins briefly before it sleeps in the kernel:
 * a lock held for a few dozen nanoseconds by another core is usually free
 * again before a sleep and wake-up would even start). */
static int map_mutexattr(pthread_mutexattr_t *attr, bool adaptive)
{
    int err = pthread_mutexattr_init(attr);

    if (err != 0 || !adaptive)
        return err;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    err = pthread_mutexattr_settype(attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    if (err != 0)
        pthread_mutexattr_destroy(attr);
#endif
    return err;
}

/* Builds an empty map; see map.h. */
int cnt_map_init(cnt_map *m, const cnt_map_config *cfg)
{
    pthread_mutexattr_t attr;
    size_t i;
    int err;

    memset(m, 0, sizeof *m);
    if (!map_config_ok(cfg))
        return EINVAL;
    m->nbuckets = cfg->buckets;
    cnt_map_budget_init(&m->own, cfg->memory_limit);
    m->budget = cfg->budget != NULL ? cfg->budget : &m->own;
    m->name_offset = cfg->name_offset;
    if (cnt_hash_key_random(&m->key) != 0)
        return errno ? errno : EIO;
    /* All-zero bytes are null pointers on every platform we build for. */
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    m->stripes = aligned_alloc(_Alignof(cnt_map_stripe),
                               CNT_MAP_STRIPES * sizeof *m->stripes);
    if (m->buckets == NULL || m->stripes == NULL) {
        err = ENOMEM;
        goto fail;
    }
    err = map_mutexattr(&attr, cfg->adaptive);
    if (err != 0)
        goto fail;
    for (i = 0; i < CNT_MAP_STRIPES; i++) {
        m->stripes[i].paused = NULL;
        m->stripes[i].swept_ns = 0;
        err = pthread_mutex_init(&m->stripes[i].mutex, &attr);
        if (err != 0)
            break;
    }
    pthread_mutexattr_destroy(&attr);
    if (i < CNT_MAP_STRIPES) {
        while (i-- > 0)
            pthread_mutex_destroy(&m->stripes[i].mutex);
        goto fail;
    }
    m->base_memory = m->nbuckets * sizeof *m->buckets +
                     CNT_MAP_STRIPES * sizeof *m->stripes;
    atomic_init(&m->objects, 0);
    atomic_init(&m->total_objects, 0);
    atomic_init(&m->node_memory, 0);
    atomic_init(&m->used_buckets, 0);
    return 0;
fail:
    free(m->stripes);
    free(m->buckets);
    m->stripes = NULL;
    m->buckets = NULL;
    return err;
}

/* Frees every node, the locks and the arrays. */
void cnt_map_destroy(cnt_map *m)
{
    if (m->buckets == NULL)
        return;
    for (size_t b = 0; b < m->nbuckets; b++) {
        cnt_map_node *n = map_link_get(&m->buckets[b]);
        while (n != NULL) {
            cnt_map_node *next = map_link_get(&n->next);
            free(n);
            n = next;
        }
    }
    for (size_t i = 0; i < CNT_MAP_STRIPES; i++)
        pthread_mutex_destroy(&m->stripes[i].mutex);
    /* A shared budget may outlive this map: give back what it holds. */
    map_subtract(&m->budget->used, map_load(&m->node_memory));
    atomic_store_explicit(&m->node_memory, 0, memory_order_relaxed);
    free(m->stripes);
    free(m->buckets);
    m->stripes = NULL;
    m->buckets = NULL;
}

/* Bytes a node with a len-byte name costs. */
size_t cnt_map_node_size(const cnt_map *m, uint16_t len)
{
    return m->name_offset + len;
}

/* Whether bucket b looks empty, read without its lock. Only for walks over
 * the whole map (sweep, Dump): a bucket seen empty may gain a node just
 * after, which such a walk may miss anyway (it was inserted after the walk
 * passed, or it is too new to collect). A sweep over a big, mostly empty
 * map then costs a read per bucket, not a lock round trip. */
static bool map_head_empty(cnt_map *m, size_t b)
{
    return map_link_get(&m->buckets[b]) == NULL;
}

/* Adds size bytes to the node memory unless that would pass memory_limit;
 * false when it would. A concurrent insertion may briefly see the other's
 * bytes and be refused too, but the limit itself is never exceeded. */
bool cnt_map_charge(cnt_map *m, size_t size)
{
    cnt_map_budget *b = m->budget;
    uint64_t now = map_add(&b->used, size);

    if (b->limit != 0 && now > b->limit) {
        map_subtract(&b->used, size);
        return false;
    }
    map_add(&m->node_memory, size);
    return true;
}

/* Gives back size bytes that cnt_map_charge took. */
void cnt_map_uncharge(cnt_map *m, size_t size)
{
    map_subtract(&m->node_memory, size);
    map_subtract(&m->budget->used, size);
}

/* Inserts a node for name at the head of bucket b; see map.h. */
cnt_map_node *cnt_map_do_insert(cnt_map *m, size_t b, const uint8_t *name,
                                uint16_t len)
{
    size_t size = cnt_map_node_size(m, len);
    uint8_t *p;
    cnt_map_node *n, *head;

    if (!cnt_map_charge(m, size))
        return NULL;
    p = malloc(size);
    if (p == NULL) {
        cnt_map_uncharge(m, size);
        return NULL;
    }
    n = (cnt_map_node *)p;
    *(uint16_t *)(p + m->name_offset - sizeof(uint16_t)) = len;
    memcpy(p + m->name_offset, name, len);
    head = map_link_get(&m->buckets[b]);
    if (head == NULL)
        map_add(&m->used_buckets, 1);
    atomic_init(&n->next, head);
    do_link_set(&m->buckets[b], n);
    map_add(&m->objects, 1);
    map_add(&m->total_objects, 1);
    return n;
}

/* Node n of bucket b is about to be unlinked: Dumps paused at it go on
 * from its successor instead. Usually no Dump is paused at all. */
static void do_cursors_skip(cnt_map *m, size_t b, const cnt_map_node *n,
                            cnt_map_node *next)
{
    for (cnt_map_cursor *cur = m->stripes[b % CNT_MAP_STRIPES].paused;
         cur != NULL; cur = cur->next)
        if (cur->at == n)
            cur->at = next;
}

/* Unlinks the node *link points at, in bucket b, and returns it. */
static cnt_map_node *do_unlink_at(cnt_map *m, size_t b,
                                  _Atomic(cnt_map_node *) *link)
{
    cnt_map_node *n = map_link_get(link);
    cnt_map_node *next = map_link_get(&n->next);

    do_cursors_skip(m, b, n, next);
    do_link_set(link, next);
    if (map_head_empty(m, b))
        map_subtract(&m->used_buckets, 1);
    map_subtract(&m->objects, 1);
    cnt_map_uncharge(m, cnt_map_node_size(m, cnt_map_node_len(m, n)));
    return n;
}

/* Unlinks n from bucket b; see map.h. */
cnt_map_node *cnt_map_do_unlink(cnt_map *m, size_t b, cnt_map_node *n)
{
    _Atomic(cnt_map_node *) *link = &m->buckets[b];
    cnt_map_node *at;

    while ((at = map_link_get(link)) != NULL) {
        if (at == n)
            return do_unlink_at(m, b, link);
        link = &at->next;
    }
    return NULL;
}

/* Frees an unlinked node. */
void cnt_map_node_free(cnt_map_node *n)
{
    free(n);
}

/* Registers cur as paused in bucket b at node n. */
static void do_dump_pause(cnt_map *m, cnt_map_cursor *cur, size_t b,
                          cnt_map_node *n)
{
    cnt_map_stripe *s = &m->stripes[b % CNT_MAP_STRIPES];

    cur->bucket = b;
    cur->at = n;
    cur->paused = true;
    cur->prev = NULL;
    cur->next = s->paused;
    if (s->paused != NULL)
        s->paused->prev = cur;
    s->paused = cur;
}

/* Unregisters a paused cur. */
static void do_dump_unpause(cnt_map *m, cnt_map_cursor *cur)
{
    cnt_map_stripe *s = &m->stripes[cur->bucket % CNT_MAP_STRIPES];

    if (cur->prev != NULL)
        cur->prev->next = cur->next;
    else
        s->paused = cur->next;
    if (cur->next != NULL)
        cur->next->prev = cur->prev;
    cur->prev = cur->next = NULL;
    cur->paused = false;
}

/* Visits the nodes of one chain from n on, at most *budget of them.
 * Returns where it stopped: NULL at the chain's end, else the first node
 * not visited (fn said stop, or the budget ran out). *stop tells whether
 * fn said stop. */
static cnt_map_node *do_dump_chain(cnt_map_node *n, cnt_map_visit_fn fn,
                                   void *ctx, unsigned *budget, bool *stop)
{
    *stop = false;
    while (n != NULL && *budget > 0) {
        (*budget)--;
        bool go_on = fn(ctx, n);
        n = map_link_get(&n->next);
        if (!go_on) {
            *stop = true;
            break;
        }
    }
    return n;
}

/* Dump from the cursor: a bucket at a time, each under its stripe lock for
 * at most CNT_MAP_DUMP_PER_LOCK nodes; a long chain is visited over several
 * holds, the cursor paused in it between them. */
bool cnt_map_dump(cnt_map *m, cnt_map_cursor *cur, cnt_map_visit_fn fn,
                  void *ctx)
{
    size_t scanned = 0;

    while (cur->bucket < m->nbuckets) {
        if (scanned++ == CNT_MAP_DUMP_SCAN)
            return false;
        size_t b = cur->bucket;
        if (!cur->paused && map_head_empty(m, b)) {
            cur->bucket++;
            continue;
        }
        unsigned budget = CNT_MAP_DUMP_PER_LOCK;
        bool stop;

        pthread_mutex_t *lock = cnt_map_lock(m, b);
        cnt_map_node *from = map_link_get(&m->buckets[b]);
        if (cur->paused) {
            from = cur->at;
            do_dump_unpause(m, cur);
        }
        cnt_map_node *rest = do_dump_chain(from, fn, ctx, &budget, &stop);
        if (rest != NULL)
            do_dump_pause(m, cur, b, rest);
        else
            cur->bucket = b + 1;
        cnt_map_unlock(lock);
        if (stop)
            return cur->bucket >= m->nbuckets;
    }
    return true;
}

/* Unregisters a paused cursor; nothing to do otherwise. */
void cnt_map_dump_cancel(cnt_map *m, cnt_map_cursor *cur)
{
    if (!cur->paused)
        return;
    size_t b = cur->bucket;

    pthread_mutex_t *lock = cnt_map_lock(m, b);
    do_dump_unpause(m, cur);
    cnt_map_unlock(lock);
}

/* Unlinks the nodes of bucket b that may go onto *dead (chained through
 * next); returns how many. */
static size_t do_sweep_bucket(cnt_map *m, size_t b,
                              const cnt_map_may_go *may_go,
                              const cnt_clock_now *now, cnt_map_node **dead)
{
    _Atomic(cnt_map_node *) *link = &m->buckets[b];
    cnt_map_node *n;
    size_t removed = 0;

    while ((n = map_link_get(link)) != NULL) {
        if (may_go->fn(may_go->ctx, n, now)) {
            do_unlink_at(m, b, link);
            do_link_set(&n->next, *dead);
            *dead = n;
            removed++;
        } else {
            link = &n->next;
        }
    }
    return removed;
}

/* Sweeps buckets [first, first + n), each under its stripe lock briefly;
 * the unlinked nodes are freed after the lock is dropped, so a request
 * never waits behind free() (the allocator's own locks included). */
size_t cnt_map_sweep(cnt_map *m, size_t first, size_t n,
                     const cnt_map_may_go *may_go, const cnt_clock_now *now)
{
    size_t removed = 0;
    size_t end;

    if (first >= m->nbuckets)
        return 0;
    end = n < m->nbuckets - first ? first + n : m->nbuckets;

    for (size_t b = first; b < end; b++) {
        if (map_head_empty(m, b))
            continue;
        cnt_map_node *dead = NULL;

        pthread_mutex_t *lock = cnt_map_lock(m, b);
        size_t gone = do_sweep_bucket(m, b, may_go, now, &dead);
        cnt_map_stripe *st = &m->stripes[b % CNT_MAP_STRIPES];
        if (gone > 0 && st->swept_ns < now->mono_ns)
            st->swept_ns = now->mono_ns;
        removed += gone;
        cnt_map_unlock(lock);
        while (dead != NULL) {
            cnt_map_node *next = map_link_get(&dead->next);
            free(dead);
            dead = next;
        }
    }
    return removed;
}

/* Number of buckets. */
size_t cnt_map_buckets(const cnt_map *m)
{
    return m->nbuckets;
}

/* The configured memory_limit. */
uint64_t cnt_map_memory_limit(const cnt_map *m)
{
    return m->budget->limit;
}

/* Current counts; conflicts = live nodes minus non-empty buckets. */
void cnt_map_get_stats(const cnt_map *m, cnt_map_stats *s)
{
    uint64_t objects = map_load(&m->objects);
    uint64_t used = map_load(&m->used_buckets);

    s->objects = objects;
    s->total_objects = map_load(&m->total_objects);
    s->used_memory = m->base_memory + map_load(&m->node_memory);
    /* The two figures are read apart, so clamp a transient negative. */
    s->conflicts = objects > used ? objects - used : 0;
}
