/* throttle_json.h: the JSON documents of tenant throttling, as the seed's
 * SetNodeThrottleProperties and SetBucketThrottleProperties take them and
 * as a JSON throttle settings file holds them: parsed into plain values,
 * or refused with one line naming the field that is wrong. Pure functions
 * on a buffer (jansson's parse tree is the one allocation, freed before
 * each call returns); the server, the settings parser and the fuzz target
 * share them. The documents are described in doc/throttling.md. */
#ifndef CNT_PROTOCOL_THROTTLE_JSON_H
#define CNT_PROTOCOL_THROTTLE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* hard_limit "unlimited" (the wire's CNT_HARD_LIMIT_UNLIMITED). */
#define CNT_TJSON_UNLIMITED 0xffffffffu

/* A good size for the error buffers: every message fits. */
#define CNT_TJSON_ERR_SIZE 256u

/* A node document: {"capacity": N}, N in 0..4294967295 (units per
 * second; 0 turns throttling off). capacity is required. */
typedef struct cnt_tjson_node {
    uint32_t capacity;
} cnt_tjson_node;

/* A tenant document: {"reserved": N, "hard_limit": N | "unlimited"}; a
 * field left out is not set (has_* false). At least one is required, and
 * hard_limit, when both are given, is at least reserved. */
typedef struct cnt_tjson_tenant {
    bool has_reserved;
    uint32_t reserved;
    bool has_hard;
    uint32_t hard;          /* CNT_TJSON_UNLIMITED for "unlimited" */
} cnt_tjson_tenant;

/* Parses a node document doc[0..len) (no NUL needed) into *out. False,
 * with one line in err (at most errlen bytes, NUL-terminated) naming
 * what is wrong, for malformed JSON, anything but an object, an unknown
 * field, a wrong type or a number out of range; *out is then unchanged. */
bool cnt_tjson_node_parse(const uint8_t *doc, size_t len, cnt_tjson_node *out,
                          char *err, size_t errlen);

/* Parses a tenant document; the same contract. */
bool cnt_tjson_tenant_parse(const uint8_t *doc, size_t len,
                            cnt_tjson_tenant *out, char *err, size_t errlen);

/* A JSON throttle settings file:
 *   {"node": NODE DOCUMENT,
 *    "default": {"hard_limit": N | "unlimited"},
 *    "tenants": {"NAME": TENANT DOCUMENT, ...}}
 * every member optional, none other allowed, no name twice. */
typedef struct cnt_tjson_file {
    bool has_node;
    cnt_tjson_node node;
    bool has_default_hard;
    uint32_t default_hard;
} cnt_tjson_file;

/* Called for each tenant of a file, in the file's order, after its
 * document was parsed: name is NUL-terminated UTF-8 of len bytes (len >=
 * 1 is not promised). Return false to stop the parse, with a message in
 * err (which the call prefixes with the tenant's place). */
typedef bool (*cnt_tjson_tenant_fn)(void *ctx, const char *name, size_t len,
                                    const cnt_tjson_tenant *t, char *err,
                                    size_t errlen);

/* Parses a whole file doc[0..len) into *out, handing each tenant to fn.
 * False with one line in err naming the member (for example
 * "tenants.acme.hard_limit: ..."); *out may then be partly written. */
bool cnt_tjson_file_parse(const uint8_t *doc, size_t len, cnt_tjson_file *out,
                          cnt_tjson_tenant_fn fn, void *ctx, char *err,
                          size_t errlen);

/* Writes {"capacity":N} into out (room for cap bytes, NUL-terminated);
 * returns its length (without the NUL), truncated as snprintf does. */
size_t cnt_tjson_node_format(char *out, size_t cap, uint32_t capacity);

/* Writes {"reserved":N,"hard_limit":N|"unlimited"}; the same contract. */
size_t cnt_tjson_tenant_format(char *out, size_t cap, uint32_t reserved,
                               uint32_t hard);

#endif
