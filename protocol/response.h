/* response.h: responses, both ways. Encoders (used by the server) write into
 * a caller-owned buffer, which must have room for the size the matching
 * *_SIZE macro or function gives, and return the number of bytes written.
 * The incremental decoder and the Dump-record and Stats-body parsers (used
 * by clients: counterctl, the benchmark, the tests) never trust a declared
 * length for memory. */
#ifndef CNT_PROTOCOL_RESPONSE_H
#define CNT_PROTOCOL_RESPONSE_H

#include <stdbool.h>
#include "protocol/wire.h"

/* ---- Encoders (server side) ---- */

/* Room an error response needs at most (header + longest status text). */
#define CNT_ERROR_RESPONSE_MAX (CNT_HEADER_SIZE + 32)
/* Size of a Dump record response for a name of n bytes. */
#define CNT_DUMP_RECORD_SIZE(n) (CNT_HEADER_SIZE + 10 + (size_t)(n))

/* Writes a response header (magic 0x91, reserved 0). */
size_t cnt_encode_response_header(uint8_t *out, uint8_t opcode, uint8_t status,
                                  uint32_t body_len, uint32_t opaque);

/* Writes a response with status and the reference's text for it as body. */
size_t cnt_encode_error(uint8_t *out, uint8_t opcode, cnt_status status,
                        uint32_t opaque);

/* Writes a status-0 response with an empty body (Noop, Release, Dump end). */
size_t cnt_encode_empty(uint8_t *out, uint8_t opcode, uint32_t opaque);

/* Writes a status-0 response whose body is one u32 (Get, Acquire). */
size_t cnt_encode_u32(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint32_t value);

/* Writes one Dump record: current, max consumption, name length, name. */
size_t cnt_encode_dump_record(uint8_t *out, uint32_t opaque, uint32_t current,
                              uint32_t max, const uint8_t *name,
                              uint16_t name_len);

/* Writes one Stats pair (name length, value length, name, value) and
 * returns its size; with out NULL only returns the size. */
size_t cnt_encode_stats_pair(uint8_t *out, const char *name,
                             const char *value);

/* ---- Decoder and body parsers (client side) ---- */

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

/* Decodes the response at the front of buf[0..len) and says what it found:
 * - CNT_DECODE_OK: a whole response (magic 0x91, or a 0x92 notice) is
 *   buffered; res is filled.
 * - CNT_DECODE_NEED_MORE: more bytes are needed. A huge declared body is
 *   never trusted for memory: it just keeps the answer here (see
 *   cnt_response_size).
 * - CNT_DECODE_CLOSE: the magic byte is neither 0x91 nor 0x92, judged on
 *   the first byte; the stream is not a counter server's.
 * It never answers CNT_DECODE_ERROR. res is only written on CNT_DECODE_OK. */
cnt_decode_result cnt_response_decode(const uint8_t *buf, size_t len,
                                      cnt_response *res);

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
