/* engine.h: the server handle (SERVER_HANDLE_V1) and the version-1 engine
 * handle (ENGINE_HANDLE_V1), every member with its real function type;
 * includes the rest of the interface, as memcached's engine.h does. */
#ifndef MEMCACHED_ENGINE_H
#define MEMCACHED_ENGINE_H

#include <stdbool.h>
#include <sys/types.h>
#include <stdint.h>
#include <stdio.h>

#include <memcached/types.h>
#include <memcached/protocol_binary.h>
#include <memcached/config_parser.h>
#include <memcached/server_api.h>
#include <memcached/callback.h>
#include <memcached/extension.h>
#include <memcached/vbucket.h>
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

/* Events of a TAP (replication) stream; the values are the ABI. */
typedef enum {
    TAP_MUTATION = 1,
    TAP_DELETION,
    TAP_FLUSH,
    TAP_OPAQUE,
    TAP_VBUCKET_SET,
    TAP_ACK,
    TAP_DISCONNECT,
    TAP_NOOP,
    TAP_PAUSE,
    TAP_CHECKPOINT_START,
    TAP_CHECKPOINT_END
} tap_event_t;

/* Produces the next event of a TAP stream (get_tap_iterator returns one). */
typedef tap_event_t (*TAP_ITERATOR)(ENGINE_HANDLE *handle,
                                    const void *cookie, item **it,
                                    void **engine_specific,
                                    uint16_t *nengine_specific, uint8_t *ttl,
                                    uint16_t *flags, uint32_t *seqno,
                                    uint16_t *vbucket);

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

/* Version 1 of the engine handle, member for member. Only get_stats is
 * used by the extension (it wraps it); mchost's stub engine fills them
 * all so the table is complete. */
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
    void *(*get_stats_struct)(ENGINE_HANDLE *handle, const void *cookie);
    ENGINE_ERROR_CODE (*aggregate_stats)(ENGINE_HANDLE *handle,
                                         const void *cookie,
                                         void (*callback)(void *, void *),
                                         void *data);
    ENGINE_ERROR_CODE (*unknown_command)(ENGINE_HANDLE *handle,
                                         const void *cookie,
                                         protocol_binary_request_header *req,
                                         ADD_RESPONSE response);
    ENGINE_ERROR_CODE (*tap_notify)(ENGINE_HANDLE *handle,
                                    const void *cookie,
                                    void *engine_specific, uint16_t nengine,
                                    uint8_t ttl, uint16_t tap_flags,
                                    tap_event_t tap_event,
                                    uint32_t tap_seqno, const void *key,
                                    size_t nkey, uint32_t flags,
                                    uint32_t exptime, uint64_t cas,
                                    const void *data, size_t ndata,
                                    uint16_t vbucket);
    TAP_ITERATOR (*get_tap_iterator)(ENGINE_HANDLE *handle,
                                     const void *cookie, const void *client,
                                     size_t nclient, uint32_t flags,
                                     const void *userdata,
                                     size_t nuserdata);
    void (*item_set_cas)(ENGINE_HANDLE *handle, const void *cookie,
                         item *it, uint64_t cas);
    bool (*get_item_info)(ENGINE_HANDLE *handle, const void *cookie,
                          const item *it, item_info *info);
    size_t (*errinfo)(ENGINE_HANDLE *handle, const void *cookie,
                      char *buffer, size_t buffsz);
} ENGINE_HANDLE_V1;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_ENGINE_H */
