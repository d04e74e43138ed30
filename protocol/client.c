/* client.c: client side of the codec (counterctl, the benchmark, tests).
 * Request encoders write into caller buffers; the response decoder is
 * incremental and never trusts a declared body length for memory. */
#include "config.h"

#include <string.h>

#include "protocol/client.h"

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

/* Writes a request without a body (Noop, Stats, Dump). */
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

/* Tells whether b is a magic byte a server may send. */
static bool response_magic_ok(uint8_t b)
{
    return b == CNT_MAGIC_RESPONSE || b == CNT_MAGIC_NOTICE;
}

/* Returns the total size of the response at the front of buf. */
uint64_t cnt_response_size(const uint8_t *buf, size_t len)
{
    if (len < CNT_HEADER_SIZE)
        return CNT_HEADER_SIZE;
    return (uint64_t)CNT_HEADER_SIZE + cnt_get_u32(buf + CNT_OFF_BODYLEN);
}

/* Decodes the response at the front of buf[0..len). */
int cnt_response_decode(const uint8_t *buf, size_t len, cnt_response *res)
{
    uint64_t size;

    /* Judge the magic on its first byte: a client reading garbage learns
     * it at once instead of waiting for a header that may never come. */
    if (len >= 1 && !response_magic_ok(buf[CNT_OFF_MAGIC]))
        return -1;
    size = cnt_response_size(buf, len);
    /* Compared in 64 bits: a declared 4 GiB body only means "need more",
     * it is never used to size anything here. */
    if (len < CNT_HEADER_SIZE || (uint64_t)len < size)
        return 0;

    res->magic = buf[CNT_OFF_MAGIC];
    res->opcode = buf[CNT_OFF_OPCODE];
    res->status = buf[CNT_OFF_STATUS];
    res->body_len = cnt_get_u32(buf + CNT_OFF_BODYLEN);
    res->opaque = cnt_get_u32(buf + CNT_OFF_OPAQUE);
    res->body = buf + CNT_HEADER_SIZE;
    res->size = (size_t)size;
    return 1;
}

/* Parses a Dump record body; false if res is not a well-formed record. */
bool cnt_dump_record_parse(const cnt_response *res, cnt_dump_record *rec)
{
    uint16_t name_len;

    if (res->opcode != CNT_OP_DUMP || res->status != CNT_STATUS_OK ||
        res->body_len < CNT_DUMP_FIXED)
        return false;
    name_len = cnt_get_u16(res->body + CNT_DUMP_OFF_NAMELEN);
    if ((uint64_t)CNT_DUMP_FIXED + name_len > res->body_len)
        return false;
    rec->current = cnt_get_u32(res->body + CNT_DUMP_OFF_CURRENT);
    rec->max = cnt_get_u32(res->body + CNT_DUMP_OFF_MAX);
    rec->name_len = name_len;
    rec->name = res->body + CNT_DUMP_FIXED;
    return true;
}

/* Tells whether res is the empty response that ends a Dump series. */
bool cnt_response_is_dump_end(const cnt_response *res)
{
    return res->opcode == CNT_OP_DUMP && res->status == CNT_STATUS_OK &&
           res->body_len == 0;
}

/* Iterates the Stats pairs of res from *pos. */
bool cnt_stats_next(const cnt_response *res, size_t *pos,
                    const char **name, uint16_t *name_len,
                    const char **value, uint16_t *value_len)
{
    const uint8_t *p;
    uint16_t nlen, vlen;

    if (*pos > res->body_len ||
        res->body_len - *pos < CNT_STATS_PAIR_FIXED)
        return false;
    p = res->body + *pos;
    nlen = cnt_get_u16(p);
    vlen = cnt_get_u16(p + 2);
    if (res->body_len - *pos - CNT_STATS_PAIR_FIXED < (size_t)nlen + vlen)
        return false;
    *name = (const char *)p + CNT_STATS_PAIR_FIXED;
    *name_len = nlen;
    *value = *name + nlen;
    *value_len = vlen;
    *pos += CNT_STATS_PAIR_FIXED + (size_t)nlen + vlen;
    return true;
}
