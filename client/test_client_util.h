/* test_client_util.h: what the two test programs of libmccounter
 * (test_client.c, without a server or with a scripted fake one, and
 * test_client_live.c, against mchost) share: a logbook of what the client
 * reported, compared as text, and ways to drive a client until it has
 * reported enough, bounded against hangs. */
#ifndef MCC_TEST_CLIENT_UTIL_H
#define MCC_TEST_CLIENT_UTIL_H

#include <stdint.h>

#include "client/mccounter.h"

/* How long anything may take before a test gives up (a bound against
 * hangs, never an assertion about speed). */
#define GIVE_UP_MS 10000

/* A log of what the client reported, one short line an item. */
typedef struct logbook {
    int n;
    char item[2048][48];
} logbook;

/* Sleeps ms milliseconds. */
void sleep_ms(int ms);

/* Appends one formatted line to a logbook. */
void log_add(logbook *lb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Logs a result as "op:error[:value]". */
void log_result(mcc_client *c, const mcc_result *r, void *arg);

/* Logs an event as "ev<kind>:<error>[:name]". */
void log_event(mcc_client *c, const mcc_event *e, void *arg);

/* Logs a record as "rec:<name>" and the end as "end:<error>". */
void log_record(mcc_client *c, const mcc_record *rec, void *arg);

/* Logs only the end of a series as "end:<error>". */
void log_end(mcc_client *c, const mcc_record *rec, void *arg);

/* Asserts the logbook holds exactly the lines given (NULL-terminated). */
void log_expect(const logbook *lb, ...);

/* Drives the client until the logbook has n lines (or gives up). */
void poll_until(mcc_client *c, const logbook *lb, int n);

/* Drives the client for about ms milliseconds. */
void drive_for(mcc_client *c, int ms);

/* A client of one server at 127.0.0.1:port. */
mcc_client *client_at(uint16_t port);

/* Logs what a lease helper reports. */
void log_lease(mcc_client *c, mcc_lease *l, mcc_lease_state st,
               int error, uint8_t status, void *arg);

#endif
