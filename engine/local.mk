# engine/local.mk: build rules for engine/ (included by the top Makefile.am).
