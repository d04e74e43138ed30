/* cookie.c: SERVER_COOKIE_API for mchost. Its engine never blocks, so
 * notify does nothing and reserve/release only report success (a cookie
 * lives as long as its connection); the rest read the common cookie head. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "programs/mchost/cookie.h"

static int cookie_get_socket_fd(const void *cookie)
{
    return cookie ? ((const struct mch_cookie *)cookie)->fd : -1;
}

static void cookie_get_auth_data(const void *cookie, auth_data_t *data)
{
    (void)cookie;
    if (data != NULL) {
        data->username = NULL; /* mchost has no SASL */
        data->config = NULL;
    }
}

static void cookie_store_engine_specific(const void *cookie, void *data)
{
    /* The cookie is ours and mutable; the interface just types it const. */
    if (cookie != NULL)
        ((struct mch_cookie *)(uintptr_t)cookie)->engine_specific = data;
}

static void *cookie_get_engine_specific(const void *cookie)
{
    return cookie ? ((const struct mch_cookie *)cookie)->engine_specific
                  : NULL;
}

static void cookie_notify_io_complete(const void *cookie,
                                      ENGINE_ERROR_CODE status)
{
    (void)cookie;
    (void)status;
}

static ENGINE_ERROR_CODE cookie_reserve(const void *cookie)
{
    (void)cookie;
    return ENGINE_SUCCESS;
}

static ENGINE_ERROR_CODE cookie_release(const void *cookie)
{
    (void)cookie;
    return ENGINE_SUCCESS;
}

static SERVER_COOKIE_API cookie_api = {
    .get_socket_fd = cookie_get_socket_fd,
    .get_auth_data = cookie_get_auth_data,
    .store_engine_specific = cookie_store_engine_specific,
    .get_engine_specific = cookie_get_engine_specific,
    .notify_io_complete = cookie_notify_io_complete,
    .reserve = cookie_reserve,
    .release = cookie_release,
};

/* The SERVER_COOKIE_API table. */
SERVER_COOKIE_API *mch_cookie_api(void)
{
    return &cookie_api;
}
