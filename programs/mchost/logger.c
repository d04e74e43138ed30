/* logger.c: the log level and the stderr logger of mchost. The level is
 * one atomic verbosity so worker and extension threads read it without a
 * lock; each message is written with one write(2) so lines never mix.
 * mchost's own lines start with their time (ISO 8601, UTC, milliseconds);
 * an extension's lines are printed as it gives them, as memcached does,
 * and counter.so puts the same time in front of its own. */
#include "config.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "programs/mchost/logger.h"

#define MCH_LOG_PREFIX "mchost: "

static atomic_int verbosity;
static _Atomic(EXTENSION_LOGGER_DESCRIPTOR *) current;

/* Sets the verbosity (0..3; larger values are clamped to 3). */
void mch_logger_set_verbosity(int v)
{
    if (v < 0)
        v = 0;
    if (v > 3)
        v = 3;
    atomic_store(&verbosity, v);
}

/* The current verbosity, 0..3. */
int mch_logger_verbosity(void)
{
    return atomic_load(&verbosity);
}

/* The minimum severity that prints at the current verbosity. */
EXTENSION_LOG_LEVEL mch_logger_level(void)
{
    switch (mch_logger_verbosity()) {
    case 0:
        return EXTENSION_LOG_WARNING;
    case 1:
        return EXTENSION_LOG_INFO;
    case 2:
        return EXTENSION_LOG_DEBUG;
    default:
        return EXTENSION_LOG_DETAIL;
    }
}

/* Sets the verbosity that corresponds to a minimum severity. */
void mch_logger_set_level(EXTENSION_LOG_LEVEL level)
{
    switch (level) {
    case EXTENSION_LOG_WARNING:
        mch_logger_set_verbosity(0);
        break;
    case EXTENSION_LOG_INFO:
        mch_logger_set_verbosity(1);
        break;
    case EXTENSION_LOG_DEBUG:
        mch_logger_set_verbosity(2);
        break;
    default:
        mch_logger_set_verbosity(3);
        break;
    }
}

static const char *stderr_get_name(void)
{
    return "stderr";
}

static void stderr_vlog(EXTENSION_LOG_LEVEL severity, const char *fmt,
                        va_list ap) __attribute__((format(printf, 2, 0)));

/* Formats into a bounded buffer, ends it with exactly one newline and
 * writes it at once; over-long messages are cut, never split. */
static void stderr_vlog(EXTENSION_LOG_LEVEL severity, const char *fmt,
                        va_list ap)
{
    char line[2048];
    int n;

    if (severity < mch_logger_level())
        return;
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    while (n > 0 && line[n - 1] == '\n')
        n--;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* Nowhere left to report it. */
    }
}

static void stderr_log(EXTENSION_LOG_LEVEL severity, const void *cookie,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void stderr_log(EXTENSION_LOG_LEVEL severity, const void *cookie,
                       const char *fmt, ...)
{
    va_list ap;

    (void)cookie;
    va_start(ap, fmt);
    stderr_vlog(severity, fmt, ap);
    va_end(ap);
}

static EXTENSION_LOGGER_DESCRIPTOR stderr_logger = {
    .get_name = stderr_get_name,
    .log = stderr_log,
};

/* The built-in stderr logger. */
EXTENSION_LOGGER_DESCRIPTOR *mch_logger_stderr(void)
{
    return &stderr_logger;
}

/* The logger in use: the stderr one or one an extension registered. */
EXTENSION_LOGGER_DESCRIPTOR *mch_logger_current(void)
{
    EXTENSION_LOGGER_DESCRIPTOR *l = atomic_load(&current);

    return l ? l : &stderr_logger;
}

/* Makes logger current (NULL: back to the stderr logger). */
void mch_logger_replace(EXTENSION_LOGGER_DESCRIPTOR *logger)
{
    atomic_store(&current, logger);
}

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ " (UTC) at buf, which has room for
 * 26 bytes; returns its length (0 when the clock cannot be read). */
static size_t log_stamp(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 ||
        gmtime_r(&ts.tv_sec, &tm) == NULL)
        return 0;
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0)
        return 0;
    int m = snprintf(buf + n, size - n, ".%03ldZ ", ts.tv_nsec / 1000000L);
    return m > 0 && (size_t)m < size - n ? n + (size_t)m : 0;
}

/* Logs one of mchost's own messages, with its time and prefix, if
 * severity is high enough. */
void mch_log(EXTENSION_LOG_LEVEL severity, const char *fmt, ...)
{
    EXTENSION_LOGGER_DESCRIPTOR *l;
    char msg[2048];
    va_list ap;

    if (severity < mch_logger_level())
        return;
    /* Our lines name us: extensions' lines share stderr and carry theirs. */
    size_t n = log_stamp(msg, sizeof(msg));
    memcpy(msg + n, MCH_LOG_PREFIX, sizeof(MCH_LOG_PREFIX) - 1);
    n += sizeof(MCH_LOG_PREFIX) - 1;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
    va_end(ap);
    /* Hand a finished string to loggers: theirs may not be thread-safe
     * about va_lists, and "%s" keeps our text from being a format. */
    l = mch_logger_current();
    l->log(severity, NULL, "%s", msg);
}
