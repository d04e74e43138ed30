/* test_ws_quota.c: unit tests of the WebSocket front's codec
 * (protocol/ws_quota.c): the upgrade request's parser and its refusals,
 * the accept key (RFC 6455's own example), the quota messages' decoder for
 * every kind and field problem, and the exact JSON of results and events. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/ws_quota.h"

#define UPGRADE_HEADERS                                                     \
    "Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, "     \
    "Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"            \
    "Sec-WebSocket-Version: 13\r\n\r\n"

static cnt_http_result parse(const char *text, cnt_http_request *r)
{
    return cnt_http_parse((const uint8_t *)text, strlen(text), 8192, r);
}

static void test_upgrade(void **state)
{
    (void)state;
    cnt_http_request r;
    const char *req = "GET /quota?x=1 HTTP/1.1\r\n" UPGRADE_HEADERS "tail";

    assert_int_equal(parse(req, &r), CNT_HTTP_UPGRADE);
    assert_int_equal(r.size, strlen(req) - 4);
    assert_string_equal(r.key, "dGhlIHNhbXBsZSBub25jZQ==");
    char out[CNT_HTTP_ANSWER_MAX];
    size_t n = cnt_http_switching(out, r.key);
    assert_int_equal(n, strlen(out));
    assert_non_null(strstr(out, "HTTP/1.1 101 Switching Protocols\r\n"));
    assert_non_null(
        strstr(out, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
}

static void test_accept(void **state)
{
    (void)state;
    char out[CNT_WS_ACCEPT_LEN + 1];

    cnt_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", out);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_refusals(void **state)
{
    (void)state;
    cnt_http_request r;

    assert_int_equal(parse("GET /quota HTTP/1.1\r\nHost: x\r\n", &r),
                     CNT_HTTP_NEED_MORE);
    assert_int_equal(parse("GET /other HTTP/1.1\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_NOT_FOUND);
    assert_int_equal(parse("GET /quotas HTTP/1.1\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_NOT_FOUND);
    assert_int_equal(parse("PUT /quota HTTP/1.1\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_BAD_METHOD);
    assert_int_equal(parse("GET /quota HTTP/1.0\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_NOT_UPGRADE);
    assert_int_equal(parse("GET /quota HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_NOT_UPGRADE);
    assert_int_equal(parse("GET /quota HTTP/2\r\n\r\n", &r),
                     CNT_HTTP_BAD_REQUEST);
    assert_int_equal(parse("GET /quota HTTP/1.1\r\nno colon\r\n\r\n", &r),
                     CNT_HTTP_BAD_REQUEST);
    assert_int_equal(parse("GET /quota HTTP/1.1\r\nSec-WebSocket-Key: abc"
                           "\r\n\r\n", &r), CNT_HTTP_BAD_REQUEST);
    assert_int_equal(parse("GET /quota HTTP/1.1\r\nContent-Length: 3\r\n"
                           UPGRADE_HEADERS, &r), CNT_HTTP_BAD_REQUEST);
    assert_int_equal(parse("GET  HTTP/1.1\r\n\r\n", &r),
                     CNT_HTTP_BAD_REQUEST);

    char big[9000];
    memset(big, 'a', sizeof(big));
    assert_int_equal(cnt_http_parse((const uint8_t *)big, sizeof(big), 8192,
                                    &r), CNT_HTTP_TOO_LARGE);
    char out[CNT_HTTP_ANSWER_MAX];
    assert_non_null(strstr((cnt_http_error(out, CNT_HTTP_NOT_UPGRADE), out),
                           "426 Upgrade Required"));
    assert_non_null(strstr((cnt_http_error(out, CNT_HTTP_TOO_LARGE), out),
                           "Connection: close\r\n"));
}

static void decode(const char *text, cnt_quota_msg *m)
{
    cnt_quota_decode((const uint8_t *)text, strlen(text), m);
}

/* The operator's paths: /metrics and / are plain GETs, /live is the
 * page's upgrade; other methods on them are 405. */
static void test_routes(void **state)
{
    (void)state;
    cnt_http_request r;

    assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_METRICS);
    assert_int_equal(parse("GET /metrics?name[]=x HTTP/1.0\r\n\r\n", &r),
                     CNT_HTTP_METRICS);
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_PAGE);
    assert_int_equal(parse("POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_BAD_METHOD);
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n"
                           "Content-Length: 2\r\n\r\n", &r),
                     CNT_HTTP_BAD_REQUEST);
    /* RFC 7230 5.4: HTTP/1.1 without Host is a bad request, whatever the
     * path. */
    assert_int_equal(parse("GET /metrics HTTP/1.1\r\n\r\n", &r),
                     CNT_HTTP_BAD_REQUEST);
    assert_int_equal(parse("GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_NOT_FOUND);
    assert_int_equal(parse("GET /live HTTP/1.1\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_UPGRADE);
    assert_true(r.live);
    assert_int_equal(parse("GET /live HTTP/1.1\r\nHost: x\r\n\r\n", &r),
                     CNT_HTTP_NOT_UPGRADE);
    assert_int_equal(parse("GET /quota HTTP/1.1\r\n" UPGRADE_HEADERS, &r),
                     CNT_HTTP_UPGRADE);
    assert_false(r.live);
}

static void test_decode_request(void **state)
{
    (void)state;
    cnt_quota_msg m;

    decode("[\"quota_request\",{\"qid\":\"16066361-dfc0-49f6-b734-"
           "9b3dda09db22\",\"key\":\"abc\",\"timeout\":30,\"expires\":10}]",
           &m);
    assert_int_equal(m.kind, CNT_QUOTA_REQUEST);
    assert_string_equal(m.qid, "\"16066361-dfc0-49f6-b734-9b3dda09db22\"");
    assert_int_equal(m.key_len, 3);
    assert_memory_equal(m.key, "abc", 3);
    assert_true(m.has_timeout && m.has_expires);
    assert_int_equal(m.timeout_ms, 30000);
    assert_int_equal(m.expires_ms, 10000);

    decode("[\"quota_request\",{\"key\":\"abc\",\"timeout\":null,"
           "\"expires\":0.25}]", &m);
    assert_int_equal(m.kind, CNT_QUOTA_REQUEST);
    assert_int_equal(m.qid_len, 0);
    assert_false(m.has_timeout);
    assert_int_equal(m.expires_ms, 250);

    decode("[\"quota_release\",{\"qid\":[1,2],\"key\":\"abc\"}]", &m);
    assert_int_equal(m.kind, CNT_QUOTA_RELEASE);
    assert_string_equal(m.qid, "[1,2]");
}

static void test_decode_problems(void **state)
{
    (void)state;
    cnt_quota_msg m;
    static const char *const malformed[] = {
        "[\"quota_request\",{}]",
        "[\"quota_request\",{\"key\":1}]",
        "[\"quota_request\",{\"key\":\"\"}]",
        "[\"quota_request\",{\"key\":\"a\",\"timeout\":\"1\"}]",
        "[\"quota_request\",{\"key\":\"a\",\"timeout\":-1}]",
        "[\"quota_request\",{\"key\":\"a\",\"expires\":1e99}]",
        "[\"quota_release\",{\"qid\":1}]",
    };
    for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
        decode(malformed[i], &m);
        assert_int_equal(m.kind, CNT_QUOTA_MALFORMED);
        assert_non_null(m.problem);
    }
    decode("[\"quota_request\",{\"qid\":\"k\"}]", &m);
    assert_string_equal(m.qid, "\"k\"");        /* kept for the answer */

    static const char *const not_json[] = {
        "", "x", "{}", "[]", "[\"a\"]", "[1,{}]", "[\"a\",[]]",
        "[\"a\",{},1]", "[\"a\",{\"b\":1,\"b\":2}]",
    };
    for (size_t i = 0; i < sizeof(not_json) / sizeof(*not_json); i++) {
        decode(not_json[i], &m);
        assert_int_equal(m.kind, CNT_QUOTA_NOT_JSON);
    }
    decode("[\"hello\",{\"qid\":3}]", &m);
    assert_int_equal(m.kind, CNT_QUOTA_UNKNOWN);
    assert_string_equal(m.name, "hello");
    assert_string_equal(m.qid, "3");
    char key[CNT_QUOTA_KEY_MAX + 40];
    int n = snprintf(key, sizeof(key), "[\"quota_request\",{\"key\":\"%0*d\"}]",
                     (int)CNT_QUOTA_KEY_MAX + 1, 0);
    assert_true(n > 0);
    decode(key, &m);
    assert_int_equal(m.kind, CNT_QUOTA_MALFORMED);
}

static void test_encode(void **state)
{
    (void)state;
    char out[CNT_QUOTA_OUT_MAX];
    size_t n;

    n = cnt_quota_encode_ok(out, "quota_request_result", "\"q\"", 3);
    assert_int_equal(n, strlen("[\"quota_request_result\",{\"qid\":\"q\","
                               "\"result\":\"ok\"}]"));
    assert_memory_equal(out, "[\"quota_request_result\",{\"qid\":\"q\","
                             "\"result\":\"ok\"}]", n);
    n = cnt_quota_encode_error(out, "quota_request_result", "\"q\"", 3, 1501);
    const char *want = "[\"quota_request_result\",{\"qid\":\"q\","
                       "\"success\":false,\"result\":\"error\","
                       "\"errormsg\":\"Quota group not found\","
                       "\"error_code\":1501,"
                       "\"error_message\":\"Quota group not found\"}]";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    n = cnt_quota_encode_event(out, "quota_passed",
                               (const uint8_t *)"a\"b\\\x01", 5);
    want = "[\"quota_passed\",{\"key\":\"a\\\"b\\\\\\u0001\"}]";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_accept),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_decode_request),
        cmocka_unit_test(test_decode_problems),
        cmocka_unit_test(test_encode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
