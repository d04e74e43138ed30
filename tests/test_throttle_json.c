/* test_throttle_json.c: unit tests of the throttle settings documents
 * (protocol/throttle_json.c): the node and tenant documents as the
 * Node_set_json and Tenant_set_json opcodes take them, every class of
 * refusal with the member its message names, the JSON settings file with
 * its tenants handed out in order, and the documents written back. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/throttle_json.h"

static bool node(const char *text, cnt_tjson_node *out, char *err)
{
    return cnt_tjson_node_parse((const uint8_t *)text, strlen(text), out, err,
                                CNT_TJSON_ERR_SIZE);
}

static bool tenant(const char *text, cnt_tjson_tenant *out, char *err)
{
    return cnt_tjson_tenant_parse((const uint8_t *)text, strlen(text), out,
                                  err, CNT_TJSON_ERR_SIZE);
}

/* Asserts that err holds want. */
static void has(const char *err, const char *want)
{
    if (strstr(err, want) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void test_node_good(void **state)
{
    (void)state;
    cnt_tjson_node n = {0};
    char err[CNT_TJSON_ERR_SIZE];

    assert_true(node("{\"capacity\": 25000}", &n, err));
    assert_int_equal(n.capacity, 25000);
    assert_true(node(" {\"capacity\":0} \n", &n, err));
    assert_int_equal(n.capacity, 0);
    assert_true(node("{\"capacity\":4294967295}", &n, err));
    assert_int_equal(n.capacity, UINT32_MAX);
}

static void test_node_refused(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *want;
    } cases[] = {
        { "", "malformed JSON" },
        { "{\"capacity\": 25000,}", "malformed JSON" },
        { "{\"capacity\": 1} x", "malformed JSON" },
        { "{\"capacity\": 1, \"capacity\": 2}", "malformed JSON" },
        { "{\"capacity\": 99999999999999999999}", "malformed JSON" },
        { "[25000]", "the node document must be a JSON object, got an array" },
        { "25000", "must be a JSON object, got an integer" },
        { "{}", "capacity: missing" },
        { "{\"capacity\": 1, \"reserved\": 2}",
          "unknown field \"reserved\" (expected capacity)" },
        { "{\"capacity\": \"25000\"}", "capacity: expected a whole number "
          "0..4294967295, got a string" },
        { "{\"capacity\": 2.5}", "capacity: expected a whole number "
          "0..4294967295, got a number with a fraction" },
        { "{\"capacity\": 1e3}", "capacity: expected" },
        { "{\"capacity\": true}", "got a boolean" },
        { "{\"capacity\": null}", "got null" },
        { "{\"capacity\": -1}", "capacity: -1 is out of range "
          "(0..4294967295)" },
        { "{\"capacity\": 4294967296}", "capacity: 4294967296 is out of "
          "range" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cnt_tjson_node n = { .capacity = 7 };
        char err[CNT_TJSON_ERR_SIZE] = "";
        if (node(cases[i].doc, &n, err))
            fail_msg("accepted %s", cases[i].doc);
        has(err, cases[i].want);
        assert_int_equal(n.capacity, 7);
    }
}

static void test_tenant_good(void **state)
{
    (void)state;
    cnt_tjson_tenant t;
    char err[CNT_TJSON_ERR_SIZE];

    assert_true(tenant("{\"reserved\": 100, \"hard_limit\": \"unlimited\"}",
                       &t, err));
    assert_true(t.has_reserved && t.has_hard);
    assert_int_equal(t.reserved, 100);
    assert_int_equal(t.hard, CNT_TJSON_UNLIMITED);
    assert_true(tenant("{\"hard_limit\": 500}", &t, err));
    assert_false(t.has_reserved);
    assert_true(t.has_hard);
    assert_int_equal(t.hard, 500);
    assert_true(tenant("{\"reserved\": 4294967295}", &t, err));
    assert_true(t.has_reserved && !t.has_hard);
    assert_int_equal(t.reserved, UINT32_MAX);
    assert_true(tenant("{\"hard_limit\": 4294967294, \"reserved\": 5}", &t,
                       err));
    assert_int_equal(t.hard, 4294967294u);
    assert_true(tenant("{\"reserved\": 5, \"hard_limit\": 5}", &t, err));
}

static void test_tenant_refused(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *want;
    } cases[] = {
        { "{\"reserved\": 1", "malformed JSON" },
        { "{\"reserved\": 1, \"reserved\": 1}", "malformed JSON" },
        { "\"unlimited\"", "the tenant document must be a JSON object" },
        { "{}", "the document sets nothing" },
        { "{\"reserve\": 1}", "unknown field \"reserve\" (expected reserved "
          "or hard_limit)" },
        { "{\"reserved\": \"1\"}", "reserved: expected a whole number" },
        { "{\"reserved\": -5}", "reserved: -5 is out of range" },
        { "{\"reserved\": 4294967296}", "reserved: 4294967296 is out of "
          "range" },
        { "{\"hard_limit\": \"Unlimited\"}", "hard_limit: expected a whole "
          "number 0..4294967294 or \"unlimited\", got a string other" },
        { "{\"hard_limit\": \"unlimited\\u0000\"}", "malformed JSON" },
        { "{\"hard_limit\": 4294967295}", "hard_limit: 4294967295 is out of "
          "range (0..4294967294)" },
        { "{\"hard_limit\": -1}", "hard_limit: -1 is out of range" },
        { "{\"hard_limit\": [1]}", "hard_limit: expected a whole number "
          "0..4294967294 or \"unlimited\", got an array" },
        { "{\"hard_limit\": {}}", "got an object" },
        { "{\"reserved\": 10, \"hard_limit\": 9}", "hard_limit: 9 is below "
          "reserved 10" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cnt_tjson_tenant t = { .reserved = 7 };
        char err[CNT_TJSON_ERR_SIZE] = "";
        if (tenant(cases[i].doc, &t, err))
            fail_msg("accepted %s", cases[i].doc);
        has(err, cases[i].want);
        assert_int_equal(t.reserved, 7);
    }
}

/* A small error buffer cuts the message and still ends it. */
static void test_short_error_buffer(void **state)
{
    (void)state;
    cnt_tjson_node n;
    char err[8];

    memset(err, 'x', sizeof(err));
    assert_false(cnt_tjson_node_parse((const uint8_t *)"{}", 2, &n, err,
                                      sizeof(err)));
    assert_int_equal(strlen(err), sizeof(err) - 1);
}

/* What a file's tenants gave, in order. */
typedef struct seen {
    unsigned n;
    char names[4][16];
    cnt_tjson_tenant t[4];
    const char *refuse;     /* a name the callback refuses */
} seen;

static bool collect(void *ctx, const char *name, size_t len,
                    const cnt_tjson_tenant *t, char *err, size_t errlen)
{
    seen *s = ctx;

    if (s->refuse != NULL && strcmp(name, s->refuse) == 0) {
        snprintf(err, errlen, "refused by the caller");
        return false;
    }
    assert_true(s->n < 4 && len < 16);
    memcpy(s->names[s->n], name, len + 1);
    s->t[s->n++] = *t;
    return true;
}

static bool file(const char *text, cnt_tjson_file *f, seen *s, char *err)
{
    return cnt_tjson_file_parse((const uint8_t *)text, strlen(text), f,
                                collect, s, err, CNT_TJSON_ERR_SIZE);
}

static void test_file_good(void **state)
{
    (void)state;
    cnt_tjson_file f;
    seen s = {0};
    char err[CNT_TJSON_ERR_SIZE];

    assert_true(file("{\"tenants\": {\"b\": {\"reserved\": 100, "
                     "\"hard_limit\": \"unlimited\"}, \"a\": {\"hard_limit\":"
                     " 5}}, \"node\": {\"capacity\": 25000}, \"default\": "
                     "{\"hard_limit\": 7}}", &f, &s, err));
    assert_true(f.has_node);
    assert_int_equal(f.node.capacity, 25000);
    assert_true(f.has_default_hard);
    assert_int_equal(f.default_hard, 7);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.names[0], "b");
    assert_int_equal(s.t[0].reserved, 100);
    assert_int_equal(s.t[0].hard, CNT_TJSON_UNLIMITED);
    assert_string_equal(s.names[1], "a");
    assert_false(s.t[1].has_reserved);
    assert_int_equal(s.t[1].hard, 5);

    memset(&s, 0, sizeof(s));
    assert_true(file("{}", &f, &s, err));
    assert_false(f.has_node || f.has_default_hard);
    assert_int_equal(s.n, 0);
}

static void test_file_refused(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *want;
    } cases[] = {
        { "node.capacity = 5", "malformed JSON" },
        { "[]", "the settings file must be a JSON object" },
        { "{\"nodes\": {}}", "unknown member \"nodes\" (expected node, "
          "default or tenants)" },
        { "{\"node\": {\"capacity\": -1}}", "node: capacity: -1 is out of "
          "range" },
        { "{\"node\": {}}", "node: capacity: missing" },
        { "{\"default\": {\"reserved\": 1}}", "default: unknown field "
          "\"reserved\" (expected hard_limit)" },
        { "{\"default\": {\"hard_limit\": \"none\"}}", "default: hard_limit:"
          " expected" },
        { "{\"default\": 5}", "default must be a JSON object" },
        { "{\"tenants\": []}", "tenants must be a JSON object" },
        { "{\"tenants\": {\"a\": {\"reserved\": 1}, \"b\": {\"hard_limit\":"
          " \"x\"}}}", "tenants.b: hard_limit: expected" },
        { "{\"tenants\": {\"a\": 1}}", "tenants.a: the tenant document must "
          "be a JSON object" },
        { "{\"tenants\": {\"a\": {\"reserved\": 1}, \"a\": {}}}",
          "malformed JSON" },
        { "{\"tenants\": {\"bad\": {\"reserved\": 1}}}", "tenants.bad: "
          "refused by the caller" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cnt_tjson_file f;
        seen s = { .refuse = "bad" };
        char err[CNT_TJSON_ERR_SIZE] = "";
        if (file(cases[i].doc, &f, &s, err))
            fail_msg("accepted %s", cases[i].doc);
        has(err, cases[i].want);
    }
}

/* The refusal's text quotes the document; control bytes and bytes
 * outside ASCII in it come out as '?', so the answer and the log line
 * stay one printable line. */
static void test_error_printable(void **state)
{
    (void)state;
    static const char *docs[] = {
        "{\"cap\\nacity\": 1}",            /* an escaped newline in a name */
        "{\"capacity\": 1}\n\x01\x1b[2J",    /* raw bytes after the value */
        "{\"\xc3\xa9\": 1}",                /* a non-ASCII name */
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        char err[256];
        cnt_tjson_node n;
        assert_false(cnt_tjson_node_parse((const uint8_t *)docs[i],
                                          strlen(docs[i]), &n, err,
                                          sizeof err));
        assert_true(err[0] != '\0');
        for (const char *p = err; *p != '\0'; p++)
            assert_true((unsigned char)*p >= 0x20 &&
                        (unsigned char)*p <= 0x7e);
    }
}

static void test_format(void **state)
{
    (void)state;
    char out[96];
    cnt_tjson_tenant t;
    cnt_tjson_node n;
    char err[CNT_TJSON_ERR_SIZE];

    assert_int_equal(cnt_tjson_node_format(out, sizeof(out), 25000),
                     strlen("{\"capacity\":25000}"));
    assert_string_equal(out, "{\"capacity\":25000}");
    assert_true(node(out, &n, err));
    assert_int_equal(n.capacity, 25000);
    cnt_tjson_tenant_format(out, sizeof(out), 100, CNT_TJSON_UNLIMITED);
    assert_string_equal(out, "{\"reserved\":100,\"hard_limit\":"
                             "\"unlimited\"}");
    assert_true(tenant(out, &t, err));
    assert_int_equal(t.hard, CNT_TJSON_UNLIMITED);
    cnt_tjson_tenant_format(out, sizeof(out), 0, 4294967294u);
    assert_string_equal(out, "{\"reserved\":0,\"hard_limit\":4294967294}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_good),
        cmocka_unit_test(test_node_refused),
        cmocka_unit_test(test_tenant_good),
        cmocka_unit_test(test_tenant_refused),
        cmocka_unit_test(test_short_error_buffer),
        cmocka_unit_test(test_file_good),
        cmocka_unit_test(test_file_refused),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_error_printable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
