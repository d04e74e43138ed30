/* test_server.c: connections, workers, the listener and the server over
 * real loopback sockets (port 0, its own threads): answers, pipelining,
 * Dump to a slow reader, release on every kind of connection end,
 * max_connections, busy port, IPv6, running out of fds, shutdown; many
 * connections listing leases at once across both workers. */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/server/server.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Log lines the server wrote, for tests that check a message. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[8192];

/* Test log sink: appends every line. */
static void log_write(void *ctx, cnt_log_level level, const char *line)
{
    (void)ctx;
    (void)level;
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
}

static const cnt_logger test_logger = {log_write, NULL, NULL};

/* A running server and what it serves. */
typedef struct fixture {
    cnt_server_config cfg;
    cnt_table *table;
    cnt_stats *stats;
    cnt_gc *gc;
    cnt_server *server;
} fixture;

/* The configuration most tests use: 127.0.0.1, kernel-chosen port, two
 * workers. */
static cnt_server_config fixture_config(unsigned max_connections)
{
    cnt_server_config cfg;
    cnt_server_config_defaults(&cfg);
    cfg.port = 0;
    cfg.threads = 2;
    cfg.max_connections = max_connections;
    return cfg;
}

/* Builds and starts a server with cfg and a table of the given number of
 * buckets. */
static fixture *fixture_start(const cnt_server_config *cfg, size_t buckets)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->cfg = *cfg;
    cnt_table_config tc = {.buckets = buckets};
    f->table = cnt_table_new(&tc);
    f->stats = cnt_stats_new(CNT_SERVER_STATS_SLOTS(f->cfg.threads));
    f->gc = cnt_gc_new(f->table);
    assert_non_null(f->table);
    assert_non_null(f->stats);
    assert_non_null(f->gc);
    f->server = cnt_server_new(&f->cfg, f->table, f->stats, f->gc,
                               &test_logger);
    assert_non_null(f->server);
    assert_int_not_equal(cnt_server_port(f->server), 0);
    assert_int_equal(cnt_server_start(f->server), 0);
    return f;
}

/* Builds and starts a server on 127.0.0.1, kernel-chosen port, with a
 * table of the given number of buckets. */
static fixture *fixture_new_buckets(unsigned max_connections, size_t buckets)
{
    cnt_server_config cfg = fixture_config(max_connections);
    return fixture_start(&cfg, buckets);
}

/* Stops the server and frees everything. */
static void fixture_free(fixture *f)
{
    cnt_server_free(f->server);
    cnt_gc_free(f->gc);
    cnt_stats_free(f->stats);
    cnt_table_free(f->table);
    free(f);
}

/* The same with the 4096 buckets most tests use. */
static fixture *fixture_new(unsigned max_connections)
{
    return fixture_new_buckets(max_connections, 4096);
}

static int setup(void **state)
{
    *state = fixture_new(0);
    return 0;
}

static int teardown(void **state)
{
    fixture_free(*state);
    return 0;
}

/* Connects to the server; a receive timeout turns a hang into a failure. */
static int client_connect(const fixture *f)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_port = htons(cnt_server_port(f->server));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Sends all of buf. */
static void client_send(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* A receiving buffer that yields whole responses. */
typedef struct reader {
    int fd;
    uint8_t buf[1 << 17];
    size_t len, pos;
} reader;

/* Returns the next response (valid until the next call); false on EOF. */
static bool reader_next(reader *r, cnt_response *res)
{
    for (;;) {
        cnt_decode_result got = cnt_response_decode(r->buf + r->pos,
                                                    r->len - r->pos, res);
        assert_true(got != CNT_DECODE_CLOSE);
        if (got == CNT_DECODE_OK) {
            r->pos += res->size;
            return true;
        }
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
        assert_true(r->len < sizeof(r->buf));
        ssize_t n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
        if (n == 0)
            return false;
        assert_true(n > 0);     /* a timeout here is a failure */
        r->len += (size_t)n;
    }
}

/* Sends one request and returns its answer. */
static void roundtrip(reader *r, const uint8_t *req, size_t len,
                      cnt_response *res)
{
    client_send(r->fd, req, len);
    assert_true(reader_next(r, res));
}

/* Reads counter name from the table until it equals want (the release of
 * a closed connection happens on the server's thread, a moment later);
 * fails after about ten seconds. */
static void wait_consumption(fixture *f, const char *name, uint32_t want)
{
    for (int i = 0; i < 10000; i++) {
        uint32_t v = UINT32_MAX;
        cnt_status st = cnt_table_get(f->table, (const uint8_t *)name,
                                      (uint16_t)strlen(name), &v);
        if (st == CNT_STATUS_OK && v == want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("counter %s never reached %u", name, want);
}

/* Waits until fd is readable or writable (or a short while passes). */
static void poll_short(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
    poll(&p, 1, 100);
}

static void test_basic_answers(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[64];
    cnt_response res;

    roundtrip(r, req, cnt_encode_simple(req, CNT_OP_NOOP, 7), &res);
    assert_int_equal(res.magic, CNT_MAGIC_RESPONSE);
    assert_int_equal(res.status, CNT_STATUS_OK);
    assert_int_equal(res.opaque, 7);
    assert_int_equal(res.body_len, 0);

    roundtrip(r, req, cnt_encode_get(req, 8, "a", 1), &res);
    assert_int_equal(res.status, CNT_STATUS_NOT_FOUND);
    assert_memory_equal(res.body, "Not found", 9);

    roundtrip(r, req, cnt_encode_acquire(req, 9, 3, 5, "a", 1), &res);
    assert_int_equal(res.status, CNT_STATUS_OK);
    assert_int_equal(cnt_get_u32(res.body), 3);
    roundtrip(r, req, cnt_encode_acquire(req, 10, 3, 5, "a", 1), &res);
    assert_int_equal(res.status, CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    roundtrip(r, req, cnt_encode_get(req, 11, "a", 1), &res);
    assert_int_equal(cnt_get_u32(res.body), 3);
    roundtrip(r, req, cnt_encode_release(req, 12, 4, "a", 1), &res);
    assert_int_equal(res.status, CNT_STATUS_NOT_ACQUIRED);
    roundtrip(r, req, cnt_encode_release(req, 13, 2, "a", 1), &res);
    assert_int_equal(res.status, CNT_STATUS_OK);

    /* Unknown opcode: 0x81, opcode copied. */
    size_t n = cnt_encode_request_header(req, 0x55, 0, 14);
    roundtrip(r, req, n, &res);
    assert_int_equal(res.status, CNT_STATUS_UNKNOWN_COMMAND);
    assert_int_equal(res.opcode, 0x55);

    /* Stats: pairs, with the reference's names. */
    roundtrip(r, req, cnt_encode_simple(req, CNT_OP_STATS, 15), &res);
    assert_int_equal(res.status, CNT_STATUS_OK);
    size_t pos = 0;
    const char *name, *value;
    uint16_t nl, vl;
    bool seen = false;
    while (cnt_stats_next(&res, &pos, &name, &nl, &value, &vl))
        if (nl == 16 && memcmp(name, "curr_connections", 16) == 0)
            seen = vl == 1 && value[0] == '1';
    assert_true(seen);
    close(r->fd);
    wait_consumption(f, "a", 0);
    free(r);
}

static void test_pipelining(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    enum { N = 600 };
    uint8_t *batch = malloc(N * 64);
    size_t len = 0;
    for (uint32_t i = 0; i < N; i++) {
        switch (i % 4) {
        case 0: len += cnt_encode_acquire(batch + len, i, 1, N, "p", 1); break;
        case 1: len += cnt_encode_get(batch + len, i, "p", 1); break;
        case 2: len += cnt_encode_simple(batch + len, CNT_OP_NOOP, i); break;
        default: len += cnt_encode_get(batch + len, i, "nope", 4); break;
        }
    }
    client_send(r->fd, batch, len);     /* one write, hundreds of requests */
    for (uint32_t i = 0; i < N; i++) {
        cnt_response res;
        assert_true(reader_next(r, &res));
        assert_int_equal(res.opaque, i);        /* strictly in order */
        switch (i % 4) {
        case 0:
            assert_int_equal(res.status, CNT_STATUS_OK);
            assert_int_equal(cnt_get_u32(res.body), 1);
            break;
        case 1:
            assert_int_equal(cnt_get_u32(res.body), i / 4 + 1);
            break;
        case 2:
            assert_int_equal(res.body_len, 0);
            break;
        default:
            assert_int_equal(res.status, CNT_STATUS_NOT_FOUND);
        }
    }
    close(r->fd);
    wait_consumption(f, "p", 0);
    free(batch);
    free(r);
}

/* Creates n counters named "dump-<i>" padded to 200 bytes, pipelining
 * the Acquires a hundred at a time. */
static void make_counters(reader *r, unsigned n)
{
    enum { BATCH = 100, REQ = CNT_HEADER_SIZE + 10 + 200 };
    uint8_t *req = malloc(BATCH * REQ);
    char name[201];
    for (unsigned i = 0; i < n; i += BATCH) {
        size_t len = 0;
        unsigned k;
        for (k = 0; k < BATCH && i + k < n; k++) {
            memset(name, 'x', 200);
            int w = snprintf(name, sizeof(name), "dump-%u", i + k);
            name[w] = '-';
            len += cnt_encode_acquire(req + len, i + k, 1, 1, name, 200);
        }
        client_send(r->fd, req, len);
        for (unsigned j = 0; j < k; j++) {
            cnt_response res;
            assert_true(reader_next(r, &res));
            assert_int_equal(res.status, CNT_STATUS_OK);
        }
    }
    free(req);
}

/* A Dump of N counters (made with make_counters) read in small bites:
 * every record comes once, then the Noop sent behind the Dump (that the
 * server paces itself is test_dump_paces_stalled_reader's check). */
static void dump_slowly(fixture *f, unsigned N)
{
    reader *holder = calloc(1, sizeof(*holder));
    holder->fd = client_connect(f);
    make_counters(holder, N);

    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    int small = 16384;
    setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    uint8_t req[64];
    size_t len = cnt_encode_simple(req, CNT_OP_DUMP, 77);
    len += cnt_encode_simple(req + len, CNT_OP_NOOP, 78);
    client_send(r->fd, req, len);
    /* Read in small bites, crossing many of the server's pauses. */
    unsigned records = 0;
    cnt_response res;
    for (;;) {
        assert_true(reader_next(r, &res));
        assert_int_equal(res.opaque, 77);
        assert_int_equal(res.opcode, CNT_OP_DUMP);
        if (cnt_response_is_dump_end(&res))
            break;
        cnt_dump_record rec;
        assert_true(cnt_dump_record_parse(&res, &rec));
        assert_int_equal(rec.name_len, 200);
        assert_int_equal(rec.current, 1);
        records++;
    }
    assert_int_equal(records, N);
    /* The Noop sent behind the Dump is answered after its end marker. */
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 78);
    close(r->fd);
    close(holder->fd);
    free(r);
    free(holder);
}

static void test_dump_slow_reader(void **state)
{
    dump_slowly(*state, 6000);  /* ~1.3 MB of records: several watermarks */
}

/* Bytes the process has taken from malloc now, in every arena and in
 * mmapped blocks. */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A Dump to a reader that does not read: the server stops at its output's
 * watermark instead of holding the whole Dump. The Dump is made 2 MiB
 * larger than the most the kernel's send buffer can take (tcp_wmem's
 * maximum), so a server that did not pace itself would hold at least that
 * much. One worker serves both connections, so each Noop answered on the
 * other connection is a turn in which the Dump could have gone on; after
 * many of them the server's heap has grown by less than 1 MiB (the
 * watermark is 256 KiB). */
static void test_dump_paces_stalled_reader(void **state)
{
    enum { RECORD = CNT_HEADER_SIZE + 10 + 200, TURNS = 200 };
    unsigned long wmem[3];
    FILE *fp = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    bool known = fp != NULL &&
                 fscanf(fp, "%lu %lu %lu", &wmem[0], &wmem[1], &wmem[2]) == 3;
    if (fp != NULL)
        fclose(fp);
    if (!known) {
        print_message("the kernel's send buffer limit (tcp_wmem) cannot be "
                      "read, so no Dump size is known to overflow it\n");
        skip();
    }
    unsigned N = (unsigned)((wmem[2] + (2u << 20)) / RECORD + 1);
    cnt_server_config cfg = fixture_config(0);
    cfg.threads = 1;
    fixture *f = fixture_start(&cfg, 4096);
    (void)state;
    reader *holder = calloc(1, sizeof(*holder));
    holder->fd = client_connect(f);
    make_counters(holder, N);
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    int small = 16384;
    setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    uint8_t req[64];
    cnt_response res;

    size_t before = heap_in_use();
    client_send(r->fd, req, cnt_encode_simple(req, CNT_OP_DUMP, 77));
    /* The Dump has begun once its first bytes can be read. */
    struct pollfd p = {.fd = r->fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    for (unsigned i = 0; i < TURNS; i++)
        roundtrip(holder, req, cnt_encode_simple(req, CNT_OP_NOOP, i), &res);
    size_t after = heap_in_use();
    size_t grown = after > before ? after - before : 0;
    print_message("heap grew by %zu bytes for a Dump of %lu bytes\n", grown,
                  (unsigned long)N * RECORD);
    assert_true(grown < (1u << 20));

    /* Then the whole Dump comes, every record once. */
    unsigned records = 0;
    for (;;) {
        assert_true(reader_next(r, &res));
        assert_int_equal(res.opaque, 77);
        if (cnt_response_is_dump_end(&res))
            break;
        records++;
    }
    assert_int_equal(records, N);
    close(r->fd);
    close(holder->fd);
    free(r);
    free(holder);
    fixture_free(f);
}

/* With one bucket all counters form one chain, which the Dump crosses in
 * many pauses (watermark, per-turn slice, per-lock batch). */
static void test_dump_one_chain(void **state)
{
    fixture *f = fixture_new_buckets(0, 1);
    (void)state;
    dump_slowly(f, 3000);
    fixture_free(f);
}

static void test_largest_request(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    size_t cap = 2 * (CNT_REQUEST_MAX + 64);
    uint8_t *req = malloc(cap);
    char *name = malloc(CNT_NAME_MAX);
    memset(name, 'n', CNT_NAME_MAX);
    /* Two 65535-byte-name requests in one stream, the first split in the
     * middle of its name: the buffer grows to the largest legal request. */
    size_t a = cnt_encode_acquire(req, 1, 2, 3, name, CNT_NAME_MAX);
    size_t len = a + cnt_encode_get(req + a, 2, name, CNT_NAME_MAX);
    /* A Noop goes ahead of the first part, in the same send: its answer
     * shows that the server read and answered that input while the rest
     * of the request had not been sent yet, so it held a partial one. */
    uint8_t *first = malloc(CNT_HEADER_SIZE + a / 2);
    size_t nl = cnt_encode_simple(first, CNT_OP_NOOP, 9);
    memcpy(first + nl, req, a / 2);
    client_send(r->fd, first, nl + a / 2);
    free(first);
    cnt_response res;
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 9);
    assert_int_equal(res.status, CNT_STATUS_OK);
    client_send(r->fd, req + a / 2, len - a / 2);
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 1);
    assert_int_equal(res.status, CNT_STATUS_OK);
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 2);
    assert_int_equal(cnt_get_u32(res.body), 2);
    /* And small requests keep working after the buffer shrank back. */
    roundtrip(r, req, cnt_encode_simple(req, CNT_OP_NOOP, 3), &res);
    assert_int_equal(res.opaque, 3);
    close(r->fd);
    free(name);
    free(req);
    free(r);
}

static void test_lost_framing_closes(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[64];
    /* A Noop, then text (a memcache client on the wrong port): the Noop is
     * answered, then the connection is closed. */
    size_t n = cnt_encode_simple(req, CNT_OP_NOOP, 1);
    memcpy(req + n, "get some_key_here\r\n", 19);
    client_send(r->fd, req, n + 19);
    cnt_response res;
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 1);
    assert_false(reader_next(r, &res));
    close(r->fd);
    free(r);
}

static void test_flood_small_window(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    int small = 16384;
    setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    /* ~50,000 Stats requests answer with tens of megabytes: far past the
     * watermark; the server must stop reading, not buffer it all. */
    enum { N = 50000 };
    uint8_t *batch = malloc(N * CNT_HEADER_SIZE);
    for (uint32_t i = 0; i < N; i++)
        cnt_encode_simple(batch + i * CNT_HEADER_SIZE,
                          i % 2 ? CNT_OP_STATS : CNT_OP_NOOP, i);
    /* Send from a thread-free loop: interleave sending and reading so
     * neither side deadlocks on full buffers. */
    size_t sent = 0, total = (size_t)N * CNT_HEADER_SIZE;
    uint32_t next = 0;
    int fl = fcntl(r->fd, F_GETFL);
    fcntl(r->fd, F_SETFL, fl | O_NONBLOCK);
    while (next < N) {
        if (sent < total) {
            ssize_t k = send(r->fd, batch + sent, total - sent, MSG_NOSIGNAL);
            if (k > 0)
                sent += (size_t)k;
        }
        cnt_response res;
        cnt_decode_result got;
        while ((got = cnt_response_decode(r->buf + r->pos, r->len - r->pos,
                                          &res)) == CNT_DECODE_OK) {
            assert_int_equal(res.opaque, next);
            assert_int_equal(res.opcode, next % 2 ? CNT_OP_STATS : CNT_OP_NOOP);
            next++;
            r->pos += res.size;
        }
        assert_int_equal(got, CNT_DECODE_NEED_MORE);
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
        ssize_t k = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
        if (k == 0)
            fail_msg("server closed after %u answers", next);
        if (k > 0)
            r->len += (size_t)k;
        else
            poll_short(r->fd);
    }
    close(r->fd);
    free(batch);
    free(r);
}

static void test_release_on_eof_after_answers(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[128];
    size_t len = cnt_encode_acquire(req, 1, 2, 10, "h", 1);
    len += cnt_encode_get(req + len, 2, "h", 1);
    client_send(r->fd, req, len);
    /* Half-close: the answers still come, then the server closes. */
    shutdown(r->fd, SHUT_WR);
    cnt_response res;
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 1);
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 2);
    assert_int_equal(cnt_get_u32(res.body), 2);
    assert_false(reader_next(r, &res));
    close(r->fd);
    wait_consumption(f, "h", 0);
    free(r);
}

static void test_release_on_reset(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[64];
    cnt_response res;
    roundtrip(r, req, cnt_encode_acquire(req, 1, 4, 4, "rst", 3), &res);
    assert_int_equal(res.status, CNT_STATUS_OK);
    struct linger lg = {1, 0};      /* close sends RST */
    setsockopt(r->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(r->fd);
    wait_consumption(f, "rst", 0);
    free(r);
}

static void test_huge_declared_body(void **state)
{
    fixture *f = *state;
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[64];
    /* A Get declaring ~4 GiB: answered 0x04 at once, body discarded as it
     * comes; a Noop declaring a body gets its normal answer. */
    size_t n = cnt_encode_request_header(req, CNT_OP_GET, 0xfffffff0u, 5);
    memset(req + n, 0xab, 20);
    cnt_response res;
    roundtrip(r, req, n + 20, &res);
    assert_int_equal(res.status, CNT_STATUS_INVALID);
    assert_int_equal(res.opaque, 5);
    close(r->fd);

    r->fd = client_connect(f);
    r->len = r->pos = 0;
    n = cnt_encode_request_header(req, CNT_OP_NOOP, 3, 6);
    memcpy(req + n, "abc", 3);
    n += 3;
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 7);
    client_send(r->fd, req, n);
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 6);
    assert_int_equal(res.status, CNT_STATUS_OK);
    assert_true(reader_next(r, &res));
    assert_int_equal(res.opaque, 7);
    close(r->fd);
    free(r);
}

static void test_max_connections(void **state)
{
    (void)state;
    fixture *f = fixture_new(2);
    reader *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    uint8_t req[64];
    cnt_response res;
    a->fd = client_connect(f);
    roundtrip(a, req, cnt_encode_simple(req, CNT_OP_NOOP, 1), &res);
    b->fd = client_connect(f);
    roundtrip(b, req, cnt_encode_simple(req, CNT_OP_NOOP, 2), &res);
    /* The third is accepted and closed at once, without an answer. */
    int c = client_connect(f);
    cnt_encode_simple(req, CNT_OP_NOOP, 3);
    send(c, req, CNT_HEADER_SIZE, MSG_NOSIGNAL);
    uint8_t buf[16];
    ssize_t n = recv(c, buf, sizeof(buf), 0);
    assert_true(n <= 0);
    close(c);
    /* Once one leaves, a new one gets in. */
    close(b->fd);
    bool served = false;
    for (int i = 0; i < 1000 && !served; i++) {
        /* Until the server has seen b go, attempts are reset or closed. */
        int d = client_connect(f);
        send(d, req, cnt_encode_simple(req, CNT_OP_NOOP, 4), MSG_NOSIGNAL);
        served = recv(d, buf, sizeof(buf), 0) == CNT_HEADER_SIZE;
        close(d);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_true(served);
    roundtrip(a, req, cnt_encode_simple(req, CNT_OP_STATS, 5), &res);
    size_t pos = 0;
    const char *name, *value;
    uint16_t nl, vl;
    unsigned long rejected = 0;
    while (cnt_stats_next(&res, &pos, &name, &nl, &value, &vl))
        if (nl == 20 && memcmp(name, "rejected_connections", 20) == 0)
            rejected = strtoul(value, NULL, 10);
    assert_true(rejected >= 1);
    close(a->fd);
    free(a);
    free(b);
    fixture_free(f);
}

static void test_busy_port(void **state)
{
    fixture *f = *state;
    cnt_server_config cfg = f->cfg;
    cfg.port = cnt_server_port(f->server);
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
    cnt_server *s = cnt_server_new(&cfg, f->table, f->stats, NULL,
                                   &test_logger);
    assert_null(s);
    char expected[128];
    snprintf(expected, sizeof(expected),
             "counter.port %u at address 127.0.0.1", (unsigned)cfg.port);
    pthread_mutex_lock(&log_lock);
    bool named = strstr(log_text, expected) != NULL;
    pthread_mutex_unlock(&log_lock);
    assert_true(named);
}

static void test_ipv6_and_shared_port(void **state)
{
    (void)state;
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6};
    sa6.sin6_addr = in6addr_loopback;
    bool have6 = probe >= 0 &&
                 bind(probe, (struct sockaddr *)&sa6, sizeof(sa6)) == 0;
    if (probe >= 0)
        close(probe);
    if (!have6)
        skip();
    cnt_server_config cfg;
    cnt_server_config_defaults(&cfg);
    cfg.port = 0;
    cfg.threads = 1;
    cfg.nbinds = 2;
    strcpy(cfg.binds[0], "127.0.0.1");
    strcpy(cfg.binds[1], "::1");
    cnt_table_config tc = {.buckets = 64};
    cnt_table *t = cnt_table_new(&tc);
    cnt_stats *st = cnt_stats_new(CNT_SERVER_STATS_SLOTS(1));
    cnt_server *s = cnt_server_new(&cfg, t, st, NULL, &test_logger);
    assert_non_null(s);
    assert_int_equal(cnt_server_start(s), 0);
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    sa6.sin6_port = htons(cnt_server_port(s));
    assert_int_equal(connect(fd, (struct sockaddr *)&sa6, sizeof(sa6)), 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    reader *r = calloc(1, sizeof(*r));
    r->fd = fd;
    uint8_t req[32];
    cnt_response res;
    roundtrip(r, req, cnt_encode_simple(req, CNT_OP_NOOP, 9), &res);
    assert_int_equal(res.opaque, 9);
    close(fd);
    free(r);
    cnt_server_free(s);
    cnt_stats_free(st);
    cnt_table_free(t);
}

/* Tells whether the log holds text (polling: the acceptor logs from its
 * own thread); fails after about ten seconds. */
static void wait_log(const char *text)
{
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&log_lock);
        bool found = strstr(log_text, text) != NULL;
        pthread_mutex_unlock(&log_lock);
        if (found)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("log never said \"%s\"", text);
}

static void test_out_of_fds(void **state)
{
    fixture *f = *state;
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
    /* A client socket made while fds remain, connected once none do. */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c >= 0);
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)c + 32;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fillers[64];
    int nfill = 0;
    while (nfill < 64) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        fillers[nfill++] = fd;
    }
    assert_int_equal(errno, EMFILE);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_port = htons(cnt_server_port(f->server));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
    uint8_t req[32];
    client_send(c, req, cnt_encode_simple(req, CNT_OP_NOOP, 31));
    /* The acceptor cannot take it: it says so and pauses. */
    wait_log("pausing accepts");
    while (nfill > 0)
        close(fillers[--nfill]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    /* With fds back, accepting resumes: the pending connection is served
     * (under valgrind, whose fd emulation drops it, it is closed), and a
     * new one is served. */
    struct timeval tv = {10, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    uint8_t buf[64];
    ssize_t n = recv(c, buf, sizeof(buf), 0);
    assert_true(n == CNT_HEADER_SIZE || n == 0 ||
                (n < 0 && errno == ECONNRESET));
    close(c);
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    cnt_response res;
    roundtrip(r, req, cnt_encode_simple(req, CNT_OP_NOOP, 32), &res);
    assert_int_equal(res.opaque, 32);
    close(r->fd);
    free(r);
    /* Rate-limited: one warning for the whole episode. */
    pthread_mutex_lock(&log_lock);
    const char *first = strstr(log_text, "pausing accepts");
    bool once = first != NULL && strstr(first + 1, "pausing accepts") == NULL;
    pthread_mutex_unlock(&log_lock);
    assert_true(once);
}

/* Connections open right now by the Stats slots' curr_connections, as
 * the Stats answer sums them. */
static uint64_t curr_connections(const fixture *f)
{
    uint64_t sum = 0;
    cnt_stats_slot *slot;
    for (unsigned i = 0; (slot = cnt_stats_slot_get(f->stats, i)) != NULL;
         i++)
        sum += atomic_load(&slot->curr_connections);
    return sum;
}

static void test_stop_releases_holdings(void **state)
{
    (void)state;
    fixture *f = fixture_new(0);
    reader *r = calloc(1, sizeof(*r));
    r->fd = client_connect(f);
    uint8_t req[64];
    cnt_response res;
    roundtrip(r, req, cnt_encode_acquire(req, 1, 6, 9, "stop", 4), &res);
    assert_int_equal(res.status, CNT_STATUS_OK);
    assert_int_equal(curr_connections(f), 1);
    cnt_server_stop(f->server);
    uint32_t v = 99;
    assert_int_equal(cnt_table_get(f->table, (const uint8_t *)"stop", 4, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 0);
    assert_int_equal(curr_connections(f), 0);
    /* The server closed our end. */
    assert_false(reader_next(r, &res));
    close(r->fd);
    free(r);
    fixture_free(f);
}

/* The server's end of client socket fd: the descriptor in this process
 * whose local address is fd's peer and whose peer is fd's local address
 * (the server runs in this process); -1 if none. */
static int server_end_of(int fd)
{
    struct sockaddr_in mine, theirs;
    socklen_t n = sizeof(mine);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&mine, &n), 0);
    n = sizeof(theirs);
    assert_int_equal(getpeername(fd, (struct sockaddr *)&theirs, &n), 0);
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int found = -1;
    struct dirent *e;
    while (found < 0 && (e = readdir(d)) != NULL) {
        int s = atoi(e->d_name);
        struct sockaddr_in local, peer;
        socklen_t ln = sizeof(local), pn = sizeof(peer);
        if (s == fd || s == dirfd(d) ||
            getsockname(s, (struct sockaddr *)&local, &ln) != 0 ||
            getpeername(s, (struct sockaddr *)&peer, &pn) != 0 ||
            local.sin_family != AF_INET || peer.sin_family != AF_INET)
            continue;
        if (local.sin_port == theirs.sin_port &&
            peer.sin_port == mine.sin_port)
            found = s;
    }
    closedir(d);
    return found;
}

/* Reads an int socket option of fd. */
static int sockopt_of(int fd, int level, int name)
{
    int v = -1;
    socklen_t n = sizeof(v);
    assert_int_equal(getsockopt(fd, level, name, &v, &n), 0);
    return v;
}

/* A connection the server has answered, so its worker adopted it. */
static int adopted_client(const fixture *f)
{
    int fd = client_connect(f);
    uint8_t req[CNT_HEADER_SIZE];
    client_send(fd, req, cnt_encode_simple(req, CNT_OP_NOOP, 5));
    uint8_t ans[CNT_HEADER_SIZE];
    assert_int_equal(recv(fd, ans, sizeof(ans), MSG_WAITALL), sizeof(ans));
    return fd;
}

/* Every keepalive option the documented bound depends on is set on the
 * server's end: idle, interval, count and the matching user timeout. */
static void test_keepalive_options(void **state)
{
    (void)state;
    cnt_server_config cfg = fixture_config(0);
    cfg.keepalive_idle = 7;
    cfg.keepalive_interval = 2;
    cfg.keepalive_count = 4;
    fixture *f = fixture_start(&cfg, 64);
    int fd = adopted_client(f);
    int s = server_end_of(fd);
    assert_true(s >= 0);
    assert_int_equal(sockopt_of(s, SOL_SOCKET, SO_KEEPALIVE), 1);
    assert_int_equal(sockopt_of(s, IPPROTO_TCP, TCP_KEEPIDLE), 7);
    assert_int_equal(sockopt_of(s, IPPROTO_TCP, TCP_KEEPINTVL), 2);
    assert_int_equal(sockopt_of(s, IPPROTO_TCP, TCP_KEEPCNT), 4);
    assert_int_equal(sockopt_of(s, IPPROTO_TCP, TCP_USER_TIMEOUT),
                     (7 + 2 * 4) * 1000);
    close(fd);
    fixture_free(f);

    cfg.keepalive = false;
    f = fixture_start(&cfg, 64);
    fd = adopted_client(f);
    s = server_end_of(fd);
    assert_true(s >= 0);
    assert_int_equal(sockopt_of(s, SOL_SOCKET, SO_KEEPALIVE), 0);
    assert_int_equal(sockopt_of(s, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
    close(fd);
    fixture_free(f);
}

/* Many connections on both workers pipeline Lease_list at once while two
 * leases live, one per worker: every listing gets both, nearest first,
 * then its end marker, each connection's answers in order; and no more
 * surveys were ever out at once than there are workers (the rest waited
 * their turn and were still answered). */
static void test_lease_list_many(void **state)
{
    fixture *f = *state;
    enum { HOLDERS = 2, LISTERS = 16, EACH = 4 };
    int hold[HOLDERS];
    reader *r = calloc(LISTERS, sizeof(*r));
    uint8_t req[256];
    cnt_response res;

    assert_non_null(r);
    for (unsigned i = 0; i < HOLDERS; i++) {
        char name[4] = {'h', (char)('0' + i), 0, 0};
        reader *h = calloc(1, sizeof(*h));
        assert_non_null(h);
        hold[i] = h->fd = client_connect(f);
        /* Leases of 60 s and 61 s: h0's is the nearer. */
        size_t n = cnt_encode_wait_acquire(req, 1, 1, 1, 0, 60000 + 1000 * i,
                                           name, 2);
        roundtrip(h, req, n, &res);
        assert_int_equal(res.status, CNT_STATUS_OK);
        free(h);
    }
    for (unsigned i = 0; i < LISTERS; i++) {
        size_t len = 0;
        uint8_t batch[EACH * 32 + 32];
        r[i].fd = client_connect(f);
        for (uint32_t j = 0; j < EACH; j++)
            len += cnt_encode_lease_list(batch + len, j, 64);
        len += cnt_encode_simple(batch + len, CNT_OP_NOOP, EACH);
        client_send(r[i].fd, batch, len);
    }
    for (unsigned i = 0; i < LISTERS; i++) {
        for (uint32_t j = 0; j < EACH; j++) {
            for (unsigned k = 0; k < HOLDERS; k++) {
                cnt_lease_record rec;
                assert_true(reader_next(&r[i], &res));
                assert_int_equal(res.opaque, j);
                assert_false(cnt_response_is_lease_list_end(&res));
                assert_true(cnt_parse_lease_record(&res, &rec));
                assert_int_equal(rec.name_len, 2);
                assert_int_equal(rec.name[1], '0' + k);
            }
            assert_true(reader_next(&r[i], &res));
            assert_int_equal(res.opaque, j);
            assert_true(cnt_response_is_lease_list_end(&res));
        }
        assert_true(reader_next(&r[i], &res));
        assert_int_equal(res.opcode, CNT_OP_NOOP);
        assert_int_equal(res.opaque, EACH);
        close(r[i].fd);
    }
    unsigned peak = cnt_server_survey_peak(f->server);
    assert_true(peak >= 1);
    assert_true(peak <= f->cfg.threads);
    for (unsigned i = 0; i < HOLDERS; i++)
        close(hold[i]);
    free(r);
}

/* Runs the server tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_basic_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelining, setup, teardown),
        cmocka_unit_test(test_dump_one_chain),
        cmocka_unit_test_setup_teardown(test_dump_slow_reader, setup,
                                        teardown),
        cmocka_unit_test(test_dump_paces_stalled_reader),
        cmocka_unit_test_setup_teardown(test_largest_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_framing_closes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_flood_small_window, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_release_on_eof_after_answers,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_on_reset, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_huge_declared_body, setup,
                                        teardown),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test_setup_teardown(test_busy_port, setup, teardown),
        cmocka_unit_test(test_ipv6_and_shared_port),
        cmocka_unit_test_setup_teardown(test_out_of_fds, setup, teardown),
        cmocka_unit_test(test_stop_releases_holdings),
        cmocka_unit_test(test_keepalive_options),
        cmocka_unit_test_setup_teardown(test_lease_list_many, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
