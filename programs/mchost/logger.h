/* logger.h: mchost's log level (driven by -v and `verbosity`) and its
 * default logger, which writes one line per message to stderr. */
#ifndef MCH_LOGGER_H
#define MCH_LOGGER_H

#include <memcached/extension.h>

/* Sets the verbosity (0..3; larger values are clamped to 3). */
void mch_logger_set_verbosity(int verbosity);

/* The current verbosity, 0..3. */
int mch_logger_verbosity(void);

/* The minimum severity that prints at the current verbosity. */
EXTENSION_LOG_LEVEL mch_logger_level(void);

/* Sets the verbosity that corresponds to a minimum severity. */
void mch_logger_set_level(EXTENSION_LOG_LEVEL level);

/* The built-in stderr logger. */
EXTENSION_LOGGER_DESCRIPTOR *mch_logger_stderr(void);

/* The logger in use: the stderr one or one an extension registered. */
EXTENSION_LOGGER_DESCRIPTOR *mch_logger_current(void);

/* Makes logger current (NULL: back to the stderr logger). */
void mch_logger_replace(EXTENSION_LOGGER_DESCRIPTOR *logger);

/* Logs one of mchost's own messages (its time, as 2026-11-27T16:40:01.123Z,
 * and "mchost: " are put in front) through the current logger if severity is high enough. */
void mch_log(EXTENSION_LOG_LEVEL severity, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* MCH_LOGGER_H */
