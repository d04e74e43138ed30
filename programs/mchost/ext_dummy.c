/* ext_dummy.c: test extension for mchost's check. Uses the host interface
 * as counter.so does (daemon, config, logger, callbacks, get_stats wrapped
 * at the first ON_CONNECT) and reports what it saw as STAT dummy_* lines. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memcached/engine.h>
#include <memcached/extension.h>
#include <memcached/visibility.h>

/* The host resolves the entry point with dlsym: keep it exported. */
#define EXPORT MEMCACHED_PUBLIC_API

/* The entry point (the host finds it with dlsym; declared for -Wextra). */
EXPORT EXTENSION_ERROR_CODE
memcached_extensions_initialize(const char *config, GET_SERVER_API get);

static GET_SERVER_API get_api;
static char *name;            /* from config "name", default "dummy" */
static pthread_t init_thread;
static size_t threads_at_init;
static atomic_uint connects, connects_second, disconnects, level_events;
static atomic_bool engine_null_at_init, first_connect_on_main;
static atomic_bool first_connect_had_engine;
static ENGINE_ERROR_CODE (*orig_get_stats)(ENGINE_HANDLE *, const void *,
                                           const char *, int, ADD_STAT);

static const char *dummy_get_name(void)
{
    return name;
}

static EXTENSION_DAEMON_DESCRIPTOR descriptor = { .get_name = dummy_get_name };

static void put(ADD_STAT add, const void *cookie, const char *prefix,
                const char *key, unsigned long long value)
{
    char k[64], v[32];
    int kl = snprintf(k, sizeof(k), "%s%s", prefix, key);
    int vl = snprintf(v, sizeof(v), "%llu", value);

    add(k, (uint16_t)kl, v, (uint32_t)vl, cookie);
}

/* Our lines, with prefix "dummy_" in plain stats and none in `stats dummy`. */
static void add_lines(ADD_STAT add, const void *cookie, const char *prefix)
{
    SERVER_HANDLE_V1 *api = get_api();

    put(add, cookie, prefix, "connects", atomic_load(&connects));
    put(add, cookie, prefix, "connects_second", atomic_load(&connects_second));
    put(add, cookie, prefix, "disconnects", atomic_load(&disconnects));
    put(add, cookie, prefix, "log_level_events", atomic_load(&level_events));
    put(add, cookie, prefix, "log_level", api->log->get_level());
    put(add, cookie, prefix, "engine_null_at_init",
        atomic_load(&engine_null_at_init));
    put(add, cookie, prefix, "first_connect_on_main",
        atomic_load(&first_connect_on_main));
    put(add, cookie, prefix, "first_connect_had_engine",
        atomic_load(&first_connect_had_engine));
    put(add, cookie, prefix, "threads_at_init", threads_at_init);
}

static ENGINE_ERROR_CODE dummy_get_stats(ENGINE_HANDLE *h, const void *cookie,
                                         const char *key, int nkey,
                                         ADD_STAT add)
{
    ENGINE_ERROR_CODE r;

    if (key == NULL) {
        r = orig_get_stats(h, cookie, key, nkey, add);
        if (r == ENGINE_SUCCESS)
            add_lines(add, cookie, "dummy_");
        return r;
    }
    if (nkey == 5 && memcmp(key, "dummy", 5) == 0) {
        add_lines(add, cookie, "");
        return ENGINE_SUCCESS;
    }
    if (nkey == 8 && memcmp(key, "shutdown", 8) == 0) {
        get_api()->core->shutdown();
        return ENGINE_SUCCESS;
    }
    return orig_get_stats(h, cookie, key, nkey, add);
}

static void on_connect(const void *cookie, ENGINE_EVENT_TYPE type,
                       const void *data, const void *cb_data)
{
    SERVER_HANDLE_V1 *api = get_api();

    (void)type; (void)data; (void)cb_data;
    if (atomic_fetch_add(&connects, 1) == 0) {
        /* The first ON_CONNECT is the host's listening socket, on the main
         * thread, before clients: the moment to wrap get_stats. */
        ENGINE_HANDLE_V1 *v1 = (ENGINE_HANDLE_V1 *)api->engine;

        atomic_store(&first_connect_on_main,
                     pthread_equal(pthread_self(), init_thread));
        if (v1 != NULL && v1->interface.interface == 1) {
            atomic_store(&first_connect_had_engine, true);
            orig_get_stats = v1->get_stats;
            v1->get_stats = dummy_get_stats;
        }
    }
    api->log->get_logger()->log(EXTENSION_LOG_DEBUG, cookie,
                                "dummy: connect (fd %d)",
                                api->cookie->get_socket_fd(cookie));
}

static void on_connect_second(const void *cookie, ENGINE_EVENT_TYPE type,
                              const void *data, const void *cb_data)
{
    (void)cookie; (void)type; (void)data;
    if (cb_data == &connects_second)
        atomic_fetch_add(&connects_second, 1);
}

static void on_disconnect(const void *cookie, ENGINE_EVENT_TYPE type,
                          const void *data, const void *cb_data)
{
    (void)cookie; (void)type; (void)data; (void)cb_data;
    atomic_fetch_add(&disconnects, 1);
}

static void on_log_level(const void *cookie, ENGINE_EVENT_TYPE type,
                         const void *data, const void *cb_data)
{
    (void)cookie; (void)type; (void)data; (void)cb_data;
    atomic_fetch_add(&level_events, 1);
}

static void free_name(void)
{
    free(name);
}

/* Entry point: config keys name (string), fail (bool). */
EXPORT EXTENSION_ERROR_CODE
memcached_extensions_initialize(const char *config, GET_SERVER_API get)
{
    SERVER_HANDLE_V1 *api = get();
    EXTENSION_LOGGER_DESCRIPTOR *log = api->log->get_logger();
    bool fail = false;
    struct config_item items[] = {
        { .key = "name", .datatype = DT_STRING, .value.dt_string = &name },
        { .key = "fail", .datatype = DT_BOOL, .value.dt_bool = &fail },
        { .key = NULL },
    };
    struct config_item host[] = {
        { .key = "num_threads", .datatype = DT_SIZE,
          .value.dt_size = &threads_at_init },
        { .key = NULL },
    };

    get_api = get;
    if (api->interface != 1 ||
        api->core->parse_config(config, items, stderr) < 0)
        return EXTENSION_FAILED;
    if (fail) {
        log->log(EXTENSION_LOG_WARNING, NULL, "dummy: asked to fail");
        return EXTENSION_FATAL;
    }
    if (name == NULL)
        name = strdup("dummy");
    atexit(free_name);
    api->core->get_config(host);
    atomic_store(&engine_null_at_init, api->engine == NULL);
    init_thread = pthread_self();
    if (!api->extension->register_extension(EXTENSION_DAEMON, &descriptor))
        return EXTENSION_FAILED;
    api->callback->register_callback(NULL, ON_CONNECT, on_connect, NULL);
    api->callback->register_callback(NULL, ON_CONNECT, on_connect_second,
                                     &connects_second);
    api->callback->register_callback(NULL, ON_DISCONNECT, on_disconnect,
                                     NULL);
    api->callback->register_callback(NULL, ON_LOG_LEVEL, on_log_level, NULL);
    log->log(EXTENSION_LOG_INFO, NULL, "dummy: initialized as %s", name);
    return EXTENSION_SUCCESS;
}
