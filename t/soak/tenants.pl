#!/usr/bin/perl
# tenants.pl: bounded soak of tenants on connections, with abrupt ends.
# The host has a users file (a tenant with a reserve on blocking
# connections, one on non-blocking connections, an Unthrottled admin), a
# default tenant, a small node capacity, the Throttr and the WebSocket
# fronts. Rounds of connections on every front (users logged in with
# Auth_user on the counter port, the default tenant elsewhere) pipeline
# requests well past their tenants' shares, so that most connections are
# paused or answered Throttled while others come and go; a third of them
# end abruptly (close unread, reset, half a request then close). Checks:
# every connection that stays gets every answer, in order (a counter
# answer's opaque; Throttr's status bytes; a WebSocket ping after its
# messages), with statuses its mode allows (0x2D only in the non-blocking
# mode); the server never closes a paused connection; at the end nothing
# is held (every counter released by its connection's end), the
# connections are gone, the node's figures are sane and the server is
# alive.
#
# usage: perl t/soak/tenants.pl [--duration SECONDS] [--conns N]
# (MCHOST and COUNTER_SO as for the t/ tests.) Exit 0 when every check
# held.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use CounterTest;
use ThrottrTest;
use WsTest;
use File::Temp qw(tempdir);
use Getopt::Long;
use IO::Socket::IP;
use Socket qw(SOL_SOCKET SO_LINGER);

my $duration = 20;
my $nconns = 24;
GetOptions('duration=i' => \$duration, 'conns=i' => \$nconns)
    or die "usage: $0 [--duration SECONDS] [--conns N]\n";

use constant OP_AUTH_USER => 0x4a;
use constant ST_THROTTLED => 0x2d;

my $failures = 0;
sub failed { $failures++; print STDERR "tenants.pl: FAILED: $_[0]\n" }

my $dir = tempdir(CLEANUP => 1);
my $users = "$dir/users";
write_file($users, "blk T1 - blk-secret-01234567\n"
                 . "nb T2 - nb-secret-012345678\n"
                 . "ops OPS admin,unthrottled ops-secret-01234567\n");
chmod 0600, $users;
write_file("$dir/throttle.conf", "node.capacity = 3000\n"
                               . "tenant.T1 = reserved:500\n");
my $srv = start_ws(threads => 2, config => {
    users_file => $users, default_tenant => 'anon',
    'throttle.config' => "$dir/throttle.conf",
    'throttr.port' => ThrottrTest::free_port(),
    'throttr.value_size' => 2 });
my $tport = $srv->{stats}{counter_throttr_port};

sub req_auth_user {
    my ($user, $secret, $flags, @o) = @_;
    return req(OP_AUTH_USER, pack('CxnnA*A*', $flags // 0, length $secret,
                                  length $user, $user, $secret), @o);
}

# A pipeline of n counter requests on c's own names: [bytes, opaques].
sub counter_pipeline {
    my ($tag, $n) = @_;
    my ($bytes, @opq) = ('');
    for my $i (1 .. $n) {
        my $name = "$tag-" . ($i % 3);
        my $r = rand;
        my $o = $i;
        $bytes .= $r < 0.4 ? req_acquire($name, 1, 1000, opaque => $o)
                : $r < 0.7 ? req_release($name, 1, opaque => $o)
                : $r < 0.9 ? req_get($name, opaque => $o)
                           : req_noop(opaque => $o);
        push @opq, $o;
    }
    return ($bytes, \@opq);
}

# Ends a connection's socket abruptly: closed unread, reset, or half a
# request then closed.
sub abrupt {
    my ($sock) = @_;
    my $r = rand;
    if ($r < 0.33) {
        setsockopt($sock, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    } elsif ($r < 0.66) {
        syswrite $sock, substr(req_acquire('half', 1, 10), 0, 7);
    }
    close $sock;
}

my %seen = (counter => 0, throttled => 0, throttr => 0, ws => 0,
            abrupt => 0);
my $end = time + $duration;
my $round = 0;
while (time < $end) {
    $round++;
    my @live;
    for my $k (1 .. $nconns) {
        my $kind = (qw(blk nb anon ops throttr ws))[$k % 6];
        my $tag = "r$round-c$k";
        my $abrupt = rand() < 0.33;
        if ($kind eq 'throttr') {
            my $c = $srv->connect(port => $tport);
            my $n = 20 + int rand 40;
            $c->send(join '', map { thr_purge("$tag-$_") } 1 .. $n);
            push @live, { kind => $kind, c => $c, n => $n,
                          abrupt => $abrupt };
            next;
        }
        if ($kind eq 'ws') {
            my $w = WsTest->new($srv->{http_port});
            my $n = 10 + int rand 20;
            $w->send_msg('no_such_message', { n => $_ }) for 1 .. $n;
            push @live, { kind => $kind, w => $w, n => $n,
                          abrupt => $abrupt };
            next;
        }
        my $c = $srv->connect;
        my $login = '';
        $login = req_auth_user('blk', 'blk-secret-01234567', 0,
                               opaque => 0) if $kind eq 'blk';
        $login = req_auth_user('nb', 'nb-secret-012345678', 1,
                               opaque => 0) if $kind eq 'nb';
        $login = req_auth_user('ops', 'ops-secret-01234567', 0,
                               opaque => 0) if $kind eq 'ops';
        my ($bytes, $opq) = counter_pipeline($tag, 50 + int rand 150);
        unshift @$opq, 0 if $login ne '';
        $c->send($login . $bytes);
        push @live, { kind => $kind, c => $c, opq => $opq,
                      abrupt => $abrupt };
    }
    for my $l (@live) {
        if ($l->{abrupt}) {
            $seen{abrupt}++;
            abrupt($l->{kind} eq 'ws' ? $l->{w}->sock : $l->{c}{sock});
            next;
        }
        if ($l->{kind} eq 'throttr') {
            my $got = thr_read($l->{c}, $l->{n}, 30);
            failed("throttr: $l->{n} answers did not all come")
                unless defined $got && length $got == $l->{n};
            $seen{throttr} += $l->{n};
            $l->{c}->close;
            next;
        }
        if ($l->{kind} eq 'ws') {
            failed('websocket: its messages were not all answered')
                unless $l->{w}->sync(30);
            $seen{ws} += $l->{n};
            $l->{w}->close;
            next;
        }
        for my $want (@{ $l->{opq} }) {
            my $r = $l->{c}->answer(30);
            if (!$r) {
                failed("$l->{kind}: answer $want never came");
                last;
            }
            failed("$l->{kind}: answer $r->{opaque} where $want was due")
                if $r->{opaque} != $want;
            my $st = $r->{status};
            if ($st == ST_THROTTLED) {
                failed("$l->{kind}: Throttled without the non-blocking mode")
                    unless $l->{kind} eq 'nb';
                my ($retry) = unpack 'Q>', $r->{body};
                failed("$l->{kind}: a hint of $retry ns")
                    unless $retry >= 1 && $retry <= 1_000_000_000;
                $seen{throttled}++;
            } elsif (!grep { $st == $_ } 0x00, 0x01, 0x21, 0x22) {
                failed("$l->{kind}: status $st");
            }
            $seen{counter}++;
        }
        $l->{c}->close;
    }
}

# The end: every connection gone and nothing held.
my $chk = $srv->connect;
$chk->call(req_auth_user('ops', 'ops-secret-01234567', 0, opaque => 1));
my $quiet = wait_until(sub {
    my %st = map { @$_ } $chk->stats_pairs;
    return ($st{curr_connections} // 99) <= 1
           ? 1 : undef;
}, 30);
my %st = map { @$_ } $chk->stats_pairs;
failed('connections or counters left: curr_connections '
       . ($st{curr_connections} // '?')) unless $quiet;
for my $round_tag (1 .. $round) {
    for my $k (1 .. $nconns) {
        for my $i (0 .. 2) {
            my $r = $chk->call(req_get("r$round_tag-c$k-$i"));
            failed("r$round_tag-c$k-$i still held")
                if $r && $r->{status} == 0 && unpack('N', $r->{body}) != 0;
        }
    }
}
my $node = parse_node_view($chk->call(req_node_show()));
failed('no node view') unless $node && $node->{capacity} == 3000;
$chk->close;
failed('the server died') unless pid_alive($srv->{pid});
$srv->stop;
printf "tenants.pl: %d rounds; %d counter answers (%d Throttled), %d "
     . "Throttr, %d WebSocket messages, %d abrupt ends; %s\n", $round,
    $seen{counter}, $seen{throttled}, $seen{throttr}, $seen{ws},
    $seen{abrupt}, $failures ? "$failures FAILURES" : 'every check held';
exit($failures ? 1 : 0);
