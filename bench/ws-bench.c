/* ws-bench.c: the benchmark of the WebSocket quota front against the same
 * waiting acquisition on the binary port, one server, one run:
 * - handoff: a holder releases a key (quota_release, or wait_release on
 *   the binary port) and the time from that send to the queued waiter's
 *   quota_passed (or granted event 0x92) arriving is recorded; the waiter
 *   and the holder are two connections, the roles swap every round, and
 *   WebSocket rounds and binary rounds alternate so both see the same
 *   moments of the shared machine;
 * - pairs: N connections, each looping on its own key: quota_request,
 *   its result and quota_passed, quota_release (which has no answer);
 *   or, with --proto bin, wait_acquire, its answer, wait_release sent
 *   with the next wait_acquire (so both protocols take one round trip per
 *   pair); pairs per second.
 * The WebSocket client here is a load generator, not the product: a
 * minimal hand-written RFC 6455 client (upgrade, masked text frames of
 * the client, unfragmented frames of the server) that recognises the
 * server's messages by their names and does not check the handshake's
 * accept key.
 * Prints one key=value line on stdout (server=LABEL first); exit 0 when
 * every answer and event was as expected, 1 otherwise, 2 on bad usage. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Input buffer of a connection: the upgrade answer and a few messages. */
#define WS_IN_CAP 8192u
/* Longest message the benchmark sends (a quota_request with a short key
 * and qid), and its frame: 2 + 2 bytes of length + 4 of mask. */
#define WS_MSG_MAX 256u
#define WS_FRAME_MAX (WS_MSG_MAX + 8u)
/* The wait of a queued request: long enough never to run out in a run. */
#define WS_WAIT_LONG_S 600u
#define WS_WAIT_LONG_MS (WS_WAIT_LONG_S * 1000u)
/* A blocking read that waits this long means the server is stuck. */
#define WS_RECV_TIMEOUT_S 30
#define WS_REQ_MAX (CNT_HEADER_SIZE + CNT_WACQ_FIXED + BENCH_NAME_LEN)

typedef enum ws_mode { WS_HANDOFF, WS_PAIRS } ws_mode;

typedef struct ws_opts {
    const char *host;
    const char *port;       /* counter (binary) port */
    const char *http_port;  /* counter.http.port */
    const char *label;
    const char *key;        /* handoff: the group (maximum 1) */
    const char *prefix;     /* pairs: groups PREFIX0..PREFIXN-1 */
    ws_mode mode;
    bool binary;            /* pairs: the binary port instead */
    unsigned conns;
    double duration;
    double warmup;
} ws_opts;

/* One blocking connection, WebSocket or binary, with its input buffer. */
typedef struct ws_conn {
    int fd;
    uint8_t buf[WS_IN_CAP];
    size_t off, len;        /* unread input is buf[off, len) */
    uint32_t opaque;        /* binary: of the next request */
    uint64_t rnd;           /* WebSocket: masks */
    uint8_t pend[WS_FRAME_MAX]; /* a deferred frame, sent with the next */
    size_t plen;
} ws_conn;

enum { WS_WARMUP, WS_MEASURE, WS_STOP };
static atomic_int ws_phase;

/* Prints the option summary. */
static void usage(FILE *f)
{
    fputs("usage: ws-bench [options]\n"
          "  -s, --host HOST        server address (127.0.0.1)\n"
          "  -p, --port PORT        counter (binary) port (11215)\n"
          "  -H, --http-port PORT   counter.http.port (11280)\n"
          "  -W, --workload NAME    handoff|pairs\n"
          "  -k, --key NAME         handoff: a group of maximum 1 (wsb)\n"
          "  -g, --prefix P         pairs: groups P0..PN-1 of maximum 1 (wsp)"
          "\n"
          "      --proto ws|bin     pairs: through the WebSocket front (ws) "
          "or\n"
          "                         wait_acquire/wait_release (bin)\n"
          "  -c, --conns N          pairs: connections (1)\n"
          "  -t, --duration SEC     measured seconds (3)\n"
          "  -w, --warmup SEC       seconds before measuring (0.5)\n"
          "  -l, --label NAME       server name echoed in the output\n"
          "  -h, --help\n"
          "Prints one key=value line. Exit 0 when every answer and event "
          "was as\nexpected, 1 otherwise, 2 on bad usage.\n", f);
}

/* Fills o from the command line; exits on bad usage. */
static void parse_options(int argc, char **argv, ws_opts *o)
{
    enum { OPT_PROTO = 256 };
    static const struct option longs[] = {
        { "host", 1, NULL, 's' }, { "port", 1, NULL, 'p' },
        { "http-port", 1, NULL, 'H' }, { "workload", 1, NULL, 'W' },
        { "key", 1, NULL, 'k' }, { "prefix", 1, NULL, 'g' },
        { "proto", 1, NULL, OPT_PROTO }, { "conns", 1, NULL, 'c' },
        { "duration", 1, NULL, 't' }, { "warmup", 1, NULL, 'w' },
        { "label", 1, NULL, 'l' }, { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    *o = (ws_opts){ .host = "127.0.0.1", .port = "11215",
                    .http_port = "11280", .label = "server", .key = "wsb",
                    .prefix = "wsp", .mode = WS_HANDOFF, .conns = 1,
                    .duration = 3, .warmup = 0.5 };
    int ch;
    while ((ch = getopt_long(argc, argv, "s:p:H:W:k:g:c:t:w:l:h", longs,
                             NULL)) != -1) {
        switch (ch) {
        case 's': o->host = optarg; break;
        case 'p': o->port = optarg; break;
        case 'H': o->http_port = optarg; break;
        case 'W':
            if (strcmp(optarg, "handoff") == 0)
                o->mode = WS_HANDOFF;
            else if (strcmp(optarg, "pairs") == 0)
                o->mode = WS_PAIRS;
            else {
                fprintf(stderr, "ws-bench: --workload: unknown workload "
                        "'%s'\n", optarg);
                exit(2);
            }
            break;
        case 'k': o->key = optarg; break;
        case 'g': o->prefix = optarg; break;
        case OPT_PROTO:
            if (strcmp(optarg, "ws") == 0)
                o->binary = false;
            else if (strcmp(optarg, "bin") == 0)
                o->binary = true;
            else {
                fprintf(stderr, "ws-bench: --proto: expected ws or bin, not "
                        "'%s'\n", optarg);
                exit(2);
            }
            break;
        case 'c': o->conns = bench_opt_uint("ws-bench", "--conns", optarg, 1,
                                            4096);
            break;
        case 't': o->duration = bench_opt_seconds("ws-bench", "--duration",
                                                  optarg);
            break;
        case 'w': o->warmup = bench_opt_seconds("ws-bench", "--warmup",
                                                optarg);
            break;
        case 'l': o->label = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "ws-bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    if (strlen(o->key) > 64 || strlen(o->prefix) > 32 ||
        strpbrk(o->key, "\"\\") != NULL || strpbrk(o->prefix, "\"\\") != NULL) {
        fprintf(stderr, "ws-bench: --key/--prefix: at most 64/32 bytes, no "
                "quote or backslash\n");
        exit(2);
    }
}

/* Writes all of buf[0, len) to the blocking connection. */
static bool ws_send_all(ws_conn *c, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "ws-bench: send: %s\n",
                    n < 0 ? strerror(errno) : "nothing sent");
            return false;
        }
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

/* Reads once more into c's buffer (unread bytes moved to its front);
 * false and a message on end of stream, a timeout or a full buffer. */
static bool ws_fill(ws_conn *c)
{
    if (c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->len == WS_IN_CAP) {
        fprintf(stderr, "ws-bench: a message over %u bytes\n", WS_IN_CAP);
        return false;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->len, WS_IN_CAP - c->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "ws-bench: %s\n",
                    n == 0 ? "connection closed by the server"
                    : errno == EAGAIN || errno == EWOULDBLOCK
                        ? "no answer in time" : strerror(errno));
            return false;
        }
        c->len += (size_t)n;
        return true;
    }
}

/* Closes c. */
static void ws_close(ws_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* Connects c to port (blocking, reads time out); false on failure. */
static bool ws_connect(ws_conn *c, const ws_opts *o, const char *port,
                       uint64_t seed)
{
    c->fd = bench_connect(o->host, port, false);
    c->off = c->len = 0;
    c->opaque = 1;
    c->rnd = seed | 1;
    if (c->fd < 0)
        return false;
    struct timeval tv = { .tv_sec = WS_RECV_TIMEOUT_S };
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return true;
}

/* Opens a quota session on c: connects to the HTTP port and upgrades
 * GET /quota; false and a message unless the answer is 101. */
static bool ws_open(ws_conn *c, const ws_opts *o, uint64_t seed)
{
    static const char req[] =
        "GET /quota HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n";
    if (!ws_connect(c, o, o->http_port, seed))
        return false;
    if (!ws_send_all(c, (const uint8_t *)req, sizeof req - 1))
        return false;
    for (;;) {
        void *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
        if (end != NULL) {
            if (c->len < 12 || memcmp(c->buf, "HTTP/1.1 101", 12) != 0) {
                fprintf(stderr, "ws-bench: the upgrade was answered %.*s\n",
                        (int)(c->len < 40 ? c->len : 40), (char *)c->buf);
                return false;
            }
            c->off = (size_t)((uint8_t *)end + 4 - c->buf);
            return true;
        }
        if (!ws_fill(c))
            return false;
    }
}

/* Sends the text message msg (under WS_MSG_MAX bytes) as one masked
 * frame, after the deferred one if any; with defer, keeps it to go with
 * the next message instead. */
static bool ws_send_text(ws_conn *c, const char *msg, size_t len, bool defer)
{
    uint8_t buf[2 * WS_FRAME_MAX];
    memcpy(buf, c->pend, c->plen);
    uint8_t *f = buf + c->plen;
    size_t h = 0;
    f[h++] = 0x81;
    if (len < 126) {
        f[h++] = (uint8_t)(0x80 | len);
    } else {
        f[h++] = 0x80 | 126;
        f[h++] = (uint8_t)(len >> 8);
        f[h++] = (uint8_t)len;
    }
    uint32_t mask = bench_rand(&c->rnd);
    uint8_t m[4] = { (uint8_t)(mask >> 24), (uint8_t)(mask >> 16),
                     (uint8_t)(mask >> 8), (uint8_t)mask };
    memcpy(f + h, m, 4);
    h += 4;
    for (size_t i = 0; i < len; i++)
        f[h + i] = (uint8_t)msg[i] ^ m[i & 3];
    if (defer) {
        memcpy(c->pend, f, h + len);
        c->plen = h + len;
        return true;
    }
    size_t total = c->plen + h + len;
    c->plen = 0;
    return ws_send_all(c, buf, total);
}

/* Waits for the next text message of the server on c and copies it,
 * NUL-terminated, to out (cap bytes); pings are answered. False and a
 * message on a close frame, a fragment or a broken connection. */
static bool ws_next(ws_conn *c, char *out, size_t cap)
{
    for (;;) {
        size_t avail = c->len - c->off;
        const uint8_t *p = c->buf + c->off;
        if (avail >= 2) {
            size_t h = 2;
            uint64_t len = p[1] & 0x7f;
            if (len == 126) {
                h = 4;
                len = avail >= 4 ? ((uint64_t)p[2] << 8 | p[3]) : 0;
            } else if (len == 127) {
                fprintf(stderr, "ws-bench: a frame over 64 KiB\n");
                return false;
            }
            if (avail >= h && avail - h >= len) {
                uint8_t op = p[0] & 0x0f;
                c->off += h + (size_t)len;
                if ((p[0] & 0x80) == 0 || (p[1] & 0x80) != 0) {
                    fprintf(stderr, "ws-bench: a fragmented or masked server "
                            "frame\n");
                    return false;
                }
                if (op == 0x9) {
                    uint8_t pong[2 + 4 + 125] = { 0x8a, (uint8_t)(0x80 | len) };
                    memset(pong + 2, 0, 4);
                    memcpy(pong + 6, p + h, (size_t)len);
                    if (!ws_send_all(c, pong, 6 + (size_t)len))
                        return false;
                    continue;
                }
                if (op == 0xa)
                    continue;
                if (op != 0x1) {
                    fprintf(stderr, "ws-bench: server frame of opcode 0x%x\n",
                            op);
                    return false;
                }
                if (len >= cap) {
                    fprintf(stderr, "ws-bench: a message of %" PRIu64
                            " bytes\n", len);
                    return false;
                }
                memcpy(out, p + h, (size_t)len);
                out[len] = '\0';
                return true;
            }
        }
        if (!ws_fill(c))
            return false;
    }
}

/* True when the message msg is named name. */
static bool ws_is(const char *msg, const char *name)
{
    size_t n = strlen(name);
    return msg[0] == '[' && msg[1] == '"' && strncmp(msg + 2, name, n) == 0 &&
           msg[2 + n] == '"';
}

/* Sends a quota_request of key on c and reads its result ("ok"). */
static bool ws_request(ws_conn *c, const char *key)
{
    char msg[WS_MSG_MAX], in[WS_IN_CAP];
    int n = snprintf(msg, sizeof msg, "[\"quota_request\",{\"qid\":%" PRIu32
                     ",\"key\":\"%s\",\"timeout\":%u}]", c->opaque++, key,
                     WS_WAIT_LONG_S);
    if (n < 0 || (size_t)n >= sizeof msg ||
        !ws_send_text(c, msg, (size_t)n, false))
        return false;
    if (!ws_next(c, in, sizeof in))
        return false;
    if (!ws_is(in, "quota_request_result") ||
        strstr(in, "\"result\":\"ok\"") == NULL) {
        fprintf(stderr, "ws-bench: quota_request of %s answered %s\n", key,
                in);
        return false;
    }
    return true;
}

/* Reads the next message on c and checks it is quota_passed. */
static bool ws_passed(ws_conn *c, const char *key)
{
    char in[WS_IN_CAP];
    if (!ws_next(c, in, sizeof in))
        return false;
    if (!ws_is(in, "quota_passed")) {
        fprintf(stderr, "ws-bench: expected quota_passed of %s, got %s\n",
                key, in);
        return false;
    }
    return true;
}

/* Sends a quota_release of key on c (it has no answer); with defer, it
 * leaves with the next message. */
static bool ws_release(ws_conn *c, const char *key, bool defer)
{
    char msg[WS_MSG_MAX];
    int n = snprintf(msg, sizeof msg, "[\"quota_release\",{\"qid\":%" PRIu32
                     ",\"key\":\"%s\"}]", c->opaque++, key);
    return n > 0 && (size_t)n < sizeof msg &&
           ws_send_text(c, msg, (size_t)n, defer);
}

/* Waits for the next binary packet on c. */
static bool bin_next(ws_conn *c, cnt_response *res)
{
    for (;;) {
        cnt_decode_result r = cnt_response_decode(c->buf + c->off,
                                                  c->len - c->off, res);
        if (r == CNT_DECODE_OK) {
            c->off += res->size;
            return true;
        }
        if (r == CNT_DECODE_CLOSE) {
            fprintf(stderr, "ws-bench: not a counter server's answer\n");
            return false;
        }
        if (!ws_fill(c))
            return false;
    }
}

/* Reads the next binary packet and checks it is the OK answer to the
 * request with this opcode and opaque. */
static bool bin_answer(ws_conn *c, uint8_t opcode, uint32_t opaque,
                       cnt_response *res)
{
    if (!bin_next(c, res))
        return false;
    if (cnt_response_is_event(res) || res->opcode != opcode ||
        res->opaque != opaque || res->status != CNT_STATUS_OK) {
        fprintf(stderr, "ws-bench: expected an OK answer to opcode 0x%02x, "
                "got opcode 0x%02x status 0x%02x\n", opcode, res->opcode,
                res->status);
        return false;
    }
    return true;
}

/* Reads the answer to a wait_acquire; *state is its CNT_WAIT_ state. */
static bool bin_acquire_answer(ws_conn *c, uint32_t opaque, int *state)
{
    cnt_response res;
    cnt_wait_answer ans;
    if (!bin_answer(c, CNT_OP_WAIT_ACQUIRE, opaque, &res))
        return false;
    if (!cnt_parse_wait_answer(&res, &ans)) {
        fprintf(stderr, "ws-bench: malformed wait_acquire answer\n");
        return false;
    }
    *state = (int)ans.state;
    return true;
}

/* Reads the next packet and checks it is the granted event of opaque. */
static bool bin_granted(ws_conn *c, uint32_t opaque)
{
    cnt_response res;
    cnt_event_packet ev;
    if (!bin_next(c, &res))
        return false;
    if (!cnt_parse_event(&res, &ev) || res.opaque != opaque ||
        ev.code != CNT_EVENT_GRANTED) {
        fprintf(stderr, "ws-bench: expected the granted event of opaque %"
                PRIu32 ", got opcode 0x%02x opaque %" PRIu32 "\n", opaque,
                res.opcode, res.opaque);
        return false;
    }
    return true;
}

/* ---- hand-off ---- */

/* One WebSocket hand-off round: w requests (and is queued), h releases,
 * w's quota_passed arrives; *ns is the time from the release's send. */
static bool ws_round(ws_conn *h, ws_conn *w, const char *key, uint64_t *ns)
{
    if (!ws_request(w, key))
        return false;
    uint64_t t0 = bench_now_ns();
    if (!ws_release(h, key, false) || !ws_passed(w, key))
        return false;
    *ns = bench_now_ns() - t0;
    return true;
}

/* One binary hand-off round on name, as wait-bench's. */
static bool bin_round(ws_conn *h, ws_conn *w, const char *name, uint64_t *ns)
{
    uint8_t req[WS_REQ_MAX];
    int state;
    uint32_t wop = w->opaque++, hop = h->opaque++;
    if (!ws_send_all(w, req, cnt_encode_wait_acquire(req, wop, 1, 1,
                                                     WS_WAIT_LONG_MS, 0, name,
                                                     BENCH_NAME_LEN)) ||
        !bin_acquire_answer(w, wop, &state))
        return false;
    if (state != CNT_WAIT_QUEUED) {
        fprintf(stderr, "ws-bench: handoff: the binary waiter was not "
                "queued\n");
        return false;
    }
    size_t n = cnt_encode_wait_release(req, hop, name, BENCH_NAME_LEN);
    uint64_t t0 = bench_now_ns();
    if (!ws_send_all(h, req, n) || !bin_granted(w, wop))
        return false;
    *ns = bench_now_ns() - t0;
    cnt_response res;
    return bin_answer(h, CNT_OP_WAIT_RELEASE, hop, &res);
}

/* Microseconds of quantile q of h (recorded in ns). */
static double us(const cnt_hist *h, double q)
{
    return (double)cnt_hist_quantile(h, q) / 1e3;
}

/* Alternates WebSocket and binary hand-off rounds for the run's time;
 * prints both distributions. */
static int run_handoff(const ws_opts *o)
{
    ws_conn *c = calloc(4, sizeof *c);
    cnt_hist *h = calloc(2, sizeof *h), *hws = h, *hbin = h + 1;
    char name[BENCH_NAME_LEN];
    int status = 1;
    if (c == NULL || h == NULL) {
        fprintf(stderr, "ws-bench: out of memory\n");
        goto out;
    }
    for (int i = 0; i < 4; i++)
        c[i].fd = -1;
    /* Opened one after the other, so each pair's two ends land on
     * different workers, as in wait-bench. */
    if (!ws_open(&c[0], o, 11) || !ws_open(&c[1], o, 12) ||
        !ws_connect(&c[2], o, o->port, 13) || !ws_connect(&c[3], o, o->port, 14))
        goto out;
    bench_name(name, "wsbh", (uint32_t)getpid());
    uint8_t req[WS_REQ_MAX];
    int state;
    uint32_t op = c[2].opaque++;
    if (!ws_request(&c[0], o->key) || !ws_passed(&c[0], o->key) ||
        !ws_send_all(&c[2], req, cnt_encode_wait_acquire(req, op, 1, 1, 0, 0,
                                                         name,
                                                         BENCH_NAME_LEN)) ||
        !bin_acquire_answer(&c[2], op, &state))
        goto out;
    if (state != CNT_WAIT_GRANTED) {
        fprintf(stderr, "ws-bench: handoff: the first binary grant was "
                "queued\n");
        goto out;
    }
    uint64_t measure = bench_now_ns() + (uint64_t)(o->warmup * 1e9);
    uint64_t end = measure + (uint64_t)(o->duration * 1e9);
    unsigned holder = 0;
    uint64_t now;
    while ((now = bench_now_ns()) < end) {
        uint64_t dws, dbin;
        if (!ws_round(&c[holder], &c[1 - holder], o->key, &dws) ||
            !bin_round(&c[2 + holder], &c[3 - holder], name, &dbin))
            goto out;
        if (now >= measure) {
            cnt_hist_record(hws, dws);
            cnt_hist_record(hbin, dbin);
        }
        holder = 1 - holder;
    }
    if (hws->count == 0) {
        fprintf(stderr, "ws-bench: handoff: no round measured\n");
        goto out;
    }
    printf("server=%s workload=ws-handoff rounds=%" PRIu64 " seconds=%.2f "
           "ws_p50_us=%.1f ws_p99_us=%.1f ws_max_us=%.1f bin_p50_us=%.1f "
           "bin_p99_us=%.1f bin_max_us=%.1f p50_ratio=%.2f\n", o->label,
           hws->count, o->duration, us(hws, 0.5), us(hws, 0.99),
           (double)hws->max / 1e3, us(hbin, 0.5), us(hbin, 0.99),
           (double)hbin->max / 1e3,
           us(hbin, 0.5) > 0 ? us(hws, 0.5) / us(hbin, 0.5) : 0);
    status = 0;
out:
    for (int i = 0; c != NULL && i < 4; i++)
        ws_close(&c[i]);
    free(c);
    free(h);
    return status;
}

/* ---- pairs ---- */

/* One connection of the pair workload, with its own thread and key. */
typedef struct ws_client {
    pthread_t tid;
    const ws_opts *o;
    unsigned index;
    ws_conn conn;
    uint64_t pairs;         /* completed while measuring */
    bool failed;
} ws_client;

/* WebSocket pairs on the key PREFIXi until the run stops: the release
 * leaves with the next request, as the binary pairs' does. */
static bool pairs_ws(ws_client *cl)
{
    char key[80];
    snprintf(key, sizeof key, "%s%u", cl->o->prefix, cl->index);
    while (atomic_load(&ws_phase) != WS_STOP) {
        if (!ws_request(&cl->conn, key) || !ws_passed(&cl->conn, key) ||
            !ws_release(&cl->conn, key, true))
            return false;
        if (atomic_load(&ws_phase) == WS_MEASURE)
            cl->pairs++;
    }
    return true;
}

/* Binary pairs on a name of its own: the wait_release goes with the next
 * wait_acquire, one round trip per pair as through WebSocket. */
static bool pairs_bin(ws_client *cl)
{
    ws_conn *c = &cl->conn;
    char name[BENCH_NAME_LEN];
    uint8_t req[2 * WS_REQ_MAX];
    bench_name(name, "wsbp", cl->index);
    uint32_t rop = 0;
    while (atomic_load(&ws_phase) != WS_STOP) {
        size_t n = 0;
        if (rop != 0)
            n = cnt_encode_wait_release(req, rop, name, BENCH_NAME_LEN);
        uint32_t aop = c->opaque++;
        n += cnt_encode_wait_acquire(req + n, aop, 1, 1, 0, 0, name,
                                     BENCH_NAME_LEN);
        cnt_response res;
        int state;
        if (!ws_send_all(c, req, n) ||
            (rop != 0 && !bin_answer(c, CNT_OP_WAIT_RELEASE, rop, &res)) ||
            !bin_acquire_answer(c, aop, &state))
            return false;
        if (state != CNT_WAIT_GRANTED) {
            fprintf(stderr, "ws-bench: pairs: %.*s was not granted at once\n",
                    BENCH_NAME_LEN, name);
            return false;
        }
        rop = c->opaque++;
        if (atomic_load(&ws_phase) == WS_MEASURE)
            cl->pairs++;
    }
    return true;
}

/* Thread body of a pair client. */
static void *client_main(void *arg)
{
    ws_client *cl = arg;
    if (!(cl->o->binary ? pairs_bin(cl) : pairs_ws(cl)))
        cl->failed = true;
    return NULL;
}

/* Runs o->conns pair clients for the warm-up and the measured time;
 * prints the pairs per second. */
static int run_pairs(const ws_opts *o)
{
    ws_client *cl = calloc(o->conns, sizeof *cl);
    unsigned opened = 0, started = 0, failed = 0;
    uint64_t pairs = 0;
    int status = 1;
    if (cl == NULL) {
        fprintf(stderr, "ws-bench: out of memory\n");
        return 1;
    }
    for (; opened < o->conns; opened++) {
        ws_client *c = &cl[opened];
        *c = (ws_client){ .o = o, .index = opened };
        c->conn.fd = -1;
        if (!(o->binary ? ws_connect(&c->conn, o, o->port, opened + 1)
                        : ws_open(&c->conn, o, opened + 1))) {
            opened++;
            goto out;
        }
    }
    atomic_store(&ws_phase, WS_WARMUP);
    for (; started < o->conns; started++)
        if (pthread_create(&cl[started].tid, NULL, client_main,
                           &cl[started]) != 0) {
            fprintf(stderr, "ws-bench: cannot start a thread\n");
            break;
        }
    bench_sleep(o->warmup);
    atomic_store(&ws_phase, WS_MEASURE);
    uint64_t t0 = bench_now_ns();
    bench_sleep(o->duration);
    atomic_store(&ws_phase, WS_STOP);
    double seconds = (double)(bench_now_ns() - t0) / 1e9;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(cl[i].tid, NULL);
        pairs += cl[i].pairs;
        failed += cl[i].failed;
    }
    printf("server=%s workload=ws-pairs proto=%s conns=%u seconds=%.2f "
           "pairs=%" PRIu64 " pairs_s=%.1f failures=%u\n", o->label,
           o->binary ? "bin" : "ws", o->conns, seconds, pairs,
           (double)pairs / seconds, failed);
    status = failed == 0 && started == o->conns && pairs > 0 ? 0 : 1;
out:
    while (opened > 0)
        ws_close(&cl[--opened].conn);
    free(cl);
    return status;
}

/* Parses the options and runs the chosen workload. */
int main(int argc, char **argv)
{
    ws_opts o;
    parse_options(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    return o.mode == WS_HANDOFF ? run_handoff(&o) : run_pairs(&o);
}
