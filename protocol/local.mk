# protocol/local.mk: build rules for protocol/ (included by the top Makefile.am).
# libcntproto.la is the wire codec (no I/O, no allocation): wire.c holds the
# constants and tables, request.c and response.c each encode and decode one
# direction. Its cmocka unit test lives in tests/test_protocol.c.

noinst_LTLIBRARIES += libcntproto.la
libcntproto_la_SOURCES = \
	protocol/wire.c \
	protocol/request.c \
	protocol/response.c
noinst_HEADERS += \
	protocol/wire.h \
	protocol/request.h \
	protocol/response.h

if HAVE_CMOCKA
check_PROGRAMS += tests/test_protocol
TESTS += tests/test_protocol
tests_test_protocol_SOURCES = tests/test_protocol.c
tests_test_protocol_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_protocol_LDADD = libcntproto.la $(CMOCKA_LIBS)
endif
