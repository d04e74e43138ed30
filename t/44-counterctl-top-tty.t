#!/usr/bin/perl
# 44-counterctl-top-tty.t: `counterctl top` in a terminal, driven through
# tmux (on a socket of its own): it takes over the screen (the alternate
# screen, the report on it), quits on q with exit 0 and on ^C with 130,
# and either way leaves the terminal as it found it: the same stty
# settings, the normal screen back, the cursor shown, nothing of the
# report left behind; when the server goes away, it exits 74 with its
# error on the normal screen. Skipped when tmux is not installed.
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
my ($TMUX) = grep { -x } map { "$_/tmux" } split /:/, $ENV{PATH} // '';
plan skip_all => 'tmux not installed (apt-get install tmux)' unless $TMUX;

my $srv = start_throttle_host(config => { 'group.lic' => 'max:1' },
                              throttle => "node.capacity = 500\n"
                                        . "tenant.acme = reserved:50\n");
my $port = $srv->{counter_port};
my $holder = $srv->connect;
is($holder->call(req_wait_acquire('lic', 1, 0, 0, 0))->{status}, 0,
   'lic held');
my $dir = tempdir(CLEANUP => 1);
my $sock = "$dir/tmux.sock";
my $tmux_pid;

# Runs tmux on our socket; its output.
sub tmux {
    my @cmd = ($TMUX, '-S', $sock, @_);
    open my $fh, '-|', @cmd or die "tmux: $!";
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return $out;
}

# Starts top in a new session (window 120x40) from a shell that records
# the terminal settings before and after, and top's exit code.
sub start_top {
    my ($name) = @_;
    my $d = "$dir/$name";
    mkdir $d or die "$d: $!";
    my $script = "stty -a > '$d/before'; '$CTL' -p $port top --interval "
               . "200ms; echo \$? > '$d/rc.tmp'; stty -a > '$d/after'; "
               . "mv '$d/rc.tmp' '$d/rc'; exec sleep 60";
    my @new = ('new-session', '-d', '-s', $name, '-x', 120, '-y', 40,
               $script);
    if (!defined $tmux_pid) {
        system($TMUX, '-S', $sock, '-f', '/dev/null', @new) == 0
            or die "tmux new-session failed";
        ($tmux_pid) = tmux('display', '-p', '#{pid}') =~ /(\d+)/;
        track_pid($tmux_pid) if $tmux_pid;
    } else {
        tmux(@new);
    }
    return $d;
}

# The visible screen of a session.
sub screen { tmux('capture-pane', '-p', '-t', $_[0]) }

# Reads a whole file; undef when it is missing.
sub slurp {
    open my $fh, '<', $_[0] or return undef;
    local $/;
    return <$fh>;
}

for my $case (['quit', 'q', 0, 'q'], ['interrupt', 'C-c', 130, '^C']) {
    my ($name, $key, $want_rc, $what) = @$case;
    my $d = start_top($name);
    my $shown = wait_until(sub {
        my $s = screen($name);
        return $s =~ /^  lic +1 +1$/m && $s =~ /q quits/ ? $s : undef;
    });
    ok($shown, "$name: the report is on the screen") or diag(screen($name));
    like($shown // '', qr/^counterctl top  127\.0\.0\.1:$port  every 200ms/m,
         "$name: its header");
    like($shown // '', qr/^  acme +\d+ +50 +unlimited/m, "$name: the tenant");
    like($shown // '', qr/^leases about to expire, nearest first /m,
         "$name: the leases table");
    is(tmux('display', '-p', '-t', $name, '#{alternate_on}'), "1\n",
       "$name: on the alternate screen");
    tmux('send-keys', '-t', $name, $key);
    my $rc = wait_until(sub { slurp("$d/rc") });
    is($rc, "$want_rc\n", "$what: top exits $want_rc");
    is(slurp("$d/after"), slurp("$d/before"),
       "$what: the terminal settings are restored");
    is(tmux('display', '-p', '-t', $name, '#{alternate_on}'), "0\n",
       "$what: the normal screen is back");
    is(tmux('display', '-p', '-t', $name, '#{cursor_flag}'), "1\n",
       "$what: the cursor is shown");
    unlike(screen($name), qr/counterctl top|queues/,
           "$what: nothing of the report is left");
}

# The server goes away: top leaves the screen as it found it and its
# error is there to read, not lost with the alternate screen.
{
    my $d = start_top('lost');
    ok(wait_until(sub { screen('lost') =~ /q quits/ }), 'lost: top runs');
    $srv->stop;
    my $rc = wait_until(sub { slurp("$d/rc") });
    is($rc, "74\n", 'server gone: top exits 74');
    is(slurp("$d/after"), slurp("$d/before"),
       'server gone: the terminal settings are restored');
    like(screen('lost'), qr/^counterctl: .*(closed|reset|lost)/m,
         'server gone: the error is on the normal screen');
}

tmux('kill-server');
kill_pid($tmux_pid) if $tmux_pid && pid_alive($tmux_pid);
done_testing;
