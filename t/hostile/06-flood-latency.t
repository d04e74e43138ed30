# 06-flood-latency.t: a flood of distinct names (the keyed hash means
# clients cannot aim them at one bucket) while a probe client times Gets of
# one counter. Reports the probe's latency before and during the flood; no
# timing assertion: the checks are that every answer is right.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use POSIX qw(:sys_wait_h _exit);
use Test::More;
use Time::HiRes qw(time);

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $NAMES = $ENV{HOSTILE_FLOOD_NAMES} || 100_000;
my $srv = start_host(config => { buckets => 1024 });
my $probe = $srv->connect;
my $r = $probe->call(req_acquire('probe', 1, 1, opaque => 1));
ok($r && $r->{status} == ST_OK, 'probe counter acquired');

# Times n Gets of the probe counter; returns the latencies in microseconds
# and how many answers were wrong.
sub sample {
    my ($n) = @_;
    my (@lat, $bad);
    $bad = 0;
    for (1 .. $n) {
        my $t = time;
        my $a = $probe->call(req_get('probe', opaque => $_));
        push @lat, (time - $t) * 1e6;
        $bad++ unless $a && $a->{status} == ST_OK && $a->{body} eq u32(1);
    }
    return (\@lat, $bad);
}

my ($before, $bad0) = sample(500);
is($bad0, 0, 'probe answers right before the flood');

# The flood runs in a child: NAMES distinct names over 1024 buckets.
my $child = fork // die "fork: $!";
if ($child == 0) {
    my $ok = eval {
        my $f = $srv->connect;
        for (my $i = 0; $i < $NAMES; $i += 1000) {
            my $b = '';
            $b .= req_acquire("flood-$_", 1, 1) for $i .. $i + 999;
            $f->send($b);
            for (1 .. 1000) {
                my $a = $f->response(30) or die "flood: no answer\n";
                die "flood: status $a->{status}\n" if $a->{status} != ST_OK;
            }
        }
        1;
    };
    _exit($ok ? 0 : 1);
}
track_pid($child);
my (@during, $bad1, $st);
$bad1 = 0;
while (1) {
    my ($lat, $bad) = sample(50);
    push @during, @$lat;
    $bad1 += $bad;
    my $w = waitpid($child, WNOHANG);
    if ($w == $child) { $st = $?; last }
}
is($st, 0, "the flood of $NAMES distinct names was served");
is($bad1, 0, 'probe answers stayed right during the flood');
my ($after, $bad2) = sample(500);
is($bad2, 0, "probe answers right with $NAMES more counters in 1024 buckets");
my %stats = map { @$_ } $probe->stats_pairs;
diag(sprintf 'probe Get latency us (p50 / p99 / max): before %.0f / %.0f / %.0f, '
     . 'during flood %.0f / %.0f / %.0f (%d samples), after %.0f / %.0f / %.0f; '
     . 'objects %s, conflicts %s',
     percentiles(@$before), percentiles(@during), scalar @during,
     percentiles(@$after), $stats{objects} // '?', $stats{conflicts} // '?');
server_clean($srv);
done_testing;
