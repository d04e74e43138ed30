/* fuzz_throttr.c: libFuzzer target for the Throttr v5 codec. Plays the
 * Throttr front's input: one byte stream decoded from a buffer that grows
 * in chunks, consumed request by request as the server does, twice with
 * different chunkings, which must decode alike. Every request decoded is
 * encoded again and must give back its own bytes; every QUERY answer the
 * server could send must read back as what was encoded. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "protocol/throttr.h"

/* The server's view of one connection: buffered bytes, what it decoded. */
typedef struct sim_conn {
    uint8_t buf[2 * CNT_THROTTR_REQUEST_MAX];
    size_t len;
    bool closed;                /* an unknown type was met */
    uint64_t requests;
    uint64_t digest;            /* FNV-1a over every request, in order */
} sim_conn;

static sim_conn sim_a, sim_b;

/* Folds n bytes into an FNV-1a digest. */
static void digest_bytes(uint64_t *d, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        *d ^= b[i];
        *d *= 0x100000001b3ull;
    }
}

/* Checks one decoded request against its bytes: re-encoded it is them. */
static void check_request(const uint8_t *at, size_t len, unsigned vsize,
                          const cnt_throttr_request *r)
{
    uint8_t out[CNT_THROTTR_REQUEST_MAX];
    size_t n = 0;

    FUZZ_CHECK(r->size <= len && r->size <= CNT_THROTTR_REQUEST_MAX);
    FUZZ_CHECK(r->key == at + r->size - r->key_len);
    FUZZ_CHECK(r->valid == (r->key_len > 0 &&
                            (r->type != CNT_THROTTR_INSERT ||
                             cnt_throttr_unit_of(r->ttl_type) >= 0) &&
                            (r->type != CNT_THROTTR_UPDATE ||
                             (r->attribute <= CNT_THROTTR_ATTR_TTL &&
                              r->change <= CNT_THROTTR_DECREASE))));
    switch (r->type) {
    case CNT_THROTTR_INSERT:
        n = cnt_throttr_encode_insert(out, vsize, r->quota, r->ttl_type,
                                      r->ttl, r->key, r->key_len);
        break;
    case CNT_THROTTR_QUERY:
        n = cnt_throttr_encode_query(out, r->key, r->key_len);
        break;
    case CNT_THROTTR_UPDATE:
        n = cnt_throttr_encode_update(out, vsize, r->attribute, r->change,
                                      r->value, r->key, r->key_len);
        break;
    case CNT_THROTTR_PURGE:
        n = cnt_throttr_encode_purge(out, r->key, r->key_len);
        break;
    default:
        FUZZ_CHECK(!"a request of an unknown type was decoded");
    }
    FUZZ_CHECK(n == r->size && memcmp(out, at, n) == 0);

    /* The answer a QUERY of these numbers would get reads back. */
    uint8_t ans[CNT_THROTTR_ANSWER_MAX];
    uint64_t q = r->quota ^ r->value, t = r->ttl;
    uint8_t type = (uint8_t)(1 + r->key_len % 6);
    size_t an = cnt_throttr_encode_query_answer(ans, vsize, q, type, t);
    bool fits = cnt_throttr_fits(vsize, q) && cnt_throttr_fits(vsize, t);
    bool ok = false;
    uint64_t q2 = 0, t2 = 0;
    uint8_t type2 = 0;
    size_t size = 0, need = 0;
    FUZZ_CHECK(an == (fits ? 2 + 2 * (size_t)vsize : 1));
    FUZZ_CHECK(cnt_throttr_decode_answer(ans, an, vsize, CNT_THROTTR_QUERY,
                                         &ok, &q2, &type2, &t2, &size,
                                         &need) == CNT_THROTTR_OK);
    FUZZ_CHECK(size == an && ok == fits);
    FUZZ_CHECK(!fits || (q2 == q && t2 == t && type2 == type));
}

/* Appends a chunk and decodes every whole request, as the front does. */
static void sim_feed(sim_conn *c, unsigned vsize, const uint8_t *p, size_t n)
{
    while (n > 0 && !c->closed) {
        size_t take = sizeof(c->buf) - c->len;
        if (take > n)
            take = n;
        memcpy(c->buf + c->len, p, take);
        c->len += take;
        p += take;
        n -= take;
        size_t pos = 0;
        while (!c->closed) {
            cnt_throttr_request r;
            size_t need = 0;
            cnt_throttr_decode_result d =
                cnt_throttr_decode(c->buf + pos, c->len - pos, vsize, &r,
                                   &need);
            if (d == CNT_THROTTR_NEED_MORE) {
                FUZZ_CHECK(need > c->len - pos);
                FUZZ_CHECK(need <= CNT_THROTTR_REQUEST_MAX);
                break;
            }
            if (d == CNT_THROTTR_BAD_FRAMING) {
                FUZZ_CHECK(c->buf[pos] < CNT_THROTTR_INSERT ||
                           c->buf[pos] > CNT_THROTTR_PURGE);
                c->closed = true;
                digest_bytes(&c->digest, c->buf + pos, 1);
                break;
            }
            check_request(c->buf + pos, c->len - pos, vsize, &r);
            digest_bytes(&c->digest, c->buf + pos, r.size);
            c->requests++;
            pos += r.size;
        }
        memmove(c->buf, c->buf + pos, c->len - pos);
        c->len -= pos;
    }
}

/* Input: byte 0 picks the value size (low two bits: 1, 2, 4, 8) and byte
 * 1 the chunk sizes of the second pass; the rest is the stream. The first
 * pass feeds it whole, the second in chunks of 1 + (seed + i) % 7. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned sizes[4] = {1, 2, 4, 8};

    if (size < 2)
        return 0;
    unsigned vsize = sizes[data[0] & 3];
    uint8_t seed = data[1];
    data += 2;
    size -= 2;
    memset(&sim_a, 0, sizeof(sim_a));
    memset(&sim_b, 0, sizeof(sim_b));
    sim_a.digest = sim_b.digest = 0xcbf29ce484222325ull;
    sim_feed(&sim_a, vsize, data, size);
    for (size_t at = 0, i = 0; at < size; i++) {
        size_t n = 1 + (seed + i) % 7;
        if (n > size - at)
            n = size - at;
        sim_feed(&sim_b, vsize, data + at, n);
        at += n;
    }
    FUZZ_CHECK(sim_a.closed == sim_b.closed);
    FUZZ_CHECK(sim_a.requests == sim_b.requests);
    FUZZ_CHECK(sim_a.digest == sim_b.digest);
    FUZZ_CHECK(sim_a.closed || sim_a.len == sim_b.len);
    return 0;
}
