#!/usr/bin/perl
# 16-readme.t: the README's "Try it" commands run as written: each line of
# the indented block after "Try it", of the one after the rate-limit
# paragraph ("The server also keeps rate limits") and of the one after
# the throttling paragraph ("The server also throttles tenants") is run
# (its _build/run/counterctl replaced by this build's counterctl, pointed
# at a test server) and must exit 0 and print what its comment says
# ("prints 1", "prints a, b, ...": each a line's key, or the whole line
# when it holds a space). The test server gets the groups
# scripts/setup-and-run.sh defines. Then the privileged example: the
# block after "Stop the server" (shell lines run as written, and the
# settings its setup-and-run.sh line gives in COUNTER_SETTINGS) starts a
# second server, and the block after "Then, from the other terminal" runs
# against it as the first blocks did.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Text::ParseWords qw(shellwords);
use Test::More;

my $CTL = $ENV{COUNTERCTL};
my $README = "$FindBin::Bin/../README.md";
plan skip_all => 'counterctl not built' unless $CTL && -x $CTL;
plan skip_all => 'mchost or counter.so not built' unless target_available;
plan skip_all => "no $README" unless -r $README;

# The lines of the first indented block after the first line that
# matches start.
sub readme_block {
    my ($start) = @_;
    open my $fh, '<', $README or die "$README: $!";
    my ($seen, @block);
    while (my $l = <$fh>) {
        chomp $l;
        if (!$seen) {
            $seen = $l =~ $start;
            next;
        }
        if ($l =~ /^ {4}(\S.*)$/) {
            push @block, $1;
        } elsif ($l =~ /\S/ || @block) {
            last if @block;
        }
    }
    return @block;
}

my @lines = readme_block(qr/^Try it/);
ok(@lines >= 3, 'README has a "Try it" block of commands') or diag("got: @lines");
my @limits = readme_block(qr/^The server also keeps rate limits/);
ok(@limits >= 3, 'README has a block of rate-limit commands')
    or diag("got: @limits");
my @throttle = readme_block(qr/^The server also throttles tenants/);
ok(@throttle >= 3, 'README has a block of throttling commands')
    or diag("got: @throttle");
# The reference server has no rate limits and no throttling.
push @lines, @limits, @throttle unless $ENV{CNT_TEST_REFERENCE};

# The counter.group.NAME=VALUE settings of scripts/setup-and-run.sh.
sub script_groups {
    my $script = "$FindBin::Bin/../scripts/setup-and-run.sh";
    open my $fh, '<', $script or die "$script: $!";
    my $text = do { local $/; <$fh> };
    return map { ("group.$1" => $2) }
        $text =~ /counter\.group\.([^=;"\s]+)=([^;"\s]+)/g;
}

my %groups = script_groups();
my $srv = start_target(config => { %groups });
my $port = $srv->{counter_port};
my $dir = tempdir(CLEANUP => 1);
chdir $dir or die "$dir: $!";    # what the commands do happens here

# Runs README counterctl lines against the server on port.
sub run_lines {
    my ($port, @lines) = @_;
    for my $line (@lines) {
        my ($cmd, $comment) = split /\s+#\s*/, $line, 2;
        my @argv = shellwords($cmd);
        unless (@argv && $argv[0] eq '_build/run/counterctl') {
            fail("README line is a counterctl command: $line");
            next;
        }
        if ($ENV{CNT_TEST_REFERENCE} && grep { $_ eq '-' } @argv) {
            SKIP: { skip "the reference has no groups: $cmd", 1 }
            next;
        }
        splice @argv, 0, 1, $CTL, '-p', $port;
        my ($rc, $out, $err) = run_bounded($dir, @argv);
        is($rc, 0, "README: `$cmd` exits 0") or diag($err);
        next unless defined $comment && $comment =~ /^prints\s+(.*)$/;
        my $what = $1;
        if ($what =~ /^(\S+?):/) {
            is($out, "$1\n", "README: `$cmd` prints $1");
        } else {
            my @names = grep { $_ ne '...' } split /,\s*/, $what;
            for my $name (@names) {
                my $re = $name =~ /\s/ ? qr/^\Q$name\E$/m : qr/^\Q$name\E /m;
                like($out, $re, "README: `$cmd` prints $name");
            }
        }
    }
}

run_lines($port, @lines);
$srv->stop;

# The privileged example, against a server started with the settings
# the README gives setup-and-run.sh.
my @setup = readme_block(qr/^Stop the server .*start it again with a secret/);
my @priv = readme_block(qr/^Then, from the other terminal/);
ok(@setup >= 2, 'README has a block that restarts the server with a secret')
    or diag("got: @setup");
ok(@priv >= 2, 'README has a block of privileged commands')
    or diag("got: @priv");
{
    my $script = "$FindBin::Bin/../scripts/setup-and-run.sh";
    open my $fh, '<', $script or die "$script: $!";
    my $text = do { local $/; <$fh> };
    like($text, qr/SETTINGS="\$SETTINGS;\$COUNTER_SETTINGS"/,
         'setup-and-run.sh appends COUNTER_SETTINGS to its settings');
    like($text, qr/-X "[^"]*,\$SETTINGS"/,
         'setup-and-run.sh gives mchost those settings');
}
SKIP: {
    skip 'the reference has no admin secret', 1 if $ENV{CNT_TEST_REFERENCE};
    my $settings;
    for my $line (@setup) {
        if ($line =~ m{^(.*?)\bsh scripts/setup-and-run\.sh$}) {
            # The environment the line gives the script, as the shell
            # expands it here.
            my ($rc, $out, $err) =
                run_bounded($dir, 'sh', '-c', "$1 printenv COUNTER_SETTINGS");
            is($rc, 0, "README: `$line` sets COUNTER_SETTINGS") or diag($err);
            chomp($settings = $out);
        } else {
            my ($rc, $out, $err) = run_bounded($dir, 'sh', '-c', $line);
            is($rc, 0, "README: `$line` exits 0") or diag($err);
        }
    }
    ok(defined $settings && $settings ne '',
       'README: the restart line gives COUNTER_SETTINGS');
    my %extra = map { /^([^=]+)=(.*)$/ ? ($1 => $2) : ($_ => '') }
        split /;/, $settings // '';
    my $srv2 = start_target(config => { %groups, %extra });
    run_lines($srv2->{counter_port}, @priv);
    $srv2->stop;
}

chdir '/';    # so that the temporary directory can be removed
done_testing;
