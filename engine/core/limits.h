/* limits.h: the rate limits: three kinds of record kept in one striped map
 * (map.h) of their own, beside the semaphore counters' map. A TTL counter
 * is a quota that expires; a window limit counts cost in a sliding window
 * of slots; a GCRA limit (the generic cell rate algorithm, as redis-cell)
 * keeps one theoretical arrival time. The kind is part of the key, so one
 * name used as a semaphore and as each of the three kinds is four separate
 * objects. Time is the clock's monotonic nanoseconds; every sum and
 * product is exact (128-bit where it could pass 64 bits) and every hint
 * of "retry after" is rounded up. Records past their expiry are dead for
 * every request at once (lazy expiry) and freed by the GC's sweep.
 * The locking rule is map.h's; the multi-check is the one caller that
 * holds several stripe locks (in ascending order). */
#ifndef CNT_ENGINE_LIMITS_H
#define CNT_ENGINE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/request.h"
#include "protocol/response.h"
#include "protocol/wire.h"
#include "engine/core/clock.h"
#include "engine/core/map.h"

#if !defined(__SIZEOF_INT128__)
#error "the rate limits need unsigned __int128 (x86_64, aarch64 have it)"
#endif

/* The constants of the wire (check opcodes and states, TTL units
 * (CNT_UNIT_MAX), attributes and changes, window defaults and bounds,
 * CNT_MULTI_MAX) are protocol/wire.h's,
 * and the structs a check takes and answers are the protocol's own
 * (protocol/request.h, protocol/response.h): the server hands a decoded
 * request to the core and the core's answer to the encoder as they are. */

/* The kinds, the first part of a record's key and the index of its
 * stats. */
#define CNT_LIMITS_TTL 0u
#define CNT_LIMITS_WINDOW 1u
#define CNT_LIMITS_GCRA 2u
#define CNT_LIMITS_KINDS 3u

/* cnt_ttl_update's unit for "the unit the record was inserted with". */
#define CNT_TTL_UNIT_RECORD 0xffu

/* Default number of buckets of the limits map. */
#define CNT_LIMITS_DEFAULT_BUCKETS 65536u

typedef struct cnt_limits cnt_limits;

/* How to build the limits. Zero fields take the defaults. */
typedef struct cnt_limits_config {
    size_t buckets;             /* default 65536 */
    cnt_map_budget *budget;     /* shared memory limit, may be NULL =
                                   unlimited; must outlive the limits */
    const cnt_clock *clock;     /* default cnt_clock_system */
} cnt_limits_config;

/* Builds empty limits; NULL when memory is short or cfg is out of
 * range. */
cnt_limits *cnt_limits_new(const cnt_limits_config *cfg);

/* Frees every record and l; no other thread may use it. */
void cnt_limits_free(cnt_limits *l);

/* Creates a TTL counter (quota, expiring ttl units from now). OK, EXISTS
 * (a live one has the name; an expired one is replaced), INVALID (unit >
 * 5, ttl 0 or beyond 64 bits of ns, empty name), OUT_OF_MEMORY. */
cnt_status cnt_ttl_insert(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint64_t quota, uint64_t ttl, uint8_t unit);

/* Reads a live TTL counter into *out (quota, ttl_left: in its unit,
 * rounded up, >= 1 when live; unit: the one it was inserted with): OK or
 * NOT_FOUND. */
cnt_status cnt_ttl_query(cnt_limits *l, const uint8_t *name, uint16_t len,
                         cnt_ttl_answer *out);

/* Changes the quota or the time left of a live TTL counter (attribute,
 * change and unit as the CNT_TTL_ constants) and reads it into *out: OK,
 * NOT_FOUND, BELOW_ZERO (nothing changed) or INVALID. A unit of
 * CNT_TTL_UNIT_RECORD takes a TTL change in the record's own unit (the
 * Throttr front's rule: its changes carry no unit). */
cnt_status cnt_ttl_update(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint8_t attribute, uint8_t change, uint8_t unit,
                          uint64_t value, cnt_ttl_answer *out);

/* Removes a live TTL counter: OK or NOT_FOUND. */
cnt_status cnt_ttl_purge(cnt_limits *l, const uint8_t *name, uint16_t len);

/* One window or GCRA check. The request a is the protocol's: opcode
 * (CNT_OP_WINDOW_CHECK or CNT_OP_GCRA_CHECK), peek, slots (window: 0 = 10,
 * else 1..64), limit_or_burst, count (gcra: events per period, >= 1), cost
 * (>= 1), period_ns (window: window_ns, 0 = 1 s; gcra: the period, >= 1),
 * name and name_len (>= 1). The answer *out is what the encoder sends (see
 * doc/rate-limits.md for each field): state, limit, remaining, used,
 * retry_after_ns (0 allowed, UINT64_MAX never), reset_after_ns.
 * OK with *out filled, INVALID (arguments out of range) or OUT_OF_MEMORY
 * (an allowed charge needed a record; nothing changed). */
cnt_status cnt_limits_check(cnt_limits *l, const cnt_check_request *a,
                            cnt_check_result *out);

/* All-or-nothing check of n items (1..CNT_MULTI_MAX, no two of one kind and name;
 * their own peek is ignored, peek applies to all): each judged against
 * the state before any charge; if every one is allowed and !peek, all are
 * charged at once. *overall is 0 (all allowed) or 1 (one or more denied,
 * nothing charged). OK, INVALID or OUT_OF_MEMORY (nothing charged). */
cnt_status cnt_limits_multi(cnt_limits *l, const cnt_check_request *items,
                            size_t n, bool peek, cnt_check_result *out,
                            uint8_t *overall);

/* Nanoseconds of the seconds the busiest-names listing counts in. */
#define CNT_LIMITS_SECOND_NS 1000000000ull

/* Entries of one stripe's hot table. Four per stripe: a listing names
 * at most CNT_LIMITS_BUSIEST_MAX (16) records, and the keyed hash spreads
 * those over the stripes, so that a name is missed only when four
 * busier ones share its stripe; more entries would cost memory on every
 * stripe (8 bytes each, twice) for a case that the hash makes rare. */
#define CNT_LIMITS_HOT 4u

/* Most names one busiest-names listing returns. */
#define CNT_LIMITS_BUSIEST_MAX 16u

/* One of the busiest rate-limit records: its kind, its checks in the last
 * whole second, its name (a copy the listing allocated). */
typedef struct cnt_busy_name {
    uint8_t kind;
    uint32_t checks;
    uint16_t name_len;
    uint8_t *name;
} cnt_busy_name;

/* Fills out[0..*found) with the (at most n, clamped to
 * CNT_LIMITS_BUSIEST_MAX) records of any kind that had the most checks in
 * the last whole second of the clock, busiest first (ties by kind, then
 * name); records with no check in that second are left out. A check is a
 * window or GCRA check (allowed, limited or peeking, alone or in a
 * multi-check) or a TTL operation that found or made a live counter
 * (insert, query, change).
 *
 * It reads only each stripe's hot table (CNT_LIMITS_HOT entries, kept by
 * the checks), not the records, so its cost does not grow with them. It
 * is approximate in one way: a stripe keeps its CNT_LIMITS_HOT busiest
 * records of the second, so a record is missed when that many busier ones
 * share its stripe. The counts are exact as of the listing that computed
 * them.
 *
 * Cost: the first listing of a second (whatever its n) computes the
 * CNT_LIMITS_BUSIEST_MAX busiest of the second before into a cache, one
 * lock of each stripe in turn (4096 of them); every later listing of that
 * second waits for that one if it is still running, then copies at most
 * n names out of the cache under its small lock, taking no stripe lock.
 * So the stripes are walked at most once a second, however many clients,
 * scrapes and pipelined requests ask. What a cached listing may show: the
 * records of the computed answer, minus those that have gone since
 * (cnt_limits_rec_forget takes them out: never a freed record, and the
 * rest keep their places, so fewer than n may come back); a check that
 * still counts in that second after it was computed (one that read the
 * clock before the second ended) does not change it.
 *
 * False when memory ran short (nothing to free then). Free the names with
 * cnt_limits_busiest_free. */
bool cnt_limits_busiest(cnt_limits *l, uint32_t n, cnt_busy_name *out,
                        size_t *found);

/* Frees the names of a busiest-names listing. */
void cnt_limits_busiest_free(cnt_busy_name *v, size_t n);

/* Figures per kind (CNT_LIMITS_TTL, _WINDOW, _GCRA), read without locks. */
typedef struct cnt_limits_stats {
    struct {
        uint64_t objects;       /* records now */
        uint64_t checks;        /* requests (ttl: every operation) */
        uint64_t allowed;       /* allowed checks, successful ttl ops */
        uint64_t limited;       /* limited and never; ttl: EXISTS,
                                   BELOW_ZERO, NOT_FOUND */
        uint64_t expired;       /* records freed past their expiry */
    } kind[3];
    uint64_t busiest_computed;  /* busiest-names listings computed (the
                                   others were copied from the cache) */
    uint64_t used_memory;       /* the map's bucket array, locks, records */
} cnt_limits_stats;

/* Fills *out with the current figures. */
void cnt_limits_stats_get(const cnt_limits *l, cnt_limits_stats *out);

/* Frees the dead records of the next max_buckets buckets (going round the
 * map) at the clock's time now; returns how many. */
size_t cnt_limits_sweep(cnt_limits *l, size_t max_buckets);

/* The map that holds the records, for the GC thread to sweep. */
cnt_map *cnt_limits_map(cnt_limits *l);

/* The limits' sweep test: a TTL record past its expiry, a window record
 * whose counts have all fallen out, a GCRA record whose TAT has passed.
 * It frees what the record owns beside its node and counts it expired. */
cnt_map_may_go cnt_limits_may_go(cnt_limits *l);

#endif
