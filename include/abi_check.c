/* abi_check.c: compile-time checks that the memcached interface headers in
 * use (ours, or a real set via --with-memcached) have the layout, member
 * types and values of doc/host-interface.md; a mismatch fails the build. */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <memcached/engine.h>
#include <memcached/extension.h>
#include <memcached/visibility.h>

/* The expected types are spelled out here from the interface description,
 * not taken from the headers, so a header that drifts cannot agree with
 * itself. _Generic picks 1 only for a compatible type, so each assertion
 * fails the build (with or without -Werror) on a wrong member type. */
#define HAS_TYPE(expr, type) _Generic((expr), type: 1, default: 0)

#define FNP sizeof(void (*)(void))

/* Member m of table `type` sits in function-pointer slot n and has the
 * function-pointer type ftype. */
#define MEMBER(type, m, n, ftype)                                          \
    _Static_assert(offsetof(type, m) == (n) * FNP, #type "." #m " slot"); \
    _Static_assert(HAS_TYPE(((type *)0)->m, ftype), #type "." #m " type")

/* The same for ENGINE_HANDLE_V1, whose slots count from get_info (after
 * the 64-bit interface header). */
#define EMEMBER(m, n, ftype)                                               \
    _Static_assert(offsetof(ENGINE_HANDLE_V1, m) ==                        \
                   offsetof(ENGINE_HANDLE_V1, get_info) + (n) * FNP,       \
                   "ENGINE_HANDLE_V1." #m " slot");                        \
    _Static_assert(HAS_TYPE(((ENGINE_HANDLE_V1 *)0)->m, ftype),            \
                   "ENGINE_HANDLE_V1." #m " type")

/* SERVER_HANDLE_V1: a 64-bit version, then seven table pointers. */
#define HMEMBER(m, n, ptype)                                               \
    _Static_assert(offsetof(SERVER_HANDLE_V1, m) ==                        \
                   sizeof(uint64_t) + (n) * sizeof(void *),                \
                   "SERVER_HANDLE_V1." #m " offset");                      \
    _Static_assert(HAS_TYPE(((SERVER_HANDLE_V1 *)0)->m, ptype),            \
                   "SERVER_HANDLE_V1." #m " type")
_Static_assert(offsetof(SERVER_HANDLE_V1, interface) == 0, "handle.interface");
_Static_assert(HAS_TYPE(((SERVER_HANDLE_V1 *)0)->interface, uint64_t),
               "handle.interface type");
HMEMBER(core, 0, SERVER_CORE_API *);
HMEMBER(stat, 1, SERVER_STAT_API *);
HMEMBER(extension, 2, SERVER_EXTENSION_API *);
HMEMBER(callback, 3, SERVER_CALLBACK_API *);
HMEMBER(engine, 4, ENGINE_HANDLE *);
HMEMBER(log, 5, SERVER_LOG_API *);
HMEMBER(cookie, 6, SERVER_COOKIE_API *);
_Static_assert(sizeof(SERVER_HANDLE_V1) ==
               sizeof(uint64_t) + 7 * sizeof(void *), "SERVER_HANDLE_V1 size");

/* SERVER_CORE_API */
MEMBER(SERVER_CORE_API, get_current_time, 0, rel_time_t (*)(void));
MEMBER(SERVER_CORE_API, realtime, 1, rel_time_t (*)(time_t));
MEMBER(SERVER_CORE_API, abstime, 2, time_t (*)(rel_time_t));
MEMBER(SERVER_CORE_API, server_version, 3, const char *(*)(void));
MEMBER(SERVER_CORE_API, hash, 4, uint32_t (*)(const void *, size_t, uint32_t));
MEMBER(SERVER_CORE_API, parse_config, 5,
       int (*)(const char *, struct config_item *, FILE *));
MEMBER(SERVER_CORE_API, shutdown, 6, void (*)(void));
MEMBER(SERVER_CORE_API, get_config, 7, bool (*)(struct config_item *));
_Static_assert(sizeof(SERVER_CORE_API) == 8 * FNP, "SERVER_CORE_API size");

/* SERVER_STAT_API */
MEMBER(SERVER_STAT_API, new_stats, 0, void *(*)(void));
MEMBER(SERVER_STAT_API, release_stats, 1, void (*)(void *));
MEMBER(SERVER_STAT_API, evicting, 2, void (*)(const void *, const void *, int));
_Static_assert(sizeof(SERVER_STAT_API) == 3 * FNP, "SERVER_STAT_API size");

/* SERVER_COOKIE_API */
MEMBER(SERVER_COOKIE_API, get_socket_fd, 0, int (*)(const void *));
MEMBER(SERVER_COOKIE_API, get_auth_data, 1,
       void (*)(const void *, auth_data_t *));
MEMBER(SERVER_COOKIE_API, store_engine_specific, 2,
       void (*)(const void *, void *));
MEMBER(SERVER_COOKIE_API, get_engine_specific, 3, void *(*)(const void *));
MEMBER(SERVER_COOKIE_API, notify_io_complete, 4,
       void (*)(const void *, ENGINE_ERROR_CODE));
MEMBER(SERVER_COOKIE_API, reserve, 5, ENGINE_ERROR_CODE (*)(const void *));
MEMBER(SERVER_COOKIE_API, release, 6, ENGINE_ERROR_CODE (*)(const void *));
_Static_assert(sizeof(SERVER_COOKIE_API) == 7 * FNP, "SERVER_COOKIE_API size");

/* SERVER_EXTENSION_API */
MEMBER(SERVER_EXTENSION_API, register_extension, 0,
       bool (*)(extension_type_t, void *));
MEMBER(SERVER_EXTENSION_API, unregister_extension, 1,
       void (*)(extension_type_t, void *));
MEMBER(SERVER_EXTENSION_API, get_extension, 2, void *(*)(extension_type_t));
_Static_assert(sizeof(SERVER_EXTENSION_API) == 3 * FNP,
               "SERVER_EXTENSION_API size");

/* SERVER_CALLBACK_API */
MEMBER(SERVER_CALLBACK_API, register_callback, 0,
       void (*)(ENGINE_HANDLE *, ENGINE_EVENT_TYPE,
                void (*)(const void *, ENGINE_EVENT_TYPE, const void *,
                         const void *),
                const void *));
MEMBER(SERVER_CALLBACK_API, perform_callbacks, 1,
       void (*)(ENGINE_EVENT_TYPE, const void *, const void *));
_Static_assert(sizeof(SERVER_CALLBACK_API) == 2 * FNP,
               "SERVER_CALLBACK_API size");

/* SERVER_LOG_API and the descriptors extensions register. */
MEMBER(SERVER_LOG_API, get_logger, 0, EXTENSION_LOGGER_DESCRIPTOR *(*)(void));
MEMBER(SERVER_LOG_API, get_level, 1, EXTENSION_LOG_LEVEL (*)(void));
MEMBER(SERVER_LOG_API, set_level, 2, void (*)(EXTENSION_LOG_LEVEL));
_Static_assert(sizeof(SERVER_LOG_API) == 3 * FNP, "SERVER_LOG_API size");
MEMBER(EXTENSION_LOGGER_DESCRIPTOR, get_name, 0, const char *(*)(void));
MEMBER(EXTENSION_LOGGER_DESCRIPTOR, log, 1,
       void (*)(EXTENSION_LOG_LEVEL, const void *, const char *, ...));
MEMBER(EXTENSION_DAEMON_DESCRIPTOR, get_name, 0, const char *(*)(void));
_Static_assert(offsetof(EXTENSION_DAEMON_DESCRIPTOR, next) == FNP, "next");
_Static_assert(HAS_TYPE(((EXTENSION_DAEMON_DESCRIPTOR *)0)->next,
                        struct extension_daemon_descriptor *),
               "EXTENSION_DAEMON_DESCRIPTOR.next type");

/* Function types passed around by the tables. */
_Static_assert(HAS_TYPE((ADD_STAT)0,
                        void (*)(const char *, uint16_t, const char *,
                                 uint32_t, const void *)), "ADD_STAT");
_Static_assert(HAS_TYPE((ADD_RESPONSE)0,
                        bool (*)(const void *, uint16_t, const void *,
                                 uint8_t, const void *, uint32_t, uint8_t,
                                 uint16_t, uint64_t, const void *)),
               "ADD_RESPONSE");
_Static_assert(HAS_TYPE((EVENT_CALLBACK)0,
                        void (*)(const void *, ENGINE_EVENT_TYPE,
                                 const void *, const void *)),
               "EVENT_CALLBACK");
_Static_assert(HAS_TYPE((GET_SERVER_API)0, SERVER_HANDLE_V1 *(*)(void)),
               "GET_SERVER_API");
_Static_assert(HAS_TYPE((MEMCACHED_EXTENSIONS_INITIALIZE)0,
                        EXTENSION_ERROR_CODE (*)(const char *,
                                                 SERVER_HANDLE_V1 *(*)(void))),
               "MEMCACHED_EXTENSIONS_INITIALIZE");
_Static_assert(HAS_TYPE((TAP_ITERATOR)0,
                        tap_event_t (*)(ENGINE_HANDLE *, const void *,
                                        item **, void **, uint16_t *,
                                        uint8_t *, uint16_t *, uint32_t *,
                                        uint16_t *)),
               "TAP_ITERATOR");

/* ENGINE_HANDLE_V1: the interface header, then 20 function pointers. */
_Static_assert(sizeof(ENGINE_HANDLE) == sizeof(uint64_t), "ENGINE_HANDLE");
_Static_assert(offsetof(ENGINE_HANDLE_V1, interface) == 0, "engine.interface");
_Static_assert(offsetof(ENGINE_HANDLE_V1, get_info) >= sizeof(uint64_t),
               "engine.get_info");
_Static_assert(offsetof(ENGINE_HANDLE_V1, get_info) <
               sizeof(uint64_t) + FNP, "engine.get_info padding");
EMEMBER(get_info, 0, const engine_info *(*)(ENGINE_HANDLE *));
EMEMBER(initialize, 1, ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const char *));
EMEMBER(destroy, 2, void (*)(ENGINE_HANDLE *, bool));
EMEMBER(allocate, 3,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, item **,
                              const void *, size_t, size_t, int, rel_time_t));
EMEMBER(remove, 4,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, const void *,
                              size_t, uint64_t, uint16_t));
EMEMBER(release, 5, void (*)(ENGINE_HANDLE *, const void *, item *));
EMEMBER(get, 6,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, item **,
                              const void *, int, uint16_t));
EMEMBER(store, 7,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, item *,
                              uint64_t *, ENGINE_STORE_OPERATION, uint16_t));
EMEMBER(arithmetic, 8,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, const void *,
                              int, bool, bool, uint64_t, uint64_t,
                              rel_time_t, uint64_t *, uint64_t *, uint16_t));
EMEMBER(flush, 9, ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, time_t));
EMEMBER(get_stats, 10,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, const char *,
                              int,
                              void (*)(const char *, uint16_t, const char *,
                                       uint32_t, const void *)));
EMEMBER(reset_stats, 11, void (*)(ENGINE_HANDLE *, const void *));
EMEMBER(get_stats_struct, 12, void *(*)(ENGINE_HANDLE *, const void *));
EMEMBER(aggregate_stats, 13,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *,
                              void (*)(void *, void *), void *));
EMEMBER(unknown_command, 14,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *,
                              protocol_binary_request_header *,
                              ADD_RESPONSE));
EMEMBER(tap_notify, 15,
        ENGINE_ERROR_CODE (*)(ENGINE_HANDLE *, const void *, void *,
                              uint16_t, uint8_t, uint16_t, tap_event_t,
                              uint32_t, const void *, size_t, uint32_t,
                              uint32_t, uint64_t, const void *, size_t,
                              uint16_t));
EMEMBER(get_tap_iterator, 16,
        TAP_ITERATOR (*)(ENGINE_HANDLE *, const void *, const void *, size_t,
                         uint32_t, const void *, size_t));
EMEMBER(item_set_cas, 17,
        void (*)(ENGINE_HANDLE *, const void *, item *, uint64_t));
EMEMBER(get_item_info, 18,
        bool (*)(ENGINE_HANDLE *, const void *, const item *, item_info *));
EMEMBER(errinfo, 19,
        size_t (*)(ENGINE_HANDLE *, const void *, char *, size_t));
_Static_assert(sizeof(ENGINE_HANDLE_V1) ==
               offsetof(ENGINE_HANDLE_V1, get_info) + 20 * FNP,
               "ENGINE_HANDLE_V1 ends after errinfo");

/* engine_info and feature_info, as get_info returns them. */
_Static_assert(offsetof(feature_info, feature) == 0 &&
               offsetof(feature_info, description) == sizeof(void *),
               "feature_info");
_Static_assert(offsetof(engine_info, description) == 0 &&
               offsetof(engine_info, num_features) == sizeof(void *) &&
               offsetof(engine_info, features) == 2 * sizeof(void *),
               "engine_info");

/* struct config_item: key, datatype, the value union, found. */
_Static_assert(offsetof(struct config_item, key) == 0, "config_item.key");
_Static_assert(HAS_TYPE(((struct config_item *)0)->key, const char *),
               "config_item.key type");
_Static_assert(offsetof(struct config_item, datatype) == sizeof(char *),
               "config_item.datatype");
_Static_assert(offsetof(struct config_item, value) ==
               ((sizeof(char *) + sizeof(enum config_datatype) +
                 sizeof(void *) - 1) / sizeof(void *)) * sizeof(void *),
               "config_item.value");
_Static_assert(offsetof(struct config_item, found) ==
               offsetof(struct config_item, value) + sizeof(void *),
               "config_item.found");
_Static_assert(HAS_TYPE(((struct config_item *)0)->found, bool),
               "config_item.found type");
_Static_assert(sizeof(union config_value) == sizeof(void *), "config_value");
_Static_assert(HAS_TYPE(((union config_value *)0)->dt_size, size_t *) &&
               HAS_TYPE(((union config_value *)0)->dt_float, float *) &&
               HAS_TYPE(((union config_value *)0)->dt_bool, bool *) &&
               HAS_TYPE(((union config_value *)0)->dt_string, char **),
               "config_value members");
_Static_assert(offsetof(auth_data_t, username) == 0 &&
               offsetof(auth_data_t, config) == sizeof(char *),
               "auth_data_t");
_Static_assert(sizeof(protocol_binary_request_header) == 24,
               "protocol_binary_request_header");
_Static_assert(sizeof(rel_time_t) == 4, "rel_time_t");

/* Enumeration values and constants. */
_Static_assert(ENGINE_INTERFACE_VERSION == 1, "ENGINE_INTERFACE_VERSION");
_Static_assert(EXTENSION_SUCCESS == 0x00 && EXTENSION_FATAL == 0xfe &&
               EXTENSION_FAILED == 0xff, "EXTENSION_ERROR_CODE");
_Static_assert(EXTENSION_DAEMON == 0 && EXTENSION_LOGGER == 1 &&
               EXTENSION_ASCII_PROTOCOL == 2 &&
               EXTENSION_BINARY_PROTOCOL == 3, "extension_type_t");
_Static_assert(EXTENSION_LOG_DETAIL == 0 && EXTENSION_LOG_DEBUG == 1 &&
               EXTENSION_LOG_INFO == 2 && EXTENSION_LOG_WARNING == 3,
               "EXTENSION_LOG_LEVEL");
_Static_assert(ON_CONNECT == 0 && ON_DISCONNECT == 1 && ON_AUTH == 2 &&
               ON_SWITCH_CONN == 3 && ON_LOG_LEVEL == 4 &&
               MAX_ENGINE_EVENT_TYPE == 5, "ENGINE_EVENT_TYPE");
_Static_assert(ENGINE_SUCCESS == 0 && ENGINE_KEY_ENOENT == 1 &&
               ENGINE_KEY_EEXISTS == 2 && ENGINE_ENOMEM == 3 &&
               ENGINE_NOT_STORED == 4 && ENGINE_EINVAL == 5 &&
               ENGINE_ENOTSUP == 6 && ENGINE_EWOULDBLOCK == 7 &&
               ENGINE_E2BIG == 8 && ENGINE_WANT_MORE == 9 &&
               ENGINE_DISCONNECT == 0x0a && ENGINE_EACCESS == 0x0b &&
               ENGINE_NOT_MY_VBUCKET == 0x0c && ENGINE_TMPFAIL == 0x0d &&
               ENGINE_ERANGE == 0x0e && ENGINE_FAILED == 0xff,
               "ENGINE_ERROR_CODE");
_Static_assert(OPERATION_ADD == 1 && OPERATION_SET == 2 &&
               OPERATION_REPLACE == 3 && OPERATION_APPEND == 4 &&
               OPERATION_PREPEND == 5 && OPERATION_CAS == 6,
               "ENGINE_STORE_OPERATION");
_Static_assert(TAP_MUTATION == 1 && TAP_CHECKPOINT_END == 11, "tap_event_t");
_Static_assert(DT_SIZE == 0 && DT_FLOAT == 1 && DT_BOOL == 2 &&
               DT_STRING == 3 && DT_CONFIGFILE == 4, "config_datatype");

/* Calls through the typed members, so the test also does something at
 * run time. */
static ENGINE_ERROR_CODE check_get_stats(ENGINE_HANDLE *h, const void *c,
                                         const char *k, int n, ADD_STAT a)
{
    (void)h; (void)c; (void)k; (void)n;
    a("k", 1, "v", 1, NULL);
    return ENGINE_SUCCESS;
}

static unsigned added;

static void check_add_stat(const char *k, const uint16_t kl, const char *v,
                           const uint32_t vl, const void *c)
{
    (void)k; (void)kl; (void)v; (void)vl; (void)c;
    added++;
}

static ENGINE_ERROR_CODE check_reserve(const void *cookie)
{
    return cookie == NULL ? ENGINE_EINVAL : ENGINE_SUCCESS;
}

static SERVER_HANDLE_V1 *check_get_api(void)
{
    return NULL;
}

static EXTENSION_ERROR_CODE check_init(const char *config, GET_SERVER_API g)
{
    return config == NULL && g() == NULL ? EXTENSION_SUCCESS
                                         : EXTENSION_FAILED;
}

/* Runs the calls; the real checks happened when this file compiled. */
int main(void)
{
    ENGINE_HANDLE_V1 v1 = { .get_stats = check_get_stats };
    SERVER_COOKIE_API cookie = { .reserve = check_reserve };
    MEMCACHED_EXTENSIONS_INITIALIZE init = check_init;
    int self = 0;

    if (v1.get_stats(NULL, NULL, NULL, 0, check_add_stat) != ENGINE_SUCCESS ||
        added != 1 || cookie.reserve(&self) != ENGINE_SUCCESS ||
        init(NULL, check_get_api) != EXTENSION_SUCCESS) {
        puts("FAIL: memcached interface call through pointers");
        return 1;
    }
    printf("memcached interface layout and types ok "
           "(get_stats at offset %zu)\n",
           offsetof(ENGINE_HANDLE_V1, get_stats));
    return 0;
}
