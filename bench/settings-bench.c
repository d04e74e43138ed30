/* settings-bench.c: the time to apply many tenants' settings with the
 * binary Tenant_set (0x45) against the JSON Tenant_set_json (0x2a), in one
 * run against a running server, one blocking request at a time (what an
 * operator's script does). Both set the same values on the same tenants,
 * in alternating rounds so that neither gets a warmer server; the median
 * round of each is printed as one Markdown table row per opcode.
 *
 *   usage: settings-bench HOST:PORT SECRET_FILE [TENANTS [ROUNDS]]
 *
 * (doc/performance.md, "Throttle settings"). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/mccounter.h"

#define MAX_ROUNDS 101

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* One round: every tenant set once by the given opcode; seconds taken. */
static double round_of(mcc_client *c, unsigned tenants, unsigned round,
                       int json)
{
    double start = now_s();

    for (unsigned i = 0; i < tenants; i++) {
        char name[32], doc[96];
        unsigned reserved = (round + i) % 3;
        int n = snprintf(name, sizeof name, "bench-tenant-%u", i);
        int rc;

        if (json) {
            int d = snprintf(doc, sizeof doc, "{\"reserved\": %u, "
                             "\"hard_limit\": \"unlimited\"}", reserved);
            rc = mcc_tenant_set_json(c, name, (size_t)n, doc, (size_t)d, -1,
                                     NULL);
        } else {
            rc = mcc_tenant_set(c, name, (size_t)n,
                                MCC_TENANT_SET_RESERVED |
                                    MCC_TENANT_SET_HARD,
                                reserved, 0xffffffffu, -1, NULL);
        }
        if (rc != MCC_OK) {
            fprintf(stderr, "settings-bench: %s failed: %s\n",
                    json ? "tenant_set_json" : "tenant_set",
                    mcc_strerror(rc));
            exit(1);
        }
    }
    return now_s() - start;
}

int main(int argc, char **argv)
{
    unsigned tenants = argc > 3 ? (unsigned)atoi(argv[3]) : 1000;
    unsigned rounds = argc > 4 ? (unsigned)atoi(argv[4]) : 11;
    double t[2][MAX_ROUNDS];
    char secret[4097], err[256];
    mcc_client *c;
    FILE *f;
    size_t len;

    if (argc < 3 || tenants < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: settings-bench HOST:PORT SECRET_FILE "
                "[TENANTS [ROUNDS (1..%u)]]\n", MAX_ROUNDS);
        return 1;
    }
    f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    len = fread(secret, 1, sizeof secret, f);
    fclose(f);
    if (len > 0 && secret[len - 1] == '\n')
        len--;
    if (len == 0 || len > 4096) {
        fprintf(stderr, "settings-bench: %s: a secret of 1..4096 bytes\n",
                argv[2]);
        return 1;
    }
    c = mcc_client_new();
    if (!c || mcc_client_set_servers(c, argv[1], err, sizeof err) < 0) {
        fprintf(stderr, "settings-bench: %s\n", c ? err : "out of memory");
        return 1;
    }
    if (mcc_auth(c, 0, secret, len, -1, NULL) != MCC_OK) {
        fprintf(stderr, "settings-bench: authentication refused\n");
        return 1;
    }
    for (unsigned r = 0; r < rounds; r++) {
        int first = (int)(r & 1u);
        t[first][r] = round_of(c, tenants, r, first);
        t[!first][r] = round_of(c, tenants, r, !first);
    }
    qsort(t[0], rounds, sizeof t[0][0], cmp_double);
    qsort(t[1], rounds, sizeof t[1][0], cmp_double);
    printf("| opcode | tenants | rounds | median ms | per tenant us |\n");
    printf("|---|---|---|---|---|\n");
    for (int j = 0; j < 2; j++)
        printf("| %s | %u | %u | %.1f | %.1f |\n",
               j ? "Tenant_set_json (0x2a)" : "Tenant_set (0x45)", tenants,
               rounds, t[j][rounds / 2] * 1e3,
               t[j][rounds / 2] * 1e6 / tenants);
    mcc_client_free(c);
    return 0;
}
