/* config_throttle.c: parses the throttle settings file that
 * counter.throttle.config names (at start) and the reload opcode re-reads:
 * node.capacity, default.hard_limit and tenant.NAME lines, each key once,
 * or, when its first byte that is not white space is '{', the same
 * settings as one JSON document (protocol/throttle_json.h); then the
 * checks that need the whole file. The result is plain data
 * (cnt_throttle_file) that the glue maps onto the throttle core. */
#include "config.h"

#include "engine/glue/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "protocol/throttle_json.h"

/* Throttle settings: what one line of a tenant's value may hold. */
#define CNT_THROTTLE_HARD_EXPECTED "0..4294967294 or unlimited"
#define CNT_THROTTLE_TENANT_EXPECTED \
    "reserved:0..4294967295[,hard_limit:0..4294967294|unlimited]"
#define CNT_THROTTLE_NAME_EXPECTED \
    "1..250 bytes of A-Z, a-z, 0-9, '_', '.', ':', '@' and '-'"

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
bool cnt_throttle_file_copy(cnt_throttle_file *dst,
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
    if (!cnt_config_parse_digits(v, len, &x) ||
        x >= CNT_THROTTLE_FILE_UNLIMITED)
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
        if (!cnt_config_name_byte((unsigned char)name[i]))
            return false;
    }
    return true;
}

/* Parses a tenant's value "reserved:N[,hard_limit:N|unlimited]" (fields in
 * any order and any case, each once, reserved required, white space
 * around them allowed) into *t; on error reports it against key. */
static bool tenant_value(const char *key, const char *v,
                         cnt_throttle_file_tenant *t,
                         const cnt_config_errctx *e)
{
    bool has_reserved = false, more = true;
    const char *p = v, *fname, *fval;
    size_t flen, vlen;
    t->has_hard = false;
    while (more) {
        if (!cnt_config_next_field(&p, &fname, &flen, &fval, &vlen, &more))
            goto bad;
        uint64_t x;
        if (flen == 8 && strncasecmp(fname, "reserved", 8) == 0) {
            if (has_reserved || !cnt_config_parse_digits(fval, vlen, &x) ||
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
        return cnt_config_error(e, "%s: hard limit below the reserve (value "
                                "\"%s\"; hard_limit must be at least "
                                "reserved)", cnt_config_clip_text(k, key),
                                cnt_config_clip_text(val, v));
    }
    return true;
bad:
    return cnt_config_bad_value(e, key, v, CNT_THROTTLE_TENANT_EXPECTED);
}

/* Reports a key given twice in a throttle file. */
static bool throttle_duplicate(const char *key, const char *v,
                               unsigned first, const cnt_config_errctx *e)
{
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    return cnt_config_error(e, "%s: duplicate key (value \"%s\"; first on "
                            "line %u)", cnt_config_clip_text(k, key),
                            cnt_config_clip_text(val, v), first);
}

/* node.capacity = N: the node's units per second, 0 turning throttling
 * off. */
bool cnt_throttle_key_capacity(const cnt_config_key *k, void *target,
                               const char *key, const char *v,
                               const cnt_config_errctx *e)
{
    throttle_parse *tp = target;
    uint64_t x;
    if (tp->capacity_line != 0)
        return throttle_duplicate(key, v, tp->capacity_line, e);
    if (!cnt_config_number(e, key, v, k->min, k->max, &x))
        return false;
    tp->f.has_capacity = true;
    tp->f.capacity = (uint32_t)x;
    tp->capacity_line = e->line;
    return true;
}

/* default.hard_limit = N|unlimited: the hard limit of the tenants without
 * one of their own. */
bool cnt_throttle_key_default_hard(const cnt_config_key *k, void *target,
                                   const char *key, const char *v,
                                   const cnt_config_errctx *e)
{
    (void)k;
    throttle_parse *tp = target;
    if (tp->default_line != 0)
        return throttle_duplicate(key, v, tp->default_line, e);
    if (!throttle_hard(v, strlen(v), &tp->f.default_hard))
        return cnt_config_bad_value(e, key, v, CNT_THROTTLE_HARD_EXPECTED);
    tp->f.has_default_hard = true;
    tp->default_line = e->line;
    return true;
}

/* tenant.NAME = reserved:N[,hard_limit:N|unlimited]: one tenant, whose
 * name the file may give once. */
bool cnt_throttle_key_tenant(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e)
{
    throttle_parse *tp = target;
    char kc[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    const char *name = key + strlen(k->name);
    size_t len = strlen(name);
    if (!throttle_name_ok(name, len))
        return cnt_config_error(e, "%s: invalid tenant name (value \"%s\"; "
                                "expected " CNT_THROTTLE_NAME_EXPECTED ")",
                                cnt_config_clip_text(kc, key),
                                cnt_config_clip_text(val, v));
    cnt_throttle_file_tenant t = {0};
    if (!tenant_value(key, v, &t, e))
        return false;
    size_t *slot;
    if (tp->nslots > 0 &&
        *(slot = throttle_slot(tp, (const uint8_t *)name, len)) != 0)
        return throttle_duplicate(key, v, tp->lines[*slot - 1].line, e);
    if (tp->f.ntenants == CNT_THROTTLE_FILE_TENANTS_MAX)
        return cnt_config_error(e, "%s: too many tenants (at most %u in a "
                                "file)", cnt_config_clip_text(kc, key),
                                CNT_THROTTLE_FILE_TENANTS_MAX);
    if (!throttle_grow(tp))
        return cnt_config_error(e, "%s: out of memory",
                                cnt_config_clip_text(kc, key));
    /* Found again: growing the index moves the names' slots. */
    slot = throttle_slot(tp, (const uint8_t *)name, len);
    t.name = malloc(len);
    if (t.name == NULL)
        return cnt_config_error(e, "%s: out of memory",
                                cnt_config_clip_text(kc, key));
    memcpy(t.name, name, len);
    t.len = (uint16_t)len;
    tp->lines[tp->f.ntenants].line = e->line;
    tp->f.tenants[tp->f.ntenants++] = t;
    *slot = tp->f.ntenants;
    return true;
}

/* Applies one line of a throttle file to the throttle_parse ctx through
 * the row of its key. */
static bool throttle_apply(void *ctx, const char *key, const char *v,
                           const cnt_config_errctx *e)
{
    const cnt_config_key *k = cnt_config_key_find(CNT_CONFIG_THROTTLE_FILE,
                                                  key);
    if (k == NULL) {
        char kc[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
        return cnt_config_error(e, "%s: unknown key (value \"%s\"; expected "
                                "node.capacity, default.hard_limit or "
                                "tenant.NAME)", cnt_config_clip_text(kc, key),
                                cnt_config_clip_text(val, v));
    }
    return k->parse(k, ctx, key, v, e);
}

/* The checks that need the whole file: tenants without a hard_limit take
 * the default one, which must not be below their reserve; the reserves
 * must fit a non-zero capacity. Errors name the later of the lines that
 * conflict. */
static bool throttle_finish(throttle_parse *tp, const char *path,
                            const cnt_config_errctx *at)
{
    cnt_throttle_file *f = &tp->f;
    uint32_t hard = f->has_default_hard ? f->default_hard
                                        : CNT_THROTTLE_FILE_UNLIMITED;
    cnt_config_errctx e = {at->err, at->errlen, path, 0};
    char k[CNT_CLIP_BUF];
    for (size_t i = 0; i < f->ntenants; i++) {
        cnt_throttle_file_tenant *t = &f->tenants[i];
        if (t->has_hard)
            continue;
        t->hard = hard;
        if (hard >= t->reserved)
            continue;
        unsigned l = tp->lines[i].line;
        e.line = l > tp->default_line ? l : tp->default_line;
        return cnt_config_error(&e, "tenant.%s: hard limit below the reserve "
                                "(reserved %" PRIu32 " on line %u, "
                                "default.hard_limit %" PRIu32 " on line %u; "
                                "give the tenant a hard_limit)",
                                cnt_config_clip(k, (const char *)t->name,
                                                t->len, CNT_CLIP_TEXT, false),
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
            e.line = l;
            return cnt_config_error(&e, "tenant.%s: over capacity (reserved "
                                    "%" PRIu32 " brings the reserves to "
                                    "%" PRIu64 ", node.capacity is %" PRIu32
                                    " on line %u)",
                                    cnt_config_clip(k, (const char *)t->name,
                                                    t->len, CNT_CLIP_TEXT,
                                                    false),
                                    t->reserved, sum, f->capacity,
                                    tp->capacity_line);
        }
        for (size_t j = i + 1; j < f->ntenants; j++)
            sum += f->tenants[j].reserved;
        e.line = tp->capacity_line;
        return cnt_config_error(&e, "node.capacity: over capacity (value "
                                "\"%" PRIu32 "\"; the reserves of the "
                                "tenants sum to %" PRIu64 ")", f->capacity,
                                sum);
    }
    return true;
}

/* A tenant of a JSON file: the checks of a tenant.NAME line (its name,
 * how many, memory), then into the parse. A reserve left out is 0; a
 * hard limit left out is resolved at the end, as for a line. */
static bool json_tenant(void *ctx, const char *name, size_t len,
                        const cnt_tjson_tenant *jt, char *err, size_t errlen)
{
    throttle_parse *tp = ctx;
    cnt_throttle_file_tenant t = {0};

    if (!throttle_name_ok(name, len)) {
        snprintf(err, errlen, "invalid tenant name (expected "
                 CNT_THROTTLE_NAME_EXPECTED ")");
        return false;
    }
    if (tp->f.ntenants == CNT_THROTTLE_FILE_TENANTS_MAX) {
        snprintf(err, errlen, "too many tenants (at most %u in a file)",
                 CNT_THROTTLE_FILE_TENANTS_MAX);
        return false;
    }
    /* jansson refuses a name given twice, so no index is needed. */
    if (!throttle_grow(tp) || (t.name = malloc(len)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    memcpy(t.name, name, len);
    t.len = (uint16_t)len;
    t.reserved = jt->has_reserved ? jt->reserved : 0;
    t.has_hard = jt->has_hard;
    t.hard = jt->hard;
    tp->lines[tp->f.ntenants].line = 0;
    tp->f.tenants[tp->f.ntenants++] = t;
    return true;
}

/* The checks of a JSON file that need all of it, as throttle_finish does
 * for lines; errors name the tenant's member. */
static bool json_finish(throttle_parse *tp, const char *path,
                        const cnt_config_errctx *at)
{
    cnt_throttle_file *f = &tp->f;
    uint32_t hard = f->has_default_hard ? f->default_hard
                                        : CNT_THROTTLE_FILE_UNLIMITED;
    char p[CNT_CLIP_BUF], k[CNT_CLIP_BUF];
    uint64_t sum = 0;

    for (size_t i = 0; i < f->ntenants; i++) {
        cnt_throttle_file_tenant *t = &f->tenants[i];
        if (!t->has_hard)
            t->hard = hard;
        if (t->hard < t->reserved)
            return cnt_config_error(at, "counter.throttle.config: file "
                                    "\"%s\": tenants.%s: hard limit below "
                                    "the reserve (reserved %" PRIu32 ", "
                                    "default.hard_limit %" PRIu32 "; give "
                                    "the tenant a hard_limit)",
                                    cnt_config_clip_path(p, path),
                                    cnt_config_clip(k, (const char *)t->name,
                                                    t->len, CNT_CLIP_TEXT,
                                                    false),
                                    t->reserved, t->hard);
        sum += t->reserved;
    }
    if (!f->has_capacity || f->capacity == 0 || sum <= f->capacity)
        return true;
    return cnt_config_error(at, "counter.throttle.config: file \"%s\": "
                            "node.capacity: over capacity (capacity %" PRIu32
                            "; the reserves of the tenants sum to %" PRIu64
                            ")", cnt_config_clip_path(p, path), f->capacity,
                            sum);
}

/* Reads and parses a JSON throttle file from f (already open, positioned
 * at its start), at most CNT_THROTTLE_FILE_MAX bytes. */
static bool json_parse_file(FILE *f, const char *path, throttle_parse *tp,
                            const cnt_config_errctx *at)
{
    char p[CNT_CLIP_BUF], msg[CNT_TJSON_ERR_SIZE];
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    cnt_tjson_file jf;
    bool ok;

    for (;;) {
        if (buf == NULL)
            return cnt_config_error(at, "counter.throttle.config: out of "
                                    "memory");
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap || cap > CNT_THROTTLE_FILE_MAX)
            break;
        char *b = realloc(buf, cap * 2);
        if (b == NULL)
            free(buf);
        buf = b;
        cap *= 2;
    }
    if (ferror(f) || len > CNT_THROTTLE_FILE_MAX) {
        free(buf);
        if (len > CNT_THROTTLE_FILE_MAX)
            return cnt_config_error(at, "counter.throttle.config: file \"%s\""
                                    " is larger than %u bytes",
                                    cnt_config_clip_path(p, path),
                                    CNT_THROTTLE_FILE_MAX);
        return cnt_config_error(at, "counter.throttle.config: cannot read "
                                "file \"%s\"", cnt_config_clip_path(p, path));
    }
    ok = cnt_tjson_file_parse((const uint8_t *)buf, len, &jf, json_tenant,
                              tp, msg, sizeof(msg));
    free(buf);
    if (!ok)
        return cnt_config_error(at, "counter.throttle.config: file \"%s\": "
                                "%s", cnt_config_clip_path(p, path), msg);
    tp->f.has_capacity = jf.has_node;
    tp->f.capacity = jf.node.capacity;
    tp->f.has_default_hard = jf.has_default_hard;
    tp->f.default_hard = jf.default_hard;
    return json_finish(tp, path, at);
}

/* Tells whether the file f holds JSON: its first byte that is not white
 * space is '{'. Leaves f at its start. */
static bool is_json(FILE *f)
{
    int ch;

    do
        ch = fgetc(f);
    while (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r');
    rewind(f);
    return ch == '{';
}

/* Parses the throttle file at path; at is where its key was (no place for
 * a reload), for the errors about the file as a whole. */
static bool throttle_parse_file(const char *path, cnt_throttle_file *out,
                                const cnt_config_errctx *at)
{
    throttle_parse tp;
    memset(&tp, 0, sizeof(tp));
    FILE *f = cnt_config_open_file("counter.throttle.config", path, at);
    if (f == NULL)
        return false;
    bool json = is_json(f);
    bool ok;
    if (json) {
        ok = json_parse_file(f, path, &tp, at);
        fclose(f);
    } else {
        fclose(f);
        ok = cnt_config_read_settings("counter.throttle.config", path,
                                      CNT_THROTTLE_FILE_MAX, throttle_apply,
                                      &tp, at) &&
             throttle_finish(&tp, path, at);
    }
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
    cnt_config_errctx e = {err, errlen, NULL, 0};
    return throttle_parse_file(path, out, &e);
}

/* Makes path absolute against the current directory (a reload re-reads
 * it after the host may have changed directory, as memcached -d does);
 * NULL when out of memory or the directory is unknown. */
static char *throttle_absolute(const char *path)
{
    if (path[0] == '/') {
        char *abs = cnt_config_dup(path, strlen(path));
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

/* counter.throttle.config = PATH: parses the file now (an error stops the
 * start) and keeps its path for reloads. */
bool cnt_config_key_throttle(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e)
{
    (void)k;
    cnt_config *c = target;
    char p[CNT_CLIP_BUF];
    if (*v == '\0')
        return cnt_config_bad_value(e, key, v, "a file path");
    char *abs = throttle_absolute(v);
    if (abs == NULL && errno == ENOMEM)
        return cnt_config_error(e, "%s: out of memory", key);
    if (abs == NULL)
        return cnt_config_error(e, "%s: cannot make \"%s\" an absolute "
                                "path: %s", key, cnt_config_clip_path(p, v),
                                strerror(errno));
    cnt_throttle_file f;
    if (!throttle_parse_file(abs, &f, e)) {
        free(abs);
        return false;
    }
    /* What a former key set is this parse's own copy (parse_begin in
     * configuration.c). */
    free(c->throttle_path);
    cnt_throttle_file_free(&c->throttle);
    c->throttle_path = abs;
    c->throttle = f;
    return true;
}
