/* counterctl_top.h: `counterctl top`, the live view of one server: what a
 * refresh gathers over the counter protocol (Stats twice for rates,
  * Queues, Dump, Node_show, Tenant_list, Lease_list, Busiest), kept in fixed-size tables so a
 * server with a million counters costs no more memory than one with ten,
 * and the text it is shown as. The gathering and the terminal live in
 * counterctl_top.c; the tables and the text (pure, unit-tested) in
 * counterctl_top_view.c. */
#ifndef CNT_PROGRAMS_COUNTERCTL_TOP_H
#define CNT_PROGRAMS_COUNTERCTL_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "programs/counterctl.h"

/* Rows each table keeps: the top of its sort order only. */
#define CTL_TOP_ROWS 10
/* A name is shown escaped (ctl_print_escaped's \xHH) and cut to this many
 * characters, its end replaced by "..." when cut. */
#define CTL_TOP_NAME_SHOWN 32
/* Stats items a sample keeps (the server sends about 90). */
#define CTL_TOP_STATS_MAX 160
/* Longest Stats item name kept; longer ones are skipped. */
#define CTL_TOP_STAT_NAME 48

/* One row of a table: the name as shown, the sort key, its figures. */
typedef struct ctl_top_row {
    char name[CTL_TOP_NAME_SHOWN + 1];
    uint64_t key;
    uint64_t v[4];
} ctl_top_row;

/* The CTL_TOP_ROWS rows with the largest keys of everything offered
 * (ties: the name first in byte order), and how many were offered. */
typedef struct ctl_top_list {
    ctl_top_row row[CTL_TOP_ROWS];
    size_t n;
    uint64_t seen;
} ctl_top_list;

/* The numeric Stats items of one sample. */
typedef struct ctl_top_stats {
    size_t n;
    char name[CTL_TOP_STATS_MAX][CTL_TOP_STAT_NAME + 1];
    uint64_t value[CTL_TOP_STATS_MAX];
} ctl_top_stats;

/* Everything one refresh shows. */
typedef struct ctl_top_view {
    const char *server;         /* "HOST:PORT" */
    uint64_t interval_ms;
    ctl_top_stats prev, cur;    /* prev: the sample secs before cur */
    bool have_prev;
    double secs;
    bool have_node;             /* false: the server has no Node_show */
    cnt_node_view node;
    bool have_queues;           /* false: the server has no Queues */
    bool have_tenants;          /* false: the server has no Tenant_list */
    ctl_top_list tenants;       /* key used; v: used, reserved, hard limit,
                                 * throttled */
    ctl_top_list queues;        /* key waiters; v: consumption, waiters */
    ctl_top_list counters;      /* key current; v: current, max */
    bool have_leases;           /* false: the server has no Lease_list */
    ctl_top_list leases;        /* key UINT32_MAX - ms left (nearest
                                 * first); v: ms left, lease id,
                                 * resources */
    bool have_busiest;          /* false: the server has no Busiest */
    ctl_top_list busiest;       /* key checks in the last second; v:
                                 * checks, kind (CNT_BUSY_KIND_*) */
} ctl_top_view;

/* Writes name (len bytes) escaped as ctl_print_escaped does and cut to
 * CTL_TOP_NAME_SHOWN characters ("..." at the end when cut) into out. */
void ctl_top_name(const uint8_t *name, size_t len,
                  char out[CTL_TOP_NAME_SHOWN + 1]);

/* Empties l. */
void ctl_top_list_clear(ctl_top_list *l);

/* Offers a row to l: kept if it is among the CTL_TOP_ROWS largest keys. */
void ctl_top_list_add(ctl_top_list *l, const uint8_t *name, size_t len,
                      uint64_t key, const uint64_t v[4]);

/* Adds a Stats item to s if its value is a decimal u64 and its name fits;
 * false if it was skipped. */
bool ctl_top_stats_add(ctl_top_stats *s, const char *name, size_t nlen,
                       const char *value, size_t vlen);

/* The value of item name in s; false if s has none. */
bool ctl_top_stat(const ctl_top_stats *s, const char *name, uint64_t *out);

/* Per second over v->secs: how much item name grew from v->prev to
 * v->cur (0 when it shrank, say after a restart); -1 without a previous
 * sample or when either sample lacks the item. */
double ctl_top_rate(const ctl_top_view *v, const char *name);

/* Writes the report of v as plain text lines (no escapes). */
void ctl_top_render(FILE *out, const ctl_top_view *v);

/* ---- the verb (counterctl_top.c) ---- */

/* Arguments of `top`. */
typedef struct top_args {
    bool once;              /* --once: one report, then exit */
    uint64_t interval_ms;   /* --interval, default 1s */
} top_args;

/* Parses [--once] [--interval DURATION]. */
int ctl_parse_top_args(int argc, char **argv, top_args *a);

/* top: refreshes until q (a terminal) or forever (plain text to a pipe),
 * or once with --once; the exit code. */
int ctl_cmd_top(ctl_conn *c, const top_args *a, const char *server);

#endif
