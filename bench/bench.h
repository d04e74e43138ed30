/* bench.h: shared declarations of counter-bench: the run options, the
 * workloads, counter names and the blocking socket helpers used to set a
 * server up before the measured load starts. */
#ifndef CNT_BENCH_BENCH_H
#define CNT_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Every counter name the benchmark uses is this long, so request and
 * response sizes are the same for every server measured. */
#define BENCH_NAME_LEN 16

typedef enum bench_workload {
    BENCH_WL_PAIR,          /* Acquire + Release pairs on random names */
    BENCH_WL_GET,           /* Get on names a holder connection keeps */
    BENCH_WL_ONE,           /* pairs, every connection on one counter */
    BENCH_WL_CONTENDED,     /* Acquire refused (0x21) about half the time */
    BENCH_WL_WINDOW,        /* Window_check (0x34) on random names */
    BENCH_WL_GCRA,          /* Gcra_check (0x35) on random names */
    BENCH_WL_THROTTLE,      /* Throttle (0x41) of 1 unit, random tenants */
    BENCH_WL_FAIRNESS,      /* tenant A (a reserve) against B flooding,
                               allowed units per second */
    BENCH_WL_FILL,          /* acquire N distinct names on one connection */
    BENCH_WL_PING,          /* wait until the server answers a Noop */
    BENCH_WL_STATS,         /* print the server's Stats as key=value */
    BENCH_WL_TTL,           /* Ttl_insert, Ttl_query, Ttl_update (quota
                               +1) in turn on random names (0x30-0x32) */
    BENCH_WL_THROTTR        /* the same three through the Throttr port:
                               INSERT, QUERY, UPDATE */
} bench_workload;

typedef struct bench_opts {
    const char *host;
    const char *port;
    unsigned conns;
    unsigned depth;
    unsigned keys;
    unsigned threads;
    double duration;        /* seconds measured */
    double warmup;          /* seconds of load before measuring */
    bench_workload workload;
    uint64_t seed;
    pid_t pid;              /* server to read CPU and RSS of; 0 = none */
    bool kv;                /* one key=value line instead of the report */
    bool progress;          /* per-second progress on stderr */
    bool hold;              /* fill: keep the connection until a signal */
    bool hot;               /* window, gcra, throttle: every check on one
                               name */
    bool accuracy;          /* window, gcra: paced checks on one fresh name
                               instead of the closed loop */
    uint32_t limit;         /* window: limit per window; gcra: count per
                               period */
    uint32_t burst;         /* gcra */
    uint8_t slots;          /* window */
    uint64_t period_ns;     /* window length; gcra period */
    double offered;         /* accuracy: checks per second sent */
    uint32_t capacity;      /* fairness: the node's capacity, units/s (as
                               the server was configured: echoed) */
    uint32_t reserve;       /* fairness: tenant A's reserve (echoed) */
    unsigned b_conns;       /* fairness: tenant B's connections */
    unsigned a_depth;       /* fairness: depth of tenant A's connections */
    uint64_t sec0;          /* per-second counts: first second (of the
                               monotonic clock) counted, and how many */
    unsigned nsec;
    unsigned value_size;    /* throttr: bytes of the protocol's numbers */
    const char *label;      /* server name echoed in the output */
    char *names;            /* keys x BENCH_NAME_LEN bytes, built once so
                               the closed loop formats nothing */
} bench_opts;

/* Parses option name's value s as an unsigned number in [lo, hi]; on
 * anything else prints "PROG: NAME: bad value" and exits 2 (bad usage). */
unsigned bench_opt_uint(const char *prog, const char *name, const char *s,
                        unsigned lo, unsigned hi);

/* Parses option name's value s as seconds (0 to a day, fractions
 * allowed); on anything else prints "PROG: NAME: bad value" and exits 2. */
double bench_opt_seconds(const char *prog, const char *name, const char *s);

/* Writes the BENCH_NAME_LEN-byte name of key number k with a prefix of at
 * most 5 characters ("bench", "fill"). */
void bench_name(char *out, const char *prefix, uint32_t k);

/* xorshift64*: a cheap generator of the closed loops, one state per
 * connection, seeded from the run seed so that a run can be repeated. */
uint32_t bench_rand(uint64_t *state);

/* Sleeps for seconds (fractions allowed), resuming after signals. */
void bench_sleep(double seconds);

/* Returns CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Connects a blocking TCP socket to host:port with TCP_NODELAY; -1 and a
 * message on stderr on failure. */
int bench_connect(const char *host, const char *port, bool quiet);

/* Acquires `resources` (against `maximum`) of every name prefix+0..n-1 on
 * fd, pipelined; returns the number of non-OK answers, or -1 on a
 * connection failure. */
long bench_acquire_all(int fd, const char *prefix, uint32_t n,
                       uint32_t resources, uint32_t maximum);

/* Sends a Noop on fd and waits for its answer; true when it is OK. */
bool bench_noop(int fd);

/* Asks fd for Stats and prints them as one "server=label name=value..."
 * line on stdout; false on a failure. */
bool bench_print_stats(int fd, const char *label);


#endif
