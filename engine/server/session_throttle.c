/* session_throttle.c: the session's answers to the tenant-throttling
 * opcodes: authentication (the admin secret, compared in constant time;
 * three failures close the connection; past the server-wide limits on
 * failures refused without comparing), charges, the views of a tenant,
 * of every tenant (streamed like a Dump) and of the node, and the
 * privileged changes (tenant settings, node capacity, an unthrottled
 * connection, a reload of the settings file, the JSON documents of
 * Tenant_set_json and Node_set_json), each reported for the log. */
#include "config.h"

#include "engine/server/session_int.h"

#include <stdio.h>
#include <string.h>

#include "engine/core/throttle.h"
#include "protocol/response.h"
#include "protocol/throttle_json.h"

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

/* Whether the server-wide limits on failed authentications let this
 * attempt be judged; *now is the clock's reading for them. */
static bool auth_judged(cnt_session *s, uint64_t *now)
{
    const cnt_session_env *env = s->env;

    *now = env->auth_limit != NULL
               ? cnt_clock_mono_ns(cnt_table_clock(env->table))
               : 0;
    return env->auth_limit == NULL ||
           cnt_auth_limit_take(env->auth_limit, s->peer_addr, *now);
}

/* Answers a failed (or, refused, unjudged) authentication and counts it;
 * the third closes the connection once its answer is out. */
static void auth_failure(cnt_session *s, const cnt_request *req,
                         bool refused)
{
    const cnt_session_env *env = s->env;

    s->auth_failures++;
    cnt_stats_add(refused ? &env->slot->auth_refused
                          : &env->slot->auth_failures, 1);
    if (env->auth_failed != NULL)
        env->auth_failed(s, s->auth_failures, CNT_AUTH_TRIES, refused);
    cnt_session_put_error(s, req->opcode,
                          refused ? CNT_STATUS_NOT_PERMITTED
                                  : CNT_STATUS_AUTH_FAILED,
                          req->opaque);
    if (s->auth_failures >= CNT_AUTH_TRIES) {
        cnt_stats_add(&env->slot->auth_closes, 1);
        s->closing = true;
        s->auth_closed = true;
    }
}

/* Auth: makes the connection privileged, or counts a failure (the third
 * closes the connection once its answer is out). Past the server-wide
 * limits on failures (in all, or from this client's address, this
 * second) the attempt is refused without comparing: Not permitted,
 * counted as a refusal and as one of the connection's tries. */
void cnt_session_auth(cnt_session *s, const cnt_request *req)
{
    const cnt_session_env *env = s->env;

    if (env->secret == NULL) {
        cnt_session_put_error(s, req->opcode, CNT_STATUS_NOT_PERMITTED,
                              req->opaque);
        return;
    }
    uint64_t now;
    bool refused = !auth_judged(s, &now);
    if (!refused && secret_matches(env->secret, env->secret_len,
                                   req->secret, req->secret_len)) {
        if (env->auth_limit != NULL)
            cnt_auth_limit_succeeded(env->auth_limit, s->peer_addr, now);
        s->privileged = true;
        cnt_session_put_empty(s, req->opcode, req->opaque);
        return;
    }
    auth_failure(s, req, refused);
}

/* The name the admin secret answers to in Auth_user when the users file
 * does not name such a user itself. */
#define ADMIN_USER "admin"

/* Auth_user: the connection becomes the user's (its tenant, its
 * privileges, and the non-blocking mode when the flag asks for it), or
 * counts a failure as Auth does. An unknown user is compared against a
 * stand-in secret, so that the time does not tell which names exist. */
void cnt_session_auth_user(cnt_session *s, const cnt_request *req)
{
    static const uint8_t stand_in[16] = "not a real user";
    const cnt_session_env *env = s->env;
    const cnt_user *u = cnt_users_find(env->users, req->name,
                                       req->name_len);
    bool admin = u == NULL && env->secret != NULL &&
                 req->name_len == sizeof(ADMIN_USER) - 1 &&
                 memcmp(req->name, ADMIN_USER, req->name_len) == 0;

    if (env->users == NULL && env->secret == NULL) {
        cnt_session_put_error(s, req->opcode, CNT_STATUS_NOT_PERMITTED,
                              req->opaque);
        return;
    }
    const uint8_t *secret = u != NULL ? u->secret
                            : admin   ? env->secret : stand_in;
    size_t secret_len = u != NULL ? u->secret_len
                        : admin   ? env->secret_len : sizeof(stand_in);
    uint64_t now;
    bool refused = !auth_judged(s, &now);
    bool matches = !refused && secret_matches(secret, secret_len,
                                              req->secret, req->secret_len);
    if (!matches || (u == NULL && !admin)) {
        auth_failure(s, req, refused);
        return;
    }
    if (env->auth_limit != NULL)
        cnt_auth_limit_succeeded(env->auth_limit, s->peer_addr, now);
    uint8_t priv = u != NULL ? u->privileges : CNT_PRIV_ADMIN;
    s->privileged = (priv & CNT_PRIV_ADMIN) != 0;
    s->unthrottled = (priv & CNT_PRIV_UNTHROTTLED) != 0;
    if (u != NULL) {
        s->tenant = u->tenant;
        s->tenant_len = u->tenant_len;
    } else {
        s->tenant = env->default_tenant;
        s->tenant_len = env->default_tenant_len;
    }
    s->nonblocking = (req->flags & CNT_AUTH_NONBLOCKING) != 0;
    cnt_session_put_empty(s, req->opcode, req->opaque);
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

/* Most bytes of a tenant name a log line shows; the rest is "...". */
#define LOG_NAME_MAX 64u

/* Writes name as a quoted string a log line can carry: printable ASCII
 * but the quote and backslash as they are, every other byte as \xHH;
 * at most LOG_NAME_MAX bytes of it. out has room for 4 * LOG_NAME_MAX +
 * 6 bytes. */
static void log_name(char *out, const uint8_t *name, uint16_t len)
{
    size_t n = 0;

    out[n++] = '"';
    for (uint16_t i = 0; i < len && i < LOG_NAME_MAX; i++) {
        uint8_t b = name[i];
        if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\')
            out[n++] = (char)b;
        else
            n += (size_t)sprintf(out + n, "\\x%02x", b);
    }
    out[n++] = '"';
    if (len > LOG_NAME_MAX) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* Reports a privileged change (what was asked, and how it ended) to the
 * log, then answers with st. */
static void changed(cnt_session *s, const cnt_request *req, cnt_status st,
                    const char *what)
{
    if (s->env->privileged_change != NULL) {
        char line[384];
        snprintf(line, sizeof(line), "%s: %s", what,
                 st == CNT_STATUS_OK ? "done" : cnt_status_text(st));
        s->env->privileged_change(s, line);
    }
    put_status(s, req, st);
}

/* Tenant_set (privileged): a tenant's reserve and hard limit. */
void cnt_session_tenant_set(cnt_session *s, const cnt_request *req)
{
    bool set_reserved = (req->flags & CNT_TENANT_SET_RESERVED) != 0;
    bool set_hard = (req->flags & CNT_TENANT_SET_HARD) != 0;
    cnt_status st = cnt_throttle_set_tenant(
        s->env->throttle, req->name, req->name_len, set_reserved,
        req->reserved, set_hard, req->hard_limit);
    char name[4 * LOG_NAME_MAX + 6], what[320], r[24] = "", h[24] = "";
    log_name(name, req->name, req->name_len);
    if (set_reserved)
        snprintf(r, sizeof(r), " reserved %u", (unsigned)req->reserved);
    if (set_hard)
        snprintf(h, sizeof(h), " hard_limit %u", (unsigned)req->hard_limit);
    snprintf(what, sizeof(what), "tenant set %s%s%s", name, r, h);
    changed(s, req, st, what);
}

/* Tenant_remove (privileged): the tenant goes back to the defaults. */
void cnt_session_tenant_remove(cnt_session *s, const cnt_request *req)
{
    cnt_status st = cnt_throttle_remove_tenant(s->env->throttle, req->name,
                                               req->name_len);
    char name[4 * LOG_NAME_MAX + 6], what[320];
    log_name(name, req->name, req->name_len);
    snprintf(what, sizeof(what), "tenant remove %s", name);
    changed(s, req, st, what);
}

/* Node_set (privileged): the node's capacity. */
void cnt_session_node_set(cnt_session *s, const cnt_request *req)
{
    cnt_status st = cnt_throttle_set_capacity(s->env->throttle,
                                              req->capacity);
    char what[48];
    snprintf(what, sizeof(what), "node set capacity %u",
             (unsigned)req->capacity);
    changed(s, req, st, what);
}

/* Unthrottle (privileged): this connection's charges are never throttled
 * from now on (they are still counted). */
void cnt_session_unthrottle(cnt_session *s, const cnt_request *req)
{
    s->unthrottled = true;
    changed(s, req, CNT_STATUS_OK, "unthrottle");
}

/* Reload (privileged): reads the throttle settings file again. */
void cnt_session_reload(cnt_session *s, const cnt_request *req)
{
    changed(s, req, s->env->reload != NULL
                        ? s->env->reload(s->env->reload_ctx)
                        : CNT_STATUS_NOT_FOUND, "reload");
}

/* Reports a change asked by a JSON document to the log, then answers
 * with st and text as body: what was applied, or what is wrong. */
static void changed_text(cnt_session *s, const cnt_request *req,
                         cnt_status st, const char *what, const char *text)
{
    size_t n = strlen(text);

    if (s->env->privileged_change != NULL) {
        char line[640];
        snprintf(line, sizeof(line), "%s: %s%s%s", what,
                 st == CNT_STATUS_OK ? "done" : cnt_status_text(st),
                 st == CNT_STATUS_OK ? "" : ": ", st == CNT_STATUS_OK ? ""
                                                                  : text);
        s->env->privileged_change(s, line);
    }
    uint8_t *p = cnt_session_reserve(s, CNT_TEXT_RESPONSE_SIZE(n));
    if (p != NULL)
        cnt_outbuf_commit(&s->out, cnt_encode_text(p, req->opcode,
                                                   (uint8_t)st, req->opaque,
                                                   text, n));
}

/* Tenant_set_json (privileged): the seed's SetBucketThrottleProperties.
 * The tenant's document, a field left out keeping its value; answers
 * the tenant's settings as they are after the change, or the field that
 * was refused. */
void cnt_session_tenant_set_json(cnt_session *s, const cnt_request *req)
{
    cnt_tjson_tenant t;
    char text[CNT_TJSON_ERR_SIZE], name[4 * LOG_NAME_MAX + 6], what[320];
    cnt_status st = CNT_STATUS_INVALID;

    log_name(name, req->name, req->name_len);
    snprintf(what, sizeof(what), "tenant set %s (json)", name);
    if (cnt_tjson_tenant_parse(req->doc, req->doc_len, &t, text,
                               sizeof(text)))
        st = cnt_throttle_set_tenant(s->env->throttle, req->name,
                                     req->name_len, t.has_reserved,
                                     t.reserved, t.has_hard, t.hard);
    else
        goto answer;
    if (st == CNT_STATUS_OK) {
        cnt_tenant_view v;
        /* Read back at once: the settings this change left (another
         * operator's change right after would show instead, as
         * Tenant_show would). */
        if (cnt_throttle_tenant(s->env->throttle, req->name, req->name_len,
                                &v) == CNT_STATUS_OK)
            cnt_tjson_tenant_format(text, sizeof(text), v.reserved,
                                    v.hard_limit);
        else
            text[0] = '\0';
    } else if (st == CNT_STATUS_OVER_CAPACITY) {
        snprintf(text, sizeof(text), "reserved: %u would bring the "
                 "reserves above the node's capacity", (unsigned)t.reserved);
    } else if (st == CNT_STATUS_INVALID && t.has_hard) {
        snprintf(text, sizeof(text), "hard_limit: %u is below the tenant's "
                 "reserve", (unsigned)t.hard);
    } else if (st == CNT_STATUS_INVALID) {
        snprintf(text, sizeof(text), "reserved: %u is above the tenant's "
                 "hard limit", (unsigned)t.reserved);
    } else {
        snprintf(text, sizeof(text), "%s", cnt_status_text(st));
    }
answer:
    changed_text(s, req, st, what, text);
}

/* Node_set_json (privileged): the seed's SetNodeThrottleProperties. The
 * node's document; answers the capacity applied, or the field that was
 * refused. */
void cnt_session_node_set_json(cnt_session *s, const cnt_request *req)
{
    cnt_tjson_node n;
    char text[CNT_TJSON_ERR_SIZE];
    cnt_status st = CNT_STATUS_INVALID;

    if (cnt_tjson_node_parse(req->doc, req->doc_len, &n, text,
                             sizeof(text))) {
        st = cnt_throttle_set_capacity(s->env->throttle, n.capacity);
        if (st == CNT_STATUS_OK)
            cnt_tjson_node_format(text, sizeof(text), n.capacity);
        else if (st == CNT_STATUS_OVER_CAPACITY) {
            cnt_node_view v;
            cnt_throttle_node(s->env->throttle, &v);
            snprintf(text, sizeof(text), "capacity: %u is below the "
                     "tenants' reserves (%u)", (unsigned)n.capacity,
                     (unsigned)v.reserved_sum);
        } else
            snprintf(text, sizeof(text), "%s", cnt_status_text(st));
    }
    changed_text(s, req, st, "node set (json)", text);
}
