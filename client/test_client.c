/* test_client.c: unit tests of libmccounter without a real server:
 * arguments the client refuses before sending anything, and a scripted
 * fake server on 127.0.0.1, run in a thread, that cuts answers into
 * single bytes, pipelines them with events, declares an oversized body,
 * answers the wrong opaque or closes mid-answer. The tests against the
 * real mchost are test_client_live.c. Nothing here asserts how long
 * anything took. */
#include "config.h"

/* These tests also show that the names deprecated in 1.1 keep working. */
#define MCC_NO_DEPRECATION_WARNINGS

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/mccounter.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "client/test_client_util.h"

/* ---- A scripted fake server ---- */

typedef struct fake fake;
typedef void (*fake_script)(fake *f);

struct fake {
    int lfd, fd;
    uint16_t port;
    pthread_t th;
    fake_script script;
    char error[256];            /* the script's first failure */
    uint8_t buf[2 * CNT_REQUEST_MAX];
    size_t len;
    bool closed;                /* the script closes the connection */
    uint8_t secret[64];         /* Auth's secret, as received */
    size_t secret_len;
    uint8_t user[64];           /* Auth_user's user and flags */
    size_t user_len;
    uint8_t user_flags;
};

/* Records the first failure of a script (asserts cannot run in the
 * server thread; the main thread checks after joining). */
static void fake_fail(fake *f, const char *what)
{
    if (!f->error[0])
        snprintf(f->error, sizeof f->error, "%s", what);
}

/* Reads one whole request into *req (header fields only stay valid);
 * false on close, timeout or garbage. */
static bool fake_read(fake *f, cnt_request *req)
{
    for (;;) {
        cnt_decode_result d = cnt_request_decode(f->buf, f->len, req);
        struct pollfd p = { f->fd, POLLIN, 0 };
        ssize_t n;
        if (d == CNT_DECODE_OK && req->size <= f->len &&
            req->opcode == CNT_OP_NOOP &&
            req->opaque == CNT_TEXT_PROBE_OPAQUE) {
            /* The library's probe, first on each connection: answered
             * here so that scripts see the application's requests. */
            uint8_t out[CNT_HEADER_SIZE];
            size_t w = cnt_encode_empty(out, CNT_OP_NOOP, req->opaque);

            memmove(f->buf, f->buf + req->size, f->len - req->size);
            f->len -= req->size;
            if (send(f->fd, out, w, MSG_NOSIGNAL) != (ssize_t)w) {
                fake_fail(f, "write failed");
                return false;
            }
            continue;
        }
        if (d == CNT_DECODE_OK && req->size <= f->len) {
            if ((req->opcode == CNT_OP_AUTH ||
                 req->opcode == CNT_OP_AUTH_USER) &&
                req->secret_len <= sizeof f->secret) {
                memcpy(f->secret, req->secret, req->secret_len);
                f->secret_len = req->secret_len;
            }
            if (req->opcode == CNT_OP_AUTH_USER &&
                req->name_len <= sizeof f->user) {
                memcpy(f->user, req->name, req->name_len);
                f->user_len = req->name_len;
                f->user_flags = req->flags;
            }
            req->name = NULL;
            req->secret = NULL;
            req->items = NULL;
            memmove(f->buf, f->buf + req->size, f->len - req->size);
            f->len -= req->size;
            return true;
        }
        if (d == CNT_DECODE_ERROR || d == CNT_DECODE_CLOSE) {
            fake_fail(f, "the client sent a request the server refuses");
            return false;
        }
        if (poll(&p, 1, GIVE_UP_MS) != 1)
            return false;
        n = read(f->fd, f->buf + f->len, sizeof f->buf - f->len);
        if (n <= 0)
            return false;
        f->len += (size_t)n;
    }
}

/* Reads one request of the given opcode; records a failure otherwise. */
static bool fake_expect(fake *f, uint8_t opcode, cnt_request *req)
{
    if (!fake_read(f, req)) {
        fake_fail(f, "no request came");
        return false;
    }
    if (req->opcode != opcode) {
        fake_fail(f, "unexpected opcode");
        return false;
    }
    return true;
}

/* Writes all of p. */
static void fake_write(fake *f, const void *p, size_t n)
{
    const uint8_t *b = p;

    while (n > 0) {
        ssize_t w = send(f->fd, b, n, MSG_NOSIGNAL);
        if (w <= 0) {
            fake_fail(f, "write failed");
            return;
        }
        b += w;
        n -= (size_t)w;
    }
}

/* Writes p one byte at a time, pausing between them so that the client
 * reads the answer in many pieces. */
static void fake_write_slowly(fake *f, const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) {
        fake_write(f, b + i, 1);
        sleep_ms(1);
    }
}

/* The server thread: accepts one connection and runs the script. */
static void *fake_main(void *arg)
{
    fake *f = arg;
    struct pollfd p = { f->lfd, POLLIN, 0 };

    if (poll(&p, 1, GIVE_UP_MS) != 1) {
        fake_fail(f, "no connection came");
        return NULL;
    }
    f->fd = accept(f->lfd, NULL, NULL);
    if (f->fd < 0) {
        fake_fail(f, "accept failed");
        return NULL;
    }
    f->script(f);
    /* Keep the connection until the client closes it (or a script
     * closed it already), so that a close is only ever a test's own. */
    if (f->fd >= 0 && !f->closed) {
        cnt_request rq;
        while (fake_read(f, &rq))
            ;
    }
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    return NULL;
}

/* Binds a listening socket on 127.0.0.1 and an ephemeral port. */
static int listen_local(uint16_t *port)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Starts a fake server running script. */
static fake *fake_start(fake_script script)
{
    fake *f = calloc(1, sizeof *f);

    assert_non_null(f);
    f->fd = -1;
    f->script = script;
    f->lfd = listen_local(&f->port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
    return f;
}

/* Waits for the script to end, checks it did not fail and frees it. */
static void fake_finish(fake *f)
{
    char error[256];

    pthread_join(f->th, NULL);
    close(f->lfd);
    memcpy(error, f->error, sizeof error);
    free(f);
    if (error[0])
        fail_msg("fake server: %s", error);
}

/* ---- Refusals: nothing is sent ---- */

static void test_refusals(void **state)
{
    mcc_client *c = mcc_client_new();
    static char big[70000];
    mcc_check_item items[17];
    char err[128];
    const char *a = NULL, *b = NULL;
    char names[200][8];

    (void)state;
    assert_non_null(c);
    /* Names. */
    assert_int_equal(mcc_get(c, "x", 0, -1, NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_get(c, NULL, 3, -1, NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_get(c, big, 65536, -1, NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_ttl_query_async(c, big, 70000, NULL, NULL),
                     MCC_ERR_NAME);
    assert_int_equal(mcc_auth(c, 0, "", 0, -1, NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_auth_user(c, 0, "", 0, "s", 1, 0, -1, NULL),
                     MCC_ERR_NAME);
    assert_int_equal(mcc_auth_user(c, 0, "bob", 3, NULL, 1, 0, -1, NULL),
                     MCC_ERR_NAME);
    assert_int_equal(mcc_auth_user_async(c, 0, "bob", 3, "", 0, 0, NULL,
                                         NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_auth_user(c, 0, big, 65536, "s", 1, 0, -1, NULL),
                     MCC_ERR_NAME);
    /* Each fits alone, not both in one body. */
    assert_int_equal(mcc_auth_user(c, 0, big, 40000, big, 40000, 0, -1,
                                   NULL), MCC_ERR_NAME);
    assert_int_equal(mcc_auth_user(c, 0, "bob", 3, "s", 1, 0x02, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_auth_user(NULL, 0, "bob", 3, "s", 1, 0, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_client_set_user(c, "bob", 3, 0x80),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_client_set_user(c, "", 0, 0), MCC_ERR_NAME);
    assert_int_equal(mcc_client_set_user(NULL, "bob", 3, 0),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_client_set_user(c, big, 40000, 0), MCC_OK);
    assert_int_equal(mcc_client_set_secret(c, big, 40000), MCC_ERR_NAME);
    assert_int_equal(mcc_client_set_user(c, NULL, 0, 0), MCC_OK);
    /* Resources. */
    assert_int_equal(mcc_acquire(c, "job", 3, 0, 4, -1, NULL),
                     MCC_ERR_RESOURCES);
    assert_int_equal(mcc_acquire(c, "job", 3, 5, 4, -1, NULL),
                     MCC_ERR_RESOURCES);
    assert_int_equal(mcc_acquire_async(c, "job", 3, 1, 0, NULL, NULL),
                     MCC_ERR_RESOURCES);
    assert_int_equal(mcc_wait_acquire(c, "job", 3, 5, 4, 0, 0, -1, NULL),
                     MCC_ERR_RESOURCES);
    assert_int_equal(mcc_wait_acquire_async(c, "job", 3, 0, 0, 0, 0, NULL,
                                            NULL), MCC_ERR_RESOURCES);
    assert_int_equal(mcc_wait_for(c, "job", 3, &(mcc_wait_params){
                                      .resources = 5, .maximum = 4 },
                                  -1, NULL), MCC_ERR_RESOURCES);
    assert_int_equal(mcc_wait_for_async(c, "job", 3, &(mcc_wait_params){
                                            .resources = 0 }, NULL, NULL),
                     MCC_ERR_RESOURCES);
    assert_int_equal(mcc_wait_for(c, "job", 3, NULL, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_wait_for_async(c, "job", 3, NULL, NULL, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_throttle(c, "acme", 4, 0, -1, NULL),
                     MCC_ERR_RESOURCES);
    /* Legal arguments but no server. */
    assert_int_equal(mcc_get(c, "job", 3, -1, NULL), MCC_ERR_INVALID);
    assert_int_equal(mcc_wait_acquire_async(c, "job", 3, 1, 0, 0, 0, NULL,
                                            NULL), MCC_ERR_INVALID);
    assert_int_equal(mcc_noop(c, 0, -1, NULL), MCC_ERR_INVALID);
    /* A Lease_list for no lease is refused before it is sent. */
    assert_int_equal(mcc_lease_list(c, 0, 0, NULL, NULL, -1),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_lease_list_async(c, 0, 0, NULL, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_lease_list_async(NULL, 0, 1, NULL, NULL),
                     MCC_ERR_INVALID);
    /* Multi-check shapes. */
    memset(items, 0, sizeof items);
    for (int i = 0; i < 17; i++) {
        items[i].op = MCC_OP_WINDOW_CHECK;
        items[i].name = "w";
        items[i].name_len = 1;
        items[i].limit = 10;
        items[i].cost = 1;
    }
    assert_int_equal(mcc_multi_check(c, items, 17, false, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_multi_check(c, items, 0, false, -1, NULL),
                     MCC_ERR_INVALID);
    items[1].name_len = 0;
    assert_int_equal(mcc_multi_check(c, items, 2, false, -1, NULL),
                     MCC_ERR_NAME);
    items[1].name_len = 1;
    items[1].op = MCC_OP_GET;
    assert_int_equal(mcc_multi_check(c, items, 2, false, -1, NULL),
                     MCC_ERR_INVALID);
    /* Server lists. */
    assert_int_equal(mcc_client_set_servers(c, "nohostport", err,
                                            sizeof err), MCC_ERR_INVALID);
    assert_true(strlen(err) > 0);
    assert_int_equal(mcc_client_set_servers(c, "127.0.0.1:1,127.0.0.1:2:3",
                                            err, sizeof err), 2);
    assert_int_equal(mcc_client_server_count(c), 2);
    assert_string_equal(mcc_client_server_name(c, 1), "127.0.0.1:2");
    assert_null(mcc_client_server_name(c, 2));
    assert_int_equal(mcc_client_add_server(c, "::1", 3, 1), 2);
    assert_string_equal(mcc_client_server_name(c, 2), "[::1]:3");
    /* What the server's decoder would refuse is refused here. */
    assert_int_equal(mcc_ttl_insert(c, "t", 1, 1, 1, 9, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_window_check(c, "w", 1, false, 0, 10, 0, 0, -1,
                                      NULL), MCC_ERR_INVALID);
    assert_int_equal(mcc_gcra_check(c, "g", 1, false, 1, 0, 1, 1000, -1,
                                    NULL), MCC_ERR_INVALID);
    /* The same through one item; and an item that is neither check. */
    {
        mcc_check_item w = { .op = MCC_OP_WINDOW_CHECK, .name = "w",
                             .name_len = 1, .limit = 10, .cost = 0 };
        mcc_check_item g = { .op = MCC_OP_GCRA_CHECK, .name = "g",
                             .name_len = 1, .limit = 1, .count = 0,
                             .cost = 1, .period_ns = 1000 };
        mcc_check_item other = w;
        mcc_result r;
        other.op = MCC_OP_GET;
        assert_int_equal(mcc_check(c, &w, false, -1, NULL), MCC_ERR_INVALID);
        assert_int_equal(mcc_check(c, &g, false, -1, NULL), MCC_ERR_INVALID);
        assert_int_equal(mcc_check(c, &other, false, -1, &r),
                         MCC_ERR_INVALID);
        assert_int_equal(r.error, MCC_ERR_INVALID);
        assert_int_equal(mcc_check(c, NULL, false, -1, NULL),
                         MCC_ERR_INVALID);
        assert_int_equal(mcc_check_async(c, &other, false, NULL, NULL),
                         MCC_ERR_INVALID);
        assert_int_equal(mcc_check_async(c, NULL, true, NULL, NULL),
                         MCC_ERR_INVALID);
    }
    assert_int_equal(mcc_renew(c, "r", 1, 0, -1, NULL), MCC_ERR_INVALID);
    assert_int_equal(mcc_node_set_json(c, 0, NULL, 1, -1, NULL),
                     MCC_ERR_INVALID);
    {
        static char doc[4097];
        memset(doc, ' ', sizeof doc);
        assert_int_equal(mcc_node_set_json(c, 0, doc, sizeof doc, -1, NULL),
                         MCC_ERR_INVALID);
        assert_int_equal(mcc_tenant_set_json_async(c, "t", 1, doc,
                                                   sizeof doc, NULL, NULL),
                         MCC_ERR_INVALID);
        assert_int_equal(mcc_tenant_set_json(c, "", 0, "{}", 2, -1, NULL),
                         MCC_ERR_NAME);
    }
    assert_int_equal(mcc_tenant_set(c, "t", 1, 0x04, 0, 0, -1, NULL),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_noop(c, 7, -1, NULL), MCC_ERR_INVALID);
    /* Multi-check items on two servers. */
    for (int i = 0; i < 200 && (!a || !b); i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        if (mcc_client_server_for(c, names[i], strlen(names[i])) == 0)
            a = a ? a : names[i];
        else
            b = b ? b : names[i];
    }
    assert_non_null(a);
    assert_non_null(b);
    items[0].name = a;
    items[0].name_len = strlen(a);
    items[1] = items[0];
    items[1].name = b;
    items[1].name_len = strlen(b);
    assert_int_equal(mcc_multi_check(c, items, 2, false, -1, NULL),
                     MCC_ERR_CROSS_SERVER);
    /* Lease helper arguments. */
    {
        mcc_lease *l = NULL;
        assert_int_equal(mcc_lease_acquire_async(c, "l", 1, 1, 1, 0, 0,
                                                 NULL, NULL, &l),
                         MCC_ERR_INVALID);
        assert_int_equal(mcc_lease_acquire_async(c, "", 0, 1, 1, 0, 100,
                                                 NULL, NULL, &l),
                         MCC_ERR_NAME);
        assert_null(l);
        assert_int_equal(mcc_lease_start(c, "l", 1, &(mcc_wait_params){
                                             .resources = 1, .maximum = 1 },
                                         NULL, NULL, &l), MCC_ERR_INVALID);
        assert_int_equal(mcc_lease_start(c, "", 0, &(mcc_wait_params){
                                             .resources = 1, .maximum = 1,
                                             .lease_ms = 100 },
                                         NULL, NULL, &l), MCC_ERR_NAME);
        assert_int_equal(mcc_lease_start(c, "l", 1, NULL, NULL, NULL, &l),
                         MCC_ERR_INVALID);
        assert_null(l);
    }
    /* Nothing was sent: no connection was opened. */
    for (size_t i = 0; i < mcc_client_server_count(c); i++)
        assert_int_equal(mcc_fd(c, i), -1);
    assert_int_equal(mcc_pending(c), 0);
    /* Texts. */
    for (int e = 0; e >= -13; e--)
        assert_true(strlen(mcc_strerror(e)) > 0);
    assert_string_equal(mcc_status_text(0x01), "Not found");
    assert_string_equal(mcc_status_text(0x77), "Unknown status");
    mcc_client_free(c);
}

/* ---- Fake-server scripts and their tests ---- */

/* The boundary requests of the hot operations, which mcc_submit does not
 * decode again: each must be one the server's decoder accepts. */
static const uint8_t fast_ops[] = {
    CNT_OP_ACQUIRE, CNT_OP_ACQUIRE, CNT_OP_ACQUIRE, CNT_OP_RELEASE,
    CNT_OP_RELEASE, CNT_OP_GET, CNT_OP_GET
};

/* Reads the hot operations' requests (fake_read fails any the server's
 * decoder refuses) and answers each with OK. */
static void script_fast_path(fake *f)
{
    for (size_t i = 0; i < sizeof fast_ops; i++) {
        cnt_request r;
        uint8_t out[64];
        if (!fake_expect(f, fast_ops[i], &r))
            return;
        fake_write(f, out, cnt_encode_u32(out, r.opcode, r.opaque, 0));
    }
}

static void test_fast_path_requests_decode(void **state)
{
    fake *f = fake_start(script_fast_path);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    static char longest[CNT_NAME_MAX];

    (void)state;
    memset(longest, 'n', sizeof longest);
    assert_int_equal(mcc_acquire_async(c, "a", 1, 1, 1, log_result, lb),
                     MCC_OK);
    assert_int_equal(mcc_acquire_async(c, longest, CNT_NAME_MAX, 7,
                                       0xffffffffu, log_result, lb), MCC_OK);
    assert_int_equal(mcc_acquire_async(c, "a", 1, 0xffffffffu, 0xffffffffu,
                                       log_result, lb), MCC_OK);
    assert_int_equal(mcc_release_async(c, "a", 1, 0, log_result, lb),
                     MCC_OK);
    assert_int_equal(mcc_release_async(c, longest, CNT_NAME_MAX,
                                       0xffffffffu, log_result, lb), MCC_OK);
    assert_int_equal(mcc_get_async(c, "g", 1, log_result, lb), MCC_OK);
    assert_int_equal(mcc_get_async(c, longest, CNT_NAME_MAX, log_result,
                                   lb), MCC_OK);
    poll_until(c, lb, (int)sizeof fast_ops);
    log_expect(lb, "02:0:0", "02:0:0", "02:0:0", "03:0", "03:0", "01:0:0",
               "01:0:0", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Answers a Get with 7 and a Dump with two records, a byte at a time. */
static void script_partial(fake *f)
{
    cnt_request rq;
    uint8_t out[256];
    size_t n;

    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, rq.opaque, 7);
    fake_write_slowly(f, out, n);
    if (!fake_expect(f, CNT_OP_DUMP, &rq))
        return;
    n = cnt_encode_dump_record(out, rq.opaque, 1, 2, (const uint8_t *)"ab",
                               2);
    n += cnt_encode_dump_record(out + n, rq.opaque, 3, 4,
                                (const uint8_t *)"cd", 2);
    n += cnt_encode_empty(out + n, CNT_OP_DUMP, rq.opaque);
    fake_write_slowly(f, out, n);
}

static void test_partial_reads(void **state)
{
    fake *f = fake_start(script_partial);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    assert_int_equal(mcc_get(c, "job", 3, GIVE_UP_MS, &r), MCC_OK);
    assert_int_equal(r.value, 7);
    assert_int_equal(r.op, MCC_OP_GET);
    assert_int_equal(mcc_dump(c, 0, log_record, lb, GIVE_UP_MS), MCC_OK);
    log_expect(lb, "rec:ab", "rec:cd", "end:0", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Answers a Busiest for 5 with two records a byte at a time, and a
 * second one with 0x81, as a server without the opcode does. */
static void script_busiest(fake *f)
{
    cnt_request rq;
    uint8_t out[256];
    size_t n;

    if (!fake_expect(f, CNT_OP_BUSIEST, &rq))
        return;
    assert_int_equal(rq.count, 5);
    n = cnt_encode_busy_record(out, rq.opaque, 9, CNT_BUSY_KIND_GCRA,
                               (const uint8_t *)"api", 3);
    n += cnt_encode_busy_record(out + n, rq.opaque, 4, CNT_BUSY_KIND_TTL,
                                (const uint8_t *)"t", 1);
    n += cnt_encode_empty(out + n, CNT_OP_BUSIEST, rq.opaque);
    fake_write_slowly(f, out, n);
    if (!fake_expect(f, CNT_OP_BUSIEST, &rq))
        return;
    n = cnt_encode_error(out, CNT_OP_BUSIEST, CNT_STATUS_UNKNOWN_COMMAND,
                         rq.opaque);
    fake_write(f, out, n);
}

/* Collects a busiest series as "kind:checks:name" lines. */
static void log_busy(mcc_client *c, const mcc_record *rec, void *arg)
{
    (void)c;
    if (rec->more)
        log_add(arg, "%u:%u:%.*s", (unsigned)rec->kind,
                (unsigned)rec->checks, (int)rec->name_len, rec->name);
    else
        log_add(arg, "end:%d:%u", rec->error, (unsigned)rec->status);
}

static void test_busiest(void **state)
{
    fake *f = fake_start(script_busiest);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);

    (void)state;
    assert_int_equal(mcc_busiest(c, 0, 5, log_busy, lb, GIVE_UP_MS), MCC_OK);
    assert_int_equal(mcc_busiest_async(c, 0, 16, log_busy, lb), MCC_OK);
    poll_until(c, lb, 4);
    log_expect(lb, "2:9:api", "0:4:t", "end:0:0", "end:-10:129", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Reads three requests (Get, Wait_acquire, Get), then answers them in one
 * write with events between the answers: granted for the wait, one with
 * an unknown code (ignored). */
static void script_pipeline(fake *f)
{
    cnt_request r1, r2, r3;
    uint8_t out[512];
    size_t n;

    if (!fake_expect(f, CNT_OP_GET, &r1) ||
        !fake_expect(f, CNT_OP_WAIT_ACQUIRE, &r2) ||
        !fake_expect(f, CNT_OP_GET, &r3))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, r1.opaque, 1);
    n += cnt_encode_wait_answer(out + n, r2.opaque, CNT_WAIT_QUEUED, 1, 0, 2);
    n += cnt_encode_event(out + n, 0x09, r2.opaque, 0, 0,
                          (const uint8_t *)"zz", 2);
    n += cnt_encode_event(out + n, CNT_EVENT_GRANTED, r2.opaque, 5, 3,
                          (const uint8_t *)"w", 1);
    n += cnt_encode_u32(out + n, CNT_OP_GET, r3.opaque, 3);
    fake_write(f, out, n);
}

/* A callback that tries a blocking call inside (refused) and logs. */
static void cb_try_blocking(mcc_client *c, const mcc_result *r, void *arg)
{
    log_result(c, r, arg);
    log_add(arg, "nested:%d", mcc_get(c, "x", 1, 10, NULL));
}

static void test_pipeline_events(void **state)
{
    fake *f = fake_start(script_pipeline);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_get_async(c, "a", 1, cb_try_blocking, lb), MCC_OK);
    assert_int_equal(mcc_wait_acquire_async(c, "w", 1, 1, 1, 1000, 0,
                                            log_result, lb), MCC_OK);
    assert_int_equal(mcc_get_async(c, "c", 1, log_result, lb), MCC_OK);
    assert_int_equal(mcc_pending(c), 3);
    poll_until(c, lb, 5);
    log_expect(lb, "01:0:1", "nested:-12", "20:0:w1", "ev1:w", "01:0:3",
               NULL);
    assert_int_equal(mcc_pending(c), 0);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Answers a Get with a header declaring a body of nearly 4 GiB. */
static void script_oversized(fake *f)
{
    cnt_request rq;
    uint8_t out[CNT_HEADER_SIZE];

    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    cnt_encode_response_header(out, CNT_OP_GET, 0, 0xfffffff0u, rq.opaque);
    fake_write(f, out, sizeof out);
    /* Wait for the client to close. */
    fake_read(f, &rq);
}

static void test_oversized_body(void **state)
{
    fake *f = fake_start(script_oversized);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);

    (void)state;
    mcc_client_set_retry_ms(c, 600000);
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_get_async(c, "a", 1, log_result, lb), MCC_OK);
    poll_until(c, lb, 2);
    log_expect(lb, "01:-8", "ev16:-8:s00", NULL);
    /* The failed server is left alone for the retry pause. */
    assert_int_equal(mcc_get(c, "a", 1, -1, NULL), MCC_ERR_SERVER_DOWN);
    assert_int_equal(mcc_fd(c, 0), -1);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Answers a Get with another request's opaque. */
static void script_wrong_opaque(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, rq.opaque + 1, 1);
    fake_write(f, out, n);
    fake_read(f, &rq);
}

static void test_wrong_opaque(void **state)
{
    fake *f = fake_start(script_wrong_opaque);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_get(c, "a", 1, GIVE_UP_MS, &r), MCC_ERR_PROTOCOL);
    assert_int_equal(r.error, MCC_ERR_PROTOCOL);
    log_expect(lb, "ev16:-8:s00", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Reads two Gets, sends half an answer and closes. */
static void script_close_mid_answer(fake *f)
{
    cnt_request r1, r2;
    uint8_t out[64];

    if (!fake_expect(f, CNT_OP_GET, &r1) || !fake_expect(f, CNT_OP_GET, &r2))
        return;
    cnt_encode_u32(out, CNT_OP_GET, r1.opaque, 1);
    fake_write(f, out, 7);
    f->closed = true;
}

static void test_close_mid_answer(void **state)
{
    fake *f = fake_start(script_close_mid_answer);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_get_async(c, "a", 1, log_result, lb), MCC_OK);
    assert_int_equal(mcc_get_async(c, "b", 1, log_result, lb), MCC_OK);
    poll_until(c, lb, 3);
    log_expect(lb, "01:-6", "01:-6", "ev16:-6:s00", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Keeps the first Get unanswered until the second arrives (the client
 * sends it only after the first timed out), then answers both. */
static void script_late_answer(fake *f)
{
    cnt_request r1, r2;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_GET, &r1) || !fake_expect(f, CNT_OP_GET, &r2))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, r1.opaque, 1);
    n += cnt_encode_u32(out + n, CNT_OP_GET, r2.opaque, 2);
    fake_write(f, out, n);
}

static void test_timeout_late_answer(void **state)
{
    fake *f = fake_start(script_late_answer);
    mcc_client *c = client_at(f->port);
    mcc_result r;

    (void)state;
    assert_int_equal(mcc_get(c, "a", 1, 50, &r), MCC_ERR_TIMEOUT);
    /* The late answer to the first is dropped; the second gets its own. */
    assert_int_equal(mcc_get(c, "b", 1, GIVE_UP_MS, &r), MCC_OK);
    assert_int_equal(r.value, 2);
    mcc_client_free(c);
    fake_finish(f);
}

/* Expects the Auth first and refuses it, then answers a Get. */
static void script_auth(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_AUTH, &rq))
        return;
    if (f->secret_len != 6 || memcmp(f->secret, "s3cret", 6) != 0)
        fake_fail(f, "wrong secret");
    n = cnt_encode_error(out, CNT_OP_AUTH, CNT_STATUS_AUTH_FAILED, rq.opaque);
    fake_write(f, out, n);
    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, rq.opaque, 4);
    fake_write(f, out, n);
}

static void test_auth_on_connect(void **state)
{
    fake *f = fake_start(script_auth);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_client_set_secret(c, "s3cret", 6), MCC_OK);
    assert_int_equal(mcc_get(c, "a", 1, GIVE_UP_MS, &r), MCC_OK);
    assert_int_equal(r.value, 4);
    log_expect(lb, "ev16:-13:s2b", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Expects Auth_user first and accepts it, answers a Get Throttled, then
 * refuses an Auth_user the application sends. */
static void script_auth_user(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_AUTH_USER, &rq))
        return;
    if (f->user_len != 3 || memcmp(f->user, "bob", 3) != 0 ||
        f->secret_len != 6 || memcmp(f->secret, "s3cret", 6) != 0 ||
        f->user_flags != CNT_AUTH_NONBLOCKING)
        fake_fail(f, "wrong user, secret or flags");
    n = cnt_encode_empty(out, CNT_OP_AUTH_USER, rq.opaque);
    fake_write(f, out, n);
    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    n = cnt_encode_throttled(out, CNT_OP_GET, rq.opaque, 250000000u,
                             CNT_TREASON_POOL_EMPTY);
    fake_write(f, out, n);
    if (!fake_expect(f, CNT_OP_AUTH_USER, &rq))
        return;
    if (f->user_len != 5 || memcmp(f->user, "carol", 5) != 0 ||
        f->secret_len != 2 || memcmp(f->secret, "pw", 2) != 0 ||
        f->user_flags != 0)
        fake_fail(f, "wrong user, secret or flags the second time");
    n = cnt_encode_error(out, CNT_OP_AUTH_USER, CNT_STATUS_AUTH_FAILED,
                         rq.opaque);
    fake_write(f, out, n);
}

static void test_auth_user(void **state)
{
    fake *f = fake_start(script_auth_user);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    /* The user first: nothing is sent for it until the secret is set. */
    assert_int_equal(mcc_client_set_user(c, "bob", 3, MCC_AUTH_NONBLOCKING),
                     MCC_OK);
    assert_int_equal(mcc_client_set_secret(c, "s3cret", 6), MCC_OK);
    assert_int_equal(mcc_get(c, "a", 1, GIVE_UP_MS, &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_THROTTLED);
    assert_int_equal(r.op, MCC_OP_GET);
    assert_true(r.throttled.retry_after_ns == 250000000u);
    assert_int_equal(r.throttled.reason, MCC_REASON_POOL_EMPTY);
    assert_int_equal(mcc_auth_user(c, 0, "carol", 5, "pw", 2, 0, GIVE_UP_MS,
                                   &r), MCC_ERR_STATUS);
    assert_int_equal(r.status, MCC_STATUS_AUTH_FAILED);
    assert_int_equal(r.op, MCC_OP_AUTH_USER);
    /* The accepted Auth_user on connecting reports nothing. */
    log_expect(lb, NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Expects Auth_user first and refuses it, then answers a Get. */
static void script_auth_user_refused(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_AUTH_USER, &rq))
        return;
    n = cnt_encode_error(out, CNT_OP_AUTH_USER, CNT_STATUS_AUTH_FAILED,
                         rq.opaque);
    fake_write(f, out, n);
    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    n = cnt_encode_u32(out, CNT_OP_GET, rq.opaque, 4);
    fake_write(f, out, n);
}

static void test_auth_user_refused_on_connect(void **state)
{
    fake *f = fake_start(script_auth_user_refused);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_result r;

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_client_set_secret(c, "s3cret", 6), MCC_OK);
    assert_int_equal(mcc_client_set_user(c, "bob", 3, 0), MCC_OK);
    assert_int_equal(mcc_get(c, "a", 1, GIVE_UP_MS, &r), MCC_OK);
    assert_int_equal(r.value, 4);
    log_expect(lb, "ev16:-13:s2b", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Behaves as a memcache text port does: reads the bytes as a command
 * line, and answers ERROR when the line ends. */
static void script_memcache(fake *f)
{
    static const char error[] = "ERROR\r\n";

    while (memchr(f->buf, '\n', f->len) == NULL) {
        struct pollfd p = { f->fd, POLLIN, 0 };
        ssize_t n;

        if (f->len == sizeof f->buf || poll(&p, 1, GIVE_UP_MS) != 1) {
            fake_fail(f, "no line end came");
            return;
        }
        n = read(f->fd, f->buf + f->len, sizeof f->buf - f->len);
        if (n <= 0) {
            fake_fail(f, "no line end came");
            return;
        }
        f->len += (size_t)n;
    }
    fake_write(f, error, sizeof error - 1);
}

/* A memcache port is named as such at once, not left to time out. */
static void test_memcache_port(void **state)
{
    fake *f = fake_start(script_memcache);
    mcc_client *c = client_at(f->port);
    mcc_result r;

    (void)state;
    assert_int_equal(mcc_get(c, "a", 1, GIVE_UP_MS, &r),
                     MCC_ERR_MEMCACHE_PORT);
    assert_string_equal(mcc_strerror(MCC_ERR_MEMCACHE_PORT),
                        "this is a memcache port, not the counter port");
    mcc_client_free(c);
    fake_finish(f);
}

/* Answers one Window_check (allowed). */
static void script_window(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    cnt_check_result res = { CNT_CHECK_ALLOWED, 10, 9, 1, 0, 5 };

    if (!fake_expect(f, CNT_OP_WINDOW_CHECK, &rq))
        return;
    fake_write(f, out, cnt_encode_check_answer(out, CNT_OP_WINDOW_CHECK,
                                               rq.opaque, &res));
}

static void test_server_down_remap(void **state)
{
    fake *f = fake_start(script_window);
    mcc_client *c = mcc_client_new();
    uint16_t dead_port;
    int dead = listen_local(&dead_port);
    char name[16] = "";
    mcc_result r;
    int rc;

    (void)state;
    close(dead);                /* nothing listens there any more */
    assert_int_equal(mcc_client_add_server(c, "127.0.0.1", dead_port, 1), 0);
    assert_int_equal(mcc_client_add_server(c, "127.0.0.1", f->port, 1), 1);
    mcc_client_set_retry_ms(c, 600000);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "k%d", i);
        if (mcc_client_server_for(c, name, strlen(name)) == 0)
            break;
    }
    assert_int_equal(mcc_client_server_for(c, name, strlen(name)), 0);
    rc = mcc_get(c, name, strlen(name), GIVE_UP_MS, &r);
    assert_int_equal(rc, MCC_ERR_CONNECT);
    /* Down now: refused at once, and rate limits stay put while
     * remapping is off. */
    assert_int_equal(mcc_get(c, name, strlen(name), -1, NULL),
                     MCC_ERR_SERVER_DOWN);
    assert_int_equal(mcc_window_check(c, name, strlen(name), false, 0, 10, 1,
                                      0, -1, NULL), MCC_ERR_SERVER_DOWN);
    mcc_client_set_remap_rate_limits(c, true);
    assert_int_equal(mcc_window_check(c, name, strlen(name), false, 0, 10, 1,
                                      0, GIVE_UP_MS, &r), MCC_OK);
    assert_int_equal(r.server, 1);
    assert_int_equal(r.check.remaining, 9);
    /* Semaphores never move. */
    assert_int_equal(mcc_acquire(c, name, strlen(name), 1, 1, -1, NULL),
                     MCC_ERR_SERVER_DOWN);
    mcc_client_free(c);
    fake_finish(f);
}

/* Answers two Noops. */
static void script_two_noops(fake *f)
{
    cnt_request r1, r2;
    uint8_t out[64];
    size_t n;

    if (!fake_expect(f, CNT_OP_NOOP, &r1) || !fake_expect(f, CNT_OP_NOOP, &r2))
        return;
    n = cnt_encode_empty(out, CNT_OP_NOOP, r1.opaque);
    n += cnt_encode_empty(out + n, CNT_OP_NOOP, r2.opaque);
    fake_write(f, out, n);
}

/* Logs what the watch callback is told. */
static void log_watch(mcc_client *c, size_t server, int fd, int wants,
                      void *arg)
{
    (void)c;
    log_add(arg, "watch:%zu:%s:%d", server, fd >= 0 ? "fd" : "none", wants);
}

static void test_event_loop_api(void **state)
{
    fake *f = fake_start(script_two_noops);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    logbook *wl = calloc(1, sizeof *wl);

    (void)state;
    assert_int_equal(mcc_client_set_max_queue(c, 2, CNT_REQUEST_MAX),
                     MCC_OK);
    mcc_client_set_watch_callback(c, log_watch, wl);
    assert_int_equal(mcc_wants(c, 0), 0);
    assert_int_equal(mcc_noop_async(c, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_noop_async(c, 0, log_result, lb), MCC_OK);
    assert_int_equal(mcc_noop_async(c, 0, log_result, lb), MCC_ERR_BUSY);
    assert_true(mcc_fd(c, 0) >= 0);
    assert_true(mcc_wants(c, 0) & MCC_WANT_WRITE);
    assert_true(mcc_next_timeout_ms(c) >= 0);
    /* The application's own loop. */
    for (int round = 0; lb->n < 2 && round < GIVE_UP_MS / 10; round++) {
        struct pollfd p = { mcc_fd(c, 0), 0, 0 };
        int w = mcc_wants(c, 0);
        p.events = (short)((w & MCC_WANT_READ ? POLLIN : 0) |
                           (w & MCC_WANT_WRITE ? POLLOUT : 0));
        if (poll(&p, 1, 10) > 0) {
            if (p.revents & POLLOUT)
                mcc_on_writable(c, 0);
            if (p.revents & (POLLIN | POLLHUP | POLLERR))
                mcc_on_readable(c, 0);
        }
        mcc_tick(c);
    }
    log_expect(lb, "00:0", "00:0", NULL);
    assert_int_equal(mcc_next_timeout_ms(c), -1);
    /* The watch callback saw the connection open and wanting to write. */
    assert_true(wl->n >= 2);
    assert_string_equal(wl->item[wl->n - 1], "watch:0:fd:1");
    mcc_client_free(c);
    free(lb);
    free(wl);
    fake_finish(f);
}

/* Closes the first connection after a Get, then answers a Get on a
 * second one. */
static void script_reconnect(fake *f)
{
    cnt_request rq;
    uint8_t out[64];
    struct pollfd p = { f->lfd, POLLIN, 0 };

    if (!fake_expect(f, CNT_OP_GET, &rq))
        return;
    close(f->fd);
    f->len = 0;
    f->fd = -1;
    if (poll(&p, 1, GIVE_UP_MS) != 1) {
        fake_fail(f, "no second connection");
        return;
    }
    f->fd = accept(f->lfd, NULL, NULL);
    if (f->fd < 0 || !fake_expect(f, CNT_OP_GET, &rq))
        return;
    fake_write(f, out, cnt_encode_u32(out, CNT_OP_GET, rq.opaque, 5));
}

/* Logs, and on a lost connection asks again at once (a retry pause of
 * 0 lets it reconnect from inside the failure's own callback). */
static void cb_retry(mcc_client *c, const mcc_result *r, void *arg)
{
    log_result(c, r, arg);
    if (r->error == MCC_ERR_IO)
        log_add(arg, "again:%d", mcc_get_async(c, "a", 1, log_result, arg));
}

static void test_reconnect_in_callback(void **state)
{
    fake *f = fake_start(script_reconnect);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);

    (void)state;
    mcc_client_set_retry_ms(c, 0);
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_get_async(c, "a", 1, cb_retry, lb), MCC_OK);
    poll_until(c, lb, 4);
    log_expect(lb, "01:-6", "again:0", "ev16:-6:s00", "01:0:5", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Grants a lease helper's Wait_acquire, then closes the connection. */
static void script_lease_drop(fake *f)
{
    cnt_request rq;
    uint8_t out[64];

    if (!fake_expect(f, CNT_OP_WAIT_ACQUIRE, &rq))
        return;
    fake_write(f, out, cnt_encode_wait_answer(out, rq.opaque,
                                              CNT_WAIT_GRANTED, 0, 9, 1));
    f->closed = true;
}

/* Releases the lease from inside its own callback when it is lost. */
static void release_on_loss(mcc_client *c, mcc_lease *l, mcc_lease_state st,
                            int error, uint8_t status, void *arg)
{
    log_lease(c, l, st, error, status, arg);
    if (st == MCC_LEASE_LOST)
        mcc_lease_release(l);
}

static void test_lease_connection_lost(void **state)
{
    fake *f = fake_start(script_lease_drop);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_lease *l = NULL;

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    assert_int_equal(mcc_lease_acquire_async(c, "L", 1, 1, 1, 0, 60000,
                                             release_on_loss, lb, &l),
                     MCC_OK);
    assert_int_equal(mcc_lease_get_state(l), MCC_LEASE_WAITING);
    poll_until(c, lb, 3);
    log_expect(lb, "lease:1:0:s00", "lease:3:-6:s00", "ev16:-6:s00", NULL);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

/* Grants a lease, answers a Noop, then the lease's Wait_release. */
static void script_lease_noop(fake *f)
{
    cnt_request rq;
    uint8_t out[64];

    if (!fake_expect(f, CNT_OP_WAIT_ACQUIRE, &rq))
        return;
    fake_write(f, out, cnt_encode_wait_answer(out, rq.opaque,
                                              CNT_WAIT_GRANTED, 0, 9, 1));
    if (!fake_expect(f, CNT_OP_NOOP, &rq))
        return;
    fake_write(f, out, cnt_encode_empty(out, CNT_OP_NOOP, rq.opaque));
    if (!fake_expect(f, CNT_OP_WAIT_RELEASE, &rq))
        return;
    fake_write(f, out, cnt_encode_u32(out, CNT_OP_WAIT_RELEASE, rq.opaque,
                                      1));
}

static int noops_answered;

/* Counts the Noop the application sent with the lease as its arg. */
static void count_noop(mcc_client *c, const mcc_result *r, void *arg)
{
    (void)c;
    (void)arg;
    if (r->op == MCC_OP_NOOP && r->error == MCC_OK)
        noops_answered++;
}

/* On the grant: a request of the application's own, whose arg happens to
 * be the lease, then the lease given up. */
static void noop_then_release(mcc_client *c, mcc_lease *l,
                              mcc_lease_state st, int error, uint8_t status,
                              void *arg)
{
    log_lease(c, l, st, error, status, arg);
    if (st != MCC_LEASE_GRANTED)
        return;
    log_add(arg, "noop:%d", mcc_noop_async(c, 0, count_noop, l));
    mcc_lease_release(l);
}

static void test_lease_release_keeps_app_requests(void **state)
{
    fake *f = fake_start(script_lease_noop);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    mcc_lease *l = NULL;

    (void)state;
    noops_answered = 0;
    assert_int_equal(mcc_lease_acquire_async(c, "L", 1, 1, 1, 0, 60000,
                                             noop_then_release, lb, &l),
                     MCC_OK);
    poll_until(c, lb, 2);
    for (int round = 0; mcc_pending(c) > 0 && round < GIVE_UP_MS / 10;
         round++)
        mcc_poll(c, 10);
    log_expect(lb, "lease:1:0:s00", "noop:0", NULL);
    /* Releasing the lease drops the lease's own requests only. */
    assert_int_equal(noops_answered, 1);
    mcc_client_free(c);
    free(lb);
    fake_finish(f);
}

static void test_busy_connection_still_watched(void **state)
{
    fake *f = fake_start(script_auth);
    mcc_client *c = client_at(f->port);
    logbook *lb = calloc(1, sizeof *lb);
    logbook *wl = calloc(1, sizeof *wl);

    (void)state;
    mcc_client_set_event_callback(c, log_event, lb);
    mcc_client_set_watch_callback(c, log_watch, wl);
    assert_int_equal(mcc_client_set_secret(c, "s3cret", 6), MCC_OK);
    assert_int_equal(mcc_client_set_max_queue(c, 1, CNT_REQUEST_MAX),
                     MCC_OK);
    /* The Auth the connection starts with does not take the one slot. */
    assert_int_equal(mcc_get_async(c, "a", 1, log_result, lb), MCC_OK);
    assert_int_equal(mcc_get_async(c, "a", 1, log_result, lb),
                     MCC_ERR_BUSY);
    /* The new connection was told, with its wish to write. */
    assert_true(wl->n >= 1);
    assert_true(strstr(wl->item[wl->n - 1], "watch:0:fd:") != NULL);
    assert_true(mcc_wants(c, 0) & MCC_WANT_WRITE);
    poll_until(c, lb, 2);
    log_expect(lb, "ev16:-13:s2b", "01:0:4", NULL);
    mcc_client_free(c);
    free(lb);
    free(wl);
    fake_finish(f);
}

/* The name of get_lease: length-prefixed, so that fields holding the
 * separator do not collide; refused above MCC_NAME_MAX. */
static void test_get_lease_name(void **state)
{
    static char buf[MCC_NAME_MAX], big[MCC_NAME_MAX + 1];
    char a[64], b[64];
    int na, nb;

    (void)state;
    na = mcc_get_lease_name(buf, sizeof buf, "guest", "localhost", "inserts");
    assert_int_equal(na, 34);
    assert_memory_equal(buf, "getlease:5:guest9:localhostinserts", 34);
    assert_int_equal(mcc_get_lease_name(buf, sizeof buf, "", "", ""), 13);
    assert_memory_equal(buf, "getlease:0:0:", 13);
    na = mcc_get_lease_name(a, sizeof a, "a:1", "b", "c");
    nb = mcc_get_lease_name(b, sizeof b, "a", "1:b", "c");
    assert_true(na > 0 && nb > 0);
    assert_false(na == nb && memcmp(a, b, (size_t)na) == 0);
    /* Too small a buffer, NULLs, too long a name. */
    assert_int_equal(mcc_get_lease_name(a, 20, "guest", "localhost", "i"),
                     MCC_ERR_INVALID);
    assert_int_equal(mcc_get_lease_name(a, sizeof a, NULL, "d", "o"),
                     MCC_ERR_INVALID);
    memset(big, 'u', MCC_NAME_MAX - 20);
    assert_int_equal(mcc_get_lease_name(buf, sizeof buf, big, "", ""),
                     MCC_NAME_MAX - 3);
    memset(big, 'u', MCC_NAME_MAX);
    assert_int_equal(mcc_get_lease_name(buf, sizeof buf, big, "", ""),
                     MCC_ERR_NAME);
}

int main(void)
{
    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_get_lease_name),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fast_path_requests_decode),
        cmocka_unit_test(test_partial_reads),
        cmocka_unit_test(test_busiest),
        cmocka_unit_test(test_pipeline_events),
        cmocka_unit_test(test_oversized_body),
        cmocka_unit_test(test_wrong_opaque),
        cmocka_unit_test(test_close_mid_answer),
        cmocka_unit_test(test_timeout_late_answer),
        cmocka_unit_test(test_auth_on_connect),
        cmocka_unit_test(test_auth_user),
        cmocka_unit_test(test_auth_user_refused_on_connect),
        cmocka_unit_test(test_memcache_port),
        cmocka_unit_test(test_server_down_remap),
        cmocka_unit_test(test_event_loop_api),
        cmocka_unit_test(test_lease_connection_lost),
        cmocka_unit_test(test_reconnect_in_callback),
        cmocka_unit_test(test_lease_release_keeps_app_requests),
        cmocka_unit_test(test_busy_connection_still_watched),
    };
    int failed;

    signal(SIGPIPE, SIG_IGN);
    failed = cmocka_run_group_tests_name("client (no server)", offline, NULL,
                                         NULL);
    return failed ? 1 : 0;
}
