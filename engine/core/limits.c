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

/* Frees what rec owns and forgets it in the figures; see limits_int.h. */
void cnt_limits_rec_forget(cnt_limits *l, cnt_limit_rec *rec, bool expired)
{
    const cnt_limits_kind *kind = cnt_limits_kinds[rec->kind];

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
    out->used_memory = ms.used_memory + sizeof *l;
}
