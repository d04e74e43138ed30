#!/usr/bin/perl
# 07-gc.t: with counter.stat_interval=1 a released counter disappears once
# its window has passed: it leaves Dump, Get answers 0x01, gc_count grows.
# A held counter survives every collection.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => { stat_interval => 1 });
my $c = $srv->connect;
my %st = map { @$_ } $c->stats_pairs;
my $gc0 = $st{gc_count};
ok(defined $gc0, "gc_count reported ($gc0)");

is($c->call(req_acquire('gc-gone', 2, 2))->{status}, ST_OK, 'acquire gc-gone');
is($c->call(req_release('gc-gone', 2))->{status}, ST_OK, 'release it');
is($c->call(req_acquire('gc-kept', 1, 1))->{status}, ST_OK, 'acquire gc-kept, kept held');

my $gone = wait_until(sub {
    $c->call(req_get('gc-gone'))->{status} == ST_NOT_FOUND
}, 10);
ok($gone, 'released counter collected: Get -> 0x01');
answer_is($c->call(req_release('gc-gone', 0)), resp_err(OP_RELEASE, ST_NOT_FOUND),
          'Release after collection -> 0x01');
my $rec = $c->dump_records;
ok(!(grep { $_->{name} eq 'gc-gone' } @$rec), 'not in Dump any more');
ok((grep { $_->{name} eq 'gc-kept' && $_->{current} == 1 } @$rec),
   'held counter survives');
answer_is($c->call(req_get('gc-kept')), resp(OP_GET, ST_OK, u32(1)),
          'held counter still answers');
# gc_count moves when a whole sweep ends, which can be a moment after the
# slice that removed gc-gone: wait (bounded) for the sweep to finish.
wait_until(sub {
    %st = map { @$_ } $c->stats_pairs;
    $st{gc_count} > $gc0
}, 10);
cmp_ok($st{gc_count}, '>', $gc0, "gc_count grew ($gc0 -> $st{gc_count})");
ok(defined $st{last_gc_elapsed} && defined $st{total_gc_elapsed},
   'GC timings reported');

$srv->stop;
done_testing;
