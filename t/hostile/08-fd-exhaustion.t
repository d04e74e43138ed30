# 08-fd-exhaustion.t: the server runs out of file descriptors (its limit
# lowered with prlimit). At the limit it must not spin (its CPU time stays
# low) and once descriptors are free again it must serve new clients.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;
use Time::HiRes qw(sleep time);

plan skip_all => 'mchost or counter.so not built' unless have_host();
plan skip_all => 'prlimit (util-linux) not installed'
    unless system('prlimit --version >/dev/null 2>&1') == 0;

my $srv = start_host(config => {});
my $pid = $srv->{pid};
opendir my $d, "/proc/$pid/fd" or die "proc: $!";
my $base = grep { /^\d+$/ } readdir $d;
closedir $d;
my $limit = $base + 16;
is(system('prlimit', "--pid=$pid", "--nofile=$limit:$limit"), 0,
   "server limited to $limit descriptors ($base in use)");

# Far more clients than descriptors; the kernel queues the rest.
my @c = grep { defined } map { eval { $srv->connect } } 1 .. 60;
is(scalar @c, 60, 'sixty clients connected (the kernel backlog holds them)');
sleep 1;
my $cpu0 = cpu_seconds($pid);
my $t0 = time;
sleep 3;
my $cpu = cpu_seconds($pid) - $cpu0;
my $wall = time - $t0;
diag(sprintf 'server CPU at the descriptor limit: %.2f s in %.1f s', $cpu, $wall);
cmp_ok($cpu, '<', $wall / 2, 'the server does not spin at the limit');

# Answers, in parallel, from whoever got in; the others are queued or closed.
$_->send(req_noop(opaque => 7)) for @c;
my $until = time + 3;
my $served = grep {
    my $left = $until - time;
    my $r = $_->response($left > 0.05 ? $left : 0.05);
    $r && $r->{opaque} == 7;
} @c;
diag("$served of 60 clients served while at the limit");
cmp_ok($served, '>', 0, 'clients admitted before the limit are served');

# Free descriptors: drop every client; new ones must be served.
$_->reset for @c;
ok(wait_until(sub {
    my $n = eval { $srv->connect } or return 0;
    my $r = $n->call(req_noop(opaque => 8), 2);
    $n->close;
    return $r && $r->{opaque} == 8;
}, 20), 'once descriptors are free a new client is served');
my @again = map { $srv->connect } 1 .. 8;
my $ok = grep { my $r = $_->call(req_noop(opaque => 9), 5); $r && $r->{opaque} == 9 } @again;
is($ok, 8, 'eight new clients served after the limit');
$_->close for @again;
bystander_ok($srv, 'after descriptor exhaustion');
server_clean($srv);
done_testing;
