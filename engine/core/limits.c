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

/* Frees what rec owns and forgets it in the figures; see limits_int.h. */
void cnt_limits_rec_forget(cnt_limits *l, cnt_limit_rec *rec, bool expired)
{
    const cnt_limits_kind *kind = cnt_limits_kinds[rec->kind];

    do_hot_leave(l, rec);
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

    for (unsigned i = 0; i < CNT_LIMITS_HOT; i++) {
        if (h->prev[i] != NULL)
            h->prev[i]->hot &= 0x0f;
        h->prev[i] = last ? h->cur[i] : NULL;
        if (h->prev[i] != NULL)
            h->prev[i]->hot |= (uint8_t)((i + 1) << 4);
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

/* A listing in progress: a min-heap of at most cap entries by checks (the
 * least busy at the root), and whether a copy failed. */
typedef struct busiest_ctx {
    cnt_busy_name *heap;
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

static void busy_swap(cnt_busy_name *h, size_t i, size_t j)
{
    cnt_busy_name t = h[i];

    h[i] = h[j];
    h[j] = t;
}

/* Restores the heap below i. */
static void busy_sift_down(cnt_busy_name *h, size_t n, size_t i)
{
    for (;;) {
        size_t lc = 2 * i + 1, rc = lc + 1, m = i;
        if (lc < n && busy_below(&h[lc], &h[m]))
            m = lc;
        if (rc < n && busy_below(&h[rc], &h[m]))
            m = rc;
        if (m == i)
            return;
        busy_swap(h, i, m);
        i = m;
    }
}

/* Restores the heap above i. */
static void busy_sift_up(cnt_busy_name *h, size_t i)
{
    while (i > 0 && busy_below(&h[i], &h[(i - 1) / 2])) {
        busy_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

/* Offers one record with its checks to the heap (stripe lock held),
 * copying its name if it gets in. */
static void busiest_offer(busiest_ctx *b, const cnt_limit_rec *r,
                          uint32_t checks)
{
    cnt_busy_name cand = {r->kind, checks, r->name_len, (uint8_t *)r->name};

    if (b->n == b->cap && !busy_below(&b->heap[0], &cand))
        return;
    uint8_t *copy = malloc(r->name_len);
    if (copy == NULL) {
        b->failed = true;
        return;
    }
    memcpy(copy, r->name, r->name_len);
    cand.name = copy;
    if (b->n < b->cap) {
        b->heap[b->n] = cand;
        busy_sift_up(b->heap, b->n++);
    } else {
        free(b->heap[0].name);
        b->heap[0] = cand;
        busy_sift_down(b->heap, b->n, 0);
    }
}

/* Lists the busiest names; see limits.h. Each stripe's lock is held for
 * its CNT_LIMITS_HOT entries only. */
bool cnt_limits_busiest(cnt_limits *l, uint32_t n, cnt_busy_name *out,
                        size_t *found)
{
    uint64_t now = cnt_clock_mono_ns(l->clock);
    uint32_t s = (uint32_t)(now / CNT_LIMITS_SECOND_NS) - 1;
    busiest_ctx b = {out, 0, n < CNT_LIMITS_BUSIEST_MAX
                                 ? n : CNT_LIMITS_BUSIEST_MAX, false};

    *found = 0;
    if (b.cap == 0)
        return true;
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
        cnt_limits_busiest_free(out, b.n);
        return false;
    }
    /* Heap order to busiest first: take the least busy off the end. */
    for (size_t k = b.n; k > 1; k--) {
        busy_swap(out, 0, k - 1);
        busy_sift_down(out, k - 1, 0);
    }
    *found = b.n;
    return true;
}

/* Frees a listing's names. */
void cnt_limits_busiest_free(cnt_busy_name *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        v[i].name = NULL;
    }
}
