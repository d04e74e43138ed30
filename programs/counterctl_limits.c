/* counterctl_limits.c: the rate-limit verbs: ttl insert|query|update|purge,
 * window and gcra, their arguments (durations with units) and their
 * answers as `key value` lines; busiest, the names with the most checks
 * in the last second. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "programs/counterctl_cmd.h"

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
    char why[192];

    if (!ctl_duration_arg(s, &span, &d, ns, why, sizeof why))
        return ctl_usage_error("%s: %s", what, why);
    cnt_duration_in_unit(&d, value, unit);
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
        return ctl_usage_error("%s", "ttl needs insert, query, update or "
                               "purge");
    } else {
        return ctl_usage_error("ttl: unknown subcommand \"%s\" (insert, "
                               "query, update or purge)", verb);
    }
    if (argc - 1 != want)
        return ctl_usage_error("ttl %s needs %s", verb,
                               want == 3 ? "NAME QUOTA TTL"
                               : want == 4 ? "NAME quota|ttl "
                                             "patch|increase|decrease VALUE"
                               : "NAME");
    a->name = argv[1];
    if (!ctl_name_ok(a->name))
        return ctl_usage_error("name must be 1 to 65535 bytes: \"%s\"",
                               a->name);
    if (a->opcode == CNT_OP_TTL_INSERT) {
        if (!ctl_parse_u64(argv[2], &a->value))
            return ctl_usage_error("QUOTA must be a number from 0 to "
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
        return ctl_usage_error("ttl update: expected quota or ttl, not \"%s\"",
                               argv[2]);
    for (a->change = 0; a->change < 3; a->change++)
        if (strcmp(argv[3], changes[a->change]) == 0)
            break;
    if (a->change == 3)
        return ctl_usage_error("ttl update: expected patch, increase or "
                               "decrease, not \"%s\"", argv[3]);
    if (a->attribute == CNT_TTL_ATTR_QUOTA) {
        /* The unit byte only matters for a ttl; any valid one will do. */
        a->unit = CNT_UNIT_NS;
        if (!ctl_parse_u64(argv[4], &a->value))
            return ctl_usage_error("VALUE must be a number from 0 to "
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
                return ctl_usage_error("%s given twice", opt);
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
            return ctl_usage_error("%s: unexpected argument \"%s\"", cmd, opt);
        if (*set)
            return ctl_usage_error("%s given twice", opt);
        if (i + 1 >= argc)
            return ctl_usage_error("%s needs a value", opt);
        *set = true;
        i++;
        if (set == &cost_set)
            rc = ctl_parse_u32_arg("--cost", argv[i], 1, &a->cost);
        else if (set == &window_set)
            rc = parse_duration_arg("--window", argv[i], false, &value,
                                    &unit, &a->period_ns);
        else if (!ctl_parse_u32(argv[i], &slots) || slots < 1 ||
                     slots > CNT_WINDOW_MAX_SLOTS)
            rc = ctl_usage_error("--slots must be a number from 1 to %u: "
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
            return ctl_usage_error("--window %" PRIu64 "ns does not divide "
                                   "into %" PRIu32 " slots (--slots) of "
                                   "whole nanoseconds", window, n);
        if (window / n < CNT_WINDOW_MIN_SLOT_NS)
            return ctl_usage_error("--window %" PRIu64 "ns in %" PRIu32
                                   " slots (--slots) makes slots shorter "
                                   "than 1us", window, n);
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
        return ctl_usage_error("%s needs %s", cmd,
                               window ? "NAME LIMIT"
                                      : "NAME BURST COUNT PERIOD");
    a->name = argv[0];
    if (!ctl_name_ok(a->name))
        return ctl_usage_error("name must be 1 to 65535 bytes: \"%s\"",
                               a->name);
    rc = ctl_parse_u32_arg(window ? "LIMIT" : "BURST", argv[1], 0, &a->limit);
    if (rc == 0 && !window)
        rc = ctl_parse_u32_arg("COUNT", argv[2], 1, &a->count);
    if (rc == 0 && !window)
        rc = parse_duration_arg("PERIOD", argv[3], false, &value, &unit,
                                &a->period_ns);
    if (rc != 0)
        return rc;
    return parse_check_options(cmd, argc, argv, npos, window, a);
}

/* Tells whether cmd is ttl, window or gcra. */
bool ctl_limit_command(const char *cmd)
{
    return strcmp(cmd, "ttl") == 0 || strcmp(cmd, "window") == 0 ||
           strcmp(cmd, "gcra") == 0;
}

/* Parses the arguments of ttl, window or gcra. */
int ctl_parse_limit_args(const char *cmd, int argc, char **argv,
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
int ctl_cmd_limit(ctl_conn *c, const limit_args *a)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = encode_limit(req, opaque, a);
    cnt_response res;
    cnt_ttl_answer view;
    cnt_check_result check;
    ctl_io io = ctl_exchange(c, req, len, opaque, &res);

    if (io != CTL_IO_OK)
        return ctl_io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return ctl_status_failure(&res, a->name);
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


/* Parses busiest's arguments; see counterctl_cmd.h. */
int ctl_parse_busiest_args(int argc, char **argv, uint32_t *count)
{
    *count = CNT_BUSIEST_MAX;
    if (argc > 1)
        return ctl_usage_error("%s", "busiest takes at most one argument, "
                               "COUNT");
    return argc == 1 ? ctl_parse_u32_arg("busiest: COUNT", argv[0], 0, count)
                     : 0;
}

/* busiest: the series of Busiest records, a line each; see
 * counterctl_cmd.h. */
int ctl_cmd_busiest(ctl_conn *c, uint32_t count)
{
    static const char *const kinds[] = {
        [CNT_BUSY_KIND_TTL] = "ttl", [CNT_BUSY_KIND_WINDOW] = "window",
        [CNT_BUSY_KIND_GCRA] = "gcra",
    };
    uint8_t req[CNT_HEADER_SIZE + CNT_BUSIEST_FIXED];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    cnt_busy_record rec;
    ctl_io io;

    io = ctl_conn_send(c, req, cnt_encode_busiest(req, opaque, count));
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK)
            return ctl_status_failure(&res, "busiest");
        if (cnt_response_is_busiest_end(&res))
            return CTL_EXIT_OK;
        if (!cnt_parse_busy_record(&res, &rec) ||
            rec.kind > CNT_BUSY_KIND_GCRA) {
            ctl_error("%s", "malformed busiest record");
            return CTL_EXIT_PROTOCOL;
        }
        ctl_print_escaped(rec.name, rec.name_len);
        printf(" %s %" PRIu32 "\n", kinds[rec.kind], rec.checks);
    }
    return ctl_io_failure(c, io);
}
