/* config_parser.h: the item table SERVER_CORE_API.parse_config and
 * get_config fill in. As in memcached's set it uses bool but leaves
 * <stdbool.h> to the includer (see doc/host-interface.md). */
#ifndef CONFIG_PARSER_H
#define CONFIG_PARSER_H

#include <stdint.h>
#include <stdio.h>
#include <memcached/visibility.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a value is converted; the numbering (0..4) is part of the ABI. */
enum config_datatype {
    DT_SIZE,
    DT_FLOAT,
    DT_BOOL,
    DT_STRING,
    DT_CONFIGFILE
};

/* Where the converted value goes; the member used follows the datatype
 * (DT_CONFIGFILE uses dt_string). */
union config_value {
    size_t *dt_size;
    float *dt_float;
    bool *dt_bool;
    char **dt_string;
};

/* One key to look for; an array of them ends with key == NULL. */
struct config_item {
    const char *key;
    enum config_datatype datatype;
    union config_value value;
    bool found;
};

/* The host's own parser as a plain function. Declared because the real
 * header declares it (so the name is taken); extensions reach the parser
 * through SERVER_CORE_API.parse_config, and mchost defines no function of
 * this name. Returns 0 ok, 1 unknown keys, -1 bad input. */
MEMCACHED_PUBLIC_API int parse_config(const char *str,
                                      struct config_item items[],
                                      FILE *error);

#ifdef __cplusplus
}
#endif

#endif /* CONFIG_PARSER_H */
