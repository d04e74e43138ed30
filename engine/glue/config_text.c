/* config_text.c: the text side of the configuration parser: the one-line
 * error messages (key first, then the value, both clipped, never a
 * secret's content) and the syntax the -X string and every settings file
 * share: `key=value` tokens, trimming, quotes, comma-separated fields and
 * digits. */
#include "config.h"

#include "engine/glue/config_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies s[0..len) into out (CNT_CLIP_BUF bytes) for an error message: at
 * most max bytes, "..." marking a cut (at the end, or at the start when
 * keep_tail, since a path's end says most), control bytes shown as '?' so
 * the message stays one line. Returns out. */
const char *cnt_config_clip(char *out, const char *s, size_t len, size_t max,
                            bool keep_tail)
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
const char *cnt_config_clip_text(char *out, const char *s)
{
    return cnt_config_clip(out, s, strlen(s), CNT_CLIP_TEXT, false);
}

/* Clips a file path for a message, keeping its end. */
const char *cnt_config_clip_path(char *out, const char *path)
{
    return cnt_config_clip(out, path, strlen(path), CNT_CLIP_PATH, true);
}

/* Writes one error line into e's buffer: "counter: ", the file position
 * if any, then the message. */
bool cnt_config_error(const cnt_config_errctx *e, const char *fmt, ...)
{
    if (e->err == NULL || e->errlen == 0)
        return false;
    int n = 0;
    if (e->path != NULL) {
        char path[CNT_CLIP_BUF];
        n = snprintf(e->err, e->errlen, "counter: %s:%u: ",
                     cnt_config_clip_path(path, e->path), e->line);
    } else {
        n = snprintf(e->err, e->errlen, "counter: ");
    }
    if (n < 0 || (size_t)n >= e->errlen)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err + n, e->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* Reports a bad value as "KEY: invalid value "VALUE" (expected ...)". */
bool cnt_config_bad_value(const cnt_config_errctx *e, const char *key,
                          const char *v, const char *expected)
{
    char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    return cnt_config_error(e, "%s: invalid value \"%s\" (expected %s)",
                            cnt_config_clip_text(k, key),
                            cnt_config_clip_text(val, v), expected);
}

/* Trims white space at both ends of s[0..*len) and returns the new start. */
const char *cnt_config_trim(const char *s, size_t *len)
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
bool cnt_config_next_field(const char **p, const char **name,
                           size_t *name_len, const char **value,
                           size_t *value_len, bool *more)
{
    size_t span = strcspn(*p, ",");
    size_t len = span;
    const char *item = cnt_config_trim(*p, &len);
    const char *colon = memchr(item, ':', len);

    if (colon == NULL)
        return false;
    *name_len = (size_t)(colon - item);
    *name = cnt_config_trim(item, name_len);
    *value_len = len - (size_t)(colon + 1 - item);
    *value = cnt_config_trim(colon + 1, value_len);
    *more = (*p)[span] != '\0';
    *p += span + (*more ? 1 : 0);
    return true;
}

/* Whether b may be part of a name; see config_int.h. */
bool cnt_config_name_byte(unsigned char b)
{
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
           (b >= '0' && b <= '9') || b == '_' || b == '.' || b == ':' ||
           b == '-' || b == '@';
}

/* Parses v[0..len), a non-empty run of decimal digits, into *out; false
 * on anything else (signs, spaces, overflow past 2^64-1). */
bool cnt_config_parse_digits(const char *v, size_t len, uint64_t *out)
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

/* Copies n bytes into a new NUL-terminated string. Not strndup: a token
 * from a settings file is not NUL-terminated (it may fill the line buffer),
 * and strndup may look one byte past n for the terminator. */
char *cnt_config_dup(const char *p, size_t n)
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
bool cnt_config_token(cnt_config_apply_fn fn, void *ctx, const char *tok,
                      size_t len, const cnt_config_errctx *e)
{
    tok = cnt_config_trim(tok, &len);
    if (len == 0)
        return true;
    const char *eq = memchr(tok, '=', len);
    size_t klen = eq != NULL ? (size_t)(eq - tok) : 0;
    const char *key = cnt_config_trim(tok, &klen);
    char kc[CNT_CLIP_BUF], vc[CNT_CLIP_BUF];
    if (eq == NULL || klen == 0)
        return cnt_config_error(e, "malformed setting \"%s\" (expected "
                                "key=value)",
                                cnt_config_clip(kc, tok, len, CNT_CLIP_TEXT,
                                                false));
    size_t vlen = len - (size_t)(eq + 1 - tok);
    const char *val = cnt_config_trim(eq + 1, &vlen);
    if (vlen > 0 && val[0] == '"') {
        if (vlen < 2 || val[vlen - 1] != '"')
            return cnt_config_error(e, "%s: unterminated quote in value %s",
                                    cnt_config_clip(kc, key, klen,
                                                    CNT_CLIP_TEXT, false),
                                    cnt_config_clip(vc, val, vlen,
                                                    CNT_CLIP_TEXT, false));
        val++;
        vlen -= 2;
    }
    char *k = cnt_config_dup(key, klen);
    char *v = cnt_config_dup(val, vlen);
    bool ok;
    if (k == NULL || v == NULL)
        ok = cnt_config_error(e, "%s: out of memory",
                              cnt_config_clip(kc, key, klen, CNT_CLIP_TEXT,
                                              false));
    else
        ok = fn(ctx, k, v, e);
    free(k);
    free(v);
    return ok;
}
