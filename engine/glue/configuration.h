/* configuration.h: the extension's configuration: the -X string
 * ("key=value;key=value") and the optional file it names with
 * counter.config (`key = value` lines, # comments), the admin secret file
 * and the throttle settings file (same syntax, its own keys). Parsed here
 * rather than with the host's parser, whose edge cases lose errors. */
#ifndef CNT_ENGINE_CONFIGURATION_H
#define CNT_ENGINE_CONFIGURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/groups.h"
#include "engine/core/table.h"
#include "engine/core/users.h"
#include "engine/server/server.h"

/* The shortest admin secret (a shorter one could be guessed however
 * slowly failures are allowed to go). */
#define CNT_CONFIG_SECRET_MIN 16u
/* The longest admin secret, and the most of a throttle settings file. */
#define CNT_CONFIG_SECRET_MAX 4096u
#define CNT_THROTTLE_FILE_TENANTS_MAX 100000u
#define CNT_THROTTLE_FILE_MAX (16u << 20)
#define CNT_THROTTLE_FILE_NAME_MAX 250u
/* A hard limit of "unlimited" (the wire's value for it). */
#define CNT_THROTTLE_FILE_UNLIMITED 0xffffffffu

/* One `tenant.NAME = reserved:N[,hard_limit:N|unlimited]` line. */
typedef struct cnt_throttle_file_tenant {
    uint8_t *name;              /* 1..250 bytes of [A-Za-z0-9_.:-], owned */
    uint16_t len;
    uint32_t reserved;
    /* The line's hard_limit, else the file's default.hard_limit, else
     * CNT_THROTTLE_FILE_UNLIMITED; never below reserved. */
    uint32_t hard;
    bool has_hard;              /* the line gave hard_limit itself */
} cnt_throttle_file_tenant;

/* What a throttle settings file says (plain data: the glue maps it onto
 * the throttle core's settings). Tenants in file order, names unique; the
 * reserves sum to at most capacity when capacity is not 0. */
typedef struct cnt_throttle_file {
    bool has_capacity;          /* node.capacity */
    uint32_t capacity;
    bool has_default_hard;      /* default.hard_limit */
    uint32_t default_hard;
    size_t ntenants;
    cnt_throttle_file_tenant *tenants;  /* owned; NULL without tenants */
} cnt_throttle_file;

/* Everything the settings say; each part holds the settings of the layer
 * that uses them, whose header also defines their defaults. */
typedef struct cnt_config {
    bool enable;                /* counter.enable: false */
    /* counter.port, bind, max_connections, threads, keepalive*,
     * max_waits: see engine/server/server.h. After every successful parse
     * server.groups points at groups below. */
    cnt_server_config server;
    /* counter.buckets, consumption_stats.interval (or stat_interval),
     * memory_limit: see engine/core/table.h (the other fields stay 0, the
     * table's defaults). */
    cnt_table_config table;
    /* counter.group.NAME: created with the first group, NULL without any;
     * owned here, freed by cnt_config_free. */
    cnt_groups *groups;
    /* counter.admin_secret_file: the file's content less one final line
     * end (NULL without the key); owned here, wiped and freed by
     * cnt_config_free. Never to be logged. */
    uint8_t *admin_secret;
    size_t admin_secret_len;
    /* counter.throttle.config: the file's path made absolute, for the
     * reload opcode (NULL without the key), and what the file said at
     * start; both owned here. */
    char *throttle_path;
    cnt_throttle_file throttle;
    /* counter.users_file: its path ("" without the key), read when the
     * server is built; counter.default_tenant: the tenant of connections
     * that did not authenticate as a user ("" without the key: "default"
     * once users or a default tenant make connections pay). */
    char users_path[4096];
    char default_tenant[CNT_USER_NAME_MAX + 1];
} cnt_config;

/* Fills c with the defaults (c must own nothing: new, or freed). */
void cnt_config_defaults(cnt_config *c);

/* Frees what c owns (its groups, secret and throttle settings) once
 * nothing reads them any more (the server built from c is freed); c then
 * has none of them. */
void cnt_config_free(cnt_config *c);

/* Applies a -X configuration string (NULL or "" changes nothing), including
 * a file named by counter.config. On error returns false, leaves c as it
 * was and writes one line naming the key and the value into err. */
bool cnt_config_parse_string(cnt_config *c, const char *s, char *err,
                             size_t errlen);

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen);

/* Parses the throttle settings file at path into *out (which is written
 * only on success; free it with cnt_throttle_file_free). On error returns
 * false and writes one line naming the file, the line and the key into
 * err. Used at start (counter.throttle.config) and by a reload. */
bool cnt_throttle_file_parse(const char *path, cnt_throttle_file *out,
                             char *err, size_t errlen);

/* Frees what f owns; f is then empty. */
void cnt_throttle_file_free(cnt_throttle_file *f);

/* Parses the users file at path (doc/configuration.md, "Users") into a
 * new list *out (free it with cnt_users_free). Refused when group or
 * others may read or write the file. On error returns false and writes
 * one line naming the file (and the line, for a bad line) into err, never
 * a secret. */
bool cnt_users_file_parse(const char *path, cnt_users **out, char *err,
                          size_t errlen);

#endif
