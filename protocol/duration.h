/* duration.h: the one grammar of durations that people write, in
 * configuration keys, counterctl's flags and the clients: a decimal number,
 * an optional fraction, then a unit (ns, us, ms, s, m or min, h), or no unit
 * for seconds. Pure functions, shared by the server's configuration,
 * counterctl and the C client library, so that they cannot disagree. */
#ifndef CNT_PROTOCOL_DURATION_H
#define CNT_PROTOCOL_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What cnt_duration_parse found. */
typedef enum cnt_duration_status {
    CNT_DURATION_OK,
    CNT_DURATION_SYNTAX,    /* empty, no digits, a sign, space, garbage */
    CNT_DURATION_NEGATIVE,  /* a leading '-' */
    CNT_DURATION_UNIT,      /* letters that name no unit ("5d", "3sec") */
    CNT_DURATION_CASE,      /* a unit in capitals ("5M", "250MS") */
    CNT_DURATION_FINE,      /* not a whole number of nanoseconds */
    CNT_DURATION_RANGE      /* more than UINT64_MAX nanoseconds */
} cnt_duration_status;

/* A parsed duration: its length, and the unit it was written in
 * (a cnt_time_unit of protocol/wire.h; CNT_UNIT_S for a bare number). */
typedef struct cnt_duration {
    uint64_t ns;
    uint8_t unit;
    bool bare;              /* written without a unit */
} cnt_duration;

/* An example of the right form, for messages. */
#define CNT_DURATION_EXAMPLES "250ms, 3s, 5min, 2h"

/* Parses s[0..len) as a duration into *d (untouched unless OK). The number
 * is digits with an optional fraction (".5" and "0.5" alike, "5." not);
 * the unit follows at once, lower case: "ns", "us", "ms", "s", "m" and
 * "min" (both minutes), "h". Nothing else is accepted: no sign, no space,
 * no exponent. The value must be a whole number of nanoseconds that fits
 * in 64 bits. */
cnt_duration_status cnt_duration_parse(const char *s, size_t len,
                                       cnt_duration *d);

/* Says what is wrong with a value that got status st, as a predicate to
 * follow the quoted value: "is not a duration", "has an unknown unit",
 * ... ("" for CNT_DURATION_OK). */
const char *cnt_duration_problem(cnt_duration_status st);

/* The right form for a value that got status st, to follow the problem:
 * "write a number and a unit: 250ms, 3s, 5min, 2h", ... */
const char *cnt_duration_hint(cnt_duration_status st);

/* Writes d as a whole number of one wire unit: the unit it was written in
 * if it is whole there, else the largest smaller unit in which it is
 * ("1.5h" is 90 min, "0.5ms" 500 us, "2m" 2 min). */
void cnt_duration_in_unit(const cnt_duration *d, uint64_t *value,
                          uint8_t *unit);

#endif
