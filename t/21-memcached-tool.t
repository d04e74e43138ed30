#!/usr/bin/perl
# 21-memcached-tool.t: smoke test: memcached's own memcached-tool (from the
# Debian package memcached, when installed) reads mchost's stats, including
# the counter_* lines. Skipped when the script is not there.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);
use Test::More;

my $tool = $ENV{MEMCACHED_TOOL} // '/usr/share/memcached/scripts/memcached-tool';
plan skip_all => "$tool not installed (Debian package memcached)" unless -r $tool;
plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => {});
my $dir = tempdir(CLEANUP => 1);

# Runs memcached-tool with args (bounded); returns (exit code, stdout).
sub tool {
    my (@args) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/out";
        open STDERR, '>', "$dir/err";
        exec $^X, $tool, @args or POSIX::_exit(127);
    }
    track_pid($pid);
    my $st;
    wait_until(sub { waitpid($pid, WNOHANG) == $pid and $st = $?, 1 }, 20);
    kill_pid($pid) unless defined $st;
    open my $fh, '<', "$dir/out" or return ($st, '');
    local $/;
    return (defined $st ? $st >> 8 : -1, <$fh> // '');
}

my ($rc, $out) = tool("127.0.0.1:$srv->{mc_port}", 'stats');
is($rc, 0, 'memcached-tool stats exits 0');
like($out, qr/^\s*pid\s+\d+/m, 'it shows the host pid');
like($out, qr/^\s*counter_port\s+$srv->{counter_port}\b/m,
     'it shows counter_port');
like($out, qr/^\s*counter_objects\s+\d+/m, 'it shows counter items');
$srv->stop;
done_testing;
