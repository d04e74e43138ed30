/* test_holdings.c: the per-connection ledger: entries appear and vanish at
 * zero, survive growth and deletions (backward shift), drain visits each
 * entry once, and a failed growth leaves the ledger as it was. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/core/holdings.h"
#include "tests/engine_fake.h"

/* The ledger only compares counter pointers, so distinct addresses in this
 * array stand in for counters. */
#define NCELLS 1000
static uint64_t cells[NCELLS];
#define CELL(i) ((struct cnt_counter *)(void *)&cells[(i)])

static int setup(void **state)
{
    (void)state;
    cnt_holdings_set_allocator(cnt_fake_calloc, cnt_fake_free);
    cnt_fake_alloc_fail_at(0, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    assert_int_equal(cnt_fake_alloc_live(), 0);    /* nothing leaked */
    cnt_holdings_set_allocator(NULL, NULL);
    return 0;
}

static void test_holdings_add_sub(void **state)
{
    cnt_holdings h;

    (void)state;
    cnt_holdings_init(&h);
    assert_int_equal(cnt_holdings_get(&h, CELL(0)), 0);
    assert_true(cnt_holdings_reserve(&h));
    cnt_holdings_add(&h, CELL(0), 5);
    assert_true(cnt_holdings_reserve(&h));
    cnt_holdings_add(&h, CELL(0), 2);
    assert_int_equal(cnt_holdings_get(&h, CELL(0)), 7);
    assert_int_equal(h.count, 1);
    cnt_holdings_sub(&h, CELL(0), 0);           /* Release 0 keeps it */
    assert_int_equal(cnt_holdings_get(&h, CELL(0)), 7);
    cnt_holdings_sub(&h, CELL(0), 3);
    assert_int_equal(cnt_holdings_get(&h, CELL(0)), 4);
    cnt_holdings_sub(&h, CELL(1), 3);           /* absent: no effect */
    assert_int_equal(h.count, 1);
    cnt_holdings_sub(&h, CELL(0), 4);           /* zero: the entry goes */
    assert_int_equal(h.count, 0);
    assert_int_equal(cnt_holdings_get(&h, CELL(0)), 0);
    assert_true(cnt_holdings_reserve(&h));
    cnt_holdings_add(&h, CELL(2), UINT32_MAX);  /* the full u32 range */
    assert_int_equal(cnt_holdings_get(&h, CELL(2)), UINT32_MAX);
    cnt_holdings_sub(&h, CELL(2), UINT32_MAX);
    assert_int_equal(h.count, 0);
    cnt_holdings_destroy(&h);
}

/* Many entries, then deletions in a scattered order: every survivor must
 * still be found (probe runs repaired by the backward shift). */
static void test_holdings_many(void **state)
{
    cnt_holdings h;

    (void)state;
    cnt_holdings_init(&h);
    for (unsigned i = 0; i < NCELLS; i++) {
        assert_true(cnt_holdings_reserve(&h));
        cnt_holdings_add(&h, CELL(i), i + 1);
    }
    assert_int_equal(h.count, NCELLS);
    assert_true(h.count * 4 <= h.capacity * 3);
    for (unsigned k = 0; k < NCELLS; k++) {
        unsigned i = (k * 7919u) % NCELLS;     /* a permutation */
        if (i % 3 == 0)
            cnt_holdings_sub(&h, CELL(i), i + 1);
    }
    for (unsigned i = 0; i < NCELLS; i++)
        assert_int_equal(cnt_holdings_get(&h, CELL(i)),
                         i % 3 == 0 ? 0 : i + 1);
    assert_int_equal(h.count, NCELLS - (NCELLS + 2) / 3);
    for (unsigned i = 0; i < NCELLS; i++)
        cnt_holdings_sub(&h, CELL(i), UINT32_MAX);
    assert_int_equal(h.count, 0);
    cnt_holdings_destroy(&h);
}

typedef struct drain_seen {
    unsigned calls;
    uint32_t amount[NCELLS];
} drain_seen;

static void record_drain(struct cnt_counter *c, uint32_t amount, void *ctx)
{
    drain_seen *seen = ctx;
    size_t i = (size_t)((uint64_t *)(void *)c - cells);

    assert_true(i < NCELLS);
    assert_int_equal(seen->amount[i], 0);      /* once per entry */
    seen->amount[i] = amount;
    seen->calls++;
}

static void test_holdings_drain(void **state)
{
    static drain_seen seen;
    cnt_holdings h;

    (void)state;
    cnt_holdings_init(&h);
    cnt_holdings_drain(&h, record_drain, &seen);   /* empty: no calls */
    assert_int_equal(seen.calls, 0);
    for (unsigned i = 0; i < 100; i++) {
        assert_true(cnt_holdings_reserve(&h));
        cnt_holdings_add(&h, CELL(i * 3), i + 10);
    }
    cnt_holdings_drain(&h, record_drain, &seen);
    assert_int_equal(seen.calls, 100);
    for (unsigned i = 0; i < 100; i++)
        assert_int_equal(seen.amount[i * 3], i + 10);
    assert_int_equal(h.count, 0);
    assert_int_equal(cnt_holdings_get(&h, CELL(3)), 0);
    cnt_holdings_destroy(&h);
}

/* A growth that cannot allocate reports false and keeps every entry. */
static void test_holdings_reserve_fails(void **state)
{
    cnt_holdings h;

    (void)state;
    cnt_holdings_init(&h);
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_holdings_reserve(&h));        /* first array */
    assert_int_equal(h.capacity, 0);
    assert_true(cnt_holdings_reserve(&h));
    size_t cap = h.capacity;
    unsigned n = 0;
    while ((n + 1) * 4 <= cap * 3) {             /* fill to the limit */
        cnt_holdings_add(&h, CELL(n), 1);
        n++;
    }
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_holdings_reserve(&h));        /* growth refused */
    assert_int_equal(h.capacity, cap);
    assert_int_equal(h.count, n);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(cnt_holdings_get(&h, CELL(i)), 1);
    assert_true(cnt_holdings_reserve(&h));         /* and works later */
    assert_true(h.capacity > cap);
    cnt_holdings_destroy(&h);
}

/* Runs the ledger tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_holdings_add_sub, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holdings_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holdings_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_holdings_reserve_fails, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
