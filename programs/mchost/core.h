/* core.h: mchost's implementation of SERVER_CORE_API (clock, version,
 * hash, configuration access, shutdown request). */
#ifndef MCH_CORE_H
#define MCH_CORE_H

#include <stdbool.h>
#include <time.h>

#include <memcached/server_api.h>

/* Starts the server clock (get_current_time counts from here). */
void mch_core_clock_start(void);

/* Seconds since mch_core_clock_start. */
rel_time_t mch_core_current_time(void);

/* Wall-clock time of mch_core_clock_start. */
time_t mch_core_started(void);

/* The host's version string. */
const char *mch_core_version(void);

/* True once someone called SERVER_CORE_API.shutdown. */
bool mch_core_shutdown_requested(void);

/* The SERVER_CORE_API table. */
SERVER_CORE_API *mch_core_api(void);

#endif /* MCH_CORE_H */
