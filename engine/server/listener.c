/* listener.c: the counter port's listening sockets (bound by us, so that
 * bind errors name the setting) and the acceptor thread, whose libevent
 * listeners hand accepted connections to the workers round robin, enforce
 * counter.max_connections, and pause (not spin) when fds run out. */
#include "config.h"

#include "engine/server/server_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CNT_LISTEN_BACKLOG 1024
/* Pause after EMFILE/ENFILE, and the minimum gap between its warnings. */
#define CNT_ACCEPT_PAUSE_MS 100
#define CNT_FD_WARN_INTERVAL_S 10

/* Fills ss with addr:port; returns its length, 0 if addr is no literal. */
static socklen_t listener_sockaddr(const char *addr, uint16_t port,
                                   struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(port);
        return sizeof(*in4);
    }
    if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        return sizeof(*in6);
    }
    return 0;
}

/* Opens one listening socket; returns the fd or -1 with errno set. */
static int listener_socket(const struct sockaddr_storage *ss, socklen_t len)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* "::" must not also take the IPv4 port: "0.0.0.0 ::" is a valid list. */
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)ss, len) != 0 ||
        listen(fd, CNT_LISTEN_BACKLOG) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Reads back the port the kernel gave fd. */
static uint16_t listener_port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* Opens a socket on every configured address at *port into fds (*n of
 * them), logging a failure with the setting's name (key); with *port 0 the
 * first socket picks and the others share it. False after closing those
 * it opened. */
static bool listener_open_set(cnt_server *s, const char *key, uint16_t *port,
                              int *fds, unsigned *n)
{
    *n = 0;
    for (unsigned i = 0; i < s->config.nbinds; i++) {
        const char *addr = s->config.binds[i];
        struct sockaddr_storage ss;
        socklen_t len = listener_sockaddr(addr, *port, &ss);
        if (len == 0) {
            cnt_log(&s->log, CNT_LOG_WARNING,
                    "counter: invalid value \"%s\" in counter.bind (not an "
                    "IPv4 or IPv6 address)", addr);
            goto fail;
        }
        int fd = listener_socket(&ss, len);
        if (fd < 0) {
            cnt_log(&s->log, CNT_LOG_WARNING,
                    "counter: cannot listen on %s %u at address "
                    "%s (counter.bind): %s", key, (unsigned)*port, addr,
                    strerror(errno));
            goto fail;
        }
        fds[(*n)++] = fd;
        /* Port 0: the first socket picks, the others share its port. */
        if (*port == 0)
            *port = listener_port_of(fd);
    }
    return true;
fail:
    while (*n > 0)
        close(fds[--*n]);
    return false;
}

/* Opens the WebSocket front's sockets when it has a port; false after
 * logging the failure. */
static bool listener_open_http(cnt_server *s)
{
    s->nhttp = 0;
    if (s->config.http_port == 0)
        return true;
    uint16_t port = s->config.http_port;
    if (!listener_open_set(s, "counter.http.port", &port, s->http_fds,
                           &s->nhttp))
        return false;
    s->http_port = port;
    return true;
}

/* Opens the listening sockets (the counter port's, then the WebSocket
 * and Throttr fronts' when they have a port); false after logging the
 * failure. */
bool cnt_listener_open(cnt_server *s)
{
    uint16_t port = s->config.port;
    if (!listener_open_set(s, "counter.port", &port, s->listen_fds,
                           &s->nlisten))
        return false;
    s->port = port;
    s->nthrottr = 0;
    s->nhttp = 0;
    if (!listener_open_http(s)) {
        cnt_listener_close(s);
        return false;
    }
    if (s->config.throttr_port == 0)
        return true;
    port = s->config.throttr_port;
    if (!listener_open_set(s, "counter.throttr.port", &port, s->throttr_fds,
                           &s->nthrottr)) {
        cnt_listener_close(s);
        return false;
    }
    s->throttr_port = port;
    return true;
}


/* Closes the listening sockets. */
void cnt_listener_close(cnt_server *s)
{
    for (unsigned i = 0; i < s->nlisten; i++)
        close(s->listen_fds[i]);
    s->nlisten = 0;
    for (unsigned i = 0; i < s->nthrottr; i++)
        close(s->throttr_fds[i]);
    s->nthrottr = 0;
    for (unsigned i = 0; i < s->nhttp; i++)
        close(s->http_fds[i]);
    s->nhttp = 0;
}

/* Stops accepting for a moment after the process ran out of fds, instead
 * of waking up again at once for the same pending connection. */
static void listener_pause(cnt_server *s, int err)
{
    time_t now = time(NULL);
    if (now - s->fd_warned_at >= CNT_FD_WARN_INTERVAL_S) {
        s->fd_warned_at = now;
        cnt_log(&s->log, CNT_LOG_WARNING,
                "counter: accept on port %u failed: %s; pausing accepts "
                "for %d ms (raise the fd limit or lower "
                "counter.max_connections)", (unsigned)s->port, strerror(err),
                CNT_ACCEPT_PAUSE_MS);
    }
    for (unsigned i = 0; i < s->nlisten; i++)
        evconnlistener_disable(s->listeners[i]);
    for (unsigned i = 0; i < s->nthrottr; i++)
        evconnlistener_disable(s->throttr_listeners[i]);
    for (unsigned i = 0; i < s->nhttp; i++)
        evconnlistener_disable(s->http_listeners[i]);
    struct timeval tv = {0, CNT_ACCEPT_PAUSE_MS * 1000};
    evtimer_add(s->accept_retry, &tv);
}

/* Timer callback: accepting again after a pause. */
static void listener_on_retry(evutil_socket_t fd, short what, void *arg)
{
    cnt_server *s = arg;
    (void)fd;
    (void)what;
    for (unsigned i = 0; i < s->nlisten; i++)
        evconnlistener_enable(s->listeners[i]);
    for (unsigned i = 0; i < s->nthrottr; i++)
        evconnlistener_enable(s->throttr_listeners[i]);
    for (unsigned i = 0; i < s->nhttp; i++)
        evconnlistener_enable(s->http_listeners[i]);
}

/* One accepted socket (non-blocking, close-on-exec) of front's listener,
 * refused at the limit (which counts both fronts' connections) or mailed
 * to the next worker. */
static void listener_accept(cnt_server *s, int fd,
                            const struct sockaddr *addr,
                            const cnt_front *front)
{
    unsigned max = s->config.max_connections;
    if (max != 0 && atomic_load(&s->open_connections) >= max) {
        /* As the reference: accept, close, no answer. */
        close(fd);
        cnt_stats_add(&cnt_stats_slot_get(s->stats, s->nworkers)
                           ->rejected_connections, 1);
        char text[CNT_PEER_ADDR_MAX];
        uint16_t port = 0;
        if (!cnt_sockaddr_text(addr, text, &port))
            strcpy(text, "unknown");
        cnt_log(&s->log, CNT_LOG_DEBUG,
                "counter: connection from %s%s%s:%u refused: "
                "counter.max_connections (%u) reached",
                strchr(text, ':') ? "[" : "", text,
                strchr(text, ':') ? "]" : "", (unsigned)port, max);
        return;
    }
    atomic_fetch_add(&s->open_connections, 1);
    cnt_worker *w = &s->workers[s->next_worker];
    s->next_worker = (s->next_worker + 1) % s->nworkers;
    if (!cnt_worker_enqueue(w, fd, front)) {
        close(fd);
        atomic_fetch_sub(&s->open_connections, 1);
    }
}

/* libevent's accept callback of the counter port. */
static void listener_on_accept(struct evconnlistener *l, evutil_socket_t fd,
                               struct sockaddr *addr, int len, void *arg)
{
    (void)l;
    (void)len;
    listener_accept(arg, fd, addr, &cnt_front_counter);
}

/* libevent's accept callback of the Throttr front's port. */
static void listener_on_accept_throttr(struct evconnlistener *l,
                                       evutil_socket_t fd,
                                       struct sockaddr *addr, int len,
                                       void *arg)
{
    (void)l;
    (void)len;
    listener_accept(arg, fd, addr, &cnt_front_throttr);
}

/* libevent's accept callback of the WebSocket front's port. */
static void listener_on_accept_http(struct evconnlistener *l,
                                    evutil_socket_t fd,
                                    struct sockaddr *addr, int len,
                                    void *arg)
{
    (void)l;
    (void)len;
    listener_accept(arg, fd, addr, &cnt_front_websocket);
}

/* libevent's error callback: accept failed with something other than
 * EAGAIN, EINTR or ECONNABORTED (libevent retries those itself). Running
 * out of fds or memory pauses accepting; a protocol error of one pending
 * connection (EPROTO) is passed over; anything else is logged. */
static void listener_on_error(struct evconnlistener *l, void *arg)
{
    cnt_server *s = arg;
    int err = EVUTIL_SOCKET_ERROR();
    (void)l;
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
        listener_pause(s, err);
    else if (err != EPROTO)
        cnt_log(&s->log, CNT_LOG_WARNING, "counter: accept failed: %s",
                strerror(err));
}

/* Stop callback, run inside the acceptor's own loop. */
static void listener_on_stop(evutil_socket_t fd, short what, void *arg)
{
    cnt_server *s = arg;
    (void)fd;
    (void)what;
    event_base_loopbreak(s->abase);
}

/* The acceptor thread. */
static void *listener_main(void *arg)
{
    cnt_server *s = arg;
    event_base_loop(s->abase, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Frees the acceptor's base, listeners and events (the sockets stay
 * open: they belong to the server until cnt_listener_close). */
static void listener_free_base(cnt_server *s)
{
    for (unsigned i = 0; i < CNT_SERVER_MAX_BINDS; i++) {
        if (s->listeners[i] != NULL)
            evconnlistener_free(s->listeners[i]);
        s->listeners[i] = NULL;
        if (s->throttr_listeners[i] != NULL)
            evconnlistener_free(s->throttr_listeners[i]);
        s->throttr_listeners[i] = NULL;
        if (s->http_listeners[i] != NULL)
            evconnlistener_free(s->http_listeners[i]);
        s->http_listeners[i] = NULL;
    }
    if (s->accept_stop != NULL)
        event_free(s->accept_stop);
    if (s->accept_retry != NULL)
        event_free(s->accept_retry);
    if (s->abase != NULL)
        event_base_free(s->abase);
    s->accept_stop = s->accept_retry = NULL;
    s->abase = NULL;
}

/* Starts the acceptor thread; returns 0 or an errno value. */
int cnt_listener_start(cnt_server *s)
{
    s->abase = event_base_new();
    if (s->abase == NULL)
        return ENOMEM;
    s->accept_stop = event_new(s->abase, -1, 0, listener_on_stop, s);
    s->accept_retry = evtimer_new(s->abase, listener_on_retry, s);
    bool ok = s->accept_stop != NULL && s->accept_retry != NULL;
    for (unsigned i = 0; ok && i < s->nlisten; i++) {
        /* The socket listens already (backlog 0: libevent leaves it so);
         * accepted sockets come non-blocking and close-on-exec. */
        s->listeners[i] = evconnlistener_new(s->abase, listener_on_accept, s,
                                             LEV_OPT_CLOSE_ON_EXEC, 0,
                                             s->listen_fds[i]);
        ok = s->listeners[i] != NULL;
        if (ok)
            evconnlistener_set_error_cb(s->listeners[i], listener_on_error);
    }
    for (unsigned i = 0; ok && i < s->nthrottr; i++) {
        s->throttr_listeners[i] =
            evconnlistener_new(s->abase, listener_on_accept_throttr, s,
                               LEV_OPT_CLOSE_ON_EXEC, 0, s->throttr_fds[i]);
        ok = s->throttr_listeners[i] != NULL;
        if (ok)
            evconnlistener_set_error_cb(s->throttr_listeners[i],
                                        listener_on_error);
    }
    for (unsigned i = 0; ok && i < s->nhttp; i++) {
        s->http_listeners[i] =
            evconnlistener_new(s->abase, listener_on_accept_http, s,
                               LEV_OPT_CLOSE_ON_EXEC, 0, s->http_fds[i]);
        ok = s->http_listeners[i] != NULL;
        if (ok)
            evconnlistener_set_error_cb(s->http_listeners[i],
                                        listener_on_error);
    }
    if (!ok) {
        listener_free_base(s);
        return ENOMEM;
    }
    int rc = pthread_create(&s->acceptor, NULL, listener_main, s);
    if (rc != 0) {
        listener_free_base(s);
        return rc;
    }
    s->acceptor_running = true;
    return 0;
}

/* Stops and joins the acceptor thread and frees its base. */
void cnt_listener_stop(cnt_server *s)
{
    if (!s->acceptor_running)
        return;
    event_active(s->accept_stop, EV_READ, 0);
    pthread_join(s->acceptor, NULL);
    s->acceptor_running = false;
    listener_free_base(s);
}
