/* stats.c: the host part of `stats` and `stats settings`, with the names
 * and formats memcached uses so memcached-tool and collectd can read them.
 * mchost is not a cache: item, memory and command counts are zero. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "programs/mchost/api.h"
#include "programs/mchost/core.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/settings.h"
#include "programs/mchost/stats.h"

struct mch_counters mch_counters;

/* Appends "STAT key value\r\n" with a printf-formatted value. */
void mch_stats_line(struct evbuffer *out, const char *key, const char *fmt,
                    ...)
{
    char value[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    evbuffer_add_printf(out, "STAT %s %s\r\n", key, value);
}

static unsigned long long get(atomic_uint_fast64_t *c)
{
    return (unsigned long long)atomic_load_explicit(c, memory_order_relaxed);
}

/* Counters a cache would have; always zero here, listed so tools that
 * expect them find them. */
static const char *const zero_stats[] = {
    "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "get_hits",
    "get_misses", "get_expired", "delete_misses", "delete_hits",
    "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses",
    "cas_hits", "cas_badval", "touch_hits", "touch_misses", "auth_cmds",
    "auth_errors", "conn_yields", "curr_items", "total_items", "bytes",
    "evictions", "reclaimed", "expired_unfetched", "evicted_unfetched",
};

/* Appends the host's lines of plain `stats` (no END). */
void mch_stats_write_general(struct evbuffer *out)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    mch_stats_line(out, "pid", "%ld", (long)getpid());
    mch_stats_line(out, "uptime", "%u", (unsigned)mch_core_current_time());
    mch_stats_line(out, "time", "%lld", (long long)time(NULL));
    mch_stats_line(out, "version", "%s", mch_core_version());
    mch_stats_line(out, "libevent", "%s", event_get_version());
    mch_stats_line(out, "pointer_size", "%d", (int)(8 * sizeof(void *)));
    mch_stats_line(out, "rusage_user", "%ld.%06ld", (long)ru.ru_utime.tv_sec,
                   (long)ru.ru_utime.tv_usec);
    mch_stats_line(out, "rusage_system", "%ld.%06ld",
                   (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    mch_stats_line(out, "max_connections", "%d", mch_settings.maxconns);
    mch_stats_line(out, "curr_connections", "%llu",
                   get(&mch_counters.curr_connections));
    mch_stats_line(out, "total_connections", "%llu",
                   get(&mch_counters.total_connections));
    mch_stats_line(out, "rejected_connections", "%llu",
                   get(&mch_counters.rejected_connections));
    mch_stats_line(out, "connection_structures", "%llu",
                   get(&mch_counters.curr_connections));
    for (size_t i = 0; i < sizeof(zero_stats) / sizeof(zero_stats[0]); i++)
        mch_stats_line(out, zero_stats[i], "0");
    mch_stats_line(out, "bytes_read", "%llu", get(&mch_counters.bytes_read));
    mch_stats_line(out, "bytes_written", "%llu",
                   get(&mch_counters.bytes_written));
    mch_stats_line(out, "limit_maxbytes", "%zu", mch_settings.maxbytes);
    mch_stats_line(out, "accepting_conns", "1");
    mch_stats_line(out, "listen_disabled_num", "%llu",
                   get(&mch_counters.listen_disabled_num));
    mch_stats_line(out, "threads", "%d", mch_settings.threads);
}

static void add_extension(const char *name, void *arg)
{
    mch_stats_line(arg, "extension", "%s", name);
}

/* Appends the lines of `stats settings` (no END). */
void mch_stats_write_settings(struct evbuffer *out)
{
    EXTENSION_LOGGER_DESCRIPTOR *logger = mch_logger_current();

    mch_stats_line(out, "maxbytes", "%zu", mch_settings.maxbytes);
    mch_stats_line(out, "maxconns", "%d", mch_settings.maxconns);
    mch_stats_line(out, "tcpport", "%d", mch_settings.port);
    mch_stats_line(out, "udpport", "%d", mch_settings.udpport);
    mch_stats_line(out, "inter", "%s",
                   mch_settings.listen ? mch_settings.listen : "NULL");
    mch_stats_line(out, "verbosity", "%d", mch_logger_verbosity());
    mch_stats_line(out, "oldest", "0");
    mch_stats_line(out, "evictions", "off");
    mch_stats_line(out, "domain_socket", "NULL");
    mch_stats_line(out, "umask", "700");
    mch_stats_line(out, "growth_factor", "1.25");
    mch_stats_line(out, "chunk_size", "48");
    mch_stats_line(out, "num_threads", "%d", mch_settings.threads);
    mch_stats_line(out, "stat_key_prefix", ":");
    mch_stats_line(out, "detail_enabled", "no");
    mch_stats_line(out, "reqs_per_event", "20");
    mch_stats_line(out, "cas_enabled", "no");
    mch_stats_line(out, "tcp_backlog", "1024");
    mch_stats_line(out, "binding_protocol", "ascii");
    mch_stats_line(out, "item_size_max", "1048576");
    mch_stats_line(out, "daemonize", "%s", mch_settings.daemonize ? "yes" : "no");
    mch_api_foreach_daemon(add_extension, out);
    mch_stats_line(out, "logger", "%s",
                   logger->get_name ? logger->get_name() : "(unnamed)");
}

/* Zeroes what `stats reset` resets (the totals, not current values). */
void mch_stats_reset(void)
{
    atomic_store(&mch_counters.total_connections, 0);
    atomic_store(&mch_counters.rejected_connections, 0);
    atomic_store(&mch_counters.listen_disabled_num, 0);
    atomic_store(&mch_counters.bytes_read, 0);
    atomic_store(&mch_counters.bytes_written, 0);
}
