/* duration.c: the duration grammar of duration.h. One table of units and
 * one overflow-checked conversion to nanoseconds serve every place that
 * reads a duration written by a person. */
#include "config.h"

#include "protocol/duration.h"

#include <string.h>

#include "protocol/wire.h"

/* The units a duration may be written in, and the wire unit each is.
 * "m" and "min" are both minutes, as systemd.time(7) reads them; months
 * have no unit, so no spelling of one can be taken for minutes. */
static const struct {
    const char *name;
    uint8_t unit;
} duration_units[] = {
    { "ns", CNT_UNIT_NS }, { "us", CNT_UNIT_US }, { "ms", CNT_UNIT_MS },
    { "s", CNT_UNIT_S },   { "m", CNT_UNIT_MIN }, { "min", CNT_UNIT_MIN },
    { "h", CNT_UNIT_H },
};
#define DURATION_UNITS (sizeof duration_units / sizeof duration_units[0])

/* An exact fraction of any unit has at most this many digits after its
 * trailing zeros go: an hour is 2^13 * 3^2 * 5^11 ns, and a fraction
 * F / 10^k of it is whole only if 2^k and 5^k divide F * 3600e9, where F
 * (ending in a non-zero digit) lacks either 2 or 5. */
#define DURATION_FRACTION_MAX 13u

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Which unit u[0..len) names: its index in duration_units, or
 * DURATION_UNITS; *folded tells whether it only matched in lower case. */
static size_t find_unit(const char *u, size_t len, bool *folded)
{
    char low[4];

    *folded = false;
    for (size_t i = 0; i < DURATION_UNITS; i++)
        if (strlen(duration_units[i].name) == len &&
            memcmp(duration_units[i].name, u, len) == 0)
            return i;
    if (len >= sizeof low)
        return DURATION_UNITS;
    for (size_t i = 0; i < len; i++)
        low[i] = (char)(u[i] >= 'A' && u[i] <= 'Z' ? u[i] - 'A' + 'a'
                                                    : u[i]);
    for (size_t i = 0; i < DURATION_UNITS; i++)
        if (strlen(duration_units[i].name) == len &&
            memcmp(duration_units[i].name, low, len) == 0) {
            *folded = true;
            return i;
        }
    return DURATION_UNITS;
}

cnt_duration_status cnt_duration_parse(const char *s, size_t len,
                                       cnt_duration *d)
{
    size_t i = 0, int_end, frac_start, frac_end;
    uint8_t unit = CNT_UNIT_S;
    bool bare = true;

    if (len > 0 && s[0] == '-')
        return CNT_DURATION_NEGATIVE;
    while (i < len && is_digit(s[i]))
        i++;
    int_end = i;
    frac_start = frac_end = i;
    if (i < len && s[i] == '.') {
        frac_start = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        frac_end = i;
        /* "5." and "." are no numbers; ".5" is. */
        if (frac_end == frac_start)
            return CNT_DURATION_SYNTAX;
    }
    if (int_end == 0 && frac_end == frac_start)
        return CNT_DURATION_SYNTAX;
    if (i < len) {
        bool folded;
        size_t u;

        for (size_t j = i; j < len; j++)
            if (!is_letter(s[j]))
                return CNT_DURATION_SYNTAX;
        u = find_unit(s + i, len - i, &folded);
        if (u == DURATION_UNITS)
            return CNT_DURATION_UNIT;
        if (folded)
            return CNT_DURATION_CASE;
        unit = duration_units[u].unit;
        bare = false;
    }

    uint64_t per = cnt_unit_ns(unit), whole = 0, part = 0;

    for (size_t j = 0; j < int_end; j++) {
        unsigned digit = (unsigned)(s[j] - '0');
        if (whole > (UINT64_MAX - digit) / 10)
            return CNT_DURATION_RANGE;
        whole = whole * 10 + digit;
    }
    if (whole > UINT64_MAX / per)
        return CNT_DURATION_RANGE;
    whole *= per;
    /* The fraction F / 10^k of the unit, trailing zeros dropped. */
    while (frac_end > frac_start && s[frac_end - 1] == '0')
        frac_end--;
    if (frac_end - frac_start > DURATION_FRACTION_MAX)
        return CNT_DURATION_FINE;
    if (frac_end > frac_start) {
        uint64_t f = 0, ten_k = 1, g;

        for (size_t j = frac_start; j < frac_end; j++) {
            f = f * 10 + (uint64_t)(s[j] - '0');
            ten_k *= 10;
        }
        /* F * per / 10^k without overflow: the result is below per. */
        g = gcd(per, ten_k);
        if (f % (ten_k / g) != 0)
            return CNT_DURATION_FINE;
        part = f / (ten_k / g) * (per / g);
    }
    if (whole > UINT64_MAX - part)
        return CNT_DURATION_RANGE;
    d->ns = whole + part;
    d->unit = unit;
    d->bare = bare;
    return CNT_DURATION_OK;
}

const char *cnt_duration_problem(cnt_duration_status st)
{
    switch (st) {
    case CNT_DURATION_OK:
        return "";
    case CNT_DURATION_NEGATIVE:
        return "is negative";
    case CNT_DURATION_UNIT:
        return "has an unknown unit";
    case CNT_DURATION_CASE:
        return "has its unit in capitals";
    case CNT_DURATION_FINE:
        return "is not a whole number of nanoseconds";
    case CNT_DURATION_RANGE:
        return "is too long";
    case CNT_DURATION_SYNTAX:
        break;
    }
    return "is not a duration";
}

const char *cnt_duration_hint(cnt_duration_status st)
{
    switch (st) {
    case CNT_DURATION_UNIT:
        return "units: ns, us, ms, s, m or min, h, as in "
               CNT_DURATION_EXAMPLES;
    case CNT_DURATION_CASE:
        return "units are lower case: ns, us, ms, s, m or min, h";
    case CNT_DURATION_RANGE:
        return "at most 18446744073709551615ns, about 584 years";
    default:
        return "write a number and a unit: " CNT_DURATION_EXAMPLES;
    }
}

void cnt_duration_in_unit(const cnt_duration *d, uint64_t *value,
                          uint8_t *unit)
{
    uint8_t u = d->unit;

    while (u > CNT_UNIT_NS && d->ns % cnt_unit_ns(u) != 0)
        u--;
    *value = d->ns / cnt_unit_ns(u);
    *unit = u;
}
