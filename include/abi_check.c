/* abi_check.c: compile-time checks that the memcached interface headers in
 * use (ours, or a real set via --with-memcached) have the layout and values
 * host-abi.md states; a mismatch fails the build of `make check`. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>

#include <memcached/engine.h>
#include <memcached/extension.h>

#define FNP sizeof(void (*)(void))

/* Member m of a table of function pointers sits in slot n. */
#define SLOT(type, m, n) \
    _Static_assert(offsetof(type, m) == (n) * FNP, #type "." #m " slot")

/* SERVER_HANDLE_V1: a 64-bit version, then seven table pointers. */
_Static_assert(offsetof(SERVER_HANDLE_V1, interface) == 0, "handle.interface");
_Static_assert(offsetof(SERVER_HANDLE_V1, core) == sizeof(uint64_t), "core");
#define HSLOT(m, n) \
    _Static_assert(offsetof(SERVER_HANDLE_V1, m) == \
                   sizeof(uint64_t) + (n) * sizeof(void *), "handle." #m)
HSLOT(stat, 1);
HSLOT(extension, 2);
HSLOT(callback, 3);
HSLOT(engine, 4);
HSLOT(log, 5);
HSLOT(cookie, 6);

SLOT(SERVER_CORE_API, get_current_time, 0);
SLOT(SERVER_CORE_API, realtime, 1);
SLOT(SERVER_CORE_API, abstime, 2);
SLOT(SERVER_CORE_API, server_version, 3);
SLOT(SERVER_CORE_API, hash, 4);
SLOT(SERVER_CORE_API, parse_config, 5);
SLOT(SERVER_CORE_API, shutdown, 6);
SLOT(SERVER_CORE_API, get_config, 7);
SLOT(SERVER_STAT_API, evicting, 2);
SLOT(SERVER_EXTENSION_API, register_extension, 0);
SLOT(SERVER_EXTENSION_API, unregister_extension, 1);
SLOT(SERVER_EXTENSION_API, get_extension, 2);
SLOT(SERVER_CALLBACK_API, register_callback, 0);
SLOT(SERVER_CALLBACK_API, perform_callbacks, 1);
SLOT(SERVER_LOG_API, get_logger, 0);
SLOT(SERVER_LOG_API, get_level, 1);
SLOT(SERVER_LOG_API, set_level, 2);
SLOT(EXTENSION_LOGGER_DESCRIPTOR, get_name, 0);
SLOT(EXTENSION_LOGGER_DESCRIPTOR, log, 1);
SLOT(EXTENSION_DAEMON_DESCRIPTOR, get_name, 0);
_Static_assert(offsetof(EXTENSION_DAEMON_DESCRIPTOR, next) == FNP, "next");

/* ENGINE_HANDLE_V1: the interface header, then get_info .. get_stats. */
_Static_assert(sizeof(ENGINE_HANDLE) == sizeof(uint64_t), "ENGINE_HANDLE");
#define ESLOT(m, n) \
    _Static_assert(offsetof(ENGINE_HANDLE_V1, m) == \
                   offsetof(ENGINE_HANDLE_V1, get_info) + (n) * FNP, \
                   "engine." #m)
_Static_assert(offsetof(ENGINE_HANDLE_V1, get_info) >= sizeof(uint64_t),
               "engine.get_info");
_Static_assert(offsetof(ENGINE_HANDLE_V1, get_info) <
               sizeof(uint64_t) + FNP, "engine.get_info padding");
ESLOT(initialize, 1);
ESLOT(destroy, 2);
ESLOT(allocate, 3);
ESLOT(remove, 4);
ESLOT(release, 5);
ESLOT(get, 6);
ESLOT(store, 7);
ESLOT(arithmetic, 8);
ESLOT(flush, 9);
ESLOT(get_stats, 10);

/* struct config_item: key, datatype, the value union, found. */
_Static_assert(offsetof(struct config_item, key) == 0, "config_item.key");
_Static_assert(offsetof(struct config_item, datatype) == sizeof(char *),
               "config_item.datatype");
_Static_assert(offsetof(struct config_item, value) ==
               ((sizeof(char *) + sizeof(enum config_datatype) +
                 sizeof(void *) - 1) / sizeof(void *)) * sizeof(void *),
               "config_item.value");
_Static_assert(offsetof(struct config_item, found) ==
               offsetof(struct config_item, value) + sizeof(void *),
               "config_item.found");
_Static_assert(sizeof(union config_value) == sizeof(void *), "config_value");
_Static_assert(sizeof(rel_time_t) == 4, "rel_time_t");

/* Enumeration values. */
_Static_assert(EXTENSION_SUCCESS == 0x00 && EXTENSION_FATAL == 0xfe &&
               EXTENSION_FAILED == 0xff, "EXTENSION_ERROR_CODE");
_Static_assert(EXTENSION_DAEMON == 0 && EXTENSION_LOGGER == 1 &&
               EXTENSION_ASCII_PROTOCOL == 2, "extension_type_t");
_Static_assert(EXTENSION_LOG_DETAIL == 0 && EXTENSION_LOG_DEBUG == 1 &&
               EXTENSION_LOG_INFO == 2 && EXTENSION_LOG_WARNING == 3,
               "EXTENSION_LOG_LEVEL");
_Static_assert(ON_CONNECT == 0 && ON_DISCONNECT == 1 && ON_AUTH == 2 &&
               ON_SWITCH_CONN == 3 && ON_LOG_LEVEL == 4, "ENGINE_EVENT_TYPE");
_Static_assert(ENGINE_SUCCESS == 0 && ENGINE_KEY_ENOENT == 1 &&
               ENGINE_EINVAL == 5 && ENGINE_ENOTSUP == 6,
               "ENGINE_ERROR_CODE");
_Static_assert(DT_SIZE == 0 && DT_FLOAT == 1 && DT_BOOL == 2 &&
               DT_STRING == 3 && DT_CONFIGFILE == 4, "config_datatype");

/* Function types: assigning functions of the documented signatures to the
 * members fails to compile (with -Werror) if a member's type differs. */
static ENGINE_ERROR_CODE check_get_stats(ENGINE_HANDLE *h, const void *c,
                                         const char *k, int n, ADD_STAT a)
{
    (void)h; (void)c; (void)k; (void)n; (void)a;
    return ENGINE_SUCCESS;
}

static void check_add_stat(const char *k, const uint16_t kl, const char *v,
                           const uint32_t vl, const void *c)
{
    (void)k; (void)kl; (void)v; (void)vl; (void)c;
}

static void check_event(const void *c, ENGINE_EVENT_TYPE t, const void *d,
                        const void *cb)
{
    (void)c; (void)t; (void)d; (void)cb;
}

static SERVER_HANDLE_V1 *check_get_api(void)
{
    return NULL;
}

static EXTENSION_ERROR_CODE check_init(const char *config, GET_SERVER_API g)
{
    (void)config; (void)g;
    return EXTENSION_SUCCESS;
}

/* Runs the type checks at run time too, so the test does something. */
int main(void)
{
    ENGINE_HANDLE_V1 v1 = { .get_stats = check_get_stats };
    ADD_STAT add = check_add_stat;
    EVENT_CALLBACK ev = check_event;
    GET_SERVER_API get = check_get_api;
    MEMCACHED_EXTENSIONS_INITIALIZE init = check_init;

    if (v1.get_stats(NULL, NULL, NULL, 0, add) != ENGINE_SUCCESS ||
        init(NULL, get) != EXTENSION_SUCCESS || ev == NULL) {
        puts("FAIL: memcached interface call through pointers");
        return 1;
    }
    printf("memcached interface layout ok (get_stats at offset %zu)\n",
           offsetof(ENGINE_HANDLE_V1, get_stats));
    return 0;
}
