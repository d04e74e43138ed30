/* get_lease.c: the quota manager's own example, "guest may insert at most
 * 5 times a second into space X", with libmccounter's mcc_get_lease. It
 * makes CALLS inserts as fast as it can and prints, for each, whether
 * the quota let it happen; those refused would be delayed or dropped by
 * a real program.
 *
 *   usage: get_lease [-s HOST:PORT[:WEIGHT],...] [-b MAX_LEASE] [SPACE
 *          [CALLS]]
 *
 * SPACE defaults to "X", CALLS to 7, MAX_LEASE to 1 (every call asks the
 * server). Exit status: 0, 1 for bad arguments or when the servers could
 * not answer. Build it against an installed library with
 *   cc get_lease.c $(pkg-config --cflags --libs mccounter) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir mccounter) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mccounter.h>

/* The quota of the example: inserts per second. */
#define QUOTA 5u

static int usage(void)
{
    fprintf(stderr, "usage: get_lease [-s HOST:PORT[:WEIGHT],...] "
            "[-b MAX_LEASE] [SPACE [CALLS]]\n");
    return 1;
}

/* Reads a positive decimal integer; 0 when str is not one. */
static unsigned long positive(const char *str)
{
    char *end;
    unsigned long v;

    if (!str[0] || str[0] == '-')
        return 0;
    v = strtoul(str, &end, 10);
    return *end || v > 1000000000ul ? 0 : v;
}

int main(int argc, char **argv)
{
    const char *servers = "127.0.0.1:11215", *space = "X";
    unsigned long max_lease = 1, calls = 7, allowed = 0;
    char err[256];
    mcc_client *c;
    int i = 1;

    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "-s") == 0) {
            servers = argv[i + 1];
        } else if (strcmp(argv[i], "-b") == 0) {
            max_lease = positive(argv[i + 1]);
            if (max_lease == 0) {
                fprintf(stderr, "get_lease: bad MAX_LEASE '%s'\n",
                        argv[i + 1]);
                return 1;
            }
        } else {
            return usage();
        }
    }
    if (i < argc && argv[i][0] == '-')
        return usage();
    if (i < argc)
        space = argv[i++];
    if (i < argc && (calls = positive(argv[i++])) == 0) {
        fprintf(stderr, "get_lease: bad CALLS '%s'\n", argv[i - 1]);
        return 1;
    }
    if (i < argc)
        return usage();
    c = mcc_quota_init(servers, (uint32_t)max_lease, err, sizeof err);
    if (!c) {
        fprintf(stderr, "get_lease: %s\n", err);
        return 1;
    }
    for (unsigned long n = 1; n <= calls; n++) {
        int rc = mcc_get_lease(c, "guest", space, "insert", QUOTA);

        if (rc < 0) {
            fprintf(stderr, "get_lease: insert %lu into %s: %s\n", n, space,
                    mcc_strerror(rc));
            mcc_client_free(c);
            return 1;
        }
        allowed += (unsigned long)rc;
        printf("insert %lu: %s\n", n, rc ? "allowed" : "refused");
    }
    printf("allowed %lu of %lu (quota %u a second)\n", allowed, calls, QUOTA);
    mcc_client_free(c);
    return 0;
}
