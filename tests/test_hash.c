/* test_hash.c: SipHash-2-4 against the published test vectors (key
 * 00 01 .. 0f, message 00 01 .. len-1) and the random key source. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/core/hash.h"

/* Published SipHash-2-4 outputs for chosen message lengths: each length
 * exercises a different split into 8-byte words and a tail. */
static const struct {
    size_t len;             /* message = bytes 00 01 .. len-1 */
    uint64_t expected;      /* 64-bit output */
} vectors[] = {
    { 0,  UINT64_C(0x726fdb47dd0e0e31) },   /* empty: only the length word */
    { 1,  UINT64_C(0x74f839c593dc67fd) },   /* one tail byte */
    { 7,  UINT64_C(0xab0200f58b01d137) },   /* longest tail, no whole word */
    { 8,  UINT64_C(0x93f5f5799a932462) },   /* one whole word, empty tail */
    { 9,  UINT64_C(0x9e0082df0ba9e4b0) },   /* word + 1 tail byte */
    { 15, UINT64_C(0xa129ca6149be45e5) },   /* word + 7 tail bytes */
    { 16, UINT64_C(0x3f2acc7f57c29bdb) },   /* two words */
    { 17, UINT64_C(0x699ae9f52cbe4794) },   /* two words + 1 */
    { 63, UINT64_C(0x958a324ceb064572) },   /* seven words + 7 */
};

/* Key bytes 00..0f read little-endian, as the algorithm defines. */
static const cnt_hash_key vector_key = {
    UINT64_C(0x0706050403020100), UINT64_C(0x0f0e0d0c0b0a0908)
};

static void test_hash_vectors(void **state)
{
    uint8_t msg[64];

    (void)state;
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint64_t got = cnt_hash(&vector_key, msg, vectors[i].len);
        assert_int_equal(got, vectors[i].expected);
    }
}

/* The output depends on the key: a name hashes differently per process. */
static void test_hash_keyed(void **state)
{
    cnt_hash_key a, b;

    (void)state;
    assert_int_equal(cnt_hash_key_random(&a), 0);
    assert_int_equal(cnt_hash_key_random(&b), 0);
    /* 128 random bits: equal keys would mean a broken random source. */
    assert_false(a.k0 == b.k0 && a.k1 == b.k1);
    assert_int_not_equal(cnt_hash(&a, "counter", 7),
                         cnt_hash(&b, "counter", 7));
    assert_int_equal(cnt_hash(&a, "counter", 7), cnt_hash(&a, "counter", 7));
}

/* Runs the hash tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_vectors),
        cmocka_unit_test(test_hash_keyed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
