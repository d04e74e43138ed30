/* log.c: formats server log lines into a bounded stack buffer and hands
 * them to the sink, so logging never allocates. */
#include "config.h"

#include "engine/server/log.h"

#include <stdarg.h>
#include <stdio.h>

/* Formats and sends one line to lg (NULL or a NULL write: dropped). */
void cnt_log(const cnt_logger *lg, cnt_log_level level, const char *fmt, ...)
{
    if (lg == NULL || lg->write == NULL)
        return;
    if (lg->enabled != NULL && !lg->enabled(lg->ctx, level))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    lg->write(lg->ctx, level, line);
}
