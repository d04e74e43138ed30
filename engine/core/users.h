/* users.h: the users a connection may authenticate as (counter.users_file):
 * each has a name, a secret, the tenant its connections are charged to and
 * its privileges. Plain data built once at start and only read after, by
 * every worker at once; the lookup is a linear scan (a users file is a
 * handful of operators and services, not a directory). */
#ifndef CNT_ENGINE_USERS_H
#define CNT_ENGINE_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The privileges of a user. */
#define CNT_PRIV_ADMIN       0x01u  /* the privileged opcodes */
#define CNT_PRIV_UNTHROTTLED 0x02u  /* never throttled, always counted */

/* The classes of requests a connection's tenant pays for, each at its own
 * cost (doc/throttling.md, "Tenants on connections"). */
enum cnt_cost_class {
    CNT_COST_READ = 0,          /* Noop, Get, Stats, Dump, Queues, the
                                   views, Ttl_query */
    CNT_COST_ACQUIRE,           /* Acquire, Release, Renew, Wait_release */
    CNT_COST_WAIT,              /* Wait_acquire */
    CNT_COST_LIMIT,             /* the rate limits and Throttle */
    CNT_COST_ADMIN,             /* the privileged opcodes */
    CNT_COST_CLASSES
};

/* Bounds of a user's name and tenant (bytes). */
#define CNT_USER_NAME_MAX 255u

typedef struct cnt_user {
    uint8_t *name;
    uint16_t name_len;
    uint8_t *tenant;
    uint16_t tenant_len;
    uint8_t *secret;            /* never logged; wiped when freed */
    size_t secret_len;
    uint8_t privileges;         /* CNT_PRIV_* bits */
} cnt_user;

typedef struct cnt_users {
    size_t n;
    cnt_user *v;                /* n of them, names unique */
} cnt_users;

/* The user called name[0..len), or NULL. */
const cnt_user *cnt_users_find(const cnt_users *u, const uint8_t *name,
                               size_t len);

/* Wipes every secret and frees u and all it owns (NULL is fine). */
void cnt_users_free(cnt_users *u);

/* Overwrites n bytes at p with zeros through a volatile pointer, so the
 * compiler cannot drop it as a dead store before the memory is freed:
 * for every buffer that held a secret. */
void cnt_wipe(void *p, size_t n);

#endif
