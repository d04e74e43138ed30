# fuzz/local.mk: libFuzzer targets (included by the top Makefile.am).
