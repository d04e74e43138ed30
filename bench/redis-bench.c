/* redis-bench.c: the Redis side of the rate-limit benchmark: a closed-loop
 * RESP load generator that checks rate limits the way Redis users do, so
 * counter-bench's window and gcra rows have a figure to compare with:
 * - window: a fixed window per name, one check = `INCR name` and
 *   `PEXPIRE name WINDOW_MS NX` pipelined together (allowed while the
 *   count is at most the limit);
 * - gcra: one `EVALSHA` of a GCRA script (redis-cell's semantics: burst,
 *   count per period, cost) loaded with SCRIPT LOAD first;
 * - ping: retry PING until Redis answers (for the run script).
 * Same connections x depth and the same 16-byte names as counter-bench;
 * prints one key=value line (--kv) or a short report. */
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "bench/net.h"
#include "bench/procstat.h"

#define RB_IN_CAP (1u << 16)
/* Nesting of RESP arrays the parser follows: the script answers a flat
 * array, so anything deeper is a protocol problem. */
#define RB_DEPTH_MAX 4

typedef enum rb_workload { RB_WINDOW, RB_GCRA, RB_PING } rb_workload;

/* The GCRA script (theoretical arrival time in microseconds of Redis's
 * clock, stored as a string with a millisecond-rounded-up expiry).
 * KEYS[1] = name; ARGV = burst, count, period in microseconds, cost.
 * Answers {state (0 allowed, 1 limited, 2 never), limit, remaining,
 * retry_after_us, reset_after_us}, like a 0x35 check. Redis's TIME counts
 * microseconds and Lua keeps doubles, so an emission interval far below
 * a microsecond is lost in rounding: such a limit allows everything,
 * which is what it means anyway; the work per check stays the same. */
static const char rb_gcra_lua[] =
    "local burst = tonumber(ARGV[1])\n"
    "local count = tonumber(ARGV[2])\n"
    "local period = tonumber(ARGV[3])\n"
    "local cost = tonumber(ARGV[4])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local interval = period / count\n"
    "local limit = burst + 1\n"
    "local tolerance = interval * limit\n"
    "local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
    "if tat < now then tat = now end\n"
    "if cost > limit then\n"
    "  return {2, limit, 0, -1, math.ceil(tat - now)}\n"
    "end\n"
    "local new_tat = tat + interval * cost\n"
    "if new_tat - now > tolerance then\n"
    "  local left = math.floor((tolerance - (tat - now)) / interval)\n"
    "  return {1, limit, math.max(left, 0),\n"
    "          math.ceil(new_tat - now - tolerance), math.ceil(tat - now)}\n"
    "end\n"
    "redis.call('SET', KEYS[1], string.format('%.17g', new_tat), 'PX',\n"
    "           math.max(1, math.ceil((new_tat - now) / 1000)))\n"
    "return {0, limit, math.floor((tolerance - (new_tat - now)) / interval),\n"
    "        0, math.ceil(new_tat - now)}\n";

typedef struct rb_opts {
    const char *host;
    const char *port;
    const char *label;
    rb_workload workload;
    unsigned conns, depth, keys, threads;
    double duration, warmup;
    uint64_t seed;
    pid_t pid;
    bool kv;
    bool hot;               /* every check on the first name */
    uint32_t limit;         /* window: per window; gcra: count per period */
    uint32_t burst;         /* gcra */
    uint32_t period_ms;     /* window length; gcra period */
    unsigned replies;       /* RESP replies per check: 2 window, 1 gcra */
    uint8_t *cmds;          /* the check of every name, pre-encoded */
    size_t *cmd_off;        /* keys + 1 offsets into cmds */
    size_t cmd_max;
} rb_opts;

typedef struct rb_conn {
    unsigned index;
    int fd;
    uint64_t rng;
    uint8_t *out;
    size_t out_off, out_len;
    uint8_t *in;
    size_t in_len;
    uint64_t *fifo_time;    /* checks in flight, oldest first: sent at */
    unsigned fifo_head, fifo_count;
    unsigned part;          /* replies of the oldest check already read */
    int64_t first;          /* its first reply's integer */
    bool part_error;
    uint64_t ops;
    bool want_out;
    const char *failed;
} rb_conn;

typedef struct rb_thread {
    pthread_t tid;
    int epfd;
    const rb_opts *opts;
    rb_conn **conns;
    unsigned nconns;
    cnt_hist hist;
    uint64_t allowed, limited, errors, failures;
    char last_error[64];
} rb_thread;

enum { RB_WARMUP, RB_MEASURE, RB_STOP };
static atomic_int rb_phase;

/* Appends one RESP command (an array of bulk strings) to out and returns
 * its length; with out NULL only returns the length. */
static size_t rb_command(uint8_t *out, int argc, const char *const *argv,
                         const size_t *lens)
{
    char tmp[32];
    size_t n = 0;
    int h = snprintf(tmp, sizeof tmp, "*%d\r\n", argc);
    if (out != NULL)
        memcpy(out, tmp, (size_t)h);
    n += (size_t)h;
    for (int i = 0; i < argc; i++) {
        h = snprintf(tmp, sizeof tmp, "$%zu\r\n", lens[i]);
        if (out != NULL) {
            memcpy(out + n, tmp, (size_t)h);
            memcpy(out + n + (size_t)h, argv[i], lens[i]);
            memcpy(out + n + (size_t)h + lens[i], "\r\n", 2);
        }
        n += (size_t)h + lens[i] + 2;
    }
    return n;
}

/* Writes the check of one name (its commands, pipelined) to out (NULL:
 * only the length). */
static size_t rb_check_command(uint8_t *out, const rb_opts *o,
                               const char *name, const char *sha)
{
    char a[3][24];
    snprintf(a[0], sizeof a[0], "%u", o->workload == RB_GCRA ? o->burst
                                                              : o->period_ms);
    snprintf(a[1], sizeof a[1], "%u", o->limit);
    snprintf(a[2], sizeof a[2], "%" PRIu64, (uint64_t)o->period_ms * 1000u);
    if (o->workload == RB_WINDOW) {
        const char *incr[] = { "INCR", name };
        const size_t incr_l[] = { 4, BENCH_NAME_LEN };
        const char *exp[] = { "PEXPIRE", name, a[0], "NX" };
        const size_t exp_l[] = { 7, BENCH_NAME_LEN, strlen(a[0]), 2 };
        size_t n = rb_command(out, 2, incr, incr_l);
        return n + rb_command(out != NULL ? out + n : NULL, 4, exp, exp_l);
    }
    const char *ev[] = { "EVALSHA", sha, "1", name, a[0], a[1], a[2], "1" };
    const size_t ev_l[] = { 7, strlen(sha), 1, BENCH_NAME_LEN, strlen(a[0]),
                            strlen(a[1]), strlen(a[2]), 1 };
    return rb_command(out, 8, ev, ev_l);
}

/* Parses the RESP reply at the front of b[0..len): returns its size, 0
 * while incomplete, -1 when malformed. *type is its first byte; *value
 * the integer of an integer reply, or of an array's first element. */
static long rb_reply(const uint8_t *b, size_t len, char *type, int64_t *value,
                     int depth)
{
    const uint8_t *end = len > 0 ? memchr(b, '\n', len) : NULL;
    if (end == NULL)
        return len > 512 ? -1 : 0;
    if (end == b || end[-1] != '\r' || depth > RB_DEPTH_MAX)
        return -1;
    long line = (long)(end - b) + 1;
    *type = (char)b[0];
    char *num_end;
    long long v = 0;
    if (b[0] == ':' || b[0] == '$' || b[0] == '*') {
        errno = 0;
        v = strtoll((const char *)b + 1, &num_end, 10);
        if (errno != 0 || num_end != (const char *)end - 1)
            return -1;
    }
    switch (b[0]) {
    case '+':
    case '-':
        return line;
    case ':':
        *value = v;
        return line;
    case '$':
        if (v < 0)
            return line;
        if ((size_t)line + (size_t)v + 2 > len)
            return 0;
        return line + (long)v + 2;
    case '*': {
        long off = line;
        for (long long i = 0; i < v; i++) {
            char t;
            int64_t x = 0;
            long n = rb_reply(b + off, len - (size_t)off, &t, &x, depth + 1);
            if (n <= 0)
                return n;
            if (i == 0)
                *value = x;
            off += n;
        }
        return off;
    }
    default:
        return -1;
    }
}

/* Appends the next check of c to its output. */
static void rb_queue(rb_conn *c, const rb_opts *o, uint64_t now)
{
    uint32_t k = o->keys > 1 && !o->hot ? bench_rand(&c->rng) % o->keys : 0;
    size_t n = o->cmd_off[k + 1] - o->cmd_off[k];
    memcpy(c->out + c->out_len, o->cmds + o->cmd_off[k], n);
    c->out_len += n;
    c->fifo_time[(c->fifo_head + c->fifo_count) % o->depth] = now;
    c->fifo_count++;
}

/* Takes one reply of the oldest check; the last one completes it, counts
 * it and queues the next check. */
static void rb_take(rb_conn *c, rb_thread *t, const rb_opts *o, char type,
                    int64_t value, const uint8_t *text, uint64_t now,
                    bool measuring)
{
    if (type == '-') {
        c->part_error = true;
        if (t->last_error[0] == '\0') {
            const uint8_t *e = memchr(text, '\r', sizeof t->last_error - 1);
            size_t n = e != NULL ? (size_t)(e - text)
                                 : sizeof t->last_error - 1;
            memcpy(t->last_error, text, n);
            t->last_error[n] = '\0';
        }
    }
    if (c->part++ == 0)
        c->first = type == ':' || type == '*' ? value : -1;
    if (c->part < o->replies)
        return;
    uint64_t sent_at = c->fifo_time[c->fifo_head];
    c->fifo_head = (c->fifo_head + 1) % o->depth;
    c->fifo_count--;
    if (measuring) {
        c->ops++;
        cnt_hist_record(&t->hist, now - sent_at);
        if (c->part_error || c->first < 0)
            t->errors++;
        else if (o->workload == RB_WINDOW ? c->first <= (int64_t)o->limit
                                          : c->first == 0)
            t->allowed++;
        else
            t->limited++;
    }
    c->part = 0;
    c->part_error = false;
    rb_queue(c, o, now);
}

/* Reads what the socket has and takes every complete reply in it. */
static void rb_read(rb_conn *c, rb_thread *t, const rb_opts *o)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, RB_IN_CAP - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            c->failed = n == 0 ? "server closed the connection"
                               : "read failed";
            return;
        }
        c->in_len += (size_t)n;
        uint64_t now = bench_now_ns();
        bool measuring = atomic_load_explicit(&rb_phase, memory_order_relaxed)
                         == RB_MEASURE;
        if (c->out_off > 0) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        size_t off = 0;
        for (;;) {
            char type = 0;
            int64_t value = 0;
            long r = rb_reply(c->in + off, c->in_len - off, &type, &value, 0);
            if (r < 0) {
                c->failed = "malformed RESP reply";
                return;
            }
            if (r == 0)
                break;
            if (c->fifo_count == 0) {
                c->failed = "reply to no command";
                return;
            }
            rb_take(c, t, o, type, value, c->in + off + 1, now, measuring);
            off += (size_t)r;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        if (c->in_len == RB_IN_CAP) {
            c->failed = "reply larger than the input buffer";
            return;
        }
        if ((size_t)n < RB_IN_CAP / 2)
            return;
    }
}

/* Writes pending output and updates the epoll interest. */
static void rb_flush(rb_thread *t, rb_conn *c)
{
    if (!cnt_bench_flush(c->fd, c->out, &c->out_off, &c->out_len)) {
        c->failed = "write failed";
        return;
    }
    bool want = c->out_off < c->out_len;
    if (want == c->want_out)
        return;
    struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0),
                              .data.ptr = c };
    epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

/* Thread body: fills every pipeline, then loops on epoll until stopped. */
static void *rb_thread_main(void *arg)
{
    rb_thread *t = arg;
    const rb_opts *o = t->opts;
    uint64_t now = bench_now_ns();
    for (unsigned i = 0; i < t->nconns; i++) {
        for (unsigned s = 0; s < o->depth; s++)
            rb_queue(t->conns[i], o, now);
        rb_flush(t, t->conns[i]);
    }
    struct epoll_event evs[64];
    while (atomic_load_explicit(&rb_phase, memory_order_relaxed) != RB_STOP) {
        int n = epoll_wait(t->epfd, evs, 64, 50);
        for (int i = 0; i < n; i++) {
            rb_conn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                rb_read(c, t, o);
            if (c->failed == NULL)
                rb_flush(t, c);
            if (c->failed != NULL) {
                fprintf(stderr, "redis-bench: connection %u: %s\n", c->index,
                        c->failed);
                epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                t->failures++;
            }
        }
    }
    return NULL;
}

/* Sends one command on the blocking fd and reads its reply into buf
 * (NUL-terminated); returns the reply's size, or -1. */
static long rb_call(int fd, const uint8_t *cmd, size_t len, char *buf,
                    size_t cap)
{
    size_t off = 0;
    if (!cnt_bench_flush(fd, cmd, &off, &len) || len != 0)
        return -1;
    size_t have = 0;
    for (;;) {
        char type;
        int64_t v;
        long r = rb_reply((const uint8_t *)buf, have, &type, &v, 0);
        if (r != 0) {
            buf[r > 0 ? (size_t)r : have] = '\0';
            return r;
        }
        if (have + 1 >= cap)
            return -1;
        ssize_t n = recv(fd, buf + have, cap - 1 - have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        have += (size_t)n;
    }
}

/* Sends a RESP command given as strings and reads its reply into buf. */
static long rb_call_argv(int fd, int argc, const char *const *argv, char *buf,
                         size_t cap)
{
    size_t lens[8];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    size_t n = rb_command(NULL, argc, argv, lens);
    uint8_t *cmd = malloc(n);
    if (cmd == NULL)
        return -1;
    rb_command(cmd, argc, argv, lens);
    long r = rb_call(fd, cmd, n, buf, cap);
    free(cmd);
    return r;
}

/* Ping: retries connect + PING until +PONG or `duration` runs out. */
static int rb_ping(const rb_opts *o)
{
    uint64_t end = bench_now_ns() + (uint64_t)(o->duration * 1e9);
    const char *argv[] = { "PING" };
    char buf[64];
    do {
        int fd = bench_connect(o->host, o->port, true);
        if (fd >= 0) {
            long r = rb_call_argv(fd, 1, argv, buf, sizeof buf);
            close(fd);
            if (r > 0 && strncmp(buf, "+PONG", 5) == 0)
                return 0;
        }
        bench_sleep(0.05);
    } while (bench_now_ns() < end);
    fprintf(stderr, "redis-bench: no PONG from %s:%s\n", o->host, o->port);
    return 1;
}

/* Loads the GCRA script and pre-encodes every name's check. */
static bool rb_prepare(rb_opts *o)
{
    char sha[64] = "";
    if (o->workload == RB_GCRA) {
        int fd = bench_connect(o->host, o->port, false);
        if (fd < 0)
            return false;
        const char *argv[] = { "SCRIPT", "LOAD", rb_gcra_lua };
        char buf[256];
        long r = rb_call_argv(fd, 3, argv, buf, sizeof buf);
        close(fd);
        /* A bulk string "$40\r\n<sha>\r\n". */
        if (r <= 0 || strncmp(buf, "$40\r\n", 5) != 0) {
            fprintf(stderr, "redis-bench: SCRIPT LOAD failed: %s\n",
                    r > 0 ? buf : "no reply");
            return false;
        }
        memcpy(sha, buf + 5, 40);
        sha[40] = '\0';
    }
    o->replies = o->workload == RB_WINDOW ? 2 : 1;
    char name[BENCH_NAME_LEN + 1] = "";
    bench_name(name, o->workload == RB_WINDOW ? "win" : "gcra", 0);
    o->cmd_max = rb_check_command(NULL, o, name, sha);
    o->cmds = malloc((size_t)o->keys * o->cmd_max);
    o->cmd_off = malloc(((size_t)o->keys + 1) * sizeof *o->cmd_off);
    if (o->cmds == NULL || o->cmd_off == NULL)
        return false;
    size_t off = 0;
    for (uint32_t k = 0; k < o->keys; k++) {
        bench_name(name, o->workload == RB_WINDOW ? "win" : "gcra", k);
        o->cmd_off[k] = off;
        off += rb_check_command(o->cmds + off, o, name, sha);
    }
    o->cmd_off[o->keys] = off;
    return true;
}

/* Connects every connection and deals them over the threads. */
static bool rb_setup(const rb_opts *o, rb_thread *th, rb_conn *conns)
{
    for (unsigned i = 0; i < o->threads; i++) {
        th[i].opts = o;
        th[i].epfd = epoll_create1(EPOLL_CLOEXEC);
        th[i].conns = calloc(o->conns / o->threads + 1, sizeof *th[i].conns);
        if (th[i].epfd < 0 || th[i].conns == NULL)
            return false;
    }
    for (unsigned i = 0; i < o->conns; i++) {
        rb_conn *c = &conns[i];
        c->index = i;
        c->fd = bench_connect(o->host, o->port, false);
        c->rng = (o->seed + 1) * 0x9E3779B97F4A7C15ull ^
                 (uint64_t)(i + 1) * 0xD1B54A32D192ED03ull;
        c->out = malloc((size_t)o->depth * o->cmd_max);
        c->in = malloc(RB_IN_CAP);
        c->fifo_time = calloc(o->depth, sizeof *c->fifo_time);
        if (c->fd < 0 || c->out == NULL || c->in == NULL ||
            c->fifo_time == NULL)
            return false;
        int fl = fcntl(c->fd, F_GETFL);
        if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return false;
        rb_thread *t = &th[i % o->threads];
        t->conns[t->nconns++] = c;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
            return false;
    }
    return true;
}

/* Prints the run's figures as one key=value line or a short report. */
static void rb_report(const rb_opts *o, rb_thread *th, rb_conn *conns,
                      double secs, double cpu)
{
    static cnt_hist h;
    uint64_t allowed = 0, limited = 0, errors = 0, failures = 0, rss = 0;
    const char *last = "";
    for (unsigned i = 0; i < o->threads; i++) {
        cnt_hist_merge(&h, &th[i].hist);
        allowed += th[i].allowed;
        limited += th[i].limited;
        errors += th[i].errors;
        failures += th[i].failures;
        if (th[i].last_error[0] != '\0')
            last = th[i].last_error;
    }
    double cmin = -1, cmax = 0;
    for (unsigned i = 0; i < o->conns; i++) {
        double r = (double)conns[i].ops / secs;
        if (cmin < 0 || r < cmin)
            cmin = r;
        if (r > cmax)
            cmax = r;
    }
    if (o->pid != 0)
        cnt_procstat_rss(o->pid, &rss);
    double ops_s = (double)h.count / secs;
    double p50 = (double)cnt_hist_quantile(&h, 0.5) / 1e3;
    double p99 = (double)cnt_hist_quantile(&h, 0.99) / 1e3;
    double p999 = (double)cnt_hist_quantile(&h, 0.999) / 1e3;
    const char *wl = o->workload == RB_WINDOW ? "window" : "gcra";
    if (o->kv) {
        printf("server=%s workload=%s conns=%u depth=%u keys=%u threads=%u "
               "hot=%d seconds=%.3f ops=%" PRIu64 " ops_s=%.0f "
               "commands_per_check=%u p50_us=%.1f p99_us=%.1f p999_us=%.1f "
               "max_us=%.1f conn_min_ops_s=%.0f conn_max_ops_s=%.0f "
               "fairness=%.3f allowed=%" PRIu64 " limited=%" PRIu64
               " errors=%" PRIu64 " failures=%" PRIu64 " cpu_s=%.2f "
               "cpu_util=%.2f rss_kb=%" PRIu64 "\n",
               o->label, wl, o->conns, o->depth, o->hot ? 1 : o->keys,
               o->threads, o->hot ? 1 : 0, secs, h.count, ops_s, o->replies,
               p50, p99, p999, (double)h.max / 1e3, cmin, cmax,
               cmax > 0 ? cmin / cmax : 0, allowed, limited, errors,
               failures, cpu, cpu >= 0 ? cpu / secs : -1, rss);
    } else {
        printf("%s: %s checks, %u connections x depth %u, %u keys, %.2f s\n"
               "  throughput  %.0f checks/s (%u commands each)\n"
               "  latency     p50 %.1f us  p99 %.1f us  p99.9 %.1f us\n"
               "  answers     %" PRIu64 " allowed, %" PRIu64 " limited, %"
               PRIu64 " errors, %" PRIu64 " connections lost\n",
               o->label, wl, o->conns, o->depth, o->hot ? 1 : o->keys, secs,
               ops_s, o->replies, p50, p99, p999, allowed, limited, errors,
               failures);
    }
    if (errors > 0 && last[0] != '\0')
        fprintf(stderr, "redis-bench: error reply: %s\n", last);
}

/* Runs the measured closed loop; returns the exit status. */
static int rb_run(rb_opts *o)
{
    if (!rb_prepare(o))
        return 1;
    rb_thread *th = calloc(o->threads, sizeof *th);
    rb_conn *conns = calloc(o->conns, sizeof *conns);
    int status = 1;
    if (th == NULL || conns == NULL || !rb_setup(o, th, conns))
        goto out;
    atomic_store(&rb_phase, RB_WARMUP);
    unsigned started = 0;
    for (; started < o->threads; started++)
        if (pthread_create(&th[started].tid, NULL, rb_thread_main,
                           &th[started]) != 0)
            break;
    double cpu0 = -1, cpu1 = -1;
    uint64_t t0 = 0, t1 = 0;
    if (started == o->threads) {
        bench_sleep(o->warmup);
        if (o->pid != 0 && !cnt_procstat_cpu(o->pid, &cpu0))
            cpu0 = -1;
        t0 = bench_now_ns();
        atomic_store(&rb_phase, RB_MEASURE);
        bench_sleep(o->duration);
        t1 = bench_now_ns();
    }
    atomic_store(&rb_phase, RB_STOP);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i].tid, NULL);
    if (started == o->threads) {
        double cpu = -1;
        if (o->pid != 0 && cpu0 >= 0 && cnt_procstat_cpu(o->pid, &cpu1))
            cpu = cpu1 - cpu0;
        rb_report(o, th, conns, (double)(t1 - t0) / 1e9, cpu);
        status = 0;
        for (unsigned i = 0; i < o->threads; i++)
            if (th[i].errors > 0 || th[i].failures > 0)
                status = 1;
    }
out:
    for (unsigned i = 0; conns != NULL && i < o->conns; i++) {
        if (conns[i].fd >= 0)
            close(conns[i].fd);
        free(conns[i].out);
        free(conns[i].in);
        free(conns[i].fifo_time);
    }
    for (unsigned i = 0; th != NULL && i < o->threads; i++) {
        if (th[i].epfd > 0)
            close(th[i].epfd);
        free(th[i].conns);
    }
    free(th);
    free(conns);
    free(o->cmds);
    free(o->cmd_off);
    return status;
}

/* Prints the option summary. */
static void usage(FILE *f)
{
    fputs("usage: redis-bench [options]\n"
          "  -s, --host HOST        Redis address (127.0.0.1)\n"
          "  -p, --port PORT        Redis port (6379)\n"
          "  -c, --connections N    connections (1)\n"
          "  -d, --depth N          checks in flight per connection (1)\n"
          "  -k, --keys N           distinct names (1000)\n"
          "      --hot              every check on one name\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds of load before measuring (1)\n"
          "  -W, --workload NAME    window|gcra|ping\n"
          "      --limit N          window: checks per window; gcra: count "
          "per period\n"
          "                         (1000000000)\n"
          "      --burst N          gcra burst (1000)\n"
          "      --period-ms N      window length, gcra period (1000)\n"
          "  -T, --threads N        client threads (min(connections, CPUs))\n"
          "  -S, --seed N           random seed (1)\n"
          "  -P, --pid PID          Redis pid: report its CPU time and RSS\n"
          "  -l, --label NAME       server name echoed in the output (redis)\n"
          "      --kv               one key=value line on stdout\n"
          "  -h, --help\n"
          "window: one check = INCR name + PEXPIRE name PERIOD NX, "
          "pipelined;\n"
          "gcra: one check = EVALSHA of a GCRA script (redis-cell's "
          "semantics).\n"
          "Exit 0 when every reply was as expected, 1 on errors, 2 on bad "
          "usage.\n", f);
}

/* Fills o from the command line; exits on bad usage. */
static void parse_options(int argc, char **argv, rb_opts *o)
{
    enum { OPT_KV = 256, OPT_HOT, OPT_LIMIT, OPT_BURST, OPT_PERIOD };
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "connections", 1, NULL, 'c' }, { "depth", 1, NULL, 'd' },
        { "keys", 1, NULL, 'k' }, { "duration", 1, NULL, 't' },
        { "warmup", 1, NULL, 'w' }, { "workload", 1, NULL, 'W' },
        { "threads", 1, NULL, 'T' }, { "seed", 1, NULL, 'S' },
        { "pid", 1, NULL, 'P' }, { "label", 1, NULL, 'l' },
        { "kv", 0, NULL, OPT_KV }, { "hot", 0, NULL, OPT_HOT },
        { "limit", 1, NULL, OPT_LIMIT }, { "burst", 1, NULL, OPT_BURST },
        { "period-ms", 1, NULL, OPT_PERIOD }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (rb_opts){ .host = "127.0.0.1", .port = "6379", .label = "redis",
                    .workload = RB_WINDOW, .conns = 1, .depth = 1,
                    .keys = 1000, .duration = 3, .warmup = 1, .seed = 1,
                    .limit = 1000000000, .burst = 1000, .period_ms = 1000 };
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:c:d:k:t:w:W:T:S:P:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'c':
            o->conns = bench_opt_uint("redis-bench", "--connections", optarg, 1, 10000);
            break;
        case 'd': o->depth = bench_opt_uint("redis-bench", "--depth", optarg, 1, 4096); break;
        case 'k': o->keys = bench_opt_uint("redis-bench", "--keys", optarg, 1, 10000000); break;
        case 't': o->duration = bench_opt_seconds("redis-bench", "--duration", optarg); break;
        case 'w': o->warmup = bench_opt_seconds("redis-bench", "--warmup", optarg); break;
        case 'W':
            if (strcmp(optarg, "window") == 0)
                o->workload = RB_WINDOW;
            else if (strcmp(optarg, "gcra") == 0)
                o->workload = RB_GCRA;
            else if (strcmp(optarg, "ping") == 0)
                o->workload = RB_PING;
            else {
                fprintf(stderr, "redis-bench: --workload: unknown workload "
                        "'%s'\n", optarg);
                exit(2);
            }
            break;
        case 'T': o->threads = bench_opt_uint("redis-bench", "--threads", optarg, 1, 256); break;
        case 'S': o->seed = bench_opt_uint("redis-bench", "--seed", optarg, 0, 0xffffffffu); break;
        case 'P':
            o->pid = (pid_t)bench_opt_uint("redis-bench", "--pid", optarg, 1, 0x7fffffff);
            break;
        case 'l': o->label = optarg; break;
        case OPT_KV: o->kv = true; break;
        case OPT_HOT: o->hot = true; break;
        case OPT_LIMIT:
            o->limit = bench_opt_uint("redis-bench", "--limit", optarg, 1, 0xffffffffu);
            break;
        case OPT_BURST:
            o->burst = bench_opt_uint("redis-bench", "--burst", optarg, 0, 0xfffffffeu);
            break;
        case OPT_PERIOD:
            o->period_ms = bench_opt_uint("redis-bench", "--period-ms", optarg, 1, 86400000);
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "redis-bench: unexpected argument '%s'\n",
                argv[optind]);
        exit(2);
    }
    if (o->hot)
        o->keys = 1;
    if (o->threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (o->threads > o->conns)
        o->threads = o->conns;
}

/* Parses the options and runs the chosen workload. */
int main(int argc, char **argv)
{
    rb_opts o;
    parse_options(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    if (o.workload == RB_PING)
        return rb_ping(&o);
    return rb_run(&o);
}
