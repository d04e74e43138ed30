/* mail.h: what other threads hand a worker thread, and the mailbox that
 * carries it: locked queues plus an eventfd doorbell the worker's event
 * loop watches. The only way another thread asks a worker to do something
 * (see the ownership rule in server_int.h). A mailbox carries two things:
 * new connections (the acceptor's sockets), and granted tickets (a
 * release on another thread granted a waiter whose connection lives on
 * this worker; the worker's own grants never come this way). Grants are linked through the ticket itself, so posting one
 * allocates nothing and cannot fail, and a decided grant is never lost for
 * want of memory. */
#ifndef CNT_ENGINE_MAIL_H
#define CNT_ENGINE_MAIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/ticket.h"
#include "engine/server/survey.h"

struct cnt_front;

/* One message: adopt fd, an accepted socket, as a new connection. Until
 * the worker takes the message the mailbox owns the fd: a worker that
 * stops with it queued closes it. */
typedef struct cnt_mail {
    int fd;
    /* The protocol the fd's listener serves; NULL: the counter protocol. */
    const struct cnt_front *front;
} cnt_mail;

/* A worker's mailbox. Any thread posts; only the worker takes. */
typedef struct cnt_mailbox {
    pthread_mutex_t lock;           /* guards the ring */
    cnt_mail *ring;
    size_t head, len, cap;
    cnt_grant_list grants;          /* oldest first */
    atomic_bool has_grants;         /* grants is not empty (a hint read
                                       without the lock) */
    int doorbell;                   /* eventfd, readable while rung */
    cnt_survey_list surveys;        /* oldest first */
    atomic_bool has_surveys;        /* surveys is not empty (a hint read
                                       without the lock, so that a
                                       doorbell rung for grants takes no
                                       lock for surveys) */
} cnt_mailbox;

/* Prepares an empty mailbox and its doorbell; 0 or an errno value. The
 * mailbox may not move in memory afterwards (its grant list points into
 * itself). */
int cnt_mailbox_init(cnt_mailbox *mb);

/* Frees the mailbox; the caller has taken (and disposed of) every
 * message first. */
void cnt_mailbox_destroy(cnt_mailbox *mb);

/* Queues a copy of m and rings the doorbell (any thread); false when
 * memory is short (nothing is queued: the caller still owns what m
 * carries). */
bool cnt_mailbox_post(cnt_mailbox *mb, const cnt_mail *m);

/* Queues a granted ticket (linked through k->grant_link, which is the
 * mailbox's until taken) and rings the doorbell (any thread). */
void cnt_mailbox_post_grant(cnt_mailbox *mb, cnt_ticket *k);

/* Whether grants may be waiting (no lock: a hint for the worker, which
 * takes them before reading a request when a granted event may have
 * reached the client ahead of the grant's mail). */
bool cnt_mailbox_has_grants(cnt_mailbox *mb);

/* Takes every queued grant at once, appending them, oldest first, to
 * out (linked through ticket->grant_link). */
void cnt_mailbox_take_grants(cnt_mailbox *mb, cnt_grant_list *out);

/* Rings the doorbell without a message (to make the worker look at a
 * flag, such as its stop request). Never fails: an eventfd adds up
 * rings, so none is lost and many collapse into one wake-up. */
void cnt_mailbox_ring(cnt_mailbox *mb);

/* The fd the worker's loop watches for EV_READ. */
int cnt_mailbox_doorbell(const cnt_mailbox *mb);

/* Silences the doorbell (the worker, when it wakes); returns 0 or an
 * errno value (EAGAIN: it was already silent). */
int cnt_mailbox_answer(cnt_mailbox *mb);

/* Takes up to max messages, oldest first, into out; returns how many and
 * sets *more when messages remain. */
size_t cnt_mailbox_take(cnt_mailbox *mb, cnt_mail *out, size_t max,
                        bool *more);

/* Queues a survey's link (the mailbox's until taken; the survey holds
 * a reference for it) and rings the doorbell (any thread). Allocates
 * nothing, so it cannot fail. */
void cnt_mailbox_post_survey(cnt_mailbox *mb, cnt_survey_link *l);

/* Takes every queued survey link at once, appending them, oldest first,
 * to out (nothing, without the lock, when the hint says none is queued:
 * the doorbell rings after a post, so the taker that wakes for it sees
 * the hint). */
void cnt_mailbox_take_surveys(cnt_mailbox *mb, cnt_survey_list *out);

#endif
