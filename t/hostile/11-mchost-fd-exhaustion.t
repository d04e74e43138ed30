# 11-mchost-fd-exhaustion.t: like 08-fd-exhaustion.t, for mchost's own
# memcache port. Out of descriptors, mchost must pause accepting (not
# spin), say so in a bounded number of log lines rather than one per retry,
# and serve again once descriptors are free.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use IO::Socket::IP;
use Test::More;
use Time::HiRes qw(sleep time);

plan skip_all => 'mchost or counter.so not built' unless have_host();
plan skip_all => 'prlimit (util-linux) not installed'
    unless system('prlimit --version >/dev/null 2>&1') == 0;

my $srv = start_host(config => {});
my ($pid, $port) = @$srv{qw(pid mc_port)};
opendir my $d, "/proc/$pid/fd" or die "proc: $!";
my $base = grep { /^\d+$/ } readdir $d;
closedir $d;
my $limit = $base + 12;
is(system('prlimit', "--pid=$pid", "--nofile=$limit:$limit"), 0,
   "server limited to $limit descriptors ($base in use)");

# Counts mchost's accept-failure lines in the server's stderr.
sub accept_lines {
    return scalar grep { /^$LOG_TS mchost: accept on port $port/ } split /\n/, $srv->stderr;
}

# Far more memcache clients than descriptors; the kernel queues the rest.
my @c = grep { defined } map {
    IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                        Timeout => 5)
} 1 .. 40;
is(scalar @c, 40, 'forty memcache clients connected (the backlog holds them)');
ok(wait_until(sub { accept_lines() >= 1 }),
   'running out of descriptors is logged') or diag($srv->stderr);

# mchost retries accepting ten times a second; whatever the time it takes,
# three seconds of retries must not become one line per retry.
my $cpu0 = cpu_seconds($pid);
my $t0 = time;
sleep 3;
my $cpu = cpu_seconds($pid) - $cpu0;
my $wall = time - $t0;
my $lines = accept_lines();
diag(sprintf '%d accept warning line(s); CPU %.2f s in %.1f s', $lines, $cpu,
     $wall);
cmp_ok($lines, '<=', 2, 'the warning is rate-limited, not one per retry')
    or diag($srv->stderr);
like($srv->stderr, qr/^$LOG_TS mchost: accept on port $port: Too many open files; pausing accepts/m,
     'the warning says what happens');
cmp_ok($cpu, '<', $wall / 2, 'the server does not spin at the limit');

# Free descriptors: drop every client; a new one must be served.
close $_ for @c;
ok(wait_until(sub {
    my @v = eval { mc_command($port, 'version') };
    return @v && $v[0] =~ /^VERSION /;
}, 20), 'once descriptors are free a new memcache client is served');
bystander_ok($srv, 'after memcache descriptor exhaustion');
server_clean($srv);
done_testing;
