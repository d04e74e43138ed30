/* test_ketama.c: cmocka tests of client/md5.c and client/ketama.c: MD5
 * against RFC 1321's test vectors and split input; the points each
 * server gets from its weight; lookups against a plain scan of the
 * circle; lookup_up skipping servers that are down; and, when configure
 * found libmemcached, the server chosen for 100,000 generated names over
 * lists of 1, 2, 3 and 10 servers against libmemcached's own
 * memcached_generate_hash() with weighted ketama. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef MCC_TEST_LIBMEMCACHED
#include <libmemcached/memcached.h>
#endif

#include "client/ketama.h"
#include "client/md5.h"

/* Names per comparison. */
#define NAMES 100000u

/* Writes the digest as 32 lowercase hex digits. */
static void hex(const uint8_t d[MCC_MD5_DIGEST_SIZE], char out[33])
{
    for (unsigned i = 0; i < MCC_MD5_DIGEST_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* RFC 1321, appendix A.5. */
static void test_md5_vectors(void **state)
{
    static const struct { const char *msg, *digest; } rows[] = {
        { "", "d41d8cd98f00b204e9800998ecf8427e" },
        { "a", "0cc175b9c0f1b6a831c399e269772661" },
        { "abc", "900150983cd24fb0d6963f7d28e17f72" },
        { "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
        { "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
          "d174ab98d277d9f5a5611c2c9f419d9f" },
        { "1234567890123456789012345678901234567890123456789012345678901234"
          "5678901234567890", "57edf4a22be3c955ac49da2e2107b67a" },
    };
    uint8_t d[MCC_MD5_DIGEST_SIZE];
    char text[33];

    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcc_md5_digest(rows[i].msg, strlen(rows[i].msg), d);
        hex(d, text);
        assert_string_equal(text, rows[i].digest);
    }
    mcc_md5_digest(NULL, 0, d);
    hex(d, text);
    assert_string_equal(text, rows[0].digest);
}

/* Fed in pieces of every size, across the 56- and 64-byte edges of the
 * padding, a message digests as it does whole. */
static void test_md5_split(void **state)
{
    uint8_t msg[300], whole[MCC_MD5_DIGEST_SIZE], parts[MCC_MD5_DIGEST_SIZE];

    (void)state;
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t len = 0; len <= sizeof msg; len += len < 130 ? 1 : 17) {
        mcc_md5_digest(msg, len, whole);
        for (size_t piece = 1; piece <= 70; piece += 3) {
            mcc_md5 m;

            mcc_md5_init(&m);
            for (size_t at = 0; at < len; at += piece)
                mcc_md5_update(&m, msg + at,
                               len - at < piece ? len - at : piece);
            mcc_md5_final(&m, parts);
            assert_memory_equal(whole, parts, sizeof whole);
        }
    }
}

/* Points per server: 160 * n shared by weight, in whole digests of 4. */
static void test_points(void **state)
{
    const mcc_server_spec equal[] = {
        { "a", 1, 1 }, { "b", 2, 1 }, { "c", 3, 1 },
    };
    const mcc_server_spec uneven[] = { { "a", 1, 1 }, { "b", 2, 2 } };
    /* 1/100 of 40 digests * 2 servers is 0.8 digests: none. */
    const mcc_server_spec tiny[] = { { "a", 1, 1 }, { "b", 2, 99 } };
    size_t per[3];
    mcc_ketama *k;

    (void)state;
    k = mcc_ketama_new(equal, 3);
    assert_non_null(k);
    assert_int_equal(mcc_ketama_points(k), 480);
    memset(per, 0, sizeof per);
    for (size_t i = 0; i < mcc_ketama_points(k); i++) {
        uint32_t v, prev = 0;
        size_t s;

        if (i > 0)
            mcc_ketama_point(k, i - 1, &prev, &s);
        mcc_ketama_point(k, i, &v, &s);
        assert_true(v >= prev);
        per[s]++;
    }
    assert_int_equal(per[0], 160);
    assert_int_equal(per[1], 160);
    assert_int_equal(per[2], 160);
    mcc_ketama_free(k);

    /* 1/3 * 80 = 26.67 digests: 26, 104 points; 2/3: 53, 212 points. */
    k = mcc_ketama_new(uneven, 2);
    assert_non_null(k);
    assert_int_equal(mcc_ketama_points(k), 104 + 212);
    mcc_ketama_free(k);

    k = mcc_ketama_new(tiny, 2);
    assert_non_null(k);
    assert_int_equal(mcc_ketama_points(k), 79 * 4);
    for (size_t i = 0; i < mcc_ketama_points(k); i++) {
        uint32_t v;
        size_t s;

        mcc_ketama_point(k, i, &v, &s);
        assert_int_equal(s, 1);
    }
    mcc_ketama_free(k);

    assert_null(mcc_ketama_new(equal, 0));
    mcc_ketama_free(NULL);
}

/* Makes the i-th test name into buf (returns its length): printable
 * names like an application's, then arbitrary bytes (NUL included) of
 * 1 to 250 bytes. */
static size_t make_name(uint32_t i, uint8_t *buf)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15u + 1;
    size_t len;

    if (i % 3 == 0)
        return (size_t)sprintf((char *)buf, "user:%u:quota", (unsigned)i);
    if (i % 3 == 1)
        return (size_t)sprintf((char *)buf, "job-%x", (unsigned)i);
    x ^= x >> 31;
    len = 1 + (size_t)(x % 250);
    for (size_t j = 0; j < len; j++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[j] = (uint8_t)x;
    }
    return len;
}

/* A linear scan of the circle: the first point at or past the key's
 * hash, else the first point; from there the first server up. */
static size_t scan(const mcc_ketama *k, const uint8_t *key, size_t len,
                   const bool *up, size_t nservers)
{
    uint32_t h = nservers == 1 ? 0 : mcc_ketama_hash(key, len), v;
    size_t n = mcc_ketama_points(k), at = 0, s;

    while (at < n) {
        mcc_ketama_point(k, at, &v, &s);
        if (v >= h)
            break;
        at++;
    }
    for (size_t step = 0; step < n; step++) {
        mcc_ketama_point(k, (at + step) % n, &v, &s);
        if (up == NULL || up[s])
            return s;
    }
    return (size_t)-1;
}

/* The lists the comparisons use: 1, 2, 3 and 10 servers with distinct
 * weights, a server on the default port 11211 (hashed without its port),
 * names, IPv4 and IPv6 literals. */
static const mcc_server_spec list1[] = { { "127.0.0.1", 11211, 1 } };
static const mcc_server_spec list2[] = {
    { "10.0.0.1", 11211, 3 }, { "10.0.0.2", 11215, 5 },
};
static const mcc_server_spec list3[] = {
    { "localhost", 11215, 2 }, { "127.0.0.1", 11211, 1 },
    { "::1", 11216, 7 },
};
static const mcc_server_spec list10[] = {
    { "cache1.example.com", 11211, 1 }, { "cache2.example.com", 11211, 2 },
    { "cache3.example.com", 11212, 3 }, { "10.1.2.3", 11215, 4 },
    { "10.1.2.4", 11215, 5 }, { "10.1.2.5", 20000, 6 },
    { "fe80::1", 11211, 7 }, { "db-7", 1, 8 }, { "db-8", 65535, 9 },
    { "db-9", 11213, 10 },
};
static const struct {
    const mcc_server_spec *servers;
    size_t n;
} lists[] = {
    { list1, 1 }, { list2, 2 }, { list3, 3 }, { list10, 10 },
};

/* Lookups agree with the plain scan, for every list. */
static void test_lookup_scan(void **state)
{
    uint8_t name[256];

    (void)state;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        mcc_ketama *k = mcc_ketama_new(lists[l].servers, lists[l].n);

        assert_non_null(k);
        for (uint32_t i = 0; i < 20000; i++) {
            size_t len = make_name(i, name);

            assert_int_equal(mcc_ketama_lookup(k, name, len),
                             scan(k, name, len, NULL, lists[l].n));
        }
        mcc_ketama_free(k);
    }
}

/* A key hashing past the last point wraps to the first point's server. */
static void test_lookup_wrap(void **state)
{
    uint8_t name[256];
    bool wrapped = false;
    mcc_ketama *k = mcc_ketama_new(list3, 3);
    uint32_t last, first;
    size_t s_last, s_first;

    (void)state;
    assert_non_null(k);
    mcc_ketama_point(k, mcc_ketama_points(k) - 1, &last, &s_last);
    mcc_ketama_point(k, 0, &first, &s_first);
    for (uint32_t i = 0; i < 200000 && !wrapped; i++) {
        size_t len = make_name(i, name);

        if (mcc_ketama_hash(name, len) > last) {
            assert_int_equal(mcc_ketama_lookup(k, name, len), s_first);
            wrapped = true;
        }
    }
    assert_true(wrapped);
    mcc_ketama_free(k);
}

/* lookup_up: with all up it is lookup; names of live servers never
 * move; names of a down server go to the next live point clockwise;
 * with none up there is no server. */
static void test_lookup_up(void **state)
{
    uint8_t name[256];
    bool up[10];
    mcc_ketama *k = mcc_ketama_new(list10, 10);

    (void)state;
    assert_non_null(k);
    for (size_t down = 0; down < 10; down++) {
        size_t moved = 0;

        for (size_t i = 0; i < 10; i++)
            up[i] = i != down && i != (down + 3) % 10;
        for (uint32_t i = 0; i < 5000; i++) {
            size_t len = make_name(i, name);
            size_t home = mcc_ketama_lookup(k, name, len);
            size_t got = mcc_ketama_lookup_up(k, name, len, up);

            assert_int_equal(got, scan(k, name, len, up, 10));
            assert_true(up[got]);
            if (up[home])
                assert_int_equal(got, home);
            else
                moved++;
        }
        assert_true(moved > 0);
    }
    for (size_t i = 0; i < 10; i++)
        up[i] = true;
    for (uint32_t i = 0; i < 5000; i++) {
        size_t len = make_name(i, name);

        assert_int_equal(mcc_ketama_lookup_up(k, name, len, up),
                         mcc_ketama_lookup(k, name, len));
    }
    for (size_t i = 0; i < 10; i++)
        up[i] = false;
    assert_int_equal(mcc_ketama_lookup_up(k, "x", 1, up), (size_t)-1);
    up[7] = true;
    assert_int_equal(mcc_ketama_lookup_up(k, "x", 1, up), 7);
    mcc_ketama_free(k);
}

#ifdef MCC_TEST_LIBMEMCACHED
/* libmemcached's client for a list, in weighted ketama (which also
 * makes its key hash MD5). */
static memcached_st *reference(const mcc_server_spec *servers, size_t n)
{
    memcached_st *memc = memcached_create(NULL);

    assert_non_null(memc);
    assert_int_equal(memcached_behavior_set(memc,
                                            MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                            MEMCACHED_DISTRIBUTION_CONSISTENT),
                     MEMCACHED_SUCCESS);
    assert_int_equal(memcached_behavior_set(memc,
                                            MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED,
                                            1), MEMCACHED_SUCCESS);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(memcached_server_add_with_weight(memc,
                                                          servers[i].host,
                                                          servers[i].port,
                                                          servers[i].weight),
                         MEMCACHED_SUCCESS);
    assert_int_equal(memcached_server_count(memc), n);
    return memc;
}

/* Every one of 100,000 names goes where libmemcached sends it, on each
 * list; and every server of a list gets some. */
static void test_libmemcached(void **state)
{
    uint8_t name[256];

    (void)state;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        const mcc_server_spec *servers = lists[l].servers;
        size_t n = lists[l].n, per[10] = { 0 };
        memcached_st *memc = reference(servers, n);
        mcc_ketama *k = mcc_ketama_new(servers, n);

        assert_non_null(k);
        for (uint32_t i = 0; i < NAMES; i++) {
            size_t len = make_name(i, name);
            uint32_t want = memcached_generate_hash(memc, (const char *)name,
                                                    len);
            size_t got = mcc_ketama_lookup(k, name, len);

            if (got != want)
                fail_msg("list of %zu servers, name %u: ketama says %zu, "
                         "libmemcached %u", n, (unsigned)i, got,
                         (unsigned)want);
            per[got]++;
        }
        for (size_t i = 0; i < n; i++)
            assert_true(per[i] > 0);
        mcc_ketama_free(k);
        memcached_free(memc);
    }
}

/* The key hash is libmemcached's MD5 hash, at the lengths around MD5's
 * block edges. */
static void test_libmemcached_hash(void **state)
{
    uint8_t name[300];

    (void)state;
    for (size_t i = 0; i < sizeof name; i++)
        name[i] = (uint8_t)(i * 31 + 1);
    for (size_t len = 0; len <= sizeof name; len++)
        assert_int_equal(mcc_ketama_hash(name, len),
                         memcached_generate_hash_value((const char *)name,
                                                       len,
                                                       MEMCACHED_HASH_MD5));
}
#else
/* Without libmemcached there is nothing to compare with. */
static void test_libmemcached(void **state)
{
    (void)state;
    skip();
}

/* Same. */
static void test_libmemcached_hash(void **state)
{
    (void)state;
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_vectors),
        cmocka_unit_test(test_md5_split),
        cmocka_unit_test(test_points),
        cmocka_unit_test(test_lookup_scan),
        cmocka_unit_test(test_lookup_wrap),
        cmocka_unit_test(test_lookup_up),
        cmocka_unit_test(test_libmemcached_hash),
        cmocka_unit_test(test_libmemcached),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
