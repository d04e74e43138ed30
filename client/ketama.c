/* ketama.c: TEMPORARY STUB of the continuum so that the client builds and
 * is tested before the ketama branch lands: a plain FNV-1a hash modulo the
 * server count, skipping down servers by walking forward. Not ketama. */
#include <stdlib.h>

#include "client/ketama.h"

struct mcc_ketama {
    size_t n;
};

/* Builds the stub continuum (only the count matters). */
mcc_ketama *mcc_ketama_new(const mcc_server_spec *servers, size_t n)
{
    mcc_ketama *k = malloc(sizeof *k);

    (void)servers;
    if (k)
        k->n = n;
    return k;
}

/* Frees the stub continuum. */
void mcc_ketama_free(mcc_ketama *k)
{
    free(k);
}

/* FNV-1a over the key. */
static uint32_t stub_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Index of the server a key maps to. */
size_t mcc_ketama_lookup(const mcc_ketama *k, const void *key, size_t len)
{
    return k->n ? stub_hash(key, len) % k->n : (size_t)-1;
}

/* Same, walking forward past servers that are down. */
size_t mcc_ketama_lookup_up(const mcc_ketama *k, const void *key, size_t len,
                            const bool *up)
{
    size_t first = mcc_ketama_lookup(k, key, len);

    for (size_t i = 0; k->n && i < k->n; i++) {
        size_t s = (first + i) % k->n;
        if (up[s])
            return s;
    }
    return (size_t)-1;
}
