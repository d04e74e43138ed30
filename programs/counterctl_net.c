/* counterctl_net.c: counterctl's connection: connect with getaddrinfo,
 * write whole requests, read exactly one response at a time into a fixed
 * buffer, with a timeout on every wait and no trust in declared lengths;
 * also the one-line error printer every counterctl message goes through. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "programs/counterctl.h"

/* Opens a socket to one resolved address; -1 (errno set) on failure. */
static int connect_one(const struct addrinfo *ai)
{
    int one = 1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    /* One small request at a time: do not let Nagle hold it back. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Connects to host:port; NULL on failure (message printed). */
ctl_conn *ctl_conn_new(const char *host, const char *port, int timeout_ms)
{
    struct addrinfo hints, *list, *ai;
    ctl_conn *c;
    int fd = -1, rc, saved = 0;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &list);
    if (rc != 0) {
        ctl_error("%s port %s: %s", host, port, gai_strerror(rc));
        return NULL;
    }
    for (ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai);
        if (fd < 0)
            saved = errno;
    }
    freeaddrinfo(list);
    if (fd < 0) {
        ctl_error("cannot connect to %s port %s: %s", host, port,
                  strerror(saved));
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        close(fd);
        ctl_error("out of memory");
        return NULL;
    }
    c->fd = fd;
    c->timeout_ms = timeout_ms;
    /* The first request's CR LF makes a memcache port answer at once. */
    c->next_opaque = CNT_TEXT_PROBE_OPAQUE;
    return c;
}

/* Closes the connection and frees it. */
void ctl_conn_free(ctl_conn *c)
{
    if (c == NULL)
        return;
    close(c->fd);
    free(c);
}

/* Returns a fresh opaque for the next request. */
uint32_t ctl_conn_opaque(ctl_conn *c)
{
    return c->next_opaque++;
}

/* Returns milliseconds on the monotonic clock. */
int64_t ctl_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events, at most timeout_ms (-1: no limit);
 * CTL_IO_OK, _TIMEOUT or _ERROR. A long timeout is waited in slices,
 * since poll takes an int. */
static ctl_io wait_ready(ctl_conn *c, short events, int64_t timeout_ms)
{
    struct pollfd pfd = { .fd = c->fd, .events = events };
    int64_t end = timeout_ms < 0 ? -1 : ctl_now_ms() + timeout_ms;

    for (;;) {
        int64_t left = end < 0 ? -1 : end - ctl_now_ms();
        int rc;

        if (end >= 0 && left < 0)
            left = 0;
        rc = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (rc > 0)
            return CTL_IO_OK;
        if (rc < 0 && errno != EINTR) {
            c->err = errno;
            return CTL_IO_ERROR;
        }
        if (rc == 0 && end >= 0 && ctl_now_ms() >= end)
            return CTL_IO_TIMEOUT;
    }
}

/* Sends len bytes of requests. */
ctl_io ctl_conn_send(ctl_conn *c, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ctl_io io = wait_ready(c, POLLOUT, c->timeout_ms);
        ssize_t n;

        if (io != CTL_IO_OK)
            return io;
        /* MSG_NOSIGNAL: a server that went away is an error, not SIGPIPE. */
        n = send(c->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            c->err = errno;
            return errno == EPIPE ? CTL_IO_EOF : CTL_IO_ERROR;
        }
        buf += n;
        len -= (size_t)n;
    }
    return CTL_IO_OK;
}

/* Takes the outcome of a recv of n bytes into the buffer's free end: a
 * reset is the server's end like a close, another error is kept in
 * c->err. */
static ctl_io took(ctl_conn *c, ssize_t n)
{
    if (n < 0) {
        c->err = errno;
        return errno == ECONNRESET ? CTL_IO_EOF : CTL_IO_ERROR;
    }
    if (n == 0)
        return CTL_IO_EOF;
    c->len += (size_t)n;
    return CTL_IO_OK;
}

/* Reads what the socket has into the free end of the buffer, waiting at
 * most timeout_ms (-1: no limit) for it. */
static ctl_io fill(ctl_conn *c, int64_t timeout_ms)
{
    ssize_t n;
    ctl_io io = wait_ready(c, POLLIN, timeout_ms);

    if (io != CTL_IO_OK)
        return io;
    do
        n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    while (n < 0 && errno == EINTR);
    return took(c, n);
}

/* Drops the packet the caller has finished with from the buffer's front. */
static void drop_consumed(ctl_conn *c)
{
    if (c->consumed > 0) {
        memmove(c->buf, c->buf + c->consumed, c->len - c->consumed);
        c->len -= c->consumed;
        c->consumed = 0;
    }
}

/* Decodes the next whole packet into res, reading as needed with each
 * wait bounded by timeout_ms (-1: no limit). */
static ctl_io next_packet(ctl_conn *c, cnt_response *res, int64_t timeout_ms)
{
    drop_consumed(c);
    for (;;) {
        cnt_decode_result rc = cnt_response_decode(c->buf, c->len, res);
        ctl_io io;

        if (rc == CNT_DECODE_CLOSE)
            return CTL_IO_PROTOCOL;
        if (rc == CNT_DECODE_OK) {
            c->consumed = res->size;
            return CTL_IO_OK;
        }
        /* Check the declared size before reading on, so a huge length is
         * an error and never a reason to allocate. */
        if (cnt_response_size(c->buf, c->len) > sizeof c->buf)
            return CTL_IO_PROTOCOL;
        io = fill(c, timeout_ms);
        if (io != CTL_IO_OK)
            return io;
    }
}

/* Reads the answer to the request with opaque, skipping notices. */
ctl_io ctl_conn_response(ctl_conn *c, uint32_t opaque, cnt_response *res)
{
    for (;;) {
        ctl_io io = next_packet(c, res, c->timeout_ms);

        if (io != CTL_IO_OK)
            return io;
        if (res->magic == CNT_MAGIC_NOTICE)
            continue;
        return res->opaque == opaque ? CTL_IO_OK : CTL_IO_PROTOCOL;
    }
}

/* Reads the next packet, answer or event, waiting as long as told. */
ctl_io ctl_conn_next(ctl_conn *c, cnt_response *res, int64_t timeout_ms)
{
    return next_packet(c, res, timeout_ms);
}

/* Returns the next packet without waiting for one. */
ctl_io ctl_conn_poll(ctl_conn *c, cnt_response *res)
{
    cnt_decode_result rc;
    ssize_t n;
    ctl_io io;

    drop_consumed(c);
    rc = cnt_response_decode(c->buf, c->len, res);
    if (rc == CNT_DECODE_NEED_MORE) {
        if (cnt_response_size(c->buf, c->len) > sizeof c->buf)
            return CTL_IO_PROTOCOL;
        do
            n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len,
                     MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return CTL_IO_AGAIN;
        io = took(c, n);
        if (io != CTL_IO_OK)
            return io;
        rc = cnt_response_decode(c->buf, c->len, res);
    }
    if (rc == CNT_DECODE_CLOSE)
        return CTL_IO_PROTOCOL;
    if (rc != CNT_DECODE_OK)
        return CTL_IO_AGAIN;
    c->consumed = res->size;
    return CTL_IO_OK;
}

/* Turns on keepalive: idle 30 s, then 3 probes 10 s apart. */
void ctl_conn_keepalive(ctl_conn *c)
{
    int one = 1;

    (void)setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
#if defined(TCP_KEEPIDLE) && defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
    {
        int idle = 30, intvl = 10, cnt = 3;

        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
                         sizeof intvl);
        (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    }
#endif
}

/* Takes in what arrived while no answer was expected. */
ctl_io ctl_conn_watch(ctl_conn *c)
{
    cnt_response res;
    ssize_t n;

    drop_consumed(c);
    if (c->len == sizeof c->buf)
        return CTL_IO_PROTOCOL;
    n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return CTL_IO_OK;
        c->err = errno;
        return errno == ECONNRESET ? CTL_IO_EOF : CTL_IO_ERROR;
    }
    if (n == 0)
        return CTL_IO_EOF;
    c->len += (size_t)n;
    /* Whole notices at the front are dropped so they cannot fill the
     * buffer over a long hold; anything else waits for the next read. */
    for (;;) {
        cnt_decode_result rc = cnt_response_decode(c->buf, c->len, &res);

        if (rc == CNT_DECODE_CLOSE)
            return CTL_IO_PROTOCOL;
        if (rc == CNT_DECODE_NEED_MORE || res.magic != CNT_MAGIC_NOTICE)
            return CTL_IO_OK;
        memmove(c->buf, c->buf + res.size, c->len - res.size);
        c->len -= res.size;
    }
}

/* Returns a short text for an I/O outcome. */
const char *ctl_io_text(const ctl_conn *c, ctl_io io)
{
    switch (io) {
    case CTL_IO_OK:
        return "ok";
    case CTL_IO_EOF:
        return "connection closed by the server";
    case CTL_IO_TIMEOUT:
        return "timed out waiting for the server";
    case CTL_IO_AGAIN:
        return "no whole answer yet";
    case CTL_IO_ERROR:
        return strerror(c->err);
    case CTL_IO_PROTOCOL:
        /* The bad bytes are still at the buffer's front. */
        if (cnt_response_is_text(c->buf, c->len))
            return "this is a memcache port, not the counter port";
        return "malformed answer (bad magic, opaque or length)";
    }
    return "unknown error";
}

/* Prints one error line, control characters escaped, tail appended. The
 * line is built first and written at once, so output of the command run
 * holds cannot land inside it. */
void ctl_verror(const char *tail, const char *fmt, va_list ap)
{
    static const char prefix[] = "counterctl: ";
    char small[512], *text = small, *line;
    size_t len, tail_len = strlen(tail);
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0)
        n = 0, small[0] = '\0';
    /* Counter names reach 64 KiB: print them whole rather than cut. */
    if ((size_t)n >= sizeof small) {
        text = malloc((size_t)n + 1);
        if (text != NULL)
            (void)vsnprintf(text, (size_t)n + 1, fmt, again);
        else {
            text = small;
            n = (int)strlen(small);
        }
    }
    va_end(again);
    /* Each byte becomes at most 4 ("\xHH"). */
    line = malloc(sizeof prefix + (size_t)n * 4 + tail_len + 1);
    if (line == NULL) {
        fprintf(stderr, "%s%s%s\n", prefix, text, tail);
    } else {
        memcpy(line, prefix, sizeof prefix - 1);
        len = sizeof prefix - 1;
        for (int i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)text[i];

            if (ch < 0x20 || ch == 0x7f)
                len += (size_t)sprintf(line + len, "\\x%02x", ch);
            else
                line[len++] = (char)ch;
        }
        memcpy(line + len, tail, tail_len);
        len += tail_len;
        line[len++] = '\n';
        fwrite(line, 1, len, stderr);
        free(line);
    }
    if (text != small)
        free(text);
}

/* Prints one error line on stderr. */
void ctl_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ctl_verror("", fmt, ap);
    va_end(ap);
}

/* Writes bytes to stdout, escaping what would break a line-based output. */
void ctl_print_escaped(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] > 0x20 && p[i] < 0x7f && p[i] != '\\')
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
}
