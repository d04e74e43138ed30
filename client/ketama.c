/* ketama.c: the weighted ketama circle, built as libmemcached 1.x builds
 * it so that both place every key on the same server:
 *  - a server of weight w out of a total W among n servers gets
 *    floor(w/W * 160/4 * n) * 4 points, computed in single precision as
 *    libmemcached does (the rounding decides the count near a boundary);
 *  - its points come from the strings "HOST:PORT-i" ("HOST-i" when the
 *    port is memcached's default 11211), i = 0, 1, ...: each string's MD5
 *    gives four points, its four little-endian 32-bit words;
 *  - the points are sorted by position, ties by server index;
 *  - a key goes to the first point at or after the first four bytes of
 *    its MD5 (little-endian), wrapping past the last point to the first;
 *    with a single server every key goes to it.
 * The host is hashed as written in the list: "localhost" and "127.0.0.1"
 * are different servers to ketama, as they are to libmemcached. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "client/ketama.h"
#include "client/md5.h"

/* libmemcached's MEMCACHED_POINTS_PER_SERVER_KETAMA and
 * MEMCACHED_DEFAULT_PORT. */
#define KETAMA_POINTS_PER_SERVER 160
#define KETAMA_DEFAULT_PORT 11211
/* Points from one MD5 digest. */
#define KETAMA_POINTS_PER_HASH 4

/* One point of the circle. */
typedef struct ketama_point {
    uint32_t value;     /* position */
    uint32_t server;    /* index into the list */
} ketama_point;

struct mcc_ketama {
    size_t servers;
    size_t count;
    ketama_point *points;   /* sorted by value, then server */
};

/* Orders points by position, then by server, as libmemcached's
 * comparison does; the server order only matters when two points share
 * a position, which must then resolve the same way. */
static int point_cmp(const void *a, const void *b)
{
    const ketama_point *x = a, *y = b;

    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->server != y->server)
        return x->server < y->server ? -1 : 1;
    return 0;
}

/* Points of one server: its weight's share of 160 points per server,
 * rounded down to whole digests. Every step is rounded to float, as in
 * libmemcached; separate statements keep any wider intermediate out. */
static uint32_t server_points(uint32_t weight, uint64_t total, size_t n)
{
    float pct = (float)weight / (float)total;
    float x = pct * (float)KETAMA_POINTS_PER_SERVER;

    x = x / (float)KETAMA_POINTS_PER_HASH;
    x = x * (float)n;
    x = x + 0.0000000001F;
    /* x is at least 0, so the conversion is libmemcached's floor(). */
    return (uint32_t)x * KETAMA_POINTS_PER_HASH;
}

/* The first four bytes of the key's MD5, little-endian. */
uint32_t mcc_ketama_hash(const void *key, size_t len)
{
    uint8_t d[MCC_MD5_DIGEST_SIZE];

    mcc_md5_digest(key, len, d);
    return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
           (uint32_t)d[3] << 24;
}

/* Builds the circle; NULL with errno EINVAL for an empty list or weights
 * that are all 0, ENOMEM when out of memory. */
mcc_ketama *mcc_ketama_new(const mcc_server_spec *servers, size_t n)
{
    uint64_t total = 0;
    size_t count = 0;
    mcc_ketama *k;

    for (size_t i = 0; i < n; i++)
        total += servers[i].weight;
    if (n == 0 || total == 0 || n > UINT32_MAX) {
        errno = EINVAL;
        return NULL;
    }
    k = calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        count += server_points(servers[i].weight, total, n);
    k->servers = n;
    /* The shares sum to at most 160 * n points, never to none: some
     * server holds at least 1/n of the weight, so 40 digests or more. */
    k->points = calloc(count, sizeof *k->points);
    if (k->points == NULL) {
        free(k);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t digests = server_points(servers[i].weight, total, n) /
                           KETAMA_POINTS_PER_HASH;

        for (uint32_t j = 0; j < digests; j++) {
            /* host (< 256) + ":" + port + "-" + index. */
            char text[sizeof servers[i].host + 24];
            uint8_t d[MCC_MD5_DIGEST_SIZE];
            int len;

            if (servers[i].port == KETAMA_DEFAULT_PORT)
                len = snprintf(text, sizeof text, "%s-%u", servers[i].host,
                               (unsigned)j);
            else
                len = snprintf(text, sizeof text, "%s:%u-%u",
                               servers[i].host, (unsigned)servers[i].port,
                               (unsigned)j);
            mcc_md5_digest(text, (size_t)len, d);
            for (unsigned h = 0; h < KETAMA_POINTS_PER_HASH; h++) {
                const uint8_t *w = d + 4 * h;
                ketama_point *p = &k->points[k->count++];

                p->value = (uint32_t)w[0] | (uint32_t)w[1] << 8 |
                           (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
                p->server = (uint32_t)i;
            }
        }
    }
    qsort(k->points, k->count, sizeof *k->points, point_cmp);
    return k;
}

/* Frees the circle. */
void mcc_ketama_free(mcc_ketama *k)
{
    if (k == NULL)
        return;
    free(k->points);
    free(k);
}

/* Position in points of the first point at or after the key's hash,
 * wrapped to 0 past the end. A single server takes every key without
 * hashing, as in libmemcached (whose hash is then 0). */
static size_t first_point(const mcc_ketama *k, const void *key, size_t len)
{
    uint32_t h = k->servers == 1 ? 0 : mcc_ketama_hash(key, len);
    size_t lo = 0, hi = k->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (k->points[mid].value < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == k->count ? 0 : lo;
}

/* Index of the server a key maps to. */
size_t mcc_ketama_lookup(const mcc_ketama *k, const void *key, size_t len)
{
    return k->points[first_point(k, key, len)].server;
}

/* Walks clockwise from the key's point to the first point of a server
 * that is up; once around at most. */
size_t mcc_ketama_lookup_up(const mcc_ketama *k, const void *key, size_t len,
                            const bool *up)
{
    size_t at = first_point(k, key, len);

    for (size_t step = 0; step < k->count; step++) {
        const ketama_point *p = &k->points[(at + step) % k->count];

        if (up[p->server])
            return p->server;
    }
    return (size_t)-1;
}

/* Number of points on the circle. */
size_t mcc_ketama_points(const mcc_ketama *k)
{
    return k->count;
}

/* The i-th point, clockwise from 0. */
void mcc_ketama_point(const mcc_ketama *k, size_t i, uint32_t *value,
                      size_t *server)
{
    *value = k->points[i].value;
    *server = k->points[i].server;
}
