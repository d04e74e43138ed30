#!/usr/bin/perl
# 05-shared.t: two connections share a counter: acquisitions add up against
# each call's maximum, holdings are per connection, and nobody can release
# what another connection holds (0x22).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless target_available;
my $srv = start_target(config => {});
my ($a, $b) = ($srv->connect, $srv->connect);

answer_is($a->call(req_acquire('sh', 2, 4)), resp(OP_ACQUIRE, ST_OK, u32(2)),
          'A acquires 2 of 4');
answer_is($b->call(req_acquire('sh', 2, 4)), resp(OP_ACQUIRE, ST_OK, u32(2)),
          'B acquires 2 of 4');
answer_is($b->call(req_acquire('sh', 1, 4)), resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE),
          'B: a fifth unit is refused');
answer_is($a->call(req_get('sh')), resp(OP_GET, ST_OK, u32(4)), 'both see 4');
answer_is($b->call(req_release('sh', 3)), resp_err(OP_RELEASE, ST_NOT_ACQUIRED),
          "B cannot release 3: it holds 2 (A's units are not B's)");
answer_is($a->call(req_release('sh', 2)), resp(OP_RELEASE, ST_OK), 'A releases its 2');
answer_is($a->call(req_release('sh', 1)), resp_err(OP_RELEASE, ST_NOT_ACQUIRED),
          'A holds nothing more: 0x22, though B still holds 2');
answer_is($a->call(req_release('sh', 0)), resp_err(OP_RELEASE, ST_NOT_ACQUIRED),
          'A: release 0 holding nothing -> 0x22');
answer_is($b->call(req_release('sh', 0)), resp(OP_RELEASE, ST_OK),
          'B: release 0 while holding -> 0x00');
answer_is($a->call(req_acquire('sh', 2, 4)), resp(OP_ACQUIRE, ST_OK, u32(2)),
          'A can take the freed units');
answer_is($b->call(req_get('sh')), resp(OP_GET, ST_OK, u32(4)), 'total 4 again');
answer_is($b->call(req_release('sh', 2)), resp(OP_RELEASE, ST_OK), 'B releases 2');
answer_is($a->call(req_release('sh', 2)), resp(OP_RELEASE, ST_OK), 'A releases 2');
answer_is($b->call(req_get('sh')), resp(OP_GET, ST_OK, u32(0)), 'all released');

$srv->stop;
done_testing;
