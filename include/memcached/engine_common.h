/* engine_common.h: the engine handle header and the callback types shared
 * by the engine, callback and extension declarations. As in memcached's
 * set, ADD_RESPONSE uses bool without including <stdbool.h>. */
#ifndef ENGINE_COMMON_H
#define ENGINE_COMMON_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every engine handle starts with its interface version; 1 means the
 * handle is an ENGINE_HANDLE_V1 (engine.h). */
typedef struct engine_interface {
    uint64_t interface;
} ENGINE_HANDLE;

/* Receives one statistic; key and val are not NUL-terminated. cookie is
 * whatever the host passed to get_stats. */
typedef void (*ADD_STAT)(const char *key, const uint16_t klen,
                         const char *val, const uint32_t vlen,
                         const void *cookie);

/* Queues a binary-protocol response (for unknown_command); false if it
 * could not be built. */
typedef bool (*ADD_RESPONSE)(const void *key, uint16_t keylen,
                             const void *ext, uint8_t extlen,
                             const void *body, uint32_t bodylen,
                             uint8_t datatype, uint16_t status,
                             uint64_t cas, const void *cookie);

#ifdef __cplusplus
}
#endif

#endif /* ENGINE_COMMON_H */
