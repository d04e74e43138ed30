/* limits_ttl.c: the TTL counters of limits.h: a quota under a name that
 * expires at a time, inserted, read, changed and purged under the name's
 * stripe lock. A record past its expiry is gone for every request from
 * that moment (lazy expiry): the first request to find it unlinks it, and
 * the GC's sweep frees those nobody asks for.
 * Locking rule (see map.h): do_* functions expect the stripe lock held. */
#include "config.h"

#include "engine/core/limits_int.h"


/* Whether a TTL record is live at now. */
static bool ttl_live(const cnt_limit_rec *r, uint64_t now)
{
    return now < r->b;
}

/* Finds the live TTL record of name in bucket b. An expired one is
 * unlinked onto *dead (free it after the lock) and counted expired: it is
 * gone for every request from its expiry on. */
static cnt_limit_rec *do_ttl_live(cnt_limits *l, size_t b,
                                  const uint8_t *name, uint16_t len,
                                  uint64_t now, cnt_map_node **dead)
{
    cnt_limit_rec *r = cnt_limits_do_find(l, b, CNT_LIMITS_TTL, name, len);

    if (r == NULL || ttl_live(r, now))
        return r;
    *dead = cnt_map_do_unlink(&l->map, b, &r->node);
    cnt_limits_rec_forget(l, r, true);
    return NULL;
}

/* Fills *out from a live TTL record at now: time left rounded up, so a
 * live record never shows 0. */
static void ttl_fill(const cnt_limit_rec *r, uint64_t now,
                     cnt_ttl_answer *out)
{
    out->quota = r->a;
    out->ttl_left = cnt_limits_ceil_div(r->b - now, cnt_unit_ns(r->unit));
    out->unit = r->unit;
}

/* Counts a TTL operation's outcome in the figures; returns st. */
static cnt_status ttl_count(cnt_limits *l, cnt_status st)
{
    cnt_limits_figures *f = &l->fig[CNT_LIMITS_TTL];

    cnt_limits_fig_add(&f->checks, 1);
    if (st == CNT_STATUS_OK)
        cnt_limits_fig_add(&f->allowed, 1);
    else if (st == CNT_STATUS_EXISTS || st == CNT_STATUS_BELOW_ZERO ||
             st == CNT_STATUS_NOT_FOUND)
        cnt_limits_fig_add(&f->limited, 1);
    return st;
}

/* Frees a node unlinked under a lock that is now dropped. */
static void dead_free(cnt_map_node *dead)
{
    if (dead != NULL)
        cnt_map_node_free(dead);
}

/* Creates a TTL counter; see limits.h. An expired record of the name is
 * reused in place (and counted expired). */
cnt_status cnt_ttl_insert(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint64_t quota, uint64_t ttl, uint8_t unit)
{
    uint64_t ttl_ns;

    if (len == 0 || ttl == 0 || !cnt_unit_to_ns(ttl, unit, &ttl_ns))
        return ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_status st = CNT_STATUS_OK;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = cnt_limits_do_find(l, b, CNT_LIMITS_TTL, name, len);
    if (r != NULL && ttl_live(r, now)) {
        st = CNT_STATUS_EXISTS;
    } else {
        if (r != NULL)
            cnt_limits_fig_add(&l->fig[CNT_LIMITS_TTL].expired, 1);
        else
            r = cnt_limits_do_create(l, b, CNT_LIMITS_TTL, name, len);
        if (r == NULL) {
            st = CNT_STATUS_OUT_OF_MEMORY;
        } else {
            r->a = quota;
            r->b = cnt_limits_sat_add(now, ttl_ns);
            r->unit = unit;
        }
    }
    if (r != NULL)
        cnt_limits_do_busy(l, b, r, now);
    cnt_map_unlock(lock);
    return ttl_count(l, st);
}

/* Reads a live TTL counter; see limits.h. */
cnt_status cnt_ttl_query(cnt_limits *l, const uint8_t *name, uint16_t len,
                         cnt_ttl_answer *out)
{
    if (len == 0)
        return ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL) {
        ttl_fill(r, now, out);
        cnt_limits_do_busy(l, b, r, now);
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    dead_free(dead);
    return ttl_count(l, st);
}

/* Applies a quota change to r; OK, INVALID (overflow) or BELOW_ZERO. */
static cnt_status do_ttl_quota(cnt_limit_rec *r, uint8_t change,
                               uint64_t value)
{
    switch (change) {
    case CNT_TTL_PATCH:
        r->a = value;
        return CNT_STATUS_OK;
    case CNT_TTL_INCREASE:
        if (value > UINT64_MAX - r->a)
            return CNT_STATUS_INVALID;
        r->a += value;
        return CNT_STATUS_OK;
    default:
        if (value > r->a)
            return CNT_STATUS_BELOW_ZERO;
        r->a -= value;
        return CNT_STATUS_OK;
    }
}

/* Applies a change of the time left (value_ns) to a record live at now;
 * OK or BELOW_ZERO (the time left would be 0 or less). */
static cnt_status do_ttl_time(cnt_limit_rec *r, uint8_t change,
                              uint64_t value_ns, uint64_t now)
{
    switch (change) {
    case CNT_TTL_PATCH:
        r->b = cnt_limits_sat_add(now, value_ns);
        return CNT_STATUS_OK;
    case CNT_TTL_INCREASE:
        r->b = cnt_limits_sat_add(r->b, value_ns);
        return CNT_STATUS_OK;
    default:
        if (value_ns >= r->b - now)
            return CNT_STATUS_BELOW_ZERO;
        r->b -= value_ns;
        return CNT_STATUS_OK;
    }
}

/* Changes a live TTL counter; see limits.h. Arguments that do not depend
 * on the record are checked before it is looked up. */
cnt_status cnt_ttl_update(cnt_limits *l, const uint8_t *name, uint16_t len,
                          uint8_t attribute, uint8_t change, uint8_t unit,
                          uint64_t value, cnt_ttl_answer *out)
{
    uint64_t value_ns = 0;
    bool own = unit == CNT_TTL_UNIT_RECORD;

    if (len == 0 || attribute > CNT_TTL_ATTR_TTL ||
        change > CNT_TTL_DECREASE || (unit > CNT_UNIT_MAX && !own))
        return ttl_count(l, CNT_STATUS_INVALID);
    if (attribute == CNT_TTL_ATTR_TTL &&
        ((!own && !cnt_unit_to_ns(value, unit, &value_ns)) ||
         (change == CNT_TTL_PATCH && value == 0)))
        return ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL && attribute == CNT_TTL_ATTR_TTL && own &&
        !cnt_unit_to_ns(value, r->unit, &value_ns)) {
        st = CNT_STATUS_INVALID;
    } else if (r != NULL) {
        st = attribute == CNT_TTL_ATTR_QUOTA
                 ? do_ttl_quota(r, change, value)
                 : do_ttl_time(r, change, value_ns, now);
        if (st == CNT_STATUS_OK)
            ttl_fill(r, now, out);
        cnt_limits_do_busy(l, b, r, now);
    }
    cnt_map_unlock(lock);
    dead_free(dead);
    return ttl_count(l, st);
}

/* Removes a live TTL counter; see limits.h. */
cnt_status cnt_ttl_purge(cnt_limits *l, const uint8_t *name, uint16_t len)
{
    if (len == 0)
        return ttl_count(l, CNT_STATUS_INVALID);
    size_t b = cnt_map_bucket_of(&l->map, name, len);
    cnt_map_node *dead = NULL;
    cnt_status st = CNT_STATUS_NOT_FOUND;

    pthread_mutex_t *lock = cnt_map_lock(&l->map, b);
    uint64_t now = cnt_clock_mono_ns(l->clock);
    cnt_limit_rec *r = do_ttl_live(l, b, name, len, now, &dead);
    if (r != NULL) {
        dead = cnt_map_do_unlink(&l->map, b, &r->node);
        cnt_limits_rec_forget(l, r, false);
        st = CNT_STATUS_OK;
    }
    cnt_map_unlock(lock);
    dead_free(dead);
    return ttl_count(l, st);
}

/* A TTL record is dead once its expiry has come. */
static bool ttl_dead(const cnt_limit_rec *r, uint64_t now)
{
    return !ttl_live(r, now);
}

const cnt_limits_kind cnt_limits_ttl_kind = {
    .dead = ttl_dead,
};
