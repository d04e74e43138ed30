#!/usr/bin/perl
# 34-counterctl-throttle.t: counterctl's throttling verbs against a live
# server: `throttle TENANT UNITS [--unthrottled]`, `tenant show [TENANT]`,
# `node show`, and with the global --secret-file PATH `tenant set`,
# `tenant remove`, `node set --capacity N` and `node reload`; their
# `key value` output and the exit codes scripts rely on: 0 allowed or ok,
# 75 throttled, 1 for an error status (saying which) or a secret file
# that will not do (naming it, never its content). Every charge whose
# outcome is asserted gives the same answer in any second (the first
# charge of a tenant in a test, or one above its hard limit), so no
# answer depends on how long a counterctl process takes to start.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'mchost or counter.so not built' unless have_host;
# The probe runs on a host without the new configuration keys, which a
# host that does not know the opcodes does not know either.
my $probe = start_throttle_host();
if (my $why = opcodes_pending($probe, @THROTTLE_OPCODES)) {
    plan skip_all => $why;
}
$probe->stop;
my $SECRET = 'counterctl secret, test 34';
my $srv = start_throttle_host(secret => $SECRET,
                              throttle => "node.capacity = 1000\n"
                                          . "tenant.filed = reserved:10\n");
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);
my $secret_file = "$dir/secret";
write_file($secret_file, "$SECRET\n");
my $wrong_file = "$dir/wrong";
write_file($wrong_file, "not the secret\n");

# Runs counterctl -p PORT args to the end: (exit code, stdout, stderr).
sub ctl { run_bounded($dir, $CTL, '-p', $port, @_) }

# The same with --secret-file (a global option, before the verb).
sub sctl { ctl('--secret-file', $secret_file, @_) }

# counterctl has the throttling verbs: one it no longer knows is a
# failure, not a reason to skip the file.
{
    my ($rc, undef, $err) = ctl('node', 'show');
    ok(!($rc == 2 && $err =~ /unknown command/),
       'counterctl knows its throttling verbs') or diag($err);
}

# The `key value` lines of an output as a hash.
sub kv { return map { /^(\S+) (.*)$/ ? ($1, $2) : () } split /\n/, $_[0] }

# Checks an exit code and the listed output keys of counterctl args.
sub ctl_is {
    my ($args, $want_rc, $want, $title, %o) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($rc, $out, $err) = $o{secret} ? sctl(@$args) : ctl(@$args);
    my %got = kv($out);
    my $ok = is_deeply([$rc, { map { $_ => $got{$_} } keys %$want }],
                       [$want_rc, $want], $title);
    diag("stdout: $out\nstderr: $err") unless $ok;
    return ($rc, $out, $err);
}

# A hard limit as counterctl may print it: the number, or unlimited for
# 0xFFFFFFFF.
sub hard_ok {
    my ($got, $want) = @_;
    return 0 unless defined $got;
    return $want == UNLIMITED ? $got =~ /^(unlimited|4294967295)$/
                              : $got eq $want;
}

my $c = $srv->connect;
my ($rc, $out, $err);

# ---- node show, tenant show ----
ctl_is([qw(node show)], 0,
       { capacity => 1000, pool => 990, reserved_sum => 10, tenants => 1 },
       'node show: the node view as key value lines');
($rc, $out, $err) = ctl(qw(tenant show filed));
my %f = kv($out);
is($rc, 0, 'tenant show filed: 0');
ok(($f{reserved} // '') eq '10' && hard_ok($f{hard_limit}, UNLIMITED) &&
   ($f{used} // '') eq '0' && ($f{throttled} // '') eq '0' &&
   ($f{units} // '') eq '0',
   'tenant show filed: reserved, hard_limit, used, throttled, units')
    or diag("stdout: $out\nstderr: $err");
is($f{configured}, 'yes', 'tenant show filed: configured yes');
is(join(',', map { /^(\S+) / ? $1 : $_ } split /\n/, $out),
   'reserved,hard_limit,used,configured,throttled,units',
   'tenant show: exactly its six keys, in order');
ctl_is([qw(tenant show never-seen)], 0,
       { reserved => 0, hard_limit => 'unlimited', used => 0,
         configured => 'no', throttled => 0, units => 0 },
       'tenant show of a tenant never seen: the defaults, configured no');
($rc, $out, $err) = ctl(qw(node show));
is(join(',', map { /^(\S+) \d+$/ ? $1 : $_ } split /\n/, $out),
   'capacity,used,pool,pool_used,reserved_sum,tenants,throttled',
   'node show: exactly its seven keys with numbers, in order');

# ---- privileged verbs need --secret-file ----
($rc, $out, $err) = ctl(qw(tenant set t1 --reserved 3 --hard-limit 5));
isnt($rc, 0, "tenant set without --secret-file: refused ($rc)");
($rc, $out, $err) = ctl('--secret-file', $wrong_file,
                        qw(tenant set t1 --reserved 3 --hard-limit 5));
is($rc, 1, 'tenant set with a wrong secret: 1');
like($err, qr/Auth failed/, 'and says Auth failed');
my $v = parse_tenant_view($c->call(req_tenant_show('t1')));
ok($v && $v->{flags} == 0, 'neither refused tenant set configured t1');
unlike($out . $err, qr/\Q$SECRET\E|not the secret/,
       'counterctl prints no secret');

# A --secret-file that will not do: 1 before connecting, naming the path.
($rc, $out, $err) = ctl('--secret-file', "$dir/missing",
                        qw(tenant remove t1));
is($rc, 1, 'a missing --secret-file: 1');
like($err, qr/\Q$dir\E\/missing/, 'and the message names the path');
write_file("$dir/empty", "\n");
($rc, $out, $err) = ctl('--secret-file', "$dir/empty", qw(node reload));
is($rc, 1, 'an empty --secret-file: 1');
like($err, qr/is empty/, 'and says it is empty');
write_file("$dir/long", ('kQ' x 2049) . "\n");
($rc, $out, $err) = ctl('--secret-file', "$dir/long", qw(node reload));
is($rc, 1, 'a --secret-file above 4096 bytes: 1');
unlike($err, qr/kQkQ/, 'and the message does not show it');
# The server's own trimming: one "\r\n" goes.
write_file("$dir/crlf", "$SECRET\r\n");
ctl_is(['--secret-file', "$dir/crlf", qw(node set --capacity 1000)], 0,
       {}, 'a secret file ending in CRLF authenticates');

ctl_is([qw(tenant set t1 --reserved 3 --hard-limit 5)], 0, {},
       'tenant set t1 --reserved 3 --hard-limit 5: 0', secret => 1);
$v = parse_tenant_view($c->call(req_tenant_show('t1')));
ok($v && $v->{reserved} == 3 && $v->{hard_limit} == 5 &&
   $v->{flags} == TENANT_CONFIGURED, 'the server holds t1 (3, 5)');
ctl_is([qw(tenant set t1 --hard-limit 6)], 0, {},
       'tenant set t1 --hard-limit 6: 0', secret => 1);
ctl_is([qw(tenant show t1)], 0, { reserved => 3, hard_limit => 6 },
       'tenant show t1: the reserve kept, hard limit 6');
ctl_is([qw(tenant set t2 --hard-limit unlimited)], 0, {},
       'tenant set --hard-limit unlimited: 0', secret => 1);
$v = parse_tenant_view($c->call(req_tenant_show('t2')));
ok($v && $v->{hard_limit} == UNLIMITED && $v->{flags} == TENANT_CONFIGURED,
   'the server holds t2 unlimited, configured');
($rc, $out, $err) = sctl(qw(tenant set t1 --reserved 7 --hard-limit 6));
is($rc, 1, 'tenant set with a reserve above the hard limit: 1');
like($err, qr/Invalid/, 'and says Invalid arguments');
($rc, $out, $err) = sctl(qw(tenant set t3 --reserved 2000));
is($rc, 1, 'tenant set with a reserve above the capacity: 1');
like($err, qr/Over capacity/, 'and says Over capacity');

# ---- node set ----
($rc, $out, $err) = sctl(qw(node set --capacity 5));
is($rc, 1, 'node set --capacity below the reserves: 1');
like($err, qr/Over capacity/, 'and says Over capacity');
ctl_is([qw(node set --capacity 2000)], 0, {}, 'node set --capacity 2000: 0',
       secret => 1);
ctl_is([qw(node show)], 0, { capacity => 2000, reserved_sum => 13,
                             tenants => 3 },
       'node show: the new capacity');

# ---- throttle ----
# c1 is configured first: the GC sweep (every second) frees an unconfigured
# record once its second is over, and the count below reads it later.
ctl_is([qw(tenant set c1 --hard-limit 100)], 0, {},
       'tenant set c1 --hard-limit 100: 0', secret => 1);
ctl_is([qw(throttle c1 5)], 0,
       { state => 'allowed', reason => 'none', used => 5,
         retry_after_ns => 0 },
       'throttle c1 5: allowed, 0, every field');
($rc, $out, $err) = ctl_is([qw(throttle t1 7)], 75,
                           { state => 'throttled', reason => 'hard_limit' },
                           'throttle t1 7 above its hard limit 6: 75');
%f = kv($out);
ok(($f{retry_after_ns} // 0) > 0 && $f{retry_after_ns} <= 1_000_000_000,
   'throttled: retry_after_ns in (0, 1e9]');
ok(exists $f{used} && exists $f{remaining}, 'throttled: used, remaining');
($rc, $out, $err) = ctl(qw(throttle t1 7 --unthrottled));
isnt($rc, 0, "throttle --unthrottled without --secret-file: refused ($rc)");
ctl_is([qw(throttle t1 7 --unthrottled)], 0,
       { state => 'allowed', reason => 'none' },
       'throttle --unthrottled with --secret-file: allowed past the limit',
       secret => 1);
($rc, $out, $err) = ctl(qw(throttle c1 0));
ok($rc == 1 || $rc == 2, "throttle of 0 units: refused ($rc)");
$v = parse_tenant_view($c->call(req_tenant_show('c1')));
ok($v && $v->{units} >= 5 && $v->{throttled} == 0,
   'the server counted c1\'s charge, nothing for the refused one');

# ---- tenant show (the list) ----
($rc, $out, $err) = ctl(qw(tenant show));
is($rc, 0, 'tenant show without a tenant: 0');
my @blocks = split /\n\s*\n/, $out;
my %seen;
for my $b (@blocks) {
    my @l = split /\n/, $b;
    next unless @l;
    my %k = kv($b);
    $seen{$1} = \%k if $l[0] =~ /^tenant (.*)$/;
}
is(scalar(keys %seen), scalar(@blocks),
   'the list: every block starts with `tenant NAME`');
ok($seen{filed} && $seen{t1} && $seen{t2},
   'the list: the configured tenants are there')
    or diag("stdout: $out");
is($seen{t1} ? $seen{t1}{reserved} : undef, 3, 'the list: t1\'s reserve');

# ---- tenant remove, node reload ----
ctl_is([qw(tenant remove t2)], 0, {}, 'tenant remove t2: 0', secret => 1);
($rc, $out, $err) = sctl(qw(tenant remove t2));
is($rc, 1, 'tenant remove t2 again: 1');
like($err, qr/Not found/, 'and says Not found');
write_file($srv->{throttle_file}, "node.capacity = 3000\n"
                                  . "tenant.filed = reserved:20\n");
ctl_is([qw(node reload)], 0, {}, 'node reload: 0', secret => 1);
ctl_is([qw(node show)], 0, { capacity => 3000, reserved_sum => 23 },
       'node show after the reload: the file\'s capacity and reserve');
write_file($srv->{throttle_file}, "node.capacity = many\n");
($rc, $out, $err) = sctl(qw(node reload));
is($rc, 1, 'node reload of a broken file: 1');
like($err, qr/Invalid/, 'and says Invalid arguments');
($rc, $out, $err) = ctl(qw(node reload));
isnt($rc, 0, "node reload without --secret-file: refused ($rc)");

my $plain = start_throttle_host(secret => $SECRET);
($rc, $out, $err) = run_bounded($dir, $CTL, '-p', $plain->{counter_port},
                                '--secret-file', $secret_file,
                                qw(node reload));
is($rc, 1, 'node reload on a server without a settings file: 1');
like($err, qr/Not found/, 'and says Not found');
$plain->stop;

$c->close;
$srv->stop;
done_testing;
