/* server.h: the counter port. Binds its listening sockets when built (so a
 * busy port fails the host's start-up) and runs its threads only once
 * started (so they are born after the host's -d fork). Knows nothing about
 * the host: the glue passes in the table, stats, GC and a log sink. */
#ifndef CNT_ENGINE_SERVER_H
#define CNT_ENGINE_SERVER_H

#include <stdint.h>

#include "engine/glue/configuration.h"
#include "engine/core/gc.h"
#include "engine/server/log.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"

typedef struct cnt_server cnt_server;

/* Stats slots the server needs for config->threads workers: one per
 * worker and one for the acceptor (rejected connections). */
#define CNT_SERVER_STATS_SLOTS(threads) ((unsigned)(threads) + 1u)

/* Binds and listens on every address of config->binds at config->port
 * (IPv4 and IPv6; with port 0 the kernel picks one port, then every
 * address uses it). Starts no thread. On failure logs one WARNING line
 * naming counter.port / counter.bind and the address, and returns NULL.
 * table, stats (CNT_SERVER_STATS_SLOTS slots), gc (may be NULL) and logger
 * must outlive the server. */
cnt_server *cnt_server_new(const cnt_config *config, cnt_table *table,
                           cnt_stats *stats, cnt_gc *gc,
                           const cnt_logger *logger);

/* Starts the worker threads, the acceptor and the GC; returns 0 or an
 * errno value (then nothing is left running). Calling it again does
 * nothing. */
int cnt_server_start(cnt_server *s);

/* Stops every thread (the acceptor first, so no connection arrives
 * while workers stop), ends every connection (releasing its holdings) and
 * stops the GC. The listening sockets stay open until cnt_server_free. */
void cnt_server_stop(cnt_server *s);

/* Stops the server if needed, closes the sockets and frees it. */
void cnt_server_free(cnt_server *s);

/* The port the server listens on (useful when counter.port was 0). */
uint16_t cnt_server_port(const cnt_server *s);

/* Connections open right now across all workers. */
unsigned cnt_server_connections(const cnt_server *s);

#endif
