# 13-throttr.t: hostile clients of the Throttr port. A hundred connections
# each leave a request unfinished (every prefix length of an INSERT with
# 8-byte values and a 255-byte key) and hold it: the server keeps serving
# others, its memory stays bounded, and each one's request is answered
# once it is finished. A client pipelines a quarter of a million QUERYs
# without reading: the server stops reading it (back-pressure) and, once
# it reads, delivers every answer in order. Fifty connections send an
# unknown request type after a valid request: each gets its answer, is
# closed and counted, and the server goes on.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use ThrottrTest;
use Hostile;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_throttr(value_size => 8);
my $pid = $srv->{pid};
my $tp = $srv->{throttr_port};
my $key = 'k' x 255;
my $full = thr_insert(8, 7, TTL_H, 1, $key);
is(length $full, 274, 'the longest request: 274 bytes');

# Partial requests, held open.
my $rss0 = rss_kib($pid);
my @held;
for my $i (0 .. 99) {
    my $c = CounterTest::Conn->new($tp);
    my $cut = 1 + $i % (length($full) - 1);
    my $req = thr_insert(8, $i, TTL_H, 1, substr("$i-" . $key, 0, 255));
    $c->send(substr $req, 0, $cut);
    push @held, [$c, $req, $cut];
}
my $probe = CounterTest::Conn->new($tp);
$probe->send(thr_query('nothing'));
is(thr_read($probe, 1), "\x00", 'others are served while 100 requests hang');
my $grow = rss_kib($pid) - $rss0;
cmp_ok($grow, '<', 8192, "memory bounded with 100 partial requests (+$grow KiB)");
my $ok = 0;
for my $h (@held) {
    my ($c, $req, $cut) = @$h;
    $c->send(substr $req, $cut);
    $ok++ if (thr_read($c, 1) // '') eq "\x01";
    $c->close;
}
is($ok, 100, 'each held request answered once it was finished');

# A stalled reader.
my $N = $ENV{HOSTILE_THROTTR_REQUESTS} || 250_000;
my $stream = thr_query('0-' . substr($key, 0, 253)) x $N;
my $c = CounterTest::Conn->new($tp);
my $s = $c->sock;
$s->blocking(0);
my $off = 0;
for (1 .. 2) {
    while (defined(my $n = syswrite $s, $stream, 1 << 16, $off)) {
        $off += $n;
        last if $off >= length $stream;
    }
    sleep 1;
}
cmp_ok($off, '<', length $stream,
       sprintf('the server stopped reading after %.1f of %.1f MB',
               $off / 1e6, length($stream) / 1e6));
$s->blocking(1);
my $want = thr_query_answer(8, 0, TTL_H, 1);
# Writing the rest while reading: a child writes, this process reads.
my $kid = fork // die "fork: $!";
if ($kid == 0) {
    while ($off < length $stream) {
        my $n = syswrite $s, $stream, 1 << 16, $off;
        POSIX::_exit(1) unless defined $n;
        $off += $n;
    }
    POSIX::_exit(0);
}
CounterTest::track_pid($kid);
my $good = 0;
for (1 .. $N) {
    my $a = thr_read($c, length $want) // last;
    $good++ if $a eq $want;
}
waitpid $kid, 0;
CounterTest::untrack_pid($kid);
is($good, $N, "all $N answers delivered, in order, once the client read");
$c->close;

# Bad framing, fifty times.
my $closed = 0;
for my $i (1 .. 50) {
    my $b = CounterTest::Conn->new($tp);
    $b->send(thr_query('nothing') . chr(0x05 + $i % 200));
    my $a = thr_read($b, 1) // '';
    $closed++ if $a eq "\x00" && $b->closed_within;
}
is($closed, 50, 'fifty connections answered, then closed for bad framing');
my %st = mc_stats($srv->{mc_port});
is($st{counter_throttr_bad_framing}, 50, 'each counted in Stats');
$probe->send(thr_query('nothing'));
is(thr_read($probe, 1), "\x00", 'the server goes on');
done_testing;
