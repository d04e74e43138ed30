#!/usr/bin/perl
# 24-counterctl-wait.t: counterctl acquire and run waiting in the server's
# queue (wait_acquire) with --wait, --lease and MAXIMUM - (a group's):
# granted, timed out (75), refused (1); waiting without polling; run
# renewing its lease, and stopping its command (75) when the lease is
# lost or the server stops; run falling back to retried Acquires against a
# server that does not know wait_acquire (a stand-in answering 0x81).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::IP;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'the reference has no wait_acquire' if $ENV{CNT_TEST_REFERENCE};
plan skip_all => 'mchost or counter.so not built' unless have_host;
plan skip_all => 'needs /proc to tell a finished command from a running one'
    unless -r "/proc/$$/stat";

# Groups: lic (maximum 2, no wait, no lease) and glease (maximum 1, a 2 s
# lease, which run renews without knowing its length).
my $srv = start_host(config => { 'group.lic' => 'max:2',
                                 'group.glease' => 'max:1,lease:2s' });
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);
my $hold = $srv->connect;

# Starts counterctl -p PORT with args, output in a directory of its own;
# returns { pid, dir }.
sub ctl_start {
    my $d = tempdir(DIR => $dir);
    return { pid => spawn_to_files($d, $CTL, '-p', $port, @_), dir => $d };
}

# Waits (bounded) for a started counterctl: (exit code, stdout, stderr).
sub ctl_finish { finish_bounded($_[0]{pid}, $_[0]{dir}) }

# Runs counterctl -p PORT args to the end.
sub ctl { ctl_finish(ctl_start(@_)) }

# The server's stats as a hash.
sub stats { return map { @$_ } $hold->stats_pairs }

# How much each named stat grew since %before.
sub grown {
    my ($before, @names) = @_;
    my %s = stats();
    return map { $s{$_} - $before->{$_} } @names;
}

# Current consumption of a counter (-1 when it does not exist).
sub current {
    my $r = $hold->call(req_get($_[0]));
    return $r && $r->{status} == ST_OK ? unpack('N', $r->{body}) : -1;
}

# The pid a command wrote to file, once it is there (tracked).
sub child_in {
    my ($file) = @_;
    my $child = wait_until(sub {
        open my $fh, '<', $file or return;
        my $l = <$fh>;
        return $l && $l =~ /^(\d+)$/ ? $1 : undef;
    });
    track_pid($child) if $child;
    return $child;
}

# True when pid is gone within a generous bound, then forgotten.
sub gone {
    my ($pid) = @_;
    my $ok = wait_until(sub { !pid_alive($pid) }, 5);
    untrack_pid($pid) if $ok;
    return $ok;
}

my ($rc, $out, $err, %before);

# -- acquire: granted, timed out, refused. --
($rc, $out, $err) = ctl('acquire', 'w-a', 2, 5, '--wait', '1');
is_deeply([$rc, $out], [0, "2\n"], 'acquire --wait: granted at once, prints the consumption');
$hold->call(req_acquire('w-b', 1, 5));
($rc, $out) = ctl('acquire', 'w-b', 2, 5, '--lease', '10');
is_deeply([$rc, $out], [0, "3\n"],
          'acquire --lease prints the consumption after the grant (1 held + 2)');
is(current('w-b'), 1, 'and its grant went with its connection');

$hold->call(req_acquire('w-t', 1, 1));
($rc, $out, $err) = ctl('acquire', 'w-t', 1, 1, '--wait', '0.2');
is_deeply([$rc, $out], [75, ''], 'acquire --wait on a busy counter: 75 once the wait ran out');
like($err, qr/\Acounterctl: w-t: resources not available before --wait ran out\n\z/,
     'and says so');
($rc, $out, $err) = ctl('acquire', 'w-t', 1, 1, '--lease', '5');
is($rc, 75, 'acquire --lease without --wait on a busy counter: 75 at once');
($rc, $out, $err) = ctl('acquire', 'w-t', 2, 1, '--wait', '1');
is($rc, 1, 'acquire of more than the maximum: 1');
like($err, qr/\Acounterctl: w-t: Exceeds maximum \(status 0x23\)\n\z/,
     'with the server\'s status');
($rc, $out, $err) = ctl('acquire', 'w-nogroup', 1, '-');
is($rc, 1, 'acquire MAXIMUM - of a name that is no group: 1');
like($err, qr/w-nogroup: Unknown group \(status 0x25\)/, 'Unknown group');
($rc, $out, $err) = ctl('acquire', 'w-t', 0, 1, '--wait', '1');
is($rc, 1, 'acquire --wait of 0 resources: 1');
like($err, qr/Invalid arguments \(status 0x04\)/, 'Invalid arguments');

# -- MAXIMUM -: the group's maximum, wait and lease. --
($rc, $out) = ctl('acquire', 'lic', 2, '-');
is_deeply([$rc, $out], [0, "2\n"], 'acquire lic 2 -: the group allows 2');
($rc, $out, $err) = ctl('acquire', 'lic', 3, '-');
is($rc, 1, 'acquire lic 3 -: more than the group allows: 1');
like($err, qr/lic: Exceeds maximum/, 'Exceeds maximum');
$hold->call(req_acquire('lic', 2, 2));
($rc, $out, $err) = ctl('acquire', 'lic', 1, '-');
is($rc, 75, 'the group full and its wait 0: 75 at once');
($rc) = ctl('acquire', 'lic', 1, 5, '--wait', '0.1');
is($rc, 75, 'a maximum in the request does not beat the group\'s');
$hold->call(req_release('lic', 2));

# -- acquire --wait waits in the queue, past -t, without polling. --
%before = stats();
my $w = ctl_start('-t', '0.3', 'acquire', 'w-t', 1, 1, '--wait', '30');
ok(wait_until(sub { my %s = stats(); $s{waiting} >= $before{waiting} + 1 }),
   'acquire --wait is queued in the server');
sleep 1;    # longer than -t: the queue wait is not an answer timeout
$hold->call(req_release('w-t', 1));
($rc, $out, $err) = ctl_finish($w);
is_deeply([$rc, $out], [0, "1\n"], 'granted when the holder released: prints 1')
    or diag($err);
is_deeply([grown(\%before, 'command:wait_acquire', 'command:acquire')], [1, 0],
          'one wait_acquire, no Acquire: it did not poll');

# -- run --wait: two runs wait in the queue, each runs in its turn. --
$hold->call(req_acquire('w-r', 1, 1));
%before = stats();
my @runs = map { ctl_start('run', 'w-r', 1, 1, '--wait', '30', '--', 'sh', '-c',
                           "touch '$dir/ran-$_'; '$CTL' -p $port get w-r") } 1 .. 2;
ok(wait_until(sub { my %s = stats(); $s{waiting} >= $before{waiting} + 2 }),
   'run --wait: two runs queued');
ok(!-e "$dir/ran-1" && !-e "$dir/ran-2", 'neither command has run yet');
$hold->call(req_release('w-r', 1));
for my $i (1 .. 2) {
    ($rc, $out, $err) = ctl_finish($runs[$i - 1]);
    is_deeply([$rc, $out], [0, "1\n"], "run --wait $i: ran holding 1 of 1")
        or diag($err);
}
ok(-e "$dir/ran-1" && -e "$dir/ran-2", 'both commands ran');
is_deeply([grown(\%before, 'command:wait_acquire', 'command:acquire',
                 'command:wait_release')], [2, 0, 2],
          'one wait_acquire and one wait_release per run, no Acquire');
is(current('w-r'), 0, 'run --wait released after its command');

$hold->call(req_acquire('w-r', 1, 1));
($rc, $out, $err) = ctl('run', 'w-r', 1, 1, '--wait', '0.3', '--', 'touch',
                        "$dir/ran-late");
is($rc, 75, 'run --wait on a counter held throughout: 75');
like($err, qr/w-r: resources not available before --wait ran out/, 'and says so');
ok(!-e "$dir/ran-late", 'the command never ran');
$hold->call(req_release('w-r', 1));

# -- run MAXIMUM -: a group's maximum. --
($rc, $out, $err) = ctl('run', 'lic', 2, '-', '--', 'sh', '-c',
                        "'$CTL' -p $port get lic");
is_deeply([$rc, $out], [0, "2\n"], 'run lic 2 -: holds 2 of the group while the command runs')
    or diag($err);

# -- run --lease: renewed while the command runs. --
%before = stats();
($rc, $out, $err) = ctl('run', 'w-l', 1, 1, '--lease', '1', '--', 'sleep', '3');
is($rc, 0, 'run --lease 1 -- sleep 3: the command finishes normally') or diag($err);
my ($renews, $expired) = grown(\%before, 'command:renew', 'lease_expirations');
ok($renews >= 1, "the lease was renewed ($renews renews)");
is($expired, 0, 'and never expired');
is(current('w-l'), 0, 'released after the command');

# A group's lease, whose length counterctl does not know: renewed too.
%before = stats();
($rc, $out, $err) = ctl('run', 'glease', 1, '-', '--', 'sleep', '3');
is($rc, 0, 'run glease 1 - -- sleep 3 (the group\'s 2 s lease): finishes normally')
    or diag($err);
($renews, $expired) = grown(\%before, 'command:renew', 'lease_expirations');
ok($renews >= 1, "the group's lease was renewed ($renews renews)");
is($expired, 0, 'and never expired');
# A group without a lease: the first Renew says so, and that is fine.
($rc, $out, $err) = ctl('run', 'lic', 1, '-', '--', 'sleep', '1.5');
is_deeply([$rc, $err], [0, ''], 'run of a group without a lease: quiet, exit 0');

# -- run --lease, counterctl stopped past its lease: the lease is lost. --
{
    %before = stats();
    my $r = ctl_start('run', 'w-s', 1, 1, '--lease', '0.5', '--', 'sh', '-c',
                      "echo \$\$ > '$dir/stop-child'; exec sleep 300");
    my $child = child_in("$dir/stop-child");
    ok($child, 'SIGSTOP: the command runs');
    kill 'STOP', $r->{pid};
    ok(wait_until(sub { (grown(\%before, 'lease_expirations'))[0] >= 1 }),
       'counterctl stopped: the server expired the lease');
    is(current('w-s'), 0, 'and released it');
    kill 'CONT', $r->{pid};
    ($rc, $out, $err) = ctl_finish($r);
    is($rc, 75, 'continued: counterctl exits 75');
    like($err, qr/\Acounterctl: lost the lease on "w-s" \([^\n]*\); sent SIGTERM to the command\n\z/,
         'saying so in one line naming the counter');
    ok($child && gone($child), 'its command got SIGTERM and is gone');
    kill_pid($child) if $child && pid_alive($child);
}

# -- the server stops: a holder with a lease and a waiter lose it. --
{
    my $srv2 = start_host(config => {});
    my $port2 = $srv2->{counter_port};
    my $h = ctl_start('-p', $port2, 'run', 'w-x', 1, 1, '--lease', '30', '--',
                      'sh', '-c', "echo \$\$ > '$dir/x-child'; exec sleep 300");
    my $child = child_in("$dir/x-child");
    ok($child, 'shutdown: the command runs');
    my $q = ctl_start('-p', $port2, 'run', 'w-x', 1, 1, '--wait', '60', '--',
                      'touch', "$dir/x-late");
    my $c2 = $srv2->connect;
    ok(wait_until(sub { my %s = map { @$_ } $c2->stats_pairs; $s{waiting} >= 1 }),
       'shutdown: a second run is queued');
    $c2->close;
    $srv2->stop;
    ($rc, $out, $err) = ctl_finish($h);
    is($rc, 75, 'server stopped: the holding run exits 75');
    like($err, qr/\Acounterctl: lost the connection holding "w-x" \([^\n]*\); sent SIGTERM to the command\n\z/,
         'saying so in one line naming the counter');
    ok($child && gone($child), 'its command is gone');
    kill_pid($child) if $child && pid_alive($child);
    ($rc, $out, $err) = ctl_finish($q);
    is($rc, 74, 'the queued run loses its connection: 74');
    ok(!-e "$dir/x-late", 'and never runs its command');
}

# -- stand-in servers: what the real one does not do on demand. --

# Reads one request from a socket (bounded): opcode and opaque, or undef.
sub read_request {
    my ($s, $buf) = @_;
    while (1) {
        if (length $$buf >= 12) {
            my ($op, $len, $opq) = (unpack('CCCCNN', $$buf))[1, 4, 5];
            if (length $$buf >= 12 + $len) {
                substr($$buf, 0, 12 + $len, '');
                return { opcode => $op, opaque => $opq };
            }
        }
        return unless IO::Select->new($s)->can_read(10);
        sysread($s, $$buf, 65536, length $$buf) or return;
    }
}

# Serves counterctl (pid) on one connection of listener: each request gets
# $answer->(request) (bytes, '' for none) until counterctl exits. Returns
# (exit code or undef, the opcodes seen).
sub stand_in {
    my ($listener, $pid, $answer) = @_;
    my $s = IO::Select->new($listener)->can_read(10) ? $listener->accept : undef;
    my ($buf, @ops, $st) = ('');
    my $sel = $s ? IO::Select->new($s) : undef;
    wait_until(sub {
        if ($sel && $sel->count && $sel->can_read(0)) {
            my $req = read_request($s, \$buf);
            if ($req) {
                push @ops, $req->{opcode};
                my $a = $answer->($req);
                syswrite $s, $a if length $a;
            } else {
                $sel->remove($s);
            }
        }
        return waitpid($pid, WNOHANG) == $pid && defined($st = $?);
    }, 20);
    close $s if $s;
    if (!defined $st) {
        kill_pid($pid);
        return (undef, \@ops);
    }
    untrack_pid($pid);
    return ($st & 127 ? 128 + ($st & 127) : $st >> 8, \@ops);
}

my $fake = IO::Socket::IP->new(Listen => 5, LocalHost => '127.0.0.1',
                               LocalPort => 0) or die "listen: $@";
my $fport = $fake->sockport;

# A server without wait_acquire (0x81): run --wait retries Acquire.
{
    my $tries = 0;
    my $r = ctl_start('-p', $fport, 'run', 'w-old', 1, 1, '--wait', '30',
                      '--lease', '5', '--', 'touch', "$dir/old-ran");
    my ($code, $ops) = stand_in($fake, $r->{pid}, sub {
        my ($q) = @_;
        return resp_err($q->{opcode}, ST_UNKNOWN, $q->{opaque})
            if $q->{opcode} == 0x20;
        return resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE, $q->{opaque})
            if $q->{opcode} == OP_ACQUIRE && $tries++ == 0;
        return resp(OP_ACQUIRE, ST_OK, u32(1), $q->{opaque})
            if $q->{opcode} == OP_ACQUIRE;
        return resp($q->{opcode}, ST_OK, '', $q->{opaque});
    });
    is($code, 0, 'no wait_acquire on the server: run --wait still acquires and runs');
    ok(-e "$dir/old-ran", 'the command ran');
    is_deeply($ops, [0x20, OP_ACQUIRE, OP_ACQUIRE, OP_RELEASE],
              'wait_acquire refused, then Acquire retried, then Release');
}
{
    my $r = ctl_start('-p', $fport, 'run', 'w-old', 1, '-', '--', 'touch',
                      "$dir/old-group");
    my ($code, $ops) = stand_in($fake, $r->{pid}, sub {
        resp_err($_[0]{opcode}, ST_UNKNOWN, $_[0]{opaque})
    });
    is($code, 1, 'no wait_acquire on the server and MAXIMUM -: 1, nothing to fall back to');
    like(CounterTest::_slurp("$r->{dir}/stderr"), qr/w-old: Unknown command \(status 0x81\)/,
         'with the server\'s status');
    is_deeply($ops, [0x20], 'one request only');
}

# A Renew answered "Lease expired": the command gets SIGTERM, 75.
{
    my $r = ctl_start('-p', $fport, 'run', 'w-exp', 1, 1, '--lease', '0.3',
                      '--', 'sh', '-c', "echo \$\$ > '$dir/exp-child'; exec sleep 300");
    my ($code, $ops) = stand_in($fake, $r->{pid}, sub {
        my ($q) = @_;
        return resp(0x20, ST_OK, pack('CxxxNNNN', 0, 0, 0, 7, 1), $q->{opaque})
            if $q->{opcode} == 0x20;
        return resp(0x21, 0x27, 'Lease expired', $q->{opaque})
            if $q->{opcode} == 0x21;
        return resp($q->{opcode}, ST_OK, '', $q->{opaque});
    });
    my $child = child_in("$dir/exp-child");
    is($code, 75, 'a Renew answered Lease expired: 75');
    like(CounterTest::_slurp("$r->{dir}/stderr"),
         qr/\Acounterctl: lost the lease on "w-exp" \(it expired before it was renewed\); sent SIGTERM to the command\n\z/,
         'saying so in one line naming the counter');
    is_deeply($ops, [0x20, 0x21], 'wait_acquire, one Renew, nothing after');
    ok($child && gone($child), 'its command is gone');
    kill_pid($child) if $child && pid_alive($child);
}

$hold->close;
$srv->stop;
done_testing;
