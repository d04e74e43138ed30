/* configuration.c: the entry points of the configuration parser and the
 * table of keys. A parse works on a copy of the configuration, so an
 * error leaves it as it was; each setting of the -X string or of the file
 * counter.config names goes through the row of its key to the parser of
 * its kind (config_values.c, config_secret.c, config_throttle.c). Pure
 * parsing: no sockets, no logging; every error becomes one line that
 * names the key first, then the value (config_text.c). */
#include "config.h"

#include "engine/glue/config_int.h"

#include <stdlib.h>
#include <string.h>

#define CNT_CONFIG_PREFIX "counter."

/* The epoch-aligned window of the consumption statistics, in seconds. */
static const cnt_config_span interval_span = {
    1000000000, "seconds", 1, UINT32_MAX, "1s to 4294967295s",
};

/* TCP keepalive's idle time and probe interval: Linux takes whole seconds
 * up to 32767 (and a probe count up to 127). */
static const cnt_config_span keepalive_span = {
    1000000000, "seconds", 1, 32767, "1s to 32767s",
};

static bool key_config(const cnt_config_key *k, void *target,
                       const char *key, const char *v,
                       const cnt_config_errctx *e);

/* The sections of doc/configuration.md whose tables list the keys. */
#define DOC_KEYS "Keys"
#define DOC_THROTTLE "Throttle settings"

/* Every key, one row each: the name, the parser of its kind and where it
 * stores, its bounds, its default as the doc shows it and the doc's
 * section. The order is the doc's. */
const cnt_config_key cnt_config_keys[] = {
    {.name = "counter.enable", .parse = cnt_config_key_bool,
     CNT_CONFIG_FIELD(enable), .dflt = "false", .doc = DOC_KEYS},
    {.name = "counter.port", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.port), .min = 0, .max = 65535,
     .dflt = "11215", .doc = DOC_KEYS},
    {.name = "counter.bind", .parse = cnt_config_key_binds,
     CNT_CONFIG_FIELD(server.binds), .dflt = "127.0.0.1", .doc = DOC_KEYS},
    {.name = "counter.max_connections", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.max_connections), .min = 0, .max = UINT32_MAX,
     .dflt = "0", .doc = DOC_KEYS},
    {.name = "counter.buckets", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(table.buckets), .min = 1, .max = UINT32_MAX,
     .dflt = "1000000", .doc = DOC_KEYS},
    {.name = "counter.consumption_stats.interval",
     .parse = cnt_config_key_duration, CNT_CONFIG_FIELD(table.interval),
     .span = &interval_span, .dflt = "86400", .doc = DOC_KEYS},
    {.name = "counter.stat_interval", .parse = cnt_config_key_duration,
     CNT_CONFIG_FIELD(table.interval), .span = &interval_span,
     .dflt = "(same setting)", .doc = DOC_KEYS},
    {.name = "counter.threads", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.threads), .min = 1,
     .max = CNT_SERVER_THREADS_MAX, .dflt = "online CPUs, at most 4",
     .doc = DOC_KEYS},
    {.name = "counter.memory_limit", .parse = cnt_config_key_bytes,
     CNT_CONFIG_FIELD(table.memory_limit), .dflt = "0", .doc = DOC_KEYS},
    {.name = "counter.keepalive", .parse = cnt_config_key_bool,
     CNT_CONFIG_FIELD(server.keepalive), .dflt = "true", .doc = DOC_KEYS},
    {.name = "counter.keepalive_idle", .parse = cnt_config_key_duration,
     CNT_CONFIG_FIELD(server.keepalive_idle), .span = &keepalive_span,
     .dflt = "30", .doc = DOC_KEYS},
    {.name = "counter.keepalive_interval", .parse = cnt_config_key_duration,
     CNT_CONFIG_FIELD(server.keepalive_interval), .span = &keepalive_span,
     .dflt = "10", .doc = DOC_KEYS},
    {.name = "counter.keepalive_count", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.keepalive_count), .min = 1, .max = 127,
     .dflt = "3", .doc = DOC_KEYS},
    {.name = "counter.group.", .prefix = true,
     .parse = cnt_config_key_group, CNT_CONFIG_FIELD(groups),
     .dflt = "none", .doc = DOC_KEYS},
    {.name = "counter.max_waits", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.max_waits), .min = 1, .max = UINT32_MAX,
     .dflt = "1024", .doc = DOC_KEYS},
    {.name = "counter.throttr.port", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.throttr_port), .min = 0, .max = 65535,
     .dflt = "absent (off)", .doc = DOC_KEYS},
    {.name = "counter.throttr.value_size",
     .parse = cnt_config_key_value_size,
     CNT_CONFIG_FIELD(server.throttr_value_size), .dflt = "2",
     .doc = DOC_KEYS},
    {.name = "counter.http.port", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.http_port), .min = 0, .max = 65535,
     .dflt = "absent (off)", .doc = DOC_KEYS},
    /* Room for a browser's upgrade request; never past what a
     * connection's input buffer may grow to. */
    {.name = "counter.http.max_header", .parse = cnt_config_key_bytes,
     CNT_CONFIG_FIELD(server.http_max_header), .min = 1024, .max = 65536,
     .range = "1K..64K (bytes)", .dflt = "8192", .doc = DOC_KEYS},
    {.name = "counter.http.max_message", .parse = cnt_config_key_bytes,
     CNT_CONFIG_FIELD(server.http_max_message), .min = 256,
     .max = 1048576, .range = "256..1M (bytes)", .dflt = "4096",
     .doc = DOC_KEYS},
    {.name = "counter.config", .parse = key_config, .dflt = "none",
     .doc = DOC_KEYS},
    {.name = "counter.auth_fail_limit", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.auth_fail_limit), .min = 0, .max = UINT32_MAX,
     .dflt = "50", .doc = DOC_KEYS},
    {.name = "counter.auth_fail_limit_per_address",
     .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.auth_fail_limit_per_address), .min = 0,
     .max = UINT32_MAX, .dflt = "5", .doc = DOC_KEYS},
    {.name = "counter.admin_secret_file", .parse = cnt_config_key_secret,
     CNT_CONFIG_FIELD(admin_secret), .dflt = "none", .doc = DOC_KEYS},
    {.name = "counter.throttle.config", .parse = cnt_config_key_throttle,
     CNT_CONFIG_FIELD(throttle_path), .dflt = "none", .doc = DOC_KEYS},
    {.name = "counter.users_file", .parse = cnt_config_key_users,
     CNT_CONFIG_FIELD(users_path), .dflt = "none", .doc = DOC_KEYS},
    {.name = "counter.default_tenant",
     .parse = cnt_config_key_default_tenant,
     CNT_CONFIG_FIELD(default_tenant), .dflt = "absent (off)",
     .doc = DOC_KEYS},
    {.name = "counter.tenant_cost.read", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.tenant_cost[CNT_COST_READ]), .min = 0,
     .max = UINT32_MAX, .dflt = "1", .doc = DOC_KEYS},
    {.name = "counter.tenant_cost.acquire", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.tenant_cost[CNT_COST_ACQUIRE]), .min = 0,
     .max = UINT32_MAX, .dflt = "1", .doc = DOC_KEYS},
    {.name = "counter.tenant_cost.wait", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.tenant_cost[CNT_COST_WAIT]), .min = 0,
     .max = UINT32_MAX, .dflt = "1", .doc = DOC_KEYS},
    {.name = "counter.tenant_cost.limit", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.tenant_cost[CNT_COST_LIMIT]), .min = 0,
     .max = UINT32_MAX, .dflt = "1", .doc = DOC_KEYS},
    {.name = "counter.tenant_cost.admin", .parse = cnt_config_key_number,
     CNT_CONFIG_FIELD(server.tenant_cost[CNT_COST_ADMIN]), .min = 0,
     .max = UINT32_MAX, .dflt = "1", .doc = DOC_KEYS},
    /* The throttle settings file: keys of its own, each at most once. */
    {.name = "node.capacity", .source = CNT_CONFIG_THROTTLE_FILE,
     .parse = cnt_throttle_key_capacity, .min = 0, .max = UINT32_MAX,
     .doc = DOC_THROTTLE},
    {.name = "default.hard_limit", .source = CNT_CONFIG_THROTTLE_FILE,
     .parse = cnt_throttle_key_default_hard, .doc = DOC_THROTTLE},
    {.name = "tenant.", .prefix = true, .source = CNT_CONFIG_THROTTLE_FILE,
     .parse = cnt_throttle_key_tenant, .doc = DOC_THROTTLE},
};

const size_t cnt_config_nkeys =
    sizeof(cnt_config_keys) / sizeof(cnt_config_keys[0]);

/* The row of key in source's keys: the one of that name, or the prefix
 * key that key starts with. */
const cnt_config_key *cnt_config_key_find(cnt_config_source source,
                                          const char *key)
{
    for (size_t i = 0; i < cnt_config_nkeys; i++) {
        const cnt_config_key *k = &cnt_config_keys[i];
        if (k->source != source)
            continue;
        if (k->prefix ? strncmp(key, k->name, strlen(k->name)) == 0
                      : strcmp(key, k->name) == 0)
            return k;
    }
    return NULL;
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

/* Frees the groups, secret and throttle settings c owns; c then has
 * none. */
void cnt_config_free(cnt_config *c)
{
    if (c == NULL)
        return;
    cnt_groups_free(c->groups);
    c->groups = NULL;
    c->server.groups = NULL;
    cnt_config_secret_free(c->admin_secret, c->admin_secret_len);
    c->admin_secret = NULL;
    c->admin_secret_len = 0;
    free(c->throttle_path);
    c->throttle_path = NULL;
    cnt_throttle_file_free(&c->throttle);
}

/* Applies one key/value pair (both already trimmed and unquoted) to the
 * cnt_config ctx through the row of its key. */
static bool apply(void *ctx, const char *key, const char *v,
                  const cnt_config_errctx *e)
{
    char kc[CNT_CLIP_BUF], val[CNT_CLIP_BUF];
    if (strncmp(key, CNT_CONFIG_PREFIX, strlen(CNT_CONFIG_PREFIX)) != 0)
        return cnt_config_error(e, "%s: unknown key (value \"%s\"; only "
                                "counter.* keys are accepted)",
                                cnt_config_clip_text(kc, key),
                                cnt_config_clip_text(val, v));
    const cnt_config_key *k = cnt_config_key_find(CNT_CONFIG_SETTINGS, key);
    if (k == NULL)
        return cnt_config_error(e, "%s: unknown key (value \"%s\")",
                                cnt_config_clip_text(kc, key),
                                cnt_config_clip_text(val, v));
    return k->parse(k, ctx, key, v, e);
}

/* Reads a counter.config file into c; e is the key's place. */
static bool apply_file(cnt_config *c, const char *path,
                       const cnt_config_errctx *e)
{
    return cnt_config_read_settings("counter.config", path,
                                    CNT_CONFIG_FILE_MAX, apply, c, e);
}

/* counter.config = PATH: reads the settings file there and then. */
static bool key_config(const cnt_config_key *k, void *target,
                       const char *key, const char *v,
                       const cnt_config_errctx *e)
{
    (void)k;
    char val[CNT_CLIP_BUF];
    /* Files may not name further files: no include cycles to detect. */
    if (e->path != NULL)
        return cnt_config_error(e, "%s: not allowed in a configuration file "
                                "(value \"%s\"; a file cannot name "
                                "another)", key,
                                cnt_config_clip_text(val, v));
    if (*v == '\0')
        return cnt_config_bad_value(e, key, v, "a file path");
    return apply_file(target, v, e);
}

/* Frees what of/in `own` the configuration `keep` does not also hold: the
 * parts of a parse's copy that did not become, or stopped being, the
 * configuration's. */
static void parse_drop(cnt_config *own, const cnt_config *keep)
{
    if (own->groups != keep->groups)
        cnt_groups_free(own->groups);
    if (own->admin_secret != keep->admin_secret)
        cnt_config_secret_free(own->admin_secret, own->admin_secret_len);
    if (own->throttle_path != keep->throttle_path)
        free(own->throttle_path);
    if (own->throttle.tenants != keep->throttle.tenants)
        cnt_throttle_file_free(&own->throttle);
}

/* Starts a parse of c in *work, a copy with groups, secret and throttle
 * settings of its own: a failed parse drops them and leaves c's as they
 * were. */
static bool parse_begin(cnt_config *work, const cnt_config *c,
                        const cnt_config_errctx *e)
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
        (work->throttle_path = cnt_config_dup(
             c->throttle_path, strlen(c->throttle_path))) == NULL)
        goto oom;
    if (!cnt_throttle_file_copy(&work->throttle, &c->throttle))
        goto oom;
    return true;
oom:
    cnt_config_free(work);
    return cnt_config_error(e, "%s: out of memory", key);
}

/* Ends a parse begun by parse_begin: on success work replaces c (and
 * what c owned goes), on failure what work owns goes. Returns ok. */
static bool parse_end(cnt_config *c, cnt_config *work, bool ok)
{
    if (!ok) {
        parse_drop(work, c);
        return false;
    }
    parse_drop(c, work);
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
    cnt_config_errctx e = {err, errlen, NULL, 0};
    cnt_config work;
    if (!parse_begin(&work, c, &e))
        return false;
    bool ok = true;
    while (ok && *s != '\0') {
        size_t len = strcspn(s, ";");
        ok = cnt_config_token(apply, &work, s, len, &e);
        s += len;
        if (*s == ';')
            s++;
    }
    return parse_end(c, &work, ok);
}

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen)
{
    cnt_config_errctx e = {err, errlen, NULL, 0};
    cnt_config work;
    if (!parse_begin(&work, c, &e))
        return false;
    return parse_end(c, &work, apply_file(&work, path, &e));
}
