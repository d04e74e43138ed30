/* test_client_util.c: the logbook and the driving helpers the tests of
 * libmccounter share (test_client_util.h). */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/test_client_util.h"

/* Sleeps ms milliseconds. */
void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- A log of what the client reported, compared as text ---- */

/* Appends one formatted line to a logbook. */
void log_add(logbook *lb, const char *fmt, ...)
{
    va_list ap;

    if (lb->n >= (int)(sizeof lb->item / sizeof lb->item[0]))
        return;
    va_start(ap, fmt);
    vsnprintf(lb->item[lb->n++], sizeof lb->item[0], fmt, ap);
    va_end(ap);
}

/* Logs a result as "op:error[:value]". */
void log_result(mcc_client *c, const mcc_result *r, void *arg)
{
    (void)c;
    if (r->error == MCC_OK && (r->op == MCC_OP_GET || r->op == MCC_OP_ACQUIRE))
        log_add(arg, "%02x:%d:%u", r->op, r->error, r->value);
    else if (r->error == MCC_OK && r->op == MCC_OP_WAIT_ACQUIRE)
        log_add(arg, "%02x:%d:w%u", r->op, r->error, r->wait.state);
    else if (r->error == MCC_ERR_STATUS)
        log_add(arg, "%02x:%d:s%02x", r->op, r->error, r->status);
    else
        log_add(arg, "%02x:%d", r->op, r->error);
}

/* Logs an event as "ev<kind>:<error>[:name]". */
void log_event(mcc_client *c, const mcc_event *e, void *arg)
{
    (void)c;
    if (e->kind == MCC_EVENT_ERROR)
        log_add(arg, "ev%d:%d:s%02x", e->kind, e->error, e->status);
    else
        log_add(arg, "ev%d:%.*s", e->kind, (int)e->name_len, e->name);
}

/* Logs a record as "rec:<name>" and the end as "end:<error>". */
void log_record(mcc_client *c, const mcc_record *rec, void *arg)
{
    (void)c;
    if (rec->more)
        log_add(arg, "rec:%.*s", (int)rec->name_len, rec->name);
    else
        log_add(arg, "end:%d", rec->error);
}

/* Logs only the end of a series as "end:<error>". */
void log_end(mcc_client *c, const mcc_record *rec, void *arg)
{
    (void)c;
    if (!rec->more)
        log_add(arg, "end:%d", rec->error);
}

/* Asserts the logbook holds exactly the lines given (NULL-terminated). */
void log_expect(const logbook *lb, ...)
{
    va_list ap;
    const char *want;
    int i = 0;

    va_start(ap, lb);
    while ((want = va_arg(ap, const char *)) != NULL) {
        if (i >= lb->n)
            fail_msg("log has %d lines, expected more (next: %s)", lb->n,
                     want);
        if (strcmp(lb->item[i], want) != 0)
            fail_msg("log line %d is '%s', expected '%s'", i, lb->item[i],
                     want);
        i++;
    }
    va_end(ap);
    if (i != lb->n)
        fail_msg("log has %d lines, expected %d (extra: %s)", lb->n, i,
                 lb->item[i]);
}

/* Drives the client until the logbook has n lines (or gives up). */
void poll_until(mcc_client *c, const logbook *lb, int n)
{
    for (int round = 0; lb->n < n && round < GIVE_UP_MS / 10; round++)
        mcc_poll(c, 10);
    if (lb->n < n) {
        for (int i = 0; i < lb->n; i++)
            print_message("log[%d] %s\n", i, lb->item[i]);
        fail_msg("log has %d lines, waited for %d", lb->n, n);
    }
}

/* Drives the client for about ms milliseconds. */
void drive_for(mcc_client *c, int ms)
{
    struct timespec a, b;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (;;) {
        long spent;
        clock_gettime(CLOCK_MONOTONIC, &b);
        spent = (b.tv_sec - a.tv_sec) * 1000 +
                (b.tv_nsec - a.tv_nsec) / 1000000;
        if (spent >= ms)
            return;
        mcc_poll(c, (int)(ms - spent));
    }
}

/* A client of one server at 127.0.0.1:port. */
mcc_client *client_at(uint16_t port)
{
    mcc_client *c = mcc_client_new();

    assert_non_null(c);
    assert_int_equal(mcc_client_add_server(c, "127.0.0.1", port, 1), 0);
    return c;
}

/* Logs what a lease helper reports. */
void log_lease(mcc_client *c, mcc_lease *l, mcc_lease_state st,
               int error, uint8_t status, void *arg)
{
    (void)c;
    (void)l;
    log_add(arg, "lease:%d:%d:s%02x", st, error, status);
}

