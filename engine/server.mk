# engine/server.mk: build rules for the server and host glue (included by
# the top Makefile.am): libcntserver.la (configuration, listener, workers,
# connections; no memcached types) and the loadable module counter.la.

noinst_LTLIBRARIES += libcntserver.la
libcntserver_la_SOURCES = \
	engine/configuration.c \
	engine/log.c \
	engine/server.c \
	engine/listener.c \
	engine/worker.c \
	engine/connection.c
libcntserver_la_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)
noinst_HEADERS += \
	engine/configuration.h \
	engine/log.h \
	engine/server.h \
	engine/server_int.h \
	engine/connection.h \
	engine/host_glue.h

# The extension: only memcached_extensions_initialize is exported.
memcachedlibdir = $(libdir)/memcached
memcachedlib_LTLIBRARIES = counter.la
counter_la_SOURCES = engine/extension.c engine/host_stats.c
counter_la_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) -fvisibility=hidden
counter_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^memcached_extensions_initialize$$'
counter_la_LIBADD = libcntserver.la libcntengine.la libcntproto.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS)

if HAVE_CMOCKA
SERVER_TESTS = tests/test_configuration tests/test_connection
check_PROGRAMS += $(SERVER_TESTS)
TESTS += $(SERVER_TESTS)

tests_test_configuration_SOURCES = tests/test_configuration.c
tests_test_configuration_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_configuration_LDADD = libcntserver.la $(CMOCKA_LIBS)

tests_test_connection_SOURCES = tests/test_connection.c
tests_test_connection_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_connection_LDADD = libcntserver.la libcntengine.la libcntproto.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS) $(CMOCKA_LIBS)
endif

# The server's documentation (installed in docdir, shipped in the tarball).
dist_doc_DATA += doc/configuration.md doc/operations.md
