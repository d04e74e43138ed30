/* licence.c: an example of libmccounter's lease helper. It waits in the
 * server's queue for one of MAXIMUM licences named NAME, holds it with a
 * lease that the helper renews in the background while the "work" runs
 * (here: SECONDS of sleeping in mcc_poll, the library's own loop), and
 * gives it back at the end. If the lease is lost (the server expired it,
 * the connection broke), the work stops at once: past that point another
 * process may hold the licence.
 *
 *   usage: licence [-s HOST:PORT[:WEIGHT],...] NAME MAXIMUM SECONDS
 *
 * Exit status: 0 the work ran to its end, 75 the licence was not granted
 * within the wait or was lost, 1 any other error. Build it against an
 * installed library with
 *   cc licence.c $(pkg-config --cflags --libs mccounter) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir mccounter)
 * The run path lets the program find libmccounter.so where it was
 * installed; without it, a prefix outside the loader's directories
 * (such as /usr/local/lib on some systems, or a home directory) needs
 * LD_LIBRARY_PATH set to that directory when the program runs. */
#define _POSIX_C_SOURCE 200809L     /* clock_gettime under -std=c11 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mccounter.h>

/* How long to wait in the queue, and the lease the server enforces: a
 * holder that stops renewing loses the licence within LEASE_MS. */
#define WAIT_MS 30000u
#define LEASE_MS 3000u

/* What the lease callback saw. */
typedef struct licence_state {
    mcc_lease_state state;
    mcc_error error;
    uint8_t status;
} licence_state;

/* Records each change of the lease; the main loop acts on it. */
static void on_lease(mcc_client *c, mcc_lease *lease, mcc_lease_state state,
                     mcc_error error, uint8_t status, void *arg)
{
    licence_state *ls = arg;
    (void)c;
    ls->state = state;
    ls->error = error;
    ls->status = status;
    if (state == MCC_LEASE_GRANTED)
        printf("granted: lease id %llu\n",
               (unsigned long long)mcc_lease_id(lease));
}

/* Says why a lease was lost: the server's status when it gave one (an
 * expiry is reported with error MCC_OK and status 0x27, Lease expired),
 * else the client's error (the connection lost, a shutdown). */
static void print_lost(const char *name, const licence_state *ls)
{
    if (ls->status != 0)
        fprintf(stderr, "licence: %s: lost the licence (status 0x%02x, %s): "
                "work stopped\n", name, ls->status,
                mcc_status_text(ls->status));
    else
        fprintf(stderr, "licence: %s: lost the licence (%s): work "
                "stopped\n", name, mcc_strerror(ls->error));
}

/* Returns CLOCK_MONOTONIC in milliseconds. */
static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    const char *servers = "127.0.0.1:11215";
    if (argc > 2 && strcmp(argv[1], "-s") == 0) {
        servers = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: licence [-s HOST:PORT[:WEIGHT],...] NAME "
                "MAXIMUM SECONDS\n");
        return 1;
    }
    const char *name = argv[1];
    unsigned long maximum = strtoul(argv[2], NULL, 10);
    double seconds = strtod(argv[3], NULL);

    mcc_client *c = mcc_client_new();
    char err[256];
    if (c == NULL || mcc_client_set_servers(c, servers, err, sizeof err) < 0) {
        fprintf(stderr, "licence: bad server list: %s\n",
                c != NULL ? err : "out of memory");
        mcc_client_free(c);
        return 1;
    }

    licence_state ls = { .state = MCC_LEASE_WAITING };
    mcc_lease *lease = NULL;
    mcc_wait_params want = {
        .resources = 1, .maximum = (uint32_t)maximum,
        .wait_ms = WAIT_MS, .lease_ms = LEASE_MS
    };
    mcc_error rc = mcc_lease_start(c, name, strlen(name), &want, on_lease,
                                   &ls, &lease);
    if (rc != MCC_OK) {
        /* Refused before anything was sent: a bad name or maximum. */
        fprintf(stderr, "licence: %s: %s\n", name, mcc_strerror(rc));
        mcc_client_free(c);
        return 1;
    }

    /* Wait for the grant (or the end of the wait); renewals need no code
     * here: mcc_poll runs them. */
    while (ls.state == MCC_LEASE_WAITING)
        mcc_poll(c, -1);

    int status = 0;
    if (ls.state == MCC_LEASE_GRANTED) {
        printf("working for %.1f s with licence %s\n", seconds, name);
        int64_t end = now_ms() + (int64_t)(seconds * 1000);
        while (ls.state == MCC_LEASE_GRANTED && now_ms() < end)
            mcc_poll(c, (int)(end - now_ms()));
        if (ls.state == MCC_LEASE_GRANTED) {
            printf("done: licence given back\n");
        } else {
            print_lost(name, &ls);
            status = 75;
        }
    } else if (ls.state == MCC_LEASE_TIMED_OUT) {
        fprintf(stderr, "licence: %s: none of %lu free within %u ms\n",
                name, maximum, WAIT_MS);
        status = 75;
    } else {
        fprintf(stderr, "licence: %s: %s%s%s\n", name, mcc_strerror(ls.error),
                ls.error == MCC_ERR_STATUS ? ": " : "",
                ls.error == MCC_ERR_STATUS ? mcc_status_text(ls.status) : "");
        status = 1;
    }
    /* Sends Wait_release when still held, and frees the helper. */
    mcc_lease_release(lease);
    /* Let the release reach the server before the connection closes (the
     * close would release it too). */
    while (mcc_pending(c) > 0 && mcc_poll(c, 1000) == MCC_OK)
        ;
    mcc_client_free(c);
    return status;
}
