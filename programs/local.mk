# programs/local.mk: build rules for programs/ (included by the top Makefile.am).

## mchost: the bundled memcached-compatible host (owner: host).
# Everything but main() is a convenience library so unit tests link it.
noinst_LTLIBRARIES += programs/mchost/libmchost.la
programs_mchost_libmchost_la_SOURCES = \
	programs/mchost/api.c programs/mchost/conn.c programs/mchost/cookie.c \
	programs/mchost/core.c programs/mchost/daemon.c \
	programs/mchost/extensions.c programs/mchost/listen.c \
	programs/mchost/logger.c programs/mchost/options.c \
	programs/mchost/parse_config.c programs/mchost/settings.c \
	programs/mchost/stats.c programs/mchost/stub_engine.c \
	programs/mchost/text.c programs/mchost/workers.c
# Hidden visibility as in the real host: extensions must not bind to our
# symbols, only to the tables they are handed.
programs_mchost_libmchost_la_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) \
	-fvisibility=hidden
noinst_HEADERS += \
	programs/mchost/api.h programs/mchost/conn.h programs/mchost/cookie.h \
	programs/mchost/core.h programs/mchost/daemon.h \
	programs/mchost/extensions.h programs/mchost/listen.h \
	programs/mchost/logger.h programs/mchost/options.h \
	programs/mchost/parse_config.h programs/mchost/settings.h \
	programs/mchost/stats.h programs/mchost/stub_engine.h \
	programs/mchost/text.h programs/mchost/workers.h

bin_PROGRAMS += mchost
mchost_SOURCES = programs/mchost/main.c
mchost_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) -fvisibility=hidden
mchost_LDADD = programs/mchost/libmchost.la $(LIBEVENT_LIBS) $(PTHREAD_LIBS)

# A test extension for mchost's own check: registers a daemon, parses its
# config, logs, counts events and wraps the engine's get_stats.
check_LTLIBRARIES += programs/mchost/ext_dummy.la
programs_mchost_ext_dummy_la_SOURCES = programs/mchost/ext_dummy.c
programs_mchost_ext_dummy_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere

# End-to-end check of mchost with ext_dummy (Perl, loopback only).
TESTS += programs/mchost/mchost.test
EXTRA_DIST += programs/mchost/mchost.test

if HAVE_CMOCKA
MCHOST_UNIT_TESTS = programs/mchost/test_parse_config programs/mchost/test_text
check_PROGRAMS += $(MCHOST_UNIT_TESTS)
TESTS += $(MCHOST_UNIT_TESTS)
programs_mchost_test_parse_config_SOURCES = programs/mchost/test_parse_config.c
programs_mchost_test_parse_config_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
programs_mchost_test_parse_config_LDADD = programs/mchost/libmchost.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS) $(CMOCKA_LIBS)
programs_mchost_test_text_SOURCES = programs/mchost/test_text.c
programs_mchost_test_text_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) \
	$(CMOCKA_CFLAGS)
programs_mchost_test_text_LDADD = programs/mchost/libmchost.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS) $(CMOCKA_LIBS)
endif



# ---- counterctl (owner: e2e engineer; keep this block when editing above) ----
# counterctl: command-line client of the counter protocol (doc/counterctl.1).
bin_PROGRAMS += counterctl
counterctl_SOURCES = programs/counterctl.c programs/counterctl_net.c \
	programs/counterctl_args.c programs/counterctl_tree.c \
	programs/counterctl_basic.c programs/counterctl_hold.c \
	programs/counterctl_limits.c programs/counterctl_throttle.c \
	programs/counterctl_top.c programs/counterctl_top_view.c
counterctl_LDADD = client/libmcchash.la libcntproto.la
noinst_HEADERS += programs/counterctl.h programs/counterctl_cmd.h \
	programs/counterctl_top.h

if HAVE_CMOCKA
# Its argument parsers (durations with units), without a server.
check_PROGRAMS += programs/test_counterctl_args
TESTS += programs/test_counterctl_args
programs_test_counterctl_args_SOURCES = programs/test_counterctl_args.c \
	programs/counterctl_args.c
programs_test_counterctl_args_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
programs_test_counterctl_args_LDADD = client/libmcchash.la libcntproto.la \
	$(CMOCKA_LIBS)
# top's tables and report text, without a server.
check_PROGRAMS += programs/test_counterctl_top
TESTS += programs/test_counterctl_top
programs_test_counterctl_top_SOURCES = programs/test_counterctl_top.c \
	programs/counterctl_top_view.c
programs_test_counterctl_top_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
programs_test_counterctl_top_LDADD = libcntproto.la $(CMOCKA_LIBS)
endif
# ---- end counterctl ----
