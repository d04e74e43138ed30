/* main.c: mchost, a small memcached-compatible host for extensions, in the
 * start-up order doc/host-interface.md gives: options with -X loaded
 * on the spot, -u, -d, event base, engine, workers, listeners, loop. */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "programs/mchost/api.h"
#include "programs/mchost/core.h"
#include "programs/mchost/daemon.h"
#include "programs/mchost/listen.h"
#include "programs/mchost/logger.h"
#include "programs/mchost/options.h"
#include "programs/mchost/settings.h"
#include "programs/mchost/stub_engine.h"
#include "programs/mchost/workers.h"

/* How often the main loop looks at the core->shutdown() flag. */
static const struct timeval shutdown_poll = { 0, 100 * 1000 };

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    mch_log(EXTENSION_LOG_INFO, "signal %d: shutting down", (int)sig);
    event_base_loopbreak(arg);
}

static void on_shutdown_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    if (mch_core_shutdown_requested()) {
        mch_log(EXTENSION_LOG_INFO, "shutdown requested");
        event_base_loopbreak(arg);
    }
}

/* Listens, tells extensions, publishes the port; 0 or -1 (logged). */
static int start_listening(struct event_base *base)
{
    if (mch_listen_open(base, mch_settings.listen, mch_settings.port) != 0)
        return -1;
    /* get_config and `stats settings` report the real port from now on;
     * no worker has a connection yet, so nobody reads it concurrently. */
    mch_settings.port = mch_listen_port();
    mch_listen_start();
    if (mch_settings.pidfile != NULL &&
        mch_daemon_write_number_file(mch_settings.pidfile, (long)getpid()) != 0)
        return -1;
    if (mch_settings.portfile != NULL &&
        mch_daemon_write_number_file(mch_settings.portfile,
                                     mch_settings.port) != 0)
        return -1;
    return 0;
}

/* Runs the main loop until a signal or core->shutdown(). */
static void run(struct event_base *base)
{
    struct event *term = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *intr = evsignal_new(base, SIGINT, on_signal, base);
    struct event *poll = event_new(base, -1, EV_PERSIST, on_shutdown_poll,
                                   base);

    if (term == NULL || intr == NULL || poll == NULL ||
        evsignal_add(term, NULL) != 0 || evsignal_add(intr, NULL) != 0 ||
        event_add(poll, &shutdown_poll) != 0) {
        mch_log(EXTENSION_LOG_WARNING, "cannot set up the main loop");
    } else if (!mch_core_shutdown_requested()) {
        event_base_dispatch(base);
    }
    if (term != NULL)
        event_free(term);
    if (intr != NULL)
        event_free(intr);
    if (poll != NULL)
        event_free(poll);
}

/* Parses the options, starts the workers and listeners, serves until told
 * to stop. */
int main(int argc, char **argv)
{
    struct event_base *base;
    int status = EXIT_FAILURE;

    mch_core_clock_start();
    mch_api_get(); /* fills the handle before anyone else can ask */
    switch (mch_options_parse(argc, argv)) {
    case MCH_OPTIONS_EXIT_OK:
        return EXIT_SUCCESS;
    case MCH_OPTIONS_EXIT_FAIL:
        return EXIT_FAILURE;
    case MCH_OPTIONS_RUN:
        break;
    }
    if (mch_daemon_drop_privileges(mch_settings.user) != 0)
        return EXIT_FAILURE;
    if (mch_settings.daemonize &&
        mch_daemon_start(mch_logger_verbosity() > 0) != 0)
        return EXIT_FAILURE;
    /* From here on a vanished client must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    base = event_base_new();
    if (base == NULL) {
        mch_log(EXTENSION_LOG_WARNING, "cannot create the event base");
        return EXIT_FAILURE;
    }
    mch_api_set_engine(mch_engine_get());
    if (mch_workers_start(mch_settings.threads) == 0) {
        if (start_listening(base) == 0) {
            mch_daemon_ready();
            run(base);
            status = EXIT_SUCCESS;
        }
        mch_listen_close();
        mch_workers_stop();
    }
    if (mch_settings.pidfile != NULL && status == EXIT_SUCCESS)
        unlink(mch_settings.pidfile);
    event_base_free(base);
    return status;
}
