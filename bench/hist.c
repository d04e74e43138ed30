/* hist.c: logarithmic-bucket latency histogram for counter-bench (see
 * hist.h). Bucket index = power of two of the value and its next five bits,
 * so the per-request cost is a count-leading-zeros and an increment. */
#include "config.h"

#include <string.h>

#include "bench/hist.h"

/* Returns the bucket index of v. */
static unsigned hist_index(uint64_t v)
{
    if (v < CNT_HIST_SUB)
        return (unsigned)v;
    unsigned exp = 63u - (unsigned)__builtin_clzll(v);  /* >= SUB_BITS */
    unsigned sub = (unsigned)(v >> (exp - CNT_HIST_SUB_BITS)) & (CNT_HIST_SUB - 1);
    return (exp - CNT_HIST_SUB_BITS + 1) * CNT_HIST_SUB + sub;
}

/* Returns the smallest value that falls into bucket i. */
static uint64_t hist_lower(unsigned i)
{
    if (i < CNT_HIST_SUB)
        return i;
    unsigned exp = i / CNT_HIST_SUB + CNT_HIST_SUB_BITS - 1;
    uint64_t sub = i % CNT_HIST_SUB;
    return (CNT_HIST_SUB + sub) << (exp - CNT_HIST_SUB_BITS);
}

void cnt_hist_reset(cnt_hist *h)
{
    memset(h, 0, sizeof *h);
}

void cnt_hist_record(cnt_hist *h, uint64_t value)
{
    h->buckets[hist_index(value)]++;
    h->count++;
    h->sum += value;
    if (value > h->max)
        h->max = value;
}

void cnt_hist_merge(cnt_hist *dst, const cnt_hist *src)
{
    for (unsigned i = 0; i < CNT_HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t cnt_hist_quantile(const cnt_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    /* The rank of the wanted value, 1-based, rounded up so p99.9 of 1000
     * samples is the 999th, not the 1000th. */
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
    if (rank == 0)
        rank = 1;
    if (rank >= h->count)
        return h->max;      /* the largest value is known exactly */
    uint64_t seen = 0;
    for (unsigned i = 0; i < CNT_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t lo = hist_lower(i);
            uint64_t hi = i + 1 < CNT_HIST_BUCKETS ? hist_lower(i + 1) : lo;
            uint64_t mid = lo + (hi - lo) / 2;
            return mid > h->max ? h->max : mid;
        }
    }
    return h->max;
}

double cnt_hist_mean(const cnt_hist *h)
{
    return h->count == 0 ? 0 : (double)h->sum / (double)h->count;
}
