/* stats.c: per-worker statistic slots and the Stats report, which sums the
 * slots and adds the table's and the collector's figures in the reference's
 * item order, followed by this server's extra items. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/stats.h"

struct cnt_stats {
    unsigned n;
    cnt_stats_slot *slots;
};

/* Builds n zeroed slots, each on its own cache lines. */
cnt_stats *cnt_stats_new(unsigned n)
{
    cnt_stats *s;

    if (n == 0)
        return NULL;
    s = malloc(sizeof *s);
    if (s == NULL)
        return NULL;
    s->n = n;
    s->slots = aligned_alloc(_Alignof(cnt_stats_slot),
                             n * sizeof(cnt_stats_slot));
    if (s->slots == NULL) {
        free(s);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        cnt_stats_slot *slot = &s->slots[i];
        for (int c = 0; c < CNT_CMD_COUNT; c++)
            atomic_init(&slot->commands[c], 0);
        atomic_init(&slot->curr_connections, 0);
        atomic_init(&slot->total_connections, 0);
        atomic_init(&slot->rejected_connections, 0);
        atomic_init(&slot->auth_failures, 0);
        atomic_init(&slot->auth_closes, 0);
        atomic_init(&slot->auth_refused, 0);
        for (int t = 0; t < 4; t++)
            atomic_init(&slot->throttr_requests[t], 0);
        atomic_init(&slot->throttr_failures, 0);
        atomic_init(&slot->throttr_bad_framing, 0);
        atomic_init(&slot->ws_upgrades, 0);
        atomic_init(&slot->ws_curr, 0);
        atomic_init(&slot->ws_http_errors, 0);
        atomic_init(&slot->ws_messages_in, 0);
        atomic_init(&slot->ws_messages_out, 0);
        atomic_init(&slot->ws_errors, 0);
        atomic_init(&slot->ws_protocol_closes, 0);
    }
    return s;
}

/* Frees the slots. */
void cnt_stats_free(cnt_stats *s)
{
    if (s == NULL)
        return;
    free(s->slots);
    free(s);
}

/* The opcode lookup of the command counters, from the opcode table. */
const uint8_t cnt_stats_command_slots[256] = {
#define CNT_STATS_COMMAND_SLOT(id, ...) [CNT_OP_##id] = CNT_CMD_##id + 1,
    CNT_OPCODE_ROWS(CNT_STATS_COMMAND_SLOT)
#undef CNT_STATS_COMMAND_SLOT
};

/* The opcode each command counter counts. */
static const uint8_t command_opcodes[CNT_CMD_COUNT] = {
#define CNT_STATS_COMMAND_OPCODE(id, ...) [CNT_CMD_##id] = CNT_OP_##id,
    CNT_OPCODE_ROWS(CNT_STATS_COMMAND_OPCODE)
#undef CNT_STATS_COMMAND_OPCODE
};

/* Returns slot i. */
cnt_stats_slot *cnt_stats_slot_get(cnt_stats *s, unsigned i)
{
    return i < s->n ? &s->slots[i] : NULL;
}

/* Sums of every slot. */
typedef struct cnt_stats_sums {
    uint64_t commands[CNT_CMD_COUNT];
    uint64_t curr, total, rejected, auth_failures, auth_closes, auth_refused;
    uint64_t throttr[4], throttr_failures, throttr_bad_framing;
    uint64_t ws[7];
} cnt_stats_sums;

static uint64_t stats_read(const atomic_uint_fast64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static void stats_sum(const cnt_stats *s, cnt_stats_sums *sum)
{
    memset(sum, 0, sizeof *sum);
    for (unsigned i = 0; s != NULL && i < s->n; i++) {
        const cnt_stats_slot *slot = &s->slots[i];
        for (int c = 0; c < CNT_CMD_COUNT; c++)
            sum->commands[c] += stats_read(&slot->commands[c]);
        sum->curr += stats_read(&slot->curr_connections);
        sum->total += stats_read(&slot->total_connections);
        sum->rejected += stats_read(&slot->rejected_connections);
        sum->auth_failures += stats_read(&slot->auth_failures);
        sum->auth_closes += stats_read(&slot->auth_closes);
        sum->auth_refused += stats_read(&slot->auth_refused);
        for (int t = 0; t < 4; t++)
            sum->throttr[t] += stats_read(&slot->throttr_requests[t]);
        sum->throttr_failures += stats_read(&slot->throttr_failures);
        sum->throttr_bad_framing +=
            stats_read(&slot->throttr_bad_framing);
        sum->ws[0] += stats_read(&slot->ws_upgrades);
        sum->ws[1] += stats_read(&slot->ws_curr);
        sum->ws[2] += stats_read(&slot->ws_http_errors);
        sum->ws[3] += stats_read(&slot->ws_messages_in);
        sum->ws[4] += stats_read(&slot->ws_messages_out);
        sum->ws[5] += stats_read(&slot->ws_errors);
        sum->ws[6] += stats_read(&slot->ws_protocol_closes);
    }
}

/* Emits one item with a decimal value. */
static void stats_emit(cnt_stats_item_fn fn, void *ctx, const char *name,
                           uint64_t value)
{
    char text[24];

    snprintf(text, sizeof text, "%" PRIu64, value);
    fn(ctx, name, text);
}

/* The rate limits' items: for each kind, its records and what its checks
 * said, then the memory of their map. */
static void stats_report_limits(const cnt_limits *l, cnt_stats_item_fn fn,
                                    void *ctx)
{
    static const char *const kinds[CNT_LIMITS_KINDS] = {
        [CNT_LIMITS_TTL] = "ttl", [CNT_LIMITS_WINDOW] = "window",
        [CNT_LIMITS_GCRA] = "gcra",
    };
    cnt_limits_stats ls;
    char name[32];

    memset(&ls, 0, sizeof(ls));
    if (l != NULL)
        cnt_limits_stats_get(l, &ls);
    for (unsigned k = 0; k < CNT_LIMITS_KINDS; k++) {
        const struct { const char *what; uint64_t v; } items[] = {
            {"objects", ls.kind[k].objects}, {"checks", ls.kind[k].checks},
            {"allowed", ls.kind[k].allowed}, {"limited", ls.kind[k].limited},
            {"expired", ls.kind[k].expired},
        };
        for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
            snprintf(name, sizeof(name), "%s_%s", kinds[k], items[i].what);
            stats_emit(fn, ctx, name, items[i].v);
        }
    }
    stats_emit(fn, ctx, "limits_used_memory", ls.used_memory);
}

/* The throttle's items: the node's capacity and usage this second, the
 * configured tenants, what its charges said, and the authentications. */
static void stats_report_throttle(const cnt_throttle *t,
                                      const cnt_stats_sums *sum,
                                      cnt_stats_item_fn fn, void *ctx)
{
    cnt_throttle_stats ts;
    cnt_node_view nv;

    memset(&ts, 0, sizeof ts);
    memset(&nv, 0, sizeof nv);
    if (t != NULL) {
        cnt_throttle_stats_get(t, &ts);
        cnt_throttle_node((cnt_throttle *)t, &nv);
    }
    stats_emit(fn, ctx, "throttle_capacity", nv.capacity);
    stats_emit(fn, ctx, "throttle_used", nv.used);
    stats_emit(fn, ctx, "throttle_tenants", nv.tenants);
    stats_emit(fn, ctx, "throttle_checks", ts.checks);
    stats_emit(fn, ctx, "throttle_allowed", ts.allowed);
    stats_emit(fn, ctx, "throttle_throttled", ts.throttled);
    stats_emit(fn, ctx, "throttle_throttled_reserve",
               ts.throttled_by[CNT_TREASON_RESERVE]);
    stats_emit(fn, ctx, "throttle_throttled_pool_empty",
               ts.throttled_by[CNT_TREASON_POOL_EMPTY]);
    stats_emit(fn, ctx, "throttle_throttled_hard_limit",
               ts.throttled_by[CNT_TREASON_HARD_LIMIT]);
    stats_emit(fn, ctx, "throttle_units", ts.units);
    stats_emit(fn, ctx, "throttle_unthrottled_units",
                   ts.unthrottled_units);
    stats_emit(fn, ctx, "auth_failures", sum->auth_failures);
    stats_emit(fn, ctx, "auth_closes", sum->auth_closes);
    stats_emit(fn, ctx, "auth_refused", sum->auth_refused);
}

/* Emits every item: the reference's, in its order, then the extras. */
void cnt_stats_report(const cnt_stats_sources *src, cnt_stats_item_fn fn,
                      void *ctx)
{
    const cnt_stats *s = src->stats;
    const cnt_table *t = src->table;
    const cnt_gc *gc = src->gc;
    cnt_map_stats ts = { 0, 0, 0, 0 };
    cnt_gc_stats gs = { 0, 0, 0 };
    cnt_wait_stats ws = { 0, 0, 0, 0, 0, 0 };
    cnt_stats_sums sum;

    if (t != NULL) {
        cnt_table_get_stats(t, &ts);
        cnt_table_get_wait_stats(t, &ws);
    }
    if (gc != NULL)
        cnt_gc_get_stats(gc, &gs);
    stats_sum(s, &sum);

    stats_emit(fn, ctx, "objects", ts.objects);
    stats_emit(fn, ctx, "total_objects", ts.total_objects);
    stats_emit(fn, ctx, "used_memory", ts.used_memory);
    stats_emit(fn, ctx, "conflicts", ts.conflicts);
    stats_emit(fn, ctx, "gc_count", gs.gc_count);
    stats_emit(fn, ctx, "last_gc_elapsed", gs.last_gc_elapsed);
    stats_emit(fn, ctx, "total_gc_elapsed", gs.total_gc_elapsed);
    stats_emit(fn, ctx, "curr_connections", sum.curr);
    stats_emit(fn, ctx, "total_connections", sum.total);
    for (int c = 0; c < CNT_CMD_COUNT; c++) {
        char item[64];

        snprintf(item, sizeof(item), "command:%s",
                 cnt_opcode_name(command_opcodes[c]));
        stats_emit(fn, ctx, item, sum.commands[c]);
    }
    stats_emit(fn, ctx, "rejected_connections", sum.rejected);
    stats_emit(fn, ctx, "buckets", t ? cnt_table_buckets(t) : 0);
    stats_emit(fn, ctx, "interval", t ? cnt_table_interval(t) : 0);
    stats_emit(fn, ctx, "memory_limit",
                   t ? cnt_table_memory_limit(t) : 0);
    stats_emit(fn, ctx, "waiting", ws.waiting);
    stats_emit(fn, ctx, "leases", ws.leases);
    stats_emit(fn, ctx, "queue_grants", ws.queue_grants);
    stats_emit(fn, ctx, "wait_timeouts", ws.timeouts);
    stats_emit(fn, ctx, "lease_expirations", ws.expirations);
    stats_emit(fn, ctx, "wait_cancels", ws.cancels);
    stats_report_limits(src->limits, fn, ctx);
    stats_report_throttle(src->throttle, &sum, fn, ctx);
    stats_emit(fn, ctx, "throttr_insert", sum.throttr[0]);
    stats_emit(fn, ctx, "throttr_query", sum.throttr[1]);
    stats_emit(fn, ctx, "throttr_update", sum.throttr[2]);
    stats_emit(fn, ctx, "throttr_purge", sum.throttr[3]);
    stats_emit(fn, ctx, "throttr_failures", sum.throttr_failures);
    stats_emit(fn, ctx, "throttr_bad_framing", sum.throttr_bad_framing);
    stats_emit(fn, ctx, "websocket_upgrades", sum.ws[0]);
    stats_emit(fn, ctx, "websocket_connections", sum.ws[1]);
    stats_emit(fn, ctx, "websocket_http_errors", sum.ws[2]);
    stats_emit(fn, ctx, "websocket_messages_in", sum.ws[3]);
    stats_emit(fn, ctx, "websocket_messages_out", sum.ws[4]);
    stats_emit(fn, ctx, "websocket_errors", sum.ws[5]);
    stats_emit(fn, ctx, "websocket_protocol_closes", sum.ws[6]);
}
