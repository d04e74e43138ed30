/* holdings.h: the ledger of what one connection holds, counter by counter.
 * The connection owns it; the table reads and changes an entry only while
 * holding the lock of that counter's stripe, so "consumption 0" always
 * means "no ledger points at this counter" and GC can free it. */
#ifndef CNT_ENGINE_HOLDINGS_H
#define CNT_ENGINE_HOLDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cnt_counter;

typedef struct cnt_holding {
    struct cnt_counter *counter;    /* NULL: free slot */
    uint32_t amount;                /* > 0 for every used slot */
} cnt_holding;

/* Open-addressing map from counter to amount; embedded in the connection,
 * so an idle connection costs no allocation. */
typedef struct cnt_holdings {
    cnt_holding *slots;
    size_t capacity;                /* 0, 8, then growing by half */
    size_t count;                   /* used slots */
} cnt_holdings;

/* Prepares an empty ledger. */
void cnt_holdings_init(cnt_holdings *h);

/* Frees the ledger's memory; it must be empty (released) first. */
void cnt_holdings_destroy(cnt_holdings *h);

/* Makes room for one more entry so that a later add cannot fail; returns
 * false when memory is short. Call before taking a stripe lock. */
bool cnt_holdings_reserve(cnt_holdings *h);

/* Returns the amount held on counter (0 if none). */
uint32_t cnt_holdings_get(const cnt_holdings *h, const struct cnt_counter *c);

/* Adds n to the entry of counter (creating it); room must be reserved. */
void cnt_holdings_add(cnt_holdings *h, struct cnt_counter *c, uint32_t n);

/* Subtracts n (at most the amount held); the entry goes when it reaches 0. */
void cnt_holdings_sub(cnt_holdings *h, struct cnt_counter *c, uint32_t n);

/* Removes every entry, calling fn(counter, amount, ctx) for each first. */
void cnt_holdings_drain(cnt_holdings *h,
                        void (*fn)(struct cnt_counter *c, uint32_t amount,
                                   void *ctx),
                        void *ctx);

#endif
