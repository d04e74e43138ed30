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
use Test::More;

my $tool = $ENV{MEMCACHED_TOOL} // '/usr/share/memcached/scripts/memcached-tool';
plan skip_all => "$tool not installed (Debian package memcached)" unless -r $tool;
plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => {});
my $dir = tempdir(CLEANUP => 1);

# Runs memcached-tool with args (bounded); returns (exit code, stdout).
sub tool { run_bounded($dir, $^X, $tool, @_) }

my ($rc, $out) = tool("127.0.0.1:$srv->{mc_port}", 'stats');
is($rc, 0, 'memcached-tool stats exits 0');
like($out, qr/^\s*pid\s+\d+/m, 'it shows the host pid');
like($out, qr/^\s*counter_port\s+$srv->{counter_port}\b/m,
     'it shows counter_port');
like($out, qr/^\s*counter_objects\s+\d+/m, 'it shows counter items');
$srv->stop;
done_testing;
