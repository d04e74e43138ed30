# 04-long-names.t: names of 65535 bytes, the longest the protocol allows:
# Acquire, Get, Release, Dump records of 10 + 65535 bytes, hundreds of them
# pipelined from several connections; a body one byte longer than the
# largest legal request (a Gcra_check's, 26 + 65535) is refused with 0x04.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => {});
my $long = 'L' x 65535;
my $c = $srv->connect;
my $r = $c->call(req_acquire($long, 3, 5, opaque => 1));
ok($r && $r->{status} == ST_OK && $r->{body} eq u32(3), 'Acquire with a 65535-byte name');
$r = $c->call(req_get($long, opaque => 2));
ok($r && $r->{status} == ST_OK && $r->{body} eq u32(3), 'Get with a 65535-byte name');
my $recs = $c->dump_records(opaque => 3);
my @mine = grep { $_->{name} eq $long } @$recs;
ok(@mine == 1 && $mine[0]{current} == 3, 'Dump carries the whole 65535-byte name');
$r = $c->call(req_release($long, 3, opaque => 4));
ok($r && $r->{status} == ST_OK, 'Release with a 65535-byte name');

# One byte over the largest legal body (26 + 65535): 0x04, nothing created.
my $over = pack('NNn', 1, 1, 65535) . ('O' x 65535) . ('X' x 17);
$r = $c->call(req(OP_ACQUIRE, $over, opaque => 5));
ok($r && $r->{status} == ST_INVALID && $r->{opaque} == 5,
   'Acquire body of 10 + 65535 + 17 bytes: 0x04');
$r = $c->call(req_get('O' x 65535, opaque => 6));
ok($r && $r->{status} == ST_NOT_FOUND, 'the oversized Acquire created nothing');
$c->close;

# Eight connections pipeline 25 long-named Acquires each (13 MB in all).
my @conns = map { $srv->connect } 0 .. 7;
for my $i (0 .. 7) {
    my $b = '';
    $b .= req_acquire(sprintf('%s%02d%02d', 'P' x 65531, $i, $_), 1, 1,
                      opaque => $_) for 0 .. 24;
    $conns[$i]->send($b);
}
my $good = 0;
for my $i (0 .. 7) {
    for my $k (0 .. 24) {
        my $a = $conns[$i]->response(20) or last;
        $good++ if $a->{status} == ST_OK && $a->{opaque} == $k;
    }
}
is($good, 200, '200 pipelined long-named Acquires answered in order');
my $chk = $srv->connect;
$recs = $chk->dump_records;
is(scalar(grep { length $_->{name} == 65535 && $_->{current} == 1 } @$recs),
   200, 'Dump lists all 200 long names');
$_->close for @conns;
ok(wait_until(sub {
    my $r = $chk->call(req_get(('P' x 65531) . '0724'));
    return $r && $r->{body} eq u32(0);
}), 'closing the connections released the long names');
$chk->close;
bystander_ok($srv, 'after the long names');
server_clean($srv);
done_testing;
