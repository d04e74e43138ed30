/* engine.h: the server handle (SERVER_HANDLE_V1) and the version-1 engine
 * handle (ENGINE_HANDLE_V1) of memcached's pluggable-engine interface.
 * Includes the rest of the interface, as upstream's engine.h does. */
#ifndef MEMCACHED_ENGINE_H
#define MEMCACHED_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <memcached/types.h>
#include <memcached/config_parser.h>
#include <memcached/server_api.h>
#include <memcached/callback.h>
#include <memcached/extension.h>
#include <memcached/engine_common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENGINE_INTERFACE_VERSION 1

/* Everything a host offers, as returned by GET_SERVER_API. engine is NULL
 * while extensions initialize and set once the host's engine exists. */
struct server_handle_v1_t {
    uint64_t interface;
    SERVER_CORE_API *core;
    SERVER_STAT_API *stat;
    SERVER_EXTENSION_API *extension;
    SERVER_CALLBACK_API *callback;
    ENGINE_HANDLE *engine;
    SERVER_LOG_API *log;
    SERVER_COOKIE_API *cookie;
};

/* One feature an engine claims (get_info). */
typedef struct {
    uint32_t feature;
    const char *description;
} feature_info;

/* What get_info returns; features is really num_features long. */
typedef struct {
    const char *description;
    uint32_t num_features;
    feature_info features[1];
} engine_info;

/* Stand-in type for handle members after get_stats: nothing in this
 * project calls them, so only their size and position matter. */
typedef void (*engine_unused_fn)(void);

/* Version 1 of the engine handle. Members up to get_stats are declared
 * with their exact types; the ones after it only keep the layout of the
 * upstream revision host-abi.md describes. */
typedef struct engine_interface_v1 {
    struct engine_interface interface;
    const engine_info *(*get_info)(ENGINE_HANDLE *handle);
    ENGINE_ERROR_CODE (*initialize)(ENGINE_HANDLE *handle,
                                    const char *config_str);
    void (*destroy)(ENGINE_HANDLE *handle, const bool force);
    ENGINE_ERROR_CODE (*allocate)(ENGINE_HANDLE *handle, const void *cookie,
                                  item **it, const void *key,
                                  const size_t nkey, const size_t nbytes,
                                  const int flags, const rel_time_t exptime);
    ENGINE_ERROR_CODE (*remove)(ENGINE_HANDLE *handle, const void *cookie,
                                const void *key, const size_t nkey,
                                uint64_t cas, uint16_t vbucket);
    void (*release)(ENGINE_HANDLE *handle, const void *cookie, item *it);
    ENGINE_ERROR_CODE (*get)(ENGINE_HANDLE *handle, const void *cookie,
                             item **it, const void *key, const int nkey,
                             uint16_t vbucket);
    ENGINE_ERROR_CODE (*store)(ENGINE_HANDLE *handle, const void *cookie,
                               item *it, uint64_t *cas,
                               ENGINE_STORE_OPERATION operation,
                               uint16_t vbucket);
    ENGINE_ERROR_CODE (*arithmetic)(ENGINE_HANDLE *handle,
                                    const void *cookie, const void *key,
                                    const int nkey, const bool increment,
                                    const bool create, const uint64_t delta,
                                    const uint64_t initial,
                                    const rel_time_t exptime, uint64_t *cas,
                                    uint64_t *result, uint16_t vbucket);
    ENGINE_ERROR_CODE (*flush)(ENGINE_HANDLE *handle, const void *cookie,
                               time_t when);
    /* Statistics for stat_key (NULL: the general set), fed to add_stat
     * with the host's cookie. Extensions may wrap this member. */
    ENGINE_ERROR_CODE (*get_stats)(ENGINE_HANDLE *handle, const void *cookie,
                                   const char *stat_key, int nkey,
                                   ADD_STAT add_stat);
    void (*reset_stats)(ENGINE_HANDLE *handle, const void *cookie);
    engine_unused_fn get_stats_struct;
    engine_unused_fn aggregate_stats;
    engine_unused_fn unknown_command;
    engine_unused_fn tap_notify;
    engine_unused_fn get_tap_iterator;
    engine_unused_fn item_set_cas;
    engine_unused_fn get_item_info;
    engine_unused_fn errinfo;
} ENGINE_HANDLE_V1;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_ENGINE_H */
