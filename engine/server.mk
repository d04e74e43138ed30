# engine/server.mk: build rules for the server and host glue (included by the top Makefile.am).
