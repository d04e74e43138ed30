/* client.c: the client object of libmccounter: creating and freeing it,
 * its servers and their continuum, its settings, and the choice of a
 * name's server. The connections and the loop that drives them are in
 * conn.c, the reading of answers in answers.c, the operations in ops.c. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/internal.h"

/* ---- Small helpers ---- */

/* Monotonic clock in milliseconds. */
int64_t mcc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns the scratch buffer, allocating it on first use. */
uint8_t *mcc_scratch(mcc_client *c)
{
    if (!c->scratch)
        c->scratch = malloc(CNT_REQUEST_MAX);
    return c->scratch;
}

/* Returns a fresh opaque; 0 is skipped so that it can mean "none". */
uint32_t mcc_next_opaque(mcc_client *c)
{
    if (++c->next_opaque == 0)
        c->next_opaque = 1;
    return c->next_opaque;
}

/* Checks a name's length against the protocol's bounds. */
int mcc_check_name(const void *name, size_t len)
{
    if (!name || len == 0 || len > CNT_NAME_MAX)
        return MCC_ERR_NAME;
    return MCC_OK;
}

/* Checks an Auth_user's parts: both non-empty, no flag but the
 * non-blocking one, and together within one request's body. */
int mcc_check_user(const void *user, size_t user_len, const void *secret,
                   size_t secret_len, unsigned flags)
{
    if (flags & ~(unsigned)CNT_AUTH_FLAGS_ALL)
        return MCC_ERR_INVALID;
    if (mcc_check_name(user, user_len) != MCC_OK ||
        mcc_check_name(secret, secret_len) != MCC_OK ||
        user_len + secret_len > CNT_BODY_MAX - CNT_AUSER_FIXED)
        return MCC_ERR_NAME;
    return MCC_OK;
}

/* ---- Client setup ---- */

/* Creates a client with no servers. */
mcc_client *mcc_client_new(void)
{
    mcc_client *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->timeout_ms = MCC_DEFAULT_TIMEOUT_MS;
    c->retry_ms = MCC_DEFAULT_RETRY_MS;
    c->max_requests = MCC_DEFAULT_MAX_REQUESTS;
    c->max_bytes = MCC_DEFAULT_MAX_BYTES;
    return c;
}

/* Frees the client, its connections and its leases. */
void mcc_client_free(mcc_client *c)
{
    if (!c)
        return;
    mcc_leases_free(c);
    mcc_quota_free(c);
    for (size_t i = 0; i < c->n_servers; i++) {
        mcc_conn *k = &c->servers[i].conn;
        mcc_conn_close(k);
        free(k->out);
        free(k->in);
        free(k->q);
    }
    free(c->servers);
    free(c->up);
    free(c->pfd);
    free(c->pidx);
    mcc_ketama_free(c->ketama);
    if (c->secret) {
        memset(c->secret, 0, c->secret_len);
        free(c->secret);
    }
    free(c->user);
    free(c->scratch);
    free(c);
}

/* Rebuilds the continuum from the server list. */
static int rebuild_continuum(mcc_client *c)
{
    mcc_server_spec *specs = malloc(c->n_servers * sizeof *specs);
    mcc_ketama *k;

    if (!specs)
        return MCC_ERR_NOMEM;
    for (size_t i = 0; i < c->n_servers; i++)
        specs[i] = c->servers[i].spec;
    k = mcc_ketama_new(specs, c->n_servers);
    free(specs);
    if (!k)
        return MCC_ERR_NOMEM;
    mcc_ketama_free(c->ketama);
    c->ketama = k;
    return MCC_OK;
}

/* Appends one server without rebuilding the continuum. */
static int append_server(mcc_client *c, const char *host, uint16_t port,
                         uint32_t weight)
{
    mcc_server *s;
    size_t hl;

    if (!host || port == 0)
        return MCC_ERR_INVALID;
    hl = strlen(host);
    if (hl == 0 || hl >= sizeof s->spec.host)
        return MCC_ERR_INVALID;
    if (c->n_servers == c->cap_servers) {
        size_t cap = c->cap_servers ? c->cap_servers * 2 : 4;
        mcc_server *ns = realloc(c->servers, cap * sizeof *ns);
        bool *up;
        struct pollfd *pfd;
        struct mcc_pollref *pidx;
        if (!ns)
            return MCC_ERR_NOMEM;
        c->servers = ns;
        up = realloc(c->up, cap * sizeof *up);
        if (!up)
            return MCC_ERR_NOMEM;
        c->up = up;
        pfd = realloc(c->pfd, cap * sizeof *pfd);
        if (!pfd)
            return MCC_ERR_NOMEM;
        c->pfd = pfd;
        pidx = realloc(c->pidx, cap * sizeof *pidx);
        if (!pidx)
            return MCC_ERR_NOMEM;
        c->pidx = pidx;
        c->cap_servers = cap;
    }
    s = &c->servers[c->n_servers];
    memset(s, 0, sizeof *s);
    memcpy(s->spec.host, host, hl + 1);
    s->spec.port = port;
    s->spec.weight = weight ? weight : 1;
    snprintf(s->label, sizeof s->label,
             strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, (unsigned)port);
    s->conn.fd = -1;
    s->conn.seen_fd = -1;
    return (int)c->n_servers++;
}

/* Adds a server and rebuilds the continuum. */
int mcc_client_add_server(mcc_client *c, const char *host, uint16_t port,
                          uint32_t weight)
{
    int idx, rc;

    if (!c)
        return MCC_ERR_INVALID;
    idx = append_server(c, host, port, weight);
    if (idx < 0)
        return idx;
    rc = rebuild_continuum(c);
    if (rc != MCC_OK) {
        c->n_servers--;
        return rc;
    }
    return idx;
}

/* Replaces the server list with a parsed one; only before any server has
 * a connection or requests (indexes would change under them). */
int mcc_client_set_servers(mcc_client *c, const char *list, char *err,
                           size_t errlen)
{
    mcc_server_spec *specs;
    size_t max;
    int n, rc;

    if (err && errlen)
        err[0] = '\0';
    if (!c || !list)
        return MCC_ERR_INVALID;
    for (size_t i = 0; i < c->n_servers; i++)
        if (c->servers[i].conn.fd >= 0 || c->servers[i].conn.q_count) {
            if (err && errlen)
                snprintf(err, errlen, "servers are in use");
            return MCC_ERR_INVALID;
        }
    /* Every item needs at least "h:1" and a comma. */
    max = strlen(list) / 2 + 1;
    specs = calloc(max, sizeof *specs);
    if (!specs)
        return MCC_ERR_NOMEM;
    n = mcc_servers_parse(list, specs, max, err, errlen);
    if (n < 1) {
        free(specs);
        return MCC_ERR_INVALID;
    }
    for (size_t i = 0; i < c->n_servers; i++) {
        free(c->servers[i].conn.out);
        free(c->servers[i].conn.in);
        free(c->servers[i].conn.q);
    }
    c->n_servers = 0;
    for (int i = 0; i < n; i++) {
        rc = append_server(c, specs[i].host, specs[i].port, specs[i].weight);
        if (rc < 0) {
            if (err && errlen)
                snprintf(err, errlen, "bad server '%s'", specs[i].host);
            free(specs);
            c->n_servers = 0;
            return rc;
        }
    }
    free(specs);
    rc = rebuild_continuum(c);
    if (rc != MCC_OK) {
        c->n_servers = 0;
        return rc;
    }
    return n;
}

/* Returns the number of servers. */
size_t mcc_client_server_count(const mcc_client *c)
{
    return c ? c->n_servers : 0;
}

/* Returns the server a name maps to, ignoring failures. */
size_t mcc_client_server_for(const mcc_client *c, const void *name,
                             size_t len)
{
    if (!c || c->n_servers == 0 || !c->ketama)
        return (size_t)-1;
    return mcc_ketama_lookup(c->ketama, name, len);
}

/* Returns "host:port" of server i. */
const char *mcc_client_server_name(const mcc_client *c, size_t i)
{
    if (!c || i >= c->n_servers)
        return NULL;
    return c->servers[i].label;
}

/* Sets the default timeout. */
mcc_error mcc_client_set_timeout(mcc_client *c, int timeout_ms)
{
    if (!c || timeout_ms <= 0)
        return MCC_ERR_INVALID;
    c->timeout_ms = timeout_ms;
    return MCC_OK;
}

/* Sets (or clears) the secret sent on each new connection. */
mcc_error mcc_client_set_secret(mcc_client *c, const void *secret, size_t len)
{
    uint8_t *copy = NULL;

    if (!c)
        return MCC_ERR_INVALID;
    if (secret) {
        if (len == 0 || len > CNT_NAME_MAX)
            return MCC_ERR_NAME;
        if (c->user && mcc_check_user(c->user, c->user_len, secret, len,
                                      c->user_flags) != MCC_OK)
            return MCC_ERR_NAME;
        copy = malloc(len);
        if (!copy)
            return MCC_ERR_NOMEM;
        memcpy(copy, secret, len);
    }
    if (c->secret) {
        memset(c->secret, 0, c->secret_len);
        free(c->secret);
    }
    c->secret = copy;
    c->secret_len = secret ? len : 0;
    return MCC_OK;
}

/* Sets (or clears) the user each new connection logs in as. */
mcc_error mcc_client_set_user(mcc_client *c, const void *user, size_t len,
                              unsigned flags)
{
    uint8_t *copy = NULL;
    int rc;

    if (!c)
        return MCC_ERR_INVALID;
    if (user) {
        /* The secret may come later: check the pair only when it is
         * there already (mcc_client_set_secret checks it otherwise). */
        rc = mcc_check_user(user, len, c->secret ? c->secret : user,
                            c->secret ? c->secret_len : 1, flags);
        if (rc != MCC_OK)
            return rc;
        copy = malloc(len);
        if (!copy)
            return MCC_ERR_NOMEM;
        memcpy(copy, user, len);
    }
    free(c->user);
    c->user = copy;
    c->user_len = user ? len : 0;
    c->user_flags = user ? (uint8_t)flags : 0;
    return MCC_OK;
}

/* Sets how long a failed server is left alone. */
mcc_error mcc_client_set_retry_ms(mcc_client *c, int retry_ms)
{
    if (!c || retry_ms < 0)
        return MCC_ERR_INVALID;
    c->retry_ms = retry_ms;
    return MCC_OK;
}

/* Turns remapping of rate-limit names on or off. */
void mcc_client_set_remap_rate_limits(mcc_client *c, bool on)
{
    if (c)
        c->remap = on;
}

/* Sets the per-connection bounds. */
mcc_error mcc_client_set_max_queue(mcc_client *c, size_t max_requests,
                                   size_t max_bytes)
{
    if (!c || max_requests == 0 || max_bytes < CNT_REQUEST_MAX)
        return MCC_ERR_INVALID;
    c->max_requests = max_requests;
    c->max_bytes = max_bytes;
    return MCC_OK;
}

/* Sets the event callback. */
void mcc_client_set_event_callback(mcc_client *c, mcc_event_callback fn,
                                   void *arg)
{
    if (!c)
        return;
    c->ev_cb = fn;
    c->ev_arg = arg;
}

/* Sets the watch callback. */
void mcc_client_set_watch_callback(mcc_client *c, mcc_watch_callback fn,
                                   void *arg)
{
    if (!c)
        return;
    c->w_cb = fn;
    c->w_arg = arg;
}

/* ---- Server choice and failure policy ---- */

/* Tells whether server i is in its retry pause (failed, not connected). */
static bool server_down(const mcc_client *c, size_t i, int64_t now)
{
    const mcc_conn *k = &c->servers[i].conn;

    return k->state == MCC_CONN_CLOSED && now < k->down_until;
}

/* Picks a name's server, moving rate-limit names off a down server when
 * remapping is on. */
int mcc_pick_server(mcc_client *c, const void *name, size_t len,
                    bool remappable, size_t *server)
{
    int64_t now;
    size_t s;

    if (c->n_servers == 0 || !c->ketama)
        return MCC_ERR_INVALID;
    /* One server needs no hashing (the ring would only say 0). */
    s = c->n_servers == 1 ? 0 : mcc_ketama_lookup(c->ketama, name, len);
    if (s >= c->n_servers)
        return MCC_ERR_INVALID;
    /* Only a closed connection can be down: no clock read otherwise. */
    if (c->servers[s].conn.state != MCC_CONN_CLOSED)
        now = 0;
    else
        now = mcc_now_ms();
    if (now != 0 && server_down(c, s, now)) {
        if (!remappable || !c->remap)
            return MCC_ERR_SERVER_DOWN;
        for (size_t i = 0; i < c->n_servers; i++)
            c->up[i] = !server_down(c, i, now);
        s = mcc_ketama_lookup_up(c->ketama, name, len, c->up);
        if (s >= c->n_servers)
            return MCC_ERR_SERVER_DOWN;
    }
    *server = s;
    return MCC_OK;
}
