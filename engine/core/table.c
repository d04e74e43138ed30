/* table.c: the semaphore rules on top of the striped map: Acquire/Release/
 * Get with the per-connection ledger, release-all, the peak consumption per
 * epoch-aligned window, Dump records and the "may this counter go?" test
 * the GC sweeps with. Locking rule (see map.h): do_* functions expect the
 * stripe lock held. */
#include "config.h"

#include <stdlib.h>

#include "engine/core/table_int.h"

/* Builds a table; NULL when memory is short or cfg is out of range. */
cnt_table *cnt_table_new(const cnt_table_config *cfg)
{
    static const cnt_table_config none;
    cnt_table *t;

    if (cfg == NULL)
        cfg = &none;
    cnt_map_config mc = {
        .buckets = cfg->buckets ? cfg->buckets : CNT_DEFAULT_BUCKETS,
        .memory_limit = cfg->memory_limit,
        .budget = cfg->budget,
        .name_offset = offsetof(struct cnt_counter, name),
    };
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->interval = cfg->interval ? cfg->interval : CNT_DEFAULT_INTERVAL;
    t->clock = cfg->clock ? cfg->clock : &cnt_clock_system;
    t->queues = calloc(CNT_MAP_STRIPES, sizeof(*t->queues));
    if (t->queues == NULL || cnt_map_init(&t->map, &mc) != 0) {
        free(t->queues);
        free(t);
        return NULL;
    }
    atomic_init(&t->next_lease_id, 1);
    atomic_init(&t->grants_stopped, false);
    return t;
}

/* Frees every counter and the table. */
void cnt_table_free(cnt_table *t)
{
    if (t == NULL)
        return;
    /* Queues outlive their tickets' owners only if someone forgot to end
     * a connection; their records are freed here all the same. */
    for (size_t i = 0; i < CNT_MAP_STRIPES; i++)
        while (!SLIST_EMPTY(&t->queues[i])) {
            cnt_queue *q = SLIST_FIRST(&t->queues[i]);
            SLIST_REMOVE_HEAD(&t->queues[i], link);
            free(q);
        }
    free(t->queues);
    cnt_map_destroy(&t->map);
    free(t);
}

/* Adds resources to c for ledger h if the 64-bit sum stays within maximum
 * and nobody waits in c's queue (an Acquire may not overtake waiters). */
static cnt_status do_acquire(cnt_counter *c, cnt_holdings *h,
                             uint32_t resources, uint32_t maximum,
                             uint32_t w)
{
    if ((uint64_t)c->consumption + resources > maximum ||
        (c->flags & CNT_COUNTER_QUEUED))
        return CNT_STATUS_RESOURCE_NOT_AVAILABLE;
    do_roll(c, w);
    c->consumption += resources;
    if (c->consumption > c->max)
        c->max = c->consumption;
    cnt_holdings_add(h, c, resources);
    return CNT_STATUS_OK;
}

/* Fills *p with the place of name. */
void cnt_table_place_of(const cnt_table *t, const uint8_t *name,
                        uint16_t len, cnt_table_place *p)
{
    p->bucket = cnt_map_bucket_of(&t->map, name, len);
}

/* Prefetches a place's bucket slot and stripe, or its first counter. */
void cnt_table_prefetch(cnt_table *t, const cnt_table_place *p, bool head)
{
    cnt_map_prefetch(&t->map, p->bucket, head);
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
    cnt_status st = CNT_STATUS_OUT_OF_MEMORY;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    cnt_counter *c = do_find(t, b, name, len);
    if (c == NULL)
        c = do_create(t, b, name, len, w);
    if (c != NULL)
        st = do_acquire(c, h, resources, maximum, w);
    cnt_map_unlock(lock);
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
    cnt_status st = CNT_STATUS_OK;
    cnt_grant_list granted = STAILQ_HEAD_INITIALIZER(granted);

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
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
            do_grant_waiting(t, b, c, &granted);
        }
    }
    cnt_map_unlock(lock);
    cnt_table_sink_all(t, &granted);
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
static void table_drain_one(struct cnt_counter *c, uint32_t amount,
                                void *ctx)
{
    cnt_table_drain_ctx *d = ctx;
    size_t b = cnt_map_bucket_of(&d->t->map, c->name, c->name_len);
    cnt_grant_list granted = STAILQ_HEAD_INITIALIZER(granted);

    pthread_mutex_t *lock = cnt_map_lock(&d->t->map, b);
    do_give_back(c, amount, d->window);
    do_grant_waiting(d->t, b, c, &granted);
    cnt_map_unlock(lock);
    cnt_table_sink_all(d->t, &granted);
}

/* Releases everything h holds, one stripe lock per entry. */
void cnt_table_release_all(cnt_table *t, cnt_holdings *h)
{
    cnt_table_drain_ctx d = { t, cnt_table_window_now(t) };

    cnt_holdings_drain(h, table_drain_one, &d);
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
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    cnt_counter *c = do_find(t, b, name, len);
    if (c != NULL) {
        *consumption = c->consumption;
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    return st;
}

/* What a Dump of the table passes through the map's visit callback. */
typedef struct cnt_table_dump_ctx {
    cnt_dump_fn fn;
    void *ctx;
    uint32_t window;
} cnt_table_dump_ctx;

/* Turns one visited node into a Dump record (stripe lock held). */
static bool do_dump_visit(void *ctx, const cnt_map_node *n)
{
    const cnt_table_dump_ctx *d = ctx;
    const cnt_counter *c = (const cnt_counter *)n;

    return d->fn(d->ctx, c->name, c->name_len, c->consumption,
                 do_max_in_window(c, d->window));
}

/* Dump from the cursor, through the map's pausing walk. */
bool cnt_table_dump(cnt_table *t, cnt_map_cursor *cursor, cnt_dump_fn fn,
                    void *ctx)
{
    cnt_table_dump_ctx d = { fn, ctx, cnt_table_window_now(t) };

    return cnt_map_dump(&t->map, cursor, do_dump_visit, &d);
}

/* Unregisters a paused cursor; nothing to do otherwise. */
void cnt_table_dump_cancel(cnt_table *t, cnt_map_cursor *cursor)
{
    cnt_map_dump_cancel(&t->map, cursor);
}

/* The semaphore kind's sweep test (stripe lock held): consumption 0 means
 * no ledger and no granted ticket points at the counter, and without the
 * QUEUED flag no waiting ticket does, so nobody can reach it once it is
 * out of the bucket; one changed in the current window waits for the
 * next. */
static bool do_may_go(void *ctx, const cnt_map_node *n,
                      const cnt_clock_now *now)
{
    const cnt_table *t = ctx;
    const cnt_counter *c = (const cnt_counter *)n;

    return c->consumption == 0 && !(c->flags & CNT_COUNTER_QUEUED) &&
           c->window < cnt_table_window_at(t, now->wall_ms);
}

/* The table's sweep test. */
cnt_map_may_go cnt_table_may_go(cnt_table *t)
{
    cnt_map_may_go may_go = { do_may_go, t };

    return may_go;
}

/* The map that holds the counters. */
cnt_map *cnt_table_map(cnt_table *t)
{
    return &t->map;
}

/* Number of buckets. */
size_t cnt_table_buckets(const cnt_table *t)
{
    return cnt_map_buckets(&t->map);
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
    return cnt_map_memory_limit(&t->map);
}

/* Current counts: the map's, plus the table's own struct (which holds the
 * map) in used_memory. */
void cnt_table_get_stats(const cnt_table *t, cnt_map_stats *s)
{
    cnt_map_get_stats(&t->map, s);
    s->used_memory += sizeof *t + CNT_MAP_STRIPES * sizeof(*t->queues);
}
