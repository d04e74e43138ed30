/* get-lease-bench.c: what max_lease buys and costs with libmccounter's
 * mcc_get_lease, against a running server (one: the round trips are read
 * from its window_checks statistic). For each batch size: (1) with a
 * quota never reached, the calls per second of one client and the window
 * checks the server answered per call; (2) with K clients of this process
 * taking turns on one identity above its quota, the most calls admitted
 * in any 0.9 s and any 1 s, beside the bound quota + K*(B-1).
 *
 *   usage: get-lease-bench HOST:PORT [SECONDS [K [QUOTA]]]
 *
 * It prints a Markdown table (doc/performance.md, "get_lease"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/mccounter.h"

#define MAX_CLIENTS 64
#define MAX_ADMITTED (1u << 22)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Picks window_checks out of the Stats series. */
static void stat_cb(mcc_client *c, const mcc_record *rec, void *arg)
{
    (void)c;
    if (rec->more && rec->name_len == 13 &&
        memcmp(rec->name, "window_checks", 13) == 0) {
        char v[32];
        size_t n = rec->value_len < sizeof v - 1 ? rec->value_len
                                                 : sizeof v - 1;

        memcpy(v, rec->value, n);
        v[n] = '\0';
        *(unsigned long long *)arg = strtoull(v, NULL, 10);
    }
}

static unsigned long long checks(mcc_client *c)
{
    unsigned long long n = 0;

    if (mcc_stats(c, 0, stat_cb, &n, -1) != MCC_OK) {
        fprintf(stderr, "get-lease-bench: stats failed\n");
        exit(1);
    }
    return n;
}

/* The most admissions in any interval of span seconds. */
static size_t worst(const double *t, size_t n, double span)
{
    size_t best = 0, j = 0;

    for (size_t i = 0; i < n; i++) {
        while (t[j] <= t[i] - span)
            j++;
        if (i - j + 1 > best)
            best = i - j + 1;
    }
    return best;
}

int main(int argc, char **argv)
{
    static const unsigned batches[] = { 1, 10, 100 };
    double secs = argc > 2 ? atof(argv[2]) : 3.0, *adm;
    int k = argc > 3 ? atoi(argv[3]) : 4;
    unsigned quota = argc > 4 ? (unsigned)atoi(argv[4]) : 1000;
    char err[256], op[32], user[32];

    if (argc < 2 || secs <= 0 || k < 1 || k > MAX_CLIENTS || quota < 1) {
        fprintf(stderr, "usage: get-lease-bench HOST:PORT [SECONDS [K "
                "[QUOTA]]]\n");
        return 1;
    }
    adm = malloc(MAX_ADMITTED * sizeof *adm);
    if (!adm)
        return 1;
    snprintf(user, sizeof user, "bench%ld", (long)getpid());
    printf("| max_lease | calls/s (1 client) | round trips/call | quota | K "
           "| most admitted in 0.9 s | bound | most admitted in 1 s |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        mcc_client *cs[MAX_CLIENTS];
        unsigned long long before, calls = 0;
        double start, end, rate, rtc;
        size_t n = 0;

        cs[0] = mcc_quota_init(argv[1], batches[b], err, sizeof err);
        if (!cs[0]) {
            fprintf(stderr, "get-lease-bench: %s\n", err);
            return 1;
        }
        snprintf(op, sizeof op, "fast%u", batches[b]);
        before = checks(cs[0]);
        start = now_s();
        end = start + secs;
        while (now_s() < end) {
            if (mcc_get_lease(cs[0], user, "X", op, 0xffffffffu) != 1) {
                fprintf(stderr, "get-lease-bench: refused or failed\n");
                return 1;
            }
            calls++;
        }
        rate = (double)calls / (now_s() - start);
        rtc = (double)(checks(cs[0]) - before) / (double)calls;
        mcc_client_free(cs[0]);
        for (int i = 0; i < k; i++) {
            cs[i] = mcc_quota_init(argv[1], batches[b], err, sizeof err);
            if (!cs[i])
                return 1;
        }
        snprintf(op, sizeof op, "over%u", batches[b]);
        end = now_s() + secs;
        while (now_s() < end && n < MAX_ADMITTED)
            for (int i = 0; i < k && n < MAX_ADMITTED; i++) {
                int rc = mcc_get_lease(cs[i], user, "X", op, quota);

                if (rc < 0) {
                    fprintf(stderr, "get-lease-bench: %s\n",
                            mcc_strerror(rc));
                    return 1;
                }
                if (rc == 1)
                    adm[n++] = now_s();
            }
        for (int i = 0; i < k; i++)
            mcc_client_free(cs[i]);
        printf("| %u | %.0f | %.3f | %u | %d | %zu | %u | %zu |\n",
               batches[b], rate, rtc, quota, k, worst(adm, n, 0.9),
               quota + (unsigned)k * (batches[b] - 1), worst(adm, n, 1.0));
    }
    free(adm);
    return 0;
}
