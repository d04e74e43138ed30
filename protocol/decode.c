/* decode.c: server-side request decoder. Decides each request from the bytes
 * buffered so far, checking hard limits as soon as the header is in, so a
 * connection never has to hold more than CNT_REQUEST_MAX bytes. */
#include "config.h"

#include <string.h>

#include "protocol/decode.h"

/* Marks req as answered with an error status; the caller skips req->size. */
static cnt_decode_result decode_error(cnt_request *req, cnt_status status)
{
    req->status = status;
    return CNT_DECODE_ERROR;
}

/* Reads name_len at body[off] and points req->name at the name after it;
 * fixed is the offset of the name data. The order of the checks is the
 * reference's: an empty name first, then a name running past the body. */
static cnt_decode_result decode_name(const uint8_t *body, cnt_request *req,
                                     size_t off, size_t fixed)
{
    uint16_t name_len = cnt_get_u16(body + off);

    if (name_len == 0 || fixed + name_len > req->body_len)
        return decode_error(req, CNT_STATUS_INVALID);
    req->name = body + fixed;
    req->name_len = name_len;
    return CNT_DECODE_REQUEST;
}

/* Get: name length, name. */
static cnt_decode_result decode_get(const uint8_t *body, cnt_request *req)
{
    if (req->body_len < CNT_GET_FIXED)
        return decode_error(req, CNT_STATUS_INVALID);
    return decode_name(body, req, CNT_GET_OFF_NAMELEN, CNT_GET_FIXED);
}

/* Acquire: resources, maximum, name length, name. */
static cnt_decode_result decode_acquire(const uint8_t *body, cnt_request *req)
{
    if (req->body_len < CNT_ACQ_FIXED)
        return decode_error(req, CNT_STATUS_INVALID);
    req->resources = cnt_get_u32(body + CNT_ACQ_OFF_RESOURCES);
    req->maximum = cnt_get_u32(body + CNT_ACQ_OFF_MAXIMUM);
    /* The reference checks the numbers before the name. */
    if (req->resources == 0 || req->maximum < req->resources)
        return decode_error(req, CNT_STATUS_INVALID);
    return decode_name(body, req, CNT_ACQ_OFF_NAMELEN, CNT_ACQ_FIXED);
}

/* Release: resources (0 is legal), name length, name. */
static cnt_decode_result decode_release(const uint8_t *body, cnt_request *req)
{
    if (req->body_len < CNT_REL_FIXED)
        return decode_error(req, CNT_STATUS_INVALID);
    req->resources = cnt_get_u32(body + CNT_REL_OFF_RESOURCES);
    return decode_name(body, req, CNT_REL_OFF_NAMELEN, CNT_REL_FIXED);
}

/* Decodes one of the opcodes that carry a name, once its body is in. */
static cnt_decode_result decode_named(const uint8_t *buf, size_t len,
                                      cnt_request *req)
{
    const uint8_t *body = buf + CNT_HEADER_SIZE;

    /* Refused before the body arrives: the caller skips it as it streams
     * in instead of buffering it (deliberate difference 3). */
    if (req->body_len > CNT_BODY_MAX)
        return decode_error(req, CNT_STATUS_INVALID);
    if (len < req->size)
        return CNT_DECODE_NEED_MORE;
    switch (req->opcode) {
    case CNT_OP_GET:
        return decode_get(body, req);
    case CNT_OP_ACQUIRE:
        return decode_acquire(body, req);
    default:
        return decode_release(body, req);
    }
}

/* Decodes the request at the front of buf[0..len). */
cnt_decode_result cnt_request_decode(const uint8_t *buf, size_t len,
                                     cnt_request *req)
{
    memset(req, 0, sizeof(*req));
    req->size = CNT_HEADER_SIZE;
    if (len < CNT_HEADER_SIZE)
        return CNT_DECODE_NEED_MORE;

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
    case CNT_OP_NOOP:
    case CNT_OP_STATS:
    case CNT_OP_DUMP:
        /* No body is needed: answer now; the caller skips any body. */
        return CNT_DECODE_REQUEST;
    case CNT_OP_GET:
    case CNT_OP_ACQUIRE:
    case CNT_OP_RELEASE:
        return decode_named(buf, len, req);
    default:
        return decode_error(req, CNT_STATUS_UNKNOWN_COMMAND);
    }
}
