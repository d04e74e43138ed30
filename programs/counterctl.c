/* counterctl.c: command-line client of the counter protocol: one command
 * per invocation (get, acquire, release, stats, dump, queues, noop; the
 * rate limits ttl, window, gcra and busiest; tenant throttling: throttle,
 * tenant and node, the privileged ones authenticated with --secret-file),
 * and `run`, which holds resources while a command runs. With --wait,
 * --lease or a group's maximum, acquire and run wait in the server's
 * queue (wait_acquire) and run renews the lease. With --servers, a command
 * about a name goes to the server ketama places the name on (as
 * libmemcached would place the key), and the others run on every server.
 * Exit codes: counterctl.h. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ketama.h"
#include "programs/counterctl_cmd.h"
#include "programs/counterctl_top.h"

/* Parsed global options. */
typedef struct ctl_options {
    const char *host;
    const char *port;
    int timeout_ms;
    const char *secret_file;    /* --secret-file; NULL if not given */
    const char *user;           /* --user; NULL if not given */
    const char *servers;        /* --servers; NULL if not given */
    bool host_given;            /* -s given (excludes --servers) */
    bool port_given;            /* -p given (excludes --servers) */
} ctl_options;

static const char usage_text[] =
    "usage: counterctl [-s HOST] [-p PORT] [-t DURATION] [--secret-file PATH]\n"
    "                  [--user NAME] COMMAND [ARGS]\n"
    "       counterctl --servers HOST:PORT[:WEIGHT],... [-t DURATION]\n"
    "                  [--secret-file PATH] [--user NAME] COMMAND [ARGS]\n"
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
    "  busiest [COUNT]               print the rate-limit names with the most\n"
    "                                checks in the last second, busiest first,\n"
    "                                `name kind checks` (at most COUNT, 16)\n"
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
    "  tenant set TENANT --json FILE send FILE's JSON document as it is\n"
    "                                (privileged; FILE - : standard input)\n"
    "  tenant remove TENANT          back to the defaults (privileged)\n"
    "  node show                     print the node's throttling figures\n"
    "  node set --capacity N         units per second, 0: off (privileged)\n"
    "  node set --json FILE          send FILE's JSON document (privileged)\n"
    "  node reload                   re-read the settings file (privileged)\n"
    "  where NAME                    print the server NAME maps to (no connection)\n"
    "  top [--once] [--interval DURATION]\n"
    "                                live view: node capacity, commands per\n"
    "                                second, longest queues, busiest counters,\n"
    "                                busiest rate-limit names, tenants by use;\n"
    "                                q quits; refreshes every\n"
    "                                second (--interval, 100ms to 1h); --once or\n"
    "                                no terminal: plain text reports\n"
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
    "authenticate with the secret in --secret-file's file. With --user, every\n"
    "command first logs in as that user of the server's users file, the\n"
    "file holding the user's secret: its requests are charged to the user's\n"
    "tenant, and privileged commands need the user to have Admin.\n"
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
    "                      (with --user: that user's secret)\n"
    "      --user NAME     log in as NAME (Auth_user) before the command\n"
    "  -h, --help          show this help\n"
    "      --version       show the version\n"
    "exit status: 0 ok (window, gcra, throttle: allowed), 1 error status\n"
    "from the server (Not found, Exists, ...) or an unusable --secret-file,\n"
    "window, gcra: never allowed, 2 usage, 69 cannot connect, 74\n"
    "connection lost or timed out, 75 acquire, run: not available before\n"
    "the wait ran out, run: the holding (connection or lease) was lost,\n"
    "window, gcra: limited, throttle: throttled, 76 malformed answer; run\n"
    "exits with COMMAND's status (128+N on signal N).\n";

/* ---- Steps the verbs share ---- */

/* Prints a usage error; the usage exit code. */
int ctl_usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ctl_verror(" (try counterctl --help)", fmt, ap);
    va_end(ap);
    return CTL_EXIT_USAGE;
}

/* A decimal u32, digits only. */
bool ctl_parse_u32(const char *s, uint32_t *out)
{
    uint64_t v;

    if (!ctl_parse_u64(s, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* A u32 argument of at least min. */
int ctl_parse_u32_arg(const char *what, const char *s, uint32_t min,
                      uint32_t *out)
{
    if (!ctl_parse_u32(s, out) || *out < min)
        return ctl_usage_error("%s must be a number from %" PRIu32 " to "
                               "4294967295: \"%s\"", what, min, s);
    return 0;
}

/* A name of 1..65535 bytes. */
bool ctl_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= CNT_NAME_MAX;
}

/* An I/O failure: its message, 76 or 74. */
int ctl_io_failure(const ctl_conn *c, ctl_io io)
{
    ctl_error("%s", ctl_io_text(c, io));
    return io == CTL_IO_PROTOCOL ? CTL_EXIT_PROTOCOL : CTL_EXIT_IOERR;
}

/* An error status: its text or code, exit code 1. */
int ctl_status_failure(const cnt_response *res, const char *what)
{
    const char *text = cnt_status_text((cnt_status)res->status);

    if (text != NULL && text[0] != '\0')
        ctl_error("%s: %s (status 0x%02x)", what, text, res->status);
    else
        ctl_error("%s: status 0x%02x", what, res->status);
    return CTL_EXIT_STATUS;
}

/* One request, its answer. */
ctl_io ctl_exchange(ctl_conn *c, const uint8_t *req, size_t len,
                    uint32_t opaque, cnt_response *res)
{
    ctl_io io = ctl_conn_send(c, req, len);

    return io == CTL_IO_OK ? ctl_conn_response(c, opaque, res) : io;
}

/* The series loop: a record at a time until the end marker, so that a
 * long dump needs no more memory than its longest record. */
int ctl_series(ctl_conn *c, const ctl_series_kind *k, void *arg)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    ctl_io io;

    io = ctl_conn_send(c, req, cnt_encode_simple(req, k->opcode, opaque));
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK)
            return ctl_status_failure(&res, k->what);
        if (k->is_end(&res))
            return CTL_EXIT_OK;
        if (!k->print(&res, arg)) {
            ctl_error("malformed %s", k->record);
            return CTL_EXIT_PROTOCOL;
        }
    }
    return ctl_io_failure(c, io);
}

/* ---- Options and dispatch ---- */

/* -t: each wait for an answer, in milliseconds. */
static const ctl_span timeout_span = {
    1000000, "milliseconds", 1, 86400000,
    "more than 0, at most 24h",
};

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
        return ctl_usage_error("ambiguous option \"%.*s\"", (int)len + 2, arg);
    if (matches == 1 && eq != NULL)
        return ctl_usage_error("option \"%.*s\" takes no value", (int)len + 2,
                               arg);
    return ctl_usage_error("unknown option \"%.*s\"", (int)len + 2, arg);
}

/* Parses the global options; returns -1 to go on, else an exit code. */
static int parse_options(int argc, char **argv, ctl_options *o)
{
    static const struct option longopts[] = {
        { "host", required_argument, NULL, 's' },
        { "port", required_argument, NULL, 'p' },
        { "timeout", required_argument, NULL, 't' },
        { "secret-file", required_argument, NULL, 'S' },
        { "user", required_argument, NULL, 'U' },
        { "servers", required_argument, NULL, 'L' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    char why[192];
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
            if (!ctl_parse_u32(optarg, &port) || port == 0 || port > 65535)
                return ctl_usage_error("bad port: \"%s\"", optarg);
            o->port = optarg;
            o->port_given = true;
            break;
        case 't':
            if (!ctl_duration_arg(optarg, &timeout_span, &d, &ms, why,
                                  sizeof why))
                return ctl_usage_error("--timeout: %s", why);
            o->timeout_ms = (int)ms;
            break;
        case 'S':
            if (optarg[0] == '\0')
                return ctl_usage_error("%s", "--secret-file needs a path");
            o->secret_file = optarg;
            break;
        case 'U':
            /* The users file's bound on names: a longer one could
             * never log in. */
            if (optarg[0] == '\0' || strlen(optarg) > 255)
                return ctl_usage_error("--user: a user name must be 1 to "
                                       "255 bytes: \"%.300s\"", optarg);
            o->user = optarg;
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
            return ctl_usage_error("option \"%s\" needs a value", arg);
        default:
            if (strncmp(arg, "--", 2) == 0)
                return long_option_error(longopts, arg);
            return ctl_usage_error("unknown option \"-%c\"", optopt);
        }
    }
    /* Two ways of naming the server would leave a name's placement in
     * doubt. */
    if (o->servers != NULL && (o->host_given || o->port_given))
        return ctl_usage_error("%s", "--servers and -s/-p exclude each other");
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
    top_args top;
    uint32_t busiest;       /* busiest: COUNT */
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
    if (o->user != NULL) {
        rc = ctl_login_user(c, o->user, o->secret_file);
        if (rc != 0) {
            ctl_conn_free(c);
            return flush_stdout(rc);
        }
    }
    if (strcmp(cmd, "stats") == 0)
        rc = ctl_cmd_stats(c);
    else if (strcmp(cmd, "dump") == 0)
        rc = ctl_cmd_dump(c);
    else if (strcmp(cmd, "queues") == 0)
        rc = ctl_cmd_queues(c);
    else if (strcmp(cmd, "run") == 0)
        rc = ctl_cmd_run(c, &v->h);
    else if (strcmp(cmd, "busiest") == 0)
        rc = ctl_cmd_busiest(c, v->busiest);
    else if (strcmp(cmd, "top") == 0) {
        char server[MCC_SERVER_TEXT_MAX];

        rc = ctl_cmd_top(c, &v->top,
                         ctl_format_server(host, port, server, sizeof server));
    } else if (strcmp(cmd, "acquire") == 0 && v->h.waiting)
        rc = ctl_cmd_wait_acquire(c, &v->h);
    else if (ctl_limit_command(cmd))
        rc = ctl_cmd_limit(c, &v->l);
    else if (ctl_throttle_command(cmd))
        rc = ctl_cmd_throttle(c, &v->t, o->secret_file);
    else
        rc = ctl_cmd_simple(c, cmd, v->argv);
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
        return ctl_usage_error("%s", "where takes 1 argument");
    if (!ctl_name_ok(argv[0]))
        return ctl_usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
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
        return ctl_usage_error("--servers: %s", err);
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
        .secret_file = NULL, .user = NULL, .servers = NULL,
        .host_given = false,
        .port_given = false,
    };
    static ctl_servers sv;
    static ctl_command v;
    const char *cmd;
    int rc = parse_options(argc, argv, &o);

    if (rc >= 0)
        return flush_stdout(rc);
    if (optind >= argc)
        return ctl_usage_error("%s", "no command given");
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
        rc = ctl_check_simple_args(cmd, argc, argv);
    else if (strcmp(cmd, "acquire") == 0 || strcmp(cmd, "run") == 0)
        rc = ctl_parse_hold_args(cmd, argc, argv, &v.h);
    else if (strcmp(cmd, "stats") == 0 || strcmp(cmd, "dump") == 0 ||
             strcmp(cmd, "queues") == 0)
        rc = argc == 0 ? 0 : ctl_usage_error("%s takes no arguments", cmd);
    else if (strcmp(cmd, "top") == 0)
        rc = ctl_parse_top_args(argc, argv, &v.top);
    else if (strcmp(cmd, "busiest") == 0)
        rc = ctl_parse_busiest_args(argc, argv, &v.busiest);
    else if (ctl_limit_command(cmd))
        rc = ctl_parse_limit_args(cmd, argc, argv, &v.l);
    else if (ctl_throttle_command(cmd))
        rc = ctl_parse_throttle_args(cmd, argc, argv, &v.t);
    else
        rc = ctl_usage_error("unknown command \"%s\"", cmd);
    /* The secret is read (and any fault in its file found) before
     * connecting; verbs that need no privilege leave it unread. */
    /* A live view shows one server; with several, only reports one after
     * the other make sense. */
    if (rc == 0 && strcmp(cmd, "top") == 0 && sv.n > 1 && !v.top.once)
        rc = ctl_usage_error("%s", "top shows one server: with several in "
                             "--servers, give --once");
    if (rc == 0 && o.user != NULL) {
        /* Every command logs in, so the user's secret is read first. */
        if (o.secret_file == NULL)
            rc = ctl_usage_error("--user %s needs --secret-file PATH (the "
                                 "user's secret)", o.user);
        else
            rc = ctl_load_secret(&v.t, o.secret_file);
    } else if (rc == 0 && ctl_throttle_command(cmd) &&
               ctl_throttle_privileged(&v.t)) {
        rc = ctl_load_secret(&v.t, o.secret_file);
    }
    if (rc == 0)
        rc = sv.n > 0 ? run_servers(&o, &sv, &v)
                      : run_command(&o, o.host, o.port, &v);
    mcc_ketama_free(sv.ketama);
    return rc;
}
