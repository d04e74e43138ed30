# 14-websocket.t: hostile clients of the WebSocket quota front. Slow
# handshakes (a byte at a time, and one that never ends its header
# block), frames declaring huge payloads, a flood of tiny frames, a client
# that never reads its answers, and half-open connections (requests, then
# silence, then a reset). The server must stay bounded in memory, keep
# serving a bystander on the binary port and a WebSocket bystander, and
# release what the hostile connections held once they are gone.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use WsTest;
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_ws(config => { 'group.abc' => 'max:1', 'group.many' => 'max:100000' });
my $port = $srv->{http_port};
my $pid = $srv->{pid};
my $rss0 = rss_kib($pid);

# A handshake a byte at a time still completes.
my $slow = WsTest->new($port, raw => 1);
my $hs = "GET /quota HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
       . "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
       . "Sec-WebSocket-Version: 13\r\n\r\n";
$slow->send($_) for split //, $hs;
like($slow->http_answer // '', qr/^HTTP\/1\.1 101 /, 'handshake a byte at a time: 101');

# Header blocks that never end: held open, bounded, refused at the bound.
my @stuck = map { my $c = WsTest->new($port, raw => 1); $c->send("GET /quota HTTP/1.1\r\n"); $c } 1 .. 50;
bystander_ok($srv, 'while 50 handshakes hang half-sent');
my $long = WsTest->new($port, raw => 1);
$long->send("GET /quota HTTP/1.1\r\n" . ("X-A: " . ('a' x 1000) . "\r\n") x 10);
like($long->http_answer // '', qr/^HTTP\/1\.1 431 /, 'a header block past 8 KiB: 431');

# Frames declaring huge payloads: 1009 as soon as payload arrives.
for my $len (1 << 20, 1 << 40, 1 << 62) {
    my $c = WsTest->new($port);
    $c->send(ws_frame(op => OP_TEXT, payload => 'x' x 64, declared => $len));
    is($c->close_code, 1009, "a frame declaring $len bytes: close 1009");
}
# A 64-bit length with its top bit set breaks the RFC: closed at once.
my $top = WsTest->new($port);
$top->send("\x81\xff\x80" . ("\0" x 7) . "mask" . 'x' x 16);
ok(defined $top->close_code && $top->eof_within(5),
   'a length with the top bit set: close frame, then the connection ends');

# A flood of tiny frames (fragments of one message, and pings).
my $f = WsTest->new($port);
my $frag = join '', ws_frame(op => OP_TEXT, fin => 0, payload => '['),
    (map { ws_frame(op => OP_CONT, fin => 0, payload => ' ') } 1 .. 5000),
    ws_frame(op => OP_CONT, payload => ']');
$f->send($frag);
is($f->close_code, 1009, '5000 one-byte fragments past 4 KiB: close 1009');
my $p = WsTest->new($port);
$p->send(join '', map { ws_frame(op => OP_PING, payload => 'p') } 1 .. 20000);
ok($p->sync(30), '20000 pings answered in order, then ours');
bystander_ok($srv, 'after the floods');

# A client that sends a lot and never reads: the server stops reading.
my $deaf = WsTest->new($port);
my $msg = ws_frame(op => OP_TEXT, payload => 'not json at all');
my $sent = 0;
$deaf->sock->blocking(0);
for (1 .. 200000) {
    my $n = syswrite $deaf->sock, $msg;
    last unless defined $n && $n > 0;
    $sent += $n;
}
my $grow = rss_kib($pid) - $rss0;
cmp_ok($grow, '<', 64 * 1024, "a client that never reads: RSS +$grow KiB");
bystander_ok($srv, 'while it does not read');

# Half-open: a holder and waiters that go silent, then reset.
my $h = WsTest->new($port);
$h->send_msg(quota_request => { qid => 'h', key => 'abc' });
$h->msg; $h->msg;
my @w = map { my $c = WsTest->new($port); $c->send_msg(quota_request => { key => 'abc', timeout => 300 }); $c->msg; $c } 1 .. 20;
for my $c ($h, @w, @stuck, $deaf) {
    setsockopt $c->sock, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0);
    $c->close;
}
my $n = WsTest->new($port);
$n->send_msg(quota_request => { qid => 'n', key => 'abc' });
$n->msg;
is_deeply($n->msg, ['quota_passed', { key => 'abc' }],
          'after the resets nothing holds abc or waits for it');
my %st;
ok(wait_until(sub { %st = mc_stats($srv->{mc_port}); $st{counter_websocket_connections} <= 4 }, 10),
   'the reset connections are gone')
    or diag("websocket_connections $st{counter_websocket_connections}");
server_clean($srv);
done_testing;
