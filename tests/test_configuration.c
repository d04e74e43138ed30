/* test_configuration.c: unit tests of the configuration parser: every key,
 * its range and spellings, the -X string syntax, the file format, and the
 * one-line error messages naming key and value. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/configuration.h"

/* A -X string that must parse, and one field of the result to check. */
typedef struct good_case {
    const char *input;
    enum { F_ENABLE, F_PORT, F_MAXCONN, F_BUCKETS, F_INTERVAL, F_THREADS,
           F_MEMLIMIT, F_NBINDS } field;
    uint64_t expected;
} good_case;

static const good_case good_cases[] = {
    {"counter.enable=true", F_ENABLE, 1},
    {"counter.enable=YES", F_ENABLE, 1},
    {"counter.enable=on", F_ENABLE, 1},
    {"counter.enable=1", F_ENABLE, 1},
    {"counter.enable=false", F_ENABLE, 0},
    {"counter.enable=No", F_ENABLE, 0},
    {"counter.enable=off", F_ENABLE, 0},
    {"counter.enable=0", F_ENABLE, 0},
    {"counter.port=0", F_PORT, 0},
    {"counter.port=65535", F_PORT, 65535},
    {"  counter.port = 11300  ", F_PORT, 11300},
    {";;counter.port=1;;", F_PORT, 1},
    {"counter.port=1;counter.port=2", F_PORT, 2},       /* last one wins */
    {"counter.port=\"4242\"", F_PORT, 4242},            /* quoted value */
    {"counter.max_connections=0", F_MAXCONN, 0},
    {"counter.max_connections=4294967295", F_MAXCONN, 4294967295u},
    {"counter.buckets=1", F_BUCKETS, 1},
    {"counter.buckets=4294967295", F_BUCKETS, 4294967295u},
    {"counter.consumption_stats.interval=1", F_INTERVAL, 1},
    {"counter.stat_interval=10", F_INTERVAL, 10},
    {"counter.threads=1", F_THREADS, 1},
    {"counter.threads=64", F_THREADS, 64},
    {"counter.memory_limit=0", F_MEMLIMIT, 0},
    {"counter.memory_limit=1000", F_MEMLIMIT, 1000},
    {"counter.memory_limit=2K", F_MEMLIMIT, 2048},
    {"counter.memory_limit=3m", F_MEMLIMIT, 3u << 20},
    {"counter.memory_limit=4G", F_MEMLIMIT, 4ull << 30},
    {"counter.bind=::1", F_NBINDS, 1},
    {"counter.bind=127.0.0.1,::1", F_NBINDS, 2},
    {"counter.bind=127.0.0.1 ::1  [::1]", F_NBINDS, 3},
    {"", F_PORT, 11215},                                /* nothing changes */
    {" ; ; ", F_PORT, 11215},
};

/* Reads the field a good case checks. */
static uint64_t field_of(const cnt_config *c, int field)
{
    switch (field) {
    case F_ENABLE: return c->enable;
    case F_PORT: return c->port;
    case F_MAXCONN: return c->max_connections;
    case F_BUCKETS: return c->buckets;
    case F_INTERVAL: return c->interval;
    case F_THREADS: return c->threads;
    case F_MEMLIMIT: return c->memory_limit;
    case F_NBINDS: return c->nbinds;
    default: return UINT64_MAX;
    }
}

static void test_good_strings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
        cnt_config c;
        char err[256] = "";
        cnt_config_defaults(&c);
        if (!cnt_config_parse_string(&c, good_cases[i].input, err,
                                     sizeof(err)))
            fail_msg("\"%s\" rejected: %s", good_cases[i].input, err);
        assert_int_equal(field_of(&c, good_cases[i].field),
                         good_cases[i].expected);
    }
}

/* A -X string that must fail, and the exact message it must give. */
typedef struct bad_case {
    const char *input;
    const char *message;
} bad_case;

static const bad_case bad_cases[] = {
    {"counter.port=abc",
     "counter: invalid value \"abc\" for counter.port (expected 0..65535)"},
    {"counter.port=65536",
     "counter: invalid value \"65536\" for counter.port (expected 0..65535)"},
    {"counter.port=",
     "counter: invalid value \"\" for counter.port (expected 0..65535)"},
    {"counter.port=-1",
     "counter: invalid value \"-1\" for counter.port (expected 0..65535)"},
    {"counter.port=1 2",
     "counter: invalid value \"1 2\" for counter.port (expected 0..65535)"},
    {"counter.buckets=0",
     "counter: invalid value \"0\" for counter.buckets "
     "(expected 1..4294967295)"},
    {"counter.buckets=99999999999999999999999",      /* past 2^64 */
     "counter: invalid value \"99999999999999999999999\" for counter.buckets "
     "(expected 1..4294967295)"},
    {"counter.threads=0",
     "counter: invalid value \"0\" for counter.threads (expected 1..64)"},
    {"counter.threads=65",
     "counter: invalid value \"65\" for counter.threads (expected 1..64)"},
    {"counter.stat_interval=0",
     "counter: invalid value \"0\" for counter.stat_interval "
     "(expected 1..4294967295)"},
    {"counter.consumption_stats.interval=x",
     "counter: invalid value \"x\" for counter.consumption_stats.interval "
     "(expected 1..4294967295)"},
    {"counter.max_connections=4294967296",
     "counter: invalid value \"4294967296\" for counter.max_connections "
     "(expected 0..4294967295)"},
    {"counter.enable=maybe",
     "counter: invalid value \"maybe\" for counter.enable (expected "
     "true/false, yes/no, on/off or 1/0)"},
    {"counter.memory_limit=12T",
     "counter: invalid value \"12T\" for counter.memory_limit (expected "
     "bytes, optionally with a K, M or G suffix)"},
    {"counter.memory_limit=K",
     "counter: invalid value \"K\" for counter.memory_limit (expected "
     "bytes, optionally with a K, M or G suffix)"},
    {"counter.memory_limit=99999999999G",          /* overflows 64 bits */
     "counter: invalid value \"99999999999G\" for counter.memory_limit "
     "(expected bytes, optionally with a K, M or G suffix)"},
    {"counter.bind=localhost",
     "counter: invalid value \"localhost\" for counter.bind (expected IPv4 "
     "or IPv6 addresses separated by commas or spaces)"},
    {"counter.bind=",
     "counter: invalid value \"\" for counter.bind (expected IPv4 or IPv6 "
     "addresses separated by commas or spaces)"},
    {"counter.bind=1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,6.6.6.6,"
     "7.7.7.7,8.8.8.8,9.9.9.9",
     "counter: invalid value \"1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,"
     "6.6.6.6,7.7.7.7,8.8.8.8,9.9.9.9\" for counter.bind (at most 8 "
     "addresses)"},
    {"counter.prot=1",
     "counter: unknown key \"counter.prot\" with value \"1\""},
    {"port=1",
     "counter: unknown key \"port\" with value \"1\" (only counter.* keys "
     "are accepted)"},
    {"counter.enable=true;garbage",
     "counter: malformed setting \"garbage\" (expected key=value)"},
    {"=5",
     "counter: malformed setting \"=5\" (expected key=value)"},
    {"counter.port=\"12",
     "counter: unterminated quote in value \"12 for counter.port"},
    {"counter.config=",
     "counter: invalid value \"\" for counter.config (expected a file "
     "path)"},
    {"counter.config=/nonexistent/counter.conf",
     "counter: cannot read file \"/nonexistent/counter.conf\" named by "
     "counter.config: No such file or directory"},
};

static void test_bad_strings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        cnt_config c, before;
        char err[512] = "";
        cnt_config_defaults(&c);
        c.port = 1234;
        before = c;
        if (cnt_config_parse_string(&c, bad_cases[i].input, err,
                                    sizeof(err)))
            fail_msg("\"%s\" accepted", bad_cases[i].input);
        assert_string_equal(err, bad_cases[i].message);
        /* A failed parse leaves the configuration as it was. */
        assert_memory_equal(&c, &before, sizeof(c));
    }
}

static void test_defaults(void **state)
{
    (void)state;
    cnt_config c;
    cnt_config_defaults(&c);
    assert_false(c.enable);
    assert_int_equal(c.port, 11215);
    assert_int_equal(c.nbinds, 1);
    assert_string_equal(c.binds[0], "127.0.0.1");
    assert_int_equal(c.max_connections, 0);
    assert_int_equal(c.buckets, 1000000);
    assert_int_equal(c.interval, 86400);
    assert_in_range(c.threads, 1, 4);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(c.threads, cpus >= 4 ? 4 : (cpus < 1 ? 1 : cpus));
    assert_int_equal(c.memory_limit, 0);
    /* NULL changes nothing. */
    assert_true(cnt_config_parse_string(&c, NULL, NULL, 0));
    assert_int_equal(c.port, 11215);
}

static void test_bind_list_contents(void **state)
{
    (void)state;
    cnt_config c;
    char err[256];
    cnt_config_defaults(&c);
    assert_true(cnt_config_parse_string(
        &c, "counter.bind=\"0.0.0.0, [::] ::1\"", err, sizeof(err)));
    assert_int_equal(c.nbinds, 3);
    assert_string_equal(c.binds[0], "0.0.0.0");
    assert_string_equal(c.binds[1], "::");
    assert_string_equal(c.binds[2], "::1");
}

/* Writes text to a fresh temporary file; returns its path (static). */
static const char *write_temp(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/test_configuration.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static void test_file(void **state)
{
    (void)state;
    const char *path = write_temp(
        "# counter settings\n"
        "\n"
        "counter.enable = true\n"
        "   counter.port=11300\n"
        "counter.bind = \"127.0.0.1 ::1\"\n"
        "\t# an indented comment\n"
        "counter.stat_interval = 60\r\n"
        "counter.memory_limit = 256M");           /* no final newline */
    cnt_config c;
    char err[256] = "";
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_file(&c, path, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("file rejected: %s", err);
    assert_true(c.enable);
    assert_int_equal(c.port, 11300);
    assert_int_equal(c.nbinds, 2);
    assert_string_equal(c.binds[1], "::1");
    assert_int_equal(c.interval, 60);
    assert_int_equal(c.memory_limit, 256u << 20);
}

static void test_file_from_string(void **state)
{
    (void)state;
    const char *path = write_temp("counter.port = 2000\ncounter.threads=2\n");
    char input[128];
    /* Settings apply in order: the file, then the later key. */
    snprintf(input, sizeof(input),
             "counter.enable=1; counter.config=%s ;counter.port=3000", path);
    cnt_config c;
    char err[256] = "";
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_string(&c, input, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("rejected: %s", err);
    assert_true(c.enable);
    assert_int_equal(c.port, 3000);
    assert_int_equal(c.threads, 2);
}

/* A file with an error, and the message (after "counter: PATH:") it gives. */
typedef struct bad_file_case {
    const char *text;
    const char *message;
} bad_file_case;

static const bad_file_case bad_files[] = {
    {"counter.enable = true\ncounter.port = x\n",
     ":2: invalid value \"x\" for counter.port (expected 0..65535)"},
    {"# c\n\ncounter.enable true\n",
     ":3: malformed setting \"counter.enable true\" (expected key=value)"},
    {"counter.nope = 1\n",
     ":1: unknown key \"counter.nope\" with value \"1\""},
    {"counter.config = /etc/other\n",
     ":1: invalid key \"counter.config\" with value \"/etc/other\" (a "
     "configuration file cannot name another)"},
    {"counter.bind = \"::1\n",
     ":1: unterminated quote in value \"::1 for counter.bind"},
};

static void test_bad_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
        const char *path = write_temp(bad_files[i].text);
        char expected[512];
        snprintf(expected, sizeof(expected), "counter: %s%s", path,
                 bad_files[i].message);
        cnt_config c;
        char err[512] = "";
        cnt_config_defaults(&c);
        bool ok = cnt_config_parse_file(&c, path, err, sizeof(err));
        unlink(path);
        assert_false(ok);
        assert_string_equal(err, expected);
        assert_false(c.enable);        /* unchanged on error */
    }
}

static void test_small_error_buffer(void **state)
{
    (void)state;
    cnt_config c;
    char err[16];
    cnt_config_defaults(&c);
    /* Truncated, still terminated; no buffer at all is fine too. */
    assert_false(cnt_config_parse_string(&c, "counter.port=x", err,
                                         sizeof(err)));
    assert_int_equal(strlen(err), sizeof(err) - 1);
    assert_false(cnt_config_parse_string(&c, "counter.port=x", NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_good_strings),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_bind_list_contents),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_file_from_string),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_small_error_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
