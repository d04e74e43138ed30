/* test_groups.c: the set of server-defined groups: adding, replacing and
 * finding names (any bytes, prefixes of one another, the empty name),
 * iteration in name order, copies that stand alone, allocation failures
 * that leave the set as it was, and lookups from many threads at once. */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/groups.h"
#include "tests/engine_fake.h"

/* Blocks allocated when the test began. */
static long live_at_start;

static int setup(void **state)
{
    (void)state;
    cnt_fake_alloc_fail_at(0, 0);
    live_at_start = cnt_fake_alloc_live();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cnt_fake_alloc_fail_at(0, 0);
    /* nothing leaked */
    assert_int_equal(cnt_fake_alloc_live(), live_at_start);
    return 0;
}

/* Settings whose three fields all derive from x, to tell groups apart. */
static cnt_group settings(uint32_t x)
{
    cnt_group v = { x, x * 10u, x * 100u };

    return v;
}

/* Checks that name[0..len) is a group with the settings of x. */
static void expect_group(const cnt_groups *g, const uint8_t *name,
                         uint16_t len, uint32_t x)
{
    const cnt_group *v = cnt_groups_find(g, name, len);

    assert_non_null(v);
    assert_int_equal(v->maximum, x);
    assert_int_equal(v->wait_ms, x * 10u);
    assert_int_equal(v->lease_ms, x * 100u);
}

/* Checks that iteration visits the names in strictly increasing order. */
static void expect_sorted(const cnt_groups *g)
{
    const uint8_t *prev = NULL, *name;
    uint16_t prev_len = 0, len;

    for (size_t i = 0; i < cnt_groups_count(g); i++) {
        assert_non_null(cnt_groups_at(g, i, &name, &len));
        if (prev != NULL) {
            size_t n = prev_len < len ? prev_len : len;
            int c = memcmp(prev, name, n);

            assert_true(c < 0 || (c == 0 && prev_len < len));
        }
        prev = name;
        prev_len = len;
    }
    assert_null(cnt_groups_at(g, cnt_groups_count(g), &name, &len));
}

static void test_groups_empty(void **state)
{
    cnt_groups *g = cnt_groups_new();
    const uint8_t *name;
    uint16_t len;

    (void)state;
    assert_non_null(g);
    assert_int_equal(cnt_groups_count(g), 0);
    assert_null(cnt_groups_find(g, CNT_NAME("licence")));
    assert_null(cnt_groups_at(g, 0, &name, &len));
    cnt_groups_free(g);
    /* No set at all behaves as an empty one. */
    assert_null(cnt_groups_find(NULL, CNT_NAME("licence")));
    assert_int_equal(cnt_groups_count(NULL), 0);
    assert_null(cnt_groups_at(NULL, 0, &name, &len));
    cnt_groups_free(NULL);
}

static void test_groups_set_find(void **state)
{
    cnt_groups *g = cnt_groups_new();
    const uint8_t binary[] = { 0x00, 0xff, 0x00 };
    cnt_group v;

    (void)state;
    assert_non_null(g);
    /* Names that are prefixes of one another stay distinct. */
    v = settings(1);
    assert_true(cnt_groups_set(g, CNT_NAME("ab"), &v));
    v = settings(2);
    assert_true(cnt_groups_set(g, CNT_NAME("a"), &v));
    v = settings(3);
    assert_true(cnt_groups_set(g, CNT_NAME("abc"), &v));
    v = settings(4);
    assert_true(cnt_groups_set(g, binary, sizeof binary, &v));
    v = settings(5);
    assert_true(cnt_groups_set(g, binary, 1, &v));
    v = settings(6);
    assert_true(cnt_groups_set(g, (const uint8_t *)"", 0, &v));
    assert_int_equal(cnt_groups_count(g), 6);
    expect_group(g, CNT_NAME("ab"), 1);
    expect_group(g, CNT_NAME("a"), 2);
    expect_group(g, CNT_NAME("abc"), 3);
    expect_group(g, binary, sizeof binary, 4);
    expect_group(g, binary, 1, 5);
    expect_group(g, (const uint8_t *)"", 0, 6);
    /* Absent: other names, other lengths of the same bytes. */
    assert_null(cnt_groups_find(g, CNT_NAME("abcd")));
    assert_null(cnt_groups_find(g, CNT_NAME("b")));
    assert_null(cnt_groups_find(g, CNT_NAME("AB")));
    assert_null(cnt_groups_find(g, binary, 2));
    expect_sorted(g);
    /* The empty name sorts first, then the bytes decide. */
    const uint8_t *name;
    uint16_t len;

    assert_non_null(cnt_groups_at(g, 0, &name, &len));
    assert_int_equal(len, 0);
    assert_non_null(cnt_groups_at(g, 1, &name, &len));
    assert_int_equal(len, 1);
    assert_int_equal(name[0], 0x00);
    cnt_groups_free(g);
}

static void test_groups_replace(void **state)
{
    cnt_groups *g = cnt_groups_new();
    cnt_group v = settings(7);

    (void)state;
    assert_non_null(g);
    assert_true(cnt_groups_set(g, CNT_NAME("licence"), &v));
    const cnt_group *first = cnt_groups_find(g, CNT_NAME("licence"));
    /* The later definition wins, in place: no second entry. */
    v = settings(9);
    assert_true(cnt_groups_set(g, CNT_NAME("licence"), &v));
    assert_int_equal(cnt_groups_count(g), 1);
    expect_group(g, CNT_NAME("licence"), 9);
    assert_ptr_equal(cnt_groups_find(g, CNT_NAME("licence")), first);
    cnt_groups_free(g);
}

/* Writes the name of group i into buf; returns its length. */
static uint16_t name_of(char *buf, size_t size, unsigned i)
{
    return (uint16_t)snprintf(buf, size, "group-%u", i);
}

static void test_groups_many(void **state)
{
    enum { N = 1000 };
    cnt_groups *g = cnt_groups_new();
    char buf[32];

    (void)state;
    assert_non_null(g);
    /* Inserted in a scrambled order (7919 is prime to N): each insert
     * lands somewhere in the middle of the array. */
    for (unsigned k = 0; k < N; k++) {
        unsigned i = (k * 7919u) % N;
        uint16_t len = name_of(buf, sizeof buf, i);
        cnt_group v = settings(i + 1);

        assert_true(cnt_groups_set(g, (const uint8_t *)buf, len, &v));
    }
    assert_int_equal(cnt_groups_count(g), N);
    for (unsigned i = 0; i < N; i++) {
        uint16_t len = name_of(buf, sizeof buf, i);

        expect_group(g, (const uint8_t *)buf, len, i + 1);
    }
    assert_null(cnt_groups_find(g, CNT_NAME("group-1000")));
    expect_sorted(g);
    cnt_groups_free(g);
}

static void test_groups_copy(void **state)
{
    cnt_groups *g = cnt_groups_new();
    cnt_group v = settings(1);

    (void)state;
    assert_non_null(g);
    assert_true(cnt_groups_set(g, CNT_NAME("one"), &v));
    v = settings(2);
    assert_true(cnt_groups_set(g, CNT_NAME("two"), &v));
    cnt_groups *c = cnt_groups_copy(g);
    assert_non_null(c);
    assert_int_equal(cnt_groups_count(c), 2);
    expect_group(c, CNT_NAME("one"), 1);
    expect_group(c, CNT_NAME("two"), 2);
    /* Each changes alone, and each frees alone. */
    v = settings(3);
    assert_true(cnt_groups_set(c, CNT_NAME("one"), &v));
    assert_true(cnt_groups_set(c, CNT_NAME("three"), &v));
    expect_group(g, CNT_NAME("one"), 1);
    assert_null(cnt_groups_find(g, CNT_NAME("three")));
    cnt_groups_free(g);
    expect_group(c, CNT_NAME("one"), 3);
    expect_group(c, CNT_NAME("two"), 2);
    cnt_groups_free(c);
    /* Copies of nothing are empty sets. */
    c = cnt_groups_copy(NULL);
    assert_non_null(c);
    assert_int_equal(cnt_groups_count(c), 0);
    g = cnt_groups_copy(c);
    assert_non_null(g);
    assert_int_equal(cnt_groups_count(g), 0);
    cnt_groups_free(c);
    cnt_groups_free(g);
}

static void test_groups_out_of_memory(void **state)
{
    char buf[32];
    cnt_group v;

    (void)state;
    cnt_fake_alloc_fail_at(1, 0);
    assert_null(cnt_groups_new());
    cnt_groups *g = cnt_groups_new();
    assert_non_null(g);
    /* Eight names fill the first array; the ninth needs a bigger one. */
    for (unsigned i = 0; i < 8; i++) {
        uint16_t len = name_of(buf, sizeof buf, i);

        v = settings(i + 1);
        assert_true(cnt_groups_set(g, (const uint8_t *)buf, len, &v));
    }
    /* Each allocation of a set fails in turn: the set stays as it was. */
    for (unsigned long n = 1;; n++) {
        v = settings(100);
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_groups_set(g, CNT_NAME("ninth"), &v);
        bool injected = cnt_fake_alloc_injected();

        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_true(ok);
            break;
        }
        assert_false(ok);
        assert_int_equal(cnt_groups_count(g), 8);
        assert_null(cnt_groups_find(g, CNT_NAME("ninth")));
        for (unsigned i = 0; i < 8; i++) {
            uint16_t len = name_of(buf, sizeof buf, i);

            expect_group(g, (const uint8_t *)buf, len, i + 1);
        }
    }
    expect_group(g, CNT_NAME("ninth"), 100);
    /* Replacing allocates nothing, so it cannot fail. */
    cnt_fake_alloc_fail_at(1, 1);
    v = settings(101);
    assert_true(cnt_groups_set(g, CNT_NAME("ninth"), &v));
    expect_group(g, CNT_NAME("ninth"), 101);
    /* A copy that fails part way frees what it had made. */
    for (unsigned long n = 1;; n++) {
        cnt_fake_alloc_fail_at(n, 0);
        cnt_groups *c = cnt_groups_copy(g);
        bool injected = cnt_fake_alloc_injected();

        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_non_null(c);
            assert_int_equal(cnt_groups_count(c), 9);
            cnt_groups_free(c);
            break;
        }
        assert_null(c);
    }
    cnt_groups_free(g);
}

/* What each reader thread looks up. */
typedef struct reader_arg {
    const cnt_groups *g;
    unsigned found;
} reader_arg;

/* Looks every group name up many times, and one absent name. */
static void *reader(void *p)
{
    reader_arg *a = p;
    char buf[32];

    for (unsigned round = 0; round < 200; round++) {
        for (unsigned i = 0; i < 64; i++) {
            uint16_t len = name_of(buf, sizeof buf, i);
            const cnt_group *v = cnt_groups_find(a->g, (const uint8_t *)buf,
                                                 len);

            if (v != NULL && v->maximum == i + 1)
                a->found++;
        }
        if (cnt_groups_find(a->g, CNT_NAME("absent")) != NULL)
            a->found = 0;
    }
    return NULL;
}

static void test_groups_concurrent_readers(void **state)
{
    enum { THREADS = 4 };
    cnt_groups *g = cnt_groups_new();
    pthread_t t[THREADS];
    reader_arg args[THREADS];
    char buf[32];

    (void)state;
    assert_non_null(g);
    for (unsigned i = 0; i < 64; i++) {
        uint16_t len = name_of(buf, sizeof buf, i);
        cnt_group v = settings(i + 1);

        assert_true(cnt_groups_set(g, (const uint8_t *)buf, len, &v));
    }
    /* Built, then shared read-only: every thread finds every group. */
    for (unsigned i = 0; i < THREADS; i++) {
        args[i].g = g;
        args[i].found = 0;
        assert_int_equal(pthread_create(&t[i], NULL, reader, &args[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(args[i].found, 200u * 64u);
    }
    cnt_groups_free(g);
}

/* Runs the group set tests. */
/* A group's name is copied into a block of its own length (one byte for
 * the empty name), and the copy is what later lookups compare. */
static void test_groups_name_copy_size(void **state)
{
    cnt_groups *g = cnt_groups_new();
    char name[] = "backup-nightly";
    cnt_group v = settings(3);

    (void)state;
    assert_non_null(g);
    assert_true(cnt_groups_set(g, (const uint8_t *)name, 14, &v));
    assert_int_equal(cnt_fake_malloc_last_size(), 14);
    assert_true(cnt_groups_set(g, (const uint8_t *)"", 0, &v));
    assert_int_equal(cnt_fake_malloc_last_size(), 1);
    memset(name, 'x', sizeof name - 1);
    assert_non_null(cnt_groups_find(g, CNT_NAME("backup-nightly")));
    cnt_groups_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_groups_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups_set_find, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_groups_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups_out_of_memory, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_groups_concurrent_readers,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups_name_copy_size, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
