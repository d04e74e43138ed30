#!/bin/sh
# robustness.sh: the robustness stages CI runs after the main tests, each in
# its own build directory under _build/: unit tests and the t/ suite under
# ASan+UBSan, the concurrency tests under TSan, valgrind memcheck on the unit
# tests, the libFuzzer targets for a bounded time, the short soak and the
# hostile-input tests (both against the sanitized mchost and counter.so).
#
# Usage: scripts/robustness.sh [asan] [tsan] [valgrind] [fuzz] [soak] [hostile]
# (no argument: all, in that order). Environment: FUZZ_TIME (seconds per
# fuzz target, default 60), SOAK_TIME (seconds, default 25), JOBS (make -j).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
JOBS=${JOBS:-$(nproc)}
FUZZ_TIME=${FUZZ_TIME:-60}
SOAK_TIME=${SOAK_TIME:-25}
stages=${*:-asan tsan valgrind fuzz soak hostile}

# Sanitizer behaviour: stop at the first report, and fail the process.
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$top/scripts/tsan.supp:print_suppressions=0}
export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS

say() { printf '\n=== robustness: %s\n' "$*"; }

[ -x configure ] || autoreconf -fi

# configure_in DIR ARGS...: (re)configures a build directory when needed.
configure_in() {
    dir=$1; shift
    mkdir -p "_build/$dir"
    if [ ! -f "_build/$dir/Makefile" ] ||
       [ "_build/$dir/config.status" -ot configure ]; then
        (cd "_build/$dir" && ../../configure --enable-werror "$@" >configure.out)
    fi
}

# The host and extension of a build directory, for the Perl tests.
host_env() {
    MCHOST=$top/_build/$1/mchost
    COUNTER_SO=$top/_build/$1/.libs/counter.so
    export MCHOST COUNTER_SO
}

stage_asan() {
    say "unit tests and t/ suite under ASan+UBSan (_build/asan)"
    configure_in asan --enable-sanitizers
    make -C _build/asan -j"$JOBS" >/dev/null
    make -C _build/asan -j"$JOBS" check
}

stage_tsan() {
    say "concurrency tests under TSan (_build/tsan)"
    configure_in tsan --enable-tsan
    make -C _build/tsan -j"$JOBS" tests/test_concurrency tests/test_waits \
        tests/test_limits tests/test_throttle
    # TSan needs the address space layout it was built for.
    setarch "$(uname -m)" -R _build/tsan/tests/test_concurrency
    setarch "$(uname -m)" -R _build/tsan/tests/test_waits
    setarch "$(uname -m)" -R _build/tsan/tests/test_limits
    setarch "$(uname -m)" -R _build/tsan/tests/test_throttle
    say "short soak against the TSan-built host (worker and GC threads)"
    make -C _build/tsan -j"$JOBS" mchost counter.la >/dev/null
    host_env tsan
    setarch "$(uname -m)" -R perl t/soak/soak.pl --duration 10 --conns 60
}

stage_valgrind() {
    say "unit tests under valgrind memcheck (_build/valgrind)"
    configure_in valgrind
    make -C _build/valgrind -j"$JOBS" check-programs >/dev/null
    cd _build/valgrind
    for t in tests/test_* fuzz/replay_* programs/mchost/test_*; do
        case $t in *.o|*.log|*.trs|*.c) continue ;; esac
        [ -x "$t" ] || continue
        echo "valgrind $t"
        srcdir=$top ./libtool --mode=execute valgrind -q --error-exitcode=99 \
            --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --track-fds=no "./$t" >"$t.valgrind.log" 2>&1 ||
            { cat "$t.valgrind.log"; exit 1; }
    done
    cd "$top"
}

stage_fuzz() {
    say "libFuzzer targets, $FUZZ_TIME s each (_build/fuzz)"
    if ! command -v clang >/dev/null; then
        echo "robustness: clang is missing (apt-get install clang libclang-rt-14-dev)" >&2
        exit 1
    fi
    configure_in fuzz --enable-fuzz CC=clang
    make -C _build/fuzz -j"$JOBS" fuzz >/dev/null
    total=0
    for t in fuzz_decode fuzz_engine fuzz_config fuzz_connection fuzz_client \
             fuzz_throttr fuzz_throttle_json fuzz_websocket; do
        work=_build/fuzz/fuzz/work/$t
        art=_build/fuzz/fuzz/artifacts/$t/
        mkdir -p "$work" "$art"
        log=_build/fuzz/fuzz/$t.log
        if ! "_build/fuzz/fuzz/$t" -max_total_time="$FUZZ_TIME" -timeout=10 \
               -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" \
               "$work" "fuzz/corpus/$t" >"$log" 2>&1; then
            tail -n 60 "$log"
            echo "robustness: $t failed; the input is in $art" >&2
            exit 1
        fi
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "$t: ${n:-0} executions"
        total=$((total + ${n:-0}))
    done
    echo "fuzz: $total executions in all"
}

stage_soak() {
    say "soak with faults, $SOAK_TIME s, against the ASan build"
    configure_in asan --enable-sanitizers
    make -C _build/asan -j"$JOBS" mchost counter.la >/dev/null
    host_env asan
    # ASan keeps up to 256 MiB of freed memory in quarantine, which would
    # hide whether RSS returns to its baseline: keep the quarantine small.
    ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16" \
        perl t/soak/soak.pl --duration "$SOAK_TIME"
    say "soak of tenants on connections (users, every front), $SOAK_TIME s"
    perl t/soak/tenants.pl --duration "$SOAK_TIME"
}

stage_hostile() {
    say "hostile input, against the ASan build"
    configure_in asan --enable-sanitizers
    make -C _build/asan -j"$JOBS" mchost counter.la >/dev/null
    host_env asan
    prove -v t/hostile/
    # The configuration-file cases run the host under ulimit -v, which ASan
    # cannot live with: run them again against the plain build.
    configure_in valgrind
    make -C _build/valgrind -j"$JOBS" mchost counter.la >/dev/null
    host_env valgrind
    prove -v t/hostile/10-config-files.t
}

for s in $stages; do
    case $s in
    asan|tsan|valgrind|fuzz|soak|hostile) "stage_$s" ;;
    *) echo "robustness: unknown stage '$s'" >&2; exit 2 ;;
    esac
done
say "all stages passed: $stages"
