/* counterctl_top.c: `counterctl top`, a live view of one server over the
 * counter protocol only, so it works against any server that speaks it:
 * Stats twice for the rates, Queues and Dump for the busiest counters,
 * Lease_list for the leases about to expire, Node_show and Tenant_list
 * for throttling, Busiest for the busiest rate-limit names (each left
 * out, said so, where the server answers it with an error status, as the
 * reference does). In a
 * terminal it redraws the screen with ANSI escapes each interval until q;
 * to a pipe it prints a plain report each interval; --once prints one. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "programs/counterctl_cmd.h"
#include "programs/counterctl_top.h"

/* --interval: from a tenth of a second (faster only loads the server) to
 * an hour. */
static const ctl_span interval_span = {
    1000000, "milliseconds", 100, 3600000, "100ms to 1h",
};

int ctl_parse_top_args(int argc, char **argv, top_args *a)
{
    char why[192];
    cnt_duration d;

    a->once = false;
    a->interval_ms = 1000;
    for (int i = 0; i < argc; i++) {
        const char *val = NULL;

        if (strcmp(argv[i], "--once") == 0) {
            a->once = true;
            continue;
        }
        if (strcmp(argv[i], "--interval") == 0) {
            if (i + 1 == argc)
                return ctl_usage_error("%s", "top: --interval needs a "
                                       "duration");
            val = argv[++i];
        } else if (strncmp(argv[i], "--interval=", 11) == 0)
            val = argv[i] + 11;
        else
            return ctl_usage_error("top: unknown argument \"%s\"", argv[i]);
        if (!ctl_duration_arg(val, &interval_span, &d, &a->interval_ms, why,
                              sizeof why))
            return ctl_usage_error("top: --interval: %s", why);
    }
    return 0;
}

/* ---- One refresh ---- */

/* Adds one Stats item to the sample (items past its room are dropped). */
static void add_stats_item(void *ctx, const char *name, uint16_t nlen,
                           const char *value, uint16_t vlen)
{
    (void)ctl_top_stats_add(ctx, name, nlen, value, vlen);
}

/* Takes a Stats sample into s; 0 or the exit code. */
static int sample_stats(ctl_conn *c, ctl_top_stats *s)
{
    s->n = 0;
    return ctl_stats_each(c, add_stats_item, s);
}

/* Adds a series record to the view; false if it is malformed. */
typedef bool (*record_fn)(const cnt_response *res, ctl_top_view *v);

static bool add_queue(const cnt_response *res, ctl_top_view *v)
{
    cnt_queues_record r;

    if (!cnt_parse_queues_record(res, &r))
        return false;
    ctl_top_list_add(&v->queues, r.name, r.name_len, r.queue_len,
                     (const uint64_t[4]){ r.consumption, r.queue_len, 0, 0 });
    return true;
}

static bool add_counter(const cnt_response *res, ctl_top_view *v)
{
    cnt_dump_record r;

    if (!cnt_dump_record_parse(res, &r))
        return false;
    ctl_top_list_add(&v->counters, r.name, r.name_len, r.current,
                     (const uint64_t[4]){ r.current, r.max, 0, 0 });
    return true;
}

static bool add_tenant(const cnt_response *res, ctl_top_view *v)
{
    cnt_tenant_record r;

    if (!cnt_parse_tenant_record(res, &r))
        return false;
    ctl_top_list_add(&v->tenants, r.name, r.name_len, r.view.used,
                     (const uint64_t[4]){ r.view.used, r.view.reserved,
                                          r.view.hard_limit,
                                          r.view.throttled });
    return true;
}

/* Sends req (len bytes, asking with opaque) and reads the series it
 * answers into the view, a record at a time. An error status on the
 * first answer means the server does not offer it: *offered turns false
 * and the refresh goes on. 0 or the exit code. */
static int series_of(ctl_conn *c, const uint8_t *req, size_t len,
                     uint32_t opaque, const char *what,
                     bool (*is_end)(const cnt_response *), record_fn add,
                     ctl_top_view *v, bool *offered)
{
    bool first = true;
    cnt_response res;
    ctl_io io;

    *offered = true;
    io = ctl_conn_send(c, req, len);
    while (io == CTL_IO_OK) {
        io = ctl_conn_response(c, opaque, &res);
        if (io != CTL_IO_OK)
            break;
        if (res.status != CNT_STATUS_OK) {
            if (first) {
                *offered = false;
                return 0;
            }
            return ctl_status_failure(&res, what);
        }
        first = false;
        if (is_end(&res))
            return 0;
        if (!add(&res, v)) {
            ctl_error("malformed %s record", what);
            return CTL_EXIT_PROTOCOL;
        }
    }
    return ctl_io_failure(c, io);
}

/* The series of an opcode without a body (Queues, Dump, Tenant_list);
 * see series_of. */
static int series(ctl_conn *c, uint8_t opcode, const char *what,
                  bool (*is_end)(const cnt_response *), record_fn add,
                  ctl_top_view *v, bool *offered)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);

    return series_of(c, req, cnt_encode_simple(req, opcode, opaque), opaque,
                     what, is_end, add, v, offered);
}

static bool add_busy(const cnt_response *res, ctl_top_view *v)
{
    cnt_busy_record r;

    if (!cnt_parse_busy_record(res, &r))
        return false;
    ctl_top_list_add(&v->busiest, r.name, r.name_len, r.checks,
                     (const uint64_t[4]){ r.checks, r.kind, 0, 0 });
    return true;
}

/* Busiest for the table's rows into the view; have_busiest false on an
 * error status. 0 or the exit code. */
static int busiest(ctl_conn *c, ctl_top_view *v)
{
    uint8_t req[CNT_HEADER_SIZE + CNT_BUSIEST_FIXED];
    uint32_t opaque = ctl_conn_opaque(c);

    return series_of(c, req, cnt_encode_busiest(req, opaque, CTL_TOP_ROWS),
                     opaque, "busiest", cnt_response_is_busiest_end,
                     add_busy, v, &v->have_busiest);
}

/* Node_show into the view; have_node false on an error status. */
static int node_show(ctl_conn *c, ctl_top_view *v)
{
    uint8_t req[CNT_HEADER_SIZE];
    uint32_t opaque = ctl_conn_opaque(c);
    cnt_response res;
    ctl_io io;

    io = ctl_exchange(c, req, cnt_encode_node_show(req, opaque), opaque,
                      &res);
    if (io != CTL_IO_OK)
        return ctl_io_failure(c, io);
    v->have_node = res.status == CNT_STATUS_OK;
    if (v->have_node && !cnt_parse_node_view(&res, &v->node)) {
        ctl_error("malformed node show answer");
        return CTL_EXIT_PROTOCOL;
    }
    return 0;
}

static bool add_lease(const cnt_response *res, ctl_top_view *v)
{
    cnt_lease_record r;

    if (!cnt_parse_lease_record(res, &r))
        return false;
    ctl_top_list_add(&v->leases, r.name, r.name_len,
                     UINT32_MAX - (uint64_t)r.left_ms,
                     (const uint64_t[4]){ r.left_ms, r.lease_id,
                                          r.resources, 0 });
    return true;
}

/* Lease_list for the CTL_TOP_ROWS leases nearest to expiry into the
 * view; have_leases false on an error status (a server without it).
 * 0 or the exit code. */
static int lease_list(ctl_conn *c, ctl_top_view *v)
{
    uint8_t req[CNT_HEADER_SIZE + CNT_LLIST_FIXED];
    uint32_t opaque = ctl_conn_opaque(c);

    ctl_top_list_clear(&v->leases);
    return series_of(c, req,
                     cnt_encode_lease_list(req, opaque, CTL_TOP_ROWS),
                     opaque, "lease list", cnt_response_is_lease_list_end,
                     add_lease, v, &v->have_leases);
}

/* Everything but Stats for one refresh; 0 or the exit code. */
static int gather(ctl_conn *c, ctl_top_view *v)
{
    bool offered;
    int rc;

    ctl_top_list_clear(&v->queues);
    ctl_top_list_clear(&v->counters);
    ctl_top_list_clear(&v->tenants);
    rc = series(c, CNT_OP_QUEUES, "queues", cnt_response_is_queues_end,
                add_queue, v, &v->have_queues);
    if (rc == 0)
        rc = series(c, CNT_OP_DUMP, "dump", cnt_response_is_dump_end,
                    add_counter, v, &offered);
    if (rc == 0)
        rc = lease_list(c, v);
    if (rc == 0)
        rc = node_show(c, v);
    v->have_tenants = false;
    if (rc == 0 && v->have_node)
        rc = series(c, CNT_OP_TENANT_LIST, "tenant list",
                    cnt_response_is_tenant_list_end, add_tenant, v,
                    &v->have_tenants);
    ctl_top_list_clear(&v->busiest);
    if (rc == 0)
        rc = busiest(c, v);
    return rc;
}

/* A new Stats sample (the last one becomes the previous) and the rest;
 * 0 or the exit code. */
static int refresh(ctl_conn *c, ctl_top_view *v, int64_t *last_ms)
{
    int64_t now;
    int rc;

    v->prev = v->cur;
    rc = sample_stats(c, &v->cur);
    now = ctl_now_ms();
    if (rc != 0)
        return rc;
    v->have_prev = *last_ms >= 0;
    v->secs = (double)(now - *last_ms) / 1000.0;
    *last_ms = now;
    return gather(c, v);
}

/* ---- The terminal ---- */

static struct termios saved_tio;
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

/* Writes s to the terminal, all of it. */
static void term_write(const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, s, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        s += n;
        len -= (size_t)n;
    }
}

/* Raw keys without echo (signals stay on: ^C still stops), the
 * alternate screen, no cursor; false if the terminal will not. */
static bool term_enter(void)
{
    struct termios raw;
    static const char on[] = "\x1b[?1049h\x1b[?25l";

    if (tcgetattr(STDIN_FILENO, &saved_tio) != 0)
        return false;
    raw = saved_tio;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0)
        return false;
    term_write(on, sizeof on - 1);
    return true;
}

/* Puts the terminal back as it was found. */
static void term_leave(void)
{
    static const char off[] = "\x1b[?25h\x1b[?1049l";

    term_write(off, sizeof off - 1);
    (void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
}

/* Draws the report from the top left, each line cut to the width and no
 * more lines than the screen has, clearing what the last frame left. */
static void term_draw(const ctl_top_view *v)
{
    struct winsize ws = { .ws_row = 24, .ws_col = 80 };
    char *text = NULL, *p, *frame = NULL;
    size_t tlen = 0, flen = 0, rows = 0;
    FILE *f, *out;

    (void)ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
    if (ws.ws_row == 0 || ws.ws_col == 0) {
        ws.ws_row = 24;
        ws.ws_col = 80;
    }
    f = open_memstream(&text, &tlen);
    if (f == NULL)
        return;
    ctl_top_render(f, v);
    fclose(f);
    out = open_memstream(&frame, &flen);
    if (out == NULL) {
        free(text);
        return;
    }
    fputs("\x1b[H", out);
    for (p = text; *p != '\0' && rows + 1 < ws.ws_row; rows++) {
        size_t len = strcspn(p, "\n");

        fprintf(out, "%.*s\x1b[K\r\n",
                (int)(len < ws.ws_col ? len : ws.ws_col), p);
        p += len + (p[len] == '\n');
    }
    fputs("q quits\x1b[K\x1b[J", out);
    fclose(out);
    term_write(frame, flen);
    free(frame);
    free(text);
}

/* Waits until deadline (ctl_now_ms) for q on the terminal; true if q (or
 * Q) came or a stop signal did. */
static bool term_wait(int64_t deadline)
{
    for (;;) {
        struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
        int64_t left = deadline - ctl_now_ms();
        char keys[64];
        ssize_t n;

        if (stop_signal != 0)
            return true;
        if (left <= 0)
            return false;
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        n = read(STDIN_FILENO, keys, sizeof keys);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return true;    /* the terminal is gone */
        for (ssize_t i = 0; i < n; i++)
            if (keys[i] == 'q' || keys[i] == 'Q')
                return true;
    }
}

/* An error printed on the terminal while the alternate screen is up
 * would vanish with it: stderr goes to a temporary file meanwhile, and
 * what it got is copied out once the screen is back. Returns the saved
 * stderr, or -1 if stderr is not a terminal or cannot be moved. */
static int hold_stderr(FILE **tmp)
{
    int saved;

    *tmp = NULL;
    if (!isatty(STDERR_FILENO) || (*tmp = tmpfile()) == NULL)
        return -1;
    fflush(stderr);
    saved = dup(STDERR_FILENO);
    if (saved < 0 || dup2(fileno(*tmp), STDERR_FILENO) < 0) {
        if (saved >= 0)
            close(saved);
        fclose(*tmp);
        *tmp = NULL;
        return -1;
    }
    return saved;
}

/* Puts stderr back and copies out what it got meanwhile. */
static void release_stderr(int saved, FILE *tmp)
{
    char buf[512];
    size_t n;

    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(tmp);
}

/* The terminal loop; the exit code: 0 on q, 128+N on signal N. */
static int top_terminal(ctl_conn *c, const top_args *a, ctl_top_view *v)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    struct sigaction sa, old[3];
    int64_t last = -1, next;
    FILE *err_tmp;
    int rc = 0, err_saved;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    if (!term_enter()) {
        ctl_error("top: cannot set up the terminal: %s", strerror(errno));
        rc = CTL_EXIT_SOFTWARE;
        goto out;
    }
    err_saved = hold_stderr(&err_tmp);
    for (;;) {
        next = ctl_now_ms() + (int64_t)a->interval_ms;
        rc = refresh(c, v, &last);
        if (rc != 0)
            break;
        term_draw(v);
        if (term_wait(next))
            break;
    }
    term_leave();
    release_stderr(err_saved, err_tmp);
    if (rc == 0 && stop_signal != 0)
        rc = 128 + stop_signal;
out:
    for (size_t i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    return rc;
}

/* Sleeps until deadline on the monotonic clock. */
static void sleep_until(int64_t deadline)
{
    int64_t left;

    while ((left = deadline - ctl_now_ms()) > 0)
        (void)poll(NULL, 0, (int)left);
}

int ctl_cmd_top(ctl_conn *c, const top_args *a, const char *server)
{
    static ctl_top_view v;
    int64_t last = -1;
    int rc;

    memset(&v, 0, sizeof v);
    v.server = server;
    v.interval_ms = a->interval_ms;
    if (!a->once && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
        return top_terminal(c, a, &v);
    /* Plain text: the first report waits an interval, so every report
     * has its rates. */
    rc = sample_stats(c, &v.cur);
    last = ctl_now_ms();
    while (rc == 0) {
        sleep_until(last + (int64_t)a->interval_ms);
        rc = refresh(c, &v, &last);
        if (rc != 0)
            break;
        ctl_top_render(stdout, &v);
        if (fflush(stdout) != 0) {
            ctl_error("stdout: %s", strerror(errno));
            return CTL_EXIT_IOERR;
        }
        if (a->once)
            break;
        fputs("\n", stdout);
    }
    return rc;
}
