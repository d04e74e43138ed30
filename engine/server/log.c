/* log.c: formats server log lines into a bounded stack buffer and hands
 * them to the sink, so logging never allocates. Every line starts with
 * its time (ISO 8601, UTC, milliseconds): the hosts' loggers print text
 * as given, so this is the one place counter.so's lines get it. */
#include "config.h"

#include "engine/server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Bytes the time in front of every line takes, with its NUL:
 * "2026-11-27T16:40:01.123Z " is 25 characters. */
#define LOG_STAMP_SIZE 26u

/* Writes the current time as "YYYY-MM-DDTHH:MM:SS.mmmZ " (UTC) at buf,
 * NUL-terminated; returns its length (0 when size is below LOG_STAMP_SIZE
 * or the clock cannot be read, so the line still goes out). */
static size_t log_stamp(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;

    if (size < LOG_STAMP_SIZE ||
        clock_gettime(CLOCK_REALTIME, &ts) != 0 ||
        gmtime_r(&ts.tv_sec, &tm) == NULL)
        return 0;
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0)
        return 0;
    int m = snprintf(buf + n, size - n, ".%03ldZ ", ts.tv_nsec / 1000000L);
    return m > 0 && (size_t)m < size - n ? n + (size_t)m : 0;
}

/* Formats and sends one line to lg (NULL or a NULL write: dropped). */
void cnt_log(const cnt_logger *lg, cnt_log_level level, const char *fmt, ...)
{
    if (lg == NULL || lg->write == NULL)
        return;
    if (lg->enabled != NULL && !lg->enabled(lg->ctx, level))
        return;
    char line[512 + LOG_STAMP_SIZE];
    size_t n = log_stamp(line, sizeof(line));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    lg->write(lg->ctx, level, line);
}
