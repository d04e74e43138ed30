#!/usr/bin/perl
# 09-daemon.t: mchost -d -P pidfile: the counter port works after the host
# daemonized (its threads start after the fork); stopped by the pid from the
# pidfile.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
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
done_testing;
