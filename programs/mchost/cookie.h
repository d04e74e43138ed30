/* cookie.h: what mchost passes as a "cookie" to engines and extensions: the
 * common head of a client connection and of a listening socket. */
#ifndef MCH_COOKIE_H
#define MCH_COOKIE_H

#include <memcached/server_api.h>

struct evbuffer;

/* First member of struct mch_conn and struct mch_listener. */
struct mch_cookie {
    int fd;
    void *engine_specific;
    struct evbuffer *stats_out; /* where add_stat writes during get_stats */
};

/* The SERVER_COOKIE_API table. */
SERVER_COOKIE_API *mch_cookie_api(void);

#endif /* MCH_COOKIE_H */
