# 09-stalled-reader.t: a client pipelines requests (a million Gets and
# Dumps of a thousand counters) and stops reading. The server must stop
# reading it too (back-pressure) instead of buffering answers without
# bound, keep serving others, and deliver every answer in order once the
# client reads again.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use IO::Select;
use Errno qw(EAGAIN EWOULDBLOCK);
use Test::More;
use Time::HiRes qw(sleep time);

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => {});
my $pid = $srv->{pid};
my $setup = $srv->connect;
my $b = '';
$b .= req_acquire("held-$_", 1, 1) for 1 .. 1000;
$setup->send($b);
$setup->responses(1000);

# The request stream: Gets, with a Dump (1001 answers) every 10000.
my $N = $ENV{HOSTILE_STALL_REQUESTS} || 1_000_000;
my $stream = '';
for my $i (1 .. $N) {
    $stream .= $i % 10_000 ? req_get('held-1', opaque => $i) : req_dump(opaque => $i);
}
my $c = $srv->connect;
my $s = $c->sock;
$s->blocking(0);
my $off = 0;
while (1) {
    my $n = syswrite $s, $stream, 1 << 16, $off;
    last unless defined $n;
    $off += $n;
    last if $off >= length $stream;
}
sleep 1;
while (defined(my $n = syswrite $s, $stream, 1 << 16, $off)) { $off += $n; last if $off >= length $stream }
my $rss0 = rss_kib($pid);
sleep 1;
cmp_ok($off, '<', length $stream, sprintf('the server stopped reading after %.1f of %.1f MB',
       $off / 1e6, length($stream) / 1e6));
my $grow = rss_kib($pid) - $rss0;
cmp_ok($grow, '<', 4096, "its memory does not grow while the client does not read (+$grow KiB)");
bystander_ok($srv, 'while a client does not read');

# Now read everything, writing the rest as the server takes it.
my ($next, $in, $ok, $dumping) = (1, '', 1, 0);
my $deadline = time + 120;
my $sel = IO::Select->new($s);
while ($next <= $N && time < $deadline) {
    if ($off < length $stream) {
        my $n = syswrite $s, $stream, 1 << 16, $off;
        $off += $n if defined $n;
    }
    next unless $sel->can_read(0.2);
    my $n = sysread $s, $in, 1 << 20, length $in;
    last unless $n;
    my $pos = 0;
    while (length($in) - $pos >= 12) {
        my ($m, $op, $st, undef, $len, $opq) = unpack 'CCCCNN', substr($in, $pos, 12);
        last if length($in) - $pos < 12 + $len;
        $pos += 12 + $len;
        if ($opq != $next) { $ok = 0; diag("answer $opq where $next was due"); last }
        if ($op == OP_DUMP) {
            next if $len > 0;
        }
        $next++;
    }
    substr($in, 0, $pos, '');
    last unless $ok;
}
ok($ok && $next == $N + 1, "all $N answers arrived in order once the client read");
$c->close;
$setup->close;
bystander_ok($srv, 'at the end');
server_clean($srv);
done_testing;
