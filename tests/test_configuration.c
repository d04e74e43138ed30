/* test_configuration.c: unit tests of the configuration parser: every key,
 * its range and spellings, the -X string syntax, the file format and its
 * limits (regular files only, line and size caps), the admin secret file
 * and the throttle settings file, and the one-line error messages naming
 * the key first and cutting long values. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/glue/configuration.h"
#include "tests/engine_fake.h"

/* A -X string that must parse, and one field of the result to check. */
typedef struct good_case {
    const char *input;
    enum { F_ENABLE, F_PORT, F_MAXCONN, F_BUCKETS, F_INTERVAL, F_THREADS,
           F_MEMLIMIT, F_NBINDS, F_KEEPALIVE, F_KA_IDLE, F_KA_INTERVAL,
           F_KA_COUNT, F_MAX_WAITS, F_THROTTR_PORT, F_THROTTR_SIZE,
           F_AUTH_LIMIT, F_AUTH_LIMIT_ADDR } field;
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
    /* the interval and keepalive times are durations in whole seconds */
    {"counter.stat_interval=24h", F_INTERVAL, 86400},
    {"counter.stat_interval=1.5min", F_INTERVAL, 90},
    {"counter.consumption_stats.interval=2000ms", F_INTERVAL, 2},
    {"counter.threads=1", F_THREADS, 1},
    {"counter.threads=64", F_THREADS, 64},
    {"counter.memory_limit=0", F_MEMLIMIT, 0},
    {"counter.memory_limit=1000", F_MEMLIMIT, 1000},
    {"counter.memory_limit=2K", F_MEMLIMIT, 2048},
    {"counter.memory_limit=3m", F_MEMLIMIT, 3u << 20},
    {"counter.memory_limit=4G", F_MEMLIMIT, 4ull << 30},
    {"counter.keepalive=false", F_KEEPALIVE, 0},
    {"counter.keepalive=on", F_KEEPALIVE, 1},
    {"counter.keepalive_idle=1", F_KA_IDLE, 1},
    {"counter.keepalive_idle=32767", F_KA_IDLE, 32767},
    {"counter.keepalive_interval=5", F_KA_INTERVAL, 5},
    {"counter.keepalive_interval=5s", F_KA_INTERVAL, 5},
    {"counter.keepalive_idle=2m", F_KA_IDLE, 120},
    {"counter.keepalive_count=127", F_KA_COUNT, 127},
    {"counter.bind=::1", F_NBINDS, 1},
    {"counter.bind=127.0.0.1,::1", F_NBINDS, 2},
    {"counter.bind=127.0.0.1 ::1  [::1]", F_NBINDS, 3},
    {"counter.max_waits=1", F_MAX_WAITS, 1},
    {"counter.max_waits=4294967295", F_MAX_WAITS, 4294967295u},
    {"", F_THROTTR_PORT, 0},                        /* Throttr off */
    {"", F_THROTTR_SIZE, 2},
    {"counter.throttr.port=11216", F_THROTTR_PORT, 11216},
    {"counter.throttr.port=0", F_THROTTR_PORT, 0},
    {"counter.throttr.value_size=1", F_THROTTR_SIZE, 1},
    {"counter.throttr.value_size=4", F_THROTTR_SIZE, 4},
    {"counter.throttr.value_size=8", F_THROTTR_SIZE, 8},
    {"", F_AUTH_LIMIT, 50},                             /* the defaults */
    {"", F_AUTH_LIMIT_ADDR, 5},
    {"counter.auth_fail_limit=0", F_AUTH_LIMIT, 0},
    {"counter.auth_fail_limit=4294967295", F_AUTH_LIMIT, 4294967295u},
    {"counter.auth_fail_limit_per_address=0", F_AUTH_LIMIT_ADDR, 0},
    {"counter.auth_fail_limit_per_address=20", F_AUTH_LIMIT_ADDR, 20},
    {"", F_PORT, 11215},                                /* nothing changes */
    {" ; ; ", F_PORT, 11215},
};

/* Reads the field a good case checks. */
static uint64_t field_of(const cnt_config *c, int field)
{
    switch (field) {
    case F_ENABLE: return c->enable;
    case F_PORT: return c->server.port;
    case F_MAXCONN: return c->server.max_connections;
    case F_BUCKETS: return c->table.buckets;
    case F_INTERVAL: return c->table.interval;
    case F_THREADS: return c->server.threads;
    case F_MEMLIMIT: return c->table.memory_limit;
    case F_NBINDS: return c->server.nbinds;
    case F_KEEPALIVE: return c->server.keepalive;
    case F_KA_IDLE: return c->server.keepalive_idle;
    case F_KA_INTERVAL: return c->server.keepalive_interval;
    case F_KA_COUNT: return c->server.keepalive_count;
    case F_MAX_WAITS: return c->server.max_waits;
    case F_THROTTR_PORT: return c->server.throttr_port;
    case F_THROTTR_SIZE: return c->server.throttr_value_size;
    case F_AUTH_LIMIT: return c->server.auth_fail_limit;
    case F_AUTH_LIMIT_ADDR: return c->server.auth_fail_limit_per_address;
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
        cnt_config_free(&c);
    }
}

/* What the group errors say after "(expected ". */
#define GROUP_EXPECTED "max:1..4294967295[,wait:DURATION][,lease:DURATION]"
/* What the duration errors say after the value. */
#define DURATION_FORM "write a number and a unit: 250ms, 3s, 5min, 2h"
#define GROUP_NAME_EXPECTED "expected 1..255 bytes without white space, " \
    "';', '=' or '\"'"

/* A -X string that must fail, and the exact message it must give. */
typedef struct bad_case {
    const char *input;
    const char *message;
} bad_case;

static const bad_case bad_cases[] = {
    {"counter.port=abc",
     "counter: counter.port: invalid value \"abc\" (expected 0..65535)"},
    {"counter.port=65536",
     "counter: counter.port: invalid value \"65536\" (expected 0..65535)"},
    {"counter.port=",
     "counter: counter.port: invalid value \"\" (expected 0..65535)"},
    {"counter.port=-1",
     "counter: counter.port: invalid value \"-1\" (expected 0..65535)"},
    {"counter.port=1 2",
     "counter: counter.port: invalid value \"1 2\" (expected 0..65535)"},
    {"counter.buckets=0",
     "counter: counter.buckets: invalid value \"0\" "
     "(expected 1..4294967295)"},
    {"counter.buckets=99999999999999999999999",      /* past 2^64 */
     "counter: counter.buckets: invalid value \"99999999999999999999999\" "
     "(expected 1..4294967295)"},
    {"counter.threads=0",
     "counter: counter.threads: invalid value \"0\" (expected 1..64)"},
    {"counter.keepalive=sometimes",
     "counter: counter.keepalive: invalid value \"sometimes\" (expected "
     "true/false, yes/no, on/off or 1/0)"},
    {"counter.keepalive_idle=0",
     "counter: counter.keepalive_idle: \"0\" is too short "
     "(1s to 32767s)"},
    {"counter.keepalive_interval=32768",
     "counter: counter.keepalive_interval: \"32768\" is too long "
     "(1s to 32767s)"},
    {"counter.keepalive_interval=1.5s",
     "counter: counter.keepalive_interval: \"1.5s\" is not a whole number "
     "of seconds (this setting counts whole seconds)"},
    {"counter.keepalive_idle=10h",
     "counter: counter.keepalive_idle: \"10h\" is too long "
     "(1s to 32767s)"},
    {"counter.keepalive_count=128",
     "counter: counter.keepalive_count: invalid value \"128\" "
     "(expected 1..127)"},
    {"counter.threads=65",
     "counter: counter.threads: invalid value \"65\" (expected 1..64)"},
    {"counter.stat_interval=0",
     "counter: counter.stat_interval: \"0\" is too short "
     "(1s to 4294967295s)"},
    {"counter.stat_interval=1D",
     "counter: counter.stat_interval: \"1D\" has an unknown unit "
     "(units: ns, us, ms, s, m or min, h, as in 250ms, 3s, 5min, 2h)"},
    {"counter.consumption_stats.interval=x",
     "counter: counter.consumption_stats.interval: \"x\" is not a "
     "duration (" DURATION_FORM ")"},
    {"counter.max_connections=4294967296",
     "counter: counter.max_connections: invalid value \"4294967296\" "
     "(expected 0..4294967295)"},
    {"counter.enable=maybe",
     "counter: counter.enable: invalid value \"maybe\" (expected "
     "true/false, yes/no, on/off or 1/0)"},
    {"counter.memory_limit=12T",
     "counter: counter.memory_limit: invalid value \"12T\" (expected "
     "bytes, optionally with a K, M or G suffix)"},
    {"counter.memory_limit=K",
     "counter: counter.memory_limit: invalid value \"K\" (expected "
     "bytes, optionally with a K, M or G suffix)"},
    {"counter.memory_limit=99999999999G",          /* overflows 64 bits */
     "counter: counter.memory_limit: invalid value \"99999999999G\" "
     "(expected bytes, optionally with a K, M or G suffix)"},
    {"counter.bind=localhost",
     "counter: counter.bind: invalid value \"localhost\" (expected IPv4 "
     "or IPv6 addresses separated by commas or spaces)"},
    {"counter.bind=",
     "counter: counter.bind: invalid value \"\" (expected IPv4 or IPv6 "
     "addresses separated by commas or spaces)"},
    {"counter.bind=1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,6.6.6.6,"
     "7.7.7.7,8.8.8.8,9.9.9.9",                     /* 71 bytes: cut at 64 */
     "counter: counter.bind: invalid value \"1.1.1.1,2.2.2.2,3.3.3.3,"
     "4.4.4.4,5.5.5.5,6.6.6.6,7.7.7.7,8.8.8.8,...\" (expected at most 8 "
     "addresses)"},
    {"counter.prot=1",
     "counter: counter.prot: unknown key (value \"1\")"},
    {"port=1",
     "counter: port: unknown key (value \"1\"; only counter.* keys are "
     "accepted)"},
    {"counter.enable=true;garbage",
     "counter: malformed setting \"garbage\" (expected key=value)"},
    {"=5",
     "counter: malformed setting \"=5\" (expected key=value)"},
    {"counter.port=\"12",
     "counter: counter.port: unterminated quote in value \"12"},
    {"counter.config=",
     "counter: counter.config: invalid value \"\" (expected a file path)"},
    {"counter.config=/nonexistent/counter.conf",
     "counter: counter.config: cannot read file "
     "\"/nonexistent/counter.conf\": No such file or directory"},
    /* Files that are not settings files: refused before any read, so
     * /dev/zero cannot eat memory (nor a FIFO block start-up; see below). */
    {"counter.config=/dev/zero",
     "counter: counter.config: \"/dev/zero\" is a character device, not a "
     "regular file"},
    {"counter.config=/",
     "counter: counter.config: \"/\" is a directory, not a regular file"},
    /* Control bytes would break the one-line message: shown as '?'. */
    {"counter.port=1\n2",
     "counter: counter.port: invalid value \"1?2\" (expected 0..65535)"},
    {"counter.throttr.port=65536",
     "counter: counter.throttr.port: invalid value \"65536\" "
     "(expected 0..65535)"},
    {"counter.throttr.value_size=3",
     "counter: counter.throttr.value_size: invalid value \"3\" "
     "(expected 1, 2, 4 or 8 (bytes))"},
    {"counter.throttr.value_size=16",
     "counter: counter.throttr.value_size: invalid value \"16\" "
     "(expected 1, 2, 4 or 8 (bytes))"},
    {"counter.throttr.value_size=",
     "counter: counter.throttr.value_size: invalid value \"\" "
     "(expected 1, 2, 4 or 8 (bytes))"},
    {"counter.throttr.value_size=two",
     "counter: counter.throttr.value_size: invalid value \"two\" "
     "(expected 1, 2, 4 or 8 (bytes))"},
    {"counter.max_waits=0",
     "counter: counter.max_waits: invalid value \"0\" "
     "(expected 1..4294967295)"},
    {"counter.max_waits=4294967296",
     "counter: counter.max_waits: invalid value \"4294967296\" "
     "(expected 1..4294967295)"},
    {"counter.max_waits=many",
     "counter: counter.max_waits: invalid value \"many\" "
     "(expected 1..4294967295)"},
    {"counter.max_waits=",
     "counter: counter.max_waits: invalid value \"\" "
     "(expected 1..4294967295)"},
    {"counter.auth_fail_limit=-1",
     "counter: counter.auth_fail_limit: invalid value \"-1\" "
     "(expected 0..4294967295)"},
    {"counter.auth_fail_limit_per_address=4294967296",
     "counter: counter.auth_fail_limit_per_address: invalid value "
     "\"4294967296\" (expected 0..4294967295)"},
    /* Groups: the value's mistakes... */
    {"counter.group.licence=max:0",
     "counter: counter.group.licence: invalid value \"max:0\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=wait:5s,lease:1m",           /* no max */
     "counter: counter.group.licence: invalid value \"wait:5s,lease:1m\" "
     "(expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=",
     "counter: counter.group.licence: invalid value \"\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max:4294967296",
     "counter: counter.group.licence: invalid value \"max:4294967296\" "
     "(expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=max:-1",
     "counter: counter.group.licence: invalid value \"max:-1\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max:x",
     "counter: counter.group.licence: invalid value \"max:x\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max:",
     "counter: counter.group.licence: invalid value \"max:\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max",
     "counter: counter.group.licence: invalid value \"max\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=5",
     "counter: counter.group.licence: invalid value \"5\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5,size:3",              /* unknown field */
     "counter: counter.group.licence: invalid value \"max:5,size:3\" "
     "(expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5,max:6",               /* repeated */
     "counter: counter.group.licence: invalid value \"max:5,max:6\" "
     "(expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5,wait:1s,WAIT:2s",     /* repeated, case */
     "counter: counter.group.licence: invalid value \"max:5,wait:1s,WAIT:2s"
     "\" (expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=lease:1,max:5,lease:2",
     "counter: counter.group.licence: invalid value \"lease:1,max:5,lease:2"
     "\" (expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5,",                    /* empty field */
     "counter: counter.group.licence: invalid value \"max:5,\" (expected "
     GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5,,wait:1",
     "counter: counter.group.licence: invalid value \"max:5,,wait:1\" "
     "(expected " GROUP_EXPECTED ")"},
    {"counter.group.licence=max:5 wait:1",
     "counter: counter.group.licence: invalid value \"max:5 wait:1\" "
     "(expected " GROUP_EXPECTED ")"},
    /* ...its durations... */
    {"counter.group.licence=max:5,wait:",
     "counter: counter.group.licence: wait \"\" is not a duration (write a number and a unit: 250ms, 3s, 5min, 2h; "
     "value \"max:5,wait:\")"},
    {"counter.group.licence=max:5,wait:x",
     "counter: counter.group.licence: wait \"x\" is not a duration (write a number and a unit: 250ms, 3s, 5min, 2h; "
     "value \"max:5,wait:x\")"},
    {"counter.group.licence=max:5,wait:-1s",
     "counter: counter.group.licence: wait \"-1s\" is negative (write a number and a unit: 250ms, 3s, 5min, 2h; "
     "value \"max:5,wait:-1s\")"},
    {"counter.group.licence=max:5,wait:1.0005s",
     "counter: counter.group.licence: wait \"1.0005s\" is not a whole number of milliseconds (this setting counts whole milliseconds; "
     "value \"max:5,wait:1.0005s\")"},
    {"counter.group.licence=max:5,wait:0.5ms",
     "counter: counter.group.licence: wait \"0.5ms\" is not a whole number of milliseconds (this setting counts whole milliseconds; "
     "value \"max:5,wait:0.5ms\")"},
    {"counter.group.licence=max:5,wait:s",
     "counter: counter.group.licence: wait \"s\" is not a duration (write a number and a unit: 250ms, 3s, 5min, 2h; "
     "value \"max:5,wait:s\")"},
    {"counter.group.licence=max:5,wait:5d",
     "counter: counter.group.licence: wait \"5d\" has an unknown unit (units: ns, us, ms, s, m or min, h, as in 250ms, 3s, 5min, 2h; "
     "value \"max:5,wait:5d\")"},
    {"counter.group.licence=max:5,lease:5sec",
     "counter: counter.group.licence: lease \"5sec\" has an unknown unit (units: ns, us, ms, s, m or min, h, as in 250ms, 3s, 5min, 2h; "
     "value \"max:5,lease:5sec\")"},
    {"counter.group.licence=max:5,wait:3M",
     "counter: counter.group.licence: wait \"3M\" has its unit in capitals (units are lower case: ns, us, ms, s, m or min, h; "
     "value \"max:5,wait:3M\")"},
    {"counter.group.licence=max:5,lease:4S",
     "counter: counter.group.licence: lease \"4S\" has its unit in capitals (units are lower case: ns, us, ms, s, m or min, h; "
     "value \"max:5,lease:4S\")"},
    {"counter.group.licence=max:5,lease:9Ms",
     "counter: counter.group.licence: lease \"9Ms\" has its unit in capitals (units are lower case: ns, us, ms, s, m or min, h; "
     "value \"max:5,lease:9Ms\")"},
    {"counter.group.licence=max:5,lease:5 s",
     "counter: counter.group.licence: lease \"5 s\" is not a duration (write a number and a unit: 250ms, 3s, 5min, 2h; "
     "value \"max:5,lease:5 s\")"},
    {"counter.group.licence=max:5,lease:4294967296ms",
     "counter: counter.group.licence: lease \"4294967296ms\" is too long (at most 4294967295ms, about 49.7 days; "
     "value \"max:5,lease:4294967296ms\")"},
    {"counter.group.licence=max:5,lease:4294968s",
     "counter: counter.group.licence: lease \"4294968s\" is too long (at most 4294967295ms, about 49.7 days; "
     "value \"max:5,lease:4294968s\")"},
    {"counter.group.licence=max:5,wait:71583m",
     "counter: counter.group.licence: wait \"71583m\" is too long (at most 4294967295ms, about 49.7 days; "
     "value \"max:5,wait:71583m\")"},
    {"counter.group.licence=max:5,wait:99999999999999999999999ms",
     "counter: counter.group.licence: wait \"99999999999999999999999ms\" is too long (at most 4294967295ms, about 49.7 days; "
     "value \"max:5,wait:99999999999999999999999ms\")"},
    /* ...and its name. */
    {"counter.group.=max:1",
     "counter: counter.group.: invalid group name (value \"max:1\"; "
     GROUP_NAME_EXPECTED ")"},
    {"counter.group.a b=max:1",
     "counter: counter.group.a b: invalid group name (value \"max:1\"; "
     GROUP_NAME_EXPECTED ")"},
    {"counter.group.a\tb=max:1",
     "counter: counter.group.a?b: invalid group name (value \"max:1\"; "
     GROUP_NAME_EXPECTED ")"},
    {"counter.group.a\"b=max:1",
     "counter: counter.group.a\"b: invalid group name (value \"max:1\"; "
     GROUP_NAME_EXPECTED ")"},
    {"counter.group=max:1",
     "counter: counter.group: unknown key (value \"max:1\")"},
    /* A group after a good one fails the whole string: no group stays. */
    {"counter.group.a=max:1;counter.group.b=max:0",
     "counter: counter.group.b: invalid value \"max:0\" (expected "
     GROUP_EXPECTED ")"},
};

static void test_bad_strings(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        cnt_config c, before;
        char err[512] = "";
        cnt_config_defaults(&c);
        c.server.port = 1234;
        before = c;
        if (cnt_config_parse_string(&c, bad_cases[i].input, err,
                                    sizeof(err)))
            fail_msg("\"%s\" accepted", bad_cases[i].input);
        assert_string_equal(err, bad_cases[i].message);
        /* A failed parse leaves the configuration as it was. */
        assert_memory_equal(&c, &before, sizeof(c));
        cnt_config_free(&c);
    }
}

static void test_defaults(void **state)
{
    (void)state;
    cnt_config c;
    cnt_config_defaults(&c);
    assert_false(c.enable);
    assert_int_equal(c.server.port, 11215);
    assert_int_equal(c.server.nbinds, 1);
    assert_string_equal(c.server.binds[0], "127.0.0.1");
    assert_int_equal(c.server.max_connections, 0);
    assert_int_equal(c.table.buckets, 1000000);
    assert_int_equal(c.table.interval, 86400);
    assert_in_range(c.server.threads, 1, 4);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(c.server.threads, cpus >= 4 ? 4 : (cpus < 1 ? 1 : cpus));
    assert_int_equal(c.table.memory_limit, 0);
    assert_true(c.server.keepalive);
    assert_int_equal(c.server.keepalive_idle, 30);
    assert_int_equal(c.server.keepalive_interval, 10);
    assert_int_equal(c.server.keepalive_count, 3);
    assert_int_equal(c.server.max_waits, 1024);
    assert_null(c.server.groups);
    assert_null(c.groups);
    /* NULL changes nothing. */
    assert_true(cnt_config_parse_string(&c, NULL, NULL, 0));
    assert_int_equal(c.server.port, 11215);
}

static void test_defaults_come_from_the_layers(void **state)
{
    (void)state;
    cnt_config c;
    cnt_server_config sc;
    cnt_config_defaults(&c);
    cnt_server_config_defaults(&sc);
    /* Each default is written once, by the layer whose setting it is. */
    assert_memory_equal(&c.server, &sc, sizeof(sc));
    assert_int_equal(c.table.buckets, CNT_DEFAULT_BUCKETS);
    assert_int_equal(c.table.interval, CNT_DEFAULT_INTERVAL);
    assert_null(c.table.clock);
}

static void test_bind_list_contents(void **state)
{
    (void)state;
    cnt_config c;
    char err[256];
    cnt_config_defaults(&c);
    assert_true(cnt_config_parse_string(
        &c, "counter.bind=\"0.0.0.0, [::] ::1\"", err, sizeof(err)));
    assert_int_equal(c.server.nbinds, 3);
    assert_string_equal(c.server.binds[0], "0.0.0.0");
    assert_string_equal(c.server.binds[1], "::");
    assert_string_equal(c.server.binds[2], "::1");
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
    assert_int_equal(c.server.port, 11300);
    assert_int_equal(c.server.nbinds, 2);
    assert_string_equal(c.server.binds[1], "::1");
    assert_int_equal(c.table.interval, 60);
    assert_int_equal(c.table.memory_limit, 256u << 20);
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
    assert_int_equal(c.server.port, 3000);
    assert_int_equal(c.server.threads, 2);
}

/* A file with an error, and the message (after "counter: PATH:") it gives. */
typedef struct bad_file_case {
    const char *text;
    const char *message;
} bad_file_case;

static const bad_file_case bad_files[] = {
    {"counter.enable = true\ncounter.port = x\n",
     ":2: counter.port: invalid value \"x\" (expected 0..65535)"},
    {"# c\n\ncounter.enable true\n",
     ":3: malformed setting \"counter.enable true\" (expected key=value)"},
    {"counter.nope = 1\n",
     ":1: counter.nope: unknown key (value \"1\")"},
    {"counter.config = /etc/other\n",
     ":1: counter.config: not allowed in a configuration file (value "
     "\"/etc/other\"; a file cannot name another)"},
    {"counter.bind = \"::1\n",
     ":1: counter.bind: unterminated quote in value \"::1"},
    {"counter.group.a = max:1\ncounter.group.b = max:2,wait:1d\n",
     ":2: counter.group.b: wait \"1d\" has an unknown unit (units: ns, us, "
     "ms, s, m or min, h, as in 250ms, 3s, 5min, 2h; value \"max:2,wait:1d\")"},
    {"counter.group.a b = max:1\n",
     ":1: counter.group.a b: invalid group name (value \"max:1\"; "
     GROUP_NAME_EXPECTED ")"},
    {"counter.max_waits = 0\n",
     ":1: counter.max_waits: invalid value \"0\" (expected 1..4294967295)"},
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
        assert_null(c.groups);
    }
}

/* Parses a -X string that must fail and checks its message, with an error
 * buffer of errsize bytes (at most 512). */
static void expect_string_error(const char *input, size_t errsize,
                                const char *expected)
{
    cnt_config c, before;
    char err[512];
    assert_true(errsize <= sizeof(err));
    memset(err, 'x', sizeof(err));
    cnt_config_defaults(&c);
    before = c;
    if (cnt_config_parse_string(&c, input, err, errsize))
        fail_msg("\"%.80s\" accepted", input);
    assert_string_equal(err, expected);
    assert_memory_equal(&c, &before, sizeof(c));
}

/* Parses a file that must fail and checks its message. */
static void expect_file_error(const char *path, const char *expected)
{
    cnt_config c, before;
    char err[512] = "";
    cnt_config_defaults(&c);
    before = c;
    if (cnt_config_parse_file(&c, path, err, sizeof(err)))
        fail_msg("\"%s\" accepted", path);
    assert_string_equal(err, expected);
    assert_memory_equal(&c, &before, sizeof(c));
}

/* Returns a fresh string of n copies of ch after prefix and before suffix. */
static char *repeat(const char *prefix, char ch, size_t n, const char *suffix)
{
    size_t lp = strlen(prefix), ls = strlen(suffix);
    char *s = malloc(lp + n + ls + 1);
    assert_non_null(s);
    memcpy(s, prefix, lp);
    memset(s + lp, ch, n);
    memcpy(s + lp + n, suffix, ls + 1);
    return s;
}

/* Writes n bytes of text to a fresh temporary file; returns its path. */
static const char *write_temp_n(const char *text, size_t n)
{
    static char path[64];
    strcpy(path, "/tmp/test_configuration.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

static void test_not_regular_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_configuration.dXXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[64], expected[256], input[128];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* Without O_NONBLOCK, open() would wait here for a writer forever;
     * the alarm turns such a hang into a failure. */
    alarm(20);
    snprintf(expected, sizeof(expected), "counter: counter.config: \"%s\" "
             "is a FIFO, not a regular file", fifo);
    expect_file_error(fifo, expected);
    snprintf(input, sizeof(input), "counter.enable=1;counter.config=%s",
             fifo);
    expect_string_error(input, 512, expected);
    snprintf(expected, sizeof(expected), "counter: counter.config: \"%s\" "
             "is a directory, not a regular file", dir);
    expect_file_error(dir, expected);
    /* No line end and no end at all: refused before a single read. */
    expect_file_error("/dev/zero", "counter: counter.config: \"/dev/zero\" "
                      "is a character device, not a regular file");
    alarm(0);
    unlink(fifo);
    rmdir(dir);
}

/* A file of n bytes: lines of `width` bytes (a comment plus '\n'). */
static char *comment_lines(size_t n, size_t width)
{
    char *s = malloc(n);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = i % width == 0 ? '#' : (i % width == width - 1 ? '\n' : 'c');
    return s;
}

static void test_line_limit(void **state)
{
    (void)state;
    char expected[512];
    /* 4096 bytes before the line end is the most a line may hold. */
    char *longest = repeat("counter.port = 1\n#", 'c', 4095,
                           "\ncounter.threads = 3\n");
    const char *path = write_temp(longest);
    cnt_config c;
    char err[512] = "";
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_file(&c, path, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("4096-byte line rejected: %s", err);
    assert_int_equal(c.server.threads, 3);
    free(longest);
    /* One byte more is refused, naming the file, the line and (the start
     * of the line) the key. */
    char *over = repeat("counter.port = 1\n\tcounter.bind = ", '1', 4081,
                        "\n");                 /* 16 + 4081 = 4097 bytes */
    path = write_temp(over);
    /* The message quotes the (trimmed) line's first 64 bytes. */
    const char *start = strchr(over, '\t') + 1;
    snprintf(expected, sizeof(expected), "counter: %s:2: line longer than "
             "4096 bytes: \"%.64s...\"", path, start);
    expect_file_error(path, expected);
    unlink(path);
    free(over);
    /* 8 MB without a line end: the same refusal, not an 8 MB read. */
    char *huge = repeat("counter.bind = ", '1', 8u << 20, "\n");
    path = write_temp(huge);
    snprintf(expected, sizeof(expected), "counter: %s:1: line longer than "
             "4096 bytes: \"%.64s...\"", path, huge);
    expect_file_error(path, expected);
    unlink(path);
    free(huge);
}

static void test_file_size_limit(void **state)
{
    (void)state;
    const size_t mib = 1u << 20;
    char *text = comment_lines(mib + 1, 64);
    /* Exactly 1 MiB of comments is a (dull) settings file... */
    const char *path = write_temp_n(text, mib);
    cnt_config c;
    char err[512] = "", expected[256];
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_file(&c, path, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("1 MiB file rejected: %s", err);
    /* ...one byte more is not. */
    path = write_temp_n(text, mib + 1);
    snprintf(expected, sizeof(expected), "counter: counter.config: file "
             "\"%s\" is larger than 1048576 bytes", path);
    expect_file_error(path, expected);
    unlink(path);
    free(text);
}

static void test_read_error(void **state)
{
    (void)state;
    /* A regular file whose first read fails (EIO: address 0 is not
     * mapped): an error, not an empty file. */
    int fd = open("/proc/self/mem", O_RDONLY);
    if (fd < 0)
        skip();
    close(fd);
    char expected[256];
    snprintf(expected, sizeof(expected), "counter: counter.config: cannot "
             "read file \"/proc/self/mem\": %s", strerror(EIO));
    expect_file_error("/proc/self/mem", expected);
}

static void test_long_keys_and_values(void **state)
{
    (void)state;
    char expected[512];
    /* A huge value is cut at 64 bytes; the key comes first anyway. */
    char *in = repeat("counter.port=", '9', 100000, "");
    snprintf(expected, sizeof(expected), "counter: counter.port: invalid "
             "value \"%.64s...\" (expected 0..65535)", in + 13);
    expect_string_error(in, 256, expected);
    free(in);
    /* Even a tiny buffer holds the key before the value. */
    in = repeat("counter.bind=", 'z', 5000, "");
    expect_string_error(in, 32, "counter: counter.bind: invalid ");
    free(in);
    /* Keys and malformed tokens are cut the same way. */
    in = repeat("counter.", 'k', 1000, "=1");
    snprintf(expected, sizeof(expected), "counter: %.64s...: unknown key "
             "(value \"1\")", in);
    expect_string_error(in, 512, expected);
    free(in);
    in = repeat("", 'g', 1000, "");
    snprintf(expected, sizeof(expected), "counter: malformed setting "
             "\"%.64s...\" (expected key=value)", in);
    expect_string_error(in, 512, expected);
    free(in);
    in = repeat("counter.bind=\"", ':', 1000, "");
    snprintf(expected, sizeof(expected), "counter: counter.bind: "
             "unterminated quote in value %.64s...", in + 13);
    expect_string_error(in, 512, expected);
    free(in);
    /* A long path keeps its end, where the file name is. */
    char *missing = repeat("/nonexistent/", 'd', 200, "/x.conf");
    in = repeat("counter.config=", ' ', 0, missing);
    snprintf(expected, sizeof(expected), "counter: counter.config: cannot "
             "read file \"...%s\": %s", missing + strlen(missing) - 128,
             strerror(ENOENT));
    expect_string_error(in, 512, expected);
    free(in);
    free(missing);
}

static void test_long_value_in_file(void **state)
{
    (void)state;
    char expected[512];
    /* A 4000-byte value (under the line limit) still leaves file, line and
     * key in a 256-byte message. */
    char *text = repeat("\ncounter.memory_limit = ", '7', 4000, "\n");
    const char *path = write_temp(text);
    cnt_config c;
    char err[256];
    cnt_config_defaults(&c);
    assert_false(cnt_config_parse_file(&c, path, err, sizeof(err)));
    snprintf(expected, sizeof(expected), "counter: %s:2: counter.memory_limit:"
             " invalid value \"", path);
    unlink(path);
    assert_true(strncmp(err, expected, strlen(expected)) == 0);
    assert_non_null(strstr(err, "...\" (expected bytes"));
    free(text);
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

/* A -X string defining one group, and the settings it must get. */
typedef struct group_case {
    const char *input;
    const char *name;
    uint32_t maximum, wait_ms, lease_ms;
} group_case;

static const group_case group_cases[] = {
    {"counter.group.licence=max:5", "licence", 5, 0, 0},
    {"counter.group.licence=max:1", "licence", 1, 0, 0},
    {"counter.group.licence=max:4294967295", "licence", 4294967295u, 0, 0},
    {"counter.group.licence=max:3,wait:10s,lease:2m", "licence", 3, 10000,
     120000},
    /* any order */
    {"counter.group.licence=lease:2m,max:3,wait:10s", "licence", 3, 10000,
     120000},
    {"counter.group.licence=wait:250ms,max:3", "licence", 3, 250, 0},
    /* units: ms, s, m, seconds without one, as before; fields any case */
    {"counter.group.g=max:1,wait:1500ms", "g", 1, 1500, 0},
    {"counter.group.g=max:1,wait:7", "g", 1, 7000, 0},
    {"counter.group.g=max:1,wait:7s", "g", 1, 7000, 0},
    {"counter.group.g=max:1,wait:3m", "g", 1, 180000, 0},
    {"counter.group.g=MAX:2,Lease:9ms", "g", 2, 0, 9},
    /* the shared grammar's other units and fractions */
    {"counter.group.g=max:1,wait:3min,lease:2h", "g", 1, 180000, 7200000},
    {"counter.group.g=max:1,wait:1.5s,lease:0.25", "g", 1, 1500, 250},
    {"counter.group.g=max:1,wait:2500000us,lease:1000000000ns", "g", 1, 2500,
     1000},
    {"counter.group.g=max:1,lease:0.5min", "g", 1, 0, 30000},
    /* zero: no wait, no lease, as without the field */
    {"counter.group.g=max:1,wait:0,lease:0ms", "g", 1, 0, 0},
    /* the largest durations in each unit */
    {"counter.group.g=max:1,wait:4294967295ms,lease:4294967s", "g", 1,
     4294967295u, 4294967000u},
    {"counter.group.g=max:1,lease:71582m", "g", 1, 0, 4294920000u},
    /* white space around fields and around their parts; quoted value */
    {"counter.group.g = max:2 , wait : 3s ,lease: 4", "g", 2, 3000, 4000},
    {"counter.group.g=\"max:2,wait:3s\"", "g", 2, 3000, 0},
    /* names: any bytes but white space, ';', '=' and '"' */
    {"counter.group.a.b:c,d/e#f=max:1", "a.b:c,d/e#f", 1, 0, 0},
    {"counter.group.\xc3\xa9t\xc3\xa9=max:1", "\xc3\xa9t\xc3\xa9", 1, 0, 0},
    {"counter.group.x=max:1", "x", 1, 0, 0},
    /* the later definition wins, whole (no field of the first stays) */
    {"counter.group.g=max:1,wait:5s,lease:6s;counter.group.g=max:2", "g", 2,
     0, 0},
};

/* Checks that c has the group name with these settings. */
static void expect_group(const cnt_config *c, const char *name,
                         uint32_t maximum, uint32_t wait_ms,
                         uint32_t lease_ms)
{
    const cnt_group *g = cnt_groups_find(c->groups, (const uint8_t *)name,
                                         (uint16_t)strlen(name));
    if (g == NULL)
        fail_msg("no group \"%s\"", name);
    assert_int_equal(g->maximum, maximum);
    assert_int_equal(g->wait_ms, wait_ms);
    assert_int_equal(g->lease_ms, lease_ms);
}

static void test_groups(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(group_cases) / sizeof(group_cases[0]);
         i++) {
        const group_case *t = &group_cases[i];
        cnt_config c;
        char err[256] = "";
        cnt_config_defaults(&c);
        if (!cnt_config_parse_string(&c, t->input, err, sizeof(err)))
            fail_msg("\"%s\" rejected: %s", t->input, err);
        assert_int_equal(cnt_groups_count(c.groups), 1);
        expect_group(&c, t->name, t->maximum, t->wait_ms, t->lease_ms);
        /* The server reads the same groups. */
        assert_ptr_equal(c.server.groups, c.groups);
        cnt_config_free(&c);
        assert_null(c.groups);
        assert_null(c.server.groups);
    }
}

static void test_groups_several(void **state)
{
    (void)state;
    cnt_config c;
    char err[256] = "";
    cnt_config_defaults(&c);
    assert_true(cnt_config_parse_string(
        &c, "counter.group.a=max:1;counter.enable=1;counter.group.b=max:2,"
        "wait:1;counter.group.ab=max:3;counter.max_waits=7", err,
        sizeof(err)));
    assert_int_equal(cnt_groups_count(c.groups), 3);
    expect_group(&c, "a", 1, 0, 0);
    expect_group(&c, "b", 2, 1000, 0);
    expect_group(&c, "ab", 3, 0, 0);
    assert_null(cnt_groups_find(c.groups, (const uint8_t *)"c", 1));
    assert_int_equal(c.server.max_waits, 7);
    assert_ptr_equal(c.server.groups, c.groups);
    cnt_config_free(&c);
    /* Freeing twice, or a configuration without groups, is harmless. */
    cnt_config_free(&c);
    cnt_config_defaults(&c);
    cnt_config_free(&c);
}

static void test_group_name_length(void **state)
{
    (void)state;
    char expected[512];
    /* 255 bytes is the longest name... */
    char *in = repeat("counter.group.", 'n', 255, "=max:9");
    cnt_config c;
    char err[512] = "";
    cnt_config_defaults(&c);
    if (!cnt_config_parse_string(&c, in, err, sizeof(err)))
        fail_msg("255-byte name rejected: %s", err);
    const uint8_t *name;
    uint16_t len;
    assert_non_null(cnt_groups_at(c.groups, 0, &name, &len));
    assert_int_equal(len, 255);
    cnt_config_free(&c);
    free(in);
    /* ...one more is refused, the key cut at 64 bytes as always. */
    in = repeat("counter.group.", 'n', 256, "=max:9");
    snprintf(expected, sizeof(expected), "counter: %.64s...: invalid group "
             "name (value \"max:9\"; " GROUP_NAME_EXPECTED ")", in);
    expect_string_error(in, 512, expected);
    free(in);
}

static void test_groups_parsed_again(void **state)
{
    (void)state;
    cnt_config c, before;
    char err[256] = "";
    cnt_config_defaults(&c);
    assert_true(cnt_config_parse_string(&c, "counter.group.a=max:1", err,
                                        sizeof(err)));
    /* A second parse adds to the groups of the first... */
    assert_true(cnt_config_parse_string(&c, "counter.group.b=max:2", err,
                                        sizeof(err)));
    assert_int_equal(cnt_groups_count(c.groups), 2);
    expect_group(&c, "a", 1, 0, 0);
    expect_group(&c, "b", 2, 0, 0);
    assert_ptr_equal(c.server.groups, c.groups);
    /* ...and a failed one leaves them, and the pointer, as they were,
     * though it had redefined one and added another before failing. */
    before = c;
    assert_false(cnt_config_parse_string(
        &c, "counter.group.a=max:7;counter.group.c=max:3;counter.port=x",
        err, sizeof(err)));
    assert_memory_equal(&c, &before, sizeof(c));
    assert_int_equal(cnt_groups_count(c.groups), 2);
    expect_group(&c, "a", 1, 0, 0);
    /* A parse that touches no group keeps them all. */
    assert_true(cnt_config_parse_string(&c, "counter.port=5", err,
                                        sizeof(err)));
    assert_int_equal(cnt_groups_count(c.groups), 2);
    assert_ptr_equal(c.server.groups, c.groups);
    cnt_config_free(&c);
}

static void test_groups_in_file(void **state)
{
    (void)state;
    const char *path = write_temp(
        "# groups\n"
        "counter.group.licence = max:10, wait:30s, lease:5m\n"
        "counter.group.db = \"lease:500ms,max:2\"\n"
        "counter.max_waits = 16\n"
        "counter.group.licence = max:11\n");      /* the later one wins */
    cnt_config c;
    char err[256] = "";
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_file(&c, path, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("file rejected: %s", err);
    assert_int_equal(cnt_groups_count(c.groups), 2);
    expect_group(&c, "licence", 11, 0, 0);
    expect_group(&c, "db", 2, 0, 500);
    assert_int_equal(c.server.max_waits, 16);
    assert_ptr_equal(c.server.groups, c.groups);
    cnt_config_free(&c);
    /* Through counter.config, then the -X string redefines one. */
    path = write_temp("counter.group.a = max:1,wait:2\n");
    char input[128];
    snprintf(input, sizeof(input), "counter.config=%s;counter.group.a=max:3",
             path);
    cnt_config_defaults(&c);
    ok = cnt_config_parse_string(&c, input, err, sizeof(err));
    unlink(path);
    if (!ok)
        fail_msg("rejected: %s", err);
    assert_int_equal(cnt_groups_count(c.groups), 1);
    expect_group(&c, "a", 3, 0, 0);
    cnt_config_free(&c);
}

static void test_groups_out_of_memory(void **state)
{
    (void)state;
    static const char input[] =
        "counter.port=7;counter.group.b=max:2;counter.group.c=max:3";
    cnt_config c, before;
    char err[256] = "";
    cnt_config_defaults(&c);
    assert_true(cnt_config_parse_string(&c, "counter.group.a=max:1", err,
                                        sizeof(err)));
    long live = cnt_fake_alloc_live();
    /* Every allocation of the parse fails in turn (the copy of the groups
     * it starts from, the key and value copies, the new names, the
     * growing array): each time the parse says so, leaks nothing and
     * leaves the configuration as it was. */
    for (unsigned long n = 1;; n++) {
        before = c;
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_config_parse_string(&c, input, err, sizeof(err));
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_true(ok);
            break;
        }
        assert_false(ok);
        assert_non_null(strstr(err, "out of memory"));
        assert_memory_equal(&c, &before, sizeof(c));
        assert_int_equal(cnt_fake_alloc_live(), live);
        assert_int_equal(cnt_groups_count(c.groups), 1);
    }
    assert_int_equal(c.server.port, 7);
    assert_int_equal(cnt_groups_count(c.groups), 3);
    expect_group(&c, "a", 1, 0, 0);
    expect_group(&c, "c", 3, 0, 0);
    /* The set the first parse built (struct, array, one name) was
     * replaced, and freed: the new one has just two more names. */
    assert_int_equal(cnt_fake_alloc_live(), live + 2);
    /* A first group whose set cannot be made. */
    cnt_config_free(&c);
    cnt_config_defaults(&c);
    live = cnt_fake_alloc_live();
    cnt_fake_alloc_fail_at(3, 0);   /* after the key and value copies */
    assert_false(cnt_config_parse_string(&c, "counter.group.a=max:1", err,
                                         sizeof(err)));
    assert_true(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    assert_string_equal(err, "counter: counter.group.a: out of memory");
    assert_null(c.groups);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* The private directory the secret and throttle tests write their files
 * in (mkdtemp), and the files they wrote there, removed at the end. */
static char tmp_dir[64];
static char tmp_files[16][128];
static unsigned tmp_nfiles;

/* Creates the private directory. */
static int tmp_setup(void **state)
{
    (void)state;
    strcpy(tmp_dir, "/tmp/test_configuration.pXXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return -1;
    tmp_nfiles = 0;
    return 0;
}

/* Removes the files written in the private directory, then it. */
static int tmp_teardown(void **state)
{
    (void)state;
    for (unsigned i = 0; i < tmp_nfiles; i++) {
        chmod(tmp_files[i], 0600);
        unlink(tmp_files[i]);
    }
    tmp_nfiles = 0;
    return rmdir(tmp_dir) == 0 ? 0 : -1;
}

/* Writes n bytes to the file `name` of the private directory (replacing
 * it) and returns its path, which stays valid until the teardown. */
static const char *tmp_write_n(const char *name, const void *text, size_t n)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
    unsigned i;
    for (i = 0; i < tmp_nfiles; i++)
        if (strcmp(tmp_files[i], path) == 0)
            break;
    if (i == tmp_nfiles) {
        assert_true(tmp_nfiles < sizeof(tmp_files) / sizeof(tmp_files[0]));
        strcpy(tmp_files[tmp_nfiles++], path);
    }
    int fd = open(tmp_files[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    const char *p = text;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        assert_true(w > 0);
        done += (size_t)w;
    }
    close(fd);
    return tmp_files[i];
}

/* Writes a NUL-terminated text, as above. */
static const char *tmp_write(const char *name, const char *text)
{
    return tmp_write_n(name, text, strlen(text));
}

/* Parses "counter.admin_secret_file=PATH" into c (defaults first). */
static bool parse_secret(cnt_config *c, const char *path, char *err,
                         size_t errlen)
{
    char input[640];
    snprintf(input, sizeof(input), "counter.admin_secret_file=%s", path);
    cnt_config_defaults(c);
    return cnt_config_parse_string(c, input, err, errlen);
}

/* A secret file's content and the secret it must give. */
typedef struct secret_case {
    const char *content;
    size_t clen;
    const char *secret;
    size_t slen;
} secret_case;

#define SC(c, s) {c, sizeof(c) - 1, s, sizeof(s) - 1}
/* 16 bytes in front of each case: the shortest secret allowed. */
#define P16 "0123456789abcdef"
static const secret_case secret_cases[] = {
    SC(P16 "abc", P16 "abc"),           /* no line end */
    SC(P16 "abc\n", P16 "abc"),
    SC(P16 "abc\r\n", P16 "abc"),
    SC(P16 "abc\n\n", P16 "abc\n"),     /* one line end only */
    SC(P16 "abc\r\n\r\n", P16 "abc\r\n"),
    SC(P16 "abc\r", P16 "abc\r"),       /* a lone CR is content */
    SC(P16 "abc\n\r", P16 "abc\n\r"),
    SC(" a b \t" P16, " a b \t" P16),   /* no white space trim */
    SC("a\0b" P16 "\n", "a\0b" P16),   /* any bytes */
    SC(P16 "\n\n", P16 "\n"),
    SC(P16, P16),                       /* exactly 16 bytes */
    SC("\n" "123456789abcdef\n", "\n" "123456789abcdef"),
};
#undef SC
#undef P16

static void test_secret_file(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(secret_cases) / sizeof(secret_cases[0]);
         i++) {
        const secret_case *t = &secret_cases[i];
        const char *path = tmp_write_n("secret", t->content, t->clen);
        cnt_config c;
        char err[512] = "";
        if (!parse_secret(&c, path, err, sizeof(err)))
            fail_msg("secret case %zu rejected: %s", i, err);
        assert_int_equal(c.admin_secret_len, t->slen);
        assert_memory_equal(c.admin_secret, t->secret, t->slen);
        cnt_config_free(&c);
        assert_null(c.admin_secret);
        assert_int_equal(c.admin_secret_len, 0);
    }
    cnt_config c;
    cnt_config_defaults(&c);
    assert_null(c.admin_secret);
    assert_int_equal(c.admin_secret_len, 0);
}

static void test_secret_length(void **state)
{
    (void)state;
    char *text = malloc(4100);
    assert_non_null(text);
    memset(text, 's', 4100);
    char err[512] = "", expected[512];
    cnt_config c;
    /* 4096 bytes, alone or with a line end, is the longest secret... */
    static const char *const ends[] = {"", "\n", "\r\n"};
    for (size_t i = 0; i < 3; i++) {
        memcpy(text + 4096, ends[i], strlen(ends[i]));
        const char *path = tmp_write_n("secret", text,
                                       4096 + strlen(ends[i]));
        if (!parse_secret(&c, path, err, sizeof(err)))
            fail_msg("4096-byte secret rejected: %s", err);
        assert_int_equal(c.admin_secret_len, 4096);
        cnt_config_free(&c);
    }
    /* ...one byte more is refused, line end or not, and so is a much
     * longer file; the message names the key and the path, not the
     * content. */
    static const size_t lens[] = {4097, 4098, 4099, 4100};
    for (size_t i = 0; i < 4; i++) {
        memset(text, 's', 4100);
        if (i == 1)
            text[4097] = '\n';
        if (i == 2)
            memcpy(text + 4097, "\r\n", 2);
        const char *path = tmp_write_n("secret", text, lens[i]);
        cnt_config before;
        cnt_config_defaults(&before);
        assert_false(parse_secret(&c, path, err, sizeof(err)));
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.admin_secret_file: file \"%s\" holds more than "
                 "4096 bytes (expected a secret of 16..4096 bytes, then at "
                 "most one line end)", path);
        assert_string_equal(err, expected);
        assert_memory_equal(&c, &before, sizeof(c));
        assert_null(strstr(err, "ssss"));
    }
    free(text);
}

/* A secret shorter than 16 bytes (the line end that goes not counted)
 * is refused with a message that gives its length and the path, never
 * the content; the configuration stays as it was. */
static void test_secret_too_short(void **state)
{
    (void)state;
    static const char *const shorts[] = {
        "x", "Q7Q7Q7Q7Q7Q7Q7Q", "Q7Q7Q7Q7Q7Q7Q7Q\n", "Q7Q7Q7Q7Q7Q7Q7Q\r\n",
        "Q7Q7Q7Q7Q7Q7Q7\n\n",
    };
    static const size_t lens[] = {1, 15, 15, 15, 15};
    char err[512] = "", expected[512];
    cnt_config c, before;
    for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++) {
        const char *path = tmp_write("secret", shorts[i]);
        assert_false(parse_secret(&c, path, err, sizeof(err)));
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.admin_secret_file: file \"%s\" holds a secret of "
                 "%zu bytes, shorter than the 16 required (expected a "
                 "secret of 16..4096 bytes, then at most one line end)",
                 path, lens[i]);
        assert_string_equal(err, expected);
        assert_null(c.admin_secret);
        assert_null(strstr(err, "Q7Q7"));
    }
    /* A configuration that had a secret keeps it when a new parse names
     * a short one. */
    const char *good = tmp_write("good", "a good long secret\n");
    assert_true(parse_secret(&c, good, err, sizeof(err)));
    before = c;
    char input[256];
    snprintf(input, sizeof(input), "counter.admin_secret_file=%s/short",
             tmp_dir);
    tmp_write("short", "short\n");
    assert_false(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_memory_equal(&c, &before, sizeof(c));
    assert_memory_equal(c.admin_secret, "a good long secret", 18);
    cnt_config_free(&c);
}

static void test_secret_errors(void **state)
{
    (void)state;
    char err[512] = "", expected[512];
    cnt_config c, before;
    /* Empty, or nothing but the line end that is trimmed. */
    static const char *const empty[] = {"", "\n", "\r\n"};
    for (size_t i = 0; i < 3; i++) {
        const char *path = tmp_write("secret", empty[i]);
        assert_false(parse_secret(&c, path, err, sizeof(err)));
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.admin_secret_file: file \"%s\" is empty (expected "
                 "a secret of 16..4096 bytes, then at most one line end)",
                 path);
        assert_string_equal(err, expected);
        assert_null(c.admin_secret);
    }
    /* Missing. */
    snprintf(expected, sizeof(expected), "%s/none", tmp_dir);
    assert_false(parse_secret(&c, expected, err, sizeof(err)));
    char missing[512];
    snprintf(missing, sizeof(missing), "counter: counter.admin_secret_file: "
             "cannot read file \"%s/none\": %s", tmp_dir, strerror(ENOENT));
    assert_string_equal(err, missing);
    /* No path, a directory, a device. */
    expect_string_error("counter.admin_secret_file=", 512,
                        "counter: counter.admin_secret_file: invalid value "
                        "\"\" (expected a file path)");
    snprintf(expected, sizeof(expected), "counter: counter.admin_secret_file:"
             " \"%s\" is a directory, not a regular file", tmp_dir);
    assert_false(parse_secret(&c, tmp_dir, err, sizeof(err)));
    assert_string_equal(err, expected);
    expect_string_error("counter.admin_secret_file=/dev/zero", 512,
                        "counter: counter.admin_secret_file: \"/dev/zero\" "
                        "is a character device, not a regular file");
    /* A read that fails (EIO). */
    int fd = open("/proc/self/mem", O_RDONLY);
    if (fd >= 0) {
        close(fd);
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.admin_secret_file: cannot read file "
                 "\"/proc/self/mem\": %s", strerror(EIO));
        expect_string_error("counter.admin_secret_file=/proc/self/mem", 512,
                            expected);
    }
    /* Unreadable: root reads any file, so only a user can see this. */
    const char *path = tmp_write("locked", "secret\n");
    chmod(path, 0);
    if (geteuid() != 0) {
        assert_false(parse_secret(&c, path, err, sizeof(err)));
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.admin_secret_file: cannot read file \"%s\": %s",
                 path, strerror(EACCES));
        assert_string_equal(err, expected);
    }
    /* In a settings file the message starts with its place. */
    snprintf(expected, sizeof(expected), "counter.enable = 1\n"
             "counter.admin_secret_file = %s/none\n", tmp_dir);
    const char *conf = tmp_write("conf", expected);
    snprintf(missing, sizeof(missing), "counter: %s:2: "
             "counter.admin_secret_file: cannot read file \"%s/none\": %s",
             conf, tmp_dir, strerror(ENOENT));
    expect_file_error(conf, missing);
    /* A failed parse keeps the secret a former one read; a later key
     * replaces it. */
    const char *one = tmp_write("one", "first of sixteen\n");
    assert_true(parse_secret(&c, one, err, sizeof(err)));
    uint8_t *kept = c.admin_secret;
    before = c;
    char input[256];
    snprintf(input, sizeof(input), "counter.admin_secret_file=%s/two;"
             "counter.port=x", tmp_dir);
    tmp_write("two", "second of sixteen\n");
    assert_false(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_memory_equal(&c, &before, sizeof(c));
    assert_ptr_equal(c.admin_secret, kept);
    assert_memory_equal(c.admin_secret, "first of sixteen", 16);
    snprintf(input, sizeof(input), "counter.admin_secret_file=%s/two;"
             "counter.admin_secret_file=%s", tmp_dir, one);
    assert_true(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_int_equal(c.admin_secret_len, 16);
    assert_memory_equal(c.admin_secret, "first of sixteen", 16);
    snprintf(input, sizeof(input), "counter.admin_secret_file=%s/two",
             tmp_dir);
    assert_true(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_int_equal(c.admin_secret_len, 17);
    assert_memory_equal(c.admin_secret, "second of sixteen", 17);
    cnt_config_free(&c);
}

/* Parses text as a throttle file that must succeed. */
static void throttle_ok(const char *text, cnt_throttle_file *f)
{
    const char *path = tmp_write("throttle", text);
    char err[512] = "";
    if (!cnt_throttle_file_parse(path, f, err, sizeof(err)))
        fail_msg("throttle file rejected: %s", err);
}

/* Finds tenant name in f. */
static const cnt_throttle_file_tenant *tenant_of(const cnt_throttle_file *f,
                                                 const char *name)
{
    for (size_t i = 0; i < f->ntenants; i++)
        if (f->tenants[i].len == strlen(name) &&
            memcmp(f->tenants[i].name, name, f->tenants[i].len) == 0)
            return &f->tenants[i];
    fail_msg("no tenant \"%s\"", name);
    return NULL;
}

static void test_throttle_file(void **state)
{
    (void)state;
    cnt_throttle_file f;
    throttle_ok("# node settings\n"
                "node.capacity = 1000\n"
                "\n"
                "default.hard_limit = 300\n"
                "  tenant.alpha = reserved:100, hard_limit:500\n"
                "tenant.beta=reserved:200\r\n"
                "\t# a comment\n"
                "tenant.G_a.m-m:a = HARD_LIMIT:unlimited,Reserved:0\n"
                "tenant.delta = \"reserved:300,hard_limit:300\"\n"
                "tenant.eps = reserved : 400 , hard_limit : UNLIMITED\n"
                "tenant.svc@eu = reserved:0", &f);
    assert_true(f.has_capacity);
    assert_int_equal(f.capacity, 1000);
    assert_true(f.has_default_hard);
    assert_int_equal(f.default_hard, 300);
    assert_int_equal(f.ntenants, 6);
    /* File order. */
    assert_int_equal(f.tenants[0].len, 5);
    assert_memory_equal(f.tenants[0].name, "alpha", 5);
    assert_memory_equal(f.tenants[4].name, "eps", 3);
    const cnt_throttle_file_tenant *t = tenant_of(&f, "alpha");
    assert_int_equal(t->reserved, 100);
    assert_int_equal(t->hard, 500);
    assert_true(t->has_hard);
    /* No hard_limit: the file's default one. */
    t = tenant_of(&f, "beta");
    assert_int_equal(t->reserved, 200);
    assert_int_equal(t->hard, 300);
    assert_false(t->has_hard);
    t = tenant_of(&f, "G_a.m-m:a");
    assert_int_equal(t->reserved, 0);
    assert_int_equal(t->hard, CNT_THROTTLE_FILE_UNLIMITED);
    t = tenant_of(&f, "delta");
    assert_int_equal(t->hard, 300);
    t = tenant_of(&f, "eps");
    assert_int_equal(t->reserved, 400);
    assert_int_equal(t->hard, CNT_THROTTLE_FILE_UNLIMITED);
    /* '@' as in the users file, whose tenants this file configures. */
    assert_non_null(tenant_of(&f, "svc@eu"));
    cnt_throttle_file_free(&f);
    assert_int_equal(f.ntenants, 0);
    assert_null(f.tenants);
    cnt_throttle_file_free(&f);
    /* Nothing at all: nothing set, unlimited by default. */
    throttle_ok("# empty\n", &f);
    assert_false(f.has_capacity);
    assert_false(f.has_default_hard);
    assert_int_equal(f.ntenants, 0);
    assert_null(f.tenants);
    /* Capacity 0 (throttling off) takes any reserves; a capacity the
     * reserves fill exactly is fine, before or after them. */
    throttle_ok("node.capacity = 0\ntenant.a = reserved:4294967295\n"
                "tenant.b = reserved:4294967295\n", &f);
    assert_int_equal(f.ntenants, 2);
    assert_int_equal(tenant_of(&f, "a")->hard, CNT_THROTTLE_FILE_UNLIMITED);
    cnt_throttle_file_free(&f);
    throttle_ok("tenant.a = reserved:6\ntenant.b = reserved:4\n"
                "node.capacity = 10\n", &f);
    assert_int_equal(f.capacity, 10);
    cnt_throttle_file_free(&f);
    /* The largest numbers; hard limit 0 with reserve 0; the default after
     * the tenants still applies to them. */
    throttle_ok("node.capacity = 4294967295\n"
                "tenant.a = reserved:0,hard_limit:0\n"
                "tenant.b = reserved:7\n"
                "tenant.c = reserved:1,hard_limit:4294967294\n"
                "default.hard_limit = 7\n", &f);
    assert_int_equal(f.capacity, 4294967295u);
    assert_int_equal(tenant_of(&f, "a")->hard, 0);
    assert_int_equal(tenant_of(&f, "b")->hard, 7);
    assert_int_equal(tenant_of(&f, "c")->hard, 4294967294u);
    cnt_throttle_file_free(&f);
    throttle_ok("default.hard_limit = unlimited\n", &f);
    assert_true(f.has_default_hard);
    assert_int_equal(f.default_hard, CNT_THROTTLE_FILE_UNLIMITED);
    cnt_throttle_file_free(&f);
}

/* What the tenant value errors say after "(expected ". */
#define TENANT_EXPECTED \
    "reserved:0..4294967295[,hard_limit:0..4294967294|unlimited]"
#define TENANT_NAME_EXPECTED \
    "expected 1..250 bytes of A-Z, a-z, 0-9, '_', '.', ':', '@' and '-'"

/* A throttle file with an error, and the message after "counter: PATH". */
static const bad_file_case bad_throttle_files[] = {
    {"node.capacity = x\n",
     ":1: node.capacity: invalid value \"x\" (expected 0..4294967295)"},
    {"node.capacity = 4294967296\n",
     ":1: node.capacity: invalid value \"4294967296\" "
     "(expected 0..4294967295)"},
    {"node.capacity = -1\n",
     ":1: node.capacity: invalid value \"-1\" (expected 0..4294967295)"},
    {"node.capacity = \n",
     ":1: node.capacity: invalid value \"\" (expected 0..4294967295)"},
    {"node.capacity = 5\n# again\nnode.capacity = 6\n",
     ":3: node.capacity: duplicate key (value \"6\"; first on line 1)"},
    {"node.capacity = 5\nnode.capacity = 5\n",
     ":2: node.capacity: duplicate key (value \"5\"; first on line 1)"},
    {"default.hard_limit = 4294967295\n",
     ":1: default.hard_limit: invalid value \"4294967295\" "
     "(expected 0..4294967294 or unlimited)"},
    {"default.hard_limit = infinite\n",
     ":1: default.hard_limit: invalid value \"infinite\" "
     "(expected 0..4294967294 or unlimited)"},
    {"\ndefault.hard_limit = 1\ndefault.hard_limit = unlimited\n",
     ":3: default.hard_limit: duplicate key (value \"unlimited\"; first on "
     "line 2)"},
    {"tenant.a = 5\n",
     ":1: tenant.a: invalid value \"5\" (expected " TENANT_EXPECTED ")"},
    {"tenant.a = \n",
     ":1: tenant.a: invalid value \"\" (expected " TENANT_EXPECTED ")"},
    {"tenant.a = hard_limit:5\n",                       /* no reserve */
     ":1: tenant.a: invalid value \"hard_limit:5\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1,reserved:2\n",
     ":1: tenant.a: invalid value \"reserved:1,reserved:2\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1,hard_limit:unlimited,HARD_LIMIT:3\n",
     ":1: tenant.a: invalid value \"reserved:1,hard_limit:unlimited,"
     "HARD_LIMIT:3\" (expected " TENANT_EXPECTED ")"},
    {"tenant.a = reserved:4294967296\n",
     ":1: tenant.a: invalid value \"reserved:4294967296\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1,hard_limit:4294967295\n",
     ":1: tenant.a: invalid value \"reserved:1,hard_limit:4294967295\" "
     "(expected " TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1,size:2\n",
     ":1: tenant.a: invalid value \"reserved:1,size:2\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1,\n",
     ":1: tenant.a: invalid value \"reserved:1,\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:x\n",
     ":1: tenant.a: invalid value \"reserved:x\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:1 hard_limit:2\n",
     ":1: tenant.a: invalid value \"reserved:1 hard_limit:2\" (expected "
     TENANT_EXPECTED ")"},
    {"tenant.a = reserved:5,hard_limit:4\n",
     ":1: tenant.a: hard limit below the reserve (value \"reserved:5,"
     "hard_limit:4\"; hard_limit must be at least reserved)"},
    {"tenant.a b = reserved:1\n",
     ":1: tenant.a b: invalid tenant name (value \"reserved:1\"; "
     TENANT_NAME_EXPECTED ")"},
    {"tenant. = reserved:1\n",
     ":1: tenant.: invalid tenant name (value \"reserved:1\"; "
     TENANT_NAME_EXPECTED ")"},
    {"tenant.a/b = reserved:1\n",
     ":1: tenant.a/b: invalid tenant name (value \"reserved:1\"; "
     TENANT_NAME_EXPECTED ")"},
    {"tenant.\xc3\xa9 = reserved:1\n",
     ":1: tenant.\xc3\xa9: invalid tenant name (value \"reserved:1\"; "
     TENANT_NAME_EXPECTED ")"},
    {"tenant.a = reserved:1\ntenant.b = reserved:1\n"
     "tenant.a = reserved:2\n",
     ":3: tenant.a: duplicate key (value \"reserved:2\"; first on line 1)"},
    {"tenant = reserved:1\n",
     ":1: tenant: unknown key (value \"reserved:1\"; expected node.capacity, "
     "default.hard_limit or tenant.NAME)"},
    {"counter.port = 1\n",
     ":1: counter.port: unknown key (value \"1\"; expected node.capacity, "
     "default.hard_limit or tenant.NAME)"},
    {"node.capacity 5\n",
     ":1: malformed setting \"node.capacity 5\" (expected key=value)"},
    {"tenant.a = \"reserved:1\n",
     ":1: tenant.a: unterminated quote in value \"reserved:1"},
    /* Found at the end: the default hard limit under a reserve... */
    {"default.hard_limit = 3\n\ntenant.a = reserved:5\n",
     ":3: tenant.a: hard limit below the reserve (reserved 5 on line 3, "
     "default.hard_limit 3 on line 1; give the tenant a hard_limit)"},
    {"tenant.a = reserved:5\ntenant.b = reserved:2\n"
     "default.hard_limit = 4\n",
     ":3: tenant.a: hard limit below the reserve (reserved 5 on line 1, "
     "default.hard_limit 4 on line 3; give the tenant a hard_limit)"},
    /* ...and reserves over the capacity, at the later line. */
    {"node.capacity = 10\ntenant.a = reserved:6\ntenant.b = reserved:5\n"
     "tenant.c = reserved:0\n",
     ":3: tenant.b: over capacity (reserved 5 brings the reserves to 11, "
     "node.capacity is 10 on line 1)"},
    {"tenant.a = reserved:6\ntenant.b = reserved:5\ntenant.c = reserved:4\n"
     "node.capacity = 10\n",
     ":4: node.capacity: over capacity (value \"10\"; the reserves of the "
     "tenants sum to 15)"},
    {"tenant.a = reserved:4294967295\nnode.capacity = 1\n"
     "tenant.b = reserved:4294967295\n",
     ":2: node.capacity: over capacity (value \"1\"; the reserves of the "
     "tenants sum to 8589934590)"},
};

static void test_throttle_bad_files(void **state)
{
    (void)state;
    for (size_t i = 0;
         i < sizeof(bad_throttle_files) / sizeof(bad_throttle_files[0]);
         i++) {
        const char *path = tmp_write("throttle", bad_throttle_files[i].text);
        char expected[512], err[512] = "";
        snprintf(expected, sizeof(expected), "counter: %s%s", path,
                 bad_throttle_files[i].message);
        cnt_throttle_file f, before;
        memset(&f, 0x5a, sizeof(f));
        before = f;
        if (cnt_throttle_file_parse(path, &f, err, sizeof(err)))
            fail_msg("throttle case %zu accepted", i);
        assert_string_equal(err, expected);
        /* A failure writes nothing to the result. */
        assert_memory_equal(&f, &before, sizeof(f));
        /* Through the configuration: the same message, nothing set. */
        char input[256];
        snprintf(input, sizeof(input), "counter.throttle.config=%s", path);
        expect_string_error(input, 512, expected);
    }
}

/* The same settings as one JSON document: chosen by its first byte that
 * is not white space; tenants in the document's order, a reserve left out
 * 0, a hard limit left out the default one. */
static void test_throttle_json_file(void **state)
{
    (void)state;
    cnt_throttle_file f;
    throttle_ok("\n  {\"node\": {\"capacity\": 1000},\n"
                "   \"default\": {\"hard_limit\": 500},\n"
                "   \"tenants\": {\"beta\": {\"reserved\": 100, "
                "\"hard_limit\": \"unlimited\"},\n"
                "               \"alpha\": {\"reserved\": 200},\n"
                "               \"g.x:y-z_1\": {\"hard_limit\": 7}}}\n", &f);
    assert_true(f.has_capacity);
    assert_int_equal(f.capacity, 1000);
    assert_true(f.has_default_hard);
    assert_int_equal(f.default_hard, 500);
    assert_int_equal(f.ntenants, 3);
    assert_int_equal(f.tenants[0].len, 4);
    assert_memory_equal(f.tenants[0].name, "beta", 4);
    assert_int_equal(f.tenants[0].reserved, 100);
    assert_int_equal(f.tenants[0].hard, CNT_THROTTLE_FILE_UNLIMITED);
    assert_true(f.tenants[0].has_hard);
    const cnt_throttle_file_tenant *t = tenant_of(&f, "alpha");
    assert_int_equal(t->reserved, 200);
    assert_int_equal(t->hard, 500);
    assert_false(t->has_hard);
    t = tenant_of(&f, "g.x:y-z_1");
    assert_int_equal(t->reserved, 0);
    assert_int_equal(t->hard, 7);
    cnt_throttle_file_free(&f);

    throttle_ok("{}", &f);
    assert_false(f.has_capacity || f.has_default_hard);
    assert_int_equal(f.ntenants, 0);
    assert_null(f.tenants);
    cnt_throttle_file_free(&f);

    /* A comment first: the line format, as before. */
    throttle_ok("# {\"node\": 1}\nnode.capacity = 5\n", &f);
    assert_int_equal(f.capacity, 5);
    cnt_throttle_file_free(&f);

    static const struct {
        const char *text, *message;
    } bad[] = {
        { "{\"node\": {\"capacity\": 10}, \"tenants\": {\"a\": "
          "{\"reserved\": 6}, \"b\": {\"reserved\": 5}}}",
          "node.capacity: over capacity (capacity 10; the reserves of the "
          "tenants sum to 11)" },
        { "{\"default\": {\"hard_limit\": 4}, \"tenants\": {\"a\": "
          "{\"reserved\": 5}}}",
          "tenants.a: hard limit below the reserve (reserved 5, "
          "default.hard_limit 4; give the tenant a hard_limit)" },
        { "{\"tenants\": {\"bad/name\": {\"reserved\": 1}}}",
          "tenants.bad/name: invalid tenant name (" TENANT_NAME_EXPECTED
          ")" },
        { "{\"node\": {\"capacity\": \"1000\"}}",
          "node: capacity: expected a whole number 0..4294967295, got a "
          "string" },
        { "{\"node\": {\"capacity\": 1}, \"tenant\": {}}",
          "unknown member \"tenant\" (expected node, default or tenants)" },
        { "{\"tenants\": {\"a\": {\"reserved\": -1}}}",
          "tenants.a: reserved: -1 is out of range (0..4294967295)" },
        { "{\"node\": {\"capacity\": 1}", "malformed JSON: " },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *path = tmp_write("throttle", bad[i].text);
        char expected[512], err[512] = "";
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.throttle.config: file \"%s\": %s", path,
                 bad[i].message);
        if (cnt_throttle_file_parse(path, &f, err, sizeof(err)))
            fail_msg("JSON throttle case %zu accepted", i);
        if (strncmp(err, expected, strlen(expected)) != 0)
            fail_msg("case %zu: \"%s\", expected \"%s\"", i, err,
                     expected);
        char input[256];
        snprintf(input, sizeof(input), "counter.throttle.config=%s", path);
        cnt_config c;
        cnt_config_defaults(&c);
        assert_false(cnt_config_parse_string(&c, input, err, sizeof(err)));
        if (strncmp(err, expected, strlen(expected)) != 0)
            fail_msg("case %zu through the key: \"%s\"", i, err);
    }
}

static void test_throttle_file_errors(void **state)
{
    (void)state;
    char expected[512], err[512] = "", path[128];
    cnt_throttle_file f;
    /* Files that cannot be read, named by the key. */
    snprintf(path, sizeof(path), "%s/none", tmp_dir);
    assert_false(cnt_throttle_file_parse(path, &f, err, sizeof(err)));
    snprintf(expected, sizeof(expected), "counter: counter.throttle.config: "
             "cannot read file \"%s\": %s", path, strerror(ENOENT));
    assert_string_equal(err, expected);
    assert_false(cnt_throttle_file_parse(tmp_dir, &f, err, sizeof(err)));
    snprintf(expected, sizeof(expected), "counter: counter.throttle.config: "
             "\"%s\" is a directory, not a regular file", tmp_dir);
    assert_string_equal(err, expected);
    expect_string_error("counter.throttle.config=/dev/null", 512,
                        "counter: counter.throttle.config: \"/dev/null\" is "
                        "a character device, not a regular file");
    expect_string_error("counter.throttle.config=", 512,
                        "counter: counter.throttle.config: invalid value "
                        "\"\" (expected a file path)");
    /* In a settings file: the key's place first. */
    char text[256];
    snprintf(text, sizeof(text), "\ncounter.throttle.config = %s\n", path);
    const char *conf = tmp_write("conf", text);
    snprintf(expected, sizeof(expected), "counter: %s:2: "
             "counter.throttle.config: cannot read file \"%s\": %s", conf,
             path, strerror(ENOENT));
    expect_file_error(conf, expected);
    /* An error inside the throttle file names that file and line. */
    const char *bad = tmp_write("throttle", "node.capacity = 1\n"
                                "node.capacity = 2\n");
    snprintf(text, sizeof(text), "counter.throttle.config = %s\n", bad);
    conf = tmp_write("conf", text);
    snprintf(expected, sizeof(expected), "counter: %s:2: node.capacity: "
             "duplicate key (value \"2\"; first on line 1)", bad);
    expect_file_error(conf, expected);
    /* A line over 4096 bytes. */
    char *over = repeat("tenant.a = reserved:", '1', 4080, "\n");
    bad = tmp_write("throttle", over);
    snprintf(expected, sizeof(expected), "counter: %s:1: line longer than "
             "4096 bytes: \"%.64s...\"", bad, over);
    assert_false(cnt_throttle_file_parse(bad, &f, err, sizeof(err)));
    assert_string_equal(err, expected);
    free(over);
    /* A read that fails. */
    int fd = open("/proc/self/mem", O_RDONLY);
    if (fd >= 0) {
        close(fd);
        snprintf(expected, sizeof(expected), "counter: "
                 "counter.throttle.config: cannot read file "
                 "\"/proc/self/mem\": %s", strerror(EIO));
        assert_false(cnt_throttle_file_parse("/proc/self/mem", &f, err,
                                             sizeof(err)));
        assert_string_equal(err, expected);
    }
}

static void test_throttle_file_limits(void **state)
{
    (void)state;
    char expected[512], err[512] = "";
    cnt_throttle_file f;
    /* A 250-byte name is the longest... */
    char *in = repeat("tenant.", 'n', 250, " = reserved:1\n");
    throttle_ok(in, &f);
    assert_int_equal(f.ntenants, 1);
    assert_int_equal(f.tenants[0].len, 250);
    cnt_throttle_file_free(&f);
    free(in);
    /* ...one more is refused (the key cut at 64 bytes as always). */
    in = repeat("tenant.", 'n', 251, " = reserved:1\n");
    const char *path = tmp_write("throttle", in);
    snprintf(expected, sizeof(expected), "counter: %s:1: %.64s...: invalid "
             "tenant name (value \"reserved:1\"; " TENANT_NAME_EXPECTED ")",
             path, in);
    assert_false(cnt_throttle_file_parse(path, &f, err, sizeof(err)));
    assert_string_equal(err, expected);
    free(in);
    /* 100000 tenants are the most a file may hold... */
    size_t cap = 100001u * 40u, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (unsigned i = 0; i < 100000; i++)
        n += (size_t)snprintf(text + n, cap - n,
                              "tenant.t%u = reserved:%u\n", i, i % 3);
    text[n] = '\0';
    throttle_ok(text, &f);
    assert_int_equal(f.ntenants, 100000);
    assert_memory_equal(f.tenants[99999].name, "t99999", 6);
    assert_int_equal(f.tenants[99998].reserved, 99998 % 3);
    cnt_throttle_file_free(&f);
    /* ...and the last one of them again is a duplicate, found at once. */
    snprintf(text + n, cap - n, "tenant.t99999 = reserved:0\n");
    path = tmp_write("throttle", text);
    snprintf(expected, sizeof(expected), "counter: %s:100001: tenant.t99999:"
             " duplicate key (value \"reserved:0\"; first on line 100000)",
             path);
    assert_false(cnt_throttle_file_parse(path, &f, err, sizeof(err)));
    assert_string_equal(err, expected);
    /* One more tenant is refused. */
    snprintf(text + n, cap - n, "tenant.t100000 = reserved:0\n");
    path = tmp_write("throttle", text);
    snprintf(expected, sizeof(expected), "counter: %s:100001: "
             "tenant.t100000: too many tenants (at most 100000 in a file)",
             path);
    assert_false(cnt_throttle_file_parse(path, &f, err, sizeof(err)));
    assert_string_equal(err, expected);
    free(text);
    /* 16 MiB of comments is a (dull) throttle file; a byte more is not. */
    const size_t max = 16u << 20;
    text = comment_lines(max + 1, 64);
    path = tmp_write_n("throttle", text, max);
    if (!cnt_throttle_file_parse(path, &f, err, sizeof(err)))
        fail_msg("16 MiB throttle file rejected: %s", err);
    assert_int_equal(f.ntenants, 0);
    path = tmp_write_n("throttle", text, max + 1);
    snprintf(expected, sizeof(expected), "counter: counter.throttle.config: "
             "file \"%s\" is larger than 16777216 bytes", path);
    assert_false(cnt_throttle_file_parse(path, &f, err, sizeof(err)));
    assert_string_equal(err, expected);
    free(text);
}

static void test_throttle_in_config(void **state)
{
    (void)state;
    char input[512], err[512] = "";
    const char *path = tmp_write("throttle", "node.capacity = 50\n"
                                 "tenant.a = reserved:10\n");
    cnt_config c, before;
    cnt_config_defaults(&c);
    assert_null(c.throttle_path);
    assert_false(c.throttle.has_capacity);
    snprintf(input, sizeof(input), "counter.enable=1;"
             "counter.throttle.config=%s", path);
    if (!cnt_config_parse_string(&c, input, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_string_equal(c.throttle_path, path);
    assert_true(c.throttle.has_capacity);
    assert_int_equal(c.throttle.capacity, 50);
    assert_int_equal(c.throttle.ntenants, 1);
    assert_int_equal(c.throttle.tenants[0].reserved, 10);
    /* A failed parse leaves path and settings as they were. */
    const char *other = tmp_write("other", "node.capacity = 7\n");
    snprintf(input, sizeof(input), "counter.throttle.config=%s;"
             "counter.port=x", other);
    before = c;
    assert_false(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_memory_equal(&c, &before, sizeof(c));
    assert_string_equal(c.throttle_path, path);
    assert_int_equal(c.throttle.tenants[0].reserved, 10);
    /* A later key replaces both. */
    snprintf(input, sizeof(input), "counter.throttle.config=%s", other);
    assert_true(cnt_config_parse_string(&c, input, err, sizeof(err)));
    assert_string_equal(c.throttle_path, other);
    assert_int_equal(c.throttle.capacity, 7);
    assert_int_equal(c.throttle.ntenants, 0);
    cnt_config_free(&c);
    assert_null(c.throttle_path);
    assert_int_equal(c.throttle.ntenants, 0);
    assert_null(c.throttle.tenants);
    /* A relative path is kept absolute, for a reload after a chdir. */
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(tmp_dir), 0);
    cnt_config_defaults(&c);
    bool ok = cnt_config_parse_string(&c, "counter.throttle.config=other",
                                      err, sizeof(err));
    assert_int_equal(chdir(cwd), 0);
    if (!ok)
        fail_msg("relative path rejected: %s", err);
    assert_string_equal(c.throttle_path, other);
    assert_int_equal(c.throttle.capacity, 7);
    cnt_config_free(&c);
    /* From a settings file, with the secret. */
    const char *secret = tmp_write("secret", "hush, sixteen bytes\n");
    char text[512];
    snprintf(text, sizeof(text), "counter.throttle.config = %s\n"
             "counter.admin_secret_file = \"%s\"\n", path, secret);
    const char *conf = tmp_write("conf", text);
    cnt_config_defaults(&c);
    if (!cnt_config_parse_file(&c, conf, err, sizeof(err)))
        fail_msg("rejected: %s", err);
    assert_int_equal(c.throttle.capacity, 50);
    assert_int_equal(c.admin_secret_len, 19);
    assert_memory_equal(c.admin_secret, "hush, sixteen bytes", 19);
    cnt_config_free(&c);
}

static void test_secret_and_throttle_out_of_memory(void **state)
{
    (void)state;
    const char *t1 = tmp_write("t1", "node.capacity = 9\n"
                               "tenant.a = reserved:1\n"
                               "tenant.b = reserved:2\n");
    const char *t2 = tmp_write("t2", "tenant.c = reserved:3\n"
                               "tenant.d = reserved:4\n");
    const char *s1 = tmp_write("s1", "one, sixteen bytes\n");
    const char *s2 = tmp_write("s2", "two2, sixteen bytes\n");
    char input[512], err[512] = "";
    cnt_config c, before;
    cnt_config_defaults(&c);
    snprintf(input, sizeof(input), "counter.throttle.config=%s;"
             "counter.admin_secret_file=%s;counter.group.g=max:1", t1, s1);
    assert_true(cnt_config_parse_string(&c, input, err, sizeof(err)));
    long live = cnt_fake_alloc_live();
    /* Every allocation of a parse that copies all of them and replaces
     * them fails in turn: each time the parse says so, leaks nothing and
     * leaves the configuration as it was. */
    snprintf(input, sizeof(input), "counter.throttle.config=%s;"
             "counter.admin_secret_file=%s", t2, s2);
    for (unsigned long n = 1;; n++) {
        before = c;
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_config_parse_string(&c, input, err, sizeof(err));
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_true(ok);
            break;
        }
        assert_false(ok);
        if (strstr(err, "out of memory") == NULL)
            fail_msg("allocation %lu: %s", n, err);
        assert_memory_equal(&c, &before, sizeof(c));
        assert_int_equal(cnt_fake_alloc_live(), live);
        assert_int_equal(c.throttle.ntenants, 2);
        assert_memory_equal(c.admin_secret, "one, sixteen bytes", 18);
    }
    assert_int_equal(c.throttle.ntenants, 2);
    assert_memory_equal(c.throttle.tenants[0].name, "c", 1);
    assert_false(c.throttle.has_capacity);
    assert_int_equal(c.admin_secret_len, 19);
    assert_memory_equal(c.admin_secret, "two2, sixteen bytes", 19);
    /* Same numbers of blocks as before: the old ones went. */
    assert_int_equal(cnt_fake_alloc_live(), live);
    cnt_config_free(&c);
    /* The standalone parse, too: nothing leaks, nothing is written. */
    live = cnt_fake_alloc_live();
    for (unsigned long n = 1;; n++) {
        cnt_throttle_file f, fb;
        memset(&f, 0x5a, sizeof(f));
        fb = f;
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_throttle_file_parse(t1, &f, err, sizeof(err));
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (!injected) {
            assert_true(ok);
            cnt_throttle_file_free(&f);
            break;
        }
        assert_false(ok);
        assert_non_null(strstr(err, "out of memory"));
        assert_memory_equal(&f, &fb, sizeof(f));
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* Runs the configuration tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_defaults_come_from_the_layers),
        cmocka_unit_test(test_good_strings),
        cmocka_unit_test(test_bad_strings),
        cmocka_unit_test(test_bind_list_contents),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_groups_several),
        cmocka_unit_test(test_group_name_length),
        cmocka_unit_test(test_groups_parsed_again),
        cmocka_unit_test(test_groups_in_file),
        cmocka_unit_test(test_groups_out_of_memory),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_file_from_string),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_small_error_buffer),
        cmocka_unit_test(test_not_regular_files),
        cmocka_unit_test(test_line_limit),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_long_keys_and_values),
        cmocka_unit_test(test_long_value_in_file),
        cmocka_unit_test_setup_teardown(test_secret_file, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_secret_length, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_secret_too_short, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_secret_errors, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_file, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_bad_files, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_json_file, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_file_errors, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_file_limits, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_in_config, tmp_setup,
                                        tmp_teardown),
        cmocka_unit_test_setup_teardown(
            test_secret_and_throttle_out_of_memory, tmp_setup, tmp_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
