#!/usr/bin/perl
# 35-servers.t: counterctl --servers over three hosts on loopback: every
# name goes to the server ketama places it on (as tests/ketama_map, and
# so libmemcached, places it), each name's state lives on that server
# only, the commands without a name run on every server, and a name whose
# server is down fails with 69 instead of moving to another server (two
# servers could then each grant the maximum).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
my $MAP = $ENV{KETAMA_MAP};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'tests/ketama_map not built' unless $MAP && -x $MAP;
plan skip_all => 'mchost or counter.so not built' unless have_host;

my @srv = map { start_host(config => { threads => 1 }) } 1 .. 3;
my @port = map { $_->{counter_port} } @srv;
my @addr = map { "127.0.0.1:$_" } @port;
# Distinct weights, so that the shares differ as a deployment's may.
my $list = join ',', map { "$addr[$_]:" . ($_ + 1) } 0 .. 2;
my $dir = tempdir(CLEANUP => 1);

# Runs counterctl with args to the end: (exit code, stdout, stderr).
sub ctl { run_bounded($dir, $CTL, @_) }

# Runs counterctl --servers LIST with args.
sub sctl { ctl('--servers', $list, @_) }

# Index of a "127.0.0.1:PORT" among the three.
sub index_of {
    my ($a) = @_;
    my ($i) = grep { $addr[$_] eq $a } 0 .. 2;
    return $i;
}

# ---- placement ----
my @names = map { "srv-name-$_" } 1 .. 150;
push @names, 'a', 'Z' x 200, "tab\there", 'ü-utf8';
my $names_file = "$dir/names";
{
    open my $fh, '>', $names_file or die "$names_file: $!";
    print {$fh} "$_\n" for @names;
    close $fh or die "$names_file: $!";
}
my @mapped;
{
    open my $fh, '-|', 'sh', '-c', 'exec "$0" "$1" < "$2"', $MAP, $list,
        $names_file or die "ketama_map: $!";
    chomp(@mapped = <$fh>);
    close $fh;
    is($?, 0, 'ketama_map exits 0');
}
is(scalar @mapped, scalar @names, 'ketama_map answers each name');

my (%where, %per, $agree);
$agree = 0;
for my $i (0 .. $#names) {
    my ($rc, $out) = sctl('where', $names[$i]);
    chomp $out;
    $where{$names[$i]} = $out;
    $agree++ if $rc == 0 && defined $mapped[$i] && $out eq $mapped[$i];
    $per{$out}++;
}
is($agree, scalar @names, 'where NAME equals ketama_map for every name');
ok(($per{$addr[$_]} // 0) > 0, "server $_ gets some names ("
   . ($per{$addr[$_]} // 0) . ')') for 0 .. 2;
is(scalar keys %per, 3, 'no name goes anywhere else');

my ($rc, $out, $err) = ctl('-s', '127.0.0.1', '-p', 1234, 'where', 'x');
is_deeply([$rc, $out], [0, "127.0.0.1:1234\n"],
          'where without --servers: the -s/-p server');
($rc, $out) = ctl('where', 'x');
is_deeply([$rc, $out], [0, "127.0.0.1:11215\n"],
          'where without options: the default server');
($rc, $out) = ctl('--servers', '[::1]:7', 'where', 'x');
is_deeply([$rc, $out], [0, "[::1]:7\n"], 'where: IPv6 in brackets');
($rc, $out, $err) = sctl('where');
is($rc, 2, 'where without NAME: usage error');

# ---- usage ----
($rc, $out, $err) = ctl('--servers', $list, '-p', $port[0], 'noop');
is($rc, 2, '--servers with -p: usage error');
like($err, qr/--servers and -s\/-p exclude each other/, '... saying why');
($rc, $out, $err) = ctl('-s', '127.0.0.1', '--servers', $list, 'noop');
is($rc, 2, '-s with --servers: usage error');
($rc, $out, $err) = ctl('--servers', "$addr[0],127.0.0.1:0", 'noop');
is($rc, 2, 'a bad item in --servers: usage error');
like($err, qr/"127\.0\.0\.1:0": port must be 1 to 65535/,
     '... naming the item');
($rc, $out, $err) = ctl('--servers', "$addr[0],$addr[0]", 'noop');
is($rc, 2, 'a server listed twice: usage error');

# ---- state lives on the name's server only ----
my @ttl_names = @names[0 .. 29];
my $created = 0;
for my $n (@ttl_names) {
    ($rc) = sctl('ttl', 'insert', $n, 5, '1h');
    $created++ if $rc == 0;
}
is($created, scalar @ttl_names, 'ttl insert through --servers');
my ($only_home, $queried) = (0, 0);
for my $n (@ttl_names) {
    my $home = index_of($where{$n});
    for my $i (0 .. 2) {
        ($rc) = ctl('-p', $port[$i], 'ttl', 'query', $n);
        $queried++;
        $only_home++ if ($i == $home) == ($rc == 0);
    }
}
is($only_home, $queried,
   'each TTL counter exists on its server and on no other');
($rc, $out) = sctl('ttl', 'query', $ttl_names[0]);
like($out, qr/^quota 5$/m, 'ttl query through --servers finds it');

# run: while it holds, Get on each server directly: only the home server
# knows the counter and shows it held.
my $held = $names[40];
my $home = index_of($where{$held});
my $script = join '; ', map {
    "\"$CTL\" -p $port[$_] get '$held' > '$dir/get$_' 2>&1; echo \$? >> '$dir/get$_'"
} 0 .. 2;
($rc, $out, $err) = sctl('run', $held, 2, 5, '--', 'sh', '-c', $script);
is($rc, 0, 'run through --servers');
for my $i (0 .. 2) {
    open my $fh, '<', "$dir/get$i" or die "get$i: $!";
    local $/;
    my $got = <$fh>;
    if ($i == $home) {
        is($got, "2\n0\n", "run: the home server $i holds 2");
    } else {
        like($got, qr/Not found.*\n1\n\z/s, "run: server $i has no such counter");
    }
}

# ---- commands without a name: every server, in list order ----
($rc, $out, $err) = sctl('noop');
is($rc, 0, 'noop on every server: 0');
is($out, join('', map { "# server $_\n" } @addr),
   'noop: a header per server, in list order');
($rc, $out) = sctl('dump');
is($rc, 0, 'dump on every server: 0');
my @headers = $out =~ /^# server (\S+)$/mg;
is_deeply(\@headers, \@addr, 'dump: a section per server, in list order');
($rc, $out) = ctl('--servers', $addr[0], 'noop');
is_deeply([$rc, $out], [0, ''], 'a single server: no header');

# ---- failure policy: one host stopped ----
my $down = index_of($where{$names[0]});
my $down_pid = $srv[$down]{pid};
kill_pid($down_pid);
my @down_names = grep { $where{$_} eq $addr[$down] } @names[50 .. $#names];
my @live_names = grep { $where{$_} ne $addr[$down] } @names[50 .. $#names];
ok(@down_names > 0 && @live_names > 0, 'names on both sides of the stop');
my ($failed69, $named, $not_moved) = (0, 0, 0);
for my $n (@down_names[0 .. ($#down_names < 9 ? $#down_names : 9)]) {
    ($rc, $out, $err) = sctl('ttl', 'insert', $n, 5, '1h');
    $failed69++ if $rc == 69;
    $named++ if index($err, "cannot connect to 127.0.0.1 port $port[$down]") >= 0
        && index($err, "maps to $addr[$down]") >= 0;
    my $elsewhere = 0;
    for my $i (grep { $_ != $down } 0 .. 2) {
        my ($qrc) = ctl('-p', $port[$i], 'ttl', 'query', $n);
        $elsewhere++ if $qrc == 0;
    }
    $not_moved++ unless $elsewhere;
}
my $tried = @down_names < 10 ? @down_names : 10;
is($failed69, $tried, 'a name on the stopped server: exit 69');
is($named, $tried, '... naming the server it maps to');
is($not_moved, $tried, '... and not created on another server');
($rc, $out, $err) = sctl('acquire', $down_names[0], 1, 5);
is($rc, 69, 'acquire of a name on the stopped server: 69');
my $ok = 0;
for my $n (@live_names[0 .. ($#live_names < 9 ? $#live_names : 9)]) {
    ($rc) = sctl('ttl', 'insert', $n, 5, '1h');
    $ok++ if $rc == 0;
}
is($ok, @live_names < 10 ? scalar @live_names : 10,
   'names on the live servers still work');
($rc, $out, $err) = sctl('noop');
is($rc, 69, 'noop on every server with one down: 69, the worst');
is($out, join('', map { "# server $_\n" } @addr),
   '... still a header for each server');
like($err, qr/cannot connect to 127\.0\.0\.1 port $port[$down]/,
     '... naming the stopped one');

done_testing();
