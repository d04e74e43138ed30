#!/bin/bash
# tenant-run.sh: measures tenants on connections (bench/tenant-bench) and
# writes doc/performance-tenants.md and its plot, performance-tenants.svg.
# The seed's case: tenant A on 1 connection with a 30% reserve, tenant B
# on 10 and on 32 connections, both sending Acquire/Release pairs as fast
# as they can, at a node capacity below what B alone sends; blocking and
# non-blocking; then the same without throttling; then the overhead of
# charging on counter-bench's 64x32 pair workload when nobody is over
# their share. Every run is listed; the summary takes medians.
#
# usage: bench/tenant-run.sh [BUILDDIR]     (default: the current directory)
# environment:
#   TENANT_SECONDS=10   seconds per tenant-bench run
#   TENANT_CAPACITY=20000  units per second of the node; A reserves 30%
#   TENANT_REPEAT=3     runs per case
#   BENCH_OUT=DIR       where the page and the plot go (default SRCDIR/doc)
# Every server runs on 127.0.0.1 only and is stopped by pid on exit.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
. "$src/bench/lib.sh"
tb="$build/tenant-bench"
cb="$build/counter-bench"
mchost="$build/mchost"
so="$build/.libs/counter.so"
out=${BENCH_OUT:-$src/doc}
secs=${TENANT_SECONDS:-10}
cap=${TENANT_CAPACITY:-20000}
rep=${TENANT_REPEAT:-3}
reserve=$((cap * 3 / 10))
bench_tmp tenants

log() { echo "tenant-run: $*" >&2; }

# start MORE: mchost + counter.so with 2 worker threads and settings MORE;
# sets srv_pid and srv_port.
start() {
    local d="$tmp/srv" cport
    mkdir -p "$d"; rm -f "$d/port"
    "$mchost" -p 0 -l 127.0.0.1 -F "$d/port" -X \
        "$so,counter.enable=true;counter.port=0;counter.threads=2$1" \
        >"$d/stdout" 2>"$d/stderr" &
    srv_pid=$!; pids="$pids $srv_pid"
    for _ in $(seq 100); do
        [ -s "$d/port" ] && break
        sleep 0.05
    done
    cport=$(mc_stat "$(cat "$d/port")" counter_port)
    [ -n "$cport" ] || { log "no server: $(cat "$d/stderr")"; exit 1; }
    srv_port=$cport
}

stop() {
    kill "$srv_pid" 2>/dev/null
    wait "$srv_pid" 2>/dev/null
}

# The users file must be the owner's alone, or the server refuses it.
(umask 077
 printf '%s\n' "a A - tenant-a-secret-0123" "b B - tenant-b-secret-0123" \
     >"$tmp/users")
printf '%s\n' "node.capacity = $cap" "tenant.A = reserved:$reserve" \
    >"$tmp/throttle.conf"
throttled=";counter.users_file=$tmp/users;counter.throttle.config=$tmp/throttle.conf"

: >"$tmp/runs"
# case NAME SETTINGS TENANT-BENCH-ARGS...
case_runs() {
    local name=$1 more=$2 i
    shift 2
    for i in $(seq "$rep"); do
        start "$more"
        log "$name, run $i"
        "$tb" -p "$srv_port" -P "$srv_pid" -t "$secs" -l "$name" \
            --csv "$tmp/$name.$i.csv" "$@" >>"$tmp/runs" ||
            log "$name run $i failed"
        stop
    done
}
case_runs blocking-10 "$throttled" -b 10
case_runs blocking-32 "$throttled" -b 32
case_runs nonblocking-32 "$throttled" -b 32 --nonblocking
case_runs unthrottled-32 "" -b 32 --no-auth

# The overhead: counter-bench pairs at 64 x 32 on 1000 names, charged to
# a default tenant at a capacity nobody reaches, against no charging;
# interleaved.
printf '%s\n' "node.capacity = 4000000000" >"$tmp/open.conf"
: >"$tmp/overhead"
for i in $(seq "$rep"); do
    for mode in off on; do
        more=""
        [ "$mode" = on ] && more=";counter.default_tenant=bench;counter.throttle.config=$tmp/open.conf"
        start "$more"
        log "overhead $mode, run $i"
        "$cb" -p "$srv_port" -W pair -c 64 -d 32 -k 1000 -t "$secs" -w 1 \
            -P "$srv_pid" -l "charging-$mode" --kv >>"$tmp/overhead" ||
            log "overhead run failed"
        stop
    done
done

perl - "$tmp" "$out" "$cap" "$reserve" "$secs" "$rep" <<'EOF'
use strict;
use warnings;
my ($tmp, $out, $cap, $reserve, $secs, $rep) = @ARGV;
sub kv { my %h = map { split /=/, $_, 2 } split ' ', $_[0]; \%h }
sub median { my @v = sort { $a <=> $b } @_; @v ? $v[int($#v / 2)] : 'n/a' }
open my $fh, '<', "$tmp/runs" or die;
my @runs = map { kv($_) } grep { /^server=/ } <$fh>;
open $fh, '<', "$tmp/overhead" or die;
my @over = map { kv($_) } grep { /^server=/ } <$fh>;
my %by;
push @{ $by{$_->{server}} }, $_ for @runs;
open my $o, '>', "$out/performance-tenants.md" or die;
my $date = `date -u '+%Y-%m-%d %H:%M UTC'`; chomp $date;
my $cpu = `sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1`;
chomp $cpu;
my $nproc = `nproc`; chomp $nproc;
my ($load) = split ' ', `cat /proc/loadavg`;
print $o <<"EOT";
# Tenants on connections: measurements

Written by `bench/tenant-run.sh` ($date; $nproc CPUs, $cpu; shared
with other work, load average $load at the end, so the figures move from
run to run: every run is listed, the summary takes medians). The seed's case: tenant A sends
Acquire/Release pairs on 1 connection and has a reserve of $reserve
units per second (30% of the node's capacity of $cap); tenant B sends
the same on 10 or 32 connections; each request costs 1 unit. Each
connection keeps a batch of 16 pairs in flight. Counts are per second of
the monotonic clock, whole seconds of a $secs s run, counted by the
client as the answers that were not `Throttled`. `server_cpu` is the
server's CPU time over the run per second of wall time (1.0 = one core);
`server_cpu_late_half` the same over the second half of each second,
when B has spent its share and is paused (only A is served then).
`unthrottled` is the same load on a server that charges nobody. The
node's maximum can pass the capacity by about a batch: the client counts
an answer when it arrives, and a batch paid at the very end of a second
may arrive in the next one.

| case | A min units/s | A mean | B mean | node max (capacity $cap) | server CPU | CPU, late half-seconds | Throttled answers | hints too early |
|---|---|---|---|---|---|---|---|---|
EOT
for my $name (qw(blocking-10 blocking-32 nonblocking-32 unthrottled-32)) {
    my $r = $by{$name} or next;
    my @f = map { my $k = $_; median(map { $_->{$k} // 0 } @$r) }
        qw(a_min a_mean b_mean node_max server_cpu server_cpu_late_half
           throttled too_early);
    print $o "| $name | " . join(' | ', @f) . " |\n";
}
print $o "\nEvery run:\n\n```\n";
for my $r (@runs) {
    print $o join(' ', map { "$_=$r->{$_}" } sort keys %$r) . "\n";
}
print $o "```\n";
my @on = map { $_->{ops_s} } grep { $_->{server} eq 'charging-on' } @over;
my @off = map { $_->{ops_s} } grep { $_->{server} eq 'charging-off' } @over;
my ($mon, $moff) = (median(@on), median(@off));
my $pairs = join ', ', map { $off[$_] ? sprintf('%.3f', $on[$_] / $off[$_]) : 'n/a' }
    grep { defined $on[$_] } 0 .. $#off;
my $ratio = ($moff && $moff ne 'n/a' && $mon ne 'n/a')
    ? sprintf('%.3f', $mon / $moff) : 'n/a';
print $o <<"EOT";

## Overhead of charging

counter-bench's pair workload, 64 connections x 32 in flight on 1000
names, $secs s per run, $rep runs each, interleaved: every request
charged to a default tenant at a capacity of 4000000000 (nobody over
their share), against a server that charges nobody. Median ops/s:
charging $mon, not charging $moff: ratio **$ratio** (target >= 0.9).
The ratio of each interleaved pair (on / off, in run order): $pairs.

```
EOT
for my $r (@over) {
    print $o join(' ', map { "$_=$r->{$_}" } sort keys %$r) . "\n";
}
print $o "```\n\n![units per second of each tenant](performance-tenants.svg)\n";
close $o;
# The plot: the first run of blocking-32 and of unthrottled-32.
open my $g, '>', "$tmp/plot.gp" or die;
print $g <<"EOT";
set terminal svg size 800,420 dynamic
set output '$out/performance-tenants.svg'
set title 'Units served per second: A (1 connection, 30% reserve) vs B (32 connections)'
set xlabel 'second of the run'
set ylabel 'units per second (log scale)'
set key outside right
set logscale y
set yrange [1000:*]
set arrow from graph 0, first $cap to graph 1, first $cap nohead dashtype 2
set label 'capacity' at graph 0.02, first $cap offset 0,0.7
plot '$tmp/blocking-32.1.csv' using 1:2 with linespoints title 'A, throttled', \\
     '$tmp/blocking-32.1.csv' using 1:3 with linespoints title 'B, throttled', \\
     '$tmp/unthrottled-32.1.csv' using 1:2 with linespoints title 'A, no throttling', \\
     '$tmp/unthrottled-32.1.csv' using 1:3 with linespoints title 'B, no throttling'
EOT
close $g;
EOF
gnuplot "$tmp/plot.gp" || log "gnuplot failed"
cat "$tmp/runs" "$tmp/overhead"
log "wrote $out/performance-tenants.md"
