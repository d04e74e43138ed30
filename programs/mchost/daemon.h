/* daemon.h: running in the background (-d), dropping privileges (-u), and
 * the pid (-P) and port (-F) files. */
#ifndef MCH_DAEMON_H
#define MCH_DAEMON_H

#include <stdbool.h>

/* Forks into the background. The parent waits until the child calls
 * mch_daemon_ready (exit 0) or dies first (exit 1), meanwhile copying the
 * child's stderr to its own; it never returns. stdin/stdout go to
 * /dev/null; stderr goes to the parent until ready, then to /dev/null,
 * unless keep_stderr. 0 or -1. */
int mch_daemon_start(bool keep_stderr);

/* Tells a waiting parent that start-up succeeded (no-op without -d). */
void mch_daemon_ready(void);

/* Switches to user's uid/gid if running as root; 0 or -1 (logged). */
int mch_daemon_drop_privileges(const char *user);

/* Writes "value\n" to path atomically (temporary name, then rename). */
int mch_daemon_write_number_file(const char *path, long value);

#endif /* MCH_DAEMON_H */
