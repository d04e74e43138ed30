/* configuration.c: parses the extension's settings from the -X string and
 * from the file counter.config names. Pure parsing: no sockets, no logging;
 * every error becomes one line naming the key and the value. */
#include "config.h"

#include "engine/configuration.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CNT_CONFIG_PREFIX "counter."
#define CNT_THREADS_MAX 64u
#define CNT_THREADS_DEFAULT_MAX 4u

/* Where a key/value pair came from, so file errors can name the line. */
typedef struct cnt_config_origin {
    const char *path;       /* NULL for the -X string */
    unsigned line;
} cnt_config_origin;

/* Writes one error line into err, prefixed with the file position if any. */
static bool config_error(char *err, size_t errlen,
                         const cnt_config_origin *origin, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool config_error(char *err, size_t errlen,
                         const cnt_config_origin *origin, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return false;
    int n = 0;
    if (origin != NULL && origin->path != NULL)
        n = snprintf(err, errlen, "counter: %s:%u: ", origin->path,
                     origin->line);
    else
        n = snprintf(err, errlen, "counter: ");
    if (n < 0 || (size_t)n >= errlen)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* Fills c with the defaults. */
void cnt_config_defaults(cnt_config *c)
{
    memset(c, 0, sizeof(*c));
    c->enable = false;
    c->port = 11215;
    c->nbinds = 1;
    strcpy(c->binds[0], "127.0.0.1");
    c->max_connections = 0;
    c->buckets = 1000000;
    c->interval = 86400;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    c->threads = cpus > (long)CNT_THREADS_DEFAULT_MAX
                     ? CNT_THREADS_DEFAULT_MAX : (unsigned)cpus;
    c->memory_limit = 0;
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

/* Parses a non-empty run of decimal digits into *out; false on anything
 * else (signs, spaces, overflow past 2^64-1). */
static bool config_parse_u64(const char *v, uint64_t *out)
{
    if (*v == '\0')
        return false;
    uint64_t x = 0;
    for (; *v != '\0'; v++) {
        if (*v < '0' || *v > '9')
            return false;
        unsigned d = (unsigned)(*v - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

/* Parses a number in [min, max] or reports it against key. */
static bool config_number(const char *key, const char *v, uint64_t min,
                          uint64_t max, uint64_t *out, char *err,
                          size_t errlen, const cnt_config_origin *origin)
{
    uint64_t x;
    if (!config_parse_u64(v, &x) || x < min || x > max)
        return config_error(err, errlen, origin,
                            "invalid value \"%s\" for %s (expected %" PRIu64
                            "..%" PRIu64 ")", v, key, min, max);
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
    return config_error(err, errlen, origin,
                        "invalid value \"%s\" for %s (expected bytes, "
                        "optionally with a K, M or G suffix)", v, key);
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
    return config_error(err, errlen, origin,
                        "invalid value \"%s\" for %s (expected true/false, "
                        "yes/no, on/off or 1/0)", v, key);
}

/* Parses the bind list: IPv4 or IPv6 literals separated by commas or white
 * space; an IPv6 literal may be written in brackets. */
static bool config_binds(cnt_config *c, const char *key, const char *v,
                         char *err, size_t errlen,
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
        char addr[CNT_CONFIG_ADDR_MAX];
        if (len == 0 || len >= sizeof(addr))
            goto bad;
        memcpy(addr, a, len);
        addr[len] = '\0';
        if (inet_pton(AF_INET, addr, buf) != 1 &&
            inet_pton(AF_INET6, addr, buf) != 1)
            goto bad;
        if (n == CNT_CONFIG_MAX_BINDS)
            return config_error(err, errlen, origin,
                                "invalid value \"%s\" for %s (at most %u "
                                "addresses)", v, key, CNT_CONFIG_MAX_BINDS);
        memcpy(c->binds[n++], addr, len + 1);
        p += span;
    }
    if (n == 0)
        goto bad;
    c->nbinds = n;
    return true;
bad:
    return config_error(err, errlen, origin,
                        "invalid value \"%s\" for %s (expected IPv4 or IPv6 "
                        "addresses separated by commas or spaces)", v, key);
}

static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen);

/* Applies one key/value pair (both already trimmed and unquoted). */
static bool config_apply(cnt_config *c, const char *key, const char *v,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    uint64_t x;
    if (strncmp(key, CNT_CONFIG_PREFIX, strlen(CNT_CONFIG_PREFIX)) != 0)
        return config_error(err, errlen, origin,
                            "unknown key \"%s\" with value \"%s\" (only "
                            "counter.* keys are accepted)", key, v);
    if (strcmp(key, "counter.enable") == 0)
        return config_bool(key, v, &c->enable, err, errlen, origin);
    if (strcmp(key, "counter.port") == 0) {
        if (!config_number(key, v, 0, 65535, &x, err, errlen, origin))
            return false;
        c->port = (uint16_t)x;
        return true;
    }
    if (strcmp(key, "counter.bind") == 0)
        return config_binds(c, key, v, err, errlen, origin);
    if (strcmp(key, "counter.max_connections") == 0) {
        if (!config_number(key, v, 0, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->max_connections = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.buckets") == 0) {
        if (!config_number(key, v, 1, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->buckets = (size_t)x;
        return true;
    }
    if (strcmp(key, "counter.consumption_stats.interval") == 0 ||
        strcmp(key, "counter.stat_interval") == 0) {
        if (!config_number(key, v, 1, UINT32_MAX, &x, err, errlen, origin))
            return false;
        c->interval = (uint32_t)x;
        return true;
    }
    if (strcmp(key, "counter.threads") == 0) {
        if (!config_number(key, v, 1, CNT_THREADS_MAX, &x, err, errlen,
                           origin))
            return false;
        c->threads = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.memory_limit") == 0)
        return config_bytes(key, v, &c->memory_limit, err, errlen, origin);
    if (strcmp(key, "counter.config") == 0) {
        /* Files may not name further files: no include cycles to detect. */
        if (origin != NULL && origin->path != NULL)
            return config_error(err, errlen, origin,
                                "invalid key \"%s\" with value \"%s\" (a "
                                "configuration file cannot name another)",
                                key, v);
        if (*v == '\0')
            return config_error(err, errlen, origin,
                                "invalid value \"\" for %s (expected a file "
                                "path)", key);
        return config_apply_file(c, v, err, errlen);
    }
    return config_error(err, errlen, origin,
                        "unknown key \"%s\" with value \"%s\"", key, v);
}

/* Splits one "key<sep>value" token, trims and unquotes both sides, and
 * applies it. An empty (all-space) token is allowed and ignored. */
static bool config_token(cnt_config *c, const char *tok, size_t len,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    tok = config_trim(tok, &len);
    if (len == 0)
        return true;
    const char *eq = memchr(tok, '=', len);
    size_t klen = eq != NULL ? (size_t)(eq - tok) : 0;
    const char *key = config_trim(tok, &klen);
    if (eq == NULL || klen == 0)
        return config_error(err, errlen, origin,
                            "malformed setting \"%.*s\" (expected key=value)",
                            (int)len, tok);
    size_t vlen = len - (size_t)(eq + 1 - tok);
    const char *val = config_trim(eq + 1, &vlen);
    if (vlen > 0 && val[0] == '"') {
        if (vlen < 2 || val[vlen - 1] != '"')
            return config_error(err, errlen, origin,
                                "unterminated quote in value %.*s for %.*s",
                                (int)vlen, val, (int)klen, key);
        val++;
        vlen -= 2;
    }
    char *k = strndup(key, klen);
    char *v = strndup(val, vlen);
    bool ok;
    if (k == NULL || v == NULL)
        ok = config_error(err, errlen, origin, "out of memory");
    else
        ok = config_apply(c, k, v, err, errlen, origin);
    free(k);
    free(v);
    return ok;
}

/* Reads a file line by line: `key = value`, # comments, blank lines. */
static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return config_error(err, errlen, NULL,
                            "cannot read file \"%s\" named by counter.config: "
                            "%s", path, strerror(errno));
    cnt_config_origin origin = {path, 0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    bool ok = true;
    while (ok && (n = getline(&line, &cap, f)) >= 0) {
        origin.line++;
        size_t len = (size_t)n;
        const char *s = config_trim(line, &len);
        if (len == 0 || s[0] == '#')
            continue;
        ok = config_token(c, s, len, err, errlen, &origin);
    }
    if (ok && ferror(f))
        ok = config_error(err, errlen, NULL,
                          "cannot read file \"%s\" named by counter.config",
                          path);
    free(line);
    fclose(f);
    return ok;
}

/* Applies a -X configuration string (NULL or "" changes nothing), including
 * a file named by counter.config. On error returns false and writes one
 * line naming the key and the value into err; c is then unchanged. */
bool cnt_config_parse_string(cnt_config *c, const char *s, char *err,
                             size_t errlen)
{
    if (s == NULL)
        return true;
    cnt_config work = *c;
    while (*s != '\0') {
        size_t len = strcspn(s, ";");
        if (!config_token(&work, s, len, err, errlen, NULL))
            return false;
        s += len;
        if (*s == ';')
            s++;
    }
    *c = work;
    return true;
}

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen)
{
    cnt_config work = *c;
    if (!config_apply_file(&work, path, err, errlen))
        return false;
    *c = work;
    return true;
}
