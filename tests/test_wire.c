/* test_wire.c: unit tests of protocol/wire.c and the inline helpers of
 * wire.h: status texts, opcode and event names, the consistency of the
 * opcode table the request decoder is driven by, and the big-endian byte
 * helpers. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "protocol/response.h"
#include "protocol/wire.h"

/* Status texts and opcode names. */
static void test_status_text_and_opcode_name(void **state)
{
    (void)state;
    assert_string_equal(cnt_status_text(CNT_STATUS_OK), "");
    assert_string_equal(cnt_status_text(CNT_STATUS_INVALID),
                        "Invalid arguments");
    assert_null(cnt_status_text((cnt_status)0x05));
    assert_string_equal(cnt_opcode_name(CNT_OP_NOOP), "noop");
    assert_string_equal(cnt_opcode_name(CNT_OP_GET), "get");
    assert_string_equal(cnt_opcode_name(CNT_OP_ACQUIRE), "acquire");
    assert_string_equal(cnt_opcode_name(CNT_OP_RELEASE), "release");
    assert_string_equal(cnt_opcode_name(CNT_OP_STATS), "stats");
    assert_string_equal(cnt_opcode_name(CNT_OP_DUMP), "dump");
    assert_null(cnt_opcode_name(0x12));
    assert_null(cnt_opcode_name(0x24));
}

/* The extensions' status texts, opcode names and event names. */
static void test_extension_texts_and_names(void **state)
{
    (void)state;
    assert_string_equal(cnt_status_text(CNT_STATUS_EXCEEDS_MAXIMUM),
                        "Exceeds maximum");
    assert_string_equal(cnt_status_text(CNT_STATUS_ALREADY_ACTIVE),
                        "Already active");
    assert_string_equal(cnt_status_text(CNT_STATUS_UNKNOWN_GROUP),
                        "Unknown group");
    assert_string_equal(cnt_status_text(CNT_STATUS_TOO_MANY_WAITS),
                        "Too many waits");
    assert_string_equal(cnt_status_text(CNT_STATUS_LEASE_EXPIRED),
                        "Lease expired");
    assert_int_equal(CNT_STATUS_EXCEEDS_MAXIMUM, 0x23);
    assert_int_equal(CNT_STATUS_LEASE_EXPIRED, 0x27);
    assert_string_equal(cnt_status_text(CNT_STATUS_EXISTS), "Exists");
    assert_string_equal(cnt_status_text(CNT_STATUS_BELOW_ZERO),
                        "Below zero");
    assert_int_equal(CNT_STATUS_EXISTS, 0x28);
    assert_int_equal(CNT_STATUS_BELOW_ZERO, 0x29);
    assert_null(cnt_status_text((cnt_status)0x2a));
    /* Every status text fits the room an error response is given. */
    for (unsigned st = 0; st < 256; st++) {
        const char *text = cnt_status_text((cnt_status)st);

        if (text != NULL)
            assert_true(CNT_HEADER_SIZE + strlen(text) <=
                        CNT_ERROR_RESPONSE_MAX);
    }

    assert_string_equal(cnt_opcode_name(CNT_OP_WAIT_ACQUIRE),
                        "wait_acquire");
    assert_string_equal(cnt_opcode_name(CNT_OP_RENEW), "renew");
    assert_string_equal(cnt_opcode_name(CNT_OP_WAIT_RELEASE),
                        "wait_release");
    assert_string_equal(cnt_opcode_name(CNT_OP_QUEUES), "queues");
    assert_int_equal(CNT_OP_WAIT_ACQUIRE, 0x20);
    assert_int_equal(CNT_OP_QUEUES, 0x23);

    assert_string_equal(cnt_event_name(CNT_EVENT_GRANTED), "granted");
    assert_string_equal(cnt_event_name(CNT_EVENT_TIMED_OUT), "timed_out");
    assert_string_equal(cnt_event_name(CNT_EVENT_LEASE_EXPIRED),
                        "lease_expired");
    assert_string_equal(cnt_event_name(CNT_EVENT_SHUTDOWN), "shutdown");
    assert_null(cnt_event_name(0x00));
    assert_null(cnt_event_name(0x05));
    assert_int_equal(CNT_MAGIC_NOTICE, 0x92);
    assert_int_equal(CNT_USE_GROUP_DEFAULT, 0xffffffffu);
}

/* Checks that a u32 or u16 field at off lies inside a row's fixed part. */
static void check_field(uint8_t off, size_t width, const cnt_opcode_row *row)
{
    if (off == CNT_FIELD_NONE)
        return;
    assert_true((size_t)off + width <= row->fixed);
}

/* Every row of the opcode table is one the decoder can trust: a name iff
 * the opcode is known, fields inside the fixed part, the name length right
 * before the name, checks only over fields the body has, and a fixed part
 * that leaves room for the longest name within CNT_BODY_MAX, which one
 * row's fixed part reaches exactly (so CNT_BODY_MAX is no larger than it
 * needs to be). */
static void test_opcode_table_rows(void **state)
{
    unsigned largest = 0;

    (void)state;
    for (unsigned op = 0; op < 256; op++) {
        const cnt_opcode_row *row = &cnt_opcode_table[op];

        assert_true(row->body <= CNT_BODY_NEEDED);
        assert_ptr_equal(cnt_opcode_name((uint8_t)op), row->name);
        if (row->body == CNT_BODY_UNKNOWN) {
            assert_null(row->name);
            continue;
        }
        assert_non_null(row->name);
        assert_true(strlen(row->name) > 0);
        if (row->body == CNT_BODY_SKIP) {
            /* Nothing of a skipped body is read: it may not be buffered. */
            assert_int_equal(row->fixed, 0);
            assert_int_equal(row->off_resources, CNT_FIELD_NONE);
            assert_int_equal(row->off_maximum, CNT_FIELD_NONE);
            assert_int_equal(row->off_wait, CNT_FIELD_NONE);
            assert_int_equal(row->off_lease, CNT_FIELD_NONE);
            assert_int_equal(row->off_namelen, CNT_FIELD_NONE);
            assert_int_equal(row->checks, 0);
            continue;
        }
        assert_true((uint32_t)row->fixed + CNT_NAME_MAX <= CNT_BODY_MAX);
        if (row->fixed > largest)
            largest = row->fixed;
        check_field(row->off_resources, 4, row);
        check_field(row->off_maximum, 4, row);
        check_field(row->off_wait, 4, row);
        check_field(row->off_lease, 4, row);
        check_field(row->off_namelen, 2, row);
        if (row->off_namelen != CNT_FIELD_NONE)
            assert_int_equal(row->off_namelen + 2, row->fixed);
        assert_int_equal(row->checks & ~(CNT_CHECK_RESOURCES_NONZERO |
                                         CNT_CHECK_MAXIMUM_COVERS |
                                         CNT_CHECK_LEASE_NONZERO), 0);
        if (row->checks & CNT_CHECK_RESOURCES_NONZERO)
            assert_true(row->off_resources != CNT_FIELD_NONE);
        if (row->checks & CNT_CHECK_MAXIMUM_COVERS)
            assert_true(row->off_resources != CNT_FIELD_NONE &&
                        row->off_maximum != CNT_FIELD_NONE);
        if (row->checks & CNT_CHECK_LEASE_NONZERO)
            assert_true(row->off_lease != CNT_FIELD_NONE);
    }
    assert_int_equal(largest + CNT_NAME_MAX, CNT_BODY_MAX);
    assert_int_equal(CNT_REQUEST_MAX, CNT_HEADER_SIZE + CNT_BODY_MAX);
}

/* The table knows exactly the reference's opcodes and the extensions',
 * with their layouts; the reference's rows read no extension field. */
static void test_opcode_table_reference_rows(void **state)
{
    const cnt_opcode_row *get = &cnt_opcode_table[CNT_OP_GET];
    const cnt_opcode_row *acq = &cnt_opcode_table[CNT_OP_ACQUIRE];
    const cnt_opcode_row *rel = &cnt_opcode_table[CNT_OP_RELEASE];
    unsigned known = 0;

    (void)state;
    for (unsigned op = 0; op < 256; op++)
        if (cnt_opcode_table[op].body != CNT_BODY_UNKNOWN)
            known++;
    assert_int_equal(known, 6 + 4);
    assert_int_equal(cnt_opcode_table[CNT_OP_NOOP].body, CNT_BODY_SKIP);
    assert_int_equal(cnt_opcode_table[CNT_OP_STATS].body, CNT_BODY_SKIP);
    assert_int_equal(cnt_opcode_table[CNT_OP_DUMP].body, CNT_BODY_SKIP);

    assert_int_equal(get->body, CNT_BODY_NEEDED);
    assert_int_equal(get->fixed, 2);
    assert_int_equal(get->off_namelen, 0);
    assert_int_equal(get->off_resources, CNT_FIELD_NONE);
    assert_int_equal(get->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(get->off_wait, CNT_FIELD_NONE);
    assert_int_equal(get->off_lease, CNT_FIELD_NONE);
    assert_int_equal(get->checks, 0);

    assert_int_equal(acq->body, CNT_BODY_NEEDED);
    assert_int_equal(acq->fixed, 10);
    assert_int_equal(acq->off_resources, 0);
    assert_int_equal(acq->off_maximum, 4);
    assert_int_equal(acq->off_namelen, 8);
    assert_int_equal(acq->off_wait, CNT_FIELD_NONE);
    assert_int_equal(acq->off_lease, CNT_FIELD_NONE);
    assert_int_equal(acq->checks,
                     CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS);

    /* Release of 0 resources is legal: no check on it. */
    assert_int_equal(rel->body, CNT_BODY_NEEDED);
    assert_int_equal(rel->fixed, 6);
    assert_int_equal(rel->off_resources, 0);
    assert_int_equal(rel->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(rel->off_namelen, 4);
    assert_int_equal(rel->off_wait, CNT_FIELD_NONE);
    assert_int_equal(rel->off_lease, CNT_FIELD_NONE);
    assert_int_equal(rel->checks, 0);
}

/* The extension rows, as spec'd: Wait_acquire (18 fixed bytes), Renew (6),
 * Wait_release (2), Queues (body skipped). */
static void test_opcode_table_extension_rows(void **state)
{
    const cnt_opcode_row *wacq = &cnt_opcode_table[CNT_OP_WAIT_ACQUIRE];
    const cnt_opcode_row *renew = &cnt_opcode_table[CNT_OP_RENEW];
    const cnt_opcode_row *wrel = &cnt_opcode_table[CNT_OP_WAIT_RELEASE];

    (void)state;
    assert_int_equal(cnt_opcode_table[CNT_OP_QUEUES].body, CNT_BODY_SKIP);

    /* No maximum-covers check: the server answers that (0x23), and a
     * maximum of 0 means the group's. */
    assert_int_equal(wacq->body, CNT_BODY_NEEDED);
    assert_int_equal(wacq->fixed, 18);
    assert_int_equal(wacq->off_resources, 0);
    assert_int_equal(wacq->off_maximum, 4);
    assert_int_equal(wacq->off_wait, 8);
    assert_int_equal(wacq->off_lease, 12);
    assert_int_equal(wacq->off_namelen, 16);
    assert_int_equal(wacq->checks, CNT_CHECK_RESOURCES_NONZERO);

    assert_int_equal(renew->body, CNT_BODY_NEEDED);
    assert_int_equal(renew->fixed, 6);
    assert_int_equal(renew->off_lease, 0);
    assert_int_equal(renew->off_namelen, 4);
    assert_int_equal(renew->off_resources, CNT_FIELD_NONE);
    assert_int_equal(renew->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(renew->off_wait, CNT_FIELD_NONE);
    assert_int_equal(renew->checks, CNT_CHECK_LEASE_NONZERO);

    assert_int_equal(wrel->body, CNT_BODY_NEEDED);
    assert_int_equal(wrel->fixed, 2);
    assert_int_equal(wrel->off_namelen, 0);
    assert_int_equal(wrel->off_resources, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_wait, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_lease, CNT_FIELD_NONE);
    assert_int_equal(wrel->checks, 0);
}

/* The byte helpers are big-endian and read back what they wrote. */
static void test_byte_helpers(void **state)
{
    uint8_t b[6] = { 0 };

    (void)state;
    cnt_put_u32(b + 1, 0x01020304u);
    assert_int_equal(b[0], 0x00);
    assert_int_equal(b[1], 0x01);
    assert_int_equal(b[4], 0x04);
    assert_int_equal(b[5], 0x00);
    assert_int_equal(cnt_get_u32(b + 1), 0x01020304u);
    cnt_put_u32(b, 0xffffffffu);
    assert_int_equal(cnt_get_u32(b), 0xffffffffu);
    cnt_put_u16(b + 4, 0xa1b2);
    assert_int_equal(b[4], 0xa1);
    assert_int_equal(b[5], 0xb2);
    assert_int_equal(cnt_get_u16(b + 4), 0xa1b2);
}

/* The 64-bit helpers are big-endian too (lease ids). */
static void test_byte_helpers_u64(void **state)
{
    uint8_t b[10] = { 0 };

    (void)state;
    cnt_put_u64(b + 1, 0x0102030405060708ull);
    assert_int_equal(b[0], 0x00);
    assert_int_equal(b[1], 0x01);
    assert_int_equal(b[8], 0x08);
    assert_int_equal(b[9], 0x00);
    assert_true(cnt_get_u64(b + 1) == 0x0102030405060708ull);
    cnt_put_u64(b, UINT64_MAX);
    assert_true(cnt_get_u64(b) == UINT64_MAX);
    cnt_put_u64(b, 0x8000000000000001ull);
    assert_int_equal(b[0], 0x80);
    assert_int_equal(b[7], 0x01);
    assert_true(cnt_get_u64(b) == 0x8000000000000001ull);
}

/* Runs the wire tests. */
int main(void)
{
    const struct CMUnitTest wire_tests[] = {
        cmocka_unit_test(test_status_text_and_opcode_name),
        cmocka_unit_test(test_extension_texts_and_names),
        cmocka_unit_test(test_opcode_table_rows),
        cmocka_unit_test(test_opcode_table_reference_rows),
        cmocka_unit_test(test_opcode_table_extension_rows),
        cmocka_unit_test(test_byte_helpers),
        cmocka_unit_test(test_byte_helpers_u64),
    };

    return cmocka_run_group_tests_name("wire", wire_tests, NULL, NULL);
}
