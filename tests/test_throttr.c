/* test_throttr.c: unit tests of protocol/throttr.c, the Throttr v5 codec.
 * Every example of the Throttr specification is here byte for byte (it
 * gives them with 2-byte values; the same requests with 1, 4 and 8 are
 * written out too), decoded whole, at every prefix and in a stream; the
 * requests that frame but cannot succeed, the unknown request types and
 * the values that do not fit the configured size each have a case. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/throttr.h"

/* Parses hex ("01 02 ff", spaces ignored) into out; returns the bytes. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;

    for (const char *p = hex; *p != '\0'; p++) {
        int v;
        if (*p >= '0' && *p <= '9')
            v = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            v = *p - 'a' + 10;
        else
            continue;
        if (hi < 0) {
            hi = v;
        } else {
            assert_true(n < cap);
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    assert_int_equal(hi, -1);
    return n;
}

/* Asserts that p[0..n) is exactly hex. */
static void assert_bytes(const uint8_t *p, size_t n, const char *hex)
{
    uint8_t want[512];
    size_t wn = unhex(hex, want, sizeof(want));

    assert_int_equal(n, wn);
    assert_memory_equal(p, want, n);
}

static const uint8_t key5[5] = {7, 7, 7, 7, 7};

/* The specification's examples with each value size: INSERT quota 2,
 * seconds, TTL 3, key 07 x 5; QUERY's success (quota 2, seconds, 3 left);
 * UPDATE quota increase by 2. The 2-byte row is the specification's. */
typedef struct example {
    unsigned vsize;
    const char *insert, *query_answer, *update;
} example;

static const example examples[] = {
    {1, "01 02 04 03 05 0707070707", "01 02 04 03",
     "03 00 01 02 05 0707070707"},
    {2, "01 0200 04 0300 05 0707070707", "01 0200 04 0300",
     "03 00 01 0200 05 0707070707"},
    {4, "01 02000000 04 03000000 05 0707070707", "01 02000000 04 03000000",
     "03 00 01 02000000 05 0707070707"},
    {8, "01 0200000000000000 04 0300000000000000 05 0707070707",
     "01 0200000000000000 04 0300000000000000",
     "03 00 01 0200000000000000 05 0707070707"},
};

/* Same at every size: QUERY and PURGE carry no value. PURGE's type byte
 * is 0x04 as its field definition says (the specification's example
 * labels it 0x02), UPDATE's buffer is the one its explanation shows. */
#define QUERY_HEX "02 05 0707070707"
#define PURGE_HEX "04 05 0707070707"

static void test_spec_examples_encode(void **state)
{
    uint8_t p[CNT_THROTTR_REQUEST_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        const example *e = &examples[i];
        size_t n = cnt_throttr_encode_insert(p, e->vsize, 2, 0x04, 3, key5,
                                             5);
        assert_bytes(p, n, e->insert);
        n = cnt_throttr_encode_query_answer(p, e->vsize, 2, 0x04, 3);
        assert_bytes(p, n, e->query_answer);
        n = cnt_throttr_encode_update(p, e->vsize, CNT_THROTTR_ATTR_QUOTA,
                                      CNT_THROTTR_INCREASE, 2, key5, 5);
        assert_bytes(p, n, e->update);
        assert_bytes(p, cnt_throttr_encode_query(p, key5, 5), QUERY_HEX);
        assert_bytes(p, cnt_throttr_encode_purge(p, key5, 5), PURGE_HEX);
        assert_bytes(p, cnt_throttr_encode_status(p, true), "01");
        assert_bytes(p, cnt_throttr_encode_status(p, false), "00");
    }
}

/* Decodes buf whole, checking it takes exactly len bytes. */
static cnt_throttr_request decode_whole(const uint8_t *buf, size_t len,
                                        unsigned vsize)
{
    cnt_throttr_request r;
    size_t need = 0;

    assert_int_equal(cnt_throttr_decode(buf, len, vsize, &r, &need),
                     CNT_THROTTR_OK);
    assert_int_equal(r.size, len);
    return r;
}

static void test_spec_examples_decode(void **state)
{
    uint8_t buf[CNT_THROTTR_REQUEST_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        const example *e = &examples[i];
        size_t n = unhex(e->insert, buf, sizeof(buf));
        cnt_throttr_request r = decode_whole(buf, n, e->vsize);
        assert_int_equal(r.type, CNT_THROTTR_INSERT);
        assert_true(r.valid);
        assert_int_equal(r.quota, 2);
        assert_int_equal(r.ttl_type, 0x04);
        assert_int_equal(r.ttl, 3);
        assert_int_equal(r.key_len, 5);
        assert_memory_equal(r.key, key5, 5);
        assert_int_equal(cnt_throttr_unit_of(r.ttl_type), 3);

        n = unhex(e->update, buf, sizeof(buf));
        r = decode_whole(buf, n, e->vsize);
        assert_int_equal(r.type, CNT_THROTTR_UPDATE);
        assert_true(r.valid);
        assert_int_equal(r.attribute, CNT_THROTTR_ATTR_QUOTA);
        assert_int_equal(r.change, CNT_THROTTR_INCREASE);
        assert_int_equal(r.value, 2);
        assert_memory_equal(r.key, key5, 5);

        n = unhex(QUERY_HEX, buf, sizeof(buf));
        r = decode_whole(buf, n, e->vsize);
        assert_int_equal(r.type, CNT_THROTTR_QUERY);
        assert_true(r.valid);
        assert_memory_equal(r.key, key5, 5);

        n = unhex(PURGE_HEX, buf, sizeof(buf));
        r = decode_whole(buf, n, e->vsize);
        assert_int_equal(r.type, CNT_THROTTR_PURGE);
        assert_true(r.valid);

        /* The answers, as a client reads them. */
        bool ok = false;
        uint64_t quota = 0, ttl = 0;
        uint8_t type = 0;
        size_t size = 0, need = 0;
        n = unhex(e->query_answer, buf, sizeof(buf));
        assert_int_equal(cnt_throttr_decode_answer(buf, n, e->vsize,
                                                   CNT_THROTTR_QUERY, &ok,
                                                   &quota, &type, &ttl,
                                                   &size, &need),
                         CNT_THROTTR_OK);
        assert_true(ok);
        assert_int_equal(size, n);
        assert_int_equal(quota, 2);
        assert_int_equal(type, 0x04);
        assert_int_equal(ttl, 3);
        buf[0] = 0x00;
        assert_int_equal(cnt_throttr_decode_answer(buf, 1, e->vsize,
                                                   CNT_THROTTR_QUERY, &ok,
                                                   &quota, &type, &ttl,
                                                   &size, &need),
                         CNT_THROTTR_OK);
        assert_false(ok);
        assert_int_equal(size, 1);
        /* A partial success asks for the rest. */
        buf[0] = 0x01;
        assert_int_equal(cnt_throttr_decode_answer(buf, 1, e->vsize,
                                                   CNT_THROTTR_QUERY, &ok,
                                                   &quota, &type, &ttl,
                                                   &size, &need),
                         CNT_THROTTR_NEED_MORE);
        assert_int_equal(need, 2 + 2 * e->vsize);
    }
}

/* All four requests in one stream, decoded at every split: each prefix
 * shorter than a request asks for more (never more than the request
 * needs), and the requests come out in order. */
static void test_split_at_every_byte(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        const example *e = &examples[i];
        uint8_t stream[4 * CNT_THROTTR_REQUEST_MAX];
        size_t ends[4], len = 0;
        len += unhex(e->insert, stream + len, sizeof(stream) - len);
        ends[0] = len;
        len += unhex(QUERY_HEX, stream + len, sizeof(stream) - len);
        ends[1] = len;
        len += unhex(e->update, stream + len, sizeof(stream) - len);
        ends[2] = len;
        len += unhex(PURGE_HEX, stream + len, sizeof(stream) - len);
        ends[3] = len;
        static const uint8_t types[4] = {CNT_THROTTR_INSERT,
                                         CNT_THROTTR_QUERY,
                                         CNT_THROTTR_UPDATE,
                                         CNT_THROTTR_PURGE};
        for (size_t cut = 0; cut <= len; cut++) {
            size_t at = 0;
            unsigned k = 0;
            for (;;) {
                cnt_throttr_request r;
                size_t need = 0;
                cnt_throttr_decode_result d =
                    cnt_throttr_decode(stream + at, cut - at, e->vsize, &r,
                                       &need);
                if (d == CNT_THROTTR_NEED_MORE) {
                    assert_true(need > cut - at);
                    assert_true(k == 4 || at + need <= ends[k]);
                    break;
                }
                assert_int_equal(d, CNT_THROTTR_OK);
                assert_int_equal(r.type, types[k]);
                at += r.size;
                assert_int_equal(at, ends[k]);
                k++;
            }
            /* Every request that is whole within cut came out. */
            unsigned whole = 0;
            while (whole < 4 && ends[whole] <= cut)
                whole++;
            assert_int_equal(k, whole);
        }
    }
}

/* Framed, but answered with the failure byte: an unknown TTL type, a key
 * length of 0, an unknown attribute or change. */
static void test_framed_but_invalid(void **state)
{
    static const struct {
        unsigned vsize;
        const char *hex;
    } rows[] = {
        {2, "01 0200 00 0300 05 0707070707"},    /* TTL type 0 */
        {2, "01 0200 07 0300 05 0707070707"},    /* TTL type 7 */
        {1, "01 02 ff 03 01 41"},                /* TTL type 0xff */
        {2, "01 0200 04 0300 00"},               /* key length 0 */
        {2, "02 00"},                            /* QUERY, empty key */
        {8, "04 00"},                            /* PURGE, empty key */
        {4, "03 00 01 02000000 00"},             /* UPDATE, empty key */
        {4, "03 02 01 02000000 01 41"},          /* attribute 2 */
        {4, "03 01 03 02000000 01 41"},          /* change 3 */
    };
    uint8_t buf[64];

    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t n = unhex(rows[i].hex, buf, sizeof(buf));
        cnt_throttr_request r = decode_whole(buf, n, rows[i].vsize);
        assert_false(r.valid);
    }
    /* Every TTL type the specification lists is known, and maps onto the
     * core's units in order. */
    for (uint8_t t = 0x01; t <= 0x06; t++) {
        size_t n = cnt_throttr_encode_insert(buf, 2, 1, t, 1, "k", 1);
        cnt_throttr_request r = decode_whole(buf, n, 2);
        assert_true(r.valid);
        assert_int_equal(cnt_throttr_unit_of(t), t - 1);
        assert_int_equal(cnt_throttr_type_of_unit((uint8_t)(t - 1)), t);
    }
}

/* An unknown request type cannot be framed, whatever follows. */
static void test_unknown_type(void **state)
{
    static const uint8_t bad[] = {0x00, 0x05, 0x06, 0x7f, 0x80, 0xff};
    uint8_t buf[8] = {0, 5, 7, 7, 7, 7, 7, 0};

    (void)state;
    for (size_t i = 0; i < sizeof(bad); i++) {
        cnt_throttr_request r;
        size_t need = 0;
        buf[0] = bad[i];
        assert_int_equal(cnt_throttr_decode(buf, 1, 2, &r, &need),
                         CNT_THROTTR_BAD_FRAMING);
        assert_int_equal(cnt_throttr_decode(buf, sizeof(buf), 2, &r, &need),
                         CNT_THROTTR_BAD_FRAMING);
    }
    size_t need = 0;
    cnt_throttr_request r;
    assert_int_equal(cnt_throttr_decode(buf, 0, 2, &r, &need),
                     CNT_THROTTR_NEED_MORE);
    assert_int_equal(need, 1);
    /* An answer byte other than 0 or 1 cannot be read either. */
    bool ok;
    uint64_t q, t;
    uint8_t ty;
    size_t size;
    buf[0] = 0x02;
    assert_int_equal(cnt_throttr_decode_answer(buf, 1, 2, CNT_THROTTR_INSERT,
                                               &ok, &q, &ty, &t, &size,
                                               &need),
                     CNT_THROTTR_BAD_FRAMING);
}

/* Values that do not fit the configured size: a QUERY's answer is the
 * failure byte, an encoder writes nothing; the largest that fit do. */
static void test_oversize_values(void **state)
{
    uint8_t p[CNT_THROTTR_REQUEST_MAX];
    static const unsigned sizes[] = {1, 2, 4};

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned v = sizes[i];
        uint64_t max = ((uint64_t)1 << (8 * v)) - 1;
        assert_true(cnt_throttr_fits(v, max));
        assert_false(cnt_throttr_fits(v, max + 1));
        assert_bytes(p, cnt_throttr_encode_query_answer(p, v, max + 1, 4, 1),
                     "00");
        assert_bytes(p, cnt_throttr_encode_query_answer(p, v, 1, 4, max + 1),
                     "00");
        assert_int_equal(cnt_throttr_encode_query_answer(p, v, max, 4, max),
                         2 + 2 * v);
        assert_int_equal(cnt_throttr_encode_insert(p, v, max + 1, 4, 1, "k",
                                                   1), 0);
        assert_int_equal(cnt_throttr_encode_insert(p, v, 1, 4, max + 1, "k",
                                                   1), 0);
        assert_int_equal(cnt_throttr_encode_update(p, v, 0, 0, max + 1, "k",
                                                   1), 0);
    }
    assert_true(cnt_throttr_fits(8, UINT64_MAX));
    assert_bytes(p, cnt_throttr_encode_query_answer(p, 8, UINT64_MAX, 6,
                                                    UINT64_MAX),
                 "01 ffffffffffffffff 06 ffffffffffffffff");
    /* A key of 255 bytes is the longest; 256 does not fit its length. */
    uint8_t key[256];
    memset(key, 'k', sizeof(key));
    size_t n = cnt_throttr_encode_insert(p, 8, 1, 4, 1, key, 255);
    assert_int_equal(n, CNT_THROTTR_REQUEST_MAX);
    cnt_throttr_request r = decode_whole(p, n, 8);
    assert_int_equal(r.key_len, 255);
    assert_int_equal(cnt_throttr_encode_query(p, key, 256), 0);
    assert_int_equal(cnt_throttr_encode_purge(p, key, 256), 0);
    assert_true(cnt_throttr_value_size_ok(1) && cnt_throttr_value_size_ok(2) &&
                cnt_throttr_value_size_ok(4) && cnt_throttr_value_size_ok(8));
    assert_false(cnt_throttr_value_size_ok(0) ||
                 cnt_throttr_value_size_ok(3) ||
                 cnt_throttr_value_size_ok(16));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_examples_encode),
        cmocka_unit_test(test_spec_examples_decode),
        cmocka_unit_test(test_split_at_every_byte),
        cmocka_unit_test(test_framed_but_invalid),
        cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_oversize_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
