/* session_throttle.c: the session's answers to the tenant-throttling
 * opcodes: authentication (the admin secret, compared in constant time;
 * three failures close the connection), charges, the views of a tenant,
 * of every tenant (streamed like a Dump) and of the node, and the
 * privileged changes (tenant settings, node capacity, an unthrottled
 * connection, a reload of the settings file). */
#include "config.h"

#include "engine/server/session_int.h"

#include "engine/core/throttle.h"
#include "protocol/response.h"

/* Failed authentications after which the connection is closed. */
#define CNT_AUTH_TRIES 3u

/* Whether attempt equals secret (1 byte or more), in time that depends
 * only on the attempt's length: each byte of the attempt is compared with
 * the secret's byte at that place (the secret read round and round when
 * it is shorter), whatever was found before, and the lengths are compared
 * without a branch. Neither where they differ nor the secret's length
 * shows in the time. */
static bool secret_matches(const uint8_t *secret, size_t secret_len,
                           const uint8_t *attempt, size_t attempt_len)
{
    volatile uint8_t diff = (uint8_t)((secret_len ^ attempt_len) != 0);

    for (size_t i = 0; i < attempt_len; i++)
        diff |= (uint8_t)(attempt[i] ^ secret[i % secret_len]);
    return diff == 0;
}

/* Auth: makes the connection privileged, or counts a failure (the third
 * closes the connection once its answer is out). */
void cnt_session_auth(cnt_session *s, const cnt_request *req)
{
    const cnt_session_env *env = s->env;

    if (env->secret == NULL) {
        cnt_session_put_error(s, req->opcode, CNT_STATUS_NOT_PERMITTED,
                              req->opaque);
        return;
    }
    if (secret_matches(env->secret, env->secret_len, req->secret,
                       req->secret_len)) {
        s->privileged = true;
        cnt_session_put_empty(s, req->opcode, req->opaque);
        return;
    }
    s->auth_failures++;
    cnt_stats_add(&env->slot->auth_failures, 1);
    if (env->auth_failed != NULL)
        env->auth_failed(s, s->auth_failures, CNT_AUTH_TRIES);
    cnt_session_put_error(s, req->opcode, CNT_STATUS_AUTH_FAILED,
                          req->opaque);
    if (s->auth_failures >= CNT_AUTH_TRIES) {
        cnt_stats_add(&env->slot->auth_closes, 1);
        s->closing = true;
        s->auth_closed = true;
    }
}

/* Appends an empty answer, or the error. */
static void put_status(cnt_session *s, const cnt_request *req,
                       cnt_status st)
{
    if (st == CNT_STATUS_OK)
        cnt_session_put_empty(s, req->opcode, req->opaque);
    else
        cnt_session_put_error(s, req->opcode, st, req->opaque);
}

/* Throttle: charges units to the tenant; allowed or throttled, why and
 * when to retry. */
void cnt_session_throttle(cnt_session *s, const cnt_request *req)
{
    cnt_throttle_answer a;
    cnt_status st = cnt_throttle_charge(s->env->throttle, req->name,
                                        req->name_len, req->units,
                                        s->unthrottled, &a);
    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_THROTTLE_RESPONSE_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_throttle_answer(p, req->opaque, &a));
}

/* Tenant_show: one tenant's settings and figures (its defaults when it
 * was never seen). */
void cnt_session_tenant_show(cnt_session *s, const cnt_request *req)
{
    cnt_tenant_view v;
    cnt_status st = cnt_throttle_tenant(s->env->throttle, req->name,
                                        req->name_len, &v);
    if (st != CNT_STATUS_OK) {
        cnt_session_put_error(s, req->opcode, st, req->opaque);
        return;
    }
    uint8_t *p = cnt_session_reserve(s, CNT_TENANT_VIEW_RESPONSE_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out,
                          cnt_encode_tenant_view(p, req->opaque, &v));
}

/* Tenant_list callback: appends one record; asks to stop once the output
 * is full. */
bool cnt_session_tenant_record(void *ctx, const uint8_t *name, uint16_t len,
                               const cnt_tenant_view *v)
{
    cnt_session *s = ctx;

    if (s->failed)
        return false;
    uint8_t *p = cnt_session_reserve(s, CNT_TENANT_RECORD_SIZE(len));
    if (p == NULL)
        return false;
    cnt_outbuf_commit(&s->out, cnt_encode_tenant_record(p, s->dump_opaque,
                                                        v, name, len));
    return !cnt_outbuf_full(&s->out);
}

/* Node_show: the node's capacity, usage and pool. */
void cnt_session_node_show(cnt_session *s, const cnt_request *req)
{
    cnt_node_view v;

    cnt_throttle_node(s->env->throttle, &v);
    uint8_t *p = cnt_session_reserve(s, CNT_NODE_VIEW_RESPONSE_SIZE);
    if (p != NULL)
        cnt_outbuf_commit(&s->out, cnt_encode_node_view(p, req->opaque, &v));
}

/* Tenant_set (privileged): a tenant's reserve and hard limit. */
void cnt_session_tenant_set(cnt_session *s, const cnt_request *req)
{
    put_status(s, req,
               cnt_throttle_set_tenant(
                   s->env->throttle, req->name, req->name_len,
                   (req->flags & CNT_TENANT_SET_RESERVED) != 0, req->reserved,
                   (req->flags & CNT_TENANT_SET_HARD) != 0, req->hard_limit));
}

/* Tenant_remove (privileged): the tenant goes back to the defaults. */
void cnt_session_tenant_remove(cnt_session *s, const cnt_request *req)
{
    put_status(s, req, cnt_throttle_remove_tenant(s->env->throttle, req->name,
                                                  req->name_len));
}

/* Node_set (privileged): the node's capacity. */
void cnt_session_node_set(cnt_session *s, const cnt_request *req)
{
    put_status(s, req, cnt_throttle_set_capacity(s->env->throttle,
                                                 req->capacity));
}

/* Unthrottle (privileged): this connection's charges are never throttled
 * from now on (they are still counted). */
void cnt_session_unthrottle(cnt_session *s, const cnt_request *req)
{
    s->unthrottled = true;
    cnt_session_put_empty(s, req->opcode, req->opaque);
}

/* Reload (privileged): reads the throttle settings file again. */
void cnt_session_reload(cnt_session *s, const cnt_request *req)
{
    put_status(s, req, s->env->reload != NULL
                           ? s->env->reload(s->env->reload_ctx)
                           : CNT_STATUS_NOT_FOUND);
}
