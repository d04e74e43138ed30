/* stats.h: mchost's own counters and the memcached-style `stats` and
 * `stats settings` lines built from them. */
#ifndef MCH_STATS_H
#define MCH_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct evbuffer;

/* Counters updated by the listener and the workers (relaxed atomics). */
struct mch_counters {
    atomic_uint_fast64_t curr_connections;
    atomic_uint_fast64_t total_connections;
    atomic_uint_fast64_t rejected_connections;
    atomic_uint_fast64_t listen_disabled_num;
    atomic_uint_fast64_t bytes_read;
    atomic_uint_fast64_t bytes_written;
};

extern struct mch_counters mch_counters;

/* Adds n to a counter. */
#define mch_count(field, n) \
    atomic_fetch_add_explicit(&mch_counters.field, (n), memory_order_relaxed)

/* Appends "STAT key value\r\n" with a printf-formatted value. */
void mch_stats_line(struct evbuffer *out, const char *key, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));

/* Appends the host's lines of plain `stats` (no END). */
void mch_stats_write_general(struct evbuffer *out);

/* Appends the lines of `stats settings` (no END). */
void mch_stats_write_settings(struct evbuffer *out);

/* Zeroes what `stats reset` resets (the totals, not current values). */
void mch_stats_reset(void);

#endif /* MCH_STATS_H */
