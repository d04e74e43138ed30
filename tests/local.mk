# tests/local.mk: build rules for tests/ (included by the top Makefile.am).
