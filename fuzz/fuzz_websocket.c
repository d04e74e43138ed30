/* fuzz_websocket.c: libFuzzer target for the WebSocket front's whole
 * decoding path: the HTTP upgrade request, RFC 6455 frames through wslay,
 * and the quota API's JSON messages, fed to a real session
 * (cnt_session_feed_ws) on a real table with one group, in chunks the way
 * a connection buffers them. An input whose first byte is even gets a
 * valid upgrade request put in front of the rest, so that the fuzzer
 * spends its time on frames and messages. Invariants: a feed never
 * consumes more than it was given, the output stays bounded while input
 * is pending, and once the session ends nothing waits or holds. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "engine/server/session.h"
#include "fuzz/fuzz.h"
#include "tests/engine_fake.h"

#define UPGRADE "GET /quota HTTP/1.1\r\nHost: f\r\nUpgrade: websocket\r\n" \
                "Connection: Upgrade\r\nSec-WebSocket-Key: "              \
                "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
#define MAX_MAIL 64

static cnt_fake_clock fclock;
static cnt_table *table;
static cnt_groups *groups;
static cnt_stats *stats;
static cnt_wheel wheel;
static cnt_session_env env;
static cnt_ticket *mail[MAX_MAIL];
static size_t nmail;

/* The table's grant sink: one worker, so every grant is for it. */
static void post(void *ctx, cnt_ticket *k)
{
    (void)ctx;
    FUZZ_CHECK(nmail < MAX_MAIL);
    mail[nmail++] = k;
}

/* Delivers the grants, as the worker's loop would. */
static void run_mail(void)
{
    while (nmail > 0)
        cnt_session_deliver(&env, mail[--nmail]);
}

static void init_once(void)
{
    if (table != NULL)
        return;
    cnt_fake_clock_init(&fclock, UINT64_C(1700000000000));
    cnt_table_config tc = { .buckets = 64, .interval = 10,
                            .clock = &fclock.clock };
    table = cnt_table_new(&tc);
    groups = cnt_groups_new();
    stats = cnt_stats_new(1);
    FUZZ_CHECK(table != NULL && groups != NULL && stats != NULL);
    cnt_group g = { .maximum = 1, .wait_ms = 50, .lease_ms = 100 };
    FUZZ_CHECK(cnt_groups_set(groups, (const uint8_t *)"abc", 3, &g));
    cnt_group h = { .maximum = 2, .wait_ms = 0, .lease_ms = 0 };
    FUZZ_CHECK(cnt_groups_set(groups, (const uint8_t *)"b", 1, &h));
    cnt_table_set_grant_sink(table, &(cnt_grant_sink){ post, NULL });
    cnt_wheel_init(&wheel, cnt_clock_mono_ns(&fclock.clock));
    env = (cnt_session_env){
        .table = table, .groups = groups, .max_waits = 4, .wheel = &wheel,
        .stats = stats, .slot = cnt_stats_slot_get(stats, 0),
        .ws_max_header = 1024, .ws_max_message = 512,
    };
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t in[4096 + sizeof(UPGRADE)];
    size_t len = 0;
    cnt_session s;

    init_once();
    FUZZ_CHECK(cnt_session_init(&s, &env));
    if (size > 0 && (data[0] & 1) == 0) {
        memcpy(in, UPGRADE, sizeof(UPGRADE) - 1);
        len = sizeof(UPGRADE) - 1;
    }
    if (size > 0) {
        data++;
        size--;
    }
    size_t pos = 0;
    while (!s.closing && !s.failed) {
        /* The next chunk: as much as fits, at most 37 bytes at a time,
         * so that frames and messages split across reads. */
        size_t take = size - pos < 37 ? size - pos : 37;
        if (take > sizeof(in) - len)
            take = sizeof(in) - len;
        memcpy(in + len, data + pos, take);
        len += take;
        pos += take;
        size_t used = cnt_session_feed_ws(&s, in, len);
        FUZZ_CHECK(used <= len);
        memmove(in, in + used, len - used);
        len -= used;
        run_mail();
        /* The client reads everything: the output never piles up. */
        size_t pending = cnt_outbuf_pending(&s.out);
        FUZZ_CHECK(pending <= 256u * 1024);
        cnt_outbuf_consume(&s.out, pending);
        /* Time passes a little: waits time out, leases expire. */
        cnt_fake_clock_advance(&fclock, 30);
        cnt_wheel_advance(&wheel, cnt_clock_mono_ns(&fclock.clock),
                          cnt_session_fire, &env);
        cnt_outbuf_consume(&s.out, cnt_outbuf_pending(&s.out));
        if (take == 0 && (used == 0 || len == 0))
            break;
    }
    cnt_session_end(&s);
    run_mail();
    cnt_wait_stats ws;
    cnt_table_get_wait_stats(table, &ws);
    FUZZ_CHECK(ws.waiting == 0);
    FUZZ_CHECK(ws.leases == 0);
    return 0;
}
