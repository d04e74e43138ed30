/* counterctl_tree.c: the supervisor of `counterctl run`'s command. The
 * server ties a holding to counterctl's connection, but a command is a
 * tree of processes (a script and whatever it starts), and "at most N
 * hold it" must hold for all of them. So counterctl forks this
 * supervisor, which shares the connection's socket: the server sees the
 * connection close only once both have closed it. The supervisor starts
 * the command in a process group of its own, becomes the subreaper of
 * everything it starts (on Linux), and stops the whole tree (SIGTERM,
 * SIGKILL after --kill-after) when counterctl says the holding is lost,
 * when counterctl dies, or when a lease was not renewed in time. It exits
 * only when it has no child left: then no process of the tree runs. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "programs/counterctl.h"

/* While the tree is being stopped, how often the supervisor looks for
 * processes newly orphaned to it: the kernel reparents them silently. */
#define TREE_SCAN_MS 20

/* Signals the supervisor ignores: the terminal's and a plain kill, which
 * reach counterctl's process group and so the supervisor too. counterctl
 * passes them on itself, so the command gets each once, and the
 * supervisor stays to clean up if counterctl dies of one. */
static const int ignored_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define N_IGNORED (sizeof ignored_sigs / sizeof ignored_sigs[0])

/* The signal the kernel sends the supervisor when counterctl dies. */
#define TREE_PARENT_DEATH SIGUSR1

/* Write end of the supervisor's self-pipe. */
static int tree_pipe_w = -1;

/* Notes a signal (one write: async-signal-safe). */
static void tree_note(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    (void)!write(tree_pipe_w, &b, 1);
    errno = saved;
}

/* How far stopping the tree has gone. */
enum { LEVEL_RUNNING, LEVEL_TERM, LEVEL_KILL };

/* The supervisor's state. */
typedef struct tree {
    const ctl_tree_setup *s;
    pid_t self;
    pid_t cmd;              /* the command's pid, and its process group */
    bool cmd_done;
    int cmd_status;         /* its wait status once done */
    int level;
    int64_t kill_at;        /* LEVEL_TERM: when SIGKILL follows */
    int64_t bound;          /* the holding is safe until then; -1: no lease */
    bool tty;               /* the command's group has the terminal */
    int pipe[2];            /* self-pipe */
    int sock;               /* to counterctl; -1 once it is gone */
    pid_t *hit;             /* children signalled at this level */
    size_t nhit, cap;
    unsigned char in[64];   /* unparsed bytes from counterctl */
    size_t nin;
    struct sigaction saved_ign[N_IGNORED];
    struct sigaction saved_death;
} tree;

/* Reads pid's parent and process group from /proc; false if it is gone
 * or unreadable. The name field may hold ')' and spaces: parse after the
 * last ')'. */
static bool proc_stat(pid_t pid, pid_t *ppid, pid_t *pgrp)
{
    char path[64], buf[512], *p, state;
    int pp, pg, fd;
    ssize_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %c %d %d", &state, &pp, &pg) != 3)
        return false;
    *ppid = pp;
    *pgrp = pg;
    return true;
}

/* Whether pid was signalled at this level already. */
static bool hit_has(const tree *t, pid_t pid)
{
    for (size_t i = 0; i < t->nhit; i++)
        if (t->hit[i] == pid)
            return true;
    return false;
}

/* Remembers pid as signalled; if memory runs out it is signalled again on
 * the next scan, which does no harm. */
static void hit_add(tree *t, pid_t pid)
{
    if (t->nhit == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        pid_t *p = realloc(t->hit, cap * sizeof *p);

        if (p == NULL)
            return;
        t->hit = p;
        t->cap = cap;
    }
    t->hit[t->nhit++] = pid;
}

/* Walks /proc. Each child of the supervisor outside the command's process
 * group (an orphan adopted after it left the group, with setsid say) gets
 * sig, when sig is not 0; with once, only if it did not get it at this
 * level yet. Returns whether any process is in the command's group still
 * (true when /proc cannot be read: then the group is signalled anyway). */
static bool tree_scan(tree *t, int sig, bool once)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    bool group = false;

    if (d == NULL)
        return true;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        pid_t ppid, pgrp;

        if (*end != '\0' || v <= 0 || !proc_stat((pid_t)v, &ppid, &pgrp))
            continue;
        if (pgrp == t->cmd) {
            group = true;
            continue;
        }
        if (sig == 0 || ppid != t->self || (once && hit_has(t, (pid_t)v)))
            continue;
        kill((pid_t)v, sig);
        if (once)
            hit_add(t, (pid_t)v);
    }
    closedir(d);
    return group;
}

/* Sends sig to the whole tree: the command's process group (only while
 * it has members, so that a reused number is not hit) and every adopted
 * child outside it. */
static void tree_signal(tree *t, int sig, bool once)
{
    if (tree_scan(t, sig, once) || !t->cmd_done)
        kill(-t->cmd, sig);
}

/* Moves to a harsher level and signals the tree with it. */
static void tree_level(tree *t, int level)
{
    t->level = level;
    t->nhit = 0;
    tree_signal(t, level == LEVEL_KILL ? SIGKILL : SIGTERM, true);
}

/* The watchdog: counterctl renews every third of the lease, so a bound
 * that comes within a third of the lease without a newer one means a
 * renewal is overdue by a third: SIGTERM then. SIGKILL comes a sixth of
 * the lease before the bound, so that the tree is gone before the server
 * can let the lease run out and grant it to the next holder. */
static int64_t tree_lease_term(const tree *t)
{
    return t->bound - t->s->lease_ms / 3;
}

static int64_t tree_lease_kill(const tree *t)
{
    return t->bound - t->s->lease_ms / 6;
}

/* Starts stopping the tree: SIGTERM now, SIGKILL after --kill-after, or
 * earlier if a lease would run out first. */
static void tree_stop(tree *t, int64_t now)
{
    if (t->level != LEVEL_RUNNING)
        return;
    t->kill_at = now + t->s->kill_after_ms;
    if (t->bound >= 0 && tree_lease_kill(t) < t->kill_at)
        t->kill_at = tree_lease_kill(t);
    tree_level(t, LEVEL_TERM);
}

/* Gives the terminal to process group pg, as a shell gives it to a job;
 * SIGTTOU blocked, since the caller may be in the background by then. */
static void tree_give_tty(pid_t pg)
{
    sigset_t ttou, old;

    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    (void)tcsetpgrp(STDIN_FILENO, pg);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The command stopped (the terminal's SIGTSTP reached its group): takes
 * the terminal back and stops counterctl's group (counterctl and the
 * supervisor), so that the shell sees the job stopped. Once continued
 * (fg or bg), passes the SIGCONT on to the command's group. */
static void tree_tell(tree *t, unsigned char msg);

static void tree_job_stopped(tree *t)
{
    tree_give_tty(getpgrp());
    kill(0, SIGSTOP);
    /* Continued. While stopped, nobody renewed the lease: if it may have
     * run out, the server may have granted it to the next holder, and the
     * command must not run again beside it. SIGKILL reaches stopped
     * processes, so it never gets the SIGCONT. */
    if (t->level == LEVEL_RUNNING && t->bound >= 0 &&
        ctl_now_ms() >= tree_lease_term(t)) {
        tree_tell(t, CTL_TREE_WATCHDOG);
        tree_level(t, LEVEL_KILL);
        return;
    }
    if (tcgetpgrp(STDIN_FILENO) == getpgrp())
        tree_give_tty(t->cmd);
    kill(-t->cmd, SIGCONT);
}

/* Reports to counterctl that the watchdog stopped the tree. */
static void tree_tell(tree *t, unsigned char msg)
{
    if (t->sock >= 0)
        (void)!send(t->sock, &msg, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Takes in what counterctl sent; on end of file counterctl is gone. */
static void tree_read(tree *t, int64_t now)
{
    ssize_t n = read(t->sock, t->in + t->nin, sizeof t->in - t->nin);
    size_t i = 0;

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(t->sock);
        t->sock = -1;
        tree_stop(t, now);
        return;
    }
    t->nin += (size_t)n;
    while (i < t->nin) {
        unsigned char b = t->in[i];

        if (b == CTL_TREE_BOUND) {
            int64_t v;

            if (t->nin - i < 1 + sizeof v)
                break;
            memcpy(&v, t->in + i + 1, sizeof v);
            t->bound = v;
            i += 1 + sizeof v;
            continue;
        }
        if (b == CTL_TREE_LOST)
            tree_stop(t, now);
        else if (b == CTL_TREE_NO_BOUND)
            t->bound = -1;
        else if (b > 0 && b < 0x80)
            tree_signal(t, b, false);
        i++;
    }
    memmove(t->in, t->in + i, t->nin - i);
    t->nin -= i;
}

/* Takes in the self-pipe: the parent-death signal stops the tree; SIGCHLD
 * only wakes the loop, which reaps. */
static void tree_signals(tree *t, int64_t now)
{
    unsigned char sigs[64];
    ssize_t n = read(t->pipe[0], sigs, sizeof sigs);

    for (ssize_t i = 0; i < n; i++)
        if (sigs[i] == TREE_PARENT_DEATH)
            tree_stop(t, now);
}

/* In the command's child: back to the signal state counterctl was
 * started with, a process group of its own, then the command. */
_Noreturn static void tree_exec(tree *t, int report_fd)
{
    const ctl_tree_setup *s = t->s;
    int err;

    (void)setpgid(0, 0);
    /* Take the terminal here too, as shells do: the parent's tcsetpgrp
     * may come after the command first reads it, which would stop it with
     * SIGTTIN. */
    if (t->tty)
        tree_give_tty(getpid());
    for (size_t i = 0; i < s->nsigs; i++)
        sigaction(s->sigs[i], &s->old[i], NULL);
    for (size_t i = 0; i < N_IGNORED; i++)
        sigaction(ignored_sigs[i], &t->saved_ign[i], NULL);
    sigaction(TREE_PARENT_DEATH, &t->saved_death, NULL);
#ifdef __linux__
    /* If the supervisor is killed outright, the command goes with it (its
     * own children are then out of reach: see the man page). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != t->self)
        _exit(CTL_EXIT_SOFTWARE);
#endif
    sigprocmask(SIG_SETMASK, s->old_mask, NULL);
    execvp(s->command[0], s->command);
    err = errno;
    (void)!write(report_fd, &err, sizeof err);
    _exit(err == ENOENT ? CTL_EXIT_NOTFOUND : CTL_EXIT_NOEXEC);
}

/* Sets up the supervisor's signals: the self-pipe takes SIGCHLD and the
 * parent-death signal, the terminal's signals are ignored (kept blocked
 * until the loop runs). False on failure. */
static bool tree_signals_install(tree *t)
{
    struct sigaction sa;
    sigset_t block;

    if (pipe2(t->pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return false;
    tree_pipe_w = t->pipe[1];
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, TREE_PARENT_DEATH);
    sigprocmask(SIG_BLOCK, &block, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    for (size_t i = 0; i < N_IGNORED; i++)
        sigaction(ignored_sigs[i], &sa, &t->saved_ign[i]);
    /* counterctl's own handlers were inherited: give the command the
     * dispositions counterctl found, not those. */
    for (size_t i = 0; i < N_IGNORED; i++)
        for (size_t j = 0; j < t->s->nsigs; j++)
            if (t->s->sigs[j] == ignored_sigs[i])
                t->saved_ign[i] = t->s->old[j];
    sa.sa_handler = tree_note;
    sa.sa_mask = block;
    sa.sa_flags = SA_RESTART;
    sigaction(TREE_PARENT_DEATH, &sa, &t->saved_death);
    /* Stops of the command matter only when it has the terminal. */
    sa.sa_flags = SA_RESTART | (t->tty ? 0 : SA_NOCLDSTOP);
    sigaction(SIGCHLD, &sa, NULL);
    return true;
}

/* Starts the command; false if fork fails (message printed). */
static bool tree_spawn(tree *t)
{
    int fds[2], err = 0;
    ssize_t n;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        ctl_error("pipe: %s", strerror(errno));
        return false;
    }
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        tree_exec(t, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        ctl_error("fork: %s", strerror(errno));
        close(fds[0]);
        return false;
    }
    t->cmd = pid;
    /* Also here, so that the group exists before anything signals it. */
    (void)setpgid(pid, pid);
    if (t->tty)
        tree_give_tty(pid);
    do
        n = read(fds[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof err)
        ctl_error("cannot run %s: %s", t->s->command[0], strerror(err));
    close(fds[0]);
    return true;
}

/* Milliseconds poll may sleep before the next thing due. */
static int tree_timeout(const tree *t, int64_t now)
{
    int64_t due = -1;

    if (t->level != LEVEL_RUNNING)
        due = now + TREE_SCAN_MS;
    if (t->level == LEVEL_TERM && (due < 0 || t->kill_at < due))
        due = t->kill_at;
    if (t->level == LEVEL_RUNNING && t->bound >= 0) {
        int64_t wd = tree_lease_term(t);

        if (due < 0 || wd < due)
            due = wd;
    }
    if (due < 0)
        return -1;
    return due <= now ? 0 : due - now > 60000 ? 60000 : (int)(due - now);
}

/* Does what is due: the lease watchdog, SIGKILL after --kill-after, and
 * while stopping, signalling newly adopted orphans. */
static void tree_tick(tree *t, int64_t now)
{
    if (t->level == LEVEL_RUNNING && t->bound >= 0 &&
        now >= tree_lease_term(t)) {
        tree_tell(t, CTL_TREE_WATCHDOG);
        tree_stop(t, now);
    }
    if (t->level == LEVEL_TERM && t->bound >= 0 &&
        tree_lease_kill(t) < t->kill_at)
        t->kill_at = tree_lease_kill(t);
    if (t->level == LEVEL_TERM && now >= t->kill_at)
        tree_level(t, LEVEL_KILL);
    else if (t->level != LEVEL_RUNNING)
        tree_signal(t, t->level == LEVEL_KILL ? SIGKILL : SIGTERM, true);
}

_Noreturn void ctl_tree_main(const ctl_tree_setup *s)
{
    static tree t;
    int st;

    memset(&t, 0, sizeof t);
    t.s = s;
    t.self = getpid();
    t.sock = s->sock;
    t.bound = -1;
    t.tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    if (!tree_signals_install(&t)) {
        ctl_error("pipe: %s", strerror(errno));
        _exit(CTL_EXIT_SOFTWARE);
    }
#ifdef __linux__
    /* Orphans of the tree become ours, not init's, so they can be found
     * and waited for. The kernel tells us when counterctl dies; if it
     * died before we asked, getppid() already shows it. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 ||
        prctl(PR_SET_PDEATHSIG, TREE_PARENT_DEATH) != 0) {
        ctl_error("cannot supervise the command: %s", strerror(errno));
        _exit(CTL_EXIT_SOFTWARE);
    }
#endif
    if (getppid() != s->parent)
        _exit(CTL_EXIT_SOFTWARE);
    if (!tree_spawn(&t))
        _exit(CTL_EXIT_SOFTWARE);
    {
        sigset_t unblock;

        sigemptyset(&unblock);
        sigaddset(&unblock, SIGCHLD);
        sigaddset(&unblock, TREE_PARENT_DEATH);
        sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    }
    for (;;) {
        struct pollfd pfd[2] = {
            { .fd = t.pipe[0], .events = POLLIN },
            { .fd = t.sock, .events = POLLIN }
        };
        int64_t now;
        pid_t w;

        while ((w = waitpid(-1, &st, WNOHANG | (t.tty ? WUNTRACED : 0)))
               > 0) {
            if (WIFSTOPPED(st)) {
                if (w == t.cmd && t.level == LEVEL_RUNNING)
                    tree_job_stopped(&t);
                continue;
            }
            if (w == t.cmd) {
                t.cmd_done = true;
                t.cmd_status = st;
            }
        }
        if (w < 0 && errno == ECHILD)
            break;
        now = ctl_now_ms();
        tree_tick(&t, now);
        if (poll(pfd, 2, tree_timeout(&t, now)) < 0 && errno != EINTR) {
            /* Cannot wait for anything: kill the tree, then reap it. */
            tree_level(&t, LEVEL_KILL);
            continue;
        }
        now = ctl_now_ms();
        if (pfd[0].revents & POLLIN)
            tree_signals(&t, now);
        if (t.sock >= 0 && pfd[1].revents != 0)
            tree_read(&t, now);
    }
    if (t.tty)
        tree_give_tty(getpgrp());
    if (WIFSIGNALED(t.cmd_status))
        _exit(128 + WTERMSIG(t.cmd_status));
    _exit(WEXITSTATUS(t.cmd_status));
}
