/* test_counterctl_top.c: cmocka tests of the pure half of `counterctl
 * top` (counterctl_top_view.c): names escaped and cut to one column,
 * tables that keep only the busiest rows whatever they are offered, Stats
 * samples that skip what is not a number, rates between two samples, and
 * the report's text, with and without throttling on the server. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "programs/counterctl_top.h"

/* Names: printable ASCII as is, the rest \xHH, too long cut with "...". */
static void test_name(void **state)
{
    char out[CTL_TOP_NAME_SHOWN + 1];
    char longname[100];

    (void)state;
    ctl_top_name((const uint8_t *)"jobs", 4, out);
    assert_string_equal(out, "jobs");
    ctl_top_name((const uint8_t *)"a\nb\\", 4, out);
    assert_string_equal(out, "a\\x0ab\\x5c");
    memset(longname, 'x', sizeof longname);
    ctl_top_name((const uint8_t *)longname, sizeof longname, out);
    assert_int_equal(strlen(out), CTL_TOP_NAME_SHOWN);
    assert_string_equal(out + CTL_TOP_NAME_SHOWN - 3, "...");
    /* An escape never gets split by the cut. */
    memset(longname, '\n', sizeof longname);
    ctl_top_name((const uint8_t *)longname, sizeof longname, out);
    assert_true(strlen(out) <= CTL_TOP_NAME_SHOWN);
    assert_string_equal(out + strlen(out) - 3, "...");
}

/* A table offered many rows keeps the CTL_TOP_ROWS largest, in order,
 * ties by name, and counts everything offered. */
static void test_list(void **state)
{
    ctl_top_list l;
    char name[16];

    (void)state;
    ctl_top_list_clear(&l);
    for (unsigned i = 0; i < 1000; i++) {
        uint64_t key = (i * 7919u) % 1000u;

        snprintf(name, sizeof name, "n%u", (unsigned)key);
        ctl_top_list_add(&l, (const uint8_t *)name, strlen(name), key,
                         (const uint64_t[4]){ key, 1, 2, 3 });
    }
    assert_int_equal(l.seen, 1000);
    assert_int_equal(l.n, CTL_TOP_ROWS);
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.row[i].key, 999 - i);
        assert_int_equal(l.row[i].v[0], 999 - i);
    }
    ctl_top_list_clear(&l);
    ctl_top_list_add(&l, (const uint8_t *)"b", 1, 5,
                     (const uint64_t[4]){ 0 });
    ctl_top_list_add(&l, (const uint8_t *)"a", 1, 5,
                     (const uint64_t[4]){ 0 });
    assert_string_equal(l.row[0].name, "a");
    assert_string_equal(l.row[1].name, "b");
}

/* Stats items: numbers kept, anything else skipped; a bounded sample. */
static void test_stats(void **state)
{
    static ctl_top_stats s;
    uint64_t v;

    (void)state;
    s.n = 0;
    assert_true(ctl_top_stats_add(&s, "objects", 7, "12", 2));
    assert_false(ctl_top_stats_add(&s, "version", 7, "1.2", 3));
    assert_false(ctl_top_stats_add(&s, "big", 3, "18446744073709551616", 20));
    assert_true(ctl_top_stats_add(&s, "max", 3, "18446744073709551615", 20));
    assert_false(ctl_top_stats_add(&s, "empty", 5, "", 0));
    assert_true(ctl_top_stat(&s, "objects", &v));
    assert_int_equal(v, 12);
    assert_true(ctl_top_stat(&s, "max", &v));
    assert_true(v == UINT64_MAX);
    assert_false(ctl_top_stat(&s, "version", &v));
    s.n = 0;
    for (int i = 0; i < CTL_TOP_STATS_MAX + 5; i++)
        (void)ctl_top_stats_add(&s, "x", 1, "1", 1);
    assert_int_equal(s.n, CTL_TOP_STATS_MAX);
}

/* Fills a view with two samples one second apart (or half a second). */
static void two_samples(ctl_top_view *v, double secs)
{
    memset(v, 0, sizeof *v);
    v->server = "127.0.0.1:11215";
    v->interval_ms = 1000;
    ctl_top_stats_add(&v->prev, "command:acquire", 15, "100", 3);
    ctl_top_stats_add(&v->prev, "command:release", 15, "50", 2);
    ctl_top_stats_add(&v->prev, "command:get", 11, "7", 1);
    ctl_top_stats_add(&v->prev, "lease_expirations", 17, "9", 1);
    ctl_top_stats_add(&v->cur, "command:acquire", 15, "130", 3);
    ctl_top_stats_add(&v->cur, "command:release", 15, "60", 2);
    ctl_top_stats_add(&v->cur, "command:get", 11, "7", 1);
    ctl_top_stats_add(&v->cur, "lease_expirations", 17, "3", 1);
    ctl_top_stats_add(&v->cur, "leases", 6, "4", 1);
    ctl_top_stats_add(&v->cur, "objects", 7, "3", 1);
    v->have_prev = true;
    v->secs = secs;
}

/* Rates: growth per second; 0 when an item shrank; -1 when it is
 * missing from a sample or there is no previous sample. */
static void test_rate(void **state)
{
    static ctl_top_view v;

    (void)state;
    two_samples(&v, 0.5);
    assert_true(ctl_top_rate(&v, "command:acquire") == 60.0);
    assert_true(ctl_top_rate(&v, "command:get") == 0.0);
    assert_true(ctl_top_rate(&v, "lease_expirations") == 0.0);
    assert_true(ctl_top_rate(&v, "leases") < 0);
    assert_true(ctl_top_rate(&v, "nothing") < 0);
    v.have_prev = false;
    assert_true(ctl_top_rate(&v, "command:acquire") < 0);
}

/* Renders v into a string the caller frees. */
static char *render(const ctl_top_view *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    ctl_top_render(f, v);
    fclose(f);
    return text;
}

/* The report: node, commands per second (the busiest first), the
 * tables with their rows, tenants' hard limits as "unlimited". */
static void test_render(void **state)
{
    static ctl_top_view v;
    char *text;

    (void)state;
    two_samples(&v, 1.0);
    v.have_node = true;
    v.node = (cnt_node_view){ .capacity = 1000, .used = 250, .pool = 900,
                              .pool_used = 5, .reserved_sum = 100,
                              .tenants = 2, .throttled = 7 };
    v.have_tenants = true;
    v.have_queues = true;
    ctl_top_list_add(&v.queues, (const uint8_t *)"jobs", 4, 3,
                     (const uint64_t[4]){ 2, 3, 0, 0 });
    ctl_top_list_add(&v.counters, (const uint8_t *)"jobs", 4, 2,
                     (const uint64_t[4]){ 2, 2, 0, 0 });
    ctl_top_list_add(&v.tenants, (const uint8_t *)"acme", 4, 40,
                     (const uint64_t[4]){ 40, 100, CNT_HARD_LIMIT_UNLIMITED,
                                          1 });
    text = render(&v);
    assert_non_null(strstr(text, "counterctl top  127.0.0.1:11215  every "
                                 "1000ms\n"));
    assert_non_null(strstr(text, "node      capacity 1000/s  used 250 "
                                 "(25.0%)  pool 900  pool_used 5  "
                                 "reserved_sum 100  tenants 2  throttled "
                                 "7\n"));
    assert_non_null(strstr(text, "commands  40.0/s  (acquire 30.0/s, "
                                 "release 10.0/s)\n"));
    assert_non_null(strstr(text, "  leases 4  lease_expirations/s 0.0\n"));
    assert_non_null(strstr(text, "\nqueues, longest first (1)\n"));
    assert_non_null(strstr(text, "\n  jobs                                "
                                 "        2          3\n"));
    assert_non_null(strstr(text, "\ntenants, most used first (1)\n"));
    assert_non_null(strstr(text, " acme  "));
    assert_non_null(strstr(text, " unlimited "));
    free(text);

    /* A server without throttling (the reference): said, not faked. */
    v.have_node = false;
    v.have_tenants = false;
    v.have_queues = false;
    v.have_prev = false;
    text = render(&v);
    assert_non_null(strstr(text, "node      throttling not offered by this "
                                 "server\n"));
    assert_non_null(strstr(text, "\ntenants: not offered by this server\n"));
    assert_non_null(strstr(text, "commands  -/s\n"));
    assert_non_null(strstr(text, "\nqueues: not offered by this server\n"));
    assert_null(strstr(text, "CONSUMPTION"));
    free(text);
}

/* The leases table: nearest expiry first whatever order they were
 * offered in, lease id and time left; the title counts every lease the
 * server holds; a server without Lease_list is said to lack it. */
static void test_render_leases(void **state)
{
    static ctl_top_view v;
    char *text, want[96];
    const char *near, *far;

    (void)state;
    two_samples(&v, 1.0);
    v.have_leases = true;
    ctl_top_list_add(&v.leases, (const uint8_t *)"far", 3,
                     UINT32_MAX - 9000u,
                     (const uint64_t[4]){ 9000, 7, 2, 0 });
    ctl_top_list_add(&v.leases, (const uint8_t *)"near", 4,
                     UINT32_MAX - 1500u,
                     (const uint64_t[4]){ 1500, 12, 1, 0 });
    text = render(&v);
    assert_non_null(strstr(text, "\nleases about to expire, nearest first "
                                 "(4)\n"));
    assert_non_null(strstr(text, "LEASE_ID    LEFT_MS  RESOURCES\n"));
    near = strstr(text, "\n  near ");
    far = strstr(text, "\n  far ");
    assert_non_null(near);
    assert_non_null(far);
    assert_true(near - text < far - text);
    /* Name, lease id, ms left, resources, in columns. */
    snprintf(want, sizeof want, "\n  %-*s %20s %10s %10s\n",
             CTL_TOP_NAME_SHOWN, "near", "12", "1500", "1");
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "leases and rate-limit names cannot"));
    free(text);

    v.have_leases = false;
    text = render(&v);
    assert_non_null(strstr(text, "\nleases: not offered by this server\n"));
    assert_null(strstr(text, "LEASE_ID"));
    free(text);
}

/* The busiest rate-limit names: busiest first, with their kind and
 * checks; a server without Busiest (the reference) is said so. */
static void test_render_busiest(void **state)
{
    static ctl_top_view v;
    char *text;

    (void)state;
    two_samples(&v, 1.0);
    v.have_busiest = true;
    ctl_top_list_add(&v.busiest, (const uint8_t *)"login", 5, 3,
                     (const uint64_t[4]){ 3, CNT_BUSY_KIND_TTL, 0, 0 });
    ctl_top_list_add(&v.busiest, (const uint8_t *)"api", 3, 120,
                     (const uint64_t[4]){ 120, CNT_BUSY_KIND_GCRA, 0, 0 });
    text = render(&v);
    assert_non_null(strstr(text, "\nbusiest rate-limit names, checks in the "
                                 "last second (2)\n"));
    char *api = strstr(text, "\n  api                              gcra   "
                             "         120\n");
    char *login = strstr(text, "\n  login                            ttl    "
                               "           3\n");
    assert_non_null(api);
    assert_non_null(login);
    assert_true(api < login);
    assert_null(strstr(text, "rate-limit names cannot be listed"));
    free(text);

    v.have_busiest = false;
    text = render(&v);
    assert_non_null(strstr(text, "\nbusiest rate-limit names: not offered by "
                                 "this server\n"));
    assert_null(strstr(text, "CHECKS/S"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_render_leases),
        cmocka_unit_test(test_render_busiest),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
