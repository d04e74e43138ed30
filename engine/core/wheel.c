/* wheel.c: the hierarchical timing wheel declared in wheel.h. A timer sits
 * at the level of the highest 6-bit digit in which its tick differs from
 * the wheel's, so when the wheel's clock passes a slot every timer in it
 * is either due or moves down exactly once per level: arming and
 * cancelling touch one list, advancing costs the levels plus the timers
 * it moves or fires. */
#include "config.h"

#include "engine/core/wheel.h"

#define NS_PER_MS UINT64_C(1000000)

/* Prepares t as not armed. */
void cnt_timer_init(cnt_timer *t)
{
    t->next = NULL;
    t->pprev = NULL;
    t->expires_ms = 0;
}

/* Prepares an empty wheel at now_ns. */
void cnt_wheel_init(cnt_wheel *w, uint64_t now_ns)
{
    w->now_ms = now_ns / NS_PER_MS;
    for (unsigned i = 0; i < CNT_WHEEL_LEVELS; i++)
        w->nonempty[i] = 0;
    w->armed = 0;
    w->late = NULL;
    w->firing = NULL;
    for (unsigned i = 0; i < CNT_WHEEL_LEVELS; i++)
        w->moving[i] = NULL;
    for (unsigned i = 0; i < CNT_WHEEL_SLOTS; i++)
        w->slots[i] = NULL;
}

/* Puts t at the head of the list *head. */
static void list_push(cnt_timer **head, cnt_timer *t)
{
    t->next = *head;
    if (t->next != NULL)
        t->next->pprev = &t->next;
    t->pprev = head;
    *head = t;
}

/* The slot whose list head pprev is, or CNT_WHEEL_SLOTS when pprev is
 * another timer's link or the late or firing list's head. Compared as
 * integers: pprev may point into a timer, outside the slot array. */
static unsigned head_slot(const cnt_wheel *w, cnt_timer **pprev)
{
    uintptr_t p = (uintptr_t)pprev, first = (uintptr_t)&w->slots[0];

    if (p < first || p >= (uintptr_t)&w->slots[CNT_WHEEL_SLOTS])
        return CNT_WHEEL_SLOTS;
    return (unsigned)((p - first) / sizeof(w->slots[0]));
}

/* Takes t out of its list, keeping the slot's bit exact, and marks it not
 * armed. */
static void unlink_timer(cnt_wheel *w, cnt_timer *t)
{
    *t->pprev = t->next;
    if (t->next != NULL)
        t->next->pprev = t->pprev;
    /* Only the head of a slot's list can leave the slot empty. */
    unsigned slot = t->next == NULL ? head_slot(w, t->pprev)
                                    : CNT_WHEEL_SLOTS;
    if (slot < CNT_WHEEL_SLOTS)
        w->nonempty[slot / CNT_WHEEL_SLOTS_PER_LEVEL] &=
            ~(UINT64_C(1) << (slot % CNT_WHEEL_SLOTS_PER_LEVEL));
    t->next = NULL;
    t->pprev = NULL;
}

/* Files t (not linked) by its tick: the late list if it is due already,
 * else the slot of its highest digit differing from now. */
static void place(cnt_wheel *w, cnt_timer *t)
{
    if (t->expires_ms <= w->now_ms) {
        list_push(&w->late, t);
        return;
    }
    uint64_t diff = t->expires_ms ^ w->now_ms;
    unsigned level = (unsigned)(63 - __builtin_clzll(diff)) / CNT_WHEEL_BITS;
    unsigned slot = (unsigned)(t->expires_ms >> (level * CNT_WHEEL_BITS)) &
                    (CNT_WHEEL_SLOTS_PER_LEVEL - 1);
    unsigned where = level * CNT_WHEEL_SLOTS_PER_LEVEL + slot;

    list_push(&w->slots[where], t);
    w->nonempty[level] |= UINT64_C(1) << slot;
}

/* Disarms every timer of w. */
void cnt_wheel_destroy(cnt_wheel *w)
{
    while (w->late != NULL)
        cnt_timer_cancel(w, w->late);
    while (w->firing != NULL)
        cnt_timer_cancel(w, w->firing);
    for (unsigned i = 0; i < CNT_WHEEL_LEVELS; i++)
        while (w->moving[i] != NULL)
            cnt_timer_cancel(w, w->moving[i]);
    for (unsigned i = 0; i < CNT_WHEEL_SLOTS; i++)
        while (w->slots[i] != NULL)
            cnt_timer_cancel(w, w->slots[i]);
}

/* Arms (or moves) t to deadline_ns rounded up to the ms. */
void cnt_timer_arm(cnt_wheel *w, cnt_timer *t, uint64_t deadline_ns)
{
    if (t->pprev != NULL)
        unlink_timer(w, t);
    else
        w->armed++;
    t->expires_ms = deadline_ns / NS_PER_MS + (deadline_ns % NS_PER_MS != 0);
    place(w, t);
}

/* Disarms t if armed. */
void cnt_timer_cancel(cnt_wheel *w, cnt_timer *t)
{
    if (t->pprev == NULL)
        return;
    unlink_timer(w, t);
    w->armed--;
}

/* Returns the earliest tick any slot's timer may be due (UINT64_MAX when
 * the slots are empty). Slots at or before now's digit of a level are
 * always empty (place puts a timer only above it, and stepping empties
 * those it passes), so a level's lowest bit is its earliest slot. */
static uint64_t slots_lower_bound(const cnt_wheel *w)
{
    uint64_t best = UINT64_MAX;

    for (unsigned level = 0; level < CNT_WHEEL_LEVELS; level++) {
        if (w->nonempty[level] == 0)
            continue;
        unsigned shift = level * CNT_WHEEL_BITS;
        uint64_t block = (w->now_ms >> shift) &
                         ~(uint64_t)(CNT_WHEEL_SLOTS_PER_LEVEL - 1);
        uint64_t tick = (block | (uint64_t)__builtin_ctzll(w->nonempty[level]))
                        << shift;
        if (tick < best)
            best = tick;
    }
    return best;
}

/* Moves the whole list *from to the empty list *to, in constant time. */
static void list_take(cnt_timer **to, cnt_timer **from)
{
    *to = *from;
    *from = NULL;
    if (*to != NULL)
        (*to)->pprev = to;
}

/* Moves w's clock to tick to (> now, <= every timer's tick in the slots;
 * nothing firing or moving): each slot the clock passes at each level is
 * emptied, a level-0 slot (all due at to) onto the firing list, a higher
 * one onto the level's moving list, which move_some files again. Only the
 * slot of to's digit can hold timers (the others passed start before the
 * earliest timer), so each level gives at most one list, taken whole. */
static void step_to(cnt_wheel *w, uint64_t to)
{
    uint64_t from = w->now_ms;

    w->now_ms = to;
    for (unsigned level = 0; level < CNT_WHEEL_LEVELS; level++) {
        unsigned shift = level * CNT_WHEEL_BITS;
        uint64_t old_l = from >> shift, new_l = to >> shift;
        if (old_l == new_l)
            break;              /* higher levels' digits did not move */
        uint64_t passed;
        if (new_l - old_l >= CNT_WHEEL_SLOTS_PER_LEVEL) {
            passed = UINT64_MAX;
        } else {
            unsigned count = (unsigned)(new_l - old_l);
            unsigned start = (unsigned)(old_l + 1) &
                             (CNT_WHEEL_SLOTS_PER_LEVEL - 1);
            uint64_t run = (UINT64_C(1) << count) - 1;
            passed = start == 0 ? run : (run << start) | (run >> (64 - start));
        }
        passed &= w->nonempty[level];
        w->nonempty[level] &= ~passed;
        while (passed != 0) {
            unsigned slot = (unsigned)__builtin_ctzll(passed);
            passed &= passed - 1;
            cnt_timer **head = &w->slots[level * CNT_WHEEL_SLOTS_PER_LEVEL +
                                         slot];
            list_take(level == 0 ? &w->firing : &w->moving[level], head);
        }
    }
}

/* Files at most budget timers of the moving lists again: the due ones
 * onto the firing list, the others into a lower level's slot. Returns how
 * many it moved. */
static size_t move_some(cnt_wheel *w, size_t budget)
{
    size_t moved = 0;

    for (unsigned level = 1; level < CNT_WHEEL_LEVELS; level++) {
        while (w->moving[level] != NULL && moved < budget) {
            cnt_timer *t = w->moving[level];
            unlink_timer(w, t);
            moved++;
            if (t->expires_ms <= w->now_ms)
                list_push(&w->firing, t);
            else
                place(w, t);
        }
    }
    return moved;
}

/* Whether some timer of a passed slot waits to be filed again. */
static bool moving_any(const cnt_wheel *w)
{
    for (unsigned level = 1; level < CNT_WHEEL_LEVELS; level++)
        if (w->moving[level] != NULL)
            return true;
    return false;
}

/* Fires the firing list until it is empty (callbacks may cancel entries
 * of it, or arm timers elsewhere). */
static size_t fire_some(cnt_wheel *w, cnt_timer_fire_fn *fire, void *ctx,
                        size_t budget)
{
    size_t fired = 0;

    while (w->firing != NULL && fired < budget) {
        cnt_timer *t = w->firing;
        unlink_timer(w, t);
        w->armed--;
        fired++;
        fire(t, ctx);
    }
    return fired;
}

/* Moves w towards now_ns, firing what is due in deadline order, at most
 * max timers; the rest stay due for the next call. */
size_t cnt_wheel_advance_max(cnt_wheel *w, uint64_t now_ns,
                             cnt_timer_fire_fn *fire, void *ctx, size_t max)
{
    uint64_t target = now_ns / NS_PER_MS;
    size_t fired = 0, moved = 0;

    /* Those armed late are due at the tick already reached, before any
     * timer in the slots (all due later). */
    while (w->late != NULL) {
        cnt_timer *t = w->late;
        unlink_timer(w, t);
        list_push(&w->firing, t);
    }
    fired += fire_some(w, fire, ctx, max - fired);

    /* Step from one possibly non-empty tick to the next, so timers fire in
     * tick order however far the clock jumped; callbacks arming within
     * the range are seen by the next bound. The timers of the passed
     * slots are filed again before the next step, at most max of them per
     * call. A call that runs out of either budget leaves the rest of the
     * tick in the firing and moving lists, which the next call empties
     * first. */
    for (;;) {
        if (fired == max)
            break;
        if (moving_any(w)) {
            if (moved == max)
                break;
            moved += move_some(w, max - moved);
        } else if (w->now_ms < target) {
            uint64_t bound = slots_lower_bound(w);
            step_to(w, bound < target ? bound : target);
        } else if (w->firing == NULL) {
            break;
        }
        fired += fire_some(w, fire, ctx, max - fired);
    }
    return fired;
}

/* Moves w to now_ns, firing everything that is due. */
size_t cnt_wheel_advance(cnt_wheel *w, uint64_t now_ns,
                         cnt_timer_fire_fn *fire, void *ctx)
{
    return cnt_wheel_advance_max(w, now_ns, fire, ctx, SIZE_MAX);
}

/* Returns a lower bound (ns) of the next deadline of w. */
uint64_t cnt_wheel_next_deadline(const cnt_wheel *w)
{
    if (w->late != NULL || w->firing != NULL || moving_any(w))
        return w->now_ms * NS_PER_MS;
    uint64_t tick = slots_lower_bound(w);
    if (tick == UINT64_MAX)
        return UINT64_MAX;
    if (tick >= UINT64_MAX / NS_PER_MS)
        return UINT64_MAX - 1;  /* the last ms the clock can name */
    return tick * NS_PER_MS;
}

/* Visits one list; false when the walk is to stop (visit said so, or max
 * was reached with timers left: *capped then). */
static bool walk_list(const cnt_timer *t, cnt_timer_visit_fn *visit,
                      void *ctx, size_t *budget, bool *capped)
{
    for (; t != NULL; t = t->next) {
        if (*budget == 0) {
            *capped = true;
            return false;
        }
        (*budget)--;
        if (!visit(t, ctx))
            return false;
    }
    return true;
}

/* Visits the armed timers nearest first by groups; see wheel.h. */
bool cnt_wheel_walk(const cnt_wheel *w, cnt_timer_visit_fn *visit,
                    cnt_wheel_enough_fn *enough, void *ctx, size_t max)
{
    size_t budget = max;
    bool capped = false;

    /* Due already, or in a passed slot: no order among them, and they may
     * be later than some slot timers of lower levels, so all of them are
     * visited before the first question. */
    if (!walk_list(w->late, visit, ctx, &budget, &capped) ||
        !walk_list(w->firing, visit, ctx, &budget, &capped))
        return !capped;
    for (unsigned level = 1; level < CNT_WHEEL_LEVELS; level++)
        if (!walk_list(w->moving[level], visit, ctx, &budget, &capped))
            return !capped;
    /* A level's slots lie after now's digit and in its block, so they come
     * in tick order, and all before the next level's. */
    for (unsigned level = 0; level < CNT_WHEEL_LEVELS; level++) {
        unsigned shift = level * CNT_WHEEL_BITS;
        uint64_t block = (w->now_ms >> shift) &
                         ~(uint64_t)(CNT_WHEEL_SLOTS_PER_LEVEL - 1);
        uint64_t bits = w->nonempty[level];
        while (bits != 0) {
            unsigned slot = (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (enough != NULL && enough((block | slot) << shift, ctx))
                return true;
            if (!walk_list(w->slots[level * CNT_WHEEL_SLOTS_PER_LEVEL + slot],
                           visit, ctx, &budget, &capped))
                return !capped;
        }
    }
    return true;
}
