/* fuzz_config.c: libFuzzer target for the configuration parser (the -X
 * string, the file format, the admin secret file, the throttle settings
 * file and the users file): no crash or leak, clear errors, sane
 * results. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "engine/glue/configuration.h"

/* A failure must leave the settings untouched and write a message that
 * starts "counter:"; a success must leave every setting in its range.
 * Either way the configuration is freed after, so a leak of its groups
 * shows under ASan. */

/* Checks the settings a successful parse produced. */
static void check_ranges(const cnt_config *c)
{
    FUZZ_CHECK(c->server.nbinds >= 1 &&
               c->server.nbinds <= CNT_SERVER_MAX_BINDS);
    for (unsigned i = 0; i < c->server.nbinds; i++) {
        uint8_t a[sizeof(struct in6_addr)];
        FUZZ_CHECK(memchr(c->server.binds[i], 0, CNT_SERVER_ADDR_MAX) != NULL);
        FUZZ_CHECK(inet_pton(AF_INET, c->server.binds[i], a) == 1 ||
                   inet_pton(AF_INET6, c->server.binds[i], a) == 1);
    }
    FUZZ_CHECK(c->table.buckets >= 1);
    FUZZ_CHECK(c->table.interval >= 1);
    FUZZ_CHECK(c->server.threads >= 1);
    FUZZ_CHECK(c->server.max_waits >= 1);
    /* The server sees exactly the groups the configuration owns, each
     * with a maximum and a name the settings syntax can write. */
    FUZZ_CHECK(c->server.groups == c->groups);
    for (size_t i = 0; i < cnt_groups_count(c->groups); i++) {
        const uint8_t *name;
        uint16_t len;
        const cnt_group *g = cnt_groups_at(c->groups, i, &name, &len);
        FUZZ_CHECK(g != NULL && g->maximum >= 1);
        FUZZ_CHECK(len >= 1 && len <= 255);
        for (uint16_t j = 0; j < len; j++)
            FUZZ_CHECK(!isspace(name[j]) && name[j] != ';' &&
                       name[j] != '=' && name[j] != '"');
        FUZZ_CHECK(cnt_groups_find(c->groups, name, len) == g);
    }
}

/* True when an error message says which setting is wrong: the key (the
 * throttle file's keys too), or the kind of problem for messages about no
 * particular key (a malformed token or an over-long file line, both quoted
 * from their start). */
static bool names_setting(const char *err)
{
    static const char *const marks[] = {
        "counter.", "malformed setting", "unknown key", "line longer than",
        "unterminated quote", "out of memory", "node.capacity",
        "default.hard_limit", "tenant.",
    };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(err, marks[i]) != NULL)
            return true;
    return false;
}

/* Checks one parse's outcome against the state before it. */
static void check_outcome(bool ok, const cnt_config *before,
                          const cnt_config *after, const char *err,
                          size_t errlen)
{
    if (ok) {
        check_ranges(after);
        return;
    }
    /* A failed parse changes nothing and says why, in one terminated line
     * that names the setting ("counter: ..."). */
    FUZZ_CHECK(memcmp(before, after, sizeof *before) == 0);
    FUZZ_CHECK(memchr(err, '\0', errlen) != NULL);
    FUZZ_CHECK(strncmp(err, "counter:", errlen < 8 ? errlen - 1 : 8) == 0);
    FUZZ_CHECK(errlen < 10 || strlen(err) > strlen("counter: "));
    FUZZ_CHECK(strchr(err, '\n') == NULL);
    /* Messages name the key first and cut long values, so a value longer
     * than the buffer cannot push the key out (a bug this target found,
     * 2026-11-22; corpus: regress-long-value-hides-key). */
    if (errlen >= 256)
        FUZZ_CHECK(names_setting(err));
}

/* For a one-token -X string with a key, a roomy message must quote the
 * key's start: the parser names the key first and cuts it at 64 bytes. */
static void check_names_key(const char *s, const char *err)
{
    const char *eq = strchr(s, '=');
    if (strchr(s, ';') != NULL || eq == NULL)
        return;
    const char *k = s, *e = eq;
    while (k < e && isspace((unsigned char)*k))
        k++;
    while (e > k && isspace((unsigned char)e[-1]))
        e--;
    size_t klen = (size_t)(e - k) > 64 ? 64 : (size_t)(e - k);
    for (size_t i = 0; i < klen; i++)
        if (iscntrl((unsigned char)k[i]))
            return;                     /* shown as '?' in the message */
    if (klen > 0)
        FUZZ_CHECK(memmem(err, strlen(err), k, klen) != NULL);
}

/* Parses the input as a -X string, with a roomy and a tiny error buffer. */
static void fuzz_string(const char *s)
{
    /* counter.config opens whatever path it names: the file format is
     * fuzzed through fuzz_file instead, the kinds of file (directories,
     * FIFOs, devices, huge files) by tests/test_configuration. */
    if (strstr(s, "counter.config") != NULL ||
        strstr(s, "counter.admin_secret_file") != NULL ||
        strstr(s, "counter.throttle.config") != NULL ||
        strstr(s, "counter.users_file") != NULL)
        return;
    static const size_t lens[] = { 256, 12 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        cnt_config before, c;
        char err[256];
        memset(err, 'x', sizeof err);
        cnt_config_defaults(&c);
        before = c;
        bool ok = cnt_config_parse_string(&c, s, err, lens[i]);
        check_outcome(ok, &before, &c, err, lens[i]);
        if (!ok && lens[i] >= 256)
            check_names_key(s, err);
        /* The same settings applied again on top succeed again with the
         * same groups (the parse works on a copy of those it has). */
        if (ok) {
            size_t n = cnt_groups_count(c.groups);
            FUZZ_CHECK(cnt_config_parse_string(&c, s, err, lens[i]));
            check_ranges(&c);
            FUZZ_CHECK(cnt_groups_count(c.groups) == n);
        }
        cnt_config_free(&c);
    }
}

/* Writes data to a new memfd; returns it, its path in path (64 bytes). */
static int memfd_with(const uint8_t *data, size_t size, char *path)
{
    int fd = memfd_create("fuzz_config", 0);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, data, size) == (ssize_t)size);
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

/* Parses the input as a configuration file (through a memfd). */
static void fuzz_file(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = memfd_with(data, size, path);
    cnt_config before, c;
    char err[256];
    memset(err, 'x', sizeof err);
    cnt_config_defaults(&c);
    before = c;
    bool ok = cnt_config_parse_file(&c, path, err, sizeof err);
    check_outcome(ok, &before, &c, err, sizeof err);
    cnt_config_free(&c);
    close(fd);
}

/* Reads the input as an admin secret file: the secret is the content
 * less one final "\n" or "\r\n"; an error says which rule failed and
 * quotes nothing of the content (the message is made of fixed text and
 * the path alone). */
static void fuzz_secret(const uint8_t *data, size_t size)
{
    char path[64], input[128];
    int fd = memfd_with(data, size, path);
    snprintf(input, sizeof input, "counter.admin_secret_file=%s", path);
    cnt_config before, c;
    char err[256];
    memset(err, 'x', sizeof err);
    cnt_config_defaults(&c);
    before = c;
    bool ok = cnt_config_parse_string(&c, input, err, sizeof err);
    check_outcome(ok, &before, &c, err, sizeof err);
    size_t n = size;
    if (n > 0 && data[n - 1] == '\n') {
        n--;
        if (n > 0 && data[n - 1] == '\r')
            n--;
    }
    if (ok) {
        FUZZ_CHECK(n >= CNT_CONFIG_SECRET_MIN && n <= CNT_CONFIG_SECRET_MAX);
        FUZZ_CHECK(c.admin_secret_len == n);
        FUZZ_CHECK(memcmp(c.admin_secret, data, n) == 0);
    } else {
        static const char head[] = "counter: counter.admin_secret_file: "
                                   "file \"";
        FUZZ_CHECK(strncmp(err, head, strlen(head)) == 0);
        const char *rest = err + strlen(head) + strlen(path);
        FUZZ_CHECK(strncmp(err + strlen(head), path, strlen(path)) == 0);
        FUZZ_CHECK((n == 0 && strncmp(rest, "\" is empty", 10) == 0) ||
                   (n >= 1 && n < CNT_CONFIG_SECRET_MIN &&
                    strncmp(rest, "\" holds a secret of", 19) == 0) ||
                   (n > CNT_CONFIG_SECRET_MAX &&
                    strncmp(rest, "\" holds more than", 17) == 0));
    }
    cnt_config_free(&c);
    FUZZ_CHECK(c.admin_secret == NULL && c.admin_secret_len == 0);
    close(fd);
}

/* The model of a user's or a tenant's name bytes, written out here rather
 * than taken from the parser: [A-Za-z0-9_.:@-], whatever the locale (the
 * users file and the throttle file share the rule). */
static bool user_name_byte(uint8_t b)
{
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
           (b >= '0' && b <= '9') || b == '_' || b == '.' || b == ':' ||
           b == '@' || b == '-';
}

/* Checks a throttle file a parse accepted: names as the syntax allows,
 * unique; hard limits at least the reserves, the default where a line
 * gave none; the reserves within a non-zero capacity. */
static void check_throttle(const cnt_throttle_file *f)
{
    FUZZ_CHECK(f->ntenants <= CNT_THROTTLE_FILE_TENANTS_MAX);
    FUZZ_CHECK((f->tenants == NULL) == (f->ntenants == 0));
    uint32_t dflt = f->has_default_hard ? f->default_hard
                                        : CNT_THROTTLE_FILE_UNLIMITED;
    FUZZ_CHECK(f->has_default_hard || f->default_hard == 0);
    FUZZ_CHECK(f->has_capacity || f->capacity == 0);
    uint64_t sum = 0;
    for (size_t i = 0; i < f->ntenants; i++) {
        const cnt_throttle_file_tenant *t = &f->tenants[i];
        FUZZ_CHECK(t->len >= 1 && t->len <= CNT_THROTTLE_FILE_NAME_MAX);
        for (uint16_t j = 0; j < t->len; j++)
            FUZZ_CHECK(user_name_byte(t->name[j]));
        FUZZ_CHECK(t->hard >= t->reserved);
        FUZZ_CHECK(t->has_hard || t->hard == dflt);
        for (size_t k = 0; k < i; k++)
            FUZZ_CHECK(f->tenants[k].len != t->len ||
                       memcmp(f->tenants[k].name, t->name, t->len) != 0);
        sum += t->reserved;
    }
    if (f->has_capacity && f->capacity > 0)
        FUZZ_CHECK(sum <= f->capacity);
}

/* Parses the input as a throttle settings file, on its own (as a reload
 * does) and through counter.throttle.config: the same verdict and
 * message, the same settings; a failure writes nothing. */
static void fuzz_throttle(const uint8_t *data, size_t size)
{
    char path[64], input[128];
    int fd = memfd_with(data, size, path);
    cnt_throttle_file f, fb;
    char err[256], err2[256];
    memset(err, 'x', sizeof err);
    memset(&f, 0x5a, sizeof f);
    fb = f;
    bool ok = cnt_throttle_file_parse(path, &f, err, sizeof err);
    if (ok) {
        check_throttle(&f);
    } else {
        FUZZ_CHECK(memcmp(&f, &fb, sizeof f) == 0);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_CHECK(strncmp(err, "counter: ", 9) == 0);
        FUZZ_CHECK(strchr(err, '\n') == NULL);
        /* The file and line, or the key for the file as a whole. */
        char at[80];
        snprintf(at, sizeof at, "counter: %s:", path);
        FUZZ_CHECK(strncmp(err, at, strlen(at)) == 0 ||
                   strncmp(err, "counter: counter.throttle.config: ",
                           34) == 0);
    }
    snprintf(input, sizeof input, "counter.throttle.config=%s", path);
    cnt_config before, c;
    memset(err2, 'x', sizeof err2);
    cnt_config_defaults(&c);
    before = c;
    bool ok2 = cnt_config_parse_string(&c, input, err2, sizeof err2);
    check_outcome(ok2, &before, &c, err2, sizeof err2);
    FUZZ_CHECK(ok2 == ok);
    if (ok) {
        FUZZ_CHECK(c.throttle_path != NULL &&
                   strcmp(c.throttle_path, path) == 0);
        FUZZ_CHECK(c.throttle.has_capacity == f.has_capacity &&
                   c.throttle.capacity == f.capacity &&
                   c.throttle.has_default_hard == f.has_default_hard &&
                   c.throttle.default_hard == f.default_hard &&
                   c.throttle.ntenants == f.ntenants);
        for (size_t i = 0; i < f.ntenants; i++) {
            const cnt_throttle_file_tenant *a = &f.tenants[i];
            const cnt_throttle_file_tenant *b = &c.throttle.tenants[i];
            FUZZ_CHECK(a->len == b->len && a->reserved == b->reserved &&
                       a->hard == b->hard && a->has_hard == b->has_hard &&
                       memcmp(a->name, b->name, a->len) == 0);
        }
        cnt_throttle_file_free(&f);
        FUZZ_CHECK(f.ntenants == 0 && f.tenants == NULL);
    } else {
        FUZZ_CHECK(strcmp(err, err2) == 0);
    }
    cnt_config_free(&c);
    FUZZ_CHECK(c.throttle_path == NULL && c.throttle.tenants == NULL);
    close(fd);
}

/* Parses the input as a users file (mode 0600): accepted, every user has
 * names the syntax allows, a name once, known privileges and a secret
 * of 16..4096 bytes found in the input; refused, one line that names the
 * file (and the line) or the key, and the users file is refused as a
 * whole once group or others may read it. */
static void fuzz_users(const uint8_t *data, size_t size)
{
    char path[64], err[256];
    int fd = memfd_with(data, size, path);
    cnt_users *u = NULL;
    FUZZ_CHECK(fchmod(fd, 0600) == 0);
    memset(err, 'x', sizeof err);
    bool ok = cnt_users_file_parse(path, &u, err, sizeof err);
    if (ok) {
        FUZZ_CHECK(u != NULL);
        for (size_t i = 0; i < u->n; i++) {
            const cnt_user *x = &u->v[i];
            FUZZ_CHECK(x->name_len >= 1 && x->name_len <= 255);
            FUZZ_CHECK(x->tenant_len >= 1 && x->tenant_len <= 255);
            for (uint16_t j = 0; j < x->name_len; j++)
                FUZZ_CHECK(user_name_byte(x->name[j]));
            for (uint16_t j = 0; j < x->tenant_len; j++)
                FUZZ_CHECK(user_name_byte(x->tenant[j]));
            FUZZ_CHECK((x->privileges & ~(CNT_PRIV_ADMIN |
                                          CNT_PRIV_UNTHROTTLED)) == 0);
            FUZZ_CHECK(x->secret_len >= CNT_CONFIG_SECRET_MIN &&
                       x->secret_len <= CNT_CONFIG_SECRET_MAX);
            FUZZ_CHECK(memmem(data, size, x->secret, x->secret_len) != NULL);
            FUZZ_CHECK(cnt_users_find(u, x->name, x->name_len) == x);
        }
        cnt_users_free(u);
    } else {
        FUZZ_CHECK(u == NULL);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_CHECK(strchr(err, '\n') == NULL);
        char at[80];
        snprintf(at, sizeof at, "counter: %s:", path);
        FUZZ_CHECK(strncmp(err, at, strlen(at)) == 0 ||
                   strncmp(err, "counter: counter.users_file: ", 29) == 0);
    }
    /* Readable by the group: refused, whatever it holds. */
    FUZZ_CHECK(fchmod(fd, 0640) == 0);
    FUZZ_CHECK(!cnt_users_file_parse(path, &u, err, sizeof err));
    FUZZ_CHECK(strstr(err, "has mode 0640") != NULL);
    close(fd);
}

/* Input: a mode byte, then the text. Odd: a configuration file; 2: an
 * admin secret file; 4: a throttle settings file; 6: a users file; other
 * even values: a -X string. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    if (data[0] & 1) {
        fuzz_file(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 2) {
        fuzz_secret(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 4) {
        fuzz_throttle(data + 1, size - 1);
        return 0;
    }
    if (data[0] == 6) {
        fuzz_users(data + 1, size - 1);
        return 0;
    }
    char *s = malloc(size);
    FUZZ_CHECK(s != NULL);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    fuzz_string(s);
    free(s);
    return 0;
}
