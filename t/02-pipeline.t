#!/usr/bin/perl
# 02-pipeline.t: hundreds of mixed requests in one write are all answered,
# in order, each with its own opaque and the right answer.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless target_available;
my $srv = start_target(config => {});
my $c = $srv->connect;

# Builds 600 requests over a few counters and the answers they must get,
# following the acquire/release rules with a local model.
my (%cur, $bytes, @want);
for my $i (1 .. 600) {
    my $n = 'p' . ($i % 5);
    my $kind = $i % 6;
    if ($kind == 0 || $kind == 1) {
        my $res = 1 + $i % 3;
        $bytes .= req_acquire($n, $res, 6, opaque => $i);
        if (($cur{$n} // 0) + $res <= 6) {
            $cur{$n} += $res;
            push @want, resp(OP_ACQUIRE, ST_OK, u32($res), $i);
        } else {
            push @want, resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE, $i);
        }
    } elsif ($kind == 2) {
        $bytes .= req_release($n, 1, opaque => $i);
        if (!exists $cur{$n}) {
            push @want, resp_err(OP_RELEASE, ST_NOT_FOUND, $i);
        } elsif ($cur{$n} >= 1) {
            $cur{$n}--;
            push @want, resp(OP_RELEASE, ST_OK, '', $i);
        } else {
            push @want, resp_err(OP_RELEASE, ST_NOT_ACQUIRED, $i);
        }
    } elsif ($kind == 3) {
        $bytes .= req_get($n, opaque => $i);
        push @want, exists $cur{$n} ? resp(OP_GET, ST_OK, u32($cur{$n}), $i)
                                    : resp_err(OP_GET, ST_NOT_FOUND, $i);
    } elsif ($kind == 4) {
        $bytes .= req_noop(opaque => $i);
        push @want, resp(OP_NOOP, ST_OK, '', $i);
    } else {
        $bytes .= req(OP_GET, "\0", opaque => $i);
        push @want, resp_err(OP_GET, ST_INVALID, $i);
    }
}
$c->send($bytes);
my @got = $c->responses(scalar @want);
is(scalar @got, scalar @want, '600 requests in one write: 600 answers');
my $bad = 0;
for my $i (0 .. $#want) {
    next if $got[$i] && $got[$i]{raw} eq $want[$i];
    diag "answer $i: got " . ($got[$i] ? hexdump($got[$i]{raw}) : 'nothing')
         . ', want ' . hexdump($want[$i]) if $bad++ < 5;
}
is($bad, 0, 'every answer in request order and as the model says');
ok($c->quiet_for(0.2), 'nothing more arrives');

# The same in small random pieces: request boundaries do not matter.
my $c2 = $srv->connect;
my $small = join '', map { req_noop(opaque => $_) } 1 .. 200;
while (length $small) {
    $c2->send(substr $small, 0, 1 + int rand 40, '');
}
my @r = $c2->responses(200);
is(join(',', map { $_->{opaque} } @r), join(',', 1 .. 200),
   '200 noops written in random pieces: answered in order');

$srv->stop;
done_testing;
