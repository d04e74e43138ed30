# tests/local.mk: build rules of the cmocka unit tests in tests/ (included by
# the top Makefile.am): one test program per source file of the protocol
# and engine layers, each linking only the layers it needs.
# tests/engine_fake.c holds the fakes they share (clock, allocator with
# failure injection).

noinst_HEADERS += tests/engine_fake.h tests/proto_helpers.h tests/table_hooks.h

# Every program that links tests/engine_fake.c links with these: the
# linker sends the allocation calls of our own (static) objects to its
# wrappers, the one way tests make allocations fail (see engine_fake.h).
FAKE_ALLOC_WRAP = -Wl,--wrap=malloc -Wl,--wrap=calloc \
	-Wl,--wrap=realloc -Wl,--wrap=aligned_alloc -Wl,--wrap=free

if HAVE_CMOCKA
UNIT_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)

## protocol: one program per protocol/ source, sharing the fixture helpers
## (and the encoders only tests use) in tests/proto_helpers.c
PROTO_TESTS = tests/test_wire tests/test_request tests/test_response \
	tests/test_duration tests/test_throttr tests/test_ws_quota \
	tests/test_throttle_json
check_PROGRAMS += $(PROTO_TESTS)
TESTS += $(PROTO_TESTS)

PROTO_TEST_LDADD = libcntproto.la $(CMOCKA_LIBS)

tests_test_wire_SOURCES = tests/test_wire.c
tests_test_wire_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_wire_LDADD = $(PROTO_TEST_LDADD)

# The duration cases live in a data file that the Python client's test
# reads too.
tests_test_duration_SOURCES = tests/test_duration.c
tests_test_duration_CFLAGS = $(UNIT_TEST_CFLAGS) \
	-DDURATIONS_FILE='"$(abs_top_srcdir)/tests/durations.txt"'
tests_test_duration_LDADD = $(PROTO_TEST_LDADD)
EXTRA_DIST += tests/durations.txt

tests_test_request_SOURCES = tests/test_request.c tests/proto_helpers.c
tests_test_request_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_request_LDADD = $(PROTO_TEST_LDADD)

tests_test_response_SOURCES = tests/test_response.c tests/proto_helpers.c
tests_test_response_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_response_LDADD = $(PROTO_TEST_LDADD)

tests_test_throttr_SOURCES = tests/test_throttr.c
tests_test_throttr_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_throttr_LDADD = $(PROTO_TEST_LDADD)

tests_test_ws_quota_SOURCES = tests/test_ws_quota.c
tests_test_ws_quota_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_ws_quota_LDADD = libcntws.la $(CMOCKA_LIBS)

tests_test_throttle_json_SOURCES = tests/test_throttle_json.c
tests_test_throttle_json_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_throttle_json_LDADD = libcntws.la $(CMOCKA_LIBS)

## engine/core: no sockets, no libevent; one test program per source file
CORE_TESTS = \
	tests/test_clock \
	tests/test_hash \
	tests/test_holdings \
	tests/test_map \
	tests/test_table \
	tests/test_gc \
	tests/test_stats \
	tests/test_wheel \
	tests/test_leasetop \
	tests/test_groups \
	tests/test_ticket \
	tests/test_waits \
	tests/test_limits \
	tests/test_throttle \
	tests/test_authlimit \
	tests/test_concurrency
check_PROGRAMS += $(CORE_TESTS)
TESTS += $(CORE_TESTS)
CORE_TEST_LDADD = libcntcore.la libcntproto.la $(PTHREAD_LIBS) $(CMOCKA_LIBS)
CORE_TEST_LINK = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)

tests_test_clock_SOURCES = tests/test_clock.c tests/engine_fake.c
tests_test_clock_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_clock_LDFLAGS = $(CORE_TEST_LINK)
tests_test_clock_LDADD = $(CORE_TEST_LDADD)

tests_test_hash_SOURCES = tests/test_hash.c
tests_test_hash_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_hash_LDADD = $(CORE_TEST_LDADD)

tests_test_holdings_SOURCES = tests/test_holdings.c tests/engine_fake.c
tests_test_holdings_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_holdings_LDFLAGS = $(CORE_TEST_LINK)
tests_test_holdings_LDADD = $(CORE_TEST_LDADD)

tests_test_map_SOURCES = tests/test_map.c tests/engine_fake.c
tests_test_map_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_map_LDFLAGS = $(CORE_TEST_LINK)
tests_test_map_LDADD = $(CORE_TEST_LDADD)

tests_test_limits_SOURCES = tests/test_limits.c tests/engine_fake.c
tests_test_limits_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_limits_LDFLAGS = $(CORE_TEST_LINK)
tests_test_limits_LDADD = $(CORE_TEST_LDADD)

tests_test_authlimit_SOURCES = tests/test_authlimit.c tests/engine_fake.c
tests_test_authlimit_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_authlimit_LDFLAGS = $(CORE_TEST_LINK)
tests_test_authlimit_LDADD = $(CORE_TEST_LDADD)

tests_test_throttle_SOURCES = tests/test_throttle.c tests/engine_fake.c
tests_test_throttle_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_throttle_LDFLAGS = $(CORE_TEST_LINK)
tests_test_throttle_LDADD = $(CORE_TEST_LDADD)

tests_test_table_SOURCES = tests/test_table.c tests/engine_fake.c
tests_test_table_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_table_LDFLAGS = $(CORE_TEST_LINK)
tests_test_table_LDADD = $(CORE_TEST_LDADD)

tests_test_wheel_SOURCES = tests/test_wheel.c tests/engine_fake.c
tests_test_wheel_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_wheel_LDFLAGS = $(CORE_TEST_LINK)
tests_test_wheel_LDADD = $(CORE_TEST_LDADD)

tests_test_leasetop_SOURCES = tests/test_leasetop.c tests/engine_fake.c
tests_test_leasetop_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_leasetop_LDFLAGS = $(CORE_TEST_LINK)
tests_test_leasetop_LDADD = $(CORE_TEST_LDADD)

tests_test_groups_SOURCES = tests/test_groups.c tests/engine_fake.c
tests_test_groups_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_groups_LDFLAGS = $(CORE_TEST_LINK)
tests_test_groups_LDADD = $(CORE_TEST_LDADD)

tests_test_gc_SOURCES = tests/test_gc.c tests/engine_fake.c
tests_test_gc_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_gc_LDFLAGS = $(CORE_TEST_LINK)
tests_test_gc_LDADD = $(CORE_TEST_LDADD)

tests_test_stats_SOURCES = tests/test_stats.c tests/engine_fake.c
tests_test_stats_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_stats_LDFLAGS = $(CORE_TEST_LINK)
tests_test_stats_LDADD = $(CORE_TEST_LDADD)

tests_test_ticket_SOURCES = tests/test_ticket.c tests/engine_fake.c
tests_test_ticket_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_ticket_LDFLAGS = $(CORE_TEST_LINK)
tests_test_ticket_LDADD = $(CORE_TEST_LDADD)

tests_test_waits_SOURCES = tests/test_waits.c tests/engine_fake.c
tests_test_waits_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_waits_LDFLAGS = $(CORE_TEST_LINK)
tests_test_waits_LDADD = $(CORE_TEST_LDADD)

tests_test_concurrency_SOURCES = tests/test_concurrency.c tests/engine_fake.c
tests_test_concurrency_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_concurrency_LDFLAGS = $(CORE_TEST_LINK)
tests_test_concurrency_LDADD = $(CORE_TEST_LDADD)

## engine/server: sessions, output buffers and mailboxes on their own (no
## sockets); then connections, workers, the listener and the server over
## real loopback sockets.
SERVER_TEST_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS) $(CMOCKA_LIBS)
SERVER_TESTS = tests/test_outbuf tests/test_session tests/test_mail \
	tests/test_server tests/test_oom tests/test_fronts tests/test_metrics
check_PROGRAMS += $(SERVER_TESTS)
TESTS += $(SERVER_TESTS)

# Their allocation failures come from -Wl,--wrap, which reaches only our
# static objects (never libevent's or libc's own calls).
tests_test_outbuf_SOURCES = tests/test_outbuf.c tests/engine_fake.c
tests_test_outbuf_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_outbuf_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_outbuf_LDADD = $(SERVER_TEST_LDADD)

tests_test_fronts_SOURCES = tests/test_fronts.c tests/engine_fake.c
tests_test_fronts_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_fronts_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_fronts_LDADD = $(SERVER_TEST_LDADD)

tests_test_metrics_SOURCES = tests/test_metrics.c tests/engine_fake.c
tests_test_metrics_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_metrics_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_metrics_LDADD = $(SERVER_TEST_LDADD)

tests_test_session_SOURCES = tests/test_session.c tests/engine_fake.c
tests_test_session_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_session_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_session_LDADD = $(SERVER_TEST_LDADD)

tests_test_mail_SOURCES = tests/test_mail.c tests/engine_fake.c
tests_test_mail_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_mail_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_mail_LDADD = $(SERVER_TEST_LDADD)

tests_test_server_SOURCES = tests/test_server.c
tests_test_server_CFLAGS = $(UNIT_TEST_CFLAGS) $(LIBEVENT_CFLAGS)
tests_test_server_LDADD = $(SERVER_TEST_LDADD)

# Every allocation of the connection path fails in turn, through the fake
# allocator (-Wl,--wrap reaches only our static objects).
tests_test_oom_SOURCES = tests/test_oom.c tests/engine_fake.c
tests_test_oom_CFLAGS = $(UNIT_TEST_CFLAGS) $(LIBEVENT_CFLAGS)
tests_test_oom_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_oom_LDADD = $(SERVER_TEST_LDADD)

## engine/glue
# The parser's allocation failures (its group set) come from the fake
# allocator, like the core's.
check_PROGRAMS += tests/test_configuration
TESTS += tests/test_configuration
tests_test_configuration_SOURCES = tests/test_configuration.c \
	tests/engine_fake.c
tests_test_configuration_CFLAGS = $(UNIT_TEST_CFLAGS)
tests_test_configuration_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
tests_test_configuration_LDADD = libcntglue.la libcntws.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS) $(CMOCKA_LIBS)

# The table of keys against doc/configuration.md, which it reads.
check_PROGRAMS += tests/test_config_keys
TESTS += tests/test_config_keys
tests_test_config_keys_SOURCES = tests/test_config_keys.c
tests_test_config_keys_CFLAGS = $(UNIT_TEST_CFLAGS) \
	-DCONFIG_DOC='"$(abs_top_srcdir)/doc/configuration.md"'
tests_test_config_keys_LDADD = libcntglue.la libcntws.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS) $(CMOCKA_LIBS)
endif
