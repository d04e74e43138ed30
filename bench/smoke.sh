#!/bin/sh
# smoke.sh: a ~1-second smoke run of the benchmark tools for make check:
# starts counter-floor on a free loopback port, drives it with counter-bench
# (pairs and gets, pipelined), checks the report is sane, stops the floor.
set -u
bin=${BENCH_BUILDDIR:-.}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cnt-smoke.XXXXXX") || exit 99
floor_pid=
cleanup() {
    [ -n "$floor_pid" ] && kill "$floor_pid" 2>/dev/null && wait "$floor_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/counter-floor" -l 127.0.0.1 -p 0 -t 2 >"$tmp/floor.out" 2>&1 &
floor_pid=$!
port=
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    port=$(sed -n 's/^port=//p' "$tmp/floor.out")
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || fail "counter-floor printed no port: $(cat "$tmp/floor.out")"

"$bin/counter-bench" -p "$port" -W ping -t 2 || fail "floor does not answer Noop"

# key=value output of one run: extracts a field.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2"; }

check_run() {
    out=$1
    ops=$(field ops "$out"); errors=$(field errors "$out")
    failures=$(field failures "$out"); p99=$(field p99_us "$out")
    [ -n "$ops" ] && [ "$ops" -gt 0 ] || fail "no answers counted: $(cat "$out")"
    [ "$errors" = 0 ] || fail "unexpected statuses: $(cat "$out")"
    [ "$failures" = 0 ] || fail "connections lost: $(cat "$out")"
    awk -v p="$p99" 'BEGIN { exit !(p > 0) }' || fail "no latency: $(cat "$out")"
    echo "ok: $(cat "$out")"
}

"$bin/counter-bench" -p "$port" -c 4 -d 8 -k 100 -t 0.5 -w 0.1 -W pair \
    -P "$floor_pid" -l floor --kv >"$tmp/pair.out" || fail "pair run failed"
check_run "$tmp/pair.out"
"$bin/counter-bench" -p "$port" -c 2 -d 1 -k 100 -t 0.3 -w 0.1 -W get \
    -l floor --kv >"$tmp/get.out" || fail "get run failed"
check_run "$tmp/get.out"
exit 0
