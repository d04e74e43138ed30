/* survey.c: the cross-worker lease survey of survey.h: a refcounted
 * object under its own mutex, a worker's batched answer, and the gate
 * bounding the surveys out at once. */
#include "config.h"

#include "engine/server/survey.h"

#include <stdlib.h>

/* A new survey with one reference (the requester's). */
cnt_survey *cnt_survey_new(unsigned nworkers, unsigned home, uint32_t want,
                           void *requester)
{
    if (nworkers == 0 || home >= nworkers)
        return NULL;
    cnt_survey *sv = malloc(sizeof(*sv) +
                            (size_t)nworkers * sizeof(sv->links[0]));
    if (sv == NULL)
        return NULL;
    if (pthread_mutex_init(&sv->lock, NULL) != 0) {
        free(sv);
        return NULL;
    }
    sv->refs = 1;
    sv->pending = nworkers;
    sv->home = home;
    sv->home_answered = false;
    sv->requester = requester;
    cnt_lease_top_init(&sv->top, want);
    sv->nlinks = nworkers;
    for (unsigned i = 0; i < nworkers; i++)
        sv->links[i].survey = sv;
    return sv;
}

/* One more reference. */
void cnt_survey_hold(cnt_survey *sv)
{
    pthread_mutex_lock(&sv->lock);
    sv->refs++;
    pthread_mutex_unlock(&sv->lock);
}

/* One reference less; the last frees. */
void cnt_survey_put(cnt_survey *sv)
{
    pthread_mutex_lock(&sv->lock);
    bool last = --sv->refs == 0;
    pthread_mutex_unlock(&sv->lock);
    if (!last)
        return;
    cnt_lease_top_clear(&sv->top);
    pthread_mutex_destroy(&sv->lock);
    free(sv);
}

/* Merges a part; true for the last answer. */
bool cnt_survey_answer(cnt_survey *sv, cnt_lease_top *part)
{
    pthread_mutex_lock(&sv->lock);
    cnt_lease_top_merge(&sv->top, part);
    bool last = --sv->pending == 0;
    pthread_mutex_unlock(&sv->lock);
    return last;
}

/* Whether every worker answered. */
bool cnt_survey_ready(cnt_survey *sv)
{
    pthread_mutex_lock(&sv->lock);
    bool ready = sv->pending == 0;
    pthread_mutex_unlock(&sv->lock);
    return ready;
}

/* Orphans the survey and lets go of the requester's reference. */
void cnt_survey_orphan(cnt_survey *sv)
{
    pthread_mutex_lock(&sv->lock);
    sv->requester = NULL;
    pthread_mutex_unlock(&sv->lock);
    cnt_survey_put(sv);
}

/* The asking session, or NULL. */
void *cnt_survey_requester(cnt_survey *sv)
{
    pthread_mutex_lock(&sv->lock);
    void *r = sv->requester;
    pthread_mutex_unlock(&sv->lock);
    return r;
}

/* One walk answers a batch. */
unsigned cnt_survey_answer_batch(cnt_survey_list *asked, const cnt_wheel *w,
                                 size_t max, cnt_survey_list *done)
{
    cnt_survey_link *l;
    cnt_lease_top all;

    if (STAILQ_EMPTY(asked))
        return 0;
    cnt_lease_top_init(&all, CNT_LEASE_TOP_MAX);
    cnt_lease_top_collect(&all, w, max);
    while ((l = STAILQ_FIRST(asked)) != NULL) {
        STAILQ_REMOVE_HEAD(asked, next);
        cnt_survey *sv = l->survey;
        cnt_lease_top part;
        cnt_lease_top_init(&part, sv->top.want);    /* want is set once */
        cnt_lease_top_copy(&part, &all);
        if (cnt_survey_answer(sv, &part))
            STAILQ_INSERT_TAIL(done, &sv->links[sv->home], next);
        else
            cnt_survey_put(sv);
    }
    cnt_lease_top_clear(&all);
    return 1;
}

/* A gate of cap slots. */
void cnt_survey_gate_init(cnt_survey_gate *g, unsigned cap)
{
    atomic_init(&g->out, 0);
    atomic_init(&g->peak, 0);
    g->cap = cap > 0 ? cap : 1;
}

/* Takes a slot when one is free. */
bool cnt_survey_gate_enter(cnt_survey_gate *g)
{
    unsigned n = atomic_load(&g->out);

    do {
        if (n >= g->cap)
            return false;
    } while (!atomic_compare_exchange_weak(&g->out, &n, n + 1));
    unsigned p = atomic_load(&g->peak);
    while (n + 1 > p && !atomic_compare_exchange_weak(&g->peak, &p, n + 1))
        ;
    return true;
}

/* Gives a slot back. */
void cnt_survey_gate_leave(cnt_survey_gate *g)
{
    atomic_fetch_sub(&g->out, 1);
}
