/* counterctl_top_view.c: the pure half of `counterctl top`: the
 * fixed-size tables a refresh fills (the busiest rows only, so memory
 * does not grow with the server's size), the rates between two Stats
 * samples, and the report's text. No I/O but the FILE it writes to, so
 * the unit test drives it without a server. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "programs/counterctl_top.h"

/* Escapes name as ctl_print_escaped does, cut to CTL_TOP_NAME_SHOWN. */
void ctl_top_name(const uint8_t *name, size_t len,
                  char out[CTL_TOP_NAME_SHOWN + 1])
{
    size_t o = 0, i;

    for (i = 0; i < len; i++) {
        uint8_t ch = name[i];
        size_t need = (ch >= 0x20 && ch < 0x7f && ch != '\\') ? 1 : 4;

        if (o + need > CTL_TOP_NAME_SHOWN)
            break;
        if (need == 1)
            out[o++] = (char)ch;
        else {
            snprintf(out + o, 5, "\\x%02x", ch);
            o += 4;
        }
    }
    out[o] = '\0';
    if (i < len) {
        /* Cut: the last three characters shown give way to "...". */
        o = o > CTL_TOP_NAME_SHOWN - 3 ? CTL_TOP_NAME_SHOWN - 3 : o;
        memcpy(out + o, "...", 4);
    }
}

void ctl_top_list_clear(ctl_top_list *l)
{
    l->n = 0;
    l->seen = 0;
}

/* Whether row a goes before row b: the larger key, then the name. */
static bool row_before(const ctl_top_row *a, const ctl_top_row *b)
{
    if (a->key != b->key)
        return a->key > b->key;
    return strcmp(a->name, b->name) < 0;
}

void ctl_top_list_add(ctl_top_list *l, const uint8_t *name, size_t len,
                      uint64_t key, const uint64_t v[4])
{
    ctl_top_row r;
    size_t i;

    l->seen++;
    ctl_top_name(name, len, r.name);
    r.key = key;
    memcpy(r.v, v, sizeof r.v);
    if (l->n == CTL_TOP_ROWS && !row_before(&r, &l->row[l->n - 1]))
        return;
    i = l->n < CTL_TOP_ROWS ? l->n++ : CTL_TOP_ROWS - 1;
    while (i > 0 && row_before(&r, &l->row[i - 1])) {
        l->row[i] = l->row[i - 1];
        i--;
    }
    l->row[i] = r;
}

bool ctl_top_stats_add(ctl_top_stats *s, const char *name, size_t nlen,
                       const char *value, size_t vlen)
{
    uint64_t v = 0;

    if (s->n == CTL_TOP_STATS_MAX || nlen == 0 || nlen > CTL_TOP_STAT_NAME ||
        vlen == 0 || vlen > 20)
        return false;
    for (size_t i = 0; i < vlen; i++) {
        unsigned d = (unsigned)(value[i] - '0');

        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    memcpy(s->name[s->n], name, nlen);
    s->name[s->n][nlen] = '\0';
    s->value[s->n++] = v;
    return true;
}

bool ctl_top_stat(const ctl_top_stats *s, const char *name, uint64_t *out)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0) {
            *out = s->value[i];
            return true;
        }
    return false;
}

double ctl_top_rate(const ctl_top_view *v, const char *name)
{
    uint64_t a, b;

    if (!v->have_prev || v->secs <= 0)
        return -1;
    if (!ctl_top_stat(&v->prev, name, &a) || !ctl_top_stat(&v->cur, name, &b))
        return -1;
    if (b < a)
        return 0;
    return (double)(b - a) / v->secs;
}

/* Writes a rate, or "-" when there is none yet. */
static void put_rate(FILE *out, double r)
{
    if (r < 0)
        fputs("-", out);
    else
        fprintf(out, "%.1f", r);
}

/* Writes " key value" for a Stats item of the current sample, "-" when
 * the server has none. */
static void put_stat(FILE *out, const ctl_top_view *v, const char *label,
                     const char *item)
{
    uint64_t x;

    if (ctl_top_stat(&v->cur, item, &x))
        fprintf(out, "  %s %" PRIu64, label, x);
    else
        fprintf(out, "  %s -", label);
}

/* The node line: capacity used this second and the shares of it. */
static void render_node(FILE *out, const ctl_top_view *v)
{
    const cnt_node_view *n = &v->node;

    if (!v->have_node) {
        fputs("node      throttling not offered by this server\n", out);
        return;
    }
    if (n->capacity == 0)
        fprintf(out, "node      capacity off  used %" PRIu32, n->used);
    else
        fprintf(out, "node      capacity %" PRIu32 "/s  used %" PRIu32
                " (%.1f%%)", n->capacity, n->used,
                100.0 * n->used / n->capacity);
    fprintf(out, "  pool %" PRIu32 "  pool_used %" PRIu32 "  reserved_sum %"
            PRIu32 "  tenants %" PRIu32 "  throttled %" PRIu64 "\n", n->pool,
            n->pool_used, n->reserved_sum, n->tenants, n->throttled);
}

/* The commands line: the total per second and the five busiest
 * opcodes. */
static void render_commands(FILE *out, const ctl_top_view *v)
{
    struct { const char *name; double rate; } busy[5];
    size_t nbusy = 0;
    double total = 0;

    for (size_t i = 0; i < v->cur.n; i++) {
        const char *item = v->cur.name[i];
        double r;
        size_t j;

        if (strncmp(item, "command:", 8) != 0)
            continue;
        r = ctl_top_rate(v, item);
        if (r <= 0)
            continue;
        total += r;
        /* Insertion into the five busiest, the first seen on ties. */
        for (j = nbusy; j > 0 && busy[j - 1].rate < r; j--)
            if (j < 5)
                busy[j] = busy[j - 1];
        if (j < 5) {
            busy[j].name = item + 8;
            busy[j].rate = r;
            if (nbusy < 5)
                nbusy++;
        }
    }
    fputs("commands  ", out);
    put_rate(out, v->have_prev ? total : -1);
    fputs("/s", out);
    for (size_t j = 0; j < nbusy; j++) {
        fprintf(out, "%s%s ", j == 0 ? "  (" : ", ", busy[j].name);
        put_rate(out, busy[j].rate);
        fputs("/s", out);
    }
    fputs(nbusy > 0 ? ")\n" : "\n", out);
}

/* The waits and rate-limit lines, from Stats. */
static void render_activity(FILE *out, const ctl_top_view *v)
{
    static const char *const checks[] = {
        "ttl_checks", "window_checks", "gcra_checks", "throttle_checks",
    };

    fputs("server  ", out);
    put_stat(out, v, "connections", "curr_connections");
    put_stat(out, v, "counters", "objects");
    put_stat(out, v, "waiting", "waiting");
    put_stat(out, v, "leases", "leases");
    fputs("  lease_expirations/s ", out);
    put_rate(out, ctl_top_rate(v, "lease_expirations"));
    fputs("\nchecks/s ", out);
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        size_t len = strcspn(checks[i], "_");

        fprintf(out, " %.*s ", (int)len, checks[i]);
        put_rate(out, ctl_top_rate(v, checks[i]));
    }
    fputs("\n", out);
}

/* A table's title line: what it holds, and how many the server has. */
static void render_title(FILE *out, const char *title, const ctl_top_list *l)
{
    fprintf(out, "\n%s (%" PRIu64 ")\n", title, l->seen);
}

/* The leases nearest to expiry: name, lease id, time left, resources;
 * the title counts every lease the server holds (Stats' leases). */
static void render_leases(FILE *out, const ctl_top_view *v)
{
    uint64_t held;

    if (!v->have_leases) {
        fputs("\nleases: not offered by this server\n", out);
        return;
    }
    if (!ctl_top_stat(&v->cur, "leases", &held))
        held = v->leases.seen;
    fprintf(out, "\nleases about to expire, nearest first (%" PRIu64 ")\n",
            held);
    fprintf(out, "  %-*s %20s %10s %10s\n", CTL_TOP_NAME_SHOWN, "NAME",
            "LEASE_ID", "LEFT_MS", "RESOURCES");
    for (size_t i = 0; i < v->leases.n; i++)
        fprintf(out, "  %-*s %20" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
                CTL_TOP_NAME_SHOWN, v->leases.row[i].name,
                v->leases.row[i].v[1], v->leases.row[i].v[0],
                v->leases.row[i].v[2]);
}

/* The busiest rate-limit names of the last whole second (Busiest). */
static void render_busiest(FILE *out, const ctl_top_view *v)
{
    static const char *const kinds[] = {
        [CNT_BUSY_KIND_TTL] = "ttl", [CNT_BUSY_KIND_WINDOW] = "window",
        [CNT_BUSY_KIND_GCRA] = "gcra",
    };

    if (!v->have_busiest) {
        fputs("\nbusiest rate-limit names: not offered by this server\n",
              out);
        return;
    }
    render_title(out, "busiest rate-limit names, checks in the last second",
                 &v->busiest);
    fprintf(out, "  %-*s %-8s %10s\n", CTL_TOP_NAME_SHOWN, "NAME", "KIND",
            "CHECKS/S");
    for (size_t i = 0; i < v->busiest.n; i++) {
        const ctl_top_row *r = &v->busiest.row[i];

        fprintf(out, "  %-*s %-8s %10" PRIu64 "\n", CTL_TOP_NAME_SHOWN,
                r->name, r->v[1] < 3 ? kinds[r->v[1]] : "?", r->v[0]);
    }
}

void ctl_top_render(FILE *out, const ctl_top_view *v)
{
    fprintf(out, "counterctl top  %s  every %" PRIu64 "ms\n", v->server,
            v->interval_ms);
    render_node(out, v);
    render_commands(out, v);
    render_activity(out, v);

    if (!v->have_queues)
        fputs("\nqueues: not offered by this server\n", out);
    else {
        render_title(out, "queues, longest first", &v->queues);
        fprintf(out, "  %-*s %12s %10s\n", CTL_TOP_NAME_SHOWN, "NAME",
                "CONSUMPTION", "WAITERS");
        for (size_t i = 0; i < v->queues.n; i++)
            fprintf(out, "  %-*s %12" PRIu64 " %10" PRIu64 "\n",
                    CTL_TOP_NAME_SHOWN, v->queues.row[i].name,
                    v->queues.row[i].v[0], v->queues.row[i].v[1]);
    }

    render_leases(out, v);

    render_title(out, "counters, most consumed first", &v->counters);
    fprintf(out, "  %-*s %12s %10s\n", CTL_TOP_NAME_SHOWN, "NAME", "CURRENT",
            "MAX");
    for (size_t i = 0; i < v->counters.n; i++)
        fprintf(out, "  %-*s %12" PRIu64 " %10" PRIu64 "\n",
                CTL_TOP_NAME_SHOWN, v->counters.row[i].name,
                v->counters.row[i].v[0], v->counters.row[i].v[1]);

    render_busiest(out, v);

    if (!v->have_tenants) {
        fputs("\ntenants: not offered by this server\n", out);
        return;
    }
    render_title(out, "tenants, most used first", &v->tenants);
    fprintf(out, "  %-*s %10s %10s %10s %10s\n", CTL_TOP_NAME_SHOWN, "NAME",
            "USED", "RESERVED", "HARD_LIMIT", "THROTTLED");
    for (size_t i = 0; i < v->tenants.n; i++) {
        const ctl_top_row *r = &v->tenants.row[i];
        char hard[24];

        if (r->v[2] == CNT_HARD_LIMIT_UNLIMITED)
            snprintf(hard, sizeof hard, "unlimited");
        else
            snprintf(hard, sizeof hard, "%" PRIu64, r->v[2]);
        fprintf(out, "  %-*s %10" PRIu64 " %10" PRIu64 " %10s %10" PRIu64
                "\n", CTL_TOP_NAME_SHOWN, r->name, r->v[0], r->v[1], hard,
                r->v[3]);
    }
}
