/* server_api.h: the core, stat and cookie tables a host hands to engines
 * and extensions, and GET_SERVER_API. Member order and function types
 * are the ABI (doc/host-interface.md). */
#ifndef MEMCACHED_SERVER_API_H
#define MEMCACHED_SERVER_API_H

#include <inttypes.h>

#include <memcached/types.h>
#include <memcached/config_parser.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Core services of the host. */
typedef struct {
    /* Seconds since the host started (meaningless during extension init). */
    rel_time_t (*get_current_time)(void);
    /* Converts an expiry (relative seconds or absolute epoch) to rel_time_t. */
    rel_time_t (*realtime)(const time_t exptime);
    /* Converts a rel_time_t back to epoch seconds. */
    time_t (*abstime)(const rel_time_t exptime);
    /* The host's version string. */
    const char *(*server_version)(void);
    /* A general-purpose hash of size bytes at data. */
    uint32_t (*hash)(const void *data, size_t size, uint32_t seed);
    /* Parses "key=value;..." into items: 0 ok, 1 unknown keys, -1 bad value. */
    int (*parse_config)(const char *str, struct config_item items[],
                        FILE *error);
    /* Asks the host to stop; only raises a flag its main loop notices. */
    void (*shutdown)(void);
    /* Reads host settings (tcpport, maxconns, verbosity, num_threads...). */
    bool (*get_config)(struct config_item items[]);
} SERVER_CORE_API;

/* Engine thread-stat helpers; an extension has no use for them. */
typedef struct {
    /* A fresh per-thread stats block of the engine's (or NULL). */
    void *(*new_stats)(void);
    /* Frees what new_stats returned. */
    void (*release_stats)(void *stats);
    /* Counts an eviction of key. */
    void (*evicting)(const void *cookie, const void *key, int nkey);
} SERVER_STAT_API;

/* Per-connection services; the cookie is the host's connection. Meant for
 * engines serving memcache clients; a daemon extension with its own
 * listener never calls them. */
typedef struct {
    /* The connection's socket. */
    int (*get_socket_fd)(const void *cookie);
    /* Who authenticated on the connection (SASL). */
    void (*get_auth_data)(const void *cookie, auth_data_t *data);
    /* Attaches one pointer of the engine's to the connection. */
    void (*store_engine_specific)(const void *cookie, void *engine_data);
    /* The pointer stored with store_engine_specific, or NULL. */
    void *(*get_engine_specific)(const void *cookie);
    /* Resumes a connection an engine call left waiting (EWOULDBLOCK). */
    void (*notify_io_complete)(const void *cookie, ENGINE_ERROR_CODE status);
    /* Keeps the cookie valid beyond the current call, until release. */
    ENGINE_ERROR_CODE (*reserve)(const void *cookie);
    /* Ends a reserve; the host may then free the cookie. */
    ENGINE_ERROR_CODE (*release)(const void *cookie);
} SERVER_COOKIE_API;

/* What an extension's entry point receives: call it to get the handle. */
typedef SERVER_HANDLE_V1 *(*GET_SERVER_API)(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_SERVER_API_H */
