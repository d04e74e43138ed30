# bench/local.mk: build rules for bench/ (included by the top Makefile.am):
# the load generator counter-bench, the floor server counter-floor, the run
# script that writes doc/performance.md, the benchmark of waiting acquisition
# wait-bench, the WebSocket front's ws-bench, the rate limits' engine-level
# microbenchmark limits-micro, the checks callgrind counts limits-ir and
# the timing wheel's wheel-stall (built, not
# run by make check), the Redis side
# of the rate-limit rows redis-bench, the Redis semaphore beside
# wait-bench redis-semaphore, and a short smoke run for make check.
noinst_PROGRAMS += counter-bench counter-floor wait-bench limits-micro \
	redis-bench client-bench ws-bench get-lease-bench settings-bench \
	tenant-bench redis-semaphore wheel-stall limits-ir

counter_bench_SOURCES = bench/counter-bench.c bench/loadgen.c \
	bench/setup.c bench/hist.c bench/procstat.c bench/net.c
counter_bench_LDADD = libcntproto.la $(PTHREAD_LIBS)

counter_floor_SOURCES = bench/counter-floor.c bench/net.c
counter_floor_LDADD = libcntproto.la $(PTHREAD_LIBS)

wait_bench_SOURCES = bench/wait-bench.c bench/setup.c bench/hist.c \
	bench/procstat.c
wait_bench_LDADD = libcntproto.la $(PTHREAD_LIBS)

# The WebSocket front's hand-off and pairs against the binary port's.
ws_bench_SOURCES = bench/ws-bench.c bench/setup.c bench/hist.c
ws_bench_LDADD = libcntproto.la $(PTHREAD_LIBS)

wheel_stall_SOURCES = bench/wheel-stall.c
wheel_stall_LDADD = libcntcore.la

limits_micro_SOURCES = bench/limits-micro.c
limits_micro_LDADD = libcntcore.la libcntproto.la $(PTHREAD_LIBS)
limits_ir_SOURCES = bench/limits-ir.c
limits_ir_LDADD = libcntcore.la libcntproto.la $(PTHREAD_LIBS)

redis_bench_SOURCES = bench/redis-bench.c bench/setup.c bench/hist.c \
	bench/procstat.c bench/net.c
redis_bench_LDADD = libcntproto.la $(PTHREAD_LIBS)

# Tenants on connections: A on 1 connection against B on many.
tenant_bench_SOURCES = bench/tenant-bench.c bench/procstat.c
tenant_bench_LDADD = libcntproto.la

redis_semaphore_SOURCES = bench/redis-semaphore.c bench/setup.c \
	bench/hist.c bench/net.c
redis_semaphore_LDADD = libcntproto.la $(PTHREAD_LIBS)

# counter-bench's pair workload through libmccounter's non-blocking API.
client_bench_SOURCES = bench/client-bench.c bench/setup.c bench/hist.c
client_bench_LDADD = client/libmccounter.la libcntproto.la $(PTHREAD_LIBS)

noinst_HEADERS += bench/bench.h bench/loadgen.h bench/hist.h bench/procstat.h \
	bench/net.h

# The smoke run is started from the top build directory, where it finds
# counter-bench, counter-floor, wait-bench, redis-bench, mchost and
# .libs/counter.so (and redis-server, when installed).
TESTS += bench/smoke.sh
EXTRA_DIST += bench/smoke.sh bench/run-bench.sh bench/lib.sh bench/report.pl \
	bench/ab-run.sh bench/ab-report.pl \
	bench/tenant-run.sh doc/performance-tenants.md doc/performance-tenants.svg \
	bench/lateness.pl \
	bench/profile.sh bench/cgcount.pl bench/cgpercall.pl \
	bench/busiest-listing.py bench/analysis.md \
	bench/hand/throttle-settings.md bench/hand/get-lease.md \
	doc/performance.md doc/performance-ops.png doc/performance-p99.png \
	doc/performance-throttle.png

if HAVE_CMOCKA
check_PROGRAMS += bench/test_hist
TESTS += bench/test_hist
bench_test_hist_SOURCES = bench/test_hist.c bench/hist.c
bench_test_hist_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
bench_test_hist_LDADD = $(CMOCKA_LIBS)
endif

# get_lease with max_lease 1, 10 and 100 against a running server (calls
# per second, round trips per call, the most admitted per 0.9 s and 1 s).
get_lease_bench_SOURCES = bench/get-lease-bench.c
get_lease_bench_LDADD = client/libmccounter.la

# Many tenants' settings by Tenant_set (0x45) against Tenant_set_json
# (0x2a), against a running server with an admin secret.
settings_bench_SOURCES = bench/settings-bench.c
settings_bench_LDADD = client/libmccounter.la
EXTRA_DIST += bench/get_lease_bench.py
