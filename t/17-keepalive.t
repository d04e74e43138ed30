#!/usr/bin/perl
# 17-keepalive.t: counter connections carry TCP keepalive (on by default,
# with the configured idle time), so a holder that vanishes without a FIN
# or RST loses its resources in a bounded time; counter.keepalive=false
# turns it off. The kernel's timer on the server's end of the connection
# is read from /proc/net/tcp: timer 2 is the keepalive timer.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
plan skip_all => 'needs /proc/net/tcp' unless -r '/proc/net/tcp';

# The timer of the server's end of conn (local port = the counter port,
# remote port = conn's own): (timer kind, seconds left), or () if unseen.
sub server_timer {
    my ($srv, $conn) = @_;
    my $mine = $conn->{sock}->sockport;
    for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
        open my $fh, '<', $f or next;
        while (<$fh>) {
            my @c = split;
            next unless @c > 9 && $c[3] eq '01';    # established
            my $local = hex((split /:/, $c[1])[1]);
            my $remote = hex((split /:/, $c[2])[1]);
            next unless $local == $srv->{counter_port} && $remote == $mine;
            my ($kind, $when) = split /:/, $c[5];
            return (hex($kind), hex($when) / 100);   # clock ticks (USER_HZ)
        }
    }
    return ();
}

# The timer once no retransmission is pending (kind 1 while the client's
# ACK of the answer is still delayed), polled for a bounded time.
sub settled_timer {
    my ($srv, $conn) = @_;
    my @t;
    wait_until(sub { @t = server_timer($srv, $conn); @t && $t[0] != 1 }, 5);
    return @t;
}

# A connection that has been answered, so the server has adopted it.
sub adopted_conn {
    my ($srv) = @_;
    my $c = $srv->connect;
    my $r = $c->call(req_noop(opaque => 7));
    ok($r && $r->{status} == ST_OK, 'connection answered');
    return $c;
}

{
    my $srv = start_host(config => {});
    my $c = adopted_conn($srv);
    my ($kind, $left) = settled_timer($srv, $c);
    is($kind, 2, 'default: the keepalive timer runs on the connection');
    ok(defined $left && $left <= 30, "default idle time 30 s (left: $left)");
}

{
    my $srv = start_host(config => { keepalive_idle => 7,
                                     keepalive_interval => 2,
                                     keepalive_count => 3 });
    my $c = adopted_conn($srv);
    my ($kind, $left) = settled_timer($srv, $c);
    is($kind, 2, 'configured: keepalive timer');
    ok(defined $left && $left <= 7, "configured idle time 7 s (left: $left)");
    # A holder's resources stay while it is merely quiet.
    my $r = $c->call(req_acquire('quiet', 1, 1, opaque => 1));
    ok($r && $r->{status} == ST_OK, 'acquired');
    my $o = $srv->connect;
    $r = $o->call(req_get('quiet', opaque => 2));
    is(unpack('N', $r->{body}), 1, 'still held by the quiet connection');
}

{
    my $srv = start_host(config => { keepalive => 'false' });
    my $c = adopted_conn($srv);
    my ($kind) = settled_timer($srv, $c);
    is($kind, 0, 'counter.keepalive=false: no timer on an idle connection');
}

done_testing;
