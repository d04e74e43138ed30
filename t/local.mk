# t/local.mk: the end-to-end suite (included by the top Makefile.am). `make
# check` runs every t/*.t with prove against this build's mchost, counter.so
# and counterctl; t/20-differential.t also starts Debian's yrmcds when it is
# installed. `make check PROVE_FLAGS=-v` shows each test.

E2E_TESTS = \
	t/01-basic.t \
	t/02-pipeline.t \
	t/03-dump-stats.t \
	t/04-autorelease.t \
	t/05-shared.t \
	t/06-maxconn.t \
	t/07-gc.t \
	t/08-host-stats.t \
	t/09-daemon.t \
	t/10-config-errors.t \
	t/11-counterctl.t \
	t/12-deliberate.t \
	t/13-disabled.t \
	t/14-mchost-cli.t \
	t/15-counterctl-run.t \
	t/16-readme.t \
	t/17-keepalive.t \
	t/20-differential.t \
	t/21-memcached-tool.t \
	t/22-waits.t \
	t/23-waits-shutdown.t \
	t/24-counterctl-wait.t \
	t/25-waits-workers.t \
	t/26-ttl.t \
	t/27-window.t \
	t/28-gcra.t \
	t/29-multi-check.t \
	t/30-counterctl-limits.t \
	t/31-protocol-doc.t \
	t/32-throttle.t \
	t/33-throttle-privileges.t \
	t/34-counterctl-throttle.t \
	t/35-servers.t \
	t/36-examples.t \
	t/37-counterctl-run-tree.t \
	t/38-throttr.t \
	t/39-log.t \
	t/40-websocket.t \
	t/41-websocket-proxy.t \
	t/42-websocket-browser.t \
	t/43-counterctl-top.t \
	t/44-counterctl-top-tty.t \
	t/45-metrics.t \
	t/46-service-files.t \
	t/47-throttle-json.t \
	t/48-tenant-connections.t \
	t/49-lease-list.t \
	t/50-busiest-names.t
EXTRA_DIST += $(E2E_TESTS) t/lib/CounterTest.pm t/lib/CounterDiff.pm \
	t/lib/ThrottrTest.pm t/lib/WsTest.pm contrib/nginx/quota.conf \
	contrib/prometheus/alerts.yml

PROVE_FLAGS =
E2E_ENV = MCHOST=$(abs_top_builddir)/mchost$(EXEEXT) \
	COUNTER_SO=$(abs_top_builddir)/.libs/counter.so \
	COUNTERCTL=$(abs_top_builddir)/counterctl$(EXEEXT) \
	KETAMA_MAP=$(abs_top_builddir)/tests/ketama_map$(EXEEXT) \
	EXAMPLE_LICENCE=$(abs_top_builddir)/examples/licence$(EXEEXT) \
	EXAMPLE_GET_LEASE=$(abs_top_builddir)/examples/get_lease$(EXEEXT) \
	EXAMPLE_GET_LEASE_PY=$(abs_top_srcdir)/examples/get_lease.py

if HAVE_PROVE
check-local: mchost$(EXEEXT) counterctl$(EXEEXT) counter.la \
		tests/ketama_map$(EXEEXT)
	$(E2E_ENV) $(PROVE) $(PROVE_FLAGS) -I$(srcdir)/t/lib $(srcdir)/t/*.t
else
check-local:
	@echo "prove not found: the end-to-end suite in t/ was not run" >&2
endif
.PHONY: check-local
