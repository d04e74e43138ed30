# engine/core/local.mk: the counter core, libcntcore.la (included by the top
# Makefile.am): the map and its rules (semaphores, waiting tickets, rate
# limits, tenant throttling), holdings, GC, stats, clock, hash, the timing
# wheel and the set of server-defined groups.
# No sockets, no libevent, no host types; its unit tests are in tests/.

noinst_LTLIBRARIES += libcntcore.la
libcntcore_la_SOURCES = \
	engine/core/clock.c \
	engine/core/hash.c \
	engine/core/holdings.c \
	engine/core/map.c \
	engine/core/table.c \
	engine/core/limits.c \
	engine/core/limits_ttl.c \
	engine/core/limits_window.c \
	engine/core/limits_gcra.c \
	engine/core/limits_check.c \
	engine/core/throttle.c \
	engine/core/gc.c \
	engine/core/stats.c \
	engine/core/wheel.c \
	engine/core/ticket.c \
	engine/core/waits.c \
	engine/core/groups.c \
	engine/core/authlimit.c \
	engine/core/users.c \
	engine/core/leasetop.c
noinst_HEADERS += \
	engine/core/authlimit.h \
	engine/core/users.h \
	engine/core/clock.h \
	engine/core/hash.h \
	engine/core/holdings.h \
	engine/core/map.h \
	engine/core/table.h \
	engine/core/table_int.h \
	engine/core/limits.h \
	engine/core/limits_int.h \
	engine/core/throttle.h \
	engine/core/ticket.h \
	engine/core/gc.h \
	engine/core/gc_int.h \
	engine/core/stats.h \
	engine/core/wheel.h \
	engine/core/groups.h \
	engine/core/leasetop.h
