/* config_file.c: reads a `key = value` file (the counter.config settings
 * file and the throttle settings file) line by line within its limits:
 * regular files only, bounded lines and size, so a wrong path (/dev/zero,
 * a FIFO, a log) costs nothing but the refusal. */
#include "config.h"

#include "engine/glue/config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What reading one line of a settings file found. */
typedef enum line_status {
    LINE_OK,
    LINE_EOF,
    LINE_TOO_LONG,              /* more than CNT_CONFIG_LINE_MAX bytes */
    LINE_FILE_TOO_BIG,          /* the file passed its size limit */
    LINE_READ_ERROR,            /* errno says why */
} line_status;

/* Reads one line, without its '\n', into buf (CNT_CONFIG_LINE_MAX bytes),
 * counting every byte read in *total (at most max). Never reads past either
 * limit, so a file that has no line ends or no end costs nothing but the
 * refusal. */
static line_status read_line(FILE *f, char *buf, size_t *len, size_t *total,
                             size_t max)
{
    size_t n = 0;
    int ch;
    *len = 0;
    while ((ch = getc(f)) != EOF) {
        if (++*total > max)
            return LINE_FILE_TOO_BIG;
        if (ch == '\n')
            break;
        if (n == CNT_CONFIG_LINE_MAX) {
            *len = n;
            return LINE_TOO_LONG;
        }
        buf[n++] = (char)ch;
    }
    *len = n;
    /* getc's EOF is also a failed read: only feof means the file ended. */
    if (ch == EOF && ferror(f))
        return LINE_READ_ERROR;
    return ch == EOF && n == 0 ? LINE_EOF : LINE_OK;
}

/* Names a file type that is not a settings file, for the refusal. */
static const char *file_type(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "a special file";
}

/* Opens path, named by key, for reading if it is a regular file; on error
 * writes the message through e (the key's place, if any) and returns NULL.
 * O_NONBLOCK keeps a FIFO from blocking start-up in open() until a writer
 * comes: it is refused after fstat instead (the flag means nothing for the
 * regular files that get through). */
FILE *cnt_config_open_file(const char *key, const char *path,
                           const cnt_config_errctx *e)
{
    char p[CNT_CLIP_BUF];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        cnt_config_error(e, "%s: cannot read file \"%s\": %s", key,
                         cnt_config_clip_path(p, path), strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        cnt_config_error(e, "%s: cannot read file \"%s\": %s", key,
                         cnt_config_clip_path(p, path), strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        cnt_config_error(e, "%s: \"%s\" is %s, not a regular file", key,
                         cnt_config_clip_path(p, path),
                         file_type(st.st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        cnt_config_error(e, "%s: cannot read file \"%s\": %s", key,
                         cnt_config_clip_path(p, path), strerror(errno));
        close(fd);
    }
    return f;
}

/* Reports a line-level read failure (too long, too big, read error) of
 * the file named by key, whose size limit is max: the long line at its
 * place (in), the others, which are about the whole file, at the key's
 * place (at). */
static bool line_error(const char *key, size_t max, line_status st,
                       const char *line, size_t len, int errnum,
                       const cnt_config_errctx *in,
                       const cnt_config_errctx *at)
{
    char p[CNT_CLIP_BUF], start[CNT_CLIP_BUF];
    switch (st) {
    case LINE_TOO_LONG:
        /* The line's start usually holds its key: quote it. */
        line = cnt_config_trim(line, &len);
        return cnt_config_error(in, "line longer than %u bytes: \"%s\"",
                                CNT_CONFIG_LINE_MAX,
                                cnt_config_clip(start, line, len,
                                                CNT_CLIP_TEXT, false));
    case LINE_FILE_TOO_BIG:
        return cnt_config_error(at, "%s: file \"%s\" is larger than %zu "
                                "bytes", key,
                                cnt_config_clip_path(p, in->path), max);
    default:
        return cnt_config_error(at, "%s: cannot read file \"%s\": %s", key,
                                cnt_config_clip_path(p, in->path),
                                errnum != 0 ? strerror(errnum)
                                            : "read error");
    }
}

/* Reads the file at path, named by key (at: the key's place), line by
 * line: `key = value`, # comments, blank lines; each setting goes to fn
 * with ctx. A file over max bytes is refused. */
bool cnt_config_read_settings(const char *key, const char *path, size_t max,
                              cnt_config_apply_fn fn, void *ctx,
                              const cnt_config_errctx *at)
{
    FILE *f = cnt_config_open_file(key, path, at);
    if (f == NULL)
        return false;
    cnt_config_errctx in = {at->err, at->errlen, path, 0};
    char line[CNT_CONFIG_LINE_MAX];
    size_t total = 0, n;
    bool ok = true;
    while (ok) {
        errno = 0;
        line_status st = read_line(f, line, &n, &total, max);
        if (st == LINE_EOF)
            break;
        in.line++;
        if (st != LINE_OK) {
            ok = line_error(key, max, st, line, n, errno, &in, at);
            break;
        }
        size_t len = n;
        const char *s = cnt_config_trim(line, &len);
        if (len == 0 || s[0] == '#')
            continue;
        ok = cnt_config_token(fn, ctx, s, len, &in);
    }
    fclose(f);
    return ok;
}
