/* limits_gcra.c: the GCRA limit of limits.h (the generic cell rate
 * algorithm, as redis-cell): a record keeps one theoretical arrival time
 * (TAT) as whole nanoseconds plus a fraction over the request's count, so
 * every step is exact. The divisions are done before the lock; under it a
 * check only adds and compares.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include "engine/core/limits_int.h"

/* The longest GCRA delay tolerance, period * (burst + 1) / count, in ns:
 * 2^62 ns (146 years) keeps now + tolerance within 64 bits. */
#define GCRA_TOLERANCE_MAX ((uint64_t)1 << 62)

/* Checks a GCRA request's arguments and works out its tolerance and
 * increment. */
static bool gcra_resolve(cnt_limits_item *it)
{
    const cnt_check_request *a = it->a;

    if (a->count == 0 || a->period_ns == 0)
        return false;
    uint64_t L = (uint64_t)a->limit_or_burst + 1;
    cnt_u128 tol = (cnt_u128)a->period_ns * L;
    if (tol / a->count > GCRA_TOLERANCE_MAX)
        return false;
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

/* Reads a GCRA record's TAT as ns plus a fraction over count c. A
 * fraction kept over another count is rounded up, so a changed count
 * never allows more. */
static void gcra_tat(const cnt_limit_rec *r, uint32_t c, uint64_t *q,
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
 * answer's figures come later, from gcra_answer, outside the lock. */
static void gcra_judge(cnt_limits_item *it, uint64_t now)
{
    const cnt_check_request *a = it->a;
    uint64_t c = a->count;

    it->tat_q = now;
    it->tat_f = 0;
    if (it->rec != NULL) {
        uint64_t q, f;
        gcra_tat(it->rec, a->count, &q, &f);
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
static void gcra_answer(cnt_limits_item *it)
{
    const cnt_check_request *a = it->a;
    uint32_t c = a->count;
    uint64_t P = a->period_ns;
    uint64_t L = (uint64_t)a->limit_or_burst + 1;
    cnt_u128 now_s = (cnt_u128)it->now * c;
    cnt_u128 read_s = (cnt_u128)it->read_now * c;
    cnt_u128 tol = (cnt_u128)P * L;
    cnt_u128 tat = (cnt_u128)it->tat_q * c + it->tat_f;
    cnt_u128 after = tat;       /* the TAT once the call is done */
    cnt_u128 remaining;
    cnt_check_result *ans = &it->ans;

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
            ans->retry_after_ns =
                cnt_limits_ceil_div(new_tat - tol - read_s, c);
        }
    }
    ans->limit = cnt_limits_clamp32(L);
    ans->remaining = cnt_limits_clamp32(remaining);
    if (ans->remaining > ans->limit)
        ans->remaining = ans->limit;
    ans->used = ans->limit - ans->remaining;
    ans->reset_after_ns =
        after > read_s ? cnt_limits_ceil_div(after - read_s, c) : 0;
}

/* Makes the record an allowed GCRA item needs; false when memory is
 * short. */
static bool do_gcra_make(cnt_limits *l, cnt_limits_item *it)
{
    if (it->rec != NULL)
        return true;
    it->rec = cnt_limits_do_create(l, it->bucket, CNT_LIMITS_GCRA,
                                   it->a->name, it->a->name_len);
    if (it->rec == NULL)
        return false;
    it->created = true;
    it->rec->u.g.count = 1;
    it->rec->u.g.frac = 0;
    return true;
}

/* Charges an allowed GCRA item: the TAT moves on. */
static void do_gcra_charge(cnt_limits *l, cnt_limits_item *it)
{
    (void)l;
    it->rec->a = it->new_q;
    it->rec->u.g.frac = (uint32_t)it->new_f;
    it->rec->u.g.count = it->a->count;
}

/* A GCRA record is dead once its TAT has passed: it then allows what no
 * record would. */
static bool gcra_dead(const cnt_limit_rec *r, uint64_t now)
{
    return r->a < now || (r->a == now && r->u.g.frac == 0);
}

const cnt_limits_kind cnt_limits_gcra_kind = {
    .opcode = CNT_OP_GCRA_CHECK,
    .resolve = gcra_resolve,
    .judge = gcra_judge,
    .make = do_gcra_make,
    .charge = do_gcra_charge,
    .answer = gcra_answer,
    .dead = gcra_dead,
};
