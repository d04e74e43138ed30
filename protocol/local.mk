# protocol/local.mk: build rules for protocol/ (included by the top Makefile.am).
# libcntproto.la is the wire codec (no I/O, no allocation): wire.c holds the
# constants and tables, request.c and response.c each encode and decode one
# direction; throttr.c is the codec of the Throttr front. Its unit tests are built by tests/local.mk.

noinst_LTLIBRARIES += libcntproto.la
libcntproto_la_SOURCES = \
	protocol/wire.c \
	protocol/duration.c \
	protocol/request.c \
	protocol/response.c \
	protocol/throttr.c
noinst_HEADERS += \
	protocol/wire.h \
	protocol/duration.h \
	protocol/request.h \
	protocol/response.h \
	protocol/throttr.h

# Every opcode of the wire table reaches the C client and the Python
# protocol module and clients (scripts/check-opcodes.pl says which misses
# what).
TESTS += scripts/check-opcodes.pl
EXTRA_DIST += scripts/check-opcodes.pl
# The WebSocket front's codec (the upgrade request, the handshake, the quota
# API's JSON messages; the throttle settings documents) is a library of its own: it needs jansson and
# libcrypto, which the clients linking libcntproto.la must not.
noinst_LTLIBRARIES += libcntws.la
libcntws_la_SOURCES = protocol/ws_quota.c protocol/throttle_json.c
libcntws_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCRYPTO_CFLAGS)
libcntws_la_LIBADD = $(JANSSON_LIBS) $(LIBCRYPTO_LIBS)
noinst_HEADERS += protocol/ws_quota.h protocol/throttle_json.h
