# engine/local.mk: build rules for engine/ (included by the top Makefile.am):
# the counter core libcntengine.la (no sockets, no libevent) and its
# cmocka unit tests.

noinst_LTLIBRARIES += libcntengine.la
libcntengine_la_SOURCES = \
	engine/clock.c \
	engine/hash.c \
	engine/holdings.c \
	engine/table.c \
	engine/gc.c \
	engine/stats.c
noinst_HEADERS += \
	engine/clock.h \
	engine/hash.h \
	engine/holdings.h \
	engine/table.h \
	engine/gc.h \
	engine/stats.h \
	tests/engine_fake.h

if HAVE_CMOCKA
ENGINE_TESTS = \
	tests/test_hash \
	tests/test_holdings \
	tests/test_table \
	tests/test_gc \
	tests/test_stats \
	tests/test_concurrency
check_PROGRAMS += $(ENGINE_TESTS)
TESTS += $(ENGINE_TESTS)

ENGINE_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
ENGINE_TEST_LDADD = libcntengine.la $(PTHREAD_LIBS) $(CMOCKA_LIBS)

tests_test_hash_SOURCES = tests/test_hash.c
tests_test_hash_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_hash_LDADD = $(ENGINE_TEST_LDADD)

tests_test_holdings_SOURCES = tests/test_holdings.c tests/engine_fake.c
tests_test_holdings_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_holdings_LDADD = $(ENGINE_TEST_LDADD)

tests_test_table_SOURCES = tests/test_table.c tests/engine_fake.c
tests_test_table_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_table_LDADD = $(ENGINE_TEST_LDADD)

tests_test_gc_SOURCES = tests/test_gc.c tests/engine_fake.c
tests_test_gc_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_gc_LDADD = $(ENGINE_TEST_LDADD)

tests_test_stats_SOURCES = tests/test_stats.c tests/engine_fake.c
tests_test_stats_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_stats_LDADD = $(ENGINE_TEST_LDADD)

tests_test_concurrency_SOURCES = tests/test_concurrency.c tests/engine_fake.c
tests_test_concurrency_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_concurrency_LDADD = $(ENGINE_TEST_LDADD)
endif
