/* config_users.c: reads the users file that counter.users_file names: one
 * user a line, "NAME TENANT PRIVILEGES SECRET", # comments and blank lines
 * ignored. Like ssh with its keys, a file that group or others may read
 * or write is refused. Read with read(2), not stdio, so no copy of a
 * secret stays in a stdio buffer; every buffer that held one is wiped.
 * Errors name the file and the line, never a secret. */
#include "config.h"

#include "engine/glue/config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "counter.users_file"
/* A users file is a few lines per service; far more is the wrong file. */
#define USERS_FILE_MAX (1u << 20)

/* Checks a name field (what: "user" or "tenant"); false after the
 * error. */
static bool check_name(const cnt_config_errctx *e, const char *what,
                       const char *s, size_t n)
{
    char c[CNT_CLIP_BUF];
    if (n > CNT_USER_NAME_MAX)
        return cnt_config_error(e, KEY ": %s name \"%s\" is longer than "
                                "%u bytes", what,
                                cnt_config_clip(c, s, n, CNT_CLIP_TEXT,
                                                false), CNT_USER_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if (!cnt_config_name_byte((unsigned char)s[i]))
            return cnt_config_error(e, KEY ": %s name \"%s\" has a byte "
                                    "outside [A-Za-z0-9_.:@-]", what,
                                    cnt_config_clip(c, s, n, CNT_CLIP_TEXT,
                                                    false));
    return true;
}

/* Parses the privileges field ("-", or a comma list of admin and
 * unthrottled) into *out. */
static bool parse_privileges(const cnt_config_errctx *e, const char *s,
                             size_t n, uint8_t *out)
{
    char c[CNT_CLIP_BUF];
    *out = 0;
    if (n == 1 && s[0] == '-')
        return true;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        if (j - i == 5 && memcmp(s + i, "admin", 5) == 0)
            *out |= CNT_PRIV_ADMIN;
        else if (j - i == 11 && memcmp(s + i, "unthrottled", 11) == 0)
            *out |= CNT_PRIV_UNTHROTTLED;
        else
            return cnt_config_error(e, KEY ": unknown privilege \"%s\" "
                                    "(expected -, or admin and/or "
                                    "unthrottled separated by commas)",
                                    cnt_config_clip(c, s + i, j - i,
                                                    CNT_CLIP_TEXT, false));
        i = j + 1;
    }
    return true;
}

/* Splits line[0..n) into at most max white-space separated fields;
 * returns how many it found (max + 1 when there are more). */
static size_t split(const char *line, size_t n, const char **f, size_t *fl,
                    size_t max)
{
    size_t k = 0, i = 0;
    while (i < n) {
        while (i < n && (line[i] == ' ' || line[i] == '\t' ||
                         line[i] == '\r'))
            i++;
        if (i == n)
            break;
        if (k == max)
            return max + 1;
        f[k] = line + i;
        while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            i++;
        fl[k] = (size_t)(line + i - f[k]);
        k++;
    }
    return k;
}

/* Copies n bytes into a new buffer (not terminated); NULL when short. */
static uint8_t *copy(const char *s, size_t n)
{
    uint8_t *p = malloc(n > 0 ? n : 1);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Parses one line (no line end) into a new user of u; false after the
 * error. A comment or blank line adds nothing. */
static bool parse_line(const cnt_config_errctx *e, const char *line,
                       size_t n, cnt_users *u, unsigned *lines)
{
    const char *f[4];
    size_t fl[4];
    char c[CNT_CLIP_BUF];
    size_t k = split(line, n, f, fl, 4);
    if (k == 0 || f[0][0] == '#')
        return true;
    if (k != 4)
        return cnt_config_error(e, KEY ": expected 4 fields (NAME TENANT "
                                "PRIVILEGES SECRET), found %s",
                                k > 4 ? "more" : k == 1 ? "1" :
                                k == 2 ? "2" : "3");
    if (!check_name(e, "user", f[0], fl[0]) ||
        !check_name(e, "tenant", f[1], fl[1]))
        return false;
    uint8_t priv;
    if (!parse_privileges(e, f[2], fl[2], &priv))
        return false;
    if (fl[3] < CNT_CONFIG_SECRET_MIN || fl[3] > CNT_CONFIG_SECRET_MAX)
        return cnt_config_error(e, KEY ": user \"%s\": its secret has %zu "
                                "bytes (expected %u..%u)",
                                cnt_config_clip(c, f[0], fl[0], CNT_CLIP_TEXT,
                                                false), fl[3],
                                CNT_CONFIG_SECRET_MIN, CNT_CONFIG_SECRET_MAX);
    for (size_t i = 0; i < u->n; i++)
        if (u->v[i].name_len == fl[0] &&
            memcmp(u->v[i].name, f[0], fl[0]) == 0)
            return cnt_config_error(e, KEY ": user \"%s\" is already on "
                                    "line %u",
                                    cnt_config_clip(c, f[0], fl[0],
                                                    CNT_CLIP_TEXT, false),
                                    lines[i]);
    cnt_user nu = {.name = copy(f[0], fl[0]), .name_len = (uint16_t)fl[0],
                   .tenant = copy(f[1], fl[1]),
                   .tenant_len = (uint16_t)fl[1],
                   .secret = copy(f[3], fl[3]), .secret_len = fl[3],
                   .privileges = priv};
    cnt_user *v = realloc(u->v, (u->n + 1) * sizeof(*v));
    if (v != NULL)
        u->v = v;
    if (nu.name == NULL || nu.tenant == NULL || nu.secret == NULL ||
        v == NULL) {
        free(nu.name);
        free(nu.tenant);
        if (nu.secret != NULL)
            cnt_wipe(nu.secret, nu.secret_len);
        free(nu.secret);
        return cnt_config_error(e, KEY ": out of memory");
    }
    lines[u->n] = e->line;
    u->v[u->n++] = nu;
    return true;
}

/* Reads the whole file at fd into a new buffer of *n bytes (at most
 * USERS_FILE_MAX); NULL after the error. */
static char *read_all(int fd, const char *path, size_t *n,
                      const cnt_config_errctx *at)
{
    char p[CNT_CLIP_BUF];
    char *buf = malloc(USERS_FILE_MAX + 1);
    if (buf == NULL) {
        cnt_config_error(at, KEY ": out of memory");
        return NULL;
    }
    size_t len = 0;
    while (len <= USERS_FILE_MAX) {
        ssize_t r = read(fd, buf + len, USERS_FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            cnt_config_error(at, KEY ": cannot read file \"%s\": %s",
                             cnt_config_clip_path(p, path), strerror(errno));
            cnt_wipe(buf, len);
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (len > USERS_FILE_MAX) {
        cnt_config_error(at, KEY ": file \"%s\" is larger than %u bytes",
                         cnt_config_clip_path(p, path), USERS_FILE_MAX);
        cnt_wipe(buf, len);
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

/* counter.users_file = PATH: the path made absolute (the file must exist
 * now); the file itself is read when the server is built. */
bool cnt_config_key_users(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e)
{
    (void)k;
    cnt_config *c = target;
    char p[CNT_CLIP_BUF];
    if (*v == '\0')
        return cnt_config_bad_value(e, key, v, "a file path");
    char *abs = realpath(v, NULL);
    if (abs == NULL)
        return cnt_config_error(e, "%s: cannot read file \"%s\": %s", key,
                                cnt_config_clip_path(p, v), strerror(errno));
    bool fits = strlen(abs) < sizeof(c->users_path);
    if (fits)
        strcpy(c->users_path, abs);
    free(abs);
    if (!fits)
        return cnt_config_error(e, "%s: path \"%s\" is too long", key,
                                cnt_config_clip_path(p, v));
    return true;
}

/* counter.default_tenant = NAME. */
bool cnt_config_key_default_tenant(const cnt_config_key *k, void *target,
                                   const char *key, const char *v,
                                   const cnt_config_errctx *e)
{
    (void)k;
    cnt_config *c = target;
    size_t n = strlen(v);
    bool ok = n > 0 && n <= CNT_USER_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = cnt_config_name_byte((unsigned char)v[i]);
    if (!ok)
        return cnt_config_bad_value(e, key, v, "a tenant name of 1..255 "
                                    "bytes of [A-Za-z0-9_.:@-]");
    memcpy(c->default_tenant, v, n + 1);
    return true;
}

/* Parses the users file at path; see configuration.h. */
bool cnt_users_file_parse(const char *path, cnt_users **out, char *err,
                          size_t errlen)
{
    cnt_config_errctx at = {err, errlen, NULL, 0};
    char p[CNT_CLIP_BUF];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        cnt_config_error(&at, KEY ": cannot read file \"%s\": %s",
                         cnt_config_clip_path(p, path), strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cnt_config_error(&at, KEY ": \"%s\" is not a regular file",
                                cnt_config_clip_path(p, path));
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        close(fd);
        return cnt_config_error(&at, KEY ": file \"%s\" has mode %04o: "
                                "group or others may read or change it, "
                                "refused (it holds secrets: chmod 600 it)",
                                cnt_config_clip_path(p, path),
                                (unsigned)(st.st_mode & 07777));
    }
    size_t len = 0;
    char *buf = read_all(fd, path, &len, &at);
    close(fd);
    if (buf == NULL)
        return false;
    cnt_users *u = calloc(1, sizeof(*u));
    unsigned *lines = calloc(len / 2 + 1, sizeof(*lines));
    bool ok = u != NULL && lines != NULL;
    if (!ok)
        cnt_config_error(&at, KEY ": out of memory");
    cnt_config_errctx e = {err, errlen, path, 0};
    for (size_t i = 0; ok && i < len;) {
        size_t j = i;
        while (j < len && buf[j] != '\n')
            j++;
        e.line++;
        if (memchr(buf + i, '\0', j - i) != NULL)
            ok = cnt_config_error(&e, KEY ": a NUL byte in the line");
        else
            ok = parse_line(&e, buf + i, j - i, u, lines);
        i = j + 1;
    }
    free(lines);
    cnt_wipe(buf, len);
    free(buf);
    if (!ok) {
        cnt_users_free(u);
        return false;
    }
    *out = u;
    return true;
}
