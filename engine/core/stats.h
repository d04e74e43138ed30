/* stats.h: server statistics. Each worker thread counts in its own slot
 * (one cache line apart, relaxed atomics) so counting costs no shared
 * writes; a reader sums the slots and adds the table's and GC's figures. */
#ifndef CNT_ENGINE_STATS_H
#define CNT_ENGINE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/core/gc.h"
#include "engine/core/table.h"

/* Per-opcode command counters, in the reference's Stats order. */
enum cnt_stats_command {
    CNT_CMD_NOOP, CNT_CMD_GET, CNT_CMD_ACQUIRE, CNT_CMD_RELEASE,
    CNT_CMD_STATS, CNT_CMD_DUMP, CNT_CMD_COUNT
};

/* One worker's counters; only its owner writes them. */
typedef struct cnt_stats_slot {
    _Alignas(64) atomic_uint_fast64_t commands[CNT_CMD_COUNT];
    atomic_uint_fast64_t curr_connections;  /* a connection lives on one worker */
    atomic_uint_fast64_t total_connections;
    atomic_uint_fast64_t rejected_connections;
} cnt_stats_slot;

typedef struct cnt_stats cnt_stats;

/* Builds n zeroed slots; NULL when memory is short. */
cnt_stats *cnt_stats_new(unsigned n);

/* Frees the slots. */
void cnt_stats_free(cnt_stats *s);

/* Returns slot i (0 <= i < n). */
cnt_stats_slot *cnt_stats_slot_get(cnt_stats *s, unsigned i);

/* Maps an opcode to its command counter, or -1 for unknown opcodes.
 * Inline: a worker calls it for every request. */
static inline int cnt_stats_command_of(uint8_t opcode)
{
    switch (opcode) {
    case CNT_OP_NOOP:    return CNT_CMD_NOOP;
    case CNT_OP_GET:     return CNT_CMD_GET;
    case CNT_OP_ACQUIRE: return CNT_CMD_ACQUIRE;
    case CNT_OP_RELEASE: return CNT_CMD_RELEASE;
    case CNT_OP_STATS:   return CNT_CMD_STATS;
    case CNT_OP_DUMP:    return CNT_CMD_DUMP;
    default:             return -1;
    }
}

/* Adds 1 to a counter of a slot (relaxed: figures, not synchronisation). */
static inline void cnt_stats_inc(atomic_uint_fast64_t *v)
{
    atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* Receives one item: name as in the reference's Stats, value as text. */
typedef void (*cnt_stats_item_fn)(void *ctx, const char *name,
                                  const char *value);

/* Emits every item in the reference's order, then our extras. t, gc or s
 * may be NULL (their items then read 0). */
void cnt_stats_report(const cnt_stats *s, const cnt_table *t,
                      const cnt_gc *gc, cnt_stats_item_fn fn, void *ctx);

#endif
