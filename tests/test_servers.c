/* test_servers.c: cmocka tests of client/servers.c: server lists as
 * written ("HOST:PORT[:WEIGHT],...", IPv6 in brackets), the default
 * weight, and each refusal with a message naming the bad item; and the
 * HOST:PORT form servers are printed in. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/servers.h"

/* Lists that parse, items in order with weights defaulting to 1. */
static void test_parse_ok(void **state)
{
    mcc_server_spec s[4];
    char err[256] = "";

    (void)state;
    assert_int_equal(mcc_servers_parse("127.0.0.1:11215", s, 4, err,
                                       sizeof err), 1);
    assert_string_equal(s[0].host, "127.0.0.1");
    assert_int_equal(s[0].port, 11215);
    assert_int_equal(s[0].weight, 1);

    assert_int_equal(mcc_servers_parse("a.example:1:3,[::1]:65535,"
                                       "[fe80::1%eth0]:11211:4294967295,"
                                       "b_2-x:80", s, 4, err, sizeof err), 4);
    assert_string_equal(s[0].host, "a.example");
    assert_int_equal(s[0].port, 1);
    assert_int_equal(s[0].weight, 3);
    assert_string_equal(s[1].host, "::1");
    assert_int_equal(s[1].port, 65535);
    assert_int_equal(s[1].weight, 1);
    assert_string_equal(s[2].host, "fe80::1%eth0");
    assert_int_equal(s[2].weight, UINT32_MAX);
    assert_string_equal(s[3].host, "b_2-x");
    assert_int_equal(s[3].port, 80);

    /* The same host on two ports is two servers. */
    assert_int_equal(mcc_servers_parse("h:1,h:2", s, 4, err, sizeof err), 2);
}

/* One refused list and a piece its message must contain. */
struct bad_row {
    const char *list;
    const char *message;
};

static const struct bad_row bad_rows[] = {
    { "", "empty server list" },
    { "h:1,", "empty item" },
    { ",h:1", "empty item" },
    { "h:1,,h:2", "empty item" },
    { "h", "\"h\": no port" },
    { "h:", "\"h:\": port must be 1 to 65535" },
    { ":11215", "empty host" },
    { "h:0", "\"h:0\": port must be 1 to 65535" },
    { "h:65536", "port must be 1 to 65535" },
    { "h:+1", "port must be" },
    { "h:1x", "port must be" },
    { "h: 1", "port must be" },
    { "h:1:0", "\"h:1:0\": weight must be 1 to 4294967295" },
    { "h:1:4294967296", "weight must be" },
    { "h:1:", "weight must be" },
    { "h:1:2:3", "too many ':'" },
    { "h:1:-2", "weight must be" },
    { "ok:1,b d:2", "\"b d:2\": bad character in host" },
    { "::1:11215", "write an IPv6 address as [ADDRESS]" },
    { "fe80::1:1", "too many ':'" },
    { "[::1:11215", "no ']'" },
    { "[::1]", "expected [ADDRESS]:PORT" },
    { "[::1]11215", "expected [ADDRESS]:PORT" },
    { "[]:1", "brackets are only for IPv6" },
    { "[host]:1", "brackets are only for IPv6" },
    { "h:1,g:2,h:1", "\"h:1\" is listed twice" },
    { "a:1,b:2,c:3,d:4,e:5", "more than 4 servers" },
};

/* Each refusal returns -1 and names the item. */
static void test_parse_bad(void **state)
{
    mcc_server_spec s[4];
    char err[256];

    (void)state;
    for (size_t i = 0; i < sizeof bad_rows / sizeof bad_rows[0]; i++) {
        err[0] = '\0';
        if (mcc_servers_parse(bad_rows[i].list, s, 4, err, sizeof err) != -1)
            fail_msg("\"%s\" was accepted", bad_rows[i].list);
        if (strstr(err, bad_rows[i].message) == NULL)
            fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad_rows[i].list,
                     err, bad_rows[i].message);
    }
    /* A NULL list, and no room for a message, are refusals too. */
    assert_int_equal(mcc_servers_parse(NULL, s, 4, err, sizeof err), -1);
    assert_int_equal(mcc_servers_parse("h", s, 4, NULL, 0), -1);
}

/* Hosts up to 255 bytes fit; 256 do not. */
static void test_parse_long_host(void **state)
{
    mcc_server_spec s[1];
    char list[300], err[512];

    (void)state;
    memset(list, 'h', 255);
    strcpy(list + 255, ":1");
    assert_int_equal(mcc_servers_parse(list, s, 1, err, sizeof err), 1);
    assert_int_equal(strlen(s[0].host), 255);
    memset(list, 'h', 256);
    strcpy(list + 256, ":1");
    assert_int_equal(mcc_servers_parse(list, s, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "host longer than 255 bytes"));
}

/* Printed as HOST:PORT, an IPv6 address in brackets; never the weight. */
static void test_format(void **state)
{
    mcc_server_spec s[2];
    char buf[MCC_SERVER_TEXT_MAX], err[256];

    (void)state;
    assert_int_equal(mcc_servers_parse("h.example:11215:9,[::1]:7", s, 2,
                                       err, sizeof err), 2);
    assert_string_equal(mcc_server_format(&s[0], buf, sizeof buf),
                        "h.example:11215");
    assert_string_equal(mcc_server_format(&s[1], buf, sizeof buf),
                        "[::1]:7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_parse_long_host),
        cmocka_unit_test(test_format),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
