#!/bin/bash
# ab-run.sh: compares two builds of the server side by side, the way a
# change is held to "no cell worse than before": both servers up at once
# with the same settings, each cell of the matrix, the rate limits and the
# throttle measured on one then the other (the order alternating by
# round), then the hand-off and the contended semaphore. Pairs measured
# back to back share the machine's load, so new/old per round is the
# figure; bench/ab-report.pl prints its median and every round.
#
# usage: bench/ab-run.sh OLD_BUILDDIR NEW_BUILDDIR [OUT.kv]
#   (each BUILDDIR has mchost and .libs/counter.so; the load generators
#   come from NEW_BUILDDIR)
# environment: AB_ROUNDS=5 AB_DURATION=2 (seconds per cell and server)
#   AB_CELLS=REGEX  only the cells whose "WORKLOAD CONNS DEPTH KEYS" line
#                   matches (e.g. '^pair 16 32 '); AB_WAIT=0 skips the
#                   hand-off and the semaphore
# Both servers listen on 127.0.0.1 only and are stopped by pid on exit.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/bench/lib.sh"
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILDDIR NEW_BUILDDIR [OUT.kv]" >&2; exit 2; }
old=$(cd "$1" && pwd) || exit 2
new=$(cd "$2" && pwd) || exit 2
out=${3:-ab.kv}
rounds=${AB_ROUNDS:-5}
dur=${AB_DURATION:-2}
bench=$new/counter-bench
wbench=$new/wait-bench
tmp=$(mktemp -d)
declare -A pid port
cleanup() {
    local v
    for v in "${!pid[@]}"; do kill "${pid[$v]}" 2>/dev/null; wait "${pid[$v]}" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
: >"$out"
# Nothing is throttled: the throttle cells measure the charge itself.
printf 'node.capacity = 4000000000\n' >"$tmp/open.conf"
for v in old new; do
    b=$([ $v = old ] && echo "$old" || echo "$new")
    "$b/mchost" -p 0 -l 127.0.0.1 -F "$tmp/$v.port" -X \
        "$b/.libs/counter.so,counter.enable=true;counter.port=0;counter.buckets=1000000;counter.stat_interval=86400;counter.threads=2;counter.throttle.config=$tmp/open.conf" \
        >"$tmp/$v.log" 2>&1 &
    pid[$v]=$!
    for _ in $(seq 100); do [ -s "$tmp/$v.port" ] && break; sleep 0.05; done
    port[$v]=$(mc_stat "$(cat "$tmp/$v.port" 2>/dev/null)" counter_port)
    [ -n "${port[$v]}" ] || { echo "ab-run: the $v server did not start: $(cat "$tmp/$v.log")" >&2; exit 1; }
done
cells() {
    local c d k kind
    for c in 1 16 64; do for d in 1 32; do for k in 1 1000 100000; do
        echo "pair $c $d $k"
    done; done; done
    echo "one 16 1 1"; echo "one 64 32 1"; echo "get 16 32 1000"
    echo "contended 16 1 1000"; echo "contended 64 32 1000"
    for kind in window gcra; do
        echo "$kind 1 1 1000"; echo "$kind 16 1 1000"
        echo "$kind 64 32 1000"; echo "$kind 64 32 1"
    done
    echo "throttle 1 1 1000"; echo "throttle 16 1 1000"; echo "throttle 64 32 1000"
}
for r in $(seq "$rounds"); do
    order="old new"; [ $((r % 2)) = 0 ] && order="new old"
    while read -r wl c d k; do
        hot=""
        case $wl in window|gcra) [ "$k" = 1 ] && hot=--hot ;; esac
        for v in $order; do
            echo "round=$r ver=$v $("$bench" -p "${port[$v]}" -W "$wl" -c "$c" -d "$d" -k "$k" $hot \
                -t "$dur" -w 0.5 -P "${pid[$v]}" -l "$v" --kv 2>/dev/null)" >>"$out"
        done
    done < <(cells | grep -E -- "${AB_CELLS:-.}")
    [ "${AB_WAIT:-1}" = 0 ] || for v in $order; do
        echo "round=$r ver=$v $("$wbench" -p "${port[$v]}" -W handoff -t 3 -w 0.5 -l "$v" 2>/dev/null)" >>"$out"
        echo "round=$r ver=$v $("$wbench" -p "${port[$v]}" -W semaphore -c 64 -m 4 -t 4 -w 0.5 -l "$v" 2>/dev/null)" >>"$out"
    done
    echo "ab-run: round $r of $rounds done" >&2
done
