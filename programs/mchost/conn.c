/* conn.c: memcache connections of mchost. Lines over MCH_MAX_LINE bytes
 * close the connection; a client that does not read stops being read until
 * its output drains, so memory per connection stays bounded. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "programs/mchost/api.h"
#include "programs/mchost/conn.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/stats.h"
#include "programs/mchost/text.h"
#include "programs/mchost/workers.h"

#define MCH_MAX_LINE 2048            /* longest command line accepted */
#define MCH_MAX_OUTPUT (256 * 1024)  /* stop reading above this */

static void conn_read_cb(struct bufferevent *bev, void *arg);

/* Counts what the last command queued as written. */
static void conn_count_output(struct mch_conn *c, size_t before)
{
    size_t after = evbuffer_get_length(bufferevent_get_output(c->bev));

    if (after > before)
        mch_count(bytes_written, after - before);
}

/* Closes once the answers already queued are sent. Returns false if c
 * was freed at once (nothing was queued). */
static bool conn_close_after_output(struct mch_conn *c)
{
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
        mch_conn_free(c);
        return false;
    }
    return true;
}

/* Takes one line off input into line[]; 1 = got one, 0 = need more,
 * -1 = longer than MCH_MAX_LINE. */
static int conn_take_line(struct evbuffer *in, char *line)
{
    struct evbuffer_ptr eol;
    size_t len;

    eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
    if (eol.pos < 0)
        return evbuffer_get_length(in) > MCH_MAX_LINE ? -1 : 0;
    if ((size_t)eol.pos > MCH_MAX_LINE)
        return -1;
    len = (size_t)eol.pos;
    evbuffer_remove(in, line, len + 1);
    mch_count(bytes_read, len + 1);
    if (len > 0 && line[len - 1] == '\r')
        len--;
    line[len] = '\0';
    return 1;
}

/* Executes every complete line in the input, skipping data blocks. Returns
 * false if c was freed. */
static bool conn_process(struct mch_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    char line[MCH_MAX_LINE + 1];

    while (!c->closing) {
        size_t before = evbuffer_get_length(out);
        int got;

        if (before > MCH_MAX_OUTPUT) {
            c->paused = true;
            bufferevent_disable(c->bev, EV_READ);
            return true;
        }
        if (c->swallow > 0) {
            size_t n = evbuffer_get_length(in);

            if (n == 0)
                return true;
            if (n > c->swallow)
                n = (size_t)c->swallow;
            evbuffer_drain(in, n);
            mch_count(bytes_read, n);
            c->swallow -= n;
            continue;
        }
        got = conn_take_line(in, line);
        if (got == 0)
            return true;
        if (got < 0) {
            mch_log(EXTENSION_LOG_INFO, "fd %d: command line too long, closing",
                    c->head.fd);
            evbuffer_add_printf(out, "CLIENT_ERROR line too long\r\n");
            conn_count_output(c, before);
            return conn_close_after_output(c);
        }
        if (mch_text_execute(line, out, &c->head, &c->swallow) ==
            MCH_TEXT_CLOSE) {
            /* As memcached: answers pipelined before quit still go out. */
            conn_count_output(c, before);
            return conn_close_after_output(c);
        }
        conn_count_output(c, before);
    }
    return true;
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_process(arg);
}

/* Output drained: finish a pending close, or resume reading. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct mch_conn *c = arg;

    (void)bev;
    if (c->closing) {
        mch_conn_free(c);
        return;
    }
    if (c->paused) {
        c->paused = false;
        bufferevent_enable(c->bev, EV_READ);
        conn_process(c); /* lines may be waiting already */
    }
}

/* EOF or error. After a half-close the answers still queued are sent. */
static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct mch_conn *c = arg;

    (void)bev;
    if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
        (void)conn_close_after_output(c);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        mch_conn_free(c);
}

/* Wraps accepted socket fd on worker w and fires ON_CONNECT. */
struct mch_conn *mch_conn_new(struct mch_worker *w, int fd)
{
    struct mch_conn *c = calloc(1, sizeof(*c));

    if (c != NULL)
        c->bev = bufferevent_socket_new(w->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (c == NULL || c->bev == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "fd %d: out of memory, closing", fd);
        free(c);
        close(fd);
        mch_count(curr_connections, (uint_fast64_t)-1);
        return NULL;
    }
    c->head.fd = fd;
    c->worker = w;
    c->next = w->conns;
    if (w->conns != NULL)
        w->conns->prev = c;
    w->conns = c;
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    mch_log(EXTENSION_LOG_DEBUG, "fd %d: new memcache connection (worker %u)",
            fd, w->id);
    mch_api_perform_callbacks(ON_CONNECT, NULL, &c->head);
    return c;
}

/* Fires ON_DISCONNECT and frees c (closing its socket). */
void mch_conn_free(struct mch_conn *c)
{
    mch_api_perform_callbacks(ON_DISCONNECT, NULL, &c->head);
    mch_log(EXTENSION_LOG_DEBUG, "fd %d: connection closed", c->head.fd);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        c->worker->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    bufferevent_free(c->bev);
    mch_count(curr_connections, (uint_fast64_t)-1);
    free(c);
}
