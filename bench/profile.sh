#!/bin/bash
# profile.sh: the "Method" measurements of doc/performance.md:
# system calls per request (strace -c on the running server), user-space
# instructions and allocations per request (valgrind --tool=callgrind,
# instrumentation switched on only around a measured run, after a warm-up
# run that created every counter), and a perf sampling profile, for our
# server and the floor. Prints key=value lines on stdout; a tool that is
# missing (or perf without permission) just leaves its lines out.
#
# usage: bench/profile.sh BUILDDIR      (run-bench.sh calls it)
# environment: PROFILE_SECONDS=2 (per measured run)
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
bench="$build/counter-bench"
secs=${PROFILE_SECONDS:-2}
. "$src/bench/lib.sh"
bench_tmp profile
srv_pid="" srv_port=""
log() { echo "profile: $*" >&2; }

# start NAME [PREFIX...]: starts ours or the floor (under PREFIX, e.g.
# valgrind); sets srv_pid and srv_port.
start() {
    local name=$1 d="$tmp/$1.$RANDOM"
    shift
    mkdir -p "$d"
    if [ "$name" = floor ]; then
        "$@" "$build/counter-floor" -l 127.0.0.1 -p 0 -t 2 >"$d/out" 2>"$d/err" &
        srv_pid=$!; pids="$pids $srv_pid"
        for _ in $(seq 200); do
            srv_port=$(sed -n 's/^port=//p' "$d/out")
            [ -n "$srv_port" ] && break
            sleep 0.05
        done
    else
        "$@" "$build/mchost" -p 0 -l 127.0.0.1 -F "$d/port" -X \
            "$build/.libs/counter.so,counter.enable=true;counter.port=0;counter.buckets=1000000;counter.stat_interval=86400" \
            >"$d/out" 2>"$d/err" &
        srv_pid=$!; pids="$pids $srv_pid"
        for _ in $(seq 400); do [ -s "$d/port" ] && break; sleep 0.05; done
        srv_port=$(mc_stat "$(cat "$d/port" 2>/dev/null)" counter_port 5)
    fi
    [ -n "$srv_port" ] && "$bench" -p "$srv_port" -W ping -t 20
}

stop() {
    kill "$srv_pid" 2>/dev/null
    wait "$srv_pid" 2>/dev/null
    srv_pid=""
}

# One measured run without warm-up; prints the number of answers.
run_cell() {
    "$bench" -p "$srv_port" -W pair $1 -t "$secs" -w 0 --kv |
        sed -n 's/.* ops=\([0-9]*\) .*/\1/p'
}

cells=("-c 1 -d 1 -k 1000" "-c 16 -d 1 -k 1000" "-c 16 -d 32 -k 1000")

# System calls per request: strace -c -f attached for one run.
profile_syscalls() {
    local name=$1 cell ops
    command -v strace >/dev/null || { log "no strace: syscalls skipped"; return; }
    start "$name" || { log "$name did not start"; return; }
    for cell in "${cells[@]}"; do
        strace -c -f -p "$srv_pid" -o "$tmp/strace.out" 2>/dev/null &
        local sp=$!
        sleep 0.5
        ops=$(run_cell "$cell")
        sleep 0.2
        kill -INT "$sp"; wait "$sp"
        awk -v n="$ops" -v s="$name" -v c="$cell" '
            $NF != "total" && $4 ~ /^[0-9]+$/ { calls[$NF] = $4 }
            $NF == "total" { total = $3 }
            END {
                split(c, a, " ")
                printf "server=%s profile=syscalls conns=%s depth=%s keys=%s requests=%d", s, a[2], a[4], a[6], n
                for (k in calls) printf " %s=%d", k, calls[k]
                printf " total=%d\n", total
            }' "$tmp/strace.out"
    done
    stop
}

# Instructions and allocation calls per request: callgrind, collecting only
# during the measured run (a first run creates the counters).
profile_callgrind() {
    local name=$1 cell ops out
    command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
        { log "no valgrind: callgrind skipped"; return; }
    for cell in "${cells[@]:1}"; do
        out="$tmp/cg.$name.out"
        rm -f "$out"
        start "$name" valgrind --tool=callgrind --instr-atstart=no \
            --callgrind-out-file="$out" || { log "$name under valgrind did not start"; stop; return; }
        run_cell "$cell" >/dev/null           # warm-up: counters exist now
        # The server's start-up GC sweep (1 s after start) must be over.
        sleep 2
        callgrind_control -i on "$srv_pid" >/dev/null
        ops=$(run_cell "$cell")
        callgrind_control -i off "$srv_pid" >/dev/null
        stop
        perl "$src/bench/cgcount.pl" "$out" |
            sed "s/^/server=$name profile=callgrind $(echo "$cell" |
                awk '{ printf "conns=%s depth=%s keys=%s", $2, $4, $6 }') requests=$ops /"
    done
}

# Where the time goes: perf sampling (cpu-clock works in VMs without PMU).
profile_perf() {
    command -v perf >/dev/null || { log "no perf: sampling skipped"; return; }
    start ours || { stop; return; }
    "$bench" -p "$srv_port" -W pair -c 64 -d 32 -k 100000 -t $((secs + 2)) -w 0.5 >/dev/null &
    local bp=$!
    sleep 1
    if perf record -e cpu-clock -F 2000 -g -p "$srv_pid" -o "$tmp/perf.data" \
            -- sleep "$secs" >/dev/null 2>&1; then
        perf report -i "$tmp/perf.data" --no-children --sort dso,sym --stdio \
            -g none 2>/dev/null | awk '/^ +[0-9.]+%/ && n < 12 {
                n++; pct = $1; dso = $2; $1 = ""; $2 = ""; $3 = ""
                sub(/^ +/, ""); gsub(/ /, "_")
                printf "server=ours profile=perf rank=%d share=%s dso=%s sym=%s\n", n, pct, dso, $0 }'
    else
        log "perf record failed: sampling skipped"
    fi
    wait "$bp"
    stop
}

for s in ours floor; do
    profile_syscalls "$s"
    profile_callgrind "$s"
done
profile_perf
