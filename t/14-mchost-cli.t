#!/usr/bin/perl
# 14-mchost-cli.t: mchost's command line as users meet it: --help and
# --version answer even when an -X before them would fail, every error line
# mchost writes itself starts with "mchost:", and the examples of
# doc/mchost.1 survive the shell and start a working server.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $busy = IO::Socket::IP->new(Listen => 5, LocalHost => '127.0.0.1',
                               LocalPort => 0) or die "listen: $@";
my $busy_port = $busy->sockport;
my $bad_x = "$ENV{COUNTER_SO},counter.enable=true;counter.port=$busy_port";

# Runs mchost with args to the end; returns (exit code, stdout, stderr).
sub mchost {
    my $dir = tempdir(CLEANUP => 1);
    return run_bounded($dir, $ENV{MCHOST}, @_);
}

# Help and version come first, whatever the options before them would do:
# here the extension cannot initialize because its port is taken.
for my $flag ('--help', '-h') {
    my ($rc, $out, $err) = mchost('-X', $bad_x, $flag);
    is($rc, 0, "-X failing, then $flag: exit 0");
    like($out, qr/\AUsage: mchost .*--extension=PATH/s, "$flag: usage on stdout");
    is($err, '', "$flag: the extension was not loaded (nothing on stderr)");
}
for my $flag ('--version', '-V') {
    my ($rc, $out, $err) = mchost('-X', $bad_x, $flag);
    is($rc, 0, "-X failing, then $flag: exit 0");
    like($out, qr/\Amchost \d+\.\d+\.\d+\n\z/, "$flag: version on stdout");
    is($err, '', "$flag: nothing on stderr");
}
my ($rc, $out) = mchost('-t', '0', '--help');
ok($rc == 0 && $out =~ /^Usage:/, 'a bad value before --help: help still wins');
($rc, $out) = mchost('-P', '-h', '-V');
ok($rc == 0 && $out =~ /^mchost \d/ && $out !~ /Usage/,
   'an option argument that looks like -h is not taken for it');

# Every line mchost writes on a failure names it; extensions' own lines
# carry their own name ("counter:").
my @fails = (
    [['-c', 'x'], qr/invalid value for -c: 'x'/, 'bad -c value'],
    [['-z'], qr/unknown option '-z'/, 'unknown short option'],
    [['--no-such-option=1'], qr/unknown or ambiguous option '--no-such-option'$/m,
     'unknown long option'],
    [['-p'], qr/option -p needs a value/, 'short option without its value'],
    [['--port'], qr/option --port needs a value/,
     'long option without its value'],
    [['--help=x'], qr/option --help takes no value/,
     'long option with a value it does not take'],
    [['-p', '0', 'extra'], qr/unexpected argument 'extra'/, 'stray argument'],
    [['-l', '127.0.0.1', '-p', $busy_port],
     qr/cannot listen on 127\.0\.0\.1 port $busy_port: Address already in use/,
     'busy memcache port'],
    [['-p', '0', '-l', 'no such host.invalid'], qr/listen address/,
     'unresolvable listen address'],
    [['-p', '0', '-l', '127.0.0.1', '-P', '/nonexistent/dir/pid'],
     qr{cannot write /nonexistent/dir/pid}, 'unwritable pid file'],
    [['-X', '/nonexistent/counter.so'],
     qr{Failed to load extension /nonexistent/counter\.so}, 'missing extension'],
    [['-X', $bad_x], qr/Failed to initialize extension/,
     'extension failing to initialize'],
);
for my $f (@fails) {
    my ($args, $want, $title) = @$f;
    my ($rc, undef, $err) = mchost(@$args);
    ok($rc > 0 && $rc < 128, "$title: exit non-zero") or diag("exit $rc");
    like($err, qr/^$LOG_TS mchost: .*$want/m,
         "$title: message with its time and the mchost: prefix")
        or diag("stderr: $err");
    my @other = grep { !/^$LOG_TS (?:mchost|counter): / } split /\n/, $err;
    ok(!@other, "$title: no line without a prefix")
        or diag("unprefixed: @other");
}

# The man page's examples. Each is given to sh with a stand-in mchost that
# writes its arguments out, so a quoting mistake shows as a split argument
# or a failing second command.
my $page = "$FindBin::Bin/../doc/mchost.1";
open my $fh, '<', $page or die "$page: $!";
my $roff = do { local $/; <$fh> };
close $fh;
my ($examples) = $roff =~ /^\.SH EXAMPLES\n(.*?)(?=^\.SH )/ms;
my @cmds = map {
    (my $c = $_) =~ s/\\-/-/g;
    $c =~ s/\\e/\\/g;
    $c;
} ($examples // '') =~ /^\.nf\n(.*?)^\.fi$/msg;
cmp_ok(scalar @cmds, '>=', 2, 'the man page has examples');

# Every option of OPTIONS that takes a value, or can be given alone, is
# in the SYNOPSIS too (except -h and -V, which only print).
my ($synopsis) = $roff =~ /^\.SH SYNOPSIS\n(.*?)(?=^\.SH )/ms;
my ($options) = $roff =~ /^\.SH OPTIONS\n(.*?)(?=^\.SH )/ms;
my @opts = ($options // '') =~ /^\.BR \\-(\w) ",/mg;
cmp_ok(scalar @opts, '>=', 10, 'mchost.1 lists its options');
for my $o (grep { $_ ne 'h' && $_ ne 'V' } @opts) {
    like($synopsis // '', qr/\\fB\\-\Q$o\E\\fR/, "mchost.1: -$o is in the SYNOPSIS");
}
my $dir = tempdir(CLEANUP => 1);
for my $i (0 .. $#cmds) {
    my $cmd = $cmds[$i];
    my $script = qq{mchost() { printf '%s\\n' "\$@" > "$dir/args.$i"; }\n$cmd};
    my ($rc, undef, $err) = run_bounded($dir, '/bin/sh', '-c', $script);
    is($rc, 0, "example " . ($i + 1) . ": the shell runs it without error")
        or diag("$cmd\n$err");
    open my $fa, '<', "$dir/args.$i" or do { fail("example $i: no arguments"); next };
    chomp(my @args = <$fa>);
    close $fa;
    my ($xi) = grep { $args[$_ - 1] eq '-X' } 1 .. $#args;
    my $x = defined $xi ? $args[$xi] : '';
    my @keys = $cmd =~ /(counter\.\w+=\w+)/g;
    ok(@keys && !grep({ index($x, $_) < 0 } @keys),
       "example " . ($i + 1) . ": -X gets every key of the configuration")
        or diag("arguments: @args");

    # Run those on kernel-chosen ports: the built counter.so replaces the
    # installed one, the port file goes to our own directory.
    my %opt = map { $args[$_ - 1] => $args[$_] } 1 .. $#args;
    next unless ($opt{'-p'} // '') eq '0' && $x =~ /counter\.port=0\b/;
    for my $j (1 .. $#args) {
        $args[$j] =~ s/^[^,]*counter\.so,/$ENV{COUNTER_SO},/
            if $args[$j - 1] eq '-X';
        $args[$j] = "$dir/port.$i" if $args[$j - 1] eq '-F';
    }
    my $pid = spawn_to_files($dir, $ENV{MCHOST}, @args);
    my $port = wait_until(sub {
        open my $p, '<', "$dir/port.$i" or return;
        my $l = <$p>;
        return $l && $l =~ /^(\d+)$/ ? $1 : undef;
    });
    ok($port, "example " . ($i + 1) . ": mchost listens") or next;
    my %st = mc_stats($port);
    my $c = eval { CounterTest::Conn->new($st{counter_port}) };
    answer_is($c && $c->call(req_noop(opaque => 5)), resp(OP_NOOP, ST_OK, '', 5),
              "example " . ($i + 1) . ": the counter port (chosen by the kernel) answers");
    kill_pid($pid);
}
close $busy;
done_testing;
