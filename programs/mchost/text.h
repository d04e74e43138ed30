/* text.h: the memcache text commands mchost answers. One call executes
 * one command line; it knows nothing of sockets or connections. */
#ifndef MCH_TEXT_H
#define MCH_TEXT_H

#include <stdint.h>

struct evbuffer;
struct mch_cookie;

/* What the connection does after a command. */
enum mch_text_status {
    MCH_TEXT_CONTINUE, /* read the next line */
    MCH_TEXT_CLOSE     /* quit: close once the answers queued are sent */
};

/* Executes line (without its line end; modified in place). Answers go to
 * out; cookie is the connection, given to the engine and callbacks.
 * *swallow is set to the number of data-block bytes the caller must skip
 * (set-like commands). */
enum mch_text_status mch_text_execute(char *line, struct evbuffer *out,
                                      struct mch_cookie *cookie,
                                      uint64_t *swallow);

#endif /* MCH_TEXT_H */
