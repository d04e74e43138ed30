#!/usr/bin/perl
# 10-config-errors.t: every kind of bad configuration makes the host exit
# non-zero with a message naming the key (or token) at fault: bad values,
# malformed tokens, unknown counter.* keys, bad groups, a bad file, a busy
# port.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $dir = tempdir(CLEANUP => 1);
open my $fh, '>', "$dir/bad.conf" or die;
print {$fh} "# a comment\ncounter.enable = true\ncounter.port = nonsense\n";
close $fh;

my $busy = IO::Socket::IP->new(Listen => 5, LocalHost => '127.0.0.1',
                               LocalPort => 0) or die "listen: $@";
my $busy_port = $busy->sockport;

# [config string, text stderr must contain, title]
my @cases = (
    ['counter.enable=maybe', 'counter.enable', 'bad boolean'],
    ['counter.enable=true;counter.port=70000', 'counter.port', 'port out of range'],
    ['counter.enable=true;counter.port=12ab', 'counter.port', 'port not a number'],
    ['counter.enable=true;counter.port=0;counter.max_connections=-1',
     'counter.max_connections', 'negative max_connections'],
    ['counter.enable=true;counter.port=0;counter.buckets=0', 'counter.buckets',
     'zero buckets'],
    ['counter.enable=true;counter.port=0;counter.stat_interval=0',
     'counter.stat_interval', 'zero stat_interval'],
    ['counter.enable=true;counter.port=0;counter.consumption_stats.interval=x',
     'counter.consumption_stats.interval', 'bad interval (spec name)'],
    ['counter.enable=true;counter.port=0;counter.threads=0', 'counter.threads',
     'zero threads'],
    ['counter.enable=true;counter.port=0;counter.memory_limit=lots',
     'counter.memory_limit', 'bad memory_limit'],
    ['counter.enable=true;counter.port=0;counter.bind=not-an-address',
     'counter.bind', 'bad bind address'],
    ['counter.enable=true;counter.port=0;counter.frobnicate=1',
     'counter.frobnicate', 'unknown counter.* key'],
    ['counter.enable=true;counter.port=0;justatoken', 'justatoken',
     'malformed token (no =)'],
    ['counter.enable=true;counter.port=0;=5', '=5', 'malformed token (no key)'],
    ['counter.enable=true;counter.port=0;counter.group.licence=max:0',
     'counter.group.licence', 'group with maximum 0'],
    ['counter.enable=true;counter.port=0;counter.group.licence=max:1,wait:5h',
     'counter.group.licence', 'group with a bad duration'],
    ['counter.enable=true;counter.port=0;counter.group.=max:1',
     'counter.group.', 'group without a name'],
    ['counter.enable=true;counter.port=0;counter.max_waits=0',
     'counter.max_waits', 'zero max_waits'],
    ["counter.config=$dir/missing.conf", 'missing.conf', 'missing config file'],
    ["counter.config=$dir/bad.conf", 'counter.port', 'bad value in a config file'],
    ["counter.enable=true;counter.port=$busy_port", "$busy_port", 'busy port'],
);
for my $case (@cases) {
    my ($cfg, $needle, $title) = @$case;
    my ($st, $err) = run_host(raw_x => "$ENV{COUNTER_SO},$cfg");
    ok(defined $st && $st != 0, "$title: host exits non-zero")
        or diag "status " . ($st // 'none (had to be killed)');
    like($err, qr/\Q$needle\E/, "$title: message names it")
        or diag "stderr: $err";
}
close $busy;
done_testing;
