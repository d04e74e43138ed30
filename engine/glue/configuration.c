/* configuration.c: parses the extension's settings from the -X string and
 * from the file counter.config names, reads the admin secret file and parses
 * the throttle settings file. Pure parsing: no sockets, no logging; every
 * error becomes one line that names the key first, then the value (never a
 * secret's content). */
#include "config.h"

#include "engine/glue/configuration.h"
#include "protocol/duration.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CNT_CONFIG_PREFIX "counter."
#define CNT_CONFIG_GROUP_PREFIX "counter.group."

/* A group's name is the counter name it applies to, capped at 255 bytes
 * (the wire allows longer counter names, but a group is a label someone
 * types into a settings file); its value lists max, wait and lease. */
#define CNT_GROUP_NAME_MAX 255u
#define CNT_GROUP_EXPECTED \
    "max:1..4294967295[,wait:DURATION][,lease:DURATION]"

/* A settings file is a few dozen short lines; anything far bigger is the
 * wrong file (/dev/zero, a log), refused before it can eat memory. */
#define CNT_CONFIG_FILE_MAX (1u << 20)
#define CNT_CONFIG_LINE_MAX 4096u

/* How much of a key, value or token an error quotes, so a huge value cannot
 * push the rest of the message out of the caller's buffer. */
#define CNT_CLIP_TEXT 64u
#define CNT_CLIP_PATH 128u
#define CNT_CLIP_BUF (CNT_CLIP_PATH + 4u)

/* Where a key/value pair came from, so file errors can name the line. */
typedef struct cnt_config_origin {
    const char *path;       /* NULL for the -X string */
    unsigned line;
} cnt_config_origin;

/* Applies one trimmed, unquoted key/value pair of a settings file or the
 * -X string to ctx (a cnt_config, or a throttle file being parsed). */
typedef bool (*config_apply_fn)(void *ctx, const char *key, const char *v,
                                char *err, size_t errlen,
                                const cnt_config_origin *origin);

/* Copies s[0..len) into out (CNT_CLIP_BUF bytes) for an error message: at
 * most max bytes, "..." marking a cut (at the end, or at the start when
 * keep_tail, since a path's end says most), control bytes shown as '?' so
 * the message stays one line. Returns out. */
static const char *config_clip(char *out, const char *s, size_t len,
                               size_t max, bool keep_tail)
{
    size_t n = len > max ? max : len;
    size_t at = 0;
    if (len > max && keep_tail) {
        memcpy(out, "...", 3);
        at = 3;
        s += len - n;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[at++] = iscntrl(ch) ? '?' : (char)ch;
    }
    if (len > max && !keep_tail) {
        memcpy(out + at, "...", 3);
        at += 3;
    }
    out[at] = '\0';
    return out;
}

/* Clips a NUL-terminated key or value for a message. */
static const char *config_clip_text(char *out, const char *s)
{
    return config_clip(out, s, strlen(s), CNT_CLIP_TEXT, false);
}

/* Clips a file path for a message, keeping its end. */
static const char *config_clip_path(char *out, const char *path)
{
    return config_clip(out, path, strlen(path), CNT_CLIP_PATH, true);
}

/* Writes one error line into err: "counter: ", the file position if any,
 * then the message (whose key and value the caller has clipped). */
static bool config_error(char *err, size_t errlen,
                         const cnt_config_origin *origin, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool config_error(char *err, size_t errlen,
                         const cnt_config_origin *origin, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return false;
    int n = 0;
    if (origin != NULL && origin->path != NULL) {
        char path[CNT_CLIP_BUF];
        n = snprintf(err, errlen, "counter: %s:%u: ",
                     config_clip_path(path, origin->path), origin->line);
    } else {
        n = snprintf(err, errlen, "counter: ");
    }
    if (n < 0 || (size_t)n >= errlen)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* Reports a bad value as "KEY: invalid value "VALUE" (expected ...)". */
static bool config_bad_value(const char *key, const char *v,
                             const char *expected, char *err, size_t errlen,
                             const cnt_config_origin *origin)
{
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    return config_error(err, errlen, origin,
                        "%s: invalid value \"%s\" (expected %s)",
                        config_clip_text(k, key), config_clip_text(val, v),
                        expected);
}

/* Fills c with the defaults: each layer's own, counter.enable off and no
 * groups. */
void cnt_config_defaults(cnt_config *c)
{
    memset(c, 0, sizeof(*c));
    c->enable = false;
    cnt_server_config_defaults(&c->server);
    c->table.buckets = CNT_DEFAULT_BUCKETS;
    c->table.interval = CNT_DEFAULT_INTERVAL;
    c->table.memory_limit = 0;
    c->groups = NULL;
    c->admin_secret = NULL;
    c->throttle_path = NULL;
}

/* Overwrites n bytes at p with zeros in a way the compiler cannot drop as
 * a dead store (the memory is freed right after). */
static void config_wipe(void *p, size_t n)
{
    volatile unsigned char *b = p;
    while (n-- > 0)
        *b++ = 0;
}

/* Wipes and frees a secret buffer of n bytes (NULL is fine). */
static void config_secret_free(uint8_t *secret, size_t n)
{
    if (secret == NULL)
        return;
    config_wipe(secret, n);
    free(secret);
}

/* Frees the groups, secret and throttle settings c owns; c then has
 * none. */
void cnt_config_free(cnt_config *c)
{
    if (c == NULL)
        return;
    cnt_groups_free(c->groups);
    c->groups = NULL;
    c->server.groups = NULL;
    config_secret_free(c->admin_secret, c->admin_secret_len);
    c->admin_secret = NULL;
    c->admin_secret_len = 0;
    free(c->throttle_path);
    c->throttle_path = NULL;
    cnt_throttle_file_free(&c->throttle);
}

/* Trims white space at both ends of s[0..*len) and returns the new start. */
static const char *config_trim(const char *s, size_t *len)
{
    size_t n = *len;
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    *len = n;
    return s;
}

/* Takes the next "name:value" item of a comma-separated list at *p (each
 * part trimmed of white space) and moves *p past it; *more says whether
 * another item follows. False when the item has no ':'. */
static bool config_next_field(const char **p, const char **name,
                              size_t *name_len, const char **value,
                              size_t *value_len, bool *more)
{
    size_t span = strcspn(*p, ",");
    size_t len = span;
    const char *item = config_trim(*p, &len);
    const char *colon = memchr(item, ':', len);

    if (colon == NULL)
        return false;
    *name_len = (size_t)(colon - item);
    *name = config_trim(item, name_len);
    *value_len = len - (size_t)(colon + 1 - item);
    *value = config_trim(colon + 1, value_len);
    *more = (*p)[span] != '\0';
    *p += span + (*more ? 1 : 0);
    return true;
}

/* Parses v[0..len), a non-empty run of decimal digits, into *out; false
 * on anything else (signs, spaces, overflow past 2^64-1). */
static bool config_parse_digits(const char *v, size_t len, uint64_t *out)
{
    if (len == 0)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        unsigned d = (unsigned)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

/* Parses a NUL-terminated run of decimal digits, as above. */
static bool config_parse_u64(const char *v, uint64_t *out)
{
    return config_parse_digits(v, strlen(v), out);
}

/* Parses a number in [min, max] or reports it against key. */
static bool config_number(const char *key, const char *v, uint64_t min,
                          uint64_t max, uint64_t *out, char *err,
                          size_t errlen, const cnt_config_origin *origin)
{
    uint64_t x;
    if (!config_parse_u64(v, &x) || x < min || x > max) {
        char range[48];
        snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64, min, max);
        return config_bad_value(key, v, range, err, errlen, origin);
    }
    *out = x;
    return true;
}

/* Parses a byte count with an optional K, M or G suffix (powers of 1024). */
static bool config_bytes(const char *key, const char *v, uint64_t *out,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    char digits[32];
    size_t n = strlen(v);
    unsigned shift = 0;
    if (n > 0) {
        switch (toupper((unsigned char)v[n - 1])) {
        case 'K': shift = 10; n--; break;
        case 'M': shift = 20; n--; break;
        case 'G': shift = 30; n--; break;
        default: break;
        }
    }
    uint64_t x;
    if (n >= sizeof(digits))
        goto bad;
    memcpy(digits, v, n);
    digits[n] = '\0';
    if (!config_parse_u64(digits, &x) || x > (UINT64_MAX >> shift))
        goto bad;
    *out = x << shift;
    return true;
bad:
    return config_bad_value(key, v, "bytes, optionally with a K, M or G "
                            "suffix", err, errlen, origin);
}

/* Parses a boolean in any of the spellings the docs list. */
static bool config_bool(const char *key, const char *v, bool *out, char *err,
                        size_t errlen, const cnt_config_origin *origin)
{
    static const char *const yes[] = {"true", "yes", "1", "on"};
    static const char *const no[] = {"false", "no", "0", "off"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return config_bad_value(key, v, "true/false, yes/no, on/off or 1/0", err,
                            errlen, origin);
}

/* Parses the bind list: IPv4 or IPv6 literals separated by commas or white
 * space; an IPv6 literal may be written in brackets. */
static bool config_binds(cnt_server_config *c, const char *key,
                         const char *v, char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    unsigned n = 0;
    const char *p = v;
    while (*p != '\0') {
        size_t span = strcspn(p, ", \t");
        if (span == 0) {
            p++;
            continue;
        }
        const char *a = p;
        size_t len = span;
        if (len >= 2 && a[0] == '[' && a[len - 1] == ']') {
            a++;
            len -= 2;
        }
        unsigned char buf[sizeof(struct in6_addr)];
        char addr[CNT_SERVER_ADDR_MAX];
        if (len == 0 || len >= sizeof(addr))
            goto bad;
        memcpy(addr, a, len);
        addr[len] = '\0';
        if (inet_pton(AF_INET, addr, buf) != 1 &&
            inet_pton(AF_INET6, addr, buf) != 1)
            goto bad;
        if (n == CNT_SERVER_MAX_BINDS) {
            char most[32];
            snprintf(most, sizeof(most), "at most %u addresses",
                     CNT_SERVER_MAX_BINDS);
            return config_bad_value(key, v, most, err, errlen, origin);
        }
        memcpy(c->binds[n++], addr, len + 1);
        p += span;
    }
    if (n == 0)
        goto bad;
    c->nbinds = n;
    return true;
bad:
    return config_bad_value(key, v, "IPv4 or IPv6 addresses separated by "
                            "commas or spaces", err, errlen, origin);
}

/* Whether name[0..len) may name a group: 1..255 bytes, none of them white
 * space, ';', '=' or '"' (which the -X string and the file use to split
 * and quote settings, so such a name could not be written back). */
static bool config_group_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > CNT_GROUP_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (isspace(ch) || ch == ';' || ch == '=' || ch == '"')
            return false;
    }
    return true;
}

/* Where a duration setting goes: the unit it is counted in (nanoseconds
 * per step) and its bounds, with the words a message uses for them. */
typedef struct config_span {
    uint64_t per;
    const char *step;       /* "milliseconds" */
    uint64_t min, max;      /* in steps */
    const char *bounds;     /* "at most 4294967295ms, about 49.7 days" */
} config_span;

/* Groups' wait and lease: milliseconds on the wire, 0 meaning none. */
static const config_span group_span = {
    1000000, "milliseconds", 0, UINT32_MAX,
    "at most 4294967295ms, about 49.7 days",
};

/* The epoch-aligned window of the consumption statistics, in seconds. */
static const config_span interval_span = {
    1000000000, "seconds", 1, UINT32_MAX, "1s to 4294967295s",
};

/* TCP keepalive's idle time and probe interval: Linux takes whole seconds
 * up to 32767. */
static const config_span keepalive_span = {
    1000000000, "seconds", 1, 32767, "1s to 32767s",
};

/* Parses the duration v[0..len) (protocol/duration.h: the one grammar
 * every setting shares) as a whole number of span's steps within its
 * bounds. On error writes ""V" PROBLEM (HINT" into msg, the closing
 * parenthesis left to the caller, which may add to it. */
static bool config_duration(const char *v, size_t len,
                            const config_span *span, uint64_t *out,
                            char *msg, size_t msglen)
{
    char val[CNT_CLIP_BUF];
    cnt_duration d;
    cnt_duration_status st = cnt_duration_parse(v, len, &d);
    const char *problem = NULL, *hint = NULL;
    if (st == CNT_DURATION_RANGE) {
        /* Past 2^64 ns is past every setting's own bound, the one to say. */
        problem = cnt_duration_problem(st);
        hint = span->bounds;
    } else if (st != CNT_DURATION_OK) {
        problem = cnt_duration_problem(st);
        hint = cnt_duration_hint(st);
    } else if (d.ns % span->per != 0) {
        snprintf(msg, msglen, "\"%s\" is not a whole number of %s "
                 "(this setting counts whole %s",
                 config_clip(val, v, len, CNT_CLIP_TEXT, false), span->step,
                 span->step);
        return false;
    } else if (d.ns / span->per > span->max) {
        problem = "is too long";
        hint = span->bounds;
    } else if (d.ns / span->per < span->min) {
        problem = "is too short";
        hint = span->bounds;
    }
    if (problem == NULL) {
        *out = d.ns / span->per;
        return true;
    }
    snprintf(msg, msglen, "\"%s\" %s (%s",
             config_clip(val, v, len, CNT_CLIP_TEXT, false), problem, hint);
    return false;
}

/* Parses the value of a key that holds a duration counted in span's
 * steps, or reports it as "KEY: "V" PROBLEM (HINT)". */
static bool config_duration_key(const char *key, const char *v,
                                const config_span *span, uint64_t *out,
                                char *err, size_t errlen,
                                const cnt_config_origin *origin)
{
    char k[CNT_CLIP_BUF], msg[256];
    if (config_duration(v, strlen(v), span, out, msg, sizeof(msg)))
        return true;
    return config_error(err, errlen, origin, "%s: %s)",
                        config_clip_text(k, key), msg);
}

/* The fields of a group's value, in the order the bits of "seen" use. */
enum { GROUP_MAX, GROUP_WAIT, GROUP_LEASE, GROUP_FIELDS };

/* Which field name[0..len) names (any case), or GROUP_FIELDS for none. */
static unsigned config_group_field(const char *name, size_t len)
{
    static const char *const names[GROUP_FIELDS] = {"max", "wait", "lease"};
    for (unsigned f = 0; f < GROUP_FIELDS; f++)
        if (strlen(names[f]) == len && strncasecmp(name, names[f], len) == 0)
            return f;
    return GROUP_FIELDS;
}

/* Parses a group's value "max:N[,wait:DURATION][,lease:DURATION]" (fields
 * in any order, each at most once, white space allowed around them) into
 * *g; on error reports it against key. */
static bool config_group_value(const char *key, const char *v, cnt_group *g,
                               char *err, size_t errlen,
                               const cnt_config_origin *origin)
{
    static const char *const field_names[GROUP_FIELDS] = {
        "max", "wait", "lease",
    };
    unsigned seen = 0;
    const char *p = v, *fname, *x;
    size_t flen, xlen;
    bool more = true;
    memset(g, 0, sizeof(*g));
    while (more) {
        if (!config_next_field(&p, &fname, &flen, &x, &xlen, &more))
            goto bad;
        unsigned f = config_group_field(fname, flen);
        if (f == GROUP_FIELDS || (seen & (1u << f)) != 0)
            goto bad;
        seen |= 1u << f;
        if (f == GROUP_MAX) {
            uint64_t n;
            if (!config_parse_digits(x, xlen, &n) || n < 1 || n > UINT32_MAX)
                goto bad;
            g->maximum = (uint32_t)n;
        } else {
            char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF], msg[256];
            uint64_t ms;
            if (!config_duration(x, xlen, &group_span, &ms, msg,
                                 sizeof(msg)))
                return config_error(err, errlen, origin,
                                    "%s: %s %s; value \"%s\")",
                                    config_clip_text(k, key), field_names[f],
                                    msg, config_clip_text(val, v));
            *(f == GROUP_WAIT ? &g->wait_ms : &g->lease_ms) = (uint32_t)ms;
        }
    }
    if ((seen & (1u << GROUP_MAX)) != 0)
        return true;
bad:
    return config_bad_value(key, v, CNT_GROUP_EXPECTED, err, errlen, origin);
}

/* Applies counter.group.NAME = VALUE: defines the group, or redefines it
 * (the later definition wins). */
static bool config_group(cnt_config *c, const char *key, const char *v,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    const char *name = key + strlen(CNT_CONFIG_GROUP_PREFIX);
    size_t len = strlen(name);
    if (!config_group_name_ok(name, len))
        return config_error(err, errlen, origin,
                            "%s: invalid group name (value \"%s\"; expected "
                            "1..%u bytes without white space, ';', '=' or "
                            "'\"')", config_clip_text(k, key),
                            config_clip_text(val, v), CNT_GROUP_NAME_MAX);
    cnt_group g;
    if (!config_group_value(key, v, &g, err, errlen, origin))
        return false;
    if (c->groups == NULL)
        c->groups = cnt_groups_new();
    if (c->groups == NULL ||
        !cnt_groups_set(c->groups, (const uint8_t *)name, (uint16_t)len, &g))
        return config_error(err, errlen, origin, "%s: out of memory",
                            config_clip_text(k, key));
    return true;
}

static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen);
static bool config_secret(cnt_config *c, const char *key, const char *v,
                          char *err, size_t errlen,
                          const cnt_config_origin *origin);
static bool config_throttle(cnt_config *c, const char *key, const char *v,
                            char *err, size_t errlen,
                            const cnt_config_origin *origin);

/* The WebSocket front's keys (counter.http.*): 1 when key was one and its
 * value was taken, 0 when it was one and the value is wrong (reported),
 * -1 when key is not one of them. */
static int config_http(cnt_config *c, const char *key, const char *v,
                       char *err, size_t errlen,
                       const cnt_config_origin *origin)
{
    uint64_t x;

    if (strcmp(key, "counter.http.port") == 0) {
        if (!config_number(key, v, 0, 65535, &x, err, errlen, origin))
            return 0;
        c->server.http_port = (uint16_t)x;
        return 1;
    }
    if (strcmp(key, "counter.http.max_header") == 0) {
        if (!config_bytes(key, v, &x, err, errlen, origin))
            return 0;
        /* Room for a browser's upgrade request; never past what a
         * connection's input buffer may grow to. */
        if (x < 1024 || x > 65536) {
            (void)config_bad_value(key, v, "1K..64K (bytes)", err, errlen,
                                    origin);
            return 0;
        }
        c->server.http_max_header = (uint32_t)x;
        return 1;
    }
    if (strcmp(key, "counter.http.max_message") == 0) {
        if (!config_bytes(key, v, &x, err, errlen, origin))
            return 0;
        if (x < 256 || x > 1048576) {
            (void)config_bad_value(key, v, "256..1M (bytes)", err, errlen,
                                    origin);
            return 0;
        }
        c->server.http_max_message = (uint32_t)x;
        return 1;
    }
    return -1;
}

/* Applies one key/value pair (both already trimmed and unquoted) to the
 * cnt_config ctx. */
static bool config_apply(void *ctx, const char *key, const char *v,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    cnt_config *c = ctx;
    uint64_t x;
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    if (strncmp(key, CNT_CONFIG_PREFIX, strlen(CNT_CONFIG_PREFIX)) != 0)
        return config_error(err, errlen, origin,
                            "%s: unknown key (value \"%s\"; only counter.* "
                            "keys are accepted)", config_clip_text(k, key),
                            config_clip_text(val, v));
    int http = config_http(c, key, v, err, errlen, origin);
    if (http >= 0)
        return http == 1;
    if (strcmp(key, "counter.enable") == 0)
        return config_bool(key, v, &c->enable, err, errlen, origin);
    if (strcmp(key, "counter.port") == 0) {
        if (!config_number(key, v, 0, 65535, &x, err, errlen, origin))
            return false;
        c->server.port = (uint16_t)x;
        return true;
    }
    if (strcmp(key, "counter.bind") == 0)
        return config_binds(&c->server, key, v, err, errlen, origin);
    if (strcmp(key, "counter.max_connections") == 0) {
        if (!config_number(key, v, 0, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->server.max_connections = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.buckets") == 0) {
        if (!config_number(key, v, 1, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->table.buckets = (size_t)x;
        return true;
    }
    if (strcmp(key, "counter.consumption_stats.interval") == 0 ||
        strcmp(key, "counter.stat_interval") == 0) {
        if (!config_duration_key(key, v, &interval_span, &x, err, errlen,
                                 origin))
            return false;
        c->table.interval = (uint32_t)x;
        return true;
    }
    if (strcmp(key, "counter.threads") == 0) {
        if (!config_number(key, v, 1, CNT_SERVER_THREADS_MAX, &x, err, errlen,
                           origin))
            return false;
        c->server.threads = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.memory_limit") == 0)
        return config_bytes(key, v, &c->table.memory_limit, err, errlen,
                            origin);
    if (strcmp(key, "counter.keepalive") == 0)
        return config_bool(key, v, &c->server.keepalive, err, errlen,
                           origin);
    /* Linux takes idle and interval up to 32767 s and count up to 127. */
    if (strcmp(key, "counter.keepalive_idle") == 0) {
        if (!config_duration_key(key, v, &keepalive_span, &x, err, errlen,
                                 origin))
            return false;
        c->server.keepalive_idle = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.keepalive_interval") == 0) {
        if (!config_duration_key(key, v, &keepalive_span, &x, err, errlen,
                                 origin))
            return false;
        c->server.keepalive_interval = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.keepalive_count") == 0) {
        if (!config_number(key, v, 1, 127, &x, err, errlen, origin))
            return false;
        c->server.keepalive_count = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.max_waits") == 0) {
        if (!config_number(key, v, 1, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->server.max_waits = (uint32_t)x;
        return true;
    }
    if (strcmp(key, "counter.throttr.port") == 0) {
        if (!config_number(key, v, 0, 65535, &x, err, errlen, origin))
            return false;
        c->server.throttr_port = (uint16_t)x;
        return true;
    }
    if (strcmp(key, "counter.throttr.value_size") == 0) {
        if (!config_parse_digits(v, strlen(v), &x) ||
            (x != 1 && x != 2 && x != 4 && x != 8))
            return config_bad_value(key, v, "1, 2, 4 or 8 (bytes)", err,
                                    errlen, origin);
        c->server.throttr_value_size = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.auth_fail_limit") == 0) {
        if (!config_number(key, v, 0, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->server.auth_fail_limit = (uint32_t)x;
        return true;
    }
    if (strcmp(key, "counter.auth_fail_limit_per_address") == 0) {
        if (!config_number(key, v, 0, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->server.auth_fail_limit_per_address = (uint32_t)x;
        return true;
    }
    if (strncmp(key, CNT_CONFIG_GROUP_PREFIX,
                strlen(CNT_CONFIG_GROUP_PREFIX)) == 0)
        return config_group(c, key, v, err, errlen, origin);
    if (strcmp(key, "counter.config") == 0) {
        /* Files may not name further files: no include cycles to detect. */
        if (origin != NULL && origin->path != NULL)
            return config_error(err, errlen, origin,
                                "%s: not allowed in a configuration file "
                                "(value \"%s\"; a file cannot name another)",
                                key, config_clip_text(val, v));
        if (*v == '\0')
            return config_bad_value(key, v, "a file path", err, errlen,
                                    origin);
        return config_apply_file(c, v, err, errlen);
    }
    if (strcmp(key, "counter.admin_secret_file") == 0)
        return config_secret(c, key, v, err, errlen, origin);
    if (strcmp(key, "counter.throttle.config") == 0)
        return config_throttle(c, key, v, err, errlen, origin);
    return config_error(err, errlen, origin, "%s: unknown key (value \"%s\")",
                        config_clip_text(k, key), config_clip_text(val, v));
}

/* Copies n bytes into a new NUL-terminated string. Not strndup: a token
 * from a settings file is not NUL-terminated (it may fill the line buffer),
 * and strndup may look one byte past n for the terminator. */
static char *config_dup(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

/* Splits one "key<sep>value" token, trims and unquotes both sides, and
 * applies it to ctx with fn. An empty (all-space) token is allowed and
 * ignored. */
static bool config_token(config_apply_fn fn, void *ctx, const char *tok,
                         size_t len, char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    tok = config_trim(tok, &len);
    if (len == 0)
        return true;
    const char *eq = memchr(tok, '=', len);
    size_t klen = eq != NULL ? (size_t)(eq - tok) : 0;
    const char *key = config_trim(tok, &klen);
    char kc[CNT_CLIP_BUF], vc[CNT_CLIP_BUF];
    if (eq == NULL || klen == 0)
        return config_error(err, errlen, origin,
                            "malformed setting \"%s\" (expected key=value)",
                            config_clip(kc, tok, len, CNT_CLIP_TEXT, false));
    size_t vlen = len - (size_t)(eq + 1 - tok);
    const char *val = config_trim(eq + 1, &vlen);
    if (vlen > 0 && val[0] == '"') {
        if (vlen < 2 || val[vlen - 1] != '"')
            return config_error(err, errlen, origin,
                                "%s: unterminated quote in value %s",
                                config_clip(kc, key, klen, CNT_CLIP_TEXT,
                                            false),
                                config_clip(vc, val, vlen, CNT_CLIP_TEXT,
                                            false));
        val++;
        vlen -= 2;
    }
    char *k = config_dup(key, klen);
    char *v = config_dup(val, vlen);
    bool ok;
    if (k == NULL || v == NULL)
        ok = config_error(err, errlen, origin, "%s: out of memory",
                          config_clip(kc, key, klen, CNT_CLIP_TEXT, false));
    else
        ok = fn(ctx, k, v, err, errlen, origin);
    free(k);
    free(v);
    return ok;
}

/* What reading one line of a settings file found. */
typedef enum config_line_status {
    CONFIG_LINE_OK,
    CONFIG_LINE_EOF,
    CONFIG_LINE_TOO_LONG,       /* more than CNT_CONFIG_LINE_MAX bytes */
    CONFIG_LINE_FILE_TOO_BIG,   /* the file passed its size limit */
    CONFIG_LINE_READ_ERROR,     /* errno says why */
} config_line_status;

/* Reads one line, without its '\n', into buf (CNT_CONFIG_LINE_MAX bytes),
 * counting every byte read in *total (at most max). Never reads past either
 * limit, so a file that has no line ends or no end costs nothing but the
 * refusal. */
static config_line_status config_read_line(FILE *f, char *buf, size_t *len,
                                           size_t *total, size_t max)
{
    size_t n = 0;
    int ch;
    *len = 0;
    while ((ch = getc(f)) != EOF) {
        if (++*total > max)
            return CONFIG_LINE_FILE_TOO_BIG;
        if (ch == '\n')
            break;
        if (n == CNT_CONFIG_LINE_MAX) {
            *len = n;
            return CONFIG_LINE_TOO_LONG;
        }
        buf[n++] = (char)ch;
    }
    *len = n;
    /* getc's EOF is also a failed read: only feof means the file ended. */
    if (ch == EOF && ferror(f))
        return CONFIG_LINE_READ_ERROR;
    return ch == EOF && n == 0 ? CONFIG_LINE_EOF : CONFIG_LINE_OK;
}

/* Names a file type that is not a settings file, for the refusal. */
static const char *config_file_type(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "a special file";
}

/* Opens path, named by key, for reading if it is a regular file; on error
 * writes the message (at origin, the key's place, if any) and returns NULL.
 * O_NONBLOCK keeps a FIFO from blocking start-up in open() until a writer
 * comes: it is refused after fstat instead (the flag means nothing for the
 * regular files that get through). */
static FILE *config_open_file(const char *key, const char *path, char *err,
                              size_t errlen, const cnt_config_origin *origin)
{
    char p[CNT_CLIP_BUF];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        config_error(err, errlen, origin,
                     "%s: cannot read file \"%s\": %s", key,
                     config_clip_path(p, path), strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        config_error(err, errlen, origin,
                     "%s: cannot read file \"%s\": %s", key,
                     config_clip_path(p, path), strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        config_error(err, errlen, origin,
                     "%s: \"%s\" is %s, not a regular file", key,
                     config_clip_path(p, path), config_file_type(st.st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        config_error(err, errlen, origin,
                     "%s: cannot read file \"%s\": %s", key,
                     config_clip_path(p, path), strerror(errno));
        close(fd);
    }
    return f;
}

/* Reports a line-level read failure (too long, too big, read error) of
 * the file named by key, whose size limit is max; at names the key's own
 * place for the file-wide errors (NULL: none). */
static bool config_line_error(const char *key, size_t max,
                              config_line_status st, const char *line,
                              size_t len, int e, char *err, size_t errlen,
                              const cnt_config_origin *origin,
                              const cnt_config_origin *at)
{
    char p[CNT_CLIP_BUF], start[CNT_CLIP_BUF];
    switch (st) {
    case CONFIG_LINE_TOO_LONG:
        /* The line's start usually holds its key: quote it. */
        line = config_trim(line, &len);
        return config_error(err, errlen, origin,
                            "line longer than %u bytes: \"%s\"",
                            CNT_CONFIG_LINE_MAX,
                            config_clip(start, line, len, CNT_CLIP_TEXT,
                                        false));
    case CONFIG_LINE_FILE_TOO_BIG:
        return config_error(err, errlen, at,
                            "%s: file \"%s\" is larger than %zu bytes", key,
                            config_clip_path(p, origin->path), max);
    default:
        return config_error(err, errlen, at,
                            "%s: cannot read file \"%s\": %s", key,
                            config_clip_path(p, origin->path),
                            e != 0 ? strerror(e) : "read error");
    }
}

/* Reads the file at path, named by key (at: the key's place, if any), line
 * by line: `key = value`, # comments, blank lines; each setting goes to fn
 * with ctx. A file over max bytes is refused. */
static bool config_read_settings(const char *key, const char *path,
                                 size_t max, config_apply_fn fn, void *ctx,
                                 char *err, size_t errlen,
                                 const cnt_config_origin *at)
{
    FILE *f = config_open_file(key, path, err, errlen, at);
    if (f == NULL)
        return false;
    cnt_config_origin origin = {path, 0};
    char line[CNT_CONFIG_LINE_MAX];
    size_t total = 0, n;
    bool ok = true;
    while (ok) {
        errno = 0;
        config_line_status st = config_read_line(f, line, &n, &total, max);
        if (st == CONFIG_LINE_EOF)
            break;
        origin.line++;
        if (st != CONFIG_LINE_OK) {
            ok = config_line_error(key, max, st, line, n, errno, err, errlen,
                                   &origin, at);
            break;
        }
        size_t len = n;
        const char *s = config_trim(line, &len);
        if (len == 0 || s[0] == '#')
            continue;
        ok = config_token(fn, ctx, s, len, err, errlen, &origin);
    }
    fclose(f);
    return ok;
}

/* Reads a counter.config file into c. */
static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen)
{
    return config_read_settings("counter.config", path, CNT_CONFIG_FILE_MAX,
                                config_apply, c, err, errlen, NULL);
}

/* The secret file: at most the secret, a "\r\n", and one byte to tell a
 * secret that is too long. */
#define CNT_SECRET_READ (CNT_CONFIG_SECRET_MAX + 3u)
#define CNT_SECRET_EXPECTED \
    "a secret of 16..4096 bytes, then at most one line end"

/* Applies counter.admin_secret_file = PATH: reads the secret now (the
 * file may be unreadable once the host drops its privileges). Read with
 * read(2), not stdio, so no copy of it stays in a stdio buffer; every
 * buffer that held it is wiped. Messages name the path, never content. */
static bool config_secret(cnt_config *c, const char *key, const char *v,
                          char *err, size_t errlen,
                          const cnt_config_origin *origin)
{
    char p[CNT_CLIP_BUF];
    if (*v == '\0')
        return config_bad_value(key, v, "a file path", err, errlen, origin);
    FILE *f = config_open_file(key, v, err, errlen, origin);
    if (f == NULL)
        return false;
    uint8_t *buf = malloc(CNT_SECRET_READ);
    if (buf == NULL) {
        fclose(f);
        return config_error(err, errlen, origin, "%s: out of memory", key);
    }
    size_t n = 0;
    int e = 0;
    while (n < CNT_SECRET_READ) {
        ssize_t r = read(fileno(f), buf + n, CNT_SECRET_READ - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            e = errno;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    fclose(f);
    bool ok = false;
    if (e != 0) {
        config_error(err, errlen, origin, "%s: cannot read file \"%s\": %s",
                     key, config_clip_path(p, v), strerror(e));
        goto out;
    }
    /* One final "\n" or "\r\n" goes: editors add it, nobody means it. */
    if (n > 0 && buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    if (n == 0) {
        config_error(err, errlen, origin, "%s: file \"%s\" is empty "
                     "(expected " CNT_SECRET_EXPECTED ")", key,
                     config_clip_path(p, v));
        goto out;
    }
    /* A short secret falls to guessing however slowly failures go. */
    if (n < CNT_CONFIG_SECRET_MIN) {
        config_error(err, errlen, origin, "%s: file \"%s\" holds a secret "
                     "of %zu bytes, shorter than the %u required (expected "
                     CNT_SECRET_EXPECTED ")", key, config_clip_path(p, v), n,
                     CNT_CONFIG_SECRET_MIN);
        goto out;
    }
    if (n > CNT_CONFIG_SECRET_MAX) {
        config_error(err, errlen, origin, "%s: file \"%s\" holds more than "
                     "%u bytes (expected " CNT_SECRET_EXPECTED ")", key,
                     config_clip_path(p, v), CNT_CONFIG_SECRET_MAX);
        goto out;
    }
    uint8_t *secret = malloc(n);
    if (secret == NULL) {
        config_error(err, errlen, origin, "%s: out of memory", key);
        goto out;
    }
    memcpy(secret, buf, n);
    /* A later key replaces the secret; the old one is this parse's own
     * copy (see config_begin). */
    config_secret_free(c->admin_secret, c->admin_secret_len);
    c->admin_secret = secret;
    c->admin_secret_len = n;
    ok = true;
out:
    config_secret_free(buf, CNT_SECRET_READ);
    return ok;
}

/* Throttle settings: what one line of a tenant's value may hold. */
#define CNT_THROTTLE_TENANT_PREFIX "tenant."
#define CNT_THROTTLE_HARD_EXPECTED "0..4294967294 or unlimited"
#define CNT_THROTTLE_TENANT_EXPECTED \
    "reserved:0..4294967295[,hard_limit:0..4294967294|unlimited]"
#define CNT_THROTTLE_NAME_EXPECTED \
    "1..250 bytes of A-Z, a-z, 0-9, '_', '.', ':' and '-'"

/* Where each tenant of a throttle file being parsed came from. */
typedef struct throttle_line {
    unsigned line;
} throttle_line;

/* A throttle file being parsed: the result so far, the lines of what it
 * holds (for the errors found at the end) and an index of the names. */
typedef struct throttle_parse {
    cnt_throttle_file f;
    size_t cap;                 /* tenants and lines allocated */
    throttle_line *lines;
    unsigned capacity_line, default_line;   /* 0: not seen yet */
    size_t *slots;              /* open addressing: tenant index + 1 */
    size_t nslots;              /* a power of two, or 0 */
} throttle_parse;

/* Frees what f owns; f is then empty. */
void cnt_throttle_file_free(cnt_throttle_file *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->ntenants; i++)
        free(f->tenants[i].name);
    free(f->tenants);
    memset(f, 0, sizeof(*f));
}

/* Copies src into *dst (all or nothing); false when out of memory. */
static bool throttle_file_copy(cnt_throttle_file *dst,
                               const cnt_throttle_file *src)
{
    cnt_throttle_file d = *src;
    d.ntenants = 0;
    d.tenants = NULL;
    if (src->ntenants > 0) {
        d.tenants = calloc(src->ntenants, sizeof(*d.tenants));
        if (d.tenants == NULL)
            return false;
    }
    for (size_t i = 0; i < src->ntenants; i++) {
        d.tenants[i] = src->tenants[i];
        d.tenants[i].name = malloc(src->tenants[i].len);
        if (d.tenants[i].name == NULL) {
            cnt_throttle_file_free(&d);
            return false;
        }
        d.ntenants = i + 1;
        memcpy(d.tenants[i].name, src->tenants[i].name, d.tenants[i].len);
    }
    d.ntenants = src->ntenants;
    *dst = d;
    return true;
}

/* FNV-1a of a tenant name, for the duplicate index. */
static size_t throttle_hash(const uint8_t *name, size_t len)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= name[i];
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t *throttle_slot(throttle_parse *tp, const uint8_t *name,
                             size_t len)
{
    size_t mask = tp->nslots - 1;
    for (size_t i = throttle_hash(name, len) & mask;; i = (i + 1) & mask) {
        size_t *s = &tp->slots[i];
        if (*s == 0)
            return s;
        const cnt_throttle_file_tenant *t = &tp->f.tenants[*s - 1];
        if (t->len == len && memcmp(t->name, name, len) == 0)
            return s;
    }
}

/* Makes room for one more tenant: the arrays and the index (kept at most
 * half full). False when out of memory. */
static bool throttle_grow(throttle_parse *tp)
{
    size_t n = tp->f.ntenants;
    if (n == tp->cap) {
        size_t cap = tp->cap == 0 ? 16 : tp->cap * 2;
        cnt_throttle_file_tenant *t =
            realloc(tp->f.tenants, cap * sizeof(*t));
        if (t == NULL)
            return false;
        tp->f.tenants = t;
        throttle_line *l = realloc(tp->lines, cap * sizeof(*l));
        if (l == NULL)
            return false;
        tp->lines = l;
        tp->cap = cap;
    }
    if ((n + 1) * 2 <= tp->nslots)
        return true;
    size_t nslots = tp->nslots == 0 ? 32 : tp->nslots * 2;
    size_t *slots = calloc(nslots, sizeof(*slots));
    if (slots == NULL)
        return false;
    free(tp->slots);
    tp->slots = slots;
    tp->nslots = nslots;
    for (size_t i = 0; i < n; i++)
        *throttle_slot(tp, tp->f.tenants[i].name, tp->f.tenants[i].len) =
            i + 1;
    return true;
}

/* Parses a hard limit: a number below UNLIMITED, or "unlimited". */
static bool throttle_hard(const char *v, size_t len, uint32_t *out)
{
    uint64_t x;
    if (len == 9 && strncasecmp(v, "unlimited", 9) == 0) {
        *out = CNT_THROTTLE_FILE_UNLIMITED;
        return true;
    }
    if (!config_parse_digits(v, len, &x) || x >= CNT_THROTTLE_FILE_UNLIMITED)
        return false;
    *out = (uint32_t)x;
    return true;
}

/* Whether name[0..len) may name a tenant in the file. */
static bool throttle_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > CNT_THROTTLE_FILE_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (!isalnum(ch) && ch != '_' && ch != '.' && ch != ':' && ch != '-')
            return false;
    }
    return true;
}

/* Parses a tenant's value "reserved:N[,hard_limit:N|unlimited]" (fields in
 * any order and any case, each once, reserved required, white space
 * around them allowed) into *t; on error reports it against key. */
static bool throttle_tenant_value(const char *key, const char *v,
                                  cnt_throttle_file_tenant *t, char *err,
                                  size_t errlen,
                                  const cnt_config_origin *origin)
{
    bool has_reserved = false, more = true;
    const char *p = v, *fname, *fval;
    size_t flen, vlen;
    t->has_hard = false;
    while (more) {
        if (!config_next_field(&p, &fname, &flen, &fval, &vlen, &more))
            goto bad;
        uint64_t x;
        if (flen == 8 && strncasecmp(fname, "reserved", 8) == 0) {
            if (has_reserved || !config_parse_digits(fval, vlen, &x) ||
                x > UINT32_MAX)
                goto bad;
            t->reserved = (uint32_t)x;
            has_reserved = true;
        } else if (flen == 10 && strncasecmp(fname, "hard_limit", 10) == 0) {
            if (t->has_hard || !throttle_hard(fval, vlen, &t->hard))
                goto bad;
            t->has_hard = true;
        } else {
            goto bad;
        }
    }
    if (!has_reserved)
        goto bad;
    if (t->has_hard && t->hard < t->reserved) {
        char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
        return config_error(err, errlen, origin,
                            "%s: hard limit below the reserve (value "
                            "\"%s\"; hard_limit must be at least reserved)",
                            config_clip_text(k, key),
                            config_clip_text(val, v));
    }
    return true;
bad:
    return config_bad_value(key, v, CNT_THROTTLE_TENANT_EXPECTED, err,
                            errlen, origin);
}

/* Reports a key given twice in a throttle file. */
static bool throttle_duplicate(const char *key, const char *v,
                               unsigned first, char *err, size_t errlen,
                               const cnt_config_origin *origin)
{
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    return config_error(err, errlen, origin,
                        "%s: duplicate key (value \"%s\"; first on line %u)",
                        config_clip_text(k, key), config_clip_text(val, v),
                        first);
}

/* Applies one line of a throttle file to the throttle_parse ctx. */
static bool throttle_apply(void *ctx, const char *key, const char *v,
                           char *err, size_t errlen,
                           const cnt_config_origin *origin)
{
    throttle_parse *tp = ctx;
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    uint64_t x;
    if (strcmp(key, "node.capacity") == 0) {
        if (tp->capacity_line != 0)
            return throttle_duplicate(key, v, tp->capacity_line, err,
                                      errlen, origin);
        if (!config_number(key, v, 0, UINT32_MAX, &x, err, errlen, origin))
            return false;
        tp->f.has_capacity = true;
        tp->f.capacity = (uint32_t)x;
        tp->capacity_line = origin->line;
        return true;
    }
    if (strcmp(key, "default.hard_limit") == 0) {
        if (tp->default_line != 0)
            return throttle_duplicate(key, v, tp->default_line, err, errlen,
                                      origin);
        if (!throttle_hard(v, strlen(v), &tp->f.default_hard))
            return config_bad_value(key, v, CNT_THROTTLE_HARD_EXPECTED, err,
                                    errlen, origin);
        tp->f.has_default_hard = true;
        tp->default_line = origin->line;
        return true;
    }
    size_t plen = strlen(CNT_THROTTLE_TENANT_PREFIX);
    if (strncmp(key, CNT_THROTTLE_TENANT_PREFIX, plen) != 0)
        return config_error(err, errlen, origin,
                            "%s: unknown key (value \"%s\"; expected "
                            "node.capacity, default.hard_limit or "
                            "tenant.NAME)", config_clip_text(k, key),
                            config_clip_text(val, v));
    const char *name = key + plen;
    size_t len = strlen(name);
    if (!throttle_name_ok(name, len))
        return config_error(err, errlen, origin,
                            "%s: invalid tenant name (value \"%s\"; "
                            "expected " CNT_THROTTLE_NAME_EXPECTED ")",
                            config_clip_text(k, key),
                            config_clip_text(val, v));
    cnt_throttle_file_tenant t = {0};
    if (!throttle_tenant_value(key, v, &t, err, errlen, origin))
        return false;
    size_t *slot;
    if (tp->nslots > 0 &&
        *(slot = throttle_slot(tp, (const uint8_t *)name, len)) != 0)
        return throttle_duplicate(key, v, tp->lines[*slot - 1].line, err,
                                  errlen, origin);
    if (tp->f.ntenants == CNT_THROTTLE_FILE_TENANTS_MAX)
        return config_error(err, errlen, origin,
                            "%s: too many tenants (at most %u in a file)",
                            config_clip_text(k, key),
                            CNT_THROTTLE_FILE_TENANTS_MAX);
    if (!throttle_grow(tp))
        return config_error(err, errlen, origin, "%s: out of memory",
                            config_clip_text(k, key));
    /* Found again: growing the index moves the names' slots. */
    slot = throttle_slot(tp, (const uint8_t *)name, len);
    t.name = malloc(len);
    if (t.name == NULL)
        return config_error(err, errlen, origin, "%s: out of memory",
                            config_clip_text(k, key));
    memcpy(t.name, name, len);
    t.len = (uint16_t)len;
    tp->lines[tp->f.ntenants].line = origin->line;
    tp->f.tenants[tp->f.ntenants++] = t;
    *slot = tp->f.ntenants;
    return true;
}

/* The checks that need the whole file: tenants without a hard_limit take
 * the default one, which must not be below their reserve; the reserves
 * must fit a non-zero capacity. Errors name the later of the lines that
 * conflict. */
static bool throttle_finish(throttle_parse *tp, const char *path, char *err,
                            size_t errlen)
{
    cnt_throttle_file *f = &tp->f;
    uint32_t hard = f->has_default_hard ? f->default_hard
                                        : CNT_THROTTLE_FILE_UNLIMITED;
    char k[CNT_CLIP_BUF];
    for (size_t i = 0; i < f->ntenants; i++) {
        cnt_throttle_file_tenant *t = &f->tenants[i];
        if (t->has_hard)
            continue;
        t->hard = hard;
        if (hard >= t->reserved)
            continue;
        unsigned l = tp->lines[i].line;
        cnt_config_origin o = {path, l > tp->default_line ? l
                                                          : tp->default_line};
        return config_error(err, errlen, &o,
                            "tenant.%s: hard limit below the reserve "
                            "(reserved %" PRIu32 " on line %u, "
                            "default.hard_limit %" PRIu32 " on line %u; "
                            "give the tenant a hard_limit)",
                            config_clip(k, (const char *)t->name, t->len,
                                        CNT_CLIP_TEXT, false),
                            t->reserved, l, hard, tp->default_line);
    }
    if (!f->has_capacity || f->capacity == 0)
        return true;
    uint64_t sum = 0;
    for (size_t i = 0; i < f->ntenants; i++) {
        sum += f->tenants[i].reserved;
        if (sum <= f->capacity)
            continue;
        const cnt_throttle_file_tenant *t = &f->tenants[i];
        unsigned l = tp->lines[i].line;
        if (l > tp->capacity_line) {
            cnt_config_origin o = {path, l};
            return config_error(err, errlen, &o,
                                "tenant.%s: over capacity (reserved "
                                "%" PRIu32 " brings the reserves to "
                                "%" PRIu64 ", node.capacity is %" PRIu32
                                " on line %u)",
                                config_clip(k, (const char *)t->name, t->len,
                                            CNT_CLIP_TEXT, false),
                                t->reserved, sum, f->capacity,
                                tp->capacity_line);
        }
        for (size_t j = i + 1; j < f->ntenants; j++)
            sum += f->tenants[j].reserved;
        cnt_config_origin o = {path, tp->capacity_line};
        return config_error(err, errlen, &o,
                            "node.capacity: over capacity (value "
                            "\"%" PRIu32 "\"; the reserves of the tenants "
                            "sum to %" PRIu64 ")", f->capacity, sum);
    }
    return true;
}

/* Parses the throttle file at path; at is where its key was (NULL for a
 * reload), for the errors about the file as a whole. */
static bool throttle_parse_file(const char *path, cnt_throttle_file *out,
                                char *err, size_t errlen,
                                const cnt_config_origin *at)
{
    throttle_parse tp;
    memset(&tp, 0, sizeof(tp));
    bool ok = config_read_settings("counter.throttle.config", path,
                                   CNT_THROTTLE_FILE_MAX, throttle_apply,
                                   &tp, err, errlen, at) &&
              throttle_finish(&tp, path, err, errlen);
    free(tp.lines);
    free(tp.slots);
    if (!ok) {
        cnt_throttle_file_free(&tp.f);
        return false;
    }
    if (tp.f.ntenants == 0) {
        free(tp.f.tenants);
        tp.f.tenants = NULL;
    }
    *out = tp.f;
    return true;
}

/* Parses the throttle settings file at path into *out (written only on
 * success); on error one line naming the file, the line and the key. */
bool cnt_throttle_file_parse(const char *path, cnt_throttle_file *out,
                             char *err, size_t errlen)
{
    return throttle_parse_file(path, out, err, errlen, NULL);
}

/* Makes path absolute against the current directory (a reload re-reads
 * it after the host may have changed directory, as memcached -d does);
 * NULL when out of memory or the directory is unknown. */
static char *throttle_absolute(const char *path)
{
    if (path[0] == '/') {
        char *abs = config_dup(path, strlen(path));
        if (abs == NULL)
            errno = ENOMEM;
        return abs;
    }
    /* A buffer of our own: getcwd's would come from libc's malloc. */
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return NULL;
    size_t lc = strlen(cwd), lp = strlen(path);
    char *abs = malloc(lc + 1 + lp + 1);
    if (abs == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(abs, cwd, lc);
    abs[lc] = '/';
    memcpy(abs + lc + 1, path, lp + 1);
    return abs;
}

/* Applies counter.throttle.config = PATH: parses the file now (an error
 * stops the start) and keeps its path for reloads. */
static bool config_throttle(cnt_config *c, const char *key, const char *v,
                            char *err, size_t errlen,
                            const cnt_config_origin *origin)
{
    char p[CNT_CLIP_BUF];
    if (*v == '\0')
        return config_bad_value(key, v, "a file path", err, errlen, origin);
    char *abs = throttle_absolute(v);
    if (abs == NULL && errno == ENOMEM)
        return config_error(err, errlen, origin, "%s: out of memory", key);
    if (abs == NULL)
        return config_error(err, errlen, origin, "%s: cannot make \"%s\" an "
                            "absolute path: %s", key,
                            config_clip_path(p, v), strerror(errno));
    cnt_throttle_file f;
    if (!throttle_parse_file(abs, &f, err, errlen, origin)) {
        free(abs);
        return false;
    }
    /* What a former key set is this parse's own copy (config_begin). */
    free(c->throttle_path);
    cnt_throttle_file_free(&c->throttle);
    c->throttle_path = abs;
    c->throttle = f;
    return true;
}

/* Frees what of/in `own` the configuration `keep` does not also hold: the
 * parts of a parse's copy that did not become, or stopped being, the
 * configuration's. */
static void config_drop(cnt_config *own, const cnt_config *keep)
{
    if (own->groups != keep->groups)
        cnt_groups_free(own->groups);
    if (own->admin_secret != keep->admin_secret)
        config_secret_free(own->admin_secret, own->admin_secret_len);
    if (own->throttle_path != keep->throttle_path)
        free(own->throttle_path);
    if (own->throttle.tenants != keep->throttle.tenants)
        cnt_throttle_file_free(&own->throttle);
}

/* Starts a parse of c in *work, a copy with groups, secret and throttle
 * settings of its own: a failed parse drops them and leaves c's as they
 * were. */
static bool config_begin(cnt_config *work, const cnt_config *c, char *err,
                         size_t errlen)
{
    *work = *c;
    work->groups = NULL;
    work->admin_secret = NULL;
    work->throttle_path = NULL;
    memset(&work->throttle, 0, sizeof(work->throttle));
    const char *key = "counter.group";
    if (c->groups != NULL &&
        (work->groups = cnt_groups_copy(c->groups)) == NULL)
        goto oom;
    key = "counter.admin_secret_file";
    if (c->admin_secret != NULL) {
        work->admin_secret = malloc(c->admin_secret_len);
        if (work->admin_secret == NULL)
            goto oom;
        memcpy(work->admin_secret, c->admin_secret, c->admin_secret_len);
    }
    key = "counter.throttle.config";
    if (c->throttle_path != NULL &&
        (work->throttle_path = config_dup(c->throttle_path,
                                          strlen(c->throttle_path))) == NULL)
        goto oom;
    if (!throttle_file_copy(&work->throttle, &c->throttle))
        goto oom;
    return true;
oom:
    cnt_config_free(work);
    return config_error(err, errlen, NULL, "%s: out of memory", key);
}

/* Ends a parse begun by config_begin: on success work replaces c (and
 * what c owned goes), on failure what work owns goes. Returns ok. */
static bool config_end(cnt_config *c, cnt_config *work, bool ok)
{
    if (!ok) {
        config_drop(work, c);
        return false;
    }
    config_drop(c, work);
    work->server.groups = work->groups;
    *c = *work;
    return true;
}

/* Applies a -X configuration string (NULL or "" changes nothing), including
 * a file named by counter.config. On error returns false and writes one
 * line naming the key and the value into err; c is then unchanged. */
bool cnt_config_parse_string(cnt_config *c, const char *s, char *err,
                             size_t errlen)
{
    if (s == NULL)
        return true;
    cnt_config work;
    if (!config_begin(&work, c, err, errlen))
        return false;
    bool ok = true;
    while (ok && *s != '\0') {
        size_t len = strcspn(s, ";");
        ok = config_token(config_apply, &work, s, len, err, errlen, NULL);
        s += len;
        if (*s == ';')
            s++;
    }
    return config_end(c, &work, ok);
}

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen)
{
    cnt_config work;
    if (!config_begin(&work, c, err, errlen))
        return false;
    return config_end(c, &work, config_apply_file(&work, path, err, errlen));
}
