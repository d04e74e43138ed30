# 02-slowloris.t: fifty clients send their requests one byte per second
# (a bounded run: six seconds). The server keeps serving others, does not
# spin, and answers every slow request correctly once it is complete.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => {});
my @slow = map { $srv->connect } 0 .. 49;
my @req = map { req_acquire("slow-$_", 1, 1, opaque => 1000 + $_) } 0 .. 49;
my $cpu0 = cpu_seconds($srv->{pid});
for my $byte (0 .. 5) {
    $slow[$_]->send(substr $req[$_], $byte, 1) for 0 .. 49;
    bystander_ok($srv, "slow clients at byte $byte");
    sleep 1;
}
my $cpu = cpu_seconds($srv->{pid}) - $cpu0;
diag(sprintf 'server CPU over 6 s of slow clients: %.2f s', $cpu);
my $answered = 0;
for my $i (0 .. 49) {
    ok($slow[$i]->quiet_for(0), "slow client $i: nothing answered early")
        if $i == 0;
    my $r = $slow[$i]->call(substr($req[$i], 6), 10);
    $answered++ if $r && $r->{status} == ST_OK && $r->{opaque} == 1000 + $i;
}
is($answered, 50, 'every slow request answered correctly once complete');
$_->close for @slow;
bystander_ok($srv, 'after the slow clients left');
server_clean($srv);
done_testing;
