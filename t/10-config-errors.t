#!/usr/bin/perl
# 10-config-errors.t: every kind of bad configuration makes the host exit
# non-zero with a message naming the key (or token) at fault: bad values,
# malformed tokens, unknown counter.* keys, bad groups, a bad file, a busy
# port, admin secret files that cannot serve (whose content no message
# shows) and throttle settings files with errors (named with their line).
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
    ['counter.enable=true;counter.port=0;counter.group.licence=max:1,wait:5d',
     'counter.group.licence: wait "5d" has an unknown unit',
     'group with a bad duration'],
    ['counter.enable=true;counter.port=0;counter.group.licence=max:1,wait:3M',
     'wait "3M" has its unit in capitals (units are lower case',
     'group with a duration in capitals'],
    ['counter.enable=true;counter.port=0;counter.group.licence=max:1,lease:1.5ms',
     'lease "1.5ms" is not a whole number of milliseconds',
     'group with a lease finer than its milliseconds'],
    ['counter.enable=true;counter.port=0;counter.keepalive_idle=30 sec',
     'counter.keepalive_idle: "30 sec" is not a duration (write a number '
     . 'and a unit: 250ms, 3s, 5min, 2h)', 'keepalive_idle not a duration'],
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

# Files for the admin secret and throttle settings keys, in $dir.
sub test_file {
    my ($name, $text) = @_;
    write_file("$dir/$name", $text);
    return "$dir/$name";
}
my $long = test_file('long.secret', 'Q7' x 2048 . "Q\n");   # 4097 bytes
my $empty = test_file('empty.secret', "\n");
my $locked = test_file('locked.secret', "Q7Q7Q7Q7Q7Q7Q7Q7\n");
chmod 0000, $locked or die "chmod: $!";
my $good = test_file('good.secret', "Q7Q7Q7Q7Q7Q7Q7Q7\n");
my $short = test_file('short.secret', "Q7Q7Q7Q7Q7Q7Q7Q\n");  # 15 bytes
my $dup = test_file('dup.throttle',
                     "# node\nnode.capacity = 10\nnode.capacity = 20\n");
my $over = test_file('over.throttle', "node.capacity = 10\n"
                      . "tenant.a = reserved:6\ntenant.b = reserved:5\n");
my $badval = test_file('badval.throttle',
                        "\ntenant.a = reserved:5,hard_limit:lots\n");
my $throttle = test_file('good.throttle', "node.capacity = 100\n"
                          . "tenant.a = reserved:10,hard_limit:50\n");
my $base = 'counter.enable=true;counter.port=0';

# [config string, texts stderr must contain, title, skip reason]
my @file_cases = (
    ["$base;counter.admin_secret_file=$dir/none.secret",
     ['counter.admin_secret_file', "$dir/none.secret",
      'No such file or directory'], 'missing secret file'],
    ["$base;counter.admin_secret_file=$empty",
     ['counter.admin_secret_file', $empty, 'is empty'], 'empty secret file'],
    ["$base;counter.admin_secret_file=$long",
     ['counter.admin_secret_file', $long, 'more than 4096 bytes'],
     'secret file too long'],
    ["$base;counter.admin_secret_file=$short",
     ['counter.admin_secret_file', $short,
      'holds a secret of 15 bytes, shorter than the 16 required'],
     'secret shorter than 16 bytes'],
    # Root reads a mode-000 file anyway, so only a user sees this error.
    ["$base;counter.admin_secret_file=$locked",
     ['counter.admin_secret_file', $locked, 'Permission denied'],
     'unreadable secret file',
     $> == 0 ? 'running as root, who can read a mode-000 file' : undef],
    ["$base;counter.throttle.config=$dir/none.throttle",
     ['counter.throttle.config', "$dir/none.throttle",
      'No such file or directory'], 'missing throttle file'],
    ["$base;counter.throttle.config=$dup",
     ["$dup:3: node.capacity", 'duplicate key', 'first on line 2'],
     'duplicate key in a throttle file'],
    ["$base;counter.throttle.config=$over",
     ["$over:3: tenant.b", 'over capacity'], 'reserves over capacity'],
    ["$base;counter.throttle.config=$badval",
     ["$badval:2: tenant.a", 'invalid value'],
     'bad tenant value in a throttle file'],
);
for my $case (@file_cases) {
    my ($cfg, $needles, $title, $skip) = @$case;
    SKIP: {
        skip "$title: $skip", 2 + @$needles if $skip;
        my ($st, $err) = run_host(raw_x => "$ENV{COUNTER_SO},$cfg");
        ok(defined $st && $st != 0, "$title: host exits non-zero")
            or diag "status " . ($st // 'none (had to be killed)');
        like($err, qr/\Q$_\E/, "$title: message says \"$_\"")
            or diag "stderr: $err" for @$needles;
        unlike($err, qr/Q7Q7/, "$title: no secret in the message");
    }
}

# Both keys good: the host starts, and even at -vv no line shows the
# secret.
my $srv = start_host(raw_x => "$ENV{COUNTER_SO},$base;"
                     . "counter.admin_secret_file=$good;"
                     . "counter.throttle.config=$throttle",
                     args => ['-vv']);
ok($srv->{counter_port}, 'good secret and throttle files: host serves');
$srv->stop;
unlike($srv->stderr, qr/Q7Q7/, 'good secret file: never logged');
chmod 0600, $locked;

# Durations in the shared grammar start the host, and a fraction of a
# second is a group's wait: a request left to it queues, then times out.
$srv = start_host(raw_x => "$ENV{COUNTER_SO},$base;"
                  . 'counter.group.g=max:1,wait:0.2s,lease:2min;'
                  . 'counter.keepalive_idle=1min;counter.stat_interval=24h');
ok($srv->{counter_port}, 'durations with fractions and units: host serves');
{
    my ($a, $w) = ($srv->connect, $srv->connect);
    my $r = parse_wait_answer($a->wcall(req_wait_acquire('g', 1, 0, 0, 0)));
    is($r && $r->{state}, 0, 'g: its one slot taken');
    $r = parse_wait_answer($w->wcall(req_wait_acquire('g', 1, 0,
                                                      GROUP_DEFAULT, 0)));
    is($r && $r->{state}, 1, 'g: queued for the group\'s wait of 0.2s');
    my $e = parse_event($w->event);
    is($e && $e->{code}, EV_TIMED_OUT, 'g: timed out by that wait');
}
$srv->stop;
done_testing;
