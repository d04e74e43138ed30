/* configuration.h: the extension's configuration: the -X string
 * ("key=value;key=value") and the optional file it names with
 * counter.config (`key = value` lines, # comments). Parsed here rather than
 * with the host's parser, whose edge cases lose errors. */
#ifndef CNT_ENGINE_CONFIGURATION_H
#define CNT_ENGINE_CONFIGURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/groups.h"
#include "engine/core/table.h"
#include "engine/server/server.h"

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
} cnt_config;

/* Fills c with the defaults (c must own nothing: new, or freed). */
void cnt_config_defaults(cnt_config *c);

/* Frees what c owns (its groups) once nothing reads them any more (the
 * server built from c is freed); c then has no groups. */
void cnt_config_free(cnt_config *c);

/* Applies a -X configuration string (NULL or "" changes nothing), including
 * a file named by counter.config. On error returns false, leaves c as it
 * was and writes one line naming the key and the value into err. */
bool cnt_config_parse_string(cnt_config *c, const char *s, char *err,
                             size_t errlen);

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen);

#endif
