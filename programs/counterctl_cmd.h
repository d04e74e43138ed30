/* counterctl_cmd.h: the verbs of counterctl, one family per file, as
 * main (counterctl.c) parses and runs them, and the steps they share:
 * usage errors, number and name checks, one request and its answer, a
 * series read to its end marker.
 *   counterctl_basic.c     noop, get, acquire, release, stats, dump, queues
 *   counterctl_hold.c      acquire --wait/--lease/-, run
 *   counterctl_limits.c    ttl, window, gcra
 *   counterctl_throttle.c  throttle, tenant, node (and --secret-file)
 * Each parser checks its verb's arguments before anything connects and
 * returns 0, or the usage exit code after printing why; each cmd_ function
 * runs the parsed verb on one connection and returns the exit code. */
#ifndef CNT_PROGRAMS_COUNTERCTL_CMD_H
#define CNT_PROGRAMS_COUNTERCTL_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "programs/counterctl.h"

/* Room for any request counterctl sends: header, Acquire fields, name. */
#define CTL_REQUEST_MAX CNT_REQUEST_MAX

/* ---- shared steps (counterctl.c) ---- */

/* Prints a usage error and returns the usage exit code. */
int ctl_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Parses a decimal u32 (digits only); false if it is not one. */
bool ctl_parse_u32(const char *s, uint32_t *out);

/* Parses a u32 argument of at least min; a usage error naming it (what)
 * else. */
int ctl_parse_u32_arg(const char *what, const char *s, uint32_t min,
                      uint32_t *out);

/* Checks a counter or tenant name's length (1..65535 bytes). */
bool ctl_name_ok(const char *name);

/* Maps an I/O failure to a message and an exit code. */
int ctl_io_failure(const ctl_conn *c, ctl_io io);

/* Prints an error status answer labelled what (its text, or the code when
 * unknown); returns 1. */
int ctl_status_failure(const cnt_response *res, const char *what);

/* Sends one request of len bytes (opaque in it) and reads its answer. */
ctl_io ctl_exchange(ctl_conn *c, const uint8_t *req, size_t len,
                    uint32_t opaque, cnt_response *res);

/* A series (Dump, Queues, Tenant_list): the body-less request, then its
 * records until the end marker. */
typedef struct ctl_series_kind {
    uint8_t opcode;
    const char *what;       /* labels an error status: "dump" */
    const char *record;     /* names a malformed record: "dump record" */
    bool (*is_end)(const cnt_response *res);
    /* Prints one record; false if it is malformed. */
    bool (*print)(const cnt_response *res, void *arg);
} ctl_series_kind;

/* Asks for the series k and prints its records with k->print (arg passed
 * on); the exit code. */
int ctl_series(ctl_conn *c, const ctl_series_kind *k, void *arg);

/* ---- noop, get, acquire, release, stats, dump, queues
 *      (counterctl_basic.c) ---- */

/* Checks the arguments of noop, get and release. */
int ctl_check_simple_args(const char *cmd, int argc, char **args);

/* noop / get / acquire / release: one request, one answer. */
int ctl_cmd_simple(ctl_conn *c, const char *cmd, char **args);

/* stats: prints `name value` per item. */
int ctl_cmd_stats(ctl_conn *c);

/* One Stats item, as ctl_stats_each hands it over. */
typedef void (*ctl_stats_item_fn)(void *ctx, const char *name, uint16_t nlen,
                                  const char *value, uint16_t vlen);

/* Asks for Stats and calls fn for each item; CTL_EXIT_OK or the exit code
 * of what went wrong (I/O, a refusal, a malformed body). */
int ctl_stats_each(ctl_conn *c, ctl_stats_item_fn fn, void *ctx);

/* dump: prints `name current max` per counter. */
int ctl_cmd_dump(ctl_conn *c);

/* queues: prints `name consumption waiters` per counter with a queue. */
int ctl_cmd_queues(ctl_conn *c);

/* ---- acquire while waiting, and run (counterctl_hold.c) ---- */

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

/* Parses NAME RESOURCES MAXIMUM [--wait DURATION] [--lease DURATION]
 * (run: also --kill-after DURATION, then -- COMMAND [ARG...]). */
int ctl_parse_hold_args(const char *cmd, int argc, char **argv,
                        hold_args *a);

/* acquire with --wait, --lease or MAXIMUM -: waits for the grant and
 * prints the counter's consumption after it. */
int ctl_cmd_wait_acquire(ctl_conn *c, const hold_args *a);

/* run: acquire, run the command while holding, release. */
int ctl_cmd_run(ctl_conn *c, const hold_args *r);

/* ---- ttl, window, gcra (counterctl_limits.c) ---- */

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

/* Tells whether cmd is ttl, window or gcra. */
bool ctl_limit_command(const char *cmd);

/* Parses the arguments of ttl, window or gcra. */
int ctl_parse_limit_args(const char *cmd, int argc, char **argv,
                         limit_args *a);

/* ttl insert|query|update|purge, window, gcra: one request, its answer's
 * fields as `key value` lines. */
int ctl_cmd_limit(ctl_conn *c, const limit_args *a);

/* Parses busiest's [COUNT] (default CNT_BUSIEST_MAX) into *count. */
int ctl_parse_busiest_args(int argc, char **argv, uint32_t *count);

/* busiest: prints `name kind checks` per rate-limit name the server
 * lists as the busiest of the last second, busiest first. */
int ctl_cmd_busiest(ctl_conn *c, uint32_t count);

/* ---- throttle, tenant, node (counterctl_throttle.c) ---- */

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
    const char *json_path;  /* tenant set / node set --json FILE ("-":
                             * standard input) */
} throttle_args;

/* Tells whether cmd is one of the throttling commands. */
bool ctl_throttle_command(const char *cmd);

/* Tells whether a needs the admin secret. */
bool ctl_throttle_privileged(const throttle_args *a);

/* Parses the arguments of throttle, tenant or node. */
int ctl_parse_throttle_args(const char *cmd, int argc, char **argv,
                            throttle_args *a);

/* Reads --secret-file (path, NULL if not given) for a privileged verb;
 * 0, or the exit code after saying why. */
int ctl_load_secret(const throttle_args *a, const char *path);

/* --user: logs the new connection c in as user with the secret
 * ctl_load_secret read (Auth_user), so that its requests are charged to
 * the user's tenant and a privileged command needs no Auth after it; 0,
 * or the exit code after saying why (naming the user and the path). */
int ctl_login_user(ctl_conn *c, const char *user, const char *secret_path);

/* throttle, tenant show|set|remove, node show|set|reload: authenticates
 * first when privileged, then the request and its answer. */
int ctl_cmd_throttle(ctl_conn *c, const throttle_args *a,
                     const char *secret_path);

#endif
