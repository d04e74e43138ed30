#!/usr/bin/perl
# 12-deliberate.t: the documented differences from the reference: 64-bit
# acquire arithmetic, the opcode copied into 0x81 answers, bounded handling
# of huge declared bodies, and both names of the interval setting.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => { 'counter.consumption_stats.interval' => 3600 });

# 1. The sequence that wraps the reference's 32-bit sum and aborts it.
my ($a, $b) = ($srv->connect, $srv->connect);
answer_is($a->call(req_acquire('dd-wrap', 1, 0xffffffff)),
          resp(OP_ACQUIRE, ST_OK, u32(1)), 'A holds 1');
answer_is($b->call(req_acquire('dd-wrap', 0xffffffff, 0xffffffff)),
          resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE),
          'B acquires 0xffffffff, max 0xffffffff: refused (checked in 64 bits)');
answer_is($b->call(req_release('dd-wrap', 0xffffffff)),
          resp_err(OP_RELEASE, ST_NOT_ACQUIRED), 'B releases 0xffffffff: 0x22');
answer_is($a->call(req_get('dd-wrap')), resp(OP_GET, ST_OK, u32(1)),
          'consumption unchanged, server alive');
answer_is($b->call(req_acquire('dd-wrap', 0xfffffffe, 0xffffffff)),
          resp(OP_ACQUIRE, ST_OK, u32(0xfffffffe)), 'exactly up to 2^32-1 is fine');
answer_is($b->call(req_acquire('dd-wrap', 1, 0xffffffff)),
          resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE), 'one more is refused');

# 2. Unknown opcodes: the opcode byte is copied (the reference writes 0x12).
for my $op (0x04, 0x12, 0x1f, 0x81, 0xff) {
    answer_is($a->call(req($op, 'xyz', opaque => $op)), resp_err($op, ST_UNKNOWN, $op),
              sprintf('unknown opcode 0x%02x copied into the answer', $op));
}

# 3. Huge declared bodies.
my $c = $srv->connect;
my $big = 65562;    # one more than the largest legal body (26 + 65535)
$c->send(req(OP_GET, '', body_len => $big, opaque => 1) . ('g' x $big)
         . req_noop(opaque => 2));
answer_is($c->response, resp_err(OP_GET, ST_INVALID, 1),
          "Get declaring $big bytes: 0x04");
answer_is($c->response, resp(OP_NOOP, ST_OK, '', 2),
          'its body was skipped: the connection still works');
$c->send(req(OP_ACQUIRE, '', body_len => 1 << 20, opaque => 3) . ('a' x (1 << 20))
         . req_noop(opaque => 4));
answer_is($c->response, resp_err(OP_ACQUIRE, ST_INVALID, 3), 'Acquire declaring 1 MiB: 0x04');
answer_is($c->response, resp(OP_NOOP, ST_OK, '', 4), 'connection still works');
$c->send(req(OP_NOOP, '', body_len => 3 << 20, opaque => 5) . ("\0" x (3 << 20))
         . req_noop(opaque => 6));
answer_is($c->response, resp(OP_NOOP, ST_OK, '', 5),
          'Noop with a 3 MiB body: answered, body discarded');
answer_is($c->response, resp(OP_NOOP, ST_OK, '', 6), 'next request answered');
$c->send(req(0x3f, '', body_len => 2 << 20, opaque => 7) . ('u' x (2 << 20))
         . req_noop(opaque => 8));
answer_is($c->response, resp_err(0x3f, ST_UNKNOWN, 7), 'unknown opcode with 2 MiB body: 0x81');
answer_is($c->response, resp(OP_NOOP, ST_OK, '', 8), 'next request answered');

my $d = $srv->connect;
$d->send(req(OP_GET, '', magic => 0x04, body_len => 0xffffffff));
ok($d->closed_within, 'bad magic with a 4 GiB body: framing lost, connection closed');
answer_is($a->call(req_noop(opaque => 9)), resp(OP_NOOP, ST_OK, '', 9),
          'other connections unaffected');

# 4. counter.consumption_stats.interval is accepted as the interval.
my %st = mc_stats($srv->{mc_port}, 'counter');
is($st{interval}, 3600, 'counter.consumption_stats.interval sets the interval')
    or diag explain \%st;

$srv->stop;
done_testing;
