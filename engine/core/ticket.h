/* ticket.h: one waiting acquisition (a wait_acquire request) and the set of
 * them a connection has outstanding. A ticket is the request's whole life:
 * queued on its counter, then granted (and leased), then ended; the
 * connection that asked owns it, the counter's queue links it while it
 * waits, and a grant decided on another thread travels to the owner
 * inside it.
 *
 * Who may touch what (the rule the table's wait functions keep, see
 * table.h): the fields marked "lock" change only under the stripe lock of
 * the ticket's counter (any thread: a release anywhere may grant it); the
 * fields marked "owner" belong to the owning connection's worker alone,
 * like the rest of that connection. The set (cnt_tickets) is the owner's.
 * One exception: a grant in flight is out of its counter's queue, so no
 * other thread can reach the ticket any more; the grant hands it to the
 * owner with everything its event needs (lease id, consumption), and the
 * delivery reads those and clears IN_FLIGHT without the lock (the sink's
 * hand-over, a mailbox's mutex or the owner's own thread, orders it after
 * the grant). */
#ifndef CNT_ENGINE_TICKET_H
#define CNT_ENGINE_TICKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "engine/core/wheel.h"

/* Where a ticket is in its life. */
typedef enum cnt_ticket_state {
    CNT_TICKET_NEW = 0,         /* built, not yet in the table */
    CNT_TICKET_QUEUED,          /* in its counter's queue */
    CNT_TICKET_GRANTED,         /* holds its resources on the counter */
    CNT_TICKET_EXPIRED,         /* its lease ran out; the owner keeps it
                                   until the client hears and acknowledges
                                   (renew or release answer "expired") */
    CNT_TICKET_ENDED            /* out of the table for good */
} cnt_ticket_state;

/* Flags (lock). */
/* Granted from the queue (by any thread, the owner's included) and not
 * yet taken by the owner: the grant travels to it (the table's grant
 * sink) and the owner confirms it with cnt_table_ticket_delivered. */
#define CNT_TICKET_IN_FLIGHT 0x01u
/* The owner ended the ticket while its grant was in flight: whoever takes
 * the delivery frees it instead of telling anyone. */
#define CNT_TICKET_ORPHAN    0x02u
/* The granting thread wrote the granted event straight to the owner's
 * socket (cnt_connection_try_direct): the delivery arms the lease and
 * writes no event. Set under the owner connection's direct lock, which
 * every owner path that ends the ticket holds too. */
#define CNT_TICKET_TOLD      0x04u

/* Timer kinds of a ticket's one timer (the wait's deadline while queued,
 * the lease's while granted; never both at once). */
#define CNT_TIMER_WAIT  1u
#define CNT_TIMER_LEASE 2u

/* A million pending leases are a million tickets, so the header is kept
 * to 72 bytes: with a 16-byte name a ticket asks malloc for 88 bytes,
 * which glibc serves from a 96-byte chunk (tests/test_ticket.c checks
 * it). Hence no pointer to the counter (the name finds it, under the lock
 * that is taken anyway), and the two links sharing two words with the
 * lease id: the queue's back link exists only while the ticket is queued,
 * the lease id and the grant list's link only once it has left the queue.
 * The links are <sys/queue.h>'s, like every list of the engine. */
typedef struct cnt_ticket {
    cnt_timer timer;            /* owner: its wheel */
    union {
        /* lock, while QUEUED: its place in the counter's queue */
        TAILQ_ENTRY(cnt_ticket) queue_link;
        struct {
            /* lock when granted, then the sink's: the list of grants on
             * their way to the owner (the owner's mailbox threads the
             * ticket through the same link) */
            STAILQ_ENTRY(cnt_ticket) grant_link;
            /* lock, from GRANTED on: the grant's id; 0 before (NEW) and
             * for a ticket that ended without a grant */
            uint64_t lease_id;
        };
    };
    void *owner;                /* the owning session; set once */
    uint32_t resources;         /* set once */
    union {
        /* set once, read while NEW or QUEUED: the admitting maximum */
        uint32_t maximum;
        /* lock, from GRANTED on: the counter's consumption right after
         * the grant, which the granted event reports; it rides in the
         * ticket so that the owner needs no lock to deliver the grant */
        uint32_t granted_consumption;
    };
    uint32_t lease_ms;          /* lock: the lease time; 0 = no lease */
    uint32_t opaque;            /* set once: the wait_acquire's opaque */
    uint16_t worker;            /* set once: the owner's worker index */
    uint8_t state;              /* lock: a cnt_ticket_state */
    uint8_t flags;              /* lock: CNT_TICKET_* */
    uint8_t timer_kind;         /* owner: CNT_TIMER_* of the armed timer */
    bool told_expired;          /* owner: its lease expired and the client
                                   was told (the owner's copy of state ==
                                   EXPIRED, which only the owner's timer
                                   sets: readable without the lock) */
    uint16_t name_len;          /* set once */
    uint8_t name[];             /* set once: the counter's name */
} cnt_ticket;

/* The waiting tickets of one counter, oldest first (table_int.h). */
TAILQ_HEAD(cnt_ticket_queue, cnt_ticket);
typedef struct cnt_ticket_queue cnt_ticket_queue;

/* Granted tickets on their way to their owners, oldest grant first,
 * linked through grant_link: the table's list of one release's grants,
 * then a worker's mailbox. */
STAILQ_HEAD(cnt_grant_list, cnt_ticket);
typedef struct cnt_grant_list cnt_grant_list;

/* Most bytes of ticket header: see above. */
#define CNT_TICKET_HEADER_BUDGET 72u
_Static_assert(offsetof(cnt_ticket, name) <= CNT_TICKET_HEADER_BUDGET,
               "ticket header outgrew its 96-byte-chunk budget");

/* Bytes a ticket with a len-byte name takes: its header and name (the
 * table allocates and charges at least sizeof(cnt_ticket), which differs
 * only for names shorter than 2 bytes). */
size_t cnt_ticket_size(uint16_t len);

/* A ticket a connection has outstanding, keyed by name. An open-addressing
 * set of ticket pointers (linear probing, backward-shift deletion), owned
 * by the connection like its holdings ledger; at most one ticket per name
 * (one request per key per connection). */
typedef struct cnt_tickets {
    cnt_ticket **slots;
    size_t capacity;            /* 0, or a power of two >= 8 */
    size_t count;
} cnt_tickets;

/* Prepares an empty set. */
void cnt_tickets_init(cnt_tickets *s);

/* Frees the set's memory (not the tickets; it must be empty). */
void cnt_tickets_destroy(cnt_tickets *s);

/* Makes room for one more ticket so a later add cannot fail; false when
 * memory is short. */
bool cnt_tickets_reserve(cnt_tickets *s);

/* The ticket named name, or NULL. */
cnt_ticket *cnt_tickets_find(const cnt_tickets *s, const uint8_t *name,
                             uint16_t len);

/* Adds k, whose name is not in the set yet (room reserved). */
void cnt_tickets_add(cnt_tickets *s, cnt_ticket *k);

/* Removes k (which is in the set). */
void cnt_tickets_remove(cnt_tickets *s, cnt_ticket *k);

/* Empties the set, calling fn for each ticket it held (fn must not use
 * the set). */
void cnt_tickets_drain(cnt_tickets *s, void (*fn)(cnt_ticket *k, void *ctx),
                       void *ctx);

#endif
