#!/usr/bin/perl
# 06-maxconn.t: counter.max_connections: connections over the limit are
# accepted and closed at once without an answer; the others keep working,
# and a slot freed by a close can be used again.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => { max_connections => 2 });
my @in = map { $srv->connect } 1 .. 2;
answer_is($_->call(req_noop()), resp(OP_NOOP, ST_OK), 'within the limit: served')
    for @in;
my $over = $srv->connect;
$over->send(req_noop());
ok($over->closed_within, 'third connection: closed at once');
is(length $over->{buf}, 0, 'third connection: no answer was sent');
answer_is($in[0]->call(req_noop(opaque => 5)), resp(OP_NOOP, ST_OK, '', 5),
          'the others still work');
$in[1]->close;
my $again = wait_until(sub {
    my $c = $srv->connect;
    my $r = $c->call(req_noop(opaque => 9), 2);
    return $r && $r->{raw} eq resp(OP_NOOP, ST_OK, '', 9) ? $c : 0;
});
ok($again, 'after a close, a new connection is served');
$srv->stop;
done_testing;
