/* encode.c: server-side response encoders. Every response copies the
 * request's opcode and opaque (also for unknown opcodes: deliberate
 * difference 2); the caller provides the room the header asks for. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "protocol/encode.h"

/* Writes a response header (magic 0x91, reserved 0). */
size_t cnt_encode_response_header(uint8_t *out, uint8_t opcode, uint8_t status,
                                  uint32_t body_len, uint32_t opaque)
{
    out[CNT_OFF_MAGIC] = CNT_MAGIC_RESPONSE;
    out[CNT_OFF_OPCODE] = opcode;
    out[CNT_OFF_STATUS] = status;
    out[CNT_OFF_RESERVED] = 0;
    cnt_put_u32(out + CNT_OFF_BODYLEN, body_len);
    cnt_put_u32(out + CNT_OFF_OPAQUE, opaque);
    return CNT_HEADER_SIZE;
}

/* Writes a response with status and its reference text as body. */
size_t cnt_encode_error(uint8_t *out, uint8_t opcode, cnt_status status,
                        uint32_t opaque)
{
    const char *text = cnt_status_text(status);
    /* A status outside the table has no text; send it with an empty body
     * rather than inventing one. */
    size_t n = text ? strlen(text) : 0;

    cnt_encode_response_header(out, opcode, (uint8_t)status, (uint32_t)n,
                               opaque);
    memcpy(out + CNT_HEADER_SIZE, text ? text : "", n);
    return CNT_HEADER_SIZE + n;
}

/* Writes a status-0 response with an empty body. */
size_t cnt_encode_empty(uint8_t *out, uint8_t opcode, uint32_t opaque)
{
    return cnt_encode_response_header(out, opcode, CNT_STATUS_OK, 0, opaque);
}

/* Writes a status-0 response whose body is one u32. */
size_t cnt_encode_u32(uint8_t *out, uint8_t opcode, uint32_t opaque,
                      uint32_t value)
{
    cnt_encode_response_header(out, opcode, CNT_STATUS_OK, 4, opaque);
    cnt_put_u32(out + CNT_HEADER_SIZE, value);
    return CNT_HEADER_SIZE + 4;
}

/* Writes one Dump record response (opcode 0x11, status 0). */
size_t cnt_encode_dump_record(uint8_t *out, uint32_t opaque, uint32_t current,
                              uint32_t max, const uint8_t *name,
                              uint16_t name_len)
{
    uint8_t *body = out + CNT_HEADER_SIZE;

    cnt_encode_response_header(out, CNT_OP_DUMP, CNT_STATUS_OK,
                               CNT_DUMP_FIXED + (uint32_t)name_len, opaque);
    cnt_put_u32(body + CNT_DUMP_OFF_CURRENT, current);
    cnt_put_u32(body + CNT_DUMP_OFF_MAX, max);
    cnt_put_u16(body + CNT_DUMP_OFF_NAMELEN, name_len);
    if (name_len > 0)
        memcpy(body + CNT_DUMP_FIXED, name, name_len);
    return CNT_DUMP_RECORD_SIZE(name_len);
}

/* Writes the empty status-0 response that ends a Dump series. */
size_t cnt_encode_dump_end(uint8_t *out, uint32_t opaque)
{
    return cnt_encode_empty(out, CNT_OP_DUMP, opaque);
}

/* Clamps a string length to what a u16 length field can carry. */
static uint16_t stats_len(const char *s)
{
    size_t n = strlen(s);

    return n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
}

/* Writes one Stats pair and returns its size (only the size if out is
 * NULL). Longer names or values are cut at 65535 bytes, the most a u16
 * length can say; the server's own items are far shorter. */
size_t cnt_encode_stats_pair(uint8_t *out, const char *name,
                             const char *value)
{
    uint16_t nlen = stats_len(name);
    uint16_t vlen = stats_len(value);

    if (out != NULL) {
        cnt_put_u16(out, nlen);
        cnt_put_u16(out + 2, vlen);
        memcpy(out + CNT_STATS_PAIR_FIXED, name, nlen);
        memcpy(out + CNT_STATS_PAIR_FIXED + nlen, value, vlen);
    }
    return CNT_STATS_PAIR_FIXED + (size_t)nlen + vlen;
}

/* Writes one Stats pair whose value is a decimal number. */
size_t cnt_encode_stats_u64(uint8_t *out, const char *name, uint64_t value)
{
    char text[24];

    snprintf(text, sizeof(text), "%" PRIu64, value);
    return cnt_encode_stats_pair(out, name, text);
}
