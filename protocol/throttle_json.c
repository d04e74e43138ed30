/* throttle_json.c: parses and writes the JSON documents of tenant
 * throttling (see throttle_json.h). jansson reads the text strictly
 * (duplicate keys refused, nothing after the document); the checks of
 * each member are ours, so that every refusal names the member. */
#include "config.h"

#include "protocol/throttle_json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#define NUMBER_EXPECTED "a whole number 0..4294967295"
#define HARD_EXPECTED "a whole number 0..4294967294 or \"unlimited\""

/* Writes one error line: the member's place (prefix, may be ""), then the
 * message. Always false, for the callers' returns. */
static bool fail(char *err, size_t errlen, const char *prefix,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(char *err, size_t errlen, const char *prefix,
                 const char *fmt, ...)
{
    va_list ap;
    int n;

    if (errlen == 0)
        return false;
    n = snprintf(err, errlen, "%s", prefix);
    if (n < 0 || (size_t)n >= errlen)
        return false;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    /* The text quotes the document (a field's name, the parser's "near
     * '...'"), which is the client's: it goes back on the wire and into
     * the log as one line of printable ASCII. */
    for (char *p = err; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    return false;
}

/* What a JSON value is, in words, for "got ..." in the errors. */
static const char *kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction or exponent";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

/* Reads a number member (0..max) named field into *out. */
static bool number(const json_t *v, const char *prefix, const char *field,
                   json_int_t max, uint32_t *out, char *err, size_t errlen)
{
    json_int_t x;

    if (!json_is_integer(v))
        return fail(err, errlen, prefix, "%s: expected " NUMBER_EXPECTED
                    ", got %s", field, kind(v));
    x = json_integer_value(v);
    if (x < 0 || x > max)
        return fail(err, errlen, prefix, "%s: %" JSON_INTEGER_FORMAT
                    " is out of range (0..%" JSON_INTEGER_FORMAT ")", field,
                    x, max);
    *out = (uint32_t)x;
    return true;
}

/* Reads a hard limit member: a number below unlimited, or "unlimited". */
static bool hard_limit(const json_t *v, const char *prefix, uint32_t *out,
                       char *err, size_t errlen)
{
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "unlimited") != 0 ||
            json_string_length(v) != 9)
            return fail(err, errlen, prefix, "hard_limit: expected "
                        HARD_EXPECTED ", got a string other than "
                        "\"unlimited\"");
        *out = CNT_TJSON_UNLIMITED;
        return true;
    }
    if (!json_is_integer(v))
        return fail(err, errlen, prefix, "hard_limit: expected "
                    HARD_EXPECTED ", got %s", kind(v));
    return number(v, prefix, "hard_limit", CNT_TJSON_UNLIMITED - 1, out, err,
                  errlen);
}

/* Checks that v is an object; what names it when not. */
static bool object(const json_t *v, const char *prefix, const char *what,
                   char *err, size_t errlen)
{
    if (json_is_object(v))
        return true;
    return fail(err, errlen, prefix, "%s must be a JSON object, got %s", what,
                kind(v));
}

/* A node document already read. */
static bool node_value(json_t *o, const char *prefix, cnt_tjson_node *out,
                       char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    bool has = false;
    uint32_t cap = 0;

    if (!object(o, prefix, "the node document", err, errlen))
        return false;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "capacity") != 0)
            return fail(err, errlen, prefix, "unknown field \"%.64s\" "
                        "(expected capacity)", key);
        if (!number(v, prefix, "capacity", UINT32_MAX, &cap, err, errlen))
            return false;
        has = true;
    }
    if (!has)
        return fail(err, errlen, prefix, "capacity: missing (the document "
                    "sets nothing)");
    out->capacity = cap;
    return true;
}

/* A tenant document already read. */
static bool tenant_value(json_t *o, const char *prefix, cnt_tjson_tenant *out,
                         char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    cnt_tjson_tenant t = {0};

    if (!object(o, prefix, "the tenant document", err, errlen))
        return false;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "reserved") == 0) {
            if (!number(v, prefix, "reserved", UINT32_MAX, &t.reserved, err,
                        errlen))
                return false;
            t.has_reserved = true;
        } else if (strcmp(key, "hard_limit") == 0) {
            if (!hard_limit(v, prefix, &t.hard, err, errlen))
                return false;
            t.has_hard = true;
        } else {
            return fail(err, errlen, prefix, "unknown field \"%.64s\" "
                        "(expected reserved or hard_limit)", key);
        }
    }
    if (!t.has_reserved && !t.has_hard)
        return fail(err, errlen, prefix, "the document sets nothing "
                    "(expected reserved, hard_limit or both)");
    if (t.has_reserved && t.has_hard && t.hard < t.reserved)
        return fail(err, errlen, prefix, "hard_limit: %" PRIu32 " is below "
                    "reserved %" PRIu32, t.hard, t.reserved);
    *out = t;
    return true;
}

/* Reads doc[0..len) as one JSON value, strictly; NULL with the error. */
static json_t *load(const uint8_t *doc, size_t len, char *err, size_t errlen)
{
    json_error_t e;
    json_t *root;

    root = json_loadb((const char *)doc, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    if (root == NULL)
        fail(err, errlen, "", "malformed JSON: %s (line %d, column %d)",
             e.text, e.line, e.column);
    return root;
}

/* Parses a node document. */
bool cnt_tjson_node_parse(const uint8_t *doc, size_t len, cnt_tjson_node *out,
                          char *err, size_t errlen)
{
    json_t *root = load(doc, len, err, errlen);
    bool ok;

    if (root == NULL)
        return false;
    ok = node_value(root, "", out, err, errlen);
    json_decref(root);
    return ok;
}

/* Parses a tenant document. */
bool cnt_tjson_tenant_parse(const uint8_t *doc, size_t len,
                            cnt_tjson_tenant *out, char *err, size_t errlen)
{
    json_t *root = load(doc, len, err, errlen);
    bool ok;

    if (root == NULL)
        return false;
    ok = tenant_value(root, "", out, err, errlen);
    json_decref(root);
    return ok;
}

/* The "tenants" member of a file: each tenant's document, handed to fn. */
static bool file_tenants(json_t *o, cnt_tjson_tenant_fn fn, void *ctx,
                         char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    char prefix[96];

    if (!object(o, "", "tenants", err, errlen))
        return false;
    json_object_foreach(o, key, v) {
        cnt_tjson_tenant t;
        char msg[CNT_TJSON_ERR_SIZE];
        size_t klen = strlen(key);

        snprintf(prefix, sizeof(prefix), "tenants.%.64s%s: ", key,
                 klen > 64 ? "..." : "");
        /* jansson keeps NUL bytes out of keys unless asked: a name is a
         * C string. */
        if (!tenant_value(v, prefix, &t, err, errlen))
            return false;
        if (!fn(ctx, key, klen, &t, msg, sizeof(msg)))
            return fail(err, errlen, prefix, "%s", msg);
    }
    return true;
}

/* Parses a whole settings file. */
bool cnt_tjson_file_parse(const uint8_t *doc, size_t len, cnt_tjson_file *out,
                          cnt_tjson_tenant_fn fn, void *ctx, char *err,
                          size_t errlen)
{
    json_t *root = load(doc, len, err, errlen);
    const char *key;
    json_t *v;
    bool ok = true;

    if (root == NULL)
        return false;
    memset(out, 0, sizeof(*out));
    if (!object(root, "", "the settings file", err, errlen)) {
        json_decref(root);
        return false;
    }
    /* node and default first, then the tenants, whatever the file's order:
     * a tenant's check may depend on them. */
    json_object_foreach(root, key, v) {
        if (strcmp(key, "node") == 0) {
            ok = node_value(v, "node: ", &out->node, err, errlen);
            out->has_node = ok;
        } else if (strcmp(key, "default") == 0) {
            const char *k2;
            json_t *v2;
            ok = object(v, "", "default", err, errlen);
            json_object_foreach(v, k2, v2) {
                if (!ok)
                    break;
                if (strcmp(k2, "hard_limit") != 0)
                    ok = fail(err, errlen, "default: ", "unknown field "
                              "\"%.64s\" (expected hard_limit)", k2);
                else
                    ok = out->has_default_hard =
                        hard_limit(v2, "default: ", &out->default_hard, err,
                                   errlen);
            }
        } else if (strcmp(key, "tenants") != 0) {
            ok = fail(err, errlen, "", "unknown member \"%.64s\" (expected "
                      "node, default or tenants)", key);
        }
        if (!ok)
            break;
    }
    if (ok && (v = json_object_get(root, "tenants")) != NULL)
        ok = file_tenants(v, fn, ctx, err, errlen);
    json_decref(root);
    return ok;
}

/* Writes a node document. */
size_t cnt_tjson_node_format(char *out, size_t cap, uint32_t capacity)
{
    int n = snprintf(out, cap, "{\"capacity\":%" PRIu32 "}", capacity);
    return n < 0 ? 0 : (size_t)n;
}

/* Writes a tenant document. */
size_t cnt_tjson_tenant_format(char *out, size_t cap, uint32_t reserved,
                               uint32_t hard)
{
    int n;

    if (hard == CNT_TJSON_UNLIMITED)
        n = snprintf(out, cap, "{\"reserved\":%" PRIu32
                     ",\"hard_limit\":\"unlimited\"}", reserved);
    else
        n = snprintf(out, cap, "{\"reserved\":%" PRIu32 ",\"hard_limit\":%"
                     PRIu32 "}", reserved, hard);
    return n < 0 ? 0 : (size_t)n;
}
