#!/usr/bin/perl
# 37-counterctl-run-tree.t: `counterctl run` holds for the command's whole
# process tree, not just its first process. Each first run's command is a
# shell that starts children (in the background, in the foreground, one
# in a session of its own with setsid) and writes every pid to a file; the
# holding is then lost one way or another (counterctl SIGKILLed, the
# server restarted, the lease run out under a stopped counterctl), and a
# second run on the same maximum-1 counter records which of those pids
# still ran when its command started: none may.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Time::HiRes qw(sleep);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'mchost or counter.so not built' unless target_available;
plan skip_all => 'needs Linux /proc (the subreaper and its scan)'
    unless -r "/proc/$$/stat";
plan skip_all => 'needs setsid(1)'
    unless grep { -x "$_/setsid" } split /:/, $ENV{PATH};
my $srv = start_target(config => {});
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);
my $hold = $srv->connect;

# Starts `counterctl -p PORT run NAME 1 1 OPTS -- sh -c SCRIPT` with its
# output in a directory of its own; returns { pid, dir }.
sub start_run {
    my ($p, $name, $script, @opts) = @_;
    my $d = tempdir(DIR => $dir);
    my $pid = spawn_to_files($d, $CTL, '-p', $p, 'run', $name, 1, 1, @opts,
                             '--', 'sh', '-c', $script);
    return { pid => $pid, dir => $d };
}

# The pids listed in file once it has n of them (each tracked, so that
# the test kills them if it fails), or an empty list.
sub pids_in {
    my ($file, $n) = @_;
    my $pids = wait_until(sub {
        open my $fh, '<', $file or return;
        my @p = map { /^(\d+)$/ ? $1 : () } <$fh>;
        return @p >= $n ? [@p] : undef;
    });
    track_pid($_) for @{ $pids // [] };
    return @{ $pids // [] };
}

# True when every pid is gone within 5 s (polled), which are then
# forgotten so that END does not signal a reused number.
sub all_gone {
    my @pids = @_;
    my $ok = wait_until(sub { !grep { pid_alive($_) } @pids }, 5);
    if ($ok) { untrack_pid($_) for @pids }
    return $ok;
}

# A tree of four processes, each writing its pid to file: the shell, a
# background child, a foreground child that is not exec'd into, and a
# grandchild in a session of its own (its pid also in file.s). All sleep
# until killed.
sub tree_script {
    my ($file) = @_;
    return "echo \$\$ >> '$file'; "
         . "sleep 300 & echo \$! >> '$file'; "
         . "setsid sh -c 'echo \$\$ >> \"$file\"; echo \$\$ > \"$file.s\"; "
         . "exec sleep 300' & "
         . "sh -c 'echo \$\$ >> \"$file\"; exec sleep 300'; true";
}

# The second run's command: writes to out which pids listed in file still
# run as it starts (an empty file when none do).
sub check_script {
    my ($file, $out) = @_;
    return "for p in \$(cat '$file'); do kill -0 \$p 2>/dev/null && "
         . "echo \$p; done > '$out.tmp'; mv '$out.tmp' '$out'";
}

# Contents of a file, or undef when it does not exist.
sub slurp {
    open my $fh, '<', $_[0] or return;
    local $/;
    return <$fh> // '';
}

# The server's stats as a hash.
sub stats { return map { @$_ } $hold->stats_pairs }

# True once one more run --wait is queued than when %before was taken
# (against the reference, which has no queue: retrying Acquire).
sub one_more_waits {
    my (%before) = @_;
    my %s = stats();
    return $ENV{CNT_TEST_REFERENCE}
        ? $s{'command:acquire'} >= $before{'command:acquire'} + 2
        : $s{waiting} >= $before{waiting} + 1;
}

# Current consumption of a counter.
sub current {
    my $r = $hold->call(req_get($_[0]));
    return $r && $r->{status} == ST_OK ? unpack('N', $r->{body}) : -1;
}

# The process group of pid, from /proc.
sub pgrp_of {
    open my $fh, '<', "/proc/$_[0]/stat" or return -1;
    my $s = <$fh> // '';
    return $s =~ /\) \S+ \d+ (\d+) /s ? $1 : -1;
}

# The second run: waits in the queue behind the first, then checks.
sub start_checker {
    my ($p, $name, $file, $tag) = @_;
    my $r = start_run($p, $name, check_script($file, "$dir/$tag-alive"),
                      '--wait', '60');
    return $r;
}

# -- counterctl SIGKILLed: the tree goes, and only then the holding. --
{
    my $file = "$dir/kill-pids";
    my $holder = start_run($port, 't-kill', tree_script($file));
    my @pids = pids_in($file, 4);
    is(scalar @pids, 4, 'SIGKILL: the tree of four runs');
    my ($setsid) = pids_in("$file.s", 1);
    isnt(pgrp_of($setsid // 0), pgrp_of($pids[0]),
         'its setsid grandchild left the process group');
    is(current('t-kill'), 1, 'and holds 1 of 1');
    my %before = stats();
    my $checker = start_checker($port, 't-kill', $file, 'kill');
    ok(wait_until(sub { one_more_waits(%before) }),
       'a second run --wait is waiting for its turn');
    kill 'KILL', $holder->{pid};
    waitpid $holder->{pid}, 0;
    untrack_pid($holder->{pid});
    my ($rc) = finish_bounded($checker->{pid}, $checker->{dir}, 30);
    is($rc, 0, 'the second run gets its turn');
    is(slurp("$dir/kill-alive"), '',
       'and none of the first tree ran when its command started');
    ok(all_gone(@pids), 'the first tree is gone');
}

# -- A tree that ignores SIGTERM: SIGKILL after --kill-after. --
{
    my $file = "$dir/hard-pids";
    my $holder = start_run($port, 't-hard', "trap '' TERM; "
                           . tree_script($file), '--kill-after', '0.2');
    my @pids = pids_in($file, 4);
    is(scalar @pids, 4, 'SIGTERM ignored: the tree of four runs');
    my %before = stats();
    my $checker = start_checker($port, 't-hard', $file, 'hard');
    ok(wait_until(sub { one_more_waits(%before) }),
       'a second run --wait is waiting for its turn');
    kill 'KILL', $holder->{pid};
    waitpid $holder->{pid}, 0;
    untrack_pid($holder->{pid});
    my ($rc) = finish_bounded($checker->{pid}, $checker->{dir}, 30);
    is($rc, 0, 'the second run gets its turn once --kill-after passed');
    is(slurp("$dir/hard-alive"), '', 'and none of the first tree ran');
    ok(all_gone(@pids), 'the first tree is gone');
}

# -- The command ends, a child it left runs on: still held until it ends. --
{
    my $file = "$dir/left-pids";
    my $stop = "$dir/left-stop";
    my $holder = start_run($port, 't-left', "echo \$\$ >> '$file'; "
        . "setsid sh -c 'echo \$\$ >> \"$file\"; "
        . "while [ ! -e \"$stop\" ]; do sleep 0.05; done' & exit 3");
    my @pids = pids_in($file, 2);
    is(scalar @pids, 2, 'left behind: the command and its child ran');
    ok(all_gone($pids[0]), 'the command ended');
    is(current('t-left'), 1, 'the counter is still held');
    my %before = stats();
    my $checker = start_checker($port, 't-left', $file, 'left');
    ok(wait_until(sub { one_more_waits(%before) }),
       'a second run --wait is waiting for its turn');
    ok(!-e "$dir/left-alive", 'and has not run');
    open my $fh, '>', $stop or die "$stop: $!";
    close $fh;
    my ($rc) = finish_bounded($holder->{pid}, $holder->{dir});
    is($rc, 3, 'the child ended: counterctl exits with the command\'s status');
    ($rc) = finish_bounded($checker->{pid}, $checker->{dir}, 30);
    is($rc, 0, 'the second run then runs');
    is(slurp("$dir/left-alive"), '', 'after the first tree was gone');
    ok(all_gone(@pids), 'the first tree is gone');
}

# -- SIGTERM to counterctl reaches the command's group, children too. --
{
    my $file = "$dir/term-pids";
    my $holder = start_run($port, 't-term',
        "echo \$\$ >> '$file'; sleep 300 & echo \$! >> '$file'; wait");
    my @pids = pids_in($file, 2);
    is(scalar @pids, 2, 'SIGTERM: the shell and its child run');
    kill 'TERM', $holder->{pid};
    my ($rc) = finish_bounded($holder->{pid}, $holder->{dir});
    is($rc, 143, 'counterctl exits with the command\'s status (143)');
    ok(!grep({ pid_alive($_) } @pids), 'with no process of the tree left');
    all_gone(@pids);
    is(current('t-term'), 0, 'and released');
}

# -- The lease runs out under a stopped counterctl: the supervisor stops
# the tree before the server can grant the counter to the next run. --
SKIP: {
    skip 'the reference has no leases', 8 if $ENV{CNT_TEST_REFERENCE};
    my $file = "$dir/lease-pids";
    my $holder = start_run($port, 't-lease', tree_script($file),
                           '--lease', '3');
    my @pids = pids_in($file, 4);
    is(scalar @pids, 4, 'lease: the tree of four runs');
    my %before = stats();
    my $checker = start_checker($port, 't-lease', $file, 'lease');
    ok(wait_until(sub { one_more_waits(%before) }),
       'a second run --wait is waiting for its turn');
    kill 'STOP', $holder->{pid};
    my ($rc) = finish_bounded($checker->{pid}, $checker->{dir}, 30);
    is($rc, 0, 'counterctl stopped: the second run gets its turn');
    is(slurp("$dir/lease-alive"), '',
       'and none of the first tree ran when its command started');
    ok(all_gone(@pids), 'the first tree is gone');
    kill 'CONT', $holder->{pid};
    my ($rc1, $out, $err) = finish_bounded($holder->{pid}, $holder->{dir});
    is($rc1, 75, 'continued: the first counterctl exits 75');
    like($err, qr/\Acounterctl: lost the lease on "t-lease" \([^\n]+\); sent SIGTERM to the command\n\z/,
         'saying so in one line naming the counter and the reason');
    is(current('t-lease'), 0, 'nothing is held afterwards');
}

# -- The server restarts: counterctl exits 75 only once the tree is gone. --
SKIP: {
    skip 'restarts need mchost on a fixed port', 5 unless have_host;
    my $srv2 = start_host(config => {});
    my $port2 = $srv2->{counter_port};
    my $file = "$dir/restart-pids";
    my $holder = start_run($port2, 'licence', tree_script($file));
    my @pids = pids_in($file, 4);
    is(scalar @pids, 4, 'restart: the tree of four runs');
    $srv2->stop;
    my ($rc, $out, $err) = finish_bounded($holder->{pid}, $holder->{dir});
    is($rc, 75, 'server stopped: counterctl exits 75');
    like($err, qr/\Acounterctl: lost the connection holding "licence" \([^\n]+\); sent SIGTERM to the command\n\z/,
         'saying so in one line naming the counter and the reason');
    my $srv3 = start_host(config => { port => $port2 });
    my $checker = start_checker($port2, 'licence', $file, 'restart');
    ($rc) = finish_bounded($checker->{pid}, $checker->{dir}, 30);
    is($rc, 0, 'server back: the next run acquires and runs');
    is(slurp("$dir/restart-alive"), '',
       'none of the first tree ran when its command started');
    all_gone(@pids);
    $srv3->stop;
}

# -- --kill-after is run's only, and a number of seconds. --
{
    my $d = tempdir(DIR => $dir);
    for my $args (['run', 'n', 1, 1, '--kill-after', 'soon', '--', 'true'],
                  ['run', 'n', 1, 1, '--kill-after', '1', '--kill-after',
                   '1', '--', 'true'],
                  ['run', 'n', 1, 1, '--kill-after', '--', 'true'],
                  ['acquire', 'n', 1, 1, '--kill-after', '1']) {
        my ($rc, $out, $err) = run_bounded($d, $CTL, '-p', $port, @$args);
        is($rc, 2, "usage error: @$args");
        like($err, qr/\Acounterctl: [^\n]*\n\z/, 'in one line');
    }
    my ($rc) = run_bounded($d, $CTL, '-p', $port, 'run', 'n', 1, 1,
                           '--kill-after', '0', '--', 'true');
    is($rc, 0, '--kill-after 0 is allowed');
}

$hold->close;
$srv->stop;
done_testing;
