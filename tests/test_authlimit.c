/* test_authlimit.c: the limit on failed authentications: the per-address
 * and the server-wide counts of one second, each refusal answered, a success
 * giving its place back, a new second starting afresh, no limit at 0,
 * fixed memory however many addresses are seen, long addresses, and
 * threads taking places at once never admitting more than the limit.
 * Times are given by the test; nothing sleeps. */
#include "config.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/authlimit.h"
#include "tests/engine_fake.h"

#define SEC UINT64_C(1000000000)
#define T0 (UINT64_C(1700000000) * SEC)

/* Per address: the sixth failure of one second from one address is
 * refused, another address still gets in, and the next second starts
 * afresh. */
static void test_per_address(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(0, 5);
    assert_non_null(l);
    for (int i = 0; i < 5; i++)
        assert_true(cnt_auth_limit_take(l, "192.0.2.1", T0 + 10));
    assert_false(cnt_auth_limit_take(l, "192.0.2.1", T0 + 20));
    assert_false(cnt_auth_limit_take(l, "192.0.2.1", T0 + SEC - 1));
    assert_true(cnt_auth_limit_take(l, "192.0.2.2", T0 + 30));
    assert_true(cnt_auth_limit_take(l, "192.0.2.1", T0 + SEC));
    cnt_auth_limit_free(l);
}

/* Server-wide: the limit counts every address together. */
static void test_server_wide(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(10, 5);
    char addr[32];
    assert_non_null(l);
    for (int i = 0; i < 10; i++) {
        snprintf(addr, sizeof addr, "2001:db8::%d", i);
        assert_true(cnt_auth_limit_take(l, addr, T0));
    }
    assert_false(cnt_auth_limit_take(l, "2001:db8::99", T0));
    assert_false(cnt_auth_limit_take(l, "2001:db8::1", T0));
    assert_true(cnt_auth_limit_take(l, "2001:db8::99", T0 + SEC));
    cnt_auth_limit_free(l);
}

/* A success gives its place back: the right secret, however often, never
 * uses up the limit, in all or for its address. */
static void test_success_gives_back(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(3, 2);
    assert_non_null(l);
    for (int i = 0; i < 100; i++) {
        assert_true(cnt_auth_limit_take(l, "127.0.0.1", T0 + 5));
        cnt_auth_limit_succeeded(l, "127.0.0.1", T0 + 5);
    }
    assert_true(cnt_auth_limit_take(l, "127.0.0.1", T0 + 5));
    assert_true(cnt_auth_limit_take(l, "127.0.0.1", T0 + 5));
    assert_false(cnt_auth_limit_take(l, "127.0.0.1", T0 + 5));
    assert_true(cnt_auth_limit_take(l, "127.0.0.2", T0 + 5));
    assert_false(cnt_auth_limit_take(l, "127.0.0.3", T0 + 5));
    /* A success in a later second does not give back an older failure. */
    cnt_auth_limit_succeeded(l, "127.0.0.1", T0 + SEC);
    cnt_auth_limit_free(l);
}

/* 0 is no limit. */
static void test_unlimited(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(0, 0);
    assert_non_null(l);
    for (int i = 0; i < 10000; i++)
        assert_true(cnt_auth_limit_take(l, "", T0));
    cnt_auth_limit_free(l);
}

/* Many addresses in one second: no memory is taken after the limit was
 * built, and the address of the last failure is still known (a second
 * one from it is refused at a limit of 1). Addresses longer than the
 * table keeps are cut, and the cut ones count as one. */
static void test_bounded_memory(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(0, 1);
    char addr[64];
    assert_non_null(l);
    long live = cnt_fake_alloc_live();
    for (int i = 0; i < 20000; i++) {
        snprintf(addr, sizeof addr, "10.%d.%d.%d", i >> 16, (i >> 8) & 255,
                 i & 255);
        assert_true(cnt_auth_limit_take(l, addr, T0));
        assert_false(cnt_auth_limit_take(l, addr, T0));
    }
    assert_int_equal(cnt_fake_alloc_live(), live);
    memset(addr, 'a', sizeof addr - 1);
    addr[sizeof addr - 1] = '\0';
    assert_true(cnt_auth_limit_take(l, addr, T0));
    addr[50] = 'b';                     /* past what is kept */
    assert_false(cnt_auth_limit_take(l, addr, T0));
    cnt_auth_limit_free(l);
}

typedef struct racer {
    cnt_auth_limit *l;
    int admitted;
    int refused;
    char addr[16];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    for (int i = 0; i < 5000; i++) {
        if (cnt_auth_limit_take(r->l, r->addr, T0 + 7))
            r->admitted++;
        else
            r->refused++;
    }
    return NULL;
}

/* Threads taking places at once admit exactly the server-wide limit and
 * refuse every other attempt (each thread counts its own answers). */
static void test_threads(void **state)
{
    (void)state;
    cnt_auth_limit *l = cnt_auth_limit_new(100, 0);
    racer r[4];
    pthread_t th[4];
    assert_non_null(l);
    for (int i = 0; i < 4; i++) {
        r[i].l = l;
        r[i].admitted = 0;
        r[i].refused = 0;
        snprintf(r[i].addr, sizeof r[i].addr, "198.51.100.%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    int sum = 0, refused = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        sum += r[i].admitted;
        refused += r[i].refused;
    }
    assert_int_equal(sum, 100);
    assert_int_equal(refused, 4 * 5000 - 100);
    cnt_auth_limit_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_address),
        cmocka_unit_test(test_server_wide),
        cmocka_unit_test(test_success_gives_back),
        cmocka_unit_test(test_unlimited),
        cmocka_unit_test(test_bounded_memory),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
