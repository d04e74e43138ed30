/* session.h: one client's conversation with the counter service, without
 * the socket: request bytes go in (cnt_session_feed), answers come out in
 * request order in the session's output buffer. A session owns the client's
 * holdings ledger and its Dump in progress. connection.c moves the bytes
 * between a socket and a session; tests drive a session directly. */
#ifndef CNT_ENGINE_SESSION_H
#define CNT_ENGINE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/gc.h"
#include "engine/core/holdings.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"
#include "engine/server/outbuf.h"
#include "protocol/request.h"

/* What a session needs from its worker; shared by all the worker's
 * sessions and outliving them. */
typedef struct cnt_session_env {
    cnt_table *table;
    const cnt_stats *stats;         /* for the Stats opcode; may be NULL */
    const cnt_gc *gc;               /* for the Stats opcode; may be NULL */
    cnt_stats_slot *slot;           /* where requests are counted */
} cnt_session_env;

/* The fields are the session's; callers read out and the stop reasons. */
typedef struct cnt_session {
    const cnt_session_env *env;
    /* Answers in request order. Server-initiated packets (lease expiry,
     * wait grants: magic 0x92) will be appended here between answers, at
     * the moment they happen, so ordering needs no second queue. */
    cnt_outbuf out;
    cnt_holdings holdings;          /* what this client has acquired */
    uint64_t skip;                  /* body bytes still to discard unread */

    /* A Dump in progress: records stream out as the output drains; later
     * requests wait in the input until its end marker is out. */
    bool dumping;
    cnt_dump_cursor dump;
    uint32_t dump_opaque;

    /* Outstanding operations that outlive one request (waits, leases) will
     * hang off the session here, as a list that cnt_session_end cancels. */

    /* Why the last cnt_session_feed stopped, besides using up its input. */
    size_t need;                    /* the incomplete request at the front
                                       needs this many bytes in all (0: no
                                       such request) */
    bool more;                      /* stopped at the output's watermark or
                                       turn budget with work left */
    bool closing;                   /* framing lost: takes no more input */
    bool failed;                    /* out of memory: end the session now */
} cnt_session;

/* Prepares a session (allocates its output buffer); false when memory is
 * short. env must outlive it. */
bool cnt_session_init(cnt_session *s, const cnt_session_env *env);

/* Ends the session: stops its Dump, releases everything its ledger holds
 * and frees its memory. */
void cnt_session_end(cnt_session *s);

/* Takes request bytes in[0..len) (the unconsumed input, oldest first) and
 * answers the whole requests among them into s->out, continuing a Dump
 * first, until the input is used up, the output is full (cnt_outbuf_full:
 * s->more tells whether work is left), the next request is incomplete
 * (s->need), framing is lost (s->closing) or memory runs out (s->failed).
 * Returns how many bytes it consumed; the caller drops them and passes the
 * rest, with whatever arrived since, next time. */
size_t cnt_session_feed(cnt_session *s, const uint8_t *in, size_t len);

/* Answers one request the decoder returned as CNT_DECODE_OK or
 * CNT_DECODE_ERROR (counting it in Stats); the caller deals with its bytes.
 * A Dump it starts continues in cnt_session_feed. */
void cnt_session_handle(cnt_session *s, cnt_decode_result r,
                        const cnt_request *req);

#endif
