/* test_stats.c: the Stats report: the reference's item names in its order,
 * then the extras, with values summed over worker slots and read from the
 * table and the collector as they are now (not only after a GC). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/stats.h"
#include "tests/engine_fake.h"

#define NITEMS 94

typedef struct report {
    unsigned n;
    char name[NITEMS + 1][32];
    char value[NITEMS + 1][24];
} report;

static void collect(void *ctx, const char *name, const char *value)
{
    report *r = ctx;

    assert_true(r->n < NITEMS + 1);
    snprintf(r->name[r->n], sizeof r->name[0], "%s", name);
    snprintf(r->value[r->n], sizeof r->value[0], "%s", value);
    r->n++;
}

/* Value of item name as text ("" if absent). */
static const char *value_of(const report *r, const char *name)
{
    for (unsigned i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0)
            return r->value[i];
    return "";
}

/* The reference's items in its order, then ours. */
static const char *const expected_order[NITEMS] = {
    "objects", "total_objects", "used_memory", "conflicts", "gc_count",
    "last_gc_elapsed", "total_gc_elapsed", "curr_connections",
    "total_connections", "command:noop", "command:get", "command:acquire",
    "command:release", "command:stats", "command:dump",
    "command:wait_acquire", "command:renew", "command:wait_release",
    "command:queues", "command:ttl_insert", "command:ttl_query",
    "command:ttl_update", "command:ttl_purge", "command:window_check",
    "command:gcra_check", "command:multi_check", "command:auth",
    "command:throttle", "command:tenant_show", "command:tenant_list",
    "command:node_show", "command:tenant_set", "command:tenant_remove",
    "command:node_set", "command:unthrottle", "command:reload",
    "command:tenant_set_json", "command:node_set_json",
    "command:auth_user", "command:lease_list",
    "command:busiest",
    "rejected_connections", "buckets", "interval",
    "memory_limit", "waiting", "leases", "queue_grants", "wait_timeouts",
    "lease_expirations", "wait_cancels", "ttl_objects", "ttl_checks",
    "ttl_allowed", "ttl_limited", "ttl_expired", "window_objects",
    "window_checks", "window_allowed", "window_limited", "window_expired",
    "gcra_objects", "gcra_checks", "gcra_allowed", "gcra_limited",
    "gcra_expired", "limits_used_memory", "throttle_capacity",
    "throttle_used", "throttle_tenants", "throttle_checks",
    "throttle_allowed", "throttle_throttled",
    "throttle_throttled_reserve", "throttle_throttled_pool_empty",
    "throttle_throttled_hard_limit", "throttle_units",
    "throttle_unthrottled_units", "auth_failures", "auth_closes",
    "auth_refused",
    "throttr_insert", "throttr_query", "throttr_update", "throttr_purge",
    "throttr_failures", "throttr_bad_framing",
    "websocket_upgrades", "websocket_connections", "websocket_http_errors",
    "websocket_messages_in", "websocket_messages_out", "websocket_errors",
    "websocket_protocol_closes",
};

static void test_stats_empty(void **state)
{
    report r = { 0 };

    (void)state;
    cnt_stats_report(&(cnt_stats_sources){0}, collect, &r);
    assert_int_equal(r.n, NITEMS);
    for (unsigned i = 0; i < NITEMS; i++) {
        assert_string_equal(r.name[i], expected_order[i]);
        assert_string_equal(r.value[i], "0");
    }
}

static void test_stats_values(void **state)
{
    cnt_fake_clock clock;
    cnt_table_config cfg = { .buckets = 1, .interval = 10,
                             .memory_limit = 123456, .clock = &clock.clock };
    cnt_table *t;
    cnt_gc *gc;
    cnt_stats *s = cnt_stats_new(3);
    cnt_holdings h;
    report r = { 0 };
    char used[24];

    (void)state;
    cnt_fake_clock_init(&clock, UINT64_C(1700000000000));
    t = cnt_table_new(&cfg);
    gc = cnt_gc_new(t);
    assert_non_null(s);
    cnt_holdings_init(&h);
    /* Two counters in the one bucket: one conflict. */
    assert_int_equal(cnt_table_acquire(t, &h, CNT_NAME("a"), 1, 1),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_table_acquire(t, &h, CNT_NAME("b"), 1, 1),
                     CNT_STATUS_OK);
    cnt_gc_run_once(gc);
    /* Slot 0 saw two gets and an acquire, slot 2 a dump; connections. */
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->commands[CNT_CMD_GET], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->commands[CNT_CMD_GET], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->commands[CNT_CMD_ACQUIRE], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 2)->commands[CNT_CMD_GET], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 2)->commands[CNT_CMD_DUMP], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->total_connections, 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->total_connections, 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->curr_connections, 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 2)->rejected_connections, 1);
    /* The Throttr front's figures add up over the slots too. */
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->throttr_requests[0], 2);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->throttr_requests[0], 1);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->throttr_requests[3], 4);
    cnt_stats_add(&cnt_stats_slot_get(s, 2)->throttr_failures, 5);
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->throttr_bad_framing, 1);
    /* And the WebSocket front's. */
    cnt_stats_add(&cnt_stats_slot_get(s, 0)->ws_messages_in, 3);
    cnt_stats_add(&cnt_stats_slot_get(s, 2)->ws_messages_in, 4);
    cnt_stats_add(&cnt_stats_slot_get(s, 1)->ws_protocol_closes, 1);
    assert_null(cnt_stats_slot_get(s, 3));

    cnt_stats_report(&(cnt_stats_sources){ .stats = s, .table = t, .gc = gc },
                     collect, &r);
    assert_int_equal(r.n, NITEMS);
    for (unsigned i = 0; i < NITEMS; i++)
        assert_string_equal(r.name[i], expected_order[i]);
    assert_string_equal(value_of(&r, "objects"), "2");
    assert_string_equal(value_of(&r, "total_objects"), "2");
    assert_string_equal(value_of(&r, "conflicts"), "1");
    assert_string_equal(value_of(&r, "gc_count"), "1");
    assert_string_equal(value_of(&r, "curr_connections"), "1");
    assert_string_equal(value_of(&r, "total_connections"), "2");
    assert_string_equal(value_of(&r, "websocket_messages_in"), "7");
    assert_string_equal(value_of(&r, "websocket_protocol_closes"), "1");
    assert_string_equal(value_of(&r, "websocket_errors"), "0");
    assert_string_equal(value_of(&r, "command:noop"), "0");
    assert_string_equal(value_of(&r, "command:get"), "3");
    assert_string_equal(value_of(&r, "command:acquire"), "1");
    assert_string_equal(value_of(&r, "command:dump"), "1");
    assert_string_equal(value_of(&r, "rejected_connections"), "1");
    assert_string_equal(value_of(&r, "throttr_insert"), "3");
    assert_string_equal(value_of(&r, "throttr_query"), "0");
    assert_string_equal(value_of(&r, "throttr_purge"), "4");
    assert_string_equal(value_of(&r, "throttr_failures"), "5");
    assert_string_equal(value_of(&r, "throttr_bad_framing"), "1");
    assert_string_equal(value_of(&r, "buckets"), "1");
    assert_string_equal(value_of(&r, "interval"), "10");
    assert_string_equal(value_of(&r, "memory_limit"), "123456");
    cnt_map_stats ts;
    cnt_table_get_stats(t, &ts);
    snprintf(used, sizeof used, "%llu", (unsigned long long)ts.used_memory);
    assert_string_equal(value_of(&r, "used_memory"), used);

    cnt_table_release_all(t, &h);
    cnt_holdings_destroy(&h);
    cnt_gc_free(gc);
    cnt_table_free(t);
    cnt_stats_free(s);
    cnt_stats_free(NULL);
    cnt_gc_free(NULL);
}

static void test_stats_command_of(void **state)
{
    static const struct {
        uint8_t opcode;     /* request opcode byte */
        int command;        /* counter it feeds, -1 for none */
    } rows[] = {
        { 0x00, CNT_CMD_NOOP },
        { 0x01, CNT_CMD_GET },
        { 0x02, CNT_CMD_ACQUIRE },
        { 0x03, CNT_CMD_RELEASE },
        { 0x10, CNT_CMD_STATS },
        { 0x11, CNT_CMD_DUMP },
        { 0x04, -1 },
        { 0x12, -1 },
        { 0xff, -1 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_int_equal(cnt_stats_command_of(rows[i].opcode),
                         rows[i].command);
    /* Every counter has exactly one opcode; all other opcodes have none. */
    unsigned mapped[CNT_CMD_COUNT] = { 0 };
    for (unsigned op = 0; op < 256; op++) {
        int cmd = cnt_stats_command_of((uint8_t)op);
        assert_true(cmd >= -1 && cmd < CNT_CMD_COUNT);
        if (cmd >= 0)
            mapped[cmd]++;
    }
    for (int c = 0; c < CNT_CMD_COUNT; c++)
        assert_int_equal(mapped[c], 1);
    assert_null(cnt_stats_new(0));
}

static void test_stats_add_and_count(void **state)
{
    cnt_stats *s = cnt_stats_new(1);
    cnt_stats_slot *slot;

    (void)state;
    assert_non_null(s);
    slot = cnt_stats_slot_get(s, 0);
    /* Up and down again: a connection that opened and closed. */
    cnt_stats_add(&slot->curr_connections, 1);
    cnt_stats_add(&slot->curr_connections, 1);
    cnt_stats_add(&slot->curr_connections, -1);
    assert_int_equal(atomic_load(&slot->curr_connections), 1);
    cnt_stats_add(&slot->curr_connections, -1);
    assert_int_equal(atomic_load(&slot->curr_connections), 0);
    cnt_stats_add(&slot->total_connections, 40);
    cnt_stats_add(&slot->total_connections, 2);
    assert_int_equal(atomic_load(&slot->total_connections), 42);
    /* Counting by opcode: known ones land in their counter, others
     * nowhere. */
    cnt_stats_count_command(slot, CNT_OP_RELEASE);
    cnt_stats_count_command(slot, CNT_OP_RELEASE);
    cnt_stats_count_command(slot, CNT_OP_STATS);
    cnt_stats_count_command(slot, 0x55);
    assert_int_equal(atomic_load(&slot->commands[CNT_CMD_RELEASE]), 2);
    assert_int_equal(atomic_load(&slot->commands[CNT_CMD_STATS]), 1);
    uint64_t all = 0;
    for (int c = 0; c < CNT_CMD_COUNT; c++)
        all += atomic_load(&slot->commands[c]);
    assert_int_equal(all, 3);
    cnt_stats_free(s);
}

/* Runs the Stats tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_empty),
        cmocka_unit_test(test_stats_values),
        cmocka_unit_test(test_stats_command_of),
        cmocka_unit_test(test_stats_add_and_count),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
