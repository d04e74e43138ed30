/* table_hooks.h: what the unit tests need of the semaphore table beyond
 * its interface, built here from the engine's inner header so that the
 * engine exports nothing only tests call: the bytes one counter costs
 * (its node as table_int.h lays it out) and a sweep of a range of buckets
 * with the table's own test at the clock's time now (what the GC does a
 * slice at a time, through the same public entry points). */
#ifndef CNT_TESTS_TABLE_HOOKS_H
#define CNT_TESTS_TABLE_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/table_int.h"

/* Bytes one counter named with len bytes costs in used_memory and against
 * memory_limit: its node, header and name, exactly what it asks malloc
 * for. */
static inline size_t table_counter_size(uint16_t len)
{
    return offsetof(struct cnt_counter, name) + len;
}

/* Removes the counters the table's test lets go (consumption 0, last
 * changed before the current window) in buckets [first, first + n);
 * returns how many. */
static inline size_t table_sweep(cnt_table *t, size_t first, size_t n)
{
    cnt_map_may_go may_go = cnt_table_may_go(t);
    cnt_clock_now now;

    cnt_clock_read(cnt_table_clock(t), &now);
    return cnt_map_sweep(cnt_table_map(t), first, n, &may_go, &now);
}

#endif
