/* host_glue.h: what extension.c and host_stats.c share. Only these two
 * files see memcached's types; everything below them is host-neutral. */
#ifndef CNT_ENGINE_HOST_GLUE_H
#define CNT_ENGINE_HOST_GLUE_H

#include <memcached/engine.h>

#include "engine/core/gc.h"
#include "engine/server/log.h"
#include "engine/server/server.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"

/* Wraps the engine's get_stats (when it is an ENGINE_HANDLE_V1) so plain
 * `stats` gains counter_* lines and `stats counter` lists the items; false
 * (after logging why) when the engine cannot be wrapped. Call once, in the
 * main thread, before clients connect (the first ON_CONNECT). */
bool cnt_host_stats_install(SERVER_HANDLE_V1 *api,
                            const cnt_stats_sources *sources,
                            const cnt_server *server, const cnt_logger *log);

/* Makes the wrapper pass every request straight to the engine again (the
 * counter objects are about to be freed at exit). */
void cnt_host_stats_detach(void);

#endif
