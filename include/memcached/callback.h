/* callback.h: server events (connect, disconnect, log level...) and the
 * table to subscribe to them. Values and order as in memcached's engine
 * interface; like the real header it leaves <stdbool.h> to the includer. */
#ifndef MEMCACHED_CALLBACK_H
#define MEMCACHED_CALLBACK_H

#include <memcached/engine_common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Events a host reports; the values are part of the ABI. */
typedef enum {
    ON_CONNECT = 0,
    ON_DISCONNECT = 1,
    ON_AUTH = 2,
    ON_SWITCH_CONN = 3,
    ON_LOG_LEVEL = 4
} ENGINE_EVENT_TYPE;

#define MAX_ENGINE_EVENT_TYPE 5

/* Called for an event: cookie is the connection, cb_data as registered. */
typedef void (*EVENT_CALLBACK)(const void *cookie, ENGINE_EVENT_TYPE type,
                               const void *event_data, const void *cb_data);

/* Subscribing to and firing events. */
typedef struct {
    /* Adds cb for type; engine is ignored by hosts (NULL is fine). */
    void (*register_callback)(ENGINE_HANDLE *engine, ENGINE_EVENT_TYPE type,
                              EVENT_CALLBACK cb, const void *cb_data);
    /* Calls every callback registered for type. */
    void (*perform_callbacks)(ENGINE_EVENT_TYPE type, const void *data,
                              const void *cookie);
} SERVER_CALLBACK_API;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_CALLBACK_H */
