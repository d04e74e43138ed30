/* test_ticket.c: a ticket's size and a connection's set of tickets by name:
 * add, find, remove and drain; growth past many entries; deletion by
 * backward shift checked against a plain reference array over thousands of
 * random steps with names that share their home slot (including clusters
 * that wrap around the end of the table); and a failed growth that leaves
 * the set as it was and usable. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/ticket.h"
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
    /* nothing leaked: every ticket and slot array freed */
    assert_int_equal(cnt_fake_alloc_live(), live_at_start);
    return 0;
}

/* A ticket named s; the set reads nothing but the name. */
static cnt_ticket *ticket_named(const char *s)
{
    size_t len = strlen(s);
    cnt_ticket *k = calloc(1, sizeof(cnt_ticket) + len);

    assert_non_null(k);
    k->name_len = (uint16_t)len;
    memcpy(k->name, s, len);
    return k;
}

static cnt_ticket *find(const cnt_tickets *s, const char *name)
{
    return cnt_tickets_find(s, (const uint8_t *)name,
                            (uint16_t)strlen(name));
}

static void add(cnt_tickets *s, cnt_ticket *k)
{
    assert_true(cnt_tickets_reserve(s));
    cnt_tickets_add(s, k);
}

/* The test's copy of the set's home slot (FNV-1a, then the top half of a
 * Fibonacci product), used only to pick names that collide; the first add
 * to an empty set checks that the copy agrees with the set. */
static size_t home_of(const uint8_t *name, uint16_t len, size_t capacity)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    for (uint16_t i = 0; i < len; i++) {
        h ^= name[i];
        h *= UINT64_C(0x100000001b3);
    }
    return (size_t)(h * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (capacity - 1);
}

/* The set's shape holds: count matches the occupied slots, the load stays
 * within 3/4 of a power-of-two capacity, and every ticket is reachable
 * from its home slot without crossing an empty one (what backward-shift
 * deletion must keep true). */
static void check_shape(const cnt_tickets *s)
{
    size_t used = 0;

    if (s->capacity == 0) {
        assert_int_equal(s->count, 0);
        return;
    }
    assert_true(s->capacity >= 8);
    assert_int_equal(s->capacity & (s->capacity - 1), 0);
    assert_true(s->count * 4 <= s->capacity * 3);
    for (size_t j = 0; j < s->capacity; j++) {
        const cnt_ticket *k = s->slots[j];
        if (k == NULL)
            continue;
        used++;
        size_t i = home_of(k->name, k->name_len, s->capacity);
        for (; i != j; i = (i + 1) & (s->capacity - 1))
            assert_non_null(s->slots[i]);
        assert_ptr_equal(cnt_tickets_find(s, k->name, k->name_len), k);
    }
    assert_int_equal(used, s->count);
}

/* The size is the header up to the name plus the name's bytes. */
static void test_ticket_size(void **state)
{
    (void)state;
    assert_int_equal(cnt_ticket_size(0), offsetof(cnt_ticket, name));
    assert_int_equal(cnt_ticket_size(1), offsetof(cnt_ticket, name) + 1);
    assert_int_equal(cnt_ticket_size(250), offsetof(cnt_ticket, name) + 250);
    assert_int_equal(cnt_ticket_size(UINT16_MAX),
                     offsetof(cnt_ticket, name) + UINT16_MAX);
    /* The name is the last thing in it. */
    assert_true(cnt_ticket_size(0) >= offsetof(cnt_ticket, name_len) +
                                          sizeof(uint16_t));
    /* With a 16-byte name a ticket asks for at most 88 bytes, the most
     * glibc serves from a 96-byte chunk: a million leases then cost about
     * 100 MB of tickets rather than 128. */
    assert_true(cnt_ticket_size(16) <= 88);
    /* The lease id shares the queue's back link's word, the grant link
     * the forward link's: 0 until granted. */
    cnt_ticket k;
    memset(&k, 0, sizeof(k));
    assert_ptr_equal((void *)&k.lease_id, (void *)&k.queue_link.tqe_prev);
    assert_ptr_equal((void *)&STAILQ_NEXT(&k, grant_link),
                     (void *)&TAILQ_NEXT(&k, queue_link));
    assert_null(TAILQ_NEXT(&k, queue_link));
    assert_int_equal(k.lease_id, 0);
}

/* An empty set answers without memory; add, find and remove. */
static void test_tickets_basic(void **state)
{
    cnt_tickets s;

    (void)state;
    cnt_tickets_init(&s);
    assert_null(find(&s, "a"));
    assert_int_equal(s.count, 0);
    assert_int_equal(s.capacity, 0);
    cnt_ticket *a = ticket_named("a");
    cnt_ticket *b = ticket_named("b");
    cnt_ticket *ab = ticket_named("ab");
    cnt_tickets_remove(&s, a);          /* absent from an empty set */
    assert_int_equal(s.count, 0);

    add(&s, a);
    /* The test's copy of the home slot agrees with the set. */
    assert_ptr_equal(s.slots[home_of(a->name, a->name_len, s.capacity)], a);
    add(&s, b);
    add(&s, ab);
    assert_int_equal(s.count, 3);
    assert_ptr_equal(find(&s, "a"), a);
    assert_ptr_equal(find(&s, "b"), b);
    assert_ptr_equal(find(&s, "ab"), ab);
    /* Names are compared byte for byte, with their length. */
    assert_null(find(&s, "ba"));
    assert_null(cnt_tickets_find(&s, CNT_NAME("a\0")));
    /* Only len bytes of the name asked for count. */
    assert_ptr_equal(cnt_tickets_find(&s, (const uint8_t *)"abc", 2), ab);
    check_shape(&s);

    cnt_tickets_remove(&s, b);
    assert_int_equal(s.count, 2);
    assert_null(find(&s, "b"));
    assert_ptr_equal(find(&s, "a"), a);
    assert_ptr_equal(find(&s, "ab"), ab);
    /* Removing a ticket that is not in the set, even one with the name of
     * one that is, changes nothing. */
    cnt_tickets_remove(&s, b);
    cnt_ticket *other_a = ticket_named("a");
    cnt_tickets_remove(&s, other_a);
    assert_int_equal(s.count, 2);
    assert_ptr_equal(find(&s, "a"), a);
    check_shape(&s);

    cnt_tickets_remove(&s, a);
    cnt_tickets_remove(&s, ab);
    assert_int_equal(s.count, 0);
    assert_null(find(&s, "a"));
    /* Emptied, it takes tickets again. */
    add(&s, b);
    assert_ptr_equal(find(&s, "b"), b);
    cnt_tickets_remove(&s, b);
    cnt_tickets_destroy(&s);
    assert_null(s.slots);
    assert_int_equal(s.capacity, 0);
    free(a);
    free(b);
    free(ab);
    free(other_a);
    /* A set that never held anything destroys cleanly. */
    cnt_tickets_init(&s);
    cnt_tickets_destroy(&s);
}

/* Collects what drain hands over. */
typedef struct seen {
    cnt_ticket *k[64];
    size_t n;
} seen;

static void see(cnt_ticket *k, void *ctx)
{
    seen *v = ctx;

    assert_true(v->n < 64);
    v->k[v->n++] = k;
}

/* drain visits every ticket once and leaves the set empty and
 * reusable. */
static void test_tickets_drain(void **state)
{
    cnt_tickets s;
    cnt_ticket *k[40];
    seen v = { .n = 0 };

    (void)state;
    cnt_tickets_init(&s);
    cnt_tickets_drain(&s, see, &v);
    assert_int_equal(v.n, 0);
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%d", i);
        k[i] = ticket_named(name);
        add(&s, k[i]);
    }
    assert_int_equal(s.count, 40);
    for (int i = 0; i < 40; i++)
        assert_ptr_equal(cnt_tickets_find(&s, k[i]->name, k[i]->name_len),
                         k[i]);
    size_t capacity = s.capacity;

    cnt_tickets_drain(&s, see, &v);
    assert_int_equal(v.n, 40);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.capacity, capacity);   /* the slots stay for reuse */
    for (int i = 0; i < 40; i++) {
        unsigned times = 0;
        for (size_t j = 0; j < v.n; j++)
            times += v.k[j] == k[i];
        assert_int_equal(times, 1);
        assert_null(cnt_tickets_find(&s, k[i]->name, k[i]->name_len));
    }
    check_shape(&s);
    add(&s, k[7]);
    assert_ptr_equal(find(&s, "d7"), k[7]);
    cnt_tickets_remove(&s, k[7]);
    cnt_tickets_destroy(&s);
    for (int i = 0; i < 40; i++)
        free(k[i]);
}

/* Thousands of tickets: the set grows by doubling and finds every one;
 * removing every other one keeps the rest findable. */
#define MANY 5000
static void test_tickets_growth(void **state)
{
    static cnt_ticket *k[MANY];
    cnt_tickets s;
    size_t last_capacity = 0;
    unsigned grew = 0;

    (void)state;
    cnt_tickets_init(&s);
    for (int i = 0; i < MANY; i++) {
        char name[16];
        snprintf(name, sizeof name, "key:%d", i);
        k[i] = ticket_named(name);
        add(&s, k[i]);
        if (s.capacity != last_capacity) {
            assert_true(last_capacity == 0 ? s.capacity == 8
                                           : s.capacity == 2 * last_capacity);
            last_capacity = s.capacity;
            grew++;
        }
    }
    assert_int_equal(s.count, MANY);
    assert_true(grew >= 10);
    check_shape(&s);
    for (int i = 0; i < MANY; i++)
        assert_ptr_equal(cnt_tickets_find(&s, k[i]->name, k[i]->name_len),
                         k[i]);
    for (int i = 0; i < MANY; i += 2)
        cnt_tickets_remove(&s, k[i]);
    assert_int_equal(s.count, MANY / 2);
    check_shape(&s);
    for (int i = 0; i < MANY; i++)
        assert_ptr_equal(cnt_tickets_find(&s, k[i]->name, k[i]->name_len),
                         i % 2 ? k[i] : NULL);
    for (int i = 1; i < MANY; i += 2)
        cnt_tickets_remove(&s, k[i]);
    assert_int_equal(s.count, 0);
    cnt_tickets_destroy(&s);
    for (int i = 0; i < MANY; i++)
        free(k[i]);
}

/* xorshift32: a cheap reproducible sequence. */
static uint32_t next_random(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

#define POOL 48                 /* fills a 64-slot set to its 3/4 load */
#define POOL_CAPACITY 64
#define STEPS 40000
#define PHASE 400

/* Percent chance that a step adds, phase by phase. */
static const uint32_t add_odds[6] = { 97, 75, 50, 3, 25, 90 };

/* Picks the pool of names: three clusters of names sharing one home slot
 * at every capacity up to 64 (the same low bits): one at the last slot,
 * so its probes wrap to the start; one at slot 0, where the wrapped ones
 * land; one in the middle, next to a fourth cluster one slot later, so
 * runs merge; the rest are arbitrary names. */
static void pick_pool(cnt_ticket **pool)
{
    static const size_t homes[] = { POOL_CAPACITY - 1, 0, 30, 31 };
    size_t per_home = 9, n = 0, in_home[4] = { 0 };
    char name[24];

    for (unsigned i = 0; n < 4 * per_home; i++) {
        assert_true(i < 1000000);
        snprintf(name, sizeof name, "c%u", i);
        size_t h = home_of((const uint8_t *)name, (uint16_t)strlen(name),
                           POOL_CAPACITY);
        for (int j = 0; j < 4; j++)
            if (h == homes[j] && in_home[j] < per_home) {
                in_home[j]++;
                pool[n++] = ticket_named(name);
            }
    }
    for (unsigned i = 0; n < POOL; i++) {
        snprintf(name, sizeof name, "r%u", i);
        pool[n++] = ticket_named(name);
    }
}

/* Random adds and removes checked after every step against a plain array
 * of what should be in the set: every member found (the right pointer),
 * every other pool name absent, and the probe invariant intact. */
static void test_tickets_random_against_reference(void **state)
{
    cnt_ticket *pool[POOL];
    bool in[POOL] = { false };
    size_t expect = 0;
    cnt_tickets s;
    uint32_t seed = 0x2545f491u;
    unsigned adds = 0, removes = 0, full = 0, empty = 0;

    (void)state;
    pick_pool(pool);
    cnt_tickets_init(&s);
    for (int step = 0; step < STEPS; step++) {
        uint32_t x = next_random(&seed);
        unsigned i = x % POOL;
        /* The odds of adding change every PHASE steps, so the set swings
         * between empty, full and every load between. */
        bool want_add = (x >> 8) % 100 < add_odds[(step / PHASE) % 6];

        if (!in[i] && want_add) {
            add(&s, pool[i]);
            in[i] = true;
            expect++;
            adds++;
        } else if (in[i] && !want_add) {
            cnt_tickets_remove(&s, pool[i]);
            in[i] = false;
            expect--;
            removes++;
        }
        full += expect == POOL;
        empty += expect == 0;
        assert_int_equal(s.count, expect);
        for (unsigned j = 0; j < POOL; j++)
            assert_ptr_equal(cnt_tickets_find(&s, pool[j]->name,
                                              pool[j]->name_len),
                             in[j] ? pool[j] : NULL);
        if (step % 16 == 0)
            check_shape(&s);
    }
    check_shape(&s);
    assert_int_equal(s.capacity, POOL_CAPACITY);
    print_message("%u adds, %u removes; %u steps with the set full, %u "
                  "empty\n", adds, removes, full, empty);
    assert_true(adds > STEPS / 10 && removes > STEPS / 10);
    assert_true(full > 0 && empty > 0);
    for (unsigned j = 0; j < POOL; j++)
        if (in[j])
            cnt_tickets_remove(&s, pool[j]);
    assert_int_equal(s.count, 0);
    cnt_tickets_destroy(&s);
    for (unsigned j = 0; j < POOL; j++)
        free(pool[j]);
}

/* A reserve that cannot get memory says so and leaves the set as it was:
 * every ticket still found, nothing lost, and once memory is back the set
 * grows and takes the ticket. The same for the first reserve of all. */
static void test_tickets_reserve_fails(void **state)
{
    cnt_tickets s;
    cnt_ticket *k[7];

    (void)state;
    cnt_tickets_init(&s);
    cnt_ticket *first = ticket_named("first");
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_tickets_reserve(&s));
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(s.capacity, 0);
    assert_int_equal(s.count, 0);
    assert_null(find(&s, "first"));

    /* Fill the first 8 slots to their 3/4 load: the seventh needs growth. */
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "g%d", i);
        k[i] = ticket_named(name);
        add(&s, k[i]);
    }
    assert_int_equal(s.capacity, 8);
    k[6] = ticket_named("g6");
    cnt_ticket **slots = s.slots;
    cnt_fake_alloc_fail_at(1, 1);       /* every allocation fails */
    assert_false(cnt_tickets_reserve(&s));
    assert_false(cnt_tickets_reserve(&s));
    cnt_fake_alloc_fail_at(0, 0);
    assert_ptr_equal(s.slots, slots);
    assert_int_equal(s.capacity, 8);
    assert_int_equal(s.count, 6);
    for (int i = 0; i < 6; i++)
        assert_ptr_equal(cnt_tickets_find(&s, k[i]->name, k[i]->name_len),
                         k[i]);
    check_shape(&s);
    /* Still usable: removes and finds work, and the next reserve grows. */
    cnt_tickets_remove(&s, k[2]);
    assert_null(find(&s, "g2"));
    add(&s, k[2]);
    add(&s, k[6]);
    add(&s, first);
    assert_int_equal(s.capacity, 16);
    assert_int_equal(s.count, 8);
    check_shape(&s);
    for (int i = 0; i < 7; i++)
        cnt_tickets_remove(&s, k[i]);
    cnt_tickets_remove(&s, first);
    assert_int_equal(s.count, 0);
    cnt_tickets_destroy(&s);
    for (int i = 0; i < 7; i++)
        free(k[i]);
    free(first);
}

/* Runs the ticket tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ticket_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tickets_basic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tickets_drain, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tickets_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tickets_random_against_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tickets_reserve_fails, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
