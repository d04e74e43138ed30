/* fuzz_decode.c: libFuzzer target for the codec. Plays a server connection
 * (chunks appended to a CNT_REQUEST_MAX buffer, decoded, consumed or skipped)
 * twice with different chunkings, which must decode alike. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Besides the server-side decoder, the client-side decoders (responses
 * and events, Dump and Queues records, Stats pairs, the extension answers:
 * waits, TTL records, checks, Multi_check answers, throttle answers,
 * tenant views and list records, node views) read the same bytes:
 * counterctl and the tests rely on them against a server that may be
 * wrong. A decoded Multi_check is walked item by item, as the server
 * does. */

/* A simulated connection: the server's input buffer and its skip count. */
typedef struct sim_conn {
    uint8_t buf[CNT_REQUEST_MAX];
    size_t len;             /* bytes buffered */
    uint64_t skip;          /* bytes of a declared body still to discard */
    bool closed;            /* the decoder asked to close */
    uint64_t events;        /* requests and errors decoded */
    uint64_t digest;        /* FNV-1a over everything decoded, in order */
} sim_conn;

static sim_conn sim_a, sim_b;

/* Folds n bytes into an FNV-1a digest. */
static void digest_bytes(uint64_t *d, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        *d ^= b[i];
        *d *= 0x100000001b3ull;
    }
}

/* Folds one decoding step into the connection's digest, field by field
 * (not the struct: padding bytes are undefined). */
static void digest_step(sim_conn *c, cnt_decode_result r,
                        const cnt_request *req)
{
    uint64_t f[29] = { r, req->opcode, req->opaque, req->body_len,
                       req->size, req->resources, req->maximum,
                       req->wait_ms, req->lease_ms, req->name_len,
                       req->status, req->quota, req->ttl, req->period_ns,
                       req->limit, req->count, req->cost, req->flags,
                       req->slots, req->unit, req->attribute, req->change,
                       req->item_count, req->items_len, req->units,
                       req->reserved, req->hard_limit, req->capacity,
                       req->secret_len };
    digest_bytes(&c->digest, f, sizeof f);
    if (req->name != NULL)
        digest_bytes(&c->digest, req->name, req->name_len);
    if (req->secret != NULL)
        digest_bytes(&c->digest, req->secret, req->secret_len);
    if (req->items != NULL)
        digest_bytes(&c->digest, req->items, req->items_len);
    c->events++;
}

/* Drops size bytes from the front of the stream: what is buffered now, and
 * the rest later as it arrives (never stored). */
static void sim_consume(sim_conn *c, uint64_t size)
{
    if (size <= c->len) {
        memmove(c->buf, c->buf + size, c->len - (size_t)size);
        c->len -= (size_t)size;
    } else {
        c->skip = size - c->len;
        c->len = 0;
    }
}

/* Checks a name field: inside the request's buffered bytes, where the wire
 * layout puts it, with the length the body declares. */
static void check_name(const sim_conn *c, const cnt_request *req,
                       size_t fixed)
{
    const uint8_t *name = c->buf + CNT_HEADER_SIZE + fixed;
    FUZZ_CHECK(req->size <= c->len);
    FUZZ_CHECK(req->name_len >= 1);
    FUZZ_CHECK(req->name == name);
    FUZZ_CHECK(req->name_len == cnt_get_u16(name - 2));
    FUZZ_CHECK(fixed + req->name_len <= req->body_len);
}

/* Tells whether a window shape is one the decoder may accept (defaults
 * applied, as doc/protocol.md says). */
static bool window_shape_ok(uint8_t slots, uint64_t window_ns)
{
    uint64_t n = slots ? slots : 10;
    uint64_t w = window_ns ? window_ns : 1000000000ull;
    return n <= 64 && w % n == 0 && w / n >= 1000;
}

/* Checks the fields of a Window_check or Gcra_check body at body against
 * its bytes and the rules, and its conversion to the core's arguments. */
static void check_check_fields(const cnt_request *req, const uint8_t *body)
{
    cnt_check_request args;
    FUZZ_CHECK(cnt_request_check_args(req, &args));
    FUZZ_CHECK(args.opcode == req->opcode && args.name == req->name &&
               args.name_len == req->name_len);
    FUZZ_CHECK(args.peek == ((req->flags & 1) != 0));
    FUZZ_CHECK(args.limit_or_burst == req->limit && args.cost == req->cost &&
               args.count == req->count && args.slots == req->slots &&
               args.period_ns == req->period_ns);
    FUZZ_CHECK((req->flags & ~1u) == 0 && req->flags == body[0]);
    FUZZ_CHECK(req->cost >= 1);
    if (req->opcode == CNT_OP_WINDOW_CHECK) {
        FUZZ_CHECK(req->slots == body[1]);
        FUZZ_CHECK(req->limit == cnt_get_u32(body + 4));
        FUZZ_CHECK(req->cost == cnt_get_u32(body + 8));
        FUZZ_CHECK(req->period_ns == cnt_get_u64(body + 12));
        FUZZ_CHECK(req->count == 0);
        FUZZ_CHECK(window_shape_ok(req->slots, req->period_ns));
    } else {
        FUZZ_CHECK(req->limit == cnt_get_u32(body + 4));
        FUZZ_CHECK(req->count == cnt_get_u32(body + 8));
        FUZZ_CHECK(req->cost == cnt_get_u32(body + 12));
        FUZZ_CHECK(req->period_ns == cnt_get_u64(body + 16));
        FUZZ_CHECK(req->slots == 0);
        FUZZ_CHECK(req->count >= 1 && req->period_ns >= 1);
    }
}

/* Walks a valid Multi_check as the server does: exactly item_count items,
 * each a valid check inside the items, the last ending the body, no two
 * of one kind with one name; the walk stops there. */
static void check_multi(const cnt_request *req, const uint8_t *body)
{
    cnt_check_request it[CNT_MULTI_MAX + 1];
    size_t pos = 0, n = 0;

    FUZZ_CHECK(req->flags == body[0] && (req->flags & ~1u) == 0);
    FUZZ_CHECK(req->item_count == body[1]);
    FUZZ_CHECK(req->item_count >= 1 && req->item_count <= CNT_MULTI_MAX);
    FUZZ_CHECK(req->items == body + 2 && req->items_len == req->body_len - 2);
    FUZZ_CHECK(req->name == NULL && req->name_len == 0);
    while (n <= CNT_MULTI_MAX && cnt_multi_item_next(req, &pos, &it[n])) {
        const cnt_check_request *a = &it[n];
        const uint8_t *ibody = a->name - (a->opcode == CNT_OP_WINDOW_CHECK
                                          ? 22 : 26);
        FUZZ_CHECK(pos <= req->items_len);
        FUZZ_CHECK(ibody >= req->items + 3 && a->name_len >= 1 &&
                   a->name + a->name_len <= req->items + pos);
        FUZZ_CHECK(ibody[0] == 0 && ibody[-3] == a->opcode);
        FUZZ_CHECK(a->peek == ((req->flags & 1) != 0));
        FUZZ_CHECK(a->cost >= 1);
        if (a->opcode == CNT_OP_WINDOW_CHECK)
            FUZZ_CHECK(window_shape_ok(a->slots, a->period_ns) &&
                       a->count == 0);
        else
            FUZZ_CHECK(a->opcode == CNT_OP_GCRA_CHECK && a->count >= 1 &&
                       a->period_ns >= 1 && a->slots == 0);
        for (size_t j = 0; j < n; j++)
            FUZZ_CHECK(it[j].opcode != a->opcode ||
                       it[j].name_len != a->name_len ||
                       memcmp(it[j].name, a->name, a->name_len) != 0);
        n++;
    }
    FUZZ_CHECK(n == req->item_count && pos == req->items_len);
}

/* Checks that a request has none of the rate-limit fields (Auth_user
 * has flags of its own: only the defined ones). */
static void check_no_limit_fields(const cnt_request *req)
{
    FUZZ_CHECK(req->quota == 0 && req->ttl == 0 && req->period_ns == 0);
    FUZZ_CHECK(req->limit == 0 && req->count == 0 && req->cost == 0);
    if (req->opcode == CNT_OP_AUTH_USER)
        FUZZ_CHECK((req->flags & ~CNT_AUTH_FLAGS_ALL) == 0);
    else
        FUZZ_CHECK(req->flags == 0);
    FUZZ_CHECK(req->slots == 0 && req->unit == 0);
    FUZZ_CHECK(req->attribute == 0 && req->change == 0);
    FUZZ_CHECK(req->item_count == 0 && req->items == NULL &&
               req->items_len == 0);
}

/* Checks that a request has none of the throttling fields. */
static void check_no_throttle_fields(const cnt_request *req)
{
    FUZZ_CHECK(req->units == 0 && req->reserved == 0 &&
               req->hard_limit == 0 && req->capacity == 0);
    FUZZ_CHECK(req->secret == NULL && req->secret_len == 0);
}

/* Tells whether an opcode is one of tenant throttling's. */
static bool is_throttle_opcode(uint8_t op)
{
    return op >= CNT_OP_AUTH && op <= CNT_OP_AUTH_USER;
}

/* Checks a valid request against the raw header and body bytes. */
static void check_request(const sim_conn *c, const cnt_request *req)
{
    const uint8_t *b = c->buf;
    const uint8_t *body = b + CNT_HEADER_SIZE;
    cnt_check_request args;
    size_t pos = 0;

    FUZZ_CHECK(b[CNT_OFF_MAGIC] == CNT_MAGIC_REQUEST);
    FUZZ_CHECK(req->magic == CNT_MAGIC_REQUEST);
    FUZZ_CHECK(req->opcode == b[CNT_OFF_OPCODE]);
    FUZZ_CHECK(req->status == CNT_STATUS_OK);
    /* Only Wait_acquire and Renew have these fields. */
    if (req->opcode != CNT_OP_WAIT_ACQUIRE)
        FUZZ_CHECK(req->wait_ms == 0);
    if (req->opcode != CNT_OP_WAIT_ACQUIRE && req->opcode != CNT_OP_RENEW)
        FUZZ_CHECK(req->lease_ms == 0);
    /* Only the rate limits have theirs; only the checks convert to the
     * core's arguments, only a Multi_check has items to walk. */
    if ((req->opcode < CNT_OP_TTL_INSERT ||
         req->opcode > CNT_OP_MULTI_CHECK) &&
        req->opcode != CNT_OP_TENANT_SET && req->opcode != CNT_OP_LEASE_LIST &&
        req->opcode != CNT_OP_BUSIEST)
        check_no_limit_fields(req);
    /* Only tenant throttling has its fields; only Auth has a secret. */
    if (!is_throttle_opcode(req->opcode))
        check_no_throttle_fields(req);
    if (req->opcode != CNT_OP_AUTH && req->opcode != CNT_OP_AUTH_USER)
        FUZZ_CHECK(req->secret == NULL && req->secret_len == 0);
    /* Only the two JSON commands have a document. */
    if (req->opcode != CNT_OP_TENANT_SET_JSON &&
        req->opcode != CNT_OP_NODE_SET_JSON)
        FUZZ_CHECK(req->doc == NULL && req->doc_len == 0);
    if (is_throttle_opcode(req->opcode))
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
    if (req->opcode != CNT_OP_WINDOW_CHECK &&
        req->opcode != CNT_OP_GCRA_CHECK)
        FUZZ_CHECK(!cnt_request_check_args(req, &args));
    if (req->opcode != CNT_OP_MULTI_CHECK)
        FUZZ_CHECK(!cnt_multi_item_next(req, &pos, &args) && pos == 0);
    if (req->opcode >= CNT_OP_TTL_INSERT && req->opcode <= CNT_OP_MULTI_CHECK)
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
    switch (req->opcode) {
    case CNT_OP_NOOP: case CNT_OP_STATS: case CNT_OP_DUMP:
    case CNT_OP_QUEUES:
        /* Their bodies are skipped, so they may not be buffered yet. */
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_GET:
        check_name(c, req, 2);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_ACQUIRE:
        check_name(c, req, 10);
        FUZZ_CHECK(req->resources == cnt_get_u32(body));
        FUZZ_CHECK(req->maximum == cnt_get_u32(body + 4));
        FUZZ_CHECK(req->resources >= 1 && req->maximum >= req->resources);
        break;
    case CNT_OP_RELEASE:
        check_name(c, req, 6);
        FUZZ_CHECK(req->resources == cnt_get_u32(body));
        FUZZ_CHECK(req->maximum == 0);
        break;
    case CNT_OP_WAIT_ACQUIRE:
        /* Any maximum: one below resources is the server's answer. */
        check_name(c, req, 18);
        FUZZ_CHECK(req->resources == cnt_get_u32(body));
        FUZZ_CHECK(req->maximum == cnt_get_u32(body + 4));
        FUZZ_CHECK(req->wait_ms == cnt_get_u32(body + 8));
        FUZZ_CHECK(req->lease_ms == cnt_get_u32(body + 12));
        FUZZ_CHECK(req->resources >= 1);
        break;
    case CNT_OP_RENEW:
        check_name(c, req, 6);
        FUZZ_CHECK(req->lease_ms == cnt_get_u32(body));
        FUZZ_CHECK(req->lease_ms >= 1);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_WAIT_RELEASE:
        check_name(c, req, 2);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_TTL_INSERT:
        check_name(c, req, 19);
        FUZZ_CHECK(req->quota == cnt_get_u64(body));
        FUZZ_CHECK(req->ttl == cnt_get_u64(body + 8));
        FUZZ_CHECK(req->unit == body[16] && req->unit <= CNT_UNIT_MAX);
        FUZZ_CHECK(req->ttl >= 1 &&
                   req->ttl <= UINT64_MAX / cnt_unit_ns(req->unit));
        FUZZ_CHECK(req->period_ns == 0 && req->cost == 0 &&
                   req->attribute == 0 && req->items == NULL);
        break;
    case CNT_OP_TTL_QUERY:
    case CNT_OP_TTL_PURGE:
        check_name(c, req, 2);
        check_no_limit_fields(req);
        break;
    case CNT_OP_TTL_UPDATE:
        check_name(c, req, 13);
        FUZZ_CHECK(req->attribute == body[0] && req->change == body[1] &&
                   req->unit == body[2]);
        FUZZ_CHECK(req->value == cnt_get_u64(body + 3));
        FUZZ_CHECK(req->attribute <= CNT_TTL_ATTR_TTL &&
                   req->change <= CNT_TTL_DECREASE &&
                   req->unit <= CNT_UNIT_MAX);
        FUZZ_CHECK(!(req->attribute == CNT_TTL_ATTR_TTL &&
                     req->change == CNT_TTL_PATCH && req->value == 0));
        FUZZ_CHECK(req->ttl == 0 && req->cost == 0 && req->items == NULL);
        break;
    case CNT_OP_WINDOW_CHECK:
        check_name(c, req, 22);
        check_check_fields(req, body);
        FUZZ_CHECK(req->quota == 0 && req->ttl == 0 && req->items == NULL);
        break;
    case CNT_OP_GCRA_CHECK:
        check_name(c, req, 26);
        check_check_fields(req, body);
        FUZZ_CHECK(req->quota == 0 && req->ttl == 0 && req->items == NULL);
        break;
    case CNT_OP_MULTI_CHECK:
        FUZZ_CHECK(req->size <= c->len);
        check_multi(req, body);
        FUZZ_CHECK(req->quota == 0 && req->cost == 0 && req->limit == 0);
        break;
    case CNT_OP_AUTH:
        /* The secret is read like a name, and is never the name. */
        FUZZ_CHECK(req->size <= c->len);
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        FUZZ_CHECK(req->secret_len >= 1 &&
                   req->secret_len == cnt_get_u16(body));
        FUZZ_CHECK(req->secret == body + 2 &&
                   2 + (size_t)req->secret_len <= req->body_len);
        FUZZ_CHECK(req->units == 0 && req->reserved == 0 &&
                   req->hard_limit == 0 && req->capacity == 0);
        break;
    case CNT_OP_AUTH_USER:
        /* The user is the name; the secret follows it, never empty. */
        FUZZ_CHECK(req->size <= c->len);
        FUZZ_CHECK(req->flags == body[CNT_AUSER_OFF_FLAGS] &&
                   (req->flags & ~CNT_AUTH_FLAGS_ALL) == 0);
        FUZZ_CHECK(req->name_len >= 1 &&
                   req->name_len == cnt_get_u16(body + CNT_AUSER_OFF_NAMELEN) &&
                   req->name == body + CNT_AUSER_FIXED);
        FUZZ_CHECK(req->secret_len >= 1 &&
                   req->secret_len ==
                       cnt_get_u16(body + CNT_AUSER_OFF_SECRETLEN) &&
                   req->secret == req->name + req->name_len);
        FUZZ_CHECK(CNT_AUSER_FIXED + (size_t)req->name_len +
                   req->secret_len <= req->body_len);
        FUZZ_CHECK(req->units == 0 && req->reserved == 0 &&
                   req->hard_limit == 0 && req->capacity == 0);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_THROTTLE:
        check_name(c, req, 6);
        FUZZ_CHECK(req->units == cnt_get_u32(body) && req->units >= 1);
        FUZZ_CHECK(req->reserved == 0 && req->hard_limit == 0 &&
                   req->capacity == 0);
        break;
    case CNT_OP_TENANT_SHOW:
    case CNT_OP_TENANT_REMOVE:
        check_name(c, req, 2);
        check_no_throttle_fields(req);
        break;
    case CNT_OP_TENANT_LIST: case CNT_OP_NODE_SHOW:
    case CNT_OP_UNTHROTTLE: case CNT_OP_RELOAD:
        /* Bodies skipped, like Stats'. */
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        check_no_throttle_fields(req);
        break;
    case CNT_OP_TENANT_SET:
        check_name(c, req, 14);
        FUZZ_CHECK(req->flags == body[0]);
        FUZZ_CHECK(req->flags >= 1 &&
                   (req->flags & ~CNT_TENANT_SET_ALL) == 0);
        FUZZ_CHECK(req->reserved == cnt_get_u32(body + 4));
        FUZZ_CHECK(req->hard_limit == cnt_get_u32(body + 8));
        FUZZ_CHECK(req->units == 0 && req->capacity == 0);
        FUZZ_CHECK(req->quota == 0 && req->cost == 0 && req->limit == 0 &&
                   req->slots == 0 && req->items == NULL);
        break;
    case CNT_OP_TENANT_SET_JSON:
        /* The tenant, then the document to the end of the body. */
        check_name(c, req, 2);
        FUZZ_CHECK(req->doc == body + 2 + req->name_len);
        FUZZ_CHECK(req->doc_len == req->body_len - 2 - req->name_len &&
                   req->doc_len <= CNT_JSON_DOC_MAX);
        check_no_throttle_fields(req);
        check_no_limit_fields(req);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_NODE_SET_JSON:
        FUZZ_CHECK(req->size <= c->len);
        FUZZ_CHECK(req->doc == body && req->doc_len == req->body_len &&
                   req->doc_len <= CNT_JSON_DOC_MAX);
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        check_no_throttle_fields(req);
        check_no_limit_fields(req);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        break;
    case CNT_OP_NODE_SET:
        FUZZ_CHECK(req->size <= c->len && req->body_len >= 4);
        FUZZ_CHECK(req->capacity == cnt_get_u32(body));
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        FUZZ_CHECK(req->units == 0 && req->reserved == 0 &&
                   req->hard_limit == 0);
        break;
    case CNT_OP_LEASE_LIST:
        /* The count alone, never 0; whatever follows it is not read. */
        FUZZ_CHECK(req->size <= c->len && req->body_len >= CNT_LLIST_FIXED);
        FUZZ_CHECK(req->count == cnt_get_u32(body + CNT_LLIST_OFF_COUNT) &&
                   req->count >= 1);
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        FUZZ_CHECK(req->resources == 0 && req->maximum == 0);
        FUZZ_CHECK(req->quota == 0 && req->ttl == 0 && req->period_ns == 0 &&
                   req->limit == 0 && req->cost == 0 && req->flags == 0 &&
                   req->items == NULL);
        break;
    case CNT_OP_BUSIEST:
        /* A count and nothing else; any count is legal. */
        FUZZ_CHECK(req->size <= c->len && req->body_len >= 4);
        FUZZ_CHECK(req->count == cnt_get_u32(body));
        FUZZ_CHECK(req->name == NULL && req->name_len == 0);
        FUZZ_CHECK(req->quota == 0 && req->ttl == 0 && req->period_ns == 0 &&
                   req->limit == 0 && req->cost == 0 && req->flags == 0);
        check_no_throttle_fields(req);
        break;
    default:
        FUZZ_CHECK(!"unknown opcode decoded as a request");
    }
}

/* Encodes the error answer and reads it back with the client decoder. */
static void check_error(const cnt_request *req)
{
    uint8_t out[CNT_ERROR_RESPONSE_MAX];
    cnt_response res;
    const char *text = cnt_status_text(req->status);

    FUZZ_CHECK(req->status == CNT_STATUS_INVALID ||
               req->status == CNT_STATUS_UNKNOWN_COMMAND);
    FUZZ_CHECK(req->status != CNT_STATUS_UNKNOWN_COMMAND ||
               cnt_opcode_name(req->opcode) == NULL);
    FUZZ_CHECK(text != NULL);
    size_t n = cnt_encode_error(out, req->opcode, req->status, req->opaque);
    FUZZ_CHECK(n == CNT_HEADER_SIZE + strlen(text) && n <= sizeof out);
    FUZZ_CHECK(cnt_response_decode(out, n, &res) == CNT_DECODE_OK);
    FUZZ_CHECK(res.size == n && res.magic == CNT_MAGIC_RESPONSE);
    FUZZ_CHECK(res.opcode == req->opcode && res.opaque == req->opaque);
    FUZZ_CHECK(res.status == req->status);
    FUZZ_CHECK(memcmp(res.body, text, res.body_len) == 0);
}

/* Decodes everything the buffer holds, as the server's read callback does. */
static void sim_drain(sim_conn *c)
{
    for (;;) {
        cnt_request req;
        /* Garbage in every field: the decoder must set what it reports. */
        memset(&req, 0xa5, sizeof req);
        cnt_decode_result r = cnt_request_decode(c->buf, c->len, &req);
        switch (r) {
        case CNT_DECODE_NEED_MORE:
            FUZZ_CHECK(req.size > c->len && req.size <= CNT_REQUEST_MAX);
            return;
        case CNT_DECODE_OK:
            FUZZ_CHECK(req.size == CNT_HEADER_SIZE + (uint64_t)req.body_len);
            FUZZ_CHECK(req.body_len == cnt_get_u32(c->buf + CNT_OFF_BODYLEN));
            FUZZ_CHECK(req.opaque == cnt_get_u32(c->buf + CNT_OFF_OPAQUE));
            check_request(c, &req);
            digest_step(c, r, &req);
            sim_consume(c, req.size);
            break;
        case CNT_DECODE_ERROR:
            FUZZ_CHECK(c->len >= CNT_HEADER_SIZE);
            FUZZ_CHECK(req.size == CNT_HEADER_SIZE + (uint64_t)req.body_len);
            FUZZ_CHECK(req.body_len == cnt_get_u32(c->buf + CNT_OFF_BODYLEN));
            FUZZ_CHECK(req.opaque == cnt_get_u32(c->buf + CNT_OFF_OPAQUE));
            FUZZ_CHECK(req.opcode == c->buf[CNT_OFF_OPCODE]);
            check_error(&req);
            /* Not part of an error's contract. */
            req.name = NULL;
            req.secret = NULL;
            digest_step(c, r, &req);
            sim_consume(c, req.size);
            break;
        case CNT_DECODE_CLOSE:
            c->closed = true;
            c->events++;
            return;
        default:
            FUZZ_CHECK(!"unknown decode result");
        }
    }
}

/* Delivers one chunk as a read() would: skip, append what fits, decode. */
static void sim_feed(sim_conn *c, const uint8_t *p, size_t n)
{
    while (n > 0 && !c->closed) {
        if (c->skip > 0) {
            size_t k = c->skip < n ? (size_t)c->skip : n;
            c->skip -= k;
            p += k;
            n -= k;
            continue;
        }
        size_t room = sizeof c->buf - c->len;
        /* A full buffer with no decision would stall the connection. */
        FUZZ_CHECK(room > 0);
        size_t k = n < room ? n : room;
        memcpy(c->buf + c->len, p, k);
        c->len += k;
        p += k;
        n -= k;
        sim_drain(c);
    }
}

/* Resets a connection to its just-accepted state. */
static void sim_reset(sim_conn *c)
{
    c->len = 0;
    c->skip = 0;
    c->closed = false;
    c->events = 0;
    c->digest = 0xcbf29ce484222325ull;
}

/* Runs the client-side decoders over the same bytes (counterctl and the
 * tests read server output with them, and a server can be wrong). */
static void fuzz_client_side(const uint8_t *p, size_t n)
{
    cnt_response res;
    while (cnt_response_decode(p, n, &res) == CNT_DECODE_OK) {
        FUZZ_CHECK(res.size == CNT_HEADER_SIZE + (uint64_t)res.body_len);
        FUZZ_CHECK(res.size <= n && res.body == p + CNT_HEADER_SIZE);
        const uint8_t *body_end = res.body + res.body_len;
        cnt_dump_record rec;
        if (cnt_dump_record_parse(&res, &rec) && rec.name_len > 0)
            FUZZ_CHECK(rec.name >= res.body && rec.name + rec.name_len <=
                       body_end);
        cnt_queues_record qrec;
        if (cnt_parse_queues_record(&res, &qrec)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(qrec.name == res.body + CNT_QUEUES_FIXED &&
                       qrec.name + qrec.name_len <= body_end);
        }
        cnt_lease_record lrec;
        if (cnt_parse_lease_record(&res, &lrec)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(!cnt_response_is_lease_list_end(&res));
            FUZZ_CHECK(lrec.name == res.body + CNT_LREC_FIXED &&
                       lrec.name + lrec.name_len <= body_end);
        }
        cnt_busy_record brec;
        if (cnt_parse_busy_record(&res, &brec)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.opcode == CNT_OP_BUSIEST);
            FUZZ_CHECK(brec.name == res.body + CNT_BUSY_FIXED &&
                       brec.name + brec.name_len <= body_end);
            FUZZ_CHECK(brec.checks == cnt_get_u32(res.body) &&
                       brec.kind == res.body[CNT_BUSY_OFF_KIND]);
            FUZZ_CHECK(!cnt_response_is_busiest_end(&res));
        }
        if (cnt_response_is_busiest_end(&res))
            FUZZ_CHECK(res.opcode == CNT_OP_BUSIEST && res.body_len == 0 &&
                       !cnt_response_is_event(&res));
        cnt_event_packet ev;
        if (cnt_parse_event(&res, &ev)) {
            FUZZ_CHECK(cnt_response_is_event(&res));
            FUZZ_CHECK(ev.code == res.opcode);
            FUZZ_CHECK(ev.name == res.body + CNT_EVENT_FIXED &&
                       ev.name + ev.name_len <= body_end);
        }
        cnt_wait_answer ans;
        if (cnt_parse_wait_answer(&res, &ans)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.body_len >= CNT_WANS_FIXED);
            FUZZ_CHECK(ans.state == CNT_WAIT_GRANTED ||
                       ans.state == CNT_WAIT_QUEUED);
        }
        uint64_t lease_id;
        if (cnt_parse_renew_answer(&res, &lease_id))
            FUZZ_CHECK(res.body_len >= 8 && !cnt_response_is_event(&res));
        uint32_t returned;
        if (cnt_parse_wait_release_answer(&res, &returned))
            FUZZ_CHECK(res.body_len >= 4 && !cnt_response_is_event(&res));
        cnt_ttl_answer view;
        if (cnt_parse_ttl_view(&res, &view)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.body_len >= CNT_TTL_VIEW_SIZE &&
                       view.unit <= CNT_UNIT_MAX);
            FUZZ_CHECK(res.opcode == CNT_OP_TTL_QUERY ||
                       res.opcode == CNT_OP_TTL_UPDATE);
        }
        cnt_check_result check;
        if (cnt_parse_check_answer(&res, &check)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.body_len >= CNT_CHECK_ANSWER_SIZE &&
                       check.state <= CNT_CHECK_NEVER);
            FUZZ_CHECK(res.opcode == CNT_OP_WINDOW_CHECK ||
                       res.opcode == CNT_OP_GCRA_CHECK);
        }
        cnt_multi_answer multi;
        if (cnt_parse_multi_answer(&res, &multi)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(multi.count >= 1 && multi.count <= CNT_MULTI_MAX &&
                       multi.overall <= CNT_MULTI_DENIED);
            FUZZ_CHECK(multi.items == res.body + CNT_MANS_FIXED &&
                       multi.items + (size_t)multi.count *
                       CNT_CHECK_ANSWER_SIZE <= body_end);
            for (uint8_t i = 0; i < multi.count; i++) {
                FUZZ_CHECK(cnt_multi_answer_item(&multi, i, &check));
                FUZZ_CHECK(check.state <= CNT_CHECK_NEVER);
            }
            FUZZ_CHECK(!cnt_multi_answer_item(&multi, multi.count, &check));
        }
        cnt_throttle_answer thr;
        if (cnt_parse_throttle_answer(&res, &thr)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.opcode == CNT_OP_THROTTLE &&
                       res.body_len >= CNT_THROTTLE_ANSWER_SIZE);
            FUZZ_CHECK(thr.state <= CNT_TSTATE_THROTTLED &&
                       thr.reason <= CNT_TREASON_MAX);
            FUZZ_CHECK(cnt_treason_name(thr.reason) != NULL);
        }
        cnt_tenant_view tview;
        if (cnt_parse_tenant_view(&res, &tview)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.opcode == CNT_OP_TENANT_SHOW &&
                       res.body_len >= CNT_TENANT_VIEW_SIZE);
            FUZZ_CHECK(tview.flags == res.body[CNT_TVIEW_OFF_FLAGS]);
        }
        cnt_tenant_record trec;
        if (cnt_parse_tenant_record(&res, &trec)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.opcode == CNT_OP_TENANT_LIST);
            FUZZ_CHECK(trec.name == res.body + CNT_TREC_FIXED &&
                       trec.name + trec.name_len <= body_end);
            FUZZ_CHECK(!cnt_response_is_tenant_list_end(&res));
        }
        if (cnt_response_is_tenant_list_end(&res))
            FUZZ_CHECK(res.opcode == CNT_OP_TENANT_LIST &&
                       res.body_len == 0 && !cnt_response_is_event(&res));
        cnt_node_view nview;
        if (cnt_parse_node_view(&res, &nview)) {
            FUZZ_CHECK(!cnt_response_is_event(&res));
            FUZZ_CHECK(res.opcode == CNT_OP_NODE_SHOW &&
                       res.body_len >= CNT_NODE_VIEW_SIZE);
            FUZZ_CHECK(nview.capacity == cnt_get_u32(res.body));
        }
        size_t pos = 0;
        const char *name, *value;
        uint16_t nl, vl;
        while (cnt_stats_next(&res, &pos, &name, &nl, &value, &vl)) {
            const char *end = (const char *)res.body + res.body_len;
            FUZZ_CHECK(name >= (const char *)res.body && name + nl <= end);
            FUZZ_CHECK(value >= name + nl && value + vl <= end);
            FUZZ_CHECK(pos <= res.body_len);
        }
        p += res.size;
        n -= (size_t)res.size;
    }
}

/* A tiny xorshift generator: chunk sizes must be a function of the input. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Input: one seed byte for the chunking, then the byte stream. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t seed = 0x9e3779b9u ^ data[0];
    const uint8_t *stream = data + 1;
    size_t n = size - 1;

    sim_reset(&sim_a);
    for (size_t off = 0; off < n && !sim_a.closed;) {
        size_t chunk = 1 + next_rand(&seed) % (1u << (next_rand(&seed) % 12));
        if (chunk > n - off)
            chunk = n - off;
        sim_feed(&sim_a, stream + off, chunk);
        off += chunk;
    }
    sim_reset(&sim_b);
    sim_feed(&sim_b, stream, n);

    /* How bytes were split must not change what was decoded. */
    FUZZ_CHECK(sim_a.closed == sim_b.closed);
    FUZZ_CHECK(sim_a.events == sim_b.events);
    FUZZ_CHECK(sim_a.digest == sim_b.digest);
    if (!sim_a.closed)
        FUZZ_CHECK(sim_a.len == sim_b.len && sim_a.skip == sim_b.skip);

    fuzz_client_side(stream, n);
    return 0;
}
