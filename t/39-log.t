#!/usr/bin/perl
# 39-log.t: what the log says about connections. Every line of mchost's
# stderr (mchost's own and counter.so's) starts with its time, ISO 8601 in
# UTC with milliseconds; a line about a connection names the client's
# address and port (an IPv6 address in brackets), not only the file
# descriptor: opened and closed (at -vv), refused over
# counter.max_connections (at -vv), and lost framing (a warning).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use IO::Socket::IP;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

# The port of c's own end (what the server sees as the client's port).
sub client_port { $_[0]{sock}->sockport }

my $srv = start_host(config => { max_connections => 1 }, args => ['-vv']);
my $c = $srv->connect;
answer_is($c->call(req_noop()), resp(OP_NOOP, ST_OK), 'a connection');
my $port = client_port($c);
my $over = $srv->connect;
my $over_port = client_port($over);
ok($over->closed_within, 'a second one is refused (max_connections 1)');
$c->send("\x42" x 24);                  # not a request: framing is lost
ok($c->closed_within, 'lost framing closes the first');
my $err;
wait_until(sub { ($err = $srv->stderr) =~ /\Q127.0.0.1:$port\E \(fd \d+\) closed/ }, 5);
like($err, qr/^$LOG_TS counter: connection 127\.0\.0\.1:$port \(fd \d+\) opened$/m,
     'opened: the client address and port');
like($err, qr/^$LOG_TS counter: connection from 127\.0\.0\.1:$over_port refused: counter\.max_connections \(1\) reached$/m,
     'refused: the client address and port');
like($err, qr/^$LOG_TS counter: connection 127\.0\.0\.1:$port \(fd \d+\) on the counter port: lost request framing \(magic 0x42\); closing$/m,
     'lost framing: the client address and port');
like($err, qr/^$LOG_TS counter: connection 127\.0\.0\.1:$port \(fd \d+\) closed$/m,
     'closed: the client address and port');
like($err, qr/^$LOG_TS mchost: /m, "mchost's own lines have the time too");
my @bad = grep { !/^$LOG_TS (?:mchost|counter): / } split /\n/, $err;
is_deeply(\@bad, [], 'every line starts with its time and who wrote it');
$srv->stop;

SKIP: {
    my $probe = IO::Socket::IP->new(LocalHost => '::1', Listen => 1);
    skip 'no IPv6 loopback', 2 unless $probe;
    close $probe;
    my $s6 = start_host(config => { bind => '::1' }, args => ['-vv']);
    my $sock = IO::Socket::IP->new(PeerHost => '::1',
                                   PeerPort => $s6->{counter_port},
                                   Timeout => $CounterTest::TIMEOUT)
        or die "connect to [::1]: $@";
    my $p6 = $sock->sockport;
    my $c6 = bless { sock => $sock, buf => '' }, 'CounterTest::Conn';
    answer_is($c6->call(req_noop()), resp(OP_NOOP, ST_OK),
              'IPv6: a connection');
    close $sock;
    my $e6;
    wait_until(sub { ($e6 = $s6->stderr) =~ /closed/ }, 5);
    like($e6, qr/^$LOG_TS counter: connection \[::1\]:$p6 \(fd \d+\) opened$/m,
         'IPv6: the address in brackets, then the port')
        or diag("stderr: $e6");
    $s6->stop;
}
done_testing;
