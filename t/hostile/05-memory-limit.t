# 05-memory-limit.t: distinct names until counter.memory_limit answers 0x82
# (a small limit, so it takes tens of thousands, not millions). Existing
# counters keep working at the limit; refused names are not created; once
# the holders leave and GC runs, new names are accepted again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => { memory_limit => '1M', buckets => 65536,
                                 'consumption_stats.interval' => 1 });
my $c = $srv->connect;
my ($created, $refused, $other, $i) = (0, 0, 0, 0);
while (!$refused && $i < 2_000_000) {
    my $b = '';
    $b .= req_acquire('m' . ($i + $_), 1, 1, opaque => $i + $_) for 0 .. 999;
    $c->send($b);
    for (0 .. 999) {
        my $r = $c->response(20) or BAIL_OUT('server stopped answering');
        if ($r->{status} == ST_OK) { $created++ }
        elsif ($r->{status} == ST_NO_MEMORY && $r->{body} eq 'Out of memory') { $refused++ }
        else { $other++ }
    }
    $i += 1000;
}
diag("memory_limit 1M: $created counters created, then 0x82 ($refused refused)");
ok($refused > 0 && $created > 1000, '0x82 Out of memory once the limit is reached');
is($other, 0, 'no other status on the way');
my %st = map { @$_ } $c->stats_pairs;
cmp_ok($st{objects}, '==', $created, 'Stats objects counts exactly the created ones');

my $r = $c->call(req_acquire('m0', 1, 2, opaque => 1));
ok($r && $r->{status} == ST_OK, 'an existing counter can still be acquired at the limit');
$r = $c->call(req_get('m' . ($i - 1), opaque => 2));
ok($r && $r->{status} == ST_NOT_FOUND, 'a refused name was not created');
my $b = $srv->connect;
$r = $b->call(req_acquire('new-at-limit', 1, 1, opaque => 3));
ok($r && $r->{status} == ST_NO_MEMORY, 'another client gets 0x82 for a new name, not a hang');
$r = $b->call(req_get('m1', opaque => 4));
ok($r && $r->{status} == ST_OK && $r->{body} eq u32(1), 'and can still Get existing counters');
$c->close;
ok(wait_until(sub {
    my $r = $b->call(req_acquire('after-gc', 1, 1, opaque => 5));
    return 0 unless $r;
    return 1 if $r->{status} == ST_OK;
    return 0;
}, 20), 'after the holder left and GC ran, new names are accepted again');
$b->close;
server_clean($srv);
done_testing;
