/* survey.h: a question every worker answers about what only it may read,
 * today the nearest lease deadlines (Lease_list): a lease's deadline is a
 * timer in its owner's worker's wheel, which no other thread may touch.
 * The asking worker posts the survey to every worker's mailbox, its own
 * too (so that its part shares the walk of the other surveys it answers
 * in the same batch), and the last worker to answer posts it back home,
 * where the asking session streams the merged answer.
 *
 * Memory: one allocation per survey, made by the asker; posting it
 * allocates nothing (the survey holds one mailbox link per worker; the
 * asker's own link carries the answer home), so no post can fail.
 * Lifetime: counted references, one held by the asking session and one
 * by each post still in a mailbox; the last to let go frees it. A session
 * that ends while the survey is out orphans it (under the lock) and lets
 * go: the workers still answer into it and the last reference frees it. */
#ifndef CNT_ENGINE_SURVEY_H
#define CNT_ENGINE_SURVEY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "engine/core/leasetop.h"

struct cnt_survey;

/* One post of a survey in a worker's mailbox. */
typedef struct cnt_survey_link {
    STAILQ_ENTRY(cnt_survey_link) next;
    struct cnt_survey *survey;
} cnt_survey_link;

/* The surveys queued in a mailbox, oldest first. */
STAILQ_HEAD(cnt_survey_list, cnt_survey_link);
typedef struct cnt_survey_list cnt_survey_list;

typedef struct cnt_survey {
    pthread_mutex_t lock;           /* guards everything below but links */
    unsigned refs;
    unsigned pending;               /* workers still to answer */
    unsigned home;                  /* the asking worker's index */
    bool home_answered;             /* home has answered its own part (its
                                       link, taken from home's mailbox,
                                       now means "come home"; home thread
                                       only) */
    void *requester;                /* the asking session; NULL: orphaned
                                       (read and cleared by home only) */
    cnt_lease_top top;              /* the answers merged so far */
    unsigned nlinks;
    cnt_survey_link links[];        /* one per worker */
} cnt_survey;

/* A survey of nworkers workers (>= 1) for the want nearest leases, asked
 * by requester on worker home; one reference (the requester's). NULL when
 * memory is short. */
cnt_survey *cnt_survey_new(unsigned nworkers, unsigned home, uint32_t want,
                           void *requester);

/* Takes one more reference (for a post). */
void cnt_survey_hold(cnt_survey *sv);

/* Lets go of one reference; frees the survey (and the names it kept) at
 * the last. */
void cnt_survey_put(cnt_survey *sv);

/* Merges one worker's part (part is empty afterwards) and counts the
 * worker as answered; true when it was the last to answer (the caller
 * then sends the survey home, unless it is home). */
bool cnt_survey_answer(cnt_survey *sv, cnt_lease_top *part);

/* Whether every worker has answered. */
bool cnt_survey_ready(cnt_survey *sv);

/* The asking session ends: the survey is orphaned, and its reference
 * let go. */
void cnt_survey_orphan(cnt_survey *sv);

/* The asking session, or NULL once orphaned (home thread only). */
void *cnt_survey_requester(cnt_survey *sv);

/* Answers every survey of asked (links taken from one worker's mailbox,
 * asked of that worker) from one walk of w, the worker's own wheel, of at
 * most max timers: the walk keeps the CNT_LEASE_TOP_MAX nearest and each
 * survey gets the prefix its own want asks for. So a worker's cost per
 * mailbox batch is one walk however many surveys wait in it. Surveys
 * whose answer was the last move to done (the caller sends them home,
 * their reference with them); the others' references are let go. asked
 * is empty afterwards. Returns the number of walks made (0 or 1). */
unsigned cnt_survey_answer_batch(cnt_survey_list *asked, const cnt_wheel *w,
                                 size_t max, cnt_survey_list *done);

/* The server-wide bound on surveys out at once: a survey takes a slot
 * before it starts and gives it back once every worker has answered (not
 * when its answer is read: a client that reads slowly holds no slot).
 * Any thread. */
typedef struct cnt_survey_gate {
    atomic_uint out;                /* surveys holding a slot */
    atomic_uint peak;               /* the most ever out at once */
    unsigned cap;                   /* >= 1 */
} cnt_survey_gate;

/* Prepares a gate of cap slots (0 counts as 1). */
void cnt_survey_gate_init(cnt_survey_gate *g, unsigned cap);

/* Takes a slot; false when all cap are out. */
bool cnt_survey_gate_enter(cnt_survey_gate *g);

/* Gives a slot back. */
void cnt_survey_gate_leave(cnt_survey_gate *g);

#endif
