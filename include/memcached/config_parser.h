/* config_parser.h: the item table the host's parse_config and get_config
 * fill in (SERVER_CORE_API). Layout as in memcached's engine interface. */
#ifndef CONFIG_PARSER_H
#define CONFIG_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

#ifdef __cplusplus
}
#endif

#endif /* CONFIG_PARSER_H */
