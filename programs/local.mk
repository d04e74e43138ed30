# programs/local.mk: build rules for programs/ (included by the top Makefile.am).
