/* request.c: requests, both ways. The encoders write the documented layout
 * into caller buffers. The decoder is one generic body reader expanded
 * once per row of the opcode table (CNT_OPCODE_ROWS in wire.h); it decides
 * a request from the bytes buffered so far, checking hard limits as soon
 * as the header is in, so a connection never has to hold more than
 * CNT_REQUEST_MAX bytes. */
#include "config.h"

#include <string.h>

#include "protocol/request.h"

/* ---- Encoders ---- */

/* Writes a request header (magic 0x90, flags and reserved 0). */
size_t cnt_encode_request_header(uint8_t *out, uint8_t opcode,
                                 uint32_t body_len, uint32_t opaque)
{
    out[CNT_OFF_MAGIC] = CNT_MAGIC_REQUEST;
    out[CNT_OFF_OPCODE] = opcode;
    out[CNT_OFF_FLAGS] = 0;
    out[CNT_OFF_RESERVED] = 0;
    cnt_put_u32(out + CNT_OFF_BODYLEN, body_len);
    cnt_put_u32(out + CNT_OFF_OPAQUE, opaque);
    return CNT_HEADER_SIZE;
}

/* Writes a request without a body (Noop, Stats, Dump, Queues). */
size_t cnt_encode_simple(uint8_t *out, uint8_t opcode, uint32_t opaque)
{
    return cnt_encode_request_header(out, opcode, 0, opaque);
}

/* Copies a name after its u16 length at p; returns the bytes written. */
static size_t put_name(uint8_t *p, const void *name, uint16_t name_len)
{
    cnt_put_u16(p, name_len);
    if (name_len > 0)
        memcpy(p + 2, name, name_len);
    return 2 + (size_t)name_len;
}

/* Writes a Get request. */
size_t cnt_encode_get(uint8_t *out, uint32_t opaque, const void *name,
                      uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_GET,
                              CNT_GET_FIXED + (uint32_t)name_len, opaque);
    return CNT_HEADER_SIZE +
           put_name(body + CNT_GET_OFF_NAMELEN, name, name_len);
}

/* Writes an Acquire request. */
size_t cnt_encode_acquire(uint8_t *out, uint32_t opaque, uint32_t resources,
                          uint32_t maximum, const void *name,
                          uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_ACQUIRE,
                              CNT_ACQ_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_ACQ_OFF_RESOURCES, resources);
    cnt_put_u32(body + CNT_ACQ_OFF_MAXIMUM, maximum);
    return CNT_HEADER_SIZE + CNT_ACQ_OFF_NAMELEN +
           put_name(body + CNT_ACQ_OFF_NAMELEN, name, name_len);
}

/* Writes a Release request. */
size_t cnt_encode_release(uint8_t *out, uint32_t opaque, uint32_t resources,
                          const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_RELEASE,
                              CNT_REL_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_REL_OFF_RESOURCES, resources);
    return CNT_HEADER_SIZE + CNT_REL_OFF_NAMELEN +
           put_name(body + CNT_REL_OFF_NAMELEN, name, name_len);
}

/* Writes a Wait_acquire request. */
size_t cnt_encode_wait_acquire(uint8_t *out, uint32_t opaque,
                               uint32_t resources, uint32_t maximum,
                               uint32_t wait_ms, uint32_t lease_ms,
                               const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_WAIT_ACQUIRE,
                              CNT_WACQ_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_WACQ_OFF_RESOURCES, resources);
    cnt_put_u32(body + CNT_WACQ_OFF_MAXIMUM, maximum);
    cnt_put_u32(body + CNT_WACQ_OFF_WAIT, wait_ms);
    cnt_put_u32(body + CNT_WACQ_OFF_LEASE, lease_ms);
    return CNT_HEADER_SIZE + CNT_WACQ_OFF_NAMELEN +
           put_name(body + CNT_WACQ_OFF_NAMELEN, name, name_len);
}

/* Writes a Renew request. */
size_t cnt_encode_renew(uint8_t *out, uint32_t opaque, uint32_t lease_ms,
                        const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_RENEW,
                              CNT_RENEW_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_RENEW_OFF_LEASE, lease_ms);
    return CNT_HEADER_SIZE + CNT_RENEW_OFF_NAMELEN +
           put_name(body + CNT_RENEW_OFF_NAMELEN, name, name_len);
}

/* Writes a Wait_release request. */
size_t cnt_encode_wait_release(uint8_t *out, uint32_t opaque,
                               const void *name, uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_request_header(out, CNT_OP_WAIT_RELEASE,
                              CNT_WREL_FIXED + (uint32_t)name_len, opaque);
    return CNT_HEADER_SIZE + CNT_WREL_OFF_NAMELEN +
           put_name(body + CNT_WREL_OFF_NAMELEN, name, name_len);
}

/* Writes a Queues request. */
size_t cnt_encode_queues(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_request_header(out, CNT_OP_QUEUES, 0, opaque);
}

/* ---- Decoder ---- */

/* decode_known must be inlined into each case of the opcode switch: that
 * is what turns the row's constants into straight-line code. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Marks req as answered with an error status; the caller skips req->size. */
static cnt_decode_result decode_error(cnt_request *req, cnt_status status)
{
    req->status = status;
    return CNT_DECODE_ERROR;
}

/* Decodes a request whose header is in and whose opcode has the given row:
 * at once when the body is skipped, else once the whole body is buffered,
 * reading the fields the row lists and running its checks. The checks run
 * in the reference's order, which decides the answer when a body has
 * several faults: too short a body, then the numbers, then an empty name,
 * then a name running past the body (the extension opcodes follow the
 * same order; every fault answers 0x04 anyway). */
static ALWAYS_INLINE cnt_decode_result
decode_known(const uint8_t *buf, size_t len, cnt_request *req,
             const cnt_opcode_row row)
{
    const uint8_t *body = buf + CNT_HEADER_SIZE;
    uint32_t body_len = req->body_len;

    if (row.body == CNT_BODY_SKIP) {
        /* No body is needed: answer now; the caller skips any body. */
        return CNT_DECODE_OK;
    }
    /* Refused before the body arrives: the caller skips it as it streams
     * in instead of buffering it, so no connection ever holds more than
     * CNT_REQUEST_MAX bytes (doc/protocol.md, "Differences from the
     * reference"). */
    if (body_len > CNT_BODY_MAX)
        return decode_error(req, CNT_STATUS_INVALID);
    if (len < req->size)
        return CNT_DECODE_NEED_MORE;

    if (body_len < row.fixed)
        return decode_error(req, CNT_STATUS_INVALID);
    if (row.off_resources != CNT_FIELD_NONE)
        req->resources = cnt_get_u32(body + row.off_resources);
    if (row.off_maximum != CNT_FIELD_NONE)
        req->maximum = cnt_get_u32(body + row.off_maximum);
    if (row.off_wait != CNT_FIELD_NONE)
        req->wait_ms = cnt_get_u32(body + row.off_wait);
    if (row.off_lease != CNT_FIELD_NONE)
        req->lease_ms = cnt_get_u32(body + row.off_lease);
    if ((row.checks & CNT_CHECK_RESOURCES_NONZERO) && req->resources == 0)
        return decode_error(req, CNT_STATUS_INVALID);
    if ((row.checks & CNT_CHECK_MAXIMUM_COVERS) &&
        req->maximum < req->resources)
        return decode_error(req, CNT_STATUS_INVALID);
    if ((row.checks & CNT_CHECK_LEASE_NONZERO) && req->lease_ms == 0)
        return decode_error(req, CNT_STATUS_INVALID);
    if (row.off_namelen != CNT_FIELD_NONE) {
        uint16_t name_len = cnt_get_u16(body + row.off_namelen);

        if (name_len == 0 || (uint32_t)row.fixed + name_len > body_len)
            return decode_error(req, CNT_STATUS_INVALID);
        req->name = body + row.fixed;
        req->name_len = name_len;
    }
    return CNT_DECODE_OK;
}

/* One case of the opcode switch per row of CNT_OPCODE_ROWS, the row passed
 * as a constant (a code listed twice is a duplicate case: an error). */
#define DECODE_CASE(code, ...)                                              \
    case code:                                                              \
        return decode_known(buf, len, req, (cnt_opcode_row){ __VA_ARGS__ });

/* Decodes the request at the front of buf[0..len). */
cnt_decode_result cnt_request_decode(const uint8_t *buf, size_t len,
                                     cnt_request *req)
{
    memset(req, 0, sizeof(*req));
    if (len < CNT_HEADER_SIZE) {
        req->size = CNT_HEADER_SIZE;
        return CNT_DECODE_NEED_MORE;
    }

    /* Flags (byte 2) and reserved (byte 3) are ignored, as the reference
     * does. */
    req->magic = buf[CNT_OFF_MAGIC];
    req->opcode = buf[CNT_OFF_OPCODE];
    req->body_len = cnt_get_u32(buf + CNT_OFF_BODYLEN);
    req->opaque = cnt_get_u32(buf + CNT_OFF_OPAQUE);
    req->size = (uint64_t)CNT_HEADER_SIZE + req->body_len;

    if (req->magic != CNT_MAGIC_REQUEST) {
        /* A wrong magic with a plausible length is a broken request we can
         * answer and step over; with an impossible one the bytes are most
         * likely another protocol (a text client on the wrong port). */
        if (req->body_len > CNT_BODY_MAX)
            return CNT_DECODE_CLOSE;
        return decode_error(req, CNT_STATUS_INVALID);
    }

    switch (req->opcode) {
    CNT_OPCODE_ROWS(DECODE_CASE)
    default:
        return decode_error(req, CNT_STATUS_UNKNOWN_COMMAND);
    }
}
