/* text.c: mchost's memcache text commands: stats (general, settings, engine
 * sub-keys, items/slabs/sizes/reset), version, verbosity, quit, lru_crawler
 * metadump. Storage commands answer ERROR: mchost is not a cache. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "programs/mchost/api.h"
#include "programs/mchost/cookie.h"
#include "programs/mchost/core.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/stats.h"
#include "programs/mchost/stub_engine.h"
#include "programs/mchost/text.h"

#define MCH_MAX_TOKENS 24
#define MCH_MAX_DATA_BLOCK (1ULL << 31) /* larger "bytes" is a bad line */

/* Splits line at spaces; returns the number of tokens. */
static int tokenize(char *line, char *tokens[], int max)
{
    int n = 0;
    char *save = NULL;

    for (char *t = strtok_r(line, " ", &save); t != NULL && n < max;
         t = strtok_r(NULL, " ", &save))
        tokens[n++] = t;
    return n;
}

static void reply(struct evbuffer *out, const char *text)
{
    evbuffer_add_printf(out, "%s\r\n", text);
}

/* ADD_STAT for the engine: the cookie is the connection, which points at
 * the buffer collecting this get_stats call's lines. */
static void add_stat(const char *key, const uint16_t klen, const char *val,
                     const uint32_t vlen, const void *cookie)
{
    struct evbuffer *out;

    if (cookie == NULL)
        return;
    out = ((const struct mch_cookie *)cookie)->stats_out;
    if (out == NULL)
        return; /* called outside get_stats: nowhere to put it */

    if (key == NULL || klen == 0) {
        if (val != NULL && vlen > 0) { /* a raw line, as memcached allows */
            evbuffer_add(out, val, vlen);
            evbuffer_add(out, "\r\n", 2);
        }
        return;
    }
    evbuffer_add(out, "STAT ", 5);
    evbuffer_add(out, key, klen);
    evbuffer_add(out, " ", 1);
    if (val != NULL)
        evbuffer_add(out, val, vlen);
    evbuffer_add(out, "\r\n", 2);
}

/* Asks the engine (possibly wrapped by an extension) for key's lines.
 * Lines are collected apart so a failing engine's partial output is
 * dropped; the answers follow memcached's mapping of engine errors. */
static void stats_from_engine(struct evbuffer *out, const char *key,
                              struct evbuffer *head,
                              struct mch_cookie *cookie)
{
    struct evbuffer *lines = evbuffer_new();
    ENGINE_HANDLE_V1 *v1 = mch_engine_v1();
    ENGINE_ERROR_CODE r;

    if (lines == NULL) {
        reply(out, "SERVER_ERROR out of memory writing stats");
        return;
    }
    if (head != NULL)
        evbuffer_add_buffer(lines, head);
    cookie->stats_out = lines;
    r = v1->get_stats(mch_engine_get(), cookie, key,
                      key ? (int)strlen(key) : 0, add_stat);
    cookie->stats_out = NULL;
    switch (r) {
    case ENGINE_SUCCESS:
        evbuffer_add_buffer(out, lines);
        reply(out, "END");
        break;
    case ENGINE_ENOMEM:
        reply(out, "SERVER_ERROR out of memory writing stats");
        break;
    case ENGINE_ENOTSUP:
        reply(out, "SERVER_ERROR not supported");
        break;
    default:
        reply(out, "ERROR");
        break;
    }
    evbuffer_free(lines);
}

static void do_stats(struct evbuffer *out, int ntok, char *tok[],
                     struct mch_cookie *cookie)
{
    if (ntok == 1) {
        struct evbuffer *head = evbuffer_new();

        if (head == NULL) {
            reply(out, "SERVER_ERROR out of memory writing stats");
            return;
        }
        mch_stats_write_general(head);
        stats_from_engine(out, NULL, head, cookie);
        evbuffer_free(head);
    } else if (strcmp(tok[1], "settings") == 0) {
        mch_stats_write_settings(out);
        reply(out, "END");
    } else if (strcmp(tok[1], "reset") == 0) {
        mch_stats_reset();
        reply(out, "RESET");
    } else if (strcmp(tok[1], "items") == 0 || strcmp(tok[1], "slabs") == 0 ||
               strcmp(tok[1], "sizes") == 0) {
        reply(out, "END"); /* no items, no slabs: not a cache */
    } else {
        stats_from_engine(out, tok[1], NULL, cookie);
    }
}

static bool is_noreply(int ntok, char *tok[])
{
    return ntok > 0 && strcmp(tok[ntok - 1], "noreply") == 0;
}

static void do_verbosity(struct evbuffer *out, int ntok, char *tok[],
                         const void *cookie)
{
    unsigned long level;
    char *end;

    if (ntok < 2 || ntok > 3) {
        reply(out, "ERROR");
        return;
    }
    errno = 0;
    level = strtoul(tok[1], &end, 10);
    if (errno != 0 || end == tok[1] || *end != '\0') {
        reply(out, "CLIENT_ERROR bad command line format");
        return;
    }
    mch_logger_set_verbosity(level > 3 ? 3 : (int)level);
    mch_log(EXTENSION_LOG_INFO, "verbosity set to %d", mch_logger_verbosity());
    mch_api_perform_callbacks(ON_LOG_LEVEL, NULL, cookie);
    if (!is_noreply(ntok, tok))
        reply(out, "OK");
}

/* set/add/replace/append/prepend KEY FLAGS EXPTIME BYTES [noreply] and
 * cas KEY FLAGS EXPTIME BYTES CAS [noreply]: refuse, but skip the data
 * block so the stream stays in step. */
static void do_storage(struct evbuffer *out, int ntok, char *tok[],
                       uint64_t *swallow)
{
    bool cas = strcmp(tok[0], "cas") == 0;
    unsigned long long bytes;
    char *end;

    if (ntok < (cas ? 6 : 5) || ntok > (cas ? 7 : 6)) {
        reply(out, "ERROR");
        return;
    }
    errno = 0;
    bytes = strtoull(tok[4], &end, 10);
    if (errno != 0 || end == tok[4] || *end != '\0' || tok[4][0] == '-' ||
        bytes >= MCH_MAX_DATA_BLOCK) {
        reply(out, "CLIENT_ERROR bad command line format");
        return;
    }
    *swallow = bytes + 2; /* the block and its \r\n */
    reply(out, "ERROR");
}

static bool is_storage(const char *cmd)
{
    static const char *const names[] = { "set", "add", "replace", "append",
                                         "prepend", "cas" };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(cmd, names[i]) == 0)
            return true;
    return false;
}

/* Executes one command line; see text.h. */
enum mch_text_status mch_text_execute(char *line, struct evbuffer *out,
                                      struct mch_cookie *cookie,
                                      uint64_t *swallow)
{
    char *tok[MCH_MAX_TOKENS];
    int ntok = tokenize(line, tok, MCH_MAX_TOKENS);

    *swallow = 0;
    if (ntok == 0) {
        reply(out, "ERROR");
    } else if (strcmp(tok[0], "stats") == 0) {
        do_stats(out, ntok, tok, cookie);
    } else if (strcmp(tok[0], "version") == 0) {
        evbuffer_add_printf(out, "VERSION %s\r\n", mch_core_version());
    } else if (strcmp(tok[0], "verbosity") == 0) {
        do_verbosity(out, ntok, tok, cookie);
    } else if (strcmp(tok[0], "quit") == 0) {
        return MCH_TEXT_CLOSE;
    } else if (ntok >= 2 && strcmp(tok[0], "lru_crawler") == 0 &&
               strcmp(tok[1], "metadump") == 0) {
        reply(out, "END"); /* no items (memcached-tool dump and keys) */
    } else if (is_storage(tok[0])) {
        do_storage(out, ntok, tok, swallow);
    } else {
        reply(out, "ERROR"); /* get, delete, incr, ... and the unknown */
    }
    return MCH_TEXT_CONTINUE;
}
