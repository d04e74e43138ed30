/* throttle.c: the tenant throttle of throttle.h. Tenant records live in a
 * striped map of their own; the node's figures (capacity, the sum of the
 * reserves, this second's use and pool use) behind one node lock, taken
 * inside a stripe lock and held only for a charge's arithmetic. Every
 * per-second figure carries the second it belongs to and starts again at
 * 0 on the first access in a later second (no timer, no reset pass).
 * Configuration changes are serialised by a lock of their own, taken
 * before any other, so a settings set can be checked whole and then
 * committed without another change slipping in.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include <stdlib.h>

#include "engine/core/throttle.h"

/* Flags a record keeps beside CNT_TENANT_FLAG_CONFIGURED, never shown:
 * named by the running apply (the sweep leaves it alone, so it is still
 * there when the apply commits), and made by the running apply (undone if
 * the apply fails). */
#define CNT_TENANT_FLAG_PINNED 0x02u
#define CNT_TENANT_FLAG_NEW 0x04u

/* One tenant. The per-second figure used is 64 bits: unthrottled charges
 * and charges while the capacity is 0 are never refused, so it can pass
 * 32 bits (views clamp it). Fields change under the stripe lock; those a
 * charge's arithmetic reads also under the node lock. */
typedef struct cnt_tenant_rec {
    cnt_map_node node;
    uint64_t second;            /* the second used belongs to */
    uint64_t used;              /* units allowed in that second */
    uint64_t units;             /* units allowed since the record exists */
    uint64_t throttled;         /* throttled charges since then */
    uint64_t throttled_by[CNT_TREASON_MAX]; /* of them, per reason
                                               (index: reason - 1) */
    uint32_t reserved;          /* configured: R */
    uint32_t hard;              /* configured: H */
    uint8_t flags;              /* CNT_TENANT_FLAG_* */
    uint8_t spare;
    uint16_t name_len;
    uint8_t name[];
} cnt_tenant_rec;
CNT_MAP_NODE_CHECK(cnt_tenant_rec);

/* The node's figures, under the node lock. The sum of the reserves is 64
 * bits because with capacity 0 any reserves may be set. */
typedef struct cnt_node_state {
    uint64_t second;            /* the second used, pool_used belong to */
    uint64_t used;              /* units allowed in that second */
    uint64_t pool_used;         /* of them, units taken from the pool */
    uint64_t reserved_sum;      /* R of every configured tenant */
    uint32_t capacity;          /* C; 0 = off */
    uint32_t tenants;           /* configured tenants */
} cnt_node_state;

/* The totals, on a cache line of their own. */
typedef struct cnt_throttle_figures {
    _Alignas(64) atomic_uint_fast64_t checks;
    atomic_uint_fast64_t allowed;
    atomic_uint_fast64_t throttled;
    atomic_uint_fast64_t units;
    atomic_uint_fast64_t unthrottled_units;
    atomic_uint_fast64_t throttled_by[CNT_TREASON_MAX + 1];
} cnt_throttle_figures;

struct cnt_throttle {
    cnt_map map;
    const cnt_clock *clock;
    _Atomic uint32_t default_hard;  /* read by views without a lock */
    pthread_mutex_t config;         /* serialises configuration changes */
    _Alignas(64) pthread_mutex_t lock;  /* the node lock */
    cnt_node_state node;
    cnt_throttle_figures fig;
};

/* Adds n to a total. */
static void fig_add(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

/* x clamped to 32 bits. */
static uint32_t clamp32(uint64_t x)
{
    return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* The throttling second of a monotonic time. */
static uint64_t second_of(uint64_t ns)
{
    return ns / CNT_THROTTLE_SECOND_NS;
}

/* The default hard limit now. */
static uint32_t load_default_hard(const cnt_throttle *t)
{
    return atomic_load_explicit(&t->default_hard, memory_order_relaxed);
}

/* The free pool P = C - sum(R), 0 when the reserves cover the capacity
 * (which only C = 0 allows: every change keeps sum(R) <= C when C > 0);
 * node lock held. */
static uint64_t node_pool(const cnt_node_state *n)
{
    return n->capacity > n->reserved_sum ? n->capacity - n->reserved_sum
                                         : 0;
}

/* Moves the node on to second s if that is later than its own, starting
 * this second's figures at 0; returns the second the caller's charge
 * counts in: the node's, which a request that read the clock just before
 * another one rolled the node over joins (seconds never go back). Node
 * lock held. */
static uint64_t node_roll(cnt_node_state *n, uint64_t s)
{
    if (s > n->second) {
        n->second = s;
        n->used = 0;
        n->pool_used = 0;
    }
    return n->second;
}

/* The reserve and hard limit a tenant is judged with: its own when
 * configured, else the defaults (a record or none). */
static void tenant_limits(const cnt_throttle *t, const cnt_tenant_rec *r,
                              uint32_t *reserved, uint32_t *hard)
{
    if (r != NULL && (r->flags & CNT_TENANT_FLAG_CONFIGURED)) {
        *reserved = r->reserved;
        *hard = r->hard;
    } else {
        *reserved = 0;
        *hard = load_default_hard(t);
    }
}

/* A tenant's units in second s (0 when its figure is older or it has no
 * record). */
static uint64_t tenant_used(const cnt_tenant_rec *r, uint64_t s)
{
    return r != NULL && r->second >= s ? r->used : 0;
}

/* Finds a tenant's record in bucket b; NULL when absent. */
static cnt_tenant_rec *do_find(cnt_throttle *t, size_t b,
                               const uint8_t *name, uint16_t len)
{
    return (cnt_tenant_rec *)cnt_map_do_find_with(
        &t->map, b, name, len, offsetof(cnt_tenant_rec, name));
}

/* Inserts an unconfigured record with no usage for name in bucket b
 * (absent: the caller looked); NULL when memory is short. */
static cnt_tenant_rec *do_create(cnt_throttle *t, size_t b,
                                 const uint8_t *name, uint16_t len)
{
    cnt_tenant_rec *r = (cnt_tenant_rec *)cnt_map_do_insert(&t->map, b,
                                                            name, len);
    if (r == NULL)
        return NULL;
    r->second = 0;
    r->used = 0;
    r->units = 0;
    r->throttled = 0;
    memset(r->throttled_by, 0, sizeof r->throttled_by);
    r->reserved = 0;
    r->hard = 0;
    r->flags = 0;
    r->spare = 0;
    return r;
}

/* Whether a record holds nothing a tenant without one would not show. */
static bool tenant_pristine(const cnt_tenant_rec *r)
{
    return r->used == 0 && r->units == 0 && r->throttled == 0;
}

/* ---- Charging ---- */

/* One charge's judgement (node lock held): the reason it is throttled,
 * or CNT_TREASON_NONE when allowed, and then in *from_pool the
 * part of it the pool pays (reserve first, then pool). */
static uint8_t judge_charge(const cnt_node_state *n, uint32_t reserved,
                         uint32_t hard, uint64_t used, uint32_t units,
                         bool unthrottled, uint64_t *from_pool)
{
    uint64_t reserve_left = reserved > used ? reserved - used : 0;
    uint64_t pool_part = units > reserve_left ? units - reserve_left : 0;
    uint64_t pool = node_pool(n);

    *from_pool = 0;
    if (n->capacity == 0)
        return CNT_TREASON_NONE;
    if (!unthrottled) {
        if (hard != CNT_HARD_LIMIT_UNLIMITED && used + units > hard)
            return CNT_TREASON_HARD_LIMIT;
        if (pool_part > 0 && n->pool_used + pool_part > pool)
            return pool == 0 ? CNT_TREASON_RESERVE
                             : CNT_TREASON_POOL_EMPTY;
    }
    *from_pool = pool_part;
    return CNT_TREASON_NONE;
}

/* Units a tenant that has used units this second could still charge on a
 * throttled connection: min(H - used, reserve left + pool left); with
 * the capacity 0 the pool does not bound it. Node lock held. */
static uint32_t remaining_of(const cnt_node_state *n, uint32_t reserved,
                              uint32_t hard, uint64_t used)
{
    uint64_t hard_left = used < hard ? hard - used : 0;

    if (n->capacity == 0)
        return hard == CNT_HARD_LIMIT_UNLIMITED ? UINT32_MAX
                                              : clamp32(hard_left);
    uint64_t pool = node_pool(n);
    uint64_t left = (reserved > used ? reserved - used : 0) +
                    (pool > n->pool_used ? pool - n->pool_used : 0);
    if (hard != CNT_HARD_LIMIT_UNLIMITED && hard_left < left)
        left = hard_left;
    return clamp32(left);
}

/* Whether a charge could pass in a second nobody has used yet; see
 * throttle.h. */
bool cnt_throttle_can_pass(cnt_throttle *t, const uint8_t *name,
                           uint16_t len, uint32_t units)
{
    if (len == 0 || units == 0)
        return false;
    size_t b = cnt_map_bucket_of(&t->map, name, len);
    uint32_t reserved, hard;
    uint64_t from_pool;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    tenant_limits(t, do_find(t, b, name, len), &reserved, &hard);
    pthread_mutex_lock(&t->lock);
    cnt_node_state empty = t->node;
    empty.pool_used = 0;
    uint8_t reason = judge_charge(&empty, reserved, hard, 0, units, false,
                                  &from_pool);
    pthread_mutex_unlock(&t->lock);
    cnt_map_unlock(lock);
    return reason == CNT_TREASON_NONE;
}

/* Charges a tenant; see throttle.h. The clock is read before the locks;
 * a record is made before the node lock when the tenant has none (the
 * allocation stays out of the node-wide critical section) and taken
 * back if the charge is throttled, so only usage costs memory. */
cnt_status cnt_throttle_charge(cnt_throttle *t, const uint8_t *name,
                               uint16_t len, uint32_t units,
                               bool unthrottled, cnt_throttle_answer *out)
{
    fig_add(&t->fig.checks, 1);
    if (len == 0 || units == 0)
        return CNT_STATUS_INVALID;
    size_t b = cnt_map_bucket_of(&t->map, name, len);
    uint64_t now = cnt_clock_mono_ns(t->clock);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_OK;
    cnt_throttle_answer ans;
    uint32_t reserved, hard;
    uint64_t from_pool;
    bool fresh = false;

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    /* The GC may have freed this tenant's record (its usage belonged to a
     * second the GC saw as over) after we read the clock: the charge then
     * belongs to no earlier second than the GC's, or it would start the
     * old second's usage again from 0. */
    uint64_t judge = cnt_map_do_swept_ns(&t->map, b);
    if (judge < now)
        judge = now;
    cnt_tenant_rec *r = do_find(t, b, name, len);
    if (r == NULL) {
        r = do_create(t, b, name, len);
        fresh = r != NULL;
    }
    tenant_limits(t, r, &reserved, &hard);
    pthread_mutex_lock(&t->lock);
    uint64_t s = node_roll(&t->node, second_of(judge));
    uint64_t used = tenant_used(r, s);
    uint8_t reason = judge_charge(&t->node, reserved, hard, used, units,
                               unthrottled, &from_pool);
    if (reason == CNT_TREASON_NONE && r == NULL) {
        st = CNT_STATUS_OUT_OF_MEMORY;
    } else if (reason == CNT_TREASON_NONE) {
        used += units;
        r->second = s;
        r->used = used;
        r->units += units;
        t->node.used += units;
        t->node.pool_used += from_pool;
    } else if (r != NULL) {
        r->throttled++;
        r->throttled_by[reason - 1]++;
    }
    ans.state = reason == CNT_TREASON_NONE
                    ? CNT_TSTATE_ALLOWED
                    : CNT_TSTATE_THROTTLED;
    ans.reason = reason;
    ans.used = clamp32(used);
    ans.remaining = remaining_of(&t->node, reserved, hard, used);
    ans.retry_after_ns = reason == CNT_TREASON_NONE
                             ? 0
                             : (s + 1) * CNT_THROTTLE_SECOND_NS - now;
    pthread_mutex_unlock(&t->lock);
    if (fresh && reason != CNT_TREASON_NONE)
        dead = cnt_map_do_unlink(&t->map, b, &r->node);
    cnt_map_unlock(lock);
    if (dead != NULL)
        cnt_map_node_free(dead);

    if (st != CNT_STATUS_OK)
        return st;
    if (reason == CNT_TREASON_NONE) {
        fig_add(&t->fig.allowed, 1);
        fig_add(&t->fig.units, units);
        if (unthrottled)
            fig_add(&t->fig.unthrottled_units, units);
    } else {
        fig_add(&t->fig.throttled, 1);
        fig_add(&t->fig.throttled_by[reason], 1);
    }
    *out = ans;
    return CNT_STATUS_OK;
}

/* ---- Configuration ---- */

/* Makes r configured with reserve R and hard limit H, keeping the node's
 * sum of reserves and count of tenants in step (the node lock is taken
 * for that), and drops the flags of an apply. */
static void do_configure(cnt_throttle *t, cnt_tenant_rec *r, uint32_t R,
                         uint32_t H)
{
    bool was = r->flags & CNT_TENANT_FLAG_CONFIGURED;

    pthread_mutex_lock(&t->lock);
    t->node.reserved_sum = t->node.reserved_sum -
                           (was ? r->reserved : 0) + R;
    if (!was)
        t->node.tenants++;
    r->reserved = R;
    r->hard = H;
    r->flags = CNT_TENANT_FLAG_CONFIGURED;
    pthread_mutex_unlock(&t->lock);
}

/* Whether capacity C leaves room for reserves adding up to sum. */
static bool reserves_fit(uint32_t C, uint64_t sum)
{
    return C == 0 || sum <= C;
}

/* Sets the capacity; see throttle.h. */
cnt_status cnt_throttle_set_capacity(cnt_throttle *t, uint32_t capacity)
{
    cnt_status st = CNT_STATUS_OK;

    pthread_mutex_lock(&t->config);
    pthread_mutex_lock(&t->lock);
    if (reserves_fit(capacity, t->node.reserved_sum))
        t->node.capacity = capacity;
    else
        st = CNT_STATUS_OVER_CAPACITY;
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_unlock(&t->config);
    return st;
}

/* Sets the default hard limit; see throttle.h. */
cnt_status cnt_throttle_set_default_hard(cnt_throttle *t, uint32_t hard)
{
    pthread_mutex_lock(&t->config);
    atomic_store_explicit(&t->default_hard, hard, memory_order_relaxed);
    pthread_mutex_unlock(&t->config);
    return CNT_STATUS_OK;
}

/* Configures a tenant; see throttle.h. Everything is checked before the
 * record is made, and the record is the last thing that can fail, so a
 * refusal changes nothing. */
cnt_status cnt_throttle_set_tenant(cnt_throttle *t, const uint8_t *name,
                                   uint16_t len, bool set_reserved,
                                   uint32_t reserved, bool set_hard,
                                   uint32_t hard)
{
    if (len == 0 || (!set_reserved && !set_hard))
        return CNT_STATUS_INVALID;
    size_t b = cnt_map_bucket_of(&t->map, name, len);
    cnt_status st = CNT_STATUS_OK;
    uint32_t R, H;

    pthread_mutex_lock(&t->config);
    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    cnt_tenant_rec *r = do_find(t, b, name, len);
    bool was = r != NULL && (r->flags & CNT_TENANT_FLAG_CONFIGURED);
    tenant_limits(t, r, &R, &H);
    uint32_t old_reserved = was ? R : 0;
    if (set_reserved)
        R = reserved;
    if (set_hard)
        H = hard;
    if (H < R) {
        st = CNT_STATUS_INVALID;
    } else {
        /* The configuration lock keeps the sum as read here until the
         * commit below. */
        pthread_mutex_lock(&t->lock);
        bool fits = reserves_fit(t->node.capacity,
                             t->node.reserved_sum - old_reserved + R);
        pthread_mutex_unlock(&t->lock);
        if (!fits)
            st = CNT_STATUS_OVER_CAPACITY;
        else if (r == NULL && (r = do_create(t, b, name, len)) == NULL)
            st = CNT_STATUS_OUT_OF_MEMORY;
        else
            do_configure(t, r, R, H);
    }
    cnt_map_unlock(lock);
    pthread_mutex_unlock(&t->config);
    return st;
}

/* Puts a tenant back on the defaults; see throttle.h. The record stays
 * (with this second's usage) for the sweep. */
cnt_status cnt_throttle_remove_tenant(cnt_throttle *t, const uint8_t *name,
                                      uint16_t len)
{
    if (len == 0)
        return CNT_STATUS_INVALID;
    size_t b = cnt_map_bucket_of(&t->map, name, len);
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_lock(&t->config);
    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    cnt_tenant_rec *r = do_find(t, b, name, len);
    if (r != NULL && (r->flags & CNT_TENANT_FLAG_CONFIGURED)) {
        pthread_mutex_lock(&t->lock);
        t->node.reserved_sum -= r->reserved;
        t->node.tenants--;
        r->flags &= (uint8_t)~CNT_TENANT_FLAG_CONFIGURED;
        r->reserved = 0;
        r->hard = 0;
        pthread_mutex_unlock(&t->lock);
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    pthread_mutex_unlock(&t->config);
    return st;
}

/* Undoes the first n steps of an apply's pinning: drops the pins and
 * takes back the records it made, unless a charge has used one since
 * (it is then an ordinary tenant record, which that charge would have
 * made anyway). Configuration lock held. */
static void apply_unpin(cnt_throttle *t, const cnt_throttle_settings *s,
                            size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const cnt_throttle_setting *e = &s->tenants[i];
        size_t b = cnt_map_bucket_of(&t->map, e->name, e->len);
        cnt_map_node *dead = NULL;

        pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
        cnt_tenant_rec *r = do_find(t, b, e->name, e->len);
        if (r != NULL) {
            if ((r->flags & CNT_TENANT_FLAG_NEW) && tenant_pristine(r))
                dead = cnt_map_do_unlink(&t->map, b, &r->node);
            else
                r->flags &= (uint8_t)~(CNT_TENANT_FLAG_PINNED |
                                       CNT_TENANT_FLAG_NEW);
        }
        cnt_map_unlock(lock);
        if (dead != NULL)
            cnt_map_node_free(dead);
    }
}

/* Pins the record of every tenant s names, making those that do not
 * exist, and adds up their reserves before (*before) and after
 * (*after).
 * Returns OK, INVALID (a name twice: its record is pinned already) or
 * OUT_OF_MEMORY, with *done the number of entries pinned. Configuration
 * lock held. */
static cnt_status apply_pin(cnt_throttle *t,
                                const cnt_throttle_settings *s,
                                size_t *done, uint64_t *before,
                                uint64_t *after)
{
    cnt_status st = CNT_STATUS_OK;
    size_t i;

    *before = *after = 0;
    for (i = 0; i < s->ntenants; i++) {
        const cnt_throttle_setting *e = &s->tenants[i];
        size_t b = cnt_map_bucket_of(&t->map, e->name, e->len);

        pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
        cnt_tenant_rec *r = do_find(t, b, e->name, e->len);
        uint8_t made = 0;
        if (r == NULL) {
            r = do_create(t, b, e->name, e->len);
            made = CNT_TENANT_FLAG_NEW;
        }
        if (r == NULL) {
            st = CNT_STATUS_OUT_OF_MEMORY;
        } else if (r->flags & CNT_TENANT_FLAG_PINNED) {
            st = CNT_STATUS_INVALID;
        } else {
            r->flags |= (uint8_t)(CNT_TENANT_FLAG_PINNED | made);
            if (r->flags & CNT_TENANT_FLAG_CONFIGURED)
                *before += r->reserved;
            *after += e->reserved;
        }
        cnt_map_unlock(lock);
        if (st != CNT_STATUS_OK)
            break;
    }
    *done = i;
    return st;
}

/* Configures the pinned tenants of s, those whose reserve does not grow
 * (grow false) or the rest (grow true). Configuration lock held. */
static void apply_commit(cnt_throttle *t, const cnt_throttle_settings *s,
                             bool grow)
{
    for (size_t i = 0; i < s->ntenants; i++) {
        const cnt_throttle_setting *e = &s->tenants[i];
        size_t b = cnt_map_bucket_of(&t->map, e->name, e->len);

        pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
        cnt_tenant_rec *r = do_find(t, b, e->name, e->len);
        /* Pinned, so still there; unpinned once configured, so each is
         * configured once. */
        if (r->flags & CNT_TENANT_FLAG_PINNED) {
            uint32_t old = (r->flags & CNT_TENANT_FLAG_CONFIGURED)
                               ? r->reserved : 0;
            if (grow || e->reserved <= old)
                do_configure(t, r, e->reserved, e->hard);
        }
        cnt_map_unlock(lock);
    }
}

/* Applies a settings set; see throttle.h. Every record it needs is made
 * (and pinned against the sweep) before anything changes; then the
 * reserves that shrink are committed, then the capacity, then the
 * reserves that grow, so the reserves never add up to more than the
 * capacity at any moment a charge could see. */
cnt_status cnt_throttle_apply(cnt_throttle *t,
                              const cnt_throttle_settings *s)
{
    for (size_t i = 0; i < s->ntenants; i++) {
        const cnt_throttle_setting *e = &s->tenants[i];
        if (e->name == NULL || e->len == 0 || e->hard < e->reserved)
            return CNT_STATUS_INVALID;
    }
    uint64_t old_named, new_named;
    size_t pinned;

    pthread_mutex_lock(&t->config);
    cnt_status st = apply_pin(t, s, &pinned, &old_named, &new_named);
    if (st == CNT_STATUS_OK) {
        pthread_mutex_lock(&t->lock);
        uint32_t C = s->has_capacity ? s->capacity : t->node.capacity;
        if (!reserves_fit(C, t->node.reserved_sum - old_named + new_named))
            st = CNT_STATUS_OVER_CAPACITY;
        pthread_mutex_unlock(&t->lock);
    }
    if (st != CNT_STATUS_OK) {
        apply_unpin(t, s, pinned);
        pthread_mutex_unlock(&t->config);
        return st;
    }
    apply_commit(t, s, false);
    pthread_mutex_lock(&t->lock);
    if (s->has_capacity)
        t->node.capacity = s->capacity;
    pthread_mutex_unlock(&t->lock);
    if (s->has_default_hard)
        atomic_store_explicit(&t->default_hard, s->default_hard,
                              memory_order_relaxed);
    apply_commit(t, s, true);
    pthread_mutex_unlock(&t->config);
    return CNT_STATUS_OK;
}

/* ---- Views ---- */

/* Fills *v from a tenant's record (or the defaults when r is NULL) as of
 * second s; stripe lock held. */
static void do_view(const cnt_throttle *t, const cnt_tenant_rec *r,
                    uint64_t s, cnt_tenant_view *v)
{
    memset(v, 0, sizeof *v);
    tenant_limits(t, r, &v->reserved, &v->hard_limit);
    v->used = clamp32(tenant_used(r, s));
    if (r != NULL) {
        v->flags = r->flags & CNT_TENANT_FLAG_CONFIGURED;
        v->throttled = r->throttled;
        v->units = r->units;
    }
}

/* Reads a tenant; see throttle.h. */
cnt_status cnt_throttle_tenant(cnt_throttle *t, const uint8_t *name,
                               uint16_t len, cnt_tenant_view *out)
{
    if (len == 0)
        return CNT_STATUS_INVALID;
    size_t b = cnt_map_bucket_of(&t->map, name, len);
    uint64_t s = second_of(cnt_clock_mono_ns(t->clock));

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    do_view(t, do_find(t, b, name, len), s, out);
    cnt_map_unlock(lock);
    return CNT_STATUS_OK;
}

/* A tenant's throttled charges per reason; see throttle.h. */
cnt_status cnt_throttle_tenant_reasons(cnt_throttle *t, const uint8_t *name,
                                       uint16_t len,
                                       uint64_t out[CNT_TREASON_MAX + 1])
{
    if (len == 0)
        return CNT_STATUS_INVALID;
    size_t b = cnt_map_bucket_of(&t->map, name, len);

    pthread_mutex_t *lock = cnt_map_lock(&t->map, b);
    const cnt_tenant_rec *r = do_find(t, b, name, len);
    out[CNT_TREASON_NONE] = 0;
    for (size_t i = 1; i <= CNT_TREASON_MAX; i++)
        out[i] = r != NULL ? r->throttled_by[i - 1] : 0;
    cnt_map_unlock(lock);
    return CNT_STATUS_OK;
}

/* What a listing passes through the map's visit callback. */
typedef struct cnt_throttle_list_ctx {
    const cnt_throttle *t;
    cnt_tenant_fn fn;
    cnt_tenant_reasons_fn reasons_fn;   /* used instead of fn if set */
    void *ctx;
    uint64_t second;
} cnt_throttle_list_ctx;

/* Turns one visited record into a tenant view (stripe lock held). */
static bool do_list_visit(void *ctx, const cnt_map_node *n)
{
    const cnt_throttle_list_ctx *l = ctx;
    const cnt_tenant_rec *r = (const cnt_tenant_rec *)n;
    cnt_tenant_view v;

    do_view(l->t, r, l->second, &v);
    if (l->reasons_fn != NULL) {
        uint64_t by[CNT_TREASON_MAX + 1] = {0};
        memcpy(by + 1, r->throttled_by, sizeof r->throttled_by);
        return l->reasons_fn(l->ctx, r->name, r->name_len, &v, by);
    }
    return l->fn(l->ctx, r->name, r->name_len, &v);
}

/* Lists tenant records from the cursor, through the map's pausing walk. */
bool cnt_throttle_list(cnt_throttle *t, cnt_map_cursor *cur,
                       cnt_tenant_fn fn, void *ctx)
{
    cnt_throttle_list_ctx l = {
        t, fn, NULL, ctx, second_of(cnt_clock_mono_ns(t->clock)),
    };

    return cnt_map_dump(&t->map, cur, do_list_visit, &l);
}

/* The same listing, with each record's throttled charges per reason. */
bool cnt_throttle_list_reasons(cnt_throttle *t, cnt_map_cursor *cur,
                               cnt_tenant_reasons_fn fn, void *ctx)
{
    cnt_throttle_list_ctx l = {
        t, NULL, fn, ctx, second_of(cnt_clock_mono_ns(t->clock)),
    };

    return cnt_map_dump(&t->map, cur, do_list_visit, &l);
}

/* Unregisters a paused listing cursor. */
void cnt_throttle_list_cancel(cnt_throttle *t, cnt_map_cursor *cur)
{
    cnt_map_dump_cancel(&t->map, cur);
}

/* The node's figures now. */
void cnt_throttle_node(cnt_throttle *t, cnt_node_view *out)
{
    uint64_t s = second_of(cnt_clock_mono_ns(t->clock));

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&t->lock);
    const cnt_node_state *n = &t->node;
    bool current = n->second >= s;
    out->capacity = n->capacity;
    out->used = clamp32(current ? n->used : 0);
    out->pool = clamp32(node_pool(n));
    out->pool_used = clamp32(current ? n->pool_used : 0);
    out->reserved_sum = clamp32(n->reserved_sum);
    out->tenants = n->tenants;
    pthread_mutex_unlock(&t->lock);
    out->throttled = atomic_load(&t->fig.throttled);
}

/* Current totals. */
void cnt_throttle_stats_get(const cnt_throttle *t, cnt_throttle_stats *out)
{
    out->checks = atomic_load(&t->fig.checks);
    out->allowed = atomic_load(&t->fig.allowed);
    out->throttled = atomic_load(&t->fig.throttled);
    out->units = atomic_load(&t->fig.units);
    out->unthrottled_units = atomic_load(&t->fig.unthrottled_units);
    for (size_t i = 0; i <= CNT_TREASON_MAX; i++)
        out->throttled_by[i] = atomic_load(&t->fig.throttled_by[i]);
}

/* ---- Building, collection ---- */

/* Sets up the node lock: adaptive where glibc has it, like the limits'
 * stripes, because every charge takes it for a few dozen nanoseconds and
 * a waiter that sleeps in the kernel would cost far more than that. */
static int node_lock_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);

    if (err != 0)
        return err;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    if (err == 0)
        err = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return err;
}

/* Builds a throttle; see throttle.h. The tenants' stripe locks are
 * adaptive too: a hot tenant is charged by every worker. */
cnt_throttle *cnt_throttle_new(const cnt_throttle_config *cfg)
{
    static const cnt_throttle_config none;
    cnt_throttle *t;

    if (cfg == NULL)
        cfg = &none;
    cnt_map_config mc = {
        .buckets = cfg->buckets ? cfg->buckets
                                : CNT_THROTTLE_DEFAULT_BUCKETS,
        .name_offset = offsetof(cnt_tenant_rec, name),
        .budget = cfg->budget,
        .adaptive = true,
    };
    t = aligned_alloc(_Alignof(cnt_throttle), sizeof *t);
    if (t == NULL)
        return NULL;
    memset(t, 0, sizeof *t);
    if (cnt_map_init(&t->map, &mc) != 0)
        goto fail_free;
    if (pthread_mutex_init(&t->config, NULL) != 0)
        goto fail_map;
    if (node_lock_init(&t->lock) != 0)
        goto fail_config;
    t->clock = cfg->clock ? cfg->clock : &cnt_clock_system;
    atomic_init(&t->default_hard, CNT_HARD_LIMIT_UNLIMITED);
    atomic_init(&t->fig.checks, 0);
    atomic_init(&t->fig.allowed, 0);
    atomic_init(&t->fig.throttled, 0);
    atomic_init(&t->fig.units, 0);
    atomic_init(&t->fig.unthrottled_units, 0);
    for (size_t i = 0; i <= CNT_TREASON_MAX; i++)
        atomic_init(&t->fig.throttled_by[i], 0);
    return t;
fail_config:
    pthread_mutex_destroy(&t->config);
fail_map:
    cnt_map_destroy(&t->map);
fail_free:
    free(t);
    return NULL;
}

/* Frees every record and t. */
void cnt_throttle_free(cnt_throttle *t)
{
    if (t == NULL)
        return;
    cnt_map_destroy(&t->map);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->config);
    free(t);
}

/* The sweep test of cnt_throttle_may_go: an unconfigured, unpinned
 * record whose usage is not of the current second (or none). A record
 * with a later second than the sweep's (a charge after the sweep read
 * the clock) stays. */
static bool throttle_idle_go(void *ctx, const cnt_map_node *node,
                                 const cnt_clock_now *now)
{
    const cnt_tenant_rec *r = (const cnt_tenant_rec *)node;

    (void)ctx;
    if (r->flags & (CNT_TENANT_FLAG_CONFIGURED | CNT_TENANT_FLAG_PINNED))
        return false;
    return r->used == 0 || r->second < second_of(now->mono_ns);
}

/* The throttle's sweep test; see throttle.h. */
cnt_map_may_go cnt_throttle_may_go(cnt_throttle *t)
{
    cnt_map_may_go g = { throttle_idle_go, t };

    return g;
}

/* The map of the tenant records. */
cnt_map *cnt_throttle_map(cnt_throttle *t)
{
    return &t->map;
}
