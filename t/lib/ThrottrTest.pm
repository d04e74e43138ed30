# ThrottrTest.pm: helpers for the Throttr front over real sockets: starts
# mchost with counter.so and the Throttr listener on a free loopback port,
# builds Throttr v5 requests for any value size (little-endian numbers),
# and reads their answers with bounded waits. Processes are started and
# killed through CounterTest, which tracks them by pid.
package ThrottrTest;

use strict;
use warnings;

use Exporter 'import';
use IO::Socket::IP;
use Time::HiRes qw(time);

use CounterTest;

our @EXPORT = qw(
    start_throttr free_port lenum thr_insert thr_query thr_update thr_purge
    thr_read thr_answer thr_query_answer
    THR_INSERT THR_QUERY THR_UPDATE THR_PURGE
    TTL_NS TTL_US TTL_MS TTL_S TTL_MIN TTL_H
    ATTR_QUOTA ATTR_TTL PATCH INCREASE DECREASE
);

use constant {
    THR_INSERT => 0x01, THR_QUERY => 0x02, THR_UPDATE => 0x03,
    THR_PURGE => 0x04,
    TTL_NS => 0x01, TTL_US => 0x02, TTL_MS => 0x03, TTL_S => 0x04,
    TTL_MIN => 0x05, TTL_H => 0x06,
    ATTR_QUOTA => 0x00, ATTR_TTL => 0x01,
    PATCH => 0x00, INCREASE => 0x01, DECREASE => 0x02,
};

# A loopback port nobody listens on right now (bound, read, closed).
sub free_port {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "bind: $@";
    my $p = $s->sockport;
    close $s;
    return $p;
}

# v as n little-endian bytes.
sub lenum {
    my ($v, $n) = @_;
    return substr(pack('Q<', $v), 0, $n);
}

# Starts mchost with the Throttr listener (value_size, config: more
# counter.* keys); retries on another port when the one it chose was taken
# meanwhile. The server's throttr_port is set.
sub start_throttr {
    my (%o) = @_;
    my $last = '';
    for (1 .. 5) {
        my $port = free_port();
        my $srv = eval {
            CounterTest::start_host(config => {
                threads => 1, 'throttr.port' => $port,
                'throttr.value_size' => $o{value_size} // 2,
                %{ $o{config} // {} } });
        };
        if ($srv) {
            $srv->{throttr_port} = $srv->{stats}{counter_throttr_port};
            return $srv if $srv->{throttr_port} && $srv->{throttr_port} == $port;
            $last = 'counter_throttr_port missing from stats';
            next;
        }
        $last = $@;
    }
    die "cannot start the Throttr front: $last";
}

sub _key { chr(length $_[0]) . $_[0] }

sub thr_insert {
    my ($n, $quota, $type, $ttl, $key) = @_;
    return chr(THR_INSERT) . lenum($quota, $n) . chr($type) . lenum($ttl, $n)
         . _key($key);
}
sub thr_query { chr(THR_QUERY) . _key($_[0]) }
sub thr_update {
    my ($n, $attr, $change, $value, $key) = @_;
    return chr(THR_UPDATE) . chr($attr) . chr($change) . lenum($value, $n)
         . _key($key);
}
sub thr_purge { chr(THR_PURGE) . _key($_[0]) }

# QUERY's success answer, as the server must send it.
sub thr_query_answer {
    my ($n, $quota, $type, $ttl) = @_;
    return "\x01" . lenum($quota, $n) . chr($type) . lenum($ttl, $n);
}

# Reads exactly len bytes from a CounterTest::Conn; undef on EOF or when
# they do not come within timeout seconds (the bytes read stay buffered).
sub thr_read {
    my ($c, $len, $timeout) = @_;
    my $deadline = time + ($timeout // $CounterTest::TIMEOUT);
    while (length $c->{buf} < $len) {
        my $n = $c->_fill($deadline);
        return undef unless $n;
    }
    return substr $c->{buf}, 0, $len, '';
}

# Reads one answer to a request of type: one byte, or a QUERY's whole
# success; undef when it does not come.
sub thr_answer {
    my ($c, $type, $n) = @_;
    my $st = thr_read($c, 1) // return undef;
    return $st unless $type == THR_QUERY && $st eq "\x01";
    my $rest = thr_read($c, 2 * $n + 1) // return undef;
    return $st . $rest;
}

1;
