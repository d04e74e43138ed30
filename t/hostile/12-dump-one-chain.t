# 12-dump-one-chain.t: counter.buckets=1 (legal) puts every counter in one
# chain. Twenty clients each send one Dump and never read. The server must
# stop each at its output watermark inside the chain (not after the whole
# chain), so its memory grows by about the documented ~512 KiB per such
# client at most, keep serving others meanwhile, and still deliver every
# record exactly once to each client once it reads.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use IO::Select;
use Test::More;
use Time::HiRes qw(sleep time);

plan skip_all => 'mchost or counter.so not built' unless have_host();

# Long names make each Dump big (about 9 MB, well past what the kernel's
# socket buffers absorb) with few counters; a Dump stopped only after the
# whole chain would hold all of it in the server's memory.
my $N = $ENV{HOSTILE_CHAIN_COUNTERS} || 150;
sub name_of { sprintf('chain%06d', $_[0]) . ('x' x 60_000) }
my $CLIENTS = 20;
my $srv = start_host(config => { buckets => 1, threads => 1 });
my $pid = $srv->{pid};

my $holder = $srv->connect;
for (my $i = 0; $i < $N; $i += 10) {
    my $b = '';
    $b .= req_acquire(name_of($i + $_), 1, 1)
        for 0 .. ($N - $i > 10 ? 9 : $N - $i - 1);
    $holder->send($b);
    my @r = $holder->responses($N - $i > 10 ? 10 : $N - $i, 60);
    BAIL_OUT('setup Acquire failed') if grep { $_->{status} != ST_OK } @r;
}

# RSS once it has stopped moving (the dumpers stall at their watermarks).
sub settled_rss {
    my ($last, $now) = (0, rss_kib($pid));
    for (1 .. 50) {
        last if $now == $last;
        sleep 0.2;
        ($last, $now) = ($now, rss_kib($pid));
    }
    return $now;
}

my $before = settled_rss();
my $probe = $srv->connect;
my @dumpers = map { $srv->connect } 1 .. $CLIENTS;
$_->send(req_dump(opaque => 11)) for @dumpers;
# Reported, not asserted: how long the Dumps' start delays another client
# on the same worker (each Dump gets a bounded slice per turn).
my $t0 = time;
my $pr = $probe->call(req_noop(opaque => 12), 60);
my $delay_ms = (time - $t0) * 1000;
ok($pr && $pr->{status} == ST_OK, 'a client on the same worker is answered');
my $after = settled_rss();
my $per = ($after - $before) / $CLIENTS;
my $record = 12 + 10 + length(name_of(0));
diag(sprintf('%d counters in one bucket (%.1f MiB of records per Dump): '
             . 'RSS %d -> %d KiB, %.0f KiB per non-reading dumper; a Noop '
             . 'sent as they started was answered in %.1f ms',
             $N, $N * $record / 1048576, $before, $after, $per, $delay_ms));
cmp_ok($per, '<', 1024,
       'a non-reading dumper costs the server well under its whole Dump');
bystander_ok($srv, 'twenty stalled dumpers of one long chain');

# Reads d's Dump to its end marker; returns (records by name, duplicates),
# or () on EOF or timeout. Parses in place: the stream is megabytes long.
sub read_dump {
    my ($d) = @_;
    my ($buf, $pos, %seen, $dup) = ('', 0);
    $dup = 0;
    while (1) {
        while (length($buf) - $pos >= 12) {
            my $len = unpack 'N', substr($buf, $pos + 4, 4);
            last if length($buf) - $pos < 12 + $len;
            return (\%seen, $dup) if $len == 0;
            my $nl = unpack 'n', substr($buf, $pos + 20, 2);
            $dup++ if $seen{substr($buf, $pos + 22, $nl)}++;
            $pos += 12 + $len;
        }
        $buf = substr($buf, $pos);
        $pos = 0;
        return () unless IO::Select->new($d->sock)->can_read(60);
        my $n = sysread($d->sock, $buf, 1 << 20, length $buf);
        return () unless $n;
    }
}

my $all_ok = 1;
for my $d (@dumpers) {
    my ($seen, $dup) = read_dump($d);
    my $n = $seen ? keys %$seen : 0;
    diag("a dumper got $n distinct records, $dup twice") if $n != $N || $dup;
    $all_ok = 0 if !$seen || $dup || $n != $N;
}
ok($all_ok, "each dumper got all $N records, none twice");
server_clean($srv);
done_testing;
