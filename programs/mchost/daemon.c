/* daemon.c: -d, -u, -P and -F. The parent of -d waits until the child
 * listens, so its exit status means something; number files are renamed
 * into place so readers never see a partial file. */
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

static int ready_fd = -1; /* child's end of the start-up pipe */

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

/* Forks into the background; see daemon.h. */
int mch_daemon_start(bool keep_stderr)
{
    int pfd[2];
    pid_t pid;
    char byte;

    if (pipe(pfd) != 0) {
        mch_log(EXTENSION_LOG_WARNING, "daemonize: pipe: %s", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        mch_log(EXTENSION_LOG_WARNING, "daemonize: fork: %s", strerror(errno));
        return -1;
    }
    if (pid > 0) {
        ssize_t r;

        close(pfd[1]);
        do {
            r = read(pfd[0], &byte, 1);
        } while (r < 0 && errno == EINTR);
        /* _exit: extensions' exit handlers belong to the child now. */
        _exit(r == 1 ? EXIT_SUCCESS : EXIT_FAILURE);
    }
    close(pfd[0]);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    ready_fd = pfd[1];
    if (setsid() < 0)
        mch_log(EXTENSION_LOG_WARNING, "daemonize: setsid: %s",
                strerror(errno));
    to_dev_null(STDIN_FILENO, O_RDONLY);
    to_dev_null(STDOUT_FILENO, O_WRONLY);
    if (!keep_stderr)
        to_dev_null(STDERR_FILENO, O_WRONLY);
    return 0;
}

/* Tells a waiting parent that start-up succeeded. */
void mch_daemon_ready(void)
{
    if (ready_fd < 0)
        return;
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
