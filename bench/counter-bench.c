/* counter-bench.c: load generator for any counter-protocol server (yrmcds's
 * binary counter protocol): option parsing, the run's timeline (connect,
 * warm up, measure, stop) and the report, human or key=value. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/loadgen.h"
#include "bench/procstat.h"

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
          "  -W, --workload NAME    pair|get|one|contended|fill|ping|stats\n"
          "  -T, --threads N        client threads (min(connections, CPUs))\n"
          "  -S, --seed N           random seed (1)\n"
          "  -P, --pid PID          server pid: report its CPU time and RSS\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "      --kv               one key=value line on stdout\n"
          "      --progress         per-second progress on stderr (always from 10 s)\n"
          "      --hold             fill: keep the connection until SIGTERM\n"
          "  -h, --help\n"
          "Workloads: pair = Acquire+Release of 1 on random names; get = Get\n"
          "on names a holder connection keeps; one = pairs on a single name;\n"
          "contended = Acquires refused (0x21) half the time; fill = acquire\n"
          "--keys distinct 16-byte names on one connection, report RSS; ping =\n"
          "retry a Noop for up to --duration seconds; stats = print the server's\n"
          "Stats as one key=value line. Exit 0 when every\n"
          "answer was as expected, 1 on errors, 2 on bad usage.\n", f);
}

/* Parses an unsigned option value in [lo, hi]; exits with a message. */
static unsigned opt_uint(const char *name, const char *s, unsigned lo,
                         unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "counter-bench: %s: bad value '%s' (%u..%u)\n", name,
                s, lo, hi);
        exit(2);
    }
    return (unsigned)v;
}

/* Parses a duration in seconds (>= 0); exits with a message. */
static double opt_seconds(const char *name, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0) || v > 86400) {
        fprintf(stderr, "counter-bench: %s: bad value '%s' (seconds)\n", name, s);
        exit(2);
    }
    return v;
}

/* Workload names, in bench_workload order. */
static const char *const workload_names[] = { "pair", "get", "one",
                                              "contended", "fill", "ping",
                                              "stats" };

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
    enum { OPT_KV = 256, OPT_PROGRESS, OPT_HOLD };
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "connections", 1, NULL, 'c' }, { "depth", 1, NULL, 'd' },
        { "keys", 1, NULL, 'k' }, { "duration", 1, NULL, 't' },
        { "warmup", 1, NULL, 'w' }, { "workload", 1, NULL, 'W' },
        { "threads", 1, NULL, 'T' }, { "seed", 1, NULL, 'S' },
        { "pid", 1, NULL, 'P' }, { "label", 1, NULL, 'l' },
        { "kv", 0, NULL, OPT_KV }, { "progress", 0, NULL, OPT_PROGRESS },
        { "hold", 0, NULL, OPT_HOLD }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (bench_opts){ .host = "127.0.0.1", .port = "11215", .conns = 1,
                       .depth = 1, .keys = 1000, .duration = 3, .warmup = 1,
                       .workload = BENCH_WL_PAIR, .seed = 1, .label = "server" };
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:c:d:k:t:w:W:T:S:P:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'c': o->conns = opt_uint("--connections", optarg, 1, 10000); break;
        case 'd': o->depth = opt_uint("--depth", optarg, 1, 4096); break;
        case 'k': o->keys = opt_uint("--keys", optarg, 1, 100000000); break;
        case 't': o->duration = opt_seconds("--duration", optarg); break;
        case 'w': o->warmup = opt_seconds("--warmup", optarg); break;
        case 'W': o->workload = opt_workload(optarg); break;
        case 'T': o->threads = opt_uint("--threads", optarg, 1, 256); break;
        case 'S': o->seed = opt_uint("--seed", optarg, 0, 0xffffffffu); break;
        case 'P': o->pid = (pid_t)opt_uint("--pid", optarg, 1, 0x7fffffff); break;
        case 'l': o->label = optarg; break;
        case OPT_KV: o->kv = true; break;
        case OPT_PROGRESS: o->progress = true; break;
        case OPT_HOLD: o->hold = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "counter-bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    if (o->workload == BENCH_WL_ONE)
        o->keys = 1;
    if (o->duration >= 10)
        o->progress = true;     /* long runs say they are alive */
    if (o->threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (o->threads > o->conns)
        o->threads = o->conns;
}

/* Sleeps for the given seconds (restarting after signals). */
static void sleep_seconds(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Ping: retries connect + Noop until it works or `duration` runs out. */
static int run_ping(const bench_opts *o)
{
    uint64_t end = load_now_ns() + (uint64_t)(o->duration * 1e9);
    do {
        int fd = bench_connect(o->host, o->port, true);
        if (fd >= 0) {
            bool ok = bench_noop(fd);
            close(fd);
            if (ok)
                return 0;
        }
        sleep_seconds(0.05);
    } while (load_now_ns() < end);
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
    uint64_t t0 = load_now_ns();
    long bad = bench_acquire_all(fd, "fill", o->keys, 1, 1);
    double secs = (double)(load_now_ns() - t0) / 1e9;
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
    uint64_t ops, errors, refused;
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
    sleep_seconds(o->warmup);
    if (o->pid != 0 && !cnt_procstat_cpu(o->pid, &cpu0))
        cpu0 = -1;
    uint64_t t0 = load_now_ns();
    load_set_phase(LOAD_MEASURE);
    double left = o->duration;
    uint64_t last = 0;
    while (left > 0) {
        double step = left > 1 ? 1 : left;
        sleep_seconds(step);
        left -= step;
        if (o->progress) {
            uint64_t now = load_live_ops(th, o->threads);
            fprintf(stderr, "counter-bench: %s %.0f s left, %.0f ops/s\n",
                    o->label, left, (double)(now - last) / step);
            last = now;
        }
    }
    uint64_t t1 = load_now_ns();
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
               " refused=%" PRIu64 " failures=%u cpu_s=%.2f cpu_util=%.2f "
               "rss_kb=%" PRIu64 "\n",
               o->label, workload_name(o->workload), o->conns, o->depth,
               o->keys, o->threads, r->seconds, r->ops, ops_s, p50, p99, p999,
               pmax, r->conn_min, r->conn_max, fair, r->errors, r->refused,
               r->failures, r->cpu, r->cpu >= 0 ? r->cpu / r->seconds : -1,
               r->rss_kb);
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
    case BENCH_WL_STATS: {
        int fd = bench_connect(o.host, o.port, false);
        bool ok = fd >= 0 && bench_print_stats(fd, o.label);
        if (fd >= 0)
            close(fd);
        return ok ? 0 : 1;
    }
    default:
        o.names = malloc((size_t)o.keys * BENCH_NAME_LEN);
        for (uint32_t k = 0; o.names != NULL && k < o.keys; k++)
            bench_name(o.names + (size_t)k * BENCH_NAME_LEN, "bench", k);
        int status = run_load(&o);
        free(o.names);
        return status;
    }
}
