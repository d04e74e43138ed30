/* limits-ir.c: a fixed number of rate-limit checks in one thread, for
 * callgrind to count the instructions of one cnt_limits_check (what the
 * busiest names' counting adds to a check is measured this way; see
 * doc/performance.md). Nothing is timed: the same run counts the same.
 * Usage: limits-ir gcra|window N [spread]  (spread: 1000 names in turn;
 * else one name) */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/limits.h"

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "gcra") != 0 &&
                     strcmp(argv[1], "window") != 0) || atol(argv[2]) <= 0) {
        fprintf(stderr, "usage: limits-ir gcra|window N [spread]\n");
        return 2;
    }
    bool gcra = strcmp(argv[1], "gcra") == 0, spread = argc > 3;
    long n = atol(argv[2]);
    cnt_limits *l = cnt_limits_new(NULL);
    char name[24];
    cnt_check_result ans;

    if (l == NULL) {
        fprintf(stderr, "limits-ir: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        int len = snprintf(name, sizeof name, "n%ld", spread ? i % 1000 : 0);
        cnt_check_request a = {
            .opcode = gcra ? CNT_OP_GCRA_CHECK : CNT_OP_WINDOW_CHECK,
            .limit_or_burst = UINT32_MAX, .count = UINT32_MAX, .cost = 1,
            .period_ns = gcra ? 1000000000u : 0,
            .name = (const uint8_t *)name, .name_len = (uint16_t)len,
        };
        if (cnt_limits_check(l, &a, &ans) != CNT_STATUS_OK) {
            fprintf(stderr, "limits-ir: a check failed\n");
            return 1;
        }
    }
    cnt_limits_free(l);
    return 0;
}
