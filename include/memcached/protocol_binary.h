/* protocol_binary.h: of memcached's binary-protocol header, only the
 * request header ENGINE_HANDLE_V1.unknown_command takes; like the real
 * header it needs nothing from its includer. */
#ifndef PROTOCOL_BINARY_H
#define PROTOCOL_BINARY_H

#include <stdint.h>
#include <memcached/vbucket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The 24-byte header of a binary request, as fields or as raw bytes.
 * Multi-byte fields are in network byte order on the wire. */
typedef union {
    struct {
        uint8_t magic;
        uint8_t opcode;
        uint16_t keylen;
        uint8_t extlen;
        uint8_t datatype;
        uint16_t vbucket;
        uint32_t bodylen;
        uint32_t opaque;
        uint64_t cas;
    } request;
    uint8_t bytes[24];
} protocol_binary_request_header;

#ifdef __cplusplus
}
#endif

#endif /* PROTOCOL_BINARY_H */
