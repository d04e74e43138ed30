/* counterctl.c: command-line client of the counter protocol: one command
 * per invocation (get, acquire, release, stats, dump, queues, noop; the
 * rate limits ttl, window and gcra; tenant throttling: throttle, tenant and
 * node, the privileged ones authenticated with --secret-file), and `run`,
 * which holds resources while a command runs. With --wait, --lease or a
 * group's maximum, acquire and run wait in the server's queue
 * (wait_acquire) and run renews the lease. With --servers, a command
 * about a name goes to the server ketama places the name on (as
 * libmemcached would place the key), and the others run on every server.
 * Exit codes: counterctl.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/ketama.h"
#include "programs/counterctl.h"

/* Room for any request counterctl sends: header, Acquire fields, name. */
#define CTL_REQUEST_MAX CNT_REQUEST_MAX

/* Parsed global options. */
typedef struct ctl_options {
    const char *host;
    const char *port;
    int timeout_ms;
    const char *secret_file;    /* --secret-file; NULL if not given */
    const char *servers;        /* --servers; NULL if not given */
    bool host_given;            /* -s given (excludes --servers) */
    bool port_given;            /* -p given (excludes --servers) */
} ctl_options;

static const char usage_text[] =
    "usage: counterctl [-s HOST] [-p PORT] [-t DURATION] [--secret-file PATH]\n"
    "                  COMMAND [ARGS]\n"
    "       counterctl --servers HOST:PORT[:WEIGHT],... [-t DURATION]\n"
    "                  [--secret-file PATH] COMMAND [ARGS]\n"
    "commands:\n"
    "  noop                          check that the server answers\n"
    "  get NAME                      print the current consumption of NAME\n"
    "  acquire NAME RESOURCES MAXIMUM [--wait DURATION] [--lease DURATION]\n"
    "                                acquire (released again when counterctl exits)\n"
    "  release NAME RESOURCES        release (only what this connection holds)\n"
    "  stats                         print the server's statistics, `name value`\n"
    "  dump                          print every counter, `name current max`\n"
    "  queues                        print every counter with waiters,\n"
    "                                `name consumption waiters`\n"
    "  run NAME RESOURCES MAXIMUM [--wait DURATION] [--lease DURATION]\n"
    "      [--kill-after DURATION] -- COMMAND [ARG...]\n"
    "                                hold the resources while COMMAND and\n"
    "                                every process it starts run\n"
    "  ttl insert NAME QUOTA TTL     create a TTL counter (TTL: 250ms, 2h)\n"
    "  ttl query NAME                print its quota, ttl and unit\n"
    "  ttl update NAME quota|ttl patch|increase|decrease VALUE\n"
    "                                change it (VALUE of a ttl with a unit)\n"
    "  ttl purge NAME                remove it\n"
    "  window NAME LIMIT [--window DURATION] [--slots N] [--cost N] [--peek]\n"
    "                                at most LIMIT per sliding window\n"
    "                                (default 1s in 10 slots)\n"
    "  gcra NAME BURST COUNT PERIOD [--cost N] [--peek]\n"
    "                                COUNT per PERIOD, BURST more at once\n"
    "  throttle TENANT UNITS [--unthrottled]\n"
    "                                charge UNITS to TENANT this second\n"
    "  tenant show [TENANT]          print a tenant (without TENANT: all)\n"
    "  tenant set TENANT [--reserved N] [--hard-limit N|unlimited]\n"
    "                                configure a tenant (privileged)\n"
    "  tenant remove TENANT          back to the defaults (privileged)\n"
    "  node show                     print the node's throttling figures\n"
    "  node set --capacity N         units per second, 0: off (privileged)\n"
    "  node reload                   re-read the settings file (privileged)\n"
    "  where NAME                    print the server NAME maps to (no connection)\n"
    "acquire and run with --wait, --lease or MAXIMUM - wait in the server's\n"
    "queue up to --wait (default 0); acquire then prints the\n"
    "consumption. --lease: the server releases unless renewed within\n"
    "it; run renews every third of it. MAXIMUM -: the maximum of the\n"
    "server's group NAME, and its wait and lease unless given. run stops\n"
    "COMMAND's whole process tree when the holding is lost or counterctl\n"
    "dies: SIGTERM, SIGKILL --kill-after later (default 10s), and\n"
    "releases only once no process of it is left.\n"
    "durations: a number, a fraction if wanted, and a unit: ns, us, ms, s,\n"
    "m or min (minutes), h; a bare number is seconds (250ms, 1.5s, 5min). window\n"
    "and gcra print `state allowed|limited|never`, limit, remaining, used,\n"
    "retry_after_ns and reset_after_ns, one `key value` per line; --peek\n"
    "charges nothing. ttl query and update print quota, ttl and unit.\n"
    "throttle prints state allowed|throttled, reason, used, remaining and\n"
    "retry_after_ns; tenant show and node show print their figures, one\n"
    "`key value` per line. Privileged commands and throttle --unthrottled\n"
    "authenticate with the secret in --secret-file's file.\n"
    "--servers: a command about a counter or tenant NAME goes to the server\n"
    "NAME maps to (libmemcached's weighted ketama); if that server is down it\n"
    "fails (69) and is never tried elsewhere. The other commands run on every\n"
    "server in list order, each output after `# server HOST:PORT` when there\n"
    "are several; the exit status is the highest.\n"
    "options:\n"
    "  -s, --host HOST     server (default 127.0.0.1)\n"
    "  -p, --port PORT     counter port (default 11215)\n"
    "      --servers LIST  HOST:PORT[:WEIGHT],... ([ADDR]:PORT for IPv6),\n"
    "                      instead of -s and -p\n"
    "  -t, --timeout DURATION  wait at most this long for each answer (default 10s)\n"
    "      --secret-file PATH  the admin secret, for privileged commands\n"
    "  -h, --help          show this help\n"
    "      --version       show the version\n"
    "exit status: 0 ok (window, gcra, throttle: allowed), 1 error status\n"
    "from the server (Not found, Exists, ...) or an unusable --secret-file,\n"
    "window, gcra: never allowed, 2 usage, 69 cannot connect, 74\n"
    "connection lost or timed out, 75 acquire, run: not available before\n"
    "the wait ran out, run: the holding (connection or lease) was lost,\n"
    "window, gcra: limited, throttle: throttled, 76 malformed answer; run\n"
    "exits with COMMAND's status (128+N on signal N).\n";

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
    uint64_t v;

    if (!ctl_parse_u64(s, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Why the last duration argument was refused, for the usage error. */
static char duration_error[192];

/* --wait and --lease: milliseconds on the wire, below the value that
 * means "the group's". */
static const ctl_span hold_span = {
    1000000, "milliseconds", 0, CNT_USE_GROUP_DEFAULT - 1,
    "0 to 4294967294ms, about 49.7 days",
};

/* -t: each wait for an answer, in milliseconds. */
static const ctl_span timeout_span = {
    1000000, "milliseconds", 1, 86400000,
    "more than 0, at most 24h",
};

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

/* queues: prints `name consumption waiters` per counter that has a
 * queue, until the end marker. */
static int cmd_queues(ctl_conn *c)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    cnt_queues_record rec;
    ctl_io io;

    io = ctl_conn_send(c, req, cnt_encode_simple(req, CNT_OP_QUEUES, opaque));
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK)
            return status_failure(&res, "queues");
        if (cnt_response_is_queues_end(&res))
            return CTL_EXIT_OK;
        if (!cnt_parse_queues_record(&res, &rec)) {
            ctl_error("malformed queues record");
            return CTL_EXIT_PROTOCOL;
        }
        ctl_print_escaped(rec.name, rec.name_len);
        printf(" %" PRIu32 " %" PRIu32 "\n", rec.consumption, rec.queue_len);
    }
    return io_failure(c, io);
}

/* Checks the arguments of a one-request command; returns 0 or the usage
 * exit code after printing why. */
static int check_simple_args(const char *cmd, int argc, char **args)
{
    int want = strcmp(cmd, "noop") == 0 ? 0 : strcmp(cmd, "get") == 0 ? 1
             : 2;
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

/* ---- acquire and run: what to hold, and waiting for it ---- */

/* hold_wait_acquire's answer when the server does not know wait_acquire
 * (0x81: the reference, or an older server) and run may fall back. */
#define CTL_NO_WAIT_ACQUIRE (-1)

/* Arguments of `acquire` and `run`. */
typedef struct hold_args {
    const char *name;
    uint32_t resources;
    uint32_t maximum;       /* 0: the group's (MAXIMUM given as -) */
    bool waiting;           /* ask with wait_acquire, not Acquire */
    double wait;            /* --wait in seconds, for run's Acquire retries */
    uint32_t wait_ms;       /* as sent; CNT_USE_GROUP_DEFAULT: the group's */
    uint32_t lease_ms;      /* as sent; 0: no lease */
    uint32_t kill_after_ms; /* run: from SIGTERM to SIGKILL of the tree */
    char **command;         /* run's command */
} hold_args;

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
static int parse_hold_args(const char *cmd, int argc, char **argv,
                           hold_args *a)
{
    bool run = strcmp(cmd, "run") == 0, group, wait_set = false;
    bool lease_set = false, kill_set = false;
    double lease = 0, kill_after = 0;
    int i = 3;

    memset(a, 0, sizeof *a);
    a->kill_after_ms = CTL_KILL_AFTER_MS;
    if (argc < 3)
        return usage_error("%s needs NAME RESOURCES MAXIMUM%s", cmd,
                           run ? " -- COMMAND" : "");
    a->name = argv[0];
    if (!name_ok(a->name))
        return usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                           a->name);
    if (!parse_u32(argv[1], &a->resources))
        return usage_error("not a number from 0 to 4294967295: \"%s\"",
                           argv[1]);
    group = strcmp(argv[2], "-") == 0;
    if (!group && !parse_u32(argv[2], &a->maximum))
        return usage_error("not a number from 0 to 4294967295 (or - for "
                           "the group's maximum): \"%s\"", argv[2]);
    while (i < argc && (strcmp(argv[i], "--wait") == 0 ||
                        strcmp(argv[i], "--lease") == 0 ||
                        (run && strcmp(argv[i], "--kill-after") == 0))) {
        bool is_wait = argv[i][2] == 'w', is_kill = argv[i][2] == 'k';
        bool *set = is_wait ? &wait_set : is_kill ? &kill_set : &lease_set;

        if (*set)
            return usage_error("%s given twice", argv[i]);
        if (i + 1 >= argc)
            return usage_error("%s needs a duration (" CNT_DURATION_EXAMPLES
                               ")", argv[i]);
        if (!parse_duration(argv[i + 1],
                            is_wait ? &a->wait : is_kill ? &kill_after
                                                         : &lease,
                            is_wait ? &a->wait_ms : is_kill
                                    ? &a->kill_after_ms : &a->lease_ms))
            return usage_error("%s: %s", argv[i], duration_error);
        *set = true;
        i += 2;
    }
    if (run) {
        if (i >= argc || strcmp(argv[i], "--") != 0)
            return usage_error("%s", "run: expected -- before the command");
        if (i + 1 >= argc)
            return usage_error("%s", "run: no command given after --");
        a->command = argv + i + 1;
    } else if (i < argc) {
        return usage_error("%s: unexpected argument \"%s\"", cmd, argv[i]);
    }
    a->waiting = group || wait_set || lease_set;
    /* 0 on the wire means the group's maximum: a maximum of 0, which no
     * acquisition can meet, cannot be asked for with wait_acquire. */
    if (a->waiting && !group && a->maximum == 0)
        return usage_error("%s", "MAXIMUM 0 can never be met: give 1 to "
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
                return status_failure(&res, a->name);
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
    return io_failure(c, io);
}

/* acquire with --wait, --lease or MAXIMUM -: waits for the grant and
 * prints the counter's consumption after it. */
static int cmd_wait_acquire(ctl_conn *c, const hold_args *a)
{
    hold_grant g;
    int rc = hold_wait_acquire(c, a, false, &g);

    if (rc == 0)
        printf("%" PRIu32 "\n", g.consumption);
    return rc;
}

/* ---- rate limits: ttl, window, gcra ---- */

/* Arguments of `ttl ...`, `window` and `gcra`: one request's fields. */
typedef struct limit_args {
    uint8_t opcode;
    const char *name;
    uint64_t value;         /* ttl insert: quota; ttl update: value */
    uint64_t ttl;           /* ttl insert, in unit */
    uint8_t unit;           /* ttl insert; ttl update of the ttl */
    uint8_t attribute;      /* ttl update: a cnt_ttl_attribute */
    uint8_t change;         /* ttl update: a cnt_ttl_change */
    uint8_t flags;          /* window, gcra: CNT_CHECK_FLAG_PEEK or 0 */
    uint8_t slots;          /* window: 0 = the server's default */
    uint32_t limit;         /* window: limit; gcra: burst */
    uint32_t count;         /* gcra */
    uint32_t cost;
    uint64_t period_ns;     /* window: 0 = the server's default; gcra */
} limit_args;

/* Parses what (an argument's name, for messages) as a duration: its
 * length in nanoseconds, which must fit in 64 bits and, unless zero_ok, be
 * above 0, and the same as a whole number of one wire unit (the one it was
 * written in when it is whole there: 1.5h goes as 90min). A usage error
 * naming it else. */
static int parse_duration_arg(const char *what, const char *s, bool zero_ok,
                              uint64_t *value, uint8_t *unit, uint64_t *ns)
{
    const ctl_span span = {
        1, "nanoseconds", zero_ok ? 0 : 1, UINT64_MAX,
        zero_ok ? "at most 18446744073709551615ns, about 584 years"
                : "longer than 0, at most 18446744073709551615ns, about "
                  "584 years",
    };
    cnt_duration d;

    if (!ctl_duration_arg(s, &span, &d, ns, duration_error,
                          sizeof duration_error))
        return usage_error("%s: %s", what, duration_error);
    cnt_duration_in_unit(&d, value, unit);
    return 0;
}

/* Parses a u32 argument of at least min; a usage error naming it else. */
static int parse_u32_arg(const char *what, const char *s, uint32_t min,
                         uint32_t *out)
{
    if (!parse_u32(s, out) || *out < min)
        return usage_error("%s must be a number from %" PRIu32 " to "
                           "4294967295: \"%s\"", what, min, s);
    return 0;
}

/* Parses ttl's subcommand (insert, query, update, purge) and its
 * arguments. */
static int parse_ttl_args(int argc, char **argv, limit_args *a)
{
    static const char *const changes[] = { "patch", "increase",
                                           "decrease" };
    const char *verb = argc > 0 ? argv[0] : "";
    uint64_t ns;
    int want;

    if (strcmp(verb, "insert") == 0) {
        a->opcode = CNT_OP_TTL_INSERT;
        want = 3;
    } else if (strcmp(verb, "query") == 0 || strcmp(verb, "purge") == 0) {
        a->opcode = verb[0] == 'q' ? CNT_OP_TTL_QUERY : CNT_OP_TTL_PURGE;
        want = 1;
    } else if (strcmp(verb, "update") == 0) {
        a->opcode = CNT_OP_TTL_UPDATE;
        want = 4;
    } else if (argc == 0) {
        return usage_error("%s", "ttl needs insert, query, update or purge");
    } else {
        return usage_error("ttl: unknown subcommand \"%s\" (insert, query, "
                           "update or purge)", verb);
    }
    if (argc - 1 != want)
        return usage_error("ttl %s needs %s", verb,
                           want == 3 ? "NAME QUOTA TTL"
                           : want == 4 ? "NAME quota|ttl "
                                         "patch|increase|decrease VALUE"
                           : "NAME");
    a->name = argv[1];
    if (!name_ok(a->name))
        return usage_error("name must be 1 to 65535 bytes: \"%s\"", a->name);
    if (a->opcode == CNT_OP_TTL_INSERT) {
        if (!ctl_parse_u64(argv[2], &a->value))
            return usage_error("QUOTA must be a number from 0 to "
                               "18446744073709551615: \"%s\"", argv[2]);
        return parse_duration_arg("TTL", argv[3], false, &a->ttl, &a->unit,
                                  &ns);
    }
    if (a->opcode != CNT_OP_TTL_UPDATE)
        return 0;
    if (strcmp(argv[2], "quota") == 0)
        a->attribute = CNT_TTL_ATTR_QUOTA;
    else if (strcmp(argv[2], "ttl") == 0)
        a->attribute = CNT_TTL_ATTR_TTL;
    else
        return usage_error("ttl update: expected quota or ttl, not \"%s\"",
                           argv[2]);
    for (a->change = 0; a->change < 3; a->change++)
        if (strcmp(argv[3], changes[a->change]) == 0)
            break;
    if (a->change == 3)
        return usage_error("ttl update: expected patch, increase or "
                           "decrease, not \"%s\"", argv[3]);
    if (a->attribute == CNT_TTL_ATTR_QUOTA) {
        /* The unit byte only matters for a ttl; any valid one will do. */
        a->unit = CNT_UNIT_NS;
        if (!ctl_parse_u64(argv[4], &a->value))
            return usage_error("VALUE must be a number from 0 to "
                               "18446744073709551615: \"%s\"", argv[4]);
        return 0;
    }
    /* Increasing or decreasing by 0 changes nothing, but is no error;
     * a time left of 0 is. */
    return parse_duration_arg("VALUE", argv[4],
                              a->change != CNT_TTL_PATCH, &a->value,
                              &a->unit, &ns);
}

/* Parses the options of window (with_window) and gcra after the
 * positional arguments, from argv[i] on; each may be given once. */
static int parse_check_options(const char *cmd, int argc, char **argv,
                               int i, bool with_window, limit_args *a)
{
    bool window_set = false, slots_set = false, cost_set = false;
    uint32_t slots = 0;
    uint64_t value;
    uint8_t unit;
    int rc;

    a->cost = 1;
    for (; i < argc; i++) {
        const char *opt = argv[i];
        bool *set;

        if (strcmp(opt, "--peek") == 0) {
            if (a->flags & CNT_CHECK_FLAG_PEEK)
                return usage_error("%s given twice", opt);
            a->flags |= CNT_CHECK_FLAG_PEEK;
            continue;
        }
        if (strcmp(opt, "--cost") == 0)
            set = &cost_set;
        else if (with_window && strcmp(opt, "--window") == 0)
            set = &window_set;
        else if (with_window && strcmp(opt, "--slots") == 0)
            set = &slots_set;
        else
            return usage_error("%s: unexpected argument \"%s\"", cmd, opt);
        if (*set)
            return usage_error("%s given twice", opt);
        if (i + 1 >= argc)
            return usage_error("%s needs a value", opt);
        *set = true;
        i++;
        if (set == &cost_set)
            rc = parse_u32_arg("--cost", argv[i], 1, &a->cost);
        else if (set == &window_set)
            rc = parse_duration_arg("--window", argv[i], false, &value,
                                    &unit, &a->period_ns);
        else if (!parse_u32(argv[i], &slots) || slots < 1 ||
                 slots > CNT_WINDOW_MAX_SLOTS)
            rc = usage_error("--slots must be a number from 1 to %u: "
                             "\"%s\"", CNT_WINDOW_MAX_SLOTS, argv[i]);
        else
            rc = 0;
        if (rc != 0)
            return rc;
    }
    if (with_window) {
        /* The server's defaults stand in for what is not given, so the
         * shape is checked as the server will see it. */
        uint64_t window = window_set ? a->period_ns : CNT_WINDOW_DEFAULT_NS;
        uint32_t n = slots_set ? slots : CNT_WINDOW_DEFAULT_SLOTS;

        a->slots = (uint8_t)slots;
        if (window % n != 0)
            return usage_error("--window %" PRIu64 "ns does not divide into "
                               "%" PRIu32 " slots (--slots) of whole "
                               "nanoseconds", window, n);
        if (window / n < CNT_WINDOW_MIN_SLOT_NS)
            return usage_error("--window %" PRIu64 "ns in %" PRIu32 " slots "
                               "(--slots) makes slots shorter than 1us",
                               window, n);
    }
    return 0;
}

/* Parses window NAME LIMIT [options] or gcra NAME BURST COUNT PERIOD
 * [options]. */
static int parse_check_args(const char *cmd, int argc, char **argv,
                            limit_args *a)
{
    bool window = strcmp(cmd, "window") == 0;
    int npos = window ? 2 : 4, rc;
    uint64_t value;
    uint8_t unit;

    a->opcode = window ? CNT_OP_WINDOW_CHECK : CNT_OP_GCRA_CHECK;
    if (argc < npos || strncmp(argv[npos - 1], "--", 2) == 0)
        return usage_error("%s needs %s", cmd,
                           window ? "NAME LIMIT" : "NAME BURST COUNT PERIOD");
    a->name = argv[0];
    if (!name_ok(a->name))
        return usage_error("name must be 1 to 65535 bytes: \"%s\"", a->name);
    rc = parse_u32_arg(window ? "LIMIT" : "BURST", argv[1], 0, &a->limit);
    if (rc == 0 && !window)
        rc = parse_u32_arg("COUNT", argv[2], 1, &a->count);
    if (rc == 0 && !window)
        rc = parse_duration_arg("PERIOD", argv[3], false, &value, &unit,
                                &a->period_ns);
    if (rc != 0)
        return rc;
    return parse_check_options(cmd, argc, argv, npos, window, a);
}

/* Parses the arguments of ttl, window or gcra. */
static int parse_limit_args(const char *cmd, int argc, char **argv,
                            limit_args *a)
{
    memset(a, 0, sizeof *a);
    if (strcmp(cmd, "ttl") == 0)
        return parse_ttl_args(argc, argv, a);
    return parse_check_args(cmd, argc, argv, a);
}

/* Encodes the request a describes; returns its size. */
static size_t encode_limit(uint8_t *req, uint32_t opaque,
                           const limit_args *a)
{
    uint16_t len = (uint16_t)strlen(a->name);

    switch (a->opcode) {
    case CNT_OP_TTL_INSERT:
        return cnt_encode_ttl_insert(req, opaque, a->value, a->ttl, a->unit,
                                     a->name, len);
    case CNT_OP_TTL_QUERY:
        return cnt_encode_ttl_query(req, opaque, a->name, len);
    case CNT_OP_TTL_UPDATE:
        return cnt_encode_ttl_update(req, opaque, a->attribute, a->change,
                                     a->unit, a->value, a->name, len);
    case CNT_OP_TTL_PURGE:
        return cnt_encode_ttl_purge(req, opaque, a->name, len);
    case CNT_OP_WINDOW_CHECK:
        return cnt_encode_window_check(req, opaque, a->flags, a->slots,
                                       a->limit, a->cost, a->period_ns,
                                       a->name, len);
    default:
        return cnt_encode_gcra_check(req, opaque, a->flags, a->limit,
                                     a->count, a->cost, a->period_ns,
                                     a->name, len);
    }
}

/* Prints a check answer as `key value` lines; returns 0 allowed, 75
 * limited, 1 never (saying so on stderr). */
static int print_check(const limit_args *a, const cnt_check_result *r)
{
    static const char *const states[] = { "allowed", "limited", "never" };

    printf("state %s\nlimit %" PRIu32 "\nremaining %" PRIu32 "\nused %"
           PRIu32 "\nretry_after_ns %" PRIu64 "\nreset_after_ns %" PRIu64
           "\n", states[r->state], r->limit, r->remaining, r->used,
           r->retry_after_ns, r->reset_after_ns);
    if (r->state == CNT_CHECK_ALLOWED)
        return CTL_EXIT_OK;
    if (r->state == CNT_CHECK_LIMITED)
        return CTL_EXIT_TEMPFAIL;
    ctl_error("%s: can never be allowed: the cost %" PRIu32 " is above "
              "the limit %" PRIu32, a->name, a->cost, r->limit);
    return CTL_EXIT_STATUS;
}

/* ttl insert|query|update|purge, window, gcra: one request, its answer's
 * fields as `key value` lines (none for insert and purge). */
static int cmd_limit(ctl_conn *c, const limit_args *a)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = encode_limit(req, opaque, a);
    cnt_response res;
    cnt_ttl_answer view;
    cnt_check_result check;
    ctl_io io = exchange(c, req, len, opaque, &res);

    if (io != CTL_IO_OK)
        return io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return status_failure(&res, a->name);
    switch (a->opcode) {
    case CNT_OP_TTL_INSERT:
    case CNT_OP_TTL_PURGE:
        return CTL_EXIT_OK;
    case CNT_OP_TTL_QUERY:
    case CNT_OP_TTL_UPDATE:
        if (!cnt_parse_ttl_view(&res, &view)) {
            ctl_error("malformed ttl answer");
            return CTL_EXIT_PROTOCOL;
        }
        printf("quota %" PRIu64 "\nttl %" PRIu64 "\nunit %s\n", view.quota,
               view.ttl_left, cnt_unit_name(view.unit));
        return CTL_EXIT_OK;
    default:
        if (!cnt_parse_check_answer(&res, &check)) {
            ctl_error("malformed check answer");
            return CTL_EXIT_PROTOCOL;
        }
        return print_check(a, &check);
    }
}

/* ---- tenant throttling: throttle, tenant, node ---- */

/* Arguments of `throttle`, `tenant ...` and `node ...`: one request's
 * fields (and, for throttle --unthrottled, the Unthrottle before it). */
typedef struct throttle_args {
    uint8_t opcode;
    const char *verb;       /* "throttle", "tenant show", ..., for messages */
    const char *tenant;     /* NULL for the node, and for the list */
    uint32_t units;         /* throttle */
    bool unthrottled;       /* throttle --unthrottled */
    uint8_t set_flags;      /* tenant set: CNT_TENANT_SET_* */
    uint32_t reserved;      /* tenant set */
    uint32_t hard_limit;    /* tenant set */
    uint32_t capacity;      /* node set */
} throttle_args;

/* Tells whether cmd is one of the throttling commands. */
static bool throttle_command(const char *cmd)
{
    return strcmp(cmd, "throttle") == 0 || strcmp(cmd, "tenant") == 0 ||
           strcmp(cmd, "node") == 0;
}

/* Tells whether a needs the admin secret: a privileged opcode, or the
 * Unthrottle that throttle --unthrottled sends first. */
static bool throttle_privileged(const throttle_args *a)
{
    return a->unthrottled || cnt_opcode_table[a->opcode].privileged;
}

/* Checks a tenant name (1..65535 bytes, any bytes). */
static int tenant_arg(const char *verb, const char *name)
{
    if (!name_ok(name))
        return usage_error("%s: tenant name must be 1 to 65535 bytes: "
                           "\"%s\"", verb, name);
    return 0;
}

/* Parses throttle TENANT UNITS [--unthrottled]. */
static int parse_throttle_charge(int argc, char **argv, throttle_args *a)
{
    int rc;

    a->opcode = CNT_OP_THROTTLE;
    a->verb = "throttle";
    if (argc < 2 || strncmp(argv[1], "--", 2) == 0)
        return usage_error("%s", "throttle needs TENANT UNITS");
    a->tenant = argv[0];
    rc = tenant_arg(a->verb, a->tenant);
    if (rc == 0)
        rc = parse_u32_arg("UNITS", argv[1], 1, &a->units);
    for (int i = 2; rc == 0 && i < argc; i++) {
        if (strcmp(argv[i], "--unthrottled") != 0)
            return usage_error("throttle: unexpected argument \"%s\"",
                               argv[i]);
        if (a->unthrottled)
            return usage_error("%s", "--unthrottled given twice");
        a->unthrottled = true;
    }
    return rc;
}

/* Parses tenant set TENANT's options: --reserved N, --hard-limit
 * N|unlimited, each at most once, at least one. */
static int parse_tenant_set(int argc, char **argv, throttle_args *a)
{
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i];
        uint8_t flag;

        if (strcmp(opt, "--reserved") == 0)
            flag = CNT_TENANT_SET_RESERVED;
        else if (strcmp(opt, "--hard-limit") == 0)
            flag = CNT_TENANT_SET_HARD;
        else
            return usage_error("tenant set: unexpected argument \"%s\"",
                               opt);
        if (a->set_flags & flag)
            return usage_error("%s given twice", opt);
        if (i + 1 >= argc)
            return usage_error("%s needs a value", opt);
        a->set_flags |= flag;
        if (flag == CNT_TENANT_SET_RESERVED) {
            int rc = parse_u32_arg("--reserved", argv[i + 1], 0,
                                   &a->reserved);
            if (rc != 0)
                return rc;
        } else if (!ctl_parse_hard_limit(argv[i + 1], &a->hard_limit)) {
            return usage_error("--hard-limit must be a number from 0 to "
                               "4294967294 or unlimited: \"%s\"",
                               argv[i + 1]);
        }
    }
    if (a->set_flags == 0)
        return usage_error("%s", "tenant set needs --reserved N, "
                           "--hard-limit N|unlimited, or both");
    return 0;
}

/* Parses tenant show [TENANT], tenant set TENANT [options] and tenant
 * remove TENANT. */
static int parse_tenant_args(int argc, char **argv, throttle_args *a)
{
    const char *sub = argc > 0 ? argv[0] : "";
    int rc;

    if (strcmp(sub, "show") == 0) {
        a->verb = "tenant show";
        if (argc > 2)
            return usage_error("%s", "tenant show takes at most TENANT");
        a->opcode = argc == 2 ? CNT_OP_TENANT_SHOW : CNT_OP_TENANT_LIST;
        a->tenant = argc == 2 ? argv[1] : NULL;
        return a->tenant != NULL ? tenant_arg(a->verb, a->tenant) : 0;
    }
    if (strcmp(sub, "set") == 0 || strcmp(sub, "remove") == 0) {
        bool set = sub[0] == 's';

        a->verb = set ? "tenant set" : "tenant remove";
        a->opcode = set ? CNT_OP_TENANT_SET : CNT_OP_TENANT_REMOVE;
        if (argc < 2 || strncmp(argv[1], "--", 2) == 0)
            return usage_error("%s needs TENANT", a->verb);
        if (!set && argc > 2)
            return usage_error("tenant remove: unexpected argument \"%s\"",
                               argv[2]);
        a->tenant = argv[1];
        rc = tenant_arg(a->verb, a->tenant);
        return rc != 0 || !set ? rc : parse_tenant_set(argc - 1, argv + 1,
                                                       a);
    }
    if (argc == 0)
        return usage_error("%s", "tenant needs show, set or remove");
    return usage_error("tenant: unknown subcommand \"%s\" (show, set or "
                       "remove)", sub);
}

/* Parses node show, node set --capacity N and node reload. */
static int parse_node_args(int argc, char **argv, throttle_args *a)
{
    const char *sub = argc > 0 ? argv[0] : "";

    if (strcmp(sub, "show") == 0 || strcmp(sub, "reload") == 0) {
        a->verb = sub[0] == 's' ? "node show" : "node reload";
        a->opcode = sub[0] == 's' ? CNT_OP_NODE_SHOW : CNT_OP_RELOAD;
        if (argc > 1)
            return usage_error("%s: unexpected argument \"%s\"", a->verb,
                               argv[1]);
        return 0;
    }
    if (strcmp(sub, "set") == 0) {
        a->verb = "node set";
        a->opcode = CNT_OP_NODE_SET;
        if (argc < 2 || strcmp(argv[1], "--capacity") != 0)
            return argc < 2 ? usage_error("%s", "node set needs "
                                          "--capacity N")
                            : usage_error("node set: unexpected argument "
                                          "\"%s\"", argv[1]);
        if (argc < 3)
            return usage_error("%s", "--capacity needs a value");
        if (argc > 3)
            return usage_error("node set: unexpected argument \"%s\"",
                               argv[3]);
        return parse_u32_arg("--capacity", argv[2], 0, &a->capacity);
    }
    if (argc == 0)
        return usage_error("%s", "node needs show, set or reload");
    return usage_error("node: unknown subcommand \"%s\" (show, set or "
                       "reload)", sub);
}

/* Parses the arguments of throttle, tenant or node. */
static int parse_throttle_args(const char *cmd, int argc, char **argv,
                               throttle_args *a)
{
    memset(a, 0, sizeof *a);
    if (strcmp(cmd, "throttle") == 0)
        return parse_throttle_charge(argc, argv, a);
    if (strcmp(cmd, "tenant") == 0)
        return parse_tenant_args(argc, argv, a);
    return parse_node_args(argc, argv, a);
}

/* The admin secret of --secret-file, read before connecting and wiped at
 * exit. */
static uint8_t secret_buf[CTL_SECRET_BUF];
static size_t secret_len;

/* Wipes the secret (atexit: every way out of main passes here). */
static void secret_wipe(void)
{
    ctl_wipe(secret_buf, sizeof secret_buf);
    secret_len = 0;
}

/* Reads --secret-file for a privileged verb; 0, or the exit code after
 * saying why: 2 without --secret-file, 1 when the file will not do.
 * Messages name the path, never the content. */
static int load_secret(const throttle_args *a, const char *path)
{
    int err = 0;

    if (path == NULL)
        return usage_error("%s needs --secret-file PATH (a privileged "
                           "operation)", a->unthrottled
                                         ? "throttle --unthrottled"
                                         : a->verb);
    atexit(secret_wipe);
    switch (ctl_read_secret(path, secret_buf, &secret_len, &err)) {
    case CTL_SECRET_OK:
        return 0;
    case CTL_SECRET_OPEN:
        ctl_error("--secret-file \"%s\": cannot open: %s", path,
                  strerror(err));
        break;
    case CTL_SECRET_READ:
        ctl_error("--secret-file \"%s\": cannot read: %s", path,
                  strerror(err));
        break;
    case CTL_SECRET_EMPTY:
        ctl_error("--secret-file \"%s\" is empty (expected a secret of "
                  "1..4096 bytes, then at most one line end)", path);
        break;
    default:
        ctl_error("--secret-file \"%s\" holds more than 4096 bytes "
                  "(expected a secret of 1..4096 bytes, then at most one "
                  "line end)", path);
        break;
    }
    return CTL_EXIT_STATUS;
}

/* Sends one request of len bytes and checks that it is answered with
 * status 0; else the exit code (message printed, labelled what). */
static int throttle_step(ctl_conn *c, const uint8_t *req, size_t len,
                         uint32_t opaque, const char *what,
                         cnt_response *res)
{
    ctl_io io = exchange(c, req, len, opaque, res);

    if (io != CTL_IO_OK)
        return io_failure(c, io);
    if (res->status != CNT_STATUS_OK)
        return status_failure(res, what);
    return 0;
}

/* Authenticates with the secret and, for throttle --unthrottled, marks
 * the connection unthrottled. The request that carried the secret is
 * wiped once sent. */
static int throttle_privilege(ctl_conn *c, const throttle_args *a,
                              const char *path)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_auth(req, opaque, secret_buf,
                                 (uint16_t)secret_len);
    cnt_response res;
    char what[64 + PATH_MAX];
    int rc;

    snprintf(what, sizeof what, "authentication with --secret-file \"%s\"",
             path);
    rc = throttle_step(c, req, len, opaque, what, &res);
    ctl_wipe(req, len);
    if (rc != 0 || !a->unthrottled)
        return rc;
    opaque = ctl_conn_opaque(c);
    return throttle_step(c, req, cnt_encode_unthrottle(req, opaque),
                         opaque, "unthrottle", &res);
}

/* Prints a tenant view's `key value` lines. */
static void print_tenant_view(const cnt_tenant_view *v)
{
    printf("reserved %" PRIu32 "\n", v->reserved);
    if (v->hard_limit == CNT_HARD_LIMIT_UNLIMITED)
        printf("hard_limit unlimited\n");
    else
        printf("hard_limit %" PRIu32 "\n", v->hard_limit);
    printf("used %" PRIu32 "\nconfigured %s\nthrottled %" PRIu64
           "\nunits %" PRIu64 "\n", v->used,
           (v->flags & CNT_TENANT_CONFIGURED) ? "yes" : "no", v->throttled,
           v->units);
}

/* tenant show without TENANT: one block per tenant record, `tenant NAME`
 * first, a blank line between blocks, until the end marker. */
static int cmd_tenant_list(ctl_conn *c)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    cnt_tenant_record rec;
    bool first = true;
    ctl_io io;

    io = ctl_conn_send(c, req, cnt_encode_tenant_list(req, opaque));
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK)
            return status_failure(&res, "tenant show");
        if (cnt_response_is_tenant_list_end(&res))
            return CTL_EXIT_OK;
        if (!cnt_parse_tenant_record(&res, &rec)) {
            ctl_error("malformed tenant list record");
            return CTL_EXIT_PROTOCOL;
        }
        if (!first)
            putchar('\n');
        first = false;
        fputs("tenant ", stdout);
        ctl_print_escaped(rec.name, rec.name_len);
        putchar('\n');
        print_tenant_view(&rec.view);
    }
    return io_failure(c, io);
}

/* Encodes the request a describes (not the list's); returns its size. */
static size_t encode_throttle(uint8_t *req, uint32_t opaque,
                              const throttle_args *a)
{
    uint16_t len = a->tenant != NULL ? (uint16_t)strlen(a->tenant) : 0;

    switch (a->opcode) {
    case CNT_OP_THROTTLE:
        return cnt_encode_throttle(req, opaque, a->units, a->tenant, len);
    case CNT_OP_TENANT_SHOW:
        return cnt_encode_tenant_show(req, opaque, a->tenant, len);
    case CNT_OP_TENANT_SET:
        return cnt_encode_tenant_set(req, opaque, a->set_flags, a->reserved,
                                     a->hard_limit, a->tenant, len);
    case CNT_OP_TENANT_REMOVE:
        return cnt_encode_tenant_remove(req, opaque, a->tenant, len);
    case CNT_OP_NODE_SHOW:
        return cnt_encode_node_show(req, opaque);
    case CNT_OP_NODE_SET:
        return cnt_encode_node_set(req, opaque, a->capacity);
    default:
        return cnt_encode_reload(req, opaque);
    }
}

/* Prints a throttle answer; returns 0 allowed, 75 throttled. */
static int print_throttle(const cnt_throttle_answer *t)
{
    printf("state %s\nreason %s\nused %" PRIu32 "\nremaining %" PRIu32
           "\nretry_after_ns %" PRIu64 "\n",
           t->state == CNT_TSTATE_ALLOWED ? "allowed" : "throttled",
           cnt_treason_name(t->reason), t->used, t->remaining,
           t->retry_after_ns);
    return t->state == CNT_TSTATE_ALLOWED ? CTL_EXIT_OK : CTL_EXIT_TEMPFAIL;
}

/* throttle, tenant show|set|remove, node show|set|reload: authenticates
 * first when privileged, then one request (or the list's series), its
 * answer as `key value` lines (none for the settings). */
static int cmd_throttle(ctl_conn *c, const throttle_args *a,
                        const char *secret_path)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque;
    cnt_response res;
    cnt_throttle_answer ans;
    cnt_tenant_view tv;
    cnt_node_view nv;
    int rc = 0;

    if (throttle_privileged(a))
        rc = throttle_privilege(c, a, secret_path);
    if (rc != 0)
        return rc;
    if (a->opcode == CNT_OP_TENANT_LIST)
        return cmd_tenant_list(c);
    opaque = ctl_conn_opaque(c);
    rc = throttle_step(c, req, encode_throttle(req, opaque, a), opaque,
                       a->tenant != NULL ? a->tenant : a->verb, &res);
    if (rc != 0)
        return rc;
    switch (a->opcode) {
    case CNT_OP_THROTTLE:
        if (!cnt_parse_throttle_answer(&res, &ans))
            break;
        return print_throttle(&ans);
    case CNT_OP_TENANT_SHOW:
        if (!cnt_parse_tenant_view(&res, &tv))
            break;
        print_tenant_view(&tv);
        return CTL_EXIT_OK;
    case CNT_OP_NODE_SHOW:
        if (!cnt_parse_node_view(&res, &nv))
            break;
        printf("capacity %" PRIu32 "\nused %" PRIu32 "\npool %" PRIu32
               "\npool_used %" PRIu32 "\nreserved_sum %" PRIu32
               "\ntenants %" PRIu32 "\nthrottled %" PRIu64 "\n",
               nv.capacity, nv.used, nv.pool, nv.pool_used,
               nv.reserved_sum, nv.tenants, nv.throttled);
        return CTL_EXIT_OK;
    default:
        return CTL_EXIT_OK;
    }
    ctl_error("malformed %s answer", a->verb);
    return CTL_EXIT_PROTOCOL;
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
    ctl_io io = exchange(c, req, len, opaque, &res);

    if (io != CTL_IO_OK)
        ctl_error("warning: release of %s: %s (the resources may have been "
                  "released early)", r->name, ctl_io_text(c, io));
    else if (res.status != CNT_STATUS_OK)
        (void)status_failure(&res, r->name);
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
            (void)status_failure(&res, r->name);
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
static int cmd_run(ctl_conn *c, const hold_args *r)
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
        { "secret-file", required_argument, NULL, 'S' },
        { "servers", required_argument, NULL, 'L' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    uint32_t port;
    cnt_duration d;
    uint64_t ms;
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
            o->host_given = true;
            break;
        case 'p':
            if (!parse_u32(optarg, &port) || port == 0 || port > 65535)
                return usage_error("bad port: \"%s\"", optarg);
            o->port = optarg;
            o->port_given = true;
            break;
        case 't':
            if (!ctl_duration_arg(optarg, &timeout_span, &d, &ms,
                                  duration_error, sizeof duration_error))
                return usage_error("--timeout: %s", duration_error);
            o->timeout_ms = (int)ms;
            break;
        case 'S':
            if (optarg[0] == '\0')
                return usage_error("%s", "--secret-file needs a path");
            o->secret_file = optarg;
            break;
        case 'L':
            o->servers = optarg;
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
    /* Two ways of naming the server would leave a name's placement in
     * doubt. */
    if (o->servers != NULL && (o->host_given || o->port_given))
        return usage_error("%s", "--servers and -s/-p exclude each other");
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

/* A command with its parsed arguments, as run_command needs it. */
typedef struct ctl_command {
    const char *cmd;
    int argc;
    char **argv;
    hold_args h;
    limit_args l;
    throttle_args t;
} ctl_command;

/* Connects to host:port and runs the command there; the exit code. */
static int run_command(const ctl_options *o, const char *host,
                       const char *port, ctl_command *v)
{
    const char *cmd = v->cmd;
    ctl_conn *c = ctl_conn_new(host, port, o->timeout_ms);
    int rc;

    if (c == NULL)
        return CTL_EXIT_UNAVAILABLE;
    if (strcmp(cmd, "stats") == 0)
        rc = cmd_stats(c);
    else if (strcmp(cmd, "dump") == 0)
        rc = cmd_dump(c);
    else if (strcmp(cmd, "queues") == 0)
        rc = cmd_queues(c);
    else if (strcmp(cmd, "run") == 0)
        rc = cmd_run(c, &v->h);
    else if (strcmp(cmd, "acquire") == 0 && v->h.waiting)
        rc = cmd_wait_acquire(c, &v->h);
    else if (strcmp(cmd, "ttl") == 0 || strcmp(cmd, "window") == 0 ||
             strcmp(cmd, "gcra") == 0)
        rc = cmd_limit(c, &v->l);
    else if (throttle_command(cmd))
        rc = cmd_throttle(c, &v->t, o->secret_file);
    else
        rc = cmd_simple(c, cmd, v->argv);
    rc = flush_stdout(rc);
    ctl_conn_free(c);
    return rc;
}

/* The servers of --servers and their ketama circle. */
typedef struct ctl_servers {
    mcc_server_spec list[CTL_SERVERS_MAX];
    size_t n;
    mcc_ketama *ketama;
} ctl_servers;

/* Runs the command on list[i]. */
static int run_on(const ctl_options *o, const ctl_servers *sv, size_t i,
                  ctl_command *v)
{
    char port[8];

    snprintf(port, sizeof port, "%u", (unsigned)sv->list[i].port);
    return run_command(o, sv->list[i].host, port, v);
}

/* where NAME: prints the server NAME maps to, connecting to none. */
static int cmd_where(const ctl_options *o, const ctl_servers *sv, int argc,
                     char **argv)
{
    char text[MCC_SERVER_TEXT_MAX];

    if (argc != 1)
        return usage_error("%s", "where takes 1 argument");
    if (!name_ok(argv[0]))
        return usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                           argv[0]);
    if (sv->n == 0)
        puts(ctl_format_server(o->host, o->port, text, sizeof text));
    else
        puts(mcc_server_format(&sv->list[mcc_ketama_lookup(
                                   sv->ketama, argv[0], strlen(argv[0]))],
                               text, sizeof text));
    return flush_stdout(CTL_EXIT_OK);
}

/* With --servers: a command about a name runs on the name's server
 * only, and fails if that one cannot be reached: moving it to another
 * server would let two servers each grant the maximum. The others run
 * on every server, in list order; the exit code is the highest. */
static int run_servers(const ctl_options *o, const ctl_servers *sv,
                       ctl_command *v)
{
    const char *key = ctl_route_key(v->cmd, v->argc, v->argv);
    char text[MCC_SERVER_TEXT_MAX];
    int worst = CTL_EXIT_OK;

    if (key != NULL) {
        size_t i = mcc_ketama_lookup(sv->ketama, key, strlen(key));
        int rc = run_on(o, sv, i, v);

        if (rc == CTL_EXIT_UNAVAILABLE)
            ctl_error("\"%s\" maps to %s of --servers: not tried on another "
                      "server", key,
                      mcc_server_format(&sv->list[i], text, sizeof text));
        return rc;
    }
    for (size_t i = 0; i < sv->n; i++) {
        int rc;

        if (sv->n > 1) {
            printf("# server %s\n",
                   mcc_server_format(&sv->list[i], text, sizeof text));
            /* Before any error of this server reaches stderr. */
            rc = flush_stdout(CTL_EXIT_OK);
            if (rc != CTL_EXIT_OK)
                return rc;
        }
        rc = run_on(o, sv, i, v);
        if (rc > worst)
            worst = rc;
    }
    return worst;
}

/* Parses --servers into sv and builds its circle; 0, or the exit code
 * after saying why. */
static int load_servers(const char *arg, ctl_servers *sv)
{
    char err[512];
    int n = mcc_servers_parse(arg, sv->list, CTL_SERVERS_MAX, err,
                              sizeof err);

    if (n < 0)
        return usage_error("--servers: %s", err);
    sv->n = (size_t)n;
    sv->ketama = mcc_ketama_new(sv->list, sv->n);
    if (sv->ketama == NULL) {
        ctl_error("%s", "out of memory");
        return CTL_EXIT_SOFTWARE;
    }
    return 0;
}

/* Entry point: parse, connect, run one command. */
int main(int argc, char **argv)
{
    ctl_options o = {
        .host = "127.0.0.1", .port = "11215", .timeout_ms = 10000,
        .secret_file = NULL, .servers = NULL, .host_given = false,
        .port_given = false,
    };
    static ctl_servers sv;
    static ctl_command v;
    const char *cmd;
    int rc = parse_options(argc, argv, &o);

    if (rc >= 0)
        return flush_stdout(rc);
    if (optind >= argc)
        return usage_error("%s", "no command given");
    cmd = argv[optind++];
    argc -= optind;
    argv += optind;
    v.cmd = cmd;
    v.argc = argc;
    v.argv = argv;
    if (o.servers != NULL) {
        rc = load_servers(o.servers, &sv);
        if (rc != 0)
            return rc;
    }
    if (strcmp(cmd, "where") == 0) {
        rc = cmd_where(&o, &sv, argc, argv);
        mcc_ketama_free(sv.ketama);
        return rc;
    }
    if (strcmp(cmd, "noop") == 0 || strcmp(cmd, "get") == 0 ||
        strcmp(cmd, "release") == 0)
        rc = check_simple_args(cmd, argc, argv);
    else if (strcmp(cmd, "acquire") == 0 || strcmp(cmd, "run") == 0)
        rc = parse_hold_args(cmd, argc, argv, &v.h);
    else if (strcmp(cmd, "stats") == 0 || strcmp(cmd, "dump") == 0 ||
             strcmp(cmd, "queues") == 0)
        rc = argc == 0 ? 0 : usage_error("%s takes no arguments", cmd);
    else if (strcmp(cmd, "ttl") == 0 || strcmp(cmd, "window") == 0 ||
             strcmp(cmd, "gcra") == 0)
        rc = parse_limit_args(cmd, argc, argv, &v.l);
    else if (throttle_command(cmd))
        rc = parse_throttle_args(cmd, argc, argv, &v.t);
    else
        rc = usage_error("unknown command \"%s\"", cmd);
    /* The secret is read (and any fault in its file found) before
     * connecting; verbs that need no privilege leave it unread. */
    if (rc == 0 && throttle_command(cmd) && throttle_privileged(&v.t))
        rc = load_secret(&v.t, o.secret_file);
    if (rc == 0)
        rc = sv.n > 0 ? run_servers(&o, &sv, &v)
                      : run_command(&o, o.host, o.port, &v);
    mcc_ketama_free(sv.ketama);
    return rc;
}
