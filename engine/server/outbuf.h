/* outbuf.h: a connection's output buffer: answers are appended at the end
 * (reserve, then commit what was written) and sent from the front
 * (consume). It also keeps the two limits that pace a producer: the
 * watermark of unsent bytes and the budget of bytes per turn. No sockets. */
#ifndef CNT_ENGINE_OUTBUF_H
#define CNT_ENGINE_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Size to start with, and to return to when idle. */
#define CNT_OUTBUF_INITIAL (16u * 1024)
/* Default watermark: above this many unsent bytes a producer stops (a Dump
 * pauses, requests wait in the input) and the connection stops reading. */
#define CNT_OUTBUF_HIGH (256u * 1024)

typedef struct cnt_outbuf {
    uint8_t *buf;
    size_t head;            /* first unsent byte */
    size_t len;             /* end of the committed bytes */
    size_t cap;
    size_t initial;         /* capacity shrink returns to */
    size_t high;            /* the watermark of unsent bytes */
    uint64_t total;         /* bytes ever committed */
    uint64_t turn_end;      /* total at which this turn's budget is spent */
} cnt_outbuf;

/* Allocates initial bytes; watermark CNT_OUTBUF_HIGH, no turn budget
 * (until cnt_outbuf_begin_turn). False when memory is short. */
bool cnt_outbuf_init(cnt_outbuf *o, size_t initial);

/* Frees the memory. */
void cnt_outbuf_destroy(cnt_outbuf *o);

/* Makes room for n bytes by moving the unsent bytes to the front and, if
 * that is not enough, doubling the capacity; returns where to write, or
 * NULL when memory is short (the unsent bytes are kept). */
uint8_t *cnt_outbuf_grow(cnt_outbuf *o, size_t n);

/* Returns where n more bytes may be written (they count once committed);
 * NULL when memory is short. Inline: called for every answer. */
static inline uint8_t *cnt_outbuf_reserve(cnt_outbuf *o, size_t n)
{
    if (o->cap - o->len >= n)
        return o->buf + o->len;
    return cnt_outbuf_grow(o, n);
}

/* Appends the n bytes just written at the reserved place. */
static inline void cnt_outbuf_commit(cnt_outbuf *o, size_t n)
{
    o->len += n;
    o->total += n;
}

/* Bytes committed and not yet consumed (sent). */
static inline size_t cnt_outbuf_pending(const cnt_outbuf *o)
{
    return o->len - o->head;
}

/* The first unsent byte (cnt_outbuf_pending bytes follow). Valid until
 * the next reserve. */
static inline uint8_t *cnt_outbuf_data(cnt_outbuf *o)
{
    return o->buf + o->head;
}

/* Drops the first n unsent bytes (the socket took them); an emptied
 * buffer starts again at its front, so later answers need no compaction.
 * Inline: called after every send. */
static inline void cnt_outbuf_consume(cnt_outbuf *o, size_t n)
{
    o->head += n;
    if (o->head >= o->len)
        o->head = o->len = 0;
}

/* Returns to the initial size (keeping the bigger buffer if realloc
 * fails); for cnt_outbuf_shrink. */
void cnt_outbuf_shrink_now(cnt_outbuf *o);

/* Gives memory back after a large answer or a Dump: when nothing is
 * pending and the capacity passed four times the initial size, returns to
 * the initial size. Inline: checked whenever a connection goes idle. */
static inline void cnt_outbuf_shrink(cnt_outbuf *o)
{
    if (o->len == 0 && o->cap > 4 * o->initial)
        cnt_outbuf_shrink_now(o);
}

/* Starts a turn in which producers may commit up to budget more bytes. */
static inline void cnt_outbuf_begin_turn(cnt_outbuf *o, size_t budget)
{
    o->turn_end = budget > UINT64_MAX - o->total ? UINT64_MAX
                                                  : o->total + budget;
}

/* Spends n bytes of this turn's budget without output: a request whose
 * work is not in the size of its answer pays that way, so that pipelined
 * ones cannot take a whole turn's worth of work for a few bytes each.
 * Nothing changes without a turn budget or when it is spent already. */
static inline void cnt_outbuf_spend(cnt_outbuf *o, size_t n)
{
    if (o->turn_end == UINT64_MAX || o->turn_end <= o->total)
        return;
    o->turn_end = o->turn_end - o->total > n ? o->turn_end - n : o->total;
}

/* Whether this turn's budget is spent. */
static inline bool cnt_outbuf_turn_over(const cnt_outbuf *o)
{
    return o->total >= o->turn_end;
}

/* Whether the unsent bytes reached the watermark. */
static inline bool cnt_outbuf_above_high(const cnt_outbuf *o)
{
    return cnt_outbuf_pending(o) >= o->high;
}

/* Whether a producer must stop for now: the watermark is reached or the
 * turn's budget is spent. */
static inline bool cnt_outbuf_full(const cnt_outbuf *o)
{
    return cnt_outbuf_above_high(o) || cnt_outbuf_turn_over(o);
}

#endif
