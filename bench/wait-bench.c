/* wait-bench.c: the benchmark of waiting acquisition (wait_acquire and its
 * events) that run-bench.sh runs beside counter-bench's matrix:
 * - handoff: the time from a holder's wait_release leaving the client to
 *   the queued waiter's granted event arriving, the two on different
 *   connections (so, with counter.threads = 2, on different workers),
 *   interleaved with a depth-1 Noop round trip on a third connection;
 * - semaphore: clients looping acquire / hold / release on one name with
 *   a small maximum: queued with wait_acquire on our server, or (--poll,
 *   any server) with Acquire retried after a growing pause the way
 *   `counterctl run --wait` does; grants per second, requests per grant;
 * - leases: connections x names wait_acquires with leases that all end in
 *   the same second: server memory per lease, each lease-expired event's
 *   arrival against its deadline, and a probe's Noop round trip meanwhile
 *   against the same probe just before;
 * - lease_list: connections x names leases of an hour (with
 *   counter.threads = 2, the connections alternate between the workers),
 *   then Lease_list for the 64 nearest, one at a time for the duration:
 *   the listing's round trip, which gathers every worker's part, against
 *   a Noop's on the same connection; with --listers N, N more connections
 *   (threads) send Lease_list back to back meanwhile, so the probe's
 *   Noop shows what a flood of listings costs everyone else.
 * Prints one key=value line on stdout (server=LABEL first); exit 0 when
 * every answer and event was as expected. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "bench/procstat.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Input buffer of a connection: far more than one packet, and enough for
 * a few hundred events per read in the lease storm. */
#define WB_IN_CAP (1u << 16)
/* The wait of a queued request in hand-off and semaphore: long enough
 * never to run out during a run, so every queued request is granted. */
#define WB_WAIT_LONG_MS 600000u
/* The lease of the first lease batches, sent before the common deadline
 * is known and renewed to it afterwards. */
#define WB_LEASE_PARK_MS 3600000u
/* Requests written before their answers are read while setting leases:
 * few enough that the server's buffers stay at their initial size (with
 * 1024, buffers grown and shrunk again left ~20 more bytes of RSS per
 * lease), enough that the set-up takes about a second per million. */
#define WB_BATCH 64u
/* Longest request the benchmark sends: a wait_acquire. */
#define WB_REQ_MAX (CNT_HEADER_SIZE + CNT_WACQ_FIXED + BENCH_NAME_LEN)
/* A blocking read that waits this long means the server is stuck. */
#define WB_RECV_TIMEOUT_S 30
/* counterctl's run_acquire: first pause after a refusal, doubling up to
 * the last. */
#define WB_POLL_FIRST_NS 20000000ull
#define WB_POLL_LAST_NS 1000000000ull
/* The lease probe sends one Noop per period. */
#define WB_PROBE_PERIOD_NS 1000000ull
#define WB_MAX_ANY 0xffffffffu

typedef enum wb_mode { WB_HANDOFF, WB_SEMAPHORE, WB_LEASES, WB_LEASE_LIST } wb_mode;

typedef struct wb_opts {
    const char *host;
    const char *port;
    const char *label;
    wb_mode mode;
    bool poll;              /* semaphore: Acquire and a growing pause */
    unsigned gap;           /* hand-off: connections opened between the
                               holder's and the waiter's */
    unsigned clients;       /* semaphore clients; lease connections */
    unsigned keys;          /* leases: names per connection */
    unsigned maximum;       /* semaphore: the counter's maximum */
    unsigned hold_us;       /* semaphore: how long a grant is held */
    unsigned think_us;      /* semaphore: pause after a release;
                               handoff: before a release and a Noop */
    double duration;        /* measured seconds (hand-off, semaphore) */
    double warmup;          /* seconds before measuring */
    double settle;          /* leases: idle seconds before the deadline */
    pid_t pid;              /* server: RSS for the lease row; 0 = none */
    unsigned listers;       /* lease_list: connections listing meanwhile */
} wb_opts;

/* One blocking (or, in the lease storm, non-blocking) connection with its
 * input buffer; packets are decoded in place. */
typedef struct wb_conn {
    int fd;
    uint8_t *buf;
    size_t off, len;        /* undecoded input is buf[off, len) */
    uint32_t opaque;        /* of the next request */
} wb_conn;

/* Phases of the semaphore run, as in counter-bench: grants count only
 * while measuring. */
enum { WB_WARMUP, WB_MEASURE, WB_STOP };
static atomic_int wb_phase;

/* Sleeps until the monotonic clock reads at (ns). */
static void wb_sleep_until(uint64_t at)
{
    struct timespec ts = { (time_t)(at / 1000000000u),
                           (long)(at % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR)
        ;
}

/* Prints the option summary. */
static void usage(FILE *f)
{
    fputs("usage: wait-bench [options]\n"
          "  -s, --host HOST        server address (127.0.0.1)\n"
          "  -p, --port PORT        counter port (11215)\n"
          "  -W, --workload NAME    handoff|semaphore|leases|lease_list\n"
          "  -c, --clients N        semaphore clients (64); lease "
          "connections (1000)\n"
          "  -k, --keys N           leases: names per connection (1000)\n"
          "  -m, --maximum N        semaphore maximum (4)\n"
          "      --hold-us N        semaphore: microseconds a grant is "
          "held (1000)\n"
          "      --think-us N       semaphore: microseconds between a "
          "release and the next\n"
          "                         request; handoff: a pause before each "
          "release and\n"
          "                         each Noop, so both start from idle (0)\n"
          "      --poll             semaphore: Acquire, and on 0x21 retry "
          "after a pause\n"
          "                         of 20 ms doubling up to 1 s (counterctl"
          " run --wait)\n"
          "      --gap N            handoff: open N more connections "
          "between the two\n"
          "                         (N = counter.threads - 1: both on "
          "one worker) (0)\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds before measuring (0.5)\n"
          "      --settle SEC       leases: idle seconds planned before the"
          " deadline (2)\n"
          "  -P, --pid PID          server pid: its RSS (leases)\n"
          "      --listers N        lease_list: N more connections sending "
          "Lease_list\n"
          "                         back to back while the probe runs (0)\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "  -h, --help\n"
          "Prints one key=value line. Exit 0 when every answer and event "
          "was as\nexpected, 1 otherwise, 2 on bad usage.\n", f);
}

/* Fills o from the command line; exits on bad usage. */
static void parse_options(int argc, char **argv, wb_opts *o)
{
    enum { OPT_HOLD = 256, OPT_THINK, OPT_POLL, OPT_SETTLE, OPT_GAP,
           OPT_LISTERS };
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "workload", 1, NULL, 'W' }, { "clients", 1, NULL, 'c' },
        { "keys", 1, NULL, 'k' }, { "maximum", 1, NULL, 'm' },
        { "hold-us", 1, NULL, OPT_HOLD }, { "think-us", 1, NULL, OPT_THINK },
        { "poll", 0, NULL, OPT_POLL }, { "gap", 1, NULL, OPT_GAP },
        { "duration", 1, NULL, 't' }, { "warmup", 1, NULL, 'w' },
        { "settle", 1, NULL, OPT_SETTLE }, { "pid", 1, NULL, 'P' },
        { "label", 1, NULL, 'l' }, { "help", 0, NULL, 'h' },
        { "listers", 1, NULL, OPT_LISTERS },
        { NULL, 0, NULL, 0 }
    };
    *o = (wb_opts){ .host = "127.0.0.1", .port = "11215", .label = "server",
                    .mode = WB_HANDOFF, .maximum = 4, .hold_us = 1000,
                    .duration = 3, .warmup = 0.5, .settle = 2 };
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:W:c:k:m:t:w:P:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'W':
            if (strcmp(optarg, "handoff") == 0)
                o->mode = WB_HANDOFF;
            else if (strcmp(optarg, "semaphore") == 0)
                o->mode = WB_SEMAPHORE;
            else if (strcmp(optarg, "leases") == 0)
                o->mode = WB_LEASES;
            else if (strcmp(optarg, "lease_list") == 0)
                o->mode = WB_LEASE_LIST;
            else {
                fprintf(stderr, "wait-bench: --workload: unknown workload "
                        "'%s'\n", optarg);
                exit(2);
            }
            break;
        case 'c': o->clients = bench_opt_uint("wait-bench", "--clients", optarg, 1, 100000);
            break;
        case 'k': o->keys = bench_opt_uint("wait-bench", "--keys", optarg, 1, 1000000); break;
        case 'm': o->maximum = bench_opt_uint("wait-bench", "--maximum", optarg, 1, 1000000);
            break;
        case OPT_LISTERS:
            o->listers = bench_opt_uint("wait-bench", "--listers", optarg, 0,
                                        10000);
            break;
        case OPT_HOLD: o->hold_us = bench_opt_uint("wait-bench", "--hold-us", optarg, 0, 1000000);
            break;
        case OPT_THINK:
            o->think_us = bench_opt_uint("wait-bench", "--think-us", optarg, 0, 10000000);
            break;
        case OPT_POLL: o->poll = true; break;
        case OPT_GAP: o->gap = bench_opt_uint("wait-bench", "--gap", optarg, 0, 64); break;
        case 't': o->duration = bench_opt_seconds("wait-bench", "--duration", optarg); break;
        case 'w': o->warmup = bench_opt_seconds("wait-bench", "--warmup", optarg); break;
        case OPT_SETTLE: o->settle = bench_opt_seconds("wait-bench", "--settle", optarg); break;
        case 'P': o->pid = (pid_t)bench_opt_uint("wait-bench", "--pid", optarg, 1, 0x7fffffff);
            break;
        case 'l': o->label = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "wait-bench: unexpected argument '%s'\n",
                argv[optind]);
        exit(2);
    }
    if (o->clients == 0)
        o->clients = o->mode == WB_LEASES ? 1000
                     : o->mode == WB_LEASE_LIST ? 2 : 64;
    if (o->keys == 0)
        o->keys = 1000;
}

/* Closes c and frees its buffer. */
static void wb_close(wb_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    *c = (wb_conn){ .fd = -1 };
}

/* Connects c (blocking, reads time out after WB_RECV_TIMEOUT_S); false
 * and a message on failure. */
static bool wb_open(wb_conn *c, const wb_opts *o)
{
    *c = (wb_conn){ .fd = -1 };
    c->buf = malloc(WB_IN_CAP);
    if (c->buf == NULL) {
        fprintf(stderr, "wait-bench: out of memory\n");
        return false;
    }
    c->fd = bench_connect(o->host, o->port, false);
    if (c->fd < 0) {
        wb_close(c);
        return false;
    }
    struct timeval tv = { .tv_sec = WB_RECV_TIMEOUT_S };
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return true;
}

/* Decodes the next buffered packet into res; false when none is whole.
 * Sets *bad when the stream is not a counter server's. */
static bool wb_take(wb_conn *c, cnt_response *res, bool *bad)
{
    cnt_decode_result r = cnt_response_decode(c->buf + c->off,
                                              c->len - c->off, res);
    if (r == CNT_DECODE_OK) {
        c->off += res->size;
        return true;
    }
    if (r == CNT_DECODE_CLOSE)
        *bad = true;
    return false;
}

/* Reads once into c's buffer (moving undecoded bytes to its front first):
 * 1 when bytes came, 0 when none are there (non-blocking, or the read
 * timed out), -1 on end of stream, an error or a packet too big. */
static int wb_fill(wb_conn *c)
{
    if (c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->len == WB_IN_CAP)
        return -1;
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->len, WB_IN_CAP - c->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return -1;
        c->len += (size_t)n;
        return 1;
    }
}

/* Waits for the next packet on the blocking c; false and a message when
 * the connection fails or stays silent. */
static bool wb_next(wb_conn *c, cnt_response *res)
{
    bool bad = false;
    while (!wb_take(c, res, &bad)) {
        int r = bad ? -1 : wb_fill(c);
        if (r <= 0) {
            fprintf(stderr, "wait-bench: %s\n",
                    bad ? "not a counter server's answer"
                        : r == 0 ? "no answer in time"
                                 : "connection lost");
            return false;
        }
    }
    return true;
}

/* Writes all of buf[0, len) to the blocking c. */
static bool wb_send(wb_conn *c, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "wait-bench: send: %s\n",
                    n < 0 ? strerror(errno) : "nothing sent");
            return false;
        }
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* Reads the next packet on c and checks it is the status-0 answer to the
 * request with this opcode and opaque; false and a message otherwise. */
static bool wb_answer(wb_conn *c, uint8_t opcode, uint32_t opaque,
                      cnt_response *res)
{
    if (!wb_next(c, res))
        return false;
    if (cnt_response_is_event(res) || res->opcode != opcode ||
        res->opaque != opaque || res->status != CNT_STATUS_OK) {
        fprintf(stderr, "wait-bench: expected an OK answer to opcode 0x%02x "
                "(opaque %" PRIu32 "), got magic 0x%02x opcode 0x%02x "
                "status 0x%02x opaque %" PRIu32 "\n", opcode, opaque,
                res->magic, res->opcode, res->status, res->opaque);
        return false;
    }
    return true;
}

/* Sends a wait_acquire of one unit on c and reads its answer; false and
 * a message when it fails or is not OK. */
static bool wb_wait_acquire(wb_conn *c, const char *name, uint32_t maximum,
                            uint32_t wait_ms, uint32_t *opaque,
                            cnt_wait_answer *ans)
{
    uint8_t req[WB_REQ_MAX];
    cnt_response res;
    *opaque = c->opaque++;
    size_t n = cnt_encode_wait_acquire(req, *opaque, 1, maximum, wait_ms, 0,
                                       name, BENCH_NAME_LEN);
    if (!wb_send(c, req, n) ||
        !wb_answer(c, CNT_OP_WAIT_ACQUIRE, *opaque, &res))
        return false;
    if (!cnt_parse_wait_answer(&res, ans)) {
        fprintf(stderr, "wait-bench: malformed wait_acquire answer\n");
        return false;
    }
    return true;
}

/* Waits for the event on c about the request with this opaque; false and
 * a message on anything else. */
static bool wb_event(wb_conn *c, uint32_t opaque, cnt_event_packet *ev)
{
    cnt_response res;
    if (!wb_next(c, &res))
        return false;
    if (!cnt_parse_event(&res, ev) || res.opaque != opaque) {
        fprintf(stderr, "wait-bench: expected an event about opaque %" PRIu32
                ", got magic 0x%02x opcode 0x%02x status 0x%02x opaque %"
                PRIu32 "\n", opaque, res.magic, res.opcode, res.status,
                res.opaque);
        return false;
    }
    return true;
}

/* Sends a wait_release on c; with t0 not NULL, *t0 is the clock just
 * before the send. The answer is read by wb_release_answer. */
static bool wb_release_send(wb_conn *c, const char *name, uint32_t *opaque,
                            uint64_t *t0)
{
    uint8_t req[WB_REQ_MAX];
    *opaque = c->opaque++;
    size_t n = cnt_encode_wait_release(req, *opaque, name, BENCH_NAME_LEN);
    if (t0 != NULL)
        *t0 = bench_now_ns();
    return wb_send(c, req, n);
}

/* Reads the answer to a wait_release of a grant; false unless it is OK
 * and says resources came back. */
static bool wb_release_answer(wb_conn *c, uint32_t opaque)
{
    cnt_response res;
    uint32_t back = 0;
    if (!wb_answer(c, CNT_OP_WAIT_RELEASE, opaque, &res) ||
        !cnt_parse_wait_release_answer(&res, &back))
        return false;
    if (back == 0) {
        fprintf(stderr, "wait-bench: wait_release returned nothing\n");
        return false;
    }
    return true;
}

/* A Noop round trip on c, in nanoseconds from just before the send to
 * the answer's arrival; 0 on a failure. */
static uint64_t wb_noop(wb_conn *c)
{
    uint8_t req[CNT_HEADER_SIZE];
    cnt_response res;
    uint32_t opaque = c->opaque++;
    size_t n = cnt_encode_simple(req, CNT_OP_NOOP, opaque);
    uint64_t t0 = bench_now_ns();
    if (!wb_send(c, req, n) || !wb_answer(c, CNT_OP_NOOP, opaque, &res))
        return 0;
    uint64_t d = bench_now_ns() - t0;
    return d > 0 ? d : 1;
}

/* Reads one Stats item of the server on c as a number; false when the
 * Stats fail or have no such item. */
static bool wb_stat(wb_conn *c, const char *item, uint64_t *value)
{
    uint8_t req[CNT_HEADER_SIZE];
    cnt_response res;
    uint32_t opaque = c->opaque++;
    if (!wb_send(c, req, cnt_encode_simple(req, CNT_OP_STATS, opaque)) ||
        !wb_answer(c, CNT_OP_STATS, opaque, &res))
        return false;
    size_t pos = 0, len = strlen(item);
    const char *name, *val;
    uint16_t nl, vl;
    while (cnt_stats_next(&res, &pos, &name, &nl, &val, &vl)) {
        if (nl == len && memcmp(name, item, len) == 0) {
            char tmp[32];
            if (vl == 0 || vl >= sizeof tmp)
                return false;
            memcpy(tmp, val, vl);
            tmp[vl] = '\0';
            *value = strtoull(tmp, NULL, 10);
            return true;
        }
    }
    fprintf(stderr, "wait-bench: the server's Stats have no %s\n", item);
    return false;
}

/* Microseconds of quantile q of h (recorded in ns). */
static double wb_us(const cnt_hist *h, double q)
{
    return (double)cnt_hist_quantile(h, q) / 1e3;
}

/* ---- hand-off ---- */

/* Passes one unit (maximum 1) back and forth between two connections:
 * the waiter queues, then the holder releases and the waiter's granted
 * event is timed; the roles swap every round. A Noop on a third
 * connection follows each round, so both figures see the same moments of
 * the shared machine. With o->gap, that many idle connections are opened
 * between the first two and kept open: the server hands connections to
 * its workers in turn, so a gap of counter.threads - 1 puts the holder
 * and the waiter on one worker. */
static int run_handoff(const wb_opts *o)
{
    wb_conn c[3 + 64];
    cnt_hist *hand = calloc(2, sizeof *hand), *noop = hand + 1;
    char name[BENCH_NAME_LEN];
    int status = 1;
    unsigned opened = 0;

    if (hand == NULL)
        return 1;
    /* Opened one after the other: the server gives consecutive
     * connections to different workers. The gap's connections come
     * last in c[] but are opened second. */
    if (!wb_open(&c[0], o))
        goto out;
    opened = 1;
    for (unsigned g = 0; g < o->gap; g++, opened++)
        if (!wb_open(&c[3 + g], o))
            goto out;
    for (unsigned i = 1; i < 3; i++, opened++)
        if (!wb_open(&c[i], o))
            goto out;
    bench_name(name, "hand", (uint32_t)getpid());
    uint32_t op;
    cnt_wait_answer ans;
    if (!wb_wait_acquire(&c[0], name, 1, 0, &op, &ans))
        goto out;
    if (ans.state != CNT_WAIT_GRANTED) {
        fprintf(stderr, "wait-bench: handoff: the first grant was queued\n");
        goto out;
    }
    uint64_t start = bench_now_ns();
    uint64_t measure = start + (uint64_t)(o->warmup * 1e9);
    uint64_t end = measure + (uint64_t)(o->duration * 1e9);
    unsigned holder = 0;
    uint64_t now;
    while ((now = bench_now_ns()) < end) {
        wb_conn *h = &c[holder], *w = &c[1 - holder];
        uint32_t wop, hop;
        uint64_t t0;
        cnt_event_packet ev;
        if (!wb_wait_acquire(w, name, 1, WB_WAIT_LONG_MS, &wop, &ans))
            goto out;
        if (ans.state != CNT_WAIT_QUEUED) {
            fprintf(stderr, "wait-bench: handoff: the waiter was not "
                    "queued\n");
            goto out;
        }
        /* With a pause, the release and the Noop each find the server
         * and the clients asleep, as the semaphore's hand-offs do: what
         * a wake-up from idle costs this machine shows in both. */
        if (o->think_us > 0)
            wb_sleep_until(bench_now_ns() + (uint64_t)o->think_us * 1000u);
        if (!wb_release_send(h, name, &hop, &t0) || !wb_event(w, wop, &ev))
            goto out;
        uint64_t t1 = bench_now_ns();
        if (ev.code != CNT_EVENT_GRANTED) {
            fprintf(stderr, "wait-bench: handoff: event 0x%02x instead of "
                    "granted\n", ev.code);
            goto out;
        }
        if (!wb_release_answer(h, hop))
            goto out;
        if (o->think_us > 0)
            wb_sleep_until(bench_now_ns() + (uint64_t)o->think_us * 1000u);
        uint64_t rtt = wb_noop(&c[2]);
        if (rtt == 0)
            goto out;
        if (now >= measure) {
            cnt_hist_record(hand, t1 - t0);
            cnt_hist_record(noop, rtt);
        }
        holder = 1 - holder;
    }
    if (hand->count == 0) {
        fprintf(stderr, "wait-bench: handoff: no round measured\n");
        goto out;
    }
    printf("server=%s workload=handoff gap=%u think_us=%u rounds=%" PRIu64
           " seconds=%.2f "
           "handoff_p50_us=%.1f handoff_p99_us=%.1f handoff_max_us=%.1f "
           "handoff_mean_us=%.1f noop_p50_us=%.1f noop_p99_us=%.1f "
           "noop_max_us=%.1f noop_mean_us=%.1f\n",
           o->label, o->gap, o->think_us, hand->count, o->duration,
           wb_us(hand, 0.5),
           wb_us(hand, 0.99), (double)hand->max / 1e3,
           cnt_hist_mean(hand) / 1e3, wb_us(noop, 0.5), wb_us(noop, 0.99),
           (double)noop->max / 1e3, cnt_hist_mean(noop) / 1e3);
    status = 0;
out:
    /* c[0], then the gap, then c[1] and c[2]: close what was opened. */
    for (unsigned i = 0; i < opened; i++)
        wb_close(&c[i == 0 ? 0 : i <= o->gap ? 2 + i : i - o->gap]);
    free(hand);
    return status;
}

/* ---- semaphore ---- */

/* One client of the semaphore: its own connection and thread. */
typedef struct wb_client {
    pthread_t tid;
    const wb_opts *o;
    const char *name;
    wb_conn conn;
    uint64_t grants;        /* measured: grants */
    uint64_t requests;      /* ... and every request of their cycles */
    uint64_t refused;       /* ... of which Acquires refused (--poll) */
    uint64_t hold_ns;       /* ... and the time they were held, from the
                               grant's arrival to the release's send */
    cnt_hist wait;          /* first request of a cycle to its grant */
    bool failed;
} wb_client;

/* Obtains one unit for cl: a wait_acquire queued until its granted event
 * or, with --poll, Acquires until one passes. Adds the requests sent to
 * *requests and the refusals to *refused; false on a failure, and with
 * *given_up when polling stopped because the run ended. */
static bool wb_client_get(wb_client *cl, uint64_t *requests,
                          uint64_t *refused, bool *given_up)
{
    const wb_opts *o = cl->o;
    wb_conn *c = &cl->conn;
    *given_up = false;
    if (!o->poll) {
        uint32_t op;
        cnt_wait_answer ans;
        cnt_event_packet ev;
        ++*requests;
        if (!wb_wait_acquire(c, cl->name, o->maximum, WB_WAIT_LONG_MS, &op,
                             &ans))
            return false;
        if (ans.state == CNT_WAIT_GRANTED)
            return true;
        if (!wb_event(c, op, &ev))
            return false;
        if (ev.code != CNT_EVENT_GRANTED) {
            fprintf(stderr, "wait-bench: semaphore: event 0x%02x instead of "
                    "granted\n", ev.code);
            return false;
        }
        return true;
    }
    uint64_t pause = WB_POLL_FIRST_NS;
    for (;;) {
        uint8_t req[WB_REQ_MAX];
        cnt_response res;
        uint32_t op = c->opaque++;
        size_t n = cnt_encode_acquire(req, op, 1, o->maximum, cl->name,
                                      BENCH_NAME_LEN);
        ++*requests;
        if (!wb_send(c, req, n) || !wb_next(c, &res))
            return false;
        if (cnt_response_is_event(&res) || res.opaque != op) {
            fprintf(stderr, "wait-bench: semaphore: answer out of order\n");
            return false;
        }
        if (res.status == CNT_STATUS_OK)
            return true;
        if (res.status != CNT_STATUS_RESOURCE_NOT_AVAILABLE) {
            fprintf(stderr, "wait-bench: semaphore: Acquire answered "
                    "0x%02x\n", res.status);
            return false;
        }
        ++*refused;
        if (atomic_load(&wb_phase) == WB_STOP) {
            *given_up = true;
            return true;
        }
        wb_sleep_until(bench_now_ns() + pause);
        pause = pause * 2 > WB_POLL_LAST_NS ? WB_POLL_LAST_NS : pause * 2;
    }
}

/* Gives cl's unit back: wait_release, or Release with --poll. */
static bool wb_client_put(wb_client *cl)
{
    wb_conn *c = &cl->conn;
    uint32_t op;
    if (!cl->o->poll)
        return wb_release_send(c, cl->name, &op, NULL) &&
               wb_release_answer(c, op);
    uint8_t req[WB_REQ_MAX];
    cnt_response res;
    op = c->opaque++;
    size_t n = cnt_encode_release(req, op, 1, cl->name, BENCH_NAME_LEN);
    return wb_send(c, req, n) && wb_answer(c, CNT_OP_RELEASE, op, &res);
}

/* Thread body of a semaphore client: get, hold, put, until the run
 * stops; a cycle counts when its grant falls in the measured interval. */
static void *wb_client_main(void *arg)
{
    wb_client *cl = arg;
    const wb_opts *o = cl->o;
    while (atomic_load(&wb_phase) != WB_STOP) {
        uint64_t requests = 0, refused = 0;
        bool given_up;
        uint64_t t0 = bench_now_ns();
        if (!wb_client_get(cl, &requests, &refused, &given_up)) {
            cl->failed = true;
            break;
        }
        if (given_up)
            break;
        uint64_t t1 = bench_now_ns();
        bool measured = atomic_load(&wb_phase) == WB_MEASURE;
        wb_sleep_until(t1 + (uint64_t)o->hold_us * 1000u);
        uint64_t held = bench_now_ns() - t1;
        requests++;
        if (!wb_client_put(cl)) {
            cl->failed = true;
            break;
        }
        if (measured) {
            cl->grants++;
            cl->requests += requests;
            cl->refused += refused;
            cl->hold_ns += held;
            cnt_hist_record(&cl->wait, t1 - t0);
        }
        if (o->think_us > 0)
            wb_sleep_until(bench_now_ns() + (uint64_t)o->think_us * 1000u);
    }
    return NULL;
}

/* Runs o->clients semaphore clients on one name for the measured
 * interval and prints grants per second and requests per grant. */
static int run_semaphore(const wb_opts *o)
{
    wb_client *cl = calloc(o->clients, sizeof *cl);
    cnt_hist *wait = calloc(1, sizeof *wait);
    char name[BENCH_NAME_LEN];
    unsigned opened = 0, started = 0;
    int status = 1;

    if (cl == NULL || wait == NULL) {
        fprintf(stderr, "wait-bench: out of memory\n");
        goto out;
    }
    bench_name(name, "sem", (uint32_t)getpid());
    for (; opened < o->clients; opened++) {
        cl[opened].o = o;
        cl[opened].name = name;
        if (!wb_open(&cl[opened].conn, o))
            goto out;
    }
    atomic_store(&wb_phase, WB_WARMUP);
    for (; started < o->clients; started++)
        if (pthread_create(&cl[started].tid, NULL, wb_client_main,
                           &cl[started]) != 0)
            break;
    double seconds = 0;
    if (started == o->clients) {
        wb_sleep_until(bench_now_ns() + (uint64_t)(o->warmup * 1e9));
        uint64_t t0 = bench_now_ns();
        atomic_store(&wb_phase, WB_MEASURE);
        wb_sleep_until(t0 + (uint64_t)(o->duration * 1e9));
        atomic_store(&wb_phase, WB_STOP);
        seconds = (double)(bench_now_ns() - t0) / 1e9;
    }
    atomic_store(&wb_phase, WB_STOP);
    for (unsigned i = 0; i < started; i++)
        pthread_join(cl[i].tid, NULL);
    if (started != o->clients)
        goto out;
    uint64_t grants = 0, requests = 0, refused = 0, gmin = UINT64_MAX;
    uint64_t hold_ns = 0;
    uint64_t gmax = 0;
    unsigned failed = 0;
    for (unsigned i = 0; i < o->clients; i++) {
        grants += cl[i].grants;
        requests += cl[i].requests;
        refused += cl[i].refused;
        hold_ns += cl[i].hold_ns;
        failed += cl[i].failed;
        gmin = cl[i].grants < gmin ? cl[i].grants : gmin;
        gmax = cl[i].grants > gmax ? cl[i].grants : gmax;
        cnt_hist_merge(wait, &cl[i].wait);
    }
    /* The most grants per second the workload allows: maximum units,
     * each held for the mean time the clients actually held one (their
     * sleeps overshoot on a busy machine; the server cannot beat that). */
    double hold_us = grants > 0 ? (double)hold_ns / (double)grants / 1e3 : 0;
    double ceiling = hold_us > 0 ? o->maximum * 1e6 / hold_us : 0;
    printf("server=%s workload=semaphore mode=%s clients=%u maximum=%u "
           "hold_us=%u think_us=%u seconds=%.2f grants=%" PRIu64
           " grants_s=%.1f "
           "requests=%" PRIu64 " requests_per_grant=%.2f refused=%" PRIu64
           " wait_p50_us=%.0f wait_p99_us=%.0f client_min_grants=%" PRIu64
           " client_max_grants=%" PRIu64 " hold_mean_us=%.1f ceiling_s=%.1f"
           " of_ceiling=%.3f failures=%u\n", o->label,
           o->poll ? "poll" : "wait", o->clients, o->maximum, o->hold_us,
           o->think_us, seconds, grants, (double)grants / seconds, requests,
           grants > 0 ? (double)requests / (double)grants : 0, refused,
           wb_us(wait, 0.5), wb_us(wait, 0.99), gmin, gmax, hold_us, ceiling,
           ceiling > 0 ? (double)grants / seconds / ceiling : 0, failed);
    status = failed == 0 && grants > 0 ? 0 : 1;
out:
    while (cl != NULL && opened > 0)
        wb_close(&cl[--opened].conn);
    free(cl);
    free(wait);
    return status;
}

/* ---- leases ---- */

/* The probe of the lease run: one Noop per period on its own connection,
 * each kept with the moment it was sent. */
typedef struct wb_probe {
    pthread_t tid;
    wb_conn *conn;
    atomic_bool stop;
    uint64_t *at, *rtt;
    size_t n, cap;
    bool failed;
} wb_probe;

/* Thread body of the probe. */
static void *wb_probe_main(void *arg)
{
    wb_probe *p = arg;
    uint64_t next = bench_now_ns();
    while (!atomic_load(&p->stop) && p->n < p->cap) {
        uint64_t t0 = bench_now_ns();
        uint64_t rtt = wb_noop(p->conn);
        if (rtt == 0) {
            p->failed = true;
            break;
        }
        p->at[p->n] = t0;
        p->rtt[p->n++] = rtt;
        next += WB_PROBE_PERIOD_NS;
        if (next > bench_now_ns())
            wb_sleep_until(next);
        else
            next = bench_now_ns();
    }
    return NULL;
}

/* Fills h with the probe's round trips sent in [from, to); returns how
 * many. */
static uint64_t wb_probe_window(const wb_probe *p, uint64_t from, uint64_t to,
                                cnt_hist *h)
{
    cnt_hist_reset(h);
    for (size_t i = 0; i < p->n; i++)
        if (p->at[i] >= from && p->at[i] < to)
            cnt_hist_record(h, p->rtt[i]);
    return h->count;
}

/* Sends one request per name on c, wait_acquire (renew false) or renew,
 * in batches, and checks every answer: a wait_acquire must be granted at
 * once. The lease ends at the monotonic time `at` (rounded up to a
 * millisecond), or lasts WB_LEASE_PARK_MS when at is 0. *deadline is the
 * clock read just before the first send plus the lease: no earlier than
 * the server's own deadline, whose lease clock starts with the grant.
 * *gap grows to the longest time from that send to the last answer. */
static bool wb_lease_conn(wb_conn *c, const char *names, unsigned keys,
                          bool renew, uint64_t at, uint64_t *deadline,
                          uint64_t *gap)
{
    static uint8_t out[WB_BATCH * WB_REQ_MAX];
    uint64_t t0 = bench_now_ns();
    uint32_t lease = WB_LEASE_PARK_MS;
    if (at != 0)
        lease = at > t0 ? (uint32_t)((at - t0 + 999999) / 1000000) : 1;
    *deadline = t0 + (uint64_t)lease * 1000000u;
    for (unsigned k = 0; k < keys;) {
        unsigned first = k;
        size_t len = 0;
        for (; k < keys && k - first < WB_BATCH; k++) {
            const char *name = names + (size_t)k * BENCH_NAME_LEN;
            len += renew ? cnt_encode_renew(out + len, k, lease, name,
                                            BENCH_NAME_LEN)
                         : cnt_encode_wait_acquire(out + len, k, 1,
                                                   WB_MAX_ANY, 0, lease, name,
                                                   BENCH_NAME_LEN);
        }
        if (!wb_send(c, out, len))
            return false;
        for (unsigned i = first; i < k; i++) {
            cnt_response res;
            cnt_wait_answer ans;
            if (!wb_answer(c, renew ? CNT_OP_RENEW : CNT_OP_WAIT_ACQUIRE, i,
                           &res))
                return false;
            if (!renew && (!cnt_parse_wait_answer(&res, &ans) ||
                           ans.state != CNT_WAIT_GRANTED)) {
                fprintf(stderr, "wait-bench: leases: a wait_acquire was not "
                        "granted at once\n");
                return false;
            }
        }
    }
    uint64_t d = bench_now_ns() - t0;
    if (d > *gap)
        *gap = d;
    return true;
}

/* Raises the soft limit of open files to what `need` descriptors take;
 * false and a message when the hard limit is lower. */
static bool wb_fd_limit(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return false;
    if (rl.rlim_cur >= need)
        return true;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr, "wait-bench: leases: %llu descriptors needed, the "
                "hard limit is %llu (ulimit -Hn)\n", (unsigned long long)need,
                (unsigned long long)rl.rlim_max);
        return false;
    }
    rl.rlim_cur = need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

/* What the lease storm saw. */
typedef struct wb_storm {
    cnt_hist late;          /* arrival - deadline, ns (early counts 0) */
    int64_t late_min;       /* the earliest, signed */
    uint64_t events, errors;
    uint64_t first, last;   /* arrival of the first and the last event */
} wb_storm;

/* Reads lease-expired events from every connection until each lease has
 * had its one event or `until` passes; every event is timed against its
 * connection's deadline at the read that brought it. */
static void wb_storm_read(wb_conn *cs, unsigned conns, unsigned keys,
                          const uint64_t *deadline, uint64_t until,
                          wb_storm *s)
{
    uint64_t want = (uint64_t)conns * keys;
    uint8_t *seen = calloc(want, 1);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    s->late_min = INT64_MAX;
    if (seen == NULL || ep < 0) {
        s->errors++;
        goto out;
    }
    for (unsigned i = 0; i < conns; i++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
        int fl = fcntl(cs[i].fd, F_GETFL);
        if (fl < 0 || fcntl(cs[i].fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
            epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) < 0) {
            s->errors++;
            goto out;
        }
    }
    struct epoll_event evs[256];
    while (s->events < want && bench_now_ns() < until) {
        int n = epoll_wait(ep, evs, 256, 100);
        for (int e = 0; e < n; e++) {
            unsigned i = evs[e].data.u32;
            wb_conn *c = &cs[i];
            int r;
            while ((r = wb_fill(c)) > 0) {
                uint64_t now = bench_now_ns();
                cnt_response res;
                cnt_event_packet ev;
                bool bad = false;
                while (wb_take(c, &res, &bad)) {
                    if (!cnt_parse_event(&res, &ev) ||
                        ev.code != CNT_EVENT_LEASE_EXPIRED ||
                        res.opaque >= keys ||
                        seen[(size_t)i * keys + res.opaque]) {
                        s->errors++;
                        continue;
                    }
                    seen[(size_t)i * keys + res.opaque] = 1;
                    int64_t late = (int64_t)(now - deadline[i]);
                    cnt_hist_record(&s->late, late > 0 ? (uint64_t)late : 0);
                    if (late < s->late_min)
                        s->late_min = late;
                    if (s->events++ == 0)
                        s->first = now;
                    s->last = now;
                }
                if (bad)
                    r = -1;
                if (r < 0)
                    break;
            }
            if (r < 0) {
                fprintf(stderr, "wait-bench: leases: connection %u lost\n",
                        i);
                s->errors++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
            }
        }
    }
out:
    if (ep >= 0)
        close(ep);
    free(seen);
}

/* Sets o->clients x o->keys leases that end in the same second, reports
 * the server's memory for them, then times their lease-expired events
 * and a probe's Noop round trip while they arrive. */
static int run_leases(const wb_opts *o)
{
    unsigned conns = o->clients, keys = o->keys;
    uint64_t leases = (uint64_t)conns * keys;
    wb_conn *cs = calloc(conns, sizeof *cs);
    uint64_t *deadline = calloc(conns, sizeof *deadline);
    char *names = malloc((size_t)keys * BENCH_NAME_LEN);
    wb_storm *storm = calloc(1, sizeof *storm);
    cnt_hist *idle = calloc(2, sizeof *idle), *busy = idle + 1;
    wb_probe probe = { .cap = 1u << 20 };
    wb_conn stats = { .fd = -1 }, pconn = { .fd = -1 };
    unsigned opened = 0;
    bool probing = false;
    int status = 1;

    probe.at = calloc(probe.cap, sizeof *probe.at);
    probe.rtt = calloc(probe.cap, sizeof *probe.rtt);
    if (cs == NULL || deadline == NULL || names == NULL || storm == NULL ||
        idle == NULL || probe.at == NULL || probe.rtt == NULL) {
        fprintf(stderr, "wait-bench: out of memory\n");
        goto out;
    }
    if (!wb_fd_limit((rlim_t)conns + 64))
        goto out;
    for (unsigned k = 0; k < keys; k++)
        bench_name(names + (size_t)k * BENCH_NAME_LEN, "lease", k);
    if (!wb_open(&stats, o) || !wb_open(&pconn, o))
        goto out;
    for (; opened < conns; opened++)
        if (!wb_open(&cs[opened], o))
            goto out;
    /* A Noop on each connection first: the pages of its buffers that any
     * traffic touches then count before, not as lease memory. */
    for (unsigned i = 0; i < conns; i++)
        if (wb_noop(&cs[i]) == 0)
            goto out;

    uint64_t rss0 = 0, rss1 = 0, used0 = 0, used1 = 0, exp0 = 0, exp1 = 0;
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &rss0);
    if (!wb_stat(&stats, "used_memory", &used0) ||
        !wb_stat(&stats, "lease_expirations", &exp0))
        goto out;

    /* The first connections (2%) park their leases, and their pace sets
     * the common deadline: twice the time the other connections and the
     * renewals should take at that pace (the machine is shared), plus
     * the settle time in which the probe measures the idle server. If the
     * set-up still overruns it, late leases get 1 ms and the spread of
     * the deadlines in the output shows it. */
    uint64_t t_start = bench_now_ns(), gap = 0;
    unsigned park = conns / 50 > 0 ? conns / 50 : 1;
    for (unsigned i = 0; i < park; i++)
        if (!wb_lease_conn(&cs[i], names, keys, false, 0, &deadline[i], &gap))
            goto out;
    uint64_t now = bench_now_ns();
    uint64_t per = (now - t_start) / park;
    uint64_t at = now + 2 * per * conns + (uint64_t)(o->settle * 1e9);
    for (unsigned i = park; i < conns; i++)
        if (!wb_lease_conn(&cs[i], names, keys, false, at, &deadline[i],
                           &gap))
            goto out;
    for (unsigned i = 0; i < park; i++)
        if (!wb_lease_conn(&cs[i], names, keys, true, at, &deadline[i], &gap))
            goto out;
    uint64_t t_set = bench_now_ns();
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &rss1);
    if (!wb_stat(&stats, "used_memory", &used1))
        goto out;
    uint64_t dmin = UINT64_MAX, dmax = 0;
    for (unsigned i = 0; i < conns; i++) {
        dmin = deadline[i] < dmin ? deadline[i] : dmin;
        dmax = deadline[i] > dmax ? deadline[i] : dmax;
    }

    probe.conn = &pconn;
    if (pthread_create(&probe.tid, NULL, wb_probe_main, &probe) != 0)
        goto out;
    probing = true;
    wb_storm_read(cs, conns, keys, deadline, dmax + 60000000000ull, storm);
    atomic_store(&probe.stop, true);
    pthread_join(probe.tid, NULL);
    probing = false;
    if (!wb_stat(&stats, "lease_expirations", &exp1))
        goto out;

    /* Idle: from a moment after the set-up to a moment before the first
     * deadline; busy: from the first deadline to the last event. */
    uint64_t margin = 200000000u;
    uint64_t nidle = wb_probe_window(&probe, t_set + margin,
                                     dmin > margin ? dmin - margin : 0, idle);
    uint64_t nbusy = wb_probe_window(&probe, dmin,
                                     storm->last > dmin ? storm->last : dmin,
                                     busy);
    double rss_per = leases ? ((double)rss1 - (double)rss0) * 1024 /
                              (double)leases : 0;
    double used_per = leases ? ((double)used1 - (double)used0) /
                               (double)leases : 0;
    int64_t late_min = storm->events ? storm->late_min : 0;
    printf("server=%s workload=leases conns=%u keys=%u leases=%" PRIu64
           " setup_s=%.2f rss_before_kb=%" PRIu64 " rss_after_kb=%" PRIu64
           " used_before=%" PRIu64 " used_after=%" PRIu64
           " bytes_per_lease_rss=%.1f bytes_per_lease_used=%.1f "
           "spread_ms=%.1f answer_gap_ms=%.1f events=%" PRIu64
           " missing=%" PRIu64 " expirations=%" PRIu64 " late_p50_ms=%.1f "
           "late_p99_ms=%.1f late_max_ms=%.1f late_min_ms=%.1f "
           "storm_s=%.3f idle_probes=%" PRIu64 " idle_p50_us=%.1f "
           "idle_p99_us=%.1f busy_probes=%" PRIu64 " busy_p50_us=%.1f "
           "busy_p99_us=%.1f probe_idle_p99_us=%.1f probe_storm_p99_us=%.1f "
           "probe_p99_ratio=%.2f probe_idle_max_us=%.1f "
           "probe_storm_max_us=%.1f errors=%" PRIu64 " probe_failed=%d\n",
           o->label, conns, keys, leases, (double)(t_set - t_start) / 1e9,
           rss0, rss1, used0, used1, rss_per, used_per,
           (double)(dmax - dmin) / 1e6, (double)gap / 1e6, storm->events,
           leases - storm->events, exp1 - exp0,
           (double)cnt_hist_quantile(&storm->late, 0.5) / 1e6,
           (double)cnt_hist_quantile(&storm->late, 0.99) / 1e6,
           (double)storm->late.max / 1e6, (double)late_min / 1e6,
           storm->events ? (double)(storm->last - storm->first) / 1e9 : 0,
           nidle, wb_us(idle, 0.5), wb_us(idle, 0.99), nbusy,
           wb_us(busy, 0.5), wb_us(busy, 0.99), wb_us(idle, 0.99),
           wb_us(busy, 0.99),
           wb_us(idle, 0.99) > 0 ? wb_us(busy, 0.99) / wb_us(idle, 0.99) : 0,
           (double)idle->max / 1e3, (double)busy->max / 1e3,
           storm->errors, probe.failed);
    status = storm->events == leases && storm->errors == 0 && !probe.failed
             ? 0 : 1;
out:
    if (probing) {
        atomic_store(&probe.stop, true);
        pthread_join(probe.tid, NULL);
    }
    while (cs != NULL && opened > 0)
        wb_close(&cs[--opened]);
    if (stats.buf != NULL)
        wb_close(&stats);
    if (pconn.buf != NULL)
        wb_close(&pconn);
    free(cs);
    free(deadline);
    free(names);
    free(storm);
    free(idle);
    free(probe.at);
    free(probe.rtt);
    return status;
}

/* ---- lease_list ---- */

/* Sends Lease_list for the 64 nearest on c and reads the series; returns
 * the round trip (ns, to the end marker; 0 on failure) and the records. */
static uint64_t wb_lease_list(wb_conn *c, uint64_t *records)
{
    uint8_t req[CNT_HEADER_SIZE + CNT_LLIST_FIXED];
    cnt_response res;
    cnt_lease_record rec;
    uint32_t opaque = c->opaque++;
    size_t n = cnt_encode_lease_list(req, opaque, CNT_LEASE_LIST_MAX);
    uint64_t t0 = bench_now_ns();
    *records = 0;
    if (!wb_send(c, req, n))
        return 0;
    for (;;) {
        if (!wb_answer(c, CNT_OP_LEASE_LIST, opaque, &res))
            return 0;
        if (cnt_response_is_lease_list_end(&res))
            break;
        if (!cnt_parse_lease_record(&res, &rec)) {
            fprintf(stderr, "wait-bench: lease_list: malformed record\n");
            return 0;
        }
        (*records)++;
    }
    uint64_t d = bench_now_ns() - t0;
    return d > 0 ? d : 1;
}

/* One lister of the flood: its own connection, Lease_list after
 * Lease_list until told to stop. */
typedef struct wb_lister {
    pthread_t tid;
    wb_conn c;
    atomic_bool *stop;
    uint64_t lists;
    bool failed;
} wb_lister;

static void *wb_lister_main(void *arg)
{
    wb_lister *l = arg;
    uint64_t got;

    while (!atomic_load(l->stop)) {
        if (wb_lease_list(&l->c, &got) == 0) {
            l->failed = true;
            break;
        }
        l->lists++;
    }
    return NULL;
}

/* Sets o->clients x o->keys leases of an hour, then times Lease_list
 * (64) and a Noop in turn on one more connection for the duration. */
static int run_lease_list(const wb_opts *o)
{
    unsigned conns = o->clients, keys = o->keys;
    wb_conn *cs = calloc(conns, sizeof *cs);
    char *names = malloc((size_t)keys * BENCH_NAME_LEN);
    cnt_hist *list = calloc(2, sizeof *list), *noop = list + 1;
    wb_conn probe = { .fd = -1 };
    unsigned opened = 0, lopened = 0, lstarted = 0;
    uint64_t deadline, gap = 0, records = 0, lists = 0, flood = 0;
    wb_lister *ls = calloc(o->listers + 1, sizeof *ls);
    atomic_bool stop = false;
    bool lfailed = false;
    int status = 1;

    if (cs == NULL || names == NULL || list == NULL || ls == NULL) {
        fprintf(stderr, "wait-bench: out of memory\n");
        goto out;
    }
    for (unsigned k = 0; k < keys; k++)
        bench_name(names + (size_t)k * BENCH_NAME_LEN, "lease", k);
    for (; lopened < o->listers; lopened++)
        if (!wb_open(&ls[lopened].c, o))
            goto out;
    for (; opened < conns; opened++)
        if (!wb_open(&cs[opened], o))
            goto out;
    if (!wb_open(&probe, o))
        goto out;
    uint64_t t_start = bench_now_ns();
    for (unsigned i = 0; i < conns; i++)
        if (!wb_lease_conn(&cs[i], names, keys, false, 0, &deadline, &gap))
            goto out;
    uint64_t t_set = bench_now_ns();
    for (; lstarted < lopened; lstarted++) {
        ls[lstarted].stop = &stop;
        if (pthread_create(&ls[lstarted].tid, NULL, wb_lister_main,
                           &ls[lstarted]) != 0) {
            fprintf(stderr, "wait-bench: cannot start a lister\n");
            goto out;
        }
    }
    uint64_t warm = bench_now_ns() + (uint64_t)(o->warmup * 1e9);
    uint64_t end = warm + (uint64_t)(o->duration * 1e9);
    for (;;) {
        uint64_t now = bench_now_ns(), got;
        if (now >= end)
            break;
        uint64_t d = wb_lease_list(&probe, &got);
        uint64_t r = wb_noop(&probe);
        if (d == 0 || r == 0 || got != CNT_LEASE_LIST_MAX)
            goto out;
        if (now < warm)
            continue;
        cnt_hist_record(list, d);
        cnt_hist_record(noop, r);
        records += got;
        lists++;
    }
    atomic_store(&stop, true);
    for (; lstarted > 0; lstarted--) {
        wb_lister *l = &ls[lstarted - 1];
        pthread_join(l->tid, NULL);
        flood += l->lists;
        lfailed |= l->failed;
    }
    printf("server=%s workload=lease_list conns=%u keys=%u leases=%" PRIu64
           " setup_s=%.2f listers=%u flood_lists=%" PRIu64
           " lists=%" PRIu64 " records=%" PRIu64
           " list_p50_us=%.1f list_p99_us=%.1f list_max_us=%.1f"
           " noop_p50_us=%.1f noop_p99_us=%.1f noop_max_us=%.1f\n",
           o->label, conns, keys, (uint64_t)conns * keys,
           (double)(t_set - t_start) / 1e9, o->listers, flood, lists,
           records, wb_us(list, 0.5),
           wb_us(list, 0.99), (double)list->max / 1e3, wb_us(noop, 0.5),
           wb_us(noop, 0.99), (double)noop->max / 1e3);
    status = lists > 0 && !lfailed ? 0 : 1;
out:
    atomic_store(&stop, true);
    for (; lstarted > 0; lstarted--)
        pthread_join(ls[lstarted - 1].tid, NULL);
    while (ls != NULL && lopened > 0)
        wb_close(&ls[--lopened].c);
    free(ls);
    while (cs != NULL && opened > 0)
        wb_close(&cs[--opened]);
    if (probe.buf != NULL)
        wb_close(&probe);
    free(cs);
    free(names);
    free(list);
    return status;
}

/* Parses the options and runs the chosen workload. */
int main(int argc, char **argv)
{
    wb_opts o;
    parse_options(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    switch (o.mode) {
    case WB_HANDOFF:
        return run_handoff(&o);
    case WB_SEMAPHORE:
        return run_semaphore(&o);
    case WB_LEASE_LIST:
        return run_lease_list(&o);
    case WB_LEASES:
    default:
        return run_leases(&o);
    }
}
