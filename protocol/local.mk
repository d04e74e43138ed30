# protocol/local.mk: build rules for protocol/ (included by the top Makefile.am).
# libcntproto.la is the wire codec (no I/O, no allocation); its cmocka unit
# test lives in tests/test_protocol.c.

noinst_LTLIBRARIES += libcntproto.la
libcntproto_la_SOURCES = \
	protocol/wire.c \
	protocol/decode.c \
	protocol/encode.c \
	protocol/client.c
noinst_HEADERS += \
	protocol/wire.h \
	protocol/decode.h \
	protocol/encode.h \
	protocol/client.h

if HAVE_CMOCKA
check_PROGRAMS += tests/test_protocol
TESTS += tests/test_protocol
tests_test_protocol_SOURCES = tests/test_protocol.c
tests_test_protocol_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_protocol_LDADD = libcntproto.la $(CMOCKA_LIBS)
endif
