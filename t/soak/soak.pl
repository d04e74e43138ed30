#!/usr/bin/perl
# soak.pl: bounded soak with faults against mchost + counter.so on loopback.
# Hundreds of connections pipeline random Acquire/Release/Get/Dump/Stats/Noop
# on a few hundred counters and end abruptly (close, reset, half-close in
# the middle of a request, a client that stops reading). Checks: answers in
# order, none lost or doubled; no double grant; at quiescent points the
# server's Get equals what the live connections hold; at the end everything
# is 0, GC removes every counter and RSS is back near its baseline.
#
# Usage: soak.pl [--duration S] [--conns N] [--counters N] [--seed N]
#                [--interval S] [--rss-slack MB]
# (MCHOST and COUNTER_SO from the environment; --interval is the server's
# consumption window, so GC runs every S seconds during the soak.)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use CounterTest;
use Getopt::Long;
use IO::Select;
use Socket qw(SOL_SOCKET SO_LINGER SHUT_WR IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time sleep);
use Errno qw(EAGAIN EWOULDBLOCK EINTR);
use POSIX qw(WNOHANG);

my %opt = (duration => 25, conns => 200, counters => 300, seed => time ^ $$,
           'rss-slack' => 32, interval => 2);
GetOptions(\%opt, 'duration=i', 'conns=i', 'counters=i', 'seed=i',
           'rss-slack=i', 'interval=i') or die "usage: see the header\n";
srand $opt{seed};
# CounterTest's watchdog (180 s) bounds ordinary tests; a soak runs for its
# duration, so its bound is that plus the same margin.
alarm($opt{duration} + 180);
$SIG{PIPE} = 'IGNORE';      # writes to connections the server dropped
$| = 1;
print "soak: seed $opt{seed}, $opt{duration} s, $opt{conns} connections, ",
      "$opt{counters} counters\n";
die "soak: MCHOST and COUNTER_SO must name the built host and extension\n"
    unless have_host();

# Every counter has its own fixed cap; Acquires use a maximum at or below it,
# so the sum of live acknowledged holdings may never exceed the cap.
my @names = map { sprintf 'soak-%04d', $_ } 0 .. $opt{counters} - 1;
my %cap = map { $_ => 1 + int rand 8 } @names;

my %fig = map { $_ => 0 } qw(requests answers acquired refused released
    ends_close ends_reset ends_half ends_stall ends_lost quiescent mismatch_waits);
my $fail = 0;

our $server_pid;    # the host's pid, once it is up

sub failed {
    my ($msg) = @_;
    print "soak: FAIL: $msg\n";
    $fail++;
    host_check();
    die "soak: too many failures\n" if $fail > 20;
}

# A host that died makes every later step fail slowly (or spin on refused
# connects until the watchdog): stop at once, saying so.
sub host_check {
    return unless $server_pid && waitpid($server_pid, WNOHANG) == $server_pid;
    print "soak: FAIL: the host exited (wait status $?)\n";
    die "soak: stopping\n";
}

my $srv = start_host(config => {
    'consumption_stats.interval' => $opt{interval}, threads => 2,
    buckets => 4096 });
my $pid = $srv->{pid};
$server_pid = $pid;
my $port = $srv->{counter_port} or die "soak: no counter_port in stats\n";

# Resident set of the server, in KiB.
sub rss_kib {
    open my $fh, '<', "/proc/$pid/status" or return 0;
    while (<$fh>) { return $1 if /^VmRSS:\s+(\d+)/ }
    return 0;
}

# CPU seconds the server has used.
sub cpu_seconds {
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my @f = split ' ', (split /\)/, scalar <$fh>)[-1];
    return ($f[11] + $f[12]) / 100;
}

# ---- one client connection: a pipelined request stream and its model ----
my %conns;          # fileno => conn
my $next_id = 0;

# Opens a non-blocking connection.
sub conn_open {
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Blocking => 1) or return;
    setsockopt $s, IPPROTO_TCP, TCP_NODELAY, 1;
    $s->blocking(0);
    my $c = { sock => $s, fd => fileno $s, id => $next_id++, seq => 0, out => '', in => '',
              pending => [], held => {}, batches => 3 + int rand 40,
              fate => pick_fate(), dump_open => undef };
    $conns{$c->{fd}} = $c;
    return $c;
}

# Chooses how a connection will end.
sub pick_fate {
    my $r = rand;
    return $r < 0.40 ? 'close' : $r < 0.60 ? 'reset'
         : $r < 0.75 ? 'half' : $r < 0.85 ? 'stall' : 'lost';
}

# Builds one random request; remembers what its answer must look like.
sub random_request {
    my ($c) = @_;
    my $opq = ++$c->{seq};
    my $r = rand;
    my $name = $names[int rand @names];
    my %p = (opaque => $opq, name => $name);
    if ($r < 0.40) {
        my $res = 1 + int rand($cap{$name} < 3 ? $cap{$name} : 3);
        my $max = $cap{$name} - int rand 2;
        $max = $cap{$name} if $max < $res;
        @p{qw(op res max)} = (OP_ACQUIRE, $res, $max);
        $p{bytes} = req_acquire($name, $res, $max, opaque => $opq);
    } elsif ($r < 0.75) {
        my @mine = grep { $c->{held}{$_} } keys %{ $c->{held} };
        $name = $p{name} = $mine[int rand @mine] if @mine && rand > 0.2;
        my $res = int rand 3;
        @p{qw(op res)} = (OP_RELEASE, $res);
        $c->{inflight}{$name} += $res;
        $p{bytes} = req_release($name, $res, opaque => $opq);
    } elsif ($r < 0.90) {
        $p{op} = OP_GET;
        $p{bytes} = req_get($name, opaque => $opq);
    } elsif ($r < 0.94) {
        $p{op} = OP_DUMP;
        $p{bytes} = req_dump(opaque => $opq);
    } elsif ($r < 0.97) {
        $p{op} = OP_STATS;
        $p{bytes} = req_stats(opaque => $opq);
    } else {
        $p{op} = OP_NOOP;
        $p{bytes} = req_noop(opaque => $opq);
    }
    return \%p;
}

# Sum of what the live connections hold on name (acknowledged grants).
sub live_sum {
    my ($name) = @_;
    my $sum = 0;
    $sum += $_->{held}{$name} // 0 for values %conns;
    return $sum;
}

# A lower bound of the server's consumption of name: acknowledged grants
# minus the releases still in flight (the server may have done those).
sub live_floor {
    my ($name) = @_;
    my $sum = 0;
    for my $c (values %conns) {
        # After a half-close the server may release at once (EOF seen).
        next if $c->{half_closed};
        my $h = ($c->{held}{$name} // 0) - ($c->{inflight}{$name} // 0);
        $sum += $h if $h > 0;
    }
    return $sum;
}

# Checks one answer against the request at the head of the connection's
# queue; Dump answers stay at the head until their terminator.
sub check_answer {
    my ($c, $a) = @_;
    my $q = $c->{pending}[0];
    if (!$q) {
        failed("conn $c->{id}: answer opaque $a->{opaque} with nothing pending");
        return;
    }
    if ($a->{opaque} != $q->{opaque} || $a->{opcode} != $q->{op} ||
        $a->{magic} != 0x91) {
        failed(sprintf "conn %d: expected answer opaque %u op %02x, got "
               . "magic %02x op %02x opaque %u", $c->{id}, $q->{opaque},
               $q->{op}, $a->{magic}, $a->{opcode}, $a->{opaque});
        shift @{ $c->{pending} };
        return;
    }
    my ($st, $body, $name) = ($a->{status}, $a->{body}, $q->{name});
    my $held = $c->{held}{$name} // 0;
    if ($q->{op} == OP_DUMP) {
        return if $a->{body_len} > 0 && $st == 0;     # a record: keep waiting
    } elsif ($q->{op} == OP_ACQUIRE) {
        if ($st == ST_OK && $body eq u32($q->{res})) {
            $c->{held}{$name} = $held + $q->{res};
            $fig{acquired}++;
            # The server granted with consumption <= maximum <= cap, and
            # it holds at least the floor.
            failed("double grant on $name: live holders have at least "
                   . live_floor($name) . " > cap $cap{$name}")
                if live_floor($name) > $cap{$name};
        } elsif ($st == ST_NOT_AVAILABLE) {
            $fig{refused}++;
        } else {
            failed("conn $c->{id}: Acquire $name answered $st");
        }
    } elsif ($q->{op} == OP_RELEASE) {
        my $want = ($q->{res} <= $held && $held > 0) ? ST_OK : ST_NOT_ACQUIRED;
        # A counter nobody here holds may have been collected already.
        my $ok = $st == $want || ($held == 0 && $st == ST_NOT_FOUND);
        failed("conn $c->{id}: Release $q->{res} of $name holding $held "
               . "answered $st") unless $ok;
        $c->{inflight}{$name} -= $q->{res};
        if ($st == ST_OK) {
            $c->{held}{$name} = $held - $q->{res};
            delete $c->{held}{$name} unless $c->{held}{$name};
            $fig{released}++;
        }
    } elsif ($q->{op} == OP_GET) {
        my $v = $st == ST_OK ? unpack('N', $body) : 0;
        failed("conn $c->{id}: Get $name answered $st / $v while holding $held")
            if ($held > 0 && ($st != ST_OK || $v < $held))
            || ($st != ST_OK && $st != ST_NOT_FOUND);
    } elsif ($st != ST_OK) {
        failed("conn $c->{id}: op $q->{op} answered $st");
    }
    shift @{ $c->{pending} };
    $fig{answers}++;
}

# Reads what the socket has; returns false on EOF or error.
sub conn_read {
    my ($c) = @_;
    my $n = sysread $c->{sock}, $c->{in}, 1 << 16, length $c->{in};
    return 1 if !defined $n && ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR);
    return 0 unless $n;
    while (length $c->{in} >= 12) {
        my ($m, $op, $st, $rsv, $len, $opq) = unpack 'CCCCNN', $c->{in};
        last if length $c->{in} < 12 + $len;
        my $raw = substr $c->{in}, 0, 12 + $len, '';
        check_answer($c, { magic => $m, opcode => $op, status => $st,
                           body_len => $len, opaque => $opq,
                           body => substr($raw, 12) });
    }
    return 1;
}

# Writes what is queued; returns false on error.
sub conn_write {
    my ($c) = @_;
    return 1 unless length $c->{out};
    my $n = syswrite $c->{sock}, $c->{out};
    return 1 if !defined $n && ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR);
    return 0 unless defined $n;
    substr $c->{out}, 0, $n, '';
    return 1;
}

# Ends a connection; the server must release everything it held.
sub conn_end {
    my ($c, $how) = @_;
    return if $c->{dead}++;
    delete $conns{$c->{fd}};
    if ($how eq 'reset') {
        setsockopt $c->{sock}, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0);
    }
    close $c->{sock};
    $fig{"ends_$how"}++;
}

# Queues a batch of 1..8 pipelined requests, or starts the connection's end.
sub conn_next_batch {
    my ($c) = @_;
    if ($c->{batches}-- > 0) {
        for (1 .. 1 + int rand 8) {
            my $p = random_request($c);
            push @{ $c->{pending} }, $p;
            $c->{out} .= $p->{bytes};
            $fig{requests}++;
        }
        return;
    }
    my $fate = $c->{fate};
    if ($fate eq 'close') {
        conn_end($c, 'close');
    } elsif ($fate eq 'reset' || $fate eq 'lost') {
        # Requests still in flight: the answers are lost with the socket.
        my $p = random_request($c);
        syswrite $c->{sock}, $p->{bytes};
        conn_end($c, $fate);
    } elsif ($fate eq 'half') {
        # A last batch and half a request, then no more: the server sees
        # EOF mid-request and must still answer the complete ones.
        my $out = '';
        for (1 .. int rand 5) {
            my $p = random_request($c);
            push @{ $c->{pending} }, $p;
            $out .= $p->{bytes};
            $fig{requests}++;
        }
        my $p = random_request($c);
        $out .= substr($p->{bytes}, 0, 1 + int rand(length($p->{bytes}) - 1));
        $c->{sock}->blocking(1);
        syswrite $c->{sock}, $out;
        $c->{sock}->blocking(0);
        shutdown $c->{sock}, SHUT_WR;
        $c->{half_closed} = time;
    } else {
        # Stops reading while Dumps fill the server's send buffers.
        $c->{stalled} = time;
        my $d = '';
        $d .= req_dump(opaque => ++$c->{seq}) for 1 .. 200;
        syswrite $c->{sock}, $d;
    }
}

# Runs the event loop for up to $secs; with $drain set, issues no new
# batches and returns once no live connection waits for an answer.
sub run_loop {
    my ($secs, $drain) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        host_check();
        my ($r, $w) = (IO::Select->new, IO::Select->new);
        my $busy = 0;
        for my $c (values %conns) {
            if ($c->{stalled}) {
                conn_end($c, 'stall') if time - $c->{stalled} > 1;
                next;
            }
            if (!$drain && !@{ $c->{pending} } && !length $c->{out} &&
                !$c->{half_closed}) {
                conn_next_batch($c);
                next if $c->{dead} || $c->{stalled};
            }
            $busy++ if @{ $c->{pending} } || $c->{half_closed};
            $r->add($c->{sock});
            $w->add($c->{sock}) if length $c->{out};
        }
        return 1 if $drain && !$busy;
        my ($rr, $ww) = IO::Select->select($r, $w, undef, 0.2);
        for my $s (@{ $ww // [] }) {
            my $c = $conns{fileno $s} or next;
            next if $c->{dead};
            conn_write($c) or conn_end($c, 'close');
        }
        for my $s (@{ $rr // [] }) {
            my $c = $conns{fileno $s} or next;
            next if $c->{dead} || conn_read($c);
            # EOF: expected only after our half-close; then every complete
            # request sent before must have been answered.
            if ($c->{half_closed}) {
                failed("conn $c->{id}: half-close lost "
                       . scalar(@{ $c->{pending} }) . " answers")
                    if @{ $c->{pending} };
                conn_end($c, 'half');
            } else {
                failed("conn $c->{id}: server closed the connection");
                conn_end($c, 'close');
            }
        }
        if (!$drain) {
            conn_open() while keys %conns < $opt{conns};
        }
    }
    return 0;
}

# Compares the server's Get of every counter with the model, polling for a
# bounded time because closed connections are released asynchronously.
sub check_model {
    my ($what) = @_;
    my $chk = $srv->connect;
    my $bad;
    my $ok = wait_until(sub {
        my $all = '';
        $all .= req_get($names[$_], opaque => $_) for 0 .. $#names;
        $chk->send($all);
        $bad = undef;
        for my $i (0 .. $#names) {
            my $a = $chk->response or die "soak: checker lost its connection\n";
            my $v = $a->{status} == ST_OK ? unpack('N', $a->{body}) : 0;
            my $want = live_sum($names[$i]);
            failed("double grant on $names[$i]: live holders have $want > "
                   . "cap $cap{$names[$i]}") if $want > $cap{$names[$i]};
            if ($a->{opaque} != $i || $v != $want ||
                ($a->{status} != ST_OK && $a->{status} != ST_NOT_FOUND) ||
                ($want > 0 && $a->{status} != ST_OK)) {
                $bad //= "$names[$i]: server $v (status $a->{status}), model $want";
            }
        }
        $fig{mismatch_waits}++ if $bad;
        return !$bad;
    }, 15);
    $chk->close;
    failed("$what: $bad") unless $ok;
    $fig{quiescent}++;
}

# ---- the run ----
# RSS baseline: after the first phase, with every connection and buffer
# of the steady state allocated once (allocators keep freed memory).
my $rss_start = rss_kib();
my $cpu0 = cpu_seconds();
my $t0 = time;
my $phase = 4;
my ($rss0, $rss_peak) = (undef, 0);
while (time - $t0 < $opt{duration}) {
    run_loop($phase, 0);
    run_loop(15, 1) or failed('connections did not drain in 15 s');
    check_model(sprintf 'quiescent point at %.0f s', time - $t0);
    $rss0 //= rss_kib();
    my $r = rss_kib();
    $rss_peak = $r if $r > $rss_peak;
}
conn_end($_, 'close') for values %conns;
check_model('after every client left');

# Every counter is 0 now; within a few windows GC must remove them all.
my $chk = $srv->connect;
my $left;
wait_until(sub {
    my $recs = $chk->dump_records;
    $left = scalar @$recs;
    return $left == 0;
}, 4 * $opt{interval} + 10) or failed("GC left $left counters");
my %st = map { @$_ } $chk->stats_pairs;
$chk->close;
failed("Stats objects = $st{objects} after GC") if ($st{objects} // 0) != 0;
failed("Stats curr_connections = $st{curr_connections}")
    if defined $st{curr_connections} && $st{curr_connections} > 1;

my $rss1 = rss_kib();
my $cpu = cpu_seconds() - $cpu0;
printf "soak: %d requests, %d answers (%d acquired, %d refused, %d released)\n",
    @fig{qw(requests answers acquired refused released)};
printf "soak: connections ended by close %d, reset %d, half-close %d, "
     . "stalled reader %d, close with answers in flight %d\n",
    @fig{qw(ends_close ends_reset ends_half ends_stall ends_lost)};
printf "soak: %d quiescent checks (%d re-polls), server CPU %.1f s, "
     . "RSS at start %d KiB, baseline after warm-up %d KiB, peak %d KiB, "
     . "end %d KiB, gc_count %s\n",
    $fig{quiescent}, $fig{mismatch_waits}, $cpu, $rss_start, $rss0,
    $rss_peak, $rss1, $st{gc_count} // '?';
failed("RSS did not return near its baseline: $rss0 -> $rss1 KiB")
    if $rss1 > $rss0 + $opt{'rss-slack'} * 1024;
$srv->stop;
my $err = $srv->stderr;
failed("sanitizer report from the server:\n$err")
    if $err =~ /(?:Sanitizer|runtime error:)/;
print $fail ? "soak: FAILED ($fail problems)\n" : "soak: passed\n";
exit($fail ? 1 : 0);
