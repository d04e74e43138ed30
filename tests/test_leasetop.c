/* test_leasetop.c: unit tests of the bounded top of nearest leases
 * (engine/core/leasetop.c): it keeps the want nearest, nearest first,
 * whatever order they come in; ties keep the first offered; merging two
 * tops moves names without copying; a failed copy changes nothing but
 * the failed flag; and collecting from a wheel of tickets takes the lease
 * timers only (not waits), with the lease id, resources and name, and
 * says when its cap stopped it; a copy into a narrower top is the
 * prefix a top of that width would have kept, flags and all. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/leasetop.h"
#include "engine/core/ticket.h"
#include "tests/engine_fake.h"

#define MS UINT64_C(1000000)

/* Offers lease i due at deadline, named "l<i>". */
static bool offer(cnt_lease_top *top, unsigned i, uint64_t deadline)
{
    char name[16];
    int n = snprintf(name, sizeof name, "l%u", i);

    return cnt_lease_top_offer(top, deadline, 1000 + i, i % 7,
                               (const uint8_t *)name, (uint16_t)n);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Random deadlines: the top holds the want smallest, sorted; the count
 * is clamped to 1..64; nothing is left allocated once cleared. */
static void test_keeps_nearest(void **state)
{
    enum { N = 2000 };
    static uint64_t d[N], sorted[N];
    cnt_lease_top top;
    long live = cnt_fake_alloc_live();

    (void)state;
    srand(99);
    for (unsigned i = 0; i < N; i++)
        sorted[i] = d[i] = (uint64_t)(rand() % 100000);
    qsort(sorted, N, sizeof(sorted[0]), cmp_u64);
    for (uint32_t want = 1; want <= 64; want = want * 2 + 1) {
        cnt_lease_top_init(&top, want);
        for (unsigned i = 0; i < N; i++)
            assert_true(offer(&top, i, d[i]));
        assert_int_equal(top.count, want);
        for (uint32_t i = 0; i < want; i++)
            assert_true(top.e[i].deadline_ms == sorted[i]);
        assert_false(top.failed);
        cnt_lease_top_clear(&top);
        assert_int_equal(top.count, 0);
    }
    cnt_lease_top_init(&top, 0);
    assert_int_equal(top.want, 1);
    cnt_lease_top_init(&top, 1000);
    assert_int_equal(top.want, CNT_LEASE_TOP_MAX);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* Ties keep the first offered; the entry carries id, resources, name. */
static void test_ties_and_fields(void **state)
{
    cnt_lease_top top;

    (void)state;
    cnt_lease_top_init(&top, 2);
    assert_true(offer(&top, 1, 50));
    assert_true(offer(&top, 2, 50));
    assert_true(offer(&top, 3, 50));
    assert_int_equal(top.count, 2);
    assert_true(top.e[0].lease_id == 1001);
    assert_true(top.e[1].lease_id == 1002);
    assert_true(offer(&top, 4, 10));
    assert_true(top.e[0].lease_id == 1004);
    assert_int_equal(top.e[0].resources, 4);
    assert_int_equal(top.e[0].name_len, 2);
    assert_memory_equal(top.e[0].name, "l4", 2);
    assert_true(top.e[1].lease_id == 1001);
    cnt_lease_top_clear(&top);
}

/* Two tops merged: the nearest of both, flags carried, the source empty,
 * and no name copied or lost. */
static void test_merge(void **state)
{
    cnt_lease_top a, b;
    long live = cnt_fake_alloc_live();

    (void)state;
    cnt_lease_top_init(&a, 4);
    cnt_lease_top_init(&b, 4);
    for (unsigned i = 0; i < 4; i++) {
        assert_true(offer(&a, i, 10 * i + 5));     /* 5 15 25 35 */
        assert_true(offer(&b, 10 + i, 10 * i));    /* 0 10 20 30 */
    }
    b.incomplete = true;
    cnt_fake_alloc_fail_at(1, 1);
    cnt_lease_top_merge(&a, &b);
    cnt_fake_alloc_fail_at(0, 0);
    assert_int_equal(b.count, 0);
    assert_int_equal(a.count, 4);
    static const uint64_t want[] = {0, 5, 10, 15};
    for (unsigned i = 0; i < 4; i++)
        assert_true(a.e[i].deadline_ms == want[i]);
    assert_true(a.incomplete);
    assert_false(a.failed);
    cnt_lease_top_clear(&a);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* A name that cannot be copied: false, failed set, the top unchanged. */
static void test_failed_copy(void **state)
{
    cnt_lease_top top;
    long live = cnt_fake_alloc_live();

    (void)state;
    cnt_lease_top_init(&top, 3);
    assert_true(offer(&top, 1, 100));
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(offer(&top, 2, 50));
    assert_true(cnt_fake_alloc_injected());
    assert_true(top.failed);
    assert_int_equal(top.count, 1);
    assert_true(top.e[0].lease_id == 1001);
    /* One that would not be kept needs no copy. */
    cnt_lease_top_clear(&top);
    cnt_lease_top_init(&top, 1);
    assert_true(offer(&top, 3, 10));
    cnt_fake_alloc_fail_at(1, 1);
    assert_true(offer(&top, 4, 50));
    cnt_fake_alloc_fail_at(0, 0);
    assert_false(top.failed);
    assert_true(top.e[0].lease_id == 1003);
    cnt_lease_top_clear(&top);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* A ticket with a name, as the table would make it. */
static cnt_ticket *ticket(const char *name, uint64_t lease_id,
                          uint32_t resources, uint8_t kind)
{
    size_t len = strlen(name);
    cnt_ticket *k = calloc(1, cnt_ticket_size((uint16_t)len));

    assert_non_null(k);
    cnt_timer_init(&k->timer);
    k->lease_id = lease_id;
    k->resources = resources;
    k->timer_kind = kind;
    k->name_len = (uint16_t)len;
    memcpy(k->name, name, len);
    return k;
}

/* Leases and waits in one wheel: the leases only, nearest first, with
 * their fields; the cap of the walk marks the top incomplete. */
static void test_collect(void **state)
{
    cnt_wheel w;
    cnt_ticket *k[6];
    cnt_lease_top top;

    (void)state;
    cnt_wheel_init(&w, 1000 * MS);
    k[0] = ticket("far", 7, 3, CNT_TIMER_LEASE);
    k[1] = ticket("wait-near", 0, 1, CNT_TIMER_WAIT);
    k[2] = ticket("near", 8, 1, CNT_TIMER_LEASE);
    k[3] = ticket("days", 9, 2, CNT_TIMER_LEASE);
    k[4] = ticket("mid", 10, 5, CNT_TIMER_LEASE);
    k[5] = ticket("wait-far", 0, 1, CNT_TIMER_WAIT);
    cnt_timer_arm(&w, &k[0]->timer, 61000 * MS);
    cnt_timer_arm(&w, &k[1]->timer, 1001 * MS);
    cnt_timer_arm(&w, &k[2]->timer, 1500 * MS);
    cnt_timer_arm(&w, &k[3]->timer, 1000 * MS + 3 * 86400000 * MS);
    cnt_timer_arm(&w, &k[4]->timer, 30000 * MS);
    cnt_timer_arm(&w, &k[5]->timer, 90000 * MS);

    cnt_lease_top_init(&top, 3);
    cnt_lease_top_collect(&top, &w, CNT_LEASE_WALK_MAX);
    assert_int_equal(top.count, 3);
    assert_false(top.incomplete);
    assert_memory_equal(top.e[0].name, "near", 4);
    assert_true(top.e[0].lease_id == 8);
    assert_true(top.e[0].deadline_ms == 1500);
    assert_memory_equal(top.e[1].name, "mid", 3);
    assert_int_equal(top.e[1].resources, 5);
    assert_memory_equal(top.e[2].name, "far", 3);
    cnt_lease_top_clear(&top);

    cnt_lease_top_init(&top, 64);
    cnt_lease_top_collect(&top, &w, 2);
    assert_true(top.incomplete);
    assert_true(top.count <= 2);
    cnt_lease_top_clear(&top);

    cnt_wheel_destroy(&w);
    for (unsigned i = 0; i < 6; i++)
        free(k[i]);
}

/* A wide top copied into narrower ones: each gets the prefix a top of
 * its width would have kept from the same offers (ties included), with
 * its own copies of the names and the source's flags; the source is
 * unchanged. */
static void test_copy_prefix(void **state)
{
    static const uint64_t due[] = {50, 20, 20, 90, 10, 20, 70, 30};
    enum { N = sizeof due / sizeof due[0] };
    cnt_lease_top wide, narrow, direct;
    long live = cnt_fake_alloc_live();

    (void)state;
    cnt_lease_top_init(&wide, CNT_LEASE_TOP_MAX);
    for (unsigned i = 0; i < N; i++)
        assert_true(offer(&wide, i, due[i]));
    wide.incomplete = true;
    for (uint32_t want = 1; want <= N + 1; want++) {
        cnt_lease_top_init(&narrow, want);
        cnt_lease_top_init(&direct, want);
        for (unsigned i = 0; i < N; i++)
            assert_true(offer(&direct, i, due[i]));
        assert_true(cnt_lease_top_copy(&narrow, &wide));
        assert_int_equal(narrow.count, direct.count);
        for (uint32_t j = 0; j < narrow.count; j++) {
            assert_true(narrow.e[j].deadline_ms == direct.e[j].deadline_ms);
            assert_true(narrow.e[j].lease_id == direct.e[j].lease_id);
            assert_ptr_not_equal(narrow.e[j].name, wide.e[j].name);
            assert_memory_equal(narrow.e[j].name, direct.e[j].name,
                                direct.e[j].name_len);
        }
        assert_true(narrow.incomplete);
        assert_false(narrow.failed);
        cnt_lease_top_clear(&narrow);
        cnt_lease_top_clear(&direct);
    }
    assert_int_equal(wide.count, N);
    /* A name that cannot be copied: false, the failed flag carried. */
    cnt_lease_top_init(&narrow, 4);
    cnt_fake_alloc_fail_at(1, 1);
    assert_false(cnt_lease_top_copy(&narrow, &wide));
    cnt_fake_alloc_fail_at(0, 0);
    assert_true(narrow.failed);
    cnt_lease_top_clear(&narrow);
    cnt_lease_top_clear(&wide);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_nearest),
        cmocka_unit_test(test_ties_and_fields),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_failed_copy),
        cmocka_unit_test(test_collect),
        cmocka_unit_test(test_copy_prefix),
    };

    return cmocka_run_group_tests_name("leasetop", tests, NULL, NULL);
}
