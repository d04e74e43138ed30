/* limits.c: the shared part of the rate limits of limits.h: building and
 * freeing them, records coming (cnt_limits_do_create) and going
 * (cnt_limits_rec_forget), the figures, and the GC's sweep, which asks each
 * record's kind whether it is dead. The kinds' own rules are in
 * limits_ttl.c, limits_window.c and limits_gcra.c; a check's run in
 * limits_check.c; limits_int.h is what they share.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include "engine/core/limits_int.h"

/* The one dispatch from a record's kind byte to its kind's rules. */
const cnt_limits_kind *const cnt_limits_kinds[CNT_LIMITS_KINDS] = {
    [CNT_LIMITS_TTL] = &cnt_limits_ttl_kind,
    [CNT_LIMITS_WINDOW] = &cnt_limits_window_kind,
    [CNT_LIMITS_GCRA] = &cnt_limits_gcra_kind,
};

/* Takes rec out of its stripe's hot table (stripe lock held). Only a
 * record in the table pays for finding its stripe (hashing its name). */
static void do_hot_leave(cnt_limits *l, cnt_limit_rec *rec)
{
    if (rec->hot == 0)
        return;
    size_t b = cnt_map_bucket_of(&l->map, rec->name, rec->name_len);
    cnt_limits_hot *h = &l->hot[b % CNT_MAP_STRIPES];

    if ((rec->hot & 0x0f) != 0)
        h->cur[(rec->hot & 0x0f) - 1] = NULL;
    if ((rec->hot >> 4) != 0)
        h->prev[(rec->hot >> 4) - 1] = NULL;
    rec->hot = 0;
}

/* Takes rec out of the cached listing, if it is there (its stripe lock
 * held, not the cache's). Only a record checked in the cached second or
 * later can be named, so the others cost one load. The exchange, not a
 * store, so that an entry a newer listing put in its place stays. */
static void do_busy_cache_leave(cnt_limits *l, cnt_limit_rec *rec)
{
    cnt_limits_busy_cache *c = &l->busy;

    if (rec->busy_sec < atomic_load(&c->ids_sec))
        return;
    for (unsigned k = 0; k < CNT_LIMITS_BUSIEST_MAX; k++) {
        cnt_limit_rec *want = rec;
        if (atomic_load_explicit(&c->ids[k], memory_order_relaxed) == rec)
            atomic_compare_exchange_strong(&c->ids[k], &want, NULL);
    }
}

/* Frees what rec owns and forgets it in the figures; see limits_int.h. */
void cnt_limits_rec_forget(cnt_limits *l, cnt_limit_rec *rec, bool expired)
{
    const cnt_limits_kind *kind = cnt_limits_kinds[rec->kind];

    do_hot_leave(l, rec);
    do_busy_cache_leave(l, rec);
    if (kind->forget != NULL)
        kind->forget(l, rec);
    cnt_limits_fig_sub(&l->fig[rec->kind].objects, 1);
    if (expired)
        cnt_limits_fig_add(&l->fig[rec->kind].expired, 1);
}

/* Inserts a record; see limits_int.h. */
cnt_limit_rec *cnt_limits_do_create(cnt_limits *l, size_t b, uint8_t kind,
                                    const uint8_t *name, uint16_t len)
{
    cnt_limit_rec *r = (cnt_limit_rec *)cnt_map_do_insert(&l->map, b, name,
                                                          len);
    if (r == NULL)
        return NULL;
    r->kind = kind;
    r->unit = 0;
    r->a = r->b = 0;
    r->u.counts = NULL;
    r->busy_sec = r->busy_cur = r->busy_prev = 0;
    r->hot = 0;
    cnt_limits_fig_add(&l->fig[kind].objects, 1);
    return r;
}

/* Builds empty limits; see limits.h. The stripe locks are adaptive: one
 * name checked by every worker is the common case of a rate limit (one
 * limit per API, per tenant), and there the lock is held for a few dozen
 * nanoseconds, less than a sleep in the kernel would cost (see
 * doc/design.md for the measurements). */
cnt_limits *cnt_limits_new(const cnt_limits_config *cfg)
{
    static const cnt_limits_config none;
    cnt_limits *l;

    if (cfg == NULL)
        cfg = &none;
    cnt_map_config mc = {
        .buckets = cfg->buckets ? cfg->buckets : CNT_LIMITS_DEFAULT_BUCKETS,
        .name_offset = offsetof(cnt_limit_rec, name),
        .budget = cfg->budget,
        .adaptive = true,
    };
    l = aligned_alloc(_Alignof(cnt_limits), sizeof *l);
    if (l == NULL)
        return NULL;
    memset(l, 0, sizeof *l);
    if (cnt_map_init(&l->map, &mc) != 0) {
        free(l);
        return NULL;
    }
    /* Stripe s guards the buckets b with b % CNT_MAP_STRIPES == s, so a
     * map of fewer buckets uses only that many stripes. */
    l->nhot = cnt_map_buckets(&l->map) < CNT_MAP_STRIPES
                  ? cnt_map_buckets(&l->map) : CNT_MAP_STRIPES;
    l->hot = calloc(l->nhot, sizeof *l->hot);
    if (l->hot == NULL) {
        cnt_map_destroy(&l->map);
        free(l);
        return NULL;
    }
    if (pthread_mutex_init(&l->busy.lock, NULL) != 0) {
        free(l->hot);
        cnt_map_destroy(&l->map);
        free(l);
        return NULL;
    }
    for (unsigned k = 0; k < CNT_LIMITS_BUSIEST_MAX; k++)
        atomic_init(&l->busy.ids[k], NULL);
    atomic_init(&l->busy.ids_sec, UINT32_MAX);
    atomic_init(&l->busy.computed, 0);
    l->clock = cfg->clock ? cfg->clock : &cnt_clock_system;
    atomic_init(&l->sweep_next, 0);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        atomic_init(&l->fig[k].objects, 0);
        atomic_init(&l->fig[k].checks, 0);
        atomic_init(&l->fig[k].allowed, 0);
        atomic_init(&l->fig[k].limited, 0);
        atomic_init(&l->fig[k].expired, 0);
    }
    return l;
}

/* The sweep test that lets every record go, freeing what it owns (for
 * cnt_limits_free). */
static bool all_go(void *ctx, const cnt_map_node *node,
                   const cnt_clock_now *now)
{
    (void)now;
    cnt_limits_rec_forget(ctx, (cnt_limit_rec *)node, false);
    return true;
}

/* Frees every record and l. */
void cnt_limits_free(cnt_limits *l)
{
    if (l == NULL)
        return;
    cnt_map_may_go all = { all_go, l };
    cnt_clock_now now = { 0, 0 };

    cnt_map_sweep(&l->map, 0, cnt_map_buckets(&l->map), &all, &now);
    cnt_map_destroy(&l->map);
    cnt_limits_busiest_free(l->busy.v, l->busy.n);
    pthread_mutex_destroy(&l->busy.lock);
    free(l->hot);
    free(l);
}

/* The sweep test of cnt_limits_may_go: the record's kind says whether it
 * is dead; one that goes has what it owns freed (a window's ring) under
 * the stripe lock, which the sweep holds. */
static bool dead_go(void *ctx, const cnt_map_node *node,
                    const cnt_clock_now *now)
{
    cnt_limit_rec *r = (cnt_limit_rec *)node;

    if (!cnt_limits_kinds[r->kind]->dead(r, now->mono_ns))
        return false;
    cnt_limits_rec_forget(ctx, r, true);
    return true;
}

/* The limits' sweep test; see limits.h. */
cnt_map_may_go cnt_limits_may_go(cnt_limits *l)
{
    cnt_map_may_go g = { dead_go, l };

    return g;
}

/* Sweeps the next max_buckets buckets; see limits.h. */
size_t cnt_limits_sweep(cnt_limits *l, size_t max_buckets)
{
    size_t nb = cnt_map_buckets(&l->map);
    size_t b = atomic_load(&l->sweep_next) % nb;
    size_t left = max_buckets < nb ? max_buckets : nb;
    size_t removed = 0;
    cnt_map_may_go go = cnt_limits_may_go(l);
    cnt_clock_now now;

    cnt_clock_read(l->clock, &now);
    while (left > 0) {
        size_t chunk = left < nb - b ? left : nb - b;
        removed += cnt_map_sweep(&l->map, b, chunk, &go, &now);
        b = (b + chunk) % nb;
        left -= chunk;
    }
    atomic_store(&l->sweep_next, b);
    return removed;
}

/* The map of the records. */
cnt_map *cnt_limits_map(cnt_limits *l)
{
    return &l->map;
}

/* Current figures. */
void cnt_limits_stats_get(const cnt_limits *l, cnt_limits_stats *out)
{
    cnt_map_stats ms;

    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        const cnt_limits_figures *f = &l->fig[k];
        out->kind[k].objects = atomic_load(&f->objects);
        out->kind[k].checks = atomic_load(&f->checks);
        out->kind[k].allowed = atomic_load(&f->allowed);
        out->kind[k].limited = atomic_load(&f->limited);
        out->kind[k].expired = atomic_load(&f->expired);
    }
    out->busiest_computed = atomic_load(&l->busy.computed);
    cnt_map_get_stats(&l->map, &ms);
    out->used_memory = ms.used_memory + sizeof *l +
                       l->nhot * sizeof *l->hot;
}

/* ---- The busiest names ---- */

/* A record's checks in second s (lock held): its current count, or its
 * previous one when it has moved on to s + 1. */
static uint32_t busy_checks_in(const cnt_limit_rec *r, uint32_t s)
{
    if (r->busy_sec == s)
        return r->busy_cur;
    if (r->busy_sec == s + 1)
        return r->busy_prev;
    return 0;
}

/* An entry's checks in its table's second s: 0 when empty or when its
 * record was last checked in an earlier second. */
static uint32_t hot_count(const cnt_limit_rec *r, uint32_t s)
{
    return r != NULL && r->busy_sec == s ? r->busy_cur : 0;
}

/* Starts second s on a hot table: cur as it stands becomes prev if it
 * ranked the second just before (else prev empties), and cur keeps its
 * records, which count 0 in s until they are checked again. */
static void do_hot_turn(cnt_limits_hot *h, uint32_t s)
{
    bool last = h->sec + 1 == s;

    /* Every old prev entry is unmarked before any new one is marked: a
     * record can be in both lists at different entries, and marking its
     * new entry first would let the unmarking of its old one erase it. */
    for (unsigned i = 0; i < CNT_LIMITS_HOT; i++)
        if (h->prev[i] != NULL)
            h->prev[i]->hot &= 0x0f;
    for (unsigned i = 0; i < CNT_LIMITS_HOT; i++) {
        h->prev[i] = last ? h->cur[i] : NULL;
        if (h->prev[i] != NULL)
            h->prev[i]->hot = (uint8_t)((h->prev[i]->hot & 0x0f) |
                                        ((i + 1) << 4));
    }
    h->sec = s;
    h->min = 0;
}

/* Offers r, not in cur, whose count in second s beats h->min: it takes
 * the place of the entry with the fewest checks in s if it has more, and
 * min becomes the table's true minimum either way. */
static void do_hot_offer(cnt_limits_hot *h, cnt_limit_rec *r, uint32_t s)
{
    unsigned at = 0;
    uint32_t least = UINT32_MAX;

    for (unsigned i = 0; i < CNT_LIMITS_HOT; i++) {
        uint32_t c = hot_count(h->cur[i], s);
        if (c < least) {
            least = c;
            at = i;
        }
    }
    if (r->busy_cur > least) {
        if (h->cur[at] != NULL)
            h->cur[at]->hot &= 0xf0;
        h->cur[at] = r;
        r->hot = (uint8_t)((r->hot & 0xf0) | (at + 1));
        least = UINT32_MAX;
        for (unsigned i = 0; i < CNT_LIMITS_HOT; i++)
            if (hot_count(h->cur[i], s) < least)
                least = hot_count(h->cur[i], s);
    }
    h->min = least;
}

/* Counts one check of r; see cnt_limits_do_busy in limits_int.h. A
 * request reads its time before it takes the lock, so one that waited
 * may come after a later one: it counts in the stripe's second then,
 * which never goes back. */
void cnt_limits_do_busy_slow(cnt_limits *l, size_t b, cnt_limit_rec *r,
                             uint64_t now)
{
    cnt_limits_hot *h = &l->hot[b % CNT_MAP_STRIPES];
    uint32_t s = (uint32_t)(now / CNT_LIMITS_SECOND_NS);

    if (s < h->sec)
        s = h->sec;
    if (r->busy_sec != s) {
        r->busy_prev = r->busy_sec + 1 == s ? r->busy_cur : 0;
        r->busy_sec = s;
        r->busy_cur = 0;
    }
    r->busy_cur++;
    if (h->sec != s)
        do_hot_turn(h, s);
    if ((r->hot & 0x0f) == 0 && r->busy_cur > h->min)
        do_hot_offer(h, r, s);
}

/* One name of a listing being computed, with the record it was read
 * from (for cnt_limits_busy_cache's ids). */
typedef struct busy_entry {
    cnt_busy_name nm;
    cnt_limit_rec *id;
} busy_entry;

/* A listing in progress: a min-heap of at most cap entries by checks (the
 * least busy at the root), and whether a copy failed. */
typedef struct busiest_ctx {
    busy_entry *heap;
    size_t n, cap;
    bool failed;
} busiest_ctx;

/* Whether x ranks below y: fewer checks, then a later kind or name. */
static bool busy_below(const cnt_busy_name *x, const cnt_busy_name *y)
{
    if (x->checks != y->checks)
        return x->checks < y->checks;
    if (x->kind != y->kind)
        return x->kind > y->kind;
    size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, m);
    if (c != 0)
        return c > 0;
    return x->name_len > y->name_len;
}

static void busy_swap(busy_entry *h, size_t i, size_t j)
{
    busy_entry t = h[i];

    h[i] = h[j];
    h[j] = t;
}

/* Restores the heap below i. */
static void busy_sift_down(busy_entry *h, size_t n, size_t i)
{
    for (;;) {
        size_t lc = 2 * i + 1, rc = lc + 1, m = i;
        if (lc < n && busy_below(&h[lc].nm, &h[m].nm))
            m = lc;
        if (rc < n && busy_below(&h[rc].nm, &h[m].nm))
            m = rc;
        if (m == i)
            return;
        busy_swap(h, i, m);
        i = m;
    }
}

/* Restores the heap above i. */
static void busy_sift_up(busy_entry *h, size_t i)
{
    while (i > 0 && busy_below(&h[i].nm, &h[(i - 1) / 2].nm)) {
        busy_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

/* Offers one record with its checks to the heap (stripe lock held),
 * copying its name if it gets in. */
static void busiest_offer(busiest_ctx *b, cnt_limit_rec *r, uint32_t checks)
{
    busy_entry cand = {{r->kind, checks, r->name_len, (uint8_t *)r->name},
                       r};

    if (b->n == b->cap && !busy_below(&b->heap[0].nm, &cand.nm))
        return;
    uint8_t *copy = malloc(r->name_len);
    if (copy == NULL) {
        b->failed = true;
        return;
    }
    memcpy(copy, r->name, r->name_len);
    cand.nm.name = copy;
    if (b->n < b->cap) {
        b->heap[b->n] = cand;
        busy_sift_up(b->heap, b->n++);
    } else {
        free(b->heap[0].nm.name);
        b->heap[0] = cand;
        busy_sift_down(b->heap, b->n, 0);
    }
}

/* Computes the listing of second s into e (busiest first, at most
 * CNT_LIMITS_BUSIEST_MAX); false, with nothing left allocated, when
 * memory ran short. Each stripe's lock is held for its CNT_LIMITS_HOT
 * entries only. */
static bool busiest_compute(cnt_limits *l, uint32_t s, busy_entry *e,
                            size_t *found)
{
    busiest_ctx b = {e, 0, CNT_LIMITS_BUSIEST_MAX, false};

    for (size_t i = 0; i < l->nhot && !b.failed; i++) {
        pthread_mutex_t *lock = cnt_map_lock(&l->map, i);
        const cnt_limits_hot *h = &l->hot[i];
        cnt_limit_rec *const *v = h->sec == s ? h->cur
                                  : h->sec == s + 1 ? h->prev : NULL;
        for (unsigned k = 0; v != NULL && k < CNT_LIMITS_HOT && !b.failed;
             k++) {
            uint32_t c = v[k] != NULL ? busy_checks_in(v[k], s) : 0;
            if (c > 0)
                busiest_offer(&b, v[k], c);
        }
        cnt_map_unlock(lock);
    }
    if (b.failed) {
        for (size_t k = 0; k < b.n; k++)
            free(e[k].nm.name);
        return false;
    }
    /* Heap order to busiest first: take the least busy off the end. */
    for (size_t k = b.n; k > 1; k--) {
        busy_swap(e, 0, k - 1);
        busy_sift_down(e, k - 1, 0);
    }
    *found = b.n;
    return true;
}

/* Makes the cache hold the listing e[0..n) of second s (cache lock
 * held), taking its names. A record named there that went while the
 * stripes were read (after its own stripe's) was not in ids yet for
 * cnt_limits_rec_forget to see; so, once ids are out, each name is looked
 * up again under its stripe lock, and one that is not the same record
 * any more is taken out: a record that goes after that lookup finds
 * itself in ids. */
static void busy_cache_store(cnt_limits *l, uint32_t s, busy_entry *e,
                             size_t n)
{
    cnt_limits_busy_cache *c = &l->busy;

    cnt_limits_busiest_free(c->v, c->n);
    atomic_store(&c->ids_sec, s);
    for (size_t k = 0; k < CNT_LIMITS_BUSIEST_MAX; k++) {
        if (k < n)
            c->v[k] = e[k].nm;
        atomic_store(&c->ids[k], k < n ? e[k].id : NULL);
    }
    c->n = n;
    c->sec = s;
    c->valid = true;
    atomic_fetch_add_explicit(&c->computed, 1, memory_order_relaxed);
    for (size_t k = 0; k < n; k++) {
        size_t b = cnt_map_bucket_of(&l->map, c->v[k].name, c->v[k].name_len);
        pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
        cnt_limit_rec *r = cnt_limits_do_find(l, b, c->v[k].kind,
                                              c->v[k].name,
                                              c->v[k].name_len);
        cnt_limit_rec *want = e[k].id;
        if (r != want)
            atomic_compare_exchange_strong(&c->ids[k], &want, NULL);
        cnt_map_unlock(lock);
    }
}

/* Lists the busiest names; see limits.h. The first listing of a second
 * computes it into l->busy; the others of that second, waiting on the
 * cache's lock meanwhile, copy it. The clock is read under that lock, so
 * the seconds the cache holds never go back. */
bool cnt_limits_busiest(cnt_limits *l, uint32_t n, cnt_busy_name *out,
                        size_t *found)
{
    cnt_limits_busy_cache *c = &l->busy;
    size_t cap = n < CNT_LIMITS_BUSIEST_MAX ? n : CNT_LIMITS_BUSIEST_MAX;
    bool ok = true;

    *found = 0;
    if (cap == 0)
        return true;
    pthread_mutex_lock(&c->lock);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    uint32_t s = (uint32_t)(now / CNT_LIMITS_SECOND_NS) - 1;
    if (!c->valid || c->sec != s) {
        busy_entry e[CNT_LIMITS_BUSIEST_MAX];
        size_t m = 0;
        ok = busiest_compute(l, s, e, &m);
        if (ok)
            busy_cache_store(l, s, e, m);
    }
    for (size_t k = 0; ok && k < c->n && *found < cap; k++) {
        if (atomic_load(&c->ids[k]) == NULL)
            continue;
        cnt_busy_name *d = &out[*found];
        *d = c->v[k];
        d->name = malloc(d->name_len);
        if (d->name == NULL) {
            cnt_limits_busiest_free(out, *found);
            *found = 0;
            ok = false;
            break;
        }
        memcpy(d->name, c->v[k].name, d->name_len);
        ++*found;
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}
/* Frees a listing's names. */
void cnt_limits_busiest_free(cnt_busy_name *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        v[i].name = NULL;
    }
}
