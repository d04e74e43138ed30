/* mail.c: a worker's mailbox: a ring of new connections (grown by
 * doubling), a list of grants and a list of surveys under a mutex, and an eventfd doorbell
 * that adds up rings so that a wake-up is never lost and many collapse
 * into one. */
#include "config.h"

#include "engine/server/mail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Ring size of the first message; doubles when full. */
#define CNT_MAILBOX_INITIAL 64

/* Prepares an empty mailbox and its doorbell; 0 or an errno value. */
int cnt_mailbox_init(cnt_mailbox *mb)
{
    memset(mb, 0, sizeof(*mb));
    STAILQ_INIT(&mb->grants);
    STAILQ_INIT(&mb->surveys);
    mb->doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mb->doorbell < 0)
        return errno;
    int rc = pthread_mutex_init(&mb->lock, NULL);
    if (rc != 0) {
        close(mb->doorbell);
        mb->doorbell = -1;
    }
    return rc;
}

/* Frees the mailbox (already emptied by its worker). */
void cnt_mailbox_destroy(cnt_mailbox *mb)
{
    free(mb->ring);
    mb->ring = NULL;
    mb->head = mb->len = mb->cap = 0;
    if (mb->doorbell >= 0)
        close(mb->doorbell);
    mb->doorbell = -1;
    pthread_mutex_destroy(&mb->lock);
}

/* Rings the doorbell (any thread). */
void cnt_mailbox_ring(cnt_mailbox *mb)
{
    uint64_t one = 1;
    while (write(mb->doorbell, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

/* Doubles the ring, oldest message first; false when memory is short.
 * Called with the lock held. */
static bool mailbox_grow(cnt_mailbox *mb)
{
    size_t cap = mb->cap ? mb->cap * 2 : CNT_MAILBOX_INITIAL;
    cnt_mail *ring = malloc(cap * sizeof(*ring));
    if (ring == NULL)
        return false;
    for (size_t k = 0; k < mb->len; k++)
        ring[k] = mb->ring[(mb->head + k) % mb->cap];
    free(mb->ring);
    mb->ring = ring;
    mb->cap = cap;
    mb->head = 0;
    return true;
}

/* Queues a copy of m and rings the doorbell; false when memory is short. */
bool cnt_mailbox_post(cnt_mailbox *mb, const cnt_mail *m)
{
    pthread_mutex_lock(&mb->lock);
    if (mb->len == mb->cap && !mailbox_grow(mb)) {
        pthread_mutex_unlock(&mb->lock);
        return false;
    }
    mb->ring[(mb->head + mb->len) % mb->cap] = *m;
    mb->len++;
    pthread_mutex_unlock(&mb->lock);
    cnt_mailbox_ring(mb);
    return true;
}

/* Queues a granted ticket and rings the doorbell. */
void cnt_mailbox_post_grant(cnt_mailbox *mb, cnt_ticket *k)
{
    pthread_mutex_lock(&mb->lock);
    STAILQ_INSERT_TAIL(&mb->grants, k, grant_link);
    atomic_store_explicit(&mb->has_grants, true, memory_order_relaxed);
    pthread_mutex_unlock(&mb->lock);
    cnt_mailbox_ring(mb);
}

/* Takes every queued grant, oldest first. */
void cnt_mailbox_take_grants(cnt_mailbox *mb, cnt_grant_list *out)
{
    pthread_mutex_lock(&mb->lock);
    STAILQ_CONCAT(out, &mb->grants);
    atomic_store_explicit(&mb->has_grants, false, memory_order_relaxed);
    pthread_mutex_unlock(&mb->lock);
}

/* Whether grants may be waiting; see mail.h. */
bool cnt_mailbox_has_grants(cnt_mailbox *mb)
{
    return atomic_load_explicit(&mb->has_grants, memory_order_relaxed);
}

/* The fd the worker's loop watches. */
int cnt_mailbox_doorbell(const cnt_mailbox *mb)
{
    return mb->doorbell;
}

/* Silences the doorbell; 0 or an errno value. */
int cnt_mailbox_answer(cnt_mailbox *mb)
{
    uint64_t rings;
    if (read(mb->doorbell, &rings, sizeof(rings)) < 0)
        return errno;
    return 0;
}

/* Takes up to max messages, oldest first. */
size_t cnt_mailbox_take(cnt_mailbox *mb, cnt_mail *out, size_t max,
                        bool *more)
{
    pthread_mutex_lock(&mb->lock);
    size_t n = 0;
    while (n < max && mb->len > 0) {
        out[n++] = mb->ring[mb->head];
        mb->head = (mb->head + 1) % mb->cap;
        mb->len--;
    }
    *more = mb->len > 0;
    pthread_mutex_unlock(&mb->lock);
    return n;
}

/* Queues a survey's link and rings the doorbell. */
void cnt_mailbox_post_survey(cnt_mailbox *mb, cnt_survey_link *l)
{
    pthread_mutex_lock(&mb->lock);
    STAILQ_INSERT_TAIL(&mb->surveys, l, next);
    atomic_store(&mb->has_surveys, true);
    pthread_mutex_unlock(&mb->lock);
    cnt_mailbox_ring(mb);
}

/* Takes every queued survey link, oldest first. */
void cnt_mailbox_take_surveys(cnt_mailbox *mb, cnt_survey_list *out)
{
    if (!atomic_load(&mb->has_surveys))
        return;
    pthread_mutex_lock(&mb->lock);
    STAILQ_CONCAT(out, &mb->surveys);
    atomic_store(&mb->has_surveys, false);
    pthread_mutex_unlock(&mb->lock);
}
