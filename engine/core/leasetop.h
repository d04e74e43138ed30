/* leasetop.h: the nearest lease deadlines of a worker, for Lease_list. A
 * worker's lease deadlines live only as timers in its own timing wheel
 * (wheel.h), so a listing asks each worker to walk its wheel into a
 * bounded "top" of the K nearest, then merges the tops. A top copies the
 * names it keeps: the tickets stay the worker's and may end meanwhile.
 * A top belongs to whoever holds it; nothing here takes a lock. */
#ifndef CNT_ENGINE_LEASETOP_H
#define CNT_ENGINE_LEASETOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/wheel.h"

/* Most leases one listing keeps (the wire's CNT_LEASE_LIST_MAX). */
#define CNT_LEASE_TOP_MAX 64u
/* Most timers one walk of one wheel visits (waits' timers count too): a
 * wheel whose nearest slot holds more leases than this answers from the
 * first ones it met, and the top says it may be incomplete. Bounds the
 * time a listing takes from each worker's loop: a timer of a crowded slot
 * costs about one cache miss, so 65,536 of them are a few milliseconds
 * (wait-bench -W lease_list: 50,000 leases in one slot per worker, 5 to
 * 14 ms a listing on a loaded 2-core machine; a cap of 16,384 measured
 * 1.3 ms against 4.5 ms at the median, but would answer inexactly from
 * 16,384 leases due in one slot, as an hour's leases granted together
 * are). A worker pays it once per mailbox batch, whatever the number of
 * listings in it (survey.h). Waits' timers count: visiting one costs the
 * same as visiting a lease's. */
#define CNT_LEASE_WALK_MAX 65536u

/* One lease kept: its deadline (ms ticks of the monotonic clock), lease
 * id, resources held and name (owned copy). */
typedef struct cnt_lease_entry {
    uint64_t deadline_ms;
    uint64_t lease_id;
    uint32_t resources;
    uint16_t name_len;
    uint8_t *name;
} cnt_lease_entry;

/* The nearest leases seen so far, nearest first. */
typedef struct cnt_lease_top {
    uint32_t want;                  /* 1..CNT_LEASE_TOP_MAX */
    uint32_t count;
    bool incomplete;                /* a walk stopped at its cap */
    bool failed;                    /* a name could not be copied */
    cnt_lease_entry e[CNT_LEASE_TOP_MAX];
} cnt_lease_top;

/* Prepares an empty top keeping want leases (clamped to 1..MAX). */
void cnt_lease_top_init(cnt_lease_top *top, uint32_t want);

/* Frees the names the top keeps; it is empty afterwards. */
void cnt_lease_top_clear(cnt_lease_top *top);

/* Offers a lease: kept (its name copied) when it is among the want
 * nearest; a lease it pushes out is freed. Ties keep the one kept first.
 * false when the copy failed (top->failed is set; nothing else changes). */
bool cnt_lease_top_offer(cnt_lease_top *top, uint64_t deadline_ms,
                         uint64_t lease_id, uint32_t resources,
                         const uint8_t *name, uint16_t name_len);

/* Moves every entry of src into dst (keeping the nearest; names move,
 * nothing is copied) and carries its flags; src is empty afterwards. */
void cnt_lease_top_merge(cnt_lease_top *dst, cnt_lease_top *src);

/* Offers every entry of src to dst, nearest first, copying the names, and
 * carries src's flags; src is unchanged. A top of the want nearest of one
 * walk is thus the prefix of a wider top of the same walk (ties keep the
 * one kept first in both), so one walk can answer listings of any want.
 * false when a copy failed (dst->failed is set). */
bool cnt_lease_top_copy(cnt_lease_top *dst, const cnt_lease_top *src);

/* Walks w (the calling thread's own wheel) for the lease timers of
 * granted tickets, offering each to top, visiting at most max timers
 * (sets top->incomplete when it stopped there). The walk ends early only
 * once the top is full and the next slot is due after its farthest entry:
 * a worker holding fewer leases than want (or whose leases are far behind
 * many waits' timers) is walked to the end or to max, because an unvisited
 * slot could still hold a nearer lease; max is the bound in that case. */
void cnt_lease_top_collect(cnt_lease_top *top, const cnt_wheel *w,
                           size_t max);

#endif
