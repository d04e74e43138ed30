#!/bin/bash
# run-bench.sh: measures our server (mchost + counter.so), the reference
# (Debian's yrmcds) and the floor (counter-floor) on loopback with the same
# matrix, one server at a time, then the waiting rows (wait-bench: hand-off,
# a contended semaphore against the reference polling, a million pending
# leases), then the rate-limit rows (window and GCRA checks on ours, the
# floor and Redis; one hot name; accuracy with the real clock), then the
# tenant-throttling rows (Throttle charges on ours and the floor; one hot
# tenant; a tenant with a reserve against one flooding, per second), then
# then the client rows (the pair workload through libmccounter's
# non-blocking API against counter-bench's own loop on the same server;
# the Python client's requests per second), then writes
# doc/performance.md (tables, ratios, memory, GC, waiting, rate limits,
# throttling, clients, machine, targets) and its PNG plots; then the
# WebSocket rows (ws-bench: the quota front's hand-off and request/release
# pairs against wait_acquire on the binary port of the same server).
#
# usage: bench/run-bench.sh [BUILDDIR]      (default: the current directory)
# environment:
#   BENCH_DURATION=3 BENCH_WARMUP=1   seconds measured / warmed up per cell
#   BENCH_QUICK=1                     smoke mode: 0.3 s + 0.1 s per cell
#   BENCH_SERVERS="ours reference floor"  which servers to measure (the
#                                     rate-limit rows also start Redis
#                                     whenever redis-server is installed;
#                                     without it they say so)
#   BENCH_REPEAT=1                    runs per cell; the median (ops/s) counts
#   BENCH_MATRIX=1 BENCH_MEMORY=1 BENCH_GC=1 BENCH_WAIT=1 BENCH_LIMITS=1
#   BENCH_THROTTLE=1 BENCH_CLIENTS=1 BENCH_PROFILE=1 BENCH_THROTTR=1
#   BENCH_WEBSOCKET=1
#                                     sections to run (0 = skip); PROFILE
#                                     is bench/profile.sh (strace,
#                                     callgrind, perf: the Method section)
#   BENCH_FILL=1000000                live counters for memory and GC
#   BENCH_WAIT_DURATION=5             seconds measured per semaphore run
#   BENCH_LEASE_CONNS=1000 BENCH_LEASE_KEYS=1000
#                                     pending leases: connections x names
#                                     (BENCH_QUICK: 100 x 100)
#   BENCH_LEASE_RUNS=1                pending-lease runs, each on a fresh
#                                     server; the row is the run with the
#                                     median probe p99 ratio (storm / idle)
#   BENCH_ACCURACY_DURATION=10        seconds of each rate-limit accuracy run
#                                     (BENCH_QUICK: 1)
#   BENCH_FAIR_DURATION=10            seconds of the throttle's fairness
#                                     run (BENCH_QUICK: 2)
#   BENCH_FAIR_CAPACITY=20000         the node's capacity in that run,
#                                     units/s; tenant A reserves 30%
#   BENCH_OUT=DIR                     where performance.md and PNGs go
#                                     (default: SRCDIR/doc)
#   BENCH_SAVE=DIR                    also keep the raw key=value results
#                                     there (report.pl DIR OUT redoes the
#                                     report from them)
# bench/analysis.md (hand-written) is included in the report verbatim.
#   YRMCDSD=/usr/sbin/yrmcdsd REDIS_SERVER=/usr/bin/redis-server
# Every server runs on 127.0.0.1 only and is stopped by pid on exit.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
bench="$build/counter-bench"
floor="$build/counter-floor"
wbench="$build/wait-bench"
micro="$build/limits-micro"
rbench="$build/redis-bench"
rsem="$build/redis-semaphore"
cbench="$build/client-bench"
wsbench="$build/ws-bench"
mchost="$build/mchost"
so="$build/.libs/counter.so"
yrmcdsd=${YRMCDSD:-/usr/sbin/yrmcdsd}
redis_server=${REDIS_SERVER:-/usr/bin/redis-server}
out=${BENCH_OUT:-$src/doc}
dur=${BENCH_DURATION:-3}
warm=${BENCH_WARMUP:-1}
if [ "${BENCH_QUICK:-0}" = 1 ]; then dur=0.3; warm=0.1; fi
servers=${BENCH_SERVERS:-ours reference floor}
repeat=${BENCH_REPEAT:-1}
fill=${BENCH_FILL:-1000000}
buckets=1000000
wsem=${BENCH_WAIT_DURATION:-5}
lconns=${BENCH_LEASE_CONNS:-1000}
lkeys=${BENCH_LEASE_KEYS:-1000}
accdur=${BENCH_ACCURACY_DURATION:-10}
fairdur=${BENCH_FAIR_DURATION:-10}
faircap=${BENCH_FAIR_CAPACITY:-20000}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
    wsem=$dur; lconns=${BENCH_LEASE_CONNS:-100}; lkeys=${BENCH_LEASE_KEYS:-100}
    accdur=${BENCH_ACCURACY_DURATION:-1}
    fairdur=${BENCH_FAIR_DURATION:-2}
fi

. "$src/bench/lib.sh"
bench_tmp bench
srv_pid="" srv_port=""

log() { echo "run-bench: $*" >&2; }
die() { log "$*"; exit 1; }

for f in "$bench" "$floor" "$wbench" "$rbench"; do
    [ -x "$f" ] || die "$f is not built (make counter-bench counter-floor wait-bench redis-bench)"
done

# The lease row holds $lconns connections open on each side: raise the soft
# limit of open files (inherited by the servers started below) or, when the
# hard limit is too low, measure with fewer connections.
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((lconns + 100)) ]; then
    ulimit -n "$(ulimit -Hn)" 2>/dev/null
    lim=$(ulimit -n)
    if [ "$lim" != unlimited ] && [ "$lim" -lt $((lconns + 100)) ]; then
        log "open files limited to $lim: the lease row uses $((lim - 100)) connections"
        lconns=$((lim - 100))
    fi
fi

# Waits until the server on port answers a Noop (or gives up after 10 s).
ping_port() { "$bench" -p "$1" -W ping -t 10; }

random_port() { echo $((20000 + RANDOM % 40000)); }

start_floor() {
    "$floor" -l 127.0.0.1 -p 0 -t 2 >"$tmp/floor.out" 2>&1 &
    srv_pid=$!; pids="$pids $srv_pid"
    srv_port=""
    for _ in $(seq 100); do
        srv_port=$(sed -n 's/^port=//p' "$tmp/floor.out")
        [ -n "$srv_port" ] && break
        sleep 0.05
    done
    [ -n "$srv_port" ] && ping_port "$srv_port"
}

# Starts mchost + counter.so with the given stat interval and, optionally,
# more settings (";key=value..."); the memcache port comes from -F, the
# counter port from its stats (counter_port).
start_ours() {
    local iv=$1 more=${2:-} d="$tmp/ours" cport
    [ -x "$mchost" ] && [ -f "$so" ] || { log "mchost or counter.so not built"; return 1; }
    mkdir -p "$d"; rm -f "$d/port"
    "$mchost" -p 0 -l 127.0.0.1 -F "$d/port" -X \
        "$so,counter.enable=true;counter.port=0;counter.buckets=$buckets;counter.stat_interval=$iv$more" \
        >"$d/stdout" 2>"$d/stderr" &
    srv_pid=$!; pids="$pids $srv_pid"
    for _ in $(seq 100); do
        [ -s "$d/port" ] && break
        kill -0 "$srv_pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -s "$d/port" ] || { log "mchost did not start: $(cat "$d/stderr")"; return 1; }
    cport=$(mc_stat "$(cat "$d/port")" counter_port)
    [ -n "$cport" ] || { log "mchost stats have no counter_port"; return 1; }
    srv_port=$cport
    ping_port "$srv_port"
}

# Starts Debian's yrmcds as the reference (recipe of reference-behavior.md);
# retries with other random ports when one is taken.
start_reference() {
    local iv=$1 d="$tmp/ref" try p0 p1 p2
    [ -x "$yrmcdsd" ] || { log "$yrmcdsd not installed"; return 1; }
    for try in 1 2 3 4 5; do
        rm -rf "$d"; mkdir -p "$d"
        p0=$(random_port); p1=$(random_port); p2=$(random_port)
        cat >"$d/yrmcds.conf" <<CONF
virtual_ip = 127.0.0.1
bind_ip = "::1"
port = $p0
repl_port = $p1
max_connections = 0
temp_dir = "$d"
log.threshold = warning
log.file = "$d/yrmcds.log"
buckets = 100000
memory_limit = 256M
workers = 8
counter.enable = true
counter.port = $p2
counter.max_connections = 0
counter.buckets = $buckets
counter.stat_interval = $iv
CONF
        "$yrmcdsd" -f "$d/yrmcds.conf" >"$d/stdout" 2>&1 &
        srv_pid=$!; pids="$pids $srv_pid"; srv_port=$p2
        "$bench" -p "$p2" -W ping -t 5 2>/dev/null && return 0
        kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null
    done
    log "yrmcdsd did not start: $(cat "$d/yrmcds.log" "$d/stdout" 2>/dev/null)"
    return 1
}

# Starts Debian's redis-server on 127.0.0.1 without persistence (no
# snapshots, no append-only file, its directory in $tmp); retries with
# other random ports when one is taken.
start_redis() {
    local d="$tmp/redis" try p
    [ -x "$redis_server" ] || { log "$redis_server not installed"; return 1; }
    for try in 1 2 3 4 5; do
        rm -rf "$d"; mkdir -p "$d"
        p=$(random_port)
        "$redis_server" --bind 127.0.0.1 --port "$p" --save '' \
            --appendonly no --dir "$d" --logfile "$d/redis.log" \
            --daemonize no >"$d/stdout" 2>&1 &
        srv_pid=$!; pids="$pids $srv_pid"; srv_port=$p
        "$rbench" -p "$p" -W ping -t 5 2>/dev/null && return 0
        kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null
    done
    log "redis-server did not start: $(cat "$d/redis.log" "$d/stdout" 2>/dev/null)"
    return 1
}

# start_server NAME [INTERVAL]: sets srv_pid and srv_port.
start_server() {
    case $1 in
    ours) start_ours "${2:-86400}" ;;
    reference) start_reference "${2:-86400}" ;;
    floor) start_floor ;;
    redis) start_redis ;;
    esac
}

# Stops the current server by pid: SIGTERM, then SIGKILL after 5 s (the
# reference sometimes ignores SIGTERM after heavy load).
stop_server() {
    [ -n "$srv_pid" ] || return 0
    kill "$srv_pid" 2>/dev/null
    for _ in $(seq 50); do
        kill -0 "$srv_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$srv_pid" 2>/dev/null && { log "pid $srv_pid ignored SIGTERM: SIGKILL"; kill -9 "$srv_pid" 2>/dev/null; }
    wait "$srv_pid" 2>/dev/null
    srv_pid=""
}

# cell NAME WORKLOAD CONNS DEPTH KEYS [SECONDS WARMUP]: measures one cell
# $repeat times against the current server and prints the run with the
# median ops/s as a key=value line.
cell() {
    local name=$1 wl=$2 c=$3 d=$4 k=$5 t=${6:-$dur} w=${7:-$warm} i
    : >"$tmp/cell.out"
    for i in $(seq "$repeat"); do
        one_run "$name" "$wl" "$c" "$d" "$k" "$t" "$w" >>"$tmp/cell.out"
    done
    median "$tmp/cell.out" "$name" "$wl" "$c" "$d" "$k"
}

# one_run NAME WORKLOAD CONNS DEPTH KEYS SECONDS WARMUP: one measured run
# against srv_port / srv_pid; prints its key=value line (if any).
one_run() {
    log "$1 $2 c=$3 d=$4 k=$5"
    "$bench" -p "$srv_port" -W "$2" -c "$3" -d "$4" -k "$5" -t "$6" \
        -w "$7" -P "$srv_pid" -l "$1" --kv 2>"$tmp/cell.err" ||
        log "run failed: $(cat "$tmp/cell.err")"
}

# median FILE NAME WORKLOAD CONNS DEPTH KEYS: the line of FILE with the
# median ops/s, or a failed line when FILE has none.
median() {
    if grep -q '^server=' "$1"; then
        grep '^server=' "$1" |
            awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^ops_s=/) print substr($i, 7) "\t" $0 }' |
            sort -n | awk -F '\t' '{ l[NR] = $2 } END { print l[int((NR + 1) / 2)] }'
    else
        echo "server=$2 workload=$3 conns=$4 depth=$5 keys=$6 failed=1"
    fi
}

# The matrix: every cell as "WORKLOAD CONNS DEPTH KEYS".
matrix_cells() {
    local c d k
    for c in 1 16 64; do
        for d in 1 32; do
            for k in 1 1000 100000; do
                echo "pair $c $d $k"
            done
        done
    done
    echo "one 16 1 1"; echo "one 64 32 1"; echo "get 16 32 1000"
    echo "contended 16 1 1000"; echo "contended 64 32 1000"
}

# Runs the matrix with every server up at once, interleaved: for each
# cell and each repetition, one run per server in turn. Whatever else the
# machine does at a given moment (it is shared) then falls on all servers
# alike, and so do the scheduler's moods: on this VM a ping-pong between a
# client and a server thread on different CPUs pays a cross-CPU wake-up
# (about 4x the round trip of the same CPU), and which case a run gets is
# luck that lasts for a while.
run_matrix_interleaved() {
    local -A pid port
    local s wl c d k i up=""
    for s in $servers; do
        log "starting $s"
        if start_server "$s"; then
            pid[$s]=$srv_pid; port[$s]=$srv_port; up="$up $s"
        else
            log "$s could not be started: skipped"
            stop_server
        fi
    done
    mkdir -p "$tmp/cells"
    while read -r wl c d k; do
        for s in $up; do : >"$tmp/cells/$s"; done
        for i in $(seq "$repeat"); do
            for s in $up; do
                srv_pid=${pid[$s]}; srv_port=${port[$s]}
                one_run "$s" "$wl" "$c" "$d" "$k" "$dur" "$warm" >>"$tmp/cells/$s"
            done
        done
        for s in $up; do median "$tmp/cells/$s" "$s" "$wl" "$c" "$d" "$k"; done
    done < <(matrix_cells)
    for s in $up; do
        srv_pid=${pid[$s]}
        stop_server
    done
}

# wait_run FILE ARGS...: one wait-bench run; appends its line to FILE.
wait_run() {
    local f=$1
    shift
    log "wait-bench $*"
    "$wbench" "$@" >>"$f" 2>"$tmp/wait.err" ||
        log "wait-bench failed: $(cat "$tmp/wait.err")"
}

# median_by FILE FIELD FALLBACK: the line of FILE with the median FIELD,
# or FALLBACK when FILE has no line with it.
median_by() {
    if grep -q " $2=" "$1" 2>/dev/null; then
        awk -v f="$2" '{ for (i = 1; i <= NF; i++)
                             if (index($i, f "=") == 1) print substr($i, length(f) + 2) "\t" $0 }' "$1" |
            sort -n | awk -F '\t' '{ l[NR] = $2 } END { print l[int((NR + 1) / 2)] }'
    else
        echo "$3"
    fi
}

# rsem_run FILE ARGS...: one redis-semaphore run; appends its line to FILE.
rsem_run() {
    local f=$1
    shift
    log "redis-semaphore $*"
    "$rsem" "$@" >>"$f" 2>"$tmp/wait.err" ||
        log "redis-semaphore failed: $(cat "$tmp/wait.err")"
}

# The waiting rows. Our server with two workers (consecutive connections
# go to different workers, so the hand-off crosses from one to the other;
# with --gap 1 both land on one worker), the reference and Redis are up
# together and measured in turn, like the matrix: the hand-off and the
# semaphore queued with wait_acquire on ours, the semaphore polled with
# Acquire (counterctl run --wait's schedule) on the reference, and for
# comparison on ours, and both through the Redis semaphore users build
# (redis-semaphore). Then the pending leases, once, on a fresh server of
# ours alone.
run_wait() {
    local opid oport rpid="" rport="" dpid="" dport="" i w="$tmp/wait"
    mkdir -p "$w"; : >"$w/handoff"; : >"$w/sem"; : >"$w/poll"; : >"$w/ref"
    : >"$w/handoff1"; : >"$w/rhandoff"; : >"$w/rsem"; : >"$w/idle"
    log "starting ours (2 workers) for the waiting rows"
    if ! start_ours 86400 ";counter.threads=2"; then
        stop_server
        echo "server=ours workload=handoff failed=1"
        return 1
    fi
    opid=$srv_pid; oport=$srv_port
    if [[ " $servers " == *" reference "* ]]; then
        if start_reference 86400; then
            rpid=$srv_pid; rport=$srv_port
        else
            stop_server
        fi
    fi
    if [ -x "$rsem" ] && start_redis; then
        dpid=$srv_pid; dport=$srv_port
    fi
    for i in $(seq "$repeat"); do
        wait_run "$w/handoff" -p "$oport" -W handoff -t "$dur" -w "$warm" -l ours
        wait_run "$w/handoff1" -p "$oport" -W handoff --gap 1 -t "$dur" -w "$warm" -l ours-one-worker
        # Each hand-off and each Noop after a 1 ms pause: from idle, as
        # the semaphore's hand-offs come, so its bound can be worked out.
        wait_run "$w/idle" -p "$oport" -W handoff --think-us 1000 -t "$dur" -w "$warm" -l ours-from-idle
        [ -n "$dport" ] && rsem_run "$w/rhandoff" -p "$dport" -W handoff -t "$dur" -w "$warm" -l redis
        wait_run "$w/sem" -p "$oport" -W semaphore -c 64 -m 4 -t "$wsem" -w "$warm" -l ours
        [ -n "$dport" ] && rsem_run "$w/rsem" -p "$dport" -W semaphore -c 64 -m 4 -t "$wsem" -w "$warm" -l redis
        [ -n "$rport" ] && wait_run "$w/ref" -p "$rport" -W semaphore --poll -c 64 -m 4 -t "$wsem" -w "$warm" -l reference
        wait_run "$w/poll" -p "$oport" -W semaphore --poll -c 64 -m 4 -t "$wsem" -w "$warm" -l ours
    done
    median_by "$w/handoff" handoff_p50_us "server=ours workload=handoff failed=1"
    median_by "$w/handoff1" handoff_p50_us "server=ours-one-worker workload=handoff failed=1"
    median_by "$w/idle" handoff_mean_us "server=ours-from-idle workload=handoff failed=1"
    if [ -z "$dport" ]; then
        echo "server=redis workload=handoff absent=1"
        echo "server=redis workload=semaphore mode=script absent=1"
    else
        median_by "$w/rhandoff" handoff_p50_us "server=redis workload=handoff failed=1"
        median_by "$w/rsem" grants_s "server=redis workload=semaphore mode=script failed=1"
    fi
    median_by "$w/sem" grants_s "server=ours workload=semaphore mode=wait failed=1"
    median_by "$w/poll" grants_s "server=ours workload=semaphore mode=poll failed=1"
    if [ -z "$rport" ]; then
        echo "server=reference workload=semaphore mode=poll absent=1"
    else
        median_by "$w/ref" grants_s "server=reference workload=semaphore mode=poll failed=1"
    fi
    [ -n "$rpid" ] && { srv_pid=$rpid; stop_server; }
    [ -n "$dpid" ] && { srv_pid=$dpid; stop_server; }
    srv_pid=$opid; stop_server
    for i in $(seq "${BENCH_LEASE_RUNS:-1}"); do
        log "starting ours for $lconns x $lkeys pending leases (run $i)"
        if start_ours 86400 ";counter.threads=2;counter.max_connections=0;counter.max_waits=$((lkeys > 1024 ? lkeys : 1024))"; then
            wait_run "$w/leases" -p "$srv_port" -W leases -c "$lconns" -k "$lkeys" -P "$srv_pid" -l ours
        fi
        stop_server
    done
    median_by "$w/leases" probe_p99_ratio "server=ours workload=leases failed=1"
    # Lease_list over two workers holding 100,000 leases of an hour between
    # them (the connections alternate between the workers), three runs on
    # one server; the row is the run with the median listing p50.
    log "starting ours for Lease_list over 2 x 50000 leases"
    if start_ours 86400 ";counter.threads=2;counter.max_waits=50000"; then
        for _ in 1 2 3; do
            wait_run "$w/llist" -p "$srv_port" -W lease_list -c 2 -k 50000 -l ours
        done
    fi
    stop_server
    median_by "$w/llist" list_p50_us "server=ours workload=lease_list failed=1"
}

# limit_run FILE SERVER KIND CONNS DEPTH KEYS: one closed-loop run of
# rate-limit checks or Throttle charges (KIND throttle; cost 1 on KEYS
# names; keys 1 = every check on one name) against srv_port / srv_pid:
# counter-bench for ours and the floor, redis-bench for Redis. Appends its
# key=value line to FILE.
limit_run() {
    local f=$1 s=$2 kind=$3 c=$4 d=$5 k=$6 tool=$bench hot=""
    [ "$s" = redis ] && tool=$rbench
    [ "$k" = 1 ] && hot=--hot
    log "$s $kind c=$c d=$d k=$k"
    "$tool" -p "$srv_port" -W "$kind" -c "$c" -d "$d" -k "$k" $hot \
        -t "$dur" -w "$warm" -P "$srv_pid" -l "$s" --kv >>"$f" \
        2>"$tmp/cell.err" || log "run failed: $(cat "$tmp/cell.err")"
}

# The rate-limit cells: "KIND CONNS DEPTH KEYS SERVERS".
limit_cells() {
    local kind
    for kind in window gcra; do
        echo "$kind 1 1 1000 ours floor redis"
        echo "$kind 16 1 1000 ours floor redis"
        echo "$kind 64 32 1000 ours floor redis"
        echo "$kind 64 32 1 ours"
    done
}

# The rate-limit rows: ours, the floor and Redis up together and measured
# in turn, cell by cell, like the matrix; then the accuracy runs on ours
# (one fresh name, 10 times the allowed rate from 4 connections, the
# server's real clock), each kind once.
run_limits() {
    local -A pid port
    local s kind c d k list i up="" l="$tmp/limits"
    mkdir -p "$l"
    for s in ours floor redis; do
        [ "$s" = redis ] || [[ " $servers " == *" $s "* ]] || continue
        log "starting $s for the rate limits"
        if start_server "$s"; then
            pid[$s]=$srv_pid; port[$s]=$srv_port; up="$up $s"
        else
            log "$s could not be started: skipped"
            stop_server
            echo "server=$s workload=limits absent=1"
        fi
    done
    while read -r kind c d k list; do
        for s in $list; do : >"$l/$s"; done
        for i in $(seq "$repeat"); do
            for s in $list; do
                [[ " $up " == *" $s "* ]] || continue
                srv_pid=${pid[$s]}; srv_port=${port[$s]}
                limit_run "$l/$s" "$s" "$kind" "$c" "$d" "$k"
            done
        done
        for s in $list; do
            [[ " $up " == *" $s "* ]] || continue
            median "$l/$s" "$s" "$kind" "$c" "$d" "$k"
        done
    done < <(limit_cells)
    if [[ " $up " == *" ours "* ]]; then
        srv_pid=${pid[ours]}; srv_port=${port[ours]}
        for kind in window gcra; do
            log "ours $kind accuracy, $accdur s"
            "$bench" -p "$srv_port" -W "$kind" --accuracy -c 4 -t "$accdur" \
                -l ours >"$tmp/acc.out" 2>"$tmp/cell.err" ||
                log "accuracy run failed: $(cat "$tmp/cell.err")"
            if grep -q '^server=' "$tmp/acc.out"; then
                cat "$tmp/acc.out"
            else
                echo "server=ours workload=$kind mode=accuracy failed=1"
            fi
        done
    fi
    for s in $up; do
        srv_pid=${pid[$s]}
        stop_server
    done
    limits_micro
}

# limits_micro: the engine-level microbenchmark (no sockets), once per
# repetition: two threads checking one name against two threads checking a
# name each, for GCRA and the window; one key=value line per case.
limits_micro() {
    local i line
    [ -x "$micro" ] || { log "$micro is not built: no microbenchmark"; return; }
    for i in $(seq "$repeat"); do
        log "limits-micro, run $i"
        "$micro" 1 2 2>"$tmp/cell.err" | while read -r line; do
            set -- $line
            # gcra threads 2 spread N checks/s hot N checks/s ratio R
            echo "server=engine workload=$1 mode=micro threads=$3 spread=$5 hot=$8 ratio=${11}"
        done
    done
}

# The throttle cells: "CONNS DEPTH KEYS SERVERS" (keys 1: one hot tenant).
throttle_cells() {
    echo "1 1 1000 ours floor"
    echo "16 1 1000 ours floor"
    echo "64 32 1000 ours floor"
    echo "64 32 1 ours"
}

# The tenant-throttling rows. Throughput: ours, started with a settings
# file whose node capacity (4000000000 units/s, no reserves) throttles
# nothing, so every charge is accounted and allowed, and the floor (every
# charge "allowed", nothing kept), up together and measured in turn, cell
# by cell, like the matrix. Then the fairness run on a fresh server of
# ours whose node has $faircap units/s and tenant A (fairA-0000000000)
# reserves 30% of it: A on one connection at depth 4 (a closed loop that
# demands more than its reserve; at depth 1 this shared VM's round trips
# do not always reach it) against tenant B (fairB-0000000000, no reserve)
# flooding from 32 connections, for $fairdur whole seconds; per second,
# A's and B's charges sent and units allowed (see counter-bench.c,
# run_fairness, for how the seconds are aligned with the server's).
run_throttle() {
    local -A pid port
    local s c d k list i up="" l="$tmp/throttle" reserve
    mkdir -p "$l"
    printf '%s\n' "# the throughput rows: nothing is throttled" \
        "node.capacity = 4000000000" >"$l/open.conf"
    for s in ours floor; do
        [[ " $servers " == *" $s "* ]] || continue
        log "starting $s for the throttle"
        if [ "$s" = ours ]; then
            start_ours 86400 ";counter.throttle.config=$l/open.conf"
        else
            start_server "$s"
        fi
        if [ $? = 0 ]; then
            pid[$s]=$srv_pid; port[$s]=$srv_port; up="$up $s"
        else
            log "$s could not be started: skipped"
            stop_server
        fi
    done
    while read -r c d k list; do
        for s in $list; do : >"$l/$s"; done
        for i in $(seq "$repeat"); do
            for s in $list; do
                [[ " $up " == *" $s "* ]] || continue
                srv_pid=${pid[$s]}; srv_port=${port[$s]}
                limit_run "$l/$s" "$s" throttle "$c" "$d" "$k"
            done
        done
        for s in $list; do
            [[ " $up " == *" $s "* ]] || continue
            median "$l/$s" "$s" throttle "$c" "$d" "$k"
        done
    done < <(throttle_cells)
    for s in $up; do
        srv_pid=${pid[$s]}
        stop_server
    done
    [[ " $servers " == *" ours "* ]] || return 0
    reserve=$((faircap * 3 / 10))
    printf '%s\n' "# the fairness run" "node.capacity = $faircap" \
        "tenant.fairA-0000000000 = reserved:$reserve" >"$l/fair.conf"
    log "starting ours for the throttle's fairness run"
    if ! start_ours 86400 ";counter.throttle.config=$l/fair.conf"; then
        stop_server
        echo "server=ours workload=fairness mode=summary failed=1"
        return 1
    fi
    log "ours fairness, $fairdur s: capacity $faircap, A reserves $reserve"
    "$bench" -p "$srv_port" -W fairness -c 1 --a-depth 4 --b-conns 32 -d 1 \
        -t "$fairdur" -w "$warm" --capacity "$faircap" --reserve "$reserve" \
        -l ours >"$l/fair.out" 2>"$tmp/cell.err" ||
        log "fairness run failed: $(cat "$tmp/cell.err")"
    if grep -q 'mode=summary' "$l/fair.out"; then
        cat "$l/fair.out"
    else
        echo "server=ours workload=fairness mode=summary failed=1"
    fi
    stop_server
}

# The Throttr rows: the same mix of INSERT, QUERY and UPDATE (quota +1)
# on random names, 200 ms to live, through ours' Throttr port
# (ours-throttr, values of 2 bytes), through ours' binary opcodes
# 0x30-0x32 on the counter port (ours-ttl, the same server), and against
# the Throttr-framing floor (throttr-floor: counter-floor -T 2, which
# answers success and keeps nothing). Ours runs one worker thread and the
# floor one epoll thread, so each front has one core. All three measured
# in turn, cell by cell, $repeat times; every run goes to throttr-runs.kv,
# the medians to the report.
throttr_cells() {
    local k
    for k in 1000 100000; do
        echo "1 1 $k"; echo "16 1 $k"; echo "64 32 $k"
    done
}
run_throttr() {
    local l="$tmp/throttr" tport fpid fport opid cport c d k i s
    mkdir -p "$l"
    : >"$tmp/throttr-runs.kv"
    tport=$(random_port)
    log "starting ours with a Throttr port ($tport) for the Throttr rows"
    if ! start_ours 86400 ";counter.threads=1;counter.throttr.port=$tport;counter.throttr.value_size=2"; then
        stop_server
        return 1
    fi
    opid=$srv_pid; cport=$srv_port
    "$floor" -l 127.0.0.1 -p 0 -t 1 -T 2 >"$tmp/tfloor.out" 2>&1 &
    fpid=$!; pids="$pids $fpid"; fport=""
    for _ in $(seq 100); do
        fport=$(sed -n 's/^port=//p' "$tmp/tfloor.out")
        [ -n "$fport" ] && break
        sleep 0.05
    done
    [ -n "$fport" ] || log "the Throttr floor did not start"
    while read -r c d k; do
        for s in ours-throttr ours-ttl throttr-floor; do : >"$l/$s"; done
        for i in $(seq "$repeat"); do
            srv_pid=$opid; srv_port=$cport
            "$bench" -p "$tport" -W throttr --value-size 2 -c "$c" -d "$d" \
                -k "$k" -t "$dur" -w "$warm" -P "$opid" -l ours-throttr \
                --kv 2>"$tmp/cell.err" >>"$l/ours-throttr" ||
                log "run failed: $(cat "$tmp/cell.err")"
            one_run ours-ttl ttl "$c" "$d" "$k" "$dur" "$warm" >>"$l/ours-ttl"
            if [ -n "$fport" ]; then
                "$bench" -p "$fport" -W throttr --value-size 2 -c "$c" \
                    -d "$d" -k "$k" -t "$dur" -w "$warm" -P "$fpid" \
                    -l throttr-floor --kv 2>"$tmp/cell.err" \
                    >>"$l/throttr-floor" ||
                    log "run failed: $(cat "$tmp/cell.err")"
            fi
        done
        for s in ours-throttr ours-ttl throttr-floor; do
            cat "$l/$s" >>"$tmp/throttr-runs.kv"
            median "$l/$s" "$s" "$( [ "$s" = ours-ttl ] && echo ttl || echo throttr)" "$c" "$d" "$k"
        done
    done < <(throttr_cells)
    kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
    srv_pid=$opid
    stop_server
}

# The WebSocket rows, on one server of ours with two workers and the
# HTTP port: groups wsb (maximum 1, the hand-off) and wsp0..wsp63 (maximum
# 1 each, one per pair connection). Hand-off: ws-bench alternates a
# WebSocket round (quota_release to the waiter's quota_passed) and a
# binary one (wait_release to the granted event) on two connections each,
# so both sides see the same moments. Pairs: at 1, 16 and 64 connections,
# WebSocket (quota_request, result and quota_passed, quota_release) then
# binary (wait_acquire, wait_release) in turn, $repeat times; every run
# goes to websocket-runs.kv, the medians to the report.
run_websocket() {
    local l="$tmp/websocket" hport groups="" i c p
    mkdir -p "$l"; : >"$tmp/websocket-runs.kv"; : >"$l/handoff"
    [ -x "$wsbench" ] || { log "$wsbench is not built: no WebSocket rows"; return 0; }
    hport=$(random_port)
    for i in $(seq 0 63); do groups="$groups;counter.group.wsp$i=max:1"; done
    log "starting ours with an HTTP port ($hport) for the WebSocket rows"
    if ! start_ours 86400 ";counter.threads=2;counter.http.port=$hport;counter.group.wsb=max:1$groups"; then
        stop_server
        echo "server=ours workload=ws-handoff failed=1"
        return 1
    fi
    for i in $(seq "$repeat"); do
        log "WebSocket hand-off, run $i"
        "$wsbench" -p "$srv_port" -H "$hport" -W handoff -k wsb -t "$dur"             -w "$warm" -l ours 2>"$tmp/cell.err" >>"$l/handoff" ||
            log "run failed: $(cat "$tmp/cell.err")"
    done
    cat "$l/handoff" >>"$tmp/websocket-runs.kv"
    median_by "$l/handoff" ws_p50_us "server=ours workload=ws-handoff failed=1"
    for c in 1 16 64; do
        : >"$l/ws$c"; : >"$l/bin$c"
        for i in $(seq "$repeat"); do
            for p in ws bin; do
                log "$p pairs c=$c, run $i"
                "$wsbench" -p "$srv_port" -H "$hport" -W pairs --proto "$p" \
                    -g wsp -c "$c" -t "$dur" -w "$warm" -l ours \
                    2>"$tmp/cell.err" >>"$l/$p$c" ||
                    log "run failed: $(cat "$tmp/cell.err")"
            done
        done
        for p in ws bin; do
            cat "$l/$p$c" >>"$tmp/websocket-runs.kv"
            median_by "$l/$p$c" pairs_s "server=ours workload=ws-pairs proto=$p conns=$c failed=1"
        done
    done
    stop_server
}

# The client rows, on one server of ours: the pair workload (Acquire +
# Release of 1 on 1000 names) at 64 connections x depth 32 driven by
# counter-bench's own loop (raw sockets, the codec) and by client-bench
# (the same workload through libmccounter's non-blocking API, one
# mcc_client per connection), alternately, $repeat times each, the median
# of each kept; then the Python client (clients/python/bench.py: Gets at
# depth 1, one per round trip, and pipelined 32 per round trip), when a
# python3 of 3.11 or later is there.
run_clients() {
    local l="$tmp/clients" i out p py=""
    mkdir -p "$l"; : >"$l/raw"; : >"$l/lib"; : >"$l/py1"; : >"$l/py32"
    [ -x "$cbench" ] || { log "$cbench is not built: no client rows"; return 0; }
    start_ours 86400 || { stop_server; echo "server=libmccounter workload=pair conns=64 depth=32 keys=1000 failed=1"; return 1; }
    for i in $(seq "$repeat"); do
        one_run raw pair 64 32 1000 "$dur" "$warm" >>"$l/raw"
        log "libmccounter pair c=64 d=32 k=1000"
        "$cbench" -p "$srv_port" -c 64 -d 32 -k 1000 -t "$dur" -w "$warm" \
            -l libmccounter --kv >>"$l/lib" 2>"$tmp/cell.err" ||
            log "run failed: $(cat "$tmp/cell.err")"
    done
    median "$l/raw" raw pair 64 32 1000
    median "$l/lib" libmccounter pair 64 32 1000
    for p in python3 python3.13 python3.12 python3.11; do
        command -v "$p" >/dev/null || continue
        "$p" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null &&
            { py=$p; break; }
    done
    if [ -z "$py" ]; then
        log "no python3 >= 3.11: no Python row"
    else
        for i in $(seq "$repeat"); do
            log "python client, run $i"
            out=$("$py" "$src/clients/python/bench.py" "127.0.0.1:$srv_port" "$dur" 2>"$tmp/cell.err") ||
                { log "python run failed: $(cat "$tmp/cell.err")"; continue; }
            set -- $out
            echo "server=python workload=get conns=1 depth=1 keys=1 ops_s=$1" >>"$l/py1"
            echo "server=python workload=get conns=1 depth=32 keys=1 ops_s=$2" >>"$l/py32"
        done
        median "$l/py1" python get 1 1 1
        median "$l/py32" python get 1 32 1
        echo "server=python version=$("$py" -c 'import platform; print(platform.python_version())')"
    fi
    stop_server
}

# RSS empty (default buckets) and with $fill live 16-byte-name counters.
run_memory() {
    local name=$1 rss0
    sleep 0.5
    rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$srv_pid/status")
    log "$name fill $fill"
    local f
    f=$("$bench" -p "$srv_port" -W fill -k "$fill" -P "$srv_pid" -l "$name")
    echo "$f rss_empty_kb=$rss0"
}

# p99 with traffic while $fill idle counters exist: with a 2 s window the GC
# sweeps (and deletes) them during the run; with 86400 s it does not.
run_gc() {
    local iv=$1 t=$2
    start_ours "$iv" || return 1
    "$bench" -p "$srv_port" -W fill -k "$fill" -l ours >/dev/null ||
        { stop_server; return 1; }
    cell "ours-gc$iv" pair 16 1 1000 "$t" 0 | sed "s/\$/ interval=$iv/"
    "$bench" -p "$srv_port" -W stats -l "ours-gc$iv" | sed "s/\$/ interval=$iv/"
    stop_server
}

: >"$tmp/matrix.kv"; : >"$tmp/memory.kv"; : >"$tmp/gc.kv"; : >"$tmp/profile.kv"
: >"$tmp/wait.kv"; : >"$tmp/limits.kv"; : >"$tmp/throttle.kv"
: >"$tmp/clients.kv"; : >"$tmp/throttr.kv"; : >"$tmp/websocket.kv"
if [ "${BENCH_MATRIX:-1}" = 1 ]; then
    run_matrix_interleaved >>"$tmp/matrix.kv"
fi
for s in $servers; do
    if [ "${BENCH_MEMORY:-1}" = 1 ]; then
        start_server "$s" && run_memory "$s" >>"$tmp/memory.kv"
        stop_server
    fi
done
if [ "${BENCH_GC:-1}" = 1 ] && [[ " $servers " == *" ours "* ]]; then
    gct=$(awk -v d="$dur" 'BEGIN { print (d < 2.5 ? 2.5 : d + 2) }')
    run_gc 86400 "$gct" >>"$tmp/gc.kv"
    run_gc 2 "$gct" >>"$tmp/gc.kv"
fi

if [ "${BENCH_WAIT:-1}" = 1 ] && [[ " $servers " == *" ours "* ]]; then
    run_wait >>"$tmp/wait.kv"
fi

if [ "${BENCH_LIMITS:-1}" = 1 ]; then
    run_limits >>"$tmp/limits.kv"
fi

if [ "${BENCH_THROTTLE:-1}" = 1 ]; then
    run_throttle >>"$tmp/throttle.kv"
fi

if [ "${BENCH_THROTTR:-1}" = 1 ] && [[ " $servers " == *" ours "* ]]; then
    run_throttr >>"$tmp/throttr.kv"
fi

if [ "${BENCH_WEBSOCKET:-1}" = 1 ] && [[ " $servers " == *" ours "* ]]; then
    run_websocket >>"$tmp/websocket.kv"
fi

if [ "${BENCH_CLIENTS:-1}" = 1 ] && [[ " $servers " == *" ours "* ]]; then
    run_clients >>"$tmp/clients.kv"
fi

if [ "${BENCH_PROFILE:-1}" = 1 ]; then
    log "profiling (bench/profile.sh)"
    "$src/bench/profile.sh" "$build" >"$tmp/profile.kv" || log "profile.sh failed"
fi

mkdir -p "$out"
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc=$(nproc)"
    echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo "kernel=$(uname -sr)"
    echo "reference=yrmcds $(dpkg-query -W -f='${Version}' yrmcds 2>/dev/null)"
    echo "redis=$("$redis_server" --version 2>/dev/null | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
    commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null)
    git -C "$src" diff --quiet HEAD 2>/dev/null || commit="$commit with uncommitted changes"
    echo "commit=$commit"
    echo "duration=$dur"; echo "warmup=$warm"; echo "fill=$fill"
    echo "repeat=$repeat"
    echo "wait_duration=$wsem"
    echo "accuracy_duration=$accdur"
    echo "fairness_duration=$fairdur"
} >"$tmp/machine.kv"
if [ -n "${BENCH_SAVE:-}" ]; then
    mkdir -p "$BENCH_SAVE" && cp "$tmp"/*.kv "$BENCH_SAVE"/
fi
perl "$src/bench/report.pl" "$tmp" "$out" "$src/bench/analysis.md" || die "report failed"
if [ ! -s "$tmp/plot.gp" ]; then
    log "no matrix and no fairness run measured: no plots"
elif command -v gnuplot >/dev/null; then
    gnuplot "$tmp/plot.gp" || log "gnuplot failed"
else
    log "gnuplot not installed: no plots"
fi
cat "$tmp/targets.txt"
log "wrote $out/performance.md"
