/* test_counterctl_args.c: cmocka tests of counterctl's argument parsers
 * (counterctl_args.c): duration arguments in whole steps within their
 * bounds, and the messages of the refusals (not a duration, an unknown
 * unit, capitals, too fine, too long) that counterctl turns into usage
 * errors naming the argument; hard limits; and the
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

/* One duration argument, what it may be, and what it gives: the steps,
 * or the message (NULL: accepted). */
struct duration_row {
    const char *text;
    const ctl_span *span;
    uint64_t steps;
    const char *message;
};

/* As --wait takes it: whole milliseconds below the group's marker. */
static const ctl_span ms_span = {
    1000000, "milliseconds", 0, 4294967294u,
    "0 to 4294967294ms, about 49.7 days",
};

/* As --window takes it: nanoseconds, above 0. */
static const ctl_span ns_span = {
    1, "nanoseconds", 1, UINT64_MAX, "longer than 0",
};

static const struct duration_row duration_rows[] = {
    { "250ms", &ms_span, 250, NULL },
    { "1.5", &ms_span, 1500, NULL },        /* a bare number: seconds */
    { "10", &ms_span, 10000, NULL },
    { "0", &ms_span, 0, NULL },
    { "2m", &ms_span, 120000, NULL },       /* m is minutes */
    { "0.5min", &ms_span, 30000, NULL },
    { "1000us", &ms_span, 1, NULL },
    { "4294967294ms", &ms_span, 4294967294u, NULL },
    { "18446744073709551615ns", &ns_span, UINT64_MAX, NULL },
    { "1.5h", &ns_span, 5400000000000u, NULL },
    { "4294967295ms", &ms_span, 0,
      "\"4294967295ms\" is too long (0 to 4294967294ms, about 49.7 days)" },
    { "0.0005", &ms_span, 0,
      "\"0.0005\" is not a whole number of milliseconds (0 to 4294967294ms, "
      "about 49.7 days)" },
    { "0s", &ns_span, 0, "\"0s\" is too short (longer than 0)" },
    { "18446744073709551616ns", &ns_span, 0,
      "\"18446744073709551616ns\" is too long (longer than 0)" },
    { "5 minutes", &ns_span, 0,
      "\"5 minutes\" is not a duration (write a number and a unit: 250ms, "
      "3s, 5min, 2h)" },
    { "", &ns_span, 0,
      "\"\" is not a duration (write a number and a unit: 250ms, 3s, 5min, "
      "2h)" },
    { "-3s", &ms_span, 0,
      "\"-3s\" is negative (write a number and a unit: 250ms, 3s, 5min, "
      "2h)" },
    { "3parsecs", &ns_span, 0,
      "\"3parsecs\" has an unknown unit (units: ns, us, ms, s, m or min, h, "
      "as in 250ms, 3s, 5min, 2h)" },
    { "3M", &ns_span, 0,
      "\"3M\" has its unit in capitals (units are lower case: ns, us, ms, "
      "s, m or min, h)" },
    { "1.5ns", &ns_span, 0,
      "\"1.5ns\" is not a whole number of nanoseconds (write a number and "
      "a unit: 250ms, 3s, 5min, 2h)" },
};

/* Every row parses as listed; a refusal leaves the steps alone and says
 * why, naming the value. */
static void test_duration_arg(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof duration_rows / sizeof duration_rows[0];
         i++) {
        const struct duration_row *r = &duration_rows[i];
        uint64_t steps = 12345;
        cnt_duration d;
        char msg[192] = "";
        bool ok = ctl_duration_arg(r->text, r->span, &d, &steps, msg,
                                   sizeof msg);

        print_message("%s\n", r->text);
        if (r->message == NULL) {
            assert_true(ok);
            assert_true(steps == r->steps);
        } else {
            assert_false(ok);
            assert_true(steps == 12345);
            assert_string_equal(msg, r->message);
        }
    }
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
    { "tenant", { "set", "t5", "--json", "t5.json" }, "t5" },
    { "tenant", { "remove", "t4" }, "t4" },
    { "tenant", { "show" }, NULL },
    { "noop", { NULL }, NULL },
    { "stats", { NULL }, NULL },
    { "dump", { NULL }, NULL },
    { "queues", { NULL }, NULL },
    { "node", { "show" }, NULL },
    { "node", { "set", "--capacity", "5" }, NULL },
    { "node", { "set", "--json", "node.json" }, NULL },
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
        cmocka_unit_test(test_duration_arg),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_hard_limit),
        cmocka_unit_test(test_read_secret),
        cmocka_unit_test(test_servers_list),
        cmocka_unit_test(test_route_key),
        cmocka_unit_test(test_format_server),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
