/* servers.c: TEMPORARY STUB of the server-list parser so that the client
 * builds before the ketama branch lands ("host:port[:weight]" items and
 * "[v6]:port[:weight]", comma-separated). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/servers.h"

/* Parses one item of len bytes at p into *out; false if malformed. */
static int parse_item(const char *p, size_t len, mcc_server_spec *out)
{
    char buf[300];
    char *host, *rest, *end;
    unsigned long v;

    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');
        if (!close || close[1] != ':')
            return 0;
        *close = '\0';
        host = buf + 1;
        rest = close + 2;
    } else {
        char *colon = strchr(buf, ':');
        if (!colon)
            return 0;
        *colon = '\0';
        host = buf;
        rest = colon + 1;
    }
    if (!*host || strlen(host) >= sizeof out->host)
        return 0;
    v = strtoul(rest, &end, 10);
    if (end == rest || v == 0 || v > 65535)
        return 0;
    out->weight = 1;
    if (*end == ':') {
        char *w = end + 1;
        unsigned long wt = strtoul(w, &end, 10);
        if (end == w || wt == 0 || wt > 0xffffffffUL)
            return 0;
        out->weight = (uint32_t)wt;
    }
    if (*end)
        return 0;
    strcpy(out->host, host);
    out->port = (uint16_t)v;
    return 1;
}

/* Parses a comma-separated server list. */
int mcc_servers_parse(const char *list, mcc_server_spec *out, size_t max,
                      char *err, size_t errlen)
{
    size_t n = 0;
    const char *p = list;

    if (!list || !*list) {
        if (err && errlen)
            snprintf(err, errlen, "empty server list");
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n >= max || !parse_item(p, len, &out[n])) {
            if (err && errlen)
                snprintf(err, errlen, "bad server '%.*s'", (int)len, p);
            return -1;
        }
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return (int)n;
}
