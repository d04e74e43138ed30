/* configuration.h: the extension's configuration: the -X string
 * ("key=value;key=value") and the optional file it names with
 * counter.config (`key = value` lines, # comments). Parsed here rather than
 * with the host's parser, whose edge cases lose errors. */
#ifndef CNT_ENGINE_CONFIGURATION_H
#define CNT_ENGINE_CONFIGURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CNT_CONFIG_MAX_BINDS 8
#define CNT_CONFIG_ADDR_MAX 64

typedef struct cnt_config {
    bool enable;                        /* counter.enable: false */
    uint16_t port;                      /* counter.port: 11215 (0 = any free) */
    unsigned nbinds;                    /* counter.bind: "127.0.0.1" */
    char binds[CNT_CONFIG_MAX_BINDS][CNT_CONFIG_ADDR_MAX];
    unsigned max_connections;           /* counter.max_connections: 0 */
    size_t buckets;                     /* counter.buckets: 1000000 */
    uint32_t interval;                  /* counter.consumption_stats.interval
                                           or counter.stat_interval: 86400 */
    unsigned threads;                   /* counter.threads: CPUs, at most 4 */
    uint64_t memory_limit;              /* counter.memory_limit: 0 */
    /* TCP keepalive on counter connections, so that a holder whose machine
     * vanished (power, network) loses its resources after about
     * idle + interval * count seconds instead of never. */
    bool keepalive;                     /* counter.keepalive: true */
    unsigned keepalive_idle;            /* counter.keepalive_idle: 30 */
    unsigned keepalive_interval;        /* counter.keepalive_interval: 10 */
    unsigned keepalive_count;           /* counter.keepalive_count: 3 */
} cnt_config;

/* Fills c with the defaults. */
void cnt_config_defaults(cnt_config *c);

/* Applies a -X configuration string (NULL or "" changes nothing), including
 * a file named by counter.config. On error returns false and writes one
 * line naming the key and the value into err. */
bool cnt_config_parse_string(cnt_config *c, const char *s, char *err,
                             size_t errlen);

/* Applies a configuration file; same error contract. */
bool cnt_config_parse_file(cnt_config *c, const char *path, char *err,
                           size_t errlen);

#endif
