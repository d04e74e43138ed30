/* wheel.h: the engine's one timer facility, a hierarchical timing wheel of
 * millisecond ticks driven by the injectable monotonic clock. Every
 * deadline (waiting acquisitions, leases, expiry) is an intrusive timer in
 * a wheel, so arming allocates nothing and arm and cancel are O(1).
 *
 * Threads: a wheel and every timer armed in it belong to ONE thread (the
 * worker that owns the connections whose deadlines it holds). Nothing here
 * takes a lock; no other thread may arm, cancel, advance or read them.
 *
 * Sizes: sizeof(cnt_timer) is 32 bytes on LP64 (what each armed deadline
 * costs its owner's record); a cnt_wheel is a fixed 4,192 bytes (8 levels
 * of 64 slot heads, one bitmap word per level) and never allocates. Armed
 * timers point into the wheel and the wheel at them: neither may move in
 * memory while armed. */
#ifndef CNT_ENGINE_WHEEL_H
#define CNT_ENGINE_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bits of the tick each level resolves: 64 slots per level, and 8 levels
 * cover 2^48 ms (about 8,900 years), more than a uint64_t of nanoseconds
 * can name, so no deadline ever needs a separate far list. */
#define CNT_WHEEL_BITS 6
#define CNT_WHEEL_SLOTS_PER_LEVEL (1u << CNT_WHEEL_BITS)
#define CNT_WHEEL_LEVELS 8
#define CNT_WHEEL_SLOTS (CNT_WHEEL_LEVELS * CNT_WHEEL_SLOTS_PER_LEVEL)

/* One deadline, embedded in its owner's record (the owner finds itself
 * from the timer with offsetof, and keeps any tag of its own beside it).
 * The fields are the wheel's; read them only through the functions below.
 * Three words and no more: a million pending leases each carry one, so
 * the slot a timer sits in is worked out from where pprev points rather
 * than stored. */
typedef struct cnt_timer {
    struct cnt_timer *next;         /* the next timer of its list */
    struct cnt_timer **pprev;       /* what points at it; NULL: not armed */
    uint64_t expires_ms;            /* the deadline, rounded up to the ms */
} cnt_timer;

/* The wheel: tick now_ms has been dealt with (every timer due at or before
 * it has fired), slots hold timers due later, placed by the highest
 * 6-bit digit in which their tick differs from now_ms. */
typedef struct cnt_wheel {
    uint64_t now_ms;                /* ticks of the monotonic clock */
    uint64_t nonempty[CNT_WHEEL_LEVELS];   /* bit s: slot s has timers */
    size_t armed;                   /* timers armed, wherever they are */
    cnt_timer *late;                /* armed already due: next advance */
    cnt_timer *firing;              /* due, being fired by advance */
    /* Per level, the timers of a slot the clock has passed, not yet
     * filed again: advance moves them a few at a time, so a slot holding
     * a million leases does not stall the worker in one call. */
    cnt_timer *moving[CNT_WHEEL_LEVELS];
    cnt_timer *slots[CNT_WHEEL_SLOTS];
} cnt_wheel;

/* Called by cnt_wheel_advance for each due timer, which is no longer armed
 * when it is called; it may arm or cancel any timer of the wheel,
 * including t itself, but must not advance or destroy the wheel. */
typedef void cnt_timer_fire_fn(cnt_timer *t, void *ctx);

/* Prepares t as not armed (a zeroed cnt_timer is too). */
void cnt_timer_init(cnt_timer *t);

/* Prepares an empty wheel whose clock reads now_ns. */
void cnt_wheel_init(cnt_wheel *w, uint64_t now_ns);

/* Disarms every timer still in w (their owners may then free them). */
void cnt_wheel_destroy(cnt_wheel *w);

/* Arms t to fire at deadline_ns (rounded up to the ms); moves it if it is
 * armed already. A deadline already passed fires at the next advance. */
void cnt_timer_arm(cnt_wheel *w, cnt_timer *t, uint64_t deadline_ns);

/* Disarms t if it is armed (in w); does nothing otherwise. */
void cnt_timer_cancel(cnt_wheel *w, cnt_timer *t);

/* Whether t is armed (waiting in a wheel). */
static inline bool cnt_timer_armed(const cnt_timer *t)
{
    return t->pprev != NULL;
}

/* Returns the deadline of t in ms ticks of the monotonic clock (the
 * deadline_ns it was last armed with, rounded up). */
static inline uint64_t cnt_timer_deadline_ms(const cnt_timer *t)
{
    return t->expires_ms;
}

/* Moves w's clock to now_ns and fires every timer whose deadline has
 * passed, in deadline order (ms resolution; timers armed late count as
 * due at the tick w had reached), each once. Returns how many fired. */
size_t cnt_wheel_advance(cnt_wheel *w, uint64_t now_ns,
                         cnt_timer_fire_fn *fire, void *ctx);

/* cnt_wheel_advance firing at most max timers and filing at most max
 * timers of passed slots again: the rest stay due or waiting to be filed
 * (the next deadline is then "now") and the next call deals with them
 * first. A worker uses it so that a million leases expiring in the same
 * second are moved and fired in slices, with its sockets served between
 * them. */
size_t cnt_wheel_advance_max(cnt_wheel *w, uint64_t now_ns,
                             cnt_timer_fire_fn *fire, void *ctx, size_t max);

/* Returns an instant (ns) at or before the next deadline of w, never after
 * it: the worker's loop timeout. UINT64_MAX when nothing is armed. */
uint64_t cnt_wheel_next_deadline(const cnt_wheel *w);

/* Returns the number of armed timers. */
static inline size_t cnt_wheel_count(const cnt_wheel *w)
{
    return w->armed;
}

/* Called by cnt_wheel_walk for each armed timer it visits; false stops
 * the walk. It must not arm, cancel or advance anything. */
typedef bool cnt_timer_visit_fn(const cnt_timer *t, void *ctx);

/* Called by cnt_wheel_walk before it visits a list of timers all due at
 * or after tick from_ms (a wheel slot): true when the caller has what it
 * needs (every timer not visited yet is due at or after from_ms, and so
 * are those of every later list), which stops the walk. */
typedef bool cnt_wheel_enough_fn(uint64_t from_ms, void *ctx);

/* Visits the armed timers of w by groups, for a caller that wants the
 * few nearest deadlines without sorting them all: first every timer due
 * already or waiting to be filed again (the late, firing and moving
 * lists, in no order), then the slots in tick order (level 0's after
 * now's digit, then level 1's, ...), each slot a list in no order. Every
 * timer of a slot is due before every timer of a later slot, so a caller
 * that keeps the nearest deadlines it was shown has them all once the
 * farthest it keeps is at or before the next slot's from_ms: its enough
 * then says so. At most max timers are visited. Returns false when it
 * stopped at max with timers left unvisited (the caller's answer may then
 * miss nearer ones), true otherwise. */
bool cnt_wheel_walk(const cnt_wheel *w, cnt_timer_visit_fn *visit,
                    cnt_wheel_enough_fn *enough, void *ctx, size_t max);

#endif
