/* configuration.c: parses the extension's settings from the -X string and
 * from the file counter.config names. Pure parsing: no sockets, no logging;
 * every error becomes one line that names the key first, then the value. */
#include "config.h"

#include "engine/glue/configuration.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CNT_CONFIG_PREFIX "counter."

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

/* Fills c with the defaults: each layer's own, and counter.enable off. */
void cnt_config_defaults(cnt_config *c)
{
    memset(c, 0, sizeof(*c));
    c->enable = false;
    cnt_server_config_defaults(&c->server);
    c->table.buckets = CNT_DEFAULT_BUCKETS;
    c->table.interval = CNT_DEFAULT_INTERVAL;
    c->table.memory_limit = 0;
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

static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen);

/* Applies one key/value pair (both already trimmed and unquoted). */
static bool config_apply(cnt_config *c, const char *key, const char *v,
                         char *err, size_t errlen,
                         const cnt_config_origin *origin)
{
    uint64_t x;
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    if (strncmp(key, CNT_CONFIG_PREFIX, strlen(CNT_CONFIG_PREFIX)) != 0)
        return config_error(err, errlen, origin,
                            "%s: unknown key (value \"%s\"; only counter.* "
                            "keys are accepted)", config_clip_text(k, key),
                            config_clip_text(val, v));
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
        if (!config_number(key, v, 1, UINT32_MAX, &x, err, errlen, origin))
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
        if (!config_number(key, v, 1, 32767, &x, err, errlen, origin))
            return false;
        c->server.keepalive_idle = (unsigned)x;
        return true;
    }
    if (strcmp(key, "counter.keepalive_interval") == 0) {
        if (!config_number(key, v, 1, 32767, &x, err, errlen, origin))
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
        ok = config_apply(c, k, v, err, errlen, origin);
    free(k);
    free(v);
    return ok;
}

/* What reading one line of a settings file found. */
typedef enum config_line_status {
    CONFIG_LINE_OK,
    CONFIG_LINE_EOF,
    CONFIG_LINE_TOO_LONG,       /* more than CNT_CONFIG_LINE_MAX bytes */
    CONFIG_LINE_FILE_TOO_BIG,   /* the file passed CNT_CONFIG_FILE_MAX */
    CONFIG_LINE_READ_ERROR,     /* errno says why */
} config_line_status;

/* Reads one line, without its '\n', into buf (CNT_CONFIG_LINE_MAX bytes),
 * counting every byte read in *total. Never reads past either limit, so a
 * file that has no line ends or no end costs nothing but the refusal. */
static config_line_status config_read_line(FILE *f, char *buf, size_t *len,
                                           size_t *total)
{
    size_t n = 0;
    int ch;
    *len = 0;
    while ((ch = getc(f)) != EOF) {
        if (++*total > CNT_CONFIG_FILE_MAX)
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

/* Opens path for reading if it is a regular file; on error writes the
 * message and returns NULL. O_NONBLOCK keeps a FIFO from blocking start-up
 * in open() until a writer comes: it is refused after fstat instead (the
 * flag means nothing for the regular files that get through). */
static FILE *config_open_file(const char *path, char *err, size_t errlen)
{
    char p[CNT_CLIP_BUF];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        config_error(err, errlen, NULL,
                     "counter.config: cannot read file \"%s\": %s",
                     config_clip_path(p, path), strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        config_error(err, errlen, NULL,
                     "counter.config: cannot read file \"%s\": %s",
                     config_clip_path(p, path), strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        config_error(err, errlen, NULL,
                     "counter.config: \"%s\" is %s, not a regular file",
                     config_clip_path(p, path), config_file_type(st.st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        config_error(err, errlen, NULL,
                     "counter.config: cannot read file \"%s\": %s",
                     config_clip_path(p, path), strerror(errno));
        close(fd);
    }
    return f;
}

/* Reports a line-level read failure (too long, too big, read error). */
static bool config_line_error(config_line_status st, const char *line,
                              size_t len, int e, char *err, size_t errlen,
                              const cnt_config_origin *origin)
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
        return config_error(err, errlen, NULL,
                            "counter.config: file \"%s\" is larger than "
                            "%u bytes", config_clip_path(p, origin->path),
                            CNT_CONFIG_FILE_MAX);
    default:
        return config_error(err, errlen, NULL,
                            "counter.config: cannot read file \"%s\": %s",
                            config_clip_path(p, origin->path),
                            e != 0 ? strerror(e) : "read error");
    }
}

/* Reads a file line by line: `key = value`, # comments, blank lines. */
static bool config_apply_file(cnt_config *c, const char *path, char *err,
                              size_t errlen)
{
    FILE *f = config_open_file(path, err, errlen);
    if (f == NULL)
        return false;
    cnt_config_origin origin = {path, 0};
    char line[CNT_CONFIG_LINE_MAX];
    size_t total = 0, n;
    bool ok = true;
    while (ok) {
        errno = 0;
        config_line_status st = config_read_line(f, line, &n, &total);
        if (st == CONFIG_LINE_EOF)
            break;
        origin.line++;
        if (st != CONFIG_LINE_OK) {
            ok = config_line_error(st, line, n, errno, err, errlen, &origin);
            break;
        }
        size_t len = n;
        const char *s = config_trim(line, &len);
        if (len == 0 || s[0] == '#')
            continue;
        ok = config_token(c, s, len, err, errlen, &origin);
    }
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
