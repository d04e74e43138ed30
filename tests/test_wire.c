/* test_wire.c: unit tests of protocol/wire.c and the inline helpers of
 * wire.h: status texts, opcode, event, time unit and throttle reason
 * names, the privileged opcodes, the consistency of the opcode table the
 * request decoder is driven by, and the big-endian byte helpers. */
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
    assert_null(cnt_opcode_name(0x25));
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
    assert_string_equal(cnt_status_text(CNT_STATUS_NOT_PERMITTED),
                        "Not permitted");
    assert_string_equal(cnt_status_text(CNT_STATUS_AUTH_FAILED),
                        "Auth failed");
    assert_string_equal(cnt_status_text(CNT_STATUS_OVER_CAPACITY),
                        "Over capacity");
    assert_int_equal(CNT_STATUS_NOT_PERMITTED, 0x2a);
    assert_int_equal(CNT_STATUS_AUTH_FAILED, 0x2b);
    assert_int_equal(CNT_STATUS_OVER_CAPACITY, 0x2c);
    assert_string_equal(cnt_status_text(CNT_STATUS_THROTTLED), "Throttled");
    assert_int_equal(CNT_STATUS_THROTTLED, 0x2d);
    assert_null(cnt_status_text((cnt_status)0x2e));
    assert_null(cnt_status_text((cnt_status)0x30));
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
    assert_null(cnt_opcode_name(0x2f));
    assert_string_equal(cnt_opcode_name(CNT_OP_TTL_INSERT), "ttl_insert");
    assert_string_equal(cnt_opcode_name(CNT_OP_TTL_QUERY), "ttl_query");
    assert_string_equal(cnt_opcode_name(CNT_OP_TTL_UPDATE), "ttl_update");
    assert_string_equal(cnt_opcode_name(CNT_OP_TTL_PURGE), "ttl_purge");
    assert_string_equal(cnt_opcode_name(CNT_OP_WINDOW_CHECK),
                        "window_check");
    assert_string_equal(cnt_opcode_name(CNT_OP_GCRA_CHECK), "gcra_check");
    assert_string_equal(cnt_opcode_name(CNT_OP_MULTI_CHECK), "multi_check");
    assert_string_equal(cnt_opcode_name(CNT_OP_BUSIEST), "busiest");
    assert_null(cnt_opcode_name(0x38));
    assert_int_equal(CNT_OP_TTL_INSERT, 0x30);
    assert_int_equal(CNT_OP_TTL_QUERY, 0x31);
    assert_int_equal(CNT_OP_TTL_UPDATE, 0x32);
    assert_int_equal(CNT_OP_TTL_PURGE, 0x33);
    assert_int_equal(CNT_OP_WINDOW_CHECK, 0x34);
    assert_int_equal(CNT_OP_GCRA_CHECK, 0x35);
    assert_int_equal(CNT_OP_MULTI_CHECK, 0x36);
    assert_null(cnt_opcode_name(0x3f));
    assert_string_equal(cnt_opcode_name(CNT_OP_AUTH), "auth");
    assert_string_equal(cnt_opcode_name(CNT_OP_THROTTLE), "throttle");
    assert_string_equal(cnt_opcode_name(CNT_OP_TENANT_SHOW), "tenant_show");
    assert_string_equal(cnt_opcode_name(CNT_OP_TENANT_LIST), "tenant_list");
    assert_string_equal(cnt_opcode_name(CNT_OP_NODE_SHOW), "node_show");
    assert_string_equal(cnt_opcode_name(CNT_OP_TENANT_SET), "tenant_set");
    assert_string_equal(cnt_opcode_name(CNT_OP_TENANT_REMOVE),
                        "tenant_remove");
    assert_string_equal(cnt_opcode_name(CNT_OP_NODE_SET), "node_set");
    assert_string_equal(cnt_opcode_name(CNT_OP_UNTHROTTLE), "unthrottle");
    assert_string_equal(cnt_opcode_name(CNT_OP_RELOAD), "reload");
    assert_string_equal(cnt_opcode_name(CNT_OP_AUTH_USER), "auth_user");
    assert_int_equal(CNT_OP_AUTH_USER, 0x4a);
    assert_null(cnt_opcode_name(0x4b));
    for (unsigned op = 0; op < 10; op++)
        assert_int_equal(CNT_OP_AUTH + op, 0x40 + op);
    assert_int_equal(CNT_OP_THROTTLE, 0x41);
    assert_int_equal(CNT_OP_TENANT_SHOW, 0x42);
    assert_int_equal(CNT_OP_TENANT_LIST, 0x43);
    assert_int_equal(CNT_OP_NODE_SHOW, 0x44);
    assert_int_equal(CNT_OP_TENANT_SET, 0x45);
    assert_int_equal(CNT_OP_TENANT_REMOVE, 0x46);
    assert_int_equal(CNT_OP_NODE_SET, 0x47);
    assert_int_equal(CNT_OP_UNTHROTTLE, 0x48);
    assert_int_equal(CNT_OP_RELOAD, 0x49);

    assert_int_equal(CNT_EVENT_GRANTED, 0x01);
    assert_int_equal(CNT_EVENT_TIMED_OUT, 0x02);
    assert_int_equal(CNT_EVENT_LEASE_EXPIRED, 0x03);
    assert_int_equal(CNT_EVENT_SHUTDOWN, 0x04);
    assert_int_equal(CNT_MAGIC_NOTICE, 0x92);
    assert_int_equal(CNT_USE_GROUP_DEFAULT, 0xffffffffu);
}

/* Checks that a field of width bytes at off lies inside a row's fixed
 * part. */
static void check_field(uint8_t off, size_t width, const cnt_opcode_row *row)
{
    if (off == CNT_FIELD_NONE)
        return;
    assert_true(cnt_field_offset(off) + width <= row->fixed);
}

/* Checks that a row reads none of the rate-limit fields. */
static void assert_no_limit_fields(const cnt_opcode_row *row)
{
    assert_int_equal(row->off_quota, CNT_FIELD_NONE);
    assert_int_equal(row->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(row->off_period, CNT_FIELD_NONE);
    assert_int_equal(row->off_limit, CNT_FIELD_NONE);
    assert_int_equal(row->off_count, CNT_FIELD_NONE);
    assert_int_equal(row->off_cost, CNT_FIELD_NONE);
    assert_int_equal(row->off_flags, CNT_FIELD_NONE);
    assert_int_equal(row->off_slots, CNT_FIELD_NONE);
    assert_int_equal(row->off_unit, CNT_FIELD_NONE);
    assert_int_equal(row->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(row->off_change, CNT_FIELD_NONE);
    assert_int_equal(row->off_items, CNT_FIELD_NONE);
}

/* Checks that a row reads none of the throttling fields. */
static void assert_no_throttle_fields(const cnt_opcode_row *row)
{
    assert_int_equal(row->off_units, CNT_FIELD_NONE);
    assert_int_equal(row->off_reserved, CNT_FIELD_NONE);
    assert_int_equal(row->off_hard_limit, CNT_FIELD_NONE);
    assert_int_equal(row->off_capacity, CNT_FIELD_NONE);
    assert_int_equal(row->off_secretlen, CNT_FIELD_NONE);
}

/* Checks that a row's rate-limit checks only look at fields its body
 * has (the TTL's also needs the unit's check to run before it). */
static void check_limit_checks(const cnt_opcode_row *row)
{
    if (row->checks & CNT_CHECK_FLAGS_PEEK_ONLY)
        assert_true(row->off_flags != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_UNIT_KNOWN)
        assert_true(row->off_unit != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_TTL_FITS)
        assert_true(row->off_ttl != CNT_FIELD_NONE &&
                    (row->checks & CNT_CHECK_UNIT_KNOWN));
    if (row->checks & CNT_CHECK_TTL_CHANGE)
        assert_true(row->off_attribute != CNT_FIELD_NONE &&
                    row->off_change != CNT_FIELD_NONE &&
                    row->off_quota != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_COUNT_NONZERO)
        assert_true(row->off_count != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_COST_NONZERO)
        assert_true(row->off_cost != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_PERIOD_NONZERO)
        assert_true(row->off_period != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_WINDOW_SHAPE)
        assert_true(row->off_slots != CNT_FIELD_NONE &&
                    row->off_period != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_UNITS_NONZERO)
        assert_true(row->off_units != CNT_FIELD_NONE);
    if (row->checks & CNT_CHECK_TENANT_FLAGS)
        assert_true(row->off_flags != CNT_FIELD_NONE);
}

/* Every row of the opcode table is one the decoder can trust: a name iff
 * the opcode is known, fields inside the fixed part, the name length right
 * before the name, checks only over fields the body has, and a fixed part
 * that leaves room for the longest name within CNT_BODY_MAX, which one
 * row's fixed part reaches exactly (so CNT_BODY_MAX is no larger than it
 * needs to be). */
static void test_opcode_table_rows(void **state)
{
    unsigned largest = 0, n_checks = 0;

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
            assert_no_limit_fields(row);
            assert_no_throttle_fields(row);
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
        check_field(row->off_quota, 8, row);
        check_field(row->off_ttl, 8, row);
        check_field(row->off_period, 8, row);
        check_field(row->off_limit, 4, row);
        check_field(row->off_count, 4, row);
        check_field(row->off_cost, 4, row);
        check_field(row->off_flags, 1, row);
        check_field(row->off_slots, 1, row);
        check_field(row->off_unit, 1, row);
        check_field(row->off_attribute, 1, row);
        check_field(row->off_change, 1, row);
        check_field(row->off_namelen, 2, row);
        check_field(row->off_items, 1, row);
        check_field(row->off_units, 4, row);
        check_field(row->off_reserved, 4, row);
        check_field(row->off_hard_limit, 4, row);
        check_field(row->off_capacity, 4, row);
        check_field(row->off_secretlen, 2, row);
        if (row->off_namelen != CNT_FIELD_NONE)
            assert_int_equal(cnt_field_offset(row->off_namelen) + 2, row->fixed);
        /* The items, like a name, follow their count directly; a body has
         * one or the other. */
        if (row->off_items != CNT_FIELD_NONE) {
            assert_int_equal(cnt_field_offset(row->off_items) + 1, row->fixed);
            assert_int_equal(row->off_namelen, CNT_FIELD_NONE);
        }
        /* So does a secret, in a body that has nothing else after it;
         * or it follows the name (Auth_user), both lengths before it. */
        if (row->off_secretlen != CNT_FIELD_NONE &&
            row->off_namelen == CNT_FIELD_NONE) {
            assert_int_equal(cnt_field_offset(row->off_secretlen) + 2, row->fixed);
            assert_int_equal(row->off_items, CNT_FIELD_NONE);
        }
        if (row->off_secretlen != CNT_FIELD_NONE &&
            row->off_namelen != CNT_FIELD_NONE) {
            assert_int_equal(cnt_field_offset(row->off_secretlen) + 4, row->fixed);
            assert_int_equal(row->off_items, CNT_FIELD_NONE);
        }
        assert_int_equal(row->checks & ~CNT_CHECK_ALL, 0);
        check_limit_checks(row);
        if (row->checks & CNT_CHECK_RESOURCES_NONZERO)
            assert_true(row->off_resources != CNT_FIELD_NONE);
        if (row->checks & CNT_CHECK_MAXIMUM_COVERS)
            assert_true(row->off_resources != CNT_FIELD_NONE &&
                        row->off_maximum != CNT_FIELD_NONE);
        if (row->checks & CNT_CHECK_LEASE_NONZERO)
            assert_true(row->off_lease != CNT_FIELD_NONE);
    }
    /* CNT_CHECK_ALL is exactly the checks there are, one bit each. */
    assert_int_equal(CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS |
                     CNT_CHECK_LEASE_NONZERO | CNT_CHECK_FLAGS_PEEK_ONLY |
                     CNT_CHECK_UNIT_KNOWN | CNT_CHECK_TTL_FITS |
                     CNT_CHECK_TTL_CHANGE | CNT_CHECK_COUNT_NONZERO |
                     CNT_CHECK_COST_NONZERO | CNT_CHECK_PERIOD_NONZERO |
                     CNT_CHECK_WINDOW_SHAPE | CNT_CHECK_UNITS_NONZERO |
                     CNT_CHECK_TENANT_FLAGS | CNT_CHECK_AUTH_FLAGS,
                     CNT_CHECK_ALL);
    for (unsigned bits = CNT_CHECK_ALL; bits != 0; bits &= bits - 1)
        n_checks++;
    assert_int_equal(n_checks, 14);
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
    assert_int_equal(known, 6 + 4 + 8 + 11 + 2 + 1);
    assert_int_equal(cnt_opcode_table[CNT_OP_NOOP].body, CNT_BODY_SKIP);
    assert_int_equal(cnt_opcode_table[CNT_OP_STATS].body, CNT_BODY_SKIP);
    assert_int_equal(cnt_opcode_table[CNT_OP_DUMP].body, CNT_BODY_SKIP);

    assert_int_equal(get->body, CNT_BODY_NEEDED);
    assert_int_equal(get->fixed, 2);
    assert_int_equal(get->off_namelen, CNT_FIELD_AT(0));
    assert_int_equal(get->off_resources, CNT_FIELD_NONE);
    assert_int_equal(get->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(get->off_wait, CNT_FIELD_NONE);
    assert_int_equal(get->off_lease, CNT_FIELD_NONE);
    assert_no_limit_fields(get);
    assert_int_equal(get->checks, 0);

    assert_int_equal(acq->body, CNT_BODY_NEEDED);
    assert_int_equal(acq->fixed, 10);
    assert_int_equal(acq->off_resources, CNT_FIELD_AT(0));
    assert_int_equal(acq->off_maximum, CNT_FIELD_AT(4));
    assert_int_equal(acq->off_namelen, CNT_FIELD_AT(8));
    assert_int_equal(acq->off_wait, CNT_FIELD_NONE);
    assert_int_equal(acq->off_lease, CNT_FIELD_NONE);
    assert_no_limit_fields(acq);
    assert_int_equal(acq->checks,
                     CNT_CHECK_RESOURCES_NONZERO | CNT_CHECK_MAXIMUM_COVERS);

    /* Release of 0 resources is legal: no check on it. */
    assert_int_equal(rel->body, CNT_BODY_NEEDED);
    assert_int_equal(rel->fixed, 6);
    assert_int_equal(rel->off_resources, CNT_FIELD_AT(0));
    assert_int_equal(rel->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(rel->off_namelen, CNT_FIELD_AT(4));
    assert_int_equal(rel->off_wait, CNT_FIELD_NONE);
    assert_int_equal(rel->off_lease, CNT_FIELD_NONE);
    assert_no_limit_fields(rel);
    assert_int_equal(rel->checks, 0);
}

/* The waiting extension rows, as spec'd: Wait_acquire (18 fixed bytes),
 * Renew (6), Wait_release (2), Queues (body skipped). */
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
    assert_int_equal(wacq->off_resources, CNT_FIELD_AT(0));
    assert_int_equal(wacq->off_maximum, CNT_FIELD_AT(4));
    assert_int_equal(wacq->off_wait, CNT_FIELD_AT(8));
    assert_int_equal(wacq->off_lease, CNT_FIELD_AT(12));
    assert_int_equal(wacq->off_namelen, CNT_FIELD_AT(16));
    assert_int_equal(wacq->checks, CNT_CHECK_RESOURCES_NONZERO);

    assert_int_equal(renew->body, CNT_BODY_NEEDED);
    assert_int_equal(renew->fixed, 6);
    assert_int_equal(renew->off_lease, CNT_FIELD_AT(0));
    assert_int_equal(renew->off_namelen, CNT_FIELD_AT(4));
    assert_int_equal(renew->off_resources, CNT_FIELD_NONE);
    assert_int_equal(renew->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(renew->off_wait, CNT_FIELD_NONE);
    assert_int_equal(renew->checks, CNT_CHECK_LEASE_NONZERO);

    assert_int_equal(wrel->body, CNT_BODY_NEEDED);
    assert_int_equal(wrel->fixed, 2);
    assert_int_equal(wrel->off_namelen, CNT_FIELD_AT(0));
    assert_int_equal(wrel->off_resources, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_wait, CNT_FIELD_NONE);
    assert_int_equal(wrel->off_lease, CNT_FIELD_NONE);
    assert_int_equal(wrel->checks, 0);
    assert_no_limit_fields(wacq);
    assert_no_limit_fields(renew);
    assert_no_limit_fields(wrel);
}

/* Checks that a row reads none of the semaphore fields. */
static void assert_no_counter_fields(const cnt_opcode_row *row)
{
    assert_int_equal(row->off_resources, CNT_FIELD_NONE);
    assert_int_equal(row->off_maximum, CNT_FIELD_NONE);
    assert_int_equal(row->off_wait, CNT_FIELD_NONE);
    assert_int_equal(row->off_lease, CNT_FIELD_NONE);
}

/* The rate-limit rows, as spec'd: Ttl_insert (19 fixed bytes), Ttl_query
 * and Ttl_purge (2), Ttl_update (13), Window_check (22), Gcra_check (26),
 * Multi_check (2, then items). */
static void test_opcode_table_rate_limit_rows(void **state)
{
    const cnt_opcode_row *ins = &cnt_opcode_table[CNT_OP_TTL_INSERT];
    const cnt_opcode_row *upd = &cnt_opcode_table[CNT_OP_TTL_UPDATE];
    const cnt_opcode_row *win = &cnt_opcode_table[CNT_OP_WINDOW_CHECK];
    const cnt_opcode_row *gcra = &cnt_opcode_table[CNT_OP_GCRA_CHECK];
    const cnt_opcode_row *multi = &cnt_opcode_table[CNT_OP_MULTI_CHECK];
    const uint8_t name_only[] = { CNT_OP_TTL_QUERY, CNT_OP_TTL_PURGE };

    (void)state;
    assert_int_equal(ins->body, CNT_BODY_NEEDED);
    assert_int_equal(ins->fixed, 19);
    assert_no_counter_fields(ins);
    assert_int_equal(ins->off_quota, CNT_FIELD_AT(0));
    assert_int_equal(ins->off_ttl, CNT_FIELD_AT(8));
    assert_int_equal(ins->off_unit, CNT_FIELD_AT(16));
    assert_int_equal(ins->off_namelen, CNT_FIELD_AT(17));
    assert_int_equal(ins->off_period, CNT_FIELD_NONE);
    assert_int_equal(ins->off_limit, CNT_FIELD_NONE);
    assert_int_equal(ins->off_count, CNT_FIELD_NONE);
    assert_int_equal(ins->off_cost, CNT_FIELD_NONE);
    assert_int_equal(ins->off_flags, CNT_FIELD_NONE);
    assert_int_equal(ins->off_slots, CNT_FIELD_NONE);
    assert_int_equal(ins->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(ins->off_change, CNT_FIELD_NONE);
    assert_int_equal(ins->off_items, CNT_FIELD_NONE);
    assert_int_equal(ins->checks, CNT_CHECK_UNIT_KNOWN | CNT_CHECK_TTL_FITS);

    for (size_t i = 0; i < sizeof(name_only); i++) {
        const cnt_opcode_row *row = &cnt_opcode_table[name_only[i]];

        assert_int_equal(row->body, CNT_BODY_NEEDED);
        assert_int_equal(row->fixed, 2);
        assert_int_equal(row->off_namelen, CNT_FIELD_AT(0));
        assert_no_counter_fields(row);
        assert_no_limit_fields(row);
        assert_int_equal(row->checks, 0);
    }

    assert_int_equal(upd->body, CNT_BODY_NEEDED);
    assert_int_equal(upd->fixed, 13);
    assert_no_counter_fields(upd);
    assert_int_equal(upd->off_attribute, CNT_FIELD_AT(0));
    assert_int_equal(upd->off_change, CNT_FIELD_AT(1));
    assert_int_equal(upd->off_unit, CNT_FIELD_AT(2));
    assert_int_equal(upd->off_quota, CNT_FIELD_AT(3));
    assert_int_equal(upd->off_namelen, CNT_FIELD_AT(11));
    assert_int_equal(upd->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(upd->off_period, CNT_FIELD_NONE);
    assert_int_equal(upd->off_limit, CNT_FIELD_NONE);
    assert_int_equal(upd->off_count, CNT_FIELD_NONE);
    assert_int_equal(upd->off_cost, CNT_FIELD_NONE);
    assert_int_equal(upd->off_flags, CNT_FIELD_NONE);
    assert_int_equal(upd->off_slots, CNT_FIELD_NONE);
    assert_int_equal(upd->off_items, CNT_FIELD_NONE);
    assert_int_equal(upd->checks,
                     CNT_CHECK_UNIT_KNOWN | CNT_CHECK_TTL_CHANGE);

    assert_int_equal(win->body, CNT_BODY_NEEDED);
    assert_int_equal(win->fixed, 22);
    assert_no_counter_fields(win);
    assert_int_equal(win->off_flags, CNT_FIELD_AT(0));
    assert_int_equal(win->off_slots, CNT_FIELD_AT(1));
    assert_int_equal(win->off_limit, CNT_FIELD_AT(4));
    assert_int_equal(win->off_cost, CNT_FIELD_AT(8));
    assert_int_equal(win->off_period, CNT_FIELD_AT(12));
    assert_int_equal(win->off_namelen, CNT_FIELD_AT(20));
    assert_int_equal(win->off_quota, CNT_FIELD_NONE);
    assert_int_equal(win->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(win->off_count, CNT_FIELD_NONE);
    assert_int_equal(win->off_unit, CNT_FIELD_NONE);
    assert_int_equal(win->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(win->off_change, CNT_FIELD_NONE);
    assert_int_equal(win->off_items, CNT_FIELD_NONE);
    assert_int_equal(win->checks, CNT_CHECK_FLAGS_PEEK_ONLY |
                     CNT_CHECK_COST_NONZERO | CNT_CHECK_WINDOW_SHAPE);

    assert_int_equal(gcra->body, CNT_BODY_NEEDED);
    assert_int_equal(gcra->fixed, 26);
    assert_no_counter_fields(gcra);
    assert_int_equal(gcra->off_flags, CNT_FIELD_AT(0));
    assert_int_equal(gcra->off_limit, CNT_FIELD_AT(4));
    assert_int_equal(gcra->off_count, CNT_FIELD_AT(8));
    assert_int_equal(gcra->off_cost, CNT_FIELD_AT(12));
    assert_int_equal(gcra->off_period, CNT_FIELD_AT(16));
    assert_int_equal(gcra->off_namelen, CNT_FIELD_AT(24));
    assert_int_equal(gcra->off_slots, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_quota, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_unit, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_change, CNT_FIELD_NONE);
    assert_int_equal(gcra->off_items, CNT_FIELD_NONE);
    assert_int_equal(gcra->checks, CNT_CHECK_FLAGS_PEEK_ONLY |
                     CNT_CHECK_COUNT_NONZERO | CNT_CHECK_COST_NONZERO |
                     CNT_CHECK_PERIOD_NONZERO);
    /* Gcra_check's fixed part is the largest: it sets CNT_BODY_MAX. */
    assert_int_equal(CNT_BODY_MAX, 26 + 65535);

    assert_int_equal(multi->body, CNT_BODY_NEEDED);
    assert_int_equal(multi->fixed, 2);
    assert_no_counter_fields(multi);
    assert_int_equal(multi->off_flags, CNT_FIELD_AT(0));
    assert_int_equal(multi->off_items, CNT_FIELD_AT(1));
    assert_int_equal(multi->off_namelen, CNT_FIELD_NONE);
    assert_int_equal(multi->off_quota, CNT_FIELD_NONE);
    assert_int_equal(multi->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(multi->off_period, CNT_FIELD_NONE);
    assert_int_equal(multi->off_limit, CNT_FIELD_NONE);
    assert_int_equal(multi->off_count, CNT_FIELD_NONE);
    assert_int_equal(multi->off_cost, CNT_FIELD_NONE);
    assert_int_equal(multi->off_slots, CNT_FIELD_NONE);
    assert_int_equal(multi->off_unit, CNT_FIELD_NONE);
    assert_int_equal(multi->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(multi->off_change, CNT_FIELD_NONE);
    assert_int_equal(multi->checks, CNT_CHECK_FLAGS_PEEK_ONLY);
    for (unsigned op = CNT_OP_TTL_INSERT; op <= CNT_OP_MULTI_CHECK; op++)
        assert_no_throttle_fields(&cnt_opcode_table[op]);
}

/* The tenant throttling rows, as spec'd: Auth (2 fixed bytes, then the
 * secret), Throttle (6), Tenant_show and Tenant_remove (2), Tenant_set
 * (14), Node_set (4, no name); Tenant_list, Node_show, Unthrottle and
 * Reload skip their bodies. Every older row reads none of their fields. */
static void test_opcode_table_throttle_rows(void **state)
{
    const cnt_opcode_row *auth = &cnt_opcode_table[CNT_OP_AUTH];
    const cnt_opcode_row *thr = &cnt_opcode_table[CNT_OP_THROTTLE];
    const cnt_opcode_row *tset = &cnt_opcode_table[CNT_OP_TENANT_SET];
    const cnt_opcode_row *nset = &cnt_opcode_table[CNT_OP_NODE_SET];
    const uint8_t name_only[] = { CNT_OP_TENANT_SHOW, CNT_OP_TENANT_REMOVE };
    const uint8_t skipped[] = { CNT_OP_TENANT_LIST, CNT_OP_NODE_SHOW,
                                CNT_OP_UNTHROTTLE, CNT_OP_RELOAD };

    (void)state;
    for (unsigned op = 0; op < CNT_OP_AUTH; op++)
        if (cnt_opcode_table[op].body != CNT_BODY_UNKNOWN)
            assert_no_throttle_fields(&cnt_opcode_table[op]);

    assert_int_equal(auth->body, CNT_BODY_NEEDED);
    assert_int_equal(auth->fixed, 2);
    assert_int_equal(auth->off_secretlen, CNT_FIELD_AT(0));
    assert_int_equal(auth->off_namelen, CNT_FIELD_NONE);
    assert_no_counter_fields(auth);
    assert_no_limit_fields(auth);
    assert_int_equal(auth->off_units, CNT_FIELD_NONE);
    assert_int_equal(auth->off_reserved, CNT_FIELD_NONE);
    assert_int_equal(auth->off_hard_limit, CNT_FIELD_NONE);
    assert_int_equal(auth->off_capacity, CNT_FIELD_NONE);
    assert_int_equal(auth->checks, 0);

    assert_int_equal(thr->body, CNT_BODY_NEEDED);
    assert_int_equal(thr->fixed, 6);
    assert_int_equal(thr->off_units, CNT_FIELD_AT(0));
    assert_int_equal(thr->off_namelen, CNT_FIELD_AT(4));
    assert_no_counter_fields(thr);
    assert_no_limit_fields(thr);
    assert_int_equal(thr->off_reserved, CNT_FIELD_NONE);
    assert_int_equal(thr->off_hard_limit, CNT_FIELD_NONE);
    assert_int_equal(thr->off_capacity, CNT_FIELD_NONE);
    assert_int_equal(thr->off_secretlen, CNT_FIELD_NONE);
    assert_int_equal(thr->checks, CNT_CHECK_UNITS_NONZERO);

    for (size_t i = 0; i < sizeof(name_only); i++) {
        const cnt_opcode_row *row = &cnt_opcode_table[name_only[i]];

        assert_int_equal(row->body, CNT_BODY_NEEDED);
        assert_int_equal(row->fixed, 2);
        assert_int_equal(row->off_namelen, CNT_FIELD_AT(0));
        assert_no_counter_fields(row);
        assert_no_limit_fields(row);
        assert_no_throttle_fields(row);
        assert_int_equal(row->checks, 0);
    }
    for (size_t i = 0; i < sizeof(skipped); i++)
        assert_int_equal(cnt_opcode_table[skipped[i]].body, CNT_BODY_SKIP);

    assert_int_equal(tset->body, CNT_BODY_NEEDED);
    assert_int_equal(tset->fixed, 14);
    assert_int_equal(tset->off_flags, CNT_FIELD_AT(0));
    assert_int_equal(tset->off_reserved, CNT_FIELD_AT(4));
    assert_int_equal(tset->off_hard_limit, CNT_FIELD_AT(8));
    assert_int_equal(tset->off_namelen, CNT_FIELD_AT(12));
    assert_no_counter_fields(tset);
    assert_int_equal(tset->off_quota, CNT_FIELD_NONE);
    assert_int_equal(tset->off_ttl, CNT_FIELD_NONE);
    assert_int_equal(tset->off_period, CNT_FIELD_NONE);
    assert_int_equal(tset->off_limit, CNT_FIELD_NONE);
    assert_int_equal(tset->off_count, CNT_FIELD_NONE);
    assert_int_equal(tset->off_cost, CNT_FIELD_NONE);
    assert_int_equal(tset->off_slots, CNT_FIELD_NONE);
    assert_int_equal(tset->off_unit, CNT_FIELD_NONE);
    assert_int_equal(tset->off_attribute, CNT_FIELD_NONE);
    assert_int_equal(tset->off_change, CNT_FIELD_NONE);
    assert_int_equal(tset->off_items, CNT_FIELD_NONE);
    assert_int_equal(tset->off_units, CNT_FIELD_NONE);
    assert_int_equal(tset->off_capacity, CNT_FIELD_NONE);
    assert_int_equal(tset->off_secretlen, CNT_FIELD_NONE);
    assert_int_equal(tset->checks, CNT_CHECK_TENANT_FLAGS);
    /* Below Gcra_check's 26: CNT_BODY_MAX stays every body's bound. */
    assert_true(tset->fixed < CNT_GCRA_FIXED);

    assert_int_equal(nset->body, CNT_BODY_NEEDED);
    assert_int_equal(nset->fixed, 4);
    assert_int_equal(nset->off_capacity, CNT_FIELD_AT(0));
    assert_int_equal(nset->off_namelen, CNT_FIELD_NONE);
    assert_no_counter_fields(nset);
    assert_no_limit_fields(nset);
    assert_int_equal(nset->off_units, CNT_FIELD_NONE);
    assert_int_equal(nset->off_reserved, CNT_FIELD_NONE);
    assert_int_equal(nset->off_hard_limit, CNT_FIELD_NONE);
    assert_int_equal(nset->off_secretlen, CNT_FIELD_NONE);
    assert_int_equal(nset->checks, 0);

    /* Exactly seven opcodes are privileged: these five and the two JSON
     * ones. */
    for (unsigned op = 0; op < 256; op++)
        assert_int_equal(cnt_opcode_table[op].privileged,
                         (op >= CNT_OP_TENANT_SET && op <= CNT_OP_RELOAD) ||
                             op == CNT_OP_TENANT_SET_JSON ||
                             op == CNT_OP_NODE_SET_JSON);
}

/* The seed's JSON commands: Tenant_set_json (the tenant, then the
 * document) and Node_set_json (the document alone), privileged, with no
 * other field. */
static void test_opcode_table_json_rows(void **state)
{
    const cnt_opcode_row *tj = &cnt_opcode_table[CNT_OP_TENANT_SET_JSON];
    const cnt_opcode_row *nj = &cnt_opcode_table[CNT_OP_NODE_SET_JSON];

    (void)state;
    assert_int_equal(CNT_OP_TENANT_SET_JSON, 0x2a);
    assert_int_equal(CNT_OP_NODE_SET_JSON, 0x2c);
    assert_string_equal(cnt_opcode_name(0x2a), "tenant_set_json");
    assert_string_equal(cnt_opcode_name(0x2c), "node_set_json");
    assert_null(cnt_opcode_name(0x2b));
    assert_int_equal(tj->body, CNT_BODY_NEEDED);
    assert_true(tj->privileged && tj->doc);
    assert_int_equal(tj->fixed, 2);
    assert_int_equal(tj->off_namelen, CNT_FIELD_AT(0));
    assert_no_counter_fields(tj);
    assert_no_limit_fields(tj);
    assert_no_throttle_fields(tj);
    assert_int_equal(tj->checks, 0);
    assert_int_equal(nj->body, CNT_BODY_NEEDED);
    assert_true(nj->privileged && nj->doc);
    assert_int_equal(nj->fixed, 0);
    assert_int_equal(nj->off_namelen, CNT_FIELD_NONE);
    assert_no_counter_fields(nj);
    assert_no_limit_fields(nj);
    assert_no_throttle_fields(nj);
    assert_int_equal(nj->checks, 0);
    /* Every other row has no document. */
    for (unsigned op = 0; op < 256; op++)
        assert_int_equal(cnt_opcode_table[op].doc,
                         op == CNT_OP_TENANT_SET_JSON ||
                             op == CNT_OP_NODE_SET_JSON);
    assert_true(CNT_JSON_DOC_MAX <= CNT_BODY_MAX);
}

/* The tenant throttling constants: flags, states, reasons and their
 * names, answer sizes. */
static void test_throttle_constants(void **state)
{
    const char *reasons[] = { "none", "reserve", "pool_empty",
                              "hard_limit" };

    (void)state;
    assert_int_equal(CNT_TENANT_SET_RESERVED, 1);
    assert_int_equal(CNT_TENANT_SET_HARD, 2);
    assert_int_equal(CNT_TENANT_SET_ALL,
                     CNT_TENANT_SET_RESERVED | CNT_TENANT_SET_HARD);
    assert_int_equal(CNT_TENANT_CONFIGURED, 1);
    assert_int_equal(CNT_HARD_LIMIT_UNLIMITED, 0xffffffffu);
    assert_int_equal(CNT_TSTATE_ALLOWED, 0);
    assert_int_equal(CNT_TSTATE_THROTTLED, 1);
    assert_int_equal(CNT_TREASON_NONE, 0);
    assert_int_equal(CNT_TREASON_RESERVE, 1);
    assert_int_equal(CNT_TREASON_POOL_EMPTY, 2);
    assert_int_equal(CNT_TREASON_HARD_LIMIT, 3);
    for (unsigned r = 0; r <= CNT_TREASON_MAX; r++)
        assert_string_equal(cnt_treason_name((uint8_t)r), reasons[r]);
    for (unsigned r = CNT_TREASON_MAX + 1; r < 256; r++)
        assert_null(cnt_treason_name((uint8_t)r));
    assert_int_equal(CNT_THROTTLE_ANSWER_SIZE, 24);
    assert_int_equal(CNT_TANS_OFF_RETRY + 8, CNT_THROTTLE_ANSWER_SIZE);
    assert_int_equal(CNT_TENANT_VIEW_SIZE, 32);
    assert_int_equal(CNT_TVIEW_OFF_UNITS + 8, CNT_TENANT_VIEW_SIZE);
    assert_int_equal(CNT_TREC_OFF_NAMELEN, CNT_TENANT_VIEW_SIZE);
    assert_int_equal(CNT_TREC_FIXED, CNT_TREC_OFF_NAMELEN + 2);
    assert_int_equal(CNT_NODE_VIEW_SIZE, 32);
    assert_int_equal(CNT_NVIEW_OFF_THROTTLED + 8, CNT_NODE_VIEW_SIZE);
}

/* The rate-limit constants: sizes, states, time units. */
static void test_rate_limit_constants(void **state)
{
    const char *names[] = { "ns", "us", "ms", "s", "min", "h" };

    (void)state;
    assert_int_equal(CNT_TTL_VIEW_SIZE, 17);
    assert_int_equal(CNT_CHECK_ANSWER_SIZE, 32);
    assert_int_equal(CNT_CANS_OFF_RESET + 8, CNT_CHECK_ANSWER_SIZE);
    assert_int_equal(CNT_TTLV_OFF_UNIT + 1, CNT_TTL_VIEW_SIZE);
    assert_int_equal(CNT_MULTI_MAX, 16);
    assert_int_equal(CNT_CHECK_ALLOWED, 0);
    assert_int_equal(CNT_CHECK_LIMITED, 1);
    assert_int_equal(CNT_CHECK_NEVER, 2);
    assert_int_equal(CNT_MULTI_ALLOWED, 0);
    assert_int_equal(CNT_MULTI_DENIED, 1);
    assert_int_equal(CNT_CHECK_FLAG_PEEK, 1);
    assert_true(CNT_RETRY_NEVER == 0xffffffffffffffffull);
    assert_int_equal(CNT_TTL_ATTR_QUOTA, 0);
    assert_int_equal(CNT_TTL_ATTR_TTL, 1);
    assert_int_equal(CNT_TTL_PATCH, 0);
    assert_int_equal(CNT_TTL_INCREASE, 1);
    assert_int_equal(CNT_TTL_DECREASE, 2);
    /* The most items fit a body: 16 Gcra_check items with 1-byte names
     * leave room for far longer names. */
    assert_true(CNT_MULTI_FIXED + CNT_MULTI_MAX *
                (CNT_MITEM_FIXED + CNT_GCRA_FIXED + 1) <= CNT_BODY_MAX);

    assert_int_equal(CNT_UNIT_MAX, 5);
    assert_true(cnt_unit_ns(CNT_UNIT_NS) == 1);
    assert_true(cnt_unit_ns(CNT_UNIT_US) == 1000);
    assert_true(cnt_unit_ns(CNT_UNIT_MS) == 1000000);
    assert_true(cnt_unit_ns(CNT_UNIT_S) == 1000000000);
    assert_true(cnt_unit_ns(CNT_UNIT_MIN) == 60000000000ull);
    assert_true(cnt_unit_ns(CNT_UNIT_H) == 3600000000000ull);
    for (unsigned u = 0; u <= CNT_UNIT_MAX; u++)
        assert_string_equal(cnt_unit_name((uint8_t)u), names[u]);
    for (unsigned u = CNT_UNIT_MAX + 1; u < 256; u++) {
        assert_true(cnt_unit_ns((uint8_t)u) == 0);
        assert_null(cnt_unit_name((uint8_t)u));
    }
}

/* cnt_unit_to_ns converts with the table's lengths, and refuses an
 * unknown unit and a product past 64 bits without touching *ns. */
static void test_unit_to_ns(void **state)
{
    (void)state;
    uint64_t ns = 7;

    for (unsigned u = 0; u <= CNT_UNIT_MAX; u++) {
        uint64_t per = cnt_unit_ns((uint8_t)u), most = UINT64_MAX / per;
        assert_true(cnt_unit_to_ns(3, (uint8_t)u, &ns));
        assert_true(ns == 3 * per);
        assert_true(cnt_unit_to_ns(most, (uint8_t)u, &ns));
        assert_true(ns == most * per);
        if (u == CNT_UNIT_NS)
            continue;   /* every u64 is that many nanoseconds */
        ns = 7;
        assert_false(cnt_unit_to_ns(most + 1, (uint8_t)u, &ns));
        assert_true(ns == 7);
    }
    assert_true(cnt_unit_to_ns(0, CNT_UNIT_H, &ns));
    assert_true(ns == 0);
    ns = 7;
    assert_false(cnt_unit_to_ns(1, CNT_UNIT_MAX + 1, &ns));
    assert_false(cnt_unit_to_ns(0, 255, &ns));
    assert_true(ns == 7);
}

/* cnt_window_shape applies the defaults to 0s and keeps a shape only
 * within the bounds: at most 64 slots, whole slots of at least 1 us. */
static void test_window_shape(void **state)
{
    (void)state;
    uint8_t n = 99;
    uint64_t slot_ns = 99;

    assert_true(cnt_window_shape(0, 0, &n, &slot_ns));
    assert_int_equal(n, CNT_WINDOW_DEFAULT_SLOTS);
    assert_true(slot_ns == CNT_WINDOW_DEFAULT_NS / CNT_WINDOW_DEFAULT_SLOTS);
    assert_true(cnt_window_shape(64, 64000, &n, &slot_ns));
    assert_int_equal(n, 64);
    assert_true(slot_ns == 1000);
    assert_true(cnt_window_shape(0, 10000, &n, &slot_ns));
    assert_int_equal(n, 10);
    assert_true(slot_ns == 1000);
    assert_true(cnt_window_shape(1, 0, &n, &slot_ns));
    assert_true(slot_ns == CNT_WINDOW_DEFAULT_NS);
    n = 99;
    slot_ns = 99;
    assert_false(cnt_window_shape(65, 65000, &n, &slot_ns));   /* slots */
    assert_false(cnt_window_shape(3, 10000, &n, &slot_ns));    /* whole */
    assert_false(cnt_window_shape(10, 9990, &n, &slot_ns));    /* 999 ns */
    assert_false(cnt_window_shape(0, 9000, &n, &slot_ns));     /* 900 ns */
    assert_int_equal(n, 99);
    assert_true(slot_ns == 99);
}

/* The byte helpers are big-endian and read back what they wrote. */
/* The opcodes whose request body is just a name (or a secret), which the
 * client encoders write with one helper: fixed part 2, length at 0. */
static void test_name_only_rows(void **state)
{
    (void)state;
    static const uint8_t ops[] = { CNT_OP_GET, CNT_OP_WAIT_RELEASE,
                                   CNT_OP_TTL_QUERY, CNT_OP_TTL_PURGE,
                                   CNT_OP_TENANT_SHOW, CNT_OP_TENANT_REMOVE,
                                   CNT_OP_AUTH };
    for (size_t i = 0; i < sizeof ops; i++) {
        const cnt_opcode_row *r = &cnt_opcode_table[ops[i]];
        assert_int_equal(r->fixed, 2);
        assert_int_equal(ops[i] == CNT_OP_AUTH ? r->off_secretlen
                                               : r->off_namelen, CNT_FIELD_AT(0));
    }
}

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

/* Lease_list's row: a u32 count that may not be 0, not privileged, and
 * the record's layout. */
static void test_opcode_table_lease_list_row(void **state)
{
    const cnt_opcode_row *row = &cnt_opcode_table[CNT_OP_LEASE_LIST];

    (void)state;
    assert_int_equal(CNT_OP_LEASE_LIST, 0x24);
    assert_string_equal(cnt_opcode_name(CNT_OP_LEASE_LIST), "lease_list");
    assert_int_equal(row->body, CNT_BODY_NEEDED);
    assert_false(row->privileged);
    assert_int_equal(row->fixed, 4);
    assert_int_equal(row->off_count, CNT_FIELD_AT(0));
    assert_int_equal(row->off_namelen, CNT_FIELD_NONE);
    assert_int_equal(row->checks, CNT_CHECK_COUNT_NONZERO);
    assert_int_equal(CNT_LEASE_LIST_MAX, 64);
    assert_int_equal(CNT_LREC_FIXED, 4 + 8 + 4 + 2);
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
        cmocka_unit_test(test_opcode_table_rate_limit_rows),
        cmocka_unit_test(test_rate_limit_constants),
        cmocka_unit_test(test_opcode_table_throttle_rows),
        cmocka_unit_test(test_opcode_table_json_rows),
        cmocka_unit_test(test_throttle_constants),
        cmocka_unit_test(test_unit_to_ns),
        cmocka_unit_test(test_window_shape),
        cmocka_unit_test(test_name_only_rows),
        cmocka_unit_test(test_byte_helpers),
        cmocka_unit_test(test_byte_helpers_u64),
        cmocka_unit_test(test_opcode_table_lease_list_row),
    };

    return cmocka_run_group_tests_name("wire", wire_tests, NULL, NULL);
}
