/* server.h: the counter port. Binds its listening sockets when built (so a
 * busy port fails the host's start-up) and runs its threads only once
 * started (so they are born after the host's -d fork). Knows nothing about
 * the host: the glue passes in its settings, the table, stats, the GC (for
 * Stats) and a log sink. */
#ifndef CNT_ENGINE_SERVER_H
#define CNT_ENGINE_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/authlimit.h"
#include "engine/core/gc.h"
#include "engine/core/groups.h"
#include "engine/core/limits.h"
#include "engine/core/throttle.h"
#include "engine/core/stats.h"
#include "engine/core/table.h"
#include "engine/core/users.h"
#include "engine/server/log.h"

#define CNT_SERVER_MAX_BINDS 8
#define CNT_SERVER_ADDR_MAX 64
/* Most worker threads; without a setting, one per CPU up to the default
 * maximum. */
#define CNT_SERVER_THREADS_MAX 64u
#define CNT_SERVER_THREADS_DEFAULT_MAX 4u
/* Outstanding wait_acquire requests a connection may have by default. */
#define CNT_SERVER_MAX_WAITS_DEFAULT 1024u

/* What the server needs to know; the settings file's key in brackets. */
typedef struct cnt_server_config {
    uint16_t port;                  /* [counter.port] 11215; 0 = any free */
    unsigned nbinds;                /* [counter.bind] "127.0.0.1" */
    char binds[CNT_SERVER_MAX_BINDS][CNT_SERVER_ADDR_MAX];
    unsigned max_connections;       /* [counter.max_connections] 0 = none */
    unsigned threads;               /* [counter.threads] CPUs, at most 4 */
    /* TCP keepalive on counter connections, so that a holder whose machine
     * vanished (power, network) loses its resources after about
     * idle + interval * count seconds instead of never. */
    bool keepalive;                 /* [counter.keepalive] true */
    unsigned keepalive_idle;        /* [counter.keepalive_idle] 30 s */
    unsigned keepalive_interval;    /* [counter.keepalive_interval] 10 s */
    unsigned keepalive_count;       /* [counter.keepalive_count] 3 */
    /* [counter.group.NAME] the groups wait_acquire looks names up in; NULL
     * = none. Owned by whoever built this config, never changed after the
     * server is built, and must outlive the server. */
    /* The rate limits the sessions answer 0x30-0x36 from; NULL: those
     * opcodes are unknown (0x81). */
    cnt_limits *limits;
    /* Tenant throttling (NULL: its opcodes are unknown), the admin secret
     * (NULL: none; the bytes must outlive the server) and the reload of
     * the throttle settings file (see cnt_session_env). */
    cnt_throttle *throttle;
    const uint8_t *secret;
    size_t secret_len;
    cnt_status (*reload)(void *ctx);
    void *reload_ctx;
    const cnt_groups *groups;
    /* [counter.max_waits] 1024: outstanding wait_acquire requests (queued,
     * granted, or expired and not yet acknowledged) per connection. */
    uint32_t max_waits;
    /* The Throttr v5 front: its port on the same addresses
     * [counter.throttr.port] (0 = off) and the size of its numbers
     * [counter.throttr.value_size] 2 (1, 2, 4 or 8). It answers from
     * limits' TTL counters. */
    uint16_t throttr_port;
    unsigned throttr_value_size;
    /* The WebSocket quota front: its HTTP port on the same addresses
     * [counter.http.port] (0 = off), the bound of an upgrade request's
     * header block [counter.http.max_header] 8192 and of one message
     * [counter.http.max_message] 4096, in bytes. */
    uint16_t http_port;
    uint32_t http_max_header;
    uint32_t http_max_message;
    /* [counter.auth_fail_limit] 50 and [counter.auth_fail_limit_per_address]
     * 5: failed authentications per second the server judges, in all and
     * from one client address; more are refused without comparing (0: no
     * such limit). See engine/core/authlimit.h. */
    uint32_t auth_fail_limit;
    uint32_t auth_fail_limit_per_address;
    /* Tenants on connections (see cnt_session_env): the users a
     * connection may authenticate as (NULL: none; must outlive the
     * server), the tenant of the others (NULL: requests are not charged)
     * and [counter.tenant_cost.CLASS] 1: the units each class costs. */
    const cnt_users *users;
    const char *default_tenant;
    uint32_t tenant_cost[CNT_COST_CLASSES];
} cnt_server_config;

/* Fills c with the defaults (the only place they are written). Inline so
 * that the configuration parser links without the server. */
static inline void cnt_server_config_defaults(cnt_server_config *c)
{
    memset(c, 0, sizeof(*c));
    c->port = 11215;
    c->nbinds = 1;
    strcpy(c->binds[0], "127.0.0.1");
    c->max_connections = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    c->threads = cpus > (long)CNT_SERVER_THREADS_DEFAULT_MAX
                     ? CNT_SERVER_THREADS_DEFAULT_MAX : (unsigned)cpus;
    c->keepalive = true;
    c->keepalive_idle = 30;
    c->keepalive_interval = 10;
    c->keepalive_count = 3;
    c->groups = NULL;
    c->limits = NULL;
    c->throttle = NULL;
    c->secret = NULL;
    c->secret_len = 0;
    c->reload = NULL;
    c->reload_ctx = NULL;
    c->max_waits = CNT_SERVER_MAX_WAITS_DEFAULT;
    c->throttr_port = 0;
    c->throttr_value_size = 2;
    c->http_port = 0;
    c->http_max_header = 8192;
    c->http_max_message = 4096;
    c->auth_fail_limit = CNT_AUTH_FAIL_LIMIT_DEFAULT;
    c->auth_fail_limit_per_address = CNT_AUTH_FAIL_LIMIT_PER_ADDRESS_DEFAULT;
    c->users = NULL;
    c->default_tenant = NULL;
    for (unsigned i = 0; i < CNT_COST_CLASSES; i++)
        c->tenant_cost[i] = 1;
}

typedef struct cnt_server cnt_server;

/* Stats slots the server needs for config->threads workers: one per
 * worker and one for the acceptor (rejected connections). */
#define CNT_SERVER_STATS_SLOTS(threads) ((unsigned)(threads) + 1u)

/* Binds and listens on every address of config->binds at config->port
 * (IPv4 and IPv6; with port 0 the kernel picks one port, then every
 * address uses it). Starts no thread. On failure logs one WARNING line
 * naming counter.port / counter.bind and the address, and returns NULL.
 * table, stats (CNT_SERVER_STATS_SLOTS slots), gc (read for Stats; may be
 * NULL) and logger must outlive the server. */
cnt_server *cnt_server_new(const cnt_server_config *config, cnt_table *table,
                           cnt_stats *stats, const cnt_gc *gc,
                           const cnt_logger *logger);

/* Starts the worker threads, then the acceptor; returns 0 or an errno
 * value (then nothing is left running). Calling it again does nothing. */
int cnt_server_start(cnt_server *s);

/* Stops every thread (the acceptor first, so no connection arrives
 * while workers stop) and ends every connection (releasing its holdings).
 * The listening sockets stay open until cnt_server_free. */
void cnt_server_stop(cnt_server *s);

/* Stops the server if needed, closes the sockets and frees it. */
void cnt_server_free(cnt_server *s);

/* The port the server listens on (useful when counter.port was 0). */
uint16_t cnt_server_port(const cnt_server *s);

/* The port of the Throttr front, 0 when it is off. */
uint16_t cnt_server_throttr_port(const cnt_server *s);

/* The most Lease_list surveys ever out at once (never above the number
 * of workers, the bound; for tests and diagnostics). */
unsigned cnt_server_survey_peak(cnt_server *s);

/* The port the WebSocket front listens on (0 when it is off). */
uint16_t cnt_server_http_port(const cnt_server *s);

#endif
