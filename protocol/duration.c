/* duration.c: the duration grammar of duration.h. The units are the
 * wire's (protocol/wire.c: their names and lengths), plus one spelling of
 * its own; the conversion to nanoseconds is wire.c's overflow-checked one. */
#include "config.h"

#include "protocol/duration.h"

#include <string.h>

#include "protocol/wire.h"

/* The one spelling a person may write that the wire's unit names lack:
 * "m" for minutes, as systemd.time(7) reads it ("min" is the wire's name).
 * Months have no unit, so no spelling of one can be taken for minutes. */
#define DURATION_MINUTES_ALIAS "m"

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

/* Whether u[0..len) is the name of unit exactly. */
static bool names_unit(const char *u, size_t len, uint8_t unit)
{
    const char *name = cnt_unit_name(unit);

    if (unit == CNT_UNIT_MIN && len == strlen(DURATION_MINUTES_ALIAS) &&
        memcmp(u, DURATION_MINUTES_ALIAS, len) == 0)
        return true;
    return strlen(name) == len && memcmp(name, u, len) == 0;
}

/* Which wire unit u[0..len) names: true with *unit set, false if none;
 * *folded tells whether it only matched in lower case. */
static bool find_unit(const char *u, size_t len, uint8_t *unit,
                      bool *folded)
{
    char low[4];

    *folded = false;
    for (uint8_t i = 0; i <= CNT_UNIT_MAX; i++)
        if (names_unit(u, len, i)) {
            *unit = i;
            return true;
        }
    if (len >= sizeof low)
        return false;
    for (size_t i = 0; i < len; i++)
        low[i] = (char)(u[i] >= 'A' && u[i] <= 'Z' ? u[i] - 'A' + 'a'
                                                    : u[i]);
    for (uint8_t i = 0; i <= CNT_UNIT_MAX; i++)
        if (names_unit(low, len, i)) {
            *unit = i;
            *folded = true;
            return true;
        }
    return false;
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

        for (size_t j = i; j < len; j++)
            if (!is_letter(s[j]))
                return CNT_DURATION_SYNTAX;
        if (!find_unit(s + i, len - i, &unit, &folded))
            return CNT_DURATION_UNIT;
        if (folded)
            return CNT_DURATION_CASE;
        bare = false;
    }

    uint64_t per = cnt_unit_ns(unit), whole = 0, part = 0;

    for (size_t j = 0; j < int_end; j++) {
        unsigned digit = (unsigned)(s[j] - '0');
        if (whole > (UINT64_MAX - digit) / 10)
            return CNT_DURATION_RANGE;
        whole = whole * 10 + digit;
    }
    if (!cnt_unit_to_ns(whole, unit, &whole))
        return CNT_DURATION_RANGE;
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
