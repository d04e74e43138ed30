/* ticket.c: the size of a ticket and a connection's set of tickets by name,
 * an open-addressing table of pointers (linear probing, backward-shift
 * deletion, so a long-lived connection builds up no tombstones). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core/ticket.h"

#define CNT_TICKETS_MIN_CAPACITY 8u

/* Bytes a ticket with a len-byte name takes. */
size_t cnt_ticket_size(uint16_t len)
{
    return offsetof(cnt_ticket, name) + len;
}

/* FNV-1a of a name. The set is one connection's and bounded by its cap of
 * outstanding waits, so a client that picks colliding names only slows
 * its own lookups; a keyed hash would cost more than it protects. */
static uint64_t tickets_hash(const uint8_t *name, uint16_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (uint16_t i = 0; i < len; i++) {
        h ^= name[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Home slot of a name: the hash's top bits (capacity is a power of two). */
static size_t tickets_home(const cnt_tickets *s, const uint8_t *name,
                               uint16_t len)
{
    return (size_t)(tickets_hash(name, len) *
                    UINT64_C(0x9e3779b97f4a7c15) >> 32) &
           (s->capacity - 1);
}

/* Prepares an empty set. */
void cnt_tickets_init(cnt_tickets *s)
{
    s->slots = NULL;
    s->capacity = 0;
    s->count = 0;
}

/* Frees the slot array. */
void cnt_tickets_destroy(cnt_tickets *s)
{
    free(s->slots);
    cnt_tickets_init(s);
}

/* Puts k, known absent, into a table with a free slot. */
static void tickets_put(cnt_tickets *s, cnt_ticket *k)
{
    size_t i = tickets_home(s, k->name, k->name_len);

    while (s->slots[i] != NULL)
        i = (i + 1) & (s->capacity - 1);
    s->slots[i] = k;
    s->count++;
}

/* Keeps the load at most 3/4 after one more add. */
bool cnt_tickets_reserve(cnt_tickets *s)
{
    if ((s->count + 1) * 4 <= s->capacity * 3)
        return true;
    size_t cap = s->capacity ? s->capacity * 2 : CNT_TICKETS_MIN_CAPACITY;
    cnt_ticket **slots = calloc(cap, sizeof(*slots));
    if (slots == NULL)
        return false;
    cnt_tickets old = *s;
    s->slots = slots;
    s->capacity = cap;
    s->count = 0;
    for (size_t i = 0; i < old.capacity; i++)
        if (old.slots[i] != NULL)
            tickets_put(s, old.slots[i]);
    free(old.slots);
    return true;
}

/* Returns the index of name's ticket, or capacity when absent. */
static size_t tickets_index(const cnt_tickets *s, const uint8_t *name,
                                uint16_t len)
{
    if (s->count == 0)
        return s->capacity;
    for (size_t i = tickets_home(s, name, len);;
         i = (i + 1) & (s->capacity - 1)) {
        const cnt_ticket *k = s->slots[i];
        if (k == NULL)
            return s->capacity;
        if (k->name_len == len && memcmp(k->name, name, len) == 0)
            return i;
    }
}

/* The ticket named name, or NULL. */
cnt_ticket *cnt_tickets_find(const cnt_tickets *s, const uint8_t *name,
                             uint16_t len)
{
    size_t i = tickets_index(s, name, len);

    return i == s->capacity ? NULL : s->slots[i];
}

/* Adds k (absent; room reserved). */
void cnt_tickets_add(cnt_tickets *s, cnt_ticket *k)
{
    tickets_put(s, k);
}

/* Empties slot i and shifts back the entries whose probe ran through it. */
static void tickets_clear(cnt_tickets *s, size_t i)
{
    size_t mask = s->capacity - 1;

    s->slots[i] = NULL;
    s->count--;
    for (size_t j = (i + 1) & mask; s->slots[j] != NULL; j = (j + 1) & mask) {
        cnt_ticket *k = s->slots[j];
        size_t home = tickets_home(s, k->name, k->name_len);
        /* k may move to the hole when the hole lies on its probe path,
         * i.e. cyclically within [home, j). */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->slots[i] = k;
            s->slots[j] = NULL;
            i = j;
        }
    }
}

/* Removes k (in the set). */
void cnt_tickets_remove(cnt_tickets *s, cnt_ticket *k)
{
    size_t i = tickets_index(s, k->name, k->name_len);

    if (i != s->capacity && s->slots[i] == k)
        tickets_clear(s, i);
}

/* Empties the set, calling fn for each ticket it held. */
void cnt_tickets_drain(cnt_tickets *s, void (*fn)(cnt_ticket *k, void *ctx),
                       void *ctx)
{
    for (size_t i = 0; i < s->capacity; i++) {
        cnt_ticket *k = s->slots[i];
        if (k != NULL) {
            s->slots[i] = NULL;
            s->count--;
            fn(k, ctx);
        }
    }
}
