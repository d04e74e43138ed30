/* types.h: basic types of the memcached extension interface: the relative
 * clock, engine result codes, items and the server handle's forward
 * declaration. Names, values and layouts are memcached's (engine line). */
#ifndef MEMCACHED_TYPES_H
#define MEMCACHED_TYPES_H 1

#include <sys/types.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since the host started. 32 bits by design: it is stored in
 * every item, so it is smaller than time_t. */
typedef uint32_t rel_time_t;

/* Result of an engine call (and of a few server calls). The project uses
 * the first values; the rest keep the host's numbering. */
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

/* Kind of store for ENGINE_HANDLE_V1.store. */
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

/* What ENGINE_HANDLE_V1.get_item_info reports about an item; value really
 * holds nvalue entries. */
typedef struct {
    uint64_t cas;
    rel_time_t exptime;
    uint32_t nbytes;
    uint32_t flags;
    uint8_t clsid;
    uint16_t nkey;
    uint16_t nvalue;
    const void *key;
    struct iovec value[1];
} item_info;

/* What SERVER_COOKIE_API.get_auth_data fills in. */
typedef struct {
    const char *username;
    const char *config;
} auth_data_t;

/* The server handle; its members are declared in engine.h. */
typedef struct server_handle_v1_t SERVER_HANDLE_V1;

#ifdef __cplusplus
}
#endif

#endif /* MEMCACHED_TYPES_H */
