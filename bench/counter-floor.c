/* counter-floor.c: the benchmark's "floor": a stateless counter-protocol
 * server that frames requests with the project's decoder and answers OK
 * with the same response sizes a real server sends (Get and Acquire: a u32
 * body; Window_check and Gcra_check: a 32-byte check answer saying
 * allowed; Throttle: a 24-byte throttle answer saying allowed; Release,
 * Noop: empty), so a report can show what this machine can do at all.
 * Not a counter server: it keeps no counters, no limits and no tenants.
 * With -T N it frames the Throttr v5 protocol instead (values of N bytes)
 * and answers every request with success: a status byte 0x01, and for a
 * QUERY a record of the size a real answer has (quota 1, seconds, 1 left);
 * an unknown request type closes the connection, as the Throttr front
 * does. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/net.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/throttr.h"

#define FLOOR_IN_CAP (CNT_REQUEST_MAX + (1u << 16))
#define FLOOR_OUT_CAP (1u << 18)

typedef struct floor_conn {
    int fd;
    uint8_t in[FLOOR_IN_CAP];
    size_t in_len;
    uint64_t skip;          /* declared body bytes still to discard */
    uint8_t out[FLOOR_OUT_CAP];
    size_t out_off, out_len;
    bool want_out;
    bool closing;
} floor_conn;

typedef struct floor_thread {
    pthread_t tid;
    int epfd;
    int lfd;
} floor_thread;

/* Accepted connections are dealt round-robin over every thread's epoll
 * set (whichever thread accepted), so each thread serves the same number
 * of connections and per-connection fairness reflects the machine. */
static floor_thread *floor_threads;
static unsigned floor_nthreads;
static atomic_uint floor_next;
/* 0: the counter protocol; else the Throttr protocol's value size. */
static unsigned floor_throttr;

/* The Throttr framing: answers every whole request with success. */
static size_t floor_throttr_process(floor_conn *c)
{
    size_t off = 0;
    while (!c->closing &&
           FLOOR_OUT_CAP - c->out_len >= CNT_THROTTR_ANSWER_MAX) {
        cnt_throttr_request r;
        size_t need = 0;
        cnt_throttr_decode_result d = cnt_throttr_decode(
            c->in + off, c->in_len - off, floor_throttr, &r, &need);
        if (d == CNT_THROTTR_NEED_MORE)
            break;
        if (d == CNT_THROTTR_BAD_FRAMING) {
            c->closing = true;
            break;
        }
        uint8_t *out = c->out + c->out_len;
        c->out_len += r.type == CNT_THROTTR_QUERY
            ? cnt_throttr_encode_query_answer(out, floor_throttr, 1,
                                              CNT_THROTTR_TTL_NS + 3, 1)
            : cnt_throttr_encode_status(out, true);
        off += r.size;
    }
    return off;
}

/* Writes the answer a real server gives to a successful request. */
static size_t floor_answer(uint8_t *out, const cnt_request *req)
{
    switch (req->opcode) {
    case CNT_OP_GET:
        return cnt_encode_u32(out, req->opcode, req->opaque, 1);
    case CNT_OP_ACQUIRE:
        return cnt_encode_u32(out, req->opcode, req->opaque, req->resources);
    case CNT_OP_WINDOW_CHECK:
    case CNT_OP_GCRA_CHECK: {
        /* Allowed, with the figures a real answer would carry. */
        cnt_check_result res = { .state = CNT_CHECK_ALLOWED,
                                 .limit = req->limit,
                                 .remaining = req->limit > 0 ? req->limit - 1
                                                             : 0,
                                 .used = 1,
                                 .reset_after_ns = req->period_ns };
        return cnt_encode_check_answer(out, req->opcode, req->opaque, &res);
    }
    case CNT_OP_THROTTLE: {
        /* Allowed, no limit: what a node without capacity answers. */
        cnt_throttle_answer ans = { .state = CNT_TSTATE_ALLOWED,
                                    .reason = CNT_TREASON_NONE,
                                    .used = req->units,
                                    .remaining = 0xffffffffu };
        return cnt_encode_throttle_answer(out, req->opaque, &ans);
    }
    default:        /* Release, Noop; Stats and Dump answer "nothing" */
        return cnt_encode_empty(out, req->opcode, req->opaque);
    }
}

/* Answers every complete request buffered, as long as output has room. */
static void floor_conn_process(floor_conn *c)
{
    size_t off = 0;
    if (floor_throttr != 0) {
        off = floor_throttr_process(c);
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        return;
    }
    while (!c->closing) {
        if (c->skip > 0) {
            size_t d = c->in_len - off < c->skip ? c->in_len - off
                                                 : (size_t)c->skip;
            off += d;
            c->skip -= d;
            if (c->skip > 0)
                break;
        }
        if (FLOOR_OUT_CAP - c->out_len < CNT_ERROR_RESPONSE_MAX)
            break;
        cnt_request req;
        cnt_decode_result r = cnt_request_decode(c->in + off, c->in_len - off,
                                                 &req);
        if (r == CNT_DECODE_NEED_MORE)
            break;
        if (r == CNT_DECODE_CLOSE) {
            c->closing = true;
            break;
        }
        uint8_t *out = c->out + c->out_len;
        c->out_len += r == CNT_DECODE_OK
                          ? floor_answer(out, &req)
                          : cnt_encode_error(out, req.opcode, req.status,
                                             req.opaque);
        /* A body the request needs no more of may not be buffered yet. */
        size_t avail = c->in_len - off;
        if (req.size > avail) {
            c->skip = req.size - avail;
            off = c->in_len;
        } else {
            off += (size_t)req.size;
        }
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
}

/* Writes pending output; false when the connection is broken. */
static bool floor_conn_flush(floor_conn *c)
{
    return cnt_bench_flush(c->fd, c->out, &c->out_off, &c->out_len);
}

/* Reads once and answers; false when the connection should go away. */
static bool floor_conn_read(floor_conn *c)
{
    ssize_t n = recv(c->fd, c->in + c->in_len, FLOOR_IN_CAP - c->in_len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
    if (n <= 0)
        return false;
    c->in_len += (size_t)n;
    floor_conn_process(c);
    return true;
}

/* Handles one epoll event of c; false when c must be closed. */
static bool floor_conn_event(floor_thread *t, floor_conn *c, uint32_t events)
{
    if ((events & EPOLLIN) && !floor_conn_read(c))
        return false;
    if (!floor_conn_flush(c))
        return false;
    if (c->out_len == 0 && (events & EPOLLOUT)) {
        /* Drained after back-pressure: answer what waited, flush again. */
        floor_conn_process(c);
        if (!floor_conn_flush(c))
            return false;
    }
    if (c->closing && c->out_len == 0)
        return false;
    /* While answers are stuck, stop reading: that is the back-pressure. */
    bool want = c->out_len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = { .events = want ? EPOLLOUT : EPOLLIN,
                                  .data.ptr = c };
        epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    return true;
}

/* Accepts what the shared listener has and deals the connections out. */
static void floor_accept(floor_thread *t)
{
    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;     /* EAGAIN, or out of descriptors: try next event */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        floor_conn *c = calloc(1, sizeof *c);
        if (c != NULL)
            c->fd = fd;
        unsigned owner = atomic_fetch_add(&floor_next, 1) % floor_nthreads;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (c == NULL ||
            epoll_ctl(floor_threads[owner].epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            free(c);
            close(fd);
        }
    }
}

/* Thread body: one epoll set, the shared listener (exclusive wake-ups)
 * and the connections this thread accepted. */
static void *floor_thread_main(void *arg)
{
    floor_thread *t = arg;
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(t->epfd, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                floor_accept(t);
                continue;
            }
            floor_conn *c = evs[i].data.ptr;
            if (!floor_conn_event(t, c, evs[i].events)) {
                epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
            }
        }
    }
    return NULL;
}

/* Opens the listening socket; prints the bound port. */
static int floor_listen(const char *addr, const char *port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(addr, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "counter-floor: %s: %s\n", addr, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
        listen(fd, 1024) < 0) {
        fprintf(stderr, "counter-floor: listen on %s port %s: %s\n", addr,
                port, strerror(errno));
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    unsigned bound = ss.ss_family == AF_INET6
                         ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    printf("port=%u\n", bound);
    fflush(stdout);
    return fd;
}

/* Prints the option summary. */
static void floor_usage(FILE *f)
{
    fputs("usage: counter-floor [-l ADDR] [-p PORT] [-t THREADS] [-T N]\n"
          "  Stateless counter-protocol server answering OK to everything,\n"
          "  for benchmarks. Listens on ADDR (127.0.0.1), PORT (0 = any free\n"
          "  port) with THREADS epoll threads (2); prints \"port=N\" once\n"
          "  listening. Runs until killed. With -T N (1, 2, 4 or 8) it\n"
          "  speaks the Throttr v5 protocol with N-byte values instead.\n",
          f);
}

/* Parses the options, listens and serves until killed. */
int main(int argc, char **argv)
{
    const char *addr = "127.0.0.1", *port = "0";
    unsigned threads = 2;
    int ch;
    while ((ch = getopt(argc, argv, "l:p:t:T:h")) != -1) {
        switch (ch) {
        case 'T':
            floor_throttr = (unsigned)strtoul(optarg, NULL, 10);
            if (!cnt_throttr_value_size_ok(floor_throttr)) {
                fprintf(stderr, "counter-floor: -T: bad value '%s' (1, 2, "
                        "4 or 8)\n", optarg);
                return 2;
            }
            break;
        case 'l': addr = optarg; break;
        case 'p': port = optarg; break;
        case 't':
            threads = (unsigned)strtoul(optarg, NULL, 10);
            if (threads < 1 || threads > 64) {
                fprintf(stderr, "counter-floor: -t: bad value '%s' (1..64)\n",
                        optarg);
                return 2;
            }
            break;
        case 'h': floor_usage(stdout); return 0;
        default: floor_usage(stderr); return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = floor_listen(addr, port);
    if (lfd < 0)
        return 1;
    floor_thread *th = calloc(threads, sizeof *th);
    if (th == NULL)
        return 1;
    floor_threads = th;
    floor_nthreads = threads;
    /* Every epoll set exists before any thread can deal a connection. */
    for (unsigned i = 0; i < threads; i++) {
        th[i].lfd = lfd;
        th[i].epfd = epoll_create1(EPOLL_CLOEXEC);
        if (th[i].epfd < 0) {
            fprintf(stderr, "counter-floor: epoll: %s\n", strerror(errno));
            return 1;
        }
    }
    for (unsigned i = 0; i < threads; i++) {
        struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE,
                                  .data.ptr = NULL };
        if (epoll_ctl(th[i].epfd, EPOLL_CTL_ADD, lfd, &ev) < 0 ||
            pthread_create(&th[i].tid, NULL, floor_thread_main, &th[i]) != 0) {
            fprintf(stderr, "counter-floor: thread %u: %s\n", i, strerror(errno));
            return 1;
        }
    }
    pthread_join(th[0].tid, NULL);
    return 0;
}
