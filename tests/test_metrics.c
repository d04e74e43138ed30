/* test_metrics.c: the Prometheus exposition (engine/server/metrics.c):
 * every Stats item has a family, each family has one # HELP and one # TYPE
 * line with counters ending in _total and gauges not, names in labels are
 * escaped into valid text, a snapshot holds the configured groups and
 * tenants only, and a failed allocation while collecting leaks nothing. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/core/holdings.h"
#include "engine/server/metrics.h"
#include "tests/engine_fake.h"

/* The text in o, NUL-terminated (a copy the caller frees). */
static char *text_of(cnt_outbuf *o)
{
    size_t n = cnt_outbuf_pending(o);
    char *t = malloc(n + 1);

    assert_non_null(t);
    memcpy(t, cnt_outbuf_data(o), n);
    t[n] = '\0';
    return t;
}

static char *write_text(const cnt_metrics_snapshot *snap)
{
    cnt_outbuf o;

    assert_true(cnt_outbuf_init(&o, 1024));
    assert_true(cnt_metrics_write(&o, snap));
    char *t = text_of(&o);
    cnt_outbuf_destroy(&o);
    return t;
}

static void name_item(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    (void)value;
    if (!cnt_metrics_item_known(name))
        fail_msg("Stats item %s has no family in the exposition", name);
}

static void test_every_item_known(void **state)
{
    (void)state;
    cnt_stats_sources none = {0};

    cnt_stats_report(&none, name_item, NULL);
    assert_false(cnt_metrics_item_known("no_such_item"));
}

/* Checks the text's structure: each # TYPE line once per family, right
 * after its # HELP, counters named *_total and gauges not, and every
 * sample line of a family declared before it. */
static void check_structure(const char *text)
{
    char *copy = strdup(text);
    char *save = NULL;
    char families[256][80];
    size_t nf = 0;
    char help_of[80] = "";

    assert_non_null(copy);
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char fam[80], type[16];
        if (sscanf(line, "# HELP %79s", fam) == 1) {
            snprintf(help_of, sizeof(help_of), "%s", fam);
            continue;
        }
        if (sscanf(line, "# TYPE %79s %15s", fam, type) == 2) {
            assert_string_equal(fam, help_of);
            for (size_t i = 0; i < nf; i++)
                if (strcmp(families[i], fam) == 0)
                    fail_msg("family %s declared twice", fam);
            size_t len = strlen(fam);
            bool total = len > 6 && strcmp(fam + len - 6, "_total") == 0;
            if (strcmp(type, "counter") == 0)
                assert_true(total);
            else {
                assert_string_equal(type, "gauge");
                assert_false(total);
            }
            assert_true(strncmp(fam, "counter_", 8) == 0);
            assert_true(nf < 256);
            snprintf(families[nf++], sizeof(families[0]), "%s", fam);
            continue;
        }
        size_t n = strcspn(line, "{ ");
        assert_true(nf > 0);
        assert_int_equal(n, strlen(families[nf - 1]));
        assert_memory_equal(line, families[nf - 1], n);
    }
    free(copy);
}

static void test_write_from_items(void **state)
{
    (void)state;
    static cnt_metrics_snapshot snap;
    cnt_stats_sources none = {0};
    cnt_metrics_sources src = {.stats = none};

    assert_true(cnt_metrics_collect(&src, &snap));
    for (size_t i = 0; i < snap.nitems; i++) {
        if (strcmp(snap.items[i].name, "command:acquire") == 0)
            snap.items[i].value = 42;
        if (strcmp(snap.items[i].name, "last_gc_elapsed") == 0)
            snap.items[i].value = 1500;     /* microseconds */
        if (strcmp(snap.items[i].name, "window_limited") == 0)
            snap.items[i].value = 7;
    }
    char *t = write_text(&snap);
    check_structure(t);
    assert_non_null(strstr(t, "\ncounter_commands_total{opcode=\"acquire\"} 42\n"));
    assert_non_null(strstr(t, "\ncounter_gc_last_duration_seconds 0.001500\n"));
    assert_non_null(strstr(t, "\ncounter_limit_limited_total{kind=\"window\"} 7\n"));
    assert_non_null(strstr(t, "\ncounter_used_memory_bytes 0\n"));
    /* No throttle: no node figures; the group and tenant families are
     * declared without samples. */
    assert_null(strstr(t, "counter_throttle_pool "));
    assert_non_null(strstr(t, "# TYPE counter_group_waiting gauge\n"));
    free(t);
    cnt_metrics_snapshot_free(&snap);
}

static void test_labels_escaped(void **state)
{
    (void)state;
    static cnt_metrics_snapshot snap;
    static const uint8_t odd[] = "a\"b\\c\nd%e\xc3\xa9\x01";
    cnt_metrics_group g = {odd, sizeof(odd) - 1, 3, 2, 1};
    uint8_t tname[] = "acme";
    cnt_metrics_tenant tn = {tname, 4, {.reserved = 200,
                                        .hard_limit = 0xffffffffu,
                                        .used = 12, .throttled = 5,
                                        .units = 99},
                          {0, 2, 0, 3}};

    memset(&snap, 0, sizeof(snap));
    snap.groups = &g;
    snap.ngroups = 1;
    snap.tenants = &tn;
    snap.ntenants = 1;
    snap.has_node = true;
    snap.node.pool = 800;
    char *t = write_text(&snap);
    check_structure(t);
    assert_non_null(strstr(t, "\ncounter_group_maximum{group="
                              "\"a\\\"b\\\\c\\nd%25e%C3%A9%01\"} 3\n"));
    assert_non_null(strstr(t, "consumption{group=\"a\\\"b"));
    assert_non_null(strstr(t, "\ncounter_tenant_used{tenant=\"acme\"} 12\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_reserved{tenant=\"acme\"} 200\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_hard_limit{tenant=\"acme\"} +Inf\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_throttled_total{tenant=\"acme\"} 5\n"));
    assert_non_null(strstr(t, "\n# TYPE counter_tenant_throttled_by_reason_total"
                              " counter\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_throttled_by_reason_total{"
                              "tenant=\"acme\",reason=\"reserve\"} 2\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_throttled_by_reason_total{"
                              "tenant=\"acme\",reason=\"pool_empty\"} 0\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_throttled_by_reason_total{"
                              "tenant=\"acme\",reason=\"hard_limit\"} 3\n"));
    assert_non_null(strstr(t, "\ncounter_throttle_pool 800\n"));
    free(t);
}

typedef struct parts {
    cnt_limits *limits;
    cnt_table *table;
    cnt_throttle *throttle;
    cnt_groups *groups;
    cnt_holdings h;
    /* Windows and the throttle's second turn with the clock; a real one
     * would let a slow run (valgrind) cross a second between charging and
     * collecting. */
    cnt_fake_clock clock;
} parts;

static void parts_new(parts *p)
{
    cnt_fake_clock_init(&p->clock, 1700000000000ull);
    cnt_table_config tc = {.buckets = 64, .interval = 10,
                           .clock = &p->clock.clock};
    cnt_throttle_config thc = {.buckets = 64, .clock = &p->clock.clock};
    cnt_group g = {.maximum = 3};

    /* Rate-limit names checked in one second, looked at in the next. */
    cnt_limits_config lc = {.buckets = 64, .clock = &p->clock.clock};
    p->limits = cnt_limits_new(&lc);
    assert_non_null(p->limits);
    cnt_fake_clock_advance(&p->clock, 1000 - 1700000000000ull % 1000 + 1);
    static const struct { const char *name; int times; } checks[] = {
        {"api", 3}, {"a\"b", 1},
    };
    for (size_t i = 0; i < 2; i++) {
        cnt_check_request a = {
            .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 10, .count = 10,
            .cost = 1, .period_ns = 1000000000ull,
            .name = (const uint8_t *)checks[i].name,
            .name_len = (uint16_t)strlen(checks[i].name),
        };
        cnt_check_result r;
        for (int k = 0; k < checks[i].times; k++)
            assert_int_equal(cnt_limits_check(p->limits, &a, &r),
                             CNT_STATUS_OK);
    }
    cnt_fake_clock_advance(&p->clock, 1000);
    p->table = cnt_table_new(&tc);
    p->throttle = cnt_throttle_new(&thc);
    p->groups = cnt_groups_new();
    assert_non_null(p->table);
    assert_non_null(p->throttle);
    assert_non_null(p->groups);
    assert_true(cnt_groups_set(p->groups, (const uint8_t *)"jobs", 4, &g));
    g.maximum = 1;
    assert_true(cnt_groups_set(p->groups, (const uint8_t *)"backup", 6, &g));
    cnt_holdings_init(&p->h);
    assert_int_equal(cnt_table_acquire(p->table, &p->h,
                                       (const uint8_t *)"jobs", 4, 2, 3),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_capacity(p->throttle, 1000),
                     CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_set_tenant(p->throttle,
                                             (const uint8_t *)"acme", 4,
                                             true, 100, true, 500),
                     CNT_STATUS_OK);
    cnt_throttle_answer a;
    /* A tenant nobody configured: charged, so it has a record, but it
     * gets no series. */
    assert_int_equal(cnt_throttle_charge(p->throttle,
                                         (const uint8_t *)"drive-by", 8, 5,
                                         false, &a), CNT_STATUS_OK);
    assert_int_equal(cnt_throttle_charge(p->throttle,
                                         (const uint8_t *)"acme", 4, 7,
                                         false, &a), CNT_STATUS_OK);
    /* Over acme's hard limit: one charge throttled for that reason. */
    assert_int_equal(cnt_throttle_charge(p->throttle,
                                         (const uint8_t *)"acme", 4, 600,
                                         false, &a), CNT_STATUS_OK);
    assert_int_equal(a.reason, CNT_TREASON_HARD_LIMIT);
}

static void parts_free(parts *p)
{
    cnt_table_release_all(p->table, &p->h);
    cnt_holdings_destroy(&p->h);
    cnt_table_free(p->table);
    cnt_throttle_free(p->throttle);
    cnt_limits_free(p->limits);
    cnt_groups_free(p->groups);
}

static void test_collect_configured_only(void **state)
{
    (void)state;
    static cnt_metrics_snapshot snap;
    parts p;

    parts_new(&p);
    cnt_metrics_sources src = {
        .stats = {.table = p.table, .throttle = p.throttle},
        .table = p.table, .throttle = p.throttle, .groups = p.groups,
        .limits = p.limits,
    };
    assert_true(cnt_metrics_collect(&src, &snap));
    assert_int_equal(snap.nbusiest, 2);
    assert_int_equal(snap.ngroups, 2);
    assert_int_equal(snap.ntenants, 1);
    char *t = write_text(&snap);
    check_structure(t);
    assert_non_null(strstr(t, "\ncounter_group_consumption{group=\"jobs\"} 2\n"));
    assert_non_null(strstr(t, "\ncounter_group_consumption{group=\"backup\"} 0\n"));
    assert_non_null(strstr(t, "\ncounter_group_maximum{group=\"backup\"} 1\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_used{tenant=\"acme\"} 7\n"));
    assert_non_null(strstr(t, "\ncounter_tenant_hard_limit{tenant=\"acme\"} 500\n"));
    assert_null(strstr(t, "drive-by"));
    assert_non_null(strstr(t, "\ncounter_tenant_throttled_by_reason_total{"
                              "tenant=\"acme\",reason=\"hard_limit\"} 1\n"));
    assert_non_null(strstr(t, "\ncounter_throttle_throttled_by_reason_total{"
                              "reason=\"hard_limit\"} 1\n"));
    assert_non_null(strstr(t, "\ncounter_throttle_throttled_by_reason_total{"
                              "reason=\"reserve\"} 0\n"));
    assert_non_null(strstr(t, "\ncounter_throttle_used 12\n"));
    /* The busiest rate-limit names of the second before, busiest first. */
    assert_non_null(strstr(t, "\n# TYPE counter_limit_busiest_checks gauge\n"
                              "counter_limit_busiest_checks{kind=\"gcra\","
                              "name=\"api\"} 3\n"
                              "counter_limit_busiest_checks{kind=\"gcra\","
                              "name=\"a\\\"b\"} 1\n"));
    assert_non_null(strstr(t, "\ncounter_objects 1\n"));
    free(t);
    cnt_metrics_snapshot_free(&snap);
    parts_free(&p);
}

static void test_collect_out_of_memory(void **state)
{
    (void)state;
    static cnt_metrics_snapshot snap;
    parts p;

    parts_new(&p);
    cnt_metrics_sources src = {
        .table = p.table, .throttle = p.throttle, .groups = p.groups,
        .limits = p.limits,
    };
    /* The busiest-names listing of a second is computed once and kept by
     * the limits (their memory until they are freed): one collection
     * first, so that the ones below find it made. Its own failures are
     * test_limits.c's (test_busiest_cache_out_of_memory). */
    assert_true(cnt_metrics_collect(&src, &snap));
    cnt_metrics_snapshot_free(&snap);
    /* Each allocation of a collection fails in turn; whatever fails,
     * nothing stays allocated. */
    bool done = false;
    for (unsigned long n = 1; !done && n < 64; n++) {
        long before = cnt_fake_alloc_live();
        cnt_fake_alloc_fail_at(n, 0);
        bool ok = cnt_metrics_collect(&src, &snap);
        bool injected = cnt_fake_alloc_injected();
        cnt_fake_alloc_fail_at(0, 0);
        if (ok) {
            assert_false(injected);
            cnt_metrics_snapshot_free(&snap);
            done = true;
        }
        assert_int_equal(cnt_fake_alloc_live(), before);
    }
    assert_true(done);
    parts_free(&p);
}

/* The nearest leases of a survey: one gauge each, nearest first, with the
 * name escaped like any label, its lease id, and the seconds left to the
 * ms (0 for one already due); an empty top writes the family alone. */
static void test_write_leases(void **state)
{
    (void)state;
    cnt_lease_top top;
    cnt_outbuf o;
    const uint64_t now_ns = UINT64_C(5000) * 1000000u + 250000u;

    cnt_lease_top_init(&top, 4);
    assert_true(cnt_lease_top_offer(&top, 6500, 42, 1,
                                    (const uint8_t *)"job", 3));
    assert_true(cnt_lease_top_offer(&top, 5000, 7, 2,
                                    (const uint8_t *)"a\"b", 3));
    assert_true(cnt_lease_top_offer(&top, 65000, 9, 1,
                                    (const uint8_t *)"far", 3));
    assert_true(cnt_outbuf_init(&o, 256));
    assert_true(cnt_metrics_write_leases(&o, &top, now_ns));
    char *t = text_of(&o);
    const char *due = strstr(t, "\ncounter_lease_seconds_left{name=\"a\\\"b\","
                                "lease_id=\"7\"} 0.000\n");
    const char *job = strstr(t, "\ncounter_lease_seconds_left{name=\"job\","
                                "lease_id=\"42\"} 1.499\n");
    const char *far = strstr(t, "\ncounter_lease_seconds_left{name=\"far\","
                                "lease_id=\"9\"} 59.999\n");
    assert_non_null(due);
    assert_non_null(job);
    assert_non_null(far);
    assert_true(due < job && job < far);
    assert_non_null(strstr(t, "# TYPE counter_lease_seconds_left gauge\n"));
    check_structure(t);
    free(t);
    cnt_outbuf_destroy(&o);
    cnt_lease_top_clear(&top);

    assert_true(cnt_outbuf_init(&o, 256));
    assert_true(cnt_metrics_write_leases(&o, &top, now_ns));
    t = text_of(&o);
    assert_null(strstr(t, "counter_lease_seconds_left{"));
    assert_non_null(strstr(t, "# HELP counter_lease_seconds_left "));
    free(t);
    cnt_outbuf_destroy(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_known),
        cmocka_unit_test(test_write_from_items),
        cmocka_unit_test(test_labels_escaped),
        cmocka_unit_test(test_collect_configured_only),
        cmocka_unit_test(test_collect_out_of_memory),
        cmocka_unit_test(test_write_leases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
