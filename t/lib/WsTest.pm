# WsTest.pm: a minimal WebSocket client (RFC 6455) for the quota front's
# tests: the opening handshake, masked frames (whole or in fragments),
# pings, close handshakes, raw bytes for the tests that break the RFC on
# purpose, and the quota API's JSON messages, with bounded reads. Servers
# are started through CounterTest, which tracks and kills them by pid.
package WsTest;

use strict;
use warnings;

use Exporter 'import';
use IO::Socket::IP;
use IO::Select;
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Digest::SHA qw(sha1);
use Socket qw(IPPROTO_TCP TCP_NODELAY SHUT_WR);
use Time::HiRes qw(time);

use CounterTest;

our @EXPORT = qw(start_ws ws_free_port ws_frame ws_json ws_accept_of
                 OP_CONT OP_TEXT OP_BINARY OP_CLOSE OP_PING OP_PONG);

use constant {
    OP_CONT => 0, OP_TEXT => 1, OP_BINARY => 2, OP_CLOSE => 8, OP_PING => 9,
    OP_PONG => 10,
};

my $JSON = JSON::PP->new->canonical;

# A loopback port nobody listens on right now.
sub ws_free_port {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "bind: $@";
    my $p = $s->sockport;
    close $s;
    return $p;
}

# Starts mchost with the WebSocket front on a free port (config: more
# counter.* keys); the server's http_port is set. Retries on another port
# when the chosen one was taken meanwhile.
sub start_ws {
    my (%o) = @_;
    my $last = '';
    for (1 .. 5) {
        my $port = ws_free_port();
        my $srv = eval {
            CounterTest::start_host(config => {
                threads => $o{threads} // 1, 'http.port' => $port,
                %{ $o{config} // {} } });
        };
        if ($srv) {
            $srv->{http_port} = $srv->{stats}{counter_http_port};
            return $srv if $srv->{http_port} && $srv->{http_port} == $port;
            $last = 'counter_http_port missing from stats';
            next;
        }
        $last = $@;
    }
    die "cannot start the WebSocket front: $last";
}

# The Sec-WebSocket-Accept value for a key.
sub ws_accept_of {
    my ($key) = @_;
    my $a = encode_base64(sha1($key . '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'),
                          '');
    return $a;
}

# One frame: fin (default 1), opcode, payload, masked (default 1), rsv bits.
sub ws_frame {
    my (%f) = @_;
    my $payload = $f{payload} // '';
    my $len = length $payload;
    my $b0 = (($f{fin} // 1) ? 0x80 : 0) | (($f{rsv} // 0) << 4) | $f{op};
    my $mask = $f{masked} // 1;
    my $h = chr($b0);
    my $m = $mask ? 0x80 : 0;
    my $declared = $f{declared} // $len;
    if ($declared < 126) { $h .= chr($m | $declared) }
    elsif ($declared < 65536) { $h .= chr($m | 126) . pack('n', $declared) }
    else { $h .= chr($m | 127) . pack('Q>', $declared) }
    return $h . $payload unless $mask;
    my $key = pack 'N', int(rand(2**32));
    my $masked = $payload ^ substr($key x (int($len / 4) + 1), 0, $len);
    return $h . $key . $masked;
}

# A message as JSON text: [name, object].
sub ws_json { $JSON->encode([$_[0], $_[1]]) }

# Opens a TCP connection to port and, unless raw, does the handshake.
sub new {
    my ($class, $port, %o) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Timeout => $CounterTest::TIMEOUT)
        or die "connect to $port: $@";
    setsockopt $s, IPPROTO_TCP, TCP_NODELAY, 1;
    binmode $s;
    my $self = bless { sock => $s, buf => '' }, $class;
    return $self if $o{raw};
    my $status = $self->handshake(%o);
    die "handshake: $status" unless $status =~ /^HTTP\/1\.1 101 /;
    return $self;
}

# Sends the upgrade request (path, key) and reads the answer's header
# block; returns it (undef on EOF or timeout).
sub handshake {
    my ($self, %o) = @_;
    my $key = $o{key} // encode_base64(join('', map { chr rand 256 } 1 .. 16),
                                       '');
    $self->{key} = $key;
    my $path = $o{path} // '/quota';
    $self->send("GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
              . "Sec-WebSocket-Key: $key\r\nSec-WebSocket-Version: 13\r\n"
              . ($o{extra} // '') . "\r\n");
    return $self->http_answer;
}

# Reads an HTTP answer's header block (and, with Content-Length, its
# body); undef on EOF or timeout.
sub http_answer {
    my ($self, $timeout) = @_;
    my $deadline = time + ($timeout // $CounterTest::TIMEOUT);
    while ($self->{buf} !~ /\r\n\r\n/) {
        my $n = $self->_fill($deadline);
        return undef unless $n;
    }
    $self->{buf} =~ s/^(.*?\r\n\r\n)//s;
    my $head = $1;
    if ($head =~ /^Content-Length:\s*(\d+)/mi) {
        my $len = $1;
        while (length $self->{buf} < $len) {
            my $n = $self->_fill($deadline);
            last unless $n;
        }
        $head .= substr $self->{buf}, 0, $len, '';
    }
    return $head;
}

# Writes all bytes; false when the peer is gone.
sub send {
    my ($self, $bytes) = @_;
    my $off = 0;
    while ($off < length $bytes) {
        my $n = syswrite $self->{sock}, $bytes, length($bytes) - $off, $off;
        return 0 unless defined $n;
        $off += $n;
    }
    return 1;
}

sub _fill {
    my ($self, $deadline) = @_;
    my $left = $deadline - time;
    return undef if $left <= 0;
    return undef unless IO::Select->new($self->{sock})->can_read($left);
    my $n = sysread $self->{sock}, $self->{buf}, 1 << 20, length $self->{buf};
    return $n ? $n : 0;
}

# Sends a text message (a JSON array when given name and object), in
# fragments of at most frag bytes when frag is given.
sub send_text {
    my ($self, $text, %o) = @_;
    return $self->send(ws_frame(op => OP_TEXT, payload => $text))
        unless $o{frag};
    my @parts = unpack "(a$o{frag})*", $text;
    my $out = '';
    for my $i (0 .. $#parts) {
        $out .= ws_frame(op => $i == 0 ? OP_TEXT : OP_CONT,
                         fin => $i == $#parts ? 1 : 0,
                         payload => $parts[$i]);
        # A ping between fragments: allowed, and answered at once.
        $out .= ws_frame(op => OP_PING, payload => 'mid') if $o{ping} && $i == 0;
    }
    return $self->send($out);
}

# Sends [name, object].
sub send_msg { my ($self, $name, $obj) = @_; $self->send_text(ws_json($name, $obj)) }

# Reads one frame: a hash (fin op payload), or undef on EOF / timeout
# ($self->{error}).
sub frame {
    my ($self, $timeout) = @_;
    return shift @{ $self->{held} } if $self->{held} && @{ $self->{held} };
    my $deadline = time + ($timeout // $CounterTest::TIMEOUT);
    delete $self->{error};
    while (1) {
        my $b = $self->{buf};
        if (length $b >= 2) {
            my ($b0, $b1) = unpack 'CC', $b;
            my $len = $b1 & 0x7f;
            my $hl = 2;
            if ($len == 126 && length $b >= 4) { $len = unpack 'x2n', $b; $hl = 4 }
            elsif ($len == 127 && length $b >= 10) { $len = unpack 'x2Q>', $b; $hl = 10 }
            elsif ($len >= 126) { $len = -1 }
            die 'server frame is masked' if $b1 & 0x80;
            if ($len >= 0 && length $b >= $hl + $len) {
                substr $self->{buf}, 0, $hl + $len, '';
                return { fin => $b0 >> 7, rsv => ($b0 >> 4) & 7,
                         op => $b0 & 0xf, payload => substr($b, $hl, $len) };
            }
        }
        my $n = $self->_fill($deadline);
        if (!defined $n) { $self->{error} = 'timeout'; return undef }
        if ($n == 0)     { $self->{error} = 'eof'; return undef }
    }
}

# The next data message, decoded: [name, object] (pongs are set aside in
# {pongs}; a close frame sets {closed} and returns undef).
sub msg {
    my ($self, $timeout) = @_;
    while (1) {
        my $f = $self->frame($timeout) // return undef;
        if ($f->{op} == OP_PONG) { push @{ $self->{pongs} }, $f->{payload}; next }
        if ($f->{op} == OP_CLOSE) { $self->{closed} = $f; return undef }
        return eval { $JSON->decode($f->{payload}) } // ['(not JSON)', { text => $f->{payload} }];
    }
}

# The close frame's status code from the server, reading until it comes
# (undef when none came); skips data messages.
sub close_code {
    my ($self, $timeout) = @_;
    while (1) {
        return unpack('n', $self->{closed}{payload} . "\0\0") if $self->{closed};
        my $f = $self->frame($timeout) // return undef;
        $self->{closed} = $f if $f->{op} == OP_CLOSE;
    }
}

# Sends a ping and waits for its pong: everything sent before it has been
# answered when it comes (the server answers in order). True when it came.
sub sync {
    my ($self, $timeout) = @_;
    my $tag = 'sync' . ++$self->{syncs};
    $self->send(ws_frame(op => OP_PING, payload => $tag));
    my @held;
    while (1) {
        my $f = $self->frame($timeout) // last;
        if ($f->{op} == OP_PONG && $f->{payload} eq $tag) {
            unshift @{ $self->{held} }, @held;
            return 1;
        }
        push @held, $f unless $f->{op} == OP_PONG;
    }
    return 0;
}

# True when the server closed the TCP connection within timeout.
sub eof_within {
    my ($self, $timeout) = @_;
    my $deadline = time + $timeout;
    while (1) {
        my $n = $self->_fill($deadline);
        return 0 unless defined $n;
        return 1 if $n == 0;
        $self->{buf} = '';
    }
}

# True when nothing arrives within timeout.
sub quiet_for {
    my ($self, $timeout) = @_;
    return 0 if length $self->{buf};
    return !IO::Select->new($self->{sock})->can_read($timeout);
}

# Sends a close frame with a status code.
sub send_close {
    my ($self, $code) = @_;
    $self->send(ws_frame(op => OP_CLOSE, payload => defined $code ? pack('n', $code) : ''));
}

sub shutdown_write { shutdown $_[0]{sock}, SHUT_WR }
sub close { CORE::close $_[0]{sock} }
sub sock { $_[0]{sock} }

1;
