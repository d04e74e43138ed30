/* test_wire.c: unit tests of protocol/wire.c: status texts and opcode
 * names. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

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
    assert_null(cnt_opcode_name(0x20));
}

/* Runs the wire tests. */
int main(void)
{
    const struct CMUnitTest wire_tests[] = {
        cmocka_unit_test(test_status_text_and_opcode_name),
    };

    return cmocka_run_group_tests_name("wire", wire_tests, NULL, NULL);
}
