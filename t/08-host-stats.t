#!/usr/bin/perl
# 08-host-stats.t: the host's memcache port shows the extension: `stats`
# carries counter_port and counter_<item> lines, `stats counter` lists the
# items unprefixed, `stats settings` names the daemon extension.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $srv = start_host(config => {});
my $port = $srv->{mc_port};

my @lines = mc_command($port, 'stats');
is($lines[-1], 'END', 'stats ends with END');
ok(!(grep { !/^(STAT \S+ \S.*|END)$/ } @lines), 'every line is STAT name value');
my %st = mc_stats($port);
like($st{counter_port}, qr/^[1-9][0-9]*$/, "counter_port is a port ($st{counter_port})");
ok(defined $st{pid} && defined $st{version}, "the host's own items are there");

my $c = $srv->connect;
is($c->call(req_acquire('hs', 2, 5))->{status}, ST_OK, 'acquire over the counter port');
$c->call(req_get('hs')) for 1 .. 3;
%st = mc_stats($port);
is($st{counter_objects}, 1, 'counter_objects 1');
is($st{counter_curr_connections}, 1, 'counter_curr_connections 1');
cmp_ok($st{counter_command_acquire} // $st{'counter_command:acquire'}, '==', 1,
       'counter acquire count');
cmp_ok($st{counter_command_get} // $st{'counter_command:get'}, '==', 3,
       'counter get count');

my %sub = mc_stats($port, 'counter');
my @ref = qw(objects total_objects used_memory conflicts gc_count
             last_gc_elapsed total_gc_elapsed curr_connections total_connections);
is_deeply([grep { !defined $sub{$_} } @ref], [], '`stats counter`: every item, unprefixed');
ok(!(grep { /^counter_/ } keys %sub), '`stats counter`: no prefix');
is($sub{objects}, 1, '`stats counter`: objects 1');
my @cl = mc_command($port, 'stats counter');
is($cl[-1], 'END', '`stats counter` ends with END');

my @set = mc_command($port, 'stats settings');
ok((grep { $_ eq 'STAT extension counter' } @set), '`stats settings`: STAT extension counter');

# Counter-port Stats keeps the reference names.
my %cs = map { @$_ } $c->stats_pairs;
ok(exists $cs{'command:acquire'}, 'counter-port Stats keeps command:acquire');

# doc/operations.md names every item the counter port's Stats returns.
SKIP: {
    my $doc = "$FindBin::Bin/../doc/operations.md";
    skip 'doc/operations.md not found', 1 unless -r $doc;
    open my $fh, '<', $doc or die "$doc: $!";
    my $text = do { local $/; <$fh> };
    my ($table) = $text =~ /^## Statistics\n(.*?)^## /ms;
    my @missing = grep { ($table // '') !~ /`\Q$_\E`/ } sort keys %cs;
    is_deeply(\@missing, [], 'doc/operations.md names every Stats item');
}

# `stats reset` resets the host's totals, never the counter figures.
mc_command($port, 'stats reset');
my %after = mc_stats($port);
cmp_ok($after{counter_command_acquire}, '==', 1,
       '`stats reset` leaves counter_command_acquire');
cmp_ok($after{counter_total_connections}, '>=', 1,
       '`stats reset` leaves counter_total_connections');
cmp_ok($after{total_connections}, '<=', 1,
       "`stats reset` zeroes the host's total_connections (this one at most)");

$srv->stop;
done_testing;
