/* counterctl.h: shared declarations of the counterctl command-line client:
 * its exit codes, the blocking, bounded connection it talks through, and
 * the argument parsers its unit test reaches. */
#ifndef CNT_PROGRAMS_COUNTERCTL_H
#define CNT_PROGRAMS_COUNTERCTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "client/servers.h"
#include "protocol/duration.h"
#include "protocol/request.h"
#include "protocol/response.h"

/* Exit codes (sysexits.h values where one fits; documented in the man page). */
enum ctl_exit {
    CTL_EXIT_OK = 0,
    CTL_EXIT_STATUS = 1,        /* the server answered an error status */
    CTL_EXIT_USAGE = 2,         /* bad command line */
    CTL_EXIT_UNAVAILABLE = 69,  /* EX_UNAVAILABLE: cannot connect */
    CTL_EXIT_SOFTWARE = 70,     /* EX_SOFTWARE: internal failure (fork) */
    CTL_EXIT_IOERR = 74,        /* EX_IOERR: connection lost or timed out */
    CTL_EXIT_TEMPFAIL = 75,     /* EX_TEMPFAIL: run: resources not available */
    CTL_EXIT_PROTOCOL = 76,     /* EX_PROTOCOL: the answer makes no sense */
    CTL_EXIT_NOEXEC = 126,      /* run: the command cannot be executed */
    CTL_EXIT_NOTFOUND = 127     /* run: the command does not exist */
};

/* Outcome of one exchange with the server. */
typedef enum ctl_io {
    CTL_IO_OK,          /* a whole response is in */
    CTL_IO_EOF,         /* the server closed the connection */
    CTL_IO_TIMEOUT,     /* nothing within the timeout */
    CTL_IO_ERROR,       /* a socket error (errno kept in ctl_conn.err) */
    CTL_IO_PROTOCOL,    /* bad magic, wrong opaque or an oversized body */
    CTL_IO_AGAIN        /* ctl_conn_poll: no whole packet has come yet */
} ctl_io;

/* Largest response counterctl accepts: a Dump record with the longest name,
 * with room to spare for a Stats body. Anything larger is refused rather
 * than buffered. */
#define CTL_RESPONSE_MAX (128u * 1024u)

/* A connection to one server; responses are read into a fixed buffer. */
typedef struct ctl_conn {
    int fd;
    int timeout_ms;             /* for each wait on the socket */
    int err;                    /* errno of the last CTL_IO_ERROR */
    uint32_t next_opaque;
    size_t len;                 /* bytes buffered */
    size_t consumed;            /* bytes of the response last returned */
    uint8_t buf[CTL_RESPONSE_MAX];
} ctl_conn;

/* Connects to host:port (names, IPv4 or IPv6 literals); NULL on failure,
 * after printing why on stderr. */
ctl_conn *ctl_conn_new(const char *host, const char *port, int timeout_ms);

/* Closes the connection and frees it (NULL is fine). */
void ctl_conn_free(ctl_conn *c);

/* Returns a fresh opaque for the next request. */
uint32_t ctl_conn_opaque(ctl_conn *c);

/* Sends len bytes of requests. */
ctl_io ctl_conn_send(ctl_conn *c, const uint8_t *buf, size_t len);

/* Reads the next answer to the request with opaque; server-initiated
 * packets (magic 0x92) are skipped. res points into c's buffer and stays
 * valid until the next call. */
ctl_io ctl_conn_response(ctl_conn *c, uint32_t opaque, cnt_response *res);

/* Reads the next packet, an answer or an event (res->magic tells), with
 * each wait on the socket bounded by timeout_ms (-1: no limit, for a wait
 * the server bounds itself). res stays valid until the next call. */
ctl_io ctl_conn_next(ctl_conn *c, cnt_response *res, int64_t timeout_ms);

/* Returns the next packet, answer or event, without waiting: what is
 * buffered, else what one non-blocking read brings. CTL_IO_AGAIN when no
 * whole packet is there yet; call it until then when the socket is
 * readable. */
ctl_io ctl_conn_poll(ctl_conn *c, cnt_response *res);

/* Returns milliseconds on the monotonic clock. */
int64_t ctl_now_ms(void);

/* Returns a short text for an I/O outcome, for messages. */
const char *ctl_io_text(const ctl_conn *c, ctl_io io);

/* Takes in whatever the server sent while no answer was expected (run polls
 * the socket while its command runs): CTL_IO_OK while the connection
 * stands, _EOF or _ERROR once it is gone, _PROTOCOL if unasked-for data
 * piles up. Notices are dropped; other bytes stay for the next answer. */
ctl_io ctl_conn_watch(ctl_conn *c);

/* Prints one error line on stderr: "counterctl: " and the formatted text,
 * with control characters (a newline in a counter name, say) written as
 * \xHH, so every error is exactly one line. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ctl_error with a va_list, and tail (may be "") appended on the line. */
void ctl_verror(const char *tail, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Turns on TCP keepalive with short intervals, so that a server that
 * vanishes without closing is noticed within about a minute. */
void ctl_conn_keepalive(ctl_conn *c);

/* ---- argument parsers (counterctl_args.c) ---- */

/* Parses a decimal u64 (digits only); false if it is not one. */
bool ctl_parse_u64(const char *s, uint64_t *out);

/* What a duration argument may be: a whole number of steps of per ns,
 * from min to max steps, with the words messages use for them. */
typedef struct ctl_span {
    uint64_t per;           /* ns per step: 1000000 counts milliseconds */
    const char *step;       /* "milliseconds" */
    uint64_t min, max;      /* in steps */
    const char *bounds;     /* "0 to 4294967294ms, about 49.7 days" */
} ctl_span;

/* Parses s as a duration (protocol/duration.h: a number, a fraction if
 * wanted, a unit; a bare number is seconds) into *d and *steps, whole
 * steps of span within its bounds. False otherwise, with the reason in
 * msg (len bytes): the value quoted, what is wrong and the right form, as
 * in "\"5 minutes\" is not a duration (write a number and a unit: 250ms,
 * 3s, 5min, 2h)", for the caller to put after the argument's name. */
bool ctl_duration_arg(const char *s, const ctl_span *span, cnt_duration *d,
                      uint64_t *steps, char *msg, size_t len);

/* Writes bytes to stdout with anything but printable ASCII (and space and
 * backslash) escaped as \xHH, so every name fits on one line. */
void ctl_print_escaped(const uint8_t *p, size_t len);

/* Parses a hard limit: "unlimited" (CNT_HARD_LIMIT_UNLIMITED) or a
 * decimal from 0 to 4294967294, as the server's settings file takes it;
 * false if it is neither. */
bool ctl_parse_hard_limit(const char *s, uint32_t *out);

/* The longest admin secret, as the server reads it. */
#define CTL_SECRET_MAX 4096u
/* Room ctl_read_secret needs: the secret, a "\r\n", and one byte more to
 * tell a secret that is too long. */
#define CTL_SECRET_BUF (CTL_SECRET_MAX + 3u)

/* What ctl_read_secret found. */
typedef enum ctl_secret {
    CTL_SECRET_OK,
    CTL_SECRET_OPEN,        /* cannot open the file (errno in *err) */
    CTL_SECRET_READ,        /* cannot read it (errno in *err) */
    CTL_SECRET_EMPTY,       /* nothing left after the line end goes */
    CTL_SECRET_TOO_LONG     /* more than CTL_SECRET_MAX bytes */
} ctl_secret;

/* Reads the admin secret from path as the server reads its
 * counter.admin_secret_file: the content minus one trailing "\n" or
 * "\r\n", 1..CTL_SECRET_MAX bytes, into buf (CTL_SECRET_BUF bytes) and
 * *len. On failure buf is wiped. */
ctl_secret ctl_read_secret(const char *path, uint8_t *buf, size_t *len,
                           int *err);

/* Overwrites n bytes at p with zeros in a way the compiler keeps, for
 * buffers that held the secret. */
void ctl_wipe(void *p, size_t n);

/* ---- --servers ---- */

/* Most servers --servers may list. */
#define CTL_SERVERS_MAX 256

/* The argument that places a command on one server of --servers: the
 * counter name (get, acquire, release, run, ttl, window, gcra) or the
 * tenant (throttle, tenant show TENANT, tenant set, tenant remove); NULL
 * for a command that runs on every server (noop, stats, dump, tenant
 * show without TENANT, node). argv holds the command's arguments after
 * its name, already checked by its own parser. */
const char *ctl_route_key(const char *cmd, int argc, char **argv);

/* Writes host and port as "HOST:PORT" ("[HOST]:PORT" when host holds a
 * ':', an IPv6 address) into buf of len bytes; returns buf. */
char *ctl_format_server(const char *host, const char *port, char *buf,
                        size_t len);

/* ---- run's supervisor (counterctl_tree.c) ---- */

/* Messages on the stream socket between counterctl and the supervisor of
 * run's command tree. From counterctl: a signal number (1..127) to pass
 * on, CTL_TREE_LOST, CTL_TREE_BOUND with an int64 (the holding is safe
 * until then, in ctl_now_ms milliseconds) or CTL_TREE_NO_BOUND. From the
 * supervisor: CTL_TREE_WATCHDOG when it stopped the tree because no
 * renewal was confirmed in time. */
#define CTL_TREE_LOST 0x80        /* the holding is gone: stop the tree */
#define CTL_TREE_BOUND 0x81       /* followed by 8 bytes, host order */
#define CTL_TREE_NO_BOUND 0x82    /* no lease: nothing to watch */
#define CTL_TREE_WATCHDOG 0x90

/* What the supervisor needs from counterctl. */
typedef struct ctl_tree_setup {
    char **command;
    int sock;                   /* the supervisor's end of the socket */
    pid_t parent;               /* counterctl */
    int64_t kill_after_ms;      /* from SIGTERM to SIGKILL */
    int64_t lease_ms;           /* the lease the bounds are about; 0: none */
    const int *sigs;            /* signals counterctl catches, and */
    const struct sigaction *old;/* their dispositions before it did */
    size_t nsigs;
    const sigset_t *old_mask;   /* the mask counterctl was started with */
} ctl_tree_setup;

/* The supervisor, in the child counterctl forked: starts the command in
 * a process group of its own, adopts every orphan of it, stops the whole
 * tree when told or when counterctl dies, and exits, with the command's
 * exit code, only when no process of the tree is left. Never returns. */
_Noreturn void ctl_tree_main(const ctl_tree_setup *s);

#endif
