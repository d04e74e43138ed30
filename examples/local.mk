# examples/local.mk: the examples of the client libraries (included by the
# top Makefile.am). The C example is built against the library of this
# tree, the way an installed one is used (#include <mccounter.h>); t/36-
# examples.t runs it and the Python examples against a real host.
noinst_PROGRAMS += examples/licence
examples_licence_SOURCES = examples/licence.c
examples_licence_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client
examples_licence_LDADD = client/libmccounter.la
noinst_PROGRAMS += examples/get_lease
examples_get_lease_SOURCES = examples/get_lease.c
examples_get_lease_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client
examples_get_lease_LDADD = client/libmccounter.la
