/* limits.c: the rate limits of limits.h: TTL counters, sliding-window and
 * GCRA checks and the all-or-nothing multi-check, on a striped map of
 * their own. A check is judged first (reading the record, changing
 * nothing), then, if it is allowed and not a peek, its records and blocks
 * are made (the only step that can fail, undone whole on failure) and
 * finally charged; so a peek, a denied multi-check and an allocation
 * failure all leave every record as it was.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include <stdlib.h>

#include "engine/core/limits.h"

typedef unsigned __int128 cnt_u128;

/* One record of any kind. Its key is (kind, name): the kind byte sits in
 * the record, the name is the map's, and a lookup matches both, so the
 * kinds are separate namespaces. All kinds of one name share the name's
 * bucket (at most three records more per chain, chosen by nobody). */
typedef struct cnt_limit_rec {
    cnt_map_node node;
    uint64_t a;                 /* ttl: quota; window: number of the newest
                                   slot; gcra: TAT, whole ns */
    uint64_t b;                 /* ttl: expiry (monotonic ns); window: slot
                                   length in ns */
    union {
        uint32_t *counts;       /* window: slots + 1 counts, a ring indexed
                                   by slot number modulo slots + 1 */
        struct {
            uint32_t count;     /* the count TAT's fraction is over */
            uint32_t frac;      /* TAT = a + frac / count ns */
        } g;
    } u;
    uint8_t kind;               /* CNT_LIMITS_TTL, _WINDOW, _GCRA */
    uint8_t unit;               /* ttl: display unit; window: slots */
    uint16_t name_len;
    uint8_t name[];
} cnt_limit_rec;
CNT_MAP_NODE_CHECK(cnt_limit_rec);

/* One kind's figures, on a cache line of its own. */
typedef struct cnt_limits_figures {
    _Alignas(64) atomic_uint_fast64_t objects;
    atomic_uint_fast64_t checks;
    atomic_uint_fast64_t allowed;
    atomic_uint_fast64_t limited;
    atomic_uint_fast64_t expired;
} cnt_limits_figures;

struct cnt_limits {
    cnt_map map;
    const cnt_clock *clock;
    atomic_size_t sweep_next;   /* where cnt_limits_sweep goes on */
    cnt_limits_figures fig[CNT_LIMITS_KINDS];
};

/* Nanoseconds per TTL unit: ns, us, ms, s, min, h. */
static const uint64_t cnt_ttl_unit_ns[CNT_TTL_UNIT_MAX + 1] = {
    1u, 1000u, 1000000u, 1000000000u, 60000000000u, 3600000000000u,
};

/* The longest GCRA delay tolerance, period * (burst + 1) / count, in ns:
 * 2^62 ns (146 years) keeps now + tolerance within 64 bits. */
#define CNT_GCRA_TOLERANCE_MAX ((uint64_t)1 << 62)

/* Adds n to a figure. */
static void cnt_fig_add(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

/* Takes n from a figure. */
static void cnt_fig_sub(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

/* a + b, or UINT64_MAX when that does not fit. */
static uint64_t cnt_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ceil(x / d) of a 128-bit x, clamped to 64 bits. */
static uint64_t cnt_ceil_div(cnt_u128 x, uint64_t d)
{
    cnt_u128 q = x / d + (x % d != 0);

    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* x clamped to 32 bits. */
static uint32_t cnt_clamp32(cnt_u128 x)
{
    return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* value units in ns into *ns; false when unit > 5 or it passes 64 bits. */
static bool cnt_ttl_to_ns(uint64_t value, uint8_t unit, uint64_t *ns)
{
    if (unit > CNT_TTL_UNIT_MAX)
        return false;
    return !__builtin_mul_overflow(value, cnt_ttl_unit_ns[unit], ns);
}

/* Bytes of a window record's ring of slots + 1 counts. */
static size_t cnt_ring_size(uint8_t slots)
{
    return ((size_t)slots + 1) * sizeof(uint32_t);
}

/* Frees what rec owns beside its node (a window's ring) and forgets the
 * record in the figures; expired says it went past its expiry. */
static void cnt_rec_forget(cnt_limits *l, cnt_limit_rec *rec, bool expired)
{
    if (rec->kind == CNT_LIMITS_WINDOW) {
        free(rec->u.counts);
        cnt_map_uncharge(&l->map, cnt_ring_size(rec->unit));
    }
    cnt_fig_sub(&l->fig[rec->kind].objects, 1);
    if (expired)
        cnt_fig_add(&l->fig[rec->kind].expired, 1);
}

/* Finds the record of (kind, name) in bucket b; NULL when absent. */
static cnt_limit_rec *do_find(cnt_limits *l, size_t b, uint8_t kind,
                              const uint8_t *name, uint16_t len)
{
    cnt_map_node *n = atomic_load_explicit(&l->map.buckets[b],
                                           memory_order_relaxed);

    for (; n != NULL;
         n = atomic_load_explicit(&n->next, memory_order_relaxed)) {
        cnt_limit_rec *r = (cnt_limit_rec *)n;
        if (r->name_len == len && r->kind == kind &&
            memcmp(r->name, name, len) == 0)
            return r;
    }
    return NULL;
}

/* Inserts a record of kind for name in bucket b (absent: the caller
 * looked); NULL when memory is short. */
static cnt_limit_rec *do_create(cnt_limits *l, size_t b, uint8_t kind,
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
    cnt_fig_add(&l->fig[kind].objects, 1);
    return r;
}

/* ---- TTL counters ---- */

/* Whether a TTL record is live at now. */
static bool cnt_ttl_live(const cnt_limit_rec *r, uint64_t now)
{
    return now < r->b;
}

/* Finds the live TTL record of name in bucket b. An expired one is
 * unlinked onto *dead (free it after the lock) and counted expired: it is
 * gone for every request from its expiry on. */
static cnt_limit_rec *do_ttl_live(cnt_limits *l, size_t b,
                                  const uint8_t *name, uint16_t len,
                                  uint64_t now, cnt_map_node **dead)
{
    cnt_limit_rec *r = do_find(l, b, CNT_LIMITS_TTL, name, len);

    if (r == NULL || cnt_ttl_live(r, now))
        return r;
    *dead = cnt_map_do_unlink(&l->map, b, &r->node);
    cnt_rec_forget(l, r, true);
    return NULL;
}

/* Fills *out from a live TTL record at now: time left rounded up, so a
 * live record never shows 0. */
static void cnt_ttl_fill(const cnt_limit_rec *r, uint64_t now,
                         cnt_ttl_view *out)
{
    out->quota = r->a;
    out->ttl_left = cnt_ceil_div(r->b - now, cnt_ttl_unit_ns[r->unit]);
    out->unit = r->unit;
}

/* Counts a TTL operation's outcome in the figures; returns st. */
static cnt_status cnt_ttl_count(cnt_limits *l, cnt_status st)
{
    cnt_limits_figures *f = &l->fig[CNT_LIMITS_TTL];

    cnt_fig_add(&f->checks, 1);
    if (st == CNT_STATUS_OK)
        cnt_fig_add(&f->allowed, 1);
    else if (st == CNT_STATUS_EXISTS || st == CNT_STATUS_BELOW_ZERO ||
             st == CNT_STATUS_NOT_FOUND)
        cnt_fig_add(&f->limited, 1);
    return st;
}

/* Frees a node unlinked under a lock that is now dropped. */
static void cnt_dead_free(cnt_map_node *dead)
{
    if (dead != NULL)
        cnt_map_node_free(dead);
}

/* Creates a TTL counter; see limits.h. An expired record of the name is
 * reused in place (and counted expired). */
cnt_status cnt_ttl_insert(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint64_t quota, uint64_t ttl, uint8_t unit)
{
    uint64_t ttl_ns;

    if (len == 0 || ttl == 0 || !cnt_ttl_to_ns(ttl, unit, &ttl_ns))
        return cnt_ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_status st = CNT_STATUS_OK;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_find(l, b, CNT_LIMITS_TTL, name, len);
    if (r != NULL && cnt_ttl_live(r, now)) {
        st = CNT_STATUS_EXISTS;
    } else {
        if (r != NULL)
            cnt_fig_add(&l->fig[CNT_LIMITS_TTL].expired, 1);
        else
            r = do_create(l, b, CNT_LIMITS_TTL, name, len);
        if (r == NULL) {
            st = CNT_STATUS_OUT_OF_MEMORY;
        } else {
            r->a = quota;
            r->b = cnt_sat_add(now, ttl_ns);
            r->unit = unit;
        }
    }
    cnt_map_unlock(lock);
    return cnt_ttl_count(l, st);
}

/* Reads a live TTL counter; see limits.h. */
cnt_status cnt_ttl_query(cnt_limits *l, const uint8_t *name, uint16_t len,
                         cnt_ttl_view *out)
{
    if (len == 0)
        return cnt_ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL) {
        cnt_ttl_fill(r, now, out);
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    cnt_dead_free(dead);
    return cnt_ttl_count(l, st);
}

/* Applies a quota change to r; OK, INVALID (overflow) or BELOW_ZERO. */
static cnt_status do_ttl_quota(cnt_limit_rec *r, uint8_t change,
                               uint64_t value)
{
    switch (change) {
    case CNT_TTL_PATCH:
        r->a = value;
        return CNT_STATUS_OK;
    case CNT_TTL_INCREASE:
        if (value > UINT64_MAX - r->a)
            return CNT_STATUS_INVALID;
        r->a += value;
        return CNT_STATUS_OK;
    default:
        if (value > r->a)
            return CNT_STATUS_BELOW_ZERO;
        r->a -= value;
        return CNT_STATUS_OK;
    }
}

/* Applies a change of the time left (value_ns) to a record live at now;
 * OK or BELOW_ZERO (the time left would be 0 or less). */
static cnt_status do_ttl_time(cnt_limit_rec *r, uint8_t change,
                              uint64_t value_ns, uint64_t now)
{
    switch (change) {
    case CNT_TTL_PATCH:
        r->b = cnt_sat_add(now, value_ns);
        return CNT_STATUS_OK;
    case CNT_TTL_INCREASE:
        r->b = cnt_sat_add(r->b, value_ns);
        return CNT_STATUS_OK;
    default:
        if (value_ns >= r->b - now)
            return CNT_STATUS_BELOW_ZERO;
        r->b -= value_ns;
        return CNT_STATUS_OK;
    }
}

/* Changes a live TTL counter; see limits.h. Arguments that do not depend
 * on the record are checked before it is looked up. */
cnt_status cnt_ttl_update(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint8_t attribute, uint8_t change, uint8_t unit,
                          uint64_t value, cnt_ttl_view *out)
{
    uint64_t value_ns = 0;
    bool own = unit == CNT_TTL_UNIT_RECORD;

    if (len == 0 || attribute > CNT_TTL_ATTR_TTL ||
        change > CNT_TTL_DECREASE || (unit > CNT_TTL_UNIT_MAX && !own))
        return cnt_ttl_count(l, CNT_STATUS_INVALID);
    if (attribute == CNT_TTL_ATTR_TTL &&
        ((!own && !cnt_ttl_to_ns(value, unit, &value_ns)) ||
         (change == CNT_TTL_PATCH && value == 0)))
        return cnt_ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL && attribute == CNT_TTL_ATTR_TTL && own &&
        !cnt_ttl_to_ns(value, r->unit, &value_ns)) {
        st = CNT_STATUS_INVALID;
    } else if (r != NULL) {
        st = attribute == CNT_TTL_ATTR_QUOTA
                 ? do_ttl_quota(r, change, value)
                 : do_ttl_time(r, change, value_ns, now);
        if (st == CNT_STATUS_OK)
            cnt_ttl_fill(r, now, out);
    }
    cnt_map_unlock(lock);
    cnt_dead_free(dead);
    return cnt_ttl_count(l, st);
}

/* Removes a live TTL counter; see limits.h. */
cnt_status cnt_ttl_purge(cnt_limits *l, const uint8_t *name, uint16_t len)
{
    if (len == 0)
        return cnt_ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL) {
        dead = cnt_map_do_unlink(&l->map, b, &r->node);
        cnt_rec_forget(l, r, false);
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    cnt_dead_free(dead);
    return cnt_ttl_count(l, st);
}

/* ---- Checks: judging ---- */

/* One check while a request runs: its arguments resolved, the record it
 * found, its answer and what charging it needs. */
typedef struct cnt_item {
    const cnt_check_args *a;
    uint8_t kind;
    size_t bucket;
    uint8_t slots;              /* window */
    uint64_t slot_ns;           /* window */
    cnt_limit_rec *rec;         /* found under the lock, or NULL */
    /* Judged: */
    cnt_check_answer ans;
    uint64_t slot;              /* window: the slot number of now */
    uint64_t total;             /* window, shape changed: counts kept */
    uint64_t now;               /* the time it is judged at */
    uint64_t read_now;          /* the time the request read, <= now: the
                                   answer's hints count from it */
    /* window, a record of another shape: when, by that shape's own
     * slots, enough of what it remembers has aged out for the cost, and
     * when all of it has (absolute ns; 0: no such time) */
    uint64_t other_retry_at, other_reset_at;
    /* gcra, all in ns plus a fraction over count (f < count): */
    uint64_t inc_q, inc_f;      /* period * cost / count */
    uint64_t tol_q, tol_f;      /* period * (burst + 1) / count */
    uint64_t tat_q, tat_f;      /* TAT before the call (now if none) */
    uint64_t new_q, new_f;      /* TAT after an allowed call */
    /* Made for the charge: */
    bool created;               /* rec was made for this charge */
    uint32_t *ring;             /* a new ring (new record or new shape) */
    /* Last, and not cleared in advance (cnt_window_view fills it): */
    uint64_t v[CNT_WINDOW_MAX_SLOTS + 1];   /* window: counts by age */
} cnt_item;

/* Checks a's arguments and resolves defaults into it; false when out of
 * range. */
static bool cnt_item_resolve(cnt_item *it, const cnt_check_args *a)
{
    memset(it, 0, offsetof(cnt_item, v));
    it->a = a;
    if (a->name == NULL || a->name_len == 0 || a->cost == 0)
        return false;
    if (a->opcode == CNT_LIMITS_OP_WINDOW) {
        uint64_t window = a->period_ns ? a->period_ns : CNT_WINDOW_DEFAULT_NS;
        uint8_t slots = a->slots ? a->slots : CNT_WINDOW_DEFAULT_SLOTS;

        if (slots > CNT_WINDOW_MAX_SLOTS || window % slots != 0 ||
            window / slots < CNT_WINDOW_MIN_SLOT_NS)
            return false;
        it->kind = CNT_LIMITS_WINDOW;
        it->slots = slots;
        it->slot_ns = window / slots;
        return true;
    }
    if (a->opcode == CNT_LIMITS_OP_GCRA) {
        if (a->count == 0 || a->period_ns == 0)
            return false;
        uint64_t L = (uint64_t)a->limit_or_burst + 1;
        cnt_u128 tol = (cnt_u128)a->period_ns * L;
        if (tol / a->count > CNT_GCRA_TOLERANCE_MAX)
            return false;
        it->kind = CNT_LIMITS_GCRA;
        /* The divisions are done here, before any lock: under it a check
         * only adds and compares. cost <= L keeps the increment within
         * the tolerance (a larger cost is never, and needs none). */
        it->tol_q = (uint64_t)(tol / a->count);
        it->tol_f = (uint64_t)(tol % a->count);
        if (a->cost <= L) {
            cnt_u128 inc = (cnt_u128)a->period_ns * a->cost;
            it->inc_q = (uint64_t)(inc / a->count);
            it->inc_f = (uint64_t)(inc % a->count);
        }
        return true;
    }
    return false;
}

/* The counts a window record still holds at slot k, by age: v[j] is the
 * count of slot k - j (j = 0 .. slots), in the item's shape. A record of
 * another shape is seen as the total it remembers, all in slot k: never
 * less than either shape would count, and the times that shape lets the
 * call in and forgets it all (it->other_*). Returns the sum. */
static uint64_t cnt_window_view(cnt_item *it, uint64_t now,
                                uint64_t k, uint64_t *v)
{
    const cnt_limit_rec *r = it->rec;
    uint64_t sum = 0;

    memset(v, 0, ((size_t)it->slots + 1) * sizeof *v);
    if (r == NULL)
        return 0;
    unsigned n = (unsigned)r->unit + 1;
    if (r->unit != it->slots || r->b != it->slot_ns) {
        /* Another shape: what it remembers at now by its own slots. */
        uint64_t own = now / r->b, first = r->a;
        for (uint64_t j = 0; j < n && j <= r->a; j++) {
            uint64_t q = r->a - j;
            if (q + r->unit >= own) {
                sum += r->u.counts[q % n];
                first = q;
            }
        }
        v[0] = sum;
        /* A refused call leaves the record in its shape, so the hints
         * follow that shape's ageing: slot q's count leaves at the end
         * of slot q + unit, oldest first. */
        uint64_t left = sum, limit = it->a->limit_or_burst;
        it->other_retry_at = it->other_reset_at = 0;
        for (uint64_t q = first; sum > 0 && q <= r->a; q++) {
            left -= r->u.counts[q % n];
            if (it->other_retry_at == 0 && left + it->a->cost <= limit)
                it->other_retry_at = (q + r->unit + 1) * r->b;
        }
        if (sum > 0)
            it->other_reset_at = (r->a + r->unit + 1) * r->b;
        return sum;
    }
    for (uint64_t j = 0; j < n && j <= k; j++) {
        uint64_t q = k - j;
        if (q <= r->a && q + r->unit >= r->a) {
            v[j] = r->u.counts[q % n];
            sum += v[j];
        }
    }
    return sum;
}

/* Judges a window check at now, under the lock (changes nothing): takes
 * the counts it sees into it->v and decides; the answer's figures come
 * later, from cnt_window_answer, outside the lock. */
static void cnt_window_judge(cnt_item *it, uint64_t now)
{
    const cnt_check_args *a = it->a;
    uint64_t S = it->slot_ns, k = now / S;

    /* A request that read the clock before another one that got the
     * lock first may find the record's newest slot after its own: it is
     * judged (and charged) at the start of that slot, so no count is
     * ever in the future of the one judging. */
    if (it->rec != NULL && it->rec->unit == it->slots &&
        it->rec->b == S && it->rec->a > k) {
        k = it->rec->a;
        it->now = k * S;
    }
    it->slot = k;
    it->total = cnt_window_view(it, it->now, k, it->v);
    if (a->cost > a->limit_or_burst)
        it->ans.state = CNT_CHECK_NEVER;
    else if (it->total + a->cost <= a->limit_or_burst)
        it->ans.state = CNT_CHECK_ALLOWED;
    else
        it->ans.state = CNT_CHECK_LIMITED;
}

/* The figures of a judged window answer, after the lock is dropped. */
static void cnt_window_answer(cnt_item *it)
{
    const cnt_check_args *a = it->a;
    uint64_t *v = it->v;
    uint64_t S = it->slot_ns, k = it->slot, now = it->read_now;
    uint64_t used = it->total;
    cnt_check_answer *ans = &it->ans;
    unsigned slots = it->slots;
    bool other = ans->state != CNT_CHECK_ALLOWED &&
                 it->other_reset_at != 0;

    ans->limit = a->limit_or_burst;
    ans->retry_after_ns = 0;
    if (ans->state == CNT_CHECK_NEVER) {
        ans->retry_after_ns = UINT64_MAX;
    } else if (ans->state == CNT_CHECK_ALLOWED) {
        used += a->cost;
        v[0] += a->cost;
    } else if (other) {
        ans->retry_after_ns = it->other_retry_at - now;
    } else {
        /* The first later slot in which the counts still remembered
         * leave room for the cost; by slot k + slots + 1 all are gone.
         * Counted from the time the request read, which may be before
         * the slot it was judged in (never after). */
        unsigned i;
        for (i = 1; i <= slots; i++) {
            uint64_t keep = 0;
            for (unsigned j = 0; j + i <= slots; j++)
                keep += v[j];
            if (keep + a->cost <= a->limit_or_burst)
                break;
        }
        ans->retry_after_ns = (k + i) * S - now;
    }
    ans->used = cnt_clamp32(used);
    ans->remaining = used < a->limit_or_burst
                         ? (uint32_t)(a->limit_or_burst - used) : 0;
    /* Everything is gone once the newest count's slot has aged out. */
    ans->reset_after_ns = other ? it->other_reset_at - now : 0;
    for (unsigned j = 0; !other && j <= slots; j++)
        if (v[j] != 0) {
            ans->reset_after_ns = (k - j + slots + 1) * S - now;
            break;
        }
}

/* Reads a GCRA record's TAT as ns plus a fraction over count c. A
 * fraction kept over another count is rounded up, so a changed count
 * never allows more. */
static void cnt_gcra_tat(const cnt_limit_rec *r, uint32_t c, uint64_t *q,
                         uint64_t *f)
{
    uint64_t frac = r->u.g.frac;

    *q = r->a;
    if (r->u.g.count != c) {
        /* frac < old count <= 2^32 - 1, so the product fits 64 bits. */
        uint64_t x = frac * c;
        frac = x / r->u.g.count + (x % r->u.g.count != 0);
        *q += frac / c;
        frac %= c;
    }
    *f = frac;
}

/* Judges a GCRA check at now, under the lock: only additions and
 * comparisons of (ns, fraction over count) pairs, which are exact; the
 * answer's figures come later, from cnt_gcra_answer, outside the lock. */
static void cnt_gcra_judge(cnt_item *it, uint64_t now)
{
    const cnt_check_args *a = it->a;
    uint64_t c = a->count;

    it->tat_q = now;
    it->tat_f = 0;
    if (it->rec != NULL) {
        uint64_t q, f;
        cnt_gcra_tat(it->rec, a->count, &q, &f);
        if (q > now || (q == now && f > 0)) {
            it->tat_q = q;
            it->tat_f = f;
        }
    }
    if ((uint64_t)a->cost > (uint64_t)a->limit_or_burst + 1) {
        it->ans.state = CNT_CHECK_NEVER;
        return;
    }
    it->new_f = it->tat_f + it->inc_f;
    it->new_q = it->tat_q + it->inc_q + (it->new_f >= c);
    if (it->new_f >= c)
        it->new_f -= c;
    uint64_t dq = it->new_q - now;
    it->ans.state = dq < it->tol_q ||
                    (dq == it->tol_q && it->new_f <= it->tol_f)
                        ? CNT_CHECK_ALLOWED : CNT_CHECK_LIMITED;
}

/* The figures of a judged GCRA answer, after the lock is dropped; times
 * are scaled by count, so the emission interval period / count is
 * exactly period. */
static void cnt_gcra_answer(cnt_item *it)
{
    const cnt_check_args *a = it->a;
    uint32_t c = a->count;
    uint64_t P = a->period_ns;
    uint64_t L = (uint64_t)a->limit_or_burst + 1;
    cnt_u128 now_s = (cnt_u128)it->now * c;
    cnt_u128 read_s = (cnt_u128)it->read_now * c;
    cnt_u128 tol = (cnt_u128)P * L;
    cnt_u128 tat = (cnt_u128)it->tat_q * c + it->tat_f;
    cnt_u128 after = tat;       /* the TAT once the call is done */
    cnt_u128 remaining;
    cnt_check_answer *ans = &it->ans;

    if (ans->state == CNT_CHECK_ALLOWED) {
        cnt_u128 new_tat = (cnt_u128)it->new_q * c + it->new_f;
        remaining = (tol - (new_tat - now_s)) / P;
        after = new_tat;
    } else {
        remaining = tat - now_s <= tol ? (tol - (tat - now_s)) / P : 0;
        if (ans->state == CNT_CHECK_NEVER) {
            ans->retry_after_ns = UINT64_MAX;
        } else {
            /* Allowed once new_tat - t <= tol: at t = new_tat - tol,
             * counted from the time the request read. */
            cnt_u128 new_tat = tat + (cnt_u128)P * a->cost;
            ans->retry_after_ns = cnt_ceil_div(new_tat - tol - read_s, c);
        }
    }
    ans->limit = cnt_clamp32(L);
    ans->remaining = cnt_clamp32(remaining);
    if (ans->remaining > ans->limit)
        ans->remaining = ans->limit;
    ans->used = ans->limit - ans->remaining;
    ans->reset_after_ns = after > read_s ? cnt_ceil_div(after - read_s, c)
                                         : 0;
}

/* Finds the item's record and judges it at now; lock held. */
static void do_item_judge(cnt_limits *l, cnt_item *it, uint64_t now)
{
    it->now = now;
    it->rec = do_find(l, it->bucket, it->kind, it->a->name,
                      it->a->name_len);
    if (it->kind == CNT_LIMITS_WINDOW)
        cnt_window_judge(it, now);
    else
        cnt_gcra_judge(it, now);
}

/* ---- Checks: charging ---- */

/* Makes what charging an allowed item needs: its record and a ring of the
 * new shape. False, having made nothing (or undone it), when memory is
 * short. */
static bool do_item_make(cnt_limits *l, cnt_item *it)
{
    bool need_ring = it->kind == CNT_LIMITS_WINDOW &&
                     (it->rec == NULL || it->rec->unit != it->slots);
    size_t ring = cnt_ring_size(it->slots);

    if (need_ring) {
        if (!cnt_map_charge(&l->map, ring))
            return false;
        it->ring = calloc((size_t)it->slots + 1, sizeof(uint32_t));
        if (it->ring == NULL) {
            cnt_map_uncharge(&l->map, ring);
            return false;
        }
    }
    if (it->rec == NULL) {
        it->rec = do_create(l, it->bucket, it->kind, it->a->name,
                            it->a->name_len);
        if (it->rec == NULL) {
            if (it->ring != NULL) {
                free(it->ring);
                cnt_map_uncharge(&l->map, ring);
                it->ring = NULL;
            }
            return false;
        }
        it->created = true;
        if (it->kind == CNT_LIMITS_WINDOW) {
            /* A valid empty ring of the item's shape, so undoing or
             * charging treats it like any record. */
            it->rec->unit = it->slots;
            it->rec->b = it->slot_ns;
            it->rec->a = it->slot;
            it->rec->u.counts = it->ring;
            it->ring = NULL;
        } else {
            it->rec->u.g.count = 1;
            it->rec->u.g.frac = 0;
        }
    }
    return true;
}

/* Undoes do_item_make: unlinks a record it created onto *dead and frees
 * a ring it made. */
static void do_item_unmake(cnt_limits *l, cnt_item *it, cnt_map_node **dead)
{
    if (it->ring != NULL) {
        free(it->ring);
        cnt_map_uncharge(&l->map, cnt_ring_size(it->slots));
        it->ring = NULL;
    }
    if (it->created) {
        cnt_limit_rec *r = it->rec;
        cnt_map_node *n = cnt_map_do_unlink(&l->map, it->bucket, &r->node);
        cnt_rec_forget(l, r, false);
        atomic_store_explicit(&n->next, *dead, memory_order_relaxed);
        *dead = n;
        it->created = false;
        it->rec = NULL;
    }
}

/* Charges an allowed window item (its record made). Same shape: the ring
 * moves on to slot k (the slots it passes are emptied) and k's count
 * grows. Another shape: what the old one remembered (it->total) goes
 * into slot k of the new one. */
static void do_window_charge(cnt_limits *l, cnt_item *it)
{
    cnt_limit_rec *r = it->rec;
    uint64_t k = it->slot;
    unsigned n = (unsigned)it->slots + 1;

    if (r->unit != it->slots || r->b != it->slot_ns) {
        uint32_t *ring = r->u.counts;
        if (it->ring != NULL) {
            free(ring);
            cnt_map_uncharge(&l->map, cnt_ring_size(r->unit));
            ring = it->ring;
            it->ring = NULL;
        }
        memset(ring, 0, n * sizeof *ring);
        ring[k % n] = (uint32_t)it->total;
        r->u.counts = ring;
        r->unit = it->slots;
        r->b = it->slot_ns;
        r->a = k;
    } else if (k > r->a) {
        uint64_t gap = k - r->a < n ? k - r->a : n;
        for (uint64_t q = k - gap + 1; q <= k; q++)
            r->u.counts[q % n] = 0;
        r->a = k;
    }
    r->u.counts[k % n] += it->a->cost;
}

/* Charges an allowed item (its record made). */
static void do_item_charge(cnt_limits *l, cnt_item *it)
{
    if (it->kind == CNT_LIMITS_WINDOW) {
        do_window_charge(l, it);
        return;
    }
    it->rec->a = it->new_q;
    it->rec->u.g.frac = (uint32_t)it->new_f;
    it->rec->u.g.count = it->a->count;
}

/* ---- Checks: the request ---- */

/* Whether two items name the same record. */
static bool cnt_item_same(const cnt_item *x, const cnt_item *y)
{
    return x->kind == y->kind && x->a->name_len == y->a->name_len &&
           memcmp(x->a->name, y->a->name, x->a->name_len) == 0;
}

/* Sorts the n stripe numbers in s ascending and drops repeats; returns how
 * many are left. n is at most 16: insertion sort. */
static size_t cnt_stripes_order(size_t *s, size_t n)
{
    size_t m = 0;

    for (size_t i = 1; i < n; i++) {
        size_t v = s[i], j = i;
        for (; j > 0 && s[j - 1] > v; j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
    for (size_t i = 0; i < n; i++)
        if (m == 0 || s[m - 1] != s[i])
            s[m++] = s[i];
    return m;
}

/* Counts the items in the figures: each a check, and when judged (not
 * refused for memory) allowed or limited. */
static void cnt_items_count(cnt_limits *l, const cnt_item *it, size_t n,
                            bool judged)
{
    for (size_t i = 0; i < n; i++) {
        cnt_limits_figures *f = &l->fig[it[i].kind];
        cnt_fig_add(&f->checks, 1);
        if (judged)
            cnt_fig_add(it[i].ans.state == CNT_CHECK_ALLOWED
                            ? &f->allowed : &f->limited, 1);
    }
}

/* Judges n resolved items under their stripe locks (taken in ascending
 * order, each once), and charges them all if all are allowed and !peek;
 * see limits.h. */
static cnt_status cnt_items_run(cnt_limits *l, cnt_item *it, size_t n,
                                bool peek, uint8_t *overall)
{
    size_t stripes[CNT_LIMITS_MULTI_MAX];
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_OK;
    bool all = true;

    for (size_t i = 0; i < n; i++) {
        it[i].bucket = cnt_map_bucket_of(&l->map, it[i].a->name,
                                         it[i].a->name_len);
        stripes[i] = it[i].bucket % CNT_MAP_STRIPES;
    }
    size_t ns = cnt_stripes_order(stripes, n);
    /* The request's time is read before the locks, keeping the clock
     * out of the critical section of a hot name; a request that waited
     * for the lock is judged as of its arrival (see cnt_window_judge
     * for the one place where that needs care). */
    uint64_t now = cnt_clock_mono_ns(l->clock), judge = now;
    for (size_t s = 0; s < ns; s++)
        pthread_mutex_lock(&l->map.stripes[stripes[s]].mutex);
    /* A record the GC removed as dead at a time after ours would have
     * counted at ours: judge no earlier than the GC did. */
    for (size_t s = 0; s < ns; s++)
        if (judge < cnt_map_do_swept_ns(&l->map, stripes[s]))
            judge = cnt_map_do_swept_ns(&l->map, stripes[s]);
    for (size_t i = 0; i < n; i++) {
        it[i].read_now = now;
        do_item_judge(l, &it[i], judge);
        all = all && it[i].ans.state == CNT_CHECK_ALLOWED;
    }
    if (all && !peek) {
        size_t made = 0;
        while (made < n && do_item_make(l, &it[made]))
            made++;
        if (made < n) {
            while (made-- > 0)
                do_item_unmake(l, &it[made], &dead);
            st = CNT_STATUS_OUT_OF_MEMORY;
        } else {
            for (size_t i = 0; i < n; i++)
                do_item_charge(l, &it[i]);
        }
    }
    for (size_t s = ns; s-- > 0;)
        pthread_mutex_unlock(&l->map.stripes[stripes[s]].mutex);
    while (dead != NULL) {
        cnt_map_node *next = atomic_load_explicit(&dead->next,
                                                  memory_order_relaxed);
        cnt_map_node_free(dead);
        dead = next;
    }
    for (size_t i = 0; i < n; i++) {
        if (it[i].kind == CNT_LIMITS_GCRA)
            cnt_gcra_answer(&it[i]);
        else
            cnt_window_answer(&it[i]);
    }
    *overall = all ? 0 : 1;
    cnt_items_count(l, it, n, st == CNT_STATUS_OK);
    return st;
}

/* One check; see limits.h. */
cnt_status cnt_limits_check(cnt_limits *l, const cnt_check_args *a,
                            cnt_check_answer *out)
{
    cnt_item it;
    uint8_t overall;

    if (!cnt_item_resolve(&it, a)) {
        if (a->opcode == CNT_LIMITS_OP_WINDOW ||
            a->opcode == CNT_LIMITS_OP_GCRA)
            cnt_fig_add(&l->fig[a->opcode == CNT_LIMITS_OP_WINDOW
                                    ? CNT_LIMITS_WINDOW
                                    : CNT_LIMITS_GCRA].checks, 1);
        return CNT_STATUS_INVALID;
    }
    cnt_status st = cnt_items_run(l, &it, 1, a->peek, &overall);
    if (st == CNT_STATUS_OK)
        *out = it.ans;
    return st;
}

/* The all-or-nothing multi-check; see limits.h. */
cnt_status cnt_limits_multi(cnt_limits *l, const cnt_check_args *items,
                            size_t n, bool peek, cnt_check_answer *out,
                            uint8_t *overall)
{
    cnt_item it[CNT_LIMITS_MULTI_MAX];

    if (n == 0 || n > CNT_LIMITS_MULTI_MAX)
        return CNT_STATUS_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (!cnt_item_resolve(&it[i], &items[i]))
            return CNT_STATUS_INVALID;
        for (size_t j = 0; j < i; j++)
            if (cnt_item_same(&it[i], &it[j]))
                return CNT_STATUS_INVALID;
    }
    cnt_status st = cnt_items_run(l, it, n, peek, overall);
    if (st != CNT_STATUS_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        out[i] = it[i].ans;
    return CNT_STATUS_OK;
}

/* ---- Building, figures, collection ---- */

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
static bool cnt_limits_all_go(void *ctx, const cnt_map_node *node,
                              const cnt_clock_now *now)
{
    (void)now;
    cnt_rec_forget(ctx, (cnt_limit_rec *)node, false);
    return true;
}

/* Frees every record and l. */
void cnt_limits_free(cnt_limits *l)
{
    if (l == NULL)
        return;
    cnt_map_may_go all = { cnt_limits_all_go, l };
    cnt_clock_now now = { 0, 0 };

    cnt_map_sweep(&l->map, 0, cnt_map_buckets(&l->map), &all, &now);
    cnt_map_destroy(&l->map);
    free(l);
}

/* Whether a record is dead at now: a TTL past its expiry, a window whose
 * newest slot has aged out, a GCRA whose TAT has passed. */
static bool cnt_rec_dead(const cnt_limit_rec *r, uint64_t now)
{
    switch (r->kind) {
    case CNT_LIMITS_TTL:
        return !cnt_ttl_live(r, now);
    case CNT_LIMITS_WINDOW:
        return now / r->b > r->a + r->unit;
    default:
        return r->a < now || (r->a == now && r->u.g.frac == 0);
    }
}

/* The sweep test of cnt_limits_may_go; frees the ring of a window record
 * it lets go (under the stripe lock, which the sweep holds). */
static bool cnt_limits_dead_go(void *ctx, const cnt_map_node *node,
                               const cnt_clock_now *now)
{
    cnt_limit_rec *r = (cnt_limit_rec *)node;

    if (!cnt_rec_dead(r, now->mono_ns))
        return false;
    cnt_rec_forget(ctx, r, true);
    return true;
}

/* The limits' sweep test; see limits.h. */
cnt_map_may_go cnt_limits_may_go(cnt_limits *l)
{
    cnt_map_may_go g = { cnt_limits_dead_go, l };

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

/* The clock. */
const cnt_clock *cnt_limits_clock(const cnt_limits *l)
{
    return l->clock;
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
