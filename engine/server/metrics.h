/* metrics.h: the server's figures in Prometheus's text exposition format
 * (version 0.0.4), for GET /metrics and the live page's feed on the HTTP
 * port. Two steps: cnt_metrics_collect reads a snapshot from the server's
 * parts (the Stats items, the node, each configured group and tenant), and
 * cnt_metrics_write, a pure function of the snapshot, writes the text. The
 * number of series is bounded by the configuration: per-name series exist
 * only for the configured groups and tenants. */
#ifndef CNT_ENGINE_METRICS_H
#define CNT_ENGINE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/stats.h"
#include "engine/core/groups.h"
#include "engine/core/leasetop.h"
#include "engine/core/limits.h"
#include "engine/server/outbuf.h"
#include "protocol/response.h"

/* The busiest rate-limit names a snapshot holds: enough to see which
 * limits carry the traffic, few enough that the names clients choose
 * add at most this many series to a scrape. */
#define CNT_METRICS_BUSIEST 10u

/* The Stats items a snapshot holds at most (about 90 today). */
#define CNT_METRICS_ITEMS_MAX 192u

/* One Stats item, as cnt_stats_report names it. */
typedef struct cnt_metrics_item {
    char name[48];
    uint64_t value;
} cnt_metrics_item;

/* One configured group: its maximum, its counter's consumption now and
 * the requests waiting in its queue. */
typedef struct cnt_metrics_group {
    const uint8_t *name;
    uint16_t len;
    uint32_t maximum, consumption, waiting;
} cnt_metrics_group;

/* One configured tenant as the throttle shows it, with its throttled
 * charges per reason (indexed by CNT_TREASON_*). */
typedef struct cnt_metrics_tenant {
    uint8_t *name;
    uint16_t len;
    cnt_tenant_view view;
    uint64_t throttled_by[CNT_TREASON_MAX + 1];
} cnt_metrics_tenant;

typedef struct cnt_metrics_snapshot {
    size_t nitems;
    cnt_metrics_item items[CNT_METRICS_ITEMS_MAX];
    bool has_node;                  /* the throttle exists */
    cnt_node_view node;
    size_t ngroups;
    cnt_metrics_group *groups;      /* in the group set's order */
    size_t ntenants;
    cnt_metrics_tenant *tenants;    /* in the order the listing met them */
    size_t nbusiest;
    cnt_busy_name busiest[CNT_METRICS_BUSIEST]; /* busiest first */
} cnt_metrics_snapshot;

/* What a snapshot is read from; any pointer may be NULL. */
typedef struct cnt_metrics_sources {
    cnt_stats_sources stats;
    cnt_table *table;
    cnt_throttle *throttle;
    cnt_limits *limits;
    const cnt_groups *groups;
} cnt_metrics_sources;

/* Fills *snap from src (the group names point into src->groups, which
 * must outlive the snapshot); false when memory is short (then nothing
 * needs freeing). Free with cnt_metrics_snapshot_free. */
bool cnt_metrics_collect(const cnt_metrics_sources *src,
                         cnt_metrics_snapshot *snap);

/* Frees what cnt_metrics_collect allocated. */
void cnt_metrics_snapshot_free(cnt_metrics_snapshot *snap);

/* Appends the exposition of snap to o: every family with its # HELP and
 * # TYPE lines. Label values are the names' bytes with '\', '"' and
 * newline escaped as the format says and every other byte outside
 * printable ASCII, and '%' itself, written %XX, so that any name gives
 * valid UTF-8 and two names never give one value. False when memory ran
 * out (o then holds part of the text). */
bool cnt_metrics_write(cnt_outbuf *o, const cnt_metrics_snapshot *snap);

/* Appends the family counter_lease_seconds_left: one gauge per lease of
 * top (a Lease_list survey's merged answer), nearest first, labelled with
 * its counter's name (escaped as above) and its lease id, valued with the
 * seconds left at now_ns (the monotonic clock), to the ms. Only the live
 * page's feed carries it: collecting it takes a survey of every worker,
 * which a scrape does not wait for. False when memory ran out. */
bool cnt_metrics_write_leases(cnt_outbuf *o, const cnt_lease_top *top,
                              uint64_t now_ns);

/* True when the Stats item called name has a family in the exposition;
 * the unit test checks every item of cnt_stats_report has one. */
bool cnt_metrics_item_known(const char *name);

/* The live page GET / serves (engine/server/live_page.c): one HTML
 * document with its CSS and script inline, which reads the exposition
 * over the WebSocket feed /live. */
extern const char cnt_live_page[];

#endif
