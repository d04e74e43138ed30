/* test_text.c: table-driven cmocka tests of mchost's memcache text
 * commands (text.c) with the stub engine, plus get_stats wrapping, engine
 * errors and ON_LOG_LEVEL as an extension would see them. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "programs/mchost/api.h"
#include "programs/mchost/cookie.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/stub_engine.h"
#include "programs/mchost/text.h"

/* Runs one line; returns the answer as a malloc'ed string. */
static char *run(const char *line, enum mch_text_status *status,
                 uint64_t *swallow)
{
    struct evbuffer *out = evbuffer_new();
    struct mch_cookie cookie = { .fd = -1 };
    char *copy = strdup(line), *text;
    size_t len;

    assert_non_null(out);
    assert_non_null(copy);
    *status = mch_text_execute(copy, out, &cookie, swallow);
    len = evbuffer_get_length(out);
    text = calloc(1, len + 1);
    assert_non_null(text);
    evbuffer_remove(out, text, len);
    evbuffer_free(out);
    free(copy);
    assert_null(cookie.stats_out); /* not left pointing at a freed buffer */
    return text;
}

/* One row: a command line, the exact answer, what to skip after it. */
struct row {
    const char *line;
    const char *answer;
    uint64_t swallow;
    enum mch_text_status status;
};

static const struct row rows[] = {
    { "version", "VERSION " PACKAGE_VERSION "\r\n", 0, MCH_TEXT_CONTINUE },
    { "", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "   ", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "get a", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "incr a 1", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "bogus", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "stats items", "END\r\n", 0, MCH_TEXT_CONTINUE },
    { "stats slabs", "END\r\n", 0, MCH_TEXT_CONTINUE },
    { "stats sizes", "END\r\n", 0, MCH_TEXT_CONTINUE },
    { "stats reset", "RESET\r\n", 0, MCH_TEXT_CONTINUE },
    { "stats nosuch", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "lru_crawler metadump all", "END\r\n", 0, MCH_TEXT_CONTINUE },
    /* set KEY FLAGS EXPTIME BYTES: the block and its CRLF are skipped */
    { "set a 0 0 5", "ERROR\r\n", 7, MCH_TEXT_CONTINUE },
    { "add a 0 0 0 noreply", "ERROR\r\n", 2, MCH_TEXT_CONTINUE },
    { "cas a 0 0 5 99", "ERROR\r\n", 7, MCH_TEXT_CONTINUE },
    { "set a 0 0 x", "CLIENT_ERROR bad command line format\r\n", 0,
      MCH_TEXT_CONTINUE },
    { "set a 0 0 -5", "CLIENT_ERROR bad command line format\r\n", 0,
      MCH_TEXT_CONTINUE },
    { "set a 0 0 99999999999", "CLIENT_ERROR bad command line format\r\n",
      0, MCH_TEXT_CONTINUE },
    { "set a 0 0", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "verbosity 0", "OK\r\n", 0, MCH_TEXT_CONTINUE },
    { "verbosity 0 noreply", "", 0, MCH_TEXT_CONTINUE },
    { "verbosity x", "CLIENT_ERROR bad command line format\r\n", 0,
      MCH_TEXT_CONTINUE },
    { "verbosity", "ERROR\r\n", 0, MCH_TEXT_CONTINUE },
    { "quit", "", 0, MCH_TEXT_CLOSE },
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        enum mch_text_status st;
        uint64_t swallow = 12345;
        char *got = run(rows[i].line, &st, &swallow);

        print_message("line: '%s'\n", rows[i].line);
        assert_string_equal(got, rows[i].answer);
        assert_int_equal(swallow, rows[i].swallow);
        assert_int_equal(st, rows[i].status);
        free(got);
    }
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

static void test_stats_general(void **state)
{
    enum mch_text_status st;
    uint64_t sw;
    char *got = run("stats", &st, &sw);

    (void)state;
    assert_true(strncmp(got, "STAT pid ", 9) == 0);
    assert_non_null(strstr(got, "\r\nSTAT curr_connections 0\r\n"));
    assert_non_null(strstr(got, "\r\nSTAT cmd_get 0\r\n"));
    assert_true(ends_with(got, "\r\nSTAT threads 4\r\nEND\r\n"));
    free(got);
}

static void test_stats_settings(void **state)
{
    enum mch_text_status st;
    uint64_t sw;
    char *got = run("stats settings", &st, &sw);

    (void)state;
    assert_true(strncmp(got, "STAT maxbytes 67108864\r\n", 24) == 0);
    assert_non_null(strstr(got, "\r\nSTAT maxconns 1024\r\n"));
    assert_non_null(strstr(got, "\r\nSTAT tcpport 11211\r\n"));
    assert_true(ends_with(got, "\r\nSTAT logger stderr\r\nEND\r\n"));
    free(got);
}

/* An extension's get_stats wrapper, as doc/host-interface.md describes. */
static ENGINE_ERROR_CODE (*orig)(ENGINE_HANDLE *, const void *, const char *,
                                 int, ADD_STAT);
static ENGINE_ERROR_CODE wrapped(ENGINE_HANDLE *h, const void *cookie,
                                 const char *key, int nkey, ADD_STAT add)
{
    if (key == NULL) {
        ENGINE_ERROR_CODE r = orig(h, cookie, key, nkey, add);

        add("ext_items", 9, "42", 2, cookie);
        return r;
    }
    if (nkey == 3 && memcmp(key, "ext", 3) == 0) {
        add("items", 5, "42", 2, cookie);
        return ENGINE_SUCCESS;
    }
    if (nkey == 4 && memcmp(key, "oom!", 4) == 0) {
        add("partial", 7, "1", 1, cookie); /* must not reach the client */
        return ENGINE_ENOMEM;
    }
    if (nkey == 5 && memcmp(key, "nosup", 5) == 0)
        return ENGINE_ENOTSUP;
    return orig(h, cookie, key, nkey, add);
}

static void test_wrapped_get_stats(void **state)
{
    ENGINE_HANDLE_V1 *v1 = mch_engine_v1();
    enum mch_text_status st;
    uint64_t sw;
    char *got;

    (void)state;
    orig = v1->get_stats;
    v1->get_stats = wrapped;
    got = run("stats", &st, &sw);
    assert_true(ends_with(got, "STAT threads 4\r\nSTAT ext_items 42\r\nEND\r\n"));
    free(got);
    got = run("stats ext", &st, &sw);
    assert_string_equal(got, "STAT items 42\r\nEND\r\n");
    free(got);
    got = run("stats oom!", &st, &sw);
    assert_string_equal(got, "SERVER_ERROR out of memory writing stats\r\n");
    free(got);
    got = run("stats nosup", &st, &sw);
    assert_string_equal(got, "SERVER_ERROR not supported\r\n");
    free(got);
    got = run("stats other", &st, &sw);
    assert_string_equal(got, "ERROR\r\n");
    free(got);
    v1->get_stats = orig;
}

static int level_events;
static const void *level_cookie;

static void on_level(const void *cookie, ENGINE_EVENT_TYPE type,
                     const void *data, const void *cb_data)
{
    (void)data;
    assert_int_equal(type, ON_LOG_LEVEL);
    assert_ptr_equal(cb_data, &level_events);
    level_cookie = cookie;
    level_events++;
}

static void test_verbosity(void **state)
{
    SERVER_HANDLE_V1 *api = mch_api_get();
    enum mch_text_status st;
    uint64_t sw;
    char *got;

    (void)state;
    api->callback->register_callback(NULL, ON_LOG_LEVEL, on_level,
                                     &level_events);
    level_events = 0;
    got = run("verbosity 2", &st, &sw);
    assert_string_equal(got, "OK\r\n");
    assert_int_equal(level_events, 1);
    assert_non_null(level_cookie);
    assert_int_equal(api->log->get_level(), EXTENSION_LOG_DEBUG);
    free(got);
    got = run("verbosity 9 noreply", &st, &sw);
    assert_string_equal(got, "");
    assert_int_equal(mch_logger_verbosity(), 3); /* clamped */
    assert_int_equal(api->log->get_level(), EXTENSION_LOG_DETAIL);
    assert_int_equal(level_events, 2);
    free(got);
    api->log->set_level(EXTENSION_LOG_WARNING);
    assert_int_equal(mch_logger_verbosity(), 0);
}

/* Runs the text-command tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_stats_general),
        cmocka_unit_test(test_stats_settings),
        cmocka_unit_test(test_wrapped_get_stats),
        cmocka_unit_test(test_verbosity),
    };

    mch_api_get();
    mch_api_set_engine(mch_engine_get());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
