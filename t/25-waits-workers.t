#!/usr/bin/perl
# 25-waits-workers.t: waiting acquisition across worker threads
# (counter.threads=2; connections are handed out round robin, so two
# consecutive connections land on different workers): a grant made on one
# worker reaches a waiter on the other; many waiters on both workers are
# each granted exactly once, in queue order; and races between a release
# and the waiter's close or its own Wait_release, run for many rounds,
# leave nothing held and nothing waiting, with at most one event per
# request and none after a Wait_release's answer.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use IO::Select;
use Test::More;
use Time::HiRes qw(time);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $LONG = 30000;
my $srv = start_host(config => { threads => 2 });
my $watch = $srv->connect;

# The consumption Get reports for name (undef when it does not exist).
sub consumption {
    my ($name) = @_;
    my $r = $watch->call(req_get($name));
    return $r && $r->{status} == ST_OK ? unpack('N', $r->{body}) : undef;
}

# The Stats items as a hash.
sub stats_now { return map { @$_ } $watch->stats_pairs }

# Wait_acquire on c; the parsed answer (undef unless status 0).
sub wa {
    my ($c, @args) = @_;
    return parse_wait_answer($c->wcall(req_wait_acquire(@args)));
}

# ---- A grant crosses workers: holder and waiter on different ones ----
for my $how (qw(wait_release release close)) {
    my ($h, $w) = ($srv->connect, $srv->connect);
    my $n = "x-$how";
    if ($how eq 'release') {
        is($h->call(req_acquire($n, 2, 2))->{status}, ST_OK,
           "$n: Acquire 2 of 2");
    } else {
        my $a = wa($h, $n, 2, 2, 0, 0, opaque => 1);
        ok($a && $a->{state} == 0, "$n: 2 of 2 granted");
    }
    my $q = wa($w, $n, 1, 2, $LONG, 0, opaque => 0x42);
    ok($q && $q->{state} == 1 && $q->{position} == 1,
       "$n: queued on the other worker");
    if ($how eq 'wait_release') {
        answer_is($h->wcall(req_wait_release($n, opaque => 3)),
                  resp(OP_WAIT_RELEASE, ST_OK, u32(2), 3), "$n: returned");
    } elsif ($how eq 'release') {
        answer_is($h->call(req_release($n, 2, opaque => 3)),
                  resp(OP_RELEASE, ST_OK, '', 3), "$n: released");
    } else {
        $h->close;
    }
    my $e = $w->next_event;
    ok($e && $e->{code} == EV_GRANTED && $e->{opaque} == 0x42 &&
       $e->{value} == 1 && $e->{name} eq $n && $e->{lease_id} > 0,
       "$n: the grant event reaches the other worker");
    answer_is($w->wcall(req_wait_release($n, opaque => 4)),
              resp(OP_WAIT_RELEASE, ST_OK, u32(1), 4), "$n: waiter returns");
    $h->close unless $how eq 'close';
    $w->close;
}

# ---- A grant written straight to the waiter by the releasing worker ----
# An idle waiter hears of its grant from the releasing callback itself,
# whether it lives on the other worker or on the releasing one (then a
# connection in between keeps the two apart: connections alternate); its
# own worker still takes the grant: the event comes once, a renewal finds
# the grant, and the lease runs out with one lease-expired event, after
# which nothing more arrives.
for my $where ('other', 'same') {
    my $n = "direct-$where";
    my $h = $srv->connect;
    my $between = $where eq 'same' ? $srv->connect : undef;
    my $w = $srv->connect;
    my $a = wa($h, $n, 1, 1, 0, 0, opaque => 1);
    ok($a && $a->{state} == 0, "$n: 1 of 1 granted");
    my $q = wa($w, $n, 1, 1, $LONG, 60000, opaque => 0x51);
    ok($q && $q->{state} == 1, "$n: queued on the $where worker");
    answer_is($h->wcall(req_wait_release($n, opaque => 2)),
              resp(OP_WAIT_RELEASE, ST_OK, u32(1), 2), "$n: returned");
    my $e = $w->next_event;
    ok($e && $e->{code} == EV_GRANTED && $e->{opaque} == 0x51 &&
       $e->{value} == 1 && $e->{lease_id} > 0, "$n: granted event");
    # The owner's worker has armed the lease by the time it answers.
    my $r = $w->wcall(req_renew($n, 300, opaque => 3));
    answer_is($r, resp(OP_RENEW, ST_OK, pack('Q>', $e->{lease_id}), 3),
              "$n: the renewal finds the grant (one event before it)");
    my $x = $w->next_event(5);
    ok($x && $x->{code} == EV_LEASE_EXPIRED && $x->{opaque} == 0x51 &&
       $x->{lease_id} == $e->{lease_id} && $x->{value} == 1,
       "$n: the renewed lease runs out");
    ok($w->no_event_within(0.3), "$n: no second event");
    is(consumption($n), 0, "$n: nothing held");
    $_->close for grep { defined } $h, $between, $w;
}

# ---- A waiter that answers its grant at once, on the releasing worker ----
# The waiter's Wait_release follows the event as fast as the client can
# send it, often read in the same loop turn as the grant was made: it must
# find the grant taken and return it, every round.
{
    my $rounds = 200;
    my $ok = 0;
    my ($h, $between, $w) = map { $srv->connect } 1 .. 3;
    for my $round (1 .. $rounds) {
        my $a = wa($h, 'quick', 1, 1, 0, 0, opaque => 1);
        my $q = wa($w, 'quick', 1, 1, $LONG, 0, opaque => 2);
        last unless $a && $a->{state} == 0 && $q && $q->{state} == 1;
        $h->send(req_wait_release('quick', opaque => 3));
        my $e = $w->next_event;
        last unless $e && $e->{code} == EV_GRANTED && $e->{opaque} == 2;
        my $back = $w->wcall(req_wait_release('quick', opaque => 4));
        last unless $back && $back->{raw} eq
                             resp(OP_WAIT_RELEASE, ST_OK, u32(1), 4);
        my $r = $h->answer;
        last unless $r && $r->{raw} eq resp(OP_WAIT_RELEASE, ST_OK, u32(1), 3);
        $ok++;
    }
    is($ok, $rounds, "quick: $rounds grants returned at once, each found");
    ok($w->no_event_within(0.2) && $h->no_event_within(0), 'quick: no stray event');
    is(consumption('quick'), 0, 'quick: nothing held');
    $_->close for $h, $between, $w;
}

# ---- Many waiters on both workers: each granted once, in queue order ----
{
    my $nw = 40;
    my @h = map { $srv->connect } 1 .. 3;
    my @w = map { $srv->connect } 1 .. $nw;
    my $i = 0;
    ok(!(grep { my $a = wa($_, 'mw', 1, 3, 0, 0, opaque => 0x100 + $i++);
                !$a || $a->{state} != 0 } @h),
       'mw: three holders take all 3');
    my $bad = 0;
    for my $k (0 .. $#w) {
        my $a = wa($w[$k], 'mw', 1, 3, $LONG, 0, opaque => $k);
        $bad++ unless $a && $a->{state} == 1 && $a->{position} == $k + 1;
    }
    is($bad, 0, "mw: $nw waiters queued at positions 1..$nw");
    # The holders let go together; every granted waiter returns its grant
    # at once, which grants the next ones, from either worker.
    $_->send(req_wait_release('mw', opaque => 7)) for @h;
    my @ha = map { $_->answer } @h;
    my $back = resp(OP_WAIT_RELEASE, ST_OK, u32(1), 7);
    is(scalar(grep { $_ && $_->{raw} eq $back } @ha), 3,
       'mw: the holders returned theirs');
    my (%by_sock, @events, @answers);
    $by_sock{ $w[$_]->sock } = $_ for 0 .. $#w;
    my $sel = IO::Select->new(map { $_->sock } @w);
    my $deadline = time + 60;
    my $granted = 0;
    while ($granted < $nw && time < $deadline) {
        for my $s ($sel->can_read(1)) {
            my $k = $by_sock{$s};
            my $e = $w[$k]->next_event;
            push @{ $events[$k] }, $e;
            next unless $e && $e->{code} == EV_GRANTED;
            $granted++;
            $answers[$k] = $w[$k]->wcall(req_wait_release('mw',
                                                          opaque => 9));
        }
    }
    is($granted, $nw, 'mw: every waiter granted');
    my @once = grep { $events[$_] && @{ $events[$_] } == 1 &&
                      $events[$_][0]{opaque} == $_ &&
                      $events[$_][0]{name} eq 'mw' } 0 .. $#w;
    is(scalar @once, $nw, 'mw: each exactly one granted event, its opaque');
    my @ids = map { $events[$_] && $events[$_][0] ? $events[$_][0]{lease_id}
                                                 : 0 } 0 .. $#w;
    ok(!(grep { $ids[$_] <= $ids[$_ - 1] } 1 .. $#ids),
       'mw: lease ids grow with the queue position (FIFO)')
        or diag("ids: @ids");
    $back = resp(OP_WAIT_RELEASE, ST_OK, u32(1), 9);
    is(scalar(grep { $_ && $_->{raw} eq $back } @answers), $nw,
       'mw: each returned its 1');
    ok(!IO::Select->new(map { $_->sock } @w, @h)->can_read(0.3) &&
       !(grep { @{ $_->{events} // [] } || length $_->{buf} } @w),
       'mw: no further event anywhere');
    is(consumption('mw'), 0, 'mw: nothing held');
    my %st = stats_now();
    is($st{waiting}, 0, 'mw: stats: nothing waiting');
    cmp_ok($st{queue_grants}, '>=', $nw, 'mw: stats: queue_grants counted');
    $_->close for @h, @w;
}

# ---- A release racing the waiter's close (the grant may be in flight) ----
{
    my $rounds = 100;
    my $ok = 0;
    for my $round (1 .. $rounds) {
        my ($h, $w) = ($srv->connect, $srv->connect);
        my $a = wa($h, 'race', 1, 1, 0, 0, opaque => 1);
        my $q = wa($w, 'race', 1, 1, $LONG, 0, opaque => 2);
        last unless $a && $a->{state} == 0 && $q && $q->{state} == 1;
        # Both at once: the holder lets go (or goes) as the waiter goes.
        my $mode = $round % 3;
        if ($mode == 2) {
            $h->close;
        } else {
            $h->send(req_wait_release('race', opaque => 3));
        }
        $mode == 1 ? $w->reset : $w->close;
        if ($mode != 2) {
            my $r = $h->answer;
            last unless $r && $r->{raw} eq
                              resp(OP_WAIT_RELEASE, ST_OK, u32(1), 3);
            $h->close;
        }
        last unless wait_until(sub { consumption('race') == 0 });
        $ok++;
    }
    is($ok, $rounds, "race/close: $rounds rounds, each ending with 0 held");
    ok(wait_until(sub { my %st = stats_now();
                        $st{waiting} == 0 && $st{leases} == 0 &&
                        $st{curr_connections} == 1 }),
       'race/close: stats: nothing waiting, only the watcher connected');
    is(consumption('race'), 0, 'race/close: Get says 0');
    is_deeply(scalar $watch->queue_records, [], 'race/close: no queue left');
}

# ---- Wait_release racing the grant it would receive ----
{
    my $rounds = 200;
    my ($ok, %seen) = (0);
    for my $round (1 .. $rounds) {
        my ($h, $w) = ($srv->connect, $srv->connect);
        my $a = wa($h, 'wr', 1, 1, 0, 0, opaque => 1);
        my $q = wa($w, 'wr', 1, 1, $LONG, 0, opaque => 2);
        last unless $a && $a->{state} == 0 && $q && $q->{state} == 1;
        # Either one first: the waiter's release may come before the
        # grant, after its event, or between the grant and its delivery.
        my @send = ([$h, req_wait_release('wr', opaque => 3)],
                    [$w, req_wait_release('wr', opaque => 4)
                         . req_noop(opaque => 5)]);
        @send = reverse @send if $round % 2;
        $_->[0]->send($_->[1]) for @send;
        my $ha = $h->answer;
        my $wa = $w->answer;
        my $noop = $w->answer;
        my @before = @{ delete $w->{events} // [] };
        my $returned = $wa && $wa->{status} == ST_OK &&
                       length $wa->{body} == 4 ? unpack('N', $wa->{body})
                                               : -1;
        # Cancelled (0): no event at all; returned (1): the grant event
        # came before the answer or never comes.
        my $fine = $ha && $ha->{raw} eq resp(OP_WAIT_RELEASE, ST_OK, u32(1), 3)
            && $noop && $noop->{raw} eq resp(OP_NOOP, ST_OK, '', 5)
            && ($returned == 0 && !@before ||
                $returned == 1 && @before <= 1 &&
                !(grep { $_->{opcode} != EV_GRANTED || $_->{opaque} != 2 }
                  @before))
            && $w->no_event_within(0.05);
        unless ($fine) {
            diag("round $round: returned $returned, " . scalar(@before)
                 . ' events before the answer');
            last;
        }
        $seen{ $returned ? (@before ? 'granted, then returned'
                                    : 'returned in flight')
                         : 'cancelled' }++;
        $_->close for $h, $w;
        last unless wait_until(sub { consumption('wr') == 0 });
        $ok++;
    }
    is($ok, $rounds, "race/wait_release: $rounds rounds, answers consistent");
    note("race/wait_release outcomes: " .
         join(', ', map { "$_ $seen{$_}" } sort keys %seen));
    ok(wait_until(sub { my %st = stats_now();
                        $st{waiting} == 0 && $st{leases} == 0 }),
       'race/wait_release: stats: nothing waiting');
    is(consumption('wr'), 0, 'race/wait_release: Get says 0');
}

$watch->close;
$srv->stop;
done_testing;
