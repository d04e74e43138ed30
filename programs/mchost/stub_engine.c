/* stub_engine.c: the engine handle mchost publishes in SERVER_HANDLE_V1.
 * Only get_stats does something; every other member is filled in too, so
 * an extension finds a complete table whichever member it looks at. */
#include "config.h"

#include "programs/mchost/stub_engine.h"

/* Spare zeroed room after the handle: an extension compiled against a
 * later revision with a longer ENGINE_HANDLE_V1 may read members this
 * revision does not have, and should find NULL rather than other data. */
struct mch_engine {
    ENGINE_HANDLE_V1 v1;
    void (*spare[32])(void);
};

static const engine_info info = {
    .description = "mchost stub engine (not a cache)",
    .num_features = 0,
};

static const engine_info *stub_get_info(ENGINE_HANDLE *h)
{
    (void)h;
    return &info;
}

static ENGINE_ERROR_CODE stub_initialize(ENGINE_HANDLE *h, const char *cfg)
{
    (void)h;
    (void)cfg;
    return ENGINE_SUCCESS;
}

static void stub_destroy(ENGINE_HANDLE *h, const bool force)
{
    (void)h;
    (void)force;
}

static ENGINE_ERROR_CODE stub_allocate(ENGINE_HANDLE *h, const void *c,
                                       item **it, const void *key,
                                       const size_t nkey, const size_t nbytes,
                                       const int flags,
                                       const rel_time_t exptime)
{
    (void)h; (void)c; (void)key; (void)nkey; (void)nbytes; (void)flags;
    (void)exptime;
    if (it != NULL)
        *it = NULL;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_remove(ENGINE_HANDLE *h, const void *c,
                                     const void *key, const size_t nkey,
                                     uint64_t cas, uint16_t vbucket)
{
    (void)h; (void)c; (void)key; (void)nkey; (void)cas; (void)vbucket;
    return ENGINE_ENOTSUP;
}

static void stub_release(ENGINE_HANDLE *h, const void *c, item *it)
{
    (void)h; (void)c; (void)it;
}

static ENGINE_ERROR_CODE stub_get(ENGINE_HANDLE *h, const void *c, item **it,
                                  const void *key, const int nkey,
                                  uint16_t vbucket)
{
    (void)h; (void)c; (void)key; (void)nkey; (void)vbucket;
    if (it != NULL)
        *it = NULL;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_store(ENGINE_HANDLE *h, const void *c,
                                    item *it, uint64_t *cas,
                                    ENGINE_STORE_OPERATION op,
                                    uint16_t vbucket)
{
    (void)h; (void)c; (void)it; (void)cas; (void)op; (void)vbucket;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_arithmetic(ENGINE_HANDLE *h, const void *c,
                                         const void *key, const int nkey,
                                         const bool incr, const bool create,
                                         const uint64_t delta,
                                         const uint64_t initial,
                                         const rel_time_t exptime,
                                         uint64_t *cas, uint64_t *result,
                                         uint16_t vbucket)
{
    (void)h; (void)c; (void)key; (void)nkey; (void)incr; (void)create;
    (void)delta; (void)initial; (void)exptime; (void)cas; (void)result;
    (void)vbucket;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_flush(ENGINE_HANDLE *h, const void *c,
                                    time_t when)
{
    (void)h; (void)c; (void)when;
    return ENGINE_ENOTSUP;
}

/* The general set (key NULL) is empty: the host prints its own lines.
 * No sub-key is known to a stub, so the host answers ERROR for them. */
static ENGINE_ERROR_CODE stub_get_stats(ENGINE_HANDLE *h, const void *c,
                                        const char *key, int nkey,
                                        ADD_STAT add_stat)
{
    (void)h; (void)c; (void)nkey; (void)add_stat;
    return key == NULL ? ENGINE_SUCCESS : ENGINE_KEY_ENOENT;
}

static void stub_reset_stats(ENGINE_HANDLE *h, const void *c)
{
    (void)h; (void)c;
}

static void *stub_get_stats_struct(ENGINE_HANDLE *h, const void *c)
{
    (void)h; (void)c;
    return NULL; /* no per-connection stats */
}

static ENGINE_ERROR_CODE stub_aggregate_stats(ENGINE_HANDLE *h,
                                              const void *c,
                                              void (*cb)(void *, void *),
                                              void *data)
{
    (void)h; (void)c; (void)cb; (void)data;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_unknown_command(ENGINE_HANDLE *h,
                                              const void *c,
                                              protocol_binary_request_header
                                                  *req,
                                              ADD_RESPONSE response)
{
    (void)h; (void)c; (void)req; (void)response;
    return ENGINE_ENOTSUP;
}

static ENGINE_ERROR_CODE stub_tap_notify(ENGINE_HANDLE *h, const void *c,
                                         void *es, uint16_t nes, uint8_t ttl,
                                         uint16_t tap_flags, tap_event_t ev,
                                         uint32_t seqno, const void *key,
                                         size_t nkey, uint32_t flags,
                                         uint32_t exptime, uint64_t cas,
                                         const void *data, size_t ndata,
                                         uint16_t vbucket)
{
    (void)h; (void)c; (void)es; (void)nes; (void)ttl; (void)tap_flags;
    (void)ev; (void)seqno; (void)key; (void)nkey; (void)flags;
    (void)exptime; (void)cas; (void)data; (void)ndata; (void)vbucket;
    return ENGINE_ENOTSUP;
}

static TAP_ITERATOR stub_get_tap_iterator(ENGINE_HANDLE *h, const void *c,
                                          const void *client, size_t nclient,
                                          uint32_t flags,
                                          const void *userdata,
                                          size_t nuserdata)
{
    (void)h; (void)c; (void)client; (void)nclient; (void)flags;
    (void)userdata; (void)nuserdata;
    return NULL; /* no replication stream */
}

static void stub_item_set_cas(ENGINE_HANDLE *h, const void *c, item *it,
                              uint64_t cas)
{
    (void)h; (void)c; (void)it; (void)cas;
}

static bool stub_get_item_info(ENGINE_HANDLE *h, const void *c,
                               const item *it, item_info *out)
{
    (void)h; (void)c; (void)it; (void)out;
    return false; /* there are no items */
}

static size_t stub_errinfo(ENGINE_HANDLE *h, const void *c, char *buffer,
                           size_t buffsz)
{
    (void)h; (void)c; (void)buffer; (void)buffsz;
    return 0;
}

static struct mch_engine engine = {
    .v1 = {
        .interface = { .interface = ENGINE_INTERFACE_VERSION },
        .get_info = stub_get_info,
        .initialize = stub_initialize,
        .destroy = stub_destroy,
        .allocate = stub_allocate,
        .remove = stub_remove,
        .release = stub_release,
        .get = stub_get,
        .store = stub_store,
        .arithmetic = stub_arithmetic,
        .flush = stub_flush,
        .get_stats = stub_get_stats,
        .reset_stats = stub_reset_stats,
        .get_stats_struct = stub_get_stats_struct,
        .aggregate_stats = stub_aggregate_stats,
        .unknown_command = stub_unknown_command,
        .tap_notify = stub_tap_notify,
        .get_tap_iterator = stub_get_tap_iterator,
        .item_set_cas = stub_item_set_cas,
        .get_item_info = stub_get_item_info,
        .errinfo = stub_errinfo,
    },
};

/* The engine handle (ENGINE_HANDLE_V1, interface 1); one per process. */
ENGINE_HANDLE *mch_engine_get(void)
{
    return (ENGINE_HANDLE *)&engine.v1;
}

/* The handle viewed as version 1, for calling its members. */
ENGINE_HANDLE_V1 *mch_engine_v1(void)
{
    return &engine.v1;
}
