#!/usr/bin/perl
# 13-disabled.t: counter.enable=false (also the default): the extension
# loads and says it is disabled, opens no port, and the host runs normally.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
plan skip_all => 'needs /proc to list listening sockets' unless -r '/proc/net/tcp';

# The TCP ports a process listens on (from its fds and /proc/net/tcp*).
sub listening_ports {
    my ($pid) = @_;
    my %inode;
    opendir my $dh, "/proc/$pid/fd" or return;
    for my $fd (readdir $dh) {
        my $l = readlink "/proc/$pid/fd/$fd" // next;
        $inode{$1} = 1 if $l =~ /^socket:\[(\d+)\]$/;
    }
    my @ports;
    for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
        open my $fh, '<', $f or next;
        while (<$fh>) {
            my @c = split;
            next unless @c > 9 && $c[3] eq '0A' && $inode{$c[9]};
            push @ports, hex((split /:/, $c[1])[1]);
        }
    }
    return sort { $a <=> $b } @ports;
}

my $on = start_host(config => {});
my @on_ports = listening_ports($on->{pid});
ok((grep { $_ == $on->{counter_port} } @on_ports),
   'control: an enabled extension listens on its counter port');
$on->stop;

for my $cfg ('counter.enable=false;counter.port=0', '') {
    my $srv = start_host(args => ['-v'],
                         raw_x => $cfg eq '' ? $ENV{COUNTER_SO}
                                             : "$ENV{COUNTER_SO},$cfg");
    my $label = $cfg eq '' ? 'no config (default)' : 'enable=false';
    ok($srv->{mc_port}, "$label: host runs (memcache port $srv->{mc_port})");
    ok(!$srv->{counter_port}, "$label: no counter_port in stats");
    is_deeply([listening_ports($srv->{pid})], [$srv->{mc_port}],
              "$label: the only listening port is the memcache one");
    my @v = mc_command($srv->{mc_port}, 'version');
    like($v[0], qr/^VERSION /, "$label: host answers version");
    like($srv->stderr, qr/disabled/, "$label: the extension logs that it is disabled");
    $srv->stop;
}
done_testing;
