# client/ketama.mk: build rules of server lists and ketama placement
# (included by the top Makefile.am). libmcchash.la is a convenience
# library: the client library and counterctl link it. Its tests:
# tests/test_servers and tests/test_ketama (cmocka; test_ketama compares
# with libmemcached when configure found it), and tests/ketama_map, the
# placement as a filter for the end-to-end and other clients' tests.

noinst_LTLIBRARIES += client/libmcchash.la
client_libmcchash_la_SOURCES = client/servers.c client/ketama.c client/md5.c
noinst_HEADERS += client/servers.h client/ketama.h client/md5.h

check_PROGRAMS += tests/ketama_map
tests_ketama_map_SOURCES = tests/ketama_map.c
tests_ketama_map_LDADD = client/libmcchash.la client/libmccounter.la

if HAVE_CMOCKA
KETAMA_TESTS = tests/test_servers tests/test_ketama
check_PROGRAMS += $(KETAMA_TESTS)
TESTS += $(KETAMA_TESTS)

tests_test_servers_SOURCES = tests/test_servers.c
tests_test_servers_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_servers_LDADD = client/libmcchash.la $(CMOCKA_LIBS)

tests_test_ketama_SOURCES = tests/test_ketama.c
tests_test_ketama_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_ketama_LDADD = client/libmcchash.la $(CMOCKA_LIBS)
if HAVE_LIBMEMCACHED
tests_test_ketama_CFLAGS += $(LIBMEMCACHED_CFLAGS) -DMCC_TEST_LIBMEMCACHED=1
tests_test_ketama_LDADD += $(LIBMEMCACHED_LIBS)
endif
endif
