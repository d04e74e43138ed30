/* test_counterctl_args.c: cmocka tests of counterctl's argument parsers
 * (counterctl_args.c): durations with units, kept as written, and the
 * refusals (a bare number, an unknown unit, too large) that counterctl
 * turns into usage errors naming the argument; hard limits; and the
 * --secret-file reader, which must take a file as the server does; and
 * what --servers needs: its list, which argument places each command on
 * a server (or none, for the commands run on every server), and the
 * HOST:PORT form servers are named in. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "programs/counterctl.h"

/* One duration as written and what it parses to. */
struct duration_row {
    const char *text;
    ctl_duration result;
    uint64_t value;
    uint8_t unit;
};

static const struct duration_row duration_rows[] = {
    { "10ns", CTL_DURATION_OK, 10, CNT_UNIT_NS },
    { "100us", CTL_DURATION_OK, 100, CNT_UNIT_US },
    { "250ms", CTL_DURATION_OK, 250, CNT_UNIT_MS },
    { "3s", CTL_DURATION_OK, 3, CNT_UNIT_S },
    { "5min", CTL_DURATION_OK, 5, CNT_UNIT_MIN },
    { "2h", CTL_DURATION_OK, 2, CNT_UNIT_H },
    { "0s", CTL_DURATION_OK, 0, CNT_UNIT_S },
    { "007ms", CTL_DURATION_OK, 7, CNT_UNIT_MS },
    { "18446744073709551615ns", CTL_DURATION_OK, UINT64_MAX, CNT_UNIT_NS },
    { "18446744073709551616ns", CTL_DURATION_RANGE, 0, 0 },
    { "99999999999999999999999h", CTL_DURATION_RANGE, 0, 0 },
    /* A bare number: the unit is never guessed. */
    { "3", CTL_DURATION_NO_UNIT, 0, 0 },
    { "0", CTL_DURATION_NO_UNIT, 0, 0 },
    { "3600", CTL_DURATION_NO_UNIT, 0, 0 },
    { "", CTL_DURATION_BAD, 0, 0 },
    { "s", CTL_DURATION_BAD, 0, 0 },
    { "3parsecs", CTL_DURATION_BAD, 0, 0 },
    { "3S", CTL_DURATION_BAD, 0, 0 },
    { "3 s", CTL_DURATION_BAD, 0, 0 },
    { "3m", CTL_DURATION_BAD, 0, 0 },
    { "3mins", CTL_DURATION_BAD, 0, 0 },
    { "3sec", CTL_DURATION_BAD, 0, 0 },
    { "1.5s", CTL_DURATION_BAD, 0, 0 },
    { "-3s", CTL_DURATION_BAD, 0, 0 },
    { "+3s", CTL_DURATION_BAD, 0, 0 },
    { " 3s", CTL_DURATION_BAD, 0, 0 },
    { "3s ", CTL_DURATION_BAD, 0, 0 },
    { "3hs", CTL_DURATION_BAD, 0, 0 },
    { "0x10s", CTL_DURATION_BAD, 0, 0 },
};

/* Every row parses as listed; a refusal leaves the outputs alone. */
static void test_parse_duration(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof duration_rows / sizeof duration_rows[0];
         i++) {
        const struct duration_row *r = &duration_rows[i];
        uint64_t value = 12345;
        uint8_t unit = 99;

        print_message("%s\n", r->text);
        assert_int_equal(ctl_parse_duration(r->text, &value, &unit),
                         r->result);
        if (r->result == CTL_DURATION_OK) {
            assert_true(value == r->value);
            assert_int_equal(unit, r->unit);
        } else {
            assert_true(value == 12345);
            assert_int_equal(unit, 99);
        }
    }
}

/* Nanoseconds: exact up to UINT64_MAX, refused beyond it. */
static void test_duration_ns(void **state)
{
    uint64_t ns = 0;

    (void)state;
    assert_true(ctl_duration_ns(250, CNT_UNIT_MS, &ns));
    assert_true(ns == 250000000u);
    assert_true(ctl_duration_ns(2, CNT_UNIT_H, &ns));
    assert_true(ns == 7200000000000u);
    assert_true(ctl_duration_ns(0, CNT_UNIT_MIN, &ns));
    assert_true(ns == 0);
    assert_true(ctl_duration_ns(UINT64_MAX, CNT_UNIT_NS, &ns));
    assert_true(ns == UINT64_MAX);
    /* The largest whole number of hours, and one more. */
    assert_true(ctl_duration_ns(UINT64_MAX / 3600000000000u, CNT_UNIT_H,
                                &ns));
    assert_true(ns == UINT64_MAX / 3600000000000u * 3600000000000u);
    ns = 7;
    assert_false(ctl_duration_ns(UINT64_MAX / 3600000000000u + 1,
                                 CNT_UNIT_H, &ns));
    assert_false(ctl_duration_ns(UINT64_MAX / 1000 + 1, CNT_UNIT_US, &ns));
    assert_false(ctl_duration_ns(1, CNT_UNIT_MAX + 1, &ns));
    assert_true(ns == 7);
}

/* u64: digits only, the whole range, nothing beyond it. */
static void test_parse_u64(void **state)
{
    uint64_t v = 0;

    (void)state;
    assert_true(ctl_parse_u64("0", &v));
    assert_true(v == 0);
    assert_true(ctl_parse_u64("18446744073709551615", &v));
    assert_true(v == UINT64_MAX);
    assert_false(ctl_parse_u64("18446744073709551616", &v));
    assert_false(ctl_parse_u64("", &v));
    assert_false(ctl_parse_u64("-1", &v));
    assert_false(ctl_parse_u64("+1", &v));
    assert_false(ctl_parse_u64(" 1", &v));
    assert_false(ctl_parse_u64("1 ", &v));
    assert_false(ctl_parse_u64("1s", &v));
    assert_true(v == UINT64_MAX);
}

/* Hard limits: unlimited by name, numbers below the wire's unlimited. */
static void test_parse_hard_limit(void **state)
{
    uint32_t v = 7;

    (void)state;
    assert_true(ctl_parse_hard_limit("unlimited", &v));
    assert_true(v == CNT_HARD_LIMIT_UNLIMITED);
    assert_true(ctl_parse_hard_limit("0", &v));
    assert_true(v == 0);
    assert_true(ctl_parse_hard_limit("4294967294", &v));
    assert_true(v == 4294967294u);
    v = 7;
    assert_false(ctl_parse_hard_limit("4294967295", &v));
    assert_false(ctl_parse_hard_limit("4294967296", &v));
    assert_false(ctl_parse_hard_limit("Unlimited", &v));
    assert_false(ctl_parse_hard_limit("unlimited ", &v));
    assert_false(ctl_parse_hard_limit("-1", &v));
    assert_false(ctl_parse_hard_limit("", &v));
    assert_true(v == 7);
}

/* Writes len bytes to a new temporary file; returns its path (static). */
static const char *secret_file(const void *bytes, size_t len)
{
    static char path[64];
    const char *dir = getenv("TMPDIR");
    int fd;

    snprintf(path, sizeof path, "%s/ctlsecretXXXXXX",
             dir != NULL && strlen(dir) < 40 ? dir : "/tmp");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(write(fd, bytes, len) == (ssize_t)len);
    close(fd);
    return path;
}

/* Reads back a secret file holding text; returns what ctl_read_secret
 * says, the secret in got/got_len. */
static ctl_secret read_back(const void *text, size_t n, uint8_t *got,
                            size_t *got_len)
{
    const char *path = secret_file(text, n);
    int err = 0;
    ctl_secret r = ctl_read_secret(path, got, got_len, &err);

    unlink(path);
    return r;
}

/* The file's content minus one line end: the server's own reading. */
static void test_read_secret(void **state)
{
    static uint8_t got[CTL_SECRET_BUF], big[CTL_SECRET_MAX + 2];
    size_t len = 0;
    int err = 0;

    (void)state;
    assert_int_equal(read_back("s3cret\n", 7, got, &len), CTL_SECRET_OK);
    assert_true(len == 6 && memcmp(got, "s3cret", 6) == 0);
    assert_int_equal(read_back("s3cret", 6, got, &len), CTL_SECRET_OK);
    assert_true(len == 6 && memcmp(got, "s3cret", 6) == 0);
    assert_int_equal(read_back("s3cret\r\n", 8, got, &len), CTL_SECRET_OK);
    assert_true(len == 6 && memcmp(got, "s3cret", 6) == 0);
    /* Only one line end goes; a lone "\r" and inner bytes stay. */
    assert_int_equal(read_back("a b\n\n", 5, got, &len), CTL_SECRET_OK);
    assert_true(len == 4 && memcmp(got, "a b\n", 4) == 0);
    assert_int_equal(read_back("ab\r", 3, got, &len), CTL_SECRET_OK);
    assert_true(len == 3 && memcmp(got, "ab\r", 3) == 0);
    assert_int_equal(read_back("a\0b", 3, got, &len), CTL_SECRET_OK);
    assert_true(len == 3 && memcmp(got, "a\0b", 3) == 0);
    /* Empty, before or after the trim. */
    assert_int_equal(read_back("", 0, got, &len), CTL_SECRET_EMPTY);
    assert_int_equal(read_back("\n", 1, got, &len), CTL_SECRET_EMPTY);
    assert_int_equal(read_back("\r\n", 2, got, &len), CTL_SECRET_EMPTY);
    /* 4096 bytes, with or without a line end; one more is too long. */
    memset(big, 'x', sizeof big);
    assert_int_equal(read_back(big, CTL_SECRET_MAX, got, &len),
                     CTL_SECRET_OK);
    assert_true(len == CTL_SECRET_MAX);
    big[CTL_SECRET_MAX] = '\n';
    assert_int_equal(read_back(big, CTL_SECRET_MAX + 1, got, &len),
                     CTL_SECRET_OK);
    assert_true(len == CTL_SECRET_MAX);
    big[CTL_SECRET_MAX] = 'x';
    assert_int_equal(read_back(big, CTL_SECRET_MAX + 1, got, &len),
                     CTL_SECRET_TOO_LONG);
    big[CTL_SECRET_MAX] = '\r';
    big[CTL_SECRET_MAX + 1] = '\n';
    assert_int_equal(read_back(big, CTL_SECRET_MAX + 2, got, &len),
                     CTL_SECRET_OK);
    assert_true(len == CTL_SECRET_MAX);
    /* A refusal leaves no byte of the secret behind. */
    for (size_t i = 0; i < sizeof got; i++)
        got[i] = 'y';
    memset(big, 'x', sizeof big);
    assert_int_equal(read_back(big, sizeof big, got, &len),
                     CTL_SECRET_TOO_LONG);
    for (size_t i = 0; i < sizeof got; i++)
        assert_int_equal(got[i], 0);
    /* Missing, or a directory: errno kept for the message. */
    assert_int_equal(ctl_read_secret("/nonexistent/ctl/secret", got, &len,
                                     &err), CTL_SECRET_OPEN);
    assert_int_equal(err, ENOENT);
    assert_int_equal(ctl_read_secret("/", got, &len, &err),
                     CTL_SECRET_READ);
    assert_int_equal(err, EISDIR);
}

/* --servers takes the client's server lists: its errors are usage
 * errors that name the bad item. */
static void test_servers_list(void **state)
{
    mcc_server_spec list[CTL_SERVERS_MAX];
    char err[256];

    (void)state;
    assert_int_equal(mcc_servers_parse("127.0.0.1:11215,127.0.0.1:11216:3",
                                       list, CTL_SERVERS_MAX, err,
                                       sizeof err), 2);
    assert_int_equal(list[1].weight, 3);
    assert_int_equal(mcc_servers_parse("127.0.0.1", list, CTL_SERVERS_MAX,
                                       err, sizeof err), -1);
    assert_non_null(strstr(err, "\"127.0.0.1\""));
}

/* A command and the key it is routed by (NULL: every server). */
struct route_row {
    const char *cmd;
    const char *args[6];
    const char *key;
};

static const struct route_row route_rows[] = {
    { "get", { "n1" }, "n1" },
    { "acquire", { "n2", "1", "5" }, "n2" },
    { "acquire", { "n3", "1", "-", "--wait", "2" }, "n3" },
    { "release", { "n4", "1" }, "n4" },
    { "run", { "n5", "1", "2", "--", "true" }, "n5" },
    { "window", { "n6", "10" }, "n6" },
    { "gcra", { "n7", "1", "2", "1s" }, "n7" },
    { "ttl", { "insert", "n8", "3", "1s" }, "n8" },
    { "ttl", { "query", "n9" }, "n9" },
    { "throttle", { "t1", "5" }, "t1" },
    { "tenant", { "show", "t2" }, "t2" },
    { "tenant", { "set", "t3", "--reserved", "4" }, "t3" },
    { "tenant", { "remove", "t4" }, "t4" },
    { "tenant", { "show" }, NULL },
    { "noop", { NULL }, NULL },
    { "stats", { NULL }, NULL },
    { "dump", { NULL }, NULL },
    { "queues", { NULL }, NULL },
    { "node", { "show" }, NULL },
    { "node", { "set", "--capacity", "5" }, NULL },
    { "node", { "reload" }, NULL },
};

/* Each command goes by its counter or tenant name, or to every server. */
static void test_route_key(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof route_rows / sizeof route_rows[0]; i++) {
        const struct route_row *r = &route_rows[i];
        char *argv[7] = { NULL };
        int argc = 0;
        const char *got;

        while (argc < 6 && r->args[argc] != NULL) {
            argv[argc] = (char *)r->args[argc];
            argc++;
        }
        got = ctl_route_key(r->cmd, argc, argv);
        if (r->key == NULL && got != NULL)
            fail_msg("%s: routed by \"%s\", expected every server", r->cmd,
                     got);
        if (r->key != NULL && (got == NULL || strcmp(got, r->key) != 0))
            fail_msg("%s: routed by \"%s\", expected \"%s\"", r->cmd,
                     got != NULL ? got : "(every server)", r->key);
    }
}

/* Servers are named HOST:PORT, an IPv6 address in brackets. */
static void test_format_server(void **state)
{
    char buf[MCC_SERVER_TEXT_MAX];

    (void)state;
    assert_string_equal(ctl_format_server("127.0.0.1", "11215", buf,
                                          sizeof buf), "127.0.0.1:11215");
    assert_string_equal(ctl_format_server("::1", "7", buf, sizeof buf),
                        "[::1]:7");
    assert_string_equal(ctl_format_server("db.example", "1", buf,
                                          sizeof buf), "db.example:1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_duration_ns),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_hard_limit),
        cmocka_unit_test(test_read_secret),
        cmocka_unit_test(test_servers_list),
        cmocka_unit_test(test_route_key),
        cmocka_unit_test(test_format_server),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
