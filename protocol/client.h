/* client.h: client side of the codec, for counterctl, the benchmark and the
 * tests: request encoders and an incremental response decoder. */
#ifndef CNT_PROTOCOL_CLIENT_H
#define CNT_PROTOCOL_CLIENT_H

#include <stdbool.h>
#include "protocol/wire.h"

/* Writes a request header (magic 0x90, flags and reserved 0). */
size_t cnt_encode_request_header(uint8_t *out, uint8_t opcode,
                                 uint32_t body_len, uint32_t opaque);

/* Writes a Noop, Stats or Dump request (no body). */
size_t cnt_encode_simple(uint8_t *out, uint8_t opcode, uint32_t opaque);

/* Writes a Get request; out needs CNT_HEADER_SIZE + 2 + name_len bytes. */
size_t cnt_encode_get(uint8_t *out, uint32_t opaque, const void *name,
                      uint16_t name_len);

/* Writes an Acquire request; out needs CNT_HEADER_SIZE + 10 + name_len. */
size_t cnt_encode_acquire(uint8_t *out, uint32_t opaque, uint32_t resources,
                          uint32_t maximum, const void *name,
                          uint16_t name_len);

/* Writes a Release request; out needs CNT_HEADER_SIZE + 6 + name_len. */
size_t cnt_encode_release(uint8_t *out, uint32_t opaque, uint32_t resources,
                          const void *name, uint16_t name_len);

/* A decoded response; body points into the caller's buffer. */
typedef struct cnt_response {
    uint8_t magic;
    uint8_t opcode;
    uint8_t status;
    uint32_t opaque;
    uint32_t body_len;
    const uint8_t *body;
    size_t size;            /* header + body */
} cnt_response;

/* Decodes the response at the front of buf[0..len): returns 1 and fills
 * res when a whole response is buffered, 0 when more bytes are needed,
 * -1 when the magic byte is not 0x91 or 0x92. */
int cnt_response_decode(const uint8_t *buf, size_t len, cnt_response *res);

/* A Dump record, decoded from a response body. */
typedef struct cnt_dump_record {
    uint32_t current;
    uint32_t max;
    const uint8_t *name;
    uint16_t name_len;
} cnt_dump_record;

/* Parses a Dump record body; false if it is malformed. */
bool cnt_dump_record_parse(const cnt_response *res, cnt_dump_record *rec);

/* Iterates Stats pairs: *pos starts at 0; returns true and sets the four
 * outputs for each pair, false at the end or on a malformed body. */
bool cnt_stats_next(const cnt_response *res, size_t *pos,
                    const char **name, uint16_t *name_len,
                    const char **value, uint16_t *value_len);

#endif
