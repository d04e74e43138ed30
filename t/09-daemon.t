#!/usr/bin/perl
# 09-daemon.t: mchost -d -P pidfile: the counter port works after the host
# daemonized (its threads start after the fork); stopped by the pid from the
# pidfile. A failure after the fork is reported by the command that was run.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $dir = tempdir(CLEANUP => 1);
my $srv = start_host(config => {}, args => ['-d', '-P', "$dir/pid"]);
my $pid = wait_until(sub {
    open my $fh, '<', "$dir/pid" or return;
    my $p = <$fh>;
    return $p && $p =~ /^(\d+)\s*$/ ? $1 : undef;
});
ok($pid, "pidfile written ($pid)");
track_pid($pid) if $pid;
isnt($pid, $srv->{pid}, 'the daemon is not the process we started');
ok(kill(0, $pid), 'daemon alive');
ok($srv->{counter_port}, 'stats answered after daemonizing');

my $c = $srv->connect;
answer_is($c->call(req_acquire('dm', 1, 1, opaque => 4)), resp(OP_ACQUIRE, ST_OK, u32(1), 4),
          'counter port answers after daemonizing');
answer_is($c->call(req_get('dm')), resp(OP_GET, ST_OK, u32(1)), 'get answers');
$c->close;
my $w = $srv->connect;
ok(wait_until(sub { unpack('N', $w->call(req_get('dm'))->{body}) == 0 }),
   'auto-release works in the daemon');

kill_pid($pid);
ok(wait_until(sub { !kill(0, $pid) }), 'daemon gone after TERM');
$srv->stop;

# A start-up failure after the fork (the memcache port is taken) is told by
# the command itself: the daemon's stderr is gone by then, so the reason
# travels to the waiting parent, which prints it and fails.
my $busy = IO::Socket::IP->new(Listen => 5, LocalHost => '127.0.0.1',
                               LocalPort => 0) or die "listen: $@";
my $bport = $busy->sockport;
for my $v ([], ['-v']) {
    my $d = tempdir(CLEANUP => 1);
    my ($rc, $out, $err) = run_bounded($d, $ENV{MCHOST}, '-d', @$v,
        '-p', $bport, '-l', '127.0.0.1', '-P', "$d/pid",
        '-X', "$ENV{COUNTER_SO},counter.enable=true;counter.port=0");
    my $how = @$v ? '-d -v' : '-d';
    is($rc, 1, "$how, memcache port busy: exit 1");
    like($err, qr/^$LOG_TS mchost: cannot listen on 127\.0\.0\.1 port $bport: Address already in use$/m,
         "$how, memcache port busy: the reason is on stderr") or diag("stderr: $err");
    ok(!-e "$d/pid", "$how, memcache port busy: no pid file left");
}
close $busy;

# Success stays quiet: nothing on stderr, the daemon serves.
my $d = tempdir(CLEANUP => 1);
my ($rc, $out, $err) = run_bounded($d, $ENV{MCHOST}, '-d', '-p', '0',
    '-l', '127.0.0.1', '-P', "$d/pid", '-F', "$d/port",
    '-X', "$ENV{COUNTER_SO},counter.enable=true;counter.port=0");
is($rc, 0, '-d: exit 0 once serving');
is($err, '', '-d: nothing on stderr when all went well');
my ($dpid) = (do { open my $f, '<', "$d/pid"; $f ? scalar <$f> : '' } // '') =~ /^(\d+)/;
track_pid($dpid) if $dpid;
my ($dport) = (do { open my $f, '<', "$d/port"; $f ? scalar <$f> : '' } // '') =~ /^(\d+)/;
my %st = $dport ? mc_stats($dport) : ();
ok($st{counter_port}, '-d: the daemon answers stats');
kill_pid($dpid) if $dpid;
done_testing;
