/* extension.c: the entry point the host calls (memcached_extensions_
 * initialize): parses the configuration, builds the table, stats, GC and
 * server, and ties their life to the host's: the server's and the GC's
 * threads start at the first ON_CONNECT and stop at exit. */
#include "config.h"

#include "engine/glue/host_glue.h"

#include <memcached/visibility.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/glue/configuration.h"

/* Everything the extension keeps; one instance per process. */
static struct {
    GET_SERVER_API get_api;
    atomic_int level;               /* the host's log level, cached */
    atomic_bool started;            /* the first ON_CONNECT has run */
    bool loaded;
    cnt_config config;
    cnt_logger logger;
    cnt_map_budget budget;          /* counter.memory_limit, shared by
                                       the table, the limits and the
                                       throttle */
    cnt_table *table;
    cnt_limits *limits;
    cnt_throttle *throttle;
    cnt_users *users;               /* counter.users_file's, or NULL */
    cnt_stats *stats;
    cnt_gc *gc;
    bool gc_started;
    cnt_server *server;
} glue;

/* Log sink: asks the host for its current logger each time (it can be
 * replaced); the host's loggers print the text as is, hence the newline. */
static void glue_log_write(void *ctx, cnt_log_level level, const char *line)
{
    (void)ctx;
    SERVER_HANDLE_V1 *api = glue.get_api();
    if (api == NULL || api->log == NULL)
        return;
    EXTENSION_LOGGER_DESCRIPTOR *lg = api->log->get_logger();
    if (lg != NULL && lg->log != NULL)
        lg->log((EXTENSION_LOG_LEVEL)level, NULL, "%s\n", line);
}

/* Skips formatting lines below the host's verbosity. */
static bool glue_log_enabled(void *ctx, cnt_log_level level)
{
    (void)ctx;
    return (int)level >= atomic_load_explicit(&glue.level,
                                              memory_order_relaxed);
}

/* Reads the host's current log level into the cache. */
static void glue_refresh_level(SERVER_HANDLE_V1 *api)
{
    if (api != NULL && api->log != NULL && api->log->get_level != NULL)
        atomic_store(&glue.level, (int)api->log->get_level());
}

/* The daemon descriptor's name: shows as `STAT extension counter`. */
static const char *glue_daemon_name(void)
{
    return "counter";
}

static EXTENSION_DAEMON_DESCRIPTOR glue_daemon = {
    .get_name = glue_daemon_name,
    .next = NULL,
};

/* Stops and frees everything (exit handler, and failed start-up): the
 * server first (its connections release their holdings), then the GC,
 * and the configuration's groups last. */
static void glue_teardown(void)
{
    cnt_host_stats_detach();
    cnt_server_free(glue.server);
    glue.server = NULL;
    if (glue.gc_started)
        cnt_gc_stop(glue.gc);
    glue.gc_started = false;
    if (glue.gc != NULL)
        cnt_gc_free(glue.gc);
    glue.gc = NULL;
    if (glue.stats != NULL)
        cnt_stats_free(glue.stats);
    glue.stats = NULL;
    if (glue.table != NULL)
        cnt_table_free(glue.table);
    glue.table = NULL;
    cnt_limits_free(glue.limits);
    glue.limits = NULL;
    if (glue.throttle != NULL)
        cnt_throttle_free(glue.throttle);
    glue.throttle = NULL;
    cnt_users_free(glue.users);
    glue.users = NULL;
    /* Last: the server read the groups until it was freed. */
    cnt_config_free(&glue.config);
}

/* Host callback: ON_CONNECT (first one: main thread, host fully up and
 * already forked by -d: start our threads, wrap the engine's stats) and
 * ON_LOG_LEVEL (verbosity changed). */
static void glue_on_event(const void *cookie, ENGINE_EVENT_TYPE type,
                          const void *event_data, const void *cb_data)
{
    (void)cookie;
    (void)event_data;
    (void)cb_data;
    SERVER_HANDLE_V1 *api = glue.get_api();
    if (type == ON_LOG_LEVEL) {
        glue_refresh_level(api);
        return;
    }
    if (type != ON_CONNECT || glue.server == NULL ||
        atomic_exchange(&glue.started, true))
        return;
    glue_refresh_level(api);
    /* The server logs why it could not start; the GC's failure is ours to
     * report, and then the port stops too (no sweeping, no serving). */
    int rc = cnt_server_start(glue.server);
    if (rc == 0) {
        rc = cnt_gc_start(glue.gc);
        glue.gc_started = rc == 0;
        if (rc != 0) {
            cnt_log(&glue.logger, CNT_LOG_WARNING,
                    "counter: cannot start the garbage collector thread: %s",
                    strerror(rc));
            cnt_server_stop(glue.server);
        }
    }
    if (rc != 0) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: the counter port %u will not answer",
                (unsigned)cnt_server_port(glue.server));
        return;
    }
    cnt_stats_sources src = { .stats = glue.stats, .table = glue.table,
                              .limits = glue.limits,
                              .throttle = glue.throttle, .gc = glue.gc };
    cnt_host_stats_install(api, &src, glue.server, &glue.logger);
}

/* Puts a parsed throttle settings file into the throttle, all or
 * nothing: OK, or the throttle's refusal (nothing changed then). */
static cnt_status glue_throttle_apply(const cnt_throttle_file *f)
{
    cnt_throttle_setting *tenants = NULL;

    if (f->ntenants > 0) {
        tenants = calloc(f->ntenants, sizeof *tenants);
        if (tenants == NULL)
            return CNT_STATUS_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < f->ntenants; i++)
        tenants[i] = (cnt_throttle_setting){
            .name = f->tenants[i].name, .len = f->tenants[i].len,
            .reserved = f->tenants[i].reserved, .hard = f->tenants[i].hard };
    cnt_throttle_settings s = {
        .has_capacity = f->has_capacity, .capacity = f->capacity,
        .has_default_hard = f->has_default_hard,
        .default_hard = f->default_hard, .ntenants = f->ntenants,
        .tenants = tenants };
    cnt_status st = cnt_throttle_apply(glue.throttle, &s);
    free(tenants);
    return st;
}

/* The reload opcode: reads counter.throttle.config again and applies it
 * (the file wins for what it names); Not found without one, Invalid
 * arguments (the reason logged) when it does not parse or fit. */
static cnt_status glue_throttle_reload(void *ctx)
{
    cnt_throttle_file f;
    char err[512];

    (void)ctx;
    if (glue.config.throttle_path == NULL)
        return CNT_STATUS_NOT_FOUND;
    if (!cnt_throttle_file_parse(glue.config.throttle_path, &f, err,
                                 sizeof err)) {
        cnt_log(&glue.logger, CNT_LOG_WARNING, "%s (reload refused)", err);
        return CNT_STATUS_INVALID;
    }
    cnt_status st = glue_throttle_apply(&f);
    cnt_throttle_file_free(&f);
    if (st != CNT_STATUS_OK) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: counter.throttle.config: \"%s\": %s (reload "
                "refused)", glue.config.throttle_path, cnt_status_text(st));
        return st == CNT_STATUS_OUT_OF_MEMORY ? st : CNT_STATUS_INVALID;
    }
    cnt_log(&glue.logger, CNT_LOG_INFO,
            "counter: counter.throttle.config: \"%s\" reloaded",
            glue.config.throttle_path);
    return CNT_STATUS_OK;
}

/* Builds table, stats, GC and server (which binds now); false after
 * logging one WARNING line. */
static bool glue_build(void)
{
    const cnt_config *c = &glue.config;
    /* One memory limit for counters, tickets and rate-limit records. */
    cnt_table_config tc = c->table;
    cnt_map_budget_init(&glue.budget, c->table.memory_limit);
    tc.budget = &glue.budget;
    glue.table = cnt_table_new(&tc);
    if (glue.table == NULL) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: cannot allocate a table of %zu buckets "
                "(counter.buckets)", c->table.buckets);
        return false;
    }
    cnt_limits_config lc = { .budget = &glue.budget,
                             .clock = cnt_table_clock(glue.table) };
    glue.limits = cnt_limits_new(&lc);
    cnt_throttle_config hc = { .budget = &glue.budget,
                               .clock = cnt_table_clock(glue.table) };
    glue.throttle = cnt_throttle_new(&hc);
    glue.stats = cnt_stats_new(CNT_SERVER_STATS_SLOTS(c->server.threads));
    glue.gc = cnt_gc_new(glue.table);
    if (glue.limits == NULL || glue.throttle == NULL || glue.stats == NULL ||
        glue.gc == NULL || cnt_gc_add_limits(glue.gc, glue.limits) != 0 ||
        cnt_gc_add_throttle(glue.gc, glue.throttle) != 0) {
        cnt_log(&glue.logger, CNT_LOG_WARNING, "counter: out of memory");
        return false;
    }
    cnt_status st = glue_throttle_apply(&c->throttle);
    if (st != CNT_STATUS_OK) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: counter.throttle.config: %s", cnt_status_text(st));
        return false;
    }
    cnt_server_config sc = c->server;
    sc.limits = glue.limits;
    sc.throttle = glue.throttle;
    sc.secret = c->admin_secret;
    sc.secret_len = c->admin_secret_len;
    sc.reload = glue_throttle_reload;
    if (c->users_path[0] != '\0') {
        char err[512];
        if (!cnt_users_file_parse(c->users_path, &glue.users, err,
                                  sizeof err)) {
            cnt_log(&glue.logger, CNT_LOG_WARNING, "%s", err);
            return false;
        }
    }
    /* Users, or a default tenant, make every connection pay. */
    sc.users = glue.users;
    if (c->default_tenant[0] != '\0')
        sc.default_tenant = c->default_tenant;
    else if (glue.users != NULL)
        sc.default_tenant = "default";
    glue.server = cnt_server_new(&sc, glue.table, glue.stats, glue.gc,
                                 &glue.logger);
    return glue.server != NULL;     /* it logged why */
}

/* Registers the daemon name, the callbacks and the exit handler. */
static bool glue_register(SERVER_HANDLE_V1 *api)
{
    if (!api->extension->register_extension(EXTENSION_DAEMON, &glue_daemon)) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: the host refused the daemon extension");
        return false;
    }
    api->callback->register_callback(NULL, ON_CONNECT, glue_on_event, NULL);
    api->callback->register_callback(NULL, ON_LOG_LEVEL, glue_on_event, NULL);
    /* The host calls nothing on extensions at exit; a -d parent leaves
     * with _exit and never runs this. */
    if (atexit(glue_teardown) != 0) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: cannot register the exit handler");
        return false;
    }
    return true;
}

/* The entry point: parses config (copied: it points into argv), and when
 * counter.enable is true binds the counter port; threads start at the
 * host's first ON_CONNECT. */
MEMCACHED_PUBLIC_API
EXTENSION_ERROR_CODE memcached_extensions_initialize(const char *config,
                                                     GET_SERVER_API get_api);

EXTENSION_ERROR_CODE memcached_extensions_initialize(const char *config,
                                                     GET_SERVER_API get_api)
{
    SERVER_HANDLE_V1 *api = get_api != NULL ? get_api() : NULL;
    if (api == NULL || api->interface != 1 || api->log == NULL)
        return EXTENSION_FATAL;
    glue.get_api = get_api;
    glue.logger.write = glue_log_write;
    glue.logger.enabled = glue_log_enabled;
    glue_refresh_level(api);
    if (glue.loaded) {
        cnt_log(&glue.logger, CNT_LOG_WARNING,
                "counter: counter.so is loaded twice (-X given twice?)");
        return EXTENSION_FATAL;
    }
    glue.loaded = true;
    char err[512];
    cnt_config_defaults(&glue.config);
    if (!cnt_config_parse_string(&glue.config, config, err, sizeof(err))) {
        cnt_log(&glue.logger, CNT_LOG_WARNING, "%s", err);
        return EXTENSION_FATAL;
    }
    if (!glue.config.enable) {
        cnt_log(&glue.logger, CNT_LOG_INFO,
                "counter: disabled (counter.enable=false); not listening");
        cnt_config_free(&glue.config);      /* no server will read it */
        return EXTENSION_SUCCESS;
    }
    if (!glue_build() || !glue_register(api)) {
        glue_teardown();
        return EXTENSION_FATAL;
    }
    cnt_log(&glue.logger, CNT_LOG_INFO,
            "counter: listening on port %u (%u addresses, %u threads, "
            "%zu buckets, %zu groups); serving starts with the host",
            (unsigned)cnt_server_port(glue.server), glue.config.server.nbinds,
            glue.config.server.threads, glue.config.table.buckets,
            cnt_groups_count(glue.config.groups));
    return EXTENSION_SUCCESS;
}
