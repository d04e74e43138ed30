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

/* Returns how many bytes the response at the front of buf[0..len) takes in
 * all: CNT_HEADER_SIZE while the header is incomplete, then the header and
 * the declared body (64-bit: a body length is up to 4 GiB). A client that
 * reads into a bounded buffer checks this against its capacity and
 * refuses, or discards, a response that would not fit. */
uint64_t cnt_response_size(const uint8_t *buf, size_t len);

/* Decodes the response at the front of buf[0..len): returns 1 and fills
 * res when a whole response is buffered, 0 when more bytes are needed,
 * -1 when the magic byte is not 0x91 or 0x92 (judged on the first byte).
 * res is only written when 1 is returned; a huge declared body is never
 * trusted for memory: it just keeps the answer at 0 (see
 * cnt_response_size). */
int cnt_response_decode(const uint8_t *buf, size_t len, cnt_response *res);

/* A Dump record, decoded from a response body. */
typedef struct cnt_dump_record {
    uint32_t current;
    uint32_t max;
    const uint8_t *name;
    uint16_t name_len;
} cnt_dump_record;

/* Parses a Dump record body; false if res is not a status-0 Dump response
 * or its body is malformed (too short, name running past the body). */
bool cnt_dump_record_parse(const cnt_response *res, cnt_dump_record *rec);

/* Tells whether res is the status-0 empty response ending a Dump series. */
bool cnt_response_is_dump_end(const cnt_response *res);

/* Iterates Stats pairs: *pos starts at 0; returns true and sets the four
 * outputs for each pair, false at the end or on a malformed body. */
bool cnt_stats_next(const cnt_response *res, size_t *pos,
                    const char **name, uint16_t *name_len,
                    const char **value, uint16_t *value_len);

#endif
