/* test_map.c: the generic striped map with a record kind of the test's own
 * (bigger than a semaphore counter, as a later kind would be): buckets and
 * lookups, collisions and unlinking anywhere in a chain, the Dump cursor
 * that pauses inside a chain and is moved on by unlinks, the incremental
 * sweep asking the kind's test, and the memory accounting of the nodes
 * (sizes per kind, memory_limit, failed allocations). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/map.h"
#include "tests/engine_fake.h"

#define T0_MS UINT64_C(1700000000000)
#define NEVER UINT64_MAX

/* The test's kind: a record that may go once it has expired, unless
 * something still pins it. The pointer stands for what a later kind (a
 * waiter queue) would add: this kind's nodes pay for it, no other's. */
typedef struct rec {
    cnt_map_node node;
    void *extra;
    uint64_t expires_ms;
    uint32_t pins;
    uint16_t name_len;
    uint8_t name[];
} rec;
CNT_MAP_NODE_CHECK(rec);

#define REC_NAME_OFFSET offsetof(rec, name)

/* A map of recs with nbuckets buckets. */
static void map_init(cnt_map *m, size_t nbuckets, uint64_t memory_limit)
{
    cnt_map_config cfg = { .buckets = nbuckets,
                           .memory_limit = memory_limit,
                           .name_offset = REC_NAME_OFFSET };

    assert_int_equal(cnt_map_init(m, &cfg), 0);
}

/* Length of a C string as a name length. */
static uint16_t len_of(const char *name)
{
    return (uint16_t)strlen(name);
}

/* Inserts name (must be absent) with the given expiry; NULL if refused. */
static rec *insert(cnt_map *m, const char *name, uint64_t expires_ms)
{
    const uint8_t *p = (const uint8_t *)name;
    size_t b = cnt_map_bucket_of(m, p, len_of(name));
    pthread_mutex_t *lock = cnt_map_lock(m, b);

    assert_null(cnt_map_do_find(m, b, p, len_of(name)));
    rec *r = (rec *)cnt_map_do_insert(m, b, p, len_of(name));
    if (r != NULL) {
        r->extra = NULL;
        r->expires_ms = expires_ms;
        r->pins = 0;
    }
    cnt_map_unlock(lock);
    return r;
}

/* Finds name; NULL when absent. */
static rec *find(cnt_map *m, const char *name)
{
    const uint8_t *p = (const uint8_t *)name;
    size_t b = cnt_map_bucket_of(m, p, len_of(name));
    pthread_mutex_t *lock = cnt_map_lock(m, b);
    rec *r = (rec *)cnt_map_do_find(m, b, p, len_of(name));

    cnt_map_unlock(lock);
    return r;
}

/* Unlinks and frees name; false when it was absent. */
static bool erase(cnt_map *m, const char *name)
{
    const uint8_t *p = (const uint8_t *)name;
    size_t b = cnt_map_bucket_of(m, p, len_of(name));
    pthread_mutex_t *lock = cnt_map_lock(m, b);
    cnt_map_node *n = cnt_map_do_find(m, b, p, len_of(name));

    if (n != NULL)
        assert_ptr_equal(cnt_map_do_unlink(m, b, n), n);
    cnt_map_unlock(lock);
    if (n != NULL)
        cnt_map_node_free(n);
    return n != NULL;
}

/* The kind's sweep test, with checks that the sweep keeps its promises:
 * called under the node's stripe lock, with the sweep's "now". */
typedef struct judge {
    cnt_map *map;
    uint64_t now_ms;            /* what the sweep must pass */
    unsigned asked;
} judge;

static bool rec_may_go(void *ctx, const cnt_map_node *node,
                       const cnt_clock_now *now)
{
    judge *j = ctx;
    const rec *r = (const rec *)node;
    size_t b = cnt_map_bucket_of(j->map, r->name, r->name_len);

    /* The stripe is locked (by this thread, as the sweep runs here). */
    assert_int_equal(
        pthread_mutex_trylock(&j->map->stripes[b % CNT_MAP_STRIPES].mutex),
        EBUSY);
    assert_int_equal(now->wall_ms, j->now_ms);
    j->asked++;
    return r->pins == 0 && r->expires_ms <= now->wall_ms;
}

/* Sweeps [first, first + n) at wall time now_ms; returns the removed. */
static size_t sweep(cnt_map *m, judge *j, size_t first, size_t n,
                    uint64_t now_ms)
{
    cnt_map_may_go may_go = { rec_may_go, j };
    cnt_clock_now now = { now_ms, 0 };

    j->map = m;
    j->now_ms = now_ms;
    return cnt_map_sweep(m, first, n, &may_go, &now);
}

static cnt_map_stats stats_of(const cnt_map *m)
{
    cnt_map_stats s;

    cnt_map_get_stats(m, &s);
    return s;
}

/* Configurations out of range are refused with EINVAL, and nothing is
 * left allocated. */
static void test_map_config_errors(void **state)
{
    static const cnt_map_config bad[] = {
        { .buckets = 0, .name_offset = 16 },
        { .buckets = (size_t)UINT32_MAX + 1, .name_offset = 16 },
        { .buckets = 8, .name_offset = sizeof(cnt_map_node) },  /* no len */
        { .buckets = 8, .name_offset = 17 },                    /* odd */
        { .buckets = 8, .name_offset = 1u << 20 },              /* absurd */
    };
    long live = cnt_fake_alloc_live();
    cnt_map m;

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cnt_map_init(&m, &bad[i]), EINVAL);
        cnt_map_destroy(&m);                /* harmless after a failure */
    }
    assert_int_equal(cnt_map_init(&m, NULL), EINVAL);
    assert_int_equal(cnt_fake_alloc_live(), live);
    map_init(&m, 1, 0);
    assert_int_equal(cnt_map_buckets(&m), 1);
    cnt_map_destroy(&m);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* Each allocation of cnt_map_init failing in turn: ENOMEM, nothing left
 * allocated; then it succeeds. */
static void test_map_init_alloc_failure(void **state)
{
    cnt_map_config cfg = { .buckets = 16, .name_offset = REC_NAME_OFFSET };
    unsigned long k;
    cnt_map m;

    (void)state;
    for (k = 1;; k++) {
        long live = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(k, 0);
        int err = cnt_map_init(&m, &cfg);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_int_equal(err, 0);
            cnt_map_destroy(&m);
            break;
        }
        assert_int_equal(err, ENOMEM);
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
    assert_int_equal(k, 3);     /* the bucket array and the stripes */
}

/* Names map to a bucket in range, the same one every time; lookups find
 * exactly the inserted names, comparing length and bytes; the accessors
 * read the name back; prefetching changes nothing. */
static void test_map_insert_find(void **state)
{
    static const char *const names[] = { "a", "ab", "abc", "b", "counter",
                                         "0123456789abcdef" };
    cnt_map m;

    (void)state;
    map_init(&m, 64, 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const uint8_t *p = (const uint8_t *)names[i];
        size_t b = cnt_map_bucket_of(&m, p, len_of(names[i]));

        assert_true(b < 64);
        assert_int_equal(cnt_map_bucket_of(&m, p, len_of(names[i])), b);
        cnt_map_prefetch(&m, b, false);
        cnt_map_prefetch(&m, b, true);
        rec *r = insert(&m, names[i], (uint64_t)i);
        assert_non_null(r);
        cnt_map_prefetch(&m, b, true);
        assert_int_equal(cnt_map_node_len(&m, &r->node), len_of(names[i]));
        assert_memory_equal(cnt_map_node_name(&m, &r->node), names[i],
                            len_of(names[i]));
        assert_int_equal(r->name_len, len_of(names[i]));
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        rec *r = find(&m, names[i]);
        assert_non_null(r);
        assert_int_equal(r->expires_ms, i);
    }
    assert_null(find(&m, "abcd"));
    assert_null(find(&m, "counte"));
    /* A name with a NUL inside is its own name. */
    size_t b = cnt_map_bucket_of(&m, (const uint8_t *)"a\0", 2);
    pthread_mutex_t *lock = cnt_map_lock(&m, b);
    assert_null(cnt_map_do_find(&m, b, (const uint8_t *)"a\0", 2));
    cnt_map_unlock(lock);
    assert_int_equal(stats_of(&m).objects, 6);
    cnt_map_destroy(&m);
}

/* One bucket: every name in one chain. Lookups keep them apart, conflicts
 * counts the extra ones, and unlinking works at the head, in the middle
 * and at the tail; a node of another bucket is not unlinked. */
static void test_map_collisions_unlink(void **state)
{
    char name[16];
    cnt_map m, other;

    (void)state;
    map_init(&m, 1, 0);
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_non_null(insert(&m, name, (uint64_t)i));
    }
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_int_equal(find(&m, name)->expires_ms, (uint64_t)i);
    }
    cnt_map_stats s = stats_of(&m);
    assert_int_equal(s.objects, 50);
    assert_int_equal(s.total_objects, 50);
    assert_int_equal(s.conflicts, 49);

    assert_true(erase(&m, "k49"));          /* head: newest first */
    assert_true(erase(&m, "k25"));          /* middle */
    assert_true(erase(&m, "k0"));           /* tail */
    assert_false(erase(&m, "k25"));
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "k%d", i);
        if (i == 49 || i == 25 || i == 0)
            assert_null(find(&m, name));
        else
            assert_non_null(find(&m, name));
    }
    s = stats_of(&m);
    assert_int_equal(s.objects, 47);
    assert_int_equal(s.total_objects, 50);
    assert_int_equal(s.conflicts, 46);

    /* Emptied, the bucket counts as unused again: two new nodes in it are
     * one conflict, not none. */
    for (int i = 1; i < 49; i++) {
        snprintf(name, sizeof name, "k%d", i);
        assert_true(erase(&m, name) == (i != 25));
    }
    s = stats_of(&m);
    assert_int_equal(s.objects, 0);
    assert_int_equal(s.conflicts, 0);
    assert_non_null(insert(&m, "x", 0));
    assert_non_null(insert(&m, "y", 0));
    assert_int_equal(stats_of(&m).conflicts, 1);

    /* A node that is not in the bucket is left alone. */
    map_init(&other, 1, 0);
    rec *stranger = insert(&other, "k1", 0);
    pthread_mutex_t *lock = cnt_map_lock(&m, 0);
    assert_null(cnt_map_do_unlink(&m, 0, &stranger->node));
    cnt_map_unlock(lock);
    assert_int_equal(stats_of(&m).objects, 2);
    cnt_map_destroy(&other);
    cnt_map_destroy(&m);
}

/* used_memory is the bucket array and stripes plus exactly what each node
 * asks malloc for: name_offset + name length, per kind. memory_limit
 * refuses a node that would pass it and changes nothing; bytes of removed
 * nodes are free again; a failed malloc changes nothing either. */
static void test_map_memory_accounting(void **state)
{
    static const uint16_t lens[] = { 1, 16, 300 };
    uint8_t name[300];
    cnt_map m, small;

    (void)state;
    memset(name, 'n', sizeof name);
    map_init(&m, 64, 0);
    cnt_map_stats s0 = stats_of(&m);
    assert_int_equal(s0.used_memory, 64 * sizeof(void *) +
                     CNT_MAP_STRIPES * sizeof(cnt_map_stripe));
    assert_int_equal(sizeof(cnt_map_stripe), 64);
    uint64_t nodes = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t b = cnt_map_bucket_of(&m, name, lens[i]);
        pthread_mutex_t *lock = cnt_map_lock(&m, b);
        assert_non_null(cnt_map_do_insert(&m, b, name, lens[i]));
        cnt_map_unlock(lock);
        assert_int_equal(cnt_map_node_size(&m, lens[i]),
                         REC_NAME_OFFSET + lens[i]);
        assert_int_equal(cnt_fake_malloc_last_size(),
                         cnt_map_node_size(&m, lens[i]));
        nodes += cnt_map_node_size(&m, lens[i]);
        assert_int_equal(stats_of(&m).used_memory, s0.used_memory + nodes);
    }
    /* Another kind with a smaller node pays less per node. */
    cnt_map_config semaphore_like = { .buckets = 64, .name_offset = 22 };
    assert_int_equal(cnt_map_init(&small, &semaphore_like), 0);
    assert_int_equal(cnt_map_node_size(&m, 16) - cnt_map_node_size(&small, 16),
                     REC_NAME_OFFSET - 22);
    cnt_map_destroy(&small);
    cnt_map_destroy(&m);

    /* Room for exactly two 3-byte names. */
    map_init(&m, 16, 2 * (REC_NAME_OFFSET + 3));
    assert_int_equal(cnt_map_memory_limit(&m), 2 * (REC_NAME_OFFSET + 3));
    assert_non_null(insert(&m, "aaa", 0));
    assert_non_null(insert(&m, "bbb", 0));
    cnt_map_stats before = stats_of(&m);
    assert_null(insert(&m, "ccc", 0));
    cnt_map_stats after = stats_of(&m);
    assert_memory_equal(&before, &after, sizeof before);
    assert_null(find(&m, "ccc"));
    assert_true(erase(&m, "bbb"));
    assert_int_equal(stats_of(&m).used_memory,
                     before.used_memory - (REC_NAME_OFFSET + 3));
    assert_non_null(insert(&m, "ccc", 0));

    /* A failed malloc: refused, nothing changed, nothing charged. */
    assert_true(erase(&m, "ccc"));
    before = stats_of(&m);
    cnt_fake_alloc_fail_at(1, 0);
    assert_null(insert(&m, "ddd", 0));
    assert_true(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    after = stats_of(&m);
    assert_memory_equal(&before, &after, sizeof before);
    assert_null(find(&m, "ddd"));
    assert_non_null(insert(&m, "ddd", 0));
    cnt_map_destroy(&m);
}

/* The sweep removes exactly what the kind's test lets go, asks about every
 * node of the buckets it covers and no others, under the stripe lock, with
 * the caller's "now"; ranges are clamped to the map. */
static void test_map_sweep_kind_test(void **state)
{
    char name[16];
    judge j = { 0 };
    cnt_map m;
    unsigned expected = 0;

    (void)state;
    map_init(&m, 1000, 0);
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "s%d", i);
        rec *r = insert(&m, name, i % 3 == 0 ? NEVER : T0_MS + (uint64_t)i);
        if (i % 5 == 0)
            r->pins = 1;
        if (i % 3 != 0 && i % 5 != 0 && T0_MS + (uint64_t)i <= T0_MS + 1500)
            expected++;
    }
    /* Nothing covered, nothing asked. */
    assert_int_equal(sweep(&m, &j, 1000, 10, T0_MS + 1500), 0);
    assert_int_equal(sweep(&m, &j, 0, 0, T0_MS + 1500), 0);
    assert_int_equal(j.asked, 0);
    /* In slices, the last one running past the end. */
    size_t removed = 0;
    for (size_t b = 0; b < 1000; b += 256)
        removed += sweep(&m, &j, b, 256, T0_MS + 1500);
    assert_int_equal(removed, expected);
    assert_int_equal(j.asked, 3000);
    assert_int_equal(stats_of(&m).objects, 3000 - expected);
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "s%d", i);
        bool gone = i % 3 != 0 && i % 5 != 0 && i <= 1500;
        assert_true((find(&m, name) == NULL) == gone);
    }
    /* Unpinned, later: everything not NEVER goes. */
    for (int i = 0; i < 3000; i += 5) {
        snprintf(name, sizeof name, "s%d", i);
        find(&m, name)->pins = 0;
    }
    sweep(&m, &j, 0, 1000, T0_MS + 5000);
    assert_int_equal(stats_of(&m).objects, 1000);
    cnt_map_destroy(&m);
}

/* Dump records gathered in one place. */
typedef struct visit_log {
    char names[400][16];
    unsigned n;
    unsigned stop_every;        /* 0: never ask to stop */
} visit_log;

static bool visit(void *ctx, const cnt_map_node *node)
{
    visit_log *log = ctx;
    const rec *r = (const rec *)node;

    assert_true(log->n < 400 && r->name_len < 16);
    memcpy(log->names[log->n], r->name, r->name_len);
    log->names[log->n][r->name_len] = '\0';
    log->n++;
    return log->stop_every == 0 || log->n % log->stop_every != 0;
}

/* How many times name was visited. */
static unsigned seen(const visit_log *log, const char *name)
{
    unsigned k = 0;

    for (unsigned i = 0; i < log->n; i++)
        k += strcmp(log->names[i], name) == 0;
    return k;
}

/* A Dump paused inside a chain: unlinking the node it stopped at (by
 * cnt_map_do_unlink or by a sweep) moves it to the successor; nodes
 * inserted at the head after the pause are not visited; every node that
 * lives through the Dump is visited once; a long chain is visited whole
 * across several lock holds. */
static void test_map_cursor_pause_fixup(void **state)
{
    visit_log *log = calloc(1, sizeof *log);
    cnt_map_cursor cur = { 0 };
    char name[16];
    judge j = { 0 };
    cnt_map m;

    (void)state;
    assert_non_null(log);
    map_init(&m, 1, 0);
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "r%02d", i);
        insert(&m, name, i < 10 ? T0_MS : NEVER);
    }
    /* The chain is newest first: r19 .. r00. Stop after r15. */
    log->stop_every = 5;
    assert_false(cnt_map_dump(&m, &cur, visit, log));
    assert_true(cur.paused);
    assert_ptr_equal(cur.at, &find(&m, "r14")->node);
    assert_true(erase(&m, "r14"));              /* the one it points at */
    assert_ptr_equal(cur.at, &find(&m, "r13")->node);
    assert_true(erase(&m, "r11"));              /* further on */
    insert(&m, "r20", NEVER);                   /* behind it */
    log->stop_every = 8;            /* the 8th visit in all: r10 */
    assert_false(cnt_map_dump(&m, &cur, visit, log));  /* r13 r12 r10 */
    assert_ptr_equal(cur.at, &find(&m, "r09")->node);
    /* A sweep removes r09 .. r00, the cursor's node among them. */
    assert_int_equal(sweep(&m, &j, 0, 1, T0_MS), 10);
    assert_null(cur.at);
    log->stop_every = 0;
    assert_true(cnt_map_dump(&m, &cur, visit, log));
    assert_false(cur.paused);
    assert_int_equal(log->n, 8);                /* r19..r15, r13, r12, r10 */
    assert_int_equal(seen(log, "r14"), 0);
    assert_int_equal(seen(log, "r11"), 0);
    assert_int_equal(seen(log, "r20"), 0);
    for (unsigned i = 0; i < log->n; i++)
        assert_int_equal(seen(log, log->names[i]), 1);

    /* 300 nodes in the chain, a Dump that never says stop: it visits all
     * of them in one call, over several lock holds. */
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "L%03d", i);
        insert(&m, name, NEVER);
    }
    memset(log, 0, sizeof *log);
    cnt_map_cursor whole = { 0 };
    assert_true(cnt_map_dump(&m, &whole, visit, log));
    assert_int_equal(log->n, 309);
    assert_false(whole.paused);
    /* A finished cursor stays finished. */
    assert_true(cnt_map_dump(&m, &whole, visit, log));
    assert_int_equal(log->n, 309);
    free(log);
    cnt_map_destroy(&m);
}

/* Finds a name (prefix + number) that lands in bucket b. */
static void name_in_bucket(cnt_map *m, size_t b, const char *prefix,
                           char *out, size_t size)
{
    for (unsigned i = 0;; i++) {
        snprintf(out, size, "%s%u", prefix, i);
        if (cnt_map_bucket_of(m, (const uint8_t *)out, len_of(out)) == b &&
            find(m, out) == NULL)
            return;
    }
}

/* Cursors paused in two buckets of one stripe share the stripe's list:
 * cancelling one from the middle or the end keeps the others working,
 * and an unlink moves only the cursor at that node. */
static void test_map_cursors_share_stripe(void **state)
{
    size_t far = CNT_MAP_STRIPES;   /* bucket sharing stripe 0 */
    visit_log *la = calloc(1, sizeof *la), *lb = calloc(1, sizeof *lb),
              *lc = calloc(1, sizeof *lc);
    cnt_map_cursor a = { 0 }, b = { 0 }, c = { 0 };
    char near_names[3][16], far_names[3][16];
    cnt_map m;

    (void)state;
    assert_true(la && lb && lc);
    map_init(&m, CNT_MAP_STRIPES + 1, 0);
    for (int i = 0; i < 3; i++) {
        name_in_bucket(&m, 0, "n", near_names[i], sizeof near_names[i]);
        insert(&m, near_names[i], NEVER);
        name_in_bucket(&m, far, "f", far_names[i], sizeof far_names[i]);
        insert(&m, far_names[i], NEVER);
    }
    la->stop_every = 1;             /* paused in bucket 0 */
    assert_false(cnt_map_dump(&m, &a, visit, la));
    lb->stop_every = 4;             /* bucket 0 whole, then one of far */
    assert_false(cnt_map_dump(&m, &b, visit, lb));
    assert_int_equal(b.bucket, far);
    lc->stop_every = 2;             /* paused in bucket 0 */
    assert_false(cnt_map_dump(&m, &c, visit, lc));
    assert_true(a.paused && b.paused && c.paused);

    cnt_map_dump_cancel(&m, &b);    /* the middle of the stripe's list */
    assert_false(b.paused);
    cnt_map_dump_cancel(&m, &b);    /* twice is harmless */
    cnt_map_cursor never = { 0 };
    cnt_map_dump_cancel(&m, &never);
    /* c stopped at the chain's last node: remove it, c reaches the end. */
    assert_ptr_equal(c.at, &find(&m, near_names[0])->node);
    assert_true(erase(&m, near_names[0]));
    assert_null(c.at);
    assert_ptr_equal(a.at, &find(&m, near_names[1])->node);

    la->stop_every = lc->stop_every = 0;
    assert_true(cnt_map_dump(&m, &c, visit, lc));
    assert_int_equal(lc->n, 2 + 3);
    cnt_map_dump_cancel(&m, &a);    /* the end of the list */
    assert_false(a.paused);
    for (int i = 0; i < 3; i++)
        assert_int_equal(seen(lc, far_names[i]), 1);
    free(la);
    free(lb);
    free(lc);
    cnt_map_destroy(&m);
}

/* Runs the map tests. */
/* Two maps on one budget (one with adaptive stripe locks): a node of
 * either counts for both, the limit refuses the next node of either,
 * unlinking and destroying give the bytes back, and each map's own
 * used_memory still shows only its nodes. */
static void test_map_shared_budget(void **state)
{
    (void)state;
    size_t one = REC_NAME_OFFSET + 2;
    cnt_map_budget budget;
    cnt_map a, b;

    cnt_map_budget_init(&budget, 3 * one);
    cnt_map_config cfg = { .buckets = 16, .name_offset = REC_NAME_OFFSET,
                           .budget = &budget };
    assert_int_equal(cnt_map_init(&a, &cfg), 0);
    cfg.adaptive = true;
    assert_int_equal(cnt_map_init(&b, &cfg), 0);
    assert_int_equal(cnt_map_memory_limit(&a), 3 * one);
    assert_non_null(insert(&a, "a1", 0));
    assert_non_null(insert(&b, "b1", 0));
    assert_non_null(insert(&b, "b2", 0));
    assert_int_equal(cnt_map_budget_used(&budget), 3 * one);
    assert_null(insert(&a, "a2", 0));
    assert_false(cnt_map_charge(&b, 1));
    cnt_map_stats sa, sb;
    cnt_map_get_stats(&a, &sa);
    cnt_map_get_stats(&b, &sb);
    assert_int_equal(sa.objects, 1);
    assert_int_equal(sb.objects, 2);
    assert_int_equal(sb.used_memory - sa.used_memory, one);
    /* Destroying b gives its two nodes back to the shared budget. */
    cnt_map_destroy(&b);
    assert_int_equal(cnt_map_budget_used(&budget), one);
    assert_non_null(insert(&a, "a2", 0));
    assert_true(cnt_map_charge(&a, one));
    assert_false(cnt_map_charge(&a, 1));
    cnt_map_uncharge(&a, one);
    cnt_map_destroy(&a);
    assert_int_equal(cnt_map_budget_used(&budget), 0);
}

/* cnt_map_lock_many takes each stripe of its buckets once, in ascending
 * order (buckets of one stripe count once), holds them all until
 * cnt_map_unlock_many, and leaves no lock behind. */
static void test_map_lock_many(void **state)
{
    (void)state;
    cnt_map m;
    cnt_map_config cfg = { .buckets = 3 * CNT_MAP_STRIPES,
                           .name_offset = REC_NAME_OFFSET };
    /* Out of order, two buckets of stripe 7, two of stripe 4095, and
     * stripe 0 named twice by one bucket. */
    const size_t b[] = { 4095, 7, CNT_MAP_STRIPES + 7, 0, 2 * CNT_MAP_STRIPES,
                         2 * CNT_MAP_STRIPES + 4095, 100, 0 };
    const size_t want[] = { 0, 7, 100, 4095 };
    cnt_map_lockset set;

    assert_int_equal(cnt_map_init(&m, &cfg), 0);
    cnt_map_lock_many(&m, b, sizeof b / sizeof b[0], &set);
    assert_int_equal(set.n, 4);
    for (size_t i = 0; i < set.n; i++) {
        assert_int_equal(set.stripe[i], want[i]);
        assert_int_equal(pthread_mutex_trylock(&m.stripes[want[i]].mutex),
                         EBUSY);
    }
    assert_int_equal(pthread_mutex_trylock(&m.stripes[1].mutex), 0);
    pthread_mutex_unlock(&m.stripes[1].mutex);
    cnt_map_unlock_many(&m, &set);
    for (size_t i = 0; i < set.n; i++) {
        assert_int_equal(pthread_mutex_trylock(&m.stripes[want[i]].mutex), 0);
        pthread_mutex_unlock(&m.stripes[want[i]].mutex);
    }
    /* One bucket: its stripe alone. */
    cnt_map_lock_many(&m, &b[5], 1, &set);
    assert_int_equal(set.n, 1);
    assert_int_equal(set.stripe[0], 4095);
    cnt_map_unlock_many(&m, &set);
    assert_int_equal(pthread_mutex_trylock(&m.stripes[4095].mutex), 0);
    pthread_mutex_unlock(&m.stripes[4095].mutex);
    cnt_map_destroy(&m);
}

/* Node names may start as far as 4096 bytes into a record, not further. */
static void test_map_name_offset_bound(void **state)
{
    cnt_map_config cfg = { .buckets = 8, .name_offset = 4096 };
    cnt_map m;

    (void)state;
    assert_int_equal(cnt_map_init(&m, &cfg), 0);
    cnt_map_destroy(&m);
    cfg.name_offset = 4098;
    assert_int_equal(cnt_map_init(&m, &cfg), EINVAL);
}

/* Destroying a map frees the nodes still in it, and a node unlinked and
 * freed by the caller is gone too. */
static void test_map_destroy_frees_nodes(void **state)
{
    long live = cnt_fake_alloc_live();
    cnt_map m;
    char name[8];

    (void)state;
    map_init(&m, 4, 0);
    long empty = cnt_fake_alloc_live();
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_non_null(insert(&m, name, NEVER));
    }
    assert_int_equal(cnt_fake_alloc_live(), empty + 20);
    rec *r = find(&m, "n3");
    assert_non_null(r);
    size_t b = cnt_map_bucket_of(&m, r->name, r->name_len);
    pthread_mutex_t *lock = cnt_map_lock(&m, b);
    cnt_map_node *n = cnt_map_do_unlink(&m, b, &r->node);
    cnt_map_unlock(lock);
    assert_ptr_equal(n, &r->node);
    cnt_map_node_free(n);
    assert_int_equal(cnt_fake_alloc_live(), empty + 19);
    cnt_map_destroy(&m);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* A sweep that removes nothing from a stripe leaves the time of that
 * stripe's last removal as it was; one that removes moves it on. */
static void test_map_swept_time_on_removal(void **state)
{
    cnt_map m;
    judge j;

    (void)state;
    map_init(&m, 1, 0);
    assert_non_null(insert(&m, "keep", NEVER));
    cnt_map_may_go may_go = { rec_may_go, &j };
    cnt_clock_now now = { T0_MS, 5000 };
    j.map = &m;
    j.now_ms = T0_MS;
    assert_int_equal(cnt_map_sweep(&m, 0, 1, &may_go, &now), 0);
    assert_int_equal(cnt_map_do_swept_ns(&m, 0), 0);
    assert_non_null(insert(&m, "old", T0_MS - 1));
    assert_int_equal(cnt_map_sweep(&m, 0, 1, &may_go, &now), 1);
    assert_int_equal(cnt_map_do_swept_ns(&m, 0), 5000);
    cnt_map_destroy(&m);
}

/* The smallest name offset (the node, then the 16-bit length) is
 * accepted. */
static void test_map_name_offset_smallest(void **state)
{
    cnt_map_config cfg = { .buckets = 8,
                           .name_offset = sizeof(cnt_map_node) +
                                          sizeof(uint16_t) };
    cnt_map m;

    (void)state;
    assert_int_equal(cnt_map_init(&m, &cfg), 0);
    cnt_map_destroy(&m);
}

/* After an init that ran out of memory, destroy is harmless: the map
 * holds no array it already gave back. */
static void test_map_destroy_after_failed_init(void **state)
{
    cnt_map_config cfg = { .buckets = 16, .name_offset = REC_NAME_OFFSET };
    cnt_map m;
    long live = cnt_fake_alloc_live();

    (void)state;
    /* A refused configuration, over a map that held garbage. */
    cnt_map_config bad = { .buckets = 0, .name_offset = REC_NAME_OFFSET };
    memset(&m, 0xa5, sizeof m);
    assert_int_equal(cnt_map_init(&m, &bad), EINVAL);
    cnt_map_destroy(&m);
    for (unsigned long k = 1; k <= 2; k++) {
        memset(&m, 0xa5, sizeof m);
        cnt_fake_alloc_fail_at(k, 0);
        assert_int_equal(cnt_map_init(&m, &cfg), ENOMEM);
        cnt_fake_alloc_fail_at(0, 0);
        cnt_map_destroy(&m);
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
}

/* What a sweep removes it frees. */
static void test_map_sweep_frees(void **state)
{
    cnt_map m;
    judge j;
    char name[8];

    (void)state;
    map_init(&m, 8, 0);
    long empty = cnt_fake_alloc_live();
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_non_null(insert(&m, name, i < 6 ? T0_MS - 1 : NEVER));
    }
    assert_int_equal(sweep(&m, &j, 0, 8, T0_MS), 6);
    assert_int_equal(cnt_fake_alloc_live(), empty + 4);
    cnt_map_destroy(&m);
}

/* Runs the map tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_config_errors),
        cmocka_unit_test(test_map_init_alloc_failure),
        cmocka_unit_test(test_map_insert_find),
        cmocka_unit_test(test_map_collisions_unlink),
        cmocka_unit_test(test_map_memory_accounting),
        cmocka_unit_test(test_map_sweep_kind_test),
        cmocka_unit_test(test_map_cursor_pause_fixup),
        cmocka_unit_test(test_map_cursors_share_stripe),
        cmocka_unit_test(test_map_shared_budget),
        cmocka_unit_test(test_map_lock_many),
        cmocka_unit_test(test_map_name_offset_bound),
        cmocka_unit_test(test_map_destroy_frees_nodes),
        cmocka_unit_test(test_map_swept_time_on_removal),
        cmocka_unit_test(test_map_name_offset_smallest),
        cmocka_unit_test(test_map_destroy_after_failed_init),
        cmocka_unit_test(test_map_sweep_frees),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
