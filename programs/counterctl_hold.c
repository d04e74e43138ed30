/* counterctl_hold.c: the verbs that hold resources: acquire with --wait,
 * --lease or the group's maximum (wait_acquire), and run, which holds
 * them while a command runs (its process tree is supervised by
 * counterctl_tree.c), renews the lease and releases at the end. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "programs/counterctl_cmd.h"

/* Why the last duration argument was refused, for the usage error. */
static char duration_error[192];

/* --wait and --lease: milliseconds on the wire, below the value that
 * means "the group's". */
static const ctl_span hold_span = {
    1000000, "milliseconds", 0, CNT_USE_GROUP_DEFAULT - 1,
    "0 to 4294967294ms, about 49.7 days",
};

/* hold_wait_acquire's answer when the server does not know wait_acquire
 * (0x81: the reference, or an older server) and run may fall back. */
#define CTL_NO_WAIT_ACQUIRE (-1)

/* Parses the value of --wait or --lease, a duration (protocol/duration.h)
 * of whole milliseconds, into *ms and *secs. False unless it fits below
 * CNT_USE_GROUP_DEFAULT, which means "the group's"; duration_error then
 * says why. */
static bool parse_duration(const char *s, double *secs, uint32_t *ms)
{
    cnt_duration d;
    uint64_t steps;

    if (!ctl_duration_arg(s, &hold_span, &d, &steps, duration_error,
                          sizeof duration_error))
        return false;
    *ms = (uint32_t)steps;
    *secs = (double)d.ns / 1e9;
    return true;
}

/* How long run's command tree has between SIGTERM and SIGKILL unless
 * --kill-after says otherwise. */
#define CTL_KILL_AFTER_MS 10000u

/* Parses NAME RESOURCES MAXIMUM [--wait DURATION] [--lease DURATION] (the
 * two options in either order; run also takes --kill-after DURATION), and
 * for run then -- COMMAND [ARG...]. */
int ctl_parse_hold_args(const char *cmd, int argc, char **argv,
                        hold_args *a)
{
    bool run = strcmp(cmd, "run") == 0, group, wait_set = false;
    bool lease_set = false, kill_set = false;
    double lease = 0, kill_after = 0;
    int i = 3;

    memset(a, 0, sizeof *a);
    a->kill_after_ms = CTL_KILL_AFTER_MS;
    if (argc < 3)
        return ctl_usage_error("%s needs NAME RESOURCES MAXIMUM%s", cmd,
                               run ? " -- COMMAND" : "");
    a->name = argv[0];
    if (!ctl_name_ok(a->name))
        return ctl_usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                               a->name);
    if (!ctl_parse_u32(argv[1], &a->resources))
        return ctl_usage_error("not a number from 0 to 4294967295: \"%s\"",
                               argv[1]);
    group = strcmp(argv[2], "-") == 0;
    if (!group && !ctl_parse_u32(argv[2], &a->maximum))
        return ctl_usage_error("not a number from 0 to 4294967295 (or - for "
                               "the group's maximum): \"%s\"", argv[2]);
    while (i < argc && (strcmp(argv[i], "--wait") == 0 ||
                        strcmp(argv[i], "--lease") == 0 ||
                        (run && strcmp(argv[i], "--kill-after") == 0))) {
        bool is_wait = argv[i][2] == 'w', is_kill = argv[i][2] == 'k';
        bool *set = is_wait ? &wait_set : is_kill ? &kill_set : &lease_set;

        if (*set)
            return ctl_usage_error("%s given twice", argv[i]);
        if (i + 1 >= argc)
            return ctl_usage_error("%s needs a duration ("
                                   CNT_DURATION_EXAMPLES ")", argv[i]);
        if (!parse_duration(argv[i + 1],
                            is_wait ? &a->wait : is_kill ? &kill_after
                                                         : &lease,
                            is_wait ? &a->wait_ms : is_kill
                                    ? &a->kill_after_ms : &a->lease_ms))
            return ctl_usage_error("%s: %s", argv[i], duration_error);
        *set = true;
        i += 2;
    }
    if (run) {
        if (i >= argc || strcmp(argv[i], "--") != 0)
            return ctl_usage_error("%s", "run: expected -- before the "
                                   "command");
        if (i + 1 >= argc)
            return ctl_usage_error("%s", "run: no command given after --");
        a->command = argv + i + 1;
    } else if (i < argc) {
        return ctl_usage_error("%s: unexpected argument \"%s\"", cmd, argv[i]);
    }
    a->waiting = group || wait_set || lease_set;
    /* 0 on the wire means the group's maximum: a maximum of 0, which no
     * acquisition can meet, cannot be asked for with wait_acquire. */
    if (a->waiting && !group && a->maximum == 0)
        return ctl_usage_error("%s", "MAXIMUM 0 can never be met: give 1 to "
                               "4294967295, or - for the group's maximum");
    if (group && !wait_set)
        a->wait_ms = CNT_USE_GROUP_DEFAULT;
    if (group && !lease_set)
        a->lease_ms = CNT_USE_GROUP_DEFAULT;
    return 0;
}

/* A wait_acquire's grant. */
typedef struct hold_grant {
    uint32_t opaque;        /* the request's, which events about it carry */
    uint32_t consumption;   /* the counter's, just after the grant */
    int64_t granted_at;     /* ctl_now_ms() when the grant came in */
} hold_grant;

/* Says the resources did not come in time; returns 75. */
static int not_available(const hold_args *a)
{
    ctl_error("%s: resources not available%s", a->name,
              a->wait_ms == 0 ? ""
              : a->wait_ms == CNT_USE_GROUP_DEFAULT
                  ? " before the group's wait ran out"
                  : " before --wait ran out");
    return CTL_EXIT_TEMPFAIL;
}

/* Notes a grant that came in now. */
static int granted(hold_grant *g, uint32_t consumption)
{
    g->consumption = consumption;
    g->granted_at = ctl_now_ms();
    return 0;
}

/* Asks with wait_acquire and waits for the grant: the answer within -t,
 * then, when it is queued, the granted or timed-out event for as long as
 * the server keeps it waiting (the server bounds that wait; -t only adds
 * a margin to it, and a group's wait, unknown here, has none). Returns 0
 * once granted, CTL_NO_WAIT_ACQUIRE if the server answers 0x81 and
 * fallback is set, else the exit code (message printed). */
static int hold_wait_acquire(ctl_conn *c, const hold_args *a, bool fallback,
                             hold_grant *g)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_wait_acquire(req, opaque, a->resources,
                                         a->maximum, a->wait_ms, a->lease_ms,
                                         a->name, (uint16_t)strlen(a->name));
    int64_t timeout = c->timeout_ms;
    cnt_response res;
    cnt_wait_answer ans;
    cnt_event_packet ev;
    ctl_io io;

    g->opaque = opaque;
    /* The queue may be long: a server that vanishes meanwhile is noticed
     * through keepalive. */
    ctl_conn_keepalive(c);
    io = ctl_conn_send(c, req, len);
    while (io == CTL_IO_OK) {
        io = ctl_conn_next(c, &res, timeout);
        if (io != CTL_IO_OK)
            break;
        if (!cnt_response_is_event(&res)) {
            if (res.opaque != opaque) {
                io = CTL_IO_PROTOCOL;
                break;
            }
            if (res.status == CNT_STATUS_UNKNOWN_COMMAND && fallback)
                return CTL_NO_WAIT_ACQUIRE;
            if (res.status == CNT_STATUS_RESOURCE_NOT_AVAILABLE)
                return not_available(a);
            if (res.status != CNT_STATUS_OK)
                return ctl_status_failure(&res, a->name);
            if (!cnt_parse_wait_answer(&res, &ans)) {
                ctl_error("malformed wait_acquire answer");
                return CTL_EXIT_PROTOCOL;
            }
            if (ans.state == CNT_WAIT_GRANTED)
                return granted(g, ans.consumption);
            timeout = a->wait_ms == CNT_USE_GROUP_DEFAULT
                          ? -1 : (int64_t)a->wait_ms + c->timeout_ms;
            continue;
        }
        if (!cnt_parse_event(&res, &ev)) {
            ctl_error("malformed event");
            return CTL_EXIT_PROTOCOL;
        }
        if (res.opaque != opaque)
            continue;
        if (ev.code == CNT_EVENT_GRANTED)
            return granted(g, ev.value);
        if (ev.code == CNT_EVENT_TIMED_OUT)
            return not_available(a);
        if (ev.code == CNT_EVENT_SHUTDOWN) {
            ctl_error("%s: the server shut down while this waited",
                      a->name);
            return CTL_EXIT_IOERR;
        }
        /* Codes this client does not know are ignored. */
    }
    return ctl_io_failure(c, io);
}

/* acquire with --wait, --lease or MAXIMUM -: waits for the grant and
 * prints the counter's consumption after it. */
int ctl_cmd_wait_acquire(ctl_conn *c, const hold_args *a)
{
    hold_grant g;
    int rc = hold_wait_acquire(c, a, false, &g);

    if (rc == 0)
        printf("%" PRIu32 "\n", g.consumption);
    return rc;
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
static int run_acquire(ctl_conn *c, const hold_args *r)
{
    static uint8_t req[CTL_REQUEST_MAX];
    double deadline = now_seconds() + r->wait, pause = 0.02;

    for (;;) {
        uint32_t opaque = ctl_conn_opaque(c);
        size_t len = cnt_encode_acquire(req, opaque, r->resources, r->maximum,
                                        r->name, (uint16_t)strlen(r->name));
        cnt_response res;
        ctl_io io = ctl_exchange(c, req, len, opaque, &res);
        double left;

        if (io != CTL_IO_OK)
            return ctl_io_failure(c, io);
        if (res.status == CNT_STATUS_OK)
            return 0;
        if (res.status != CNT_STATUS_RESOURCE_NOT_AVAILABLE)
            return ctl_status_failure(&res, r->name);
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

/* The shortest group lease that renewing every CTL_GROUP_RENEW_MS (below) keeps;
 * the supervisor's watchdog assumes a group's lease is this long. */
#define CTL_GROUP_LEASE_MS 3000

/* The supervisor of run's command tree, as counterctl sees it: its pid
 * and counterctl's end of the socket between them. */
typedef struct run_tree {
    pid_t pid;
    int sock;
} run_tree;

/* Forks the supervisor (counterctl_tree.c), which starts the command and
 * shares the connection's socket, so that the server sees the connection
 * close only once the whole tree is gone. Run's signals are blocked
 * meanwhile and unblocked once the pid is known. False on failure
 * (message printed). */
static bool run_spawn(const hold_args *r, run_signals *rs, run_tree *tr)
{
    int sv[2];
    pid_t parent = getpid();

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        ctl_error("socketpair: %s", strerror(errno));
        return false;
    }
    tr->pid = fork();
    if (tr->pid == 0) {
        ctl_tree_setup setup = {
            .command = r->command, .sock = sv[1], .parent = parent,
            .kill_after_ms = r->kill_after_ms,
            .lease_ms = r->lease_ms == CNT_USE_GROUP_DEFAULT
                        ? CTL_GROUP_LEASE_MS : r->lease_ms,
            .sigs = run_sigs, .old = rs->old, .nsigs = RUN_NSIGS,
            .old_mask = &rs->old_mask
        };

        close(rs->pipe[0]);
        close(rs->pipe[1]);
        close(sv[0]);
        ctl_tree_main(&setup);
    }
    close(sv[1]);
    if (tr->pid < 0) {
        ctl_error("fork: %s", strerror(errno));
        close(sv[0]);
        return false;
    }
    tr->sock = sv[0];
    /* The pid is known: signals noted from here on reach the command. */
    sigprocmask(SIG_UNBLOCK, &rs->caught, NULL);
    return true;
}

/* Sends the supervisor one message; it may be gone already, which the
 * wait for it finds out. */
static void run_tell(const run_tree *tr, const void *msg, size_t len)
{
    (void)!send(tr->sock, msg, len, MSG_NOSIGNAL);
}

/* Tells the supervisor until when the holding is safe (-1: no lease). */
static void run_tell_bound(const run_tree *tr, int64_t bound)
{
    unsigned char msg[1 + sizeof bound] = { CTL_TREE_BOUND };

    if (bound < 0) {
        msg[0] = CTL_TREE_NO_BOUND;
        run_tell(tr, msg, 1);
        return;
    }
    memcpy(msg + 1, &bound, sizeof bound);
    run_tell(tr, msg, sizeof msg);
}

/* How often run renews a lease that is the group's: its length is the
 * server's and unknown here, so often enough for any group lease of 3 s
 * or more (doc/counterctl.1 asks for --lease below that). */
#define CTL_GROUP_RENEW_MS 1000

/* A wait_acquire grant that run keeps while the command runs: events
 * about it carry its opaque; with a lease, one Renew at a time goes out
 * every period. */
typedef struct run_hold {
    uint32_t opaque;        /* the wait_acquire's */
    uint32_t lease_ms;      /* sent in each Renew (may be the group's) */
    int64_t period_ms;      /* between Renews; 0: nothing to renew */
    int64_t next_renew;     /* ctl_now_ms() when the next is due */
    bool renewing;          /* a Renew awaits its answer */
    uint32_t renew_opaque;
    int64_t renew_sent;     /* ctl_now_ms() when it went out */
    int64_t renew_due;      /* its answer is overdue after this */
    int64_t lease_len;      /* ms the server keeps it after a renewal */
    int64_t bound;          /* held at least until then; -1: no lease */
    bool bound_changed;     /* the supervisor is yet to hear of bound */
} run_hold;

/* Whether a holding still stands. */
typedef enum hold_state {
    HOLD_KEPT,
    HOLD_LOST_LEASE,        /* expired, or a Renew was refused */
    HOLD_LOST_CONNECTION    /* closed, failed, or the server stops */
} hold_state;

/* Sets up the renewing of grant g: every third of the lease, from the
 * moment the grant came in (the server starts the lease clock when it
 * sends the grant, a little earlier). */
static void run_hold_init(run_hold *h, const hold_args *a,
                          const hold_grant *g)
{
    memset(h, 0, sizeof *h);
    h->opaque = g->opaque;
    h->lease_ms = a->lease_ms;
    if (a->lease_ms == CNT_USE_GROUP_DEFAULT)
        h->period_ms = CTL_GROUP_RENEW_MS;
    else if (a->lease_ms > 0)
        h->period_ms = a->lease_ms >= 3 ? a->lease_ms / 3 : 1;
    h->next_renew = g->granted_at + h->period_ms;
    /* The server counts the lease from when it sent the grant, a little
     * before it came in; the watchdog keeps a sixth of the lease as
     * margin. Each confirmed renewal then gives a true lower bound: the
     * server renewed after the Renew was sent. */
    h->lease_len = a->lease_ms == CNT_USE_GROUP_DEFAULT ? CTL_GROUP_LEASE_MS
                                                        : a->lease_ms;
    h->bound = h->period_ms > 0 ? g->granted_at + h->lease_len : -1;
    h->bound_changed = true;
}

/* Takes one packet that came while holding: an event about the grant, or
 * the answer to the Renew in flight. Anything else is a broken stream.
 * Sets why (n bytes) when the holding is lost. */
static hold_state run_hold_packet(run_hold *h, const cnt_response *res,
                                  char *why, size_t n)
{
    cnt_event_packet ev;
    const char *text;
    uint64_t id;

    if (cnt_response_is_event(res)) {
        if (!cnt_parse_event(res, &ev)) {
            snprintf(why, n, "malformed event");
            return HOLD_LOST_CONNECTION;
        }
        if (res->opaque != h->opaque)
            return HOLD_KEPT;
        if (ev.code == CNT_EVENT_LEASE_EXPIRED) {
            snprintf(why, n, "it expired");
            return HOLD_LOST_LEASE;
        }
        if (ev.code == CNT_EVENT_SHUTDOWN) {
            snprintf(why, n, "the server is shutting down");
            return HOLD_LOST_CONNECTION;
        }
        return HOLD_KEPT;
    }
    if (!h->renewing || res->opaque != h->renew_opaque) {
        snprintf(why, n, "an answer to no request");
        return HOLD_LOST_CONNECTION;
    }
    h->renewing = false;
    if (res->status == CNT_STATUS_OK) {
        if (cnt_parse_renew_answer(res, &id)) {
            h->bound = h->renew_sent + h->lease_len;
            h->bound_changed = true;
            return HOLD_KEPT;
        }
        snprintf(why, n, "malformed renew answer");
        return HOLD_LOST_CONNECTION;
    }
    /* The group's lease is 0: the grant has no lease to renew. */
    if (res->status == CNT_STATUS_INVALID &&
        h->lease_ms == CNT_USE_GROUP_DEFAULT) {
        h->period_ms = 0;
        h->bound = -1;
        h->bound_changed = true;
        return HOLD_KEPT;
    }
    if (res->status == CNT_STATUS_LEASE_EXPIRED) {
        snprintf(why, n, "it expired before it was renewed");
        return HOLD_LOST_LEASE;
    }
    text = cnt_status_text((cnt_status)res->status);
    snprintf(why, n, "renew refused: %s (status 0x%02x)",
             text != NULL ? text : "", res->status);
    return HOLD_LOST_LEASE;
}

/* Takes in every packet the socket has, without waiting. */
static hold_state run_hold_drain(ctl_conn *c, run_hold *h, char *why,
                                 size_t n)
{
    for (;;) {
        cnt_response res;
        ctl_io io = ctl_conn_poll(c, &res);
        hold_state st;

        if (io == CTL_IO_AGAIN)
            return HOLD_KEPT;
        if (io != CTL_IO_OK) {
            snprintf(why, n, "%s", ctl_io_text(c, io));
            return HOLD_LOST_CONNECTION;
        }
        st = run_hold_packet(h, &res, why, n);
        if (st != HOLD_KEPT)
            return st;
    }
}

/* Sends the Renew that is due, or finds the one in flight unanswered for
 * longer than -t. */
static hold_state run_hold_tick(ctl_conn *c, run_hold *h, const char *name,
                                char *why, size_t n)
{
    static uint8_t req[CTL_REQUEST_MAX];
    int64_t now = ctl_now_ms();
    size_t len;
    ctl_io io;

    if (h->renewing) {
        if (now < h->renew_due)
            return HOLD_KEPT;
        snprintf(why, n, "%s", ctl_io_text(c, CTL_IO_TIMEOUT));
        return HOLD_LOST_CONNECTION;
    }
    if (h->period_ms == 0 || now < h->next_renew)
        return HOLD_KEPT;
    h->renew_opaque = ctl_conn_opaque(c);
    len = cnt_encode_renew(req, h->renew_opaque, h->lease_ms, name,
                           (uint16_t)strlen(name));
    io = ctl_conn_send(c, req, len);
    if (io != CTL_IO_OK) {
        snprintf(why, n, "%s", ctl_io_text(c, io));
        return HOLD_LOST_CONNECTION;
    }
    h->renewing = true;
    h->renew_sent = now;
    h->renew_due = now + c->timeout_ms;
    /* After a stop (SIGSTOP) the missed Renews are not sent in a burst:
     * the next one is a period after this one. */
    h->next_renew = now + h->period_ms;
    return HOLD_KEPT;
}

/* Milliseconds until run_hold_tick has something to do, for poll. */
static int run_hold_timeout(const run_hold *h)
{
    int64_t due = h->renewing ? h->renew_due
                : h->period_ms > 0 ? h->next_renew : -1;
    int64_t left;

    if (due < 0)
        return -1;
    left = due - ctl_now_ms();
    return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Takes in what the supervisor sent, without waiting; true if its
 * watchdog stopped the tree (no renewal was confirmed in time). */
static bool run_tree_read(const run_tree *tr)
{
    unsigned char buf[64];
    bool watchdog = false;
    ssize_t n;

    while ((n = recv(tr->sock, buf, sizeof buf, MSG_DONTWAIT)) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == CTL_TREE_WATCHDOG)
                watchdog = true;
    return watchdog;
}

/* Says the holding is lost and has the supervisor stop the tree. */
static void run_lost(const run_tree *tr, const hold_args *r, hold_state held,
                     const char *why)
{
    unsigned char msg = CTL_TREE_LOST;

    run_tell(tr, &msg, 1);
    ctl_error("lost the %s \"%s\" (%s); sent SIGTERM to the command",
              held == HOLD_LOST_LEASE ? "lease on" : "connection holding",
              r->name, why);
}

/* Waits for the command's tree (the supervisor's exit) while passing
 * signals on to it and watching the connection, and with a wait_acquire
 * grant (h not NULL) its events and its lease, renewed on time, each
 * renewal told to the supervisor. If the connection or the lease goes,
 * the holding is gone with it: the supervisor stops the tree and *lost is
 * set; the wait goes on until the tree is gone. Returns the command's
 * exit code (or 70 if waiting fails or the supervisor is killed). */
static int run_supervise(ctl_conn *c, const hold_args *r, run_hold *h,
                         const run_tree *tr, run_signals *rs, bool *lost)
{
    bool watching = true;

    *lost = false;
    for (;;) {
        struct pollfd pfd[3] = {
            { .fd = rs->pipe[0], .events = POLLIN },
            { .fd = watching ? c->fd : -1, .events = POLLIN },
            { .fd = tr->sock, .events = POLLIN }
        };
        hold_state held = HOLD_KEPT;
        char why[128];
        int st;
        pid_t w;

        if (h != NULL && watching && h->bound_changed) {
            run_tell_bound(tr, h->bound);
            h->bound_changed = false;
        }
        w = waitpid(tr->pid, &st, WNOHANG);
        if (w == tr->pid) {
            if (run_tree_read(tr) && !*lost) {
                run_lost(tr, r, HOLD_LOST_LEASE, "not renewed in time");
                *lost = true;
            }
            if (WIFSIGNALED(st)) {
                ctl_error("the supervisor of the command was killed by "
                          "signal %d; processes the command started may "
                          "run on", WTERMSIG(st));
                return CTL_EXIT_SOFTWARE;
            }
            return WEXITSTATUS(st);
        }
        if (w < 0 && errno != EINTR) {
            ctl_error("waitpid: %s", strerror(errno));
            return CTL_EXIT_SOFTWARE;
        }
        if (poll(pfd, 3, watching && h != NULL ? run_hold_timeout(h) : -1)
            < 0) {
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
                    run_tell(tr, &sigs[i], 1);
        }
        if (pfd[2].revents != 0 && run_tree_read(tr) && !*lost) {
            snprintf(why, sizeof why, "not renewed in time");
            held = HOLD_LOST_LEASE;
        }
        if (held != HOLD_KEPT) {
            /* The watchdog already stopped the tree. */
        } else if (watching && pfd[1].revents != 0 && h == NULL) {
            ctl_io io = ctl_conn_watch(c);

            if (io != CTL_IO_OK) {
                snprintf(why, sizeof why, "%s", ctl_io_text(c, io));
                held = HOLD_LOST_CONNECTION;
            }
        } else if (watching && pfd[1].revents != 0) {
            held = run_hold_drain(c, h, why, sizeof why);
        }
        /* Packets first: after a stop, an expiry that came meanwhile is
         * read before a late Renew is sent. */
        if (watching && h != NULL && held == HOLD_KEPT)
            held = run_hold_tick(c, h, r->name, why, sizeof why);
        if (held != HOLD_KEPT) {
            run_lost(tr, r, held, why);
            watching = false;
            *lost = true;
        }
    }
}

/* Releases what run acquired; a failure only warns, since the server
 * releases anyway when the connection closes. */
static void run_release(ctl_conn *c, const hold_args *r)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_release(req, opaque, r->resources, r->name,
                                    (uint16_t)strlen(r->name));
    cnt_response res;
    ctl_io io = ctl_exchange(c, req, len, opaque, &res);

    if (io != CTL_IO_OK)
        ctl_error("warning: release of %s: %s (the resources may have been "
                  "released early)", r->name, ctl_io_text(c, io));
    else if (res.status != CNT_STATUS_OK)
        (void)ctl_status_failure(&res, r->name);
}

/* Returns a wait_acquire grant (Wait_release) once the command ended,
 * taking in what came before the answer. A lease found expired by then
 * means the command ran its last moments without the holding: 75. Other
 * failures only warn, as in run_release, and rc (the command's status)
 * stands. */
static int run_wait_release(ctl_conn *c, const hold_args *r, run_hold *h,
                            int rc)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_wait_release(req, opaque, r->name,
                                         (uint16_t)strlen(r->name));
    hold_state held = HOLD_KEPT;
    cnt_response res;
    char why[128];
    ctl_io io = ctl_conn_send(c, req, len);

    while (io == CTL_IO_OK && held == HOLD_KEPT) {
        io = ctl_conn_next(c, &res, c->timeout_ms);
        if (io != CTL_IO_OK)
            break;
        if (cnt_response_is_event(&res) || res.opaque != opaque) {
            held = run_hold_packet(h, &res, why, sizeof why);
            continue;
        }
        if (res.status == CNT_STATUS_LEASE_EXPIRED) {
            snprintf(why, sizeof why, "it expired");
            held = HOLD_LOST_LEASE;
            break;
        }
        if (res.status != CNT_STATUS_OK)
            (void)ctl_status_failure(&res, r->name);
        return rc;
    }
    if (held == HOLD_LOST_LEASE) {
        ctl_error("lost the lease on \"%s\" (%s) before the command ended",
                  r->name, why);
        return CTL_EXIT_TEMPFAIL;
    }
    if (held == HOLD_KEPT)
        snprintf(why, sizeof why, "%s", ctl_io_text(c, io));
    ctl_error("warning: release of %s: %s (the resources may have been "
              "released early)", r->name, why);
    return rc;
}

/* run: acquire (waiting in the server's queue with wait_acquire, or
 * retrying Acquire when the server has no wait_acquire or no option asks
 * for it), run the command while holding, release. */
int ctl_cmd_run(ctl_conn *c, const hold_args *r)
{
    run_signals rs;
    run_hold hold, *h = NULL;
    run_tree tr;
    hold_grant g;
    bool lost = false;
    int rc = CTL_NO_WAIT_ACQUIRE;

    /* Falling back to Acquire needs a maximum of our own. */
    if (r->waiting)
        rc = hold_wait_acquire(c, r, r->maximum != 0, &g);
    if (rc == 0) {
        run_hold_init(&hold, r, &g);
        h = &hold;
    } else if (rc == CTL_NO_WAIT_ACQUIRE) {
        rc = run_acquire(c, r);
    }
    if (rc != 0)
        return rc;
    ctl_conn_keepalive(c);
    if (!run_signals_install(&rs))
        return CTL_EXIT_SOFTWARE;
    if (!run_spawn(r, &rs, &tr)) {
        rc = CTL_EXIT_SOFTWARE;
    } else {
        rc = run_supervise(c, r, h, &tr, &rs, &lost);
        close(tr.sock);
    }
    run_signals_restore(&rs);
    run_signals_close(&rs);
    if (lost)
        return CTL_EXIT_TEMPFAIL;
    if (h != NULL)
        return run_wait_release(c, r, h, rc);
    run_release(c, r);
    return rc;
}
