/* throttr.c: the Throttr v5 codec (see throttr.h): decoding a request from
 * a buffer that may hold part of it, and encoding requests and answers.
 * Numbers are little-endian in vsize bytes. */
#include "config.h"

#include "protocol/throttr.h"

#include <string.h>

/* Reads n little-endian bytes. */
static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned i = n; i > 0; i--)
        v = (v << 8) | p[i - 1];
    return v;
}

/* Writes v as n little-endian bytes; returns n. */
static size_t put_le(uint8_t *p, unsigned n, uint64_t v)
{
    for (unsigned i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
    return n;
}

/* Bytes of a request of type before its key length byte (the type
 * included); 0 for an unknown type. */
static size_t fixed_size(uint8_t type, unsigned vsize)
{
    switch (type) {
    case CNT_THROTTR_INSERT:
        return 1 + vsize + 1 + vsize;
    case CNT_THROTTR_UPDATE:
        return 1 + 1 + 1 + vsize;
    case CNT_THROTTR_QUERY:
    case CNT_THROTTR_PURGE:
        return 1;
    default:
        return 0;
    }
}

/* Decodes one request; see throttr.h. */
cnt_throttr_decode_result cnt_throttr_decode(const uint8_t *in, size_t len,
                                             unsigned vsize,
                                             cnt_throttr_request *req,
                                             size_t *need)
{
    if (len == 0) {
        *need = 1;
        return CNT_THROTTR_NEED_MORE;
    }
    size_t fixed = fixed_size(in[0], vsize);
    if (fixed == 0)
        return CNT_THROTTR_BAD_FRAMING;
    if (len < fixed + 1) {
        *need = fixed + 1;
        return CNT_THROTTR_NEED_MORE;
    }
    size_t total = fixed + 1 + in[fixed];
    if (len < total) {
        *need = total;
        return CNT_THROTTR_NEED_MORE;
    }
    memset(req, 0, sizeof(*req));
    req->type = in[0];
    req->key_len = in[fixed];
    req->key = in + fixed + 1;
    req->size = total;
    req->valid = req->key_len > 0;
    switch (req->type) {
    case CNT_THROTTR_INSERT:
        req->quota = get_le(in + 1, vsize);
        req->ttl_type = in[1 + vsize];
        req->ttl = get_le(in + 2 + vsize, vsize);
        if (cnt_throttr_unit_of(req->ttl_type) < 0)
            req->valid = false;
        break;
    case CNT_THROTTR_UPDATE:
        req->attribute = in[1];
        req->change = in[2];
        req->value = get_le(in + 3, vsize);
        if (req->attribute > CNT_THROTTR_ATTR_TTL ||
            req->change > CNT_THROTTR_DECREASE)
            req->valid = false;
        break;
    default:
        break;
    }
    return CNT_THROTTR_OK;
}

/* A status byte; see throttr.h. */
size_t cnt_throttr_encode_status(uint8_t *p, bool success)
{
    p[0] = success ? CNT_THROTTR_SUCCESS : CNT_THROTTR_FAILURE;
    return 1;
}

/* A QUERY's answer; see throttr.h. */
size_t cnt_throttr_encode_query_answer(uint8_t *p, unsigned vsize,
                                       uint64_t quota, uint8_t ttl_type,
                                       uint64_t ttl)
{
    if (!cnt_throttr_fits(vsize, quota) || !cnt_throttr_fits(vsize, ttl))
        return cnt_throttr_encode_status(p, false);
    size_t n = cnt_throttr_encode_status(p, true);
    n += put_le(p + n, vsize, quota);
    p[n++] = ttl_type;
    n += put_le(p + n, vsize, ttl);
    return n;
}

/* Appends the key length byte and the key at p; returns the bytes. */
static size_t put_key(uint8_t *p, const void *key, size_t key_len)
{
    p[0] = (uint8_t)key_len;
    if (key_len > 0)
        memcpy(p + 1, key, key_len);
    return 1 + key_len;
}

/* An INSERT; see throttr.h. */
size_t cnt_throttr_encode_insert(uint8_t *p, unsigned vsize, uint64_t quota,
                                 uint8_t ttl_type, uint64_t ttl,
                                 const void *key, size_t key_len)
{
    if (!cnt_throttr_fits(vsize, quota) || !cnt_throttr_fits(vsize, ttl) ||
        key_len > CNT_THROTTR_KEY_MAX)
        return 0;
    size_t n = 0;
    p[n++] = CNT_THROTTR_INSERT;
    n += put_le(p + n, vsize, quota);
    p[n++] = ttl_type;
    n += put_le(p + n, vsize, ttl);
    return n + put_key(p + n, key, key_len);
}

/* A QUERY; see throttr.h. */
size_t cnt_throttr_encode_query(uint8_t *p, const void *key, size_t key_len)
{
    if (key_len > CNT_THROTTR_KEY_MAX)
        return 0;
    p[0] = CNT_THROTTR_QUERY;
    return 1 + put_key(p + 1, key, key_len);
}

/* An UPDATE; see throttr.h. */
size_t cnt_throttr_encode_update(uint8_t *p, unsigned vsize,
                                 uint8_t attribute, uint8_t change,
                                 uint64_t value, const void *key,
                                 size_t key_len)
{
    if (!cnt_throttr_fits(vsize, value) || key_len > CNT_THROTTR_KEY_MAX)
        return 0;
    size_t n = 0;
    p[n++] = CNT_THROTTR_UPDATE;
    p[n++] = attribute;
    p[n++] = change;
    n += put_le(p + n, vsize, value);
    return n + put_key(p + n, key, key_len);
}

/* A PURGE; see throttr.h. */
size_t cnt_throttr_encode_purge(uint8_t *p, const void *key, size_t key_len)
{
    if (key_len > CNT_THROTTR_KEY_MAX)
        return 0;
    p[0] = CNT_THROTTR_PURGE;
    return 1 + put_key(p + 1, key, key_len);
}

/* Reads one answer; see throttr.h. */
cnt_throttr_decode_result cnt_throttr_decode_answer(const uint8_t *in,
                                                    size_t len,
                                                    unsigned vsize,
                                                    uint8_t type,
                                                    bool *success,
                                                    uint64_t *quota,
                                                    uint8_t *ttl_type,
                                                    uint64_t *ttl,
                                                    size_t *size,
                                                    size_t *need)
{
    if (len == 0) {
        *need = 1;
        return CNT_THROTTR_NEED_MORE;
    }
    if (in[0] > CNT_THROTTR_SUCCESS)
        return CNT_THROTTR_BAD_FRAMING;
    *success = in[0] == CNT_THROTTR_SUCCESS;
    *size = 1;
    if (type != CNT_THROTTR_QUERY || !*success)
        return CNT_THROTTR_OK;
    size_t total = 1 + vsize + 1 + vsize;
    if (len < total) {
        *need = total;
        return CNT_THROTTR_NEED_MORE;
    }
    *quota = get_le(in + 1, vsize);
    *ttl_type = in[1 + vsize];
    *ttl = get_le(in + 2 + vsize, vsize);
    *size = total;
    return CNT_THROTTR_OK;
}
