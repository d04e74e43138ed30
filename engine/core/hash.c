/* hash.c: SipHash-2-4 (Aumasson and Bernstein), written from the paper's
 * definition, and the per-process random key that keeps clients from
 * choosing names that all land in one bucket. */
#include "config.h"

#include <errno.h>
#include <sys/random.h>

#include "engine/core/hash.h"

/* Reads 8 bytes at p as a little-endian integer (SipHash's byte order);
 * written out so that compilers make it one load on little-endian CPUs. */
static inline uint64_t hash_load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
           (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

static inline uint64_t hash_rotl(uint64_t x, unsigned b)
{
    return x << b | x >> (64 - b);
}

/* The four state words, passed by value so they stay in registers: the
 * hash runs once per request, and a state array in memory (a round that
 * is not inlined) cost about 420 instructions for a 16-byte name. */
typedef struct cnt_sip {
    uint64_t v0, v1, v2, v3;
} cnt_sip;

/* One SipRound over the four state words. */
static inline cnt_sip hash_round(cnt_sip s)
{
    s.v0 += s.v1;
    s.v1 = hash_rotl(s.v1, 13);
    s.v1 ^= s.v0;
    s.v0 = hash_rotl(s.v0, 32);
    s.v2 += s.v3;
    s.v3 = hash_rotl(s.v3, 16);
    s.v3 ^= s.v2;
    s.v0 += s.v3;
    s.v3 = hash_rotl(s.v3, 21);
    s.v3 ^= s.v0;
    s.v2 += s.v1;
    s.v1 = hash_rotl(s.v1, 17);
    s.v1 ^= s.v2;
    s.v2 = hash_rotl(s.v2, 32);
    return s;
}

/* Absorbs one 64-bit message word: c = 2 compression rounds. */
static inline cnt_sip hash_absorb(cnt_sip s, uint64_t m)
{
    s.v3 ^= m;
    s = hash_round(s);
    s = hash_round(s);
    s.v0 ^= m;
    return s;
}

/* Returns the SipHash-2-4 of data[0..len) under key. */
uint64_t cnt_hash(const cnt_hash_key *key, const void *data, size_t len)
{
    const uint8_t *p = data;
    cnt_sip s = {
        key->k0 ^ UINT64_C(0x736f6d6570736575),
        key->k1 ^ UINT64_C(0x646f72616e646f6d),
        key->k0 ^ UINT64_C(0x6c7967656e657261),
        key->k1 ^ UINT64_C(0x7465646279746573),
    };
    size_t whole = len & ~(size_t)7;
    uint64_t last = (uint64_t)(len & 0xff) << 56;

    for (size_t i = 0; i < whole; i += 8)
        s = hash_absorb(s, hash_load_le64(p + i));
    /* The final word holds the 0-7 leftover bytes and len mod 256 on top. */
    for (size_t i = whole; i < len; i++)
        last |= (uint64_t)p[i] << (8 * (i - whole));
    s = hash_absorb(s, last);

    s.v2 ^= 0xff;
    s = hash_round(s);      /* d = 4 finalization rounds */
    s = hash_round(s);
    s = hash_round(s);
    s = hash_round(s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
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
    key->k0 = hash_load_le64(buf);
    key->k1 = hash_load_le64(buf + 8);
    return 0;
}
