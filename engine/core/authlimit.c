/* authlimit.c: counts failed authentications per second, in all and per
 * client address, in a fixed set-associative table of addresses under
 * one mutex; see authlimit.h. */
#include "config.h"

#include "engine/core/authlimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Ways per set: an address lives in one set of WAYS slots. */
#define WAYS 4u
#define SETS (CNT_AUTH_LIMIT_SLOTS / WAYS)

/* One address's failures in second `second`; an empty slot has len 0. */
typedef struct slot {
    uint64_t second;
    uint32_t count;
    uint8_t len;
    char addr[CNT_AUTH_LIMIT_ADDR_MAX];
} slot;

struct cnt_auth_limit {
    pthread_mutex_t lock;
    uint32_t per_second, per_address;
    uint64_t second;            /* the second `count` belongs to */
    uint32_t count;             /* failures (and admitted attempts) in it */
    slot slots[CNT_AUTH_LIMIT_SLOTS];
};

/* Builds a limit; see authlimit.h. */
cnt_auth_limit *cnt_auth_limit_new(uint32_t per_second,
                                   uint32_t per_address)
{
    cnt_auth_limit *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    if (pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l);
        return NULL;
    }
    l->per_second = per_second;
    l->per_address = per_address;
    return l;
}

/* Frees l. */
void cnt_auth_limit_free(cnt_auth_limit *l)
{
    if (l == NULL)
        return;
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* The first slot of addr's set (FNV-1a of the address). */
static slot *set_of(cnt_auth_limit *l, const char *addr, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)addr[i]) * 16777619u;
    return &l->slots[(h % SETS) * WAYS];
}

/* addr's length as kept (cut to CNT_AUTH_LIMIT_ADDR_MAX). */
static size_t addr_len(const char *addr)
{
    size_t n = strlen(addr);

    return n > CNT_AUTH_LIMIT_ADDR_MAX ? CNT_AUTH_LIMIT_ADDR_MAX : n;
}

/* addr's slot in its set, or NULL. */
static slot *find(slot *set, const char *addr, size_t len)
{
    for (unsigned i = 0; i < WAYS; i++)
        if (set[i].len == len && memcmp(set[i].addr, addr, len) == 0)
            return &set[i];
    return NULL;
}

/* A slot for addr in its set: an empty one, else one whose count is of an
 * older second, else the one with the fewest failures (forgetting an
 * address only lets it fail again as if new; the server-wide count still
 * bounds every address together). */
static slot *claim(slot *set, const char *addr, size_t len, uint64_t now)
{
    slot *best = &set[0];

    for (unsigned i = 0; i < WAYS; i++) {
        slot *s = &set[i];
        if (s->len == 0 || s->second != now) {
            best = s;
            break;
        }
        if (s->count < best->count)
            best = s;
    }
    best->len = (uint8_t)len;
    memcpy(best->addr, addr, len);
    best->second = now;
    best->count = 0;
    return best;
}

/* Admits or refuses one attempt; see authlimit.h. */
bool cnt_auth_limit_take(cnt_auth_limit *l, const char *addr,
                         uint64_t now_ns)
{
    uint64_t now = now_ns / 1000000000u;
    size_t len = addr_len(addr);
    bool ok = true;

    pthread_mutex_lock(&l->lock);
    if (l->second != now) {
        l->second = now;
        l->count = 0;
    }
    slot *set = set_of(l, addr, len);
    slot *s = find(set, addr, len);
    if (s != NULL && s->second != now) {
        s->second = now;
        s->count = 0;
    }
    if (l->per_second != 0 && l->count >= l->per_second)
        ok = false;
    else if (l->per_address != 0 && s != NULL && s->count >= l->per_address)
        ok = false;
    if (ok) {
        if (s == NULL)
            s = claim(set, addr, len, now);
        l->count++;
        s->count++;
    }
    pthread_mutex_unlock(&l->lock);
    return ok;
}

/* Takes back a success's place; see authlimit.h. */
void cnt_auth_limit_succeeded(cnt_auth_limit *l, const char *addr,
                              uint64_t now_ns)
{
    uint64_t now = now_ns / 1000000000u;
    size_t len = addr_len(addr);

    pthread_mutex_lock(&l->lock);
    if (l->second == now && l->count > 0)
        l->count--;
    slot *s = find(set_of(l, addr, len), addr, len);
    if (s != NULL && s->second == now && s->count > 0)
        s->count--;
    pthread_mutex_unlock(&l->lock);
}
