/* outbuf.c: the output buffer's slow paths: allocating, growing (after
 * moving sent bytes out of the way), compacting and shrinking. The fast
 * paths (per answer, per send) are inline in outbuf.h. */
#include "config.h"

#include "engine/server/outbuf.h"

#include <stdlib.h>
#include <string.h>

/* Allocates initial bytes; no turn budget until cnt_outbuf_begin_turn. */
bool cnt_outbuf_init(cnt_outbuf *o, size_t initial)
{
    memset(o, 0, sizeof(*o));
    if (initial == 0)
        initial = 1;
    o->buf = malloc(initial);
    if (o->buf == NULL)
        return false;
    o->cap = o->initial = initial;
    o->high = CNT_OUTBUF_HIGH;
    o->turn_end = UINT64_MAX;
    return true;
}

/* Frees the memory. */
void cnt_outbuf_destroy(cnt_outbuf *o)
{
    free(o->buf);
    o->buf = NULL;
    o->cap = o->len = o->head = 0;
}

/* Moves the unsent bytes to the front, making all free room contiguous. */
static void compact(cnt_outbuf *o)
{
    if (o->head == 0)
        return;
    memmove(o->buf, o->buf + o->head, o->len - o->head);
    o->len -= o->head;
    o->head = 0;
}

/* Makes room for n bytes: drops what the socket already took first, and
 * grows only if that is not enough. */
uint8_t *cnt_outbuf_grow(cnt_outbuf *o, size_t n)
{
    compact(o);
    if (o->cap - o->len >= n)
        return o->buf + o->len;
    size_t cap = o->cap;
    while (cap - o->len < n)
        cap *= 2;
    uint8_t *p = realloc(o->buf, cap);
    if (p == NULL)
        return NULL;
    o->buf = p;
    o->cap = cap;
    return o->buf + o->len;
}

/* Returns to the initial size (cnt_outbuf_shrink checked it is idle and
 * large). */
void cnt_outbuf_shrink_now(cnt_outbuf *o)
{
    uint8_t *p = realloc(o->buf, o->initial);
    if (p == NULL)
        return;
    o->buf = p;
    o->cap = o->initial;
}
