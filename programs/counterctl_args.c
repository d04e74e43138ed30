/* counterctl_args.c: the pure parsers of counterctl's arguments that need
 * more than strtoull: durations with a unit (`250ms`, `5min`) and 64-bit
 * numbers. Kept apart from counterctl.c, which has main(), so that a unit
 * test can link them. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
