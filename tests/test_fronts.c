/* test_fronts.c: the seam between protocol fronts and the core, driven the
 * way a front other than the binary one drives it: no request bytes, no
 * binary codec. Two sessions on two pretend workers (each its own wheel and
 * environment; grants cross between them through a mailbox the test
 * empties) take turns on one group's FIFO queue through the seam's calls;
 * events come back through the session's own event writer, and the binary
 * front's output stays empty. A GCRA check goes straight to the limits
 * core, as a front calls it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/server/session.h"
#include "tests/engine_fake.h"

#define T0_MS UINT64_C(1700000000000)
#define WORKERS 2
#define MAX_EVENTS 8
#define MAX_MAIL 8

/* One event as a front hears of it. */
typedef struct heard {
    uint8_t code;
    uint64_t lease_id;
    uint32_t value;
    uint32_t opaque;
    char name[16];
} heard;

/* A pretend worker: its environment and wheel, and its mailbox. */
typedef struct worker {
    cnt_session_env env;
    cnt_wheel wheel;
    cnt_ticket *mail[MAX_MAIL];
    size_t nmail;
} worker;

typedef struct fixture {
    cnt_fake_clock clock;
    cnt_table *table;
    cnt_limits *limits;
    cnt_groups *groups;
    cnt_stats *stats;
    worker w[WORKERS];
    cnt_session s[WORKERS];         /* session i lives on worker i */
    heard events[WORKERS][MAX_EVENTS];
    size_t nevents[WORKERS];
} fixture;

static fixture *the_fixture;

/* The test front's event writer: remembers the event for the session's
 * worker, writes no bytes. */
static void hear(cnt_session *s, uint8_t code, const cnt_ticket *k,
                 uint64_t lease_id, uint32_t value)
{
    fixture *f = the_fixture;
    size_t i = (size_t)(s - f->s);

    assert_true(i < WORKERS);
    assert_true(f->nevents[i] < MAX_EVENTS);
    heard *h = &f->events[i][f->nevents[i]++];
    h->code = code;
    h->lease_id = lease_id;
    h->value = value;
    h->opaque = k->opaque;
    assert_true(k->name_len < sizeof(h->name));
    memcpy(h->name, k->name, k->name_len);
    h->name[k->name_len] = '\0';
}

/* The table's grant sink: posts the ticket to its owner's worker. */
static void post(void *ctx, cnt_ticket *k)
{
    fixture *f = ctx;
    worker *w = &f->w[k->worker];

    assert_true(w->nmail < MAX_MAIL);
    w->mail[w->nmail++] = k;
}

/* Worker i takes its mail, as its loop would. */
static void run_mailbox(fixture *f, size_t i)
{
    worker *w = &f->w[i];

    for (size_t m = 0; m < w->nmail; m++)
        cnt_session_deliver(&w->env, w->mail[m]);
    w->nmail = 0;
}

/* Moves the clock on by ms and fires what fell due on every wheel. */
static void advance(fixture *f, uint64_t ms)
{
    cnt_fake_clock_advance(&f->clock, ms);
    uint64_t now = cnt_clock_mono_ns(&f->clock.clock);
    for (size_t i = 0; i < WORKERS; i++)
        cnt_wheel_advance(&f->w[i].wheel, now, cnt_session_fire,
                          &f->w[i].env);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    the_fixture = f;
    cnt_fake_clock_init(&f->clock, T0_MS);
    cnt_table_config tc = { .buckets = 64, .interval = 10,
                            .clock = &f->clock.clock };
    f->table = cnt_table_new(&tc);
    cnt_limits_config lc = { .buckets = 64, .clock = &f->clock.clock };
    f->limits = cnt_limits_new(&lc);
    f->groups = cnt_groups_new();
    f->stats = cnt_stats_new(WORKERS);
    assert_non_null(f->table);
    assert_non_null(f->limits);
    assert_non_null(f->groups);
    assert_non_null(f->stats);
    cnt_group g = { .maximum = 1, .wait_ms = 5000, .lease_ms = 2000 };
    assert_true(cnt_groups_set(f->groups, (const uint8_t *)"abc", 3, &g));
    cnt_table_set_grant_sink(f->table, &(cnt_grant_sink){ post, f });
    for (size_t i = 0; i < WORKERS; i++) {
        worker *w = &f->w[i];
        cnt_wheel_init(&w->wheel, cnt_clock_mono_ns(&f->clock.clock));
        w->env = (cnt_session_env){
            .table = f->table, .limits = f->limits, .groups = f->groups,
            .max_waits = 4, .wheel = &w->wheel, .worker = (uint16_t)i,
            .stats = f->stats, .slot = cnt_stats_slot_get(f->stats,
                                                          (unsigned)i),
        };
        assert_true(cnt_session_init(&f->s[i], &w->env));
        f->s[i].event = hear;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    for (size_t i = 0; i < WORKERS; i++) {
        /* The binary front's output was never written to. */
        assert_int_equal(cnt_outbuf_pending(&f->s[i].out), 0);
        cnt_session_end(&f->s[i]);
    }
    for (size_t i = 0; i < WORKERS; i++) {
        run_mailbox(f, i);          /* orphans of ended sessions */
        cnt_wheel_destroy(&f->w[i].wheel);
    }
    cnt_wait_stats ws;
    cnt_table_get_wait_stats(f->table, &ws);
    assert_int_equal(ws.waiting, 0);
    assert_int_equal(ws.leases, 0);
    cnt_stats_free(f->stats);
    cnt_groups_free(f->groups);
    cnt_limits_free(f->limits);
    cnt_table_free(f->table);
    free(f);
    return 0;
}

/* A wait_acquire on group "abc" through the seam: the group's maximum,
 * wait and lease apply. */
static cnt_status wait_abc(fixture *f, size_t i, uint32_t opaque,
                           cnt_session_wait_outcome *o)
{
    cnt_session_wait_args a = {
        .name = (const uint8_t *)"abc", .name_len = 3, .resources = 1,
        .maximum = 0, .wait_ms = CNT_USE_GROUP_DEFAULT,
        .lease_ms = CNT_USE_GROUP_DEFAULT, .opaque = opaque,
    };
    return cnt_session_wait_acquire(&f->s[i], NULL, &a, o);
}

/* Session 0 holds "abc", session 1 on the other worker queues behind it;
 * 0's release grants 1 on 1's worker, whose front hears "granted" with a
 * fresh lease id; 1's renew and release work, and a second request of 0
 * for the same name is refused while the first is active. */
static void test_wait_grant_across_workers(void **state)
{
    fixture *f = *state;
    cnt_session_wait_outcome o0, o1, again;
    uint32_t returned = 99;

    assert_int_equal(wait_abc(f, 0, 10, &o0), CNT_STATUS_OK);
    assert_true(o0.granted);
    assert_int_equal(o0.consumption, 1);
    assert_true(o0.lease_id != 0);
    assert_int_equal(wait_abc(f, 0, 11, &again), CNT_STATUS_ALREADY_ACTIVE);

    assert_int_equal(wait_abc(f, 1, 20, &o1), CNT_STATUS_OK);
    assert_false(o1.granted);
    assert_int_equal(o1.position, 1);
    assert_int_equal(f->nevents[1], 0);

    assert_int_equal(cnt_session_wait_release(&f->s[0],
                                              (const uint8_t *)"abc", 3,
                                              &returned), CNT_STATUS_OK);
    assert_int_equal(returned, 1);
    /* Decided on worker 0, told on worker 1 once its loop takes the mail. */
    assert_int_equal(f->w[1].nmail, 1);
    assert_int_equal(f->nevents[1], 0);
    run_mailbox(f, 1);
    assert_int_equal(f->nevents[1], 1);
    heard *h = &f->events[1][0];
    assert_int_equal(h->code, CNT_EVENT_GRANTED);
    assert_string_equal(h->name, "abc");
    assert_int_equal(h->opaque, 20);
    assert_int_equal(h->value, 1);
    assert_true(h->lease_id > o0.lease_id);
    assert_int_equal(f->nevents[0], 0);

    uint64_t renewed = 0;
    assert_int_equal(cnt_session_renew(&f->s[1], (const uint8_t *)"abc", 3,
                                       CNT_USE_GROUP_DEFAULT, &renewed),
                     CNT_STATUS_OK);
    assert_int_equal(renewed, h->lease_id);
    assert_int_equal(cnt_session_wait_release(&f->s[1],
                                              (const uint8_t *)"abc", 3,
                                              &returned), CNT_STATUS_OK);
    assert_int_equal(returned, 1);
    assert_int_equal(cnt_session_wait_release(&f->s[1],
                                              (const uint8_t *)"abc", 3,
                                              &returned),
                     CNT_STATUS_NOT_ACQUIRED);
}

/* A renewal is the hot path of a held lease: it looks the ticket up,
 * sets the lease under the counter's lock and re-arms the timer in place,
 * and allocates nothing (every allocation failing changes nothing). */
static void test_renew_allocates_nothing(void **state)
{
    fixture *f = *state;
    cnt_session_wait_outcome o;
    uint32_t returned = 0;

    assert_int_equal(wait_abc(f, 0, 30, &o), CNT_STATUS_OK);
    assert_true(o.granted);
    cnt_fake_alloc_fail_at(1, 1);
    for (uint32_t ms = 100; ms <= 300; ms += 100) {
        uint64_t renewed = 0;
        assert_int_equal(cnt_session_renew(&f->s[0], (const uint8_t *)"abc",
                                           3, ms, &renewed),
                         CNT_STATUS_OK);
        assert_int_equal(renewed, o.lease_id);
    }
    bool allocated = cnt_fake_alloc_injected();
    cnt_fake_alloc_fail_at(0, 0);
    assert_false(allocated);
    /* The last renewal counts: 300 ms from now, not the group's 2 s. */
    advance(f, 299);
    assert_int_equal(f->nevents[0], 0);
    advance(f, 2);
    assert_int_equal(f->nevents[0], 1);
    assert_int_equal(f->events[0][0].code, CNT_EVENT_LEASE_EXPIRED);
    assert_int_equal(cnt_session_wait_release(&f->s[0],
                                              (const uint8_t *)"abc", 3,
                                              &returned),
                     CNT_STATUS_LEASE_EXPIRED);
}

/* Deadlines come back through the front too: a queued request times out
 * at the group's wait, a grant's lease expires at the group's lease (and
 * the expiry is acknowledged by the release). */
static void test_timeout_and_expiry_events(void **state)
{
    fixture *f = *state;
    cnt_session_wait_outcome o0, o1;
    uint32_t returned = 0;

    assert_int_equal(wait_abc(f, 0, 1, &o0), CNT_STATUS_OK);
    assert_true(o0.granted);
    assert_int_equal(wait_abc(f, 1, 2, &o1), CNT_STATUS_OK);
    assert_false(o1.granted);

    advance(f, 2001);               /* the lease (2 s) ends first */
    assert_int_equal(f->nevents[0], 1);
    assert_int_equal(f->events[0][0].code, CNT_EVENT_LEASE_EXPIRED);
    assert_int_equal(f->events[0][0].lease_id, o0.lease_id);
    /* The expiry handed the slot to the queued request on worker 1. */
    run_mailbox(f, 1);
    assert_int_equal(f->nevents[1], 1);
    assert_int_equal(f->events[1][0].code, CNT_EVENT_GRANTED);
    assert_int_equal(cnt_session_wait_release(&f->s[0],
                                              (const uint8_t *)"abc", 3,
                                              &returned),
                     CNT_STATUS_LEASE_EXPIRED);

    /* Worker 0 asks again and waits; worker 1 holds on past the wait. */
    assert_int_equal(wait_abc(f, 0, 3, &o0), CNT_STATUS_OK);
    assert_false(o0.granted);
    uint64_t id = 0;
    for (int i = 0; i < 5; i++) {
        advance(f, 1000);
        assert_int_equal(cnt_session_renew(&f->s[1],
                                           (const uint8_t *)"abc", 3,
                                           CNT_USE_GROUP_DEFAULT, &id),
                         CNT_STATUS_OK);
    }
    advance(f, 1);
    assert_int_equal(f->nevents[0], 2);
    assert_int_equal(f->events[0][1].code, CNT_EVENT_TIMED_OUT);
    assert_int_equal(f->events[0][1].opaque, 3);
    assert_int_equal(f->nevents[1], 1);
}

/* A GCRA check is the limits core's call, the same one the binary
 * handler makes: 2 per second with a burst of 2 allows three at once (the
 * limit is the burst plus one), then limits with the time to wait, at
 * most the emission interval of half a second. */
static void test_gcra_through_the_core(void **state)
{
    fixture *f = *state;
    cnt_check_request a = {
        .opcode = CNT_OP_GCRA_CHECK, .limit_or_burst = 2, .count = 2,
        .cost = 1, .period_ns = UINT64_C(1000000000),
        .name = (const uint8_t *)"api", .name_len = 3,
    };
    cnt_check_result r;

    for (int i = 0; i < 3; i++) {
        assert_int_equal(cnt_limits_check(f->w[1].env.limits, &a, &r),
                         CNT_STATUS_OK);
        assert_int_equal(r.state, CNT_CHECK_ALLOWED);
    }
    assert_int_equal(cnt_limits_check(f->w[1].env.limits, &a, &r),
                     CNT_STATUS_OK);
    assert_int_equal(r.state, CNT_CHECK_LIMITED);
    assert_true(r.retry_after_ns > 0 &&
                r.retry_after_ns <= UINT64_C(500000000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wait_grant_across_workers,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_allocates_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_and_expiry_events,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_gcra_through_the_core,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
