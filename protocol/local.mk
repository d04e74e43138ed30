# protocol/local.mk: build rules for protocol/ (included by the top Makefile.am).
