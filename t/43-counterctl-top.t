#!/usr/bin/perl
# 43-counterctl-top.t: `counterctl top` against a busy server: a group
# whose maximum is held with one waiter queued behind, and configured
# tenants, one of them charged. `top --once` prints one plain report:
# node capacity, commands per second, the queue, the leases about to
# expire (nearest first, with their lease ids), the counters, the
# busiest rate-limit names, the tenants sorted by use with their reserve
# and hard limit. Without a
# terminal and without --once it keeps printing reports, one per
# interval. Usage errors exit 2, a server that is not there 69. Against
# the reference (yrmcds, when installed) the parts it cannot answer are
# left out and said to be. Only
# what the server holds is asserted: no rate, no "used this second"
# (the second may turn between the charge and the report).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Test::More;

my $CTL = $ENV{COUNTERCTL};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_throttle_host(
    config => { 'group.lic' => 'max:2' },
    throttle => "node.capacity = 1000\n"
              . "tenant.acme = reserved:100,hard_limit:500\n"
              . "tenant.beta = reserved:10\n");
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);

# Runs counterctl -p PORT args to the end: (exit code, stdout, stderr).
sub ctl { run_bounded($dir, $CTL, '-p', $port, @_) }

# The holder takes both of lic; the waiter queues for one more.
my $holder = $srv->connect;
my $r = $holder->call(req_wait_acquire('lic', 2, 0, 0, 0));
is($r->{status}, 0, 'holder granted lic 2');
my $waiter = $srv->connect;
$waiter->send(req_wait_acquire('lic', 1, 0, 60000, 0));
ok(wait_until(sub {
    my $q = $holder->call(req_queues());
    return $q && $q->{status} == 0 && $q->{body_len} > 0;
}), 'the waiter is queued');
$r = $holder->call(req_throttle('acme', 40));
is($r->{status}, 0, 'acme charged 40');

my ($rc, $out, $err) = ctl('top', '--once', '--interval', '200ms');
is($rc, 0, 'top --once: exit 0') or diag($err);
is($err, '', 'top --once: nothing on stderr');
like($out, qr/\Acounterctl top  127\.0\.0\.1:$port  every 200ms\n/,
     'header names the server and the interval');
like($out, qr/^node      capacity 1000\/s  used \d+ \(\d+\.\d%\)  pool \d+  pool_used \d+  reserved_sum 110  tenants 2  throttled 0$/m,
     'node: capacity, reserved sum and tenants');
like($out, qr/^commands  \d+\.\d\/s  \(.*stats \d+\.\d\/s/m,
     'commands per second, by opcode (top\'s own Stats among them)');
like($out, qr/^server    connections \d+  counters 1  waiting 1  leases 0  lease_expirations\/s 0\.0$/m,
     'server line: one counter, one waiter, no lease');
like($out, qr/^checks\/s  ttl \d+\.\d window \d+\.\d gcra \d+\.\d throttle \d+\.\d$/m,
     'rate-limit checks per second');
like($out, qr/^leases about to expire, nearest first \(0\)\n  NAME +LEASE_ID +LEFT_MS +RESOURCES\n\n/m,
     'leases: none yet');
like($out, qr/^busiest rate-limit names, checks in the last second \(\d+\)\n  NAME +KIND +CHECKS\/S\n/m,
     'the busiest rate-limit names: their table');
unlike($out, qr/cannot be listed/, 'nothing said to be beyond the protocol');
like($out, qr/^queues, longest first \(1\)\n  NAME +CONSUMPTION +WAITERS\n  lic +2 +1\n/m,
     'queues: lic, consumption 2, one waiter');
like($out, qr/^counters, most consumed first \(1\)\n  NAME +CURRENT +MAX\n  lic +2 +2\n/m,
     'counters: lic at its maximum');
like($out, qr/^tenants, most used first \(2\)\n  NAME +USED +RESERVED +HARD_LIMIT +THROTTLED\n  acme +\d+ +100 +500 +0\n  beta +0 +10 +unlimited +0\n/m,
     'tenants by use, with reserve and hard limit');

# Two leases, held on the server's two sides of a minute: the nearer is
# listed first, with its lease id and resources.
{
    my $lessee = $srv->connect;
    my %id;
    for my $l (['far-lease', 3, 50000], ['near-lease', 1, 20000]) {
        my $a = parse_wait_answer(
            $lessee->wcall(req_wait_acquire($l->[0], $l->[1], 5, 0, $l->[2])));
        ok($a && $a->{state} == 0, "$l->[0]: granted with a lease");
        $id{$l->[0]} = $a ? $a->{lease_id} : 0;
    }
    my ($lrc, $lout, $lerr) = ctl('top', '--once');
    is($lrc, 0, 'top --once with leases: exit 0') or diag($lerr);
    like($lout, qr/^leases about to expire, nearest first \(2\)\n  NAME +LEASE_ID +LEFT_MS +RESOURCES\n  near-lease +$id{'near-lease'} +\d+ +1\n  far-lease +$id{'far-lease'} +\d+ +3\n/m,
         'leases: nearest first, with lease id and resources');
    $lessee->close;
}

# A name checked all along shows among the busiest once a whole second
# of its checks has passed.
{
    my $checker = $srv->connect;
    my $shown = wait_until(sub {
        $checker->call(req_gcra_check('top-api', 1000, 1000, 1_000_000_000))
            for 1 .. 5;
        my (undef, $o) = ctl('top', '--once', '--interval', '100ms');
        return $o =~ /^  top-api +gcra +[1-9]\d*$/m;
    });
    ok($shown, 'the busiest rate-limit names: a name checked all along');
}

# A pipe and no --once: a report per interval until stopped.
{
    my $d = tempdir(CLEANUP => 1);
    my $pid = spawn_to_files($d, $CTL, '-p', $port, 'top', '--interval',
                             '100ms');
    my $two = wait_until(sub {
        open my $fh, '<', "$d/stdout" or return 0;
        my $n = () = join('', <$fh>) =~ /^counterctl top /mg;
        return $n >= 2;
    });
    ok($two, 'without a terminal: a report each interval');
    ok(pid_alive($pid), 'and it keeps going');
    kill_pid($pid);
}

# Usage errors, before connecting.
($rc, $out, $err) = ctl('top', '--interval', '5ms');
is($rc, 2, '--interval below 100ms: 2');
like($err, qr/top: --interval: "5ms" is too short \(100ms to 1h\)/,
     'says the bounds');
($rc, undef, $err) = ctl('top', '--interval');
is($rc, 2, '--interval without a value: 2');
($rc, undef, $err) = ctl('top', 'now');
is($rc, 2, 'an unknown argument: 2');
like($err, qr/top: unknown argument "now"/, 'names it');
($rc, undef, $err) = run_bounded($dir, $CTL, '--servers',
                                 "127.0.0.1:$port,127.0.0.1:1", 'top');
is($rc, 2, 'several --servers without --once: 2');
like($err, qr/top shows one server/, 'says why');

# --servers with --once: one report per server.
($rc, $out) = run_bounded($dir, $CTL, '--servers', "127.0.0.1:$port",
                          'top', '--once', '--interval', '100ms');
is($rc, 0, '--servers of one with --once: 0');
like($out, qr/^counterctl top  127\.0\.0\.1:$port /m, 'its report');

# Nobody listening: 69.
my $free = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                               Listen => 1) or die "listen: $@";
my $free_port = $free->sockport;
close $free;
($rc, undef, $err) = run_bounded($dir, $CTL, '-p', $free_port, 'top',
                                 '--once');
is($rc, 69, 'no server: 69');
like($err, qr/cannot connect/, 'says so');

# The reference (Debian's yrmcds) knows Stats and Dump only: top's
# report leaves the rest out and says so.
SKIP: {
    my ($ref, $why) = start_yrmcds();
    skip "reference server: $why", 7 unless $ref;
    my $holder_ref = $ref->connect;
    my $r = $holder_ref->call(req_acquire('ref-top', 3, 5));
    is($r && $r->{status}, 0, 'reference: ref-top acquired');
    ($rc, $out, $err) = run_bounded($dir, $CTL, '-p', $ref->{counter_port},
                                    'top', '--once', '--interval', '100ms');
    is($rc, 0, 'reference: top --once exits 0') or diag($err);
    like($out, qr/^node      throttling not offered by this server$/m,
         'reference: no node figures, said');
    like($out, qr/^queues: not offered by this server$/m,
         'reference: no queues, said');
    like($out, qr/^tenants: not offered by this server$/m,
         'reference: no tenants, said');
    like($out, qr/^leases: not offered by this server$/m,
         'reference: no lease list, said');
    like($out, qr/^busiest rate-limit names: not offered by this server$/m,
         'reference: no busiest names, said');
    like($out, qr/^  ref-top +3 +\d+$/m, 'reference: its counter');
    $ref->stop;
}

done_testing;
