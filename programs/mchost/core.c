/* core.c: SERVER_CORE_API for mchost: a monotonic server clock, memcached's
 * expiry conversions, a seeded 32-bit hash, configuration read-back and a
 * shutdown flag that the main loop polls. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "programs/mchost/core.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/parse_config.h"
#include "programs/mchost/settings.h"

/* Expiry times above this many seconds are absolute (memcached's rule). */
#define MCH_REALTIME_MAXDELTA (60 * 60 * 24 * 30)

static time_t started;
static struct timespec mono_started;
static atomic_bool shutdown_flag;

/* Starts the server clock (get_current_time counts from here). */
void mch_core_clock_start(void)
{
    started = time(NULL);
    clock_gettime(CLOCK_MONOTONIC, &mono_started);
}

/* Seconds since mch_core_clock_start; monotonic, so wall-clock steps do
 * not move it. */
rel_time_t mch_core_current_time(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (rel_time_t)(now.tv_sec - mono_started.tv_sec);
}

/* Wall-clock time of mch_core_clock_start. */
time_t mch_core_started(void)
{
    return started;
}

static rel_time_t core_realtime(const time_t exptime)
{
    if (exptime == 0)
        return 0;
    if (exptime < 0)
        return 1; /* already expired */
    if (exptime > MCH_REALTIME_MAXDELTA) {
        if (exptime <= started)
            return 1;
        return (rel_time_t)(exptime - started);
    }
    return (rel_time_t)(exptime + mch_core_current_time());
}

static time_t core_abstime(const rel_time_t exptime)
{
    return started + (time_t)exptime;
}

/* The host's version string. */
const char *mch_core_version(void)
{
    return PACKAGE_VERSION;
}

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* MurmurHash3 (x86, 32-bit): well distributed and seedable. */
static uint32_t core_hash(const void *data, size_t size, uint32_t seed)
{
    const uint8_t *p = data;
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    uint32_t h = seed, k;
    size_t i;

    for (i = 0; i + 4 <= size; i += 4) {
        k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
            (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
        k = rotl32(k * c1, 15) * c2;
        h = rotl32(h ^ k, 13) * 5 + 0xe6546b64;
    }
    k = 0;
    switch (size & 3) {
    case 3:
        k ^= (uint32_t)p[i + 2] << 16;
        /* fall through */
    case 2:
        k ^= (uint32_t)p[i + 1] << 8;
        /* fall through */
    case 1:
        k ^= p[i];
        h ^= rotl32(k * c1, 15) * c2;
    }
    h ^= (uint32_t)size;
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    return h ^ (h >> 16);
}

static void core_shutdown(void)
{
    atomic_store(&shutdown_flag, true);
}

/* True once someone called SERVER_CORE_API.shutdown. */
bool mch_core_shutdown_requested(void)
{
    return atomic_load(&shutdown_flag);
}

/* Answers from the settings by writing them as a configuration string and
 * parsing that against items, so every datatype converts as it would
 * from -X. Keys are those of `stats settings`. */
static bool core_get_config(struct config_item items[])
{
    char conf[1024], inter[256];
    size_t j = 0;

    /* Escape the address list: it may hold characters the parser treats
     * specially. */
    for (const char *s = mch_settings.listen; s && *s && j + 3 < sizeof(inter); s++) {
        if (strchr(";=\\ ", *s) != NULL)
            inter[j++] = '\\';
        inter[j++] = *s;
    }
    inter[j] = '\0';
    snprintf(conf, sizeof(conf),
             "maxbytes=%zu;maxconns=%d;tcpport=%d;udpport=%d;inter=%s;"
             "verbosity=%d;num_threads=%d;evictions=off;cas_enabled=off;"
             "detail_enabled=off;reqs_per_event=20;tcp_backlog=1024;"
             "item_size_max=1048576;binding_protocol=ascii;daemonize=%s",
             mch_settings.maxbytes, mch_settings.maxconns, mch_settings.port,
             mch_settings.udpport, inter, mch_logger_verbosity(),
             mch_settings.threads, mch_settings.daemonize ? "on" : "off");
    return mch_parse_config(conf, items, NULL) >= 0;
}

static SERVER_CORE_API core_api = {
    .get_current_time = mch_core_current_time,
    .realtime = core_realtime,
    .abstime = core_abstime,
    .server_version = mch_core_version,
    .hash = core_hash,
    .parse_config = mch_parse_config,
    .shutdown = core_shutdown,
    .get_config = core_get_config,
};

/* The SERVER_CORE_API table. */
SERVER_CORE_API *mch_core_api(void)
{
    return &core_api;
}
