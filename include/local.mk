# include/local.mk: build rules for include/ (included by the top Makefile.am).
# Our declarations of memcached's extension interface (doc/host-interface.md),
# and a check that whatever header set is in use has that layout and types.
noinst_HEADERS += \
	include/memcached/callback.h \
	include/memcached/config_parser.h \
	include/memcached/engine.h \
	include/memcached/engine_common.h \
	include/memcached/extension.h \
	include/memcached/protocol_binary.h \
	include/memcached/server_api.h \
	include/memcached/types.h \
	include/memcached/vbucket.h \
	include/memcached/visibility.h

check_PROGRAMS += include/abi_check
TESTS += include/abi_check
include_abi_check_SOURCES = include/abi_check.c

# The CI stage that builds the tree against these headers installed as a
# separate prefix (scripts/setup-and-test.sh runs it).
EXTRA_DIST += scripts/check-memcached-headers.sh
