/* extension.h: what a loadable extension sees of its host: entry point
 * type, daemon and logger descriptors, log levels, extension and log
 * tables (memcached's protocol-extension descriptors are left out). */
#ifndef MEMCACHED_EXTENSION_H
#define MEMCACHED_EXTENSION_H

#include <stdbool.h>
#include <stdint.h>

#include <memcached/engine_common.h>
#include <memcached/protocol_binary.h>
#include <memcached/types.h>
#include <memcached/server_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result of memcached_extensions_initialize; anything but SUCCESS makes
 * the host unload the library and exit. */
typedef enum {
    EXTENSION_SUCCESS = 0x00,
    EXTENSION_FATAL = 0xfe,
    EXTENSION_FAILED = 0xff
} EXTENSION_ERROR_CODE;

/* Kinds of extension a host keeps. */
typedef enum {
    EXTENSION_DAEMON = 0x00,
    EXTENSION_LOGGER,
    EXTENSION_ASCII_PROTOCOL,
    EXTENSION_BINARY_PROTOCOL
} extension_type_t;

/* A daemon extension: a name (shown by `stats settings`) and the link the
 * host uses to chain daemons; the host owns `next` while registered. */
typedef struct extension_daemon_descriptor {
    const char *(*get_name)(void);
    struct extension_daemon_descriptor *next;
} EXTENSION_DAEMON_DESCRIPTOR;

/* Severities, lowest first; a message prints when its level is at or
 * above the host's current level. */
typedef enum {
    EXTENSION_LOG_DETAIL,
    EXTENSION_LOG_DEBUG,
    EXTENSION_LOG_INFO,
    EXTENSION_LOG_WARNING
} EXTENSION_LOG_LEVEL;

/* A logger; the host has one current logger at a time. */
typedef struct {
    const char *(*get_name)(void);
    void (*log)(EXTENSION_LOG_LEVEL severity, const void *client_cookie,
                const char *fmt, ...);
} EXTENSION_LOGGER_DESCRIPTOR;

/* Logging services of the host. */
typedef struct {
    /* The current logger; ask each time, it can be replaced. */
    EXTENSION_LOGGER_DESCRIPTOR *(*get_logger)(void);
    /* The current minimum severity. */
    EXTENSION_LOG_LEVEL (*get_level)(void);
    /* Changes the minimum severity. */
    void (*set_level)(EXTENSION_LOG_LEVEL severity);
} SERVER_LOG_API;

/* The symbol every extension exports as memcached_extensions_initialize. */
typedef EXTENSION_ERROR_CODE (*MEMCACHED_EXTENSIONS_INITIALIZE)(
    const char *config, GET_SERVER_API get_server_api);

/* Registering extensions with the host. */
typedef struct {
    /* Adds an extension of the given type; false if the host refuses. */
    bool (*register_extension)(extension_type_t type, void *extension);
    /* Removes a registered extension. */
    void (*unregister_extension)(extension_type_t type, void *extension);
    /* The registered extension of a type (for daemons: the list head). */
    void *(*get_extension)(extension_type_t type);
} SERVER_EXTENSION_API;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_EXTENSION_H */
