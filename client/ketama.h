/* ketama.h: TEMPORARY STUB of the ketama continuum (the ketama branch
 * provides the real one; the interface below is the agreed one). */
#ifndef MCC_KETAMA_H
#define MCC_KETAMA_H

#include <stdbool.h>
#include <stddef.h>
#include "client/servers.h"

typedef struct mcc_ketama mcc_ketama;
/* Builds libmemcached-compatible weighted ketama points for servers[0..n). NULL on ENOMEM. */
mcc_ketama *mcc_ketama_new(const mcc_server_spec *servers, size_t n);
void mcc_ketama_free(mcc_ketama *k);
/* Index of the server a key maps to. */
size_t mcc_ketama_lookup(const mcc_ketama *k, const void *key, size_t len);
/* Same, skipping servers whose up[i] is false (next point clockwise); (size_t)-1 if none up. */
size_t mcc_ketama_lookup_up(const mcc_ketama *k, const void *key, size_t len, const bool *up);

#endif
