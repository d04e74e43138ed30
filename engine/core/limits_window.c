/* limits_window.c: the sliding-window limit of limits.h. A record keeps a
 * ring of slots + 1 counts (its own block, charged to the map's budget);
 * a check sums the counts still inside the window, and an allowed one adds
 * its cost to the newest slot. A request of another shape (slots, window)
 * sees the old record as the total it remembers; charging it rebuilds the
 * ring in the new shape. The shape rule itself is the protocol's
 * (cnt_window_shape in protocol/wire.h).
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include "engine/core/limits_int.h"

/* Bytes of a window record's ring of slots + 1 counts. */
static size_t ring_size(uint8_t slots)
{
    return ((size_t)slots + 1) * sizeof(uint32_t);
}

/* Checks a window request's shape and resolves its defaults. */
static bool window_resolve(cnt_limits_item *it)
{
    return cnt_window_shape(it->a->slots, it->a->period_ns, &it->slots,
                            &it->slot_ns);
}

/* The counts a window record still holds at slot k, by age: v[j] is the
 * count of slot k - j (j = 0 .. slots), in the item's shape. A record of
 * another shape is seen as the total it remembers, all in slot k: never
 * less than either shape would count, and the times that shape lets the
 * call in and forgets it all (it->other_*). Returns the sum. */
static uint64_t window_view(cnt_limits_item *it, uint64_t now, uint64_t k,
                            uint64_t *v)
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
 * later, from window_answer, outside the lock. */
static void window_judge(cnt_limits_item *it, uint64_t now)
{
    const cnt_check_request *a = it->a;
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
    it->total = window_view(it, it->now, k, it->v);
    if (a->cost > a->limit_or_burst)
        it->ans.state = CNT_CHECK_NEVER;
    else if (it->total + a->cost <= a->limit_or_burst)
        it->ans.state = CNT_CHECK_ALLOWED;
    else
        it->ans.state = CNT_CHECK_LIMITED;
}

/* The figures of a judged window answer, after the lock is dropped. */
static void window_answer(cnt_limits_item *it)
{
    const cnt_check_request *a = it->a;
    uint64_t *v = it->v;
    uint64_t S = it->slot_ns, k = it->slot, now = it->read_now;
    uint64_t used = it->total;
    cnt_check_result *ans = &it->ans;
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
    ans->used = cnt_limits_clamp32(used);
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

/* Makes what charging an allowed window item needs: its record and a
 * ring of the new shape. False, having made nothing (or undone it), when
 * memory is short. */
static bool do_window_make(cnt_limits *l, cnt_limits_item *it)
{
    bool need_ring = it->rec == NULL || it->rec->unit != it->slots;
    size_t ring = ring_size(it->slots);

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
        it->rec = cnt_limits_do_create(l, it->bucket, CNT_LIMITS_WINDOW,
                                       it->a->name, it->a->name_len);
        if (it->rec == NULL) {
            free(it->ring);
            cnt_map_uncharge(&l->map, ring);
            it->ring = NULL;
            return false;
        }
        it->created = true;
        /* A valid empty ring of the item's shape, so undoing or charging
         * treats it like any record. */
        it->rec->unit = it->slots;
        it->rec->b = it->slot_ns;
        it->rec->a = it->slot;
        it->rec->u.counts = it->ring;
        it->ring = NULL;
    }
    return true;
}

/* Frees a ring do_window_make made and charging has not taken. */
static void do_window_unmake(cnt_limits *l, cnt_limits_item *it)
{
    if (it->ring != NULL) {
        free(it->ring);
        cnt_map_uncharge(&l->map, ring_size(it->slots));
        it->ring = NULL;
    }
}

/* Charges an allowed window item (its record made). Same shape: the ring
 * moves on to slot k (the slots it passes are emptied) and k's count
 * grows. Another shape: what the old one remembered (it->total) goes
 * into slot k of the new one. */
static void do_window_charge(cnt_limits *l, cnt_limits_item *it)
{
    cnt_limit_rec *r = it->rec;
    uint64_t k = it->slot;
    unsigned n = (unsigned)it->slots + 1;

    if (r->unit != it->slots || r->b != it->slot_ns) {
        uint32_t *ring = r->u.counts;
        if (it->ring != NULL) {
            free(ring);
            cnt_map_uncharge(&l->map, ring_size(r->unit));
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


/* A window record is dead once its newest slot has aged out. */
static bool window_dead(const cnt_limit_rec *r, uint64_t now)
{
    return now / r->b > r->a + r->unit;
}

/* Frees a window record's ring as the record goes. */
static void window_forget(cnt_limits *l, cnt_limit_rec *r)
{
    free(r->u.counts);
    cnt_map_uncharge(&l->map, ring_size(r->unit));
}

const cnt_limits_kind cnt_limits_window_kind = {
    .opcode = CNT_OP_WINDOW_CHECK,
    .resolve = window_resolve,
    .judge = window_judge,
    .make = do_window_make,
    .unmake = do_window_unmake,
    .charge = do_window_charge,
    .answer = window_answer,
    .dead = window_dead,
    .forget = window_forget,
};
