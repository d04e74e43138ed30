/* servers.c: the server-list parser. Strict on purpose: a list that is
 * misread would place names on other servers than the deployment's other
 * clients do, so anything unexpected (spaces, an empty item, a port or
 * weight out of range, a server given twice) is refused with a message
 * naming the item. */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "client/servers.h"

/* Formats the error message, if the caller gave room for one. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Parses the decimal in p[0..len) into *out, if it is 1..max without a
 * sign, spaces or leading junk; false otherwise. */
static bool parse_number(const char *p, size_t len, uint32_t max,
                         uint32_t *out)
{
    uint64_t v = 0;

    if (len == 0 || len > 10)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v == 0 || v > max)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Tells whether c may appear in a host name or address: letters, digits
 * and the punctuation of names and IPv4/IPv6 literals (and a zone id's
 * '%'). Anything else (spaces, control bytes, '/', '@') is a typo. */
static bool host_char(char c, bool bracketed)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_')
        return true;
    return bracketed && (c == ':' || c == '%');
}

/* Parses one item p[0..len) into *s; -1 with the message on failure. */
static int parse_item(const char *p, size_t len, mcc_server_spec *s,
                      char *err, size_t errlen)
{
    const char *host = p, *rest, *end = p + len, *colon;
    size_t hlen;
    bool bracketed = len > 0 && p[0] == '[';
    uint32_t v;

    if (bracketed) {
        const char *close = memchr(p, ']', len);

        if (close == NULL)
            return fail(err, errlen, "server \"%.*s\": no ']' after the "
                        "IPv6 address", (int)len, p);
        host = p + 1;
        hlen = (size_t)(close - host);
        rest = close + 1;
        if (rest == end || *rest != ':')
            return fail(err, errlen, "server \"%.*s\": expected "
                        "[ADDRESS]:PORT", (int)len, p);
        if (memchr(host, ':', hlen) == NULL)
            return fail(err, errlen, "server \"%.*s\": brackets are only "
                        "for IPv6 addresses", (int)len, p);
    } else {
        size_t colons = 0;

        for (size_t i = 0; i < len; i++)
            colons += p[i] == ':';
        if (colons > 2)
            return fail(err, errlen, "server \"%.*s\": too many ':' (write "
                        "an IPv6 address as [ADDRESS])", (int)len, p);
        rest = memchr(p, ':', len);
        if (rest == NULL)
            return fail(err, errlen, "server \"%.*s\": no port (expected "
                        "HOST:PORT[:WEIGHT])", (int)len, p);
        hlen = (size_t)(rest - p);
    }
    if (hlen == 0)
        return fail(err, errlen, "server \"%.*s\": empty host", (int)len, p);
    if (hlen >= sizeof s->host)
        return fail(err, errlen, "server \"%.*s\": host longer than %zu "
                    "bytes", (int)len, p, sizeof s->host - 1);
    for (size_t i = 0; i < hlen; i++)
        if (!host_char(host[i], bracketed))
            return fail(err, errlen, "server \"%.*s\": bad character in "
                        "host", (int)len, p);
    memcpy(s->host, host, hlen);
    s->host[hlen] = '\0';

    rest++;     /* past the ':' before the port */
    colon = memchr(rest, ':', (size_t)(end - rest));
    if (!parse_number(rest, (size_t)((colon != NULL ? colon : end) - rest),
                      65535, &v))
        return fail(err, errlen, "server \"%.*s\": port must be 1 to 65535",
                    (int)len, p);
    s->port = (uint16_t)v;
    s->weight = 1;
    if (colon != NULL &&
        !parse_number(colon + 1, (size_t)(end - colon - 1), UINT32_MAX,
                      &s->weight))
        return fail(err, errlen, "server \"%.*s\": weight must be 1 to "
                    "4294967295", (int)len, p);
    return 0;
}

/* Parses the list item by item (split at commas), refusing duplicates:
 * one server twice would get two shares of the names under one
 * identity. */
int mcc_servers_parse(const char *list, mcc_server_spec *out, size_t max,
                      char *err, size_t errlen)
{
    const char *p = list;
    size_t n = 0;

    if (list == NULL || list[0] == '\0')
        return fail(err, errlen, "%s", "empty server list");
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);

        if (len == 0)
            return fail(err, errlen, "empty item in server list \"%s\"",
                        list);
        if (n == max)
            return fail(err, errlen, "more than %zu servers in the list",
                        max);
        if (parse_item(p, len, &out[n], err, errlen) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (out[i].port == out[n].port &&
                strcmp(out[i].host, out[n].host) == 0)
                return fail(err, errlen, "server \"%.*s\" is listed twice",
                            (int)len, p);
        n++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    if (n > (size_t)INT32_MAX)
        return fail(err, errlen, "%s", "too many servers");
    return (int)n;
}

/* Brackets a host holding ':' (an IPv6 address), so that the port stays
 * readable. */
char *mcc_server_format(const mcc_server_spec *s, char *buf, size_t len)
{
    bool v6 = strchr(s->host, ':') != NULL;

    snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", s->host, v6 ? "]" : "",
             (unsigned)s->port);
    return buf;
}
