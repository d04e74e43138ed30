/* md5.c: MD5 as RFC 1321 specifies it: 512-bit blocks, four rounds of
 * sixteen steps each, the message padded with 0x80, zeros and its length
 * in bits (little-endian), and the four state words written out
 * little-endian. Independent of the host's byte order. */
#include "config.h"

#include <string.h>

#include "client/md5.h"

/* The sine table T[1..64]: the integer part of 2^32 * |sin(i)|. */
static const uint32_t md5_t[64] = {
    0xd76aa478u, 0xe8c7b756u, 0x242070dbu, 0xc1bdceeeu,
    0xf57c0fafu, 0x4787c62au, 0xa8304613u, 0xfd469501u,
    0x698098d8u, 0x8b44f7afu, 0xffff5bb1u, 0x895cd7beu,
    0x6b901122u, 0xfd987193u, 0xa679438eu, 0x49b40821u,
    0xf61e2562u, 0xc040b340u, 0x265e5a51u, 0xe9b6c7aau,
    0xd62f105du, 0x02441453u, 0xd8a1e681u, 0xe7d3fbc8u,
    0x21e1cde6u, 0xc33707d6u, 0xf4d50d87u, 0x455a14edu,
    0xa9e3e905u, 0xfcefa3f8u, 0x676f02d9u, 0x8d2a4c8au,
    0xfffa3942u, 0x8771f681u, 0x6d9d6122u, 0xfde5380cu,
    0xa4beea44u, 0x4bdecfa9u, 0xf6bb4b60u, 0xbebfbc70u,
    0x289b7ec6u, 0xeaa127fau, 0xd4ef3085u, 0x04881d05u,
    0xd9d4d039u, 0xe6db99e5u, 0x1fa27cf8u, 0xc4ac5665u,
    0xf4292244u, 0x432aff97u, 0xab9423a7u, 0xfc93a039u,
    0x655b59c3u, 0x8f0ccc92u, 0xffeff47du, 0x85845dd1u,
    0x6fa87e4fu, 0xfe2ce6e0u, 0xa3014314u, 0x4e0811a1u,
    0xf7537e82u, 0xbd3af235u, 0x2ad7d2bbu, 0xeb86d391u,
};

/* Left rotations of each round's four steps, round by round. */
static const uint8_t md5_shift[4][4] = {
    { 7, 12, 17, 22 }, { 5, 9, 14, 20 }, { 4, 11, 16, 23 }, { 6, 10, 15, 21 },
};

/* Rotates x left by n bits (0 < n < 32). */
static uint32_t rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32u - n));
}

/* Hashes one 64-byte block into the state. */
static void md5_block(uint32_t state[4], const uint8_t *p)
{
    uint32_t x[16], a = state[0], b = state[1], c = state[2], d = state[3];

    for (unsigned i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
               (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
    for (unsigned i = 0; i < 64; i++) {
        unsigned round = i / 16, k;
        uint32_t f, t;

        /* The round's function of b, c, d and the order it reads the
         * block's words in. */
        switch (round) {
        case 0:
            f = (b & c) | (~b & d);
            k = i;
            break;
        case 1:
            f = (b & d) | (c & ~d);
            k = (1 + 5 * i) % 16;
            break;
        case 2:
            f = b ^ c ^ d;
            k = (5 + 3 * i) % 16;
            break;
        default:
            f = c ^ (b | ~d);
            k = (7 * i) % 16;
            break;
        }
        t = d;
        d = c;
        c = b;
        b = b + rotl(a + f + x[k] + md5_t[i], md5_shift[round][i % 4]);
        a = t;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

/* Starts a digest with RFC 1321's initial words. */
void mcc_md5_init(mcc_md5 *m)
{
    m->state[0] = 0x67452301u;
    m->state[1] = 0xefcdab89u;
    m->state[2] = 0x98badcfeu;
    m->state[3] = 0x10325476u;
    m->bytes = 0;
}

/* Adds bytes: fills the partial block first, then hashes whole blocks
 * straight from the input. */
void mcc_md5_update(mcc_md5 *m, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t have = (size_t)(m->bytes % 64);

    if (len == 0)
        return;     /* data may be NULL then */
    m->bytes += len;
    if (have > 0) {
        size_t take = 64 - have < len ? 64 - have : len;

        memcpy(m->block + have, p, take);
        p += take;
        len -= take;
        if (have + take < 64)
            return;
        md5_block(m->state, m->block);
    }
    for (; len >= 64; p += 64, len -= 64)
        md5_block(m->state, p);
    if (len > 0)
        memcpy(m->block, p, len);
}

/* Pads (0x80, zeros up to 56 mod 64, the bit length) and writes the
 * state out little-endian. */
void mcc_md5_final(mcc_md5 *m, uint8_t out[MCC_MD5_DIGEST_SIZE])
{
    static const uint8_t pad[64] = { 0x80 };
    uint64_t bits = m->bytes * 8u;
    size_t have = (size_t)(m->bytes % 64);
    uint8_t len[8];

    for (unsigned i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (8 * i));
    mcc_md5_update(m, pad, have < 56 ? 56 - have : 120 - have);
    mcc_md5_update(m, len, sizeof len);
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(m->state[i] >> (8 * j));
    memset(m, 0, sizeof *m);
}

/* Digest of one whole message. */
void mcc_md5_digest(const void *data, size_t len,
                    uint8_t out[MCC_MD5_DIGEST_SIZE])
{
    mcc_md5 m;

    mcc_md5_init(&m);
    mcc_md5_update(&m, data, len);
    mcc_md5_final(&m, out);
}
