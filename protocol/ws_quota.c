/* ws_quota.c: the codec of the WebSocket quota front (see ws_quota.h): the
 * upgrade request's parser, the handshake's answers and the quota API's
 * JSON messages. */
#include "config.h"

#include "protocol/ws_quota.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

/* ---- The opening handshake ---- */

/* Whether the n bytes at p equal the NUL-terminated lit, ignoring case. */
static bool same_ci(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(p, lit, n) == 0;
}

/* Trims spaces and tabs at both ends of [*p, *p + *n). */
static void trim(const char **p, size_t *n)
{
    while (*n > 0 && (**p == ' ' || **p == '\t')) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* Whether the comma-separated list v[0..n) has the token tok (any case). */
static bool has_token(const char *v, size_t n, const char *tok)
{
    while (n > 0) {
        const char *comma = memchr(v, ',', n);
        size_t len = comma != NULL ? (size_t)(comma - v) : n;
        const char *t = v;
        size_t tn = len;
        trim(&t, &tn);
        if (same_ci(t, tn, tok))
            return true;
        if (comma == NULL)
            break;
        v += len + 1;
        n -= len + 1;
    }
    return false;
}

/* Whether k[0..n) is base64 of exactly 16 bytes. */
static bool key_valid(const char *k, size_t n)
{
    if (n != 24 || k[22] != '=' || k[23] != '=')
        return false;
    for (size_t i = 0; i < 22; i++)
        if (!isalnum((unsigned char)k[i]) && k[i] != '+' && k[i] != '/')
            return false;
    return true;
}

/* Parses the upgrade request; see ws_quota.h. */
cnt_http_result cnt_http_parse(const uint8_t *in, size_t len,
                               size_t max_header, cnt_http_request *r)
{
    const char *s = (const char *)in;
    size_t end = 0;

    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i + 3 < len; i++)
        if (memcmp(s + i, "\r\n\r\n", 4) == 0) {
            end = i + 4;
            break;
        }
    if (end == 0)
        return len >= max_header ? CNT_HTTP_TOO_LARGE : CNT_HTTP_NEED_MORE;
    if (end > max_header)
        return CNT_HTTP_TOO_LARGE;
    r->size = end;

    /* The request line: METHOD SP TARGET SP HTTP/1.x */
    const char *line_end = memchr(s, '\r', end);
    const char *sp1 = memchr(s, ' ', (size_t)(line_end - s));
    if (sp1 == NULL)
        return CNT_HTTP_BAD_REQUEST;
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(line_end - target));
    if (sp2 == NULL || sp2 == target)
        return CNT_HTTP_BAD_REQUEST;
    const char *version = sp2 + 1;
    size_t vlen = (size_t)(line_end - version);
    if (vlen != 8 || memcmp(version, "HTTP/1.", 7) != 0 ||
        !isdigit((unsigned char)version[7]))
        return CNT_HTTP_BAD_REQUEST;
    bool http11 = version[7] != '0';
    size_t mlen = (size_t)(sp1 - s);
    for (size_t i = 0; i < mlen; i++)
        if (!isupper((unsigned char)s[i]))
            return CNT_HTTP_BAD_REQUEST;
    size_t tlen = (size_t)(sp2 - target);
    const char *q = memchr(target, '?', tlen);
    size_t plen = q != NULL ? (size_t)(q - target) : tlen;

    /* The headers. */
    bool upgrade = false, connection = false, body = false;
    bool have_key = false, have_host = false;
    const char *p = line_end + 2;
    while (p < s + end - 2) {
        const char *e = memchr(p, '\r', (size_t)(s + end - p));
        if (e == NULL || e[1] != '\n')
            return CNT_HTTP_BAD_REQUEST;
        const char *colon = memchr(p, ':', (size_t)(e - p));
        if (colon == NULL || colon == p)
            return CNT_HTTP_BAD_REQUEST;
        for (const char *c = p; c < colon; c++)
            if (*c <= ' ' || *c >= 127)
                return CNT_HTTP_BAD_REQUEST;
        const char *name = p;
        size_t nlen = (size_t)(colon - p);
        const char *v = colon + 1;
        size_t vl = (size_t)(e - v);
        trim(&v, &vl);
        if (same_ci(name, nlen, "Upgrade"))
            upgrade = upgrade || has_token(v, vl, "websocket");
        else if (same_ci(name, nlen, "Connection"))
            connection = connection || has_token(v, vl, "upgrade");
        else if (same_ci(name, nlen, "Sec-WebSocket-Version"))
            r->version_ok = vl == 2 && memcmp(v, "13", 2) == 0;
        else if (same_ci(name, nlen, "Sec-WebSocket-Key")) {
            if (have_key || !key_valid(v, vl))
                return CNT_HTTP_BAD_REQUEST;
            memcpy(r->key, v, vl);
            r->key[vl] = '\0';
            have_key = true;
        } else if (same_ci(name, nlen, "Host"))
            have_host = vl > 0;
        else if (same_ci(name, nlen, "Content-Length"))
            body = body || !(vl == 1 && v[0] == '0');
        else if (same_ci(name, nlen, "Transfer-Encoding"))
            body = true;
        p = e + 2;
    }
    /* RFC 7230 5.4: an HTTP/1.1 request without Host is a bad request. */
    if (body || (http11 && !have_host))
        return CNT_HTTP_BAD_REQUEST;
    bool quota = plen == 6 && memcmp(target, "/quota", 6) == 0;
    bool live = plen == 5 && memcmp(target, "/live", 5) == 0;
    bool metrics = plen == 8 && memcmp(target, "/metrics", 8) == 0;
    bool page = plen == 1 && target[0] == '/';
    if (!quota && !live && !metrics && !page)
        return CNT_HTTP_NOT_FOUND;
    if (!same_ci(s, mlen, "GET"))
        return CNT_HTTP_BAD_METHOD;
    if (metrics)
        return CNT_HTTP_METRICS;
    if (page)
        return CNT_HTTP_PAGE;
    r->live = live;
    if (!http11 || !upgrade || !connection || !have_key || !r->version_ok)
        return CNT_HTTP_NOT_UPGRADE;
    return CNT_HTTP_UPGRADE;
}

/* The GUID RFC 6455 appends to the client's key. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* Starts libcrypto without its exit handler; see ws_quota.h. */
bool cnt_ws_crypto_init(void)
{
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL) == 1;
}

/* Computes Sec-WebSocket-Accept; see ws_quota.h. */
void cnt_ws_accept(const char *key, char out[CNT_WS_ACCEPT_LEN + 1])
{
    unsigned char buf[CNT_WS_KEY_MAX + sizeof(ws_guid)];
    unsigned char digest[SHA_DIGEST_LENGTH];
    size_t klen = strnlen(key, CNT_WS_KEY_MAX);

    memcpy(buf, key, klen);
    memcpy(buf + klen, ws_guid, sizeof(ws_guid) - 1);
    SHA1(buf, klen + sizeof(ws_guid) - 1, digest);
    EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH);
    out[CNT_WS_ACCEPT_LEN] = '\0';
}

/* Writes the 101 answer; see ws_quota.h. */
size_t cnt_http_switching(char *out, const char *key)
{
    char accept[CNT_WS_ACCEPT_LEN + 1];

    cnt_ws_accept(key, accept);
    int n = snprintf(out, CNT_HTTP_ANSWER_MAX,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    return (size_t)n;
}

/* Writes an error answer; see ws_quota.h. */
size_t cnt_http_error(char *out, cnt_http_result r)
{
    const char *status = "400 Bad Request", *extra = "";
    const char *body = "bad request\n";

    switch (r) {
    case CNT_HTTP_NOT_FOUND:
        status = "404 Not Found";
        body = "not found\n";
        break;
    case CNT_HTTP_BAD_METHOD:
        status = "405 Method Not Allowed";
        extra = "Allow: GET\r\n";
        body = "use GET\n";
        break;
    case CNT_HTTP_NOT_UPGRADE:
        status = "426 Upgrade Required";
        extra = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
        body = "a WebSocket upgrade (version 13) is required\n";
        break;
    case CNT_HTTP_TOO_LARGE:
        status = "431 Request Header Fields Too Large";
        body = "request header too large\n";
        break;
    default:
        break;
    }
    int n = snprintf(out, CNT_HTTP_ANSWER_MAX,
                     "HTTP/1.1 %s\r\n%sContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     status, extra, strlen(body), body);
    return (size_t)n;
}

/* ---- The quota messages ---- */

/* Reads a duration in seconds (a non-negative number up to
 * CNT_QUOTA_SECONDS_MAX; null counts as absent) into *ms. False when
 * it has another type or is out of range. */
static bool duration(json_t *v, bool *has, uint32_t *ms)
{
    double sec;

    *has = false;
    if (v == NULL || json_is_null(v))
        return true;
    if (json_is_integer(v))
        sec = (double)json_integer_value(v);
    else if (json_is_real(v))
        sec = json_real_value(v);
    else
        return false;
    if (!(sec >= 0) || sec > CNT_QUOTA_SECONDS_MAX)
        return false;
    *ms = (uint32_t)(sec * 1000.0 + 0.5);
    *has = true;
    return true;
}

/* Fills m from a known message's object o (kind set by the caller). */
static void decode_fields(json_t *o, cnt_quota_msg *m)
{
    json_t *qid = json_object_get(o, "qid");
    if (qid != NULL && !json_is_null(qid)) {
        char *text = json_dumps(qid, JSON_COMPACT | JSON_ENCODE_ANY);
        size_t n = text != NULL ? strlen(text) : 0;
        if (text == NULL || n > CNT_QUOTA_QID_MAX) {
            free(text);
            m->kind = CNT_QUOTA_MALFORMED;
            m->problem = text == NULL ? "qid cannot be read"
                                      : "qid is too long";
            return;
        }
        memcpy(m->qid, text, n + 1);
        m->qid_len = n;
        free(text);
    }
    if (m->kind == CNT_QUOTA_UNKNOWN)
        return;
    json_t *key = json_object_get(o, "key");
    if (key == NULL || !json_is_string(key)) {
        m->kind = CNT_QUOTA_MALFORMED;
        m->problem = key == NULL ? "key is missing" : "key is not a string";
        return;
    }
    size_t klen = json_string_length(key);
    if (klen == 0 || klen > CNT_QUOTA_KEY_MAX) {
        m->kind = CNT_QUOTA_MALFORMED;
        m->problem = klen == 0 ? "key is empty" : "key is too long";
        return;
    }
    memcpy(m->key, json_string_value(key), klen);
    m->key_len = (uint16_t)klen;
    if (m->kind != CNT_QUOTA_REQUEST)
        return;
    if (!duration(json_object_get(o, "timeout"), &m->has_timeout,
                  &m->timeout_ms)) {
        m->kind = CNT_QUOTA_MALFORMED;
        m->problem = "timeout is not a number of seconds in range";
        return;
    }
    if (!duration(json_object_get(o, "expires"), &m->has_expires,
                  &m->expires_ms)) {
        m->kind = CNT_QUOTA_MALFORMED;
        m->problem = "expires is not a number of seconds in range";
    }
}

/* Decodes one message; see ws_quota.h. */
void cnt_quota_decode(const uint8_t *text, size_t len, cnt_quota_msg *m)
{
    json_error_t err;

    memset(m, 0, sizeof(*m));
    m->kind = CNT_QUOTA_NOT_JSON;
    json_t *root = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES,
                              &err);
    if (root == NULL)
        return;
    json_t *name = json_array_get(root, 0);
    json_t *o = json_array_get(root, 1);
    if (!json_is_array(root) || json_array_size(root) != 2 ||
        !json_is_string(name) || !json_is_object(o)) {
        json_decref(root);
        return;
    }
    const char *n = json_string_value(name);
    size_t nlen = json_string_length(name);
    m->name_cut = nlen >= sizeof(m->name);
    if (m->name_cut)
        nlen = sizeof(m->name) - 1;
    memcpy(m->name, n, nlen);
    m->name[nlen] = '\0';
    if (strlen(m->name) != nlen)        /* a NUL inside: never ours */
        m->name[0] = '\0';
    if (!m->name_cut && strcmp(m->name, "quota_request") == 0)
        m->kind = CNT_QUOTA_REQUEST;
    else if (!m->name_cut && strcmp(m->name, "quota_release") == 0)
        m->kind = CNT_QUOTA_RELEASE;
    else
        m->kind = CNT_QUOTA_UNKNOWN;
    decode_fields(o, m);
    json_decref(root);
}

/* The text of an error code (the specification's for 1501). */
static const char *quota_error_text(int code)
{
    switch (code) {
    case CNT_QUOTA_ERR_NOT_FOUND:
        return "Quota group not found";
    case CNT_QUOTA_ERR_ACTIVE:
        return "Quota request already active for this connection";
    case CNT_QUOTA_ERR_UNAVAILABLE:
        return "Service unavailable";
    case CNT_QUOTA_ERR_TOO_MANY:
        return "Too many quota requests on this connection";
    case CNT_QUOTA_ERR_MALFORMED:
        return "Malformed request";
    case CNT_QUOTA_ERR_UNKNOWN:
        return "Unknown message";
    case CNT_QUOTA_ERR_NOT_JSON:
        return "Message is not a JSON array [name, object]";
    case CNT_QUOTA_ERR_BINARY:
        return "Binary messages are not supported";
    case CNT_QUOTA_ERR_NOT_REQUESTED:
        return "Quota not requested";
    default:
        return "Error";
    }
}

/* Writes s[0..n) as a JSON string (quotes, escapes) at out; returns the
 * bytes written (at most 6 * n + 2). */
static size_t put_string(char *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(out + o, "\\u00", 4);
            out[o + 4] = hex[c >> 4];
            out[o + 5] = hex[c & 15];
            o += 6;
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    return o;
}

/* Appends the literal lit at out + *o. */
static void put_lit(char *out, size_t *o, const char *lit)
{
    size_t n = strlen(lit);
    memcpy(out + *o, lit, n);
    *o += n;
}

/* Writes `[name, {` and the qid member (with a comma) when there is one. */
static size_t put_head(char *out, const char *name, const char *qid,
                       size_t qid_len)
{
    size_t o = 0;

    out[o++] = '[';
    o += put_string(out + o, name, strlen(name));
    put_lit(out, &o, ",{");
    if (qid_len > 0) {
        put_lit(out, &o, "\"qid\":");
        memcpy(out + o, qid, qid_len);
        o += qid_len;
        out[o++] = ',';
    }
    return o;
}

/* Writes an ok result; see ws_quota.h. */
size_t cnt_quota_encode_ok(char *out, const char *name, const char *qid,
                           size_t qid_len)
{
    size_t o = put_head(out, name, qid, qid_len);

    put_lit(out, &o, "\"result\":\"ok\"}]");
    return o;
}

/* Writes an error result; see ws_quota.h. */
size_t cnt_quota_encode_error(char *out, const char *name, const char *qid,
                              size_t qid_len, int code)
{
    const char *text = quota_error_text(code);
    size_t o = put_head(out, name, qid, qid_len);

    put_lit(out, &o, "\"success\":false,\"result\":\"error\",\"errormsg\":");
    o += put_string(out + o, text, strlen(text));
    o += (size_t)sprintf(out + o, ",\"error_code\":%d,\"error_message\":",
                         code);
    o += put_string(out + o, text, strlen(text));
    put_lit(out, &o, "}]");
    return o;
}

/* Writes an event; see ws_quota.h. */
size_t cnt_quota_encode_event(char *out, const char *name,
                              const uint8_t *key, size_t key_len)
{
    size_t o = put_head(out, name, NULL, 0);

    put_lit(out, &o, "\"key\":");
    o += put_string(out + o, (const char *)key, key_len);
    put_lit(out, &o, "}]");
    return o;
}
