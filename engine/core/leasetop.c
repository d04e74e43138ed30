/* leasetop.c: the bounded top of nearest leases (leasetop.h): a sorted
 * array of at most 64 entries, filled from a wheel's ordered walk. */
#include "config.h"

#include "engine/core/leasetop.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core/ticket.h"

/* Prepares an empty top. */
void cnt_lease_top_init(cnt_lease_top *top, uint32_t want)
{
    if (want == 0)
        want = 1;
    if (want > CNT_LEASE_TOP_MAX)
        want = CNT_LEASE_TOP_MAX;
    top->want = want;
    top->count = 0;
    top->incomplete = false;
    top->failed = false;
}

/* Frees the kept names. */
void cnt_lease_top_clear(cnt_lease_top *top)
{
    for (uint32_t i = 0; i < top->count; i++)
        free(top->e[i].name);
    top->count = 0;
}

/* Where an entry due at deadline_ms goes (after those due at or before
 * it), or top->want when it is not among the nearest. */
static uint32_t top_position(const cnt_lease_top *top, uint64_t deadline_ms)
{
    uint32_t pos = top->count;

    while (pos > 0 && top->e[pos - 1].deadline_ms > deadline_ms)
        pos--;
    return pos;
}

/* Puts e at pos, pushing the farthest out (freed) when the top is full. */
static void top_insert(cnt_lease_top *top, uint32_t pos,
                       const cnt_lease_entry *e)
{
    if (top->count == top->want) {
        free(top->e[top->count - 1].name);
        top->count--;
    }
    memmove(&top->e[pos + 1], &top->e[pos],
            (top->count - pos) * sizeof(top->e[0]));
    top->e[pos] = *e;
    top->count++;
}

/* Offers one lease; see leasetop.h. */
bool cnt_lease_top_offer(cnt_lease_top *top, uint64_t deadline_ms,
                         uint64_t lease_id, uint32_t resources,
                         const uint8_t *name, uint16_t name_len)
{
    uint32_t pos = top_position(top, deadline_ms);

    if (pos >= top->want)
        return true;
    cnt_lease_entry e = {.deadline_ms = deadline_ms, .lease_id = lease_id,
                         .resources = resources, .name_len = name_len};
    e.name = malloc(name_len > 0 ? name_len : 1);
    if (e.name == NULL) {
        top->failed = true;
        return false;
    }
    if (name_len > 0)
        memcpy(e.name, name, name_len);
    top_insert(top, pos, &e);
    return true;
}

/* Moves src's entries into dst. */
void cnt_lease_top_merge(cnt_lease_top *dst, cnt_lease_top *src)
{
    for (uint32_t i = 0; i < src->count; i++) {
        uint32_t pos = top_position(dst, src->e[i].deadline_ms);
        if (pos >= dst->want)
            free(src->e[i].name);
        else
            top_insert(dst, pos, &src->e[i]);
    }
    src->count = 0;
    dst->incomplete |= src->incomplete;
    dst->failed |= src->failed;
}

/* Copies src's entries into dst. */
bool cnt_lease_top_copy(cnt_lease_top *dst, const cnt_lease_top *src)
{
    bool ok = true;

    for (uint32_t i = 0; i < src->count; i++) {
        const cnt_lease_entry *e = &src->e[i];
        ok &= cnt_lease_top_offer(dst, e->deadline_ms, e->lease_id,
                                  e->resources, e->name, e->name_len);
    }
    dst->incomplete |= src->incomplete;
    dst->failed |= src->failed;
    return ok;
}

/* Walk visitor: offers a granted ticket's lease timer. */
static bool collect_visit(const cnt_timer *t, void *ctx)
{
    cnt_lease_top *top = ctx;
    const cnt_ticket *k = (const cnt_ticket *)((const char *)t -
                                               offsetof(cnt_ticket, timer));
    uint64_t deadline = cnt_timer_deadline_ms(t);

    /* The deadline first: it shares its cache line with the link the walk
     * follows anyway, and in a crowded slot most timers go no further. */
    if (top->count == top->want &&
        deadline >= top->e[top->count - 1].deadline_ms)
        return true;
    if (k->timer_kind != CNT_TIMER_LEASE)
        return true;
    return cnt_lease_top_offer(top, deadline, k->lease_id,
                               k->resources, k->name, k->name_len);
}

/* Walk question: the top is full and nothing later can be nearer. */
static bool collect_enough(uint64_t from_ms, void *ctx)
{
    const cnt_lease_top *top = ctx;

    return top->count == top->want &&
           top->e[top->count - 1].deadline_ms <= from_ms;
}

/* Walks a wheel into the top. */
void cnt_lease_top_collect(cnt_lease_top *top, const cnt_wheel *w,
                           size_t max)
{
    if (!cnt_wheel_walk(w, collect_visit, collect_enough, top, max))
        top->incomplete = true;
}
