/* limits_check.c: the run of a rate-limit check, one (Window_check,
 * Gcra_check) or several at once (Multi_check), whatever their kinds. A
 * check is judged first (reading the record, changing nothing), then, if
 * it is allowed and not a peek, its records and blocks are made (the only
 * step that can fail, undone whole on failure) and finally charged; so a
 * peek, a denied multi-check and an allocation failure all leave every
 * record as it was. Each step goes to the item's kind through
 * cnt_limits_kinds.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include "engine/core/limits_int.h"

_Static_assert(CNT_MULTI_MAX <= CNT_MAP_LOCKSET_MAX,
               "a multi-check must fit one cnt_map_lockset");

/* Checks a's arguments and resolves defaults into it; false when out of
 * range (an opcode that is no check included). */
static bool item_resolve(cnt_limits_item *it, const cnt_check_request *a)
{
    memset(it, 0, offsetof(cnt_limits_item, v));
    it->a = a;
    if (a->name == NULL || a->name_len == 0 || a->cost == 0)
        return false;
    for (uint8_t k = 0; k < CNT_LIMITS_KINDS; k++) {
        const cnt_limits_kind *kind = cnt_limits_kinds[k];
        if (kind->opcode != 0 && kind->opcode == a->opcode) {
            it->kind = k;
            return kind->resolve(it);
        }
    }
    return false;
}

/* Finds the item's record and judges it at now; lock held. */
static void do_item_judge(cnt_limits *l, cnt_limits_item *it, uint64_t now)
{
    it->now = now;
    it->rec = cnt_limits_do_find(l, it->bucket, it->kind, it->a->name,
                                 it->a->name_len);
    cnt_limits_kinds[it->kind]->judge(it, now);
}

/* Undoes the kind's make: frees what it made beside the record, and
 * unlinks a record it created onto *dead. */
static void do_item_unmake(cnt_limits *l, cnt_limits_item *it,
                           cnt_map_node **dead)
{
    const cnt_limits_kind *kind = cnt_limits_kinds[it->kind];

    if (kind->unmake != NULL)
        kind->unmake(l, it);
    if (it->created) {
        cnt_limit_rec *r = it->rec;
        cnt_map_node *n = cnt_map_do_unlink(&l->map, it->bucket, &r->node);
        cnt_limits_rec_forget(l, r, false);
        atomic_store_explicit(&n->next, *dead, memory_order_relaxed);
        *dead = n;
        it->created = false;
        it->rec = NULL;
    }
}

/* Whether two items name the same record. */
static bool item_same(const cnt_limits_item *x, const cnt_limits_item *y)
{
    return x->kind == y->kind && x->a->name_len == y->a->name_len &&
           memcmp(x->a->name, y->a->name, x->a->name_len) == 0;
}

/* Counts the items in the figures: each a check, and when judged (not
 * refused for memory) allowed or limited. */
static void items_count(cnt_limits *l, const cnt_limits_item *it, size_t n,
                        bool judged)
{
    for (size_t i = 0; i < n; i++) {
        cnt_limits_figures *f = &l->fig[it[i].kind];
        cnt_limits_fig_add(&f->checks, 1);
        if (judged)
            cnt_limits_fig_add(it[i].ans.state == CNT_CHECK_ALLOWED
                                   ? &f->allowed : &f->limited, 1);
    }
}

/* Judges n resolved items under their stripe locks (taken at once, see
 * cnt_map_lock_many), and charges them all if all are allowed and !peek;
 * see limits.h. */
static cnt_status items_run(cnt_limits *l, cnt_limits_item *it, size_t n,
                            bool peek, uint8_t *overall)
{
    size_t buckets[CNT_MULTI_MAX];
    cnt_map_lockset locks;
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_OK;
    bool all = true;

    for (size_t i = 0; i < n; i++) {
        it[i].bucket = cnt_map_bucket_of(&l->map, it[i].a->name,
                                         it[i].a->name_len);
        buckets[i] = it[i].bucket;
    }
    /* The request's time is read before the locks, keeping the clock
     * out of the critical section of a hot name; a request that waited
     * for the lock is judged as of its arrival (see the window's judge
     * for the one place where that needs care). */
    uint64_t now = cnt_clock_mono_ns(l->clock), judge = now;
    cnt_map_lock_many(&l->map, buckets, n, &locks);
    /* A record the GC removed as dead at a time after ours would have
     * counted at ours: judge no earlier than the GC did. */
    for (size_t i = 0; i < n; i++)
        if (judge < cnt_map_do_swept_ns(&l->map, it[i].bucket))
            judge = cnt_map_do_swept_ns(&l->map, it[i].bucket);
    for (size_t i = 0; i < n; i++) {
        it[i].read_now = now;
        do_item_judge(l, &it[i], judge);
        all = all && it[i].ans.state == CNT_CHECK_ALLOWED;
    }
    if (all && !peek) {
        size_t made = 0;
        while (made < n &&
               cnt_limits_kinds[it[made].kind]->make(l, &it[made]))
            made++;
        if (made < n) {
            while (made-- > 0)
                do_item_unmake(l, &it[made], &dead);
            st = CNT_STATUS_OUT_OF_MEMORY;
        } else {
            for (size_t i = 0; i < n; i++)
                cnt_limits_kinds[it[i].kind]->charge(l, &it[i]);
        }
    }
    /* Every check of a record counts for the busiest names, allowed or
     * not, peek or not; a check that found no record and made none has
     * nothing to count on. */
    for (size_t i = 0; i < n; i++)
        if (it[i].rec != NULL)
            cnt_limits_do_busy(l, it[i].bucket, it[i].rec, judge);
    cnt_map_unlock_many(&l->map, &locks);
    while (dead != NULL) {
        cnt_map_node *next = atomic_load_explicit(&dead->next,
                                                  memory_order_relaxed);
        cnt_map_node_free(dead);
        dead = next;
    }
    for (size_t i = 0; i < n; i++)
        cnt_limits_kinds[it[i].kind]->answer(&it[i]);
    *overall = all ? 0 : 1;
    items_count(l, it, n, st == CNT_STATUS_OK);
    return st;
}

/* One check; see limits.h. */
cnt_status cnt_limits_check(cnt_limits *l, const cnt_check_request *a,
                            cnt_check_result *out)
{
    cnt_limits_item it;
    uint8_t overall;

    if (!item_resolve(&it, a)) {
        /* A check of a known kind counts, even when refused. */
        if (a->opcode == CNT_OP_WINDOW_CHECK ||
            a->opcode == CNT_OP_GCRA_CHECK)
            cnt_limits_fig_add(&l->fig[a->opcode == CNT_OP_WINDOW_CHECK
                                           ? CNT_LIMITS_WINDOW
                                           : CNT_LIMITS_GCRA].checks, 1);
        return CNT_STATUS_INVALID;
    }
    cnt_status st = items_run(l, &it, 1, a->peek, &overall);
    if (st == CNT_STATUS_OK)
        *out = it.ans;
    return st;
}

/* The all-or-nothing multi-check; see limits.h. */
cnt_status cnt_limits_multi(cnt_limits *l, const cnt_check_request *items,
                            size_t n, bool peek, cnt_check_result *out,
                            uint8_t *overall)
{
    cnt_limits_item it[CNT_MULTI_MAX];

    if (n == 0 || n > CNT_MULTI_MAX)
        return CNT_STATUS_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (!item_resolve(&it[i], &items[i]))
            return CNT_STATUS_INVALID;
        for (size_t j = 0; j < i; j++)
            if (item_same(&it[i], &it[j]))
                return CNT_STATUS_INVALID;
    }
    cnt_status st = items_run(l, it, n, peek, overall);
    if (st != CNT_STATUS_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        out[i] = it[i].ans;
    return CNT_STATUS_OK;
}
