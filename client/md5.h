/* md5.h: the MD5 message digest (RFC 1321), which ketama uses to place
 * servers and names on its circle. Not for anything that needs a secure
 * hash: MD5 is kept only because libmemcached's ketama is defined by it. */
#ifndef MCC_CLIENT_MD5_H
#define MCC_CLIENT_MD5_H

#include <stddef.h>
#include <stdint.h>

/* Size of a digest in bytes. */
#define MCC_MD5_DIGEST_SIZE 16

/* A digest in progress. */
typedef struct mcc_md5 {
    uint32_t state[4];      /* A, B, C, D */
    uint64_t bytes;         /* message length so far */
    uint8_t block[64];      /* the partial block not yet hashed */
} mcc_md5;

/* Starts a digest. */
void mcc_md5_init(mcc_md5 *m);

/* Adds len bytes of the message. */
void mcc_md5_update(mcc_md5 *m, const void *data, size_t len);

/* Pads the message, writes the digest to out and leaves m spent. */
void mcc_md5_final(mcc_md5 *m, uint8_t out[MCC_MD5_DIGEST_SIZE]);

/* Digest of one whole message of len bytes. */
void mcc_md5_digest(const void *data, size_t len,
                    uint8_t out[MCC_MD5_DIGEST_SIZE]);

#endif
