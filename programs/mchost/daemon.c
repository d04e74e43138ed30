/* daemon.c: -d, -u, -P and -F. The parent of -d waits until the child
 * listens and prints what went wrong if it does not, so its exit status
 * and stderr mean something; number files are renamed into place so
 * readers never see a partial file. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "programs/mchost/daemon.h"
#include "programs/mchost/logger.h"

/* The child's end of the start-up pipe. Until start-up ends the child's
 * stderr is this pipe too (unless stderr is kept): the parent copies what
 * arrives to its own stderr, so a failure after the fork is still told by
 * the command the user ran. A NUL byte, which no log line holds, says
 * "ready"; end of file without it says the child failed. */
static int ready_fd = -1;
static bool stderr_to_parent;

/* Points fd at /dev/null. */
static void to_dev_null(int fd, int flags)
{
    int null = open("/dev/null", flags);

    if (null >= 0) {
        dup2(null, fd);
        if (null != fd)
            close(null);
    }
}

/* Writes all of buf to fd; errors are dropped (nowhere to report them). */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, buf, len);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        len -= (size_t)w;
    }
}

/* The parent: relays the child's start-up messages until "ready" or end
 * of file, and exits accordingly. Never returns. */
static void wait_for_child(int fd)
{
    char buf[4096];

    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        char *nul;

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        nul = memchr(buf, '\0', (size_t)r);
        write_all(STDERR_FILENO, buf, nul ? (size_t)(nul - buf) : (size_t)r);
        /* _exit: extensions' exit handlers belong to the child now. */
        if (nul != NULL)
            _exit(EXIT_SUCCESS);
    }
    _exit(EXIT_FAILURE);
}

/* Forks into the background; see daemon.h. */
int mch_daemon_start(bool keep_stderr)
{
    int pfd[2];
    pid_t pid;

    if (pipe(pfd) != 0) {
        mch_log(EXTENSION_LOG_WARNING, "daemonize: pipe: %s", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        mch_log(EXTENSION_LOG_WARNING, "daemonize: fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid > 0) {
        close(pfd[1]);
        wait_for_child(pfd[0]);
    }
    close(pfd[0]);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    ready_fd = pfd[1];
    if (setsid() < 0)
        mch_log(EXTENSION_LOG_WARNING, "daemonize: setsid: %s",
                strerror(errno));
    to_dev_null(STDIN_FILENO, O_RDONLY);
    to_dev_null(STDOUT_FILENO, O_WRONLY);
    if (!keep_stderr) {
        dup2(ready_fd, STDERR_FILENO);
        stderr_to_parent = true;
    }
    return 0;
}

/* Tells a waiting parent that start-up succeeded. */
void mch_daemon_ready(void)
{
    if (ready_fd < 0)
        return;
    /* First away from the pipe, so nothing can follow the marker. */
    if (stderr_to_parent) {
        to_dev_null(STDERR_FILENO, O_WRONLY);
        stderr_to_parent = false;
    }
    if (write(ready_fd, "", 1) != 1)
        mch_log(EXTENSION_LOG_WARNING, "daemonize: cannot notify parent");
    close(ready_fd);
    ready_fd = -1;
}

/* Switches to user's uid/gid if running as root. */
int mch_daemon_drop_privileges(const char *user)
{
    struct passwd *pw;

    if (user == NULL || getuid() != 0 || geteuid() != 0)
        return 0;
    pw = getpwnam(user);
    if (pw == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "can't find the user %s to switch to",
                user);
        return -1;
    }
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0) {
        mch_log(EXTENSION_LOG_WARNING, "failed to assume identity of %s: %s",
                user, strerror(errno));
        return -1;
    }
    return 0;
}

/* Writes "value\n" to path atomically. */
int mch_daemon_write_number_file(const char *path, long value)
{
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    FILE *f;
    int ok;

    if (tmp == NULL)
        return -1;
    snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "cannot write %s: %s", tmp,
                strerror(errno));
        free(tmp);
        return -1;
    }
    ok = fprintf(f, "%ld\n", value) > 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        mch_log(EXTENSION_LOG_WARNING, "cannot write %s: %s", path,
                strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
