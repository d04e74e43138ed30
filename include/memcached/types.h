/* types.h: basic types shared by the memcached extension interface.
 * Our own declaration of the subset memcached-counter uses; names, values
 * and layouts match memcached's engine interface (see host-abi.md). */
#ifndef MEMCACHED_TYPES_H
#define MEMCACHED_TYPES_H 1

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since the host started; 32 bits on purpose (host-abi.md). */
typedef uint32_t rel_time_t;

/* Result of an engine call. Only the values up to ENOTSUP matter to the
 * project; the rest are declared so the numbering stays the host's. */
typedef enum {
    ENGINE_SUCCESS = 0x00,
    ENGINE_KEY_ENOENT = 0x01,
    ENGINE_KEY_EEXISTS = 0x02,
    ENGINE_ENOMEM = 0x03,
    ENGINE_NOT_STORED = 0x04,
    ENGINE_EINVAL = 0x05,
    ENGINE_ENOTSUP = 0x06,
    ENGINE_EWOULDBLOCK = 0x07,
    ENGINE_E2BIG = 0x08,
    ENGINE_WANT_MORE = 0x09,
    ENGINE_DISCONNECT = 0x0a,
    ENGINE_EACCESS = 0x0b,
    ENGINE_NOT_MY_VBUCKET = 0x0c,
    ENGINE_TMPFAIL = 0x0d,
    ENGINE_ERANGE = 0x0e,
    ENGINE_FAILED = 0xff
} ENGINE_ERROR_CODE;

/* Kind of store for ENGINE_HANDLE_V1.store (only mchost's stub names it). */
typedef enum {
    OPERATION_ADD = 1,
    OPERATION_SET,
    OPERATION_REPLACE,
    OPERATION_APPEND,
    OPERATION_PREPEND,
    OPERATION_CAS
} ENGINE_STORE_OPERATION;

/* An engine's item is opaque to the host. */
typedef void item;

/* What SERVER_COOKIE_API.get_auth_data fills in. */
typedef struct {
    const char *username;
    const char *config;
} auth_data_t;

/* The server handle; its members are declared in engine.h, as upstream. */
typedef struct server_handle_v1_t SERVER_HANDLE_V1;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_TYPES_H */
