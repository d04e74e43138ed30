/* log.h: how the server reports events without knowing who listens. The
 * host glue supplies a sink (the host's logger); tests supply their own or
 * none. Levels match the host's so the glue maps them one to one. */
#ifndef CNT_ENGINE_LOG_H
#define CNT_ENGINE_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum cnt_log_level {
    CNT_LOG_DETAIL = 0,
    CNT_LOG_DEBUG = 1,
    CNT_LOG_INFO = 2,
    CNT_LOG_WARNING = 3
} cnt_log_level;

/* A log sink. write receives one formatted line without a newline; enabled
 * (optional) lets the caller skip formatting lines nobody will print. */
typedef struct cnt_logger {
    void (*write)(void *ctx, cnt_log_level level, const char *line);
    bool (*enabled)(void *ctx, cnt_log_level level);
    void *ctx;
} cnt_logger;

/* Formats and sends one line to lg (NULL or a NULL write: dropped), with
 * the time in front. */
void cnt_log(const cnt_logger *lg, cnt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
