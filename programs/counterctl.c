/* counterctl.c: command-line client of the counter protocol: one command
 * per invocation (get, acquire, release, stats, dump, noop), and `run`,
 * which holds resources while a command runs. Exit codes: counterctl.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "programs/counterctl.h"

/* Room for any request counterctl sends: header, Acquire fields, name. */
#define CTL_REQUEST_MAX CNT_REQUEST_MAX

/* Parsed global options. */
typedef struct ctl_options {
    const char *host;
    const char *port;
    int timeout_ms;
} ctl_options;

static const char usage_text[] =
    "usage: counterctl [-s HOST] [-p PORT] [-t SECONDS] COMMAND [ARGS]\n"
    "commands:\n"
    "  noop                          check that the server answers\n"
    "  get NAME                      print the current consumption of NAME\n"
    "  acquire NAME RESOURCES MAXIMUM\n"
    "                                acquire (released again when counterctl exits)\n"
    "  release NAME RESOURCES        release (only what this connection holds)\n"
    "  stats                         print the server's statistics, `name value`\n"
    "  dump                          print every counter, `name current max`\n"
    "  run NAME RESOURCES MAXIMUM [--wait SECONDS] -- COMMAND [ARG...]\n"
    "                                hold the resources while COMMAND runs\n"
    "options:\n"
    "  -s, --host HOST     server (default 127.0.0.1)\n"
    "  -p, --port PORT     counter port (default 11215)\n"
    "  -t, --timeout SECS  wait at most this long for each answer (default 10)\n"
    "  -h, --help          show this help\n"
    "      --version       show the version\n"
    "exit status: 0 ok, 1 error status from the server, 2 usage, 69 cannot\n"
    "connect, 74 connection lost or timed out, 75 run: not available or the\n"
    "holding was lost, 76 malformed answer; run exits with COMMAND's status\n"
    "(128+N on signal N).\n";

/* Prints a usage error and returns the usage exit code. */
static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ctl_verror(" (try counterctl --help)", fmt, ap);
    va_end(ap);
    return CTL_EXIT_USAGE;
}

/* Parses a decimal u32 (digits only); false if it is not one. */
static bool parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long v;

    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Parses a non-negative number of seconds (fractions allowed). */
static bool parse_seconds(const char *s, double *out)
{
    char *end;
    double v;

    if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
        return false;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || v < 0 || v > 31536000.0)
        return false;
    *out = v;
    return true;
}

/* Checks a counter name's length (1..65535 bytes). */
static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= CNT_NAME_MAX;
}

/* Maps an I/O failure to a message and an exit code. */
static int io_failure(const ctl_conn *c, ctl_io io)
{
    ctl_error("%s", ctl_io_text(c, io));
    return io == CTL_IO_PROTOCOL ? CTL_EXIT_PROTOCOL : CTL_EXIT_IOERR;
}

/* Prints an error status answer (its text, or the code when unknown). */
static int status_failure(const cnt_response *res, const char *what)
{
    const char *text = cnt_status_text((cnt_status)res->status);

    if (text != NULL && text[0] != '\0')
        ctl_error("%s: %s (status 0x%02x)", what, text, res->status);
    else
        ctl_error("%s: status 0x%02x", what, res->status);
    return CTL_EXIT_STATUS;
}

/* Sends one request of len bytes (opaque in it) and reads its answer. */
static ctl_io exchange(ctl_conn *c, const uint8_t *req, size_t len,
                       uint32_t opaque, cnt_response *res)
{
    ctl_io io = ctl_conn_send(c, req, len);

    return io == CTL_IO_OK ? ctl_conn_response(c, opaque, res) : io;
}

/* Checks that a status-0 answer carries a body of exactly want bytes. */
static int expect_body(const cnt_response *res, uint32_t want)
{
    if (res->body_len == want)
        return CTL_EXIT_OK;
    ctl_error("answer has a %" PRIu32 "-byte body, expected %" PRIu32,
              res->body_len, want);
    return CTL_EXIT_PROTOCOL;
}

/* noop / get / acquire / release: one request, one answer. */
static int cmd_simple(ctl_conn *c, const char *cmd, char **args)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c), a = 0, b = 0;
    const char *name = args[0];
    cnt_response res;
    size_t len;
    ctl_io io;
    int rc;

    if (strcmp(cmd, "noop") == 0)
        len = cnt_encode_simple(req, CNT_OP_NOOP, opaque);
    else if (strcmp(cmd, "get") == 0)
        len = cnt_encode_get(req, opaque, name, (uint16_t)strlen(name));
    else if (strcmp(cmd, "acquire") == 0) {
        (void)parse_u32(args[1], &a);
        (void)parse_u32(args[2], &b);
        len = cnt_encode_acquire(req, opaque, a, b, name,
                                 (uint16_t)strlen(name));
    } else {
        (void)parse_u32(args[1], &a);
        len = cnt_encode_release(req, opaque, a, name, (uint16_t)strlen(name));
    }
    io = exchange(c, req, len, opaque, &res);
    if (io != CTL_IO_OK)
        return io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return status_failure(&res, name != NULL ? name : cmd);
    if (strcmp(cmd, "get") != 0 && strcmp(cmd, "acquire") != 0)
        return CTL_EXIT_OK;
    rc = expect_body(&res, 4);
    if (rc == CTL_EXIT_OK)
        printf("%" PRIu32 "\n", cnt_get_u32(res.body));
    return rc;
}

/* stats: prints `name value` per item. */
static int cmd_stats(ctl_conn *c)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    const char *name, *value;
    uint16_t nlen, vlen;
    size_t pos = 0;
    ctl_io io;

    io = exchange(c, req, cnt_encode_simple(req, CNT_OP_STATS, opaque),
                  opaque, &res);
    if (io != CTL_IO_OK)
        return io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return status_failure(&res, "stats");
    while (cnt_stats_next(&res, &pos, &name, &nlen, &value, &vlen)) {
        ctl_print_escaped((const uint8_t *)name, nlen);
        putchar(' ');
        ctl_print_escaped((const uint8_t *)value, vlen);
        putchar('\n');
    }
    if (pos != res.body_len) {
        ctl_error("malformed stats body");
        return CTL_EXIT_PROTOCOL;
    }
    return CTL_EXIT_OK;
}

/* dump: prints `name current max` per counter until the end marker. */
static int cmd_dump(ctl_conn *c)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    cnt_dump_record rec;
    ctl_io io;

    io = ctl_conn_send(c, req, cnt_encode_simple(req, CNT_OP_DUMP, opaque));
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK)
            return status_failure(&res, "dump");
        if (cnt_response_is_dump_end(&res))
            return CTL_EXIT_OK;
        if (!cnt_dump_record_parse(&res, &rec)) {
            ctl_error("malformed dump record");
            return CTL_EXIT_PROTOCOL;
        }
        ctl_print_escaped(rec.name, rec.name_len);
        printf(" %" PRIu32 " %" PRIu32 "\n", rec.current, rec.max);
    }
    return io_failure(c, io);
}

/* Checks the arguments of a one-request command; returns 0 or the usage
 * exit code after printing why. */
static int check_simple_args(const char *cmd, int argc, char **args)
{
    int want = strcmp(cmd, "noop") == 0 ? 0 : strcmp(cmd, "get") == 0 ? 1
             : strcmp(cmd, "acquire") == 0 ? 3 : 2;
    uint32_t v;

    if (argc != want) {
        return usage_error("%s takes %d argument%s", cmd, want,
                           want == 1 ? "" : "s");
    }
    if (want > 0 && !name_ok(args[0]))
        return usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                           args[0]);
    for (int i = 1; i < want; i++)
        if (!parse_u32(args[i], &v))
            return usage_error("not a number from 0 to 4294967295: \"%s\"",
                               args[i]);
    return 0;
}

/* ---- run ---- */

/* The signals run catches: the three it passes on to the command, and
 * SIGCHLD, which wakes its wait for the command. */
static const int run_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
#define RUN_NSIGS (sizeof run_sigs / sizeof run_sigs[0])

/* Write end of the self-pipe. The handler only notes which signal came;
 * run_supervise acts on it once the command's pid is known, so a signal
 * that arrives around the fork is passed on, never dropped. */
static int signal_pipe_w = -1;

/* Notes a signal for run_supervise (one write: async-signal-safe). */
static void note_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;

    (void)!write(signal_pipe_w, &b, 1);
    errno = saved;
}

/* Signal state of `run`: the self-pipe, and what to give back to the
 * command (the dispositions and mask counterctl was started with). */
typedef struct run_signals {
    int pipe[2];
    sigset_t caught;                    /* the signals note_signal takes */
    sigset_t old_mask;
    struct sigaction old[RUN_NSIGS];
} run_signals;

/* Blocks and catches run_sigs (a signal that counterctl was started with
 * ignored stays ignored, as a shell would leave it for the command); they
 * stay blocked until the command's pid is recorded. False on failure. */
static bool run_signals_install(run_signals *rs)
{
    struct sigaction sa;

    if (pipe2(rs->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        ctl_error("pipe: %s", strerror(errno));
        return false;
    }
    signal_pipe_w = rs->pipe[1];
    sigemptyset(&rs->caught);
    for (size_t i = 0; i < RUN_NSIGS; i++) {
        sigaction(run_sigs[i], NULL, &rs->old[i]);
        if (run_sigs[i] == SIGCHLD || rs->old[i].sa_handler != SIG_IGN)
            sigaddset(&rs->caught, run_sigs[i]);
    }
    sigprocmask(SIG_BLOCK, &rs->caught, &rs->old_mask);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_signal;
    sa.sa_mask = rs->caught;
    for (size_t i = 0; i < RUN_NSIGS; i++) {
        if (!sigismember(&rs->caught, run_sigs[i]))
            continue;
        sa.sa_flags = SA_RESTART | (run_sigs[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
        sigaction(run_sigs[i], &sa, NULL);
    }
    return true;
}

/* Gives back the dispositions and mask counterctl was started with. */
static void run_signals_restore(run_signals *rs)
{
    for (size_t i = 0; i < RUN_NSIGS; i++)
        if (sigismember(&rs->caught, run_sigs[i]))
            sigaction(run_sigs[i], &rs->old[i], NULL);
    sigprocmask(SIG_SETMASK, &rs->old_mask, NULL);
}

/* Frees the self-pipe (after run_signals_restore). */
static void run_signals_close(run_signals *rs)
{
    close(rs->pipe[0]);
    close(rs->pipe[1]);
    signal_pipe_w = -1;
}

/* Arguments of `run`. */
typedef struct run_args {
    const char *name;
    uint32_t resources;
    uint32_t maximum;
    double wait;
    char **command;
} run_args;

/* Parses NAME RESOURCES MAXIMUM [--wait SECONDS] -- COMMAND... */
static int parse_run_args(int argc, char **argv, run_args *r)
{
    int i = 3;

    if (argc < 3)
        return usage_error("%s", "run needs NAME RESOURCES MAXIMUM -- COMMAND");
    r->name = argv[0];
    r->wait = 0;
    if (!name_ok(r->name))
        return usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                           r->name);
    if (!parse_u32(argv[1], &r->resources))
        return usage_error("not a number from 0 to 4294967295: \"%s\"", argv[1]);
    if (!parse_u32(argv[2], &r->maximum))
        return usage_error("not a number from 0 to 4294967295: \"%s\"", argv[2]);
    if (i < argc && strcmp(argv[i], "--wait") == 0) {
        if (i + 1 >= argc || !parse_seconds(argv[i + 1], &r->wait))
            return usage_error("--wait needs a number of seconds: \"%s\"",
                               i + 1 < argc ? argv[i + 1] : "");
        i += 2;
    }
    if (i >= argc || strcmp(argv[i], "--") != 0)
        return usage_error("%s", "run: expected -- before the command");
    if (i + 1 >= argc)
        return usage_error("%s", "run: no command given after --");
    r->command = argv + i + 1;
    return 0;
}

/* Seconds on the monotonic clock. */
static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps for s seconds (s < 2). */
static void sleep_seconds(double s)
{
    struct timespec ts = { .tv_sec = (time_t)s,
                           .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Acquires, retrying with a growing pause while --wait allows; returns 0
 * once held, or the exit code. */
static int run_acquire(ctl_conn *c, const run_args *r)
{
    static uint8_t req[CTL_REQUEST_MAX];
    double deadline = now_seconds() + r->wait, pause = 0.02;

    for (;;) {
        uint32_t opaque = ctl_conn_opaque(c);
        size_t len = cnt_encode_acquire(req, opaque, r->resources, r->maximum,
                                        r->name, (uint16_t)strlen(r->name));
        cnt_response res;
        ctl_io io = exchange(c, req, len, opaque, &res);
        double left;

        if (io != CTL_IO_OK)
            return io_failure(c, io);
        if (res.status == CNT_STATUS_OK)
            return 0;
        if (res.status != CNT_STATUS_RESOURCE_NOT_AVAILABLE)
            return status_failure(&res, r->name);
        left = deadline - now_seconds();
        if (left <= 0) {
            ctl_error("%s: resources not available%s", r->name,
                      r->wait > 0 ? " before --wait ran out" : "");
            return CTL_EXIT_TEMPFAIL;
        }
        sleep_seconds(pause < left ? pause : left);
        pause = pause * 2 > 1.0 ? 1.0 : pause * 2;
    }
}

/* In the child: puts signals back as counterctl found them, ties the
 * child's life to counterctl's, and executes the command. Never returns. */
static void run_child(char **command, run_signals *rs, pid_t parent,
                      int report_fd)
{
    int err;

    close(rs->pipe[0]);
    close(rs->pipe[1]);
    for (size_t i = 0; i < RUN_NSIGS; i++)
        if (sigismember(&rs->caught, run_sigs[i]))
            sigaction(run_sigs[i], &rs->old[i], NULL);
#ifdef __linux__
    /* If counterctl dies without passing anything on (SIGKILL, a crash),
     * the server has already released: the command must not run on.
     * SIGKILL, since a command may ignore SIGTERM. Checked again after
     * setting it: a parent that died before then did not signal us. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        ctl_error("cannot set the parent-death signal: %s", strerror(errno));
        _exit(CTL_EXIT_SOFTWARE);
    }
    if (getppid() != parent)
        _exit(CTL_EXIT_SOFTWARE);
#else
    (void)parent;
#endif
    sigprocmask(SIG_SETMASK, &rs->old_mask, NULL);
    execvp(command[0], command);
    err = errno;
    (void)!write(report_fd, &err, sizeof err);
    _exit(err == ENOENT ? CTL_EXIT_NOTFOUND : CTL_EXIT_NOEXEC);
}

/* Starts the command with run's signals blocked; returns its pid, or -1
 * (message printed). The signals are unblocked once the pid is known. */
static pid_t run_spawn(char **command, run_signals *rs)
{
    pid_t parent = getpid(), pid;
    int fds[2], err = 0;
    ssize_t n;

    /* A close-on-exec pipe tells the parent whether exec worked. */
    if (pipe2(fds, O_CLOEXEC) != 0) {
        ctl_error("pipe: %s", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run_child(command, rs, parent, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        ctl_error("fork: %s", strerror(errno));
        close(fds[0]);
        return -1;
    }
    /* The pid is known: signals noted from here on reach the command. */
    sigprocmask(SIG_UNBLOCK, &rs->caught, NULL);
    do
        n = read(fds[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof err)
        ctl_error("cannot run %s: %s", command[0], strerror(err));
    close(fds[0]);
    return pid;
}

/* Turns a wait status into run's exit code. */
static int run_status(int st)
{
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

/* Waits for the command while passing signals on to it and watching the
 * connection. If the connection goes, the holding is gone with it: the
 * command gets SIGTERM and *lost is set; the wait goes on until it ends.
 * Returns the command's exit code (or 70 if waiting fails). */
static int run_supervise(ctl_conn *c, const run_args *r, pid_t pid,
                         run_signals *rs, bool *lost)
{
    bool watching = true;

    *lost = false;
    for (;;) {
        struct pollfd pfd[2] = {
            { .fd = rs->pipe[0], .events = POLLIN },
            { .fd = watching ? c->fd : -1, .events = POLLIN }
        };
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);

        if (w == pid)
            return run_status(st);
        if (w < 0 && errno != EINTR) {
            ctl_error("waitpid: %s", strerror(errno));
            return CTL_EXIT_SOFTWARE;
        }
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            ctl_error("poll: %s", strerror(errno));
            return CTL_EXIT_SOFTWARE;
        }
        if (pfd[0].revents & POLLIN) {
            unsigned char sigs[64];
            ssize_t n = read(rs->pipe[0], sigs, sizeof sigs);

            for (ssize_t i = 0; i < n; i++)
                if (sigs[i] != SIGCHLD)
                    kill(pid, sigs[i]);
        }
        if (watching && pfd[1].revents != 0) {
            ctl_io io = ctl_conn_watch(c);

            if (io != CTL_IO_OK) {
                kill(pid, SIGTERM);
                ctl_error("lost the connection holding \"%s\" (%s); sent "
                          "SIGTERM to the command", r->name,
                          ctl_io_text(c, io));
                watching = false;
                *lost = true;
            }
        }
    }
}

/* Releases what run acquired; a failure only warns, since the server
 * releases anyway when the connection closes. */
static void run_release(ctl_conn *c, const run_args *r)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_release(req, opaque, r->resources, r->name,
                                    (uint16_t)strlen(r->name));
    cnt_response res;
    ctl_io io = exchange(c, req, len, opaque, &res);

    if (io != CTL_IO_OK)
        ctl_error("warning: release of %s: %s (the resources may have been "
                  "released early)", r->name, ctl_io_text(c, io));
    else if (res.status != CNT_STATUS_OK)
        (void)status_failure(&res, r->name);
}

/* run: acquire, run the command while holding, release. */
static int cmd_run(ctl_conn *c, const run_args *r)
{
    run_signals rs;
    bool lost = false;
    pid_t pid;
    int rc = run_acquire(c, r);

    if (rc != 0)
        return rc;
    ctl_conn_keepalive(c);
    if (!run_signals_install(&rs))
        return CTL_EXIT_SOFTWARE;
    pid = run_spawn(r->command, &rs);
    rc = pid < 0 ? CTL_EXIT_SOFTWARE : run_supervise(c, r, pid, &rs, &lost);
    run_signals_restore(&rs);
    run_signals_close(&rs);
    if (lost)
        return CTL_EXIT_TEMPFAIL;
    run_release(c, r);
    return rc;
}

/* Says why getopt_long refused a long option: unknown, ambiguous (a
 * prefix of two), or given a value it does not take. */
static int long_option_error(const struct option *longopts, const char *arg)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    int matches = 0;

    for (const struct option *lo = longopts; lo->name != NULL; lo++)
        if (strncmp(lo->name, name, len) == 0)
            matches++;
    if (matches > 1)
        return usage_error("ambiguous option \"%.*s\"", (int)len + 2, arg);
    if (matches == 1 && eq != NULL)
        return usage_error("option \"%.*s\" takes no value", (int)len + 2,
                           arg);
    return usage_error("unknown option \"%.*s\"", (int)len + 2, arg);
}

/* Parses the global options; returns -1 to go on, else an exit code. */
static int parse_options(int argc, char **argv, ctl_options *o)
{
    static const struct option longopts[] = {
        { "host", required_argument, NULL, 's' },
        { "port", required_argument, NULL, 'p' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    uint32_t port;
    double secs;
    int ch;

    /* "+": stop at the command, so run's own arguments stay untouched;
     * ":" and opterr = 0: getopt's own messages would name argv[0] and
     * differ from ours, so every complaint is worded here. */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+:s:p:t:h", longopts, NULL)) != -1) {
        const char *arg = argv[optind - 1];


        switch (ch) {
        case 's':
            o->host = optarg;
            break;
        case 'p':
            if (!parse_u32(optarg, &port) || port == 0 || port > 65535)
                return usage_error("bad port: \"%s\"", optarg);
            o->port = optarg;
            break;
        case 't':
            if (!parse_seconds(optarg, &secs) || secs <= 0 || secs > 86400)
                return usage_error("bad timeout: \"%s\"", optarg);
            o->timeout_ms = (int)(secs * 1000);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CTL_EXIT_OK;
        case 'V':
            printf("counterctl %s\n", PACKAGE_VERSION);
            return CTL_EXIT_OK;
        case ':':
            return usage_error("option \"%s\" needs a value", arg);
        default:
            if (strncmp(arg, "--", 2) == 0)
                return long_option_error(longopts, arg);
            return usage_error("unknown option \"-%c\"", optopt);
        }
    }
    return -1;
}

/* Flushes stdout; a failed write (a full disk, a closed pipe) turns
 * success into 74, since the output is then incomplete. */
static int flush_stdout(int rc)
{
    if (fflush(stdout) != 0 && rc == CTL_EXIT_OK) {
        ctl_error("stdout: %s", strerror(errno));
        return CTL_EXIT_IOERR;
    }
    return rc;
}

/* Entry point: parse, connect, run one command. */
int main(int argc, char **argv)
{
    ctl_options o = { "127.0.0.1", "11215", 10000 };
    run_args r;
    ctl_conn *c;
    const char *cmd;
    int rc = parse_options(argc, argv, &o);

    if (rc >= 0)
        return flush_stdout(rc);
    if (optind >= argc)
        return usage_error("%s", "no command given");
    cmd = argv[optind++];
    argc -= optind;
    argv += optind;
    if (strcmp(cmd, "noop") == 0 || strcmp(cmd, "get") == 0 ||
        strcmp(cmd, "acquire") == 0 || strcmp(cmd, "release") == 0)
        rc = check_simple_args(cmd, argc, argv);
    else if (strcmp(cmd, "stats") == 0 || strcmp(cmd, "dump") == 0)
        rc = argc == 0 ? 0 : usage_error("%s takes no arguments", cmd);
    else if (strcmp(cmd, "run") == 0)
        rc = parse_run_args(argc, argv, &r);
    else
        rc = usage_error("unknown command \"%s\"", cmd);
    if (rc != 0)
        return rc;
    c = ctl_conn_new(o.host, o.port, o.timeout_ms);
    if (c == NULL)
        return CTL_EXIT_UNAVAILABLE;
    if (strcmp(cmd, "stats") == 0)
        rc = cmd_stats(c);
    else if (strcmp(cmd, "dump") == 0)
        rc = cmd_dump(c);
    else if (strcmp(cmd, "run") == 0)
        rc = cmd_run(c, &r);
    else
        rc = cmd_simple(c, cmd, argv);
    rc = flush_stdout(rc);
    ctl_conn_free(c);
    return rc;
}
