/* test_waits.c: waiting acquisition on the semaphore counters: immediate
 * grants and their lease ids, queue positions, strict first come first
 * served (no barging, not even by a reference Acquire), grants made by
 * releases of every kind and handed to the sink in order, none while
 * grants are stopped (a server stopping), the ways a ticket ends (cancel,
 * release, timeout, expiry, ended while its grant is in flight), renew,
 * each ticket's own maximum, sums near UINT32_MAX, preconditions,
 * memory_limit and failing allocations, the GC sparing counters with
 * waiters, the listing of queues and the waiting figures; then a random
 * sequence checked step by step against a model of the queue, and threads
 * that race their releases and ends against each other's grants. Time is
 * a fake clock; nothing sleeps. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/core/table.h"
#include "tests/engine_fake.h"
#include "tests/table_hooks.h"

#define T0_MS UINT64_C(1700000000000)  /* a window start for interval 10 */
#define INTERVAL 10u
#define SUNK_MAX 4096

/* One table, a fake clock, two connections' ledgers for the reference
 * commands, and the grants the sink has received, in order. */
typedef struct fixture {
    cnt_fake_clock clock;
    cnt_table *t;
    cnt_holdings a, b;
    cnt_ticket *sunk[SUNK_MAX];
    bool taken[SUNK_MAX];       /* delivered already */
    long at_sink[SUNK_MAX];     /* its counter's consumption then */
    size_t nsunk;
    uint32_t opaque;
    long live;                  /* allocated blocks before the table */
    uint64_t base_memory;       /* used_memory of the empty table */
} fixture;

static long get_of(fixture *f, const cnt_ticket *k);

/* The test's grant sink: records each grant; it arrives alone (its link
 * cleared), marked in flight. */
static void sink_record(void *ctx, cnt_ticket *k)
{
    fixture *f = ctx;

    assert_true(f->nsunk < SUNK_MAX);
    assert_null(STAILQ_NEXT(k, grant_link));
    assert_true(k->flags & CNT_TICKET_IN_FLIGHT);
    f->sunk[f->nsunk] = k;
    f->taken[f->nsunk] = false;
    /* The lock is dropped, nothing has touched the counter since the
     * release that granted k: this is what k's event must report. */
    f->at_sink[f->nsunk] = get_of(f, k);
    f->nsunk++;
}

static uint64_t used_memory(fixture *f)
{
    cnt_map_stats s;

    cnt_table_get_stats(f->t, &s);
    return s.used_memory;
}

static uint64_t objects(fixture *f)
{
    cnt_map_stats s;

    cnt_table_get_stats(f->t, &s);
    return s.objects;
}

static cnt_wait_stats wait_stats(fixture *f)
{
    cnt_wait_stats s;

    cnt_table_get_wait_stats(f->t, &s);
    return s;
}

static fixture *fixture_new(size_t buckets, uint64_t memory_limit)
{
    fixture *f = calloc(1, sizeof *f);

    assert_non_null(f);
    cnt_table_config cfg = { .buckets = buckets, .interval = INTERVAL,
                             .memory_limit = memory_limit,
                             .clock = &f->clock.clock };
    cnt_grant_sink sink = { .fn = sink_record, .ctx = f };

    cnt_fake_clock_init(&f->clock, T0_MS);
    cnt_fake_alloc_fail_at(0, 0);
    f->live = cnt_fake_alloc_live();
    f->t = cnt_table_new(&cfg);
    assert_non_null(f->t);
    cnt_table_set_grant_sink(f->t, &sink);
    cnt_holdings_init(&f->a);
    cnt_holdings_init(&f->b);
    f->base_memory = used_memory(f);
    return f;
}

/* Ends the fixture: every grant was delivered and every ticket ended by
 * the test, so nobody waits and no lease is left; then nothing leaks. */
static void fixture_free(fixture *f)
{
    for (size_t i = 0; i < f->nsunk; i++)
        assert_true(f->taken[i]);
    cnt_wait_stats ws = wait_stats(f);
    assert_int_equal(ws.waiting, 0);
    assert_int_equal(ws.leases, 0);
    cnt_table_release_all(f->t, &f->a);
    cnt_table_release_all(f->t, &f->b);
    cnt_holdings_destroy(&f->a);
    cnt_holdings_destroy(&f->b);
    cnt_table_free(f->t);
    assert_int_equal(cnt_fake_alloc_live(), f->live);
    free(f);
}

static int setup(void **state)
{
    *state = fixture_new(64, 0);
    return 0;
}

static int teardown(void **state)
{
    fixture_free(*state);
    return 0;
}

/* Current consumption of the counter named by len bytes at name, or -1
 * when Get says NOT_FOUND. */
static long get_bytes(fixture *f, const uint8_t *name, uint16_t len)
{
    uint32_t v = 0xdeadbeef;
    cnt_status st = cnt_table_get(f->t, name, len, &v);

    if (st == CNT_STATUS_NOT_FOUND)
        return -1;
    assert_int_equal(st, CNT_STATUS_OK);
    return (long)v;
}

/* Current consumption of name, or -1. */
static long get(fixture *f, const char *name)
{
    return get_bytes(f, (const uint8_t *)name, (uint16_t)strlen(name));
}

/* Current consumption of k's counter, or -1 (a ticket's name carries no
 * NUL). */
static long get_of(fixture *f, const cnt_ticket *k)
{
    return get_bytes(f, k->name, k->name_len);
}

/* What cnt_table_queues reports. */
typedef struct queue_log {
    char name[8][16];
    uint32_t consumption[8], waiting[8];
    unsigned n, calls;
    bool stop;                  /* ask to stop after every record */
} queue_log;

static bool queue_collect(void *ctx, const uint8_t *name, uint16_t len,
                          uint32_t consumption, uint32_t waiting)
{
    queue_log *log = ctx;

    assert_true(log->n < 8);
    assert_true(len < sizeof log->name[0]);
    memcpy(log->name[log->n], name, len);
    log->name[log->n][len] = '\0';
    log->consumption[log->n] = consumption;
    log->waiting[log->n] = waiting;
    log->n++;
    log->calls++;
    return !log->stop;
}

/* How many counters cnt_table_queues lists in one full pass. */
static unsigned queues_listed(fixture *f)
{
    queue_log log = { .n = 0 };
    size_t stripe = 0;

    assert_true(cnt_table_queues(f->t, &stripe, queue_collect, &log));
    assert_int_equal(stripe, CNT_MAP_STRIPES);
    return log.n;
}

/* A reference Acquire through ledger h that must succeed. */
static void hold(fixture *f, cnt_holdings *h, const char *name,
                 uint32_t resources, uint32_t maximum)
{
    assert_int_equal(cnt_table_acquire(f->t, h, (const uint8_t *)name,
                                       (uint16_t)strlen(name), resources,
                                       maximum),
                     CNT_STATUS_OK);
}

/* A reference Release through ledger h that must succeed. */
static void unhold(fixture *f, cnt_holdings *h, const char *name,
                   uint32_t resources)
{
    assert_int_equal(cnt_table_release(f->t, h, (const uint8_t *)name,
                                       (uint16_t)strlen(name), resources),
                     CNT_STATUS_OK);
}

/* A NEW ticket for name, filled in as a wait_acquire would. */
static cnt_ticket *ticket(fixture *f, const char *name, uint32_t resources,
                          uint32_t maximum, uint32_t lease_ms)
{
    cnt_ticket *k = cnt_table_ticket_new(f->t, (const uint8_t *)name,
                                         (uint16_t)strlen(name));

    assert_non_null(k);
    assert_int_equal(k->state, CNT_TICKET_NEW);
    assert_int_equal(k->lease_id, 0);
    k->resources = resources;
    k->maximum = maximum;
    k->lease_ms = lease_ms;
    k->opaque = ++f->opaque;
    k->owner = f;
    k->worker = 0;
    return k;
}

/* Offers k at its place. */
static cnt_status offer(fixture *f, cnt_ticket *k, bool may_queue,
                        cnt_wait_result *a)
{
    cnt_table_place p;

    cnt_table_place_of(f->t, k->name, k->name_len, &p);
    return cnt_table_wait_acquire_at(f->t, &p, k, may_queue, a);
}

/* Offers k, which must be granted at once; returns its lease id. */
static uint64_t offer_granted(fixture *f, cnt_ticket *k)
{
    cnt_wait_result a;
    size_t sunk = f->nsunk;

    assert_int_equal(offer(f, k, true, &a), CNT_STATUS_OK);
    assert_int_equal(a.position, 0);
    assert_int_equal(k->state, CNT_TICKET_GRANTED);
    assert_false(k->flags & CNT_TICKET_IN_FLIGHT);
    assert_true(k->lease_id != 0);
    /* The owner's own grant does not travel through the sink. */
    assert_int_equal(f->nsunk, sunk);
    assert_int_equal(a.consumption, get_of(f, k));
    return k->lease_id;
}

/* Offers k, which must queue at position. */
static void offer_queued(fixture *f, cnt_ticket *k, uint32_t position)
{
    cnt_wait_result a;

    assert_int_equal(offer(f, k, true, &a), CNT_STATUS_OK);
    assert_int_equal(a.position, position);
    assert_int_equal(k->state, CNT_TICKET_QUEUED);
    /* (No lease id to look at: while queued its word is the queue's
     * back link; the answer's lease id is the session's to zero.) */
}

/* Grants in the sink not delivered yet. */
static size_t pending(const fixture *f)
{
    size_t n = 0;

    for (size_t i = 0; i < f->nsunk; i++)
        n += !f->taken[i];
    return n;
}

/* The grant at index i of the sink (in the order the sink got them). */
static cnt_ticket *sunk_at(const fixture *f, size_t i)
{
    assert_true(i < f->nsunk);
    return f->sunk[i];
}

/* The owner takes k's grant, which the sink must have received and not
 * delivered yet; returns what cnt_table_ticket_delivered says, and the
 * consumption it reports in *consumption when live: always the counter's
 * as the granting release left it, however it changed since. */
static bool deliver_at(fixture *f, cnt_ticket *k, uint32_t *consumption)
{
    size_t i;

    *consumption = 0xdeadbeef;
    for (i = 0; i < f->nsunk; i++)
        if (f->sunk[i] == k && !f->taken[i])
            break;
    assert_true(i < f->nsunk);
    f->taken[i] = true;
    bool live = cnt_table_ticket_delivered(f->t, k, consumption);
    assert_false(k->flags & CNT_TICKET_IN_FLIGHT);
    if (live) {
        assert_int_equal(k->state, CNT_TICKET_GRANTED);
        assert_int_equal(*consumption, f->at_sink[i]);
    }
    return live;
}

/* deliver_at when the figure is checked there only. */
static bool deliver(fixture *f, cnt_ticket *k)
{
    uint32_t consumption;

    return deliver_at(f, k, &consumption);
}

/* Ends k for its owner, expecting it was `was` and gave back `returned`,
 * and frees it (its grant must not be in flight). */
static void end_free(fixture *f, cnt_ticket *k, uint8_t was,
                     uint32_t returned)
{
    cnt_ticket_outcome o;

    cnt_table_ticket_end(f->t, k, &o);
    assert_int_equal(o.was, was);
    assert_int_equal(o.returned, returned);
    assert_true(o.free_now);
    assert_int_equal(k->state, CNT_TICKET_ENDED);
    cnt_table_ticket_free(f->t, k);
}

/* Granted at once when the queue is empty and it fits; lease ids grow
 * strictly across grants and counters; ending gives the resources back. */
static void test_grant_at_once(void **state)
{
    fixture *f = *state;
    cnt_ticket *k1 = ticket(f, "now", 3, 10, 100);
    cnt_ticket *k2 = ticket(f, "elsewhere", 1, 1, 0);
    cnt_ticket *k3 = ticket(f, "now", 7, 10, 0);
    cnt_wait_result a;

    assert_int_equal(get(f, "now"), -1);
    uint64_t id1 = offer_granted(f, k1);
    assert_int_equal(get(f, "now"), 3);
    uint64_t id2 = offer_granted(f, k2);
    assert_int_equal(offer(f, k3, true, &a), CNT_STATUS_OK);
    assert_int_equal(a.position, 0);
    assert_int_equal(a.consumption, 10);        /* equal to maximum fits */
    uint64_t id3 = k3->lease_id;
    assert_true(id1 < id2 && id2 < id3);
    assert_int_equal(k1->name_len, k3->name_len);    /* one counter */
    assert_memory_equal(k1->name, k3->name, k1->name_len);
    assert_int_equal(k1->lease_ms, 100);        /* the offer keeps it */
    assert_int_equal(get(f, "now"), 10);
    assert_int_equal(get(f, "elsewhere"), 1);
    assert_int_equal(wait_stats(f).leases, 1);  /* k1 alone has a lease */
    assert_int_equal(wait_stats(f).queue_grants, 0);

    end_free(f, k1, CNT_TICKET_GRANTED, 3);
    assert_int_equal(get(f, "now"), 7);
    end_free(f, k3, CNT_TICKET_GRANTED, 7);
    end_free(f, k2, CNT_TICKET_GRANTED, 1);
    assert_int_equal(get(f, "now"), 0);
    assert_int_equal(get(f, "elsewhere"), 0);
    /* A later grant still gets a larger id. */
    cnt_ticket *k4 = ticket(f, "now", 1, 1, 0);
    assert_true(offer_granted(f, k4) > id3);
    end_free(f, k4, CNT_TICKET_GRANTED, 1);
    assert_int_equal(pending(f), 0);
}

/* Waiters queue at positions 1, 2, 3; releases grant them in that order
 * through the sink, with growing lease ids; each is delivered with the
 * counter's consumption. */
static void test_queue_positions(void **state)
{
    fixture *f = *state;
    cnt_ticket *k[3];
    cnt_wait_result a;

    hold(f, &f->a, "line", 10, 10);
    for (int i = 0; i < 3; i++) {
        k[i] = ticket(f, "line", 1, 10, 0);
        assert_int_equal(offer(f, k[i], true, &a), CNT_STATUS_OK);
        assert_int_equal(a.position, (uint32_t)i + 1);
        assert_int_equal(a.consumption, 10);
        assert_int_equal(k[i]->state, CNT_TICKET_QUEUED);
        assert_int_equal(wait_stats(f).waiting, (uint64_t)i + 1);
    }
    assert_int_equal(pending(f), 0);
    unhold(f, &f->a, "line", 1);
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), k[0]);
    assert_int_equal(k[0]->state, CNT_TICKET_GRANTED);
    assert_int_equal(k[1]->state, CNT_TICKET_QUEUED);
    assert_int_equal(get(f, "line"), 10);
    assert_int_equal(wait_stats(f).waiting, 2);
    assert_true(deliver(f, k[0]));
    assert_false(k[0]->flags & CNT_TICKET_IN_FLIGHT);

    unhold(f, &f->a, "line", 2);                /* 8: room for both */
    assert_int_equal(f->nsunk, 3);
    assert_ptr_equal(sunk_at(f, 1), k[1]);
    assert_ptr_equal(sunk_at(f, 2), k[2]);
    assert_true(k[0]->lease_id < k[1]->lease_id);
    assert_true(k[1]->lease_id < k[2]->lease_id);
    assert_int_equal(get(f, "line"), 10);
    assert_int_equal(wait_stats(f).waiting, 0);
    assert_int_equal(wait_stats(f).queue_grants, 3);
    /* The owner may take them in any order. */
    assert_true(deliver(f, k[2]));
    assert_true(deliver(f, k[1]));
    /* A new waiter finds the line empty again: position 1. */
    cnt_ticket *k4 = ticket(f, "line", 1, 10, 0);
    offer_queued(f, k4, 1);
    end_free(f, k4, CNT_TICKET_QUEUED, 0);
    for (int i = 0; i < 3; i++)
        end_free(f, k[i], CNT_TICKET_GRANTED, 1);
    unhold(f, &f->a, "line", 7);
    assert_int_equal(get(f, "line"), 0);
}

/* A grant's event reports the counter as the granting release left it
 * (every grant of that release counted), not as the counter is when the
 * owner takes the grant: the figure travels in the ticket, so the owner
 * never takes the counter's lock again. */
static void test_grant_carries_consumption(void **state)
{
    fixture *f = *state;
    cnt_ticket *k[2];
    uint32_t c0, c1;

    hold(f, &f->a, "carry", 10, 10);
    for (int i = 0; i < 2; i++) {
        k[i] = ticket(f, "carry", 1, 10, 0);
        offer_queued(f, k[i], (uint32_t)i + 1);
    }
    unhold(f, &f->a, "carry", 2);               /* grants both: 10 again */
    assert_int_equal(f->nsunk, 2);
    /* The counter moves while the grants travel. */
    unhold(f, &f->a, "carry", 6);
    assert_int_equal(get(f, "carry"), 4);
    assert_true(deliver_at(f, k[1], &c1));
    assert_true(deliver_at(f, k[0], &c0));
    assert_int_equal(c0, 10);
    assert_int_equal(c1, 10);
    for (int i = 0; i < 2; i++)
        end_free(f, k[i], CNT_TICKET_GRANTED, 1);
    unhold(f, &f->a, "carry", 2);
    assert_int_equal(get(f, "carry"), 0);
}

/* Strict FIFO: a head that does not fit blocks smaller ones behind it,
 * even ones that would fit now; when it fits, it and then the ones behind
 * it are granted in order. */
static void test_fifo_no_barging(void **state)
{
    fixture *f = *state;
    cnt_wait_result a;

    hold(f, &f->a, "fifo", 8, 10);
    cnt_ticket *big = ticket(f, "fifo", 5, 10, 0);
    cnt_ticket *small1 = ticket(f, "fifo", 1, 10, 0);
    cnt_ticket *small2 = ticket(f, "fifo", 2, 10, 0);
    offer_queued(f, big, 1);
    offer_queued(f, small1, 2);                 /* 8 + 1 would fit */
    offer_queued(f, small2, 3);
    /* A ticket that would fit but may not queue is refused too. */
    cnt_ticket *eager = ticket(f, "fifo", 1, 100, 0);
    assert_int_equal(offer(f, eager, false, &a),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(eager->state, CNT_TICKET_NEW);
    cnt_table_ticket_free(f->t, eager);

    unhold(f, &f->a, "fifo", 1);                /* 7: big needs 12 */
    assert_int_equal(f->nsunk, 0);
    assert_int_equal(small1->state, CNT_TICKET_QUEUED);
    unhold(f, &f->a, "fifo", 2);                /* 5: big fits, 10 */
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), big);
    assert_int_equal(get(f, "fifo"), 10);
    assert_int_equal(small1->state, CNT_TICKET_QUEUED);
    assert_true(deliver(f, big));
    /* big gives its 5 back: 5 + 1 + 2 = 8, both granted, in order. */
    end_free(f, big, CNT_TICKET_GRANTED, 5);
    assert_int_equal(f->nsunk, 3);
    assert_ptr_equal(sunk_at(f, 1), small1);
    assert_ptr_equal(sunk_at(f, 2), small2);
    assert_int_equal(get(f, "fifo"), 8);
    assert_true(deliver(f, small1));
    assert_true(deliver(f, small2));
    end_free(f, small1, CNT_TICKET_GRANTED, 1);
    end_free(f, small2, CNT_TICKET_GRANTED, 2);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(get(f, "fifo"), 0);
}

/* A reference Acquire may not overtake waiters: refused while the queue
 * is not empty, whatever its maximum, and nothing changes; it succeeds
 * again once the queue is gone. */
static void test_acquire_does_not_overtake(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "ref", 10, 10);
    cnt_ticket *k = ticket(f, "ref", 5, 10, 0);
    offer_queued(f, k, 1);
    unhold(f, &f->a, "ref", 3);                 /* 7: k needs 12 */
    assert_int_equal(f->nsunk, 0);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("ref"), 1, 10),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(cnt_table_acquire(f->t, &f->b, CNT_NAME("ref"), 1,
                                       1000),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    /* The holder of the counter is refused more as well. */
    assert_int_equal(cnt_table_acquire(f->t, &f->a, CNT_NAME("ref"), 1,
                                       1000),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(get(f, "ref"), 7);
    assert_int_equal(f->b.count, 0);
    assert_int_equal(cnt_table_release(f->t, &f->b, CNT_NAME("ref"), 1),
                     CNT_STATUS_NOT_ACQUIRED);
    /* Other counters are not held up. */
    hold(f, &f->b, "ref2", 1, 1);
    end_free(f, k, CNT_TICKET_QUEUED, 0);
    assert_int_equal(wait_stats(f).waiting, 0);
    hold(f, &f->b, "ref", 3, 10);
    assert_int_equal(get(f, "ref"), 10);
    cnt_table_release_all(f->t, &f->a);
    cnt_table_release_all(f->t, &f->b);
    assert_int_equal(get(f, "ref"), 0);
}

/* Reference Release and release-all grant the queue heads they make room
 * for, through the sink. */
static void test_release_grants_head(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "r1", 4, 4);
    hold(f, &f->a, "r2", 2, 2);
    hold(f, &f->b, "r1", 1, 5);                 /* r1 at 5 */
    cnt_ticket *k1 = ticket(f, "r1", 3, 5, 0);
    cnt_ticket *k2 = ticket(f, "r2", 2, 2, 0);
    cnt_ticket *k3 = ticket(f, "r1", 3, 5, 0);
    offer_queued(f, k1, 1);
    offer_queued(f, k2, 1);
    offer_queued(f, k3, 2);
    /* A Release that leaves too little grants nothing. */
    unhold(f, &f->b, "r1", 1);                  /* r1 at 4 */
    assert_int_equal(f->nsunk, 0);
    /* A Release that makes just enough room grants the head. */
    unhold(f, &f->a, "r1", 2);                  /* r1 at 2, k1: 5 */
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), k1);
    assert_int_equal(get(f, "r1"), 5);
    /* Release-all (a connection ends) grants on every counter it held. */
    cnt_table_release_all(f->t, &f->a);         /* r1 at 3, r2 at 0 */
    assert_int_equal(f->nsunk, 2);
    assert_true(sunk_at(f, 1) == k2);
    assert_int_equal(get(f, "r1"), 3);          /* k3 needs 6: no */
    assert_int_equal(get(f, "r2"), 2);
    assert_int_equal(k3->state, CNT_TICKET_QUEUED);
    assert_true(deliver(f, k1));
    assert_true(deliver(f, k2));
    end_free(f, k1, CNT_TICKET_GRANTED, 3);     /* r1 at 0: k3 granted */
    assert_int_equal(f->nsunk, 3);
    assert_ptr_equal(sunk_at(f, 2), k3);
    assert_true(deliver(f, k3));
    end_free(f, k3, CNT_TICKET_GRANTED, 3);
    end_free(f, k2, CNT_TICKET_GRANTED, 2);
    assert_int_equal(get(f, "r1"), 0);
    assert_int_equal(get(f, "r2"), 0);
    assert_int_equal(wait_stats(f).queue_grants, 3);
}

/* While grants are stopped (a server on its way down), no release of any
 * kind grants a queued ticket and no lease id is spent: the waiters stay
 * queued, with nothing counted for them, and end as queued. Grants resume
 * at the next release once the stop is lifted. */
static void test_stop_grants(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "sa", 2, 2);
    hold(f, &f->b, "sr", 1, 1);
    cnt_ticket *g = ticket(f, "sb", 3, 3, 0);
    uint64_t last = offer_granted(f, g);
    cnt_ticket *ka = ticket(f, "sa", 1, 2, 0);
    cnt_ticket *kb = ticket(f, "sb", 2, 3, 1000);
    cnt_ticket *kr = ticket(f, "sr", 1, 1, 0);
    cnt_ticket *kl = ticket(f, "sl", 1, 1, 0);
    offer_queued(f, ka, 1);
    offer_queued(f, kb, 1);
    offer_queued(f, kr, 1);
    cnt_ticket *h = ticket(f, "sl", 1, 1, 500);
    offer_granted(f, h);
    last = h->lease_id;
    offer_queued(f, kl, 1);

    cnt_table_stop_grants(f->t, true);
    cnt_table_release_all(f->t, &f->a);         /* a connection ends */
    end_free(f, g, CNT_TICKET_GRANTED, 3);      /* a granted ticket ends */
    unhold(f, &f->b, "sr", 1);                  /* a reference Release */
    uint32_t released = 0;                      /* a lease runs out */
    assert_true(cnt_table_ticket_expire(f->t, h, &released));
    assert_int_equal(released, 1);
    assert_int_equal(f->nsunk, 0);
    assert_int_equal(ka->state, CNT_TICKET_QUEUED);
    assert_int_equal(kb->state, CNT_TICKET_QUEUED);
    assert_int_equal(kr->state, CNT_TICKET_QUEUED);
    assert_int_equal(kl->state, CNT_TICKET_QUEUED);
    assert_int_equal(get(f, "sa"), 0);
    assert_int_equal(get(f, "sb"), 0);
    assert_int_equal(get(f, "sr"), 0);
    assert_int_equal(get(f, "sl"), 0);
    cnt_wait_stats ws = wait_stats(f);
    assert_int_equal(ws.waiting, 4);
    assert_int_equal(ws.queue_grants, 0);
    assert_int_equal(ws.leases, 0);
    /* The queued ones end as queued: nothing to return. */
    end_free(f, ka, CNT_TICKET_QUEUED, 0);
    end_free(f, kb, CNT_TICKET_QUEUED, 0);
    cnt_ticket_outcome o;
    cnt_table_ticket_end(f->t, h, &o);          /* the expired one */
    assert_int_equal(o.was, CNT_TICKET_EXPIRED);
    cnt_table_ticket_free(f->t, h);
    assert_int_equal(queues_listed(f), 2);      /* sr and sl wait on */

    /* Resumed: the lease id counter did not move while stopped, and the
     * next release grants the head again. */
    cnt_table_stop_grants(f->t, false);
    cnt_ticket *n = ticket(f, "sn", 1, 1, 0);
    assert_int_equal(offer_granted(f, n), last + 1);
    hold(f, &f->b, "sx", 1, 1);
    cnt_ticket *kx = ticket(f, "sx", 1, 1, 0);
    offer_queued(f, kx, 1);
    unhold(f, &f->b, "sx", 1);
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), kx);
    assert_int_equal(kx->lease_id, last + 2);
    assert_true(deliver(f, kx));
    end_free(f, kx, CNT_TICKET_GRANTED, 1);
    end_free(f, n, CNT_TICKET_GRANTED, 1);
    end_free(f, kr, CNT_TICKET_QUEUED, 0);
    end_free(f, kl, CNT_TICKET_QUEUED, 0);
    assert_int_equal(wait_stats(f).waiting, 0);
}

/* The owner ends a queued ticket (cancel): it leaves the line, returns
 * nothing and is freed at once; when it was the head that blocked the
 * others, they are granted. */
static void test_cancel_queued(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "cx", 8, 10);
    cnt_ticket *head = ticket(f, "cx", 5, 10, 0);
    cnt_ticket *mid = ticket(f, "cx", 3, 10, 0);
    cnt_ticket *k2 = ticket(f, "cx", 1, 10, 0);
    cnt_ticket *k3 = ticket(f, "cx", 1, 10, 0);
    offer_queued(f, head, 1);
    offer_queued(f, mid, 2);
    offer_queued(f, k2, 3);
    offer_queued(f, k3, 4);
    /* Cancelling one in the middle grants nobody (the head still blocks)
     * and shortens the line: the next newcomer is fourth. */
    end_free(f, mid, CNT_TICKET_QUEUED, 0);
    assert_int_equal(f->nsunk, 0);
    assert_int_equal(wait_stats(f).waiting, 3);
    assert_int_equal(wait_stats(f).cancels, 1);
    cnt_ticket *k4 = ticket(f, "cx", 1, 10, 0);
    offer_queued(f, k4, 4);
    /* Cancelling the blocking head lets the small ones in, in order,
     * as far as they fit: 8 + 1 + 1 = 10, k4 stays. */
    end_free(f, head, CNT_TICKET_QUEUED, 0);
    assert_int_equal(f->nsunk, 2);
    assert_ptr_equal(sunk_at(f, 0), k2);
    assert_ptr_equal(sunk_at(f, 1), k3);
    assert_int_equal(k4->state, CNT_TICKET_QUEUED);
    assert_int_equal(get(f, "cx"), 10);
    assert_int_equal(wait_stats(f).cancels, 2);
    assert_int_equal(wait_stats(f).waiting, 1);
    /* The last waiter cancelled: the queue is gone, a reference Acquire
     * that fits works again. */
    end_free(f, k4, CNT_TICKET_QUEUED, 0);
    assert_int_equal(wait_stats(f).waiting, 0);
    assert_true(deliver(f, k2));
    assert_true(deliver(f, k3));
    end_free(f, k2, CNT_TICKET_GRANTED, 1);
    hold(f, &f->b, "cx", 1, 10);
    end_free(f, k3, CNT_TICKET_GRANTED, 1);
    cnt_table_release_all(f->t, &f->a);
    cnt_table_release_all(f->t, &f->b);
    assert_int_equal(get(f, "cx"), 0);
    assert_int_equal(wait_stats(f).cancels, 3);
}

/* The owner ends a granted ticket while its grant is still in flight:
 * the resources come back at once (granting the ones behind), the ticket
 * is not freed then; the delivery says so, and the ticket is freed. */
static void test_end_in_flight(void **state)
{
    fixture *f = *state;
    cnt_ticket_outcome o;

    hold(f, &f->a, "fl", 10, 10);
    cnt_ticket *k1 = ticket(f, "fl", 3, 10, 100);
    cnt_ticket *k2 = ticket(f, "fl", 3, 10, 0);
    offer_queued(f, k1, 1);
    offer_queued(f, k2, 2);
    unhold(f, &f->a, "fl", 3);                  /* k1 granted, 10 */
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), k1);
    assert_true(k1->flags & CNT_TICKET_IN_FLIGHT);
    assert_int_equal(wait_stats(f).leases, 1);
    cnt_table_ticket_end(f->t, k1, &o);
    assert_int_equal(o.was, CNT_TICKET_GRANTED);
    assert_int_equal(o.returned, 3);
    assert_false(o.free_now);
    assert_int_equal(k1->state, CNT_TICKET_ENDED);
    assert_int_equal(wait_stats(f).leases, 0);
    /* Its 3 went straight to k2, behind it. */
    assert_int_equal(f->nsunk, 2);
    assert_ptr_equal(sunk_at(f, 1), k2);
    assert_int_equal(get(f, "fl"), 10);
    /* Its delivery: not live; the owner frees it. */
    assert_false(deliver(f, k1));
    cnt_table_ticket_free(f->t, k1);
    /* k2 too, this time with nothing behind it. */
    cnt_table_ticket_end(f->t, k2, &o);
    assert_int_equal(o.was, CNT_TICKET_GRANTED);
    assert_int_equal(o.returned, 3);
    assert_false(o.free_now);
    assert_int_equal(get(f, "fl"), 7);
    assert_false(deliver(f, k2));
    cnt_table_ticket_free(f->t, k2);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(get(f, "fl"), 0);
    assert_int_equal(wait_stats(f).cancels, 0); /* none was queued */
}

/* A queued ticket whose wait runs out leaves the line (the ones behind
 * it may then be granted); one granted meanwhile is not touched. */
static void test_timeout(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "to", 9, 10);
    cnt_ticket *head = ticket(f, "to", 4, 10, 0);
    cnt_ticket *k1 = ticket(f, "to", 1, 10, 0);
    cnt_ticket *k2 = ticket(f, "to", 2, 10, 0);
    offer_queued(f, head, 1);
    offer_queued(f, k1, 2);
    offer_queued(f, k2, 3);
    assert_true(cnt_table_ticket_timeout(f->t, head));
    assert_int_equal(head->state, CNT_TICKET_ENDED);
    cnt_table_ticket_free(f->t, head);
    assert_int_equal(f->nsunk, 1);              /* k1: 10; k2 waits */
    assert_ptr_equal(sunk_at(f, 0), k1);
    assert_int_equal(wait_stats(f).timeouts, 1);
    assert_int_equal(wait_stats(f).waiting, 1);
    /* k1's timer fires after its grant: false, nothing changes, and the
     * grant is still delivered. */
    assert_false(cnt_table_ticket_timeout(f->t, k1));
    assert_int_equal(k1->state, CNT_TICKET_GRANTED);
    assert_true(k1->flags & CNT_TICKET_IN_FLIGHT);
    assert_int_equal(get(f, "to"), 10);
    assert_int_equal(wait_stats(f).timeouts, 1);
    assert_true(deliver(f, k1));
    assert_false(cnt_table_ticket_timeout(f->t, k1));   /* delivered too */
    assert_int_equal(k1->state, CNT_TICKET_GRANTED);
    /* The last waiter times out: the queue goes with it. */
    assert_true(cnt_table_ticket_timeout(f->t, k2));
    cnt_table_ticket_free(f->t, k2);
    assert_int_equal(wait_stats(f).timeouts, 2);
    assert_int_equal(wait_stats(f).waiting, 0);
    hold(f, &f->b, "to", 1, 11);                /* no queue left */
    end_free(f, k1, CNT_TICKET_GRANTED, 1);
    cnt_table_release_all(f->t, &f->a);
    cnt_table_release_all(f->t, &f->b);
    assert_int_equal(get(f, "to"), 0);
}

/* A granted ticket whose lease runs out gives its resources back (the
 * next in line is granted) and becomes EXPIRED; queued and in-flight
 * tickets do not expire; the owner ends an expired ticket later. */
static void test_expire(void **state)
{
    fixture *f = *state;
    uint32_t released = 0xdeadbeef;

    cnt_ticket *k1 = ticket(f, "ex", 6, 10, 100);
    cnt_ticket *k2 = ticket(f, "ex", 5, 10, 100);
    offer_granted(f, k1);
    offer_queued(f, k2, 1);
    assert_int_equal(wait_stats(f).leases, 1);
    assert_false(cnt_table_ticket_expire(f->t, k2, &released));
    assert_int_equal(released, 0xdeadbeef);
    assert_int_equal(k2->state, CNT_TICKET_QUEUED);

    assert_true(cnt_table_ticket_expire(f->t, k1, &released));
    assert_int_equal(released, 6);
    assert_int_equal(k1->state, CNT_TICKET_EXPIRED);
    assert_int_equal(wait_stats(f).expirations, 1);
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), k2);
    assert_int_equal(get(f, "ex"), 5);
    assert_int_equal(wait_stats(f).leases, 1);  /* k2's now */
    /* Expiring it again does nothing. */
    released = 0xdeadbeef;
    assert_false(cnt_table_ticket_expire(f->t, k1, &released));
    assert_int_equal(released, 0xdeadbeef);
    /* k2 in flight: its lease is not running yet. */
    assert_false(cnt_table_ticket_expire(f->t, k2, &released));
    assert_int_equal(k2->state, CNT_TICKET_GRANTED);
    assert_int_equal(get(f, "ex"), 5);
    assert_true(deliver(f, k2));
    assert_true(cnt_table_ticket_expire(f->t, k2, &released));
    assert_int_equal(released, 5);
    assert_int_equal(get(f, "ex"), 0);
    assert_int_equal(wait_stats(f).expirations, 2);
    assert_int_equal(wait_stats(f).leases, 0);
    /* Ending an expired ticket gives nothing back a second time. */
    end_free(f, k1, CNT_TICKET_EXPIRED, 0);
    end_free(f, k2, CNT_TICKET_EXPIRED, 0);
    assert_int_equal(get(f, "ex"), 0);
    assert_int_equal(wait_stats(f).cancels, 0);
}

/* Renew: OK with the lease id for a granted ticket, NOT_ACQUIRED while
 * queued or in flight, LEASE_EXPIRED after the lease ran out, INVALID for
 * a lease of 0. */
static void test_renew(void **state)
{
    fixture *f = *state;
    uint64_t id = 0;

    cnt_ticket *k1 = ticket(f, "rn", 2, 2, 100);
    cnt_ticket *k2 = ticket(f, "rn", 1, 2, 0);
    uint64_t id1 = offer_granted(f, k1);
    assert_int_equal(cnt_table_ticket_renew(f->t, k1, 500, &id),
                     CNT_STATUS_OK);
    assert_int_equal(id, id1);
    assert_int_equal(k1->lease_ms, 500);
    assert_int_equal(wait_stats(f).leases, 1);  /* still one lease */
    id = 7;
    assert_int_equal(cnt_table_ticket_renew(f->t, k1, 0, &id),
                     CNT_STATUS_INVALID);
    assert_int_equal(id, 7);
    assert_int_equal(k1->lease_ms, 500);

    offer_queued(f, k2, 1);
    assert_int_equal(cnt_table_ticket_renew(f->t, k2, 100, &id),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(k2->lease_ms, 0);
    end_free(f, k1, CNT_TICKET_GRANTED, 2);     /* k2 granted, in flight */
    assert_int_equal(cnt_table_ticket_renew(f->t, k2, 100, &id),
                     CNT_STATUS_NOT_ACQUIRED);
    assert_int_equal(wait_stats(f).leases, 0);
    assert_true(deliver(f, k2));
    /* A ticket granted without a lease takes one on renew. */
    assert_int_equal(cnt_table_ticket_renew(f->t, k2, 100, &id),
                     CNT_STATUS_OK);
    assert_int_equal(id, k2->lease_id);
    assert_true(id > id1);
    assert_int_equal(wait_stats(f).leases, 1);
    uint32_t released;
    assert_true(cnt_table_ticket_expire(f->t, k2, &released));
    assert_int_equal(cnt_table_ticket_renew(f->t, k2, 100, &id),
                     CNT_STATUS_LEASE_EXPIRED);
    assert_int_equal(wait_stats(f).leases, 0);
    end_free(f, k2, CNT_TICKET_EXPIRED, 0);
}

/* may_queue false: a ticket that does not fit is answered
 * RESOURCE_NOT_AVAILABLE, stays NEW and changes nothing. */
static void test_may_queue_false(void **state)
{
    fixture *f = *state;
    cnt_wait_result a;

    hold(f, &f->a, "mq", 9, 10);
    uint64_t memory = used_memory(f);
    cnt_ticket *k = ticket(f, "mq", 2, 10, 100);
    uint64_t with_ticket = used_memory(f);
    assert_true(with_ticket > memory);
    assert_int_equal(offer(f, k, false, &a),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    assert_int_equal(a.position, 0);
    assert_int_equal(a.consumption, 9);
    assert_int_equal(k->state, CNT_TICKET_NEW);
    assert_int_equal(k->lease_id, 0);
    assert_int_equal(get(f, "mq"), 9);
    assert_int_equal(used_memory(f), with_ticket);
    cnt_wait_stats ws = wait_stats(f);
    assert_int_equal(ws.waiting, 0);
    assert_int_equal(ws.leases, 0);
    /* No queue was made: a reference Acquire that fits goes through. */
    hold(f, &f->b, "mq", 1, 10);
    assert_int_equal(queues_listed(f), 0);
    /* It may be offered again, and fits once there is room. */
    unhold(f, &f->a, "mq", 5);
    offer_granted(f, k);
    assert_int_equal(get(f, "mq"), 7);
    end_free(f, k, CNT_TICKET_GRANTED, 2);
    assert_int_equal(used_memory(f), memory);
}

/* Each ticket is admitted under its own maximum: a waiter with maximum 3
 * behind holders admitted under maximum 10 waits until the consumption is
 * down to 2, and holds up a waiter with a larger maximum behind it. */
static void test_own_maximum(void **state)
{
    fixture *f = *state;

    hold(f, &f->a, "own", 8, 10);
    cnt_ticket *low = ticket(f, "own", 1, 3, 0);
    cnt_ticket *high = ticket(f, "own", 1, 10, 0);
    offer_queued(f, low, 1);                    /* 8 + 1 > 3 */
    offer_queued(f, high, 2);                   /* behind it */
    unhold(f, &f->a, "own", 5);                 /* 3: low needs 4 <= 3 */
    assert_int_equal(f->nsunk, 0);
    assert_int_equal(high->state, CNT_TICKET_QUEUED);
    unhold(f, &f->a, "own", 1);                 /* 2: low 3, high 4 */
    assert_int_equal(f->nsunk, 2);
    assert_ptr_equal(sunk_at(f, 0), low);
    assert_ptr_equal(sunk_at(f, 1), high);
    assert_int_equal(get(f, "own"), 4);
    assert_true(deliver(f, low));
    assert_true(deliver(f, high));
    /* A waiter's maximum above the others' admits it where they would
     * not fit: 4 + 6 = 10 fits under 10 ... */
    cnt_ticket *mid = ticket(f, "own", 6, 10, 0);
    offer_granted(f, mid);
    /* ... and one with a low maximum queues behind nobody but still
     * waits for its own bound. */
    cnt_ticket *tiny = ticket(f, "own", 1, 1, 0);
    offer_queued(f, tiny, 1);
    end_free(f, mid, CNT_TICKET_GRANTED, 6);
    end_free(f, high, CNT_TICKET_GRANTED, 1);
    assert_int_equal(f->nsunk, 2);              /* 3: tiny needs 4 <= 1 */
    cnt_table_release_all(f->t, &f->a);         /* 1: still 2 > 1 */
    assert_int_equal(f->nsunk, 2);
    end_free(f, low, CNT_TICKET_GRANTED, 1);    /* 0: 1 <= 1 */
    assert_int_equal(f->nsunk, 3);
    assert_ptr_equal(sunk_at(f, 2), tiny);
    assert_true(deliver(f, tiny));
    end_free(f, tiny, CNT_TICKET_GRANTED, 1);
    assert_int_equal(get(f, "own"), 0);
}

/* Sums are taken in 64 bits: near UINT32_MAX a ticket whose resources
 * would wrap the consumption past 0 is not admitted, neither at once nor
 * from the queue. */
static void test_sums_do_not_wrap(void **state)
{
    fixture *f = *state;
    cnt_wait_result a;

    hold(f, &f->a, "wide", UINT32_MAX - 1, UINT32_MAX);
    cnt_ticket *k1 = ticket(f, "wide", 2, UINT32_MAX, 0);
    assert_int_equal(offer(f, k1, false, &a),
                     CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    offer_queued(f, k1, 1);
    cnt_ticket *k2 = ticket(f, "wide", 1, UINT32_MAX, 0);
    offer_queued(f, k2, 2);
    unhold(f, &f->a, "wide", 1);                /* k1 fits exactly */
    assert_int_equal(f->nsunk, 1);
    assert_ptr_equal(sunk_at(f, 0), k1);
    assert_int_equal(get(f, "wide"), UINT32_MAX);
    assert_int_equal(k2->state, CNT_TICKET_QUEUED);  /* would wrap to 0 */
    assert_true(deliver(f, k1));
    end_free(f, k1, CNT_TICKET_GRANTED, 2);     /* k2 fits now */
    assert_int_equal(f->nsunk, 2);
    assert_true(deliver(f, k2));
    assert_int_equal(get(f, "wide"), UINT32_MAX - 1);
    end_free(f, k2, CNT_TICKET_GRANTED, 1);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(get(f, "wide"), 0);
}

/* Offers that break the preconditions get INVALID and change nothing: no
 * counter is made, the ticket stays as it was. */
static void test_invalid(void **state)
{
    fixture *f = *state;
    cnt_wait_result a;

    cnt_ticket *zero = ticket(f, "inv", 0, 10, 0);
    assert_int_equal(offer(f, zero, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(zero->state, CNT_TICKET_NEW);
    cnt_ticket *over = ticket(f, "inv", 5, 4, 0);
    assert_int_equal(offer(f, over, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(over->state, CNT_TICKET_NEW);
    /* A nameless ticket. */
    cnt_ticket *unnamed = cnt_table_ticket_new(f->t, (const uint8_t *)"", 0);
    assert_non_null(unnamed);
    unnamed->resources = 1;
    unnamed->maximum = 1;
    assert_int_equal(offer(f, unnamed, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(get(f, "inv"), -1);
    assert_int_equal(objects(f), 0);
    assert_int_equal(wait_stats(f).waiting, 0);
    cnt_table_ticket_free(f->t, zero);
    cnt_table_ticket_free(f->t, over);
    cnt_table_ticket_free(f->t, unnamed);
    cnt_table_ticket_free(f->t, NULL);          /* harmless */

    /* A ticket that is not NEW (queued, granted, ended) cannot be offered
     * again. */
    cnt_ticket *k1 = ticket(f, "inv", 2, 2, 0);
    cnt_ticket *k2 = ticket(f, "inv", 1, 2, 0);
    offer_granted(f, k1);
    offer_queued(f, k2, 1);
    assert_int_equal(offer(f, k1, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(offer(f, k2, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(get(f, "inv"), 2);
    assert_int_equal(wait_stats(f).waiting, 1);
    end_free(f, k2, CNT_TICKET_QUEUED, 0);
    cnt_ticket_outcome o;
    cnt_table_ticket_end(f->t, k1, &o);
    assert_int_equal(offer(f, k1, true, &a), CNT_STATUS_INVALID);
    assert_int_equal(get(f, "inv"), 0);
    cnt_table_ticket_free(f->t, k1);
}

/* Tickets and queues count in used_memory (a ticket about its
 * cnt_ticket_size), and everything goes back to the empty table's figure
 * once every ticket ended and was freed and the counter was swept. */
static void test_memory_accounting(void **state)
{
    fixture *f = *state;
    static const char name[] = "memory-counted";
    uint16_t len = sizeof name - 1;

    uint64_t m0 = used_memory(f);
    assert_int_equal(m0, f->base_memory);
    cnt_ticket *k1 = ticket(f, name, 2, 2, 0);
    uint64_t ticket_bytes = used_memory(f) - m0;
    assert_true(ticket_bytes >= cnt_ticket_size(len));
    assert_true(ticket_bytes <= sizeof(cnt_ticket) + len);
    offer_granted(f, k1);                       /* makes the counter */
    uint64_t m1 = used_memory(f);
    assert_int_equal(m1 - m0, ticket_bytes + table_counter_size(len));
    cnt_ticket *k2 = ticket(f, name, 1, 2, 0);
    cnt_ticket *k3 = ticket(f, name, 1, 2, 0);
    assert_int_equal(used_memory(f) - m1, 2 * ticket_bytes);
    uint64_t m2 = used_memory(f);
    offer_queued(f, k2, 1);                     /* makes the queue */
    uint64_t queue_bytes = used_memory(f) - m2;
    assert_true(queue_bytes > 0 && queue_bytes <= 128);
    offer_queued(f, k3, 2);                     /* the same queue */
    assert_int_equal(used_memory(f), m2 + queue_bytes);
    end_free(f, k2, CNT_TICKET_QUEUED, 0);
    assert_int_equal(used_memory(f), m2 + queue_bytes - ticket_bytes);
    end_free(f, k1, CNT_TICKET_GRANTED, 2);     /* k3 granted: no queue */
    assert_int_equal(used_memory(f), m0 + ticket_bytes +
                                         table_counter_size(len));
    assert_true(deliver(f, k3));
    end_free(f, k3, CNT_TICKET_GRANTED, 1);
    assert_int_equal(used_memory(f), m0 + table_counter_size(len));
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, cnt_table_buckets(f->t)), 1);
    assert_int_equal(used_memory(f), f->base_memory);
    /* A ticket freed while still NEW gives its bytes back too. */
    cnt_ticket *k4 = ticket(f, name, 1, 1, 0);
    assert_true(used_memory(f) > f->base_memory);
    cnt_table_ticket_free(f->t, k4);
    assert_int_equal(used_memory(f), f->base_memory);
}

/* memory_limit: a ticket is refused when its bytes would pass it; a queue
 * that would pass it answers OUT_OF_MEMORY and changes nothing. */
static void test_memory_limit(void **state)
{
    fixture *f = *state;
    static const char name[] = "limited";
    uint16_t len = sizeof name - 1;
    cnt_wait_result a;

    /* The sizes, measured on the unlimited table. */
    uint64_t m0 = used_memory(f);
    cnt_ticket *p1 = ticket(f, name, 1, 1, 0);
    cnt_ticket *p2 = ticket(f, name, 1, 1, 0);
    uint64_t ticket_bytes = used_memory(f) - m0;
    ticket_bytes /= 2;
    offer_granted(f, p1);
    uint64_t m1 = used_memory(f);
    offer_queued(f, p2, 1);
    uint64_t queue_bytes = used_memory(f) - m1;
    end_free(f, p2, CNT_TICKET_QUEUED, 0);
    end_free(f, p1, CNT_TICKET_GRANTED, 1);
    uint64_t counter_bytes = table_counter_size(len);
    assert_true(ticket_bytes >= queue_bytes);

    /* Room for the counter and two tickets, not for a queue as well. */
    fixture *g = fixture_new(64, counter_bytes + 2 * ticket_bytes +
                                     queue_bytes - 1);
    assert_int_equal(cnt_table_memory_limit(g->t),
                     counter_bytes + 2 * ticket_bytes + queue_bytes - 1);
    cnt_ticket *k1 = ticket(g, name, 5, 5, 0);
    offer_granted(g, k1);
    cnt_ticket *k2 = ticket(g, name, 1, 5, 0);
    uint64_t used = used_memory(g);
    assert_int_equal(offer(g, k2, true, &a), CNT_STATUS_OUT_OF_MEMORY);
    assert_int_equal(k2->state, CNT_TICKET_NEW);
    assert_int_equal(used_memory(g), used);
    assert_int_equal(wait_stats(g).waiting, 0);
    assert_int_equal(get(g, name), 5);
    /* No third ticket. */
    assert_null(cnt_table_ticket_new(g->t, (const uint8_t *)name, len));
    assert_int_equal(used_memory(g), used);
    /* Nothing was left behind: with room made, a reference Acquire is not
     * held up by a queue that does not exist. */
    end_free(g, k1, CNT_TICKET_GRANTED, 5);
    hold(g, &g->a, name, 5, 5);
    assert_int_equal(g->nsunk, 0);
    /* Now the queue fits (one ticket fewer). */
    offer_queued(g, k2, 1);
    cnt_table_release_all(g->t, &g->a);
    assert_int_equal(g->nsunk, 1);
    assert_true(deliver(g, k2));
    end_free(g, k2, CNT_TICKET_GRANTED, 1);
    fixture_free(g);
}

/* Failed allocations: of a ticket (NULL, nothing counted), of the counter
 * an offer makes, and of the queue an offer makes (OUT_OF_MEMORY; nothing
 * changes, and the ticket can be offered again). */
static void test_out_of_memory(void **state)
{
    fixture *f = *state;
    cnt_wait_result a;

    uint64_t m0 = used_memory(f);
    cnt_fake_alloc_fail_at(1, 0);
    assert_null(cnt_table_ticket_new(f->t, CNT_NAME("oom")));
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(used_memory(f), m0);

    cnt_ticket *k = ticket(f, "oom", 1, 10, 0);
    uint64_t m1 = used_memory(f);
    cnt_fake_alloc_fail_at(1, 0);
    assert_int_equal(offer(f, k, true, &a), CNT_STATUS_OUT_OF_MEMORY);
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(k->state, CNT_TICKET_NEW);
    assert_int_equal(get(f, "oom"), -1);
    assert_int_equal(objects(f), 0);
    assert_int_equal(used_memory(f), m1);

    hold(f, &f->a, "oom", 10, 10);
    uint64_t m2 = used_memory(f);
    cnt_fake_alloc_fail_at(1, 0);
    assert_int_equal(offer(f, k, true, &a), CNT_STATUS_OUT_OF_MEMORY);
    assert_true(cnt_fake_alloc_injected());
    assert_int_equal(k->state, CNT_TICKET_NEW);
    assert_int_equal(used_memory(f), m2);
    assert_int_equal(wait_stats(f).waiting, 0);
    assert_int_equal(queues_listed(f), 0);
    assert_int_equal(get(f, "oom"), 10);
    /* The counter carries no queue mark: once there is room a reference
     * Acquire goes through, and a release grants nothing. */
    unhold(f, &f->a, "oom", 2);
    hold(f, &f->b, "oom", 1, 10);
    assert_int_equal(f->nsunk, 0);
    unhold(f, &f->b, "oom", 1);
    hold(f, &f->a, "oom", 2, 10);
    /* Memory is back: the same ticket queues, and is granted later. */
    offer_queued(f, k, 1);
    unhold(f, &f->a, "oom", 1);
    assert_int_equal(f->nsunk, 1);
    assert_true(deliver(f, k));
    end_free(f, k, CNT_TICKET_GRANTED, 1);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(get(f, "oom"), 0);
}

/* The GC never sweeps a counter that has waiters or granted tickets, in
 * whatever window; once everything ended, the next window's sweep takes
 * it. */
static void test_gc_spares_waiters(void **state)
{
    fixture *f = *state;
    size_t buckets = cnt_table_buckets(f->t);

    cnt_ticket *k1 = ticket(f, "gc", 2, 2, 0);
    cnt_ticket *k2 = ticket(f, "gc", 2, 2, 0);
    offer_granted(f, k1);
    offer_queued(f, k2, 1);
    for (int w = 1; w <= 3; w++) {
        cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
        assert_int_equal(table_sweep(f->t, 0, buckets), 0);
        assert_int_equal(get(f, "gc"), 2);
    }
    end_free(f, k1, CNT_TICKET_GRANTED, 2);     /* k2 granted */
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, buckets), 0);
    assert_true(deliver(f, k2));
    /* An expired lease holds nothing: the counter is free to go, but not
     * in the window it last changed in. */
    uint32_t released;
    assert_true(cnt_table_ticket_expire(f->t, k2, &released));
    assert_int_equal(get(f, "gc"), 0);
    assert_int_equal(table_sweep(f->t, 0, buckets), 0);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, buckets), 1);
    assert_int_equal(get(f, "gc"), -1);
    assert_int_equal(objects(f), 0);
    /* The owner ends the expired ticket after its counter is gone. */
    end_free(f, k2, CNT_TICKET_EXPIRED, 0);
    /* A counter whose last waiter was cancelled goes as well. */
    hold(f, &f->a, "gc", 1, 1);
    cnt_ticket *k3 = ticket(f, "gc", 1, 1, 0);
    offer_queued(f, k3, 1);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, buckets), 0);
    end_free(f, k3, CNT_TICKET_QUEUED, 0);
    cnt_table_release_all(f->t, &f->a);
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, buckets), 1);
    assert_int_equal(objects(f), 0);
}

/* The waiting count and consumption the log has for name; -1 if absent,
 * and each name appears at most once. */
static long queue_waiting(const queue_log *log, const char *name,
                          uint32_t *consumption)
{
    long found = -1;

    for (unsigned i = 0; i < log->n; i++)
        if (strcmp(log->name[i], name) == 0) {
            assert_int_equal(found, -1);
            found = log->waiting[i];
            *consumption = log->consumption[i];
        }
    return found;
}

/* cnt_table_queues lists each counter with waiters and its queue length,
 * and resumes where it was asked to stop. */
static void test_queues_listing(void **state)
{
    fixture *f = *state;
    static const char *names[3] = { "qa", "qb", "qc" };
    cnt_ticket *k[3][3];
    queue_log log = { .n = 0 };
    size_t stripe = 0;
    uint32_t consumption;

    assert_true(cnt_table_queues(f->t, &stripe, queue_collect, &log));
    assert_int_equal(log.n, 0);
    assert_int_equal(stripe, CNT_MAP_STRIPES);
    for (int c = 0; c < 3; c++) {
        hold(f, &f->a, names[c], (uint32_t)c + 1, (uint32_t)c + 1);
        for (int i = 0; i <= c; i++) {
            k[c][i] = ticket(f, names[c], 1, (uint32_t)c + 1, 0);
            offer_queued(f, k[c][i], (uint32_t)i + 1);
        }
    }
    /* A counter without waiters is not listed. */
    hold(f, &f->a, "quiet", 1, 1);
    stripe = 0;
    assert_true(cnt_table_queues(f->t, &stripe, queue_collect, &log));
    assert_int_equal(log.n, 3);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(queue_waiting(&log, names[c], &consumption), c + 1);
        assert_int_equal(consumption, c + 1);
    }
    assert_int_equal(queue_waiting(&log, "quiet", &consumption), -1);

    /* Stopping after every record: one call per stripe with queues, and
     * every counter listed once in all. */
    memset(&log, 0, sizeof log);
    log.stop = true;
    stripe = 0;
    unsigned rounds = 0;
    while (!cnt_table_queues(f->t, &stripe, queue_collect, &log)) {
        rounds++;
        assert_true(rounds <= 3);
        assert_int_equal(log.n, log.calls);
    }
    assert_true(rounds >= 1);
    assert_int_equal(log.n, 3);
    for (int c = 0; c < 3; c++)
        assert_int_equal(queue_waiting(&log, names[c], &consumption), c + 1);

    /* Grants shorten the queues; an emptied queue is no longer listed. */
    cnt_table_release_all(f->t, &f->a);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i <= c; i++) {
            assert_true(deliver(f, k[c][i]));
            end_free(f, k[c][i], CNT_TICKET_GRANTED, 1);
        }
    assert_int_equal(queues_listed(f), 0);
}

/* The waiting figures after each kind of event. */
static void test_wait_stats(void **state)
{
    fixture *f = *state;
    cnt_wait_stats s;
    uint32_t released;
    uint64_t id;

#define EXPECT_STATS(w, l, g, t, e, c)                                      \
    do {                                                                    \
        s = wait_stats(f);                                                  \
        assert_int_equal(s.waiting, (w));                                   \
        assert_int_equal(s.leases, (l));                                    \
        assert_int_equal(s.queue_grants, (g));                              \
        assert_int_equal(s.timeouts, (t));                                  \
        assert_int_equal(s.expirations, (e));                               \
        assert_int_equal(s.cancels, (c));                                   \
    } while (0)

    EXPECT_STATS(0, 0, 0, 0, 0, 0);
    cnt_ticket *k1 = ticket(f, "st", 4, 4, 100);
    offer_granted(f, k1);
    EXPECT_STATS(0, 1, 0, 0, 0, 0);             /* a lease, no queue */
    cnt_ticket *k2 = ticket(f, "st", 1, 4, 0);
    cnt_ticket *k3 = ticket(f, "st", 1, 4, 50);
    cnt_ticket *k4 = ticket(f, "st", 2, 4, 20);
    offer_queued(f, k2, 1);
    offer_queued(f, k3, 2);
    offer_queued(f, k4, 3);
    EXPECT_STATS(3, 1, 0, 0, 0, 0);             /* queued: no lease yet */
    end_free(f, k2, CNT_TICKET_QUEUED, 0);
    EXPECT_STATS(2, 1, 0, 0, 0, 1);             /* a cancel */
    assert_true(cnt_table_ticket_timeout(f->t, k3));
    cnt_table_ticket_free(f->t, k3);
    EXPECT_STATS(1, 1, 0, 1, 0, 1);             /* a timeout */
    end_free(f, k1, CNT_TICKET_GRANTED, 4);
    EXPECT_STATS(0, 1, 1, 1, 0, 1);             /* k4 granted, its lease */
    assert_true(deliver(f, k4));
    EXPECT_STATS(0, 1, 1, 1, 0, 1);
    assert_true(cnt_table_ticket_expire(f->t, k4, &released));
    EXPECT_STATS(0, 0, 1, 1, 1, 1);             /* an expiry */
    end_free(f, k4, CNT_TICKET_EXPIRED, 0);
    EXPECT_STATS(0, 0, 1, 1, 1, 1);
    /* A lease taken by renew, given back by the end. */
    cnt_ticket *k5 = ticket(f, "st", 1, 4, 0);
    offer_granted(f, k5);
    EXPECT_STATS(0, 0, 1, 1, 1, 1);
    assert_int_equal(cnt_table_ticket_renew(f->t, k5, 10, &id),
                     CNT_STATUS_OK);
    EXPECT_STATS(0, 1, 1, 1, 1, 1);
    end_free(f, k5, CNT_TICKET_GRANTED, 1);
    EXPECT_STATS(0, 0, 1, 1, 1, 1);
    /* A grant ended in flight: its lease ends with it, and it is not a
     * cancel. */
    hold(f, &f->a, "st", 4, 4);
    cnt_ticket *k6 = ticket(f, "st", 4, 4, 30);
    offer_queued(f, k6, 1);
    EXPECT_STATS(1, 0, 1, 1, 1, 1);
    cnt_table_release_all(f->t, &f->a);
    EXPECT_STATS(0, 1, 2, 1, 1, 1);
    cnt_ticket_outcome o;
    cnt_table_ticket_end(f->t, k6, &o);
    assert_false(o.free_now);
    EXPECT_STATS(0, 0, 2, 1, 1, 1);
    assert_false(deliver(f, k6));
    cnt_table_ticket_free(f->t, k6);
    assert_int_equal(get(f, "st"), 0);
#undef EXPECT_STATS
}

/* ---- A random sequence against a model of one counter ---- */

#define M_TICKETS 24
#define M_STEPS 30000

enum { M_NONE, M_QUEUED, M_FLIGHT, M_HELD, M_EXPIRED, M_ORPHAN };

typedef struct model_ticket {
    cnt_ticket *k;
    int state;
    uint32_t resources, maximum, lease_ms;
} model_ticket;

typedef struct model {
    fixture *f;
    model_ticket m[M_TICKETS];
    int queue[M_TICKETS];       /* indices into m, head first */
    unsigned qlen;
    uint32_t consumption;       /* what the counter must say */
    uint32_t held;              /* the ledger's part of it */
    bool exists;                /* the counter was made */
    size_t checked;             /* sink entries already matched */
    int expect_grants[M_TICKETS];   /* grants made by the step */
    unsigned ngrants;
    uint64_t last_lease_id;
} model;

/* The model's grant rule: heads granted while they fit their own
 * maximum. */
static void model_grant_heads(model *md)
{
    while (md->qlen > 0) {
        model_ticket *h = &md->m[md->queue[0]];
        if ((uint64_t)md->consumption + h->resources > h->maximum)
            break;
        md->consumption += h->resources;
        h->state = M_FLIGHT;
        md->expect_grants[md->ngrants++] = md->queue[0];
        memmove(md->queue, md->queue + 1, --md->qlen * sizeof(int));
    }
}

static void model_unqueue(model *md, int i)
{
    unsigned j = 0;

    while (md->queue[j] != i)
        j++;
    memmove(md->queue + j, md->queue + j + 1,
            (md->qlen - j - 1) * sizeof(int));
    md->qlen--;
}

/* After a step: the sink got exactly the grants the model made, in its
 * order, with growing lease ids; the counter and the figures agree. */
static void model_check(model *md)
{
    fixture *f = md->f;
    uint64_t leases = 0;

    assert_int_equal(f->nsunk - md->checked, md->ngrants);
    for (unsigned g = 0; g < md->ngrants; g++) {
        cnt_ticket *k = f->sunk[md->checked + g];
        assert_ptr_equal(k, md->m[md->expect_grants[g]].k);
        assert_true(k->lease_id > md->last_lease_id);
        md->last_lease_id = k->lease_id;
    }
    md->checked = f->nsunk;
    md->ngrants = 0;
    assert_int_equal(get(f, "model"), md->exists ? (long)md->consumption
                                                 : -1);
    for (int i = 0; i < M_TICKETS; i++) {
        const model_ticket *t = &md->m[i];
        if ((t->state == M_FLIGHT || t->state == M_HELD) && t->lease_ms)
            leases++;
    }
    cnt_wait_stats s = wait_stats(f);
    assert_int_equal(s.waiting, md->qlen);
    assert_int_equal(s.leases, leases);
    for (unsigned j = 0; j < md->qlen; j++)
        assert_int_equal(md->m[md->queue[j]].k->state, CNT_TICKET_QUEUED);
}

static void model_free(model *md, int i)
{
    cnt_table_ticket_free(md->f->t, md->m[i].k);
    md->m[i].k = NULL;
    md->m[i].state = M_NONE;
}

static void model_offer(model *md, int i, uint32_t x)
{
    model_ticket *t = &md->m[i];
    uint32_t res = 1 + x % 4;
    bool may_queue = (x >> 4) % 5 != 0;
    cnt_wait_result a;

    t->resources = res;
    t->maximum = res + (x >> 8) % 9;
    t->lease_ms = (x >> 12) % 2 ? 100 : 0;
    t->k = ticket(md->f, "model", t->resources, t->maximum, t->lease_ms);
    cnt_status st = offer(md->f, t->k, may_queue, &a);
    md->exists = true;
    if (md->qlen == 0 &&
        (uint64_t)md->consumption + res <= t->maximum) {
        assert_int_equal(st, CNT_STATUS_OK);
        assert_int_equal(a.position, 0);
        assert_true(t->k->lease_id > md->last_lease_id);
        md->last_lease_id = t->k->lease_id;
        md->consumption += res;
        t->state = M_HELD;
    } else if (may_queue) {
        assert_int_equal(st, CNT_STATUS_OK);
        assert_int_equal(a.position, md->qlen + 1);
        md->queue[md->qlen++] = i;
        t->state = M_QUEUED;
    } else {
        assert_int_equal(st, CNT_STATUS_RESOURCE_NOT_AVAILABLE);
        assert_int_equal(t->k->state, CNT_TICKET_NEW);
        model_free(md, i);
    }
    assert_int_equal(a.consumption, md->consumption);
}

static void model_end(model *md, int i)
{
    model_ticket *t = &md->m[i];
    cnt_ticket_outcome o;

    cnt_table_ticket_end(md->f->t, t->k, &o);
    switch (t->state) {
    case M_QUEUED:
        assert_int_equal(o.was, CNT_TICKET_QUEUED);
        assert_int_equal(o.returned, 0);
        assert_true(o.free_now);
        model_unqueue(md, i);
        model_free(md, i);
        break;
    case M_FLIGHT:
        assert_int_equal(o.was, CNT_TICKET_GRANTED);
        assert_int_equal(o.returned, t->resources);
        assert_false(o.free_now);
        md->consumption -= t->resources;
        t->state = M_ORPHAN;
        break;
    case M_HELD:
        assert_int_equal(o.was, CNT_TICKET_GRANTED);
        assert_int_equal(o.returned, t->resources);
        assert_true(o.free_now);
        md->consumption -= t->resources;
        model_free(md, i);
        break;
    case M_EXPIRED:
        assert_int_equal(o.was, CNT_TICKET_EXPIRED);
        assert_int_equal(o.returned, 0);
        assert_true(o.free_now);
        model_free(md, i);
        break;
    default:
        fail();
    }
    model_grant_heads(md);
}

/* Takes one pending grant, chosen at random (owners take their mail in
 * any order relative to each other). */
static void model_deliver(model *md, uint32_t x)
{
    fixture *f = md->f;
    size_t n = pending(f);

    if (n == 0)
        return;
    size_t pick = x % n, i;
    for (i = 0; i < f->nsunk; i++)
        if (!f->taken[i] && pick-- == 0)
            break;
    cnt_ticket *k = f->sunk[i];
    int j = 0;
    while (md->m[j].k != k)
        j++;
    bool live = deliver(f, k);
    if (md->m[j].state == M_FLIGHT) {
        assert_true(live);
        md->m[j].state = M_HELD;
    } else {
        assert_int_equal(md->m[j].state, M_ORPHAN);
        assert_false(live);
        model_free(md, j);
    }
}

/* One random step on ticket slot i. */
static void model_step(model *md, uint32_t x)
{
    fixture *f = md->f;
    int i = (int)(x % M_TICKETS);
    model_ticket *t = &md->m[i];
    uint32_t op = (x >> 5) % 10, y = x >> 9;
    uint32_t released;
    uint64_t id;

    switch (op) {
    case 0:
    case 1:
    case 2:
        if (t->state == M_NONE)
            model_offer(md, i, y);
        else if (t->state != M_ORPHAN)
            model_end(md, i);
        break;
    case 3:
        if (t->state != M_NONE && t->state != M_ORPHAN)
            model_end(md, i);
        break;
    case 4:
        if (t->state == M_NONE || t->state == M_ORPHAN ||
            t->state == M_EXPIRED)
            break;
        if (t->state == M_QUEUED) {
            assert_true(cnt_table_ticket_timeout(f->t, t->k));
            model_unqueue(md, i);
            model_free(md, i);
            model_grant_heads(md);
        } else {
            assert_false(cnt_table_ticket_timeout(f->t, t->k));
        }
        break;
    case 5:
        if (t->state == M_NONE || t->state == M_ORPHAN)
            break;
        released = 0;
        if (t->state == M_HELD) {
            assert_true(cnt_table_ticket_expire(f->t, t->k, &released));
            assert_int_equal(released, t->resources);
            md->consumption -= t->resources;
            t->state = M_EXPIRED;
            model_grant_heads(md);
        } else {
            assert_false(cnt_table_ticket_expire(f->t, t->k, &released));
        }
        break;
    case 6: {
        if (t->state == M_NONE || t->state == M_ORPHAN)
            break;
        cnt_status st = cnt_table_ticket_renew(f->t, t->k, 50, &id);
        if (t->state == M_HELD) {
            assert_int_equal(st, CNT_STATUS_OK);
            assert_int_equal(id, t->k->lease_id);
            t->lease_ms = 50;
        } else if (t->state == M_EXPIRED) {
            assert_int_equal(st, CNT_STATUS_LEASE_EXPIRED);
        } else {
            assert_int_equal(st, CNT_STATUS_NOT_ACQUIRED);
        }
        break;
    }
    case 7:
        model_deliver(md, y);
        break;
    case 8: {
        uint32_t r = 1 + y % 3, maximum = r + (y >> 2) % 10;
        cnt_status st = cnt_table_acquire(f->t, &f->a, CNT_NAME("model"),
                                          r, maximum);
        md->exists = true;
        if (md->qlen == 0 &&
            (uint64_t)md->consumption + r <= maximum) {
            assert_int_equal(st, CNT_STATUS_OK);
            md->consumption += r;
            md->held += r;
        } else {
            assert_int_equal(st, CNT_STATUS_RESOURCE_NOT_AVAILABLE);
        }
        break;
    }
    default:
        if (md->held == 0)
            break;
        if (y % 4 == 0) {
            cnt_table_release_all(f->t, &f->a);
            md->consumption -= md->held;
            md->held = 0;
        } else {
            uint32_t r = 1 + y % md->held;
            unhold(f, &f->a, "model", r);
            md->consumption -= r;
            md->held -= r;
        }
        model_grant_heads(md);
        break;
    }
}

/* Thousands of random offers, ends, timeouts, expiries, renewals,
 * deliveries and reference commands on one counter, each checked against
 * the model; at the end every ticket is ended and everything is zero. */
static void test_random_against_model(void **state)
{
    static model md;
    uint32_t seed = 0x1b873593u;
    unsigned long queued_max = 0;

    memset(&md, 0, sizeof md);
    md.f = *state;
    for (int step = 0; step < M_STEPS; step++) {
        uint32_t x = seed;
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        model_step(&md, x);
        model_check(&md);
        if (md.qlen > queued_max)
            queued_max = md.qlen;
    }
    cnt_wait_stats s = wait_stats(md.f);
    print_message("grants from the queue %llu, timeouts %llu, expirations "
                  "%llu, cancels %llu; longest queue %lu\n",
                  (unsigned long long)s.queue_grants,
                  (unsigned long long)s.timeouts,
                  (unsigned long long)s.expirations,
                  (unsigned long long)s.cancels, queued_max);
    assert_true(s.queue_grants > 100 && s.timeouts > 10 &&
                s.expirations > 10 && s.cancels > 10 && queued_max >= 5);
    /* Every owner ends its tickets, in slot order, and takes its mail. */
    for (int i = 0; i < M_TICKETS; i++)
        if (md.m[i].state != M_NONE && md.m[i].state != M_ORPHAN) {
            model_end(&md, i);
            model_check(&md);
        }
    while (pending(md.f) > 0) {
        model_deliver(&md, 0);
        model_check(&md);
    }
    for (int i = 0; i < M_TICKETS; i++)
        if (md.m[i].state == M_HELD) {
            model_end(&md, i);
            model_check(&md);
        }
    cnt_table_release_all(md.f->t, &md.f->a);
    md.consumption -= md.held;
    md.held = 0;
    for (int i = 0; i < M_TICKETS; i++)
        assert_int_equal(md.m[i].state, M_NONE);
    assert_int_equal(md.consumption, 0);
    assert_int_equal(get(md.f, "model"), 0);
    s = wait_stats(md.f);
    assert_int_equal(s.waiting, 0);
    assert_int_equal(s.leases, 0);
    assert_int_equal(used_memory(md.f),
                     md.f->base_memory + table_counter_size(5));
}

/* ---- Threads racing releases and ends against each other's grants ---- */

#define TH_THREADS 4
#define TH_NAMES 3
#define TH_SLOTS 6
#define TH_OPS 20000

enum { S_NONE, S_WAIT, S_HELD, S_EXPIRED, S_ORPHAN };

typedef struct th_worker {
    pthread_t thread;
    unsigned id;
    cnt_table *t;
    cnt_holdings ledger;
    uint32_t held[TH_NAMES];
    pthread_mutex_t mail_lock;  /* guards the mailbox */
    cnt_grant_list mail;
    cnt_ticket *slot[TH_SLOTS];
    int st[TH_SLOTS];
    uint64_t lease_id[TH_SLOTS];
    /* what this worker saw, to compare with the table's figures */
    unsigned long failures, delivered, cancels, timeouts, expirations;
} th_worker;

static th_worker th_workers[TH_THREADS];
static const char *const th_names[TH_NAMES] = { "hot0", "hot1", "hot2" };
static pthread_barrier_t th_start;      /* the workers begin together */
static _Thread_local th_worker *th_self;
static atomic_ulong th_foreign_grants;  /* granted by another worker */

/* The grant sink of the threaded test: posts the ticket to its owner's
 * mailbox (whichever thread granted it). */
static void th_sink(void *ctx, cnt_ticket *k)
{
    th_worker *w = &((th_worker *)ctx)[k->worker];

    if (th_self != w)
        atomic_fetch_add(&th_foreign_grants, 1);
    pthread_mutex_lock(&w->mail_lock);
    STAILQ_INSERT_TAIL(&w->mail, k, grant_link);
    pthread_mutex_unlock(&w->mail_lock);
}

/* A check inside a thread: counted, since asserting there would not stop
 * the test cleanly. */
#define TH_CHECK(w, cond)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            (w)->failures++;                                                \
            fprintf(stderr, "thread %u: %s:%d: %s\n", (w)->id, __FILE__,    \
                    __LINE__, #cond);                                       \
        }                                                                   \
    } while (0)

static int th_slot_of(th_worker *w, const cnt_ticket *k)
{
    for (int i = 0; i < TH_SLOTS; i++)
        if (w->slot[i] == k)
            return i;
    return -1;
}

static void th_free(th_worker *w, int i)
{
    cnt_table_ticket_free(w->t, w->slot[i]);
    w->slot[i] = NULL;
    w->st[i] = S_NONE;
}

/* Takes the worker's mail: each grant is delivered, live ones become
 * held, orphans are freed. */
static void th_take_mail(th_worker *w)
{
    cnt_grant_list mail = STAILQ_HEAD_INITIALIZER(mail);
    cnt_ticket *k;

    pthread_mutex_lock(&w->mail_lock);
    STAILQ_CONCAT(&mail, &w->mail);
    pthread_mutex_unlock(&w->mail_lock);
    while ((k = STAILQ_FIRST(&mail)) != NULL) {
        STAILQ_REMOVE_HEAD(&mail, grant_link);
        int i = th_slot_of(w, k);
        uint32_t consumption;
        TH_CHECK(w, i >= 0);
        if (i < 0)
            return;
        bool live = cnt_table_ticket_delivered(w->t, k, &consumption);
        w->delivered++;
        if (w->st[i] == S_WAIT) {
            TH_CHECK(w, live);
            TH_CHECK(w, consumption >= k->resources);
            w->st[i] = S_HELD;
            w->lease_id[i] = k->lease_id;
        } else {
            TH_CHECK(w, w->st[i] == S_ORPHAN);
            TH_CHECK(w, !live);
            th_free(w, i);
        }
    }
}

/* Ends slot i's ticket for its owner. */
static void th_end(th_worker *w, int i)
{
    cnt_ticket *k = w->slot[i];
    cnt_ticket_outcome o;

    cnt_table_ticket_end(w->t, k, &o);
    switch (w->st[i]) {
    case S_WAIT:
        /* Queued still, or granted by someone and on its way here. */
        if (o.was == CNT_TICKET_QUEUED) {
            TH_CHECK(w, o.returned == 0 && o.free_now);
            w->cancels++;
            th_free(w, i);
        } else {
            TH_CHECK(w, o.was == CNT_TICKET_GRANTED);
            TH_CHECK(w, o.returned == k->resources && !o.free_now);
            w->st[i] = S_ORPHAN;
        }
        break;
    case S_HELD:
        TH_CHECK(w, o.was == CNT_TICKET_GRANTED);
        TH_CHECK(w, o.returned == k->resources && o.free_now);
        th_free(w, i);
        break;
    case S_EXPIRED:
        TH_CHECK(w, o.was == CNT_TICKET_EXPIRED);
        TH_CHECK(w, o.returned == 0 && o.free_now);
        th_free(w, i);
        break;
    default:
        w->failures++;
    }
}

/* One random step of a worker on its own slot i. */
static void th_step(th_worker *w, int i, uint32_t x)
{
    uint32_t op = x % 8, released;
    uint64_t id;
    cnt_wait_result a;

    switch (w->st[i]) {
    case S_NONE: {
        const char *name = th_names[i % TH_NAMES];
        cnt_ticket *k = cnt_table_ticket_new(w->t, (const uint8_t *)name,
                                             (uint16_t)strlen(name));
        TH_CHECK(w, k != NULL);
        if (k == NULL)
            return;
        k->resources = 1 + (x >> 3) % 3;
        k->maximum = k->resources + 1 + (x >> 5) % 5;
        k->lease_ms = (x >> 8) % 2 ? 1000 : 0;
        k->owner = w;
        k->worker = (uint16_t)w->id;
        k->opaque = x;
        cnt_table_place p;
        cnt_table_place_of(w->t, k->name, k->name_len, &p);
        bool may_queue = (x >> 9) % 8 != 0;
        cnt_status st = cnt_table_wait_acquire_at(w->t, &p, k, may_queue,
                                                  &a);
        w->slot[i] = k;
        if (st == CNT_STATUS_OK && a.position == 0) {
            w->st[i] = S_HELD;
            w->lease_id[i] = k->lease_id;
        } else if (st == CNT_STATUS_OK) {
            w->st[i] = S_WAIT;
        } else {
            TH_CHECK(w, !may_queue &&
                        st == CNT_STATUS_RESOURCE_NOT_AVAILABLE);
            th_free(w, i);
        }
        break;
    }
    case S_WAIT:
        if (op < 2) {
            th_end(w, i);
        } else if (op == 2) {
            if (cnt_table_ticket_timeout(w->t, w->slot[i])) {
                w->timeouts++;
                th_free(w, i);
            }
        } else if (op == 3) {
            /* Neither renewed nor expired before its grant arrives. */
            TH_CHECK(w, cnt_table_ticket_renew(w->t, w->slot[i], 10, &id) ==
                            CNT_STATUS_NOT_ACQUIRED);
            TH_CHECK(w, !cnt_table_ticket_expire(w->t, w->slot[i],
                                                 &released));
        }
        break;
    case S_HELD:
        if (op < 3) {
            th_end(w, i);
        } else if (op == 3) {
            TH_CHECK(w, cnt_table_ticket_expire(w->t, w->slot[i],
                                                &released));
            TH_CHECK(w, released == w->slot[i]->resources);
            w->expirations++;
            w->st[i] = S_EXPIRED;
        } else if (op == 4) {
            TH_CHECK(w, cnt_table_ticket_renew(w->t, w->slot[i], 10, &id) ==
                            CNT_STATUS_OK);
            TH_CHECK(w, id == w->lease_id[i]);
        }
        break;
    case S_EXPIRED:
        if (op < 4)
            th_end(w, i);
        else
            TH_CHECK(w, cnt_table_ticket_renew(w->t, w->slot[i], 10, &id) ==
                            CNT_STATUS_LEASE_EXPIRED);
        break;
    default:
        break;                  /* an orphan waits for its mail */
    }
}

/* Reference commands through the worker's ledger on the same counters:
 * their releases grant other workers' tickets too. */
static void th_reference(th_worker *w, uint32_t x)
{
    unsigned n = x % TH_NAMES;
    const uint8_t *name = (const uint8_t *)th_names[n];
    uint16_t len = (uint16_t)strlen(th_names[n]);

    if ((x >> 2) % 2 == 0) {
        cnt_status st = cnt_table_acquire(w->t, &w->ledger, name, len, 1, 4);
        if (st == CNT_STATUS_OK)
            w->held[n]++;
        else
            TH_CHECK(w, st == CNT_STATUS_RESOURCE_NOT_AVAILABLE);
    } else if ((x >> 3) % 8 == 0) {
        cnt_table_release_all(w->t, &w->ledger);
        memset(w->held, 0, sizeof w->held);
    } else if (w->held[n] > 0) {
        TH_CHECK(w, cnt_table_release(w->t, &w->ledger, name, len,
                                      w->held[n]) == CNT_STATUS_OK);
        w->held[n] = 0;
    }
}

static void *th_main(void *arg)
{
    th_worker *w = arg;
    uint32_t seed = 0x85ebca6bu * (w->id + 1);

    th_self = w;
    pthread_barrier_wait(&th_start);
    for (int op = 0; op < TH_OPS; op++) {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        uint32_t x = seed;
        if (x % 16 == 0)
            th_reference(w, x >> 4);
        else
            th_step(w, (int)((x >> 4) % TH_SLOTS), x >> 8);
        /* Mail is taken now and then, so grants stay in flight a while
         * and ends, timeouts and expiries meet them there. */
        if ((x >> 24) % 4 == 0)
            th_take_mail(w);
    }
    /* The connection closes: every ticket ended, the ledger released,
     * then the grants still on their way are taken and freed. */
    for (int i = 0; i < TH_SLOTS; i++)
        if (w->st[i] != S_NONE && w->st[i] != S_ORPHAN)
            th_end(w, i);
    cnt_table_release_all(w->t, &w->ledger);
    memset(w->held, 0, sizeof w->held);
    for (;;) {
        th_take_mail(w);
        int left = 0;
        for (int i = 0; i < TH_SLOTS; i++)
            left += w->st[i] != S_NONE;
        if (left == 0 || w->failures > 0)
            break;
        sched_yield();
    }
    return NULL;
}

/* Workers own tickets on a few shared counters and race their releases
 * and ends against the grants of each other's tickets, each taking its
 * own mail; afterwards every counter is at 0, nobody waits, the figures
 * add up, and nothing leaked. */
static void test_threads_race(void **state)
{
    fixture *f = *state;
    cnt_grant_sink sink = { .fn = th_sink, .ctx = th_workers };
    unsigned long delivered = 0, cancels = 0, timeouts = 0, expirations = 0;

    cnt_table_set_grant_sink(f->t, &sink);
    atomic_init(&th_foreign_grants, 0);
    assert_int_equal(pthread_barrier_init(&th_start, NULL, TH_THREADS), 0);
    for (unsigned i = 0; i < TH_THREADS; i++) {
        th_worker *w = &th_workers[i];
        memset(w, 0, sizeof *w);
        w->id = i;
        w->t = f->t;
        cnt_holdings_init(&w->ledger);
        assert_int_equal(pthread_mutex_init(&w->mail_lock, NULL), 0);
        STAILQ_INIT(&w->mail);
    }
    for (unsigned i = 0; i < TH_THREADS; i++)
        assert_int_equal(pthread_create(&th_workers[i].thread, NULL, th_main,
                                        &th_workers[i]), 0);
    for (unsigned i = 0; i < TH_THREADS; i++)
        pthread_join(th_workers[i].thread, NULL);
    pthread_barrier_destroy(&th_start);
    for (unsigned i = 0; i < TH_THREADS; i++) {
        th_worker *w = &th_workers[i];
        assert_int_equal(w->failures, 0);
        assert_true(STAILQ_EMPTY(&w->mail));
        for (int j = 0; j < TH_SLOTS; j++)
            assert_null(w->slot[j]);
        delivered += w->delivered;
        cancels += w->cancels;
        timeouts += w->timeouts;
        expirations += w->expirations;
        cnt_holdings_destroy(&w->ledger);
        pthread_mutex_destroy(&w->mail_lock);
    }
    cnt_wait_stats s = wait_stats(f);
    unsigned long foreign = atomic_load(&th_foreign_grants);
    print_message("grants from queues %llu (%lu by another worker), "
                  "cancels %lu, timeouts %lu, expirations %lu\n",
                  (unsigned long long)s.queue_grants, foreign, cancels,
                  timeouts, expirations);
    assert_int_equal(s.waiting, 0);
    assert_int_equal(s.leases, 0);
    assert_int_equal(s.queue_grants, delivered);
    assert_int_equal(s.cancels, cancels);
    assert_int_equal(s.timeouts, timeouts);
    assert_int_equal(s.expirations, expirations);
    assert_true(s.queue_grants > 100);
    /* How many grants crossed from one worker to another is up to the
     * scheduler (on a loaded two-core machine the threads may barely
     * overlap), so it is reported above, not asserted; the checks here
     * hold whichever way the race went. */
    for (unsigned n = 0; n < TH_NAMES; n++)
        assert_int_equal(get(f, th_names[n]), 0);
    assert_int_equal(queues_listed(f), 0);
    /* Every ticket and queue was given back; the counters go next. */
    cnt_fake_clock_advance(&f->clock, INTERVAL * 1000u);
    assert_int_equal(table_sweep(f->t, 0, cnt_table_buckets(f->t)),
                     TH_NAMES);
    assert_int_equal(used_memory(f), f->base_memory);
}

/* Runs the waiting-acquisition tests. */
/* The peak Dump reports for a counter, or -1 when it is not listed. */
static bool peak_collect(void *ctx, const uint8_t *name, uint16_t len,
                         uint32_t current, uint32_t max_in_window)
{
    long *peak = ctx;

    (void)current;
    if (len == 4 && memcmp(name, "peak", 4) == 0)
        *peak = max_in_window;
    return true;
}

/* A grant raises its counter's peak in the window, whether made at once
 * or from the queue: after the tickets are ended (consumption back down,
 * same window), Dump still reports the highest consumption reached. */
static void test_grant_raises_peak(void **state)
{
    fixture *f = *state;
    cnt_map_cursor cur = { 0 };
    long peak = -1;

    cnt_ticket *k1 = ticket(f, "peak", 5, 10, 0);
    offer_granted(f, k1);                       /* 5, at once */
    end_free(f, k1, CNT_TICKET_GRANTED, 5);
    assert_int_equal(get(f, "peak"), 0);
    assert_true(cnt_table_dump(f->t, &cur, peak_collect, &peak));
    assert_int_equal(peak, 5);

    hold(f, &f->a, "peak", 4, 10);
    cnt_ticket *k2 = ticket(f, "peak", 8, 10, 0);
    offer_queued(f, k2, 1);
    unhold(f, &f->a, "peak", 2);                /* 2 + 8: granted, 10 */
    assert_true(deliver(f, k2));
    end_free(f, k2, CNT_TICKET_GRANTED, 8);
    cnt_table_release_all(f->t, &f->a);
    assert_int_equal(get(f, "peak"), 0);
    peak = -1;
    memset(&cur, 0, sizeof cur);
    assert_true(cnt_table_dump(f->t, &cur, peak_collect, &peak));
    assert_int_equal(peak, 10);
}

/* Two counters whose queues hang off the same stripe's list: each
 * release grants its own counter's waiters, never the other's, however
 * the two queues are ordered in the list. */
static void test_queues_share_a_stripe(void **state)
{
    fixture *f = *state;
    char names[2][16];
    cnt_table_place p0, p;
    int n = 0;

    /* Two names in one bucket (so one stripe) of the 64. */
    snprintf(names[0], sizeof names[0], "s0");
    cnt_table_place_of(f->t, (const uint8_t *)names[0], 2, &p0);
    for (int i = 1; i < 10000 && n == 0; i++) {
        char name[16];
        int len = snprintf(name, sizeof name, "s%d", i);
        cnt_table_place_of(f->t, (const uint8_t *)name, (uint16_t)len, &p);
        if (p.bucket % CNT_MAP_STRIPES == p0.bucket % CNT_MAP_STRIPES) {
            memcpy(names[1], name, (size_t)len + 1);
            n = 1;
        }
    }
    assert_int_equal(n, 1);

    cnt_ticket *k[2];
    for (int i = 0; i < 2; i++) {
        hold(f, &f->a, names[i], 3, 3);
        k[i] = ticket(f, names[i], 2, 3, 0);
        offer_queued(f, k[i], 1);
    }
    /* The older queue (names[0]) is behind the newer one in the list. */
    for (int r = 0; r < 2; r++) {
        unhold(f, &f->a, names[r], 3);
        assert_int_equal(f->nsunk, (size_t)r + 1);
        assert_ptr_equal(sunk_at(f, (size_t)r), k[r]);
        assert_int_equal(get(f, names[r]), 2);
        assert_int_equal(get(f, names[1 - r]), r == 0 ? 3 : 2);
        assert_true(deliver(f, k[r]));
    }
    assert_int_equal(queues_listed(f), 0);
    for (int i = 0; i < 2; i++)
        end_free(f, k[i], CNT_TICKET_GRANTED, 2);
    cnt_table_release_all(f->t, &f->a);
}

/* Ends queued k for its owner without freeing it. */
static void end_queued_kept(fixture *f, cnt_ticket *k)
{
    cnt_ticket_outcome o;

    cnt_table_ticket_end(f->t, k, &o);
    assert_int_equal(o.was, CNT_TICKET_QUEUED);
    assert_true(o.free_now);
}

/* A pinned call's callback: counts its calls, returns what ctx says. */
typedef struct pin_log {
    unsigned calls;
    bool answer;
    cnt_ticket *seen;
} pin_log;

static bool pin_fn(void *ctx, cnt_ticket *k)
{
    pin_log *log = ctx;

    log->calls++;
    log->seen = k;
    return log->answer;
}

/* cnt_table_ticket_pinned runs its callback only while the grant is in
 * flight to an owner that has not ended it: not for a queued ticket, one
 * granted at once, one delivered, or one ended in flight. */
static void test_pinned_only_in_flight(void **state)
{
    fixture *f = *state;
    pin_log log = { .answer = true };
    cnt_ticket_outcome o;

    hold(f, &f->a, "pin", 3, 3);
    cnt_ticket *k1 = ticket(f, "pin", 2, 3, 0);
    offer_queued(f, k1, 1);
    assert_false(cnt_table_ticket_pinned(f->t, k1, pin_fn, &log));
    assert_int_equal(log.calls, 0);
    unhold(f, &f->a, "pin", 3);                 /* k1 granted, in flight */
    assert_ptr_equal(sunk_at(f, 0), k1);
    assert_true(cnt_table_ticket_pinned(f->t, k1, pin_fn, &log));
    assert_int_equal(log.calls, 1);
    assert_ptr_equal(log.seen, k1);
    log.answer = false;                         /* fn's answer passes on */
    assert_false(cnt_table_ticket_pinned(f->t, k1, pin_fn, &log));
    assert_int_equal(log.calls, 2);
    log.answer = true;
    assert_true(deliver(f, k1));
    assert_false(cnt_table_ticket_pinned(f->t, k1, pin_fn, &log));
    assert_int_equal(log.calls, 2);

    /* Granted at once: never in flight. */
    cnt_ticket *k2 = ticket(f, "pin", 1, 3, 0);
    offer_granted(f, k2);
    assert_false(cnt_table_ticket_pinned(f->t, k2, pin_fn, &log));
    assert_int_equal(log.calls, 2);

    /* Ended while in flight. */
    cnt_ticket *k3 = ticket(f, "pin", 2, 3, 0);
    offer_queued(f, k3, 1);
    end_free(f, k1, CNT_TICKET_GRANTED, 2);     /* k3 granted, in flight */
    assert_ptr_equal(sunk_at(f, 1), k3);
    cnt_table_ticket_end(f->t, k3, &o);
    assert_false(o.free_now);
    assert_false(cnt_table_ticket_pinned(f->t, k3, pin_fn, &log));
    assert_int_equal(log.calls, 2);
    assert_false(deliver(f, k3));
    cnt_table_ticket_free(f->t, k3);
    end_free(f, k2, CNT_TICKET_GRANTED, 1);
    assert_int_equal(get(f, "pin"), 0);
}

/* A ticket that leaves the queue without a grant (cancelled from the
 * middle of the line, or timed out) has lease id 0 and no grant link,
 * although the queue's links shared those words while it waited. */
static void test_unqueued_has_no_lease(void **state)
{
    fixture *f = *state;
    cnt_ticket *k[3];

    hold(f, &f->a, "ul", 3, 3);
    for (int i = 0; i < 3; i++) {
        k[i] = ticket(f, "ul", 1, 3, 0);
        offer_queued(f, k[i], (uint32_t)i + 1);
    }
    end_queued_kept(f, k[1]);
    assert_int_equal(k[1]->lease_id, 0);
    assert_null(STAILQ_NEXT(k[1], grant_link));
    cnt_table_ticket_free(f->t, k[1]);
    assert_true(cnt_table_ticket_timeout(f->t, k[0]));
    assert_int_equal(k[0]->lease_id, 0);
    assert_null(STAILQ_NEXT(k[0], grant_link));
    cnt_table_ticket_free(f->t, k[0]);
    end_free(f, k[2], CNT_TICKET_QUEUED, 0);
    cnt_table_release_all(f->t, &f->a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grant_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_positions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fifo_no_barging, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_acquire_does_not_overtake,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_grants_head, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_grants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew, setup, teardown),
        cmocka_unit_test_setup_teardown(test_may_queue_false, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_own_maximum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sums_do_not_wrap, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_accounting, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_memory_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_memory, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_gc_spares_waiters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_grant_carries_consumption,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_queues_listing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wait_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_against_model, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_threads_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grant_raises_peak, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_queues_share_a_stripe, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pinned_only_in_flight, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unqueued_has_no_lease, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
