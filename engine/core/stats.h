/* stats.h: server statistics. Each worker thread counts in its own slot
 * (one cache line apart, relaxed atomics) so counting costs no shared
 * writes; a reader sums the slots and adds the table's and GC's figures. */
#ifndef CNT_ENGINE_STATS_H
#define CNT_ENGINE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/core/gc.h"
#include "engine/core/table.h"
#include "engine/core/throttle.h"

/* Per-opcode command counters: one per row of the opcode table
 * (CNT_OPCODE_ROWS, protocol/wire.h), in its order, which is the
 * reference's Stats order. Each is reported as "command:" and the row's
 * name, so a new opcode is counted by its row alone. */
enum cnt_stats_command {
#define CNT_STATS_COMMAND_ENUM(id, ...) CNT_CMD_##id,
    CNT_OPCODE_ROWS(CNT_STATS_COMMAND_ENUM)
#undef CNT_STATS_COMMAND_ENUM
    CNT_CMD_COUNT
};

/* One worker's counters (the acceptor has one too). Each slot has a single
 * writer, its owner thread (see cnt_stats_add); any thread may read. */
typedef struct cnt_stats_slot {
    _Alignas(64) atomic_uint_fast64_t commands[CNT_CMD_COUNT];
    atomic_uint_fast64_t curr_connections;  /* a connection lives on one worker */
    atomic_uint_fast64_t total_connections;
    atomic_uint_fast64_t rejected_connections;
    atomic_uint_fast64_t auth_failures;     /* failed authentications */
    atomic_uint_fast64_t auth_closes;       /* connections closed for them */
    atomic_uint_fast64_t auth_refused;      /* refused past the limits on
                                               failures, without comparing */
    /* The Throttr front: requests per type (INSERT .. PURGE), answers
     * that were the failure byte, connections closed for an unknown
     * request type. */
    atomic_uint_fast64_t throttr_requests[4];
    atomic_uint_fast64_t throttr_failures;
    atomic_uint_fast64_t throttr_bad_framing;
    /* The WebSocket front: upgrades made and open now, HTTP requests
     * refused (404, 426, ...), messages in and out, messages answered
     * with an error result, connections closed for breaking RFC 6455. */
    atomic_uint_fast64_t ws_upgrades;
    atomic_uint_fast64_t ws_curr;
    atomic_uint_fast64_t ws_http_errors;
    atomic_uint_fast64_t ws_messages_in;
    atomic_uint_fast64_t ws_messages_out;
    atomic_uint_fast64_t ws_errors;
    atomic_uint_fast64_t ws_protocol_closes;
} cnt_stats_slot;

typedef struct cnt_stats cnt_stats;

/* Builds n zeroed slots; NULL when memory is short. */
cnt_stats *cnt_stats_new(unsigned n);

/* Frees the slots. */
void cnt_stats_free(cnt_stats *s);

/* Returns slot i (0 <= i < n). */
cnt_stats_slot *cnt_stats_slot_get(cnt_stats *s, unsigned i);

/* Opcode -> command counter + 1, 0 for opcodes Stats does not count
 * (bytes that are no opcode); built from the opcode table in stats.c. */
extern const uint8_t cnt_stats_command_slots[256];

/* Maps an opcode to its command counter, or -1 for opcodes not counted.
 * Inline: a worker calls it for every request. */
static inline int cnt_stats_command_of(uint8_t opcode)
{
    return (int)cnt_stats_command_slots[opcode] - 1;
}

/* The one way to change a statistic: adds delta (negative to subtract) to
 * a counter of a slot. Only the slot's owner thread may call it, so a
 * relaxed load and store do (readers still see whole values): no locked
 * read-modify-write on every request, which measured about seven times
 * the cost of the plain load and store (2.2 ns against 0.3 ns). */
static inline void cnt_stats_add(atomic_uint_fast64_t *v, int64_t delta)
{
    uint64_t now = atomic_load_explicit(v, memory_order_relaxed);
    atomic_store_explicit(v, (uint_fast64_t)(now + (uint64_t)delta),
                          memory_order_relaxed);
}

/* Counts one request of this opcode in slot (nothing for opcodes Stats
 * does not count). */
static inline void cnt_stats_count_command(cnt_stats_slot *slot,
                                           uint8_t opcode)
{
    int cmd = cnt_stats_command_of(opcode);
    if (cmd >= 0)
        cnt_stats_add(&slot->commands[cmd], 1);
}

/* Receives one item: name as in the reference's Stats, value as text. */
typedef void (*cnt_stats_item_fn)(void *ctx, const char *name,
                                  const char *value);

/* Where a report's figures come from; any may be NULL (its items then
 * read 0). */
typedef struct cnt_stats_sources {
    const cnt_stats *stats;
    const cnt_table *table;
    const cnt_limits *limits;
    const cnt_throttle *throttle;
    const cnt_gc *gc;
} cnt_stats_sources;

/* Emits every item in the reference's order, then our extras (the waiting
 * side's, each rate-limit kind's, the throttle's, the Throttr front's). */
void cnt_stats_report(const cnt_stats_sources *src, cnt_stats_item_fn fn,
                      void *ctx);

#endif
