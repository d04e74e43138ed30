/* loadgen.c: the measured closed loop of counter-bench. Client threads each
 * own a share of the connections and drive them with epoll; every
 * connection keeps `depth` requests in flight, and each answer immediately
 * causes the next request of its slot, so the load follows the server. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "bench/loadgen.h"
#include "bench/net.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/throttr.h"

/* Longest request of the closed loop: a Gcra_check (a Throttle is
 * shorter). */
#define LOAD_REQ_MAX (CNT_HEADER_SIZE + CNT_GCRA_FIXED + BENCH_NAME_LEN)
#define LOAD_IN_CAP (1u << 16)
/* Maximum passed with pair Acquires: never the reason for a refusal. */
#define LOAD_MAX_ANY 0xffffffffu

static atomic_int load_phase;

/* One request stream inside a connection: it has exactly one request in
 * flight; for pairs it remembers which counter to release next, for the
 * TTL mixes which of insert, query and update comes next and (Throttr)
 * the type of the request in flight, which frames its answer. */
typedef struct load_slot {
    bool release_next;
    uint8_t step;
    uint8_t type;
    uint32_t key;
} load_slot;

/* The TTL mixes' records: quota 100, 200 ms to live (numbers that fit
 * every Throttr value size), so names expire and are inserted again. */
#define LOAD_TTL_QUOTA 100u
#define LOAD_TTL_MS 200u

/* Writes the next request of a TTL mix slot (binary opcodes or Throttr). */
static size_t load_ttl_request(uint8_t *out, const bench_opts *o,
                               load_slot *slot, uint32_t opaque,
                               const char *name)
{
    uint8_t step = slot->step;
    slot->step = (uint8_t)((step + 1) % 3);
    if (o->workload == BENCH_WL_THROTTR) {
        unsigned v = o->value_size;
        slot->type = (uint8_t)(CNT_THROTTR_INSERT + step);
        if (step == 0)
            return cnt_throttr_encode_insert(out, v, LOAD_TTL_QUOTA,
                                             CNT_THROTTR_TTL_NS + 2,
                                             LOAD_TTL_MS, name,
                                             BENCH_NAME_LEN);
        if (step == 1)
            return cnt_throttr_encode_query(out, name, BENCH_NAME_LEN);
        return cnt_throttr_encode_update(out, v, CNT_THROTTR_ATTR_QUOTA,
                                         CNT_THROTTR_INCREASE, 1, name,
                                         BENCH_NAME_LEN);
    }
    if (step == 0)
        return cnt_encode_ttl_insert(out, opaque, LOAD_TTL_QUOTA,
                                     LOAD_TTL_MS, CNT_UNIT_MS, name,
                                     BENCH_NAME_LEN);
    if (step == 1)
        return cnt_encode_ttl_query(out, opaque, name, BENCH_NAME_LEN);
    return cnt_encode_ttl_update(out, opaque, CNT_TTL_ATTR_QUOTA,
                                 CNT_TTL_INCREASE, 0, 1, name,
                                 BENCH_NAME_LEN);
}

/* Appends the next request of slot s to c's output. */
static void load_conn_queue(load_conn *c, const bench_opts *o, uint32_t s,
                            uint64_t now)
{
    load_slot *slot = &c->slots[s];
    const char *name;
    uint8_t *out = c->out + c->out_len;
    uint32_t opaque = c->sent++;
    size_t n;

    if (slot->release_next) {
        name = o->names + (size_t)slot->key * BENCH_NAME_LEN;
        n = cnt_encode_release(out, opaque, 1, name, BENCH_NAME_LEN);
        slot->release_next = false;
    } else {
        bool ttl = o->workload == BENCH_WL_TTL ||
                   o->workload == BENCH_WL_THROTTR;
        /* A TTL mix keeps its name for the query and update after the
         * insert. */
        if (!ttl || slot->step == 0)
            slot->key = o->keys > 1 ? bench_rand(&c->rng) % o->keys : 0;
        name = o->names + (size_t)slot->key * BENCH_NAME_LEN;
        if (ttl) {
            n = load_ttl_request(out, o, slot, opaque, name);
        } else if (o->workload == BENCH_WL_GET) {
            n = cnt_encode_get(out, opaque, name, BENCH_NAME_LEN);
        } else if (o->workload == BENCH_WL_WINDOW) {
            n = cnt_encode_window_check(out, opaque, 0, o->slots, o->limit,
                                        1, o->period_ns, name,
                                        BENCH_NAME_LEN);
        } else if (o->workload == BENCH_WL_GCRA) {
            n = cnt_encode_gcra_check(out, opaque, 0, o->burst, o->limit, 1,
                                      o->period_ns, name, BENCH_NAME_LEN);
        } else if (o->workload == BENCH_WL_THROTTLE ||
                   o->workload == BENCH_WL_FAIRNESS) {
            n = cnt_encode_throttle(out, opaque, 1, name, BENCH_NAME_LEN);
        } else {
            uint32_t max = LOAD_MAX_ANY;
            /* Contended: the holder keeps at least 1 of every counter, so
             * a maximum of 1 is refused and the largest one admits. */
            if (o->workload == BENCH_WL_CONTENDED)
                max = (bench_rand(&c->rng) & 1) ? 1 : LOAD_MAX_ANY;
            n = cnt_encode_acquire(out, opaque, 1, max, name, BENCH_NAME_LEN);
        }
    }
    c->out_len += n;
    unsigned tail = (c->fifo_head + c->fifo_count) % o->depth;
    c->fifo_slot[tail] = s;
    c->fifo_time[tail] = now;
    c->fifo_count++;
}

/* Counts a Throttle answer in the second (of the client's monotonic
 * clock, the clock the server's seconds come from too) in which its
 * request was sent, whatever the phase (the fairness run reports whole
 * seconds), and keeps the largest `used` (the tenant's units in the
 * server's second, after the call) answered for that second. */
static void load_count_second(load_thread *t, const bench_opts *o,
                              const cnt_response *res, uint64_t sent_at)
{
    uint64_t sec = sent_at / 1000000000u;
    if (sec < o->sec0 || sec - o->sec0 >= o->nsec)
        return;
    uint64_t i = sec - o->sec0;
    t->sec_sent[i]++;
    cnt_throttle_answer ans;
    if (res->status != CNT_STATUS_OK || !cnt_parse_throttle_answer(res, &ans))
        return;
    if (ans.state == CNT_TSTATE_ALLOWED)
        t->sec_allowed[i]++;
    if (ans.used > t->sec_used[i])
        t->sec_used[i] = ans.used;
}

/* Classifies one answer and queues the next request of its slot. */
static void load_conn_answer(load_conn *c, load_thread *t, const bench_opts *o,
                             const cnt_response *res, uint64_t now,
                             bool measuring)
{
    uint32_t s = c->fifo_slot[c->fifo_head];
    uint64_t sent_at = c->fifo_time[c->fifo_head];
    c->fifo_head = (c->fifo_head + 1) % o->depth;
    c->fifo_count--;
    if (res->magic != CNT_MAGIC_RESPONSE) {
        c->failed = "packet that is not an answer (magic not 0x91)";
        return;
    }
    if (res->opaque != c->received++) {
        c->failed = "answer out of order (opaque mismatch)";
        return;
    }
    if (res->opcode == CNT_OP_ACQUIRE && res->status == CNT_STATUS_OK &&
        o->workload != BENCH_WL_GET)
        c->slots[s].release_next = true;
    bool throttle = o->workload == BENCH_WL_THROTTLE ||
                    o->workload == BENCH_WL_FAIRNESS;
    if (throttle && o->nsec > 0)
        load_count_second(t, o, res, sent_at);
    if (measuring) {
        c->ops++;
        cnt_hist_record(&t->hist, now - sent_at);
        cnt_check_result check;
        if (res->status == CNT_STATUS_RESOURCE_NOT_AVAILABLE &&
            o->workload == BENCH_WL_CONTENDED)
            t->refused++;
        else if (o->workload == BENCH_WL_TTL &&
                 (res->status == CNT_STATUS_EXISTS ||
                  res->status == CNT_STATUS_NOT_FOUND))
            t->refused++;
        else if (res->status != CNT_STATUS_OK) {
            t->errors++;
            t->last_error = res->status;
        } else if (o->workload == BENCH_WL_WINDOW ||
                   o->workload == BENCH_WL_GCRA) {
            if (!cnt_parse_check_answer(res, &check)) {
                t->errors++;
                t->last_error = res->status;
            } else if (check.state == CNT_CHECK_ALLOWED) {
                t->allowed++;
            } else {
                t->limited++;
            }
        } else if (throttle) {
            cnt_throttle_answer ans;
            if (!cnt_parse_throttle_answer(res, &ans)) {
                t->errors++;
                t->last_error = res->status;
            } else if (ans.state == CNT_TSTATE_ALLOWED) {
                t->allowed++;
            } else {
                t->limited++;
            }
        }
    }
    load_conn_queue(c, o, s, now);
}

/* Takes the Throttr answers at the front of c's input, in request order:
 * a failure byte is counted as refused (an insert of a live name, an
 * update of an expired one), never as an error. Returns the bytes used. */
static size_t load_throttr_answers(load_conn *c, load_thread *t,
                                   const bench_opts *o, uint64_t now,
                                   bool measuring)
{
    size_t off = 0;
    while (c->fifo_count > 0) {
        uint32_t s = c->fifo_slot[c->fifo_head];
        bool ok;
        uint64_t q, ttl;
        uint8_t type;
        size_t size = 0, need = 0;
        cnt_throttr_decode_result r = cnt_throttr_decode_answer(
            c->in + off, c->in_len - off, o->value_size, c->slots[s].type,
            &ok, &q, &type, &ttl, &size, &need);
        if (r == CNT_THROTTR_NEED_MORE)
            break;
        if (r != CNT_THROTTR_OK) {
            c->failed = "not a Throttr answer";
            return off;
        }
        uint64_t sent_at = c->fifo_time[c->fifo_head];
        c->fifo_head = (c->fifo_head + 1) % o->depth;
        c->fifo_count--;
        c->received++;
        if (measuring) {
            c->ops++;
            cnt_hist_record(&t->hist, now - sent_at);
            if (!ok)
                t->refused++;
        }
        off += size;
        load_conn_queue(c, o, s, now);
    }
    if (off < c->in_len && c->fifo_count == 0)
        c->failed = "answer to no request";
    return off;
}

/* Writes as much pending output as the socket takes. */
static void load_conn_flush(load_conn *c)
{
    if (!cnt_bench_flush(c->fd, c->out, &c->out_off, &c->out_len))
        c->failed = "write failed";
}

/* Reads what the socket has and answers every complete response in it. */
static void load_conn_read(load_conn *c, load_thread *t, const bench_opts *o)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, LOAD_IN_CAP - c->in_len, 0);
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
        bool measuring = atomic_load_explicit(&load_phase,
                                              memory_order_relaxed) ==
                         LOAD_MEASURE;
        /* Room for the answers' follow-up requests: compact first. */
        if (c->out_off > 0) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        size_t off = 0;
        cnt_response res;
        cnt_decode_result r = CNT_DECODE_NEED_MORE;
        if (o->workload == BENCH_WL_THROTTR) {
            off = load_throttr_answers(c, t, o, now, measuring);
            if (c->failed != NULL)
                return;
        }
        while (o->workload != BENCH_WL_THROTTR &&
               (r = cnt_response_decode(c->in + off, c->in_len - off,
                                        &res)) == CNT_DECODE_OK) {
            if (c->fifo_count == 0) {
                c->failed = "answer to no request";
                return;
            }
            load_conn_answer(c, t, o, &res, now, measuring);
            if (c->failed != NULL)
                return;
            off += res.size;
        }
        if (r == CNT_DECODE_CLOSE) {
            c->failed = "bad response magic";
            return;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        if (c->in_len == LOAD_IN_CAP) {
            c->failed = "response larger than the input buffer";
            return;
        }
        if ((size_t)n < LOAD_IN_CAP / 2)
            return;         /* drained, most likely: save a recv */
    }
}

/* Updates the epoll interest of c: output pending means EPOLLOUT too. */
static void load_conn_interest(load_thread *t, load_conn *c)
{
    bool want = c->out_off < c->out_len;
    if (want == c->want_out)
        return;
    struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0),
                              .data.ptr = c };
    epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

/* Closes a failed connection and says why, once. */
static void load_conn_fail(load_thread *t, load_conn *c)
{
    fprintf(stderr, "counter-bench: connection %u: %s\n", c->index, c->failed);
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    t->failures++;
}

/* Body of a client thread: fills every pipeline, then loops on epoll. */
void *load_thread_main(void *arg)
{
    load_thread *t = arg;
    const bench_opts *o = t->opts;
    uint64_t now = bench_now_ns();
    for (unsigned i = 0; i < t->nconns; i++) {
        load_conn *c = t->conns[i];
        for (uint32_t s = 0; s < o->depth; s++)
            load_conn_queue(c, o, s, now);
        load_conn_flush(c);
        load_conn_interest(t, c);
    }
    struct epoll_event evs[64];
    while (atomic_load_explicit(&load_phase, memory_order_relaxed) != LOAD_STOP) {
        int n = epoll_wait(t->epfd, evs, 64, 50);
        for (int i = 0; i < n; i++) {
            load_conn *c = evs[i].data.ptr;
            if (c->fd < 0)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                load_conn_read(c, t, o);
            if (c->failed == NULL)
                load_conn_flush(c);
            if (c->failed != NULL) {
                load_conn_fail(t, c);
                continue;
            }
            load_conn_interest(t, c);
        }
        uint64_t ops = t->hist.count;
        atomic_store_explicit(&t->ops_live, ops, memory_order_relaxed);
    }
    return NULL;
}

void load_set_phase(load_phase_t phase)
{
    atomic_store_explicit(&load_phase, (int)phase, memory_order_relaxed);
}

load_conn *load_conn_new(unsigned index, int fd, const bench_opts *o)
{
    load_conn *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->index = index;
    c->fd = fd;
    c->rng = (o->seed + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)(index + 1) * 0xD1B54A32D192ED03ull;
    if (c->rng == 0)
        c->rng = 1;
    c->out = malloc((size_t)o->depth * LOAD_REQ_MAX);
    c->in = malloc(LOAD_IN_CAP);
    c->slots = calloc(o->depth, sizeof *c->slots);
    c->fifo_slot = calloc(o->depth, sizeof *c->fifo_slot);
    c->fifo_time = calloc(o->depth, sizeof *c->fifo_time);
    int fl = fcntl(fd, F_GETFL);
    if (c->out == NULL || c->in == NULL || c->slots == NULL ||
        c->fifo_slot == NULL || c->fifo_time == NULL || fl < 0 ||
        fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        c->fd = -1;
        load_conn_free(c);
        return NULL;
    }
    return c;
}

void load_conn_free(load_conn *c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    free(c->in);
    free(c->slots);
    free(c->fifo_slot);
    free(c->fifo_time);
    free(c);
}
