/* test_session.c: the request handler without sockets: bytes of requests go
 * into a session, answers are read from its output buffer and checked byte
 * for byte; input split anywhere, pipelines past the look-ahead, skipped
 * bodies, lost framing, a Dump paced by a small output, Stats, counting,
 * release on end, and running out of memory. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/core/limits.h"
#include "engine/core/ticket.h"
#include "engine/server/session.h"
#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/ws_quota.h"
#include "tests/engine_fake.h"
#include "tests/table_hooks.h"

/* A table, stats and a session on them, plus a pretend socket: the bytes
 * not yet consumed and everything the session has sent. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_table *table;
    cnt_stats *stats;
    cnt_session_env env;
    cnt_session *s;
    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *sent;
    size_t sent_len, sent_cap;
} fixture;

/* Builds a fixture with a table of the given buckets. Every allocation
 * of the project's objects goes through the fake allocator of
 * tests/engine_fake.c, which fails on request. */
static fixture *fixture_new_with(size_t buckets)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    cnt_fake_clock_init(&f->clock, UINT64_C(1700000000000));
    cnt_table_config tc = {.buckets = buckets, .interval = 10,
                           .clock = &f->clock.clock};
    f->table = cnt_table_new(&tc);
    f->stats = cnt_stats_new(1);
    assert_non_null(f->table);
    assert_non_null(f->stats);
    f->env = (cnt_session_env){.table = f->table, .stats = f->stats,
                               .slot = cnt_stats_slot_get(f->stats, 0)};
    f->s = malloc(sizeof(*f->s));
    assert_non_null(f->s);
    assert_true(cnt_session_init(f->s, &f->env));
    f->in_cap = 1 << 16;
    f->in = malloc(f->in_cap);
    f->sent_cap = 1 << 16;
    f->sent = malloc(f->sent_cap);
    assert_non_null(f->in);
    assert_non_null(f->sent);
    return f;
}

static fixture *fixture_new(void)
{
    return fixture_new_with(64);
}

/* Ends the session (if not ended yet) and frees everything. */
static void fixture_free(fixture *f)
{
    if (f->s != NULL)
        cnt_session_end(f->s);
    free(f->s);
    cnt_stats_free(f->stats);
    cnt_table_free(f->table);
    free(f->in);
    free(f->sent);
    free(f);
}

/* Takes everything the session produced, as a socket would. */
static void take_output(fixture *f)
{
    cnt_outbuf *o = &f->s->out;
    size_t n = cnt_outbuf_pending(o);
    while (f->sent_cap - f->sent_len < n) {
        f->sent_cap *= 2;
        f->sent = realloc(f->sent, f->sent_cap);
        assert_non_null(f->sent);
    }
    memcpy(f->sent + f->sent_len, cnt_outbuf_data(o), n);
    f->sent_len += n;
    cnt_outbuf_consume(o, n);
}

/* Adds bytes to the input, as if they arrived. */
static void arrive(fixture *f, const void *p, size_t n)
{
    while (f->in_cap - f->in_len < n) {
        f->in_cap *= 2;
        f->in = realloc(f->in, f->in_cap);
        assert_non_null(f->in);
    }
    memcpy(f->in + f->in_len, p, n);
    f->in_len += n;
}

/* Feeds the input once and drops what the session consumed; returns
 * how many bytes that was. */
static size_t feed(fixture *f)
{
    size_t used = cnt_session_feed(f->s, f->in, f->in_len);
    assert_true(used <= f->in_len);
    memmove(f->in, f->in + used, f->in_len - used);
    f->in_len -= used;
    return used;
}

/* Feeds and sends until the session has nothing more to do. */
static void run(fixture *f)
{
    do {
        feed(f);
        take_output(f);
    } while (f->s->more);
}

/* Writes a response by hand (not with the encoders under test): magic
 * 0x91, opcode, status, reserved, body length, opaque, body. */
static size_t resp(uint8_t *out, uint8_t opcode, uint8_t status,
                   uint32_t opaque, const void *body, uint32_t body_len)
{
    out[0] = 0x91;
    out[1] = opcode;
    out[2] = status;
    out[3] = 0;
    cnt_put_u32(out + 4, body_len);
    cnt_put_u32(out + 8, opaque);
    if (body_len > 0)
        memcpy(out + 12, body, body_len);
    return 12 + (size_t)body_len;
}

/* A response whose body is one big-endian u32. */
static size_t resp_u32(uint8_t *out, uint8_t opcode, uint32_t opaque,
                       uint32_t v)
{
    uint8_t b[4];
    cnt_put_u32(b, v);
    return resp(out, opcode, 0, opaque, b, 4);
}

/* An error response with its text. */
static size_t resp_text(uint8_t *out, uint8_t opcode, uint8_t status,
                        uint32_t opaque, const char *text)
{
    return resp(out, opcode, status, opaque, text, (uint32_t)strlen(text));
}

/* The request stream of test_answers_byte_for_byte and its answers. */
static size_t basic_stream(uint8_t *req, uint8_t *want, size_t *want_len)
{
    size_t n = 0, w = 0;
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 1);
    w += resp(want + w, CNT_OP_NOOP, 0, 1, NULL, 0);
    n += cnt_encode_get(req + n, 2, "a", 1);
    w += resp_text(want + w, CNT_OP_GET, 0x01, 2, "Not found");
    n += cnt_encode_acquire(req + n, 3, 3, 5, "a", 1);
    w += resp_u32(want + w, CNT_OP_ACQUIRE, 3, 3);
    n += cnt_encode_acquire(req + n, 4, 3, 5, "a", 1);
    w += resp_text(want + w, CNT_OP_ACQUIRE, 0x21, 4,
                   "Resource not available");
    n += cnt_encode_get(req + n, 5, "a", 1);
    w += resp_u32(want + w, CNT_OP_GET, 5, 3);
    n += cnt_encode_release(req + n, 6, 4, "a", 1);
    w += resp_text(want + w, CNT_OP_RELEASE, 0x22, 6, "Not acquired");
    n += cnt_encode_release(req + n, 7, 2, "a", 1);
    w += resp(want + w, CNT_OP_RELEASE, 0, 7, NULL, 0);
    n += cnt_encode_request_header(req + n, 0x55, 0, 8);
    w += resp_text(want + w, 0x55, 0x81, 8, "Unknown command");
    /* A Get whose name is empty. */
    n += cnt_encode_request_header(req + n, CNT_OP_GET, 2, 9);
    req[n++] = 0;
    req[n++] = 0;
    w += resp_text(want + w, CNT_OP_GET, 0x04, 9, "Invalid arguments");
    /* A Noop with a body it does not need. */
    n += cnt_encode_request_header(req + n, CNT_OP_NOOP, 3, 10);
    memcpy(req + n, "xyz", 3);
    n += 3;
    w += resp(want + w, CNT_OP_NOOP, 0, 10, NULL, 0);
    n += cnt_encode_get(req + n, 11, "a", 1);
    w += resp_u32(want + w, CNT_OP_GET, 11, 1);
    *want_len = w;
    return n;
}

static void test_answers_byte_for_byte(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[512], want[1024];
    size_t want_len, n = basic_stream(req, want, &want_len);
    assert_int_equal(cnt_session_feed(f->s, req, n), n);
    assert_false(f->s->more);
    assert_int_equal(f->s->need, 0);
    assert_false(f->s->closing);
    assert_false(f->s->failed);
    take_output(f);
    assert_int_equal(f->sent_len, want_len);
    assert_memory_equal(f->sent, want, want_len);
    fixture_free(f);
}

static void test_split_anywhere(void **state)
{
    (void)state;
    uint8_t req[512], want[1024];
    size_t want_len, n = basic_stream(req, want, &want_len);
    /* Every chunk size, from one byte at a time to all at once: the same
     * answers, and each incomplete request is reported with its size. */
    for (size_t chunk = 1; chunk <= n; chunk++) {
        fixture *f = fixture_new();
        for (size_t off = 0; off < n; off += chunk) {
            size_t k = n - off < chunk ? n - off : chunk;
            arrive(f, req + off, k);
            run(f);
            if (f->in_len > 0)
                assert_true(f->s->need > f->in_len);
            assert_true(f->s->need <= CNT_REQUEST_MAX);
        }
        assert_int_equal(f->in_len, 0);
        assert_int_equal(f->sent_len, want_len);
        assert_memory_equal(f->sent, want, want_len);
        fixture_free(f);
    }
}

static void test_need(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64];
    size_t n = cnt_encode_acquire(req, 1, 1, 1, "abc", 3);
    /* Part of a header: a header is needed. */
    arrive(f, req, 5);
    assert_int_equal(feed(f), 0);
    assert_int_equal(f->s->need, CNT_HEADER_SIZE);
    /* The header: the whole request's size is known. */
    arrive(f, req + 5, 10);
    assert_int_equal(feed(f), 0);
    assert_int_equal(f->s->need, n);
    arrive(f, req + 15, n - 15);
    assert_int_equal(feed(f), n);
    assert_int_equal(f->s->need, 0);
    fixture_free(f);
}

static void test_pipeline_past_look_ahead(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    enum { N = 200 };
    uint8_t *req = malloc(N * 64), *want = malloc(N * 64);
    size_t n = 0, w = 0;
    char name[16];
    for (uint32_t i = 0; i < N; i++) {
        int len = snprintf(name, sizeof(name), "p%u", i % 7);
        if (i % 3 == 0) {
            n += cnt_encode_acquire(req + n, i, 1, N, name, (uint16_t)len);
            w += resp_u32(want + w, CNT_OP_ACQUIRE, i, 1);
        } else if (i % 3 == 1) {
            n += cnt_encode_get(req + n, i, name, (uint16_t)len);
            /* The Acquires so far on the same name. */
            uint32_t held = 0;
            for (uint32_t j = 0; j <= i; j++)
                if (j % 3 == 0 && j % 7 == i % 7)
                    held++;
            if (held == 0)
                w += resp_text(want + w, CNT_OP_GET, 0x01, i, "Not found");
            else
                w += resp_u32(want + w, CNT_OP_GET, i, held);
        } else {
            n += cnt_encode_simple(req + n, CNT_OP_NOOP, i);
            w += resp(want + w, CNT_OP_NOOP, 0, i, NULL, 0);
        }
    }
    assert_int_equal(cnt_session_feed(f->s, req, n), n);
    take_output(f);
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    free(req);
    free(want);
    fixture_free(f);
}

static void test_watermark_mid_batch(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    enum { N = 40 };
    uint8_t req[N * 12], want[N * 12];
    for (uint32_t i = 0; i < N; i++) {
        cnt_encode_simple(req + 12 * i, CNT_OP_NOOP, i);
        resp(want + 12 * i, CNT_OP_NOOP, 0, i, NULL, 0);
    }
    /* Five answers reach the watermark: the feed stops after them with
     * the rest unconsumed, and nothing is answered twice. */
    f->s->out.high = 60;
    arrive(f, req, sizeof(req));
    assert_int_equal(feed(f), 5 * 12);
    assert_true(f->s->more);
    assert_int_equal(cnt_outbuf_pending(&f->s->out), 60);
    /* Nothing more while the output is not sent. */
    assert_int_equal(feed(f), 0);
    assert_true(f->s->more);
    run(f);
    assert_int_equal(f->in_len, 0);
    assert_int_equal(f->sent_len, sizeof(want));
    assert_memory_equal(f->sent, want, sizeof(want));
    /* The turn budget stops it the same way. */
    f->s->out.high = CNT_OUTBUF_HIGH;
    f->sent_len = 0;
    arrive(f, req, sizeof(req));
    cnt_outbuf_begin_turn(&f->s->out, 100);
    assert_int_equal(feed(f), 9 * 12);
    assert_true(f->s->more);
    take_output(f);
    assert_int_equal(feed(f), 0);
    cnt_outbuf_begin_turn(&f->s->out, (size_t)1 << 30);
    run(f);
    assert_int_equal(f->sent_len, sizeof(want));
    assert_memory_equal(f->sent, want, sizeof(want));
    fixture_free(f);
}

/* Busiest pays for its work out of the turn budget, not only for its
 * bytes: pipelined listings stop the turn after 16 of them (the 4 KiB
 * each costs, against a 64 KiB turn) where Noops of the same answer size
 * would all be answered, and the rest are answered in the next turns. */
static void test_busiest_turn_cost(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    cnt_limits_config lc = {.buckets = 64, .clock = &f->clock.clock};
    f->env.limits = cnt_limits_new(&lc);
    assert_non_null(f->env.limits);
    enum { N = 40 };
    uint8_t req[N * 16], want[N * 12];
    size_t len = 0;
    for (uint32_t i = 0; i < N; i++) {
        len += cnt_encode_busiest(req + len, i, 16);
        resp(want + 12 * i, CNT_OP_BUSIEST, 0, i, NULL, 0);
    }
    arrive(f, req, len);
    cnt_outbuf_begin_turn(&f->s->out, 64 * 1024);
    assert_int_equal(feed(f), 16 * (len / N));
    assert_true(f->s->more);
    take_output(f);
    assert_int_equal(f->sent_len, 16 * 12);
    assert_int_equal(feed(f), 0);
    for (int turn = 0; turn < 2; turn++) {
        cnt_outbuf_begin_turn(&f->s->out, 64 * 1024);
        feed(f);
        take_output(f);
    }
    assert_int_equal(f->in_len, 0);
    assert_int_equal(f->sent_len, sizeof(want));
    assert_memory_equal(f->sent, want, sizeof(want));
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    cnt_limits_free(f->env.limits);
    fixture_free(f);
}

static void test_skip_huge_body(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64], want[64];
    /* A Get declaring ~4 GiB: answered 0x04 at once, its body skipped as
     * it arrives and never stored. */
    size_t n = cnt_encode_request_header(req, CNT_OP_GET, 0xfffffff0u, 5);
    memset(req + n, 0xab, 20);
    arrive(f, req, n + 20);
    assert_int_equal(feed(f), n + 20);
    assert_int_equal(f->s->skip, 0xfffffff0u - 20);
    take_output(f);
    size_t w = resp_text(want, CNT_OP_GET, 0x04, 5, "Invalid arguments");
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    uint8_t junk[4096];
    memset(junk, 0x90, sizeof(junk));
    arrive(f, junk, sizeof(junk));
    assert_int_equal(feed(f), sizeof(junk));
    assert_int_equal(f->s->skip, 0xfffffff0u - 20 - sizeof(junk));
    assert_int_equal(cnt_outbuf_pending(&f->s->out), 0);
    fixture_free(f);
}

static void test_lost_framing(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64], want[16];
    /* A Noop, then text (a memcache client on the wrong port). */
    size_t n = cnt_encode_simple(req, CNT_OP_NOOP, 1);
    memcpy(req + n, "get some_key_here\r\n", 19);
    arrive(f, req, n + 19);
    assert_int_equal(feed(f), n);
    assert_true(f->s->closing);
    assert_false(f->s->more);
    take_output(f);
    size_t w = resp(want, CNT_OP_NOOP, 0, 1, NULL, 0);
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    /* Nothing more is taken. */
    assert_int_equal(feed(f), 0);
    assert_int_equal(cnt_outbuf_pending(&f->s->out), 0);
    fixture_free(f);
}

/* Makes n counters "k<i>" held by h, each at 1. */
static void make_counters(fixture *f, cnt_holdings *h, unsigned n)
{
    char name[16];
    for (unsigned i = 0; i < n; i++) {
        int len = snprintf(name, sizeof(name), "k%u", i);
        assert_int_equal(cnt_table_acquire(f->table, h, (uint8_t *)name,
                                           (uint16_t)len, 1, 1),
                         CNT_STATUS_OK);
    }
}

/* Checks what was sent: one Dump series of n records "k<i>" at 1 (each
 * once), its end, then a Noop answer with opaque 78. */
static void check_dump(const fixture *f, unsigned n)
{
    bool *seen = calloc(n, sizeof(*seen));
    size_t pos = 0;
    unsigned records = 0;
    cnt_response res;
    for (;;) {
        assert_int_equal(cnt_response_decode(f->sent + pos,
                                             f->sent_len - pos, &res),
                         CNT_DECODE_OK);
        pos += res.size;
        assert_int_equal(res.opcode, CNT_OP_DUMP);
        assert_int_equal(res.opaque, 77);
        if (cnt_response_is_dump_end(&res))
            break;
        cnt_dump_record rec;
        assert_true(cnt_dump_record_parse(&res, &rec));
        assert_int_equal(rec.current, 1);
        char name[16];
        assert_true(rec.name_len < sizeof(name));
        memcpy(name, rec.name, rec.name_len);
        name[rec.name_len] = '\0';
        unsigned i = (unsigned)strtoul(name + 1, NULL, 10);
        assert_true(i < n);
        assert_false(seen[i]);
        seen[i] = true;
        records++;
    }
    assert_int_equal(records, n);
    assert_int_equal(cnt_response_decode(f->sent + pos, f->sent_len - pos,
                                         &res), CNT_DECODE_OK);
    assert_int_equal(res.opcode, CNT_OP_NOOP);
    assert_int_equal(res.opaque, 78);
    assert_int_equal(pos + res.size, f->sent_len);
    free(seen);
}

/* A Dump of n counters in a table of the given buckets, paced by a
 * 200-byte watermark and a 150-byte turn. */
static void dump_paced(size_t buckets, unsigned n)
{
    fixture *f = fixture_new_with(buckets);
    cnt_holdings h;
    cnt_holdings_init(&h);
    make_counters(f, &h, n);
    uint8_t req[32];
    size_t len = cnt_encode_simple(req, CNT_OP_DUMP, 77);
    len += cnt_encode_simple(req + len, CNT_OP_NOOP, 78);
    arrive(f, req, len);
    f->s->out.high = 200;
    unsigned turns = 0;
    do {
        cnt_outbuf_begin_turn(&f->s->out, 150);
        feed(f);
        /* Never far past the watermark: it stops after the record that
         * reached it. */
        assert_true(cnt_outbuf_pending(&f->s->out) <
                    200 + CNT_DUMP_RECORD_SIZE(8));
        take_output(f);
        turns++;
    } while (f->s->more);
    assert_false(f->s->dumping);
    assert_int_equal(f->in_len, 0);
    assert_true(turns > n / 10);
    check_dump(f, n);
    cnt_table_release_all(f->table, &h);
    cnt_holdings_destroy(&h);
    fixture_free(f);
}

static void test_dump_paced(void **state)
{
    (void)state;
    dump_paced(64, 300);
}

static void test_dump_paced_one_chain(void **state)
{
    (void)state;
    dump_paced(1, 300);     /* every pause falls inside the one chain */
}

static void test_dump_mid_batch(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64], want[64];
    size_t n = cnt_encode_simple(req, CNT_OP_NOOP, 1);
    n += cnt_encode_simple(req + n, CNT_OP_DUMP, 2);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 3);
    size_t w = resp(want, CNT_OP_NOOP, 0, 1, NULL, 0);
    w += resp(want + w, CNT_OP_DUMP, 0, 2, NULL, 0);   /* empty table */
    w += resp(want + w, CNT_OP_NOOP, 0, 3, NULL, 0);
    arrive(f, req, n);
    run(f);
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    fixture_free(f);
}

/* A Dump of a huge, empty table yields after each slice of buckets it
 * looked at (more set, nothing written) instead of walking the whole
 * bucket array in one turn; fed again, it ends with its end marker. */
static void test_dump_sparse_yields(void **state)
{
    (void)state;
    fixture *f = fixture_new_with(2 * CNT_MAP_DUMP_SCAN + 1);
    uint8_t req[16], want[16];
    size_t w = resp(want, CNT_OP_DUMP, 0, 9, NULL, 0);
    arrive(f, req, cnt_encode_simple(req, CNT_OP_DUMP, 9));
    unsigned turns = 0;
    do {
        feed(f);
        take_output(f);
        turns++;
        assert_true(turns <= 3);
    } while (f->s->more);
    assert_int_equal(turns, 3);
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    fixture_free(f);
}

static void test_dump_cancelled_on_end(void **state)
{
    (void)state;
    fixture *f = fixture_new_with(1);
    cnt_holdings h;
    cnt_holdings_init(&h);
    make_counters(f, &h, 50);
    uint8_t req[16];
    arrive(f, req, cnt_encode_simple(req, CNT_OP_DUMP, 77));
    f->s->out.high = 100;
    feed(f);
    assert_true(f->s->dumping);     /* paused inside the bucket's chain */
    cnt_session_end(f->s);
    /* The counters go; a cursor left registered would be moved along by
     * the sweep, writing into the ended session: poison it and look. */
    cnt_session *ended = f->s;
    f->s = NULL;
    memset(ended, 0xa5, sizeof(*ended));
    cnt_table_release_all(f->table, &h);
    cnt_holdings_destroy(&h);
    cnt_fake_clock_advance(&f->clock, 30000);
    assert_int_equal(table_sweep(f->table, 0, 1), 50);
    for (size_t i = 0; i < sizeof(*ended); i++)
        assert_int_equal(((const uint8_t *)ended)[i], 0xa5);
    free(ended);
    fixture_free(f);
}

static void test_release_all_on_end(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[128];
    size_t n = cnt_encode_acquire(req, 1, 3, 10, "x", 1);
    n += cnt_encode_acquire(req + n, 2, 1, 1, "y", 1);
    n += cnt_encode_acquire(req + n, 3, 2, 10, "x", 1);
    arrive(f, req, n);
    run(f);
    uint32_t v = 0;
    assert_int_equal(cnt_table_get(f->table, CNT_NAME("x"), &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 5);
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    assert_int_equal(cnt_table_get(f->table, CNT_NAME("x"), &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 0);
    assert_int_equal(cnt_table_get(f->table, CNT_NAME("y"), &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 0);
    fixture_free(f);
}

/* Returns the value of Stats item name in res as a number (-1: absent). */
static long stat_of(const cnt_response *res, const char *name)
{
    size_t pos = 0;
    const char *k, *v;
    uint16_t kl, vl;
    while (cnt_stats_next(res, &pos, &k, &kl, &v, &vl))
        if (kl == strlen(name) && memcmp(k, name, kl) == 0) {
            char text[32];
            assert_true(vl < sizeof(text));
            memcpy(text, v, vl);
            text[vl] = '\0';
            return strtol(text, NULL, 10);
        }
    return -1;
}

static void test_stats_and_counting(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[128];
    size_t n = cnt_encode_simple(req, CNT_OP_NOOP, 1);
    n += cnt_encode_get(req + n, 2, "g", 1);
    /* An invalid Get (empty name) is counted under get. */
    n += cnt_encode_request_header(req + n, CNT_OP_GET, 2, 3);
    req[n++] = 0;
    req[n++] = 0;
    /* A wrong magic with a plausible length: answered, not counted. */
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 4);
    req[n - 12] = 0x80;
    /* Unknown opcodes have no counter. */
    n += cnt_encode_request_header(req + n, 0x55, 0, 5);
    n += cnt_encode_simple(req + n, CNT_OP_STATS, 6);
    arrive(f, req, n);
    run(f);
    cnt_response res;
    size_t pos = 0;
    for (uint32_t i = 1; i <= 5; i++) {
        assert_int_equal(cnt_response_decode(f->sent + pos,
                                             f->sent_len - pos, &res),
                         CNT_DECODE_OK);
        assert_int_equal(res.opaque, i);
        pos += res.size;
    }
    assert_int_equal(cnt_response_decode(f->sent + pos, f->sent_len - pos,
                                         &res), CNT_DECODE_OK);
    assert_int_equal(res.opcode, CNT_OP_STATS);
    assert_int_equal(res.status, 0);
    assert_int_equal(res.opaque, 6);
    assert_int_equal(pos + res.size, f->sent_len);
    /* The Stats request counts itself, as the reference does. */
    assert_int_equal(stat_of(&res, "command:noop"), 1);
    assert_int_equal(stat_of(&res, "command:get"), 2);
    assert_int_equal(stat_of(&res, "command:stats"), 1);
    assert_int_equal(stat_of(&res, "command:acquire"), 0);
    assert_int_equal(stat_of(&res, "curr_connections"), 0);
    assert_int_equal(stat_of(&res, "buckets"), 64);
    /* The pairs fill the body exactly. */
    size_t pairs = 0, end = 0;
    const char *k, *v;
    uint16_t kl, vl;
    while (cnt_stats_next(&res, &end, &k, &kl, &v, &vl))
        pairs++;
    assert_int_equal(end, res.body_len);
    assert_int_equal(pairs, 94);
    fixture_free(f);
}

/* What the authentication and privileged-change hooks heard. */
static struct {
    unsigned failures, refused;
    char peer[CNT_PEER_MAX];
    char changes[8][400];
    unsigned nchanges;
} heard;

static void hear_auth_failed(cnt_session *s, unsigned attempt,
                             unsigned tries, bool refused)
{
    (void)attempt;
    assert_int_equal(tries, 3);
    heard.failures++;
    heard.refused += refused;
    snprintf(heard.peer, sizeof(heard.peer), "%s", s->peer);
}

static void hear_change(cnt_session *s, const char *what)
{
    assert_string_equal(s->peer, "[2001:db8::7]:4711");
    /* The first eight are kept; every one is counted. */
    if (heard.nchanges < 8)
        snprintf(heard.changes[heard.nchanges], sizeof(heard.changes[0]),
                 "%s", what);
    heard.nchanges++;
}

/* The status of each answer in f->sent, from pos on, into st; returns
 * how many there were. */
static unsigned statuses(fixture *f, size_t *pos, uint8_t *st, unsigned max)
{
    unsigned n = 0;
    cnt_response res;
    while (n < max && *pos < f->sent_len &&
           cnt_response_decode(f->sent + *pos, f->sent_len - *pos, &res) ==
               CNT_DECODE_OK) {
        st[n++] = res.status;
        *pos += res.size;
    }
    return n;
}

/* Authentication against the limit on failures (per address 2 per
 * second here): past it, a wrong secret and even the right one are
 * refused without comparing (0x2a), counted as refusals and as the
 * connection's tries; another connection from the same address is
 * refused too; the next second judges again. Every failure is reported
 * with the client's address, and every privileged change with what it
 * was and how it ended. */
static void test_auth_limit_and_changes(void **state)
{
    (void)state;
    static const char secret[] = "0123456789abcdef";
    fixture *f = fixture_new();
    cnt_throttle_config tc = {.buckets = 64, .clock = &f->clock.clock};
    cnt_throttle *th = cnt_throttle_new(&tc);
    cnt_auth_limit *lim = cnt_auth_limit_new(100, 2);
    assert_non_null(th);
    assert_non_null(lim);
    memset(&heard, 0, sizeof(heard));
    f->env.throttle = th;
    f->env.secret = (const uint8_t *)secret;
    f->env.secret_len = 16;
    f->env.auth_limit = lim;
    f->env.auth_failed = hear_auth_failed;
    f->env.privileged_change = hear_change;
    assert_string_equal(f->s->peer, "unknown");
    cnt_session_set_peer(f->s, "192.0.2.7", 4711);
    assert_string_equal(f->s->peer, "192.0.2.7:4711");
    assert_string_equal(f->s->peer_addr, "192.0.2.7");

    uint8_t req[512];
    uint8_t st[16];
    size_t pos = 0, n = 0;
    n += cnt_encode_auth(req + n, 1, "wrong secret 0000", 17);
    n += cnt_encode_auth(req + n, 2, "wrong secret 1111", 17);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 16), 2);
    assert_int_equal(st[0], CNT_STATUS_AUTH_FAILED);
    assert_int_equal(st[1], CNT_STATUS_AUTH_FAILED);
    assert_string_equal(heard.peer, "192.0.2.7:4711");

    /* A second connection from the same address, same second. */
    cnt_session *other = malloc(sizeof(*other));
    assert_non_null(other);
    assert_true(cnt_session_init(other, &f->env));
    cnt_session_set_peer(other, "192.0.2.7", 4712);
    cnt_session *first = f->s;
    f->s = other;
    n = cnt_encode_auth(req, 3, secret, 16);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 16), 1);
    assert_int_equal(st[0], CNT_STATUS_NOT_PERMITTED);
    assert_false(other->privileged);
    assert_string_equal(heard.peer, "192.0.2.7:4712");
    assert_int_equal(heard.refused, 1);
    assert_int_equal(
        atomic_load(&f->env.slot->auth_refused), 1);
    assert_int_equal(
        atomic_load(&f->env.slot->auth_failures), 2);
    cnt_session_end(other);
    free(other);
    f->s = first;

    /* The next second: judged again, and the right secret works. */
    cnt_fake_clock_advance(&f->clock, 1000);
    cnt_session_set_peer(f->s, "2001:db8::7", 4711);
    n = cnt_encode_auth(req, 4, secret, 16);
    static const uint8_t odd[] = {'a', 'c', 'm', 'e', '"', 0x01};
    n += cnt_encode_tenant_set(req + n, 5,
                               CNT_TENANT_SET_RESERVED | CNT_TENANT_SET_HARD,
                               0, 500, odd, sizeof(odd));
    n += cnt_encode_node_set(req + n, 6, 1000);
    n += cnt_encode_tenant_set(req + n, 7, CNT_TENANT_SET_RESERVED, 2000, 0,
                               "big", 3);
    n += cnt_encode_tenant_remove(req + n, 8, odd, sizeof(odd));
    n += cnt_encode_unthrottle(req + n, 9);
    n += cnt_encode_reload(req + n, 10);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 16), 7);
    assert_int_equal(st[0], 0);
    assert_true(f->s->privileged);
    assert_int_equal(heard.nchanges, 6);
    assert_string_equal(heard.changes[0], "tenant set \"acme\\x22\\x01\" "
                        "reserved 0 hard_limit 500: done");
    assert_string_equal(heard.changes[1], "node set capacity 1000: done");
    assert_int_equal(st[3], CNT_STATUS_OVER_CAPACITY);
    char want[128];
    snprintf(want, sizeof(want), "tenant set \"big\" reserved 2000: %s",
             cnt_status_text(CNT_STATUS_OVER_CAPACITY));
    assert_string_equal(heard.changes[2], want);
    assert_string_equal(heard.changes[3],
                        "tenant remove \"acme\\x22\\x01\": done");
    assert_string_equal(heard.changes[4], "unthrottle: done");
    snprintf(want, sizeof(want), "reload: %s",
             cnt_status_text(CNT_STATUS_NOT_FOUND));
    assert_string_equal(heard.changes[5], want);
    assert_int_equal(atomic_load(&f->env.slot->auth_refused), 1);
    fixture_free(f);
    cnt_throttle_free(th);
    cnt_auth_limit_free(lim);
}

/* The answers in f->sent from *pos on: statuses and bodies (as C
 * strings, cut at 255 bytes); returns how many. */
static unsigned answers(fixture *f, size_t *pos, uint8_t *st,
                        char (*body)[256], unsigned max)
{
    unsigned n = 0;
    cnt_response res;
    while (n < max && *pos < f->sent_len &&
           cnt_response_decode(f->sent + *pos, f->sent_len - *pos, &res) ==
               CNT_DECODE_OK) {
        st[n] = res.status;
        snprintf(body[n], 256, "%.*s", (int)res.body_len,
                 (const char *)res.body);
        n++;
        *pos += res.size;
    }
    return n;
}

/* The JSON commands, request by request: refused before Auth; after it,
 * the node and the tenant documents applied and answered with what they
 * left, a field left out keeping its value, and every refusal answered
 * with its status and the field it names, changing nothing; each change
 * reported with how it ended. */
static void test_json_commands(void **state)
{
    (void)state;
    static const char secret[] = "0123456789abcdef";
    fixture *f = fixture_new();
    cnt_throttle_config tc = {.buckets = 64, .clock = &f->clock.clock};
    cnt_throttle *th = cnt_throttle_new(&tc);
    assert_non_null(th);
    memset(&heard, 0, sizeof(heard));
    f->env.throttle = th;
    f->env.secret = (const uint8_t *)secret;
    f->env.secret_len = 16;
    f->env.privileged_change = hear_change;
    cnt_session_set_peer(f->s, "2001:db8::7", 4711);

    static const struct {
        const char *tenant;     /* NULL: the node's document */
        const char *doc;
        uint8_t status;
        const char *body;       /* exactly, or its start when it ends in * */
    } steps[] = {
        { NULL, "{\"capacity\": 1000}", 0, "{\"capacity\":1000}" },
        { "a", "{\"reserved\": 100, \"hard_limit\": \"unlimited\"}", 0,
          "{\"reserved\":100,\"hard_limit\":\"unlimited\"}" },
        { "a", "{\"hard_limit\": 500}", 0,
          "{\"reserved\":100,\"hard_limit\":500}" },
        { "a", "{\"hard_limit\": 50}", CNT_STATUS_INVALID,
          "hard_limit: 50 is below the tenant's reserve" },
        { "a", "{\"reserved\": 600}", CNT_STATUS_INVALID,
          "reserved: 600 is above the tenant's hard limit" },
        { "b", "{\"reserved\": 901}", CNT_STATUS_OVER_CAPACITY,
          "reserved: 901 would bring the reserves above the node's "
          "capacity" },
        { NULL, "{\"capacity\": 99}", CNT_STATUS_OVER_CAPACITY,
          "capacity: 99 is below the tenants' reserves (100)" },
        { NULL, "{\"capacity\": \"lots\"}", CNT_STATUS_INVALID,
          "capacity: expected a whole number 0..4294967295, got a string" },
        { "a", "{\"reserved\": 1, \"colour\": 2}", CNT_STATUS_INVALID,
          "unknown field \"colour\" (expected reserved or hard_limit)" },
        { "a", "{\"reserved\": ", CNT_STATUS_INVALID, "malformed JSON: *" },
    };
    enum { NSTEPS = sizeof(steps) / sizeof(steps[0]) };
    uint8_t req[2048], st[NSTEPS + 2];
    char body[NSTEPS + 2][256];
    size_t pos = 0, n = 0;

    /* Before Auth: refused, nothing parsed. */
    n += cnt_encode_node_set_json(req + n, 1, "{\"capacity\":5}", 14);
    n += cnt_encode_tenant_set_json(req + n, 2, "a", 1,
                                    "{\"reserved\":1}", 14);
    arrive(f, req, n);
    run(f);
    assert_int_equal(answers(f, &pos, st, body, NSTEPS), 2);
    assert_int_equal(st[0], CNT_STATUS_NOT_PERMITTED);
    assert_int_equal(st[1], CNT_STATUS_NOT_PERMITTED);
    assert_int_equal(heard.nchanges, 0);

    n = cnt_encode_auth(req, 3, secret, 16);
    for (unsigned i = 0; i < NSTEPS; i++) {
        const char *d = steps[i].doc;
        if (steps[i].tenant == NULL)
            n += cnt_encode_node_set_json(req + n, 10 + i, d, strlen(d));
        else
            n += cnt_encode_tenant_set_json(req + n, 10 + i, steps[i].tenant,
                                            1, d, strlen(d));
    }
    assert_true(n < sizeof(req));
    arrive(f, req, n);
    run(f);
    assert_int_equal(answers(f, &pos, st, body, NSTEPS + 2), NSTEPS + 1);
    assert_int_equal(st[0], 0);
    for (unsigned i = 0; i < NSTEPS; i++) {
        const char *want = steps[i].body;
        size_t wl = strlen(want);
        assert_int_equal(st[i + 1], steps[i].status);
        if (want[wl - 1] == '*')
            assert_memory_equal(body[i + 1], want, wl - 1);
        else
            assert_string_equal(body[i + 1], want);
    }
    /* The refusals changed nothing. */
    cnt_tenant_view v;
    cnt_node_view nv;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"a", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.reserved, 100);
    assert_int_equal(v.hard_limit, 500);
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"b", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.flags & CNT_TENANT_CONFIGURED, 0);
    cnt_throttle_node(th, &nv);
    assert_int_equal(nv.capacity, 1000);
    assert_int_equal(nv.reserved_sum, 100);
    /* Each change reported (the hook keeps the first eight). */
    assert_int_equal(heard.nchanges, NSTEPS);
    assert_string_equal(heard.changes[0], "node set (json): done");
    assert_string_equal(heard.changes[1], "tenant set \"a\" (json): done");
    char want[400];
    snprintf(want, sizeof(want), "tenant set \"a\" (json): %s: hard_limit: "
             "50 is below the tenant's reserve",
             cnt_status_text(CNT_STATUS_INVALID));
    assert_string_equal(heard.changes[3], want);
    n = cnt_encode_simple(req, CNT_OP_STATS, 99);
    arrive(f, req, n);
    run(f);
    cnt_response res;
    assert_int_equal(cnt_response_decode(f->sent + pos, f->sent_len - pos,
                                         &res), CNT_DECODE_OK);
    assert_int_equal(res.opaque, 99);
    assert_int_equal(stat_of(&res, "command:tenant_set_json"), 8);
    assert_int_equal(stat_of(&res, "command:node_set_json"), 4);
    fixture_free(f);
    cnt_throttle_free(th);
}

static void test_stats_after_buffer_moves(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    /* Unsent Noop answers fill most of the output, and the socket took a
     * little from the front: the Stats answer makes the buffer move and
     * grow, and its header must still land in front of its own body. */
    enum { N = CNT_OUTBUF_INITIAL / 12 - 4 };
    uint8_t *req = malloc(N * 12 + 12);
    for (uint32_t i = 0; i < N; i++)
        cnt_encode_simple(req + 12 * i, CNT_OP_NOOP, i);
    arrive(f, req, N * 12);
    assert_int_equal(feed(f), N * 12);
    cnt_outbuf_consume(&f->s->out, 120);
    arrive(f, req, cnt_encode_simple(req, CNT_OP_STATS, 999));
    assert_int_equal(feed(f), 12);
    assert_true(f->s->out.cap > CNT_OUTBUF_INITIAL);
    take_output(f);
    cnt_response res;
    size_t pos = 0;
    for (uint32_t i = 10; i < N; i++) {
        assert_int_equal(cnt_response_decode(f->sent + pos,
                                             f->sent_len - pos, &res),
                         CNT_DECODE_OK);
        assert_int_equal(res.opaque, i);
        pos += res.size;
    }
    assert_int_equal(cnt_response_decode(f->sent + pos, f->sent_len - pos,
                                         &res), CNT_DECODE_OK);
    assert_int_equal(res.opaque, 999);
    assert_int_equal(stat_of(&res, "command:noop"), N);
    assert_int_equal(pos + res.size, f->sent_len);
    free(req);
    fixture_free(f);
}

/* A request the decoder accepts is answered, one it refuses gets the
 * decoder's status, and both count in Stats under their opcode. */
static void test_handle_decoded(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64], want[64];
    cnt_request r;
    size_t n = cnt_encode_acquire(req, 7, 2, 2, "h", 1);
    assert_int_equal(cnt_request_decode(req, n, &r), CNT_DECODE_OK);
    arrive(f, req, n);
    n = cnt_encode_acquire(req, 8, 0, 2, "h", 1);
    assert_int_equal(cnt_request_decode(req, n, &r), CNT_DECODE_ERROR);
    arrive(f, req, n);
    run(f);
    assert_int_equal(f->in_len, 0);
    size_t w = resp_u32(want, CNT_OP_ACQUIRE, 7, 2);
    w += resp_text(want + w, CNT_OP_ACQUIRE, 0x04, 8, "Invalid arguments");
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    assert_int_equal(atomic_load(&f->env.slot->commands[CNT_CMD_ACQUIRE]), 2);
    fixture_free(f);
}

static void test_counter_memory_runs_out(void **state)
{
    (void)state;
    fixture *f = fixture_new_with(64);
    uint8_t req[64], want[128];
    size_t n = cnt_encode_acquire(req, 1, 1, 1, "m", 1);
    n += cnt_encode_acquire(req + n, 2, 1, 1, "m", 1);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 3);
    /* The counter's node cannot be made: 0x82, and the session goes on. */
    cnt_fake_alloc_fail_at(1, 0);
    arrive(f, req, n);
    run(f);
    cnt_fake_alloc_fail_at(0, 0);
    size_t w = resp_text(want, CNT_OP_ACQUIRE, 0x82, 1, "Out of memory");
    w += resp_u32(want + w, CNT_OP_ACQUIRE, 2, 1);
    w += resp(want + w, CNT_OP_NOOP, 0, 3, NULL, 0);
    assert_int_equal(f->sent_len, w);
    assert_memory_equal(f->sent, want, w);
    assert_false(f->s->failed);
    fixture_free(f);
}

static void test_output_memory_runs_out(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    uint8_t req[64];
    /* The session's own buffer cannot be made. */
    cnt_session *s = malloc(sizeof(*s));
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_session_init(s, &f->env));
    cnt_fake_alloc_fail_at(0, 0);
    free(s);
    /* Holding something, with the output nearly full and unsent. */
    arrive(f, req, cnt_encode_acquire(req, 1, 4, 4, "o", 1));
    feed(f);
    enum { N = CNT_OUTBUF_INITIAL / 12 + 10 };
    uint8_t *noops = malloc(N * 12);
    for (uint32_t i = 0; i < N; i++)
        cnt_encode_simple(noops + 12 * i, CNT_OP_NOOP, i);
    arrive(f, noops, N * 12);
    /* The growth fails: the session stops at once, failed. */
    cnt_fake_alloc_fail_at(1, 0);
    feed(f);
    assert_true(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    assert_true(f->s->failed);
    assert_true(f->in_len > 0);
    assert_int_equal(cnt_session_feed(f->s, f->in, f->in_len), 0);
    /* Ending it still gives back what it held. */
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    uint32_t v = 9;
    assert_int_equal(cnt_table_get(f->table, CNT_NAME("o"), &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 0);
    free(noops);
    fixture_free(f);
}

/* Runs the session tests. */

/* Tenants on connections: a session whose tenant is "t" (the default
 * tenant), on a throttle of capacity 3 with no reserves, each request
 * costing 1. */
static cnt_throttle *tenant_setup(fixture *f)
{
    cnt_throttle_config tc = {.buckets = 64, .clock = &f->clock.clock};
    cnt_throttle *th = cnt_throttle_new(&tc);
    assert_non_null(th);
    assert_int_equal(cnt_throttle_set_capacity(th, 3), CNT_STATUS_OK);
    f->env.throttle = th;
    f->env.default_tenant = (const uint8_t *)"t";
    f->env.default_tenant_len = 1;
    for (unsigned i = 0; i < CNT_COST_CLASSES; i++)
        f->env.tenant_cost[i] = 1;
    /* The session took its tenant when it was made: make it again. */
    cnt_session_end(f->s);
    assert_true(cnt_session_init(f->s, &f->env));
    return th;
}

/* Over its share, a connection's requests wait unconsumed, in order,
 * until the next second: the feed stops at the first one its tenant
 * cannot pay for and says how long until the second turns; feeding
 * again in the same second answers nothing; the next second answers
 * them. */
static void test_tenant_pauses(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    cnt_throttle *th = tenant_setup(f);
    cnt_fake_clock_advance(&f->clock, 250);
    uint8_t req[256];
    size_t n = 0, pos = 0;
    uint8_t st[16];
    for (uint32_t i = 1; i <= 5; i++)
        n += cnt_encode_simple(req + n, CNT_OP_NOOP, i);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 16), 3);
    assert_int_equal(f->s->pause_ns, UINT64_C(750000000));
    assert_int_equal(f->in_len, 2 * CNT_HEADER_SIZE);
    assert_false(f->s->more);
    /* Still the same second: nothing. */
    cnt_fake_clock_advance(&f->clock, 749);
    assert_int_equal(feed(f), 0);
    assert_int_equal(f->s->pause_ns, UINT64_C(1000000));
    /* The next second: the two that waited, in order. */
    cnt_fake_clock_advance(&f->clock, 1);
    run(f);
    assert_int_equal(f->s->pause_ns, 0);
    assert_int_equal(f->in_len, 0);
    cnt_response res;
    size_t at = pos;
    for (uint32_t want = 4; want <= 5; want++) {
        assert_int_equal(cnt_response_decode(f->sent + at, f->sent_len - at,
                                             &res), CNT_DECODE_OK);
        assert_int_equal(res.status, 0);
        assert_int_equal(res.opaque, want);
        at += res.size;
    }
    cnt_tenant_view v;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"t", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.used, 2);
    fixture_free(f);
    cnt_throttle_free(th);
}

/* Each class costs what the settings say; a free class and
 * authenticating cost nothing. */
static void test_tenant_costs(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    cnt_throttle *th = tenant_setup(f);
    assert_int_equal(cnt_throttle_set_capacity(th, 100), CNT_STATUS_OK);
    f->env.tenant_cost[CNT_COST_READ] = 0;
    f->env.tenant_cost[CNT_COST_ACQUIRE] = 7;
    uint8_t req[256];
    size_t n = 0, pos = 0;
    uint8_t st[16];
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 1);
    n += cnt_encode_acquire(req + n, 2, 1, 5, "k", 1);
    n += cnt_encode_release(req + n, 3, 1, "k", 1);
    n += cnt_encode_auth(req + n, 4, "0123456789abcdef", 16);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 16), 4);
    cnt_tenant_view v;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"t", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.used, 14);
    fixture_free(f);
    cnt_throttle_free(th);
}


/* Requests decoded together are paid with one charge when they fit
 * together; the ones the output had no room for are not paid twice when
 * they come again; a batch that does not fit pays request by request. */
static void test_tenant_batch_pays_once(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    cnt_throttle *th = tenant_setup(f);
    assert_int_equal(cnt_throttle_set_capacity(th, 1000), CNT_STATUS_OK);
    enum { N = 20 };
    uint8_t req[N * 12];
    for (uint32_t i = 0; i < N; i++)
        cnt_encode_simple(req + 12 * i, CNT_OP_NOOP, i);
    /* Five answers reach the watermark: the other 15 wait, paid. */
    f->s->out.high = 60;
    arrive(f, req, sizeof(req));
    assert_int_equal(feed(f), 5 * 12);
    assert_int_equal(f->s->prepaid, N - 5);
    f->s->out.high = CNT_OUTBUF_HIGH;
    run(f);
    assert_int_equal(f->in_len, 0);
    assert_int_equal(f->s->prepaid, 0);
    cnt_throttle_stats ts;
    cnt_throttle_stats_get(th, &ts);
    assert_int_equal(ts.checks, 1);
    cnt_tenant_view v;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"t", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v.used, N);
    /* At a capacity of 30, 20 more do not fit together: 10 pay one by
     * one, then the session pauses. */
    assert_int_equal(cnt_throttle_set_capacity(th, 30), CNT_STATUS_OK);
    arrive(f, req, sizeof(req));
    run(f);
    assert_int_equal(f->in_len, 10 * 12);
    assert_true(f->s->pause_ns > 0);
    cnt_throttle_stats_get(th, &ts);
    assert_int_equal(ts.checks, 1 + 1 + 10 + 1);
    fixture_free(f);
    cnt_throttle_free(th);
}

/* The users Auth_user knows for the tests below. */
static cnt_user test_user_list[] = {
    {.name = (uint8_t *)"bob", .name_len = 3, .tenant = (uint8_t *)"b",
     .tenant_len = 1, .secret = (uint8_t *)"bob's secret 123",
     .secret_len = 16, .privileges = 0},
    {.name = (uint8_t *)"ops", .name_len = 3, .tenant = (uint8_t *)"o",
     .tenant_len = 1, .secret = (uint8_t *)"ops's secret 456",
     .secret_len = 16,
     .privileges = CNT_PRIV_ADMIN | CNT_PRIV_UNTHROTTLED},
};
static const cnt_users test_users = {2, test_user_list};

/* The non-blocking mode a login asks for: each request over the share
 * is answered Throttled with the retry hint and its reason, and not run;
 * the next request that fits runs. */
static void test_tenant_nonblocking(void **state)
{
    (void)state;
    fixture *f = fixture_new();
    cnt_throttle *th = tenant_setup(f);
    f->env.users = &test_users;
    cnt_fake_clock_advance(&f->clock, 400);
    uint8_t req[512];
    size_t n = 0, pos = 0;
    n += cnt_encode_auth_user(req + n, 1, CNT_AUTH_NONBLOCKING, "bob", 3,
                              "bob's secret 123", 16);
    for (uint32_t i = 2; i <= 5; i++)
        n += cnt_encode_acquire(req + n, i, 1, 100, "k", 1);
    arrive(f, req, n);
    run(f);
    assert_int_equal(f->s->pause_ns, 0);
    assert_int_equal(f->in_len, 0);
    cnt_response res;
    for (uint32_t want = 1; want <= 5; want++) {
        assert_int_equal(cnt_response_decode(f->sent + pos,
                                             f->sent_len - pos, &res),
                         CNT_DECODE_OK);
        assert_int_equal(res.opaque, want);
        pos += res.size;
        if (want <= 4) {
            assert_int_equal(res.status, 0);
            continue;
        }
        assert_int_equal(res.status, CNT_STATUS_THROTTLED);
        assert_int_equal(res.body_len, CNT_THROTTLED_FIXED + 9);
        assert_int_equal(cnt_get_u64(res.body + CNT_THROTTLED_OFF_RETRY),
                         UINT64_C(600000000));
        assert_int_equal(res.body[CNT_THROTTLED_OFF_REASON],
                         CNT_TREASON_POOL_EMPTY);
        assert_memory_equal(res.body + CNT_THROTTLED_FIXED, "Throttled", 9);
    }
    /* Three acquired (not the throttled fourth): consumption 3. */
    uint32_t v = 0;
    assert_int_equal(cnt_table_get(f->table, (const uint8_t *)"k", 1, &v),
                     CNT_STATUS_OK);
    assert_int_equal(v, 3);
    cnt_tenant_view tv;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"b", 1, &tv),
                     CNT_STATUS_OK);
    assert_int_equal(tv.used, 3);
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"t", 1, &tv),
                     CNT_STATUS_OK);
    assert_int_equal(tv.used, 0);
    fixture_free(f);
    cnt_throttle_free(th);
}

/* Auth_user: a wrong secret or an unknown user fail alike; the admin
 * secret answers to "admin"; an Unthrottled Admin user is never paused
 * but counted, and may run the privileged opcodes; without users or a
 * secret, Not permitted. Auth's secret-only login is unchanged. */
static void test_auth_user(void **state)
{
    (void)state;
    static const char secret[] = "the admin secret";
    fixture *f = fixture_new();
    cnt_throttle *th = tenant_setup(f);
    uint8_t req[512];
    size_t n = 0, pos = 0;
    uint8_t st[32];
    n += cnt_encode_auth_user(req + n, 1, 0, "bob", 3, "not the secret!!",
                              16);
    n += cnt_encode_auth_user(req + n, 2, 0, "nobody", 6,
                              "bob's secret 123", 16);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 32), 2);
    assert_int_equal(st[0], CNT_STATUS_NOT_PERMITTED);
    assert_int_equal(st[1], CNT_STATUS_NOT_PERMITTED);

    f->env.users = &test_users;
    f->env.secret = (const uint8_t *)secret;
    f->env.secret_len = 16;
    n = 0;
    n += cnt_encode_auth_user(req + n, 3, 0, "bob", 3, "not the secret!!",
                              16);
    n += cnt_encode_auth_user(req + n, 4, 0, "nobody", 6,
                              "bob's secret 123", 16);
    n += cnt_encode_auth_user(req + n, 5, 0, "admin", 5, secret, 16);
    arrive(f, req, n);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 32), 3);
    assert_int_equal(st[0], CNT_STATUS_AUTH_FAILED);
    assert_int_equal(st[1], CNT_STATUS_AUTH_FAILED);
    assert_int_equal(st[2], 0);
    assert_true(f->s->privileged);
    assert_false(f->s->unthrottled);
    assert_memory_equal(f->s->tenant, "t", 1);

    cnt_session_end(f->s);
    assert_true(cnt_session_init(f->s, &f->env));
    n = cnt_encode_auth_user(req, 6, 0, "ops", 3, "ops's secret 456", 16);
    for (uint32_t i = 7; i <= 12; i++)
        n += cnt_encode_simple(req + n, CNT_OP_NOOP, i);
    n += cnt_encode_node_set(req + n, 13, 3);
    arrive(f, req, n);
    run(f);
    assert_int_equal(f->s->pause_ns, 0);
    assert_int_equal(statuses(f, &pos, st, 32), 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(st[i], 0);
    cnt_tenant_view tv;
    assert_int_equal(cnt_throttle_tenant(th, (const uint8_t *)"o", 1, &tv),
                     CNT_STATUS_OK);
    assert_int_equal(tv.used, 7);
    cnt_node_view nv;
    cnt_throttle_node(th, &nv);
    assert_int_equal(nv.used, 7);

    /* The old login still answers as it did. */
    cnt_session_end(f->s);
    assert_true(cnt_session_init(f->s, &f->env));
    n = cnt_encode_auth(req, 14, secret, 16);
    arrive(f, req, n);
    cnt_fake_clock_advance(&f->clock, 1000);
    run(f);
    assert_int_equal(statuses(f, &pos, st, 32), 1);
    assert_int_equal(st[0], 0);
    assert_true(f->s->privileged);
    fixture_free(f);
    cnt_throttle_free(th);
}

/* ---- Lease_list ---- */

/* Reads the next packet of f->sent from *off (an answer). */
static cnt_response next_answer(fixture *f, size_t *off)
{
    cnt_response res;

    assert_int_equal(cnt_response_decode(f->sent + *off, f->sent_len - *off,
                                         &res), CNT_DECODE_OK);
    *off += res.size;
    return res;
}

/* A survey hook that answers this worker's part only, leaving one other
 * worker to answer: the test plays that worker. */
static cnt_survey *test_survey;
static bool survey_no_memory;
static cnt_survey *survey_half(cnt_session *s, uint32_t want)
{
    cnt_lease_top part;

    if (survey_no_memory)
        return NULL;
    test_survey = cnt_survey_new(2, 0, want, s);
    assert_non_null(test_survey);
    cnt_lease_top_init(&part, want);
    cnt_lease_top_collect(&part, s->env->wheel, CNT_LEASE_WALK_MAX);
    assert_false(cnt_survey_answer(test_survey, &part));
    return test_survey;
}

/* The session's own wheel, alone (no hook): leases nearest first with
 * the exact time left on the fake clock, no wait and no grant without a
 * lease; the count clamped; pipelined requests after the end marker. */
static void test_lease_list_alone(void **state)
{
    fixture *f = fixture_new();
    cnt_wheel wheel;
    uint8_t req[256];
    size_t n = 0, off = 0;
    cnt_response res;
    cnt_lease_record rec;

    (void)state;
    cnt_wheel_init(&wheel, cnt_clock_mono_ns(&f->clock.clock));
    f->env.wheel = &wheel;
    f->env.max_waits = 8;
    n += cnt_encode_wait_acquire(req + n, 1, 2, 5, 0, 20000, "b", 1);
    n += cnt_encode_wait_acquire(req + n, 2, 1, 5, 0, 5000, "a", 1);
    n += cnt_encode_wait_acquire(req + n, 3, 1, 5, 0, 0, "c", 1);
    arrive(f, req, n);
    run(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(next_answer(f, &off).status, CNT_STATUS_OK);
    n = cnt_encode_lease_list(req, 0x11, 1000);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 0x12);
    n += cnt_encode_lease_list(req + n, 0x13, 1);
    arrive(f, req, n);
    run(f);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_int_equal(res.opaque, 0x11);
    assert_memory_equal(rec.name, "a", 1);
    assert_int_equal(rec.left_ms, 5000);
    assert_int_equal(rec.resources, 1);
    assert_true(rec.lease_id > 0);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_memory_equal(rec.name, "b", 1);
    assert_int_equal(rec.left_ms, 20000);
    assert_int_equal(rec.resources, 2);
    res = next_answer(f, &off);
    assert_true(cnt_response_is_lease_list_end(&res));
    assert_int_equal(res.opaque, 0x11);
    res = next_answer(f, &off);
    assert_int_equal(res.opcode, CNT_OP_NOOP);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_memory_equal(rec.name, "a", 1);
    res = next_answer(f, &off);
    assert_true(cnt_response_is_lease_list_end(&res));
    assert_int_equal(off, f->sent_len);
    /* Time passes: less left, whole ms rounded down. */
    cnt_fake_clock_advance_ns(&f->clock, UINT64_C(1500500000));
    n = cnt_encode_lease_list(req, 0x14, 1);
    arrive(f, req, n);
    run(f);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_int_equal(rec.left_ms, 3499);
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    cnt_wheel_destroy(&wheel);
    fixture_free(f);
}

/* With the worker's hook: while the other worker has not answered the
 * session writes and reads nothing (the Noop behind waits), then streams
 * the merged answer; a session that ends meanwhile orphans its survey,
 * which the last reference frees; no memory for a survey answers 0x82. */
static void test_lease_list_survey(void **state)
{
    fixture *f = fixture_new();
    cnt_wheel wheel;
    uint8_t req[128];
    size_t n, off = 0;
    cnt_response res;
    cnt_lease_record rec;
    cnt_lease_top part;
    long live;

    (void)state;
    cnt_wheel_init(&wheel, cnt_clock_mono_ns(&f->clock.clock));
    f->env.wheel = &wheel;
    f->env.max_waits = 8;
    f->env.survey_start = survey_half;
    n = cnt_encode_wait_acquire(req, 1, 1, 5, 0, 9000, "mine", 4);
    arrive(f, req, n);
    run(f);
    assert_int_equal(next_answer(f, &off).status, CNT_STATUS_OK);

    n = cnt_encode_lease_list(req, 0x21, 5);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 0x22);
    arrive(f, req, n);
    run(f);
    assert_true(f->s->surveying);
    assert_int_equal(f->sent_len, off);
    assert_int_equal(f->in_len, CNT_HEADER_SIZE);  /* the Noop, unread */
    run(f);
    assert_int_equal(f->sent_len, off);
    /* The other worker's part: one nearer lease. */
    cnt_lease_top_init(&part, test_survey->top.want);
    assert_true(cnt_lease_top_offer(&part, 1, 77, 3,
                                    (const uint8_t *)"theirs", 6));
    assert_true(cnt_survey_answer(test_survey, &part));
    cnt_session_survey_done(f->s);
    run(f);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_memory_equal(rec.name, "theirs", 6);
    assert_int_equal(rec.left_ms, 0);               /* long past */
    assert_true(rec.lease_id == 77);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_memory_equal(rec.name, "mine", 4);
    res = next_answer(f, &off);
    assert_true(cnt_response_is_lease_list_end(&res));
    res = next_answer(f, &off);
    assert_int_equal(res.opcode, CNT_OP_NOOP);
    assert_false(f->s->surveying);
    assert_null(f->s->survey);

    /* The asker ends while the other worker still has the survey. */
    live = cnt_fake_alloc_live();
    n = cnt_encode_lease_list(req, 0x23, 5);
    arrive(f, req, n);
    run(f);
    cnt_survey *sv = test_survey;
    cnt_survey_hold(sv);                    /* the other worker's post */
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    assert_null(cnt_survey_requester(sv));
    cnt_lease_top_init(&part, 5);
    assert_true(cnt_survey_answer(sv, &part));
    cnt_survey_put(sv);
    assert_true(cnt_fake_alloc_live() < live);  /* survey and ticket gone */

    /* No memory for the survey: 0x82, and the next request is answered. */
    f->s = malloc(sizeof(*f->s));
    assert_non_null(f->s);
    assert_true(cnt_session_init(f->s, &f->env));
    survey_no_memory = true;
    n = cnt_encode_lease_list(req, 0x24, 5);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 0x25);
    arrive(f, req, n);
    run(f);
    survey_no_memory = false;
    res = next_answer(f, &off);
    assert_int_equal(res.opcode, CNT_OP_LEASE_LIST);
    assert_int_equal(res.status, CNT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(next_answer(f, &off).opcode, CNT_OP_NOOP);
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    cnt_wheel_destroy(&wheel);
    fixture_free(f);
}

/* A survey hook that finds no slot free: it queues the session, as the
 * worker's does, and the test plays the worker that starts it later. */
static cnt_session *queued_session;
static unsigned queued_cancels;
static cnt_survey *survey_queue(cnt_session *s, uint32_t want)
{
    s->survey_queued = true;
    s->survey_want = want;
    queued_session = s;
    return NULL;
}

static void survey_unqueue(cnt_session *s)
{
    assert_ptr_equal(s, queued_session);
    queued_session = NULL;
    queued_cancels++;
}

/* A listing that must wait for a slot: the session reads and writes
 * nothing until its survey starts, then streams it once ready; a session
 * that ends while queued leaves its owner's queue and keeps nothing; a
 * survey that cannot start for want of memory answers 0x82, and the next
 * request is answered. */
static void test_lease_list_queued(void **state)
{
    fixture *f = fixture_new();
    cnt_wheel wheel;
    uint8_t req[128];
    size_t n, off = 0;
    cnt_response res;
    cnt_lease_record rec;
    cnt_lease_top part;

    (void)state;
    cnt_wheel_init(&wheel, cnt_clock_mono_ns(&f->clock.clock));
    f->env.wheel = &wheel;
    f->env.max_waits = 8;
    f->env.survey_start = survey_queue;
    f->env.survey_cancel = survey_unqueue;
    n = cnt_encode_wait_acquire(req, 1, 1, 5, 0, 9000, "mine", 4);
    arrive(f, req, n);
    run(f);
    assert_int_equal(next_answer(f, &off).status, CNT_STATUS_OK);

    n = cnt_encode_lease_list(req, 0x31, 3);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 0x32);
    arrive(f, req, n);
    run(f);
    assert_ptr_equal(queued_session, f->s);
    assert_true(f->s->survey_queued);
    assert_int_equal(f->s->survey_want, 3);
    assert_true(f->s->surveying);
    assert_null(f->s->survey);
    assert_int_equal(f->sent_len, off);
    assert_int_equal(f->in_len, CNT_HEADER_SIZE);  /* the Noop, unread */
    run(f);
    assert_int_equal(f->sent_len, off);
    /* A slot frees: the owner starts the survey, of one worker here. */
    cnt_survey *sv = cnt_survey_new(1, 0, f->s->survey_want, f->s);
    assert_non_null(sv);
    queued_session = NULL;
    cnt_session_survey_started(f->s, sv);
    assert_false(f->s->survey_queued);
    assert_true(f->s->surveying);           /* not answered yet */
    run(f);
    assert_int_equal(f->sent_len, off);
    cnt_lease_top_init(&part, sv->top.want);
    cnt_lease_top_collect(&part, &wheel, CNT_LEASE_WALK_MAX);
    assert_true(cnt_survey_answer(sv, &part));
    cnt_session_survey_done(f->s);
    run(f);
    res = next_answer(f, &off);
    assert_true(cnt_parse_lease_record(&res, &rec));
    assert_int_equal(res.opaque, 0x31);
    assert_memory_equal(rec.name, "mine", 4);
    res = next_answer(f, &off);
    assert_true(cnt_response_is_lease_list_end(&res));
    assert_int_equal(next_answer(f, &off).opcode, CNT_OP_NOOP);

    /* Started without memory for the survey: 0x82, then the Noop. */
    n = cnt_encode_lease_list(req, 0x33, 3);
    n += cnt_encode_simple(req + n, CNT_OP_NOOP, 0x34);
    arrive(f, req, n);
    run(f);
    assert_ptr_equal(queued_session, f->s);
    queued_session = NULL;
    cnt_session_survey_started(f->s, NULL);
    run(f);
    res = next_answer(f, &off);
    assert_int_equal(res.opcode, CNT_OP_LEASE_LIST);
    assert_int_equal(res.opaque, 0x33);
    assert_int_equal(res.status, CNT_STATUS_OUT_OF_MEMORY);
    res = next_answer(f, &off);
    assert_int_equal(res.opcode, CNT_OP_NOOP);
    assert_int_equal(res.opaque, 0x34);
    assert_int_equal(off, f->sent_len);

    /* The session ends while queued: it leaves the queue, once. */
    n = cnt_encode_lease_list(req, 0x35, 3);
    arrive(f, req, n);
    run(f);
    assert_ptr_equal(queued_session, f->s);
    queued_cancels = 0;
    cnt_session_end(f->s);
    free(f->s);
    f->s = NULL;
    assert_int_equal(queued_cancels, 1);
    assert_null(queued_session);
    cnt_wheel_destroy(&wheel);
    fixture_free(f);
}

/* A ticket for name alone, as the frame builder reads it. */
static cnt_ticket *frame_ticket(size_t len, char fill)
{
    cnt_ticket *k = calloc(1, sizeof(*k) + len);

    assert_non_null(k);
    k->name_len = (uint16_t)len;
    memset(k->name, fill, len);
    return k;
}

/* The WebSocket granted event another thread writes: one final text
 * frame, unmasked, of exactly the quota_passed message the front sends,
 * with a 7-bit length up to 125 bytes and a 16-bit one above; 0 when it
 * does not fit the room given. */
static void test_ws_granted_frame(void **state)
{
    uint8_t buf[255];
    char msg[CNT_QUOTA_OUT_MAX];
    (void)state;

    cnt_ticket *k = frame_ticket(3, 'a');
    size_t mlen = cnt_quota_encode_event(msg, "quota_passed", k->name, 3);
    size_t n = cnt_session_ws_granted_frame(k, buf, sizeof(buf));
    assert_int_equal(n, 2 + mlen);
    assert_int_equal(buf[0], 0x81);
    assert_int_equal(buf[1], mlen);
    assert_memory_equal(buf + 2, msg, mlen);
    assert_int_equal(cnt_session_ws_granted_frame(k, buf, 2 + mlen - 1), 0);
    free(k);

    k = frame_ticket(110, 'm');
    mlen = cnt_quota_encode_event(msg, "quota_passed", k->name, 110);
    assert_true(mlen > 125);
    n = cnt_session_ws_granted_frame(k, buf, sizeof(buf));
    assert_int_equal(n, 4 + mlen);
    assert_int_equal(buf[0], 0x81);
    assert_int_equal(buf[1], 126);
    assert_int_equal(buf[2] * 256 + buf[3], mlen);
    assert_memory_equal(buf + 4, msg, mlen);
    free(k);

    k = frame_ticket(240, 'L');     /* 270 bytes: not through this path */
    assert_int_equal(cnt_session_ws_granted_frame(k, buf, sizeof(buf)), 0);
    free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers_byte_for_byte),
        cmocka_unit_test(test_split_anywhere),
        cmocka_unit_test(test_need),
        cmocka_unit_test(test_pipeline_past_look_ahead),
        cmocka_unit_test(test_watermark_mid_batch),
        cmocka_unit_test(test_busiest_turn_cost),
        cmocka_unit_test(test_skip_huge_body),
        cmocka_unit_test(test_lost_framing),
        cmocka_unit_test(test_dump_paced),
        cmocka_unit_test(test_dump_paced_one_chain),
        cmocka_unit_test(test_dump_mid_batch),
        cmocka_unit_test(test_dump_sparse_yields),
        cmocka_unit_test(test_dump_cancelled_on_end),
        cmocka_unit_test(test_release_all_on_end),
        cmocka_unit_test(test_stats_and_counting),
        cmocka_unit_test(test_stats_after_buffer_moves),
        cmocka_unit_test(test_auth_limit_and_changes),
        cmocka_unit_test(test_json_commands),
        cmocka_unit_test(test_handle_decoded),
        cmocka_unit_test(test_counter_memory_runs_out),
        cmocka_unit_test(test_output_memory_runs_out),
        cmocka_unit_test(test_tenant_pauses),
        cmocka_unit_test(test_tenant_costs),
        cmocka_unit_test(test_tenant_batch_pays_once),
        cmocka_unit_test(test_tenant_nonblocking),
        cmocka_unit_test(test_auth_user),
        cmocka_unit_test(test_lease_list_alone),
        cmocka_unit_test(test_lease_list_survey),
        cmocka_unit_test(test_lease_list_queued),
        cmocka_unit_test(test_ws_granted_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
