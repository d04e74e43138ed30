/* test_parse_config.c: table-driven cmocka tests of mchost's parse_config
 * (SERVER_CORE_API.parse_config): syntax, every datatype, escapes, unknown
 * keys, malformed tokens and configuration files. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "programs/mchost/parse_config.h"

/* The values one parse fills in. */
struct values {
    size_t size;
    float real;
    bool flag;
    char *text;
};

/* One row: input, expected result, and what must have been found. */
struct row {
    const char *input;
    int status;
    bool size_found, flag_found, text_found;
    size_t size;
    bool flag;
    const char *text;
};

static const struct row rows[] = {
    /* input                         status     sz  fl  tx  size    flag text */
    { "size=1;flag=true",            0,         1,  1,  0,  1,      1,   NULL },
    { "  size = 2k ; ",              0,         1,  0,  0,  2048,   0,   NULL },
    { "size=1m",                     0,         1,  0,  0,  1 << 20, 0,  NULL },
    { "size=1G",                     0,         1,  0,  0,  1 << 30, 0,  NULL },
    { "size=x",                      -1,        0,  0,  0,  0,      0,   NULL },
    { "size=",                       -1,        0,  0,  0,  0,      0,   NULL },
    { "size=-1",                     -1,        0,  0,  0,  0,      0,   NULL },
    { "size=1kk",                    -1,        0,  0,  0,  0,      0,   NULL },
    { "size=18446744073709551615k",  -1,        0,  0,  0,  0,      0,   NULL },
    { "text=hello\\;world",          0,         0,  0,  1,  0,      0,   "hello;world" },
    { "text=  spaced\\ ",            0,         0,  0,  1,  0,      0,   "spaced " },
    { "text=a=b",                    0,         0,  0,  1,  0,      0,   "a=b" },
    { "other=1;size=3",              1,         1,  0,  0,  3,      0,   NULL },
    { "size",                        -1,        0,  0,  0,  0,      0,   NULL },
    { "size;flag=on",                -1,        0,  0,  0,  0,      0,   NULL },
    { ";;",                          0,         0,  0,  0,  0,      0,   NULL },
    { "",                            0,         0,  0,  0,  0,      0,   NULL },
    { "flag=maybe",                  -1,        0,  0,  0,  0,      0,   NULL },
    { "flag=off",                    0,         0,  1,  0,  0,      0,   NULL },
    { "flag=YES",                    0,         0,  1,  0,  0,      1,   NULL },
};

static void parse_row(const struct row *r)
{
    struct values v = { 0 };
    struct config_item items[] = {
        { .key = "size", .datatype = DT_SIZE, .value.dt_size = &v.size },
        { .key = "real", .datatype = DT_FLOAT, .value.dt_float = &v.real },
        { .key = "flag", .datatype = DT_BOOL, .value.dt_bool = &v.flag },
        { .key = "text", .datatype = DT_STRING, .value.dt_string = &v.text },
        { .key = NULL },
    };
    FILE *err = fopen("/dev/null", "w");
    int status = mch_parse_config(r->input, items, err);

    fclose(err);
    print_message("input: %s\n", r->input);
    assert_int_equal(status, r->status);
    if (status >= 0) {
        assert_int_equal(items[0].found, r->size_found);
        assert_int_equal(items[2].found, r->flag_found);
        assert_int_equal(items[3].found, r->text_found);
        assert_int_equal(v.size, r->size);
        assert_int_equal(v.flag, r->flag);
        if (r->text != NULL)
            assert_string_equal(v.text, r->text);
    }
    free(v.text);
}

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        parse_row(&rows[i]);
}

static void test_null_string(void **state)
{
    struct config_item items[] = { { .key = NULL } };

    (void)state;
    assert_int_equal(mch_parse_config(NULL, items, NULL), 0);
}

static void test_float(void **state)
{
    float f = 0;
    struct config_item items[] = {
        { .key = "f", .datatype = DT_FLOAT, .value.dt_float = &f },
        { .key = NULL },
    };

    (void)state;
    assert_int_equal(mch_parse_config("f=1.5", items, NULL), 0);
    assert_true(f == 1.5f);
    assert_int_equal(mch_parse_config("f=1.5x", items, NULL), -1);
}

/* Messages name the key and the value. */
static void test_messages(void **state)
{
    char buf[256] = "";
    size_t size;
    struct config_item items[] = {
        { .key = "size", .datatype = DT_SIZE, .value.dt_size = &size },
        { .key = NULL },
    };
    FILE *err = fmemopen(buf, sizeof(buf) - 1, "w");

    (void)state;
    assert_int_equal(mch_parse_config("size=big;nope=2", items, err), -1);
    fclose(err);
    assert_string_equal(buf, "Invalid value: size=big\n");
}

/* DT_CONFIGFILE: "key = value" lines, comments, blank lines. */
static void test_config_file(void **state)
{
    char path[] = "/tmp/mchost-test-config-XXXXXX";
    char *text = NULL, *file = NULL, arg[64];
    size_t size = 0;
    struct config_item items[] = {
        { .key = "size", .datatype = DT_SIZE, .value.dt_size = &size },
        { .key = "text", .datatype = DT_STRING, .value.dt_string = &text },
        { .key = "file", .datatype = DT_CONFIGFILE,
          .value.dt_string = &file },
        { .key = NULL },
    };
    int fd = mkstemp(path);
    static const char body[] = "# a comment\n\n  size = 5\ntext = x y\n";

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, body, sizeof(body) - 1), sizeof(body) - 1);
    close(fd);
    snprintf(arg, sizeof(arg), "file=%s", path);
    assert_int_equal(mch_parse_config(arg, items, NULL), 0);
    assert_int_equal(size, 5);
    assert_string_equal(text, "x y");
    assert_string_equal(file, path);
    assert_true(items[2].found);
    unlink(path);
    free(text);
    free(file);
    file = NULL;
    assert_int_equal(mch_parse_config(arg, items, NULL), -1); /* gone */
    free(file);
}

/* Runs the mchost's parse_config tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_null_string),
        cmocka_unit_test(test_float),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_config_file),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
