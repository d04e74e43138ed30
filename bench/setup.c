/* setup.c: helpers the benchmark programs share outside the measured
 * interval: option values, connecting, pre-acquiring counters for the Get
 * and contended workloads, filling a server for the memory measurement,
 * and the Noop ping the run script uses to wait for a server to come up. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Requests written per round trip when pre-filling: enough to keep the
 * server busy, small enough that its answers fit the socket buffers. */
#define SETUP_BATCH 512

/* Parses an option's unsigned value; see bench.h. */
unsigned bench_opt_uint(const char *prog, const char *name, const char *s,
                        unsigned lo, unsigned hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s: bad value '%s' (%u..%u)\n", prog, name, s,
                lo, hi);
        exit(2);
    }
    return (unsigned)v;
}

/* Parses an option's seconds; see bench.h. */
double bench_opt_seconds(const char *prog, const char *name, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0) || v > 86400) {
        fprintf(stderr, "%s: %s: bad value '%s' (seconds)\n", prog, name, s);
        exit(2);
    }
    return v;
}

/* Writes key k's name; see bench.h. */
void bench_name(char *out, const char *prefix, uint32_t k)
{
    char tmp[32];
    /* prefix (<= 5 chars) padded with '-' then 10+ digits: always 16 bytes. */
    int n = snprintf(tmp, sizeof tmp, "%-5.5s-%010u", prefix, (unsigned)k);
    (void)n;
    for (int i = 0; i < 5; i++)
        if (tmp[i] == ' ')
            tmp[i] = '-';
    memcpy(out, tmp, BENCH_NAME_LEN);
}

/* Returns the next number of state's sequence; see bench.h. */
uint32_t bench_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* Reads the monotonic clock; see bench.h. */
uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps for seconds; see bench.h. */
void bench_sleep(double seconds)
{
    struct timespec ts = { .tv_sec = (time_t)seconds,
                           .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int bench_connect(const char *host, const char *port, bool quiet)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "counter-bench: %s:%s: %s\n", host, port,
                gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (!quiet)
            fprintf(stderr, "counter-bench: connect %s:%s: %s\n", host, port,
                    strerror(err));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Writes all of buf[0..len) to the blocking fd. */
static bool setup_write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* Appends what one recv on fd returns to buf[*have, cap), retrying on
 * EINTR; false on EOF or a read error. */
static bool setup_recv_some(int fd, uint8_t *buf, size_t cap, size_t *have)
{
    for (;;) {
        ssize_t n = recv(fd, buf + *have, cap - *have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        *have += (size_t)n;
        return true;
    }
}

/* Reads `want` responses from fd; counts the non-OK ones into *bad.
 * False on EOF, a read error or a malformed response. */
static bool setup_read_answers(int fd, uint32_t want, long *bad)
{
    static uint8_t buf[1 << 16];
    size_t have = 0;
    while (want > 0) {
        if (!setup_recv_some(fd, buf, sizeof buf, &have))
            return false;
        size_t off = 0;
        cnt_response res;
        cnt_decode_result r = CNT_DECODE_NEED_MORE;
        while (want > 0 &&
               (r = cnt_response_decode(buf + off, have - off, &res)) ==
               CNT_DECODE_OK) {
            if (res.status != CNT_STATUS_OK)
                (*bad)++;
            off += res.size;
            want--;
        }
        if (want > 0 && r == CNT_DECODE_CLOSE)
            return false;
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    return true;
}

long bench_acquire_all(int fd, const char *prefix, uint32_t n,
                       uint32_t resources, uint32_t maximum)
{
    static uint8_t out[SETUP_BATCH * (CNT_HEADER_SIZE + 10 + BENCH_NAME_LEN)];
    long bad = 0;
    for (uint32_t k = 0; k < n;) {
        size_t len = 0;
        uint32_t batch = 0;
        for (; batch < SETUP_BATCH && k < n; batch++, k++) {
            char name[BENCH_NAME_LEN];
            bench_name(name, prefix, k);
            len += cnt_encode_acquire(out + len, k, resources, maximum, name,
                                      BENCH_NAME_LEN);
        }
        if (!setup_write_all(fd, out, len) ||
            !setup_read_answers(fd, batch, &bad))
            return -1;
    }
    return bad;
}

bool bench_noop(int fd)
{
    uint8_t req[CNT_HEADER_SIZE];
    size_t len = cnt_encode_simple(req, CNT_OP_NOOP, 0x4e4f4f50u);
    long bad = 0;
    return setup_write_all(fd, req, len) && setup_read_answers(fd, 1, &bad) &&
           bad == 0;
}

bool bench_print_stats(int fd, const char *label)
{
    uint8_t req[CNT_HEADER_SIZE];
    size_t len = cnt_encode_simple(req, CNT_OP_STATS, 0x53544154u);
    static uint8_t buf[1 << 16];
    size_t have = 0;
    cnt_response res;
    cnt_decode_result r;
    if (!setup_write_all(fd, req, len))
        return false;
    while ((r = cnt_response_decode(buf, have, &res)) ==
           CNT_DECODE_NEED_MORE) {
        if (have == sizeof buf || !setup_recv_some(fd, buf, sizeof buf, &have))
            return false;
    }
    if (r == CNT_DECODE_CLOSE || res.status != CNT_STATUS_OK)
        return false;
    printf("server=%s", label);
    size_t pos = 0;
    const char *name, *value;
    uint16_t nl, vl;
    while (cnt_stats_next(&res, &pos, &name, &nl, &value, &vl))
        printf(" %.*s=%.*s", (int)nl, name, (int)vl, value);
    printf("\n");
    return true;
}
