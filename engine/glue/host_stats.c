/* host_stats.c: puts the counter statistics into the host's own `stats`
 * output. The host has no hook for extensions, so this wraps the engine's
 * get_stats member (see doc/operations.md for the names it produces). */
#include "config.h"

#include "engine/glue/host_glue.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* What the wrapper reads; set once before the host serves clients. */
static struct {
    ENGINE_ERROR_CODE (*original)(ENGINE_HANDLE *h, const void *cookie,
                                  const char *key, int nkey, ADD_STAT add);
    cnt_stats_sources sources;
    const cnt_server *server;
    atomic_bool attached;       /* false once the objects are gone */
} host_stats;

/* Where one report goes: the host's callback, with or without prefix. */
typedef struct host_stats_sink {
    ADD_STAT add;
    const void *cookie;
    bool prefixed;
} host_stats_sink;

/* Emits one line: "counter_<name>" with ':' made '_' (so `stats` keys stay
 * plain identifiers for tools), or the reference's name as is. */
static void host_stats_item(void *ctx, const char *name, const char *value)
{
    host_stats_sink *sink = ctx;
    char key[128];
    if (sink->prefixed) {
        int n = snprintf(key, sizeof(key), "counter_%s", name);
        if (n < 0 || (size_t)n >= sizeof(key))
            return;
        for (char *p = key; *p != '\0'; p++)
            if (*p == ':')
                *p = '_';
        name = key;
    }
    sink->add(name, (uint16_t)strlen(name), value, (uint32_t)strlen(value),
              sink->cookie);
}

/* Emits every counter item and the bound ports (the Throttr front's: 0
 * when it is off). */
static void host_stats_report(host_stats_sink *sink)
{
    char port[8];
    cnt_stats_report(&host_stats.sources, host_stats_item, sink);
    snprintf(port, sizeof(port), "%u",
             (unsigned)cnt_server_port(host_stats.server));
    host_stats_item(sink, "port", port);
    snprintf(port, sizeof(port), "%u",
             (unsigned)cnt_server_throttr_port(host_stats.server));
    host_stats_item(sink, "throttr_port", port);
    snprintf(port, sizeof(port), "%u",
             (unsigned)cnt_server_http_port(host_stats.server));
    host_stats_item(sink, "http_port", port);
}

/* The wrapper installed in the engine handle. */
static ENGINE_ERROR_CODE host_stats_get_stats(ENGINE_HANDLE *h,
                                              const void *cookie,
                                              const char *key, int nkey,
                                              ADD_STAT add)
{
    if (!atomic_load(&host_stats.attached))
        return host_stats.original(h, cookie, key, nkey, add);
    if (key != NULL && nkey == 7 && memcmp(key, "counter", 7) == 0) {
        host_stats_sink sink = {add, cookie, false};
        host_stats_report(&sink);
        return ENGINE_SUCCESS;
    }
    ENGINE_ERROR_CODE rc = host_stats.original(h, cookie, key, nkey, add);
    if ((key == NULL || nkey == 0) && rc == ENGINE_SUCCESS) {
        host_stats_sink sink = {add, cookie, true};
        host_stats_report(&sink);
    }
    return rc;
}

/* Wraps the engine's get_stats (when it is an ENGINE_HANDLE_V1) so plain
 * `stats` gains counter_* lines and `stats counter` lists the items; false
 * (after logging why) when the engine cannot be wrapped. */
bool cnt_host_stats_install(SERVER_HANDLE_V1 *api,
                            const cnt_stats_sources *sources,
                            const cnt_server *server, const cnt_logger *log)
{
    ENGINE_HANDLE *engine = api != NULL ? api->engine : NULL;
    if (engine == NULL || engine->interface != 1) {
        cnt_log(log, CNT_LOG_INFO,
                "counter: the host's engine is not an ENGINE_HANDLE_V1; "
                "counter items stay on the counter port's Stats only");
        return false;
    }
    ENGINE_HANDLE_V1 *v1 = (ENGINE_HANDLE_V1 *)engine;
    if (v1->get_stats == NULL || v1->get_stats == host_stats_get_stats)
        return v1->get_stats != NULL;
    host_stats.sources = *sources;
    host_stats.server = server;
    host_stats.original = v1->get_stats;
    atomic_store(&host_stats.attached, true);
    v1->get_stats = host_stats_get_stats;
    return true;
}

/* Makes the wrapper pass every request straight to the engine again (the
 * counter objects are about to be freed at exit). */
void cnt_host_stats_detach(void)
{
    atomic_store(&host_stats.attached, false);
}
