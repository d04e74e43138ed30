/* redis-semaphore.c: the counting semaphore users build on Redis, as the
 * yardstick of wait-bench's hand-off and contended semaphore rows. Two Lua
 * scripts over a sorted set of holders and a FIFO list of waiters; a
 * waiter that finds no room pushes its id on the list and blocks in BLPOP
 * on a list of its own; a release takes the next waiter off the line,
 * makes it a holder and pushes a token to its list, which wakes it. Same
 * workloads and timing points as wait-bench:
 * - handoff: one unit passed between two connections, timed from the
 *   release's send to the waiter's BLPOP answer, each round followed by a
 *   PING round trip on a third connection;
 * - semaphore: clients looping acquire / hold / release on one semaphore;
 *   grants per second, against the ceiling the holds they measured allow.
 * Prints one key=value line (server=LABEL first); exit 0 when every reply
 * was as expected. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"

#define RS_BUF 4096
/* A blocking read that waits this long means the server is stuck. */
#define RS_RECV_TIMEOUT_S 30
/* BLPOP's own timeout (seconds): far beyond any run, never reached. */
#define RS_BLOCK_S "600"

/* KEYS[1] holders (sorted set, scored by grant time), KEYS[2] waiters
 * (list, oldest first); ARGV id, maximum. 1: granted, 0: queued. */
static const char rs_acquire_lua[] =
    "if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end\n"
    "if redis.call('LLEN', KEYS[2]) == 0 and\n"
    "   redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then\n"
    "  local t = redis.call('TIME')\n"
    "  redis.call('ZADD', KEYS[1], t[1], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "redis.call('RPUSH', KEYS[2], ARGV[1])\n"
    "return 0\n";

/* KEYS[1] holders, KEYS[2] waiters; ARGV id, prefix of the waiters' own
 * lists. Hands the unit to the next waiter. 1: released, 0: not held. */
static const char rs_release_lua[] =
    "if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end\n"
    "local next = redis.call('LPOP', KEYS[2])\n"
    "if next then\n"
    "  local t = redis.call('TIME')\n"
    "  redis.call('ZADD', KEYS[1], t[1], next)\n"
    "  redis.call('RPUSH', ARGV[2] .. next, '1')\n"
    "end\n"
    "return 1\n";

typedef struct rs_opts {
    const char *host, *port, *label;
    bool semaphore;
    unsigned clients, maximum, hold_us;
    double duration, warmup;
} rs_opts;

/* A blocking connection and its unparsed input. */
typedef struct rs_conn {
    int fd;
    char buf[RS_BUF];
    size_t have;
} rs_conn;

/* What every client shares: the scripts' hashes and the key names. */
typedef struct rs_env {
    const rs_opts *o;
    char acq[48], rel[48];
    char holders[48], waiters[48], prefix[48];
} rs_env;

enum { RS_WARMUP, RS_MEASURE, RS_STOP };
static atomic_int rs_phase;

/* Connects c; false with a message. */
static bool rs_open(rs_conn *c, const rs_opts *o)
{
    c->have = 0;
    c->fd = bench_connect(o->host, o->port, false);
    if (c->fd < 0)
        return false;
    struct timeval tv = { .tv_sec = RS_RECV_TIMEOUT_S };
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return true;
}

/* Sends one command (argc strings) as a RESP array; false on an error. */
static bool rs_send(rs_conn *c, int argc, const char *const *argv)
{
    char out[RS_BUF];
    size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]);
        if (n + len + 32 > sizeof out)
            return false;
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n", len);
        memcpy(out + n, argv[i], len);
        memcpy(out + n + len, "\r\n", 2);
        n += len + 2;
    }
    for (size_t off = 0; off < n;) {
        ssize_t w = send(c->fd, out + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            perror("redis-semaphore: send");
            return false;
        }
        off += (size_t)w;
    }
    return true;
}

/* Size of the whole reply at b[0..len), 0 while incomplete, -1 when
 * malformed; *type its first byte, *value an integer reply's value. */
static long rs_parse(const char *b, size_t len, char *type, long long *value)
{
    const char *end = len > 0 ? memchr(b, '\n', len) : NULL;
    if (end == NULL)
        return 0;
    if (end == b || end[-1] != '\r')
        return -1;
    long line = (long)(end - b) + 1;
    long long v = strtoll(b + 1, NULL, 10);
    *type = b[0];
    switch (b[0]) {
    case '+': case '-': return line;
    case ':': *value = v; return line;
    case '$':
        if (v < 0)
            return line;
        return (size_t)line + (size_t)v + 2 > len ? 0 : line + (long)v + 2;
    case '*': {
        long off = line;
        for (long long i = 0; i < v; i++) {
            char t;
            long long x;
            long r = rs_parse(b + off, len - (size_t)off, &t, &x);
            if (r <= 0)
                return r;
            off += r;
        }
        return off;
    }
    default: return -1;
    }
}

/* Reads the next reply; copies a bulk string's text into text (cap
 * bytes) when asked. False on an error, a timeout or an error reply. */
static bool rs_reply(rs_conn *c, char *type, long long *value, char *text,
                     size_t cap)
{
    for (;;) {
        long r = rs_parse(c->buf, c->have, type, value);
        if (r < 0) {
            fprintf(stderr, "redis-semaphore: malformed reply\n");
            return false;
        }
        if (r > 0) {
            if (*type == '-') {
                fprintf(stderr, "redis-semaphore: %.*s\n", (int)r - 2,
                        c->buf);
                return false;
            }
            if (text != NULL && *type == '$') {
                const char *nl = memchr(c->buf, '\n', (size_t)r);
                size_t len = (size_t)(c->buf + r - 2 - (nl + 1));
                if (len >= cap)
                    return false;
                memcpy(text, nl + 1, len);
                text[len] = '\0';
            }
            memmove(c->buf, c->buf + r, c->have - (size_t)r);
            c->have -= (size_t)r;
            return true;
        }
        if (c->have == sizeof c->buf)
            return false;
        ssize_t n = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "redis-semaphore: no reply from the server\n");
            return false;
        }
        c->have += (size_t)n;
    }
}

/* Reads an integer reply; false unless it is one. */
static bool rs_int(rs_conn *c, long long *value)
{
    char type;
    *value = -1;
    return rs_reply(c, &type, value, NULL, 0) && type == ':';
}

/* Loads the scripts and names the keys (fresh ones, emptied). */
static bool rs_prepare(rs_env *e, rs_conn *c)
{
    char type;
    long long v;
    unsigned pid = (unsigned)getpid();
    snprintf(e->holders, sizeof e->holders, "rsem:%u:holders", pid);
    snprintf(e->waiters, sizeof e->waiters, "rsem:%u:waiters", pid);
    snprintf(e->prefix, sizeof e->prefix, "rsem:%u:wake:", pid);
    const char *load1[] = { "SCRIPT", "LOAD", rs_acquire_lua };
    const char *load2[] = { "SCRIPT", "LOAD", rs_release_lua };
    const char *del[] = { "DEL", e->holders, e->waiters };
    return rs_send(c, 3, load1) &&
           rs_reply(c, &type, &v, e->acq, sizeof e->acq) &&
           rs_send(c, 3, load2) &&
           rs_reply(c, &type, &v, e->rel, sizeof e->rel) &&
           rs_send(c, 3, del) && rs_int(c, &v);
}

/* Sends the acquire of client id (the script only). */
static bool rs_acquire_send(const rs_env *e, rs_conn *c, const char *id)
{
    char max[16];
    snprintf(max, sizeof max, "%u", e->o->maximum);
    const char *a[] = { "EVALSHA", e->acq, "2", e->holders, e->waiters, id,
                        max };
    return rs_send(c, 7, a);
}

/* Sends the BLPOP a queued client id waits in. */
static bool rs_block_send(const rs_env *e, rs_conn *c, const char *id)
{
    char key[80];
    snprintf(key, sizeof key, "%s%s", e->prefix, id);
    const char *a[] = { "BLPOP", key, RS_BLOCK_S };
    return rs_send(c, 3, a);
}

/* Reads BLPOP's answer: the token (an array); false otherwise. */
static bool rs_woken(rs_conn *c)
{
    char type;
    long long v;
    if (!rs_reply(c, &type, &v, NULL, 0))
        return false;
    if (type != '*') {
        fprintf(stderr, "redis-semaphore: BLPOP timed out\n");
        return false;
    }
    return true;
}

/* Sends the release of client id. */
static bool rs_release_send(const rs_env *e, rs_conn *c, const char *id)
{
    const char *a[] = { "EVALSHA", e->rel, "2", e->holders, e->waiters, id,
                        e->prefix };
    return rs_send(c, 7, a);
}

/* Reads a release's answer: it must have held. */
static bool rs_released(rs_conn *c)
{
    long long v;
    if (rs_int(c, &v) && v == 1)
        return true;
    fprintf(stderr, "redis-semaphore: release of a unit not held\n");
    return false;
}

/* Microseconds of quantile q of h (recorded in ns). */
static double rs_us(const cnt_hist *h, double q)
{
    return (double)cnt_hist_quantile(h, q) / 1e3;
}

/* ---- hand-off ---- */

/* One unit (maximum 1) passed back and forth, as wait-bench's hand-off:
 * the waiter queues (its acquire and its BLPOP pipelined, so the BLPOP is
 * blocked once the acquire's answer is back), the holder's release is
 * timed to the waiter's wake-up; a PING on a third connection follows. */
static int run_handoff(rs_env *e)
{
    rs_opts one = *e->o;
    const rs_opts *o = &one;
    rs_conn c[3];
    cnt_hist *hand = calloc(2, sizeof *hand), *ping = hand + 1;
    unsigned opened = 0;
    int status = 1;
    long long v;
    const char *id[2] = { "0", "1" };

    if (hand == NULL)
        return 1;
    one.maximum = 1;
    e->o = o;
    for (; opened < 3; opened++)
        if (!rs_open(&c[opened], o))
            goto out;
    if (!rs_prepare(e, &c[2]) || !rs_acquire_send(e, &c[0], id[0]) ||
        !rs_int(&c[0], &v) || v != 1) {
        fprintf(stderr, "redis-semaphore: handoff: no first grant\n");
        goto out;
    }
    uint64_t measure = bench_now_ns() + (uint64_t)(o->warmup * 1e9);
    uint64_t end = measure + (uint64_t)(o->duration * 1e9);
    unsigned holder = 0;
    uint64_t now;
    while ((now = bench_now_ns()) < end) {
        unsigned waiter = 1 - holder;
        rs_conn *h = &c[holder], *w = &c[waiter];
        if (!rs_acquire_send(e, w, id[waiter]) ||
            !rs_block_send(e, w, id[waiter]) || !rs_int(w, &v))
            goto out;
        if (v != 0) {
            fprintf(stderr, "redis-semaphore: handoff: not queued\n");
            goto out;
        }
        uint64_t t0 = bench_now_ns();
        if (!rs_release_send(e, h, id[holder]) || !rs_woken(w))
            goto out;
        uint64_t t1 = bench_now_ns();
        if (!rs_released(h))
            goto out;
        const char *p[] = { "PING" };
        char type;
        uint64_t p0 = bench_now_ns();
        if (!rs_send(&c[2], 1, p) || !rs_reply(&c[2], &type, &v, NULL, 0))
            goto out;
        uint64_t rtt = bench_now_ns() - p0;
        if (now >= measure) {
            cnt_hist_record(hand, t1 - t0);
            cnt_hist_record(ping, rtt > 0 ? rtt : 1);
        }
        holder = waiter;
    }
    if (hand->count == 0)
        goto out;
    printf("server=%s workload=handoff rounds=%" PRIu64 " seconds=%.2f "
           "handoff_p50_us=%.1f handoff_p99_us=%.1f handoff_max_us=%.1f "
           "noop_p50_us=%.1f noop_p99_us=%.1f noop_max_us=%.1f\n",
           o->label, hand->count, o->duration, rs_us(hand, 0.5),
           rs_us(hand, 0.99), (double)hand->max / 1e3, rs_us(ping, 0.5),
           rs_us(ping, 0.99), (double)ping->max / 1e3);
    status = 0;
out:
    while (opened > 0)
        close(c[--opened].fd);
    free(hand);
    return status;
}

/* ---- semaphore ---- */

typedef struct rs_client {
    pthread_t tid;
    rs_env *e;
    rs_conn conn;
    char id[16];
    uint64_t grants, hold_ns;   /* measured */
    cnt_hist wait;
    bool failed;
} rs_client;

/* Thread body: acquire (and wait to be woken), hold, release, until the
 * run stops; a cycle counts when its grant falls in the measured time. */
static void *rs_client_main(void *arg)
{
    rs_client *cl = arg;
    const rs_opts *o = cl->e->o;
    rs_conn *c = &cl->conn;
    long long v;
    while (atomic_load(&rs_phase) != RS_STOP) {
        uint64_t t0 = bench_now_ns();
        if (!rs_acquire_send(cl->e, c, cl->id) || !rs_int(c, &v) ||
            (v == 0 && (!rs_block_send(cl->e, c, cl->id) || !rs_woken(c)))) {
            cl->failed = true;
            break;
        }
        uint64_t t1 = bench_now_ns();
        bool measured = atomic_load(&rs_phase) == RS_MEASURE;
        struct timespec ts = { 0, (long)o->hold_us * 1000 };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        uint64_t held = bench_now_ns() - t1;
        if (!rs_release_send(cl->e, c, cl->id) || !rs_released(c)) {
            cl->failed = true;
            break;
        }
        if (measured) {
            cl->grants++;
            cl->hold_ns += held;
            cnt_hist_record(&cl->wait, t1 - t0);
        }
    }
    return NULL;
}

/* o->clients clients on one semaphore of maximum o->maximum. */
static int run_semaphore(rs_env *e)
{
    const rs_opts *o = e->o;
    rs_client *cl = calloc(o->clients, sizeof *cl);
    cnt_hist *wait = calloc(1, sizeof *wait);
    unsigned opened = 0, started = 0;
    int status = 1;

    if (cl == NULL || wait == NULL)
        goto out;
    for (; opened < o->clients; opened++) {
        cl[opened].e = e;
        snprintf(cl[opened].id, sizeof cl[opened].id, "%u", opened);
        if (!rs_open(&cl[opened].conn, o))
            goto out;
    }
    if (!rs_prepare(e, &cl[0].conn))
        goto out;
    atomic_store(&rs_phase, RS_WARMUP);
    for (; started < o->clients; started++)
        if (pthread_create(&cl[started].tid, NULL, rs_client_main,
                           &cl[started]) != 0)
            break;
    double seconds = 0;
    if (started == o->clients) {
        bench_sleep(o->warmup);
        uint64_t t0 = bench_now_ns();
        atomic_store(&rs_phase, RS_MEASURE);
        bench_sleep(o->duration);
        atomic_store(&rs_phase, RS_STOP);
        seconds = (double)(bench_now_ns() - t0) / 1e9;
    }
    /* Every release wakes the next waiter, which then releases too: the
     * line drains by itself once the clients stop asking. */
    atomic_store(&rs_phase, RS_STOP);
    for (unsigned i = 0; i < started; i++)
        pthread_join(cl[i].tid, NULL);
    if (started != o->clients)
        goto out;
    uint64_t grants = 0, hold_ns = 0, gmin = UINT64_MAX, gmax = 0;
    unsigned failed = 0;
    for (unsigned i = 0; i < o->clients; i++) {
        grants += cl[i].grants;
        hold_ns += cl[i].hold_ns;
        failed += cl[i].failed;
        gmin = cl[i].grants < gmin ? cl[i].grants : gmin;
        gmax = cl[i].grants > gmax ? cl[i].grants : gmax;
        cnt_hist_merge(wait, &cl[i].wait);
    }
    double hold_us = grants > 0 ? (double)hold_ns / (double)grants / 1e3 : 0;
    double ceiling = hold_us > 0 ? o->maximum * 1e6 / hold_us : 0;
    printf("server=%s workload=semaphore mode=script clients=%u maximum=%u "
           "hold_us=%u seconds=%.2f grants=%" PRIu64 " grants_s=%.1f "
           "wait_p50_us=%.0f wait_p99_us=%.0f client_min_grants=%" PRIu64
           " client_max_grants=%" PRIu64 " hold_mean_us=%.1f ceiling_s=%.1f"
           " of_ceiling=%.3f failures=%u\n", o->label, o->clients,
           o->maximum, o->hold_us, seconds, grants, (double)grants / seconds,
           rs_us(wait, 0.5), rs_us(wait, 0.99), gmin, gmax, hold_us, ceiling,
           ceiling > 0 ? (double)grants / seconds / ceiling : 0, failed);
    status = failed == 0 && grants > 0 ? 0 : 1;
out:
    for (unsigned i = 0; cl != NULL && i < opened; i++)
        close(cl[i].conn.fd);
    free(cl);
    free(wait);
    return status;
}

static void usage(FILE *f)
{
    fputs("usage: redis-semaphore [options]\n"
          "  -s, --host HOST        Redis address (127.0.0.1)\n"
          "  -p, --port PORT        Redis port (6379)\n"
          "  -W, --workload NAME    handoff|semaphore\n"
          "  -c, --clients N        semaphore clients (64)\n"
          "  -m, --maximum N        semaphore maximum (4)\n"
          "      --hold-us N        semaphore: microseconds a grant is "
          "held (1000)\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds before measuring (0.5)\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "  -h, --help\n", f);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "workload", 1, NULL, 'W' }, { "clients", 1, NULL, 'c' },
        { "maximum", 1, NULL, 'm' }, { "hold-us", 1, NULL, 'H' },
        { "duration", 1, NULL, 't' }, { "warmup", 1, NULL, 'w' },
        { "label", 1, NULL, 'l' }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    rs_opts o = { .host = "127.0.0.1", .port = "6379", .label = "redis",
                  .clients = 64, .maximum = 4, .hold_us = 1000,
                  .duration = 3, .warmup = 0.5 };
    const char *me = "redis-semaphore";
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:W:c:m:t:w:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o.host = optarg; break;
        case 'p': o.port = optarg; break;
        case 'W':
            if (strcmp(optarg, "handoff") != 0 &&
                strcmp(optarg, "semaphore") != 0) {
                fprintf(stderr, "%s: --workload: unknown workload '%s'\n",
                        me, optarg);
                return 2;
            }
            o.semaphore = strcmp(optarg, "semaphore") == 0;
            break;
        case 'c': o.clients = bench_opt_uint(me, "--clients", optarg, 1, 4096); break;
        case 'm': o.maximum = bench_opt_uint(me, "--maximum", optarg, 1, 1000000); break;
        case 'H': o.hold_us = bench_opt_uint(me, "--hold-us", optarg, 0, 1000000); break;
        case 't': o.duration = bench_opt_seconds(me, "--duration", optarg); break;
        case 'w': o.warmup = bench_opt_seconds(me, "--warmup", optarg); break;
        case 'l': o.label = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", me, argv[optind]);
        return 2;
    }
    rs_env e = { .o = &o };
    return o.semaphore ? run_semaphore(&e) : run_handoff(&e);
}
