/* quota.c: the quota manager's call of Tarantool's quotas module,
 * get_lease(user, domain, op, quota), over the window check: the three
 * strings make one name (doc/clients.md, "get_lease"), charged in a 1 s
 * window of 10 slots on the server ketama picks for it. With max_lease
 * B > 1 the client pre-charges B at a time and answers the next B-1 calls
 * of that name itself for 100 ms; the allowances live in a small table of
 * fixed size, so memory stays bounded however many names are used. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

/* Entries of the allowance table (direct-mapped by a hash of the name):
 * two names on one entry push each other out, which only costs a round
 * trip, since what is evicted was already charged. */
#define QUOTA_ENTRIES 64
/* How long a pre-charged allowance may be spent: one slot of the window. */
#define QUOTA_ALLOWANCE_MS 100
/* The window of get_lease: 1 s in 10 slots, as the seed's table. */
#define QUOTA_WINDOW_NS 1000000000ull
#define QUOTA_SLOTS 10

struct quota_entry {
    uint8_t *name;            /* NULL: free */
    size_t len;
    uint32_t left;            /* calls still answered locally */
    int64_t until_ms;         /* monotonic: the allowance ends here */
};

struct mcc_quota {
    uint32_t max_lease;
    struct quota_entry e[QUOTA_ENTRIES];
};

/* FNV-1a, enough to spread names over the table. */
static size_t entry_of(const uint8_t *name, size_t len)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < len; i++) {
        h ^= name[i];
        h *= 1099511628211ull;
    }
    return (size_t)(h % QUOTA_ENTRIES);
}

void mcc_quota_free(mcc_client *c)
{
    if (!c || !c->quota)
        return;
    for (size_t i = 0; i < QUOTA_ENTRIES; i++)
        free(c->quota->e[i].name);
    free(c->quota);
    c->quota = NULL;
}

/* Appends "LEN:FIELD" (or the bare field when last) at *pos. */
static int put_field(char *buf, size_t cap, size_t *pos, const char *field,
                     bool last)
{
    size_t flen = strlen(field), need = flen;
    char num[24];
    int nlen = 0;

    if (!last) {
        nlen = snprintf(num, sizeof num, "%zu:", flen);
        need += (size_t)nlen;
    }
    if (need > MCC_NAME_MAX || *pos + need > MCC_NAME_MAX)
        return MCC_ERR_NAME;
    if (*pos + need > cap)
        return MCC_ERR_INVALID;
    memcpy(buf + *pos, num, (size_t)nlen);
    memcpy(buf + *pos + (size_t)nlen, field, flen);
    *pos += need;
    return MCC_OK;
}

/* The length of the name of (user, domain, op), possibly above
 * MCC_NAME_MAX (no overflow: each string is in memory). */
static size_t name_len(const char *user, const char *domain, const char *op)
{
    size_t u = strlen(user), d = strlen(domain);
    char num[48];

    return 9 + (size_t)snprintf(num, sizeof num, "%zu:%zu:", u, d) + u + d +
           strlen(op);
}

int mcc_get_lease_name(char *buf, size_t cap, const char *user,
                       const char *domain, const char *op)
{
    static const char prefix[] = "getlease:";
    size_t pos = sizeof prefix - 1;
    int rc;

    if (!buf || !user || !domain || !op)
        return MCC_ERR_INVALID;
    if (cap < pos)
        return MCC_ERR_INVALID;
    memcpy(buf, prefix, pos);
    if ((rc = put_field(buf, cap, &pos, user, false)) != MCC_OK ||
        (rc = put_field(buf, cap, &pos, domain, false)) != MCC_OK ||
        (rc = put_field(buf, cap, &pos, op, true)) != MCC_OK)
        return rc;
    return (int)pos;
}

mcc_error mcc_client_set_max_lease(mcc_client *c, uint32_t max_lease)
{
    if (!c || max_lease == 0)
        return MCC_ERR_INVALID;
    if (max_lease > 1 && !c->quota) {
        c->quota = calloc(1, sizeof *c->quota);
        if (!c->quota)
            return MCC_ERR_NOMEM;
    }
    if (c->quota) {
        c->quota->max_lease = max_lease;
        /* Allowances of the old size stay valid: they were charged. */
    }
    return MCC_OK;
}

uint32_t mcc_client_max_lease(const mcc_client *c)
{
    return c && c->quota ? c->quota->max_lease : 1;
}

mcc_client *mcc_quota_init(const char *servers, uint32_t max_lease,
                           char *err, size_t errlen)
{
    mcc_client *c;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (!servers || max_lease == 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s", !servers ? "no server list"
                     : "max_lease 0: it must be at least 1");
        return NULL;
    }
    c = mcc_client_new();
    if (!c) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rc = mcc_client_set_servers(c, servers, err, errlen);
    if (rc >= 0)
        rc = mcc_client_set_max_lease(c, max_lease);
    if (rc < 0) {
        if (err && errlen && err[0] == '\0')
            snprintf(err, errlen, "%s", mcc_strerror(rc));
        mcc_client_free(c);
        return NULL;
    }
    return c;
}

/* One charge of cost on the server: 1 allowed, 0 refused, or an error;
 * *room is what the window had left when refused. */
static int charge(mcc_client *c, const char *name, size_t len,
                  uint32_t quota, uint32_t cost, uint32_t *room)
{
    mcc_result r;
    mcc_check_item item = {
        .op = MCC_OP_WINDOW_CHECK, .name = name, .name_len = len,
        .slots = QUOTA_SLOTS, .limit = quota, .cost = cost,
        .period_ns = QUOTA_WINDOW_NS
    };
    int rc = mcc_check(c, &item, false, -1, &r);

    *room = 0;
    if (rc != MCC_OK)
        return rc;
    if (r.check.state == MCC_CHECK_ALLOWED)
        return 1;
    if (r.check.state == MCC_CHECK_LIMITED)
        *room = r.check.remaining;
    return 0;
}

int mcc_get_lease(mcc_client *c, const char *user, const char *domain,
                  const char *op, uint32_t quota)
{
    char *name;
    struct quota_entry *e = NULL;
    uint32_t batch, cost, room;
    int64_t sent;
    size_t need;
    int len, rc;

    if (!c)
        return MCC_ERR_INVALID;
    if (!user || !domain || !op)
        return MCC_ERR_INVALID;
    /* The name gets a buffer of its own (the request is encoded in the
     * client's scratch buffer), which the allowance table may keep. */
    need = name_len(user, domain, op);
    if (need > MCC_NAME_MAX)
        return MCC_ERR_NAME;
    name = malloc(need);
    if (!name)
        return MCC_ERR_NOMEM;
    len = mcc_get_lease_name(name, need, user, domain, op);
    if (len < 0) {
        free(name);
        return len;
    }
    batch = c->quota ? c->quota->max_lease : 1;
    if (batch > 1) {
        e = &c->quota->e[entry_of((const uint8_t *)name, (size_t)len)];
        if (e->name && e->len == (size_t)len &&
            memcmp(e->name, name, (size_t)len) == 0 && e->left > 0 &&
            mcc_now_ms() < e->until_ms) {
            e->left--;
            free(name);
            return 1;
        }
    }
    /* Pre-charge: never more than the quota, which could never pass. */
    cost = batch < quota ? batch : (quota > 0 ? quota : 1);
    sent = mcc_now_ms();
    rc = charge(c, name, (size_t)len, quota, cost, &room);
    if (rc == 0 && room > 0 && room < cost) {
        /* Less room than a batch: take what is left rather than refuse
         * a call the exact limiter would allow. */
        cost = room;
        sent = mcc_now_ms();
        rc = charge(c, name, (size_t)len, quota, cost, &room);
    }
    if (e && rc >= 0) {
        /* A refusal ends the allowance too (left 0): the next call asks
         * the server again. */
        if (!e->name || e->len != (size_t)len ||
            memcmp(e->name, name, (size_t)len) != 0) {
            free(e->name);
            e->name = (uint8_t *)name;
            e->len = (size_t)len;
            name = NULL;
        }
        e->left = rc == 1 ? cost - 1 : 0;
        e->until_ms = sent + QUOTA_ALLOWANCE_MS;
    }
    free(name);
    return rc;
}
