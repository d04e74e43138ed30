/* api.c: the SERVER_HANDLE_V1 of mchost: extension registry and event
 * callbacks. Callbacks are append-only lists published with release stores,
 * so firing takes no lock and a callback may register another. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "programs/mchost/api.h"
#include "programs/mchost/cookie.h"
#include "programs/mchost/core.h"
#include "programs/mchost/logger.h"

struct mch_callback {
    EVENT_CALLBACK cb;
    const void *cb_data;
    _Atomic(struct mch_callback *) next;
};

static _Atomic(struct mch_callback *) callbacks[MAX_ENGINE_EVENT_TYPE];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static EXTENSION_DAEMON_DESCRIPTOR *daemons; /* under registry_lock */

static void api_register_callback(ENGINE_HANDLE *engine,
                                  ENGINE_EVENT_TYPE type, EVENT_CALLBACK cb,
                                  const void *cb_data)
{
    _Atomic(struct mch_callback *) *link;
    struct mch_callback *node;

    (void)engine;
    if ((unsigned)type >= MAX_ENGINE_EVENT_TYPE || cb == NULL) {
        mch_log(EXTENSION_LOG_WARNING,
                "register_callback: bad event type %d or NULL callback",
                (int)type);
        return;
    }
    node = calloc(1, sizeof(*node));
    if (node == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "register_callback: out of memory");
        return;
    }
    node->cb = cb;
    node->cb_data = cb_data;
    pthread_mutex_lock(&registry_lock);
    link = &callbacks[type];
    while (atomic_load_explicit(link, memory_order_relaxed) != NULL)
        link = &atomic_load_explicit(link, memory_order_relaxed)->next;
    atomic_store_explicit(link, node, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
}

/* Fires every callback registered for type (SERVER_CALLBACK_API). */
void mch_api_perform_callbacks(ENGINE_EVENT_TYPE type, const void *data,
                               const void *cookie)
{
    struct mch_callback *n;

    if ((unsigned)type >= MAX_ENGINE_EVENT_TYPE)
        return;
    n = atomic_load_explicit(&callbacks[type], memory_order_acquire);
    for (; n != NULL;
         n = atomic_load_explicit(&n->next, memory_order_acquire))
        n->cb(cookie, type, data, n->cb_data);
}

static bool api_register_extension(extension_type_t type, void *extension)
{
    EXTENSION_DAEMON_DESCRIPTOR *d = extension, *p;

    if (extension == NULL)
        return false;
    switch (type) {
    case EXTENSION_DAEMON:
        pthread_mutex_lock(&registry_lock);
        for (p = daemons; p != NULL && p != d; p = p->next)
            ;
        if (p == NULL) { /* registering twice would make a cycle */
            d->next = daemons;
            daemons = d;
        }
        pthread_mutex_unlock(&registry_lock);
        return true;
    case EXTENSION_LOGGER:
        mch_logger_replace(extension);
        return true;
    default:
        mch_log(EXTENSION_LOG_WARNING,
                "mchost does not support extensions of type %d", (int)type);
        return false;
    }
}

static void api_unregister_extension(extension_type_t type, void *extension)
{
    EXTENSION_DAEMON_DESCRIPTOR **pp;

    switch (type) {
    case EXTENSION_DAEMON:
        pthread_mutex_lock(&registry_lock);
        for (pp = &daemons; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == extension) {
                *pp = (*pp)->next;
                break;
            }
        }
        pthread_mutex_unlock(&registry_lock);
        break;
    case EXTENSION_LOGGER:
        if (mch_logger_current() == extension)
            mch_logger_replace(NULL);
        break;
    default:
        break;
    }
}

static void *api_get_extension(extension_type_t type)
{
    void *e;

    switch (type) {
    case EXTENSION_DAEMON:
        pthread_mutex_lock(&registry_lock);
        e = daemons;
        pthread_mutex_unlock(&registry_lock);
        return e;
    case EXTENSION_LOGGER:
        return mch_logger_current();
    default:
        return NULL;
    }
}

/* Calls fn with the name of each registered daemon extension. */
void mch_api_foreach_daemon(void (*fn)(const char *name, void *arg),
                            void *arg)
{
    pthread_mutex_lock(&registry_lock);
    for (EXTENSION_DAEMON_DESCRIPTOR *d = daemons; d != NULL; d = d->next)
        fn(d->get_name ? d->get_name() : "(unnamed)", arg);
    pthread_mutex_unlock(&registry_lock);
}

static void *stat_new_stats(void)
{
    return NULL; /* mchost's engine keeps no per-thread stats */
}

static void stat_release_stats(void *stats)
{
    (void)stats;
}

static void stat_evicting(const void *cookie, const void *key, int nkey)
{
    (void)cookie;
    (void)key;
    (void)nkey;
}

static SERVER_STAT_API stat_api = {
    .new_stats = stat_new_stats,
    .release_stats = stat_release_stats,
    .evicting = stat_evicting,
};

static SERVER_EXTENSION_API extension_api = {
    .register_extension = api_register_extension,
    .unregister_extension = api_unregister_extension,
    .get_extension = api_get_extension,
};

static SERVER_CALLBACK_API callback_api = {
    .register_callback = api_register_callback,
    .perform_callbacks = mch_api_perform_callbacks,
};

static SERVER_LOG_API log_api = {
    .get_logger = mch_logger_current,
    .get_level = mch_logger_level,
    .set_level = mch_logger_set_level,
};

static SERVER_HANDLE_V1 handle = {
    .interface = 1,
    .stat = &stat_api,
    .extension = &extension_api,
    .callback = &callback_api,
    .log = &log_api,
};

/* The GET_SERVER_API function: always the same static handle. */
SERVER_HANDLE_V1 *mch_api_get(void)
{
    /* Filled here rather than statically: the tables live in other files. */
    if (handle.core == NULL) {
        handle.core = mch_core_api();
        handle.cookie = mch_cookie_api();
    }
    return &handle;
}

/* Publishes the engine handle (NULL until the engine exists). */
void mch_api_set_engine(ENGINE_HANDLE *engine)
{
    mch_api_get()->engine = engine;
}
