/* loadgen.h: the closed-loop load of counter-bench: connections with
 * `depth` request slots each, and the client threads that drive them. */
#ifndef CNT_BENCH_LOADGEN_H
#define CNT_BENCH_LOADGEN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/bench.h"
#include "bench/hist.h"

/* Phases of a run, set by the main thread and followed by the clients:
 * answers count only while measuring. */
typedef enum load_phase_t { LOAD_WARMUP, LOAD_MEASURE, LOAD_STOP } load_phase_t;

typedef struct load_slot load_slot;

typedef struct load_conn {
    unsigned index;
    int fd;
    uint64_t rng;
    uint8_t *out;           /* requests not yet written */
    size_t out_off, out_len;
    uint8_t *in;            /* answers not yet complete */
    size_t in_len;
    load_slot *slots;
    uint32_t *fifo_slot;    /* requests in flight, oldest first: slot */
    uint64_t *fifo_time;    /* ... and when it was queued (ns) */
    unsigned fifo_head, fifo_count;
    uint32_t sent, received;    /* opaques: answers must come in order */
    uint64_t ops;           /* answers while measuring */
    bool want_out;
    const char *failed;     /* why the connection broke; NULL while fine */
} load_conn;

typedef struct load_thread {
    pthread_t tid;
    int epfd;
    const bench_opts *opts;
    load_conn **conns;
    unsigned nconns;
    cnt_hist hist;          /* latency of measured answers, ns */
    uint64_t errors;        /* unexpected non-OK statuses */
    uint64_t refused;       /* 0x21 in the contended workload */
    uint64_t allowed;       /* window, gcra: checks answered allowed */
    uint64_t limited;       /* ... and limited or never (throttle:
                               throttled) */
    uint64_t *sec_sent;     /* opts->nsec > 0: requests answered, per
                               second of their send time from sec0 */
    uint64_t *sec_allowed;  /* ... and of them, throttle answers allowed */
    uint32_t *sec_used;     /* ... and the largest `used` they answered */
    unsigned last_error;
    unsigned failures;      /* connections lost */
    _Atomic uint64_t ops_live;  /* for progress reports */
} load_thread;

/* Sets the phase every client thread follows. */
void load_set_phase(load_phase_t phase);

/* Wraps a connected socket (made non-blocking here); NULL on no memory. */
load_conn *load_conn_new(unsigned index, int fd, const bench_opts *o);

/* Closes and frees a connection. */
void load_conn_free(load_conn *c);

/* Thread body: drives t's connections until the phase is LOAD_STOP. */
void *load_thread_main(void *arg);

#endif
