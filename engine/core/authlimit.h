/* authlimit.h: the server-wide limit on failed authentications, per second
 * in all and per second per client address, so that guessing the admin
 * secret over many connections (or from many addresses) goes no faster
 * than the limits say. An attempt takes its place in both counts before
 * the secret is compared; one that succeeds gives it back, so only
 * failures count, and an attempt past either limit is refused without
 * comparing. Thread-safe (one mutex: authentication is rare). The
 * per-address counts live in a fixed table of CNT_AUTH_LIMIT_SLOTS recent
 * addresses, so its memory does not grow with the addresses seen. */
#ifndef CNT_ENGINE_AUTHLIMIT_H
#define CNT_ENGINE_AUTHLIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Defaults of the two limits (failed authentications per second). */
#define CNT_AUTH_FAIL_LIMIT_DEFAULT 50u
#define CNT_AUTH_FAIL_LIMIT_PER_ADDRESS_DEFAULT 5u
/* Addresses remembered at once (a set-associative table). */
#define CNT_AUTH_LIMIT_SLOTS 256u
/* Longest address kept, in characters (an IPv6 address is at most 45);
 * longer ones are cut to it. */
#define CNT_AUTH_LIMIT_ADDR_MAX 45u

typedef struct cnt_auth_limit cnt_auth_limit;

/* Builds a limit of per_second failures per second in all and
 * per_address per second per address (0: no such limit); NULL when
 * memory is short. */
cnt_auth_limit *cnt_auth_limit_new(uint32_t per_second,
                                   uint32_t per_address);

/* Frees l (NULL is fine). */
void cnt_auth_limit_free(cnt_auth_limit *l);

/* An authentication from addr (text; "" when unknown) at monotonic time
 * now_ns is about to compare the secret: true when both counts of the
 * current second are below their limits (the attempt is then counted in
 * both, as a failure until cnt_auth_limit_succeeded), false when one is
 * reached (the attempt is refused). */
bool cnt_auth_limit_take(cnt_auth_limit *l, const char *addr,
                         uint64_t now_ns);

/* The attempt cnt_auth_limit_take admitted for addr at now_ns was right:
 * it no longer counts as a failure. */
void cnt_auth_limit_succeeded(cnt_auth_limit *l, const char *addr,
                              uint64_t now_ns);

#endif
