# doc/local.mk: build rules for doc/ (included by the top Makefile.am).
