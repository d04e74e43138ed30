#!/usr/bin/perl
# 46-service-files.t: the settings the packages install
# (contrib/systemd/counter.conf and memcached-counter.default) start a
# server, with every commented-out example enabled too, and agree with the
# unit and with each other: the unit reads the file where the package puts
# it, and the reload command talks to the port the file sets.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $top = "$FindBin::Bin/..";
my $conf_path = "$top/contrib/systemd/counter.conf";

sub slurp {
    my ($p) = @_;
    open my $fh, '<', $p or die "$p: $!";
    local $/;
    return scalar <$fh>;
}

my $conf = slurp($conf_path);
my $unit = slurp("$top/contrib/systemd/memcached-counter.service");
my $default = slurp("$top/contrib/systemd/memcached-counter.default");
my $install = slurp("$top/debian/memcached-counter.install");

# The shipped file as it is; the port after it picks a free one.
my $srv = start_host(raw_x => "$ENV{COUNTER_SO},counter.config=$conf_path;counter.port=0");
ok($srv->{counter_port}, 'the shipped counter.conf starts a counter port');
my $c = CounterTest::Conn->new($srv->{counter_port});
answer_is($c->call(req_acquire('svc', 1, 2)), resp(OP_ACQUIRE, ST_OK, u32(1)),
          'and it answers Acquire');
$c->close;
$srv->stop;

# Every commented-out setting enabled, its /etc paths moved to a scratch
# directory, its ports 0 (the counter port chosen by the kernel, the HTTP
# listener off: this checks that the keys and values parse).
my $dir = tempdir(CLEANUP => 1);
my @examples = $conf =~ /^#(counter\.\S+ = .*)$/mg;
ok(@examples >= 4, scalar(@examples) . ' commented-out settings in counter.conf');
my $all = "$conf\n" . join("\n", @examples) . "\n";
$all =~ s{/etc/memcached-counter/}{$dir/}g;
$all =~ s/^(counter\.(?:http\.)?port) = \d+$/$1 = 0/mg;
open my $out, '>', "$dir/counter.conf" or die $!;
print $out $all;
close $out;
open my $sec, '>', "$dir/admin.secret" or die $!;
print $sec "0123456789abcdef0123456789abcdef\n";
close $sec;
chmod 0600, "$dir/admin.secret";
open my $thr, '>', "$dir/throttle.conf" or die $!;
print $thr "node.capacity = 1000\n";
close $thr;
$srv = start_host(raw_x => "$ENV{COUNTER_SO},counter.config=$dir/counter.conf");
ok($srv->{counter_port}, 'with every example enabled it starts too');
$srv->stop;

# The unit and the files agree.
my ($exec) = $unit =~ /^ExecStart=(.*)$/m;
like($exec, qr{counter\.config=/etc/memcached-counter/counter\.conf\b},
     'ExecStart reads /etc/memcached-counter/counter.conf');
like($install, qr{^contrib/systemd/counter\.conf etc/memcached-counter/$}m,
     'which is where the package installs counter.conf');
like($exec, qr{^/usr/bin/mchost \$MCHOST_OPTS -X \S+$}, 'ExecStart: mchost, its options, -X');
unlike($default =~ /^MCHOST_OPTS="(.*)"$/m ? $1 : '', qr/(^|\s)-d\b/,
       'MCHOST_OPTS does not daemonize (systemd keeps it in the foreground)');
my ($conf_port) = $conf =~ /^counter\.port = (\d+)$/m;
my ($ctl_port) = $default =~ /^COUNTERCTL_OPTS=".*-p (\d+)/m;
ok(defined $conf_port && defined $ctl_port && $conf_port == $ctl_port,
   'the reload command uses the counter port of counter.conf');
my ($secret_example) = $conf =~ /^#counter\.admin_secret_file = (\S+)$/m;
like($default, qr/--secret-file \Q$secret_example\E"/,
     'and the secret file counter.conf suggests');
done_testing;
