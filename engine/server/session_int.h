/* session_int.h: what session.c shares with the files that answer further
 * opcodes for it (session_waits.c: waiting acquisition and leases;
 * session_limits.c: the rate limits; session_throttle.c: tenant
 * throttling). A handler gets the
 * decoded request and appends exactly one answer to the session's output
 * (or marks the session failed when memory for it ran out). */
#ifndef CNT_ENGINE_SESSION_INT_H
#define CNT_ENGINE_SESSION_INT_H

#include "engine/server/session.h"

/* Room for n bytes of answer at the end of s's output; NULL (and the
 * session marked failed) when memory ran out. Commit what was written
 * with cnt_outbuf_commit(&s->out, ...). */
uint8_t *cnt_session_reserve(cnt_session *s, size_t n);

/* Appends an error answer with the status's text. */
void cnt_session_put_error(cnt_session *s, uint8_t opcode, cnt_status status,
                           uint32_t opaque);

/* Appends a status-0 answer with an empty body. */
void cnt_session_put_empty(cnt_session *s, uint8_t opcode, uint32_t opaque);

/* Appends a status-0 answer whose body is one u32. */
void cnt_session_put_u32(cnt_session *s, uint8_t opcode, uint32_t opaque,
                         uint32_t value);

/* The waiting opcodes (0x20-0x22) of the binary front; Queues streams
 * from session.c. */
void cnt_session_wait_acquire_op(cnt_session *s, const cnt_request *req,
                                 const cnt_table_place *place);
void cnt_session_renew_op(cnt_session *s, const cnt_request *req);
void cnt_session_wait_release_op(cnt_session *s, const cnt_request *req);

/* Ends every ticket of s: with a shutdown event each when the server
 * stops, without a word when the session ends. */
void cnt_session_end_tickets(cnt_session *s, bool shutdown);

/* The rate-limit opcodes (0x30-0x37), answered from s->env->limits. */
void cnt_session_ttl_insert(cnt_session *s, const cnt_request *req);
void cnt_session_ttl_query(cnt_session *s, const cnt_request *req);
void cnt_session_ttl_update(cnt_session *s, const cnt_request *req);
void cnt_session_ttl_purge(cnt_session *s, const cnt_request *req);
void cnt_session_check(cnt_session *s, const cnt_request *req);
void cnt_session_multi_check(cnt_session *s, const cnt_request *req);
/* Busiest (0x37): the busiest rate-limit names, one packet each, then an
 * empty one. */
void cnt_session_busiest(cnt_session *s, const cnt_request *req);

/* The tenant-throttling opcodes (0x40-0x49, 0x2a and 0x2c, but
 * Tenant_list, which streams
 * from session.c), answered from s->env->throttle. */
void cnt_session_auth(cnt_session *s, const cnt_request *req);
void cnt_session_auth_user(cnt_session *s, const cnt_request *req);
void cnt_session_throttle(cnt_session *s, const cnt_request *req);
void cnt_session_tenant_show(cnt_session *s, const cnt_request *req);
void cnt_session_node_show(cnt_session *s, const cnt_request *req);
void cnt_session_tenant_set(cnt_session *s, const cnt_request *req);
void cnt_session_tenant_remove(cnt_session *s, const cnt_request *req);
void cnt_session_node_set(cnt_session *s, const cnt_request *req);
void cnt_session_tenant_set_json(cnt_session *s, const cnt_request *req);
void cnt_session_node_set_json(cnt_session *s, const cnt_request *req);
void cnt_session_unthrottle(cnt_session *s, const cnt_request *req);
void cnt_session_reload(cnt_session *s, const cnt_request *req);

/* Tenant_list's record callback (a cnt_tenant_fn): appends one record;
 * false once the output is full. */
bool cnt_session_tenant_record(void *ctx, const uint8_t *name, uint16_t len,
                               const cnt_tenant_view *v);

#endif
