/* counterctl_args.c: the parsers of counterctl's arguments that need more
 * than strtoull: durations with a unit (`250ms`, `5min`), 64-bit numbers,
 * hard limits (`unlimited`), and the --secret-file reader, which must take
 * the file exactly as the server takes its own; and which server of
 * --servers a command goes to. Kept apart from
 * counterctl.c, which has main(), so that a unit test can link them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "programs/counterctl.h"

/* Parses a decimal u64 (digits only); false if it is not one. */
bool ctl_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > UINT64_MAX)
        return false;
    *out = (uint64_t)v;
    return true;
}

/* Parses a duration: digits, then a unit named as cnt_unit_name names it
 * (exactly, lower case). The digits are kept as written, in that unit. */
ctl_duration ctl_parse_duration(const char *s, uint64_t *value,
                                uint8_t *unit)
{
    const char *p = s;
    unsigned long long v;
    char *end;

    while (*p >= '0' && *p <= '9')
        p++;
    if (p == s)
        return CTL_DURATION_BAD;
    if (*p == '\0')
        return CTL_DURATION_NO_UNIT;
    for (uint8_t u = 0; u <= CNT_UNIT_MAX; u++) {
        if (strcmp(p, cnt_unit_name(u)) != 0)
            continue;
        errno = 0;
        v = strtoull(s, &end, 10);
        /* end == p: digits only, so no sign or space got in. */
        if (errno != 0 || end != p || v > UINT64_MAX)
            return CTL_DURATION_RANGE;
        *value = (uint64_t)v;
        *unit = u;
        return CTL_DURATION_OK;
    }
    return CTL_DURATION_BAD;
}

/* Converts value of unit to nanoseconds; false if that passes UINT64_MAX
 * or the unit is unknown. */
bool ctl_duration_ns(uint64_t value, uint8_t unit, uint64_t *ns)
{
    uint64_t per = cnt_unit_ns(unit);

    if (per == 0 || value > UINT64_MAX / per)
        return false;
    *ns = value * per;
    return true;
}

/* Parses a hard limit: "unlimited" or a decimal from 0 to 4294967294. */
bool ctl_parse_hard_limit(const char *s, uint32_t *out)
{
    uint64_t v;

    if (strcmp(s, "unlimited") == 0) {
        *out = CNT_HARD_LIMIT_UNLIMITED;
        return true;
    }
    /* 4294967295 is how the wire says unlimited: it is spelt out. */
    if (!ctl_parse_u64(s, &v) || v >= CNT_HARD_LIMIT_UNLIMITED)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Overwrites n bytes at p with zeros through a volatile pointer, which
 * the compiler may not drop as a dead store. */
void ctl_wipe(void *p, size_t n)
{
    volatile uint8_t *b = p;

    while (n-- > 0)
        *b++ = 0;
}

/* Reads the secret as the server does: read(2), no stdio buffer holding
 * a copy; one final "\n" or "\r\n" dropped; 1..CTL_SECRET_MAX bytes. */
ctl_secret ctl_read_secret(const char *path, uint8_t *buf, size_t *len,
                           int *err)
{
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    *err = 0;
    if (fd < 0) {
        *err = errno;
        return CTL_SECRET_OPEN;
    }
    while (n < CTL_SECRET_BUF) {
        ssize_t r = read(fd, buf + n, CTL_SECRET_BUF - n);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            *err = errno;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (*err != 0) {
        ctl_wipe(buf, CTL_SECRET_BUF);
        return CTL_SECRET_READ;
    }
    if (n > 0 && buf[n - 1] == '\n') {
        n--;
        if (n > 0 && buf[n - 1] == '\r')
            n--;
    }
    if (n == 0 || n > CTL_SECRET_MAX) {
        ctl_wipe(buf, CTL_SECRET_BUF);
        return n == 0 ? CTL_SECRET_EMPTY : CTL_SECRET_TOO_LONG;
    }
    *len = n;
    return CTL_SECRET_OK;
}

/* The name a command's state is kept under decides its server: the
 * counter's name, or the tenant's for the throttling verbs (a tenant's
 * settings must sit where its charges go). Positions are those the
 * command parsers checked. */
const char *ctl_route_key(const char *cmd, int argc, char **argv)
{
    static const char *const first[] = {
        "get", "acquire", "release", "run", "window", "gcra", "throttle",
    };

    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
        if (strcmp(cmd, first[i]) == 0)
            return argc >= 1 ? argv[0] : NULL;
    /* ttl SUBCOMMAND NAME ...; tenant show|set|remove TENANT ... (tenant
     * show alone lists every tenant of each server). */
    if (strcmp(cmd, "ttl") == 0 || strcmp(cmd, "tenant") == 0)
        return argc >= 2 ? argv[1] : NULL;
    return NULL;
}

/* Brackets an IPv6 address, so that its port stays readable. */
char *ctl_format_server(const char *host, const char *port, char *buf,
                        size_t len)
{
    bool v6 = strchr(host, ':') != NULL;

    snprintf(buf, len, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "",
             port);
    return buf;
}
