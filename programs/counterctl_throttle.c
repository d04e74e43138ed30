/* counterctl_throttle.c: the tenant-throttling verbs: throttle, tenant
 * show|set|remove and node show|set|reload (set also with --json FILE,
 * the seed's JSON documents sent as they are), and the admin secret of
 * --secret-file the privileged ones authenticate with. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs/counterctl_cmd.h"

/* Tells whether cmd is one of the throttling commands. */
bool ctl_throttle_command(const char *cmd)
{
    return strcmp(cmd, "throttle") == 0 || strcmp(cmd, "tenant") == 0 ||
           strcmp(cmd, "node") == 0;
}

/* Tells whether a needs the admin secret: a privileged opcode, or the
 * Unthrottle that throttle --unthrottled sends first. */
bool ctl_throttle_privileged(const throttle_args *a)
{
    return a->unthrottled || cnt_opcode_table[a->opcode].privileged;
}

/* Checks a tenant name (1..65535 bytes, any bytes). */
static int tenant_arg(const char *verb, const char *name)
{
    if (!ctl_name_ok(name))
        return ctl_usage_error("%s: tenant name must be 1 to 65535 bytes: "
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
        return ctl_usage_error("%s", "throttle needs TENANT UNITS");
    a->tenant = argv[0];
    rc = tenant_arg(a->verb, a->tenant);
    if (rc == 0)
        rc = ctl_parse_u32_arg("UNITS", argv[1], 1, &a->units);
    for (int i = 2; rc == 0 && i < argc; i++) {
        if (strcmp(argv[i], "--unthrottled") != 0)
            return ctl_usage_error("throttle: unexpected argument \"%s\"",
                                   argv[i]);
        if (a->unthrottled)
            return ctl_usage_error("%s", "--unthrottled given twice");
        a->unthrottled = true;
    }
    return rc;
}

/* Parses tenant set TENANT's options: --reserved N, --hard-limit
 * N|unlimited, each at most once, at least one. */
static int parse_tenant_set(int argc, char **argv, throttle_args *a)
{
    if (argc >= 2 && strcmp(argv[1], "--json") == 0) {
        if (argc < 3)
            return ctl_usage_error("%s", "--json needs a FILE");
        if (argc > 3)
            return ctl_usage_error("tenant set: unexpected argument \"%s\" "
                                   "(--json takes the whole document)",
                                   argv[3]);
        a->opcode = CNT_OP_TENANT_SET_JSON;
        a->json_path = argv[2];
        return 0;
    }
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i];
        uint8_t flag;

        if (strcmp(opt, "--json") == 0)
            return ctl_usage_error("%s", "tenant set: --json goes alone, "
                                   "without --reserved or --hard-limit");
        if (strcmp(opt, "--reserved") == 0)
            flag = CNT_TENANT_SET_RESERVED;
        else if (strcmp(opt, "--hard-limit") == 0)
            flag = CNT_TENANT_SET_HARD;
        else
            return ctl_usage_error("tenant set: unexpected argument \"%s\"",
                                   opt);
        if (a->set_flags & flag)
            return ctl_usage_error("%s given twice", opt);
        if (i + 1 >= argc)
            return ctl_usage_error("%s needs a value", opt);
        a->set_flags |= flag;
        if (flag == CNT_TENANT_SET_RESERVED) {
            int rc = ctl_parse_u32_arg("--reserved", argv[i + 1], 0,
                                       &a->reserved);
            if (rc != 0)
                return rc;
        } else if (!ctl_parse_hard_limit(argv[i + 1], &a->hard_limit)) {
            return ctl_usage_error("--hard-limit must be a number from 0 to "
                                   "4294967294 or unlimited: \"%s\"",
                                   argv[i + 1]);
        }
    }
    if (a->set_flags == 0)
        return ctl_usage_error("%s", "tenant set needs --reserved N, "
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
            return ctl_usage_error("%s", "tenant show takes at most TENANT");
        a->opcode = argc == 2 ? CNT_OP_TENANT_SHOW : CNT_OP_TENANT_LIST;
        a->tenant = argc == 2 ? argv[1] : NULL;
        return a->tenant != NULL ? tenant_arg(a->verb, a->tenant) : 0;
    }
    if (strcmp(sub, "set") == 0 || strcmp(sub, "remove") == 0) {
        bool set = sub[0] == 's';

        a->verb = set ? "tenant set" : "tenant remove";
        a->opcode = set ? CNT_OP_TENANT_SET : CNT_OP_TENANT_REMOVE;
        if (argc < 2 || strncmp(argv[1], "--", 2) == 0)
            return ctl_usage_error("%s needs TENANT", a->verb);
        if (!set && argc > 2)
            return ctl_usage_error("tenant remove: unexpected argument \"%s\"",
                                   argv[2]);
        a->tenant = argv[1];
        rc = tenant_arg(a->verb, a->tenant);
        return rc != 0 || !set ? rc : parse_tenant_set(argc - 1, argv + 1,
                                                       a);
    }
    if (argc == 0)
        return ctl_usage_error("%s", "tenant needs show, set or remove");
    return ctl_usage_error("tenant: unknown subcommand \"%s\" (show, set or "
                           "remove)", sub);
}

/* Parses node show, node set --capacity N|--json FILE and node
 * reload. */
static int parse_node_args(int argc, char **argv, throttle_args *a)
{
    const char *sub = argc > 0 ? argv[0] : "";

    if (strcmp(sub, "show") == 0 || strcmp(sub, "reload") == 0) {
        a->verb = sub[0] == 's' ? "node show" : "node reload";
        a->opcode = sub[0] == 's' ? CNT_OP_NODE_SHOW : CNT_OP_RELOAD;
        if (argc > 1)
            return ctl_usage_error("%s: unexpected argument \"%s\"", a->verb,
                                   argv[1]);
        return 0;
    }
    if (strcmp(sub, "set") == 0) {
        a->verb = "node set";
        a->opcode = CNT_OP_NODE_SET;
        if (argc >= 2 && strcmp(argv[1], "--json") == 0) {
            if (argc < 3)
                return ctl_usage_error("%s", "--json needs a FILE");
            if (argc > 3)
                return ctl_usage_error("node set: unexpected argument "
                                       "\"%s\"", argv[3]);
            a->opcode = CNT_OP_NODE_SET_JSON;
            a->json_path = argv[2];
            return 0;
        }
        if (argc < 2 || strcmp(argv[1], "--capacity") != 0)
            return argc < 2 ? ctl_usage_error("%s", "node set needs "
                                              "--capacity N or --json FILE")
                            : ctl_usage_error("node set: unexpected argument "
                                              "\"%s\"", argv[1]);
        if (argc < 3)
            return ctl_usage_error("%s", "--capacity needs a value");
        if (argc > 3)
            return ctl_usage_error("node set: unexpected argument \"%s\"",
                                   argv[3]);
        return ctl_parse_u32_arg("--capacity", argv[2], 0, &a->capacity);
    }
    if (argc == 0)
        return ctl_usage_error("%s", "node needs show, set or reload");
    return ctl_usage_error("node: unknown subcommand \"%s\" (show, set or "
                           "reload)", sub);
}

/* Parses the arguments of throttle, tenant or node. */
int ctl_parse_throttle_args(const char *cmd, int argc, char **argv,
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
int ctl_load_secret(const throttle_args *a, const char *path)
{
    int err = 0;

    if (path == NULL)
        return ctl_usage_error("%s needs --secret-file PATH (a privileged "
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
    ctl_io io = ctl_exchange(c, req, len, opaque, res);

    if (io != CTL_IO_OK)
        return ctl_io_failure(c, io);
    if (res->status != CNT_STATUS_OK)
        return ctl_status_failure(res, what);
    return 0;
}

/* Set once ctl_login_user logged the connection in: the user's
 * privileges are then the connection's, and Auth would only replace
 * them with the admin secret's (a user's secret is not it). */
static bool logged_in;

/* Logs the connection in as a user (--user). The request that carried
 * the secret is wiped once sent. */
int ctl_login_user(ctl_conn *c, const char *user, const char *secret_path)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque = ctl_conn_opaque(c);
    size_t len = cnt_encode_auth_user(req, opaque, 0, user,
                                      (uint16_t)strlen(user), secret_buf,
                                      (uint16_t)secret_len);
    cnt_response res;
    char what[96 + PATH_MAX];
    int rc;

    snprintf(what, sizeof what, "login as user \"%.64s\" with --secret-file "
             "\"%s\"", user, secret_path);
    rc = throttle_step(c, req, len, opaque, what, &res);
    ctl_wipe(req, len);
    if (rc == 0)
        logged_in = true;
    return rc;
}

/* Authenticates with the secret (unless --user logged the connection in)
 * and, for throttle --unthrottled, marks the connection unthrottled. The
 * request that carried the secret is wiped once sent. */
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

    if (logged_in) {
        ctl_wipe(req, len);
        rc = 0;
    } else {
        snprintf(what, sizeof what,
                 "authentication with --secret-file \"%s\"", path);
        rc = throttle_step(c, req, len, opaque, what, &res);
        ctl_wipe(req, len);
    }
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

/* Prints one tenant record as a block, `tenant NAME` first, a blank
 * line before each block but the first (*first says which). */
static bool print_tenant_record(const cnt_response *res, void *first)
{
    bool *is_first = first;
    cnt_tenant_record rec;

    if (!cnt_parse_tenant_record(res, &rec))
        return false;
    if (!*is_first)
        putchar('\n');
    *is_first = false;
    fputs("tenant ", stdout);
    ctl_print_escaped(rec.name, rec.name_len);
    putchar('\n');
    print_tenant_view(&rec.view);
    return true;
}

/* tenant show without TENANT: one block per tenant record, until the end
 * marker. */
static int cmd_tenant_list(ctl_conn *c)
{
    static const ctl_series_kind list = {
        CNT_OP_TENANT_LIST, "tenant show", "tenant list record",
        cnt_response_is_tenant_list_end, print_tenant_record,
    };
    bool first = true;

    return ctl_series(c, &list, &first);
}

/* The document of --json FILE, read whole before connecting. */
static char json_doc[CNT_JSON_DOC_MAX];
static size_t json_len;

/* Reads --json FILE ("-": standard input) into json_doc: 0, or 1 after
 * saying why (it cannot be read, or holds more than the server takes).
 * The document goes as it is: the server judges it. */
static int read_json(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t n;
    bool more;

    if (f == NULL) {
        ctl_error("--json \"%s\": cannot open: %s", path, strerror(errno));
        return CTL_EXIT_STATUS;
    }
    n = fread(json_doc, 1, sizeof json_doc, f);
    more = n == sizeof json_doc && fgetc(f) != EOF;
    if (ferror(f)) {
        ctl_error("--json \"%s\": cannot read: %s", path, strerror(errno));
        n = 0;
        more = true;
    } else if (more) {
        ctl_error("--json \"%s\" holds more than %u bytes (the most a "
                  "settings document may have)", path, CNT_JSON_DOC_MAX);
    }
    if (f != stdin)
        fclose(f);
    json_len = n;
    return more ? CTL_EXIT_STATUS : 0;
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
    case CNT_OP_TENANT_SET_JSON:
        return cnt_encode_tenant_set_json(req, opaque, a->tenant, len,
                                          json_doc, json_len);
    case CNT_OP_NODE_SET_JSON:
        return cnt_encode_node_set_json(req, opaque, json_doc, json_len);
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

/* Prints a refused document's answer: the server's text, which names
 * the field; returns 1. */
static int json_refused(const cnt_response *res, const char *what)
{
    ctl_error("%s: %.*s (status 0x%02x)", what, (int)res->body_len,
              (const char *)res->body, res->status);
    return CTL_EXIT_STATUS;
}

/* throttle, tenant show|set|remove, node show|set|reload: authenticates
 * first when privileged, then one request (or the list's series), its
 * answer as `key value` lines (none for the settings; the applied
 * document, as the server writes it, for set --json). */
int ctl_cmd_throttle(ctl_conn *c, const throttle_args *a,
                     const char *secret_path)
{
    static uint8_t req[CTL_REQUEST_MAX];
    uint32_t opaque;
    cnt_response res;
    cnt_throttle_answer ans;
    cnt_tenant_view tv;
    cnt_node_view nv;
    int rc = 0;

    if (a->json_path != NULL)
        rc = read_json(a->json_path);
    if (rc == 0 && ctl_throttle_privileged(a))
        rc = throttle_privilege(c, a, secret_path);
    if (rc != 0)
        return rc;
    if (a->opcode == CNT_OP_TENANT_LIST)
        return cmd_tenant_list(c);
    opaque = ctl_conn_opaque(c);
    if (a->json_path != NULL) {
        ctl_io io = ctl_exchange(c, req, encode_throttle(req, opaque, a),
                                 opaque, &res);
        if (io != CTL_IO_OK)
            return ctl_io_failure(c, io);
        if (res.status != CNT_STATUS_OK)
            return json_refused(&res, a->tenant != NULL ? a->tenant
                                                        : a->verb);
        printf("%.*s\n", (int)res.body_len, (const char *)res.body);
        return CTL_EXIT_OK;
    }
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

