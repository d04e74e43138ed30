/* test_mail.c: a worker's mailbox on its own: messages come out in the
 * order they went in (across ring growth and wrap-around), the doorbell
 * rings with each post and on demand, posts from many threads all arrive
 * in each thread's order, and a post that cannot get memory queues
 * nothing; surveys go out and come home through the mailboxes, merged
 * nearest first and freed exactly once however their askers leave; a
 * worker answers a batch of surveys from one walk, each its own prefix;
 * and the gate lets no more than its cap of surveys out at once. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/core/ticket.h"
#include "engine/server/mail.h"
#include "tests/engine_fake.h"

/* Whether the doorbell is rung right now. */
static bool rung(const cnt_mailbox *mb)
{
    struct pollfd p = {.fd = cnt_mailbox_doorbell(mb), .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

/* Posts a new-connection message carrying fd. */
static void post_fd(cnt_mailbox *mb, int fd)
{
    cnt_mail m = {.fd = fd};
    assert_true(cnt_mailbox_post(mb, &m));
}

static void test_order_across_growth(void **state)
{
    cnt_mailbox mb;
    cnt_mail out[512];
    bool more;
    (void)state;
    assert_int_equal(cnt_mailbox_init(&mb), 0);
    assert_int_equal(cnt_mailbox_take(&mb, out, 8, &more), 0);
    assert_false(more);
    /* Take some first, so the ring's start is not at its front when it
     * has to grow. */
    for (int i = 0; i < 40; i++)
        post_fd(&mb, i);
    assert_int_equal(cnt_mailbox_take(&mb, out, 30, &more), 30);
    assert_true(more);
    for (int i = 0; i < 30; i++)
        assert_int_equal(out[i].fd, i);
    for (int i = 40; i < 300; i++)
        post_fd(&mb, i);
    size_t n = cnt_mailbox_take(&mb, out, 100, &more);
    assert_int_equal(n, 100);
    assert_true(more);
    n += cnt_mailbox_take(&mb, out + n, 512 - n, &more);
    assert_int_equal(n, 270);
    assert_false(more);
    for (int i = 0; i < 270; i++) {
        assert_int_equal(out[i].fd, 30 + i);
    }
    cnt_mailbox_destroy(&mb);
}

static void test_grants_in_order(void **state)
{
    cnt_mailbox mb;
    cnt_mail out[4];
    cnt_ticket k[3];
    bool more;
    (void)state;
    memset(k, 0, sizeof(k));
    cnt_grant_list g = STAILQ_HEAD_INITIALIZER(g);
    assert_int_equal(cnt_mailbox_init(&mb), 0);
    cnt_mailbox_take_grants(&mb, &g);
    assert_true(STAILQ_EMPTY(&g));
    cnt_mailbox_post_grant(&mb, &k[0]);
    post_fd(&mb, 5);
    cnt_mailbox_post_grant(&mb, &k[1]);
    cnt_mailbox_post_grant(&mb, &k[2]);
    /* Grants and new connections are separate queues, each in order. */
    assert_int_equal(cnt_mailbox_take(&mb, out, 4, &more), 1);
    assert_int_equal(out[0].fd, 5);
    cnt_mailbox_take_grants(&mb, &g);
    assert_ptr_equal(STAILQ_FIRST(&g), &k[0]);
    assert_ptr_equal(STAILQ_NEXT(&k[0], grant_link), &k[1]);
    assert_ptr_equal(STAILQ_NEXT(&k[1], grant_link), &k[2]);
    assert_null(STAILQ_NEXT(&k[2], grant_link));
    /* Taken once: the mailbox is empty again, and what comes later is
     * appended behind what the taker still has. */
    cnt_grant_list none = STAILQ_HEAD_INITIALIZER(none);
    cnt_mailbox_take_grants(&mb, &none);
    assert_true(STAILQ_EMPTY(&none));
    cnt_ticket late;
    memset(&late, 0, sizeof(late));
    cnt_mailbox_post_grant(&mb, &late);
    cnt_mailbox_take_grants(&mb, &g);
    assert_ptr_equal(STAILQ_NEXT(&k[2], grant_link), &late);
    assert_null(STAILQ_NEXT(&late, grant_link));
    /* The doorbell rang for them. */
    assert_int_equal(cnt_mailbox_answer(&mb), 0);
    cnt_mailbox_destroy(&mb);
}

static void test_doorbell(void **state)
{
    cnt_mailbox mb;
    cnt_mail out[4];
    bool more;
    (void)state;
    assert_int_equal(cnt_mailbox_init(&mb), 0);
    assert_false(rung(&mb));
    assert_int_equal(cnt_mailbox_answer(&mb), EAGAIN);
    /* Two posts, one wake-up: the rings add up in the eventfd. */
    post_fd(&mb, 1);
    post_fd(&mb, 2);
    assert_true(rung(&mb));
    assert_int_equal(cnt_mailbox_answer(&mb), 0);
    assert_false(rung(&mb));
    assert_int_equal(cnt_mailbox_take(&mb, out, 4, &more), 2);
    /* A ring without mail (a stop request) wakes too. */
    cnt_mailbox_ring(&mb);
    assert_true(rung(&mb));
    assert_int_equal(cnt_mailbox_answer(&mb), 0);
    assert_int_equal(cnt_mailbox_take(&mb, out, 4, &more), 0);
    cnt_mailbox_destroy(&mb);
}

static void test_post_without_memory(void **state)
{
    cnt_mailbox mb;
    cnt_mail out[4];
    bool more;
    (void)state;
    assert_int_equal(cnt_mailbox_init(&mb), 0);
    /* The first post needs the ring: it fails, queues and rings nothing. */
    cnt_mail m = {.fd = 3};
    cnt_fake_alloc_fail_at(1, 0);
    assert_false(cnt_mailbox_post(&mb, &m));
    assert_true(cnt_fake_alloc_injected());
    cnt_fake_alloc_fail_at(0, 0);
    assert_false(rung(&mb));
    assert_int_equal(cnt_mailbox_take(&mb, out, 4, &more), 0);
    post_fd(&mb, 4);
    assert_int_equal(cnt_mailbox_take(&mb, out, 4, &more), 1);
    assert_int_equal(out[0].fd, 4);
    cnt_mailbox_destroy(&mb);
}

enum { SENDERS = 4, EACH = 5000 };

/* One sending thread: its index and the mailbox. */
typedef struct sender {
    cnt_mailbox *mb;
    uint32_t index;
} sender;

/* Posts EACH messages numbered in order, the sender in the fd's high
 * bits and the number in its low 16. */
static void *send_main(void *arg)
{
    sender *s = arg;
    for (uint32_t i = 0; i < EACH; i++) {
        cnt_mail m = {.fd = (int)(s->index << 16 | i)};
        while (!cnt_mailbox_post(s->mb, &m))
            ;
    }
    return NULL;
}

static void test_many_senders(void **state)
{
    cnt_mailbox mb;
    pthread_t threads[SENDERS];
    sender senders[SENDERS];
    uint64_t next[SENDERS] = {0};
    cnt_mail out[64];
    bool more;
    (void)state;
    assert_int_equal(cnt_mailbox_init(&mb), 0);
    for (uint32_t t = 0; t < SENDERS; t++) {
        senders[t] = (sender){&mb, t};
        assert_int_equal(pthread_create(&threads[t], NULL, send_main,
                                        &senders[t]), 0);
    }
    /* Take as a worker does: wait for the doorbell, answer it, take. */
    unsigned got = 0;
    while (got < SENDERS * EACH) {
        struct pollfd p = {.fd = cnt_mailbox_doorbell(&mb), .events = POLLIN};
        assert_true(poll(&p, 1, 10000) == 1);
        cnt_mailbox_answer(&mb);
        do {
            size_t n = cnt_mailbox_take(&mb, out, 64, &more);
            for (size_t k = 0; k < n; k++) {
                uint32_t t = (uint32_t)out[k].fd >> 16;
                assert_true(t < SENDERS);
                assert_true((uint32_t)(out[k].fd & 0xffff) == next[t]);
                next[t]++;
            }
            got += (unsigned)n;
        } while (more);
    }
    for (uint32_t t = 0; t < SENDERS; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(next[t], EACH);
    }
    assert_int_equal(cnt_mailbox_take(&mb, out, 64, &more), 0);
    cnt_mailbox_destroy(&mb);
}

/* ---- Surveys (survey.h) ---- */

/* A worker's part: one lease due at deadline, named "w<worker>". */
static void survey_part(cnt_survey *sv, unsigned worker, uint64_t deadline,
                        bool *last)
{
    cnt_lease_top part;
    char name[8];
    int n = snprintf(name, sizeof name, "w%u", worker);

    cnt_lease_top_init(&part, sv->top.want);
    assert_true(cnt_lease_top_offer(&part, deadline, 100 + worker, 1,
                                    (const uint8_t *)name, (uint16_t)n));
    *last = cnt_survey_answer(sv, &part);
    assert_int_equal(part.count, 0);
}

/* Posted to two other workers and back home through the mailboxes: each
 * link travels alone, the last answer says so, the merged answer is
 * nearest first, and the references free it whichever lets go last; an
 * orphaned survey is still answered and freed. */
static void test_survey_round_trip(void **state)
{
    cnt_mailbox mb[3];
    long live = cnt_fake_alloc_live();
    bool last;
    (void)state;
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(cnt_mailbox_init(&mb[i]), 0);
    for (int orphan = 0; orphan < 2; orphan++) {
        int me = 7;
        cnt_survey *sv = cnt_survey_new(3, 0, 2, &me);
        assert_non_null(sv);
        survey_part(sv, 0, 300, &last);
        assert_false(last);
        for (unsigned i = 1; i < 3; i++) {
            cnt_survey_hold(sv);
            cnt_mailbox_post_survey(&mb[i], &sv->links[i]);
        }
        assert_false(cnt_survey_ready(sv));
        if (orphan)
            cnt_survey_orphan(sv);
        for (unsigned i = 1; i < 3; i++) {
            cnt_survey_list l = STAILQ_HEAD_INITIALIZER(l);
            assert_int_equal(cnt_mailbox_answer(&mb[i]), 0);
            cnt_mailbox_take_surveys(&mb[i], &l);
            assert_ptr_equal(STAILQ_FIRST(&l), &sv->links[i]);
            assert_null(STAILQ_NEXT(STAILQ_FIRST(&l), next));
            survey_part(sv, i, 300 - 100 * i, &last);
            assert_int_equal(last, i == 2);
            if (last)
                cnt_mailbox_post_survey(&mb[0], &sv->links[0]);
            else
                cnt_survey_put(sv);
        }
        cnt_survey_list home = STAILQ_HEAD_INITIALIZER(home);
        cnt_mailbox_take_surveys(&mb[0], &home);
        assert_ptr_equal(STAILQ_FIRST(&home), &sv->links[0]);
        assert_true(cnt_survey_ready(sv));
        if (orphan) {
            assert_null(cnt_survey_requester(sv));
        } else {
            assert_ptr_equal(cnt_survey_requester(sv), &me);
            /* Nearest first, at most the two wanted. */
            assert_int_equal(sv->top.count, 2);
            assert_memory_equal(sv->top.e[0].name, "w2", 2);
            assert_memory_equal(sv->top.e[1].name, "w1", 2);
        }
        cnt_survey_put(sv);             /* the home link's */
        if (!orphan)
            cnt_survey_orphan(sv);      /* the session's, at its end */
        assert_int_equal(cnt_fake_alloc_live(), live);
    }
    /* No memory for a survey: NULL, nothing kept. */
    cnt_fake_alloc_fail_at(1, 0);
    assert_null(cnt_survey_new(2, 0, 1, NULL));
    assert_null(cnt_survey_new(0, 0, 1, NULL));
    assert_null(cnt_survey_new(2, 2, 1, NULL));
    for (unsigned i = 0; i < 3; i++)
        cnt_mailbox_destroy(&mb[i]);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* Workers answering on their own threads while the asker lets go at
 * once: every survey is answered by each and freed exactly once. */
#define SURVEY_WORKERS 3
#define SURVEYS 300
typedef struct survey_worker {
    cnt_mailbox *mb;            /* every worker's, index 0 the asker's */
    unsigned index;
} survey_worker;

static void *survey_worker_main(void *arg)
{
    survey_worker *w = arg;
    unsigned done = 0;

    while (done < SURVEYS) {
        struct pollfd p = {.fd = cnt_mailbox_doorbell(&w->mb[w->index]),
                           .events = POLLIN};
        assert_true(poll(&p, 1, 10000) == 1);
        cnt_mailbox_answer(&w->mb[w->index]);
        cnt_survey_list l = STAILQ_HEAD_INITIALIZER(l);
        cnt_survey_link *k;
        cnt_mailbox_take_surveys(&w->mb[w->index], &l);
        while ((k = STAILQ_FIRST(&l)) != NULL) {
            bool last;
            STAILQ_REMOVE_HEAD(&l, next);
            survey_part(k->survey, w->index, w->index, &last);
            if (last)
                cnt_mailbox_post_survey(&w->mb[0], &k->survey->links[0]);
            else
                cnt_survey_put(k->survey);
            done++;
        }
    }
    return NULL;
}

static void test_survey_threads(void **state)
{
    cnt_mailbox mb[SURVEY_WORKERS + 1];
    survey_worker w[SURVEY_WORKERS + 1];
    pthread_t t[SURVEY_WORKERS + 1];
    long live = cnt_fake_alloc_live();
    unsigned home = 0;
    (void)state;
    for (unsigned i = 0; i <= SURVEY_WORKERS; i++)
        assert_int_equal(cnt_mailbox_init(&mb[i]), 0);
    for (unsigned i = 1; i <= SURVEY_WORKERS; i++) {
        w[i] = (survey_worker){mb, i};
        assert_int_equal(pthread_create(&t[i], NULL, survey_worker_main,
                                        &w[i]), 0);
    }
    for (unsigned n = 0; n < SURVEYS; n++) {
        bool last;
        cnt_survey *sv = cnt_survey_new(SURVEY_WORKERS + 1, 0, 64, &home);
        assert_non_null(sv);
        survey_part(sv, 0, 0, &last);
        assert_false(last);
        for (unsigned i = 1; i <= SURVEY_WORKERS; i++) {
            cnt_survey_hold(sv);
            cnt_mailbox_post_survey(&mb[i], &sv->links[i]);
        }
        if (n % 2)
            cnt_survey_orphan(sv);      /* the asker left */
    }
    /* Home: every survey comes back once, answered by all. */
    unsigned back = 0;
    while (back < SURVEYS) {
        struct pollfd p = {.fd = cnt_mailbox_doorbell(&mb[0]),
                           .events = POLLIN};
        assert_true(poll(&p, 1, 10000) == 1);
        cnt_mailbox_answer(&mb[0]);
        cnt_survey_list l = STAILQ_HEAD_INITIALIZER(l);
        cnt_survey_link *k;
        cnt_mailbox_take_surveys(&mb[0], &l);
        while ((k = STAILQ_FIRST(&l)) != NULL) {
            cnt_survey *sv = k->survey;
            STAILQ_REMOVE_HEAD(&l, next);
            assert_true(cnt_survey_ready(sv));
            assert_int_equal(sv->top.count, SURVEY_WORKERS + 1);
            for (unsigned i = 0; i <= SURVEY_WORKERS; i++)
                assert_true(sv->top.e[i].deadline_ms == i);
            bool mine = cnt_survey_requester(sv) != NULL;
            cnt_survey_put(sv);
            if (mine)
                cnt_survey_orphan(sv);
            back++;
        }
    }
    for (unsigned i = 1; i <= SURVEY_WORKERS; i++)
        pthread_join(t[i], NULL);
    for (unsigned i = 0; i <= SURVEY_WORKERS; i++)
        cnt_mailbox_destroy(&mb[i]);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* A lease ticket named name, due at deadline_ms ms on w. */
static cnt_ticket *lease_at(cnt_wheel *w, const char *name, uint64_t id,
                            uint64_t deadline_ms)
{
    size_t len = strlen(name);
    cnt_ticket *k = calloc(1, cnt_ticket_size((uint16_t)len));

    assert_non_null(k);
    cnt_timer_init(&k->timer);
    k->lease_id = id;
    k->resources = 1;
    k->timer_kind = CNT_TIMER_LEASE;
    k->name_len = (uint16_t)len;
    memcpy(k->name, name, len);
    cnt_timer_arm(w, &k->timer, deadline_ms * UINT64_C(1000000));
    return k;
}

/* Four surveys of different wants queued in one worker's mailbox: one
 * walk answers them all, each with the nearest leases its want asks
 * for, nearest first; those it answered last are handed back to go home,
 * the others' references let go; nothing leaks. An empty batch walks
 * nothing. */
static void test_survey_batch(void **state)
{
    static const uint32_t wants[] = {1, 3, 64, 2};
    enum { NS = 4, NL = 5 };
    cnt_mailbox mb;
    cnt_wheel w;
    cnt_ticket *k[NL];
    cnt_survey *sv[NS];
    long live = cnt_fake_alloc_live();
    (void)state;

    assert_int_equal(cnt_mailbox_init(&mb), 0);
    cnt_wheel_init(&w, 1000 * UINT64_C(1000000));
    /* Armed out of order; due at 1500, 1200, 9000, 1100, 4000 ms. */
    static const uint64_t due[NL] = {1500, 1200, 9000, 1100, 4000};
    for (unsigned i = 0; i < NL; i++) {
        char name[8];
        snprintf(name, sizeof name, "k%u", i);
        k[i] = lease_at(&w, name, 10 + i, due[i]);
    }
    /* Surveys 0 and 1 have two workers (this one answers last), 2 and 3
     * three (another is still to answer). */
    for (unsigned i = 0; i < NS; i++) {
        unsigned nw = i < 2 ? 2 : 3;
        bool last;
        sv[i] = cnt_survey_new(nw, 0, wants[i], NULL);
        assert_non_null(sv[i]);
        survey_part(sv[i], 0, 100000, &last);
        assert_false(last);
        cnt_survey_hold(sv[i]);
        cnt_mailbox_post_survey(&mb, &sv[i]->links[1]);
    }
    cnt_survey_list asked = STAILQ_HEAD_INITIALIZER(asked);
    cnt_survey_list done = STAILQ_HEAD_INITIALIZER(done);
    cnt_mailbox_take_surveys(&mb, &asked);
    assert_int_equal(cnt_survey_answer_batch(&asked, &w, CNT_LEASE_WALK_MAX,
                                             &done), 1);
    assert_true(STAILQ_EMPTY(&asked));
    /* Done: surveys 0 and 1, by their home links, in order. */
    cnt_survey_link *l = STAILQ_FIRST(&done);
    assert_ptr_equal(l, &sv[0]->links[0]);
    l = STAILQ_NEXT(l, next);
    assert_ptr_equal(l, &sv[1]->links[0]);
    assert_null(STAILQ_NEXT(l, next));
    static const char *nearest[] = {"k3", "k1", "k0", "k4", "k2"};
    for (unsigned i = 0; i < NS; i++) {
        /* The walk's five leases and the first part's one (due last). */
        uint32_t n = wants[i] < NL + 1 ? wants[i] : NL + 1;
        assert_int_equal(sv[i]->top.count, n);
        for (uint32_t j = 0; j < n && j < NL; j++)
            assert_memory_equal(sv[i]->top.e[j].name, nearest[j], 2);
        assert_false(sv[i]->top.incomplete);
        assert_int_equal(cnt_survey_ready(sv[i]), i < 2);
    }
    /* A walk capped short marks every survey of its batch incomplete. */
    cnt_survey *capped = cnt_survey_new(2, 0, 4, NULL);
    assert_non_null(capped);
    cnt_survey_hold(capped);
    STAILQ_INSERT_TAIL(&asked, &capped->links[1], next);
    cnt_survey_list done2 = STAILQ_HEAD_INITIALIZER(done2);
    assert_int_equal(cnt_survey_answer_batch(&asked, &w, 2, &done2), 1);
    assert_true(STAILQ_EMPTY(&done2));      /* home is still to answer */
    assert_true(capped->top.incomplete);
    assert_true(capped->top.count <= 2);
    assert_int_equal(cnt_survey_answer_batch(&asked, &w, 2, &done2), 0);

    cnt_survey_put(capped);
    for (unsigned i = 0; i < NS; i++) {
        if (i < 2)
            cnt_survey_put(sv[i]);      /* the reference gone home */
        cnt_survey_put(sv[i]);          /* the asker's */
    }
    cnt_wheel_destroy(&w);
    for (unsigned i = 0; i < NL; i++)
        free(k[i]);
    cnt_mailbox_destroy(&mb);
    assert_int_equal(cnt_fake_alloc_live(), live);
}

/* The gate: cap slots and no more, each freed slot taken again, the
 * peak never above the cap, even with threads racing for slots. */
#define GATE_THREADS 4
#define GATE_ROUNDS 20000
static void *gate_racer(void *arg)
{
    cnt_survey_gate *g = arg;

    for (unsigned i = 0; i < GATE_ROUNDS; i++)
        if (cnt_survey_gate_enter(g)) {
            assert_true(atomic_load(&g->out) <= g->cap);
            cnt_survey_gate_leave(g);
        }
    return NULL;
}

static void test_survey_gate(void **state)
{
    cnt_survey_gate g;
    pthread_t t[GATE_THREADS];
    (void)state;

    cnt_survey_gate_init(&g, 0);
    assert_int_equal(g.cap, 1);
    cnt_survey_gate_init(&g, 2);
    assert_true(cnt_survey_gate_enter(&g));
    assert_true(cnt_survey_gate_enter(&g));
    assert_false(cnt_survey_gate_enter(&g));
    cnt_survey_gate_leave(&g);
    assert_true(cnt_survey_gate_enter(&g));
    assert_false(cnt_survey_gate_enter(&g));
    cnt_survey_gate_leave(&g);
    cnt_survey_gate_leave(&g);
    assert_int_equal(atomic_load(&g.peak), 2);
    for (unsigned i = 0; i < GATE_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, gate_racer, &g), 0);
    for (unsigned i = 0; i < GATE_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&g.out), 0);
    assert_int_equal(atomic_load(&g.peak), 2);
}

/* Runs the mailbox tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_across_growth),
        cmocka_unit_test(test_grants_in_order),
        cmocka_unit_test(test_doorbell),
        cmocka_unit_test(test_post_without_memory),
        cmocka_unit_test(test_many_senders),
        cmocka_unit_test(test_survey_round_trip),
        cmocka_unit_test(test_survey_threads),
        cmocka_unit_test(test_survey_batch),
        cmocka_unit_test(test_survey_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
