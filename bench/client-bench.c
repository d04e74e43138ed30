/* client-bench.c: counter-bench's pair workload (Acquire + Release of 1 on
 * random names, `depth` requests in flight per connection) driven through
 * libmccounter's non-blocking API instead of raw sockets: each connection
 * is an mcc_client with one server, its fd registered with the thread's
 * epoll through the watch callback, every answer arriving through an
 * operation callback that issues the slot's next request. Run side by side
 * with counter-bench against the same server, the ratio of the two is what
 * the library costs an event-loop application. The key=value line has
 * counter-bench's fields, so run-bench.sh's report reads both alike. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "client/mccounter.h"

/* A maximum that never refuses: the pair workload measures the path, not
 * the rules. */
#define CB_MAX_ANY 0xffffffffu

enum { CB_WARMUP, CB_MEASURE, CB_STOP };
static atomic_int cb_phase;

typedef struct cb_conn cb_conn;

/* One request stream of a connection: one request in flight at a time. */
typedef struct cb_slot {
    cb_conn *conn;
    bool release_next;
    uint32_t key;
    uint64_t sent_ns;
} cb_slot;

/* One connection: a client with one server, and its registration. */
struct cb_conn {
    mcc_client *client;
    struct cb_thread *thread;
    int fd;                 /* registered with the epoll; -1: none */
    uint64_t rng;
    uint64_t answers;       /* while measuring: for the fairness figure */
    cb_slot *slots;
};

/* A client thread: its epoll and connections, and what it measured. */
typedef struct cb_thread {
    pthread_t tid;
    int epfd;
    cb_conn *conns;
    unsigned nconns;
    const bench_opts *opts;
    cnt_hist hist;
    uint64_t errors;
    int last_error;
    bool failed;
    uint64_t now;           /* read once per wake-up, as counter-bench
                             * reads it once per recv */
} cb_thread;

static void cb_answer(mcc_client *c, const mcc_result *r, void *arg);

/* Issues slot s's next request: a Release of what it holds, else an
 * Acquire of a random name. */
static void cb_issue(cb_slot *s)
{
    const bench_opts *o = s->conn->thread->opts;
    int rc;
    s->sent_ns = s->conn->thread->now;
    if (s->release_next) {
        rc = mcc_release_async(s->conn->client,
                               o->names + (size_t)s->key * BENCH_NAME_LEN,
                               BENCH_NAME_LEN, 1, cb_answer, s);
    } else {
        s->key = o->keys > 1 ? bench_rand(&s->conn->rng) % o->keys : 0;
        rc = mcc_acquire_async(s->conn->client,
                               o->names + (size_t)s->key * BENCH_NAME_LEN,
                               BENCH_NAME_LEN, 1, CB_MAX_ANY, cb_answer, s);
    }
    if (rc != MCC_OK) {
        s->conn->thread->failed = true;
        s->conn->thread->last_error = rc;
    }
}

/* An answer: counted while measuring, then the slot's next request. */
static void cb_answer(mcc_client *c, const mcc_result *r, void *arg)
{
    cb_slot *s = arg;
    cb_thread *t = s->conn->thread;
    (void)c;
    if (r->error != MCC_OK) {
        t->errors++;
        t->last_error = r->error;
        if (r->error != MCC_ERR_STATUS) {
            t->failed = true;
            return;
        }
    }
    if (atomic_load_explicit(&cb_phase, memory_order_relaxed) ==
        CB_MEASURE) {
        cnt_hist_record(&t->hist, t->now - s->sent_ns);
        s->conn->answers++;
    }
    if (atomic_load_explicit(&cb_phase, memory_order_relaxed) == CB_STOP)
        return;
    s->release_next = r->op == MCC_OP_ACQUIRE && r->error == MCC_OK;
    cb_issue(s);
}

/* The library says what a connection's fd waits for: mirror it in the
 * thread's epoll. */
static void cb_watch(mcc_client *c, size_t server, int fd, int wants,
                     void *arg)
{
    cb_conn *conn = arg;
    (void)c;
    (void)server;
    if (conn->fd >= 0 && conn->fd != fd) {
        epoll_ctl(conn->thread->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
        conn->fd = -1;
    }
    if (fd < 0)
        return;
    struct epoll_event ev = { .events = 0, .data.ptr = conn };
    if (wants & MCC_WANT_READ)
        ev.events |= EPOLLIN;
    if (wants & MCC_WANT_WRITE)
        ev.events |= EPOLLOUT;
    if (conn->fd == fd) {
        epoll_ctl(conn->thread->epfd, EPOLL_CTL_MOD, fd, &ev);
    } else {
        epoll_ctl(conn->thread->epfd, EPOLL_CTL_ADD, fd, &ev);
        conn->fd = fd;
    }
}

/* Thread body: the epoll loop until the phase is CB_STOP. */
static void *cb_thread_main(void *arg)
{
    cb_thread *t = arg;
    struct epoll_event evs[64];
    uint64_t next_tick = bench_now_ns();
    while (atomic_load_explicit(&cb_phase, memory_order_relaxed) != CB_STOP &&
           !t->failed) {
        int n = epoll_wait(t->epfd, evs, 64, 100);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            cb_conn *conn = evs[i].data.ptr;
            t->now = bench_now_ns();
            if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                mcc_on_writable(conn->client, 0);
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                mcc_on_readable(conn->client, 0);
        }
        /* Timeouts only matter if the server stalls: check them now and
         * then rather than on every wake-up. */
        uint64_t now = bench_now_ns();
        if (now >= next_tick) {
            for (unsigned i = 0; i < t->nconns; i++)
                mcc_tick(t->conns[i].client);
            next_tick = now + 100000000u;
        }
    }
    return NULL;
}

/* Prints the option summary. */
static void usage(FILE *f)
{
    fputs("usage: client-bench [options]\n"
          "  -s, --host HOST        server address (127.0.0.1)\n"
          "  -p, --port PORT        counter port (11215)\n"
          "  -c, --connections N    connections (1)\n"
          "  -d, --depth N          requests in flight per connection (1)\n"
          "  -k, --keys N           distinct counter names (1000)\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds of load before measuring (1)\n"
          "  -T, --threads N        client threads (min(connections, CPUs))\n"
          "  -S, --seed N           random seed (1)\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "      --kv               one key=value line on stdout\n"
          "  -h, --help\n"
          "The pair workload of counter-bench (Acquire + Release of 1 on\n"
          "random names) through libmccounter's non-blocking API.\n", f);
}

/* Parses the command line into o; exits on a bad option. */
static void parse_args(int argc, char **argv, bench_opts *o)
{
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "connections", 1, NULL, 'c' }, { "depth", 1, NULL, 'd' },
        { "keys", 1, NULL, 'k' }, { "duration", 1, NULL, 't' },
        { "warmup", 1, NULL, 'w' }, { "threads", 1, NULL, 'T' },
        { "seed", 1, NULL, 'S' }, { "label", 1, NULL, 'l' },
        { "kv", 0, NULL, 'K' }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *p = "client-bench";
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:c:d:k:t:w:T:S:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'c': o->conns = bench_opt_uint(p, "-c", optarg, 1, 100000); break;
        case 'd': o->depth = bench_opt_uint(p, "-d", optarg, 1, 65536); break;
        case 'k': o->keys = bench_opt_uint(p, "-k", optarg, 1, 100000000); break;
        case 't': o->duration = bench_opt_seconds(p, "-t", optarg); break;
        case 'w': o->warmup = bench_opt_seconds(p, "-w", optarg); break;
        case 'T': o->threads = bench_opt_uint(p, "-T", optarg, 1, 1024); break;
        case 'S': o->seed = bench_opt_uint(p, "-S", optarg, 0, 0xffffffffu); break;
        case 'l': o->label = optarg; break;
        case 'K': o->kv = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        usage(stderr);
        exit(2);
    }
}

/* Prepares thread t (its epoll, no connections yet). */
static bool cb_thread_init(cb_thread *t, cb_conn *block, const bench_opts *o)
{
    t->opts = o;
    t->conns = block;
    t->nconns = 0;
    cnt_hist_reset(&t->hist);
    t->now = bench_now_ns();
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    return t->epfd >= 0;
}

/* Opens connection number index (its client, and its depth requests,
 * which connect it) as the next one of thread t. */
static bool cb_conn_setup(cb_thread *t, unsigned index, const bench_opts *o)
{
    cb_conn *conn = &t->conns[t->nconns++];
    unsigned long port = strtoul(o->port, NULL, 10);

    conn->thread = t;
    conn->fd = -1;
    conn->rng = o->seed * 0x9E3779B97F4A7C15ull + index + 1;
    conn->client = mcc_client_new();
    conn->slots = calloc(o->depth, sizeof *conn->slots);
    if (conn->client == NULL || conn->slots == NULL || port == 0 ||
        port > 65535 ||
        mcc_client_add_server(conn->client, o->host, (uint16_t)port, 1) < 0)
        return false;
    mcc_client_set_watch_callback(conn->client, cb_watch, conn);
    mcc_client_set_timeout(conn->client, 30000);
    for (unsigned s = 0; s < o->depth; s++) {
        conn->slots[s].conn = conn;
        cb_issue(&conn->slots[s]);
    }
    return !t->failed;
}

int main(int argc, char **argv)
{
    bench_opts o = { .host = "127.0.0.1", .port = "11215", .conns = 1,
                     .depth = 1, .keys = 1000, .duration = 3, .warmup = 1,
                     .seed = 1, .label = "ours" };
    parse_args(argc, argv, &o);
    if (o.threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o.threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (o.threads > o.conns)
        o.threads = o.conns;
    o.names = malloc((size_t)o.keys * BENCH_NAME_LEN);
    cb_conn *conns = calloc(o.conns, sizeof *conns);
    cb_thread *th = calloc(o.threads, sizeof *th);
    if (o.names == NULL || conns == NULL || th == NULL) {
        fprintf(stderr, "client-bench: out of memory\n");
        return 1;
    }
    for (unsigned k = 0; k < o.keys; k++)
        bench_name(o.names + (size_t)k * BENCH_NAME_LEN, "bench", k);

    int rc = 0;
    unsigned started = 0;
    atomic_store(&cb_phase, CB_WARMUP);
    /* Connection i goes to thread i % threads, connected in the order of
     * i, as counter-bench spreads them: the server's workers take
     * connections in turn, so each client thread meets them alike. */
    for (unsigned i = 0, first = 0; i < o.threads && rc == 0; i++) {
        unsigned n = o.conns / o.threads + (i < o.conns % o.threads ? 1 : 0);
        if (!cb_thread_init(&th[i], conns + first, &o))
            rc = 1;
        first += n;
    }
    for (unsigned i = 0; i < o.conns && rc == 0; i++) {
        cb_thread *t = &th[i % o.threads];
        if (!cb_conn_setup(t, i, &o)) {
            fprintf(stderr, "client-bench: cannot set up connections to "
                    "%s:%s: %s\n", o.host, o.port,
                    mcc_strerror(t->last_error));
            rc = 1;
        }
    }
    for (unsigned i = 0; i < o.threads && rc == 0; i++) {
        if (pthread_create(&th[i].tid, NULL, cb_thread_main, &th[i]) != 0) {
            rc = 1;
            break;
        }
        started++;
    }
    uint64_t t0 = 0, t1 = 0;
    if (rc == 0) {
        bench_sleep(o.warmup);
        t0 = bench_now_ns();
        atomic_store(&cb_phase, CB_MEASURE);
        bench_sleep(o.duration);
        atomic_store(&cb_phase, CB_STOP);
        t1 = bench_now_ns();
    }
    atomic_store(&cb_phase, CB_STOP);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i].tid, NULL);

    cnt_hist all;
    cnt_hist_reset(&all);
    uint64_t errors = 0;
    int last_error = 0;
    bool failed = false;
    for (unsigned i = 0; i < o.threads; i++) {
        cnt_hist_merge(&all, &th[i].hist);
        errors += th[i].errors;
        if (th[i].last_error != 0)
            last_error = th[i].last_error;
        failed |= th[i].failed;
        if (th[i].epfd > 0)
            close(th[i].epfd);
    }
    uint64_t conn_min = UINT64_MAX, conn_max = 0;
    for (unsigned i = 0; i < o.conns; i++) {
        if (conns[i].answers < conn_min)
            conn_min = conns[i].answers;
        if (conns[i].answers > conn_max)
            conn_max = conns[i].answers;
        mcc_client_free(conns[i].client);
        free(conns[i].slots);
    }
    if (rc == 0 && failed) {
        fprintf(stderr, "client-bench: a connection failed: %s\n",
                mcc_strerror(last_error));
        rc = 1;
    }
    double seconds = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
    double ops_s = seconds > 0 ? (double)all.count / seconds : 0;
    double us = 1e-3;
    if (rc == 0 && o.kv) {
        printf("server=%s workload=pair via=libmccounter conns=%u depth=%u "
               "keys=%u threads=%u seconds=%.3f ops=%" PRIu64 " ops_s=%.0f "
               "p50_us=%.1f p99_us=%.1f conn_min_ops_s=%.0f "
               "conn_max_ops_s=%.0f fairness=%.3f errors=%" PRIu64 "\n",
               o.label, o.conns, o.depth, o.keys, o.threads, seconds,
               all.count, ops_s, (double)cnt_hist_quantile(&all, 0.50) * us,
               (double)cnt_hist_quantile(&all, 0.99) * us,
               seconds > 0 ? (double)conn_min / seconds : 0,
               seconds > 0 ? (double)conn_max / seconds : 0,
               conn_max > 0 ? (double)conn_min / (double)conn_max : 0,
               errors);
    } else if (rc == 0) {
        printf("%s through libmccounter: pair, %u connections x depth %u, "
               "%u keys, %u client threads, %.2f s measured\n", o.label,
               o.conns, o.depth, o.keys, o.threads, seconds);
        printf("  throughput  %.0f answers/s (%" PRIu64 " answers)\n", ops_s,
               all.count);
        printf("  latency     p50 %.1f us  p99 %.1f us\n",
               (double)cnt_hist_quantile(&all, 0.50) * us,
               (double)cnt_hist_quantile(&all, 0.99) * us);
        printf("  errors      %" PRIu64 " unexpected statuses\n", errors);
    }
    free(o.names);
    free(conns);
    free(th);
    return rc;
}
