/* groups.c: the set of server-defined groups, a sorted array of names and
 * settings searched by bisection. A configuration defines a handful of
 * groups, once, at start-up: a sorted array costs one allocation per name
 * plus the array, keeps lookups O(log n) with no hashing, and needs no
 * resizing policy beyond doubling while the configuration is read. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core/groups.h"

/* One group: its own copy of the name, and its settings. */
typedef struct cnt_group_entry {
    uint8_t *name;
    uint16_t len;
    cnt_group v;
} cnt_group_entry;

struct cnt_groups {
    cnt_group_entry *entries;       /* sorted by name, see groups_cmp */
    size_t count;
    size_t capacity;
};

/* Orders names by their bytes, a name before every longer name it
 * starts. */
static int groups_cmp(const uint8_t *a, uint16_t alen, const uint8_t *b,
                      uint16_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n > 0 ? memcmp(a, b, n) : 0;

    if (c != 0)
        return c;
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* Finds name: returns true and its index in *at, or false and the index
 * it would be inserted at. Reads only. */
static bool groups_search(const cnt_groups *g, const uint8_t *name,
                          uint16_t len, size_t *at)
{
    size_t lo = 0, hi = g->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const cnt_group_entry *e = &g->entries[mid];
        int c = groups_cmp(name, len, e->name, e->len);

        if (c == 0) {
            *at = mid;
            return true;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *at = lo;
    return false;
}

/* Copies a name into a new block (at least one byte, so that an empty
 * name is not mistaken for a failed allocation). */
static uint8_t *groups_dup_name(const uint8_t *name, uint16_t len)
{
    uint8_t *p = malloc(len > 0 ? len : 1);

    if (p != NULL && len > 0)
        memcpy(p, name, len);
    return p;
}

/* Returns an empty set, or NULL when memory is short. */
cnt_groups *cnt_groups_new(void)
{
    return calloc(1, sizeof(cnt_groups));
}

/* Frees the set and its names; g may be NULL. */
void cnt_groups_free(cnt_groups *g)
{
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->count; i++)
        free(g->entries[i].name);
    free(g->entries);
    free(g);
}

/* Returns a new set with the same groups as g, or NULL when memory is
 * short. */
cnt_groups *cnt_groups_copy(const cnt_groups *g)
{
    cnt_groups *c = cnt_groups_new();

    if (c == NULL || g == NULL || g->count == 0)
        return c;
    c->entries = malloc(g->count * sizeof(cnt_group_entry));
    if (c->entries == NULL) {
        free(c);
        return NULL;
    }
    c->capacity = g->count;
    for (size_t i = 0; i < g->count; i++) {
        cnt_group_entry e = g->entries[i];

        e.name = groups_dup_name(e.name, e.len);
        if (e.name == NULL) {
            cnt_groups_free(c);     /* frees the c->count names so far */
            return NULL;
        }
        c->entries[c->count++] = e;
    }
    return c;
}

/* Adds the group or replaces its settings; false when memory is short. */
bool cnt_groups_set(cnt_groups *g, const uint8_t *name, uint16_t len,
                    const cnt_group *v)
{
    size_t at;

    if (groups_search(g, name, len, &at)) {
        g->entries[at].v = *v;
        return true;
    }
    if (g->count == g->capacity) {
        size_t cap = g->capacity > 0 ? g->capacity * 2 : 8;
        cnt_group_entry *e;

        if (cap > SIZE_MAX / sizeof(*e))
            return false;
        e = realloc(g->entries, cap * sizeof(*e));
        if (e == NULL)
            return false;
        g->entries = e;
        g->capacity = cap;
    }
    uint8_t *copy = groups_dup_name(name, len);

    if (copy == NULL)
        return false;
    memmove(&g->entries[at + 1], &g->entries[at],
            (g->count - at) * sizeof(g->entries[0]));
    g->entries[at].name = copy;
    g->entries[at].len = len;
    g->entries[at].v = *v;
    g->count++;
    return true;
}

/* Returns the settings of the group of that name, or NULL. */
const cnt_group *cnt_groups_find(const cnt_groups *g, const uint8_t *name,
                                 uint16_t len)
{
    size_t at;

    if (g == NULL || !groups_search(g, name, len, &at))
        return NULL;
    return &g->entries[at].v;
}

/* Returns how many groups g holds (0 for NULL). */
size_t cnt_groups_count(const cnt_groups *g)
{
    return g != NULL ? g->count : 0;
}

/* Returns group number i in name order and its name, or NULL. */
const cnt_group *cnt_groups_at(const cnt_groups *g, size_t i,
                               const uint8_t **name, uint16_t *len)
{
    if (g == NULL || i >= g->count)
        return NULL;
    *name = g->entries[i].name;
    *len = g->entries[i].len;
    return &g->entries[i].v;
}
