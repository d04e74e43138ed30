#!/usr/bin/perl
# 40-websocket.t: the WebSocket quota front over real sockets: the opening
# handshake and the HTTP answers that refuse (404, 405, 426, 400, 431);
# every message (quota_request, quota_release), every result and error
# code, every event (quota_passed, quota_timeout, quota_expired,
# quota_error); fragmented messages, pings, the close handshake and the
# RFC 6455 violations that close with their status codes; one FIFO queue
# shared with wait_acquire clients of the binary port, with leases
# expiring and being handed on; the bounds (requests per connection,
# message size); the stats. Durations in requests are short, but no check
# depends on how long anything took: each waits for its event.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use WsTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_ws(config => {
    'group.abc' => 'max:1', 'group.two' => 'max:2',
    'group.w' => 'max:1,wait:300ms', 'group.lease' => 'max:1,lease:300ms',
    'group.x' => 'max:1', 'group.y' => 'max:1', 'group.z' => 'max:1',
    'max_waits' => 3, 'http.max_message' => 1024,
});
my $port = $srv->{http_port};
my $ws = sub { WsTest->new($port, @_) };

sub is_msg {
    my ($got, $name, $obj, $what) = @_;
    is_deeply($got, [$name, $obj], $what)
        or diag(explain($got));
}
sub err_obj {
    my ($qid, $code, $text) = @_;
    return { (defined $qid ? (qid => $qid) : ()), success => JSON::PP::false,
             result => 'error', errormsg => $text, error_code => $code,
             error_message => $text };
}

# ---- The opening handshake ----
{
    my $c = $ws->(raw => 1);
    my $key = 'dGhlIHNhbXBsZSBub25jZQ==';
    my $h = $c->handshake(key => $key);
    like($h, qr/^HTTP\/1\.1 101 Switching Protocols\r\n/, 'upgrade: 101');
    like($h, qr/\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/,
         'the RFC\'s example key gets the RFC\'s accept value');
    is(ws_accept_of($key), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=', 'helper agrees');
    like($h, qr/\r\nUpgrade: websocket\r\n/i, 'Upgrade: websocket');
}
my %refusals = (
    "GET /other HTTP/1.1\r\nHost: x\r\n\r\n" => qr/^HTTP\/1\.1 404 /,
    "GET /quota HTTP/1.1\r\nHost: x\r\n\r\n" => qr/^HTTP\/1\.1 426 .*Sec-WebSocket-Version: 13/s,
    "POST /quota HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" => qr/^HTTP\/1\.1 405 /,
    "hello there\r\n\r\n" => qr/^HTTP\/1\.1 400 /,
    "GET /quota HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      . "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n" => qr/^HTTP\/1\.1 400 /,
    "GET /quota HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n" => qr/^HTTP\/1\.1 426 /,
    # RFC 7230 5.4: an HTTP/1.1 request without Host is a bad request.
    "GET /quota HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" => qr/^HTTP\/1\.1 400 /,
    "GET /quota HTTP/1.1\r\n" . ("X-Pad: " . ('p' x 100) . "\r\n") x 100 . "\r\n" => qr/^HTTP\/1\.1 431 /,
);
for my $req (sort keys %refusals) {
    my $c = $ws->(raw => 1);
    $c->send($req);
    my $a = $c->http_answer // '(nothing)';
    (my $first = $req) =~ s/\r\n.*//s;
    like($a, $refusals{$req}, "refused: $first");
    like($a, qr/\r\nConnection: close\r\n/, "$first: Connection: close");
    ok($c->eof_within(5), "$first: then the server closes");
}

# ---- quota_request, quota_release, FIFO among WebSocket clients ----
my @c = map { $ws->() } 1 .. 3;
$c[0]->send_msg(quota_request => { qid => 'q0', key => 'abc', timeout => 30 });
is_msg($c[0]->msg, 'quota_request_result', { qid => 'q0', result => 'ok' },
       'request of a free key: ok');
is_msg($c[0]->msg, 'quota_passed', { key => 'abc' }, 'then quota_passed');
$c[1]->send_msg(quota_request => { qid => 'q1', key => 'abc' });
is_msg($c[1]->msg, 'quota_request_result', { qid => 'q1', result => 'ok' },
       'request of a taken key: ok (queued)');
ok($c[1]->sync && $c[1]->quiet_for(0.1), 'queued: no event yet');
$c[2]->send_msg(quota_request => { qid => 'q2', key => 'abc' });
is_msg($c[2]->msg, 'quota_request_result', { qid => 'q2', result => 'ok' },
       'third: queued');
$c[0]->send_msg(quota_request => { qid => 'again', key => 'abc' });
is_msg($c[0]->msg, 'quota_request_result',
       err_obj('again', 1502, 'Quota request already active for this connection'),
       'a second request for one key on one connection: 1502');
$c[0]->send_msg(quota_release => { qid => 'q0', key => 'abc' });
ok($c[0]->sync, 'release: no answer (the specification has none)');
is_msg($c[1]->msg, 'quota_passed', { key => 'abc' },
       'release hands the grant to the first in line');
ok($c[2]->sync && $c[2]->quiet_for(0.1), 'the second in line still waits');
$c[2]->send_msg(quota_release => { qid => 'q2', key => 'abc' });
ok($c[2]->sync, 'release of a wait ends it');
$c[1]->close;
$c[0]->send_msg(quota_request => { qid => 'r', key => 'abc' });
is_msg($c[0]->msg, 'quota_request_result', { qid => 'r', result => 'ok' },
       'request again');
is_msg($c[0]->msg, 'quota_passed', { key => 'abc' },
       'closing the holder\'s connection released its grant; the cancelled '
       . 'wait was passed over');

# Several keys at once, one request each; qid of any JSON type echoed.
$c[0]->send_msg(quota_request => { qid => 7, key => 'two' });
is_msg($c[0]->msg, 'quota_request_result', { qid => 7, result => 'ok' },
       'a second key on the same connection; numeric qid echoed');
is_msg($c[0]->msg, 'quota_passed', { key => 'two' }, 'passed');
$c[0]->send_msg(quota_request => { key => 'x' });
is_msg($c[0]->msg, 'quota_request_result', { result => 'ok' },
       'without qid: the result has none');
is_msg($c[0]->msg, 'quota_passed', { key => 'x' }, 'passed');
$c[0]->send_msg(quota_request => { qid => 'm', key => 'y' });
is_msg($c[0]->msg, 'quota_request_result',
       err_obj('m', 1504, 'Too many quota requests on this connection'),
       'past counter.max_waits (3): 1504');
$c[0]->send_msg(quota_release => { qid => 'n', key => 'y' });
is_msg($c[0]->msg, 'quota_release_result',
       err_obj('n', 1509, 'Quota not requested'),
       'release of a key not requested: 1509');
for my $k ('abc', 'two', 'x') {
    $c[0]->send_msg(quota_release => { key => $k });
}
ok($c[0]->sync, 'released all three');

# ---- Errors: the connection goes on ----
my $e = $ws->();
$e->send_msg(quota_request => { qid => 'nf', key => 'nope' });
is_msg($e->msg, 'quota_request_result',
       err_obj('nf', 1501, 'Quota group not found'),
       'key that is no group: 1501, as the specification');
$e->send_msg(quota_release => { qid => 'nf2', key => 'nope' });
is_msg($e->msg, 'quota_release_result',
       err_obj('nf2', 1501, 'Quota group not found'), 'release of it: 1501');
my @bad = (
    [{ qid => 'b1' }, 'missing key'],
    [{ qid => 'b2', key => 5 }, 'key not a string'],
    [{ qid => 'b3', key => 'abc', timeout => 'soon' }, 'timeout a string'],
    [{ qid => 'b4', key => 'abc', timeout => -1 }, 'timeout negative'],
    [{ qid => 'b5', key => 'abc', expires => [] }, 'expires an array'],
    [{ qid => 'b6', key => '' }, 'empty key'],
);
for my $b (@bad) {
    $e->send_msg(quota_request => $b->[0]);
    is_msg($e->msg, 'quota_request_result',
           err_obj($b->[0]{qid}, 1505, 'Malformed request'),
           "malformed ($b->[1]): 1505 with the qid");
}
$e->send_msg(quota_fly => { qid => 'u' });
is_msg($e->msg, 'quota_fly_result', err_obj('u', 1506, 'Unknown message'),
       'unknown message name: 1506, answered as NAME_result');
for my $t ('not json', '{"a":1}', '["quota_request"]', '[1, {}]',
           '["quota_request", {}, 3]') {
    $e->send_text($t);
    is_msg($e->msg, 'error',
           err_obj(undef, 1507, 'Message is not a JSON array [name, object]'),
           "not [name, object]: $t: 1507");
}
$e->send(ws_frame(op => OP_BINARY, payload => "\x01\x02"));
is_msg($e->msg, 'error',
       err_obj(undef, 1508, 'Binary messages are not supported'),
       'binary message: 1508');
$e->send_msg(quota_request => { qid => 'ok', key => 'z' });
is_msg($e->msg, 'quota_request_result', { qid => 'ok', result => 'ok' },
       'after all those errors the connection still serves');
is_msg($e->msg, 'quota_passed', { key => 'z' }, 'and grants');

# ---- Framing: fragments, pings, close handshake ----
$e->send_text(ws_json(quota_release => { qid => 'fr', key => 'nope' }),
              frag => 5, ping => 1);
is_msg($e->msg, 'quota_release_result',
       err_obj('fr', 1501, 'Quota group not found'),
       'a message in fragments of 5 bytes, a ping between them, is one '
       . 'message');
is_deeply($e->{pongs}, ['mid'], 'the ping got its pong, payload echoed');
$e->send_close(1000);
is($e->close_code, 1000, 'close handshake: the server answers 1000');
ok($e->eof_within(5), 'and closes the TCP connection');

my $z = $ws->();
$z->send_msg(quota_request => { qid => 'z', key => 'z' });
is_msg($z->msg, 'quota_request_result', { qid => 'z', result => 'ok' },
       'the closed connection gave z back');
is_msg($z->msg, 'quota_passed', { key => 'z' }, 'passed');

my @violations = (
    [ws_frame(op => OP_TEXT, payload => 'x', masked => 0), 1002, 'unmasked frame'],
    [ws_frame(op => 3, payload => 'x'), 1002, 'reserved opcode 3'],
    [ws_frame(op => OP_TEXT, payload => 'x', rsv => 4), 1002, 'RSV1 set'],
    [ws_frame(op => OP_CONT, payload => 'x'), 1002, 'continuation without start'],
    # wslay's frame reader closes this one without a status code.
    [ws_frame(op => OP_PING, payload => 'x' x 126), 0, 'control frame over 125 bytes'],
    [ws_frame(op => OP_TEXT, payload => "[\"\xff\xfe\"]"), 1007, 'invalid UTF-8 in text'],
    [ws_frame(op => OP_TEXT, payload => 'x' x 1025), 1009, 'message over counter.http.max_message'],
    [ws_frame(op => OP_TEXT, fin => 0, payload => 'x' x 600)
       . ws_frame(op => OP_CONT, payload => 'x' x 600), 1009, 'fragments adding up to too much'],
);
for my $v (@violations) {
    my $c = $ws->();
    $c->send($v->[0]);
    is($c->close_code, $v->[1], "$v->[2]: close $v->[1]");
    ok($c->eof_within(5), "$v->[2]: connection closed");
}

# ---- Timeouts and the group's defaults ----
my $h = $ws->();
$h->send_msg(quota_request => { qid => 'h', key => 'w' });
$h->msg;
is_msg($h->msg, 'quota_passed', { key => 'w' }, 'w held');
my $t = $ws->();
$t->send_msg(quota_request => { qid => 't', key => 'w' });
is_msg($t->msg, 'quota_request_result', { qid => 't', result => 'ok' }, 'w queued');
is_msg($t->msg, 'quota_timeout', { key => 'w' },
       'quota_timeout by the group\'s wait (300 ms)');
$t->send_msg(quota_request => { qid => 't2', key => 'w', timeout => 0.2 });
$t->msg;
is_msg($t->msg, 'quota_timeout', { key => 'w' },
       'quota_timeout by the request\'s timeout');
$t->send_msg(quota_request => { qid => 't3', key => 'w', timeout => 0 });
is_msg($t->msg, 'quota_request_result', { qid => 't3', result => 'ok' },
       'timeout 0 on a taken key: ok');
is_msg($t->msg, 'quota_timeout', { key => 'w' }, 'then quota_timeout at once');
$h->close;

# ---- Expiry, and the queue shared with the binary port ----
my $bin = $srv->connect;
my $b2 = $srv->connect;
my $x = $ws->();
$x->send_msg(quota_request => { qid => 'l', key => 'lease' });
$x->msg;
is_msg($x->msg, 'quota_passed', { key => 'lease' }, 'lease: passed');
is_msg($x->msg, 'quota_expired', { key => 'lease' },
       'the group\'s lease (300 ms) ran out: quota_expired');
# FIFO across fronts: binary A holds, WebSocket B and binary C queue.
my $a = parse_wait_answer($bin->wcall(req_wait_acquire('abc', 1, 0, 30000, 0)));
is($a && $a->{position}, 0, 'binary client holds abc');
my $wb = $ws->();
$wb->send_msg(quota_request => { qid => 'B', key => 'abc', expires => 0.3 });
is_msg($wb->msg, 'quota_request_result', { qid => 'B', result => 'ok' },
       'WebSocket client queued behind it');
my $cq = parse_wait_answer($b2->wcall(req_wait_acquire('abc', 1, 0, 30000, 0)));
is($cq && $cq->{position}, 2, 'binary client C queued second (position 2)');
is($bin->answer->{status}, ST_OK, 'A releases')
    if $bin->send(req_wait_release('abc'));
is_msg($wb->msg, 'quota_passed', { key => 'abc' },
       'the WebSocket client, first in line, gets it');
is_msg($wb->msg, 'quota_expired', { key => 'abc' },
       'its expires (0.3 s) runs out: quota_expired');
my $ev = $b2->next_event;
is($ev && $ev->{code}, EV_GRANTED,
   'the expired grant went to the binary client next in line');
$wb->send_msg(quota_release => { qid => 'B', key => 'abc' });
ok($wb->sync, 'release after expiry: acknowledged silently');
$wb->send_msg(quota_request => { qid => 'B2', key => 'abc' });
is_msg($wb->msg, 'quota_request_result', { qid => 'B2', result => 'ok' },
       'the WebSocket client queues again');
$b2->wcall(req_wait_release('abc'));
is_msg($wb->msg, 'quota_passed', { key => 'abc' },
       'and gets it when the binary client releases');

# ---- Stats ----
my %st = mc_stats($srv->{mc_port});
cmp_ok($st{counter_websocket_upgrades}, '>=', 15, 'websocket_upgrades counted');
cmp_ok($st{counter_websocket_connections}, '>=', 1, 'websocket_connections open');
is($st{counter_websocket_http_errors}, scalar keys %refusals,
   'websocket_http_errors: one per refused request');
cmp_ok($st{counter_websocket_messages_in}, '>', 30, 'messages in');
cmp_ok($st{counter_websocket_messages_out}, '>', 30, 'messages out');
cmp_ok($st{counter_websocket_errors}, '>=', 17, 'error results');
is($st{counter_websocket_protocol_closes}, scalar @violations,
   'one protocol close per violation');

# ---- Shutdown: quota_error ----
my $q = $ws->();
$q->send_msg(quota_request => { qid => 'q', key => 'abc' });
is_msg($q->msg, 'quota_request_result', { qid => 'q', result => 'ok' },
       'queued before the stop');
ok(kill('TERM', $srv->{pid}), 'SIGTERM to mchost');
is_msg($q->msg, 'quota_error', { key => 'abc' },
       'the stop ends the wait with quota_error');
is_msg($wb->msg, 'quota_error', { key => 'abc' },
       'and the grant with quota_error');
$srv->stop;

# ---- Grants written by the releasing thread ----
# Two workers: whichever worker a release runs on, an idle WebSocket
# waiter hears from the releasing thread itself, as one text frame the
# same as its own worker would send (a 7-bit length, and a 16-bit one for
# a longer key; a key too long for that path goes the usual way). Each
# waiter gets one quota_passed, the chain of releases hands the unit down
# the line, and messages_out counts every message, those too.
{
    my $mid = 'm' x 110;        # its quota_passed is 140 bytes
    my $long = 'L' x 240;       # too long to be written by another thread
    my $d = start_ws(threads => 2, config => {
        'group.d' => 'max:1', "group.$mid" => 'max:1',
        "group.$long" => 'max:1' });
    my $dws = sub { WsTest->new($d->{http_port}, @_) };
    for my $key ('d', $mid, $long) {
        my $label = length $key > 1 ? length($key) . '-byte key' : 'key d';
        my $h = $d->connect;
        my $held = parse_wait_answer($h->wcall(req_wait_acquire($key, 1, 0,
                                                                30000, 0)));
        is($held && $held->{position}, 0, "$label: the binary client holds it");
        my @w = map { $dws->() } 1 .. 4;
        my $queued = 0;
        for my $i (0 .. $#w) {
            $w[$i]->send_msg(quota_request => { qid => "w$i", key => $key });
            my $m = $w[$i]->msg;
            $queued++ if $m && $m->[0] eq 'quota_request_result' &&
                         $m->[1]{result} eq 'ok';
        }
        is($queued, 4, "$label: four WebSocket waiters queued");
        my %before = mc_stats($d->{mc_port});
        $h->wcall(req_wait_release($key));
        my $passed = 0;
        for my $i (0 .. $#w) {
            my $m = $w[$i]->msg;
            last unless $m && $m->[0] eq 'quota_passed' &&
                        $m->[1]{key} eq $key;
            $passed++;
            ok($i == $#w || $w[$i + 1]->sync && $w[$i + 1]->quiet_for(0.05),
               "$label: waiter $i passed, the next still waits");
            $w[$i]->send_msg(quota_release => { key => $key });
            ok($w[$i]->sync, "$label: waiter $i released");
        }
        is($passed, 4, "$label: each waiter passed once, in queue order");
        ok(!(grep { !$_->quiet_for(0.05) } @w), "$label: nothing more");
        my %after = mc_stats($d->{mc_port});
        is($after{counter_websocket_messages_out} -
           $before{counter_websocket_messages_out}, 4,
           "$label: messages_out counted each quota_passed once");
        is($after{counter_waiting}, 0, "$label: nothing waiting");
        $_->close for @w;
        $h->close;
    }
    $d->stop;
}

done_testing;
