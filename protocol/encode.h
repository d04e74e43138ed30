/* encode.h: server-side response encoders. Each writes into a caller-owned
 * buffer, which must have room for the size the matching *_SIZE macro or
 * function gives, and returns the number of bytes written. */
#ifndef CNT_PROTOCOL_ENCODE_H
#define CNT_PROTOCOL_ENCODE_H

#include "protocol/wire.h"

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

/* Writes the status-0, empty-body response that ends a Dump series. */
size_t cnt_encode_dump_end(uint8_t *out, uint32_t opaque);

/* Writes one Stats pair (name length, value length, name, value) and
 * returns its size; with out NULL only returns the size. */
size_t cnt_encode_stats_pair(uint8_t *out, const char *name,
                             const char *value);

/* Room a Stats pair with a decimal u64 value needs at most (20 digits). */
#define CNT_STATS_U64_PAIR_SIZE(name_len) (4 + (size_t)(name_len) + 20)

/* Writes one Stats pair whose value is v in decimal ASCII and returns its
 * size; with out NULL only returns the size. */
size_t cnt_encode_stats_u64(uint8_t *out, const char *name, uint64_t value);

#endif
