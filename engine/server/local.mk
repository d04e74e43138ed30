# engine/server/local.mk: the counter port, libcntserver.la (included by the
# top Makefile.am): sessions (requests to answers, no sockets), their output
# buffers, connections, workers and their mail, the listener, on libevent.
# Knows the core and the protocol, nothing of the host; its tests are in
# tests/.

noinst_LTLIBRARIES += libcntserver.la
libcntserver_la_SOURCES = \
	engine/server/log.c \
	engine/server/outbuf.c \
	engine/server/session.c \
	engine/server/session_limits.c \
	engine/server/session_waits.c \
	engine/server/session_throttle.c \
	engine/server/session_throttr.c \
	engine/server/session_ws.c \
	engine/server/metrics.c \
	engine/server/live_page.c \
	engine/server/mail.c \
	engine/server/survey.c \
	engine/server/server.c \
	engine/server/listener.c \
	engine/server/worker.c \
	engine/server/connection.c
libcntserver_la_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)
# The WebSocket front's codec and framing come along with the server, so
# everything that links it gets them.
libcntserver_la_LIBADD = libcntws.la $(WSLAY_LIBS)
noinst_HEADERS += \
	engine/server/log.h \
	engine/server/metrics.h \
	engine/server/outbuf.h \
	engine/server/session.h \
	engine/server/session_int.h \
	engine/server/mail.h \
	engine/server/survey.h \
	engine/server/server.h \
	engine/server/server_int.h \
	engine/server/connection.h
