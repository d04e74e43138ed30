/* ketama.h: consistent hashing of names onto servers, placing every name
 * on the server libmemcached places the same key on (its weighted ketama:
 * MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, MEMCACHED_DISTRIBUTION_CONSISTENT),
 * so counters live where a deployment's memcache keys of the same names
 * do. */
#ifndef MCC_CLIENT_KETAMA_H
#define MCC_CLIENT_KETAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/servers.h"

typedef struct mcc_ketama mcc_ketama;

/* Builds libmemcached-compatible weighted ketama points for servers[0..n). NULL on ENOMEM. */
mcc_ketama *mcc_ketama_new(const mcc_server_spec *servers, size_t n);

/* Frees k (NULL is fine). */
void mcc_ketama_free(mcc_ketama *k);

/* Index of the server a key maps to. */
size_t mcc_ketama_lookup(const mcc_ketama *k, const void *key, size_t len);

/* Same, skipping servers whose up[i] is false (next point clockwise); (size_t)-1 if none up. */
size_t mcc_ketama_lookup_up(const mcc_ketama *k, const void *key, size_t len,
                            const bool *up);

/* Number of points on k's circle (for tests and diagnostics). */
size_t mcc_ketama_points(const mcc_ketama *k);

/* The i-th point in clockwise order (i < mcc_ketama_points): its position
 * and its server's index. */
void mcc_ketama_point(const mcc_ketama *k, size_t i, uint32_t *value,
                      size_t *server);

/* The position of a key on the circle: the first four bytes of its MD5,
 * little-endian (libmemcached's MEMCACHED_HASH_MD5). */
uint32_t mcc_ketama_hash(const void *key, size_t len);

#endif
