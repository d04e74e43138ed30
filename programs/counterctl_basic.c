/* counterctl_basic.c: the verbs that speak the reference opcodes: noop,
 * get, acquire (without waiting), release, and the series stats, dump and
 * queues; and the series loop the tenant list shares. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "programs/counterctl_cmd.h"

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
int ctl_cmd_simple(ctl_conn *c, const char *cmd, char **args)
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
        (void)ctl_parse_u32(args[1], &a);
        (void)ctl_parse_u32(args[2], &b);
        len = cnt_encode_acquire(req, opaque, a, b, name,
                                 (uint16_t)strlen(name));
    } else {
        (void)ctl_parse_u32(args[1], &a);
        len = cnt_encode_release(req, opaque, a, name, (uint16_t)strlen(name));
    }
    io = ctl_exchange(c, req, len, opaque, &res);
    if (io != CTL_IO_OK)
        return ctl_io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return ctl_status_failure(&res, name != NULL ? name : cmd);
    if (strcmp(cmd, "get") != 0 && strcmp(cmd, "acquire") != 0)
        return CTL_EXIT_OK;
    rc = expect_body(&res, 4);
    if (rc == CTL_EXIT_OK)
        printf("%" PRIu32 "\n", cnt_get_u32(res.body));
    return rc;
}

/* Asks for Stats and calls fn for each item; 0 (CTL_EXIT_OK) or the
 * exit code of what went wrong. */
int ctl_stats_each(ctl_conn *c, ctl_stats_item_fn fn, void *ctx)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    const char *name, *value;
    uint16_t nlen, vlen;
    size_t pos = 0;
    ctl_io io;

    io = ctl_exchange(c, req, cnt_encode_simple(req, CNT_OP_STATS, opaque),
                      opaque, &res);
    if (io != CTL_IO_OK)
        return ctl_io_failure(c, io);
    if (res.status != CNT_STATUS_OK)
        return ctl_status_failure(&res, "stats");
    while (cnt_stats_next(&res, &pos, &name, &nlen, &value, &vlen))
        fn(ctx, name, nlen, value, vlen);
    if (pos != res.body_len) {
        ctl_error("malformed stats body");
        return CTL_EXIT_PROTOCOL;
    }
    return CTL_EXIT_OK;
}

/* Prints one Stats item as `name value`. */
static void print_stats_item(void *ctx, const char *name, uint16_t nlen,
                             const char *value, uint16_t vlen)
{
    (void)ctx;
    ctl_print_escaped((const uint8_t *)name, nlen);
    putchar(' ');
    ctl_print_escaped((const uint8_t *)value, vlen);
    putchar('\n');
}

/* stats: prints `name value` per item. */
int ctl_cmd_stats(ctl_conn *c)
{
    return ctl_stats_each(c, print_stats_item, NULL);
}

/* Prints one dump record as `name current max`. */
static bool print_dump_record(const cnt_response *res, void *arg)
{
    cnt_dump_record rec;

    (void)arg;
    if (!cnt_dump_record_parse(res, &rec))
        return false;
    ctl_print_escaped(rec.name, rec.name_len);
    printf(" %" PRIu32 " %" PRIu32 "\n", rec.current, rec.max);
    return true;
}

/* dump: prints `name current max` per counter until the end marker. */
int ctl_cmd_dump(ctl_conn *c)
{
    static const ctl_series_kind dump = {
        CNT_OP_DUMP, "dump", "dump record", cnt_response_is_dump_end,
        print_dump_record,
    };

    return ctl_series(c, &dump, NULL);
}

/* Prints one queues record as `name consumption waiters`. */
static bool print_queues_record(const cnt_response *res, void *arg)
{
    cnt_queues_record rec;

    (void)arg;
    if (!cnt_parse_queues_record(res, &rec))
        return false;
    ctl_print_escaped(rec.name, rec.name_len);
    printf(" %" PRIu32 " %" PRIu32 "\n", rec.consumption, rec.queue_len);
    return true;
}

/* queues: prints `name consumption waiters` per counter that has a
 * queue, until the end marker. */
int ctl_cmd_queues(ctl_conn *c)
{
    static const ctl_series_kind queues = {
        CNT_OP_QUEUES, "queues", "queues record", cnt_response_is_queues_end,
        print_queues_record,
    };

    return ctl_series(c, &queues, NULL);
}

/* Checks the arguments of a one-request command; returns 0 or the usage
 * exit code after printing why. */
int ctl_check_simple_args(const char *cmd, int argc, char **args)
{
    int want = strcmp(cmd, "noop") == 0 ? 0 : strcmp(cmd, "get") == 0 ? 1
             : 2;
    uint32_t v;

    if (argc != want) {
        return ctl_usage_error("%s takes %d argument%s", cmd, want,
                               want == 1 ? "" : "s");
    }
    if (want > 0 && !ctl_name_ok(args[0]))
        return ctl_usage_error("counter name must be 1 to 65535 bytes: \"%s\"",
                               args[0]);
    for (int i = 1; i < want; i++)
        if (!ctl_parse_u32(args[i], &v))
            return ctl_usage_error("not a number from 0 to 4294967295: \"%s\"",
                                   args[i]);
    return 0;
}
