/* ops.c: every operation of the protocol, twice. Each send_<op> checks
 * the arguments a server would refuse (with the client's own, clearer
 * codes), encodes the request with the protocol codec into the scratch
 * buffer, picks the server and hands it to mcc_submit; mcc_<op>_async
 * wraps it with the application's callback, mcc_<op> with a callback of
 * its own and drives the loop until the answer or the timeout. */
#include "config.h"

#include <string.h>

#include "client/internal.h"
#include "protocol/request.h"

/* ---- Shared steps ---- */

/* Checks the client and the name and returns the scratch buffer. */
static int prep_named(mcc_client *c, const void *name, size_t len,
                      uint8_t **buf)
{
    int rc;

    if (!c)
        return MCC_ERR_INVALID;
    rc = mcc_check_name(name, len);
    if (rc != MCC_OK)
        return rc;
    *buf = mcc_scratch(c);
    return *buf ? MCC_OK : MCC_ERR_NOMEM;
}

/* Picks the name's server and queues the request there. */
static int send_named(mcc_client *c, const void *name, size_t len,
                      bool remappable, const uint8_t *req, size_t n,
                      uint8_t op, mcc_sub *s)
{
    int rc = mcc_pick_server(c, name, len, remappable, &s->server);

    if (rc != MCC_OK)
        return rc;
    return mcc_submit(c, req, n, op, s);
}

/* Queues a request without a name on server. */
static int send_to(mcc_client *c, size_t server, const uint8_t *req,
                   size_t n, uint8_t op, mcc_sub *s)
{
    s->server = server;
    return mcc_submit(c, req, n, op, s);
}

/* Queues a body-less request (Noop, Stats, Dump, Queues, Tenant_list,
 * Node_show, Unthrottle, Reload) on server. */
static int send_bodyless(mcc_client *c, size_t server, uint8_t op, mcc_sub *s)
{
    uint8_t *b;
    size_t n;

    if (!c)
        return MCC_ERR_INVALID;
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    n = cnt_encode_request_header(b, op, 0, mcc_next_opaque(c));
    return send_to(c, server, b, n, op, s);
}

/* ---- The operations ---- */

static int send_get(mcc_client *c, const void *name, size_t len, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    s->checked = true;          /* its one rule, the name's, is checked */
    return send_named(c, name, len, false, b,
                      cnt_encode_get(b, mcc_next_opaque(c), name,
                                     (uint16_t)len),
                      CNT_OP_GET, s);
}

/* Acquire: resources 1..maximum, or the server answers 0x04. */
static int send_acquire(mcc_client *c, const void *name, size_t len,
                        uint32_t resources, uint32_t maximum, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    if (resources == 0 || resources > maximum)
        return MCC_ERR_RESOURCES;
    s->checked = true;          /* the name and resources are checked */
    return send_named(c, name, len, false, b,
                      cnt_encode_acquire(b, mcc_next_opaque(c), resources,
                                         maximum, name, (uint16_t)len),
                      CNT_OP_ACQUIRE, s);
}

static int send_release(mcc_client *c, const void *name, size_t len,
                        uint32_t resources, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    s->checked = true;          /* its one rule, the name's, is checked */
    return send_named(c, name, len, false, b,
                      cnt_encode_release(b, mcc_next_opaque(c), resources,
                                         name, (uint16_t)len),
                      CNT_OP_RELEASE, s);
}

/* Wait_acquire: resources 1 or more, and within a non-zero maximum (a
 * maximum of 0 is the group's, which only the server knows). */
int mcc_send_wait_acquire(mcc_client *c, const void *name, size_t len,
                          uint32_t resources, uint32_t maximum,
                          uint32_t wait_ms, uint32_t lease_ms, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    if (resources == 0 || (maximum != 0 && resources > maximum))
        return MCC_ERR_RESOURCES;
    return send_named(c, name, len, false, b,
                      cnt_encode_wait_acquire(b, mcc_next_opaque(c),
                                              resources, maximum, wait_ms,
                                              lease_ms, name, (uint16_t)len),
                      CNT_OP_WAIT_ACQUIRE, s);
}

int mcc_send_renew(mcc_client *c, const void *name, size_t len,
                   uint32_t lease_ms, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    if (lease_ms == 0)
        return MCC_ERR_INVALID;
    return send_named(c, name, len, false, b,
                      cnt_encode_renew(b, mcc_next_opaque(c), lease_ms, name,
                                       (uint16_t)len),
                      CNT_OP_RENEW, s);
}

int mcc_send_wait_release(mcc_client *c, const void *name, size_t len,
                          mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, false, b,
                      cnt_encode_wait_release(b, mcc_next_opaque(c), name,
                                              (uint16_t)len),
                      CNT_OP_WAIT_RELEASE, s);
}

static int send_ttl_insert(mcc_client *c, const void *name, size_t len,
                           uint64_t quota, uint64_t ttl, uint8_t unit,
                           mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_ttl_insert(b, mcc_next_opaque(c), quota, ttl,
                                            unit, name, (uint16_t)len),
                      CNT_OP_TTL_INSERT, s);
}

static int send_ttl_query(mcc_client *c, const void *name, size_t len,
                          mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_ttl_query(b, mcc_next_opaque(c), name,
                                           (uint16_t)len),
                      CNT_OP_TTL_QUERY, s);
}

static int send_ttl_update(mcc_client *c, const void *name, size_t len,
                           uint8_t attribute, uint8_t change, uint8_t unit,
                           uint64_t value, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_ttl_update(b, mcc_next_opaque(c), attribute,
                                            change, unit, value, name,
                                            (uint16_t)len),
                      CNT_OP_TTL_UPDATE, s);
}

static int send_ttl_purge(mcc_client *c, const void *name, size_t len,
                          mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_ttl_purge(b, mcc_next_opaque(c), name,
                                           (uint16_t)len),
                      CNT_OP_TTL_PURGE, s);
}

static int send_window_check(mcc_client *c, const void *name, size_t len,
                             bool peek, uint8_t slots, uint32_t limit,
                             uint32_t cost, uint64_t window_ns, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_window_check(b, mcc_next_opaque(c),
                                              peek ? CNT_CHECK_FLAG_PEEK : 0,
                                              slots, limit, cost, window_ns,
                                              name, (uint16_t)len),
                      CNT_OP_WINDOW_CHECK, s);
}

static int send_gcra_check(mcc_client *c, const void *name, size_t len,
                           bool peek, uint32_t burst, uint32_t count,
                           uint32_t cost, uint64_t period_ns, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, name, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, name, len, true, b,
                      cnt_encode_gcra_check(b, mcc_next_opaque(c),
                                            peek ? CNT_CHECK_FLAG_PEEK : 0,
                                            burst, count, cost, period_ns,
                                            name, (uint16_t)len),
                      CNT_OP_GCRA_CHECK, s);
}

/* Multi_check: 1..16 items whose names all live on one server (the
 * server evaluates them atomically; two servers cannot). */
static int send_multi_check(mcc_client *c, const mcc_check_item *items,
                            size_t n, bool peek, mcc_sub *s)
{
    cnt_multi_builder mb;
    size_t home = 0;
    uint8_t *b;
    int rc;

    if (!c || !items || n == 0 || n > MCC_MULTI_MAX)
        return MCC_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        rc = mcc_check_name(items[i].name, items[i].name_len);
        if (rc != MCC_OK)
            return rc;
        if (items[i].op != MCC_OP_WINDOW_CHECK &&
            items[i].op != MCC_OP_GCRA_CHECK)
            return MCC_ERR_INVALID;
    }
    if (c->n_servers == 0)
        return MCC_ERR_INVALID;
    /* Where the names live, failures aside, then where they go now. */
    for (size_t i = 1; i < n; i++)
        if (mcc_client_server_for(c, items[i].name, items[i].name_len) !=
            mcc_client_server_for(c, items[0].name, items[0].name_len))
            return MCC_ERR_CROSS_SERVER;
    for (size_t i = 0; i < n; i++) {
        size_t srv;
        rc = mcc_pick_server(c, items[i].name, items[i].name_len, true,
                             &srv);
        if (rc != MCC_OK)
            return rc;
        if (i > 0 && srv != home)
            return MCC_ERR_CROSS_SERVER;
        home = srv;
    }
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    if (!cnt_multi_begin(&mb, b, CNT_REQUEST_MAX, mcc_next_opaque(c),
                         peek ? CNT_CHECK_FLAG_PEEK : 0))
        return MCC_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        cnt_check_request it;
        memset(&it, 0, sizeof it);
        it.opcode = items[i].op;
        it.slots = items[i].slots;
        it.limit_or_burst = items[i].limit;
        it.count = items[i].count;
        it.cost = items[i].cost;
        it.period_ns = items[i].period_ns;
        it.name = items[i].name;
        it.name_len = (uint16_t)items[i].name_len;
        if (!cnt_multi_add(&mb, &it))
            return MCC_ERR_INVALID;     /* the items pass one body */
    }
    return send_to(c, home, b, cnt_multi_finish(&mb), CNT_OP_MULTI_CHECK, s);
}

static int send_auth(mcc_client *c, size_t server, const void *secret,
                     size_t len, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, secret, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_to(c, server, b,
                   cnt_encode_auth(b, mcc_next_opaque(c), secret,
                                   (uint16_t)len),
                   CNT_OP_AUTH, s);
}

/* Auth_user: the user and the secret, both needed, in one body. */
static int send_auth_user(mcc_client *c, size_t server, const void *user,
                          size_t user_len, const void *secret,
                          size_t secret_len, unsigned flags, mcc_sub *s)
{
    uint8_t *b;
    int rc;

    if (!c)
        return MCC_ERR_INVALID;
    rc = mcc_check_user(user, user_len, secret, secret_len, flags);
    if (rc != MCC_OK)
        return rc;
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    return send_to(c, server, b,
                   cnt_encode_auth_user(b, mcc_next_opaque(c),
                                        (uint8_t)flags, user,
                                        (uint16_t)user_len, secret,
                                        (uint16_t)secret_len),
                   CNT_OP_AUTH_USER, s);
}

/* Throttle: units are what is charged, 0 is refused like 0 resources. */
static int send_throttle(mcc_client *c, const void *tenant, size_t len,
                         uint32_t units, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, tenant, len, &b);

    if (rc != MCC_OK)
        return rc;
    if (units == 0)
        return MCC_ERR_RESOURCES;
    return send_named(c, tenant, len, false, b,
                      cnt_encode_throttle(b, mcc_next_opaque(c), units,
                                          tenant, (uint16_t)len),
                      CNT_OP_THROTTLE, s);
}

static int send_tenant_show(mcc_client *c, const void *tenant, size_t len,
                            mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, tenant, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, tenant, len, false, b,
                      cnt_encode_tenant_show(b, mcc_next_opaque(c), tenant,
                                             (uint16_t)len),
                      CNT_OP_TENANT_SHOW, s);
}

static int send_tenant_set(mcc_client *c, const void *tenant, size_t len,
                           uint8_t flags, uint32_t reserved,
                           uint32_t hard_limit, mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, tenant, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, tenant, len, false, b,
                      cnt_encode_tenant_set(b, mcc_next_opaque(c), flags,
                                            reserved, hard_limit, tenant,
                                            (uint16_t)len),
                      CNT_OP_TENANT_SET, s);
}

static int send_tenant_remove(mcc_client *c, const void *tenant, size_t len,
                              mcc_sub *s)
{
    uint8_t *b;
    int rc = prep_named(c, tenant, len, &b);

    if (rc != MCC_OK)
        return rc;
    return send_named(c, tenant, len, false, b,
                      cnt_encode_tenant_remove(b, mcc_next_opaque(c), tenant,
                                               (uint16_t)len),
                      CNT_OP_TENANT_REMOVE, s);
}

static int send_node_set(mcc_client *c, size_t server, uint32_t capacity,
                         mcc_sub *s)
{
    uint8_t *b;

    if (!c)
        return MCC_ERR_INVALID;
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    return send_to(c, server, b,
                   cnt_encode_node_set(b, mcc_next_opaque(c), capacity),
                   CNT_OP_NODE_SET, s);
}

static int send_tenant_set_json(mcc_client *c, const void *tenant,
                                size_t len, const char *doc, size_t doc_len,
                                mcc_sub *s)
{
    uint8_t *b;
    int rc;

    if (!c || (!doc && doc_len > 0) || doc_len > CNT_JSON_DOC_MAX ||
        len + doc_len > CNT_BODY_MAX - CNT_TSETJ_FIXED)
        return MCC_ERR_INVALID;
    rc = prep_named(c, tenant, len, &b);
    if (rc != MCC_OK)
        return rc;
    return send_named(c, tenant, len, false, b,
                      cnt_encode_tenant_set_json(b, mcc_next_opaque(c),
                                                 tenant, (uint16_t)len, doc,
                                                 doc_len),
                      CNT_OP_TENANT_SET_JSON, s);
}

static int send_node_set_json(mcc_client *c, size_t server, const char *doc,
                              size_t doc_len, mcc_sub *s)
{
    uint8_t *b;

    if (!c || (!doc && doc_len > 0) || doc_len > CNT_JSON_DOC_MAX)
        return MCC_ERR_INVALID;
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    return send_to(c, server, b,
                   cnt_encode_node_set_json(b, mcc_next_opaque(c), doc,
                                            doc_len),
                   CNT_OP_NODE_SET_JSON, s);
}

/* ---- Asynchronous wrappers ---- */

/* A submission answered through the application's callback. */
static mcc_sub async_sub(mcc_callback cb, mcc_record_callback rcb, void *arg)
{
    mcc_sub s;

    memset(&s, 0, sizeof s);
    s.cb = cb;
    s.rcb = rcb;
    s.arg = arg;
    return s;
}

/* Sends a Noop to a server. */
mcc_error mcc_noop_async(mcc_client *c, size_t server, mcc_callback cb,
                         void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_bodyless(c, server, CNT_OP_NOOP, &s);
}

/* Reads a counter. */
mcc_error mcc_get_async(mcc_client *c, const void *name, size_t len,
                        mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_get(c, name, len, &s);
}

/* Acquires resources. */
mcc_error mcc_acquire_async(mcc_client *c, const void *name, size_t len,
                            uint32_t resources, uint32_t maximum,
                            mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_acquire(c, name, len, resources, maximum, &s);
}

/* Releases resources. */
mcc_error mcc_release_async(mcc_client *c, const void *name, size_t len,
                            uint32_t resources, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_release(c, name, len, resources, &s);
}

/* Streams a server's stats. */
mcc_error mcc_stats_async(mcc_client *c, size_t server, mcc_record_callback cb,
                          void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_bodyless(c, server, CNT_OP_STATS, &s);
}

/* Streams a server's counters. */
mcc_error mcc_dump_async(mcc_client *c, size_t server, mcc_record_callback cb,
                         void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_bodyless(c, server, CNT_OP_DUMP, &s);
}

/* Waits for resources (the events follow through the event callback). */
mcc_error mcc_wait_for_async(mcc_client *c, const void *name, size_t len,
                             const mcc_wait_params *params, mcc_callback cb,
                             void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);

    if (!params)
        return MCC_ERR_INVALID;
    return mcc_send_wait_acquire(c, name, len, params->resources,
                                 params->maximum, params->wait_ms,
                                 params->lease_ms, &s);
}

/* The same, the values apart (kept for one release). */
mcc_error mcc_wait_acquire_async(mcc_client *c, const void *name, size_t len,
                                 uint32_t resources, uint32_t maximum,
                                 uint32_t wait_ms, uint32_t lease_ms,
                                 mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return mcc_send_wait_acquire(c, name, len, resources, maximum, wait_ms,
                                 lease_ms, &s);
}

/* Renews a grant. */
mcc_error mcc_renew_async(mcc_client *c, const void *name, size_t len,
                          uint32_t lease_ms, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return mcc_send_renew(c, name, len, lease_ms, &s);
}

/* Ends a wait or a grant. */
mcc_error mcc_wait_release_async(mcc_client *c, const void *name, size_t len,
                                 mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return mcc_send_wait_release(c, name, len, &s);
}

/* Streams a server's queues. */
mcc_error mcc_queues_async(mcc_client *c, size_t server,
                           mcc_record_callback cb, void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_bodyless(c, server, CNT_OP_QUEUES, &s);
}

/* Queues a listing whose body is a count (Lease_list, Busiest), encoded
 * by encode, on server. */
static int send_counted(mcc_client *c, size_t server, uint32_t count,
                        size_t (*encode)(uint8_t *, uint32_t, uint32_t),
                        uint8_t opcode, mcc_sub *s)
{
    uint8_t *b;

    if (!c)
        return MCC_ERR_INVALID;
    b = mcc_scratch(c);
    if (!b)
        return MCC_ERR_NOMEM;
    return send_to(c, server, b, encode(b, mcc_next_opaque(c), count),
                   opcode, s);
}

/* Queues a Lease_list on server (count 0 is the caller's mistake). */
static int send_lease_list(mcc_client *c, size_t server, uint32_t count,
                           mcc_sub *s)
{
    if (count == 0)
        return MCC_ERR_INVALID;
    return send_counted(c, server, count, cnt_encode_lease_list,
                        CNT_OP_LEASE_LIST, s);
}

/* Streams a server's leases nearest to expiry. */
mcc_error mcc_lease_list_async(mcc_client *c, size_t server, uint32_t count,
                               mcc_record_callback cb, void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_lease_list(c, server, count, &s);
}

/* Creates a TTL record. */
mcc_error mcc_ttl_insert_async(mcc_client *c, const void *name, size_t len,
                               uint64_t quota, uint64_t ttl, uint8_t unit,
                               mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_ttl_insert(c, name, len, quota, ttl, unit, &s);
}

/* Reads a TTL record. */
mcc_error mcc_ttl_query_async(mcc_client *c, const void *name, size_t len,
                              mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_ttl_query(c, name, len, &s);
}

/* Changes a TTL record. */
mcc_error mcc_ttl_update_async(mcc_client *c, const void *name, size_t len,
                               uint8_t attribute, uint8_t change, uint8_t unit,
                               uint64_t value, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_ttl_update(c, name, len, attribute, change, unit, value, &s);
}

/* Removes a TTL record. */
mcc_error mcc_ttl_purge_async(mcc_client *c, const void *name, size_t len,
                              mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_ttl_purge(c, name, len, &s);
}

/* Sends the window or GCRA check an item describes. */
static int send_check(mcc_client *c, const mcc_check_item *item, bool peek,
                      mcc_sub *s)
{
    if (!item)
        return MCC_ERR_INVALID;
    if (item->op == MCC_OP_WINDOW_CHECK)
        return send_window_check(c, item->name, item->name_len, peek,
                                 item->slots, item->limit, item->cost,
                                 item->period_ns, s);
    if (item->op == MCC_OP_GCRA_CHECK)
        return send_gcra_check(c, item->name, item->name_len, peek,
                               item->limit, item->count, item->cost,
                               item->period_ns, s);
    return MCC_ERR_INVALID;
}

/* Checks a window or GCRA limit. */
mcc_error mcc_check_async(mcc_client *c, const mcc_check_item *item,
                          bool peek, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_check(c, item, peek, &s);
}

/* Checks a window (kept for one release). */
mcc_error mcc_window_check_async(mcc_client *c, const void *name, size_t len,
                                 bool peek, uint8_t slots, uint32_t limit,
                                 uint32_t cost, uint64_t window_ns,
                                 mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_window_check(c, name, len, peek, slots, limit, cost, window_ns,
                             &s);
}

/* Checks a GCRA limit (kept for one release). */
mcc_error mcc_gcra_check_async(mcc_client *c, const void *name, size_t len,
                               bool peek, uint32_t burst, uint32_t count,
                               uint32_t cost, uint64_t period_ns,
                               mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_gcra_check(c, name, len, peek, burst, count, cost, period_ns,
                           &s);
}

/* Checks several limits as one. */
mcc_error mcc_multi_check_async(mcc_client *c, const mcc_check_item *items,
                                size_t n, bool peek, mcc_callback cb,
                                void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_multi_check(c, items, n, peek, &s);
}

/* Authenticates a connection. */
mcc_error mcc_auth_async(mcc_client *c, size_t server, const void *secret,
                         size_t len, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_auth(c, server, secret, len, &s);
}

/* Logs a connection in as a user. */
mcc_error mcc_auth_user_async(mcc_client *c, size_t server,
                              const void *user, size_t user_len,
                              const void *secret, size_t secret_len,
                              unsigned flags, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_auth_user(c, server, user, user_len, secret, secret_len,
                          flags, &s);
}

/* Charges a tenant. */
mcc_error mcc_throttle_async(mcc_client *c, const void *tenant, size_t len,
                             uint32_t units, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_throttle(c, tenant, len, units, &s);
}

/* Shows a tenant. */
mcc_error mcc_tenant_show_async(mcc_client *c, const void *tenant, size_t len,
                                mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_tenant_show(c, tenant, len, &s);
}

/* Streams a server's tenants. */
mcc_error mcc_tenant_list_async(mcc_client *c, size_t server,
                                mcc_record_callback cb, void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_bodyless(c, server, CNT_OP_TENANT_LIST, &s);
}

/* Queues a Busiest request for count names on server. */
static int send_busiest(mcc_client *c, size_t server, uint32_t count,
                        mcc_sub *s)
{
    return send_counted(c, server, count, cnt_encode_busiest,
                        CNT_OP_BUSIEST, s);
}

/* Streams a server's busiest rate-limit names. */
mcc_error mcc_busiest_async(mcc_client *c, size_t server, uint32_t count,
                            mcc_record_callback cb, void *arg)
{
    mcc_sub s = async_sub(NULL, cb, arg);
    return send_busiest(c, server, count, &s);
}

/* Shows a server's node view. */
mcc_error mcc_node_show_async(mcc_client *c, size_t server, mcc_callback cb,
                              void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_bodyless(c, server, CNT_OP_NODE_SHOW, &s);
}

/* Configures a tenant. */
mcc_error mcc_tenant_set_async(mcc_client *c, const void *tenant, size_t len,
                               uint8_t flags, uint32_t reserved,
                               uint32_t hard_limit, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_tenant_set(c, tenant, len, flags, reserved, hard_limit, &s);
}

/* Configures a tenant with a JSON document. */
mcc_error mcc_tenant_set_json_async(mcc_client *c, const void *tenant,
                                    size_t len, const char *doc,
                                    size_t doc_len, mcc_callback cb,
                                    void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_tenant_set_json(c, tenant, len, doc, doc_len, &s);
}

/* Sets a server's capacity with a JSON document. */
mcc_error mcc_node_set_json_async(mcc_client *c, size_t server,
                                  const char *doc, size_t doc_len,
                                  mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_node_set_json(c, server, doc, doc_len, &s);
}

/* Removes a tenant's configuration. */
mcc_error mcc_tenant_remove_async(mcc_client *c, const void *tenant,
                                  size_t len, mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_tenant_remove(c, tenant, len, &s);
}

/* Sets a server's capacity. */
mcc_error mcc_node_set_async(mcc_client *c, size_t server, uint32_t capacity,
                             mcc_callback cb, void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_node_set(c, server, capacity, &s);
}

/* Unthrottles a connection. */
mcc_error mcc_unthrottle_async(mcc_client *c, size_t server, mcc_callback cb,
                               void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_bodyless(c, server, CNT_OP_UNTHROTTLE, &s);
}

/* Makes a server reload its settings. */
mcc_error mcc_reload_async(mcc_client *c, size_t server, mcc_callback cb,
                           void *arg)
{
    mcc_sub s = async_sub(cb, NULL, arg);
    return send_bodyless(c, server, CNT_OP_RELOAD, &s);
}

/* ---- Blocking wrappers ---- */

/* What a blocking call waits on. */
typedef struct sync_ctx {
    bool done;
    mcc_result res;
    mcc_record_callback urcb;   /* the application's, for series */
    void *uarg;
} sync_ctx;

/* Takes a blocking call's answer. */
static void sync_cb(mcc_client *c, const mcc_result *r, void *arg)
{
    sync_ctx *x = arg;

    (void)c;
    x->res = *r;
    x->done = true;
}

/* Passes a series' records on and takes its end. */
static void sync_rcb(mcc_client *c, const mcc_record *rec, void *arg)
{
    sync_ctx *x = arg;

    if (x->urcb)
        x->urcb(c, rec, x->uarg);
    if (!rec->more) {
        x->res.error = rec->error;
        x->res.status = rec->status;
        x->done = true;
    }
}

/* The body of a blocking call: declares the submission s (its callback
 * and deadline set by sync_start), evaluates submit, which queues the
 * request with &s, and runs the loop until its answer or the timeout. A
 * macro, since C has no closures: what submit calls differs per
 * operation, the steps around it do not. */
#define SYNC_CALL(c, timeout_ms, op, out, s, submit)                       \
    do {                                                                   \
        sync_ctx x_;                                                       \
        mcc_sub s;                                                         \
        int rc_ = sync_start((c), (timeout_ms), (op), &x_, &s);            \
                                                                           \
        if (rc_ == MCC_OK)                                                 \
            rc_ = (submit);                                                \
        return sync_end((c), rc_, &x_, &s, (out));                         \
    } while (0)

/* Prepares a blocking call: refuses one from inside a callback (the loop
 * is already running below it), sets the deadline. */
static int sync_start(mcc_client *c, int timeout_ms, uint8_t op,
                      sync_ctx *x, mcc_sub *s)
{
    memset(x, 0, sizeof *x);
    memset(s, 0, sizeof *s);
    x->res.op = op;
    if (!c || timeout_ms < -1)
        return MCC_ERR_INVALID;
    if (c->in_callback)
        return MCC_ERR_BUSY;
    s->cb = sync_cb;
    s->arg = x;
    s->deadline = mcc_now_ms() + (timeout_ms < 0 ? c->timeout_ms
                                                 : timeout_ms);
    return MCC_OK;
}

/* Finishes a blocking call whose request was submitted with result rc. */
static int sync_end(mcc_client *c, int rc, sync_ctx *x, mcc_sub *s,
                    mcc_result *out)
{
    if (rc == MCC_OK) {
        mcc_run_until(c, &x->done, s->deadline);
        if (!x->done) {
            mcc_orphan(c, s->server, s->opaque);
            x->res.error = MCC_ERR_TIMEOUT;
            x->res.server = s->server;
            x->res.opaque = s->opaque;
        }
    } else {
        x->res.error = rc;
    }
    if (out)
        *out = x->res;
    return x->res.error;
}

/* Prepares a blocking series of op: its records go to cb (with arg) as
 * they arrive; the caller sends the request and ends with sync_end. */
static int sync_series_start(mcc_client *c, uint8_t op,
                             mcc_record_callback cb, void *arg,
                             int timeout_ms, sync_ctx *x, mcc_sub *s)
{
    int rc = sync_start(c, timeout_ms, op, x, s);

    if (rc != MCC_OK)
        return rc;
    s->cb = NULL;
    s->rcb = sync_rcb;
    x->urcb = cb;
    x->uarg = arg;
    return MCC_OK;
}

/* A blocking series: records go to cb, the end decides the result. */
static int sync_series(mcc_client *c, size_t server, uint8_t op,
                       mcc_record_callback cb, void *arg, int timeout_ms)
{
    sync_ctx x;
    mcc_sub s;
    int rc = sync_series_start(c, op, cb, arg, timeout_ms, &x, &s);

    if (rc != MCC_OK)
        return rc;
    return sync_end(c, send_bodyless(c, server, op, &s), &x, &s, NULL);
}

/* Blocking Noop. */
mcc_error mcc_noop(mcc_client *c, size_t server, int timeout_ms,
                   mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_NOOP, out, s,
              send_bodyless(c, server, CNT_OP_NOOP, &s));
}

/* Blocking Get. */
mcc_error mcc_get(mcc_client *c, const void *name, size_t len, int timeout_ms,
                  mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_GET, out, s, send_get(c, name, len, &s));
}

/* Blocking Acquire. */
mcc_error mcc_acquire(mcc_client *c, const void *name, size_t len,
                      uint32_t resources, uint32_t maximum, int timeout_ms,
                      mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_ACQUIRE, out, s,
              send_acquire(c, name, len, resources, maximum, &s));
}

/* Blocking Release. */
mcc_error mcc_release(mcc_client *c, const void *name, size_t len,
                      uint32_t resources, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_RELEASE, out, s,
              send_release(c, name, len, resources, &s));
}

/* Blocking Stats. */
mcc_error mcc_stats(mcc_client *c, size_t server, mcc_record_callback cb,
                    void *arg, int timeout_ms)
{
    return sync_series(c, server, CNT_OP_STATS, cb, arg, timeout_ms);
}

/* Blocking Dump. */
mcc_error mcc_dump(mcc_client *c, size_t server, mcc_record_callback cb,
                   void *arg, int timeout_ms)
{
    return sync_series(c, server, CNT_OP_DUMP, cb, arg, timeout_ms);
}

/* Blocking Queues. */
mcc_error mcc_queues(mcc_client *c, size_t server, mcc_record_callback cb,
                     void *arg, int timeout_ms)
{
    return sync_series(c, server, CNT_OP_QUEUES, cb, arg, timeout_ms);
}

/* Blocking Lease_list. */
mcc_error mcc_lease_list(mcc_client *c, size_t server, uint32_t count,
                         mcc_record_callback cb, void *arg, int timeout_ms)
{
    sync_ctx x;
    mcc_sub s;
    int rc = sync_series_start(c, CNT_OP_LEASE_LIST, cb, arg, timeout_ms, &x, &s);

    if (rc != MCC_OK)
        return rc;
    return sync_end(c, send_lease_list(c, server, count, &s), &x, &s, NULL);
}

/* Blocking Tenant_list. */
mcc_error mcc_tenant_list(mcc_client *c, size_t server, mcc_record_callback cb,
                          void *arg, int timeout_ms)
{
    return sync_series(c, server, CNT_OP_TENANT_LIST, cb, arg, timeout_ms);
}

/* The end of a blocking wait: its granted or timed-out event, or the
 * loss of its connection. */
typedef struct wait_ctx {
    bool done;
    int error;
    cnt_event_packet ev;
} wait_ctx;

/* Takes the event a blocking wait is waiting for. */
static void wait_event(mcc_client *c, mcc_waiter *w,
                       const cnt_event_packet *ev, int error)
{
    wait_ctx *wc = w->ctx;

    (void)c;
    wc->done = true;
    wc->error = error;
    if (ev) {
        wc->ev = *ev;
        wc->ev.name = NULL;     /* not kept past the call */
        wc->ev.name_len = 0;
    }
}

/* Blocking Wait_acquire: the answer, then when queued the event. */
mcc_error mcc_wait_for(mcc_client *c, const void *name, size_t len,
                       const mcc_wait_params *params, int timeout_ms,
                       mcc_result *out)
{
    sync_ctx x;
    mcc_sub s;
    wait_ctx wc;
    mcc_waiter w;
    int64_t until;
    uint32_t wait_ms;
    int rc;

    if (!params) {
        if (out) {
            memset(out, 0, sizeof *out);
            out->op = MCC_OP_WAIT_ACQUIRE;
            out->error = MCC_ERR_INVALID;
        }
        return MCC_ERR_INVALID;
    }
    wait_ms = params->wait_ms;
    rc = sync_start(c, timeout_ms, MCC_OP_WAIT_ACQUIRE, &x, &s);
    if (rc == MCC_OK)
        rc = mcc_send_wait_acquire(c, name, len, params->resources,
                                   params->maximum, wait_ms,
                                   params->lease_ms, &s);
    if (rc != MCC_OK)
        return sync_end(c, rc, &x, &s, out);
    /* Watch for the event before any answer can be read: the grant may
     * follow the "queued" answer in the same read. */
    memset(&wc, 0, sizeof wc);
    memset(&w, 0, sizeof w);
    w.opaque = s.opaque;
    w.once = true;
    w.fn = wait_event;
    w.ctx = &wc;
    mcc_waiter_add(c, s.server, &w);
    rc = sync_end(c, rc, &x, &s, NULL);
    if (rc != MCC_OK || x.res.wait.state != MCC_WAIT_QUEUED) {
        mcc_waiter_remove(c, s.server, &w);
        if (out)
            *out = x.res;
        return rc;
    }
    until = s.deadline + (wait_ms != MCC_GROUP_DEFAULT ? wait_ms : 0);
    mcc_run_until(c, &wc.done, until);
    if (!wc.done) {
        /* Still queued past the call's time: cancel the wait (a grant
         * racing it is returned by the same request). */
        mcc_sub rs;
        mcc_waiter_remove(c, s.server, &w);
        memset(&rs, 0, sizeof rs);
        (void)mcc_send_wait_release(c, name, len, &rs);
        x.res.error = MCC_ERR_TIMEOUT;
    } else if (wc.error != MCC_OK) {
        x.res.error = wc.error;
    } else if (wc.ev.code == CNT_EVENT_GRANTED) {
        x.res.wait.state = MCC_WAIT_GRANTED;
        x.res.wait.position = 0;
        x.res.wait.lease_id = wc.ev.lease_id;
        x.res.wait.consumption = wc.ev.value;
    } else if (wc.ev.code == CNT_EVENT_TIMED_OUT) {
        x.res.wait.state = MCC_WAIT_TIMED_OUT;
        x.res.wait.position = 0;
    } else {
        x.res.error = MCC_ERR_IO;   /* shutdown while queued */
    }
    if (out)
        *out = x.res;
    return x.res.error;
}

/* The same, the values apart (kept for one release). */
mcc_error mcc_wait_acquire(mcc_client *c, const void *name, size_t len,
                           uint32_t resources, uint32_t maximum,
                           uint32_t wait_ms, uint32_t lease_ms, int timeout_ms,
                           mcc_result *out)
{
    mcc_wait_params p = {
        .resources = resources, .maximum = maximum,
        .wait_ms = wait_ms, .lease_ms = lease_ms
    };
    return mcc_wait_for(c, name, len, &p, timeout_ms, out);
}

/* Blocking Renew. */
mcc_error mcc_renew(mcc_client *c, const void *name, size_t len,
                    uint32_t lease_ms, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_RENEW, out, s,
              mcc_send_renew(c, name, len, lease_ms, &s));
}

/* Blocking Wait_release. */
mcc_error mcc_wait_release(mcc_client *c, const void *name, size_t len,
                           int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_WAIT_RELEASE, out, s,
              mcc_send_wait_release(c, name, len, &s));
}

/* Blocking Ttl_insert. */
mcc_error mcc_ttl_insert(mcc_client *c, const void *name, size_t len,
                         uint64_t quota, uint64_t ttl, uint8_t unit,
                         int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TTL_INSERT, out, s,
              send_ttl_insert(c, name, len, quota, ttl, unit, &s));
}

/* Blocking Ttl_query. */
mcc_error mcc_ttl_query(mcc_client *c, const void *name, size_t len,
                        int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TTL_QUERY, out, s,
              send_ttl_query(c, name, len, &s));
}

/* Blocking Ttl_update. */
mcc_error mcc_ttl_update(mcc_client *c, const void *name, size_t len,
                         uint8_t attribute, uint8_t change, uint8_t unit,
                         uint64_t value, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TTL_UPDATE, out, s,
              send_ttl_update(c, name, len, attribute, change, unit, value,
                              &s));
}

/* Blocking Ttl_purge. */
mcc_error mcc_ttl_purge(mcc_client *c, const void *name, size_t len,
                        int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TTL_PURGE, out, s,
              send_ttl_purge(c, name, len, &s));
}

/* Blocking window or GCRA check. */
mcc_error mcc_check(mcc_client *c, const mcc_check_item *item, bool peek,
                    int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, item ? item->op : MCC_OP_WINDOW_CHECK, out, s,
              send_check(c, item, peek, &s));
}

/* Blocking Window_check (kept for one release). */
mcc_error mcc_window_check(mcc_client *c, const void *name, size_t len,
                           bool peek, uint8_t slots, uint32_t limit,
                           uint32_t cost, uint64_t window_ns, int timeout_ms,
                           mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_WINDOW_CHECK, out, s,
              send_window_check(c, name, len, peek, slots, limit, cost,
                                window_ns, &s));
}

/* Blocking Gcra_check (kept for one release). */
mcc_error mcc_gcra_check(mcc_client *c, const void *name, size_t len,
                         bool peek, uint32_t burst, uint32_t count,
                         uint32_t cost, uint64_t period_ns, int timeout_ms,
                         mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_GCRA_CHECK, out, s,
              send_gcra_check(c, name, len, peek, burst, count, cost,
                              period_ns, &s));
}

/* Blocking Multi_check. */
mcc_error mcc_multi_check(mcc_client *c, const mcc_check_item *items, size_t n,
                          bool peek, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_MULTI_CHECK, out, s,
              send_multi_check(c, items, n, peek, &s));
}

/* Blocking Auth. */
mcc_error mcc_auth(mcc_client *c, size_t server, const void *secret,
                   size_t len, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_AUTH, out, s,
              send_auth(c, server, secret, len, &s));
}

/* Blocking Auth_user. */
mcc_error mcc_auth_user(mcc_client *c, size_t server, const void *user,
                        size_t user_len, const void *secret,
                        size_t secret_len, unsigned flags, int timeout_ms,
                        mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_AUTH_USER, out, s,
              send_auth_user(c, server, user, user_len, secret, secret_len,
                             flags, &s));
}

/* Blocking Throttle. */
mcc_error mcc_throttle(mcc_client *c, const void *tenant, size_t len,
                       uint32_t units, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_THROTTLE, out, s,
              send_throttle(c, tenant, len, units, &s));
}

/* Blocking Tenant_show. */
mcc_error mcc_tenant_show(mcc_client *c, const void *tenant, size_t len,
                          int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TENANT_SHOW, out, s,
              send_tenant_show(c, tenant, len, &s));
}

/* Blocking Node_show. */
mcc_error mcc_node_show(mcc_client *c, size_t server, int timeout_ms,
                        mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_NODE_SHOW, out, s,
              send_bodyless(c, server, CNT_OP_NODE_SHOW, &s));
}

/* Blocking Tenant_set. */
mcc_error mcc_tenant_set(mcc_client *c, const void *tenant, size_t len,
                         uint8_t flags, uint32_t reserved, uint32_t hard_limit,
                         int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TENANT_SET, out, s,
              send_tenant_set(c, tenant, len, flags, reserved, hard_limit,
                              &s));
}

/* Blocking Tenant_set_json. */
mcc_error mcc_tenant_set_json(mcc_client *c, const void *tenant, size_t len,
                              const char *doc, size_t doc_len, int timeout_ms,
                              mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TENANT_SET_JSON, out, s,
              send_tenant_set_json(c, tenant, len, doc, doc_len, &s));
}

/* Blocking Node_set_json. */
mcc_error mcc_node_set_json(mcc_client *c, size_t server, const char *doc,
                            size_t doc_len, int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_NODE_SET_JSON, out, s,
              send_node_set_json(c, server, doc, doc_len, &s));
}

/* Blocking Tenant_remove. */
mcc_error mcc_tenant_remove(mcc_client *c, const void *tenant, size_t len,
                            int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_TENANT_REMOVE, out, s,
              send_tenant_remove(c, tenant, len, &s));
}

/* Blocking Node_set. */
mcc_error mcc_node_set(mcc_client *c, size_t server, uint32_t capacity,
                       int timeout_ms, mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_NODE_SET, out, s,
              send_node_set(c, server, capacity, &s));
}

/* Blocking Unthrottle. */
mcc_error mcc_unthrottle(mcc_client *c, size_t server, int timeout_ms,
                         mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_UNTHROTTLE, out, s,
              send_bodyless(c, server, CNT_OP_UNTHROTTLE, &s));
}

/* Blocking Reload. */
mcc_error mcc_reload(mcc_client *c, size_t server, int timeout_ms,
                     mcc_result *out)
{
    SYNC_CALL(c, timeout_ms, MCC_OP_RELOAD, out, s,
              send_bodyless(c, server, CNT_OP_RELOAD, &s));
}

/* Blocking Busiest. */
mcc_error mcc_busiest(mcc_client *c, size_t server, uint32_t count,
                      mcc_record_callback cb, void *arg, int timeout_ms)
{
    sync_ctx x;
    mcc_sub s;
    int rc = sync_series_start(c, CNT_OP_BUSIEST, cb, arg, timeout_ms, &x, &s);

    if (rc != MCC_OK)
        return rc;
    return sync_end(c, send_busiest(c, server, count, &s), &x, &s, NULL);
}
