#!/usr/bin/perl
# 23-waits-shutdown.t: when mchost is stopped with SIGTERM, every
# connection with a Wait_acquire request queued or granted gets a shutdown
# event (0x04) for each of them before the connection closes: value = the
# resources the request held (0 for a queued one), lease id = its grant's
# (0 for a queued one). Connections without such requests (reference
# Acquire holders, an acknowledged or not yet acknowledged expiry) just
# see the close. mchost exits 0. During the stop nothing is granted: a
# holder on one worker ending first never hands its resources to a waiter
# on another worker, whose shutdown event says value 0 and lease id 0;
# that is checked over several rounds with waiters on both workers.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use POSIX qw(:sys_wait_h);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $LONG = 60000;
my $srv = start_host(config => { threads => 2 });

# Wait_acquire on c; the parsed answer (undef unless status 0).
sub wa {
    my ($c, @args) = @_;
    return parse_wait_answer($c->wcall(req_wait_acquire(@args)));
}

# Every packet c receives until the server closes it, and whether it did
# (within the helper's timeout).
sub until_eof {
    my ($c) = @_;
    my @p = @{ delete $c->{events} // [] };
    while (my $r = $c->response) { push @p, $r }
    return (\@p, ($c->{error} // '') eq 'eof');
}

my %c = map { $_ => $srv->connect } qw(h1 h2 w1 w2 own g1 g2 x p idle);
my %id;
my $ans = wa($c{h1}, 'sd', 2, 3, 0, 0, opaque => 0xa1);
ok($ans && $ans->{state} == 0, 'h1: 2 of sd granted, no lease');
$id{h1} = $ans->{lease_id};
$ans = wa($c{h2}, 'sd', 1, 3, 0, $LONG, opaque => 0xa2);
ok($ans && $ans->{state} == 0, 'h2: 1 of sd granted with a lease');
$id{h2} = $ans->{lease_id};
$ans = wa($c{w1}, 'sd', 2, 3, $LONG, 0, opaque => 0xb1);
ok($ans && $ans->{state} == 1 && $ans->{position} == 1, 'w1: 2 queued');
$ans = wa($c{w2}, 'sd', 1, 3, $LONG, 0, opaque => 0xb2);
ok($ans && $ans->{state} == 1 && $ans->{position} == 2, 'w2: 1 queued');

# One connection with several requests: one queued behind its own
# reference Acquire (nobody else can grant it), one granted.
is($c{own}->call(req_acquire('own', 3, 3))->{status}, ST_OK,
   'own: Acquire 3 of 3');
$ans = wa($c{own}, 'own', 1, 3, $LONG, 0, opaque => 0xc1);
ok($ans && $ans->{state} == 1, 'own: queued behind its own holding');
$ans = wa($c{own}, 'own2', 4, 4, 0, 0, opaque => 0xc2);
ok($ans && $ans->{state} == 0, 'own: 4 of own2 granted');
$id{own2} = $ans->{lease_id};

# A grant that came through the queue (its event already delivered).
$ans = wa($c{g1}, 'sg', 1, 1, 0, 0, opaque => 0xd1);
ok($ans && $ans->{state} == 0, 'g1: sg held');
$ans = wa($c{g2}, 'sg', 1, 1, $LONG, 0, opaque => 0xd2);
ok($ans && $ans->{state} == 1, 'g2: queued');
answer_is($c{g1}->wcall(req_wait_release('sg', opaque => 0xd3)),
          resp(OP_WAIT_RELEASE, ST_OK, u32(1), 0xd3), 'g1: returned');
my $e = $c{g2}->next_event;
ok($e && $e->{code} == EV_GRANTED, 'g2: granted through the queue');
$id{g2} = $e ? $e->{lease_id} : 0;

# An expired lease, not yet acknowledged: nothing is held, no event.
$ans = wa($c{x}, 'sx', 1, 1, 0, 200, opaque => 0xe1);
ok($ans && $ans->{state} == 0, 'x: leased 200 ms');
$e = $c{x}->next_event;
ok($e && $e->{code} == EV_LEASE_EXPIRED, 'x: expired');

is($c{p}->call(req_acquire('plain', 1, 1))->{status}, ST_OK,
   'p: a reference Acquire holder');
is($c{idle}->call(req_noop())->{status}, ST_OK, 'idle: a connection');

my $pid = $srv->{pid};
ok(kill('TERM', $pid), 'SIGTERM sent to mchost');
my %got;
for my $k (sort keys %c) {
    my ($p, $eof) = until_eof($c{$k});
    ok($eof, "$k: closed by the server");
    my @bad = grep { !is_event($_) } @$p;
    is(scalar @bad, 0, "$k: only events before the close");
    $got{$k} = { map { my $x = parse_event($_);
                       $x ? ($x->{opaque} => $x) : () } @$p };
    is(scalar keys %{ $got{$k} }, scalar @$p, "$k: one event per request")
        or diag explain [map { hexdump($_->{raw}) } @$p];
}

# Checks that event x is exactly a shutdown event (opaque, id, value, name).
sub shutdown_is {
    my ($x, $opaque, $id, $value, $name, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return is_deeply($x && { map { $_ => $x->{$_} }
                             qw(code opaque lease_id value name status
                                reserved) },
                     { code => EV_SHUTDOWN, opaque => $opaque,
                       lease_id => $id, value => $value, name => $name,
                       status => 0, reserved => 0 }, $title);
}

shutdown_is($got{h1}{0xa1}, 0xa1, $id{h1}, 2, 'sd',
            'h1: shutdown, its lease id, its 2 released');
shutdown_is($got{h2}{0xa2}, 0xa2, $id{h2}, 1, 'sd',
            'h2: shutdown, its lease id, its 1 released');
# A queued request on sd: value 0 and lease id 0, even when the stop
# released a holder of sd (h1, h2) before it: nothing is granted on the way
# out.
for my $w ([w1 => 0xb1], [w2 => 0xb2]) {
    my ($k, $opaque) = @$w;
    shutdown_is($got{$k}{$opaque}, $opaque, 0, 0, 'sd',
                "$k: shutdown while queued: 0");
}
shutdown_is($got{own}{0xc1}, 0xc1, 0, 0, 'own',
            'own: the queued request: lease id 0, value 0');
shutdown_is($got{own}{0xc2}, 0xc2, $id{own2}, 4, 'own2',
            'own: the granted request: its lease id, 4');
is(scalar keys %{ $got{own} }, 2, 'own: one event for each request');
shutdown_is($got{g2}{0xd2}, 0xd2, $id{g2}, 1, 'sg',
            'g2: shutdown of a grant made through the queue');
is_deeply([map { scalar keys %{ $got{$_} } } qw(g1 x p idle)], [0, 0, 0, 0],
          'no event where no request is queued or granted');

my $st;
wait_until(sub { my $r = waitpid($pid, WNOHANG);
                 $st = $? if $r == $pid; defined $st }, 20);
ok(defined $st, 'mchost exited');
if (defined $st) {
    untrack_pid($pid);
    delete $srv->{pid};
}
is($st, 0, 'mchost exit status 0');
unlike($srv->stderr, qr/(ERROR|WARNING|Assertion|Sanitizer)/i,
       'nothing alarming on stderr');

# ---- Rounds: holders and waiters crossed over two workers ----
# Connections are dealt to the workers in turn, so a0 and a1 share one
# worker and b0 and b1 the other, whichever one got the first. a0 holds
# "ra" (a reference Acquire, ended by release-all) and b0 waits for it;
# b1 holds "rb" (a granted Wait_acquire, ended with its ticket) and a1
# waits for it. Whichever worker's connections end first, they release
# what a waiter of the other worker is queued for.
my $ROUNDS = 6;
for my $round (1 .. $ROUNDS) {
    my $s = start_host(config => { threads => 2 });
    my ($a0, $b0, $a1, $b1) = map { my $c = $s->connect;
                                    $c->call(req_noop()); $c } 1 .. 4;
    is($a0->call(req_acquire('ra', 1, 1))->{status}, ST_OK,
       "round $round: a0 holds ra");
    my $g = wa($b1, 'rb', 1, 1, 0, 0, opaque => 0x1b);
    ok($g && $g->{state} == 0, "round $round: b1 holds rb");
    my $q = wa($b0, 'ra', 1, 1, $LONG, 0, opaque => 0x0a);
    ok($q && $q->{state} == 1, "round $round: b0 queued for ra");
    $q = wa($a1, 'rb', 1, 1, $LONG, 0, opaque => 0x0b);
    ok($q && $q->{state} == 1, "round $round: a1 queued for rb");
    my $spid = $s->{pid};
    kill 'TERM', $spid;
    my %ev;
    for my $c ([a0 => $a0], [b0 => $b0], [a1 => $a1], [b1 => $b1]) {
        my ($p, $eof) = until_eof($c->[1]);
        ok($eof, "round $round: $c->[0] closed by the server");
        $ev{ $c->[0] } = [map { parse_event($_) } @$p];
    }
    is(scalar @{ $ev{a0} }, 0, "round $round: a0 (Acquire) gets no event");
    is(scalar @{ $ev{b0} }, 1, "round $round: b0 gets one event");
    shutdown_is($ev{b0}[0], 0x0a, 0, 0, 'ra',
                "round $round: b0 was never granted ra");
    is(scalar @{ $ev{a1} }, 1, "round $round: a1 gets one event");
    shutdown_is($ev{a1}[0], 0x0b, 0, 0, 'rb',
                "round $round: a1 was never granted rb");
    shutdown_is($ev{b1}[0], 0x1b, $g ? $g->{lease_id} : -1, 1, 'rb',
                "round $round: b1's own grant, returned");
    my $rst;
    wait_until(sub { my $r = waitpid($spid, WNOHANG);
                     $rst = $? if $r == $spid; defined $rst }, 20);
    if (defined $rst) {
        untrack_pid($spid);
        delete $s->{pid};
    }
    is($rst, 0, "round $round: mchost exit status 0");
}
done_testing;
