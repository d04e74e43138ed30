/* config_values.c: the parsers of the settings' values that the rows of
 * the key table name: numbers in bounds, booleans, byte counts, durations
 * (protocol/duration.h's grammar, counted in each setting's step), the
 * bind list, the Throttr value size and a group's definition. The generic
 * ones store where their row says, so a key of an existing kind is one
 * row. */
#include "config.h"

#include "engine/glue/config_int.h"
#include "protocol/duration.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A group's name is the counter name it applies to, capped at 255 bytes
 * (the wire allows longer counter names, but a group is a label someone
 * types into a settings file); its value lists max, wait and lease. */
#define CNT_GROUP_NAME_MAX 255u
#define CNT_GROUP_EXPECTED \
    "max:1..4294967295[,wait:DURATION][,lease:DURATION]"

/* Stores x (within the row's bounds) in the unsigned integer of k->size
 * bytes at k->at of target. */
static void store(const cnt_config_key *k, void *target, uint64_t x)
{
    unsigned char *p = (unsigned char *)target + k->at;
    switch (k->size) {
    case 1: { uint8_t n = (uint8_t)x; memcpy(p, &n, sizeof(n)); break; }
    case 2: { uint16_t n = (uint16_t)x; memcpy(p, &n, sizeof(n)); break; }
    case 4: { uint32_t n = (uint32_t)x; memcpy(p, &n, sizeof(n)); break; }
    default: memcpy(p, &x, sizeof(x)); break;
    }
}

/* Parses a NUL-terminated run of decimal digits. */
static bool parse_u64(const char *v, uint64_t *out)
{
    return cnt_config_parse_digits(v, strlen(v), out);
}

/* Parses a number in [min, max] or reports it against key. */
bool cnt_config_number(const cnt_config_errctx *e, const char *key,
                       const char *v, uint64_t min, uint64_t max,
                       uint64_t *out)
{
    uint64_t x;
    if (!parse_u64(v, &x) || x < min || x > max) {
        char range[48];
        snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64, min, max);
        return cnt_config_bad_value(e, key, v, range);
    }
    *out = x;
    return true;
}

/* A key holding a number in [k->min, k->max]. */
bool cnt_config_key_number(const cnt_config_key *k, void *target,
                           const char *key, const char *v,
                           const cnt_config_errctx *e)
{
    uint64_t x;
    if (!cnt_config_number(e, key, v, k->min, k->max, &x))
        return false;
    store(k, target, x);
    return true;
}

/* A key holding a byte count with an optional K, M or G suffix (powers of
 * 1024), within the row's bounds when it has them. */
bool cnt_config_key_bytes(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e)
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
    if (!parse_u64(digits, &x) || x > (UINT64_MAX >> shift))
        goto bad;
    x <<= shift;
    if (k->max != 0 && (x < k->min || x > k->max))
        return cnt_config_bad_value(e, key, v, k->range);
    store(k, target, x);
    return true;
bad:
    return cnt_config_bad_value(e, key, v, "bytes, optionally with a K, M "
                                "or G suffix");
}

/* A key holding a boolean in any of the spellings the docs list. */
bool cnt_config_key_bool(const cnt_config_key *k, void *target,
                         const char *key, const char *v,
                         const cnt_config_errctx *e)
{
    static const char *const yes[] = {"true", "yes", "1", "on"};
    static const char *const no[] = {"false", "no", "0", "off"};
    _Static_assert(sizeof(yes) == sizeof(no), "spellings come in pairs");
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        bool b;
        if (strcasecmp(v, yes[i]) == 0)
            b = true;
        else if (strcasecmp(v, no[i]) == 0)
            b = false;
        else
            continue;
        memcpy((unsigned char *)target + k->at, &b, sizeof(b));
        return true;
    }
    return cnt_config_bad_value(e, key, v, "true/false, yes/no, on/off or "
                                "1/0");
}

/* counter.bind: IPv4 or IPv6 literals separated by commas or white space;
 * an IPv6 literal may be written in brackets. */
bool cnt_config_key_binds(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e)
{
    (void)k;
    cnt_server_config *c = &((cnt_config *)target)->server;
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
            return cnt_config_bad_value(e, key, v, most);
        }
        memcpy(c->binds[n++], addr, len + 1);
        p += span;
    }
    if (n == 0)
        goto bad;
    c->nbinds = n;
    return true;
bad:
    return cnt_config_bad_value(e, key, v, "IPv4 or IPv6 addresses "
                                "separated by commas or spaces");
}

/* counter.throttr.value_size: the Throttr protocol's number sizes. */
bool cnt_config_key_value_size(const cnt_config_key *k, void *target,
                               const char *key, const char *v,
                               const cnt_config_errctx *e)
{
    uint64_t x;
    if (!parse_u64(v, &x) || (x != 1 && x != 2 && x != 4 && x != 8))
        return cnt_config_bad_value(e, key, v, "1, 2, 4 or 8 (bytes)");
    store(k, target, x);
    return true;
}

/* Groups' wait and lease: milliseconds on the wire, 0 meaning none. */
static const cnt_config_span group_span = {
    1000000, "milliseconds", 0, UINT32_MAX,
    "at most 4294967295ms, about 49.7 days",
};

/* Parses the duration v[0..len) (protocol/duration.h: the one grammar
 * every setting shares) as a whole number of span's steps within its
 * bounds. On error writes ""V" PROBLEM (HINT" into msg, the closing
 * parenthesis left to the caller, which may add to it. */
static bool parse_duration(const char *v, size_t len,
                           const cnt_config_span *span, uint64_t *out,
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
                 cnt_config_clip(val, v, len, CNT_CLIP_TEXT, false),
                 span->step, span->step);
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
             cnt_config_clip(val, v, len, CNT_CLIP_TEXT, false), problem,
             hint);
    return false;
}

/* A key holding a duration counted in k->span's steps; an error reads
 * "KEY: "V" PROBLEM (HINT)". */
bool cnt_config_key_duration(const cnt_config_key *k, void *target,
                             const char *key, const char *v,
                             const cnt_config_errctx *e)
{
    char kc[CNT_CLIP_BUF], msg[256];
    uint64_t x;
    if (!parse_duration(v, strlen(v), k->span, &x, msg, sizeof(msg)))
        return cnt_config_error(e, "%s: %s)", cnt_config_clip_text(kc, key),
                                msg);
    store(k, target, x);
    return true;
}

/* Whether name[0..len) may name a group: 1..255 bytes, none of them white
 * space, ';', '=' or '"' (which the -X string and the file use to split
 * and quote settings, so such a name could not be written back). */
static bool group_name_ok(const char *name, size_t len)
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

/* The fields of a group's value, in the order the bits of "seen" use. */
enum { GROUP_MAX, GROUP_WAIT, GROUP_LEASE, GROUP_FIELDS };
static const char *const group_fields[GROUP_FIELDS] = {"max", "wait",
                                                       "lease"};

/* Which field name[0..len) names (any case), or GROUP_FIELDS for none. */
static unsigned group_field(const char *name, size_t len)
{
    for (unsigned f = 0; f < GROUP_FIELDS; f++)
        if (strlen(group_fields[f]) == len &&
            strncasecmp(name, group_fields[f], len) == 0)
            return f;
    return GROUP_FIELDS;
}

/* Parses a group's value "max:N[,wait:DURATION][,lease:DURATION]" (fields
 * in any order, each at most once, white space allowed around them) into
 * *g; on error reports it against key. */
static bool group_value(const char *key, const char *v, cnt_group *g,
                        const cnt_config_errctx *e)
{
    unsigned seen = 0;
    const char *p = v, *fname, *x;
    size_t flen, xlen;
    bool more = true;
    memset(g, 0, sizeof(*g));
    while (more) {
        if (!cnt_config_next_field(&p, &fname, &flen, &x, &xlen, &more))
            goto bad;
        unsigned f = group_field(fname, flen);
        if (f == GROUP_FIELDS || (seen & (1u << f)) != 0)
            goto bad;
        seen |= 1u << f;
        if (f == GROUP_MAX) {
            uint64_t n;
            if (!cnt_config_parse_digits(x, xlen, &n) || n < 1 ||
                n > UINT32_MAX)
                goto bad;
            g->maximum = (uint32_t)n;
        } else {
            char k[CNT_CLIP_BUF], val[CNT_CLIP_BUF], msg[256];
            uint64_t ms;
            if (!parse_duration(x, xlen, &group_span, &ms, msg, sizeof(msg)))
                return cnt_config_error(e, "%s: %s %s; value \"%s\")",
                                        cnt_config_clip_text(k, key),
                                        group_fields[f], msg,
                                        cnt_config_clip_text(val, v));
            *(f == GROUP_WAIT ? &g->wait_ms : &g->lease_ms) = (uint32_t)ms;
        }
    }
    if ((seen & (1u << GROUP_MAX)) != 0)
        return true;
bad:
    return cnt_config_bad_value(e, key, v, CNT_GROUP_EXPECTED);
}

/* counter.group.NAME = VALUE: defines the group, or redefines it (the
 * later definition wins). */
bool cnt_config_key_group(const cnt_config_key *k, void *target,
                          const char *key, const char *v,
                          const cnt_config_errctx *e)
{
    cnt_config *c = target;
    char kc[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    const char *name = key + strlen(k->name);
    size_t len = strlen(name);
    if (!group_name_ok(name, len))
        return cnt_config_error(e, "%s: invalid group name (value \"%s\"; "
                                "expected 1..%u bytes without white space, "
                                "';', '=' or '\"')",
                                cnt_config_clip_text(kc, key),
                                cnt_config_clip_text(val, v),
                                CNT_GROUP_NAME_MAX);
    cnt_group g;
    if (!group_value(key, v, &g, e))
        return false;
    if (c->groups == NULL)
        c->groups = cnt_groups_new();
    if (c->groups == NULL ||
        !cnt_groups_set(c->groups, (const uint8_t *)name, (uint16_t)len, &g))
        return cnt_config_error(e, "%s: out of memory",
                                cnt_config_clip_text(kc, key));
    return true;
}
