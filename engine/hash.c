/* hash.c: SipHash-2-4 (Aumasson and Bernstein), written from the paper's
 * definition, and the per-process random key that keeps clients from
 * choosing names that all land in one bucket. */
#include "config.h"

#include <errno.h>
#include <sys/random.h>

#include "engine/hash.h"

/* Reads 8 bytes at p as a little-endian integer (SipHash's byte order). */
static uint64_t cnt_hash_load_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t cnt_hash_rotl(uint64_t x, unsigned b)
{
    return x << b | x >> (64 - b);
}

/* One SipRound over the four state words. */
static void cnt_hash_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = cnt_hash_rotl(v[1], 13);
    v[1] ^= v[0];
    v[0] = cnt_hash_rotl(v[0], 32);
    v[2] += v[3];
    v[3] = cnt_hash_rotl(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = cnt_hash_rotl(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = cnt_hash_rotl(v[1], 17);
    v[1] ^= v[2];
    v[2] = cnt_hash_rotl(v[2], 32);
}

/* Absorbs one 64-bit message word: c = 2 compression rounds. */
static void cnt_hash_absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    cnt_hash_round(v);
    cnt_hash_round(v);
    v[0] ^= m;
}

/* Returns the SipHash-2-4 of data[0..len) under key. */
uint64_t cnt_hash(const cnt_hash_key *key, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t v[4] = {
        key->k0 ^ UINT64_C(0x736f6d6570736575),
        key->k1 ^ UINT64_C(0x646f72616e646f6d),
        key->k0 ^ UINT64_C(0x6c7967656e657261),
        key->k1 ^ UINT64_C(0x7465646279746573),
    };
    size_t whole = len & ~(size_t)7;
    uint64_t last = (uint64_t)(len & 0xff) << 56;

    for (size_t i = 0; i < whole; i += 8)
        cnt_hash_absorb(v, cnt_hash_load_le64(p + i));
    /* The final word holds the 0-7 leftover bytes and len mod 256 on top. */
    for (size_t i = whole; i < len; i++)
        last |= (uint64_t)p[i] << (8 * (i - whole));
    cnt_hash_absorb(v, last);

    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)     /* d = 4 finalization rounds */
        cnt_hash_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* Fills key from getrandom(); returns 0, or -1 on failure. */
int cnt_hash_key_random(cnt_hash_key *key)
{
    uint8_t buf[16];
    size_t got = 0;

    while (got < sizeof buf) {
        ssize_t n = getrandom(buf + got, sizeof buf - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    key->k0 = cnt_hash_load_le64(buf);
    key->k1 = cnt_hash_load_le64(buf + 8);
    return 0;
}
