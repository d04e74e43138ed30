/* holdings.c: one connection's ledger of held resources, an open-addressing
 * map from counter pointer to amount (linear probing, backward-shift
 * deletion, so no tombstones build up in a long-lived connection). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "engine/core/holdings.h"

#define CNT_HOLDINGS_MIN_CAPACITY 8u

/* The capacity is not a power of two: it grows by half (8, 12, 18, ...),
 * so a connection holding 1,000,000 counters needs 1.5 million 16-byte
 * slots (24 MB) at load <= 3/4, not 2^21 (32 MB), which keeps a server
 * with a million held counters within its memory budget.
 * Slots are therefore picked by multiply-shift, and probes wrap by test. */
#define CNT_HOLDINGS_MAX_CAPACITY UINT32_MAX

/* Home slot of a counter: Fibonacci hashing of the pointer (whose low bits
 * are always zero, alignment, and so carry no information), its top 32
 * bits scaled to [0, capacity). */
static size_t holdings_home(const cnt_holdings *h,
                                const struct cnt_counter *c)
{
    uint64_t x = (uint64_t)(uintptr_t)c * UINT64_C(0x9e3779b97f4a7c15);

    return (size_t)(((x >> 32) * (uint64_t)h->capacity) >> 32);
}

/* The slot after i, wrapping at the end. */
static size_t holdings_next(const cnt_holdings *h, size_t i)
{
    return i + 1 == h->capacity ? 0 : i + 1;
}

/* How many slots forward from a to b, wrapping. */
static size_t holdings_distance(const cnt_holdings *h, size_t a, size_t b)
{
    return b >= a ? b - a : b + h->capacity - a;
}

/* Returns the slot of c, or NULL when c has no entry. */
static cnt_holding *holdings_find(const cnt_holdings *h,
                                      const struct cnt_counter *c)
{
    if (h->count == 0)
        return NULL;
    for (size_t i = holdings_home(h, c);; i = holdings_next(h, i)) {
        cnt_holding *s = &h->slots[i];
        if (s->counter == c)
            return s;
        if (s->counter == NULL)
            return NULL;
    }
}

/* Puts an entry known to be absent into a table with a free slot. */
static void holdings_put(cnt_holdings *h, struct cnt_counter *c,
                             uint32_t amount)
{
    size_t i = holdings_home(h, c);

    while (h->slots[i].counter != NULL)
        i = holdings_next(h, i);
    h->slots[i].counter = c;
    h->slots[i].amount = amount;
    h->count++;
}

/* Prepares an empty ledger. */
void cnt_holdings_init(cnt_holdings *h)
{
    h->slots = NULL;
    h->capacity = 0;
    h->count = 0;
}

/* Frees the slot array. */
void cnt_holdings_destroy(cnt_holdings *h)
{
    free(h->slots);
    cnt_holdings_init(h);
}

/* Grows the slot array by half (or creates it) and moves every entry
 * over. */
static bool holdings_grow(cnt_holdings *h)
{
    size_t cap = h->capacity ? h->capacity + h->capacity / 2
                             : CNT_HOLDINGS_MIN_CAPACITY;
    cnt_holdings old = *h;
    cnt_holding *slots;

    if (cap < h->capacity || cap > CNT_HOLDINGS_MAX_CAPACITY ||
        cap > SIZE_MAX / sizeof *slots)
        return false;
    slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return false;
    h->slots = slots;
    h->capacity = cap;
    h->count = 0;
    for (size_t i = 0; i < old.capacity; i++)
        if (old.slots[i].counter != NULL)
            holdings_put(h, old.slots[i].counter, old.slots[i].amount);
    free(old.slots);
    return true;
}

/* Keeps the load at most 3/4 after one more entry, so probes stay short and
 * cnt_holdings_add, called under a stripe lock, never allocates. */
bool cnt_holdings_reserve(cnt_holdings *h)
{
    if ((h->count + 1) * 4 <= h->capacity * 3)
        return true;
    return holdings_grow(h);
}

/* Returns the amount held on c (0 if none). */
uint32_t cnt_holdings_get(const cnt_holdings *h, const struct cnt_counter *c)
{
    const cnt_holding *s = holdings_find(h, c);

    return s ? s->amount : 0;
}

/* Adds n to c's entry, creating it in the reserved room. */
void cnt_holdings_add(cnt_holdings *h, struct cnt_counter *c, uint32_t n)
{
    cnt_holding *s = holdings_find(h, c);

    if (s != NULL)
        s->amount += n;     /* the table keeps it within a counter's u32 */
    else
        holdings_put(h, c, n);
}

/* Empties slot i and shifts later entries of the same probe run back, so
 * every remaining entry stays reachable from its home slot. */
static void holdings_remove_at(cnt_holdings *h, size_t i)
{
    size_t j = i;

    for (;;) {
        j = holdings_next(h, j);
        if (h->slots[j].counter == NULL)
            break;
        size_t home = holdings_home(h, h->slots[j].counter);
        /* Entry j may move to i only if its home is not in (i, j]. */
        if (holdings_distance(h, home, j) >=
            holdings_distance(h, i, j)) {
            h->slots[i] = h->slots[j];
            i = j;
        }
    }
    h->slots[i].counter = NULL;
    h->slots[i].amount = 0;
    h->count--;
}

/* Subtracts n from c's entry; the entry goes when it reaches 0. */
void cnt_holdings_sub(cnt_holdings *h, struct cnt_counter *c, uint32_t n)
{
    cnt_holding *s = holdings_find(h, c);

    if (s == NULL)
        return;
    s->amount = n < s->amount ? s->amount - n : 0;
    if (s->amount == 0)
        holdings_remove_at(h, (size_t)(s - h->slots));
}

/* Calls fn for every entry, then leaves the ledger empty (memory kept). */
void cnt_holdings_drain(cnt_holdings *h,
                        void (*fn)(struct cnt_counter *c, uint32_t amount,
                                   void *ctx),
                        void *ctx)
{
    for (size_t i = 0; i < h->capacity && h->count > 0; i++) {
        cnt_holding *s = &h->slots[i];
        if (s->counter == NULL)
            continue;
        fn(s->counter, s->amount, ctx);
        s->counter = NULL;
        s->amount = 0;
        h->count--;
    }
}
