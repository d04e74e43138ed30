/* stub_engine.c: the engine handle mchost publishes in SERVER_HANDLE_V1.
 * Only get_stats does something; the storage members exist so an
 * extension (or a real engine's expectations) find the full layout. */
#include "config.h"

#include "programs/mchost/stub_engine.h"

/* Spare zeroed room after the handle: an extension compiled against a
 * longer upstream ENGINE_HANDLE_V1 may read members we do not declare. */
struct mch_engine {
    ENGINE_HANDLE_V1 v1;
    engine_unused_fn spare[32];
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
