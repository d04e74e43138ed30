#!/bin/bash
# smoke.sh: a few-second smoke run of the benchmark tools for make check:
# starts counter-floor on a free loopback port, drives it with counter-bench
# (pairs and gets, pipelined; window and GCRA checks, closed loop and
# paced), checks the report is sane, stops the floor; drives redis-server
# with redis-bench the same way when it is installed (and the Redis
# semaphore of redis-semaphore, hand-off and contended); then starts our
# server (mchost + counter.so, two workers) and runs a tiny version of each
# waiting row of wait-bench (hand-off on two workers and on one, the
# semaphore queued and polled,
# pending leases, Lease_list), the pair workload through libmccounter (client-bench),
# the WebSocket rows of ws-bench (hand-off, pairs through the WebSocket
# front and the binary port) and a tiny version of the rate-limit rows (skipped when the server does
# not know the checks: 0x81), checking their key=value lines; then the
# tenant-throttling rows: Throttle charges on the floor and on a second
# server of ours started with a throttle settings file, and a short
# fairness run on each (skipped on ours when it answers 0x81).
set -u
bin=${BENCH_BUILDDIR:-.}
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cnt-smoke.XXXXXX") || exit 99
floor_pid=
ours_pid=
redis_pid=
thr_pid=
cleanup() {
    [ -n "$floor_pid" ] && kill "$floor_pid" 2>/dev/null && wait "$floor_pid" 2>/dev/null
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    [ -n "$ours_pid" ] && kill "$ours_pid" 2>/dev/null && wait "$ours_pid" 2>/dev/null
    [ -n "$thr_pid" ] && kill "$thr_pid" 2>/dev/null && wait "$thr_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

: >"$tmp/floor.out"     # exists before the background shell opens it
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

# check_checks FILE: a closed-loop run of checks counted allowed ones.
check_checks() {
    check_run "$1"
    a=$(field allowed "$1")
    [ -n "$a" ] && [ "$a" -gt 0 ] || fail "no check allowed: $(cat "$1")"
}

# check_accuracy FILE: a paced run had every check answered, no errors.
check_accuracy() {
    local sent answered
    sent=$(field sent "$1"); answered=$(field answered "$1")
    [ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "nothing sent: $(cat "$1")"
    [ "$answered" = "$sent" ] || fail "checks unanswered: $(cat "$1")"
    grep -q " errors=0 " "$1" || fail "unexpected statuses: $(cat "$1")"
    echo "ok: $(cat "$1")"
}

for w in window gcra; do
    "$bin/counter-bench" -p "$port" -c 4 -d 8 -t 0.3 -w 0.1 -W "$w" \
        -l floor --kv >"$tmp/$w.out" || fail "$w run on the floor failed"
    check_checks "$tmp/$w.out"
    "$bin/counter-bench" -p "$port" -c 2 -t 0.3 -W "$w" --accuracy \
        -l floor >"$tmp/$w-acc.out" || fail "$w accuracy run on the floor failed"
    check_accuracy "$tmp/$w-acc.out"
done

# check_fair FILE: a fairness run printed its seconds and a clean summary.
check_fair() {
    grep -q ' mode=second second=1 ' "$1" ||
        fail "no fairness seconds: $(cat "$1")"
    grep -q ' mode=summary .* errors=0 .*failures=0' "$1" ||
        fail "fairness run not clean: $(cat "$1")"
    echo "ok: $(grep mode=summary "$1")"
}

"$bin/counter-bench" -p "$port" -c 4 -d 8 -t 0.3 -w 0.1 -W throttle \
    -l floor --kv >"$tmp/throttle.out" ||
    fail "throttle run on the floor failed"
check_checks "$tmp/throttle.out"
"$bin/counter-bench" -p "$port" -W fairness -c 1 --a-depth 4 --b-conns 4 \
    -t 1 -w 0.1 -l floor >"$tmp/fair.out" ||
    fail "fairness run on the floor failed"
check_fair "$tmp/fair.out"
kill "$floor_pid" 2>/dev/null && wait "$floor_pid" 2>/dev/null
floor_pid=

# Redis (the rate-limit rows' comparison), when installed: on a random
# port, no persistence, stopped by pid.
redis_server=${REDIS_SERVER:-/usr/bin/redis-server}
if [ -x "$redis_server" ]; then
    for _ in 1 2 3 4 5; do
        rport=$((20000 + RANDOM % 40000))
        "$redis_server" --bind 127.0.0.1 --port "$rport" --save '' \
            --appendonly no --dir "$tmp" --daemonize no \
            >"$tmp/redis.out" 2>&1 &
        redis_pid=$!
        "$bin/redis-bench" -p "$rport" -W ping -t 3 2>/dev/null && break
        kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null
        redis_pid=
    done
    [ -n "$redis_pid" ] || fail "redis-server did not start: $(cat "$tmp/redis.out")"
    for w in window gcra; do
        "$bin/redis-bench" -p "$rport" -c 4 -d 8 -t 0.3 -w 0.1 -W "$w" \
            -P "$redis_pid" --kv >"$tmp/redis-$w.out" ||
            fail "redis-bench $w run failed"
        check_checks "$tmp/redis-$w.out"
    done
    # A limit that is reached: the script and the counting say so.
    "$bin/redis-bench" -p "$rport" -t 0.3 -w 0 -W gcra --hot --limit 10 \
        --burst 2 --kv >"$tmp/redis-lim.out" || fail "redis-bench gcra limited run failed"
    grep -q ' limited=[1-9]' "$tmp/redis-lim.out" ||
        fail "redis gcra never limited: $(cat "$tmp/redis-lim.out")"
    # The Redis semaphore beside wait-bench: hand-off and contended.
    "$bin/redis-semaphore" -p "$rport" -W handoff -t 0.3 -w 0.05 \
        >"$tmp/rsem-handoff.out" || fail "redis-semaphore handoff run failed"
    grep -q ' rounds=[1-9]' "$tmp/rsem-handoff.out" ||
        fail "redis hand-off: no round: $(cat "$tmp/rsem-handoff.out")"
    "$bin/redis-semaphore" -p "$rport" -W semaphore -c 8 -m 2 --hold-us 500 \
        -t 0.3 -w 0.05 >"$tmp/rsem.out" || fail "redis-semaphore run failed"
    grep -q ' grants=[1-9].* failures=0$' "$tmp/rsem.out" ||
        fail "redis semaphore: $(cat "$tmp/rsem.out")"
    echo "ok: $(cat "$tmp/rsem-handoff.out")"
    echo "ok: $(cat "$tmp/rsem.out")"
    kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    redis_pid=
else
    echo "skip: $redis_server not installed: no redis-bench run"
fi

# The waiting rows need our server: mchost with counter.so, on port 0; the
# counter port comes from the host's stats.
[ -x "$bin/mchost" ] && [ -f "$bin/.libs/counter.so" ] ||
    fail "mchost or .libs/counter.so not built"
conf="counter.enable=true;counter.port=0;counter.threads=2"
conf="$conf;counter.max_waits=64"
# The WebSocket front on a loopback port free a moment ago; its groups are
# ws-bench's defaults (wsb for the hand-off, wsp0..3 for the pairs).
hport=$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 1)->sockport')
wsconf="counter.http.port=$hport;counter.group.wsb=max:1"
for i in 0 1 2 3; do wsconf="$wsconf;counter.group.wsp$i=max:1"; done
"$bin/mchost" -p 0 -l 127.0.0.1 -F "$tmp/mcport" \
    -X "$bin/.libs/counter.so,$conf;$wsconf" >"$tmp/ours.out" 2>&1 &
ours_pid=$!
for _ in $(seq 100); do
    [ -s "$tmp/mcport" ] && break
    sleep 0.05
done
[ -s "$tmp/mcport" ] || fail "mchost did not start: $(cat "$tmp/ours.out")"
cport=$(mc_stat "$(cat "$tmp/mcport")" counter_port)
[ -n "$cport" ] || fail "mchost stats have no counter_port"
"$bin/counter-bench" -p "$cport" -W ping -t 5 ||
    fail "ours does not answer Noop"

# check_wait FILE FIELD=VALUE... MIN_FIELD...: the line has each exact
# FIELD=VALUE and every other FIELD named is above 0.
check_wait() {
    local out=$1 f v
    shift
    for f in "$@"; do
        case $f in
        *=*) grep -q " $f\( \|\$\)" "$out" ||
                 fail "$f expected: $(cat "$out")" ;;
        *)  v=$(field "$f" "$out")
            awk -v x="$v" 'BEGIN { exit !(x + 0 > 0) }' ||
                fail "$f not above 0: $(cat "$out")" ;;
        esac
    done
    echo "ok: $(cat "$out")"
}

"$bin/wait-bench" -p "$cport" -W handoff -t 0.3 -w 0.05 -l ours \
    >"$tmp/handoff.out" || fail "handoff run failed"
check_wait "$tmp/handoff.out" rounds handoff_p50_us noop_p50_us
"$bin/wait-bench" -p "$cport" -W handoff --gap 1 -t 0.3 -w 0.05 -l ours \
    >"$tmp/handoff1.out" || fail "handoff run on one worker failed"
check_wait "$tmp/handoff1.out" gap=1 rounds handoff_p50_us noop_p50_us
"$bin/wait-bench" -p "$cport" -W handoff --think-us 200 -t 0.3 -w 0.05 \
    -l ours >"$tmp/handoff-idle.out" || fail "handoff run from idle failed"
check_wait "$tmp/handoff-idle.out" think_us=200 rounds handoff_p50_us \
    noop_p50_us
"$bin/wait-bench" -p "$cport" -W semaphore -c 8 -m 2 --hold-us 500 -t 0.3 \
    -w 0.05 -l ours >"$tmp/sem.out" || fail "semaphore run failed"
check_wait "$tmp/sem.out" mode=wait requests_per_grant=2.00 failures=0 grants_s \
    hold_mean_us ceiling_s of_ceiling
"$bin/wait-bench" -p "$cport" -W semaphore --poll -c 8 -m 2 --hold-us 500 \
    -t 0.3 -w 0.05 -l ours >"$tmp/poll.out" ||
    fail "polling semaphore run failed"
check_wait "$tmp/poll.out" mode=poll failures=0 grants_s requests_per_grant
"$bin/wait-bench" -p "$cport" -W leases -c 20 -k 20 --settle 0.6 \
    -P "$ours_pid" -l ours >"$tmp/leases.out" || fail "leases run failed"
check_wait "$tmp/leases.out" leases=400 events=400 missing=0 expirations=400 \
    errors=0 rss_after_kb bytes_per_lease_used idle_probes
"$bin/wait-bench" -p "$cport" -W lease_list -c 2 -k 64 -t 0.3 -w 0.05 \
    -l ours >"$tmp/llist.out" || fail "lease_list run failed"
check_wait "$tmp/llist.out" leases=128 lists list_p50_us noop_p50_us

# The client row: the pair workload through libmccounter's non-blocking API.
"$bin/client-bench" -p "$cport" -c 4 -d 8 -t 0.3 -w 0.05 -l ours --kv \
    >"$tmp/lib.out" || fail "client-bench run failed"
check_wait "$tmp/lib.out" via=libmccounter errors=0 ops_s p99_us

# The WebSocket rows: hand-off and pairs, each against the binary port.
"$bin/ws-bench" -p "$cport" -H "$hport" -W handoff -t 0.3 -w 0.05 -l ours \
    >"$tmp/ws-handoff.out" || fail "WebSocket hand-off run failed"
check_wait "$tmp/ws-handoff.out" rounds ws_p50_us bin_p50_us
for p in ws bin; do
    "$bin/ws-bench" -p "$cport" -H "$hport" -W pairs --proto "$p" -c 4 \
        -t 0.3 -w 0.05 -l ours >"$tmp/ws-pairs-$p.out" ||
        fail "$p pairs run failed"
    check_wait "$tmp/ws-pairs-$p.out" "proto=$p" conns=4 failures=0 pairs_s
done

# The rate-limit rows on ours, unless it does not know the checks yet.
"$bin/counter-bench" -p "$cport" -c 2 -d 4 -t 0.2 -w 0 -W window -l ours \
    --kv >"$tmp/ours-probe.out" 2>&1
limits=1
if grep -q ' last_error=0x81' "$tmp/ours-probe.out"; then
    echo "skip: ours answers 0x81 to Window_check: no rate-limit rows"
    limits=0
fi
for w in window gcra; do
    [ "$limits" = 1 ] || break
    "$bin/counter-bench" -p "$cport" -c 4 -d 8 -t 0.3 -w 0.1 -W "$w" \
        -P "$ours_pid" -l ours --kv >"$tmp/ours-$w.out" ||
        fail "$w run on ours failed: $(cat "$tmp/ours-$w.out")"
    check_checks "$tmp/ours-$w.out"
    "$bin/counter-bench" -p "$cport" -c 4 -d 8 -t 0.2 -w 0 -W "$w" --hot \
        -l ours --kv >"$tmp/ours-$w-hot.out" ||
        fail "$w hot run on ours failed: $(cat "$tmp/ours-$w-hot.out")"
    check_checks "$tmp/ours-$w-hot.out"
    "$bin/counter-bench" -p "$cport" -c 2 -t 0.5 -W "$w" --accuracy \
        -l ours >"$tmp/ours-$w-acc.out" ||
        fail "$w accuracy run on ours failed: $(cat "$tmp/ours-$w-acc.out")"
    check_accuracy "$tmp/ours-$w-acc.out"
    grep -q ' limited=[1-9]' "$tmp/ours-$w-acc.out" ||
        fail "$w accuracy run never limited: $(cat "$tmp/ours-$w-acc.out")"
done
kill "$ours_pid" 2>/dev/null && wait "$ours_pid" 2>/dev/null
ours_pid=

# The throttle rows on a server of ours whose node has 2000 units/s and
# tenant A of the fairness run a reserve of 600.
printf '%s\n' "node.capacity = 2000" \
    "tenant.fairA-0000000000 = reserved:600" >"$tmp/throttle.conf"
rm -f "$tmp/mcport"
"$bin/mchost" -p 0 -l 127.0.0.1 -F "$tmp/mcport" -X \
    "$bin/.libs/counter.so,$conf;counter.throttle.config=$tmp/throttle.conf" \
    >"$tmp/thr.out" 2>&1 &
thr_pid=$!
for _ in $(seq 100); do
    [ -s "$tmp/mcport" ] && break
    kill -0 "$thr_pid" 2>/dev/null || break
    sleep 0.05
done
[ -s "$tmp/mcport" ] ||
    fail "mchost with a throttle file did not start: $(cat "$tmp/thr.out")"
cport=$(mc_stat "$(cat "$tmp/mcport")" counter_port)
[ -n "$cport" ] || fail "mchost stats have no counter_port"
"$bin/counter-bench" -p "$cport" -W ping -t 5 || fail "ours does not answer Noop"
"$bin/counter-bench" -p "$cport" -c 2 -d 4 -t 0.2 -w 0 -W throttle -l ours \
    --kv >"$tmp/thr-probe.out" 2>&1
if grep -q ' last_error=0x81' "$tmp/thr-probe.out"; then
    echo "skip: ours answers 0x81 to Throttle: no throttle rows"
    exit 0
fi
"$bin/counter-bench" -p "$cport" -c 4 -d 8 -t 0.3 -w 0.1 -W throttle \
    -P "$thr_pid" -l ours --kv >"$tmp/ours-throttle.out" ||
    fail "throttle run on ours failed: $(cat "$tmp/ours-throttle.out")"
# 2000 units/s: most charges are throttled, any of them may be (the
# probe may have spent this second's pool), so only the answers count.
check_run "$tmp/ours-throttle.out"
grep -q ' limited=[1-9]' "$tmp/ours-throttle.out" ||
    fail "2000 units/s never throttled: $(cat "$tmp/ours-throttle.out")"
"$bin/counter-bench" -p "$cport" -c 4 -d 8 -t 0.2 -w 0 -W throttle --hot \
    -l ours --kv >"$tmp/ours-throttle-hot.out" ||
    fail "hot throttle run on ours failed: $(cat "$tmp/ours-throttle-hot.out")"
check_run "$tmp/ours-throttle-hot.out"
"$bin/counter-bench" -p "$cport" -W fairness -c 1 --a-depth 4 --b-conns 4 \
    -t 1 -w 0.1 --capacity 2000 --reserve 600 -l ours >"$tmp/ours-fair.out" ||
    fail "fairness run on ours failed: $(cat "$tmp/ours-fair.out")"
check_fair "$tmp/ours-fair.out"
# The server's own figures: B floods, so the node is full; A sent more
# than its reserve, so it got it.
line=$(grep ' mode=second second=1 ' "$tmp/ours-fair.out")
a=$(echo "$line" | sed -n 's/.* a_allowed=\([0-9]*\).*/\1/p')
as=$(echo "$line" | sed -n 's/.* a_sent=\([0-9]*\).*/\1/p')
t=$(echo "$line" | sed -n 's/.* total=\([0-9]*\).*/\1/p')
[ "$t" -le 2000 ] || fail "node total above capacity: $line"
[ "$as" -lt 600 ] || [ "$a" -ge 600 ] ||
    fail "A got less than its reserve: $line"
exit 0
