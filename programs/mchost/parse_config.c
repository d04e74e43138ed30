/* parse_config.c: the "key=value;..." parser a host offers extensions:
 * blanks around keys and values ignored, '\' escapes; unlike the original
 * host's parser it never reads past the end of the string. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "programs/mchost/parse_config.h"

#define MCH_CONFIG_MAX_DEPTH 8 /* nested DT_CONFIGFILE files */

static int parse_depth(const char *str, struct config_item items[],
                       FILE *error, int depth);

static void report(FILE *error, const char *what, const char *key,
                   const char *value)
{
    if (error != NULL)
        fprintf(error, "%s: %s%s%s\n", what, key, value ? "=" : "",
                value ? value : "");
}

/* Copies from *p up to an unescaped stop character (or the end) into out,
 * unescaping, without leading and trailing white space. */
static void take_until(const char **p, const char *stops, char *out)
{
    const char *s = *p;
    size_t n = 0, keep = 0;

    while (*s != '\0' && isspace((unsigned char)*s))
        s++;
    while (*s != '\0' && strchr(stops, *s) == NULL) {
        if (*s == '\\' && s[1] != '\0') {
            s++;
            out[n++] = *s++;
            keep = n; /* escaped blanks are kept */
            continue;
        }
        out[n++] = *s;
        if (!isspace((unsigned char)*s))
            keep = n;
        s++;
    }
    out[keep] = '\0';
    *p = s;
}

/* A size with an optional k/m/g/t suffix (powers of 1024). */
static int convert_size(const char *v, size_t *out)
{
    static const char suffixes[] = "kmgt";
    unsigned long long n, mul = 1;
    char *end;

    if (!isdigit((unsigned char)*v))
        return -1;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno != 0)
        return -1;
    if (*end != '\0') {
        const char *s = strchr(suffixes, tolower((unsigned char)*end));

        if (s == NULL || end[1] != '\0')
            return -1;
        for (const char *q = suffixes; q <= s; q++)
            mul *= 1024;
    }
    if (n > SIZE_MAX / mul)
        return -1;
    *out = (size_t)(n * mul);
    return 0;
}

static int convert_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "true", "on", "yes", "1" };
    static const char *const no[] = { "false", "off", "no", "0" };

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* Parses a file of "key = value" lines ('#' comments) into items. */
static int parse_file(const char *path, struct config_item items[],
                      FILE *error, int depth)
{
    char line[4096];
    int ret = MCH_PARSE_OK;
    FILE *f;

    if (depth >= MCH_CONFIG_MAX_DEPTH) {
        report(error, "Configuration files nested too deeply", path, NULL);
        return MCH_PARSE_INVALID;
    }
    f = fopen(path, "r");
    if (f == NULL) {
        report(error, "Cannot open configuration file", path, NULL);
        return MCH_PARSE_INVALID;
    }
    while (ret != MCH_PARSE_INVALID && fgets(line, sizeof(line), f)) {
        char *s = line + strspn(line, " \t");
        int r;

        s[strcspn(s, "\r\n")] = '\0';
        if (*s == '\0' || *s == '#')
            continue;
        r = parse_depth(s, items, error, depth + 1);
        if (r != MCH_PARSE_OK)
            ret = r;
    }
    fclose(f);
    return ret;
}

/* Stores value into item according to its datatype; a DT_CONFIGFILE's
 * lines are parsed against all of items. */
static int convert(struct config_item items[], struct config_item *item,
                   const char *value, FILE *error, int depth)
{
    int r = 0, result = MCH_PARSE_OK;
    char *end;

    switch (item->datatype) {
    case DT_SIZE:
        r = convert_size(value, item->value.dt_size);
        break;
    case DT_FLOAT:
        errno = 0;
        *item->value.dt_float = strtof(value, &end);
        r = (errno != 0 || end == value || *end != '\0') ? -1 : 0;
        break;
    case DT_BOOL:
        r = convert_bool(value, item->value.dt_bool);
        break;
    case DT_CONFIGFILE:
        result = parse_file(value, items, error, depth);
        if (result == MCH_PARSE_INVALID)
            return result;
        /* The file name is also stored when asked for. */
        /* fall through */
    case DT_STRING:
        if (item->value.dt_string != NULL) {
            char *copy = strdup(value);

            if (copy == NULL)
                return MCH_PARSE_INVALID;
            *item->value.dt_string = copy;
        }
        break;
    default:
        r = -1;
        break;
    }
    if (r != 0) {
        report(error, "Invalid value", item->key, value);
        return MCH_PARSE_INVALID;
    }
    item->found = true;
    return result;
}

static struct config_item *find_item(struct config_item items[],
                                     const char *key)
{
    for (struct config_item *it = items; it->key != NULL; it++)
        if (strcmp(it->key, key) == 0)
            return it;
    return NULL;
}

static int parse_depth(const char *str, struct config_item items[],
                       FILE *error, int depth)
{
    int ret = MCH_PARSE_OK;
    char *key, *value;
    const char *p = str;

    if (str == NULL)
        return MCH_PARSE_OK;
    key = malloc(strlen(str) + 1);
    value = malloc(strlen(str) + 1);
    if (key == NULL || value == NULL) {
        free(key);
        free(value);
        return MCH_PARSE_INVALID;
    }
    while (*p != '\0' && ret != MCH_PARSE_INVALID) {
        struct config_item *item;

        take_until(&p, "=;", key);
        if (*p != '=') {
            if (*key != '\0') {
                report(error, "Missing value for key", key, NULL);
                ret = MCH_PARSE_INVALID;
            }
            if (*p == ';')
                p++;
            continue;
        }
        p++;
        take_until(&p, ";", value);
        if (*p == ';')
            p++;
        item = find_item(items, key);
        if (item == NULL) {
            report(error, "Unsupported key", key, value);
            ret = MCH_PARSE_UNKNOWN;
        } else {
            int r = convert(items, item, value, error, depth);

            if (r != MCH_PARSE_OK)
                ret = r;
        }
    }
    free(key);
    free(value);
    return ret;
}

/* Parses str into items; see parse_config.h. */
int mch_parse_config(const char *str, struct config_item items[],
                     FILE *error)
{
    return parse_depth(str, items, error, 0);
}
