/* counterctl_args.c: the parsers of counterctl's arguments that need more
 * than strtoull: durations (`250ms`, `5min`, `1.5`), 64-bit numbers,
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

/* Parses s as a duration in the grammar every part of the project shares
 * (protocol/duration.h), counted in whole steps of span->per ns within
 * span's bounds. */
bool ctl_duration_arg(const char *s, const ctl_span *span, cnt_duration *d,
                      uint64_t *steps, char *msg, size_t len)
{
    cnt_duration_status st = cnt_duration_parse(s, strlen(s), d);
    const char *problem, *hint;

    if (st == CNT_DURATION_OK && d->ns % span->per != 0) {
        snprintf(msg, len, "\"%s\" is not a whole number of %s (%s)", s,
                 span->step, span->bounds);
        return false;
    }
    if (st == CNT_DURATION_OK && d->ns / span->per >= span->min &&
        d->ns / span->per <= span->max) {
        *steps = d->ns / span->per;
        return true;
    }
    if (st == CNT_DURATION_OK || st == CNT_DURATION_RANGE) {
        /* Out of this argument's bounds, which are what to say. */
        problem = st == CNT_DURATION_OK && d->ns / span->per < span->min
                      ? "is too short" : "is too long";
        hint = span->bounds;
    } else {
        problem = cnt_duration_problem(st);
        hint = cnt_duration_hint(st);
    }
    snprintf(msg, len, "\"%s\" %s (%s)", s, problem, hint);
    return false;
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
