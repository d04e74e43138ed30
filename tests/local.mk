# tests/local.mk: build rules for tests/ (included by the top Makefile.am).

## protocol unit tests
# One cmocka program per protocol/ source: test_wire, test_request and
# test_response, sharing the fixture helpers (and the encoders only tests
# use) in tests/proto_helpers.c.
noinst_HEADERS += tests/proto_helpers.h

if HAVE_CMOCKA
PROTO_TESTS = tests/test_wire tests/test_request tests/test_response
check_PROGRAMS += $(PROTO_TESTS)
TESTS += $(PROTO_TESTS)

PROTO_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
PROTO_TEST_LDADD = libcntproto.la $(CMOCKA_LIBS)

tests_test_wire_SOURCES = tests/test_wire.c
tests_test_wire_CFLAGS = $(PROTO_TEST_CFLAGS)
tests_test_wire_LDADD = $(PROTO_TEST_LDADD)

tests_test_request_SOURCES = tests/test_request.c tests/proto_helpers.c
tests_test_request_CFLAGS = $(PROTO_TEST_CFLAGS)
tests_test_request_LDADD = $(PROTO_TEST_LDADD)

tests_test_response_SOURCES = tests/test_response.c tests/proto_helpers.c
tests_test_response_CFLAGS = $(PROTO_TEST_CFLAGS)
tests_test_response_LDADD = $(PROTO_TEST_LDADD)
endif
