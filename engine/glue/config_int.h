/* config_int.h: what the files of the configuration parser share: the
 * error context every parser writes its one line through, the table of
 * keys (one row per key of the settings and of the throttle settings
 * file), the value parsers the rows name and the reader of `key = value`
 * files. Not for other users: engine/glue/configuration.h is the
 * interface (tests/test_config_keys.c reads the table). */
#ifndef CNT_ENGINE_CONFIG_INT_H
#define CNT_ENGINE_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/glue/configuration.h"

/* A settings file is a few dozen short lines; anything far bigger is the
 * wrong file (/dev/zero, a log), refused before it can eat memory. */
#define CNT_CONFIG_FILE_MAX (1u << 20)
#define CNT_CONFIG_LINE_MAX 4096u

/* How much of a key, value or token an error quotes, so a huge value cannot
 * push the rest of the message out of the caller's buffer. */
#define CNT_CLIP_TEXT 64u
#define CNT_CLIP_PATH 128u
#define CNT_CLIP_BUF (CNT_CLIP_PATH + 4u)

/* Where an error goes and where the setting it is about came from: the
 * caller's buffer (NULL or 0 bytes: errors are only returned), and the
 * file and line of the setting (path NULL: the -X string, or no place,
 * as for a whole-file error of a reload). */
typedef struct cnt_config_errctx {
    char *err;
    size_t errlen;
    const char *path;
    unsigned line;
} cnt_config_errctx;

/* Writes one error line through e: "counter: ", the file position if any,
 * then the message (whose key and value the caller has clipped). Returns
 * false, for `return cnt_config_error(...)`. */
bool cnt_config_error(const cnt_config_errctx *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reports a bad value as "KEY: invalid value "VALUE" (expected ...)". */
bool cnt_config_bad_value(const cnt_config_errctx *e, const char *key,
                          const char *v, const char *expected);

/* Copies s[0..len) into out (CNT_CLIP_BUF bytes) for an error message: at
 * most max bytes, "..." marking a cut (at the end, or at the start when
 * keep_tail), control bytes shown as '?'. Returns out. */
const char *cnt_config_clip(char *out, const char *s, size_t len, size_t max,
                            bool keep_tail);
/* Clips a NUL-terminated key or value; a file path, keeping its end. */
const char *cnt_config_clip_text(char *out, const char *s);
const char *cnt_config_clip_path(char *out, const char *path);

/* Trims white space at both ends of s[0..*len) and returns the new start. */
const char *cnt_config_trim(const char *s, size_t *len);

/* Takes the next "name:value" item of a comma-separated list at *p (each
 * part trimmed) and moves *p past it; *more says whether another item
 * follows. False when the item has no ':'. */
bool cnt_config_next_field(const char **p, const char **name,
                           size_t *name_len, const char **value,
                           size_t *value_len, bool *more);

/* Whether b may be part of a user's or a tenant's name in a settings
 * file: [A-Za-z0-9_.:@-], whatever the locale; one rule for the users
 * file and the throttle file, so any tenant a user belongs to can be
 * given settings. */
bool cnt_config_name_byte(unsigned char b);

/* Parses v[0..len), a non-empty run of decimal digits, into *out; false
 * on anything else (signs, spaces, overflow past 2^64-1). */
bool cnt_config_parse_digits(const char *v, size_t len, uint64_t *out);

/* Parses a number in [min, max] or reports it against key. */
bool cnt_config_number(const cnt_config_errctx *e, const char *key,
                       const char *v, uint64_t min, uint64_t max,
                       uint64_t *out);

/* Copies n bytes into a new NUL-terminated string (NULL: out of memory). */
char *cnt_config_dup(const char *p, size_t n);

/* Applies one trimmed, unquoted key/value pair of a settings file or the
 * -X string to ctx (a cnt_config, or a throttle file being parsed); e
 * holds the pair's place. */
typedef bool (*cnt_config_apply_fn)(void *ctx, const char *key,
                                    const char *v,
                                    const cnt_config_errctx *e);

/* Splits one "key=value" token, trims and unquotes both sides, and applies
 * it to ctx with fn. An empty (all-space) token is ignored. */
bool cnt_config_token(cnt_config_apply_fn fn, void *ctx, const char *tok,
                      size_t len, const cnt_config_errctx *e);

/* Reads the file at path, named by key, line by line (`key = value`,
 * # comments, blank lines), each setting to fn with ctx; a file over max
 * bytes is refused. Errors of a line name the file and the line; those of
 * the whole file (cannot open, too big) go through at, the key's place. */
bool cnt_config_read_settings(const char *key, const char *path, size_t max,
                              cnt_config_apply_fn fn, void *ctx,
                              const cnt_config_errctx *at);

/* Opens path, named by key, for reading if it is a regular file; on error
 * writes the message through e and returns NULL. */
FILE *cnt_config_open_file(const char *key, const char *path,
                           const cnt_config_errctx *e);

/* Which file a key is read from. */
typedef enum cnt_config_source {
    CNT_CONFIG_SETTINGS,        /* -X and counter.config: a cnt_config */
    CNT_CONFIG_THROTTLE_FILE,   /* counter.throttle.config's file */
} cnt_config_source;

typedef struct cnt_config_key cnt_config_key;

/* Parses value v of key (the row k matched it) into target (a cnt_config
 * for the settings, the throttle file being parsed for its keys), or
 * reports it through e. */
typedef bool (*cnt_config_parse_fn)(const cnt_config_key *k, void *target,
                                    const char *key, const char *v,
                                    const cnt_config_errctx *e);

/* The place of member m of cnt_config, for a row's `at` and `size`. */
#define CNT_CONFIG_FIELD(m) \
    .at = offsetof(cnt_config, m), .size = sizeof(((cnt_config *)0)->m)

/* One key. Adding a key of a kind that exists is one row in
 * cnt_config_keys (configuration.c) and one in doc/configuration.md, which
 * tests/test_config_keys.c holds them to. */
struct cnt_config_key {
    const char *name;           /* the key; with prefix, its start */
    bool prefix;                /* name is followed by a NAME of the user */
    cnt_config_source source;
    cnt_config_parse_fn parse;
    /* The field of target the key sets; the generic parsers (number,
     * bool, bytes, duration) store there an unsigned integer of size
     * bytes, or a bool. 0, 0 for a key that sets no one field. */
    size_t at, size;
    /* cnt_config_key_number's bounds, and cnt_config_key_bytes' when max
     * is not 0 (then range says them in words, for the message). */
    uint64_t min, max;
    const char *range;
    const struct cnt_config_span *span;  /* cnt_config_key_duration's */
    /* The default as doc/configuration.md's table shows it, without
     * backquotes (the value comes from the layer that owns the setting:
     * cnt_config_defaults); NULL where the doc's table has no default. */
    const char *dflt;
    const char *doc;            /* the section of doc/configuration.md
                                   whose table lists the key */
};

/* The rows; cnt_config_nkeys of them. */
extern const cnt_config_key cnt_config_keys[];
extern const size_t cnt_config_nkeys;

/* The row of key in source's keys, or NULL when it has none. */
const cnt_config_key *cnt_config_key_find(cnt_config_source source,
                                          const char *key);

/* Where a duration setting goes: the unit it is counted in (nanoseconds
 * per step) and its bounds, with the words a message uses for them. */
typedef struct cnt_config_span {
    uint64_t per;
    const char *step;       /* "milliseconds" */
    uint64_t min, max;      /* in steps */
    const char *bounds;     /* "at most 4294967295ms, about 49.7 days" */
} cnt_config_span;

/* The parsers of the rows (config_values.c, config_secret.c,
 * config_throttle.c, configuration.c). The generic ones store at k->at:
 * a number in [k->min, k->max]; a boolean; a byte count with K, M or G;
 * a duration of whole k->span steps. */
bool cnt_config_key_number(const cnt_config_key *k, void *target,
                           const char *key, const char *v,
                           const cnt_config_errctx *e);
bool cnt_config_key_bool(const cnt_config_key *k, void *target,
                         const char *key, const char *v,
                         const cnt_config_errctx *e);
bool cnt_config_key_bytes(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e);
bool cnt_config_key_duration(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e);
/* counter.bind, counter.throttr.value_size, counter.group.NAME. */
bool cnt_config_key_binds(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e);
bool cnt_config_key_value_size(const cnt_config_key *k, void *target,
                               const char *key, const char *v,
                               const cnt_config_errctx *e);
bool cnt_config_key_group(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e);
/* counter.admin_secret_file (config_secret.c). */
bool cnt_config_key_secret(const cnt_config_key *k, void *target,
                           const char *key, const char *v,
                           const cnt_config_errctx *e);
/* counter.throttle.config and the throttle file's node.capacity,
 * default.hard_limit and tenant.NAME (config_throttle.c). */
bool cnt_config_key_throttle(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e);
bool cnt_throttle_key_capacity(const cnt_config_key *k, void *target,
                               const char *key, const char *v,
                               const cnt_config_errctx *e);
bool cnt_throttle_key_default_hard(const cnt_config_key *k, void *target,
                                   const char *key, const char *v,
                                   const cnt_config_errctx *e);
bool cnt_throttle_key_tenant(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e);

/* counter.users_file and counter.default_tenant (config_users.c). */
bool cnt_config_key_users(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e);
bool cnt_config_key_default_tenant(const cnt_config_key *k, void *target,
                                   const char *key, const char *v,
                                   const cnt_config_errctx *e);

/* Wipes and frees a secret buffer of n bytes (NULL is fine). */
void cnt_config_secret_free(uint8_t *secret, size_t n);

/* Copies src into *dst (all or nothing); false when out of memory. */
bool cnt_throttle_file_copy(cnt_throttle_file *dst,
                            const cnt_throttle_file *src);

#endif
