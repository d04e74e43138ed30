/* test_oom.c: allocation failures on the server's connection path. Every
 * allocation our code makes is made to fail in turn, through the fake
 * allocator of tests/engine_fake.c (which reaches only the project's own
 * objects, never libevent's or libc's); each time the connection must
 * answer correctly or close, and release what it held. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "engine/server/connection.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "tests/engine_fake.h"

#define LONG_NAME 65535

/* One expected answer: opcode and opaque (a Dump is a series). */
static const struct { uint8_t opcode; uint32_t opaque; } want[] = {
    { CNT_OP_ACQUIRE, 1 }, { CNT_OP_ACQUIRE, 2 }, { CNT_OP_ACQUIRE, 3 },
    { CNT_OP_GET, 4 }, { CNT_OP_DUMP, 5 }, { CNT_OP_STATS, 6 },
    { CNT_OP_RELEASE, 7 }, { CNT_OP_NOOP, 8 },
};
#define NWANT (sizeof want / sizeof want[0])

/* Builds the client's request stream; returns its length. */
static size_t build_stream(uint8_t *out, const uint8_t *long_name)
{
    size_t n = 0;
    n += cnt_encode_acquire(out + n, 1, 1, 1, "a", 1);
    n += cnt_encode_acquire(out + n, 2, 2, 4, "b", 1);
    /* Bigger than the initial input buffer: the buffer must grow. */
    n += cnt_encode_acquire(out + n, 3, 3, 5, long_name, LONG_NAME);
    n += cnt_encode_get(out + n, 4, "a", 1);
    /* Its 65557-byte record makes the output buffer grow. */
    n += cnt_encode_simple(out + n, CNT_OP_DUMP, 5);
    n += cnt_encode_simple(out + n, CNT_OP_STATS, 6);
    n += cnt_encode_release(out + n, 7, 1, "a", 1);
    n += cnt_encode_simple(out + n, CNT_OP_NOOP, 8);
    return n;
}

/* Checks the answers read so far are an in-order prefix of want[];
 * returns how many whole answers there were. */
static size_t check_answers(const uint8_t *buf, size_t len)
{
    size_t pos = 0, next = 0;
    bool have_a = false;
    cnt_response res;
    while (cnt_response_decode(buf + pos, len - pos, &res) ==
           CNT_DECODE_OK) {
        assert_true(next < NWANT);
        assert_int_equal(res.opcode, want[next].opcode);
        assert_int_equal(res.opaque, want[next].opaque);
        if (res.opcode == CNT_OP_ACQUIRE) {
            /* Out of memory is the one failure an Acquire may report. */
            assert_true(res.status == CNT_STATUS_OK ||
                        res.status == CNT_STATUS_OUT_OF_MEMORY);
            if (res.opaque == 1)
                have_a = res.status == CNT_STATUS_OK;
        }
        if (res.opcode == CNT_OP_GET) {
            /* Get "a" sees exactly what the Acquire said it got. */
            assert_int_equal(res.status, have_a ? CNT_STATUS_OK
                                                : CNT_STATUS_NOT_FOUND);
            if (have_a)
                assert_int_equal(cnt_get_u32(res.body), 1);
        }
        if (res.opcode == CNT_OP_RELEASE)
            assert_int_equal(res.status, have_a ? CNT_STATUS_OK
                                                : CNT_STATUS_NOT_FOUND);
        if (res.opcode != CNT_OP_DUMP || res.body_len == 0)
            next++;
        pos += (size_t)res.size;
    }
    return next;
}

/* Fails if any counter still has consumption. */
static bool dump_zero(void *ctx, const uint8_t *name, uint16_t len,
                      uint32_t current, uint32_t max_in_window)
{
    (void)ctx, (void)name, (void)len, (void)max_in_window;
    assert_int_equal(current, 0);
    return true;
}

static void on_close(void *owner, cnt_connection *c)
{
    (void)c;
    *(bool *)owner = true;
}

/* Runs the whole exchange with allocation number k failing (-1: none);
 * returns whether the failure was injected. */
static bool run_with_failure(long k, const uint8_t *stream, size_t len)
{
    cnt_table_config tcfg = { .buckets = 64, .interval = 10 };
    cnt_table *table = cnt_table_new(&tcfg);
    cnt_stats *stats = cnt_stats_new(1);
    struct event_base *base = event_base_new();
    int sv[2];
    bool gone = false, eof = false;
    assert_non_null(table);
    assert_non_null(stats);
    assert_non_null(base);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    cnt_conn_env env = { .base = base,
                         .session = { .table = table, .stats = stats,
                                      .slot = cnt_stats_slot_get(stats, 0) },
                         .on_close = on_close, .owner = &gone };

    size_t off = 0, got = 0, cap = 4 * len + 65536;
    uint8_t *in = malloc(cap);      /* before arming: not ours to fail */
    assert_non_null(in);

    /* Allocation k (0 = the first) after this point fails; -1: none. */
    cnt_fake_alloc_fail_at(k < 0 ? 0 : (unsigned long)k + 1, 0);
    cnt_connection *c = cnt_connection_new(&env, sv[0]);
    if (c == NULL) {
        /* Refused cleanly: the caller still owns the descriptor. */
        assert_true(cnt_fake_alloc_injected());
        close(sv[0]);
        gone = eof = true;
    }
    for (unsigned idle = 0; c != NULL && !eof && idle < 2000;) {
        bool progress = false;
        if (off < len) {
            ssize_t w = send(sv[1], stream + off, len - off, MSG_NOSIGNAL);
            if (w > 0)
                off += (size_t)w, progress = true;
            else if (errno != EAGAIN)
                off = len;
            if (off == len)
                shutdown(sv[1], SHUT_WR);
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        ssize_t r = recv(sv[1], in + got, cap - got, 0);
        if (r > 0)
            got += (size_t)r, progress = true;
        else if (r == 0 || (r < 0 && errno != EAGAIN))
            eof = true;
        idle = progress ? 0 : idle + 1;
    }
    bool injected = cnt_fake_alloc_injected();
    cnt_fake_alloc_fail_at(0, 0);

    /* The connection ended (EOF or its own failure) and released all. */
    assert_true(eof && gone);
    size_t answers = check_answers(in, got);
    if (!injected)
        assert_int_equal(answers, NWANT);
    cnt_map_cursor cur = { 0 };
    assert_true(cnt_table_dump(table, &cur, dump_zero, NULL));

    /* The table is still good for everyone else. */
    cnt_holdings h;
    cnt_holdings_init(&h);
    assert_int_equal(cnt_table_acquire(table, &h, (const uint8_t *)"b", 1, 4, 4),
                     CNT_STATUS_OK);
    cnt_table_release_all(table, &h);
    cnt_holdings_destroy(&h);

    free(in);
    close(sv[1]);
    event_base_free(base);
    cnt_stats_free(stats);
    cnt_table_free(table);
    return injected;
}

/* Fails each allocation of the exchange in turn, then none. */
static void test_oom_each_allocation(void **state)
{
    (void)state;
    uint8_t *long_name = malloc(LONG_NAME);
    uint8_t *stream = malloc(4 * CNT_REQUEST_MAX);
    assert_non_null(long_name);
    assert_non_null(stream);
    memset(long_name, 'n', LONG_NAME);
    size_t len = build_stream(stream, long_name);

    long k = 0;
    while (run_with_failure(k, stream, len))
        k++;
    /* Connection, buffers, ledger, counter nodes and buffer growth: there
     * must have been several allocations to fail. */
    assert_true(k >= 5);
    printf("allocations failed one at a time: %ld\n", k);
    free(long_name);
    free(stream);
}

/* Runs the allocation-failure tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oom_each_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
