/* throttle.h: tenant throttling, one clock second at a time. The node has
 * a capacity of units per second; each tenant may have a reserve (units
 * per second guaranteed to it) and a hard limit (units per second it never
 * passes); what capacity the reserves leave is a free pool every tenant
 * draws from once its reserve is spent. A charge is allowed or throttled,
 * with the reason and the time until the next second. Tenants live in a
 * striped map (map.h) of their own, on the shared memory budget; the
 * figures every charge shares (the pool and its use, the node's use, the
 * capacity and the sum of the reserves) sit behind one node lock. The model
 * and its formulas are in doc/throttling.md.
 *
 * Locks, in the one order they are taken: the configuration lock (held by
 * the calls that change the configuration, one at a time), then a stripe
 * lock of the tenants' map, then the node lock. A charge takes only the
 * last two; see map.h's locking rule. */
#ifndef CNT_ENGINE_THROTTLE_H
#define CNT_ENGINE_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/response.h"
#include "protocol/wire.h"
#include "engine/core/clock.h"
#include "engine/core/map.h"

/* Default number of buckets of the tenants' map. */
#define CNT_THROTTLE_DEFAULT_BUCKETS 65536u

/* cnt_tenant_view.flags: the tenant has its own configuration. */
#define CNT_TENANT_FLAG_CONFIGURED 0x01u

/* Nanoseconds of one throttling second. */
#define CNT_THROTTLE_SECOND_NS 1000000000ull

typedef struct cnt_throttle cnt_throttle;

/* How to build the throttle. Zero fields take the defaults. */
typedef struct cnt_throttle_config {
    size_t buckets;             /* default 65536 */
    cnt_map_budget *budget;     /* shared memory limit, may be NULL =
                                   unlimited; must outlive the throttle */
    const cnt_clock *clock;     /* default cnt_clock_system */
} cnt_throttle_config;

/* Builds a throttle with capacity 0 (off), no tenants and an unlimited
 * default hard limit (CNT_HARD_LIMIT_UNLIMITED, the wire's "no limit");
 * a NULL cfg takes every default. NULL when memory is short or cfg is out
 * of range. */
cnt_throttle *cnt_throttle_new(const cnt_throttle_config *cfg);

/* Frees every tenant record and t; no other thread may use it. */
void cnt_throttle_free(cnt_throttle *t);

/* Sets the node's capacity in units per second (0 = throttling off):
 * OK, or OVER_CAPACITY (nothing changed) when capacity > 0 and the
 * configured reserves add up to more. */
cnt_status cnt_throttle_set_capacity(cnt_throttle *t, uint32_t capacity);

/* Sets the hard limit of the tenants that have no configuration of their
 * own (CNT_HARD_LIMIT_UNLIMITED = none); always OK. A configured tenant
 * keeps the hard limit it has. */
cnt_status cnt_throttle_set_default_hard(cnt_throttle *t, uint32_t hard);

/* Configures a tenant: its reserve if set_reserved, its hard limit if
 * set_hard; a property not set keeps its current value (the defaults, 0
 * and the default hard limit, for a tenant not configured yet). OK,
 * INVALID (empty name, neither property set, or a hard limit below the
 * reserve), OVER_CAPACITY (capacity > 0 and the reserves would add up to
 * more) or OUT_OF_MEMORY (a new record did not fit); nothing changes
 * unless OK. */
cnt_status cnt_throttle_set_tenant(cnt_throttle *t, const uint8_t *name,
                                   uint16_t len, bool set_reserved,
                                   uint32_t reserved, bool set_hard,
                                   uint32_t hard);

/* Puts a configured tenant back on the defaults; its usage of this second
 * stays until the second ends (the GC then frees the record). OK,
 * NOT_FOUND (not configured) or INVALID (empty name). */
cnt_status cnt_throttle_remove_tenant(cnt_throttle *t, const uint8_t *name,
                                      uint16_t len);

/* What a charge answers: state (the wire's CNT_TSTATE_*), reason
 * (CNT_TREASON_*: why a charge was throttled), used (the tenant's units this second after the
 * call), remaining (units it could still charge this second on a
 * throttled connection: min(H - used, reserve left + pool left);
 * 0xFFFFFFFF when the capacity is 0 and H unlimited), retry_after_ns (0
 * when allowed, else ns until the next second, >= 1). Figures above 32
 * bits show as 0xFFFFFFFF. The struct is the protocol's
 * (protocol/response.h), so the server encodes it as it is. */

/* Charges units (>= 1) to a tenant, all or nothing; unthrottled (the
 * connection's privilege) allows it whatever the limits, counted like any
 * other use. OK with *out filled, INVALID (units 0 or an empty name) or
 * OUT_OF_MEMORY (an allowed charge of a tenant without a record, and the
 * record did not fit; nothing changed). A throttled charge changes
 * nothing but the counts of throttled charges, and makes no record. */
cnt_status cnt_throttle_charge(cnt_throttle *t, const uint8_t *name,
                               uint16_t len, uint32_t units,
                               bool unthrottled, cnt_throttle_answer *out);

/* Whether a charge of units (unthrottled or not) could pass in a second
 * in which neither the tenant nor the pool has been used: false when
 * units pass the tenant's hard limit, or its reserve plus the whole free
 * pool; waiting for the next second would never let it through. */
bool cnt_throttle_can_pass(cnt_throttle *t, const uint8_t *name,
                           uint16_t len, uint32_t units);

/* One tenant as shown: reserved and hard_limit (its own, or the defaults
 * 0 and the default hard limit), used (units this second), flags
 * (CNT_TENANT_FLAG_CONFIGURED), throttled (throttled charges) and units
 * (allowed units) since its record exists; the protocol's struct. */

/* Reads a tenant into *out; a tenant without a record shows the defaults
 * and zeros. OK or INVALID (empty name). */
cnt_status cnt_throttle_tenant(cnt_throttle *t, const uint8_t *name,
                               uint16_t len, cnt_tenant_view *out);

/* Reads a tenant's throttled charges since its record exists, per
 * reason, into out[CNT_TREASON_*] (out[CNT_TREASON_NONE] is 0; all 0
 * without a record). OK or INVALID (empty name). */
cnt_status cnt_throttle_tenant_reasons(cnt_throttle *t, const uint8_t *name,
                                       uint16_t len,
                                       uint64_t out[CNT_TREASON_MAX + 1]);

/* Called for each tenant record during a listing, under its stripe lock:
 * copy, do not call back into the throttle. Return false to stop after
 * this one. */
typedef bool (*cnt_tenant_fn)(void *ctx, const uint8_t *name, uint16_t len,
                              const cnt_tenant_view *v);

/* Lists tenant records from the cursor (start from {0}), like the
 * table's Dump: at most CNT_MAP_DUMP_PER_LOCK under one stripe lock,
 * until fn returns false (the cursor then points just past that record),
 * CNT_MAP_DUMP_SCAN buckets have been looked at, or the map ends. Every
 * record that exists for the whole listing is visited exactly once, even
 * while records come and go. Returns true at the end (the cursor is then
 * no longer paused); false means call again. */
bool cnt_throttle_list(cnt_throttle *t, cnt_map_cursor *cur,
                       cnt_tenant_fn fn, void *ctx);

/* Like cnt_tenant_fn, with the record's throttled charges per reason
 * besides: by_reason[CNT_TREASON_*] (index CNT_TREASON_NONE stays 0). */
typedef bool (*cnt_tenant_reasons_fn)(void *ctx, const uint8_t *name,
                                      uint16_t len, const cnt_tenant_view *v,
                                      const uint64_t *by_reason);

/* cnt_throttle_list with a cnt_tenant_reasons_fn: the same walk and
 * cursor rules. */
bool cnt_throttle_list_reasons(cnt_throttle *t, cnt_map_cursor *cur,
                               cnt_tenant_reasons_fn fn, void *ctx);

/* Ends a listing before its end: unregisters a paused cursor. Harmless
 * on a finished or never-started cursor. */
void cnt_throttle_list_cancel(cnt_throttle *t, cnt_map_cursor *cur);

/* The node as shown: capacity, used (units this second, everyone), pool
 * (capacity minus the reserves, 0 when they cover it), pool_used (this
 * second), reserved_sum (of the configured tenants), tenants (configured
 * ones), throttled (all throttled charges). Figures above 32 bits show
 * as 0xFFFFFFFF; the protocol's struct. */

/* Fills *out with the node's figures now. */
void cnt_throttle_node(cnt_throttle *t, cnt_node_view *out);

/* Totals since the throttle was built, read without locks: checks (every
 * charge call), allowed and throttled charges, units (allowed units, the
 * unthrottled ones included), unthrottled_units (units charged on
 * unthrottled connections), throttled_by (the throttled charges per
 * reason, indexed by CNT_TREASON_*; [CNT_TREASON_NONE] stays 0). */
typedef struct cnt_throttle_stats {
    uint64_t checks, allowed, throttled, units, unthrottled_units;
    uint64_t throttled_by[CNT_TREASON_MAX + 1];
} cnt_throttle_stats;

/* Fills *out with the current totals. */
void cnt_throttle_stats_get(const cnt_throttle *t, cnt_throttle_stats *out);

/* One tenant of a settings set: name (1..65535 bytes), its reserve and
 * its hard limit (the caller resolves a hard limit the file leaves out). */
typedef struct cnt_throttle_setting {
    const uint8_t *name;
    uint16_t len;
    uint32_t reserved, hard;
} cnt_throttle_setting;

/* A whole settings set, as a settings file gives it: the capacity and the
 * default hard limit when present, and the tenants it names (ntenants of
 * them, no name twice). */
typedef struct cnt_throttle_settings {
    bool has_capacity;
    uint32_t capacity;
    bool has_default_hard;
    uint32_t default_hard;
    size_t ntenants;
    cnt_throttle_setting *tenants;
} cnt_throttle_settings;

/* Applies s, all or nothing: the capacity and the default hard limit it
 * has replace the current ones, each tenant it names is configured with
 * its values, every other tenant stays as it is. OK, or, changing
 * nothing: INVALID (an empty name or a hard limit below its reserve,
 * found first; a name twice, found while the records are made),
 * OUT_OF_MEMORY (a new record did not fit) or OVER_CAPACITY (capacity > 0
 * and the reserves would add up to more, found last). Charges meanwhile
 * see each tenant either as it was or as it becomes, and never reserves
 * adding up to more than the capacity. */
cnt_status cnt_throttle_apply(cnt_throttle *t,
                              const cnt_throttle_settings *s);

/* The map that holds the tenant records, for the GC thread to sweep. */
cnt_map *cnt_throttle_map(cnt_throttle *t);

/* The throttle's sweep test: a tenant record may go when the tenant is
 * not configured and has no usage in the current second (it is then the
 * same as no record). */
cnt_map_may_go cnt_throttle_may_go(cnt_throttle *t);

#endif
