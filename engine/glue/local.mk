# engine/glue/local.mk: the host glue (included by the top Makefile.am): the
# configuration parser (libcntglue.la, so tests and fuzzers link it alone)
# and the loadable module counter.la, whose entry point builds the core and
# the server from the configuration and feeds the host's stats.

noinst_LTLIBRARIES += libcntglue.la
# The parser's files, also compiled into the config fuzz target.
CONFIG_PARSER_SOURCES = engine/glue/configuration.c \
	engine/glue/config_text.c engine/glue/config_file.c \
	engine/glue/config_values.c engine/glue/config_secret.c \
	engine/glue/config_throttle.c engine/glue/config_users.c
libcntglue_la_SOURCES = $(CONFIG_PARSER_SOURCES)
# A JSON throttle settings file is read by libcntws.la's document parser,
# which whoever links libcntglue.la links too (counter.la through
# libcntserver.la).
noinst_HEADERS += \
	engine/glue/configuration.h engine/glue/config_int.h \
	engine/glue/host_glue.h

# The extension: only memcached_extensions_initialize is exported.
memcachedlibdir = $(libdir)/memcached
memcachedlib_LTLIBRARIES = counter.la
counter_la_SOURCES = engine/glue/extension.c engine/glue/host_stats.c
counter_la_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) -fvisibility=hidden
counter_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^memcached_extensions_initialize$$'
counter_la_LIBADD = libcntglue.la libcntserver.la libcntcore.la \
	libcntproto.la $(LIBEVENT_LIBS) $(PTHREAD_LIBS)

# The server's documentation (installed in docdir, shipped in the tarball).
dist_doc_DATA += doc/configuration.md doc/operations.md doc/websocket.md
