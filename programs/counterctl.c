/* counterctl.c: command-line client of the counter protocol: one command
 * per invocation (get, acquire, release, stats, dump, noop), and `run`,
 * which holds resources while a command runs. Exit codes: counterctl.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
    "exit status: 0 ok, 1 error status from the server, 2 usage, 69 cannot\n"
    "connect, 74 connection lost or timed out, 75 run: not available,\n"
    "76 malformed answer; run exits with COMMAND's status (128+N on signal N).\n";

/* Prints a usage error and returns the usage exit code. */
static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("counterctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'counterctl --help' for more information.\n", stderr);
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
    fprintf(stderr, "counterctl: %s\n", ctl_io_text(c, io));
    return io == CTL_IO_PROTOCOL ? CTL_EXIT_PROTOCOL : CTL_EXIT_IOERR;
}

/* Prints an error status answer (its text, or the code when unknown). */
static int status_failure(const cnt_response *res, const char *what)
{
    const char *text = cnt_status_text((cnt_status)res->status);

    if (text != NULL && text[0] != '\0')
        fprintf(stderr, "counterctl: %s: %s (status 0x%02x)\n", what, text,
                res->status);
    else
        fprintf(stderr, "counterctl: %s: status 0x%02x\n", what, res->status);
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
    fprintf(stderr, "counterctl: answer has a %" PRIu32 "-byte body, "
            "expected %" PRIu32 "\n", res->body_len, want);
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
        fprintf(stderr, "counterctl: malformed stats body\n");
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
            fprintf(stderr, "counterctl: malformed dump record\n");
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
        (void)usage_error("%s takes %d argument%s", cmd, want,
                          want == 1 ? "" : "s");
        return CTL_EXIT_USAGE;
    }
    if (want > 0 && !name_ok(args[0]))
        return usage_error("counter name must be 1 to 65535 bytes: '%s'",
                           args[0]);
    for (int i = 1; i < want; i++)
        if (!parse_u32(args[i], &v))
            return usage_error("not a number from 0 to 4294967295: '%s'",
                               args[i]);
    return 0;
}

/* ---- run ---- */

/* The running command, for the signal handler to forward to. */
static volatile sig_atomic_t child_pid;

/* Passes INT, TERM and HUP on to the command, which decides what to do. */
static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
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
        return usage_error("counter name must be 1 to 65535 bytes: '%s'",
                           r->name);
    if (!parse_u32(argv[1], &r->resources))
        return usage_error("not a number from 0 to 4294967295: '%s'", argv[1]);
    if (!parse_u32(argv[2], &r->maximum))
        return usage_error("not a number from 0 to 4294967295: '%s'", argv[2]);
    if (i < argc && strcmp(argv[i], "--wait") == 0) {
        if (i + 1 >= argc || !parse_seconds(argv[i + 1], &r->wait))
            return usage_error("--wait needs a number of seconds: '%s'",
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
            fprintf(stderr, "counterctl: %s: resources not available%s\n",
                    r->name, r->wait > 0 ? " before --wait ran out" : "");
            return CTL_EXIT_TEMPFAIL;
        }
        sleep_seconds(pause < left ? pause : left);
        pause = pause * 2 > 1.0 ? 1.0 : pause * 2;
    }
}

/* Starts the command; returns its pid, or -1 (message printed). */
static pid_t run_spawn(char **command)
{
    int fds[2];
    pid_t pid;
    int err = 0;

    /* A close-on-exec pipe tells the parent whether exec worked. */
    if (pipe2(fds, O_CLOEXEC) != 0) {
        perror("counterctl: pipe");
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(command[0], command);
        err = errno;
        (void)!write(fds[1], &err, sizeof err);
        _exit(err == ENOENT ? CTL_EXIT_NOTFOUND : CTL_EXIT_NOEXEC);
    }
    close(fds[1]);
    if (pid < 0) {
        perror("counterctl: fork");
        close(fds[0]);
        return -1;
    }
    if (read(fds[0], &err, sizeof err) == (ssize_t)sizeof err)
        fprintf(stderr, "counterctl: cannot run %s: %s\n", command[0],
                strerror(err));
    close(fds[0]);
    return pid;
}

/* Waits for the command and turns its end into an exit code. */
static int run_wait(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            perror("counterctl: waitpid");
            return CTL_EXIT_SOFTWARE;
        }
    }
    child_pid = 0;
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
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
        fprintf(stderr, "counterctl: warning: release of %s: %s (the "
                "resources may have been released early)\n", r->name,
                ctl_io_text(c, io));
    else if (res.status != CNT_STATUS_OK)
        (void)status_failure(&res, r->name);
}

/* run: acquire, run the command while holding, release. */
static int cmd_run(ctl_conn *c, const run_args *rp)
{
    struct sigaction sa;
    run_args r = *rp;
    pid_t pid;
    int rc = run_acquire(c, &r);

    if (rc != 0)
        return rc;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    pid = run_spawn(r.command);
    if (pid < 0)
        rc = CTL_EXIT_SOFTWARE;
    else {
        child_pid = pid;
        rc = run_wait(pid);
    }
    run_release(c, &r);
    return rc;
}

/* Parses the global options; returns -1 to go on, else an exit code. */
static int parse_options(int argc, char **argv, ctl_options *o)
{
    static const struct option longopts[] = {
        { "host", required_argument, NULL, 's' },
        { "port", required_argument, NULL, 'p' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    uint32_t port;
    double secs;
    int ch;

    /* "+": stop at the command, so run's own arguments stay untouched. */
    while ((ch = getopt_long(argc, argv, "+s:p:t:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 's':
            o->host = optarg;
            break;
        case 'p':
            if (!parse_u32(optarg, &port) || port == 0 || port > 65535)
                return usage_error("bad port: '%s'", optarg);
            o->port = optarg;
            break;
        case 't':
            if (!parse_seconds(optarg, &secs) || secs <= 0 || secs > 86400)
                return usage_error("bad timeout: '%s'", optarg);
            o->timeout_ms = (int)(secs * 1000);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CTL_EXIT_OK;
        default:
            return usage_error("%s", "bad option");
        }
    }
    return -1;
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
        return rc;
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
        rc = usage_error("unknown command '%s'", cmd);
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
    if (fflush(stdout) != 0 && rc == CTL_EXIT_OK) {
        perror("counterctl: stdout");
        rc = CTL_EXIT_IOERR;
    }
    ctl_conn_free(c);
    return rc;
}
