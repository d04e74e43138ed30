/* hash.h: keyed hash of counter names. Clients choose names, so the hash is
 * keyed with a per-process random secret (SipHash-2-4): nobody outside the
 * process can build names that collide in one bucket. */
#ifndef CNT_ENGINE_HASH_H
#define CNT_ENGINE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct cnt_hash_key {
    uint64_t k0, k1;
} cnt_hash_key;

/* Fills key from the kernel's random source; returns 0, or -1 on failure. */
int cnt_hash_key_random(cnt_hash_key *key);

/* Returns the SipHash-2-4 of data[0..len) under key. */
uint64_t cnt_hash(const cnt_hash_key *key, const void *data, size_t len);

#endif
