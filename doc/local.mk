# doc/local.mk: build rules for doc/ (included by the top Makefile.am).
dist_man_MANS += doc/mchost.1
