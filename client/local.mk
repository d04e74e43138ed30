# client/local.mk: build rules of libmccounter, the installed C client
# library (included by the top Makefile.am after protocol/local.mk). The
# protocol codec (libcntproto.la) is linked in whole; the version script
# exports only the mcc_* symbols, so the codec's cnt_* stay private.

lib_LTLIBRARIES = client/libmccounter.la
include_HEADERS = client/mccounter.h
noinst_HEADERS += client/internal.h client/test_client_util.h

client_libmccounter_la_SOURCES = \
	client/client.c \
	client/conn.c \
	client/answers.c \
	client/ops.c \
	client/lease.c \
	client/quota.c \
	client/errors.c \
	client/ketama.c \
	client/servers.c \
	client/md5.c
# The placement sources are compiled again here (libmcchash.la, of
# client/ketama.mk, serves counterctl and the tests) so that they get the
# library's hidden visibility.
# Hidden by default: only what mccounter.h declares is exported, so the
# internal mcc_* helpers (continuum, parser, submit path) stay private.
client_libmccounter_la_CFLAGS = $(AM_CFLAGS) $(VISIBILITY_CFLAGS)
client_libmccounter_la_LIBADD = libcntproto.la
client_libmccounter_la_LDFLAGS = $(AM_LDFLAGS) -version-info 1:0:1 -no-undefined
if HAVE_LD_VERSION_SCRIPT
client_libmccounter_la_LDFLAGS += \
	-Wl,--version-script=$(srcdir)/client/libmccounter.sym
else
client_libmccounter_la_LDFLAGS += -export-symbols-regex '^mcc_'
endif
EXTRA_client_libmccounter_la_DEPENDENCIES = $(srcdir)/client/libmccounter.sym

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = client/mccounter.pc
EXTRA_DIST += client/libmccounter.sym client/mccounter.pc.in

# The header compiles alone, and the library exports only mcc_* (run by
# make check; the script gets the compiler and the paths from here).
TESTS += client/test_exports.sh
EXTRA_DIST += client/test_exports.sh
# The environment of every test (no other directory sets it): the client
# tests find mchost and counter.so as t/ does, and the export check its
# tools and files.
AM_TESTS_ENVIRONMENT = \
	MCHOST='$(abs_top_builddir)/mchost$(EXEEXT)'; \
	COUNTER_SO='$(abs_top_builddir)/.libs/counter.so'; \
	CLIENT_CC='$(CC)'; CLIENT_NM='$(NM)'; \
	CLIENT_HEADER='$(abs_top_srcdir)/client/mccounter.h'; \
	CLIENT_SO='$(abs_top_builddir)/client/.libs/libmccounter.so'; \
	export MCHOST COUNTER_SO CLIENT_CC CLIENT_NM CLIENT_HEADER CLIENT_SO;

if HAVE_CMOCKA
# test_client: refusals and a scripted fake server; test_client_live:
# against mchost. Both share the logbook of test_client_util.c.
check_PROGRAMS += client/test_client client/test_client_live
TESTS += client/test_client client/test_client_live
client_test_client_SOURCES = client/test_client.c client/test_client_util.c
client_test_client_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
client_test_client_LDADD = client/libmccounter.la libcntproto.la \
	$(PTHREAD_LIBS) $(CMOCKA_LIBS)
client_test_client_live_SOURCES = client/test_client_live.c \
	client/test_client_util.c
client_test_client_live_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
client_test_client_live_LDADD = client/libmccounter.la libcntproto.la \
	$(PTHREAD_LIBS) $(CMOCKA_LIBS)
endif

# The manual pages of the library, one per family of functions, and a
# link page per function (doc/man3-links.sh), so that `man mcc_acquire`
# finds the page that declares it.
MCC_MAN3 = doc/mcc_client_new.3 doc/mcc_ops.3 doc/mcc_async.3 \
	doc/mcc_lease.3 doc/mcc_get_lease.3
dist_man_MANS += $(MCC_MAN3)
EXTRA_DIST += doc/man3-links.sh client/test_man3.sh
TESTS += client/test_man3.sh
install-data-hook:
	$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	CC='$(CC)' $(SHELL) '$(srcdir)/doc/man3-links.sh' install \
	  '$(DESTDIR)$(man3dir)' '$(srcdir)/client/mccounter.h' \
	  $(addprefix $(srcdir)/,$(MCC_MAN3))
uninstall-hook:
	CC='$(CC)' $(SHELL) '$(srcdir)/doc/man3-links.sh' uninstall \
	  '$(DESTDIR)$(man3dir)' '$(srcdir)/client/mccounter.h' \
	  $(addprefix $(srcdir)/,$(MCC_MAN3))

# What a user of the installed library does (run by make installcheck,
# hence by make distcheck): pkg-config finds mccounter.pc where make
# install put it, and examples/licence.c builds against the installed
# header and library alone, links, and runs (its usage message, exit 1);
# so does examples/get_lease.c (a refused max_lease, exit 1).
installcheck-local:
	@pcdir='$(DESTDIR)$(pkgconfigdir)'; \
	tmp=`mktemp -d` || exit 1; \
	flags=`PKG_CONFIG_PATH="$$pcdir" $(PKG_CONFIG) --define-variable=prefix='$(DESTDIR)$(prefix)' --cflags --libs mccounter` && \
	$(CC) -std=c11 -o "$$tmp/licence" '$(abs_top_srcdir)/examples/licence.c' $$flags && \
	{ LD_LIBRARY_PATH='$(DESTDIR)$(libdir)' "$$tmp/licence" >/dev/null 2>&1; \
	  test $$? = 1; } && \
	$(CC) -std=c11 -o "$$tmp/get_lease" '$(abs_top_srcdir)/examples/get_lease.c' $$flags && \
	{ LD_LIBRARY_PATH='$(DESTDIR)$(libdir)' "$$tmp/get_lease" -b 0 >/dev/null 2>&1; \
	  test $$? = 1; } && \
	echo "installcheck: examples/licence.c and get_lease.c built with pkg-config mccounter ($$flags)"; \
	rc=$$?; rm -rf "$$tmp"; exit $$rc
