/* parse_config.h: the host's "key=value;key=value" parser offered to
 * extensions as SERVER_CORE_API.parse_config, also used by get_config. */
#ifndef MCH_PARSE_CONFIG_H
#define MCH_PARSE_CONFIG_H

#include <stdbool.h> /* config_parser.h uses bool and leaves this to us */
#include <stdio.h>

#include <memcached/config_parser.h>

/* Result of mch_parse_config, as the interface numbers it. */
enum mch_parse_status {
    MCH_PARSE_OK = 0,        /* every key known, every value valid */
    MCH_PARSE_UNKNOWN = 1,   /* valid, but some keys were not in items */
    MCH_PARSE_INVALID = -1   /* a malformed token or an unusable value */
};

/* Parses str into items (see mchost(1) for the syntax); messages go to
 * error when it is not NULL. DT_STRING values are malloc'ed copies that
 * the caller frees. */
int mch_parse_config(const char *str, struct config_item items[],
                     FILE *error);

#endif /* MCH_PARSE_CONFIG_H */
