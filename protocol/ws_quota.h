/* ws_quota.h: the codec of the WebSocket quota front: the HTTP/1.1 upgrade
 * request (parsed from a bounded header block), the handshake's answers
 * (Sec-WebSocket-Accept is SHA-1 and base64 from OpenSSL's libcrypto), and
 * the quota API's JSON messages, each a JSON array [name, object]: the
 * client's quota_request and quota_release are decoded with jansson, the
 * server's results and events are written by hand into a caller's buffer.
 * No I/O; jansson's parse tree is the only allocation and is freed before
 * a decode returns. The WebSocket framing itself is wslay's
 * (engine/server/session_ws.c). */
#ifndef CNT_PROTOCOL_WS_QUOTA_H
#define CNT_PROTOCOL_WS_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- The opening handshake (RFC 6455 section 4) ---- */

/* Longest Sec-WebSocket-Key value we look at (a valid one is 24
 * characters: base64 of 16 bytes) and the accept value's length. */
#define CNT_WS_KEY_MAX 64u
#define CNT_WS_ACCEPT_LEN 28u

typedef enum cnt_http_result {
    CNT_HTTP_NEED_MORE,     /* no end of the header block yet */
    CNT_HTTP_UPGRADE,       /* a valid WebSocket upgrade of GET /quota or
                               GET /live (see cnt_http_request.live) */
    CNT_HTTP_METRICS,       /* GET /metrics: the Prometheus exposition */
    CNT_HTTP_PAGE,          /* GET /: the live page */
    CNT_HTTP_BAD_REQUEST,   /* not HTTP/1.1, a broken line: 400 */
    CNT_HTTP_NOT_FOUND,     /* another path: 404 */
    CNT_HTTP_BAD_METHOD,    /* a served path with a method other than
                               GET: 405 */
    CNT_HTTP_NOT_UPGRADE,   /* GET /quota without a valid upgrade: 426 or
                               400 (see version_ok) */
    CNT_HTTP_TOO_LARGE,     /* the header block exceeds its bound: 431 */
} cnt_http_result;

typedef struct cnt_http_request {
    size_t size;            /* bytes of the header block, CRLFCRLF included */
    char key[CNT_WS_KEY_MAX + 1];   /* Sec-WebSocket-Key, NUL-terminated */
    bool version_ok;        /* Sec-WebSocket-Version: 13 */
    bool live;              /* the upgrade is of /live (the page's feed),
                               not /quota */
} cnt_http_request;

/* Parses the request at in[0..len): the request line and headers, at most
 * max_header bytes of them. The paths served are /quota and /live (both
 * WebSocket upgrades), /metrics and / (plain GETs); a query string is
 * allowed and ignored. The upgrade needs GET, HTTP/1.1 or later, "Upgrade: websocket",
 * "upgrade" among the Connection tokens, Sec-WebSocket-Version 13 and a
 * Sec-WebSocket-Key of 16 bytes in base64. A request with a body
 * (Content-Length other than 0, Transfer-Encoding) is a bad request. */
cnt_http_result cnt_http_parse(const uint8_t *in, size_t len,
                               size_t max_header, cnt_http_request *r);

/* Writes the Sec-WebSocket-Accept value for key (CNT_WS_ACCEPT_LEN
 * characters and a NUL) into out. */
void cnt_ws_accept(const char *key, char out[CNT_WS_ACCEPT_LEN + 1]);

/* Starts libcrypto, which the handshake uses, without its exit-time
 * cleanup: a host may run its exit handlers while the extension's worker
 * threads still run, and that cleanup frees tables a worker may be reading.
 * Call it once before any thread computes a handshake; false when
 * libcrypto cannot start. */
bool cnt_ws_crypto_init(void);

/* Room enough for any answer below. */
#define CNT_HTTP_ANSWER_MAX 256u

/* Writes the 101 Switching Protocols answer for key into out (at least
 * CNT_HTTP_ANSWER_MAX bytes); returns its length. */
size_t cnt_http_switching(char *out, const char *key);

/* Writes the error answer for r (not NEED_MORE or UPGRADE), with
 * "Connection: close", into out (at least CNT_HTTP_ANSWER_MAX bytes);
 * returns its length. */
size_t cnt_http_error(char *out, cnt_http_result r);

/* ---- The quota messages ---- */

/* Longest key (a group's name) and qid (as JSON text: a string's quotes
 * and escapes count) a message may carry. */
#define CNT_QUOTA_KEY_MAX 250u
#define CNT_QUOTA_QID_MAX 256u
/* Longest duration in seconds (a wait or a grant): 49 days, what a
 * 32-bit count of milliseconds holds. */
#define CNT_QUOTA_SECONDS_MAX 4294966u

typedef enum cnt_quota_kind {
    CNT_QUOTA_REQUEST,      /* quota_request, well formed */
    CNT_QUOTA_RELEASE,      /* quota_release, well formed */
    CNT_QUOTA_MALFORMED,    /* a known name with a bad object */
    CNT_QUOTA_UNKNOWN,      /* a well-formed [name, object] of another name */
    CNT_QUOTA_NOT_JSON,     /* not JSON, or not an array [string, object] */
} cnt_quota_kind;

/* A decoded message. The durations are in milliseconds; has_timeout and
 * has_expires are false when the field is absent or null. */
typedef struct cnt_quota_msg {
    cnt_quota_kind kind;
    char name[32];          /* the message's name, cut at 31 bytes */
    bool name_cut;          /* it was longer */
    char qid[CNT_QUOTA_QID_MAX + 1];  /* JSON text of qid; "" when none */
    size_t qid_len;
    uint8_t key[CNT_QUOTA_KEY_MAX];
    uint16_t key_len;
    bool has_timeout, has_expires;
    uint32_t timeout_ms, expires_ms;
    const char *problem;    /* for MALFORMED: what is wrong, in words */
} cnt_quota_msg;

/* Decodes one text message's payload (UTF-8, already checked by the
 * framing) into *m. */
void cnt_quota_decode(const uint8_t *text, size_t len, cnt_quota_msg *m);

/* The error codes of quota_request_result and the other results (1501 is
 * the specification's; the others are ours, doc/websocket.md). */
enum {
    CNT_QUOTA_ERR_NOT_FOUND = 1501,     /* "Quota group not found" */
    CNT_QUOTA_ERR_ACTIVE = 1502,        /* already requested on this
                                           connection */
    CNT_QUOTA_ERR_UNAVAILABLE = 1503,   /* service unavailable */
    CNT_QUOTA_ERR_TOO_MANY = 1504,      /* counter.max_waits reached */
    CNT_QUOTA_ERR_MALFORMED = 1505,     /* missing key, wrong types */
    CNT_QUOTA_ERR_UNKNOWN = 1506,       /* unknown message name */
    CNT_QUOTA_ERR_NOT_JSON = 1507,      /* not [name, object] JSON text */
    CNT_QUOTA_ERR_BINARY = 1508,        /* a binary message */
    CNT_QUOTA_ERR_NOT_REQUESTED = 1509, /* release of a key not requested */
};

/* Room enough for any result or event of a message whose qid and key fit
 * the bounds above. */
#define CNT_QUOTA_OUT_MAX 2048u

/* Writes [name, {"qid": qid, "result": "ok"}] (qid left out when qid_len
 * is 0) into out; returns its length. */
size_t cnt_quota_encode_ok(char *out, const char *name, const char *qid,
                           size_t qid_len);

/* Writes the error result [name, {"qid":..., "success": false, "result":
 * "error", "errormsg": TEXT, "error_code": code, "error_message": TEXT}]
 * into out; returns its length. */
size_t cnt_quota_encode_error(char *out, const char *name, const char *qid,
                              size_t qid_len, int code);

/* Writes the event [name, {"key": key}] into out; returns its length. key
 * is at most CNT_QUOTA_KEY_MAX bytes of UTF-8. */
size_t cnt_quota_encode_event(char *out, const char *name,
                              const uint8_t *key, size_t key_len);

#endif
