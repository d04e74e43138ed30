# 07-max-connections.t: a flood of connections over counter.max_connections.
# Those over the limit are accepted and closed at once without an answer;
# those admitted keep working; freed slots are usable again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => { max_connections => 8 });
my @in = map { $srv->connect } 1 .. 8;
my $ok = grep { my $r = $in[$_]->call(req_noop(opaque => $_)); $r && $r->{opaque} == $_ } 0 .. 7;
is($ok, 8, 'eight connections admitted and served');

my @over = map { $srv->connect } 1 .. 100;
$_->send(req_noop(opaque => 99)) for @over;
my $closed = grep { $_->closed_within(5) && !length $_->{buf} } @over;
is($closed, 100, '100 connections over the limit closed without an answer');
$_->close for @over;

$ok = grep { my $r = $in[$_]->call(req_noop(opaque => $_)); $r && $r->{opaque} == $_ } 0 .. 7;
is($ok, 8, 'the admitted connections kept working through the flood');
my %st = map { @$_ } $in[0]->stats_pairs;
is($st{curr_connections}, 8, 'curr_connections is 8');

# Burst of connects and closes: must not leak slots.
for (1 .. 300) {
    my $c = eval { $srv->connect } or next;
    $c->reset;
}
# A close reaches the server some time after the client's call returns:
# wait until it has seen them (curr_connections counts the four left
# open, the asking one among them) before using the slots they freed.
sub open_now { my %s = map { @$_ } $in[4]->stats_pairs; $s{curr_connections} }
$_->close for @in[0 .. 3];
ok(wait_until(sub { open_now() == 4 }),
   'the four closes are seen: curr_connections 4');
ok(wait_until(sub {
    my $c = eval { $srv->connect } or return 0;
    my $r = $c->call(req_noop(opaque => 5), 2);
    $c->close;
    return $r && $r->{opaque} == 5;
}), 'after four admitted clients left, a new one is served');
ok(wait_until(sub { open_now() == 4 }),
   'its close is seen too: curr_connections 4 again');
my @again = map { $srv->connect } 1 .. 4;
$ok = grep { my $r = $_->call(req_noop(opaque => 1), 5); $r } @again;
is($ok, 4, 'all four freed slots are usable again');
%st = map { @$_ } $again[0]->stats_pairs;
is($st{curr_connections}, 8, 'curr_connections back at 8, no slot leaked');
$_->close for @again, @in[4 .. 7];
server_clean($srv);
done_testing;
