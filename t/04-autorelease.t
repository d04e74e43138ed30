#!/usr/bin/perl
# 04-autorelease.t: whatever a connection holds is released when it ends:
# close (EOF), reset (SO_LINGER 0), and half-close after its answers (the
# answers still arrive, then the server closes and releases).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless target_available;
my $srv = start_target(config => {});
my $watch = $srv->connect;

# Waits until Get(name) answers value on the watching connection.
sub settles_at {
    my ($name, $value) = @_;
    return wait_until(sub {
        my $r = $watch->call(req_get($name));
        return $r && $r->{status} == ST_OK && unpack('N', $r->{body}) == $value;
    });
}

for my $how (qw(close reset)) {
    my $a = $srv->connect;
    is($a->call(req_acquire("ar-$how", 3, 5))->{status}, ST_OK, "$how: acquire 3");
    is($a->call(req_acquire("ar-$how-2", 1, 1))->{status}, ST_OK,
       "$how: acquire a second counter");
    answer_is($watch->call(req_get("ar-$how")), resp(OP_GET, ST_OK, u32(3)),
              "$how: held while the connection is open");
    $how eq 'reset' ? $a->reset : $a->close;
    ok(settles_at("ar-$how", 0), "$how: released");
    ok(settles_at("ar-$how-2", 0), "$how: every counter it held released");
    answer_is($watch->call(req_acquire("ar-$how", 5, 5)),
              resp(OP_ACQUIRE, ST_OK, u32(5)), "$how: the full maximum is free again");
    is($watch->call(req_release("ar-$how", 5))->{status}, ST_OK, 'give it back');
}

# Half-close: the requests sent before shutdown are all answered.
my $h = $srv->connect;
$h->send(req_acquire('ar-half', 2, 2, opaque => 1) . req_get('ar-half', opaque => 2)
         . req_noop(opaque => 3));
$h->shutdown_write;
my @r = $h->responses(3);
answer_is($r[0], resp(OP_ACQUIRE, ST_OK, u32(2), 1), 'half-close: acquire answered');
answer_is($r[1], resp(OP_GET, ST_OK, u32(2), 2), 'half-close: get answered');
answer_is($r[2], resp(OP_NOOP, ST_OK, '', 3), 'half-close: noop answered');
ok($h->closed_within, 'half-close: then the server closes');
ok(settles_at('ar-half', 0), 'half-close: released');

# A connection that only holds part of a counter releases only its part.
my $x = $srv->connect;
my $y = $srv->connect;
$x->call(req_acquire('ar-part', 2, 10));
$y->call(req_acquire('ar-part', 3, 10));
$x->close;
ok(settles_at('ar-part', 3), "closing one holder releases only its 2 of 5");

$srv->stop;
done_testing;
