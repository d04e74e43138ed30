#!/usr/bin/perl
# 30-counterctl-limits.t: counterctl's rate-limit verbs against a live
# server: `ttl insert|query|update|purge`, `window` and `gcra`, their
# `key value` output, durations in the shared grammar (fractions, m for
# minutes, a bare number in seconds; a bad one refused, naming it), and the exit codes scripts rely on: 0 allowed or ok, 75 limited,
# 1 for an error status, not found and never (saying so). Windows and
# GCRA intervals are an hour long, so no answer depends on how long a
# counterctl process takes to start.
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
my $srv = start_host(config => { threads => 1 });
if (my $why = opcodes_pending($srv, OP_TTL_INSERT, OP_TTL_QUERY,
                              OP_TTL_UPDATE, OP_TTL_PURGE, OP_WINDOW_CHECK,
                              OP_GCRA_CHECK)) {
    plan skip_all => $why;
}
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);

# Runs counterctl -p PORT args to the end: (exit code, stdout, stderr).
sub ctl { run_bounded($dir, $CTL, '-p', $port, @_) }

# counterctl has the rate-limit verbs: one it no longer knows is a
# failure, not a reason to skip the file.
{
    my ($rc, undef, $err) = ctl('ttl', 'query', 'probe');
    ok(!($rc == 2 && $err =~ /unknown command/),
       'counterctl knows its rate-limit verbs') or diag($err);
}

# The `key value` lines of an output as a hash.
sub kv { return map { /^(\S+) (.*)$/ ? ($1, $2) : () } split /\n/, $_[0] }

# Runs counterctl and checks its exit code and the listed output keys.
sub ctl_is {
    my ($args, $want_rc, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($rc, $out, $err) = ctl(@$args);
    my %got = kv($out);
    my $ok = is_deeply([$rc, { map { $_ => $got{$_} } keys %$want }],
                       [$want_rc, $want], $title);
    diag("stdout: $out\nstderr: $err") unless $ok;
    return ($rc, $out, $err);
}

my $H = 3_600_000_000_000;
my ($rc, $out, $err);

# ---- ttl ----
ctl_is([qw(ttl insert t1 5 2h)], 0, {}, 'ttl insert t1 5 2h: 0');
ctl_is([qw(ttl query t1)], 0, { quota => 5, ttl => 2, unit => 'h' },
       'ttl query: quota, ttl and unit lines');
($rc, $out, $err) = ctl(qw(ttl insert t1 9 1s));
is($rc, 1, 'ttl insert of a live record: 1');
like($err, qr/Exists/, 'and says Exists');
ctl_is([qw(ttl update t1 quota decrease 2)], 0,
       { quota => 3, ttl => 2, unit => 'h' },
       'ttl update quota decrease: prints the record after');
($rc, $out, $err) = ctl(qw(ttl update t1 quota decrease 9));
is($rc, 1, 'ttl update quota decrease below zero: 1');
like($err, qr/Below zero/i, 'and says Below zero');
ctl_is([qw(ttl update t1 quota increase 4)], 0, { quota => 7 },
       'ttl update quota increase');
ctl_is([qw(ttl update t1 quota patch 1)], 0, { quota => 1 },
       'ttl update quota patch');
ctl_is([qw(ttl update t1 ttl increase 30min)], 0,
       { ttl => 3, unit => 'h' },
       'ttl update ttl increase 30min: 2.5 h shown as 3 h');
ctl_is([qw(ttl update t1 ttl patch 90min)], 0, { ttl => 2, unit => 'h' },
       'ttl update ttl patch 90min: shown as 2 h');
ctl_is([qw(ttl update t1 ttl decrease 30min)], 0, { ttl => 1 },
       'ttl update ttl decrease 30min');
($rc, $out, $err) = ctl(qw(ttl update t1 ttl decrease 5h));
is($rc, 1, 'ttl update ttl decrease past zero: 1');
like($err, qr/Below zero/i, 'and says Below zero');
ctl_is([qw(ttl purge t1)], 0, {}, 'ttl purge: 0');
($rc, $out, $err) = ctl(qw(ttl query t1));
is($rc, 1, 'ttl query after the purge: 1');
like($err, qr/not found/i, 'and says not found');
($rc, $out, $err) = ctl(qw(ttl purge t1));
is($rc, 1, 'ttl purge of nothing: 1');
like($err, qr/not found/i, 'and says not found');
($rc, $out, $err) = ctl(qw(ttl update t1 quota patch 1));
is($rc, 1, 'ttl update of nothing: 1');

my %units = (ns => '10ns', us => '100us', ms => '250ms', s => '3s',
             min => '5min', h => '2h');
for my $u (sort keys %units) {
    ctl_is(['ttl', 'insert', "tu-$u", 1, $units{$u}], 0, {},
           "ttl insert with $units{$u}");
}
for my $u (qw(min h)) {
    (my $n = $units{$u}) =~ s/\D+$//;
    ctl_is(['ttl', 'query', "tu-$u"], 0, { ttl => $n, unit => $u },
           "ttl query of the $units{$u} record: unit $u");
}
($rc, $out, $err) = ctl(qw(ttl insert t2 1 3d));
is($rc, 2, "ttl insert with an unknown unit: refused");
like($err, qr/TTL: "3d" has an unknown unit/, 'naming the bad TTL');
# A bare number is seconds; a fraction goes in the largest unit it is
# whole in; m is minutes.
ctl_is([qw(ttl insert tb 1 90)], 0, {}, 'ttl insert with a bare 90: 0');
ctl_is([qw(ttl query tb)], 0, { ttl => 90, unit => 's' },
       'a bare number is seconds');
ctl_is([qw(ttl insert tf 1 1.5h)], 0, {}, 'ttl insert of 1.5h: 0');
ctl_is([qw(ttl query tf)], 0, { ttl => 90, unit => 'min' },
       '1.5h is kept as 90 min');
ctl_is([qw(ttl insert tm 1 2m)], 0, {}, 'ttl insert of 2m: 0');
ctl_is([qw(ttl query tm)], 0, { ttl => 2, unit => 'min' }, 'm is minutes');
ctl_is([qw(ttl update tm ttl increase 0.5h)], 0, { ttl => 32, unit => 'min' },
       'ttl increase by 0.5h adds 30 min');
($rc, $out, $err) = ctl(qw(ttl insert t2 1 3parsecs));
ok($rc == 1 || $rc == 2, "ttl insert with an unknown unit: refused ($rc)");
like($err, qr/3parsecs/, 'naming the bad TTL');
($rc, $out, $err) = ctl(qw(ttl update t2 ttl increase 3S));
is($rc, 2, 'ttl update ttl with a unit in capitals: refused');
like($err, qr/VALUE: "3S" has its unit in capitals/, 'naming it');
my $c = $srv->connect;
answer_is($c->call(req_ttl_query('t2', opaque => 1)),
          resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 1),
          'no refused insert created t2');

# ---- window ----
ctl_is([qw(window w 2 --window 1h)], 0,
       { state => 'allowed', limit => 2, remaining => 1, used => 1,
         retry_after_ns => 0 }, 'window: allowed, 0, every field');
ctl_is([qw(window w 2 --window 1h)], 0,
       { state => 'allowed', remaining => 0, used => 2 },
       'window: the 2nd of 2');
($rc, $out, $err) = ctl_is([qw(window w 2 --window 1h)], 75,
                           { state => 'limited', used => 2 },
                           'window: limited: 75');
my %f = kv($out);
ok(($f{retry_after_ns} // 0) > 0, 'window: limited with a retry hint');
ctl_is([qw(window w 3 --window 1h --peek)], 0, { state => 'allowed' },
       'window --peek with limit 3: allowed');
ctl_is([qw(window w 3 --window 1h --slots 10)], 0,
       { state => 'allowed', used => 3 },
       'window with limit 3: the peek took nothing');
ctl_is([qw(window w 5 --window 1h --cost 2)], 0,
       { state => 'allowed', used => 5 }, 'window --cost 2');
($rc, $out, $err) = ctl(qw(window w 1 --window 1h --cost 2));
is($rc, 1, 'window with a cost above the limit: 1');
like($out . $err, qr/never/, 'and says never');
my $a = parse_check_answer($c->call(req_window_check(
    'w', 5, window_ns => $H, slots => 10, peek => 1)));
ok($a && $a->{state} == CHECK_LIMITED && $a->{used} == 5,
   'window: the server holds the 5 counterctl charged');
($rc) = ctl(qw(window w 1 --window 1h --slots 65));
ok($rc == 1 || $rc == 2, "window --slots 65: refused ($rc)");
($rc, $out, $err) = ctl(qw(window w 1 --window 1M));
is($rc, 2, "window --window in capitals: refused");
like($err, qr/--window: "1M" has its unit in capitals/, 'naming it');
ctl_is([qw(window wm 1 --window 60m)], 0, { state => 'allowed' },
       'window --window 60m: allowed');
ctl_is([qw(window wm 1 --window 1h)], 75, { state => 'limited' },
       'the same window as 1h: limited, so 60m was an hour');
ctl_is([qw(window wm 1 --window 3600)], 75, { state => 'limited' },
       'and as a bare 3600: limited, so it is seconds');

# ---- gcra ----
ctl_is([qw(gcra g 0 1 1h)], 0,
       { state => 'allowed', limit => 1, remaining => 0, used => 1,
         retry_after_ns => 0, reset_after_ns => $H },
       'gcra: allowed, 0, every field');
ctl_is([qw(gcra g 0 1 1h)], 75, { state => 'limited', limit => 1 },
       'gcra: limited: 75');
ctl_is([qw(gcra g 1 1 1h --peek)], 0, { state => 'allowed', limit => 2 },
       'gcra --peek with burst 1: allowed');
ctl_is([qw(gcra g 1 1 1h)], 0, { state => 'allowed', remaining => 0 },
       'gcra with burst 1: the peek left room for it');
($rc, $out, $err) = ctl(qw(gcra g2 0 1 1h --cost 2));
is($rc, 1, 'gcra with a cost above burst + 1: 1');
like($out . $err, qr/never/, 'and says never');
($rc, $out, $err) = ctl('gcra', 'g2', 0, 1, '5 minutes');
is($rc, 2, 'gcra with a period in words: refused');
like($err, qr/PERIOD: "5 minutes" is not a duration \(write a number and a unit: 250ms, 3s, 5min, 2h\)/,
     'naming it and showing the right form');
ctl_is([qw(gcra g3 0 1 3600)], 0, { state => 'allowed', reset_after_ns => $H },
       'gcra with a bare 3600: a period of an hour');
ctl_is([qw(gcra g4 0 1 0.5h)], 0,
       { state => 'allowed', reset_after_ns => $H / 2 },
       'gcra with a period of 0.5h: half an hour');

$c->close;
$srv->stop;
done_testing;
