/* hist.h: a latency histogram with logarithmic buckets (HDR style): 32
 * linear sub-buckets per power of two, so any recorded value is known to
 * within about 3%, recording is one index computation and no allocation. */
#ifndef CNT_BENCH_HIST_H
#define CNT_BENCH_HIST_H

#include <stdint.h>

#define CNT_HIST_SUB_BITS 5
#define CNT_HIST_SUB (1u << CNT_HIST_SUB_BITS)
/* Values below CNT_HIST_SUB get one bucket each; every further power of two
 * up to 2^63 gets CNT_HIST_SUB buckets. */
#define CNT_HIST_BUCKETS ((64 - CNT_HIST_SUB_BITS + 1) * CNT_HIST_SUB)

typedef struct cnt_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;               /* of every value, for the mean (the tail
                                   weighs in it, as it does in a rate) */
    uint64_t buckets[CNT_HIST_BUCKETS];
} cnt_hist;

/* Empties h. */
void cnt_hist_reset(cnt_hist *h);

/* Records one value (nanoseconds, or any unit). */
void cnt_hist_record(cnt_hist *h, uint64_t value);

/* Adds every value recorded in src to dst. */
void cnt_hist_merge(cnt_hist *dst, const cnt_hist *src);

/* Returns the value at quantile q (0..1): the middle of the bucket that
 * holds it, never above the largest recorded value, which is what the top
 * rank returns exactly; 0 when empty. */
uint64_t cnt_hist_quantile(const cnt_hist *h, double q);

/* Returns the mean of the recorded values, exact; 0 when empty. */
double cnt_hist_mean(const cnt_hist *h);

#endif
