/* counter-bench.c: load generator for any counter-protocol server (yrmcds's
 * binary counter protocol, our rate-limit checks and tenant throttling):
 * option parsing, the run's timeline (connect, warm up, measure, stop) and
 * the report, human or key=value; the accuracy run of a rate limit (checks
 * paced at a fixed rate on one name with the server's real clock, allowed
 * against exact); and the fairness run of the throttle (one tenant with a
 * reserve against one flooding, allowed units per second). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/loadgen.h"
#include "bench/net.h"
#include "bench/procstat.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/throttr.h"

/* The accuracy run sends its checks in ticks of this length: fine enough
 * for a limit of a few thousand per second, coarse enough to sleep. */
#define ACC_TICK_NS 1000000ull
/* After the last check is sent, answers are awaited this long at most. */
#define ACC_DRAIN_NS 3000000000ull
#define ACC_IN_CAP (1u << 16)

/* Prints the option summary. */
static void usage(FILE *f)
{
    fputs("usage: counter-bench [options]\n"
          "  -s, --host HOST        server address (127.0.0.1)\n"
          "  -p, --port PORT        counter port (11215)\n"
          "  -c, --connections N    connections (1)\n"
          "  -d, --depth N          requests in flight per connection (1)\n"
          "  -k, --keys N           distinct counter names (1000; fill: count)\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds of load before measuring (1)\n"
          "  -W, --workload NAME    pair|get|one|contended|window|gcra|\n"
          "                         throttle|fairness|fill|ping|stats|\n"
          "                         ttl|throttr\n"
          "      --value-size N     throttr: bytes of its numbers (2)\n"
          "  -T, --threads N        client threads (min(connections, CPUs))\n"
          "  -S, --seed N           random seed (1)\n"
          "  -P, --pid PID          server pid: report its CPU time and RSS\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "      --kv               one key=value line on stdout\n"
          "      --progress         per-second progress on stderr (always from 10 s)\n"
          "      --hold             fill: keep the connection until SIGTERM\n"
          "      --hot              window, gcra, throttle: every check on\n"
          "                         one name\n"
          "      --limit N          window: limit per window; gcra: count\n"
          "                         per period (1000000000; accuracy: 1000)\n"
          "      --burst N          gcra: burst (1000; accuracy: 10)\n"
          "      --slots N          window: slots (10; accuracy: 64)\n"
          "      --period-ms N      window length, gcra period (1000)\n"
          "      --capacity N       fairness: the node's capacity (units/s)\n"
          "                         as the server was set (echoed; 20000)\n"
          "      --reserve N        fairness: tenant fairA's reserve, as set\n"
          "                         (echoed; 6000)\n"
          "      --b-conns N        fairness: connections of tenant fairB,\n"
          "                         each at --depth (32)\n"
          "      --a-depth N        fairness: depth of tenant fairA's\n"
          "                         --connections (1)\n"
          "      --accuracy         window, gcra: send --offered checks/s\n"
          "                         on one fresh name for --duration seconds\n"
          "                         and compare the allowed ones with the\n"
          "                         exact limit\n"
          "      --offered N        accuracy: checks per second (10 x limit\n"
          "                         per period)\n"
          "  -h, --help\n"
          "Workloads: pair = Acquire+Release of 1 on random names; get = Get\n"
          "on names a holder connection keeps; one = pairs on a single name;\n"
          "contended = Acquires refused (0x21) half the time; fill = acquire\n"
          "--keys distinct 16-byte names on one connection, report RSS; ping =\n"
          "retry a Noop for up to --duration seconds; stats = print the server's\n"
          "Stats as one key=value line; window / gcra = one Window_check /\n"
          "Gcra_check of cost 1 per request (limits high enough that\n"
          "nearly all are allowed, unless --limit says otherwise);\n"
          "throttle = one Throttle of 1 unit per request on --keys tenants;\n"
          "ttl = Ttl_insert, Ttl_query, Ttl_update (quota +1) in turn on\n"
          "random names (quota 100, 200 ms); throttr = the same three as\n"
          "Throttr INSERT, QUERY, UPDATE on a Throttr port (-p); Exists,\n"
          "Not found and the failure byte count as refused;\n"
          "fairness = tenant fairA against tenant fairB flooding, per\n"
          "second of the monotonic clock: charges sent, units allowed.\n"
          "Exit 0 when every answer was as expected, 1 on errors, 2 on bad\n"
          "usage.\n",
          f);
}

/* Workload names, in bench_workload order. */
static const char *const workload_names[] = { "pair", "get", "one",
                                              "contended", "window", "gcra",
                                              "throttle", "fairness", "fill",
                                              "ping", "stats", "ttl",
                                              "throttr" };

/* Parses a workload name; exits with a message on an unknown one. */
static bench_workload opt_workload(const char *s)
{
    for (unsigned i = 0; i < sizeof workload_names / sizeof workload_names[0]; i++)
        if (strcmp(s, workload_names[i]) == 0)
            return (bench_workload)i;
    fprintf(stderr, "counter-bench: --workload: unknown workload '%s'\n", s);
    exit(2);
}

/* Returns the printable name of a workload. */
static const char *workload_name(bench_workload w)
{
    return workload_names[w];
}

/* Fills o from the command line; exits on bad usage. */
static void parse_options(int argc, char **argv, bench_opts *o)
{
    enum { OPT_KV = 256, OPT_PROGRESS, OPT_HOLD, OPT_HOT, OPT_LIMIT,
           OPT_BURST, OPT_SLOTS, OPT_PERIOD, OPT_ACCURACY, OPT_OFFERED,
           OPT_CAPACITY, OPT_RESERVE, OPT_BCONNS, OPT_ADEPTH, OPT_VSIZE };
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "connections", 1, NULL, 'c' }, { "depth", 1, NULL, 'd' },
        { "keys", 1, NULL, 'k' }, { "duration", 1, NULL, 't' },
        { "warmup", 1, NULL, 'w' }, { "workload", 1, NULL, 'W' },
        { "threads", 1, NULL, 'T' }, { "seed", 1, NULL, 'S' },
        { "pid", 1, NULL, 'P' }, { "label", 1, NULL, 'l' },
        { "kv", 0, NULL, OPT_KV }, { "progress", 0, NULL, OPT_PROGRESS },
        { "value-size", 1, NULL, OPT_VSIZE },
        { "hold", 0, NULL, OPT_HOLD }, { "hot", 0, NULL, OPT_HOT },
        { "limit", 1, NULL, OPT_LIMIT }, { "burst", 1, NULL, OPT_BURST },
        { "slots", 1, NULL, OPT_SLOTS }, { "period-ms", 1, NULL, OPT_PERIOD },
        { "accuracy", 0, NULL, OPT_ACCURACY },
        { "offered", 1, NULL, OPT_OFFERED },
        { "capacity", 1, NULL, OPT_CAPACITY },
        { "reserve", 1, NULL, OPT_RESERVE },
        { "b-conns", 1, NULL, OPT_BCONNS },
        { "a-depth", 1, NULL, OPT_ADEPTH }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (bench_opts){ .host = "127.0.0.1", .port = "11215", .conns = 1, .value_size = 2,
                       .depth = 1, .keys = 1000, .duration = 3, .warmup = 1,
                       .workload = BENCH_WL_PAIR, .seed = 1, .label = "server",
                       .period_ns = 1000000000ull, .capacity = 20000,
                       .reserve = 6000, .b_conns = 32, .a_depth = 1 };
    long limit = -1, burst = -1, slots = -1;
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:c:d:k:t:w:W:T:S:P:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'c': o->conns = bench_opt_uint("counter-bench", "--connections", optarg, 1, 10000); break;
        case 'd': o->depth = bench_opt_uint("counter-bench", "--depth", optarg, 1, 4096); break;
        case 'k': o->keys = bench_opt_uint("counter-bench", "--keys", optarg, 1, 100000000); break;
        case 't': o->duration = bench_opt_seconds("counter-bench", "--duration", optarg); break;
        case 'w': o->warmup = bench_opt_seconds("counter-bench", "--warmup", optarg); break;
        case 'W': o->workload = opt_workload(optarg); break;
        case 'T': o->threads = bench_opt_uint("counter-bench", "--threads", optarg, 1, 256); break;
        case 'S': o->seed = bench_opt_uint("counter-bench", "--seed", optarg, 0, 0xffffffffu); break;
        case 'P': o->pid = (pid_t)bench_opt_uint("counter-bench", "--pid", optarg, 1, 0x7fffffff); break;
        case 'l': o->label = optarg; break;
        case OPT_KV: o->kv = true; break;
        case OPT_VSIZE:
            o->value_size = bench_opt_uint("counter-bench", "--value-size",
                                           optarg, 1, 8);
            if (!cnt_throttr_value_size_ok(o->value_size)) {
                fprintf(stderr, "counter-bench: --value-size: bad value "
                        "'%s' (1, 2, 4 or 8)\n", optarg);
                exit(2);
            }
            break;
        case OPT_PROGRESS: o->progress = true; break;
        case OPT_HOLD: o->hold = true; break;
        case OPT_HOT: o->hot = true; break;
        case OPT_LIMIT:
            limit = bench_opt_uint("counter-bench", "--limit", optarg, 1, 0xffffffffu);
            break;
        case OPT_BURST:
            burst = bench_opt_uint("counter-bench", "--burst", optarg, 0, 0xfffffffeu);
            break;
        case OPT_SLOTS: slots = bench_opt_uint("counter-bench", "--slots", optarg, 1, 64); break;
        case OPT_PERIOD:
            o->period_ns = bench_opt_uint("counter-bench", "--period-ms", optarg, 1, 86400000) *
                           1000000ull;
            break;
        case OPT_ACCURACY: o->accuracy = true; break;
        case OPT_OFFERED:
            o->offered = bench_opt_uint("counter-bench", "--offered", optarg, 1, 10000000);
            break;
        case OPT_CAPACITY:
            o->capacity = bench_opt_uint("counter-bench", "--capacity", optarg, 0, 0xffffffffu);
            break;
        case OPT_RESERVE:
            o->reserve = bench_opt_uint("counter-bench", "--reserve", optarg, 0, 0xffffffffu);
            break;
        case OPT_BCONNS:
            o->b_conns = bench_opt_uint("counter-bench", "--b-conns", optarg, 1, 10000);
            break;
        case OPT_ADEPTH:
            o->a_depth = bench_opt_uint("counter-bench", "--a-depth", optarg, 1, 4096);
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "counter-bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    if (o->accuracy && o->workload != BENCH_WL_WINDOW &&
        o->workload != BENCH_WL_GCRA) {
        fprintf(stderr, "counter-bench: --accuracy needs -W window or gcra\n");
        exit(2);
    }
    /* Throughput: limits nearly every check passes, even millions per
     * second on one name, so each one charges; accuracy: 1000 per second
     * (a burst of 10 beyond it for gcra, so a check arriving a little late
     * loses nothing), the window in 64 slots, so it forgets at most 1/64
     * of a window late. */
    o->limit = limit >= 0 ? (uint32_t)limit
               : o->accuracy ? 1000 : 1000000000u;
    o->burst = burst >= 0 ? (uint32_t)burst : o->accuracy ? 10 : 1000;
    o->slots = (uint8_t)(slots >= 0 ? slots : o->accuracy ? 64 : 10);
    if (o->offered == 0)
        o->offered = 10.0 * o->limit * 1e9 / (double)o->period_ns;
    if (o->workload == BENCH_WL_ONE || o->hot || o->accuracy)
        o->keys = 1;
    if (o->duration >= 10 && o->workload != BENCH_WL_FAIRNESS)
        o->progress = true;     /* long runs say they are alive */
    if (o->threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (o->threads > o->conns)
        o->threads = o->conns;
}

/* Ping: retries connect + Noop until it works or `duration` runs out. */
static int run_ping(const bench_opts *o)
{
    uint64_t end = bench_now_ns() + (uint64_t)(o->duration * 1e9);
    do {
        int fd = bench_connect(o->host, o->port, true);
        if (fd >= 0) {
            bool ok = bench_noop(fd);
            close(fd);
            if (ok)
                return 0;
        }
        bench_sleep(0.05);
    } while (bench_now_ns() < end);
    fprintf(stderr, "counter-bench: no Noop answer from %s:%s\n", o->host, o->port);
    return 1;
}

/* Fill: acquires --keys distinct names on one connection, reports the
 * server's RSS while the connection (and so every counter) is alive. */
static int run_fill(const bench_opts *o)
{
    int fd = bench_connect(o->host, o->port, false);
    if (fd < 0)
        return 1;
    uint64_t rss0 = 0, rss1 = 0;
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &rss0);
    uint64_t t0 = bench_now_ns();
    long bad = bench_acquire_all(fd, "fill", o->keys, 1, 1);
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    if (bad < 0) {
        fprintf(stderr, "counter-bench: fill: connection lost\n");
        close(fd);
        return 1;
    }
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &rss1);
    printf("server=%s workload=fill counters=%u refused=%ld seconds=%.2f "
           "rss_before_kb=%" PRIu64 " rss_kb=%" PRIu64 "\n",
           o->label, o->keys, bad, secs, rss0, rss1);
    fflush(stdout);
    if (o->hold) {
        /* Keep the counters alive until told to stop: the default action
         * of SIGTERM/SIGINT ends the process, which closes the socket. */
        for (;;)
            pause();
    }
    close(fd);
    return bad == 0 ? 0 : 1;
}

/* Get and contended need every counter to exist (held by a holder
 * connection that stays open for the whole run); returns its fd. */
static int setup_holder(const bench_opts *o)
{
    if (o->workload != BENCH_WL_GET && o->workload != BENCH_WL_CONTENDED)
        return -2;
    int fd = bench_connect(o->host, o->port, false);
    if (fd < 0)
        return -1;
    /* Any maximum works: a connection of an earlier run may still hold
     * some of these counters while the server processes its close. */
    long bad = bench_acquire_all(fd, "bench", o->keys, 1, 0xffffffffu);
    if (bad != 0) {
        fprintf(stderr, "counter-bench: holder: %ld of %u pre-acquires failed "
                "(are the counters held by someone else?)\n",
                bad < 0 ? (long)o->keys : bad, o->keys);
        close(fd);
        return -1;
    }
    return fd;
}

/* The summary of a measured run. */
typedef struct bench_result {
    double seconds;
    cnt_hist hist;
    uint64_t ops, errors, refused, allowed, limited;
    unsigned last_error, failures;
    double conn_min, conn_max;  /* ops/s of the slowest and fastest conn */
    double cpu;                 /* server CPU seconds; < 0 when unknown */
    uint64_t rss_kb;
} bench_result;

/* Connects every connection and spreads them over the client threads. */
static bool load_setup(const bench_opts *o, load_thread *th, load_conn **conns)
{
    for (unsigned i = 0; i < o->threads; i++) {
        th[i].opts = o;
        th[i].epfd = epoll_create1(EPOLL_CLOEXEC);
        th[i].conns = calloc(o->conns / o->threads + 1, sizeof *th[i].conns);
        if (th[i].epfd < 0 || th[i].conns == NULL)
            return false;
    }
    for (unsigned i = 0; i < o->conns; i++) {
        int fd = bench_connect(o->host, o->port, false);
        if (fd < 0)
            return false;
        conns[i] = load_conn_new(i, fd, o);
        if (conns[i] == NULL) {
            close(fd);
            return false;
        }
        load_thread *t = &th[i % o->threads];
        t->conns[t->nconns++] = conns[i];
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = conns[i] };
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            return false;
    }
    return true;
}

/* Sums the live answer counts of every thread (for progress lines). */
static uint64_t load_live_ops(load_thread *th, unsigned n)
{
    uint64_t sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += atomic_load_explicit(&th[i].ops_live, memory_order_relaxed);
    return sum;
}

/* Warm-up, then the measured interval with optional progress lines. */
static void load_timeline(const bench_opts *o, load_thread *th,
                          bench_result *r)
{
    double cpu0 = -1, cpu1 = -1;
    bench_sleep(o->warmup);
    if (o->pid != 0 && !cnt_procstat_cpu(o->pid, &cpu0))
        cpu0 = -1;
    uint64_t t0 = bench_now_ns();
    load_set_phase(LOAD_MEASURE);
    double left = o->duration;
    uint64_t last = 0;
    while (left > 0) {
        double step = left > 1 ? 1 : left;
        bench_sleep(step);
        left -= step;
        if (o->progress) {
            uint64_t now = load_live_ops(th, o->threads);
            fprintf(stderr, "counter-bench: %s %.0f s left, %.0f ops/s\n",
                    o->label, left, (double)(now - last) / step);
            last = now;
        }
    }
    uint64_t t1 = bench_now_ns();
    load_set_phase(LOAD_STOP);
    if (o->pid != 0 && cpu0 >= 0 && cnt_procstat_cpu(o->pid, &cpu1))
        r->cpu = cpu1 - cpu0;
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &r->rss_kb);
    r->seconds = (double)(t1 - t0) / 1e9;
}

/* Gathers the threads' and connections' counts into r. */
static void load_collect(const bench_opts *o, load_thread *th,
                         load_conn **conns, bench_result *r)
{
    for (unsigned i = 0; i < o->threads; i++) {
        cnt_hist_merge(&r->hist, &th[i].hist);
        r->errors += th[i].errors;
        r->refused += th[i].refused;
        r->allowed += th[i].allowed;
        r->limited += th[i].limited;
        r->failures += th[i].failures;
        if (th[i].last_error != 0)
            r->last_error = th[i].last_error;
    }
    r->ops = r->hist.count;
    r->conn_min = -1;
    for (unsigned i = 0; i < o->conns; i++) {
        double rate = (double)conns[i]->ops / r->seconds;
        if (r->conn_min < 0 || rate < r->conn_min)
            r->conn_min = rate;
        if (rate > r->conn_max)
            r->conn_max = rate;
    }
}

/* Prints r as a human report or as one key=value line. */
static void print_result(const bench_opts *o, const bench_result *r)
{
    double us = 1e-3;
    double ops_s = (double)r->ops / r->seconds;
    double fair = r->conn_max > 0 ? r->conn_min / r->conn_max : 0;
    double p50 = (double)cnt_hist_quantile(&r->hist, 0.50) * us;
    double p99 = (double)cnt_hist_quantile(&r->hist, 0.99) * us;
    double p999 = (double)cnt_hist_quantile(&r->hist, 0.999) * us;
    double pmax = (double)r->hist.max * us;
    if (o->kv) {
        printf("server=%s workload=%s conns=%u depth=%u keys=%u threads=%u "
               "seconds=%.3f ops=%" PRIu64 " ops_s=%.0f p50_us=%.1f "
               "p99_us=%.1f p999_us=%.1f max_us=%.1f conn_min_ops_s=%.0f "
               "conn_max_ops_s=%.0f fairness=%.3f errors=%" PRIu64
               " last_error=0x%02x refused=%" PRIu64 " failures=%u "
               "cpu_s=%.2f cpu_util=%.2f rss_kb=%" PRIu64,
               o->label, workload_name(o->workload), o->conns, o->depth,
               o->keys, o->threads, r->seconds, r->ops, ops_s, p50, p99, p999,
               pmax, r->conn_min, r->conn_max, fair, r->errors,
               r->last_error, r->refused, r->failures, r->cpu,
               r->cpu >= 0 ? r->cpu / r->seconds : -1, r->rss_kb);
        if (o->workload == BENCH_WL_WINDOW || o->workload == BENCH_WL_GCRA ||
            o->workload == BENCH_WL_THROTTLE)
            printf(" hot=%d allowed=%" PRIu64 " limited=%" PRIu64,
                   o->hot ? 1 : 0, r->allowed, r->limited);
        printf("\n");
        return;
    }
    printf("%s: workload %s, %u connections x depth %u, %u keys, %u client "
           "threads, %.2f s measured\n", o->label, workload_name(o->workload),
           o->conns, o->depth, o->keys, o->threads, r->seconds);
    printf("  throughput  %.0f answers/s (%" PRIu64 " answers)\n", ops_s, r->ops);
    printf("  latency     p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n",
           p50, p99, p999, pmax);
    printf("  fairness    slowest conn %.0f/s, fastest %.0f/s, ratio %.3f\n",
           r->conn_min, r->conn_max, fair);
    if (o->workload == BENCH_WL_WINDOW || o->workload == BENCH_WL_GCRA ||
        o->workload == BENCH_WL_THROTTLE)
        printf("  checks      %" PRIu64 " allowed, %" PRIu64
               " limited, never or throttled\n", r->allowed, r->limited);
    printf("  errors      %" PRIu64 " unexpected statuses", r->errors);
    if (r->errors > 0)
        printf(" (last 0x%02x)", r->last_error);
    printf(", %" PRIu64 " refused (0x21), %u connections lost\n", r->refused,
           r->failures);
    if (r->cpu >= 0)
        printf("  server      %.2f CPU s (%.0f%% of one core), RSS %" PRIu64
               " KiB\n", r->cpu, 100 * r->cpu / r->seconds, r->rss_kb);
}

/* Runs the measured load; returns the exit status. */
static int run_load(const bench_opts *o)
{
    int holder = setup_holder(o);
    if (holder == -1)
        return 1;
    load_thread *th = calloc(o->threads, sizeof *th);
    load_conn **conns = calloc(o->conns, sizeof *conns);
    bench_result *r = calloc(1, sizeof *r);
    int status = 1;
    if (th == NULL || conns == NULL || r == NULL || o->names == NULL) {
        fprintf(stderr, "counter-bench: out of memory\n");
        goto out;
    }
    r->cpu = -1;
    if (!load_setup(o, th, conns))
        goto out;
    load_set_phase(LOAD_WARMUP);
    unsigned started = 0;
    for (; started < o->threads; started++)
        if (pthread_create(&th[started].tid, NULL, load_thread_main,
                           &th[started]) != 0)
            break;
    if (started == o->threads)
        load_timeline(o, th, r);
    load_set_phase(LOAD_STOP);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i].tid, NULL);
    if (started == o->threads) {
        load_collect(o, th, conns, r);
        print_result(o, r);
        status = r->errors == 0 && r->failures == 0 && r->ops > 0 ? 0 : 1;
    }
out:
    for (unsigned i = 0; conns != NULL && i < o->conns; i++)
        load_conn_free(conns[i]);
    for (unsigned i = 0; th != NULL && i < o->threads; i++) {
        if (th[i].epfd > 0)
            close(th[i].epfd);
        free(th[i].conns);
    }
    free(th);
    free(conns);
    free(r);
    if (holder >= 0)
        close(holder);
    return status;
}

/* One connection of the accuracy run: its pending output and the
 * answers not yet complete. */
typedef struct acc_conn {
    int fd;
    uint8_t *out;
    size_t out_off, out_len, out_cap;
    uint8_t in[ACC_IN_CAP];
    size_t in_len;
    uint32_t sent, received;
} acc_conn;

/* What the accuracy run counted. */
typedef struct acc_result {
    uint64_t sent, answered, allowed, limited, never, errors;
    unsigned last_error, failures;
} acc_result;

/* Sleeps until the monotonic clock reads at (ns). */
static void sleep_until(uint64_t at)
{
    struct timespec ts = { (time_t)(at / 1000000000u),
                           (long)(at % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR)
        ;
}

/* Reads what c's socket has and counts every complete answer; false when
 * the connection broke. */
static bool acc_read(acc_conn *c, acc_result *r)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, ACC_IN_CAP - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        c->in_len += (size_t)n;
        size_t off = 0;
        cnt_response res;
        cnt_check_result check;
        while (cnt_response_decode(c->in + off, c->in_len - off, &res) ==
               CNT_DECODE_OK) {
            off += res.size;
            if (res.magic != CNT_MAGIC_RESPONSE ||
                res.opaque != c->received++)
                return false;
            r->answered++;
            if (res.status != CNT_STATUS_OK ||
                !cnt_parse_check_answer(&res, &check)) {
                r->errors++;
                r->last_error = res.status;
            } else if (check.state == CNT_CHECK_ALLOWED) {
                r->allowed++;
            } else if (check.state == CNT_CHECK_LIMITED) {
                r->limited++;
            } else {
                r->never++;
            }
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        if (c->in_len == ACC_IN_CAP)
            return false;
    }
}

/* An exact limiter run beside the server on the client's send times: a
 * sliding log for the window (allowed iff fewer than `limit` checks were
 * allowed in the window before), GCRA without rounding. What it allows is
 * the exact figure the server's count is compared with: stalls of the
 * client (a late tick sends its checks together) fall on both alike. */
typedef struct acc_ideal {
    double tat;             /* GCRA: theoretical arrival time, ns */
    uint64_t *log;          /* window: allowed send times, a ring */
    size_t head, count;
    uint64_t allowed;
} acc_ideal;

/* Windows up to this limit are simulated (a sliding log of that many
 * times); above it only the schedule's bound is given. */
#define ACC_LOG_MAX (1u << 22)

/* Judges one check sent at t (ns since the first) with the exact limiter
 * and charges it when allowed. */
static void acc_ideal_check(const bench_opts *o, acc_ideal *id, uint64_t t)
{
    if (o->workload == BENCH_WL_GCRA) {
        double interval = (double)o->period_ns / o->limit;
        double tat = id->tat > (double)t ? id->tat : (double)t;
        /* new_tat - now <= interval * (burst + 1), with a little slack
         * for the rounding of doubles. */
        if (tat + interval - (double)t <=
            interval * ((double)o->burst + 1) + 1e-6) {
            id->tat = tat + interval;
            id->allowed++;
        }
        return;
    }
    while (id->count > 0 && id->log[id->head] + o->period_ns <= t) {
        id->head = (id->head + 1) % o->limit;
        id->count--;
    }
    if (id->count < o->limit) {
        id->log[(id->head + id->count) % o->limit] = t;
        id->count++;
        id->allowed++;
    }
}

/* The most a rate limiter can allow of `total` checks sent at `rate` per
 * second, exactly on schedule, over the span first..last (ns) of their
 * sends: a window lets `limit` through per window (each window of the
 * schedule from the first send, at most the checks sent in it); GCRA
 * lets burst + 1 through at once and then one per emission interval. */
static uint64_t acc_bound(const bench_opts *o, uint64_t total, double rate,
                          uint64_t span_ns)
{
    if (o->workload == BENCH_WL_GCRA) {
        uint64_t n = (uint64_t)((double)span_ns * o->limit /
                                (double)o->period_ns) + o->burst + 1;
        return n < total ? n : total;
    }
    /* Check j is due at j / rate: window k holds the checks from
     * ceil(k * per_window) up to ceil((k + 1) * per_window). */
    double per_window = rate * (double)o->period_ns / 1e9;
    uint64_t exact = 0, from = 0;
    for (uint64_t k = 1; from < total; k++) {
        double x = (double)k * per_window;
        uint64_t to = (uint64_t)x + ((double)(uint64_t)x < x ? 1 : 0);
        if (to > total)
            to = total;
        exact += to - from < o->limit ? to - from : o->limit;
        from = to;
    }
    return exact;
}

/* Accuracy: --offered checks per second (cost 1) on one fresh name,
 * dealt round-robin over the connections in ticks of ACC_TICK_NS, for
 * --duration seconds; then waits for every answer and compares the
 * allowed count with an exact limiter's on the same send times. */
static int run_accuracy(const bench_opts *o)
{
    char name[BENCH_NAME_LEN];
    /* A name no earlier run used: its limit starts untouched. */
    bench_name(name, "acc", (uint32_t)(getpid() ^ (bench_now_ns() / 1000)));
    acc_conn *conns = calloc(o->conns, sizeof *conns);
    acc_result r = { 0 };
    acc_ideal ideal = { .tat = 0 };
    uint64_t total = (uint64_t)(o->offered * o->duration);
    bool simulate = o->workload == BENCH_WL_GCRA || o->limit <= ACC_LOG_MAX;
    int status = 1;
    if (simulate && o->workload == BENCH_WL_WINDOW)
        ideal.log = malloc((size_t)o->limit * sizeof *ideal.log);
    if (conns == NULL || total == 0 ||
        (simulate && o->workload == BENCH_WL_WINDOW && ideal.log == NULL))
        goto out;
    for (unsigned i = 0; i < o->conns; i++) {
        acc_conn *c = &conns[i];
        c->fd = bench_connect(o->host, o->port, false);
        c->out_cap = ((size_t)(o->offered / o->conns) + 64) *
                     (CNT_HEADER_SIZE + CNT_GCRA_FIXED + BENCH_NAME_LEN);
        c->out = malloc(c->out_cap);
        int fl = c->fd >= 0 ? fcntl(c->fd, F_GETFL) : -1;
        if (c->out == NULL || fl < 0 ||
            fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
            goto out;
    }
    uint64_t t0 = bench_now_ns(), tick = t0, last = t0, gap = 0;
    while (r.sent < total && r.failures == 0) {
        uint64_t now = bench_now_ns();
        if (now - last > gap)
            gap = now - last;
        double due_d = (double)(now - t0) * o->offered / 1e9 + 1;
        uint64_t due = due_d < (double)total ? (uint64_t)due_d : total;
        for (; r.sent < due; r.sent++) {
            acc_conn *c = &conns[r.sent % o->conns];
            if (c->out_cap - c->out_len <
                CNT_HEADER_SIZE + CNT_GCRA_FIXED + BENCH_NAME_LEN) {
                r.failures++;       /* the server stopped reading */
                break;
            }
            uint8_t *out = c->out + c->out_len;
            c->out_len += o->workload == BENCH_WL_WINDOW
                ? cnt_encode_window_check(out, c->sent++, 0, o->slots,
                                          o->limit, 1, o->period_ns, name,
                                          BENCH_NAME_LEN)
                : cnt_encode_gcra_check(out, c->sent++, 0, o->burst,
                                        o->limit, 1, o->period_ns, name,
                                        BENCH_NAME_LEN);
            if (simulate)
                acc_ideal_check(o, &ideal, now - t0);
            last = now;
        }
        for (unsigned i = 0; i < o->conns; i++) {
            acc_conn *c = &conns[i];
            if (!cnt_bench_flush(c->fd, c->out, &c->out_off, &c->out_len) ||
                !acc_read(c, &r))
                r.failures++;
        }
        tick += ACC_TICK_NS;
        if (tick < now)
            tick = now;
        sleep_until(tick);
    }
    /* Every answer, or give up after ACC_DRAIN_NS. */
    uint64_t give_up = bench_now_ns() + ACC_DRAIN_NS;
    while (r.answered < r.sent && r.failures == 0 && bench_now_ns() < give_up) {
        for (unsigned i = 0; i < o->conns; i++) {
            acc_conn *c = &conns[i];
            if (!cnt_bench_flush(c->fd, c->out, &c->out_off, &c->out_len) ||
                !acc_read(c, &r))
                r.failures++;
        }
        bench_sleep(0.001);
    }
    uint64_t bound = acc_bound(o, r.sent, o->offered, last - t0);
    uint64_t exact = simulate ? ideal.allowed : bound;
    double err = exact > 0 ? 100.0 * ((double)r.allowed - (double)exact) /
                             (double)exact : 0;
    printf("server=%s workload=%s mode=accuracy conns=%u keys=1 limit=%u "
           "burst=%u slots=%u period_ms=%.0f offered_s=%.0f seconds=%.3f "
           "sent=%" PRIu64 " answered=%" PRIu64 " allowed=%" PRIu64
           " limited=%" PRIu64 " never=%" PRIu64 " exact=%" PRIu64
           " simulated=%d bound=%" PRIu64 " error_pct=%.3f "
           "max_tick_gap_ms=%.1f errors=%" PRIu64 " last_error=0x%02x "
           "failures=%u\n", o->label, workload_name(o->workload), o->conns,
           o->limit, o->burst, o->slots, (double)o->period_ns / 1e6,
           o->offered, (double)(last - t0) / 1e9, r.sent, r.answered,
           r.allowed, r.limited, r.never, exact, simulate ? 1 : 0, bound,
           err, (double)gap / 1e6, r.errors, r.last_error, r.failures);
    if (r.answered < r.sent)
        fprintf(stderr, "counter-bench: accuracy: %" PRIu64 " of %" PRIu64
                " checks unanswered\n", r.sent - r.answered, r.sent);
    status = r.errors == 0 && r.failures == 0 && r.answered == r.sent ? 0 : 1;
out:
    for (unsigned i = 0; conns != NULL && i < o->conns; i++) {
        if (conns[i].fd > 0)
            close(conns[i].fd);
        free(conns[i].out);
    }
    free(conns);
    free(ideal.log);
    return status;
}

/* One side of the fairness run: a tenant's connections and the client
 * threads that drive them. */
typedef struct fair_side {
    bench_opts o;
    char name[BENCH_NAME_LEN];
    load_thread *th;
    load_conn **conns;
    uint64_t *sent, *allowed;   /* per second, summed over the threads */
    uint32_t *used;             /* per second, the largest over them */
    bench_result r;
    unsigned started;
} fair_side;

/* Sets up one side: tenant prefix, connections at depth, client threads;
 * false on a failure (said on stderr). */
static bool fair_setup(fair_side *f, const bench_opts *o, const char *tenant,
                       unsigned conns, unsigned depth, unsigned threads)
{
    f->o = *o;
    f->o.conns = conns;
    f->o.depth = depth;
    f->o.threads = threads < conns ? threads : conns;
    f->o.keys = 1;
    bench_name(f->name, tenant, 0);
    f->o.names = f->name;
    f->th = calloc(f->o.threads, sizeof *f->th);
    f->conns = calloc(conns, sizeof *f->conns);
    f->sent = calloc(o->nsec, sizeof *f->sent);
    f->allowed = calloc(o->nsec, sizeof *f->allowed);
    f->used = calloc(o->nsec, sizeof *f->used);
    if (f->th == NULL || f->conns == NULL || f->sent == NULL ||
        f->allowed == NULL || f->used == NULL)
        return false;
    for (unsigned i = 0; i < f->o.threads; i++) {
        f->th[i].sec_sent = calloc(o->nsec, sizeof *f->th[i].sec_sent);
        f->th[i].sec_allowed = calloc(o->nsec, sizeof *f->th[i].sec_allowed);
        f->th[i].sec_used = calloc(o->nsec, sizeof *f->th[i].sec_used);
        if (f->th[i].sec_sent == NULL || f->th[i].sec_allowed == NULL ||
            f->th[i].sec_used == NULL)
            return false;
    }
    return load_setup(&f->o, f->th, f->conns);
}

/* Starts a side's client threads; false when one did not start. */
static bool fair_start(fair_side *f)
{
    for (; f->started < f->o.threads; f->started++)
        if (pthread_create(&f->th[f->started].tid, NULL, load_thread_main,
                           &f->th[f->started]) != 0)
            return false;
    return true;
}

/* Joins a side's threads and sums its counts, per second and in all. */
static void fair_collect(fair_side *f, double seconds)
{
    for (unsigned i = 0; i < f->started; i++)
        pthread_join(f->th[i].tid, NULL);
    if (f->started < f->o.threads)
        return;
    f->r.seconds = seconds;
    load_collect(&f->o, f->th, f->conns, &f->r);
    for (unsigned i = 0; i < f->o.threads; i++)
        for (unsigned s = 0; s < f->o.nsec; s++) {
            f->sent[s] += f->th[i].sec_sent[s];
            f->allowed[s] += f->th[i].sec_allowed[s];
            if (f->th[i].sec_used[s] > f->used[s])
                f->used[s] = f->th[i].sec_used[s];
        }
}

/* Frees what fair_setup made. */
static void fair_free(fair_side *f)
{
    for (unsigned i = 0; f->conns != NULL && i < f->o.conns; i++)
        load_conn_free(f->conns[i]);
    for (unsigned i = 0; f->th != NULL && i < f->o.threads; i++) {
        if (f->th[i].epfd > 0)
            close(f->th[i].epfd);
        free(f->th[i].conns);
        free(f->th[i].sec_sent);
        free(f->th[i].sec_allowed);
        free(f->th[i].sec_used);
    }
    free(f->th);
    free(f->conns);
    free(f->sent);
    free(f->allowed);
    free(f->used);
}

/* Fairness: tenant fairA (--connections at --a-depth, a closed loop: it
 * demands whatever its round trips allow, which must be at least its
 * reserve) against tenant fairB (--b-conns at --depth, flooding), each
 * charge 1 unit, for --duration whole seconds after the warm-up. The
 * server's reserve and capacity come from its settings file; --reserve
 * and --capacity only echo them. Seconds are whole seconds of
 * CLOCK_MONOTONIC, the clock whose whole seconds the server's are (same
 * host), the first one starting after the warm-up; each answer belongs to
 * the second in which its request was sent. Per second and tenant: the
 * charges sent (the demand), the allowed answers among them, and the
 * tenant's allowed units in the server's second, which is the largest
 * `used` answered to the charges sent in it: the server's last allowed
 * charge of the second answers the second's total, and a charge sent in
 * the second that reaches the server in the next one answers the next
 * second's usage so far, which is at most the charges in flight across
 * the boundary (connections x depth), far below a total. The allowed
 * count by send time can be off by those in-flight charges; `used` is
 * the server's own figure. */
static int run_fairness(const bench_opts *o)
{
    bench_opts base = *o;
    uint64_t now = bench_now_ns();
    base.nsec = (unsigned)(o->duration + 0.999);
    if (base.nsec == 0)
        base.nsec = 1;
    base.sec0 = (now + (uint64_t)(o->warmup * 1e9)) / 1000000000u + 1;
    base.workload = BENCH_WL_FAIRNESS;
    fair_side a = { .started = 0 }, b = { .started = 0 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int status = 1;
    if (!fair_setup(&a, &base, "fairA", o->conns, o->a_depth, 1) ||
        !fair_setup(&b, &base, "fairB", o->b_conns, o->depth,
                    cpus > 0 ? (unsigned)cpus : 1)) {
        fprintf(stderr, "counter-bench: fairness: set-up failed\n");
        goto out;
    }
    load_set_phase(LOAD_WARMUP);
    bool ok = fair_start(&a) && fair_start(&b);
    uint64_t t0 = base.sec0 * 1000000000u;
    uint64_t t1 = t0 + (uint64_t)base.nsec * 1000000000u;
    if (ok) {
        sleep_until(t0);
        load_set_phase(LOAD_MEASURE);
        for (unsigned s = 1; o->progress && s <= base.nsec; s++) {
            sleep_until(t0 + (uint64_t)s * 1000000000u);
            fprintf(stderr, "counter-bench: fairness %u of %u s\n", s,
                    base.nsec);
        }
        /* The answers to the last second's charges come shortly after. */
        sleep_until(t1 + 50000000u);
    }
    load_set_phase(LOAD_STOP);
    double secs = (double)base.nsec;
    fair_collect(&a, secs);
    fair_collect(&b, secs);
    if (!ok) {
        fprintf(stderr, "counter-bench: fairness: threads did not start\n");
        goto out;
    }
    uint64_t a_min = UINT64_MAX, a_sent_min = UINT64_MAX;
    uint64_t b_sent_min = UINT64_MAX, total_max = 0;
    for (unsigned s = 0; s < base.nsec; s++) {
        uint64_t total = (uint64_t)a.used[s] + b.used[s];
        printf("server=%s workload=fairness mode=second second=%u "
               "a_sent=%" PRIu64 " a_allowed=%" PRIu32 " b_sent=%" PRIu64
               " b_allowed=%" PRIu32 " total=%" PRIu64 " a_allowed_by_send=%"
               PRIu64 " b_allowed_by_send=%" PRIu64 "\n", o->label, s + 1,
               a.sent[s], a.used[s], b.sent[s], b.used[s], total,
               a.allowed[s], b.allowed[s]);
        if (a.used[s] < a_min)
            a_min = a.used[s];
        if (a.sent[s] < a_sent_min)
            a_sent_min = a.sent[s];
        if (b.sent[s] < b_sent_min)
            b_sent_min = b.sent[s];
        if (total > total_max)
            total_max = total;
    }
    uint64_t errors = a.r.errors + b.r.errors;
    unsigned failures = a.r.failures + b.r.failures;
    printf("server=%s workload=fairness mode=summary capacity=%u reserve=%u "
           "seconds=%u a_conns=%u a_depth=%u b_conns=%u b_depth=%u "
           "a_allowed_min=%" PRIu64 " a_sent_min=%" PRIu64
           " b_sent_min=%" PRIu64 " total_max=%" PRIu64 " errors=%" PRIu64
           " last_error=0x%02x failures=%u\n", o->label, o->capacity,
           o->reserve, base.nsec, a.o.conns, a.o.depth, b.o.conns, b.o.depth,
           a_min,
           a_sent_min, b_sent_min, total_max, errors,
           b.r.last_error != 0 ? b.r.last_error : a.r.last_error, failures);
    status = errors == 0 && failures == 0 ? 0 : 1;
out:
    fair_free(&a);
    fair_free(&b);
    return status;
}

/* Parses the options and runs the chosen workload. */
int main(int argc, char **argv)
{
    bench_opts o;
    parse_options(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    switch (o.workload) {
    case BENCH_WL_PING:
        return run_ping(&o);
    case BENCH_WL_FILL:
        return run_fill(&o);
    case BENCH_WL_WINDOW:
    case BENCH_WL_GCRA:
        if (o.accuracy)
            return run_accuracy(&o);
        break;
    case BENCH_WL_FAIRNESS:
        return run_fairness(&o);
    case BENCH_WL_STATS: {
        int fd = bench_connect(o.host, o.port, false);
        bool ok = fd >= 0 && bench_print_stats(fd, o.label);
        if (fd >= 0)
            close(fd);
        return ok ? 0 : 1;
    }
    default:
        break;
    }
    o.names = malloc((size_t)o.keys * BENCH_NAME_LEN);
    for (uint32_t k = 0; o.names != NULL && k < o.keys; k++)
        bench_name(o.names + (size_t)k * BENCH_NAME_LEN, "bench", k);
    int status = run_load(&o);
    free(o.names);
    return status;
}
