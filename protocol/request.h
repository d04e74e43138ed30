/* request.h: requests, both ways. Encoders (used by clients: counterctl,
 * the benchmark, the tests) write into caller buffers; the decoder (used by
 * the server) is a pure function over the bytes a connection has buffered:
 * it never allocates, never does I/O and keeps no state, so a connection
 * calls it in a loop until it needs more bytes. */
#ifndef CNT_PROTOCOL_REQUEST_H
#define CNT_PROTOCOL_REQUEST_H

#include "protocol/wire.h"

/* ---- Encoders (client side) ---- */

/* Writes a request header (magic 0x90, flags and reserved 0). */
size_t cnt_encode_request_header(uint8_t *out, uint8_t opcode,
                                 uint32_t body_len, uint32_t opaque);

/* Writes a Noop, Stats, Dump or Queues request (no body). */
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

/* Writes a Wait_acquire request; out needs CNT_HEADER_SIZE + 18 +
 * name_len bytes. maximum 0 and wait_ms or lease_ms CNT_USE_GROUP_DEFAULT
 * take the group's settings. */
size_t cnt_encode_wait_acquire(uint8_t *out, uint32_t opaque,
                               uint32_t resources, uint32_t maximum,
                               uint32_t wait_ms, uint32_t lease_ms,
                               const void *name, uint16_t name_len);

/* Writes a Renew request; out needs CNT_HEADER_SIZE + 6 + name_len. */
size_t cnt_encode_renew(uint8_t *out, uint32_t opaque, uint32_t lease_ms,
                        const void *name, uint16_t name_len);

/* Writes a Wait_release request; out needs CNT_HEADER_SIZE + 2 +
 * name_len. */
size_t cnt_encode_wait_release(uint8_t *out, uint32_t opaque,
                               const void *name, uint16_t name_len);

/* Writes a Queues request (no body); out needs CNT_HEADER_SIZE. */
size_t cnt_encode_queues(uint8_t *out, uint32_t opaque);

/* ---- Decoder (server side) ---- */

/* A decoded request. Fields not used by the opcode are zero. The fields
 * are generic (named after their meaning, not an opcode), so a new opcode
 * whose body has the same kinds of fields reuses them; a new kind of field
 * gets a member here next to its offset in cnt_opcode_row. */
typedef struct cnt_request {
    uint8_t magic;
    uint8_t opcode;
    uint32_t opaque;
    uint32_t body_len;      /* as declared in the header */
    uint64_t size;          /* header + declared body */
    uint32_t resources;     /* Acquire, Release, Wait_acquire */
    uint32_t maximum;       /* Acquire, Wait_acquire */
    uint32_t wait_ms;       /* Wait_acquire */
    uint32_t lease_ms;      /* Wait_acquire, Renew */
    const uint8_t *name;    /* opcodes with a body: points into buf */
    uint16_t name_len;
    cnt_status status;      /* CNT_DECODE_ERROR: the status to answer */
} cnt_request;

/* Decodes the request at the front of buf[0..len) and says what it found:
 * - CNT_DECODE_NEED_MORE: req->size is how many bytes the request needs in
 *   all once the header is in (CNT_HEADER_SIZE before that); it never
 *   exceeds CNT_REQUEST_MAX.
 * - CNT_DECODE_OK: a valid request; req->name points into buf and
 *   req->size bytes belong to it. For an opcode whose body is skipped
 *   (Noop, Stats, Dump, Queues) this comes as soon as the header is in,
 *   and the body may not be buffered yet.
 * - CNT_DECODE_ERROR: answer req->status (0x04 or 0x81) with its text.
 *   req->size bytes of the stream belong to the request; that may be more
 *   than is buffered (a huge declared body): the caller discards the rest
 *   as it arrives, without storing it.
 * - CNT_DECODE_CLOSE: a bad magic byte with an impossible body length.
 * req is written in every case. */
cnt_decode_result cnt_request_decode(const uint8_t *buf, size_t len,
                                     cnt_request *req);

#endif
