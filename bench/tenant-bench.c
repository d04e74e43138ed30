/* tenant-bench.c: the seed's motivating case for tenants on connections.
 * Tenant A sends Acquire/Release pairs on 1 connection, tenant B on many,
 * both as fast as they can (a batch of pairs in one write, the next batch
 * once every answer is in), against a running server. Each connection
 * logs in as its tenant's user with Auth_user (0x4a), B's with the
 * non-blocking flag when asked; without users (--no-auth) both are the
 * server's default tenant, or not charged at all. It counts, per second
 * of the monotonic clock (the server's throttling second on the same
 * machine), the answers each tenant got that were not Throttled, i.e.
 * the units the server served it, and samples the server's CPU time from
 * /proc/PID/stat every 100 ms. In the non-blocking mode a B connection
 * that gets Throttled answers waits the largest hint before its next
 * batch, and every hint is checked against the second the batch was sent
 * in: retrying at (arrival + hint) must not fall in that second.
 *
 * usage: tenant-bench -p PORT [-P PID] [-t SECONDS] [-b B_CONNS]
 *          [-d PAIRS] [--nonblocking] [--no-auth] [--secret-a S]
 *          [--secret-b S] [--csv FILE] [-l LABEL]
 * prints one key=value line; --csv writes "second a b" per second. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/procstat.h"
#include "protocol/request.h"
#include "protocol/response.h"

#define MAX_CONNS 256
#define MAX_SECONDS 3600
#define BUF 65536

/* One connection: its socket, the batch in flight and what came back. */
typedef struct conn {
    int fd;
    int tenant;                 /* 0: A, 1: B */
    unsigned outstanding;       /* answers of the batch still to come */
    uint64_t sent_ns;           /* when the batch went out */
    uint64_t resume_ns;         /* non-blocking: no batch before this */
    uint64_t max_hint;          /* the batch's largest retry hint */
    uint8_t in[BUF];
    size_t in_len;
    char name[24];
} conn;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "tenant-bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A blocking connection to 127.0.0.1:port. */
static int dial(const char *port)
{
    struct addrinfo hints = {.ai_family = AF_INET,
                             .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo("127.0.0.1", port, &hints, &ai) != 0)
        die("getaddrinfo");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("connect");
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("send");
        p += w;
        n -= (size_t)w;
    }
}

/* Logs c in as user with secret; exits unless the answer is OK. */
static void login(conn *c, const char *user, const char *secret,
                  bool nonblocking)
{
    uint8_t req[512], ans[256];
    size_t n = cnt_encode_auth_user(req, 1,
                                    nonblocking ? CNT_AUTH_NONBLOCKING : 0,
                                    user, (uint16_t)strlen(user), secret,
                                    (uint16_t)strlen(secret));
    send_all(c->fd, req, n);
    size_t got = 0;
    cnt_response res;
    while (cnt_response_decode(ans, got, &res) != CNT_DECODE_OK) {
        ssize_t r = recv(c->fd, ans + got, sizeof(ans) - got, 0);
        if (r <= 0)
            die("recv (login)");
        got += (size_t)r;
    }
    if (res.status != 0) {
        fprintf(stderr, "tenant-bench: login as %s: status 0x%02x\n", user,
                res.status);
        exit(1);
    }
}

/* Sends a batch of depth pairs on c. */
static void send_batch(conn *c, unsigned depth, uint64_t t)
{
    static uint8_t req[BUF];
    size_t n = 0;
    for (unsigned i = 0; i < depth; i++) {
        n += cnt_encode_acquire(req + n, 2 * i, 1, 1000000, c->name,
                                (uint16_t)strlen(c->name));
        n += cnt_encode_release(req + n, 2 * i + 1, 1, c->name,
                                (uint16_t)strlen(c->name));
    }
    send_all(c->fd, req, n);
    c->outstanding = 2 * depth;
    c->sent_ns = t;
    c->max_hint = 0;
}

int main(int argc, char **argv)
{
    const char *port = NULL, *csv = NULL, *label = "ours";
    const char *secret_a = "tenant-a-secret-0123", *secret_b =
        "tenant-b-secret-0123";
    pid_t pid = 0;
    double seconds = 10;
    unsigned bconns = 10, depth = 16;
    bool nonblocking = false, auth = true;
    static const struct option longs[] = {
        {"nonblocking", no_argument, NULL, 'n'},
        {"no-auth", no_argument, NULL, 'N'},
        {"secret-a", required_argument, NULL, 'A'},
        {"secret-b", required_argument, NULL, 'B'},
        {"csv", required_argument, NULL, 'C'},
        {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "p:P:t:b:d:l:", longs, NULL)) != -1) {
        switch (ch) {
        case 'p': port = optarg; break;
        case 'P': pid = (pid_t)atol(optarg); break;
        case 't': seconds = atof(optarg); break;
        case 'b': bconns = (unsigned)atoi(optarg); break;
        case 'd': depth = (unsigned)atoi(optarg); break;
        case 'l': label = optarg; break;
        case 'n': nonblocking = true; break;
        case 'N': auth = false; break;
        case 'A': secret_a = optarg; break;
        case 'B': secret_b = optarg; break;
        case 'C': csv = optarg; break;
        default:
            fprintf(stderr, "usage: see the comment at the top of "
                            "bench/tenant-bench.c\n");
            return 2;
        }
    }
    if (port == NULL || bconns < 1 || bconns + 1 > MAX_CONNS || depth < 1 ||
        depth > 1000 || seconds < 2 || seconds > MAX_SECONDS - 2) {
        fprintf(stderr, "tenant-bench: -p PORT needed; 1 <= -b < %d, "
                        "1 <= -d <= 1000, 2 <= -t\n", MAX_CONNS);
        return 2;
    }
    unsigned n = bconns + 1;
    conn *cs = calloc(n, sizeof(*cs));
    struct pollfd *pf = calloc(n, sizeof(*pf));
    if (cs == NULL || pf == NULL)
        die("calloc");
    for (unsigned i = 0; i < n; i++) {
        conn *c = &cs[i];
        c->fd = dial(port);
        c->tenant = i == 0 ? 0 : 1;
        snprintf(c->name, sizeof(c->name), "tb-%c-%03u", "AB"[c->tenant], i);
        if (auth)
            login(c, c->tenant == 0 ? "a" : "b",
                  c->tenant == 0 ? secret_a : secret_b,
                  c->tenant == 1 && nonblocking);
    }
    /* Counts per second since the start: served units of A and B. */
    static uint64_t served[MAX_SECONDS][2];
    static double cpu_late[MAX_SECONDS];     /* CPU s in [.5, 1) */
    static bool late_ok[MAX_SECONDS];
    uint64_t throttled = 0, too_early = 0;
    int64_t min_slack = INT64_MAX;
    uint64_t start = now_ns();
    uint64_t sec0 = start / 1000000000u;
    uint64_t end = start + (uint64_t)(seconds * 1e9);
    double cpu_at_half = -1, cpu0 = 0, cpu1 = 0;
    bool have_cpu = pid > 0 && cnt_procstat_cpu(pid, &cpu0);
    uint64_t last_sample_sec = 0;
    for (unsigned i = 0; i < n; i++)
        send_batch(&cs[i], depth, start);
    uint64_t t = start;
    while (t < end) {
        int timeout = 10;
        for (unsigned i = 0; i < n; i++) {
            pf[i].fd = cs[i].fd;
            pf[i].events = cs[i].outstanding > 0 ? POLLIN : 0;
        }
        if (poll(pf, n, timeout) < 0 && errno != EINTR)
            die("poll");
        t = now_ns();
        uint64_t s = t / 1000000000u - sec0;
        if (s >= MAX_SECONDS)
            break;
        /* CPU in the second half of each second: B has spent its share
         * by then in the throttled runs, so this is what its paused
         * connections cost. */
        if (have_cpu) {
            uint64_t frac = t % 1000000000u;
            double cpu;
            if (frac >= 500000000u && cpu_at_half < 0 &&
                cnt_procstat_cpu(pid, &cpu)) {
                cpu_at_half = cpu;
                last_sample_sec = s;
            } else if (cpu_at_half >= 0 && s != last_sample_sec &&
                       cnt_procstat_cpu(pid, &cpu)) {
                cpu_late[last_sample_sec] = cpu - cpu_at_half;
                late_ok[last_sample_sec] = true;
                cpu_at_half = -1;
            }
        }
        for (unsigned i = 0; i < n; i++) {
            conn *c = &cs[i];
            if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                ssize_t r = recv(c->fd, c->in + c->in_len,
                                 sizeof(c->in) - c->in_len, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                    die("recv");
                if (r > 0)
                    c->in_len += (size_t)r;
                size_t off = 0;
                cnt_response res;
                while (cnt_response_decode(c->in + off, c->in_len - off,
                                           &res) == CNT_DECODE_OK) {
                    off += res.size;
                    if (c->outstanding > 0)
                        c->outstanding--;
                    if (res.status != CNT_STATUS_THROTTLED) {
                        served[s][c->tenant]++;
                        continue;
                    }
                    throttled++;
                    uint64_t hint = res.body_len >= 8 ? cnt_get_u64(res.body)
                                                      : 0;
                    if (hint > c->max_hint)
                        c->max_hint = hint;
                    uint64_t next = (c->sent_ns / 1000000000u + 1) *
                                    1000000000u;
                    int64_t slack = (int64_t)(t + hint) - (int64_t)next;
                    if (slack < 0)
                        too_early++;
                    if (slack < min_slack)
                        min_slack = slack;
                }
                memmove(c->in, c->in + off, c->in_len - off);
                c->in_len -= off;
                if (c->outstanding == 0 && c->max_hint > 0)
                    c->resume_ns = t + c->max_hint;
            }
            if (c->outstanding == 0 && t >= c->resume_ns)
                send_batch(c, depth, t);
        }
    }
    if (have_cpu)
        have_cpu = cnt_procstat_cpu(pid, &cpu1);
    double wall = (double)(now_ns() - start) / 1e9;
    /* Whole seconds only: the first and the last are cut. */
    uint64_t last = t / 1000000000u - sec0;
    uint64_t a_min = UINT64_MAX, node_max = 0, a_sum = 0, b_sum = 0;
    unsigned full = 0;
    double late_sum = 0;
    unsigned late_n = 0;
    FILE *out = csv != NULL ? fopen(csv, "w") : NULL;
    if (csv != NULL && out == NULL)
        die(csv);
    for (uint64_t s = 1; s < last && s < MAX_SECONDS; s++) {
        uint64_t a = served[s][0], b = served[s][1];
        if (a < a_min)
            a_min = a;
        if (a + b > node_max)
            node_max = a + b;
        a_sum += a;
        b_sum += b;
        full++;
        if (late_ok[s]) {
            late_sum += cpu_late[s];
            late_n++;
        }
        if (out != NULL)
            fprintf(out, "%llu %llu %llu\n", (unsigned long long)s,
                    (unsigned long long)a, (unsigned long long)b);
    }
    if (out != NULL)
        fclose(out);
    if (full == 0) {
        fprintf(stderr, "tenant-bench: no whole second measured\n");
        return 1;
    }
    printf("server=%s workload=tenants mode=%s b_conns=%u depth=%u "
           "seconds=%u a_min=%llu a_mean=%llu b_mean=%llu node_max=%llu "
           "throttled=%llu too_early=%llu min_slack_us=%lld",
           label, !auth ? "unauthenticated"
                        : nonblocking ? "nonblocking" : "blocking",
           bconns, depth, full, (unsigned long long)a_min,
           (unsigned long long)(a_sum / full),
           (unsigned long long)(b_sum / full),
           (unsigned long long)node_max, (unsigned long long)throttled,
           (unsigned long long)too_early,
           min_slack == INT64_MAX ? -1LL : (long long)(min_slack / 1000));
    if (have_cpu)
        printf(" server_cpu=%.3f server_cpu_late_half=%.3f",
               (cpu1 - cpu0) / wall,
               late_n > 0 ? late_sum / late_n / 0.5 : -1.0);
    printf("\n");
    for (unsigned i = 0; i < n; i++)
        close(cs[i].fd);
    free(cs);
    free(pf);
    return 0;
}
