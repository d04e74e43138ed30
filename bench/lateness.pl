#!/usr/bin/perl
# lateness.pl: how late the server's timers are, seen from a client on
# loopback: the timed-out event of a queued Wait_acquire after its
# wait_ms, and the lease-expired event of a grant after its lease_ms.
# Lateness is the event's arrival less the deadline counted from the
# moment the request was sent, so it includes the request's trip to the
# server and the event's trip back. Prints p50, p99 and max in ms for
# each. Starts its own mchost (MCHOST and COUNTER_SO in the environment,
# as t/local.mk sets them) and stops it at the end.
#   usage: perl -I t/lib bench/lateness.pl [ROUNDS]   (default 10 rounds
#   of 50 concurrent deadlines each)
use strict;
use warnings;

use CounterTest;
use Time::HiRes ();

my $rounds = shift // 10;
my $per = 50;
die "MCHOST and COUNTER_SO must name a built mchost and counter.so\n"
    unless have_host;
my $srv = start_host(config => {});

sub now_ms { 1000 * Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC()) }

# Sends one request per connection with deadlines 100 + 7i ms, then reads
# each event in deadline order; returns the lateness of each in ms.
sub measure {
    my ($what) = @_;
    my (@late, @c, @sent, @dl);
    my $holder = $srv->connect;
    $holder->call(req_acquire('late-t', 1, 1)) if $what eq 'timeout';
    for my $i (0 .. $per - 1) {
        my $c = $srv->connect;
        my $ms = 100 + 7 * $i;
        my $req = $what eq 'timeout'
            ? req_wait_acquire('late-t', 1, 1, $ms, 0, opaque => $i + 1)
            : req_wait_acquire("late-l$i", 1, 1, 0, $ms, opaque => $i + 1);
        my $t = now_ms();
        my $a = parse_wait_answer($c->wcall($req));
        die "no answer to Wait_acquire\n" unless $a;
        push @c, $c;
        push @sent, $t;
        push @dl, $ms;
    }
    for my $i (0 .. $per - 1) {
        my $ev = $c[$i]->next_event(10);
        my $t = now_ms();
        die "no event for request $i: " . ($c[$i]{error} // "not an event") . "\n" unless $ev;
        push @late, $t - $sent[$i] - $dl[$i];
    }
    $_->close for @c, $holder;
    return @late;
}

# The value below which q of the sorted list lies.
sub pct {
    my ($q, @s) = @_;
    return $s[int($q * (@s - 1) + 0.5)];
}

for my $what ('timeout', 'expiry') {
    my @all;
    push @all, measure($what) for 1 .. $rounds;
    my @s = sort { $a <=> $b } @all;
    printf "%-8s n=%d  p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", $what,
        scalar @s, pct(0.5, @s), pct(0.99, @s), $s[-1];
}
$srv->stop;
