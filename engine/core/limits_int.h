/* limits_int.h: what the files of the rate limits share and nothing else
 * includes: the record layout, the limits' struct and figures, one check
 * while it runs (cnt_limits_item), and the table of kinds through which
 * the shared code reaches each kind's rules. limits.c holds the shared
 * part (building, figures, records coming and going, the sweep),
 * limits_ttl.c the TTL counters, limits_window.c and limits_gcra.c the two
 * check kinds, and limits_check.c the run of one check or a multi-check.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#ifndef CNT_ENGINE_LIMITS_INT_H
#define CNT_ENGINE_LIMITS_INT_H

#include <stdlib.h>
#include <string.h>

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
    /* Checks of this record per second, for the busiest-names listing:
     * busy_sec is the (truncated) second busy_cur counts in, busy_prev
     * the count of the second before it (0 if that had none). */
    uint32_t busy_sec, busy_cur, busy_prev;
    uint8_t kind;               /* CNT_LIMITS_TTL, _WINDOW, _GCRA */
    uint8_t unit;               /* ttl: display unit; window: slots */
    /* Where the record sits in its stripe's hot table (cnt_limits_hot):
     * the low nibble is its slot in cur plus one, the high nibble its
     * slot in prev plus one; 0 in both: in neither. */
    uint8_t hot;
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

/* One stripe's hottest records, under the stripe's lock: cur holds the
 * records with the most checks in the second sec (a record of another
 * second counts 0 there, an empty entry too), min a lower bound of their
 * counts, so a colder record passes by without a search; prev is cur as
 * it stood at the end of second sec - 1 (empty if that second had no
 * check on the stripe), which a listing in second sec reads. Records that
 * go leave both (cnt_limits_rec_forget), so no entry points at freed
 * memory. */
typedef struct cnt_limits_hot {
    cnt_limit_rec *cur[CNT_LIMITS_HOT];
    cnt_limit_rec *prev[CNT_LIMITS_HOT];
    uint32_t sec;
    uint32_t min;
} cnt_limits_hot;

/* The busiest-names listing of one whole second, computed by the first
 * listing after it and copied out by the others of that second (see
 * cnt_limits_busiest). lock guards valid, sec, n and v (the names are the
 * cache's own copies). ids[k] is the record v[k] was read from, compared
 * and never dereferenced: cnt_limits_rec_forget, under the record's
 * stripe lock and without this lock (a listing takes stripe locks while
 * holding it), turns it to NULL when that record goes, and a NULL entry
 * is not served. ids_sec is sec for that test, which skips every record
 * not checked since (a named record was checked in sec). */
typedef struct cnt_limits_busy_cache {
    pthread_mutex_t lock;
    bool valid;
    uint32_t sec;
    size_t n;
    cnt_busy_name v[CNT_LIMITS_BUSIEST_MAX];
    _Atomic(cnt_limit_rec *) ids[CNT_LIMITS_BUSIEST_MAX];
    atomic_uint_fast32_t ids_sec;
    atomic_uint_fast64_t computed;  /* listings computed, for the stats */
} cnt_limits_busy_cache;

struct cnt_limits {
    cnt_map map;
    cnt_limits_hot *hot;        /* one per stripe in use (nhot) */
    size_t nhot;
    cnt_limits_busy_cache busy;
    const cnt_clock *clock;
    atomic_size_t sweep_next;   /* where cnt_limits_sweep goes on */
    cnt_limits_figures fig[CNT_LIMITS_KINDS];
};

/* One check while a request runs: its arguments resolved, the record it
 * found, its answer and what charging it needs. */
typedef struct cnt_limits_item {
    const cnt_check_request *a;
    uint8_t kind;
    size_t bucket;
    uint8_t slots;              /* window */
    uint64_t slot_ns;           /* window */
    cnt_limit_rec *rec;         /* found under the lock, or NULL */
    /* Judged: */
    cnt_check_result ans;
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
    /* Last, and not cleared in advance (the window's view fills it): */
    uint64_t v[CNT_WINDOW_MAX_SLOTS + 1];   /* window: counts by age */
} cnt_limits_item;

/* One kind's rules, as the shared code calls them. A check kind (window,
 * GCRA) fills every slot; the TTL counters, which are no check, only dead
 * and forget. NULL slots are never called. */
typedef struct cnt_limits_kind {
    uint8_t opcode;             /* the check's opcode; 0: not a check */
    /* Checks the request's arguments and resolves them into it (it is
     * cleared up to v and it->a set); false when out of range. No lock. */
    bool (*resolve)(cnt_limits_item *it);
    /* Judges it at now against it->rec (found already), changing
     * nothing; lock held. */
    void (*judge)(cnt_limits_item *it, uint64_t now);
    /* Makes what charging an allowed item needs (its record, a block of
     * counts); false, having made nothing, when memory is short. Lock
     * held. */
    bool (*make)(cnt_limits *l, cnt_limits_item *it);
    /* Frees what make allocated beside the record (the record itself is
     * the caller's to unlink); lock held. */
    void (*unmake)(cnt_limits *l, cnt_limits_item *it);
    /* Charges an allowed item, its record made; lock held. */
    void (*charge)(cnt_limits *l, cnt_limits_item *it);
    /* Works out the answer's figures from what judge read; no lock. */
    void (*answer)(cnt_limits_item *it);
    /* Whether a record of this kind is dead at now (the sweep's test). */
    bool (*dead)(const cnt_limit_rec *r, uint64_t now);
    /* Frees what a record owns beside its node, as it goes. */
    void (*forget)(cnt_limits *l, cnt_limit_rec *r);
} cnt_limits_kind;

/* The kinds, indexed by CNT_LIMITS_TTL, _WINDOW, _GCRA; each defined in
 * its own file. */
extern const cnt_limits_kind cnt_limits_ttl_kind;
extern const cnt_limits_kind cnt_limits_window_kind;
extern const cnt_limits_kind cnt_limits_gcra_kind;
extern const cnt_limits_kind *const cnt_limits_kinds[CNT_LIMITS_KINDS];

/* Adds n to a figure. */
static inline void cnt_limits_fig_add(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

/* Takes n from a figure. */
static inline void cnt_limits_fig_sub(atomic_uint_fast64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

/* a + b, or UINT64_MAX when that does not fit. */
static inline uint64_t cnt_limits_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ceil(x / d) of a 128-bit x, clamped to 64 bits. */
static inline uint64_t cnt_limits_ceil_div(cnt_u128 x, uint64_t d)
{
    cnt_u128 q = x / d + (x % d != 0);

    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* x clamped to 32 bits. */
static inline uint32_t cnt_limits_clamp32(cnt_u128 x)
{
    return x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

/* Finds the record of (kind, name) in bucket b; NULL when absent. */
static inline cnt_limit_rec *cnt_limits_do_find(cnt_limits *l, size_t b,
                                                uint8_t kind,
                                                const uint8_t *name,
                                                uint16_t len)
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
 * looked), its fields zero; NULL when memory is short. */
cnt_limit_rec *cnt_limits_do_create(cnt_limits *l, size_t b, uint8_t kind,
                                    const uint8_t *name, uint16_t len);

/* The part of cnt_limits_do_busy off its fast path: a new second for r or
 * its stripe, or r not in the stripe's table; same arguments. */
void cnt_limits_do_busy_slow(cnt_limits *l, size_t b, cnt_limit_rec *r,
                             uint64_t now);

/* Counts one check (or TTL operation) of r made at now in its stripe's
 * second, and offers r to the stripe's hot table; the stripe lock of
 * bucket b (r's) held. Inline for the common case of a record in the
 * table checked again in the second it counts in, which only counts
 * (without touching the table: the stripe has seen that second, and a
 * request that read its clock before a later one took the lock counts in
 * its own second). No count wraps: a record cannot take 2^32 checks in a
 * second. */
static inline void cnt_limits_do_busy(cnt_limits *l, size_t b,
                                      cnt_limit_rec *r, uint64_t now)
{
    if (r->busy_sec == (uint32_t)(now / CNT_LIMITS_SECOND_NS) &&
        (r->hot & 0x0f) != 0) {
        r->busy_cur++;
        return;
    }
    cnt_limits_do_busy_slow(l, b, r, now);
}

/* Frees what rec owns beside its node (its kind's forget), takes it out
 * of its stripe's hot table and forgets the record in the figures;
 * expired says it went past its expiry. Stripe lock held. */
void cnt_limits_rec_forget(cnt_limits *l, cnt_limit_rec *rec, bool expired);

#endif
