# include/local.mk: build rules for include/ (included by the top Makefile.am).
