/* listen.c: mchost's memcache listening sockets. Above -c connections a
 * client gets memcached's "too many open connections" and is closed; when
 * accept fails (out of descriptors) the listener pauses instead of
 * spinning, and warns at a bounded rate. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "programs/mchost/api.h"
#include "programs/mchost/cookie.h"
#include "programs/mchost/listen.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/settings.h"
#include "programs/mchost/stats.h"
#include "programs/mchost/workers.h"

#define MCH_MAX_LISTENERS 16
#define MCH_BACKLOG 1024
/* Pause after a failed accept, and the least gap between its warnings. */
#define MCH_ACCEPT_PAUSE_MS 100
#define MCH_ACCEPT_WARN_INTERVAL_S 10

/* A listening socket; head is the cookie of its ON_CONNECT. */
struct mch_listener {
    struct mch_cookie head;
    struct evconnlistener *lev;
    struct event *retry;  /* re-enables accepting after a back-off */
    int port;
};

static struct mch_listener listeners[MCH_MAX_LISTENERS];
static int nlisteners;

static void listen_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
                             struct sockaddr *sa, int salen, void *arg)
{
    static const char full[] = "ERROR Too many open connections\r\n";
    uint_fast64_t curr = atomic_load(&mch_counters.curr_connections);
    int one = 1;

    (void)lev; (void)sa; (void)salen; (void)arg;
    if (curr >= (uint_fast64_t)mch_settings.maxconns) {
        /* Best effort: the socket is new, so the send buffer is empty. */
        if (send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
            mch_log(EXTENSION_LOG_DEBUG, "fd %d: %s", (int)fd, strerror(errno));
        close(fd);
        mch_count(rejected_connections, 1);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    mch_workers_dispatch(fd);
}

static void listen_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct mch_listener *l = arg;

    (void)fd; (void)what;
    evconnlistener_enable(l->lev);
}

/* Seconds on a monotonic clock, for the warning rate limit. */
static time_t monotonic_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/* accept failed (libevent already retries EINTR, EAGAIN, ECONNABORTED).
 * Pause rather than busy-loop on a socket that stays readable; the retry
 * fails again while descriptors are short, so say so at most once per
 * MCH_ACCEPT_WARN_INTERVAL_S, counting the repeats left unsaid. Every
 * listener runs on the main thread: the static state needs no lock. */
static void listen_error_cb(struct evconnlistener *lev, void *arg)
{
    static bool warned;
    static time_t warned_at;
    static unsigned long unsaid;
    struct mch_listener *l = arg;
    int err = EVUTIL_SOCKET_ERROR();
    struct timeval pause = { 0, MCH_ACCEPT_PAUSE_MS * 1000 };
    bool out_of_fds = err == EMFILE || err == ENFILE;
    time_t now = monotonic_seconds();

    (void)lev;
    if (!warned || now - warned_at >= MCH_ACCEPT_WARN_INTERVAL_S) {
        char repeats[64] = "";

        if (unsaid > 0)
            snprintf(repeats, sizeof(repeats),
                     " (%lu more failed accepts in %ld s)", unsaid,
                     (long)(now - warned_at));
        mch_log(EXTENSION_LOG_WARNING,
                "accept on port %d: %s%s; pausing accepts for %d ms%s",
                l->port, strerror(err), repeats, MCH_ACCEPT_PAUSE_MS,
                out_of_fds ? " (raise the descriptor limit, ulimit -n, or "
                             "lower -c)" : "");
        warned = true;
        warned_at = now;
        unsaid = 0;
    } else {
        unsaid++;
    }
    if (out_of_fds || err == ENOBUFS || err == ENOMEM)
        mch_count(listen_disabled_num, 1);
    evconnlistener_disable(l->lev);
    evtimer_add(l->retry, &pause);
}

/* Creates, binds and listens on one resolved address; returns the fd. */
static int listen_socket(const struct addrinfo *ai)
{
    int one = 1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        evutil_make_socket_nonblocking(fd) != 0) {
        int err = errno;

        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

static int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Opens one listener for host (first address it resolves to). */
static int listen_one(struct event_base *base, const char *host, int port)
{
    struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                              .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM };
    struct mch_listener *l = &listeners[nlisteners];
    struct addrinfo *res;
    char service[16];
    int fd, r;

    if (nlisteners == MCH_MAX_LISTENERS) {
        mch_log(EXTENSION_LOG_WARNING, "too many listen addresses");
        return -1;
    }
    snprintf(service, sizeof(service), "%d", port);
    r = getaddrinfo(host, service, &hints, &res);
    if (r != 0) {
        mch_log(EXTENSION_LOG_WARNING, "listen address %s: %s", host,
                gai_strerror(r));
        return -1;
    }
    fd = listen_socket(res);
    freeaddrinfo(res);
    if (fd < 0) {
        mch_log(EXTENSION_LOG_WARNING, "cannot listen on %s port %d: %s",
                host, port, strerror(errno));
        return -1;
    }
    l->head.fd = fd;
    l->port = local_port(fd);
    l->lev = evconnlistener_new(base, listen_accept_cb, l,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_DISABLED,
                                MCH_BACKLOG, fd);
    l->retry = evtimer_new(base, listen_retry_cb, l);
    if (l->lev == NULL || l->retry == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "cannot listen on %s port %d: %s",
                host, port, strerror(errno));
        if (l->lev != NULL)
            evconnlistener_free(l->lev);
        else
            close(fd);
        if (l->retry != NULL)
            event_free(l->retry);
        return -1;
    }
    evconnlistener_set_error_cb(l->lev, listen_error_cb);
    nlisteners++;
    mch_log(EXTENSION_LOG_INFO, "memcache text protocol on %s port %d", host,
            l->port);
    return 0;
}

/* Binds and listens on every address of the list; 0 or -1 (logged). */
int mch_listen_open(struct event_base *base, const char *addresses, int port)
{
    char *list = strdup(addresses), *save = NULL;
    int r = 0;

    if (list == NULL)
        return -1;
    for (char *h = strtok_r(list, ",", &save); h != NULL && r == 0;
         h = strtok_r(NULL, ",", &save))
        r = listen_one(base, h, port);
    free(list);
    if (r == 0 && nlisteners == 0) {
        mch_log(EXTENSION_LOG_WARNING, "no listen address given");
        r = -1;
    }
    return r;
}

/* The port of the first listening socket. */
int mch_listen_port(void)
{
    return nlisteners > 0 ? listeners[0].port : -1;
}

/* Fires ON_CONNECT for each listening socket, then starts accepting. */
void mch_listen_start(void)
{
    for (int i = 0; i < nlisteners; i++)
        mch_api_perform_callbacks(ON_CONNECT, NULL, &listeners[i].head);
    for (int i = 0; i < nlisteners; i++)
        evconnlistener_enable(listeners[i].lev);
}

/* Closes every listening socket. */
void mch_listen_close(void)
{
    for (int i = 0; i < nlisteners; i++) {
        evconnlistener_free(listeners[i].lev);
        event_free(listeners[i].retry);
    }
    nlisteners = 0;
}
