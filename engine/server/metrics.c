/* metrics.c: the Prometheus exposition of the server's figures (see
 * metrics.h). The Stats items keep the names the reference gave them;
 * Prometheus wants counters to end in _total, units in the name and one
 * family per quantity with labels for its parts, so each item has a row
 * below that says which family it belongs to, with which label. */
#include "config.h"

#include "engine/server/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { GAUGE, COUNTER };

/* One Stats item's place in the exposition: the family (rows of one family
 * are next to each other), its type and help, the label and its value
 * (none when label is NULL; for a prefix row, the value is the item's
 * name after the prefix), and whether the item is in microseconds (the
 * family is then in seconds). */
typedef struct metric_row {
    const char *item;
    bool prefix;
    const char *family;
    int type;
    const char *help;
    const char *label, *label_value;
    bool micro;
} metric_row;

#define ROW(item, family, type, help) \
    {item, false, family, type, help, NULL, NULL, false}
#define LROW(item, family, type, help, label, value) \
    {item, false, family, type, help, label, value, false}

static const metric_row rows[] = {
    ROW("objects", "counter_objects", GAUGE,
        "Counters in the table now, released ones not yet collected "
        "included."),
    ROW("total_objects", "counter_objects_created_total", COUNTER,
        "Counters ever created."),
    ROW("used_memory", "counter_used_memory_bytes", GAUGE,
        "Bytes used by the counters, their bucket array and the waits."),
    ROW("conflicts", "counter_conflicts", GAUGE,
        "Counters that share a bucket with another."),
    ROW("gc_count", "counter_gc_sweeps_total", COUNTER, "GC sweeps run."),
    {"last_gc_elapsed", false, "counter_gc_last_duration_seconds", GAUGE,
     "Duration of the last GC sweep.", NULL, NULL, true},
    {"total_gc_elapsed", false, "counter_gc_duration_seconds_total",
     COUNTER, "Duration of all GC sweeps.", NULL, NULL, true},
    ROW("curr_connections", "counter_connections", GAUGE,
        "Counter-port connections open now."),
    ROW("total_connections", "counter_connections_accepted_total", COUNTER,
        "Counter-port connections ever accepted."),
    {"command:", true, "counter_commands_total", COUNTER,
     "Requests received per opcode, malformed ones included.", "opcode",
     NULL, false},
    ROW("rejected_connections", "counter_connections_rejected_total",
        COUNTER, "Connections closed at once over counter.max_connections."),
    ROW("buckets", "counter_buckets", GAUGE,
        "Buckets of the counters' map (counter.buckets)."),
    ROW("interval", "counter_consumption_interval_seconds", GAUGE,
        "Window of the maximum consumption and GC period of counters."),
    ROW("memory_limit", "counter_memory_limit_bytes", GAUGE,
        "counter.memory_limit; 0 means unlimited."),
    ROW("waiting", "counter_waiting", GAUGE,
        "wait_acquire requests queued now."),
    ROW("leases", "counter_leases", GAUGE,
        "Granted wait_acquire requests with a lease now."),
    ROW("queue_grants", "counter_queue_grants_total", COUNTER,
        "Requests granted from a queue."),
    ROW("wait_timeouts", "counter_wait_timeouts_total", COUNTER,
        "Queued requests whose wait ran out."),
    ROW("lease_expirations", "counter_lease_expirations_total", COUNTER,
        "Leases that ran out before a release or renewal."),
    ROW("wait_cancels", "counter_wait_cancels_total", COUNTER,
        "Queued requests ended by their client before a grant."),
#define KIND_ROWS(what, family, type, help) \
    LROW("ttl_" what, family, type, help, "kind", "ttl"), \
    LROW("window_" what, family, type, help, "kind", "window"), \
    LROW("gcra_" what, family, type, help, "kind", "gcra")
    KIND_ROWS("objects", "counter_limit_objects", GAUGE,
              "Rate-limit records of each kind now."),
    KIND_ROWS("checks", "counter_limit_checks_total", COUNTER,
              "Rate-limit requests that passed validation."),
    KIND_ROWS("allowed", "counter_limit_allowed_total", COUNTER,
              "Rate-limit requests that succeeded."),
    KIND_ROWS("limited", "counter_limit_limited_total", COUNTER,
              "Rate-limit requests refused by the limit."),
    KIND_ROWS("expired", "counter_limit_expired_total", COUNTER,
              "Rate-limit records ended by their expiry."),
#undef KIND_ROWS
    ROW("limits_used_memory", "counter_limits_used_memory_bytes", GAUGE,
        "Bytes used by the rate limits."),
    ROW("throttle_capacity", "counter_throttle_capacity", GAUGE,
        "The node's capacity, units per second (0: throttling off)."),
    ROW("throttle_used", "counter_throttle_used", GAUGE,
        "Units charged in the current second by every tenant."),
    ROW("throttle_tenants", "counter_throttle_tenants", GAUGE,
        "Configured tenants."),
    ROW("throttle_checks", "counter_throttle_checks_total", COUNTER,
        "Throttle requests that reached the throttle."),
    ROW("throttle_allowed", "counter_throttle_allowed_total", COUNTER,
        "Throttle charges allowed."),
    ROW("throttle_throttled", "counter_throttle_throttled_total", COUNTER,
        "Throttle charges throttled."),
#define REASON_ROW(r) \
    LROW("throttle_throttled_" r, \
         "counter_throttle_throttled_by_reason_total", COUNTER, \
         "Throttle charges throttled, by the reason the answer gave.", \
         "reason", r)
    REASON_ROW("reserve"), REASON_ROW("pool_empty"), REASON_ROW("hard_limit"),
#undef REASON_ROW
    ROW("throttle_units", "counter_throttle_units_total", COUNTER,
        "Units of the allowed charges."),
    ROW("throttle_unthrottled_units",
        "counter_throttle_unthrottled_units_total", COUNTER,
        "Units charged by unthrottled connections."),
    ROW("auth_failures", "counter_auth_failures_total", COUNTER,
        "Auth requests refused for a wrong secret."),
    ROW("auth_closes", "counter_auth_closes_total", COUNTER,
        "Connections closed after their third failed Auth."),
    ROW("auth_refused", "counter_auth_refused_total", COUNTER,
        "Auth requests refused without comparing, past the limits."),
#define TYPE_ROW(t) \
    LROW("throttr_" t, "counter_throttr_requests_total", COUNTER, \
         "Requests received on the Throttr port per type.", "type", t)
    TYPE_ROW("insert"), TYPE_ROW("query"), TYPE_ROW("update"),
    TYPE_ROW("purge"),
#undef TYPE_ROW
    ROW("throttr_failures", "counter_throttr_failures_total", COUNTER,
        "Throttr answers that were the failure byte."),
    ROW("throttr_bad_framing", "counter_throttr_bad_framing_total", COUNTER,
        "Throttr connections closed for an unknown request type."),
    ROW("websocket_upgrades", "counter_websocket_upgrades_total", COUNTER,
        "HTTP requests upgraded to WebSocket sessions."),
    ROW("websocket_connections", "counter_websocket_connections", GAUGE,
        "WebSocket sessions open now."),
    ROW("websocket_http_errors", "counter_websocket_http_errors_total",
        COUNTER, "HTTP requests refused on the HTTP port."),
    ROW("websocket_messages_in", "counter_websocket_messages_received_total",
        COUNTER, "WebSocket data messages received."),
    ROW("websocket_messages_out", "counter_websocket_messages_sent_total",
        COUNTER, "WebSocket data messages sent."),
    ROW("websocket_errors", "counter_websocket_errors_total", COUNTER,
        "WebSocket messages answered with an error result."),
    ROW("websocket_protocol_closes", "counter_websocket_protocol_closes_total",
        COUNTER, "WebSocket connections closed for breaking RFC 6455."),
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static bool row_matches(const metric_row *r, const char *item)
{
    if (r->prefix)
        return strncmp(item, r->item, strlen(r->item)) == 0;
    return strcmp(item, r->item) == 0;
}

/* True when name has a row; see metrics.h. */
bool cnt_metrics_item_known(const char *name)
{
    for (size_t i = 0; i < NROWS; i++)
        if (row_matches(&rows[i], name))
            return true;
    return false;
}

/* ---- Collecting ---- */

static void collect_item(void *ctx, const char *name, const char *value)
{
    cnt_metrics_snapshot *snap = ctx;

    if (snap->nitems >= CNT_METRICS_ITEMS_MAX ||
        strlen(name) >= sizeof(snap->items[0].name))
        return;     /* the unit test sees the item missing */
    cnt_metrics_item *it = &snap->items[snap->nitems++];
    snprintf(it->name, sizeof(it->name), "%s", name);
    it->value = strtoull(value, NULL, 10);
}

/* Orders names as the group set does: bytes, shorter first. */
static int name_cmp(const uint8_t *a, uint16_t alen, const uint8_t *b,
                    uint16_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* A queue the table lists: its length goes to the group of that name. */
static bool collect_queue(void *ctx, const uint8_t *name, uint16_t len,
                          uint32_t consumption, uint32_t waiting)
{
    cnt_metrics_snapshot *snap = ctx;
    size_t lo = 0, hi = snap->ngroups;

    (void)consumption;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        cnt_metrics_group *g = &snap->groups[mid];
        int c = name_cmp(name, len, g->name, g->len);
        if (c == 0) {
            g->waiting = waiting;
            break;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return true;
}

typedef struct tenant_ctx {
    cnt_metrics_snapshot *snap;
    size_t cap;
    bool failed;
} tenant_ctx;

/* A tenant record: kept when the tenant is configured (the others come
 * and go with the traffic, and would make the series unbounded). */
static bool collect_tenant(void *ctx, const uint8_t *name, uint16_t len,
                           const cnt_tenant_view *v, const uint64_t *by)
{
    tenant_ctx *tc = ctx;
    cnt_metrics_snapshot *snap = tc->snap;

    if (!(v->flags & CNT_TENANT_CONFIGURED))
        return true;
    if (snap->ntenants == tc->cap) {
        size_t cap = tc->cap ? tc->cap * 2 : 16;
        cnt_metrics_tenant *t = realloc(snap->tenants, cap * sizeof(*t));
        if (t == NULL) {
            tc->failed = true;
            return false;
        }
        snap->tenants = t;
        tc->cap = cap;
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL) {
        tc->failed = true;
        return false;
    }
    memcpy(copy, name, len);
    cnt_metrics_tenant *t = &snap->tenants[snap->ntenants++];
    t->name = copy;
    t->len = len;
    t->view = *v;
    memcpy(t->throttled_by, by, sizeof(t->throttled_by));
    return true;
}

/* Reads the snapshot; see metrics.h. */
bool cnt_metrics_collect(const cnt_metrics_sources *src,
                         cnt_metrics_snapshot *snap)
{
    memset(snap, 0, sizeof(*snap));
    cnt_stats_report(&src->stats, collect_item, snap);
    if (src->throttle != NULL) {
        snap->has_node = true;
        cnt_throttle_node(src->throttle, &snap->node);
    }
    size_t n = cnt_groups_count(src->groups);
    if (n > 0) {
        snap->groups = calloc(n, sizeof(*snap->groups));
        if (snap->groups == NULL)
            return false;
        snap->ngroups = n;
        for (size_t i = 0; i < n; i++) {
            cnt_metrics_group *g = &snap->groups[i];
            const cnt_group *set = cnt_groups_at(src->groups, i, &g->name,
                                                 &g->len);
            g->maximum = set->maximum;
            if (src->table == NULL ||
                cnt_table_get(src->table, g->name, g->len,
                              &g->consumption) != CNT_STATUS_OK)
                g->consumption = 0;
        }
        if (src->table != NULL) {
            size_t stripe = 0;
            while (!cnt_table_queues(src->table, &stripe, collect_queue,
                                     snap))
                ;
        }
    }
    if (src->limits != NULL &&
        !cnt_limits_busiest(src->limits, CNT_METRICS_BUSIEST, snap->busiest,
                            &snap->nbusiest)) {
        cnt_metrics_snapshot_free(snap);
        return false;
    }
    if (src->throttle != NULL) {
        tenant_ctx tc = {snap, 0, false};
        cnt_map_cursor cur;
        memset(&cur, 0, sizeof(cur));
        while (!cnt_throttle_list_reasons(src->throttle, &cur,
                                          collect_tenant, &tc)
               && !tc.failed)
            ;
        if (tc.failed) {
            cnt_throttle_list_cancel(src->throttle, &cur);
            cnt_metrics_snapshot_free(snap);
            return false;
        }
    }
    return true;
}

/* Frees the snapshot's arrays; see metrics.h. */
void cnt_metrics_snapshot_free(cnt_metrics_snapshot *snap)
{
    for (size_t i = 0; i < snap->ntenants; i++)
        free(snap->tenants[i].name);
    free(snap->tenants);
    free(snap->groups);
    cnt_limits_busiest_free(snap->busiest, snap->nbusiest);
    snap->nbusiest = 0;
    snap->tenants = NULL;
    snap->groups = NULL;
    snap->ntenants = snap->ngroups = 0;
}

/* ---- Writing ---- */

/* Appends printf-style text (one line, short). */
static bool put(cnt_outbuf *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool put(cnt_outbuf *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    uint8_t *p = cnt_outbuf_reserve(o, (size_t)n);
    if (p == NULL)
        return false;
    memcpy(p, line, (size_t)n);
    cnt_outbuf_commit(o, (size_t)n);
    return true;
}

/* Appends a label value (see metrics.h for the escapes). */
static bool put_label(cnt_outbuf *o, const uint8_t *v, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    uint8_t *p = cnt_outbuf_reserve(o, len * 3);
    size_t n = 0;

    if (p == NULL)
        return false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = v[i];
        if (c == '\\' || c == '"') {
            p[n++] = '\\';
            p[n++] = c;
        } else if (c == '\n') {
            p[n++] = '\\';
            p[n++] = 'n';
        } else if (c < 0x20 || c >= 0x7f || c == '%') {
            p[n++] = '%';
            p[n++] = (uint8_t)hex[c >> 4];
            p[n++] = (uint8_t)hex[c & 15];
        } else
            p[n++] = c;
    }
    cnt_outbuf_commit(o, n);
    return true;
}

static bool put_head(cnt_outbuf *o, const char *family, int type,
                     const char *help)
{
    return put(o, "# HELP %s %s\n# TYPE %s %s\n", family, help, family,
               type == COUNTER ? "counter" : "gauge");
}

/* A sample with one label whose value is a name's bytes. */
static bool put_named(cnt_outbuf *o, const char *family, const char *label,
                      const uint8_t *name, size_t len, const char *value)
{
    return put(o, "%s{%s=\"", family, label) && put_label(o, name, len) &&
           put(o, "\"} %s\n", value);
}

static bool put_named_u64(cnt_outbuf *o, const char *family,
                          const char *label, const uint8_t *name, size_t len,
                          uint64_t v)
{
    char text[24];

    snprintf(text, sizeof(text), "%" PRIu64, v);
    return put_named(o, family, label, name, len, text);
}

/* Writes the samples of the Stats items that row r matches. */
static bool put_row(cnt_outbuf *o, const metric_row *r,
                    const cnt_metrics_snapshot *snap)
{
    for (size_t i = 0; i < snap->nitems; i++) {
        const cnt_metrics_item *it = &snap->items[i];
        char value[32];

        if (!row_matches(r, it->name))
            continue;
        if (r->micro)
            snprintf(value, sizeof(value), "%" PRIu64 ".%06" PRIu64,
                     it->value / 1000000, it->value % 1000000);
        else
            snprintf(value, sizeof(value), "%" PRIu64, it->value);
        bool ok;
        if (r->label == NULL)
            ok = put(o, "%s %s\n", r->family, value);
        else {
            const char *lv = r->prefix ? it->name + strlen(r->item)
                                       : r->label_value;
            ok = put_named(o, r->family, r->label, (const uint8_t *)lv,
                           strlen(lv), value);
        }
        if (!ok)
            return false;
        if (!r->prefix)
            break;
    }
    return true;
}

/* The node's figures that Stats does not have. */
static bool put_node(cnt_outbuf *o, const cnt_node_view *n)
{
    return put_head(o, "counter_throttle_pool", GAUGE,
                    "Capacity not reserved: the pool the tenants share.") &&
           put(o, "counter_throttle_pool %" PRIu32 "\n", n->pool) &&
           put_head(o, "counter_throttle_pool_used", GAUGE,
                    "Units of the pool charged in the current second.") &&
           put(o, "counter_throttle_pool_used %" PRIu32 "\n", n->pool_used) &&
           put_head(o, "counter_throttle_reserved", GAUGE,
                    "Sum of the configured tenants' reserves.") &&
           put(o, "counter_throttle_reserved %" PRIu32 "\n",
               n->reserved_sum);
}

/* The per-group families, one per figure. */
static bool put_groups(cnt_outbuf *o, const cnt_metrics_snapshot *snap)
{
    static const struct {
        const char *family, *help;
    } fams[] = {
        {"counter_group_maximum", "The configured group's maximum."},
        {"counter_group_consumption",
         "Resources of the group's counter held now."},
        {"counter_group_waiting",
         "Requests waiting in the group's queue now."},
    };

    for (size_t f = 0; f < 3; f++) {
        if (!put_head(o, fams[f].family, GAUGE, fams[f].help))
            return false;
        for (size_t i = 0; i < snap->ngroups; i++) {
            const cnt_metrics_group *g = &snap->groups[i];
            uint32_t v = f == 0 ? g->maximum
                         : f == 1 ? g->consumption : g->waiting;
            if (!put_named_u64(o, fams[f].family, "group", g->name, g->len,
                               v))
                return false;
        }
    }
    return true;
}

/* The tenants' throttled charges split by the reason their answers gave:
 * one series per configured tenant and reason, so the count stays
 * bounded by the configuration. */
static bool put_tenant_reasons(cnt_outbuf *o,
                               const cnt_metrics_snapshot *snap)
{
    static const char family[] = "counter_tenant_throttled_by_reason_total";

    if (!put_head(o, family, COUNTER,
                  "The tenant's throttled charges since its record exists, "
                  "by reason."))
        return false;
    for (size_t i = 0; i < snap->ntenants; i++) {
        const cnt_metrics_tenant *t = &snap->tenants[i];
        for (uint8_t r = CNT_TREASON_NONE + 1; r <= CNT_TREASON_MAX; r++) {
            if (!put(o, "%s{tenant=\"", family) ||
                !put_label(o, t->name, t->len) ||
                !put(o, "\",reason=\"%s\"} %" PRIu64 "\n",
                     cnt_treason_name(r), t->throttled_by[r]))
                return false;
        }
    }
    return true;
}

/* The per-tenant families, one per figure; an unlimited hard limit is
 * +Inf. */
static bool put_tenants(cnt_outbuf *o, const cnt_metrics_snapshot *snap)
{
    static const struct {
        const char *family, *help;
        int type;
    } fams[] = {
        {"counter_tenant_used", "Units the tenant charged this second.",
         GAUGE},
        {"counter_tenant_reserved", "The tenant's reserve, units per second.",
         GAUGE},
        {"counter_tenant_hard_limit",
         "The tenant's hard limit, units per second.", GAUGE},
        {"counter_tenant_throttled_total",
         "The tenant's throttled charges since its record exists.", COUNTER},
        {"counter_tenant_units_total",
         "The tenant's allowed units since its record exists.", COUNTER},
    };

    for (size_t f = 0; f < 5; f++) {
        if (!put_head(o, fams[f].family, fams[f].type, fams[f].help))
            return false;
        for (size_t i = 0; i < snap->ntenants; i++) {
            const cnt_metrics_tenant *t = &snap->tenants[i];
            const cnt_tenant_view *v = &t->view;
            bool ok;
            if (f == 2 && v->hard_limit == CNT_HARD_LIMIT_UNLIMITED)
                ok = put_named(o, fams[f].family, "tenant", t->name, t->len,
                               "+Inf");
            else
                ok = put_named_u64(o, fams[f].family, "tenant", t->name,
                                   t->len,
                                   f == 0 ? v->used : f == 1 ? v->reserved
                                   : f == 2 ? v->hard_limit
                                   : f == 3 ? v->throttled : v->units);
            if (!ok)
                return false;
        }
    }
    return put_tenant_reasons(o, snap);
}

/* The busiest rate-limit names of the last whole second, at most
 * CNT_METRICS_BUSIEST of them. */
static bool put_busiest(cnt_outbuf *o, const cnt_metrics_snapshot *snap)
{
    static const char family[] = "counter_limit_busiest_checks";
    static const char *const kinds[CNT_LIMITS_KINDS] = {
        [CNT_LIMITS_TTL] = "ttl", [CNT_LIMITS_WINDOW] = "window",
        [CNT_LIMITS_GCRA] = "gcra",
    };

    if (!put_head(o, family, GAUGE,
                  "Checks in the last whole second of the busiest "
                  "rate-limit names (at most 10)."))
        return false;
    for (size_t i = 0; i < snap->nbusiest; i++) {
        const cnt_busy_name *b = &snap->busiest[i];
        if (!put(o, "%s{kind=\"%s\",name=\"", family,
                 b->kind < CNT_LIMITS_KINDS ? kinds[b->kind] : "?") ||
            !put_label(o, b->name, b->name_len) ||
            !put(o, "\"} %" PRIu32 "\n", b->checks))
            return false;
    }
    return true;
}

/* Writes the exposition; see metrics.h. */
bool cnt_metrics_write(cnt_outbuf *o, const cnt_metrics_snapshot *snap)
{
    for (size_t i = 0; i < NROWS; i++) {
        const metric_row *r = &rows[i];
        if ((i == 0 || strcmp(rows[i - 1].family, r->family) != 0) &&
            !put_head(o, r->family, r->type, r->help))
            return false;
        if (!put_row(o, r, snap))
            return false;
    }
    if (snap->has_node && !put_node(o, &snap->node))
        return false;
    return put_groups(o, snap) && put_tenants(o, snap) &&
           put_busiest(o, snap);
}

/* The nearest leases; see metrics.h. Time left in seconds with the ms the
 * deadlines have, never below 0 (a lease due and about to expire). */
bool cnt_metrics_write_leases(cnt_outbuf *o, const cnt_lease_top *top,
                              uint64_t now_ns)
{
    static const char family[] = "counter_lease_seconds_left";

    if (!put_head(o, family, GAUGE,
                  "Seconds until each of the leases nearest to expiry "
                  "expires, by counter name and lease id."))
        return false;
    for (uint32_t i = 0; i < top->count; i++) {
        const cnt_lease_entry *e = &top->e[i];
        uint64_t at_ns = e->deadline_ms * UINT64_C(1000000);
        uint64_t left_ms = at_ns > now_ns ? (at_ns - now_ns) / 1000000u : 0;
        if (!put(o, "%s{name=\"", family) ||
            !put_label(o, e->name, e->name_len) ||
            !put(o, "\",lease_id=\"%" PRIu64 "\"} %" PRIu64 ".%03" PRIu64
                 "\n", e->lease_id, left_ms / 1000, left_ms % 1000))
            return false;
    }
    return true;
}
