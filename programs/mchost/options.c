/* options.c: mchost's memcached-like command line. -h and -V are looked for
 * first; then order matters: each -X extension initializes at the verbosity
 * given before it and hears ON_LOG_LEVEL if a later -v changes it. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs/mchost/api.h"
#include "programs/mchost/extensions.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/options.h"
#include "programs/mchost/settings.h"

static void usage(FILE *out)
{
    fprintf(out,
"Usage: mchost [OPTION]...\n"
"A memcached-compatible host for extensions (-X); it is not a cache.\n"
"\n"
"  -p, --port=PORT          memcache text protocol port (default 11211;\n"
"                           0: the kernel picks, see -F)\n"
"  -l, --listen=ADDR[,ADDR] listen addresses (default 127.0.0.1)\n"
"  -c, --conn-limit=N       at most N memcache connections (default 1024)\n"
"  -t, --threads=N          worker threads (default 4)\n"
"  -m, --memory-limit=MB    reported as limit_maxbytes only (default 64)\n"
"  -U, --udp-port=PORT      accepted for compatibility; UDP is not served\n"
"  -v, --verbose            more logging (-v info, -vv debug, -vvv detail)\n"
"  -d, --daemon             run in the background; returns once listening\n"
"  -P, --pidfile=FILE       write the process id to FILE\n"
"  -u, --user=USER          run as USER when started as root\n"
"  -X, --extension=PATH[,CONFIG]\n"
"                           load an extension and initialize it with\n"
"                           CONFIG (repeatable; in order)\n"
"  -F, --port-file=FILE     once listening, write the actual port to FILE\n"
"  -h, --help               show this help and exit\n"
"  -V, --version            show the version and exit\n"
"\n"
"Memcache commands: stats [settings|items|slabs|sizes|reset|SUB], version,\n"
"verbosity N, quit. Storage and retrieval commands answer ERROR.\n");
}

/* Parses a decimal int in [min, max]; logs and fails otherwise. */
static int parse_int(int opt, const char *arg, long min, long max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno != 0 || end == arg || *end != '\0' || v < min || v > max) {
        mch_log(EXTENSION_LOG_WARNING,
                "invalid value for -%c: '%s' (expected %ld..%ld)",
                opt, arg, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static const struct option long_options[] = {
    { "port", required_argument, NULL, 'p' },
    { "listen", required_argument, NULL, 'l' },
    { "conn-limit", required_argument, NULL, 'c' },
    { "threads", required_argument, NULL, 't' },
    { "memory-limit", required_argument, NULL, 'm' },
    { "udp-port", required_argument, NULL, 'U' },
    { "verbose", no_argument, NULL, 'v' },
    { "daemon", no_argument, NULL, 'd' },
    { "pidfile", required_argument, NULL, 'P' },
    { "user", required_argument, NULL, 'u' },
    { "extension", required_argument, NULL, 'X' },
    { "port-file", required_argument, NULL, 'F' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

/* Handles one option; 0, or -1 after logging why. */
static int apply_option(int opt, const char *arg, bool *loaded)
{
    int mb;

    switch (opt) {
    case 'p':
        return parse_int(opt, arg, 0, 65535, &mch_settings.port);
    case 'U':
        return parse_int(opt, arg, 0, 65535, &mch_settings.udpport);
    case 'l':
        mch_settings.listen = arg;
        return 0;
    case 'c':
        return parse_int(opt, arg, 1, INT_MAX, &mch_settings.maxconns);
    case 't':
        return parse_int(opt, arg, 1, 256, &mch_settings.threads);
    case 'm':
        if (parse_int(opt, arg, 1, INT_MAX, &mb) != 0)
            return -1;
        mch_settings.maxbytes = (size_t)mb * 1024 * 1024;
        return 0;
    case 'v':
        mch_logger_set_verbosity(mch_logger_verbosity() + 1);
        return 0;
    case 'd':
        mch_settings.daemonize = true;
        return 0;
    case 'P':
        mch_settings.pidfile = arg;
        return 0;
    case 'u':
        mch_settings.user = arg;
        return 0;
    case 'F':
        mch_settings.portfile = arg;
        return 0;
    case 'X':
        *loaded = true;
        return mch_extension_load(arg);
    default:
        return -1;
    }
}

/* Leading ':' tells a missing value (':') from an unknown option ('?'). */
static const char short_options[] = ":p:l:c:t:m:U:vdP:u:X:F:hV";

/* The long name of option character opt, or NULL. */
static const char *long_name(int opt)
{
    for (const struct option *o = long_options; o->name != NULL; o++)
        if (o->val == opt)
            return o->name;
    return NULL;
}

/* Explains the option error getopt_long just returned (opterr is off, so
 * every line carries our prefix rather than argv[0]'s). */
static void report_option_error(int opt, char **argv)
{
    const char *arg = argv[optind - 1];
    bool is_long = strncmp(arg, "--", 2) == 0;
    const char *name = long_name(optopt);

    if (opt == ':' && is_long && name != NULL)
        mch_log(EXTENSION_LOG_WARNING, "option --%s needs a value", name);
    else if (opt == ':')
        mch_log(EXTENSION_LOG_WARNING, "option -%c needs a value", optopt);
    else if (optopt != 0 && name != NULL && is_long)
        /* A known long option: only a value it does not take fails it. */
        mch_log(EXTENSION_LOG_WARNING, "option --%s takes no value", name);
    else if (optopt != 0)
        mch_log(EXTENSION_LOG_WARNING, "unknown option '-%c'", optopt);
    else
        mch_log(EXTENSION_LOG_WARNING, "unknown or ambiguous option '%.*s'",
                (int)strcspn(arg, "="), arg);
    mch_log(EXTENSION_LOG_WARNING, "try 'mchost --help'");
}

/* Looks for -h or -V before anything runs: -X initializes extensions as
 * it is reached, and asking for help must not depend on them. Returns
 * MCH_OPTIONS_RUN if neither is given. */
static enum mch_options_status scan_help_version(int argc, char **argv)
{
    enum mch_options_status st = MCH_OPTIONS_RUN;
    int opt;

    while (st == MCH_OPTIONS_RUN &&
           (opt = getopt_long(argc, argv, short_options, long_options,
                              NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            st = MCH_OPTIONS_EXIT_OK;
        } else if (opt == 'V') {
            printf("mchost %s\n", PACKAGE_VERSION);
            st = MCH_OPTIONS_EXIT_OK;
        }
    }
    optind = 0; /* glibc: start over, fully reinitialized */
    return st;
}

/* Parses argv into mch_settings, loading extensions on the way. */
enum mch_options_status mch_options_parse(int argc, char **argv)
{
    bool loaded = false;
    int level_at_load = -1, opt;
    enum mch_options_status st;

    mch_settings_init();
    opterr = 0;
    st = scan_help_version(argc, argv);
    if (st != MCH_OPTIONS_RUN)
        return st;
    while ((opt = getopt_long(argc, argv, short_options, long_options,
                              NULL)) != -1) {
        if (opt == '?' || opt == ':') {
            report_option_error(opt, argv);
            return MCH_OPTIONS_EXIT_FAIL;
        }
        if (apply_option(opt, optarg, &loaded) != 0)
            return MCH_OPTIONS_EXIT_FAIL;
        if (opt == 'X' && level_at_load < 0)
            level_at_load = mch_logger_verbosity();
    }
    if (optind < argc) {
        mch_log(EXTENSION_LOG_WARNING, "unexpected argument '%s'",
                argv[optind]);
        return MCH_OPTIONS_EXIT_FAIL;
    }
    if (loaded && level_at_load != mch_logger_verbosity())
        mch_api_perform_callbacks(ON_LOG_LEVEL, NULL, NULL);
    return MCH_OPTIONS_RUN;
}
