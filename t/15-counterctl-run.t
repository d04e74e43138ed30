#!/usr/bin/perl
# 15-counterctl-run.t: what `counterctl run` guarantees about "at most N at
# once": its command does not outlive it (SIGKILL), a signal sent around
# the fork reaches the command, and a lost connection stops the command
# (exit 75); each time a waiting run then gets its turn. Also: the command
# starts with the signal dispositions and mask counterctl was started with.
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
plan skip_all => 'mchost or counter.so not built' unless target_available;
plan skip_all => 'needs /proc to tell a finished command from a running one'
    unless -r "/proc/$$/stat";
my $srv = start_target(config => {});
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);
my $hold = $srv->connect;

# Starts `counterctl -p PORT run NAME 1 1 OPTS -- sh -c SCRIPT` with its
# output in a directory of its own; returns { pid, dir }.
sub start_run {
    my ($p, $name, $script, @opts) = @_;
    my $d = tempdir(DIR => $dir);
    my $pid = spawn_to_files($d, $CTL, '-p', $p, 'run', $name, 1, 1, @opts,
                             '--', 'sh', '-c', $script);
    return { pid => $pid, dir => $d };
}

# A run whose command writes its pid to DIR/child and sleeps for long.
sub start_sleeper {
    my ($p, $name) = @_;
    my $d = tempdir(DIR => $dir);
    my $r = start_run($p, $name, "echo \$\$ > '$d/child'; exec sleep 300");
    $r->{child_file} = "$d/child";
    return $r;
}

# The pid a sleeper's command wrote, once it is there (tracked).
sub child_of {
    my ($r, $timeout) = @_;
    my $child = wait_until(sub {
        open my $fh, '<', $r->{child_file} or return;
        my $l = <$fh>;
        return $l && $l =~ /^(\d+)$/ ? $1 : undef;
    }, $timeout);
    track_pid($child) if $child;
    return $child;
}

# True when pid is gone within 5 s (a generous bound, polled), then
# forgotten so that END does not signal a reused number.
sub gone {
    my ($pid) = @_;
    my $ok = wait_until(sub { !pid_alive($pid) }, 5);
    untrack_pid($pid) if $ok;
    return $ok;
}

# Current consumption of a counter, read through the test's connection.
sub current {
    my $r = $hold->call(req_get($_[0]));
    return $r && $r->{status} == ST_OK ? unpack('N', $r->{body}) : -1;
}

# Reads one request from a socket (bounded); a hash with opcode and
# opaque, or undef on EOF or timeout.
sub read_request {
    my ($s) = @_;
    my $buf = '';
    while (1) {
        if (length $buf >= 12) {
            my ($op, $len, $opq) = (unpack('CCCCNN', $buf))[1, 4, 5];
            return { opcode => $op, opaque => $opq }
                if length $buf >= 12 + $len;
        }
        return unless IO::Select->new($s)->can_read(10);
        sysread($s, $buf, 65536, length $buf) or return;
    }
}

# Answers OK to each request on s until counterctl pid exits; returns its
# exit code (128 + N for signal N), or undef if it had to be killed.
sub serve_until_exit {
    my ($s, $pid) = @_;
    my $sel = IO::Select->new($s);
    my $st;
    wait_until(sub {
        if ($sel->can_read(0)) {
            my $req = read_request($s);
            syswrite $s, resp($req->{opcode}, ST_OK, '', $req->{opaque})
                if $req;
            $sel->remove($s) unless $req;
        }
        return waitpid($pid, WNOHANG) == $pid && defined($st = $?);
    }, 10);
    if (!defined $st) {
        kill_pid($pid);
        return;
    }
    untrack_pid($pid);
    return $st & 127 ? 128 + ($st & 127) : $st >> 8;
}

# The server's stats as a hash.
sub stats { return map { @$_ } $hold->stats_pairs }

# True once one more run --wait waits than when %before was taken: queued
# in the server (wait_acquire), or, against the reference, which has no
# queue, retrying Acquire.
sub one_more_waits {
    my (%before) = @_;
    my %s = stats();
    return $ENV{CNT_TEST_REFERENCE}
        ? $s{'command:acquire'} >= $before{'command:acquire'} + 2
        : $s{waiting} >= $before{waiting} + 1;
}

# -- counterctl killed with SIGKILL: its command goes with it. --
{
    my $holder = start_sleeper($port, 'r-kill');
    my $child = child_of($holder);
    ok($child, 'SIGKILL: the command runs');
    is(current('r-kill'), 1, 'and holds 1 of 1');
    my %before = stats();
    my $waiter = start_run($port, 'r-kill', "touch '$dir/kill-next'",
                      '--wait', '60');
    ok(wait_until(sub { one_more_waits(%before) }),
       'a second run --wait is waiting for its turn');
    kill 'KILL', $holder->{pid};
    waitpid $holder->{pid}, 0;
    untrack_pid($holder->{pid});
    ok(gone($child), 'counterctl killed: its command is gone');
    my ($rc) = finish_bounded($waiter->{pid}, $waiter->{dir});
    is($rc, 0, 'the waiting run then acquires and runs');
    ok(-e "$dir/kill-next", 'its command ran');
    kill_pid($child) if pid_alive($child);
}

# -- SIGTERM at any moment after start: counterctl and its command end. --
# Sent 0 to 9.5 ms after start, it lands before the connect, during the
# Acquire, around the fork or after the exec. Whenever it lands, counterctl
# must end, with 143, and leave no command behind.
{
    my ($ended, $term, $started, $left) = (0, 0, 0, 0);
    for my $i (0 .. 19) {
        my $r = start_sleeper($port, "r-sig$i");
        sleep($i * 0.0005);
        kill 'TERM', $r->{pid};
        my ($rc) = finish_bounded($r->{pid}, $r->{dir}, 5);
        $ended++ if $rc != -1;
        $term++ if $rc == 143;
        my $child = child_of($r, 0.001);
        if ($child) {
            $started++;
            unless (gone($child)) {
                $left++;
                kill_pid($child);
            }
        }
    }
    note("the command had started in $started of 20 tries");
    is($ended, 20, 'SIGTERM: counterctl ended every time');
    is($term, 20, 'SIGTERM: exit 143 every time');
    is($left, 0, 'SIGTERM: no command was left running');
    my $r = start_run($port, 'r-sig19', "touch '$dir/sig-next'");
    my ($rc) = finish_bounded($r->{pid}, $r->{dir});
    is($rc, 0, 'a run afterwards acquires and runs');
}

# -- SIGTERM right as the Acquire is answered, i.e. around the fork. --
# A stand-in server answers the Acquire and the test signals counterctl
# at once, so the signal lands while the command is being started.
{
    my $fake = IO::Socket::IP->new(Listen => 5, LocalHost => '127.0.0.1',
                                   LocalPort => 0) or die "listen: $@";
    my ($ended, $term, $left) = (0, 0, 0);
    for my $i (0 .. 9) {
        my $r = start_sleeper($fake->sockport, "r-fork$i");
        my $s = IO::Select->new($fake)->can_read(10) ? $fake->accept : undef;
        my $req = $s ? read_request($s) : undef;
        unless ($req) {
            fail("stand-in: no Acquire from counterctl (try $i)");
            kill_pid($r->{pid});
            next;
        }
        syswrite $s, resp(OP_ACQUIRE, ST_OK, u32(1), $req->{opaque});
        sleep($i * 0.0002) if $i;
        kill 'TERM', $r->{pid};
        my $rc = serve_until_exit($s, $r->{pid});
        $ended++ if defined $rc;
        $term++ if defined $rc && $rc == 143;
        my $child = child_of($r, 0.001);
        if ($child && !gone($child)) {
            $left++;
            kill_pid($child);
        }
        close $s;
    }
    is($ended, 10, 'SIGTERM around the fork: counterctl ended every time');
    is($term, 10, 'SIGTERM around the fork: exit 143 every time');
    is($left, 0, 'SIGTERM around the fork: no command was left running');
}

# -- The server goes away while the command runs: SIGTERM to it, 75. --
SKIP: {
    skip 'restarts need mchost on a fixed port', 9 unless have_host;
    my $srv2 = start_host(config => {});
    my $port2 = $srv2->{counter_port};
    my $holder = start_sleeper($port2, 'licence');
    my $child = child_of($holder);
    ok($child, 'restart: the command runs');
    my $waiter = start_run($port2, 'licence', "touch '$dir/restart-early'",
                      '--wait', '60');
    my $c2 = $srv2->connect;
    ok(wait_until(sub {
        my %s = map { @$_ } $c2->stats_pairs;
        return $s{waiting} >= 1;
    }), 'restart: a second run --wait is waiting');
    $c2->close;
    $srv2->stop;
    my ($rc, $out, $err) = finish_bounded($holder->{pid}, $holder->{dir});
    is($rc, 75, 'server stopped: counterctl exits 75');
    like($err, qr/\Acounterctl: lost the connection holding "licence" [^\n]*; sent SIGTERM to the command\n\z/,
         'and says so in one line naming the counter');
    ok(gone($child), 'and its command is gone');
    ($rc) = finish_bounded($waiter->{pid}, $waiter->{dir});
    is($rc, 74, 'a run still waiting loses its connection too: 74');
    ok(!-e "$dir/restart-early", 'and never runs its command');

    # The server is back on the same port: the next run gets its turn.
    my $srv3 = start_host(config => { port => $port2 });
    $waiter = start_run($port2, 'licence', "touch '$dir/restart-next'",
                   '--wait', '10');
    ($rc) = finish_bounded($waiter->{pid}, $waiter->{dir});
    is($rc, 0, 'server back: a run --wait acquires and runs');
    ok(-e "$dir/restart-next", 'its command ran');
    $srv3->stop;
}

# -- A signal counterctl was started with ignored stays ignored, and the
# command starts with the signal mask counterctl was started with. --
{
    my $d = tempdir(DIR => $dir);
    my $pid;
    {
        local $SIG{HUP} = 'IGNORE';
        $pid = spawn_to_files($d, $CTL, '-p', $port, 'run', 'r-ign', 1, 1,
                              '--', 'grep', '^Sig[IB]', '/proc/self/status');
    }
    my ($rc, $out) = finish_bounded($pid, $d);
    is($rc, 0, 'run -- grep /proc/self/status');
    my ($ign) = $out =~ /^SigIgn:\s*([0-9a-f]+)$/m;
    my ($blk) = $out =~ /^SigBlk:\s*([0-9a-f]+)$/m;
    ok(defined $ign && hex(substr $ign, -8) & 1,
       'SIGHUP ignored by counterctl is ignored by the command');
    ok(defined $blk && $blk =~ /^0+$/, 'the command starts with no signal blocked');
}

$hold->close;
$srv->stop;
done_testing;
