#!/usr/bin/perl
# 11-counterctl.t: the CLI against a live server: every subcommand, output
# formats, exit codes, and `run`: holds while the command runs, releases
# after, passes the exit status through, gives up with 75 after --wait.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use POSIX qw(:sys_wait_h);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'mchost or counter.so not built' unless target_available;
my $srv = start_target(config => {});
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);

# Starts counterctl with args; returns its pid (output goes to files).
sub ctl_start { spawn_to_files($dir, $CTL, @_) }

# Waits (bounded) for a started counterctl: (exit code, stdout, stderr).
sub ctl_finish { finish_bounded($_[0], $dir) }

# Runs counterctl -p PORT args to the end.
sub ctl { ctl_finish(ctl_start('-p', $port, @_)) }

my ($rc, $out, $err);
($rc, $out) = ctl('--help');
is($rc, 0, '--help exits 0');
like($out, qr/usage: counterctl.*run NAME RESOURCES MAXIMUM/s, '--help shows usage');
like($out, qr/acquire NAME RESOURCES MAXIMUM \[--wait DURATION\] \[--lease DURATION\]/,
     '--help shows acquire --wait and --lease');
like($out, qr/MAXIMUM -/, '--help explains MAXIMUM -');
($rc, $out, $err) = ctl('--version');
is($rc, 0, '--version exits 0');
like($out, qr/\Acounterctl \d+\.\d+\S*\n\z/, '--version prints "counterctl VERSION"');
is($err, '', '--version prints nothing on stderr');

($rc, $out, $err) = ctl('noop');
is_deeply([$rc, $out], [0, ''], 'noop: exit 0, no output');
($rc, $out, $err) = ctl('get', 'cc-x');
is($rc, 1, 'get of a missing counter: exit 1');
like($err, qr/cc-x: Not found/, 'get: the status text on stderr');
($rc, $out) = ctl('acquire', 'cc-x', 2, 5);
is_deeply([$rc, $out], [0, "2\n"], 'acquire prints the resources acquired');
($rc, $out) = ctl('get', 'cc-x');
is_deeply([$rc, $out], [0, "0\n"],
          'get after acquire: 0, the connection closed and released');
($rc, $out, $err) = ctl('acquire', 'cc-x', 0, 5);
is($rc, 1, 'acquire 0: exit 1');
like($err, qr/Invalid arguments/, 'acquire 0: Invalid arguments');
($rc, $out, $err) = ctl('release', 'cc-x', 1);
is($rc, 1, 'release of what this connection does not hold: exit 1');
like($err, qr/Not acquired/, 'release: Not acquired');
($rc, $out, $err) = ctl('release', 'cc-none', 1);
is($rc, 1, 'release of a counter that does not exist: exit 1');
like($err, qr/cc-none: Not found \(status 0x01\)/, 'release: Not found');

# The manual page says what release really answers (both statuses).
SKIP: {
    my $man = "$FindBin::Bin/../doc/counterctl.1";
    skip 'doc/counterctl.1 not found', 2 unless -r $man;
    open my $fh, '<', $man or die "$man: $!";
    my $text = do { local $/; <$fh> };
    my ($rel) = $text =~ /^\.BI release .*?\n(.*?)^\.TP/ms;
    like($rel // '', qr/Not found/, 'counterctl.1: release can answer Not found');
    unlike($rel // '', qr/only ever/, 'counterctl.1: release does not claim one answer only');
}

# The manual page's structure: the node verbs stand together, queues has
# its entry, and the EXIT STATUS list is not cut by a paragraph.
SKIP: {
    my $man = "$FindBin::Bin/../doc/counterctl.1";
    skip 'doc/counterctl.1 not found', 4 unless -r $man;
    open my $fh, '<', $man or die "$man: $!";
    my $text = do { local $/; <$fh> };
    my ($cmds) = $text =~ /^\.SH COMMANDS\n(.*?)^\.SH /ms;
    my @verbs = map { /^\.BI? "?(\w[\w ]*?)(?:"| |\\|$)/ ? $1 : '?' }
        ($cmds // '') =~ /^\.TP\n(.*)$/mg;
    my @node = grep { $verbs[$_] =~ /^node/ } 0 .. $#verbs;
    ok(@node >= 3 && $node[-1] - $node[0] == $#node,
       'counterctl.1: the node verbs are not interrupted by another')
        or diag("@verbs");
    ok((grep { $_ eq 'queues' } @verbs), 'counterctl.1: queues has an entry');
    my ($exit) = $text =~ /^\.SH EXIT STATUS\n(.*?)^\.SH /ms;
    my ($list) = ($exit // '') =~ /^(\.TP\n.*^\.TP\n.*?)(?=^\.PP|\z)/ms;
    my @codes = ($list // '') =~ /^\.TP\n\.BR? (\d+|run :)$/mg;
    my @all = ($exit // '') =~ /^\.TP\n\.BR? (\d+|run :)$/mg;
    is_deeply(\@codes, \@all,
              'counterctl.1: no paragraph inside the EXIT STATUS list');
    is(scalar @all, 9, 'counterctl.1: EXIT STATUS lists 0 1 2 69 70 74 75 76 run')
        or diag("@all");
}

# A memcache port (mchost's own, and Debian's memcached when installed)
# is named as such at once instead of timing out. -t 30: a timeout would
# take longer than any answer.
{
    my @ports = ([$srv->{mc_port}, "mchost's memcache port"]);
    my $mc_pid;
    my $memcached = (grep { -x } map { "$_/memcached" }
                     split /:/, "$ENV{PATH}:/usr/bin")[0];
    if ($memcached) {
        my $probe = IO::Socket::IP->new(Listen => 1, LocalHost => '127.0.0.1',
                                        LocalPort => 0) or die "listen: $@";
        my $mport = $probe->sockport;
        close $probe;
        $mc_pid = spawn_to_files($dir, $memcached, '-l', '127.0.0.1',
                                 '-p', $mport, '-U', '0',
                                 $> == 0 ? ('-u', 'nobody') : ());
        my $up = wait_until(sub {
            IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $mport)
        });
        # Installed but never listening would drop the case unseen.
        ok($up, "Debian's memcached listens on 127.0.0.1:$mport");
        push @ports, [$mport, "Debian's memcached"] if $up;
    }
    SKIP: {
        skip 'memcached not installed', 6 unless $memcached;
    }
    for my $p (@ports) {
        for my $cmd (['get', 'x'], ['stats'], ['acquire', 'x', 1, 2, '--wait', 5]) {
            my ($mrc, $mout, $merr) = ctl_finish(ctl_start('-p', $p->[0], '-t', 30, @$cmd));
            is($mrc, 76, "$p->[1], @$cmd: exit 76");
            like($merr, qr/^counterctl: this is a memcache port, not the counter port$/m,
                 "$p->[1], @$cmd: says it is a memcache port");
        }
    }
    kill_pid($mc_pid) if $mc_pid;
}

my $hold = $srv->connect;
$hold->call(req_acquire("cc a\x01b", 3, 7));
$hold->call(req_acquire('cc-y', 1, 1));
($rc, $out) = ctl('get', 'cc-y');
is_deeply([$rc, $out], [0, "1\n"], 'get prints the value');
($rc, $out) = ctl('dump');
is($rc, 0, 'dump exits 0');
like($out, qr/^cc\\x20a\\x01b 3 3$/m, 'dump: `name current max`, odd bytes escaped');
like($out, qr/^cc-y 1 1$/m, 'dump lists every counter');
($rc, $out) = ctl('queues');
is_deeply([$rc, $out], [0, ''], 'queues with no waiter: exit 0, no output');
{
    # One waiter queued behind the holder of cc-y (1 of 1).
    my $w = $srv->connect;
    $w->wcall(req_wait_acquire('cc-y', 1, 1, 60000, 0));
    ($rc, $out) = ctl('queues');
    is_deeply([$rc, $out], [0, "cc-y 1 1\n"],
              'queues: `name consumption waiters` per counter with a queue');
    $w->close;
}
($rc, $out) = ctl('stats');
is($rc, 0, 'stats exits 0');
like($out, qr/^command:acquire \d+$/m, 'stats prints `name value`');
like($out, qr/^curr_connections \d+$/m, 'stats lists curr_connections');

# Usage errors and connection failures: exit 2 and exactly one line,
# "counterctl: " first (never the path counterctl was started by).
for my $bad (['get'], ['get', 'a', 'b'], ['acquire', 'n', 'x', 1], ['bogus'],
             ['run', 'n', 1, 1, 'true'], ['run', 'n', 1, 1, '--'],
             ['run', 'n', 1, 1, '--wait', 'soon', '--', 'true'], [],
             ['-x', 'noop'], ['--bogus', 'noop'], ['--help=1'], ['-t'],
             ['--port'], ['-p', 'http', 'noop'], ['acquire', '', 1, 1],
             ['run', "new\nline", 'x', 1, '--', 'true'],
             ['acquire', 'n', 1, 1, 'x'], ['acquire', 'n', 1, 1, '--wait'],
             ['acquire', 'n', 1, '-', '--lease', 'soon'],
             ['acquire', 'n', 1, 1, '--wait', 1, '--wait', 2],
             ['acquire', 'n', 1, 0, '--wait', 1],
             ['acquire', 'n', 1, 1, '--wait', '4294968'],
             ['acquire', 'n', 1, 1, '--lease', '-1'],
             ['run', 'n', 1, 1, '--lease', '1', 'true'],
             ['run', 'n', 1, '-', '--wait', '--', 'true']) {
    ($rc, $out, $err) = ctl(@$bad);
    my $shown = join ' ', map { s/\n/\\n/gr } @$bad;
    is($rc, 2, "usage error: counterctl $shown -> 2");
    like($err, qr/\Acounterctl: [^\n]* \(try counterctl --help\)\n\z/,
         "usage error: counterctl $shown -> one line, pointing to --help");
}
($rc, $out, $err) = ctl('bogus');
is($err, qq{counterctl: unknown command "bogus" (try counterctl --help)\n},
   'unknown command: says which');
($rc, $out, $err) = ctl('-x', 'noop');
is($err, qq{counterctl: unknown option "-x" (try counterctl --help)\n},
   'unknown option: says which, with our prefix');

# The rate-limit verbs' argument errors: refused before connecting (exit
# 2, one line), each naming the argument at fault. A duration needs a
# unit; window and gcra options come after the positional arguments.
($rc, $out) = ctl('--help');
like($out, qr/^  ttl insert NAME QUOTA TTL /m, '--help shows ttl insert');
like($out, qr/^  ttl update NAME quota\|ttl patch\|increase\|decrease VALUE$/m,
     '--help shows ttl update');
like($out, qr/^  window NAME LIMIT \[--window DURATION\] \[--slots N\] \[--cost N\] \[--peek\]$/m,
     '--help shows window and its options');
like($out, qr/^  gcra NAME BURST COUNT PERIOD \[--cost N\] \[--peek\]$/m,
     '--help shows gcra and its options');
for my $bad ([[qw(ttl)], qr/ttl needs insert, query, update or purge/],
             [[qw(ttl bogus n)], qr/unknown subcommand "bogus"/],
             [[qw(ttl insert n 1)], qr/ttl insert needs NAME QUOTA TTL/],
             [[qw(ttl insert n 1 3d)], qr/TTL: "3d" has an unknown unit/],
             [[qw(ttl insert n 1 3parsecs)], qr/TTL: "3parsecs" has an unknown unit/],
             [[qw(ttl insert n 1 1.5ns)],
              qr/TTL: "1\.5ns" is not a whole number of nanoseconds/],
             [[qw(ttl insert n 1 3S)],
              qr/TTL: "3S" has its unit in capitals \(units are lower case/],
             [[qw(ttl insert n 1 0s)], qr/TTL: "0s" is too short \(longer than 0/],
             [[qw(ttl insert n 1 -1s)], qr/TTL: "-1s" is negative/],
             [[qw(ttl insert n 1 5124096h)], qr/TTL: "5124096h" is too long/],
             [[qw(ttl insert n 1 18446744073709551616ns)],
              qr/TTL: "18446744073709551616ns" is too long/],
             [[qw(ttl insert n -1 1s)], qr/QUOTA .*"-1"/],
             [[qw(ttl insert n 18446744073709551616 1s)],
              qr/QUOTA .*"18446744073709551616"/],
             [['ttl', 'insert', '', 1, '1s'], qr/name must be 1 to 65535/],
             [[qw(ttl query)], qr/ttl query needs NAME/],
             [[qw(ttl purge a b)], qr/ttl purge needs NAME/],
             [[qw(ttl update n quota patch)], qr/ttl update needs NAME/],
             [[qw(ttl update n size patch 1)], qr/quota or ttl, not "size"/],
             [[qw(ttl update n quota set 1)],
              qr/patch, increase or decrease, not "set"/],
             [[qw(ttl update n quota patch 1s)], qr/VALUE .*"1s"/],
             [[qw(ttl update n ttl increase 3x)], qr/VALUE: "3x" has an unknown unit/],
             [[qw(ttl update n ttl patch 0ms)], qr/VALUE: "0ms" is too short/],
             [[qw(window w)], qr/window needs NAME LIMIT/],
             [[qw(window w --peek)], qr/window needs NAME LIMIT/],
             [[qw(window w x)], qr/LIMIT .*"x"/],
             [['window', 'w', 1, '--window', '5 minutes'],
              qr/--window: "5 minutes" is not a duration \(write a number and a unit: 250ms, 3s, 5min, 2h\)/],
             [[qw(window w 1 --window 0s)], qr/--window: "0s" is too short/],
             [[qw(window w 1 --window)], qr/--window needs a value/],
             [[qw(window w 1 --slots 65)], qr/--slots .*"65"/],
             [[qw(window w 1 --slots 0)], qr/--slots .*"0"/],
             [[qw(window w 1 --slots 7)], qr/1000000000ns does not divide into 7 slots/],
             [[qw(window w 1 --window 10us --slots 40)],
              qr/--window 10000ns in 40 slots .*shorter than 1us/],
             [[qw(window w 1 --cost 0)], qr/--cost .*"0"/],
             [[qw(window w 1 --peek --peek)], qr/--peek given twice/],
             [[qw(window w 1 --cost 1 --cost 2)], qr/--cost given twice/],
             [[qw(window w 1 extra)], qr/unexpected argument "extra"/],
             [[qw(gcra g 0 1)], qr/gcra needs NAME BURST COUNT PERIOD/],
             [[qw(gcra g 0 1 5M)], qr/PERIOD: "5M" has its unit in capitals/],
             [[qw(gcra g 0 0 1h)], qr/COUNT .*"0"/],
             [[qw(gcra g x 1 1h)], qr/BURST .*"x"/],
             [[qw(gcra g 0 1 0ns)], qr/PERIOD: "0ns" is too short/],
             [[qw(-t 0 noop)], qr/--timeout: "0" is too short/],
             [[qw(-t 0.0001 noop)],
              qr/--timeout: "0\.0001" is not a whole number of milliseconds/],
             [[qw(-t 5sec noop)], qr/--timeout: "5sec" has an unknown unit/],
             [[qw(acquire a 1 2 --wait 5.)], qr/--wait: "5\." is not a duration \(write a number and a unit: 250ms, 3s, 5min, 2h\)/],
             [[qw(acquire a 1 2 --wait 0.0005)],
              qr/--wait: "0\.0005" is not a whole number of milliseconds/],
             [[qw(acquire a 1 2 --lease 50d)], qr/--lease: "50d" has an unknown unit/],
             [[qw(acquire a 1 2 --lease 50000h)], qr/--lease: "50000h" is too long/],
             [[qw(acquire a 1 2 --lease)], qr/--lease needs a duration/],
             [[qw(gcra g 0 1 1h --slots 2)], qr/unexpected argument "--slots"/],
             [[qw(gcra g 0 1 1h --window 1s)],
              qr/unexpected argument "--window"/]) {
    my ($args, $why) = @$bad;
    # Port 1: a usage error must be found before any connection.
    ($rc, $out, $err) = ctl_finish(ctl_start('-p', 1, @$args));
    my $shown = join ' ', @$args;
    is($rc, 2, "usage error: counterctl $shown -> 2");
    like($err, qr/\Acounterctl: [^\n]*$why[^\n]* \(try counterctl --help\)\n\z/,
         "usage error: counterctl $shown -> one line naming what is wrong");
    is($out, '', "usage error: counterctl $shown -> nothing on stdout");
}
# The throttling verbs' argument errors: refused before connecting (exit
# 2, one line, naming what is wrong); so is a privileged verb without
# --secret-file, whose file is only read once the arguments are right.
($rc, $out) = ctl('--help');
like($out, qr/^  throttle TENANT UNITS \[--unthrottled\]$/m,
     '--help shows throttle');
like($out, qr/^  tenant set TENANT \[--reserved N\] \[--hard-limit N\|unlimited\]$/m,
     '--help shows tenant set and its options');
like($out, qr/^  node set --capacity N /m, '--help shows node set');
like($out, qr/--secret-file PATH/, '--help shows --secret-file');
for my $bad ([[qw(throttle)], qr/throttle needs TENANT UNITS/],
             [[qw(throttle t)], qr/throttle needs TENANT UNITS/],
             [[qw(throttle t --unthrottled)], qr/throttle needs TENANT UNITS/],
             [[qw(throttle t 0)], qr/UNITS .*"0"/],
             [[qw(throttle t x)], qr/UNITS .*"x"/],
             [[qw(throttle t 4294967296)], qr/UNITS .*"4294967296"/],
             [['throttle', '', 1], qr/tenant name must be 1 to 65535/],
             [[qw(throttle t 1 --peek)], qr/unexpected argument "--peek"/],
             [[qw(throttle t 1 2)], qr/unexpected argument "2"/],
             [[qw(--secret-file /nonexistent throttle t 1 --unthrottled
                  --unthrottled)], qr/--unthrottled given twice/],
             [[qw(throttle t 1 --unthrottled)],
              qr/throttle --unthrottled needs --secret-file PATH/],
             [[qw(tenant)], qr/tenant needs show, set or remove/],
             [[qw(tenant list)], qr/unknown subcommand "list"/],
             [[qw(tenant show a b)], qr/tenant show takes at most TENANT/],
             [['tenant', 'show', ''], qr/tenant name must be 1 to 65535/],
             [[qw(tenant set)], qr/tenant set needs TENANT/],
             [[qw(tenant set --reserved 1)], qr/tenant set needs TENANT/],
             [[qw(tenant set t)], qr/--reserved N, --hard-limit/],
             [[qw(tenant set t --reserved)], qr/--reserved needs a value/],
             [[qw(tenant set t --reserved -1)], qr/--reserved .*"-1"/],
             [[qw(tenant set t --hard-limit lots)],
              qr/--hard-limit .*unlimited: "lots"/],
             [[qw(tenant set t --hard-limit 4294967295)],
              qr/--hard-limit .*"4294967295"/],
             [[qw(tenant set t --reserved 1 --reserved 2)],
              qr/--reserved given twice/],
             [[qw(tenant set t --capacity 1)],
              qr/unexpected argument "--capacity"/],
             [[qw(tenant set t --reserved 1)],
              qr/tenant set needs --secret-file PATH/],
             [[qw(tenant remove)], qr/tenant remove needs TENANT/],
             [[qw(tenant remove a b)], qr/unexpected argument "b"/],
             [[qw(tenant remove t)], qr/tenant remove needs --secret-file/],
             [[qw(node)], qr/node needs show, set or reload/],
             [[qw(node list)], qr/unknown subcommand "list"/],
             [[qw(node show x)], qr/unexpected argument "x"/],
             [[qw(node reload x)], qr/unexpected argument "x"/],
             [[qw(node set)], qr/node set needs --capacity N/],
             [[qw(node set 5)], qr/unexpected argument "5"/],
             [[qw(node set --capacity)], qr/--capacity needs a value/],
             [[qw(node set --capacity x)], qr/--capacity .*"x"/],
             [[qw(node set --capacity 1 2)], qr/unexpected argument "2"/],
             [[qw(node set --capacity 1)], qr/node set needs --secret-file/],
             [[qw(node reload)], qr/node reload needs --secret-file/],
             [['--secret-file', '', qw(node reload)],
              qr/--secret-file needs a path/],
             [[qw(--secret-file)], qr/"--secret-file" needs a value/]) {
    my ($args, $why) = @$bad;
    ($rc, $out, $err) = ctl_finish(ctl_start('-p', 1, @$args));
    my $shown = join ' ', @$args;
    is($rc, 2, "usage error: counterctl $shown -> 2");
    like($err, qr/\Acounterctl: [^\n]*$why[^\n]* \(try counterctl --help\)\n\z/,
         "usage error: counterctl $shown -> one line naming what is wrong");
    is($out, '', "usage error: counterctl $shown -> nothing on stdout");
}
# A --secret-file that will not do: 1 before connecting, naming the path.
($rc, $out, $err) = ctl_finish(ctl_start('-p', 1, '--secret-file',
                                         "$dir/no-secret", qw(node reload)));
is($rc, 1, 'a missing --secret-file: exit 1');
like($err, qr/\Acounterctl: --secret-file "\Q$dir\E\/no-secret": cannot open: [^\n]*\n\z/,
     'a missing --secret-file: one line naming the path');
# Verbs that need no privilege leave the file unread.
($rc, $out, $err) = ctl_finish(ctl_start('-p', 1, '--secret-file',
                                         "$dir/no-secret", qw(node show)));
is($rc, 69, 'node show with an unusable --secret-file: the file unread '
            . '(69: nothing listens on port 1)');

($rc, $out, $err) = ctl('get', "two\nlines");
is($err, qq{counterctl: two\\x0alines: Not found (status 0x01)\n},
   'a newline in a counter name is escaped: still one line');
my $gone = IO::Socket::IP->new(Listen => 1, LocalHost => '127.0.0.1', LocalPort => 0);
my $closed_port = $gone->sockport;
close $gone;
($rc, $out, $err) = ctl_finish(ctl_start('-p', $closed_port, 'noop'));
is($rc, 69, 'nothing listening: exit 69');
like($err, qr/\Acounterctl: cannot connect[^\n]*\n\z/, 'cannot connect: says so in one line');

# run: holds while the command runs, releases after, passes the status.
($rc, $out) = ctl('run', 'cc-run', 2, 2, '--', 'sh', '-c',
                  "'$CTL' -p $port get cc-run; exit 7");
is($rc, 7, 'run: the command exit status passes through');
is($out, "2\n", 'run: the resources are held while the command runs');
($rc, $out) = ctl('get', 'cc-run');
is($out, "0\n", 'run: released afterwards');
($rc) = ctl('run', 'cc-run', 1, 1, '--', 'sh', '-c', 'kill -TERM $$');
is($rc, 128 + 15, 'run: a command killed by SIGTERM gives 143');
($rc, $out, $err) = ctl('run', 'cc-run', 1, 1, '--', "$dir/no-such-program");
is($rc, 127, 'run: a missing command gives 127');
like($err, qr/cannot run/, 'run: says it cannot run it');

# run when the resources are taken: 75 without running the command.
$hold->call(req_acquire('cc-busy', 1, 1));
($rc, $out, $err) = ctl('run', 'cc-busy', 1, 1, '--', 'touch', "$dir/ran");
is($rc, 75, 'run without --wait on a busy counter: 75 at once');
like($err, qr/not available/, 'run: says not available');
($rc) = ctl('run', 'cc-busy', 1, 1, '--wait', '0.5', '--', 'touch', "$dir/ran");
is($rc, 75, 'run --wait 0.5 on a busy counter: 75 when the wait runs out');
ok(!-e "$dir/ran", 'the command never ran');

# run --wait succeeds once the holder lets go. It waits in the server's
# queue (one wait_acquire); the reference has no queue, so there it
# retries Acquire.
my %st0 = map { @$_ } $hold->stats_pairs;
my $pid = ctl_start('-p', $port, 'run', 'cc-busy', 1, 1, '--wait', '30', '--',
                    'touch', "$dir/ran");
ok(wait_until(sub {
    my %s = map { @$_ } $hold->stats_pairs;
    return $ENV{CNT_TEST_REFERENCE}
        ? $s{'command:acquire'} >= $st0{'command:acquire'} + 2
        : $s{waiting} >= $st0{waiting} + 1;
}), 'run --wait waits while the counter is busy');
ok(!-e "$dir/ran", 'and has not run the command yet');
$hold->call(req_release('cc-busy', 1));
($rc) = ctl_finish($pid);
is($rc, 0, 'run --wait: acquired after the release, command ran');
ok(-e "$dir/ran", 'the command ran');
SKIP: {
    skip 'the reference has no wait_acquire', 2 if $ENV{CNT_TEST_REFERENCE};
    my %s = map { @$_ } $hold->stats_pairs;
    is($s{'command:wait_acquire'} - $st0{'command:wait_acquire'}, 1,
       'run --wait sent one wait_acquire');
    is($s{'command:acquire'} - $st0{'command:acquire'}, 0,
       'and never polled with Acquire');
}

# Killing counterctl releases: the connection closes with it.
$pid = ctl_start('-p', $port, 'run', 'cc-kill', 1, 1, '--', 'sh', '-c',
                 "echo \$\$ > '$dir/child'; exec sleep 60");
my $child = wait_until(sub {
    open my $fh, '<', "$dir/child" or return;
    my $p = <$fh>;
    return $p && $p =~ /^(\d+)$/ ? $1 : undef;
});
track_pid($child) if $child;
answer_is($hold->call(req_get('cc-kill')), resp(OP_GET, ST_OK, u32(1)),
          'run holds 1 while its command sleeps');
kill 'KILL', $pid;
waitpid $pid, 0;
ok(wait_until(sub { unpack('N', $hold->call(req_get('cc-kill'))->{body}) == 0 }),
   'counterctl killed: the server released');
kill_pid($child) if $child;

# A server that declares a huge answer: refused, not buffered.
my $fake = IO::Socket::IP->new(Listen => 1, LocalHost => '127.0.0.1', LocalPort => 0)
    or die "listen: $@";
my $fpid = fork // die;
if ($fpid == 0) {
    my $s = $fake->accept;
    my $buf;
    sysread $s, $buf, 100;
    syswrite $s, pack('CCCCNN', 0x91, 0, 0, 0, 0xfffffff0, 1) . ('z' x 1000);
    sleep 20;
    POSIX::_exit(0);
}
track_pid($fpid);
($rc, $out, $err) = ctl_finish(ctl_start('-p', $fake->sockport, 'noop'));
is($rc, 76, 'a 4 GiB answer is refused (76), not buffered');
like($err, qr/malformed answer/, 'and reported');
kill_pid($fpid);

# A server that accepts and never answers: -t bounds the wait.
my $mute = IO::Socket::IP->new(Listen => 1, LocalHost => '127.0.0.1', LocalPort => 0)
    or die "listen: $@";
($rc, $out, $err) = ctl_finish(ctl_start('-p', $mute->sockport, '-t', '0.3', 'noop'));
is($rc, 74, 'no answer within -t: exit 74');
like($err, qr/timed out/, 'and says it timed out');
close $mute;

# IPv6: a listener on ::1 and counterctl -s ::1.
SKIP: {
    skip 'reference runs: IPv6 listener not configured', 2 if $ENV{CNT_TEST_REFERENCE};
    skip 'no IPv6 loopback', 2
        unless IO::Socket::IP->new(Listen => 1, LocalHost => '::1', LocalPort => 0);
    my $v6 = start_host(config => { bind => '::1' });
    ($rc, $out) = ctl_finish(ctl_start('-s', '::1', '-p', $v6->{counter_port},
                                       'acquire', 'cc-v6', 1, 1));
    is($rc, 0, 'counterctl -s ::1 reaches a server bound to ::1');
    is($out, "1\n", 'and gets its answer');
    $v6->stop;
}

# --wait, --lease and -t take the shared duration grammar: fractions,
# every unit, m for minutes, a bare number in seconds.
($rc, $out, $err) = ctl('-t', '2.5s', 'acquire', 'dur', 1, 2, '--wait',
                        '0.5min', '--lease', '1m');
is_deeply([$rc, $out, $err], [0, "1\n", ''],
          'acquire --wait 0.5min --lease 1m -t 2.5s: granted');
($rc, $out, $err) = ctl('-t', '3', 'acquire', 'dur', 1, 2, '--wait', '1.5');
is_deeply([$rc, $out, $err], [0, "1\n", ''],
          'acquire --wait 1.5 -t 3 (bare seconds): granted');

$srv->stop;
done_testing;
