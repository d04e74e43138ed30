# fuzz/local.mk: fuzz targets (included by the top Makefile.am).
# With `configure CC=clang --enable-fuzz`, `make fuzz` builds the libFuzzer
# targets (scripts/robustness.sh runs them). Every other build replays the
# committed corpora (seeds and inputs that once found bugs) through the same
# target code under `make check`, with fuzz/replay.c as main().

noinst_HEADERS += fuzz/fuzz.h
EXTRA_DIST += fuzz/corpus fuzz/README.md

if ENABLE_FUZZ
FUZZ_TARGETS = fuzz/fuzz_decode fuzz/fuzz_engine fuzz/fuzz_config \
	fuzz/fuzz_connection fuzz/fuzz_client fuzz/fuzz_throttr \
	fuzz/fuzz_websocket fuzz/fuzz_throttle_json
check_PROGRAMS += $(FUZZ_TARGETS)

# The throttle settings documents (JSON), on their own.
fuzz_fuzz_throttle_json_SOURCES = fuzz/fuzz_throttle_json.c
fuzz_fuzz_throttle_json_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
fuzz_fuzz_throttle_json_LDADD = libcntws.la

# The WebSocket front through a real session (HTTP, frames, JSON), on the
# unit tests' fake clock.
fuzz_fuzz_websocket_SOURCES = fuzz/fuzz_websocket.c tests/engine_fake.c
fuzz_fuzz_websocket_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer $(FAKE_ALLOC_WRAP)
fuzz_fuzz_websocket_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS)

fuzz_fuzz_decode_SOURCES = fuzz/fuzz_decode.c
fuzz_fuzz_decode_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
fuzz_fuzz_decode_LDADD = libcntproto.la

fuzz_fuzz_throttr_SOURCES = fuzz/fuzz_throttr.c
fuzz_fuzz_throttr_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
fuzz_fuzz_throttr_LDADD = libcntproto.la

# The engine target takes its clock and allocation failures from the
# unit tests' doubles (tests/engine_fake.c and its linker wrappers); its
# waiting requests go through the server's sessions (no sockets: only
# session.c and outbuf.c are linked from libcntserver).
fuzz_fuzz_engine_SOURCES = fuzz/fuzz_engine.c tests/engine_fake.c
fuzz_fuzz_engine_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer $(FAKE_ALLOC_WRAP)
fuzz_fuzz_engine_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS)

# The parser is compiled in (own object names) so this target needs nothing
# of the listener library; the core gives it the group set.
fuzz_fuzz_config_SOURCES = fuzz/fuzz_config.c $(CONFIG_PARSER_SOURCES)
fuzz_fuzz_config_CPPFLAGS = $(AM_CPPFLAGS)
fuzz_fuzz_config_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
fuzz_fuzz_config_LDADD = libcntws.la libcntcore.la libcntproto.la

fuzz_fuzz_connection_SOURCES = fuzz/fuzz_connection.c
fuzz_fuzz_connection_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)
fuzz_fuzz_connection_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
fuzz_fuzz_connection_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS)

# The client library is linked statically (-static: the uninstalled
# libtool archive), so that the target is a plain program, not a libtool
# wrapper, and its code is instrumented with the rest.
fuzz_fuzz_client_SOURCES = fuzz/fuzz_client.c
fuzz_fuzz_client_LDFLAGS = $(AM_LDFLAGS) -static -fsanitize=fuzzer
fuzz_fuzz_client_LDADD = client/libmccounter.la libcntproto.la

fuzz: fuzz/fuzz_decode$(EXEEXT) fuzz/fuzz_engine$(EXEEXT) \
	fuzz/fuzz_config$(EXEEXT) fuzz/fuzz_connection$(EXEEXT) \
	fuzz/fuzz_client$(EXEEXT) fuzz/fuzz_throttr$(EXEEXT) \
	fuzz/fuzz_websocket$(EXEEXT) fuzz/fuzz_throttle_json$(EXEEXT)
else
FUZZ_REPLAYS = fuzz/replay_decode fuzz/replay_engine fuzz/replay_config \
	fuzz/replay_connection fuzz/replay_client fuzz/replay_throttr \
	fuzz/replay_websocket fuzz/replay_throttle_json
check_PROGRAMS += $(FUZZ_REPLAYS)
TESTS += $(FUZZ_REPLAYS)

fuzz_replay_decode_SOURCES = fuzz/replay.c fuzz/fuzz_decode.c
fuzz_replay_decode_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_decode"'
fuzz_replay_decode_LDADD = libcntproto.la

fuzz_replay_throttr_SOURCES = fuzz/replay.c fuzz/fuzz_throttr.c
fuzz_replay_throttr_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_throttr"'
fuzz_replay_throttr_LDADD = libcntproto.la

fuzz_replay_throttle_json_SOURCES = fuzz/replay.c fuzz/fuzz_throttle_json.c
fuzz_replay_throttle_json_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_throttle_json"'
fuzz_replay_throttle_json_LDADD = libcntws.la

fuzz_replay_websocket_SOURCES = fuzz/replay.c fuzz/fuzz_websocket.c tests/engine_fake.c
fuzz_replay_websocket_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_websocket"'
fuzz_replay_websocket_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
fuzz_replay_websocket_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS)

fuzz_replay_engine_SOURCES = fuzz/replay.c fuzz/fuzz_engine.c tests/engine_fake.c
fuzz_replay_engine_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_engine"'
fuzz_replay_engine_LDFLAGS = $(AM_LDFLAGS) $(FAKE_ALLOC_WRAP)
fuzz_replay_engine_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(PTHREAD_LIBS)

fuzz_replay_config_SOURCES = fuzz/replay.c fuzz/fuzz_config.c \
	$(CONFIG_PARSER_SOURCES)
fuzz_replay_config_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_config"'
fuzz_replay_config_LDADD = libcntws.la libcntcore.la libcntproto.la

fuzz_replay_connection_SOURCES = fuzz/replay.c fuzz/fuzz_connection.c
fuzz_replay_connection_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_connection"'
fuzz_replay_connection_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS)
fuzz_replay_connection_LDADD = libcntserver.la libcntcore.la libcntproto.la \
	$(LIBEVENT_LIBS) $(PTHREAD_LIBS)

fuzz_replay_client_SOURCES = fuzz/replay.c fuzz/fuzz_client.c
fuzz_replay_client_CPPFLAGS = $(AM_CPPFLAGS) -DCNT_FUZZ_TARGET='"fuzz_client"'
fuzz_replay_client_LDFLAGS = $(AM_LDFLAGS) -static
fuzz_replay_client_LDADD = client/libmccounter.la libcntproto.la

# The program that wrote fuzz/corpus/fuzz_client/ (the target's own file
# with its seed writer as main): built by `make check` so that it keeps
# compiling, run by hand (fuzz/gen_client_seeds DIR) to write the seeds.
check_PROGRAMS += fuzz/gen_client_seeds
fuzz_gen_client_seeds_SOURCES = fuzz/fuzz_client.c
fuzz_gen_client_seeds_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CLIENT_SEEDS
fuzz_gen_client_seeds_LDFLAGS = $(AM_LDFLAGS) -static
fuzz_gen_client_seeds_LDADD = client/libmccounter.la libcntproto.la

fuzz:
	@echo "make fuzz: configure with CC=clang --enable-fuzz to build the libFuzzer targets" >&2; exit 1
endif
.PHONY: fuzz

# Soak and hostile-input suites (t/soak, t/hostile; Perl on the t/lib
# helper). scripts/robustness.sh runs the short versions in CI; here
# `make soak` runs the long soak (SOAK_TIME seconds, default 600) and
# `make hostile` the hostile-input tests, against this build's mchost.
EXTRA_DIST += t/soak/soak.pl t/soak/tenants.pl t/hostile scripts/robustness.sh
SOAK_TIME = 600
ROBUST_ENV = MCHOST=$(abs_top_builddir)/mchost$(EXEEXT) \
	COUNTER_SO=$(abs_top_builddir)/.libs/counter.so

soak: mchost$(EXEEXT) counter.la
	$(ROBUST_ENV) perl $(srcdir)/t/soak/soak.pl --duration $(SOAK_TIME)

hostile: mchost$(EXEEXT) counter.la
	$(ROBUST_ENV) $(PROVE) $(srcdir)/t/hostile/

.PHONY: soak hostile

# Builds every test program without running any (the valgrind stage of
# scripts/robustness.sh runs them itself, under valgrind).
check-programs: $(check_PROGRAMS) $(check_LTLIBRARIES)
.PHONY: check-programs
