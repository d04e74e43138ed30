# include/local.mk: build rules for include/ (included by the top Makefile.am).
# Our declarations of memcached's extension interface (host-abi.md), and a
# check that whatever header set is in use has the documented layout.
noinst_HEADERS += \
	include/memcached/callback.h \
	include/memcached/config_parser.h \
	include/memcached/engine.h \
	include/memcached/engine_common.h \
	include/memcached/extension.h \
	include/memcached/server_api.h \
	include/memcached/types.h

check_PROGRAMS += include/abi_check
TESTS += include/abi_check
include_abi_check_SOURCES = include/abi_check.c
