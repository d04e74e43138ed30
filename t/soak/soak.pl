#!/usr/bin/perl
# soak.pl: bounded soak with faults against mchost + counter.so on loopback.
# Hundreds of connections pipeline random Acquire/Release/Get/Dump/Stats/Noop
# on a few hundred counters, and wait_acquire (short waits, short leases,
# some on server-defined groups)/renew/wait_release/queues on a few dozen
# contended ones, and end abruptly (close, reset, half-close in the middle
# of a request, a client that stops reading), whatever their waits are
# doing: queued, granted, or with a grant on its way to them. Rate limits
# ride in the same pipelines: TTL counters (insert, query, update, purge),
# window and GCRA checks (some peeks, some costs that never fit) and
# multi-checks (now and then one naming an item twice) on a few names
# with fixed settings, and now and then a listing of the busiest names,
# cut off by the same abrupt ends. Checks:
# answers in order, none lost or doubled; events never inside a series and
# each as the connection's own view allows (a queued request gets one
# granted or timed-out event, nothing after its release, an expiry only
# after a grant with a lease, 0x27 only after the expiry event); lease ids
# never given twice; no double grant; at quiescent points (after the live
# connections released their waits) the server's Get equals what the live
# connections hold, nothing waits and no lease is left; at the end
# everything is 0, GC removes every counter, used_memory is back to its
# value before the run and RSS back near its baseline. Rate limits: each
# answer's status, size and fields as its opcode and settings allow (a
# multi-check's overall state agrees with its items'; a busiest listing
# names only the run's rate limits, busiest first, no more than asked);
# no window allowed
# more than its limit, no GCRA more than burst + 1 + elapsed * rate, in
# any interval the answers' times pin down; at the end every record
# expires and GC frees it (no objects of any kind), the figures per kind
# agree with what was sent and answered, and limits_used_memory is back
# to its value before the run. Tenant throttling rides along too (the host
# has an admin secret and a throttle settings file): charges for a few
# tenants (some on unthrottled connections), tenant and node views and
# streamed tenant lists; some connections authenticate and mix the
# privileged operations in (the others are refused them), a few send
# wrong secrets (three: the server closes the connection). Each answer as
# its opcode and the known limits allow (a charge its reserve covers is
# never throttled; a hard limit throttles only what would pass it and is
# never passed on a throttled connection); at the end, with the run-time
# settings undone and the settings file reloaded, only the configured
# tenants have records left, the node is the file's and idle, and the
# figures agree with what was sent and answered (every wrong secret
# counted, every third one closing its connection).
# Throttr traffic rides along on the Throttr port (value size 2): a few
# connections per round pipeline INSERT/QUERY/UPDATE/PURGE on their own
# short-lived names while the round's other traffic runs; some end with an
# unknown request type (the server answers what came before, then closes),
# some are cut in the middle of a request. Each answer has the size and
# values its request allows; at the end Stats' TTL figures count the
# Throttr requests too, the throttr_* figures lie between what was
# answered and what was sent, and every connection closed for bad framing
# is counted.
# WebSocket quota sessions ride along on the HTTP port: a child process
# keeps a few sessions busy while each round runs, requesting the two
# groups above (so they share the binary clients' queues) with short
# timeouts, with and without expiry, holding and releasing, and ends them
# abruptly (close without a close frame, reset, in the middle of a frame,
# in the middle of the upgrade; a few with a close handshake). Each
# message as the session's own view allows (a result "ok" per request, one
# quota_passed or quota_timeout after it, quota_expired only after a grant
# with an expiry, no double grant among the holders without one); at the
# end no session is left and the upgrades are those that were made.
#
# Usage: soak.pl [--duration S] [--conns N] [--counters N] [--seed N]
#                [--interval S] [--rss-slack MB]
# (MCHOST and COUNTER_SO from the environment; --interval is the server's
# consumption window, so GC runs every S seconds during the soak.)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use CounterTest;
use ThrottrTest;
use WsTest;
use Getopt::Long;
use IO::Select;
use Socket qw(SOL_SOCKET SO_LINGER SHUT_WR IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time sleep clock_gettime CLOCK_MONOTONIC);
use Errno qw(EAGAIN EWOULDBLOCK EINTR);
use POSIX qw(WNOHANG);

my %opt = (duration => 25, conns => 200, counters => 300, seed => time ^ $$,
           'rss-slack' => 32, interval => 2);
GetOptions(\%opt, 'duration=i', 'conns=i', 'counters=i', 'seed=i',
           'rss-slack=i', 'interval=i') or die "usage: see the header\n";
srand $opt{seed};
# CounterTest's watchdog (180 s) bounds ordinary tests; a soak runs for its
# duration, so its bound is that plus the same margin.
alarm($opt{duration} + 180);
$SIG{PIPE} = 'IGNORE';      # writes to connections the server dropped
$| = 1;
print "soak: seed $opt{seed}, $opt{duration} s, $opt{conns} connections, ",
      "$opt{counters} counters\n";
die "soak: MCHOST and COUNTER_SO must name the built host and extension\n"
    unless have_host();

# Every counter has its own fixed cap; Acquires use a maximum at or below it,
# so the sum of live acknowledged holdings may never exceed the cap.
my @names = map { sprintf 'soak-%04d', $_ } 0 .. $opt{counters} - 1;
my %cap = map { $_ => 1 + int rand 8 } @names;

# The waiting side: contended counters with small caps, and two groups
# (their settings are the server's; see the config below).
my @wnames = map { sprintf 'soakw-%02d', $_ } 0 .. 29;
my %group = ('soak-g0' => { max => 2, wait => 150, lease => 400 },
             'soak-g1' => { max => 1, wait => 100, lease => 0 });
push @wnames, sort keys %group;
$cap{$_} = 1 + int rand 3 for grep { !$group{$_} } @wnames;
$cap{$_} = $group{$_}{max} for keys %group;
my $max_waits = 6;
my %lease_seen;     # every lease id the server gave: never twice

my %fig = map { $_ => 0 } qw(requests answers acquired refused released
    ends_close ends_reset ends_half ends_stall ends_lost ends_auth quiescent
    mismatch_waits
    w_acquire w_granted w_queued w_busy w_refused w_ev_granted w_ev_timeout
    w_ev_expired w_renewed w_released w_cancelled w_raced w_expired_acks
    w_queues w_lease_lists w_end_queued w_end_granted l_requests l_ttl
    l_allowed l_limited l_never l_multi_allowed l_multi_denied l_multi_refused
    l_guaranteed l_busiest l_busy_records);
my $fail = 0;

our $server_pid;    # the host's pid, once it is up

sub failed {
    my ($msg) = @_;
    print "soak: FAIL: $msg\n";
    $fail++;
    host_check();
    die "soak: too many failures\n" if $fail > 20;
}

# A host that died makes every later step fail slowly (or spin on refused
# connects until the watchdog): stop at once, saying so.
sub host_check {
    return unless $server_pid && waitpid($server_pid, WNOHANG) == $server_pid;
    print "soak: FAIL: the host exited (wait status $?)\n";
    # What it said on its way out (a sanitizer's report, say).
    my $err = $main::srv ? $main::srv->stderr : '';
    print "soak: the host's stderr:\n$err" if length $err;
    die "soak: stopping\n";
}

# ---- tenant throttling: charges, views, privileges ----
our $srv;           # the host, started once the settings below exist
# The host starts with an admin secret and a throttle settings file. Three
# tenants are configured by the file and never changed (their limits are
# known, so each answer about them can be judged); two are set and removed
# at run time by privileged connections, within reserves that always fit
# the capacity; the rest are never configured (the file's default hard
# limit). Some connections authenticate first and then mix privileged
# operations in (an unthrottled connection never charges the tenant with a
# hard limit, so its usage stays under it); a few send wrong secrets, one
# or two (the connection lives on, unprivileged) or three (the server
# answers and closes it).
my $secret = sprintf 'soak-%08x-%08x', int rand 2**32, int rand 2**32;
my %tfixed = ('soakt-00' => { reserved => 20, hard => 40 },
              'soakt-01' => { reserved => 30, hard => UNLIMITED },
              'soakt-02' => { reserved => 0, hard => 15 });
my @tchurn = ('soakt-10', 'soakt-11');
my @tfree = map { "soakt-2$_" } 0 .. 3;
my @tnames = (sort(keys %tfixed), @tchurn, @tfree);
my ($tcap0, $tdefault_hard, $tchurn_max) = (200, 60, 10);
my $tfixed_sum = 0;
$tfixed_sum += $_->{reserved} for values %tfixed;
my $throttle_text = "# soak.pl's throttle settings\nnode.capacity = $tcap0\n"
    . "default.hard_limit = $tdefault_hard\n"
    . join('', map {
          my $h = $tfixed{$_}{hard};
          "tenant.$_ = reserved:$tfixed{$_}{reserved},hard_limit:"
          . ($h == UNLIMITED ? 'unlimited' : $h) . "\n"
      } sort keys %tfixed);
my %tfig = map { $_ => 0 } qw(sent answered allowed throttled units
    unthr_units unthr_sent bad_auth auth_closed admins priv_ok priv_refused
    views lists list_records reason_1 reason_2 reason_3);

# The limits a tenant is judged with when they are known: the file's for
# the fixed ones, the defaults for those never configured.
sub tenant_limits {
    my ($name) = @_;
    return @{ $tfixed{$name} }{qw(reserved hard)} if $tfixed{$name};
    return (0, $tdefault_hard) if grep { $_ eq $name } @tfree;
    return;
}

# A wrong secret: the right one cut short, made longer, or one byte off.
sub wrong_secret {
    my $r = rand;
    return substr($secret, 0, 1 + int rand(length($secret) - 1)) if $r < 0.3;
    return $secret . 'x' if $r < 0.5;
    my $w = $secret;
    substr($w, int rand length $w, 1) = '#';
    return $w;
}

# An authentication request (right or wrong secret) for c's first batch.
sub auth_request {
    my ($c, $right) = @_;
    my $opq = ++$c->{seq};
    my $s = $right ? $secret : wrong_secret();
    $tfig{bad_auth}++ unless $right;
    return { op => OP_AUTH, opaque => $opq, right => $right, name => '',
             bytes => req_auth($s, opaque => $opq) };
}

# A throttling request: charges (some of 0 units, refused), tenant and
# node views, a streamed tenant list, and the privileged operations.
sub random_throttle_request {
    my ($c, $opq) = @_;
    my $name = $tnames[int rand @tnames];
    my %p = (opaque => $opq, name => $name);
    my $r = rand;
    if ($r < 0.55) {
        # An unthrottled connection leaves the hard-limited tenant alone.
        $name = $p{name} = 'soakt-01' if $c->{unthr} && $name eq 'soakt-00';
        my $units = rand() < 0.02 ? 0 : 1 + int rand 4;
        @p{qw(op units unthr)} = (OP_THROTTLE, $units, $c->{unthr});
        $p{bytes} = req_throttle($name, $units, opaque => $opq);
        $tfig{sent}++;
        $tfig{unthr_sent} += $units if $c->{unthr};
    } elsif ($r < 0.72) {
        $p{op} = OP_TENANT_SHOW;
        $p{bytes} = req_tenant_show($name, opaque => $opq);
    } elsif ($r < 0.80) {
        $p{op} = OP_NODE_SHOW;
        $p{bytes} = req_node_show(opaque => $opq);
    } elsif ($r < 0.84) {
        $p{op} = OP_TENANT_LIST;
        $p{bytes} = req_tenant_list(opaque => $opq);
    } else {
        # Privileged: each answers 0x2A unless the connection authenticated
        # (its auth came first in its pipeline), else as noted.
        my $q = rand;
        my $churn = $tchurn[int rand @tchurn];
        $p{priv} = 1;
        $p{name} = $churn;
        if ($q < 0.30) {
            # The reserve, the hard limit or both; every hard limit set is
            # at least any reserve, so each is valid.
            my $res = int rand($tchurn_max + 1);
            my $hard = rand() < 0.2 ? UNLIMITED
                                    : $tchurn_max + int rand 20;
            my $w = rand;
            $res = undef if $w < 0.25;
            $hard = undef if $w >= 0.25 && $w < 0.5;
            @p{qw(op want)} = (OP_TENANT_SET, [ST_OK]);
            $p{bytes} = req_tenant_set($churn, $res, $hard, opaque => $opq);
            if (rand() < 0.3) {
                # The same settings as a JSON document.
                my @f;
                push @f, qq("reserved": $res) if defined $res;
                push @f, '"hard_limit": ' . ($hard == UNLIMITED
                                             ? '"unlimited"' : $hard)
                    if defined $hard;
                @p{qw(op json)} = (OP_TENANT_SET_JSON, 1);
                $p{bytes} = req_tenant_set_json($churn, '{' . join(', ', @f)
                                                . '}', opaque => $opq);
            }
        } elsif ($q < 0.38) {
            # A hard limit below the reserve: invalid.
            @p{qw(op want)} = (OP_TENANT_SET, [ST_INVALID]);
            $p{bytes} = req_tenant_set($churn, 5, 4, opaque => $opq);
            if (rand() < 0.3) {
                @p{qw(op json)} = (OP_TENANT_SET_JSON, 1);
                $p{bytes} = req_tenant_set_json(
                    $churn, rand() < 0.5 ? '{"reserved": 5, "hard_limit": 4}'
                                         : '{"reserved": "5"', opaque => $opq);
            }
        } elsif ($q < 0.46) {
            # A reserve no capacity can hold.
            @p{qw(op want)} = (OP_TENANT_SET, [ST_OVER_CAPACITY]);
            $p{bytes} = req_tenant_set($churn, 0xfffffff0, UNLIMITED,
                                       opaque => $opq);
        } elsif ($q < 0.62) {
            @p{qw(op want)} = (OP_TENANT_REMOVE, [ST_OK, ST_NOT_FOUND]);
            $p{bytes} = req_tenant_remove($churn, opaque => $opq);
        } elsif ($q < 0.74) {
            # Room for every reserve, or too little for the fixed ones.
            my $small = rand() < 0.3;
            my $cap = $small ? 1 : 100 + int rand 200;
            @p{qw(op want)} = (OP_NODE_SET,
                               [$small ? ST_OVER_CAPACITY : ST_OK]);
            $p{bytes} = req_node_set($cap, opaque => $opq);
            if (rand() < 0.3) {
                @p{qw(op json)} = (OP_NODE_SET_JSON, 1);
                $p{bytes} = req_node_set_json(qq({"capacity": $cap}),
                                              opaque => $opq);
            }
        } elsif ($q < 0.86) {
            @p{qw(op want)} = (OP_RELOAD, [ST_OK]);
            $p{bytes} = req_reload(opaque => $opq);
        } else {
            @p{qw(op want)} = (OP_UNTHROTTLE, [ST_OK]);
            $p{bytes} = req_unthrottle(opaque => $opq);
            # Requests after it in the pipeline run unthrottled.
            $c->{unthr} = 1 if $c->{admin};
        }
        $p{want} = [ST_NOT_PERMITTED] unless $c->{admin};
    }
    return \%p;
}

# Checks a tenant view (a tenant_show answer or a listed record's view):
# zero padding, known flags, and the known limits of a fixed or never
# configured tenant; a throttled connection never took the hard-limited
# tenant past its limit, and nobody else charges it.
sub check_tenant_view {
    my ($what, $name, $v) = @_;
    if (!$v) {
        failed("$what: not a tenant view");
        return;
    }
    failed("$what: pad " . hexdump($v->{pad}) . ", flags $v->{flags}")
        if $v->{pad} ne "\0\0\0" || $v->{flags} > 1;
    failed("$what: used $v->{used} > units $v->{units}")
        if $v->{used} > $v->{units};
    my ($res, $hard) = tenant_limits($name);
    return unless defined $res;
    my $conf = $tfixed{$name} ? 1 : 0;
    failed("$what: reserved $v->{reserved} hard $v->{hard_limit} flags "
           . "$v->{flags}, not $res $hard $conf")
        if $v->{reserved} != $res || $v->{hard_limit} != $hard
           || $v->{flags} != $conf;
    failed("$what: used $v->{used} past the hard limit $hard")
        if $name eq 'soakt-00' && $v->{used} > $hard;
}

# Checks a throttling answer against what its request and the known
# limits allow.
sub check_throttle_answer {
    my ($c, $q, $st, $body) = @_;
    my $what = sprintf 'conn %d: op %02x on %s', $c->{id}, $q->{op},
                       $q->{name};
    my $op = $q->{op};
    if ($op == OP_AUTH) {
        my $want = $q->{right} ? ST_OK : ST_AUTH_FAILED;
        failed("$what: auth answered $st, not $want") if $st != $want;
        $tfig{admins}++ if $q->{right} && $st == ST_OK;
        if (!$q->{right} && ++$c->{auth_failed} >= AUTH_MAX_FAILURES) {
            # The server closes the connection after this answer.
            $c->{auth_closing} = 1;
            $tfig{auth_closed}++;
        }
        return;
    }
    if ($q->{priv}) {
        failed("$what answered $st, not " . join('/', @{ $q->{want} }))
            unless grep { $_ == $st } @{ $q->{want} };
        # The JSON commands answer what they applied, as a JSON object.
        failed("$what: OK with a body")
            if $st == ST_OK && length $body && !$q->{json};
        failed("$what: OK without the applied document")
            if $st == ST_OK && $q->{json} && $body !~ /^\{"[a-z_]+":.*\}$/;
        $tfig{ $st == ST_OK ? 'priv_ok' : 'priv_refused' }++;
        return;
    }
    if ($op == OP_NODE_SHOW) {
        my $v = $st == ST_OK && length $body == NODE_VIEW_SIZE
              ? parse_node_view({ magic => 0x91, status => $st,
                                  body => $body }) : undef;
        if (!$v) {
            failed("$what answered $st with " . length($body) . ' bytes');
            return;
        }
        my $ok = $v->{capacity} >= 100 && $v->{capacity} < 300
                 && $v->{pool} + $v->{reserved_sum} == $v->{capacity}
                 && $v->{reserved_sum} >= $tfixed_sum
                 && $v->{reserved_sum} <= $tfixed_sum + $tchurn_max * @tchurn
                 && $v->{tenants} >= keys(%tfixed)
                 && $v->{tenants} <= keys(%tfixed) + @tchurn;
        failed("$what: " . join ' ', map { "$_ $v->{$_}" } sort keys %$v)
            unless $ok;
        $tfig{views}++;
        return;
    }
    if ($op == OP_TENANT_SHOW) {
        check_tenant_view($what, $q->{name}, parse_tenant_view(
            { magic => 0x91, status => $st, body => $body }));
        $tfig{views}++;
        return;
    }
    # A charge.
    if ($q->{units} == 0) {
        failed("$what: 0 units answered $st, not 0x04") if $st != ST_INVALID;
        return;
    }
    my $a = parse_throttle_answer({ magic => 0x91, status => $st,
                                    body => $body });
    if (!$a) {
        failed("$what answered $st with " . length($body) . ' bytes');
        return;
    }
    $tfig{answered}++;
    my ($s, $why, $used, $u) = (@$a{qw(state reason used)}, $q->{units});
    failed("$what: state $s reason $why retry $a->{retry_after_ns} pads "
           . hexdump($a->{pad} . $a->{pad2}))
        if $a->{pad} ne "\0\0" || $a->{pad2} ne "\0" x 4 || $s > 1
           || ($s == 0 && ($why != 0 || $a->{retry_after_ns} != 0))
           || ($s == 1 && ($why < 1 || $why > 3
                           || $a->{retry_after_ns} < 1
                           || $a->{retry_after_ns} > 1_000_000_000));
    failed("$what: an unthrottled connection throttled") if $q->{unthr} && $s;
    if ($s == 0) {
        $tfig{allowed}++;
        $tfig{units} += $u;
        $tfig{unthr_units} += $u if $q->{unthr};
    } else {
        $tfig{throttled}++;
        $tfig{"reason_$why"}++;
    }
    my ($res, $hard) = tenant_limits($q->{name});
    return unless defined $res;
    # A charge its reserve covers is never throttled for want of room; a
    # hard limit throttles only what would pass it, and what it allows
    # stays at or under it.
    failed("$what: $u units throttled (reason $why) with $used of the "
           . "reserve $res used")
        if $s == 1 && $why != 3 && $used + $u <= $res;
    if ($hard != UNLIMITED) {
        failed("$what: throttled for the hard limit $hard at $used + $u")
            if $s == 1 && $why == 3 && $used + $u <= $hard;
        failed("$what: allowed to $used past the hard limit $hard")
            if $s == 0 && !$q->{unthr} && $used > $hard;
        failed("$what: remaining $a->{remaining} past the hard limit $hard "
               . "at $used") if $used <= $hard
               && $a->{remaining} > $hard - $used;
    } elsif ($s == 1 && $why == 3) {
        failed("$what: throttled for a hard limit it does not have");
    }
}

# Checks one record of a tenant list; at its end, every fixed tenant was
# listed once.
sub check_tenant_record {
    my ($c, $body) = @_;
    my $v = parse_tenant_record({ magic => 0x91, status => 0,
                                  body => $body });
    my $name = $v ? $v->{name} : '?';
    failed("conn $c->{id}: tenant list record " . hexdump($body))
        unless $v && grep { $_ eq $name } @tnames;
    check_tenant_view("conn $c->{id}: listed $name", $name, $v) if $v;
    $c->{tlisted}{$name}++;
    $tfig{list_records}++;
}

sub check_tenant_list_end {
    my ($c) = @_;
    for my $n (sort keys %tfixed) {
        my $k = $c->{tlisted}{$n} // 0;
        failed("conn $c->{id}: tenant list showed $n $k times") if $k != 1;
    }
    delete $c->{tlisted};
    $tfig{lists}++;
}

# At the end: the run-time tenants removed and the settings reloaded, the
# records of tenants not configured (idle now) swept within a second or
# two, so the list holds the fixed tenants alone; the node back to the
# file's settings with no usage; the figures against what was sent and
# answered; every wrong secret counted and every third one closing.
sub check_throttle_end {
    my $chk = $srv->connect;
    my $r = $chk->call(req_auth($secret));
    failed("final auth answered $r->{status}") if !$r || $r->{status};
    for my $n (@tchurn) {
        $r = $chk->call(req_tenant_remove($n));
        failed("final tenant_remove $n answered $r->{status}")
            if !$r || ($r->{status} != ST_OK && $r->{status} != ST_NOT_FOUND);
    }
    $r = $chk->call(req_reload());
    failed("final reload answered $r->{status}") if !$r || $r->{status};
    my (@listed, $node);
    wait_until(sub {
        $chk->send(req_tenant_list(opaque => 7));
        @listed = ();
        while (my $a = $chk->response) {
            last unless length $a->{body};
            my $v = parse_tenant_record($a);
            push @listed, $v ? $v->{name} : '?';
        }
        $node = parse_node_view($chk->call(req_node_show()));
        return join(' ', sort @listed) eq join(' ', sort keys %tfixed)
               && $node && $node->{used} == 0;
    }, 10) or failed("tenant records after the run: @listed; node used "
                     . ($node ? $node->{used} : '?'));
    my %st = map { @$_ } $chk->stats_pairs;
    $chk->close;
    my $want_node = "capacity $tcap0 pool " . ($tcap0 - $tfixed_sum)
                    . " reserved_sum $tfixed_sum tenants " . keys(%tfixed);
    my $got_node = $node ? "capacity $node->{capacity} pool $node->{pool} "
                           . "reserved_sum $node->{reserved_sum} tenants "
                           . "$node->{tenants}" : '?';
    failed("node at the end: $got_node, not $want_node")
        if $got_node ne $want_node;
    my %f = map { $_ => $st{"throttle_$_"} // -1 } qw(capacity used tenants
        checks allowed throttled units unthrottled_units);
    my $what = 'Stats ' . join ' ', map { "throttle_$_ $f{$_}" } sort keys %f;
    failed("$what: the node is not the file's, idle")
        if $f{capacity} != $tcap0 || $f{used} != 0
           || $f{tenants} != keys %tfixed;
    failed("$what: checks not between $tfig{answered} answered and "
           . "$tfig{sent} sent")
        if $f{checks} < $tfig{answered} || $f{checks} > $tfig{sent};
    failed("$what: fewer than the $tfig{allowed} allowed ($tfig{units} "
           . "units, $tfig{unthr_units} unthrottled), $tfig{throttled} "
           . "throttled seen")
        if $f{allowed} < $tfig{allowed} || $f{throttled} < $tfig{throttled}
           || $f{units} < $tfig{units}
           || $f{unthrottled_units} < $tfig{unthr_units};
    failed("$what: allowed + throttled > checks, or more unthrottled units "
           . "than the $tfig{unthr_sent} sent")
        if $f{allowed} + $f{throttled} > $f{checks}
           || $f{unthrottled_units} > $tfig{unthr_sent}
           || $f{unthrottled_units} > $f{units};
    failed("node throttled $node->{throttled}, Stats $f{throttled}")
        if $node && $node->{throttled} != $f{throttled};
    failed("Stats auth_failures " . ($st{auth_failures} // '?')
           . ", auth_closes " . ($st{auth_closes} // '?') . "; "
           . "$tfig{bad_auth} wrong secrets sent, $tfig{auth_closed} "
           . "connections closed after three")
        if ($st{auth_failures} // -1) != $tfig{bad_auth}
           || ($st{auth_closes} // -1) != $tfig{auth_closed};
    return %st;
}

# The limits on failed authentications are off: every wrong secret here
# must be judged (0x2B) for the figures to add up; t/33 tests the limits.
$srv = start_throttle_host(
    secret => $secret, throttle => $throttle_text, config => {
    auth_fail_limit => 0, auth_fail_limit_per_address => 0,
    'consumption_stats.interval' => $opt{interval}, threads => 2,
    'throttr.port' => free_port(), 'throttr.value_size' => 2,
    'http.port' => free_port(),
    buckets => 4096, max_waits => $max_waits,
    map { ("group.$_" => "max:$group{$_}{max},wait:$group{$_}{wait}ms,"
                         . "lease:$group{$_}{lease}ms") } keys %group });
my $pid = $srv->{pid};
$server_pid = $pid;
my $port = $srv->{counter_port} or die "soak: no counter_port in stats\n";

# The server's figures through the Stats opcode, as a hash.
sub server_stats {
    my $chk = $srv->connect;
    my %st = map { @$_ } $chk->stats_pairs;
    $chk->close;
    return %st;
}
# Memory the table accounts for before any counter exists: the end of the
# run must come back to exactly this.
my %st0 = server_stats();
my $used0 = $st0{used_memory} // die "soak: no used_memory in Stats\n";
my $lused0 = $st0{limits_used_memory}
    // die "soak: no limits_used_memory in Stats\n";

# Resident set of the server, in KiB.
sub rss_kib {
    open my $fh, '<', "/proc/$pid/status" or return 0;
    while (<$fh>) { return $1 if /^VmRSS:\s+(\d+)/ }
    return 0;
}

# CPU seconds the server has used.
sub cpu_seconds {
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my @f = split ' ', (split /\)/, scalar <$fh>)[-1];
    return ($f[11] + $f[12]) / 100;
}

# ---- one client connection: a pipelined request stream and its model ----
my %conns;          # fileno => conn
my $next_id = 0;

# Opens a non-blocking connection.
sub conn_open {
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Blocking => 1) or return;
    setsockopt $s, IPPROTO_TCP, TCP_NODELAY, 1;
    $s->blocking(0);
    my $c = { sock => $s, fd => fileno $s, id => $next_id++, seq => 0, out => '', in => '',
              pending => [], held => {}, batches => 3 + int rand 40,
              fate => pick_fate(), w => {}, wop => {}, ended => {},
              releasing => {}, renewing => {} };
    # Its part in the throttling: authenticated first, one or two wrong
    # secrets first (then it ends calmly, so every attempt is answered),
    # three wrong secrets and nothing after (the server closes it).
    my $r = rand;
    if ($r < 0.15) {
        $c->{admin} = 1;
    } elsif ($r < 0.20) {
        @$c{qw(fumbler fate)} = (1 + int rand 2, 'close');
    } elsif ($r < 0.22) {
        @$c{qw(locked fate batches)} = (1, 'close', 1);
    }
    $conns{$c->{fd}} = $c;
    return $c;
}

# Chooses how a connection will end.
sub pick_fate {
    my $r = rand;
    return $r < 0.40 ? 'close' : $r < 0.60 ? 'reset'
         : $r < 0.75 ? 'half' : $r < 0.85 ? 'stall' : 'lost';
}

# ---- waiting acquisition: requests and each connection's view ----

# (req_wait_acquire, req_renew and req_wait_release are CounterTest's.)

# A wait_acquire request, renew, wait_release or queue listing. A
# connection's view of its requests ($c->{w}{name}: queued, granted or
# expired) changes only as its answers and events arrive, in the order the
# server wrote them, so every answer can be judged against it exactly.
sub random_wait_request {
    my ($c, $opq) = @_;
    my @mine = keys %{ $c->{w} };
    my $name = @mine && rand() < 0.5 ? $mine[int rand @mine]
                                   : $wnames[int rand @wnames];
    my $g = $group{$name};
    my %p = (opaque => $opq, name => $name);
    my $r = rand;
    if ($r < 0.55) {
        my $res = 1 + int rand $cap{$name};
        my $max = $g && rand() < 0.5 ? 0 : $cap{$name};
        my $wait = rand() < 0.2 ? 0 : 20 + int rand 300;
        my $lease = rand() < 0.4 ? 0 : 100 + int rand 600;
        $wait = GROUP_DEFAULT if $g && rand() < 0.5;
        $lease = GROUP_DEFAULT if $g && rand() < 0.5;
        $max = 0 if !$g && rand() < 0.02;         # no such group: 0x25
        $res = $cap{$name} + 1 if rand() < 0.02;  # never fits: 0x23
        @p{qw(op res max wait lease)} = (OP_WAIT_ACQUIRE, $res, $max, $wait,
                                         $lease);
        $p{bytes} = req_wait_acquire($name, $res, $max, $wait, $lease,
                                     opaque => $opq);
        $fig{w_acquire}++;
    } elsif ($r < 0.72) {
        my $lease = $g && $g->{lease} && rand() < 0.3 ? GROUP_DEFAULT
                                                    : 100 + int rand 500;
        @p{qw(op lease)} = (OP_RENEW, $lease);
        $p{bytes} = req_renew($name, $lease, opaque => $opq);
        # A renew may shorten the lease: from now on the grant is surely
        # held only until this renew's lease runs out, counted from now.
        $lease = $g->{lease} if $lease == GROUP_DEFAULT;
        push @{ $c->{renewing}{$name} }, time + $lease / 1000;
    } elsif ($r < 0.96) {
        $p{op} = OP_WAIT_RELEASE;
        $p{bytes} = req_wait_release($name, opaque => $opq);
        # Until its answer, no grant on the name counts as surely held
        # (nor one that an earlier request in the pipeline gets).
        $c->{releasing}{$name}++;
    } elsif ($r < 0.98) {
        $p{op} = OP_QUEUES;
        $p{bytes} = req(OP_QUEUES, '', opaque => $opq);
    } else {
        # The leases of every worker, surveyed while they come and go.
        $p{op} = OP_LEASE_LIST;
        $p{bytes} = req_lease_list(1 + int rand 70, opaque => $opq);
    }
    $p{sent} = time;
    return \%p;
}

# The settings a wait_acquire or renew resolves to (a group's maximum
# always wins; its wait and lease fill in GROUP_DEFAULT).
sub effective {
    my ($q) = @_;
    my $g = $group{ $q->{name} } or return @$q{qw(max wait lease)};
    return ($g->{max}, map { $q->{$_} == GROUP_DEFAULT ? $g->{$_} : $q->{$_} }
                           qw(wait lease));
}

# What live connections surely hold on a wait counter: acknowledged grants
# not being released whose lease (if any) cannot have run out yet (the
# server's lease started after the request was sent).
sub wait_floor {
    my ($name) = @_;
    my $sum = 0;
    for my $c (values %conns) {
        next if $c->{half_closed};
        my $t = $c->{w}{$name} or next;
        next if $t->{state} ne 'granted' || $c->{releasing}{$name};
        next if $t->{lease} && time > $t->{sure_until};
        next if grep { time > $_ } @{ $c->{renewing}{$name} // [] };
        $sum += $t->{res};
    }
    return $sum;
}

# A grant was seen: its lease id is new and nobody holds more than the cap.
sub check_grant {
    my ($c, $t, $id, $consumption) = @_;
    failed("conn $c->{id}: $t->{name} granted with lease id 0") unless $id;
    failed("conn $c->{id}: lease id $id given twice") if $lease_seen{$id}++;
    failed("conn $c->{id}: $t->{name} granted at consumption $consumption "
           . "> cap $cap{$t->{name}}") if $consumption > $cap{ $t->{name} };
    my $floor = wait_floor($t->{name});
    failed("double grant on $t->{name}: live holders have at least $floor "
           . "> cap $cap{$t->{name}}") if $floor > $cap{ $t->{name} };
}

# Forgets request t of connection c (it ended): no event may follow.
sub wait_forget {
    my ($c, $t) = @_;
    delete $c->{w}{ $t->{name} };
    delete $c->{wop}{ $t->{opq} };
    $c->{ended}{ $t->{opq} } = 1;
}

# Checks a waiting request's answer against the connection's view.
sub check_wait_answer {
    my ($c, $q, $st, $body) = @_;
    my $name = $q->{name};
    my $t = $c->{w}{$name};
    my $what = sprintf 'conn %d: op %02x on %s', $c->{id}, $q->{op}, $name;
    if ($q->{op} == OP_WAIT_ACQUIRE) {
        my ($max, $wait, $lease) = effective($q);
        my $want;
        if ($max == 0) { $want = ST_UNKNOWN_GROUP }
        elsif ($q->{res} > $max) { $want = ST_EXCEEDS_MAXIMUM }
        elsif ($t && $t->{state} ne 'expired') { $want = ST_ALREADY_ACTIVE }
        if (!defined $want && $t) {
            wait_forget($c, $t);            # asking again acknowledges it
            $fig{w_expired_acks}++;
        }
        $want //= ST_TOO_MANY_WAITS if keys %{ $c->{w} } >= $max_waits;
        if (defined $want) {
            failed("$what answered $st, not $want") if $st != $want;
            $fig{w_refused}++;
            return;
        }
        if ($st == ST_NOT_AVAILABLE) {
            failed("$what with wait $wait refused busy") if $wait;
            $fig{w_busy}++;
            return;
        }
        if ($st != ST_OK || length $body != 20) {
            failed("$what answered $st (body " . length($body) . ')');
            return;
        }
        my ($state, $pos, $id, $cons) = unpack 'C x3 N Q> N', $body;
        $t = { name => $name, opq => $q->{opaque}, res => $q->{res},
               lease => $lease, sure_until => $q->{sent} + $lease / 1000 };
        $c->{w}{$name} = $t;
        $c->{wop}{ $q->{opaque} } = $t;
        if ($state == 0) {
            $t->{state} = 'granted';
            $t->{id} = $id;
            failed("$what granted at position $pos") if $pos;
            check_grant($c, $t, $id, $cons);
            $fig{w_granted}++;
        } elsif ($state == 1) {
            $t->{state} = 'queued';
            failed("$what queued at position $pos with lease id $id")
                if $pos < 1 || $id;
            $fig{w_queued}++;
        } else {
            failed("$what answered state $state");
        }
    } elsif ($q->{op} == OP_RENEW) {
        my $lease = $q->{lease} == GROUP_DEFAULT ? $group{$name}{lease}
                                             : $q->{lease};
        my $until = shift @{ $c->{renewing}{$name} };
        delete $c->{renewing}{$name} unless @{ $c->{renewing}{$name} };
        my $want = !$t ? ST_NOT_ACQUIRED
                 : $t->{state} eq 'expired' ? ST_LEASE_EXPIRED
                 : $t->{state} eq 'queued' ? ST_NOT_ACQUIRED : ST_OK;
        failed("$what answered $st, not $want") if $st != $want;
        if ($want == ST_OK && $st == ST_OK) {
            my $id = length $body == 8 ? unpack('Q>', $body) : -1;
            failed("$what renewed lease id $id, not $t->{id}")
                if $id != $t->{id};
            $t->{lease} = $lease;
            $t->{sure_until} = $until;
            $fig{w_renewed}++;
        }
        if ($want == ST_LEASE_EXPIRED) {
            wait_forget($c, $t);
            $fig{w_expired_acks}++;
        }
    } elsif ($q->{op} == OP_WAIT_RELEASE) {
        delete $c->{releasing}{$name} unless --$c->{releasing}{$name};
        if (!$t) {
            failed("$what answered $st, not 0x22") if $st != ST_NOT_ACQUIRED;
            return;
        }
        if ($t->{state} eq 'expired') {
            failed("$what answered $st, not 0x27") if $st != ST_LEASE_EXPIRED;
            $fig{w_expired_acks}++;
        } elsif ($st != ST_OK || length $body != 4) {
            failed("$what answered $st");
        } else {
            # A queued request is cancelled (0), or its grant on the way
            # is returned (its resources; no granted event may follow).
            my $n = unpack 'N', $body;
            my $ok = $n == $t->{res} || ($n == 0 && $t->{state} eq 'queued');
            failed("$what ($t->{state}) returned $n") unless $ok;
            $fig{ $n ? ($t->{state} eq 'queued' ? 'w_raced' : 'w_released')
                     : 'w_cancelled' }++;
        }
        wait_forget($c, $t);
    }
}

# Checks a Queues record: a counter with waiters, under its cap.
sub check_queues_record {
    my ($c, $body) = @_;
    my ($cons, $len, $nl) = unpack 'NNn', $body;
    my $name = substr $body, 10, $nl // 0;
    failed("conn $c->{id}: Queues listed $name with $len waiters")
        unless $len >= 1 && exists $cap{$name};
    failed("conn $c->{id}: Queues shows $name at $cons > cap $cap{$name}")
        if exists $cap{$name} && $cons > $cap{$name};
}

# Checks a Lease_list record: a soak name with a lease of at most the
# longest the soak asks for (a group's included), with an id.
sub check_lease_record {
    my ($c, $body) = @_;
    my $rec = parse_lease_record({ body => $body });
    if (!$rec) {
        failed("conn $c->{id}: malformed Lease_list record");
        return;
    }
    failed("conn $c->{id}: Lease_list listed $rec->{name}, no soak name")
        unless exists $cap{$rec->{name}};
    failed("conn $c->{id}: Lease_list shows $rec->{name} with lease id 0 or"
           . " $rec->{left_ms} ms left")
        unless $rec->{lease_id} > 0 && $rec->{left_ms} <= 3_600_000;
}

# Checks an event (magic 0x92) against the connection's view.
sub check_event {
    my ($c, $a) = @_;
    my $code = $a->{opcode};
    my $what = "conn $c->{id}: event $code for opaque $a->{opaque}";
    failed("$what inside a series") if $c->{in_series};
    if (length $a->{body} < 14) {
        failed("$what: short body");
        return;
    }
    my ($id, $value, $nl) = unpack 'Q> N n', $a->{body};
    my $t = $c->{wop}{ $a->{opaque} };
    if (!$t) {
        failed($c->{ended}{ $a->{opaque} } ? "$what after its request ended"
                                            : "$what for no request");
        return;
    }
    failed("$what names " . substr($a->{body}, 14) . ", not $t->{name}")
        if substr($a->{body}, 14) ne $t->{name};
    if ($code == EV_GRANTED && $t->{state} eq 'queued') {
        $t->{state} = 'granted';
        $t->{id} = $id;
        check_grant($c, $t, $id, $value);
        $fig{w_ev_granted}++;
    } elsif ($code == EV_TIMED_OUT && $t->{state} eq 'queued') {
        failed("$what: lease id $id, value $value") if $id || $value;
        wait_forget($c, $t);
        $fig{w_ev_timeout}++;
    } elsif ($code == EV_LEASE_EXPIRED && $t->{state} eq 'granted' && $t->{lease}) {
        failed("$what: lease id $id value $value, not $t->{id} $t->{res}")
            if $id != $t->{id} || $value != $t->{res};
        $t->{state} = 'expired';
        $fig{w_ev_expired}++;
    } else {
        failed("$what while $t->{state}");
    }
}

# ---- rate limits: TTL counters, windows, GCRA, multi-checks ----
# A few names, each a TTL counter, a window and a GCRA limit at once (three
# separate objects). Each name's window and GCRA settings are fixed, so the
# guarantees can be checked from the answers alone: the server judges a
# call at some time between its sending and its answer (both read from the
# monotonic clock here, as the server's), so every allowed call whose span
# lies within an interval lies within it on the server too.
my @lnames = map { sprintf 'soakl-%02d', $_ } 0 .. 15;
my %lim;
for my $n (@lnames) {
    my $w = (200_000_000, 500_000_000, 1_000_000_000)[int rand 3];
    $lim{$n} = {
        limit => 3 + int rand 10, window_ns => $w,
        slots => (0, 5, 20)[int rand 3],
        burst => int rand 6, count => 1 + int rand 20,
        period_ns => (100_000_000, 1_000_000_000)[int rand 2],
        unit => rand() < 0.7 ? UNIT_MS : UNIT_US,
    };
}
my %lallowed;       # "w name" / "g name" => [[sent, answered, cost], ...]
# What the Throttr traffic sent and saw (see throttr_send).
my %thrfig = map { $_ => 0 } qw(sent answered ok framing cut);
my %thrsent = map { $_ => 0 } qw(insert query update purge);
my %lsent = map { $_ => 0 } qw(ttl ttl_purge window gcra window_items
                               gcra_items);
my %lseen = map { $_ => 0 } qw(ttl window gcra window_allowed window_limited
    gcra_allowed gcra_limited ttl_ok ttl_refused ttl_insert_ok ttl_purge);

# Seconds on the monotonic clock, the one the server judges by.
sub mono { clock_gettime(CLOCK_MONOTONIC) }

# One window or GCRA item of a check: its kind, name and cost.
sub random_check_item {
    my ($kind, $name) = @_;
    my $s = $lim{$name};
    my $r = rand;
    my $cost = $r < 0.8 ? 1 : $r < 0.97 ? 2 + int rand 2
             : ($kind eq 'w' ? $s->{limit} : $s->{burst} + 1) + 1;
    return { kind => $kind, name => $name, cost => $cost };
}

# The body of a check item (flags 0: a multi-check's items carry none).
sub check_item_body {
    my ($it, $flags) = @_;
    my $s = $lim{ $it->{name} };
    return $it->{kind} eq 'w'
        ? window_check_body($it->{name}, $s->{limit}, cost => $it->{cost},
                            window_ns => $s->{window_ns},
                            slots => $s->{slots}, flags => $flags)
        : gcra_check_body($it->{name}, $s->{burst}, $s->{count},
                          $s->{period_ns}, cost => $it->{cost},
                          flags => $flags);
}

# A rate-limit request of any of the eight opcodes.
sub random_limit_request {
    my ($c, $opq) = @_;
    my $name = $lnames[int rand @lnames];
    my $s = $lim{$name};
    my %p = (opaque => $opq, name => $name, lsent => mono());
    if (rand() < 0.03) {
        # The busiest names, 0 to 19 asked (more than 16 lists 16).
        @p{qw(op count brecs)} = (OP_BUSIEST, int rand 20, 0);
        $p{bytes} = req_busiest($p{count}, opaque => $opq);
        return \%p;
    }
    my $r = rand;
    if ($r < 0.30) {
        my $u = $s->{unit};
        my $ttl_ms = 50 + int rand 1500;
        my $v = $u == UNIT_MS ? $ttl_ms : $ttl_ms * 1000;
        my $q = rand;
        if ($q < 0.4) {
            @p{qw(op)} = (OP_TTL_INSERT);
            $p{bytes} = req_ttl_insert($name, int rand 100, $v, $u,
                                       opaque => $opq);
        } elsif ($q < 0.65) {
            $p{op} = OP_TTL_QUERY;
            $p{bytes} = req_ttl_query($name, opaque => $opq);
        } elsif ($q < 0.9) {
            # Quota: any change; time left: set it (up to 1.5 s), or move
            # it a little, so every counter still expires soon after the
            # run.
            my $attr = rand() < 0.5 ? TTL_ATTR_QUOTA : TTL_ATTR_TTL;
            my $change = int rand 3;
            my $val = $attr == TTL_ATTR_QUOTA ? int rand 20
                    : $change == CHANGE_PATCH ? $v
                    : ($u == UNIT_MS ? 1 : 1000) * (1 + int rand 20);
            $p{op} = OP_TTL_UPDATE;
            $p{bytes} = req_ttl_update($name, $attr, $change, $u, $val,
                                       opaque => $opq);
        } else {
            $p{op} = OP_TTL_PURGE;
            $p{bytes} = req_ttl_purge($name, opaque => $opq);
            $lsent{ttl_purge}++;
        }
        $lsent{ttl}++;
    } elsif ($r < 0.85) {
        my $kind = $r < 0.60 ? 'w' : 'g';
        my $it = random_check_item($kind, $name);
        $p{peek} = rand() < 0.1;
        $p{items} = [$it];
        $p{op} = $kind eq 'w' ? OP_WINDOW_CHECK : OP_GCRA_CHECK;
        $p{bytes} = req($p{op}, check_item_body($it, $p{peek} ? FLAG_PEEK : 0),
                        opaque => $opq);
        $lsent{ $kind eq 'w' ? 'window' : 'gcra' }++;
    } else {
        # 1..4 items on distinct kinds and names; now and then the same
        # one twice, which the server must refuse whole (0x04).
        my (@items, %used);
        for (1 .. 1 + int rand 4) {
            my $kind = rand() < 0.5 ? 'w' : 'g';
            my $n = $lnames[int rand @lnames];
            next if $used{"$kind $n"}++;
            push @items, random_check_item($kind, $n);
        }
        $p{dup} = rand() < 0.03;
        push @items, { %{ $items[0] } } if $p{dup};
        $p{peek} = rand() < 0.1;
        $p{items} = \@items;
        $p{op} = OP_MULTI_CHECK;
        $p{bytes} = req(OP_MULTI_CHECK,
                        pack('CC', $p{peek} ? FLAG_PEEK : 0, scalar @items)
                        . join('', map {
                              my $b = check_item_body($_, 0);
                              pack('Cn', $_->{kind} eq 'w' ? OP_WINDOW_CHECK
                                                         : OP_GCRA_CHECK,
                                   length $b) . $b
                          } @items), opaque => $opq);
        unless ($p{dup}) {
            $lsent{ $_->{kind} eq 'w' ? 'window_items' : 'gcra_items' }++
                for @items;
        }
    }
    $fig{l_requests}++;
    return \%p;
}

# Checks one busiest record against its request: a name of the run's
# rate limits (or a Throttr connection's TTL counter), a known kind, a check counted, busiest first, no more than
# asked (nor than 16).
sub check_busy_record {
    my ($c, $q, $body) = @_;
    my $b = parse_busy_record({ magic => 0x91, status => ST_OK,
                                body => $body });
    my $what = "conn $c->{id}: Busiest";
    $q->{brecs}++;
    $fig{l_busy_records}++;
    if (!$b) {
        failed("$what: a malformed record");
        return;
    }
    # The Throttr connections' names are TTL counters too.
    failed("$what listed $b->{name}, not a rate limit of the run")
        unless exists $lim{ $b->{name} }
            || ($b->{kind} == KIND_TTL && $b->{name} =~ /^thr-/);
    failed("$what: kind $b->{kind}") unless $b->{kind} <= KIND_GCRA;
    failed("$what: $b->{name} with no check") unless $b->{checks} >= 1;
    failed("$what: $b->{checks} after $q->{blast}, not busiest first")
        if defined $q->{blast} && $b->{checks} > $q->{blast};
    $q->{blast} = $b->{checks};
    my $most = $q->{count} < BUSIEST_MAX ? $q->{count} : BUSIEST_MAX;
    failed("$what: $q->{brecs} records for $q->{count} asked")
        if $q->{brecs} > $most;
}

# Checks one check answer (a hash from parse_check_body) against its
# item's settings; returns its state, or -1 when it is malformed. The
# hints count from when the server read its clock for the request, which
# may be before the time it was judged at (a later slot another request
# charged first, a record the GC removed meanwhile): both lie between the
# send and the answer, so a hint may pass its bound by up to slack_ns,
# the time from send to answer.
sub check_item_answer {
    my ($what, $it, $a, $slack_ns) = @_;
    my $s = $lim{ $it->{name} };
    if (!$a) {
        failed("$what: not a check answer");
        return -1;
    }
    my $st = $a->{state};
    my ($limit, $never, $longest);
    if ($it->{kind} eq 'w') {
        # Everything is forgotten within window + one slot.
        my $slots = $s->{slots} || 10;
        ($limit, $never) = ($s->{limit}, $it->{cost} > $s->{limit});
        $longest = $s->{window_ns} + $s->{window_ns} / $slots;
        failed("$what: used $a->{used} + remaining $a->{remaining} "
               . "!= limit $limit") if $a->{used} <= $limit
               && $a->{remaining} != $limit - $a->{used};
    } else {
        ($limit, $never) = ($s->{burst} + 1, $it->{cost} > $s->{burst} + 1);
        # The TAT is at most the tolerance (and a limited cost) ahead.
        $longest = int(($s->{period_ns} * ($limit + $it->{cost}))
                       / $s->{count}) + 1;
        failed("$what: used $a->{used} != limit - remaining")
            if $a->{used} != $limit - $a->{remaining};
    }
    $longest += int($slack_ns // 0) + 1;
    failed("$what: state $st, pad " . hexdump($a->{pad}) . ", limit "
           . "$a->{limit} (want $limit)")
        if $st > 2 || $a->{pad} ne "\0\0\0" || $a->{limit} != $limit;
    failed("$what: cost $it->{cost} over limit $limit, state $st")
        if $never != ($st == CHECK_NEVER);
    failed("$what: allowed with retry_after_ns $a->{retry_after_ns}")
        if $st == CHECK_ALLOWED && $a->{retry_after_ns} != 0;
    failed("$what: limited with retry_after_ns $a->{retry_after_ns}")
        if $st == CHECK_LIMITED && ($a->{retry_after_ns} == 0
                                    || $a->{retry_after_ns} > $longest);
    failed("$what: never with retry_after_ns $a->{retry_after_ns}")
        if $st == CHECK_NEVER && $a->{retry_after_ns} != RETRY_NEVER;
    failed("$what: reset_after_ns $a->{reset_after_ns} > $longest")
        if $a->{reset_after_ns} > $longest;
    failed("$what: remaining $a->{remaining} > limit $limit")
        if $a->{remaining} > $limit;
    my $k = $it->{kind} eq 'w' ? 'window' : 'gcra';
    $lseen{$k}++;
    $lseen{ $st == CHECK_ALLOWED ? "${k}_allowed" : "${k}_limited" }++;
    $fig{ $st == CHECK_ALLOWED ? 'l_allowed' : $st == CHECK_LIMITED
          ? 'l_limited' : 'l_never' }++;
    return $st;
}

# Remembers an allowed, charged item for the guarantees.
sub charged {
    my ($q, $it, $now) = @_;
    push @{ $lallowed{"$it->{kind} $it->{name}"} },
         [$q->{lsent}, $now, $it->{cost}];
}

# Checks a rate-limit answer: the statuses each opcode may answer, body
# sizes, each check's fields against its settings, a multi-check's
# overall state against its items'.
sub check_limit_answer {
    my ($c, $q, $st, $body) = @_;
    my $now = mono();
    my $what = sprintf 'conn %d: op %02x on %s', $c->{id}, $q->{op},
                       $q->{name};
    my $op = $q->{op};
    if ($op <= OP_TTL_PURGE) {
        my %may = (OP_TTL_INSERT, [ST_OK, ST_EXISTS],
                   OP_TTL_QUERY, [ST_OK, ST_NOT_FOUND],
                   OP_TTL_UPDATE, [ST_OK, ST_NOT_FOUND, ST_BELOW_ZERO],
                   OP_TTL_PURGE, [ST_OK, ST_NOT_FOUND]);
        failed("$what answered $st") unless grep { $_ == $st } @{ $may{$op} };
        my $view = $op == OP_TTL_QUERY || $op == OP_TTL_UPDATE;
        if ($st == ST_OK && $view) {
            my ($quota, $left, $unit) = length $body == TTL_VIEW_SIZE
                ? unpack('Q>Q>C', $body) : (0, 0, -1);
            # Time left: at most the longest ever set (1.55 s) plus the
            # small increases, in the counter's own unit, never 0.
            my $most = 60 * ($lim{ $q->{name} }{unit} == UNIT_MS ? 1e3 : 1e6);
            failed("$what: view " . hexdump($body))
                if $unit != $lim{ $q->{name} }{unit} || $left < 1
                   || $left > $most;
        } elsif ($st == ST_OK && length $body) {
            failed("$what: OK with a body of " . length($body) . ' bytes');
        }
        $lseen{ttl}++;
        $lseen{ $st == ST_OK ? 'ttl_ok' : 'ttl_refused' }++;
        $lseen{ttl_insert_ok}++ if $op == OP_TTL_INSERT && $st == ST_OK;
        $lseen{ttl_purge}++ if $op == OP_TTL_PURGE && $st == ST_OK;
        $fig{l_ttl}++;
        return;
    }
    if ($op == OP_MULTI_CHECK && $q->{dup}) {
        failed("$what: a repeated item answered $st, not 0x04")
            if $st != ST_INVALID;
        $fig{l_multi_refused}++;
        return;
    }
    if ($st != ST_OK) {
        failed("$what answered $st");
        return;
    }
    if ($op != OP_MULTI_CHECK) {
        my $it = $q->{items}[0];
        my $s = check_item_answer($what, $it, parse_check_body($body),
                                  ($now - $q->{lsent}) * 1e9);
        charged($q, $it, $now) if $s == CHECK_ALLOWED && !$q->{peek};
        return;
    }
    my $n = @{ $q->{items} };
    my ($overall, $count) = length $body >= 2 ? unpack('CC', $body) : (9, 0);
    if ($count != $n || length $body != 2 + CHECK_ANSWER_SIZE * $n) {
        failed("$what: $n items answered with " . length($body) . ' bytes');
        return;
    }
    my $all = 1;
    for my $i (0 .. $n - 1) {
        my $s = check_item_answer("$what item $i", $q->{items}[$i],
            parse_check_body(substr $body, 2 + CHECK_ANSWER_SIZE * $i,
                             CHECK_ANSWER_SIZE),
            ($now - $q->{lsent}) * 1e9);
        $all = 0 if $s != CHECK_ALLOWED;
    }
    failed("$what: overall $overall with items all allowed: $all")
        if $overall != ($all ? 0 : 1);
    if ($all && !$q->{peek}) {
        charged($q, $_, $now) for @{ $q->{items} };
    }
    $fig{ $all ? 'l_multi_allowed' : 'l_multi_denied' }++;
}

# The guarantees over the allowed charges: from each charge on (sent at
# s0), the charges after it whose answers came by time e all happened
# within [s0, e] on the server: a window allows at most its limit when e
# - s0 <= window; a GCRA limit at most burst + 1 + (e - s0) * count /
# period.
sub check_limit_guarantees {
    for my $key (sort keys %lallowed) {
        my ($kind, $name) = split ' ', $key;
        my $s = $lim{$name};
        my @a = sort { $a->[0] <=> $b->[0] } @{ $lallowed{$key} };
        for my $i (0 .. $#a) {
            my ($s0, $e, $sum) = ($a[$i][0], 0, 0);
            for my $k ($i .. $#a) {
                $e = $a[$k][1] if $a[$k][1] > $e;
                $sum += $a[$k][2];
                if ($kind eq 'w') {
                    last if $e - $s0 > $s->{window_ns} / 1e9;
                    next if $sum <= $s->{limit};
                    failed(sprintf "window %s allowed %d > %d within %.6f s",
                           $name, $sum, $s->{limit}, $e - $s0);
                } else {
                    my $most = $s->{burst} + 1 + ($e - $s0) * 1e9
                             * $s->{count} / $s->{period_ns};
                    last if $k - $i > 400;
                    next if $sum <= $most + 1e-6;
                    failed(sprintf "gcra %s allowed %d > %.3f within %.6f s",
                           $name, $sum, $most, $e - $s0);
                }
                return;
            }
        }
        $fig{l_guaranteed} += @a;
    }
}

# The server's rate-limit figures at the end, against what was sent and
# what was answered (answers lost with a reset connection may or may not
# have been counted): no objects; checks between those answered and those
# sent; each TTL operation is counted as such (command rows); allowed and
# limited at least as many as seen; each record charged expired at least
# once; limits_used_memory back to its value before the run.
sub check_limit_figures {
    my (%st) = @_;
    my $ttl_cmds = 0;
    $ttl_cmds += $st{"command:$_"} // 0
        for qw(ttl_insert ttl_query ttl_update ttl_purge);
    # Throttr requests are TTL operations too (the soak sends only
    # well-formed ones, so each reaches the TTL counters).
    $ttl_cmds += $st{"throttr_$_"} // 0 for qw(insert query update purge);
    my %seen_names;
    $seen_names{ (split ' ', $_)[0] }++ for keys %lallowed;
    my %sent = (ttl => $lsent{ttl} + $thrfig{sent},
                window => $lsent{window} + $lsent{window_items},
                gcra => $lsent{gcra} + $lsent{gcra_items});
    for my $k (qw(ttl window gcra)) {
        my %f = map { $_ => $st{"${k}_$_"} } qw(objects checks allowed
                                                  limited expired);
        if (grep { !defined } values %f) {
            failed("Stats has no ${k}_* figures");
            next;
        }
        my $what = "Stats $k: " . join ' ', map { "$_ $f{$_}" }
                                                sort keys %f;
        failed("$what: checks not between $lseen{$k} answered and "
               . "$sent{$k} sent")
            if $f{checks} < $lseen{$k} || $f{checks} > $sent{$k};
        failed("$what: allowed + limited > checks")
            if $f{allowed} + $f{limited} > $f{checks};
        if ($k eq 'ttl') {
            failed("$what: $ttl_cmds TTL requests counted")
                if $f{checks} != $ttl_cmds;
            failed("$what: every TTL request is allowed or limited")
                if $f{allowed} + $f{limited} != $f{checks};
            failed("$what: fewer than the $lseen{ttl_ok} successes, "
                   . "$lseen{ttl_refused} refusals seen")
                if $f{allowed} < $lseen{ttl_ok}
                   || $f{limited} < $lseen{ttl_refused};
            # Each counter inserted ends expired or purged.
            failed("$what: fewer expired than the $lseen{ttl_insert_ok} "
                   . "inserts seen minus the $lsent{ttl_purge} purges sent")
                if $f{expired} + $lsent{ttl_purge} < $lseen{ttl_insert_ok};
        } else {
            my $c = $k eq 'window' ? 'w' : 'g';
            my ($al, $li) = @lseen{"${k}_allowed", "${k}_limited"};
            failed("$what: fewer than the $al allowed, $li limited seen")
                if $f{allowed} < $al || $f{limited} < $li;
            failed("$what: command:${k}_check "
                   . ($st{"command:${k}_check"} // '?') . ", $lsent{$k} sent")
                if ($st{"command:${k}_check"} // -1) > $lsent{$k}
                   || ($st{"command:${k}_check"} // -1) < 0;
            failed("$what: $seen_names{$c} names were charged, each must "
                   . "have expired") if $f{expired} < ($seen_names{$c} // 0)
                   || $f{expired} > $f{allowed};
        }
        failed("$what: objects left") if $f{objects} != 0;
    }
    failed("limits_used_memory " . ($st{limits_used_memory} // '?')
           . " at the end, $lused0 before the run")
        if ($st{limits_used_memory} // -1) != $lused0;
}

# Builds one random request; remembers what its answer must look like.
sub random_request {
    my ($c) = @_;
    my $opq = ++$c->{seq};
    return random_wait_request($c, $opq) if rand() < 0.3;
    return random_limit_request($c, $opq) if rand() < 0.25;
    return random_throttle_request($c, $opq) if rand() < 0.2;
    my $r = rand;
    my $name = $names[int rand @names];
    my %p = (opaque => $opq, name => $name);
    if ($r < 0.40) {
        my $res = 1 + int rand($cap{$name} < 3 ? $cap{$name} : 3);
        my $max = $cap{$name} - int rand 2;
        $max = $cap{$name} if $max < $res;
        @p{qw(op res max)} = (OP_ACQUIRE, $res, $max);
        $p{bytes} = req_acquire($name, $res, $max, opaque => $opq);
    } elsif ($r < 0.75) {
        my @mine = grep { $c->{held}{$_} } keys %{ $c->{held} };
        $name = $p{name} = $mine[int rand @mine] if @mine && rand > 0.2;
        my $res = int rand 3;
        @p{qw(op res)} = (OP_RELEASE, $res);
        $c->{inflight}{$name} += $res;
        $p{bytes} = req_release($name, $res, opaque => $opq);
    } elsif ($r < 0.90) {
        $p{op} = OP_GET;
        $p{bytes} = req_get($name, opaque => $opq);
    } elsif ($r < 0.94) {
        $p{op} = OP_DUMP;
        $p{bytes} = req_dump(opaque => $opq);
    } elsif ($r < 0.97) {
        $p{op} = OP_STATS;
        $p{bytes} = req_stats(opaque => $opq);
    } else {
        $p{op} = OP_NOOP;
        $p{bytes} = req_noop(opaque => $opq);
    }
    return \%p;
}

# Sum of what the live connections hold on name (acknowledged grants).
sub live_sum {
    my ($name) = @_;
    my $sum = 0;
    $sum += $_->{held}{$name} // 0 for values %conns;
    return $sum;
}

# A lower bound of the server's consumption of name: acknowledged grants
# minus the releases still in flight (the server may have done those).
sub live_floor {
    my ($name) = @_;
    my $sum = 0;
    for my $c (values %conns) {
        # After a half-close the server may release at once (EOF seen).
        next if $c->{half_closed};
        my $h = ($c->{held}{$name} // 0) - ($c->{inflight}{$name} // 0);
        $sum += $h if $h > 0;
    }
    return $sum;
}

# Checks one answer against the request at the head of the connection's
# queue; Dump answers stay at the head until their terminator.
sub check_answer {
    my ($c, $a) = @_;
    my $q = $c->{pending}[0];
    if (!$q) {
        failed("conn $c->{id}: answer opaque $a->{opaque} with nothing pending");
        return;
    }
    if ($a->{opaque} != $q->{opaque} || $a->{opcode} != $q->{op} ||
        $a->{magic} != 0x91) {
        $c->{in_series} = 0;
        failed(sprintf "conn %d: expected answer opaque %u op %02x, got "
               . "magic %02x op %02x opaque %u", $c->{id}, $q->{opaque},
               $q->{op}, $a->{magic}, $a->{opcode}, $a->{opaque});
        shift @{ $c->{pending} };
        return;
    }
    my ($st, $body, $name) = ($a->{status}, $a->{body}, $q->{name});
    my $held = $c->{held}{$name} // 0;
    if ($q->{op} == OP_DUMP || $q->{op} == OP_QUEUES ||
        $q->{op} == OP_TENANT_LIST || $q->{op} == OP_LEASE_LIST ||
        $q->{op} == OP_BUSIEST) {
        if ($a->{body_len} > 0 && $st == 0) {       # a record: keep waiting
            $c->{in_series} = 1;
            check_queues_record($c, $body) if $q->{op} == OP_QUEUES;
            check_lease_record($c, $body) if $q->{op} == OP_LEASE_LIST;
            check_tenant_record($c, $body) if $q->{op} == OP_TENANT_LIST;
            check_busy_record($c, $q, $body) if $q->{op} == OP_BUSIEST;
            return;
        }
        $c->{in_series} = 0;
        $fig{w_queues}++ if $q->{op} == OP_QUEUES;
        $fig{w_lease_lists}++ if $q->{op} == OP_LEASE_LIST && $st == 0;
        if ($q->{op} == OP_BUSIEST) {
            failed("conn $c->{id}: Busiest ended with status $st")
                unless $st == ST_OK;
            $fig{l_busiest}++;
        }
        check_tenant_list_end($c) if $q->{op} == OP_TENANT_LIST;
    } elsif (($q->{op} >= OP_AUTH && $q->{op} <= OP_RELOAD) || $q->{json}) {
        check_throttle_answer($c, $q, $st, $body);
    } elsif ($q->{op} >= OP_WAIT_ACQUIRE && $q->{op} <= OP_WAIT_RELEASE) {
        check_wait_answer($c, $q, $st, $body);
    } elsif ($q->{op} >= OP_TTL_INSERT && $q->{op} <= OP_MULTI_CHECK) {
        check_limit_answer($c, $q, $st, $body);
    } elsif ($q->{op} == OP_ACQUIRE) {
        if ($st == ST_OK && $body eq u32($q->{res})) {
            $c->{held}{$name} = $held + $q->{res};
            $fig{acquired}++;
            # The server granted with consumption <= maximum <= cap, and
            # it holds at least the floor.
            failed("double grant on $name: live holders have at least "
                   . live_floor($name) . " > cap $cap{$name}")
                if live_floor($name) > $cap{$name};
        } elsif ($st == ST_NOT_AVAILABLE) {
            $fig{refused}++;
        } else {
            failed("conn $c->{id}: Acquire $name answered $st");
        }
    } elsif ($q->{op} == OP_RELEASE) {
        my $want = ($q->{res} <= $held && $held > 0) ? ST_OK : ST_NOT_ACQUIRED;
        # A counter nobody here holds may have been collected already.
        my $ok = $st == $want || ($held == 0 && $st == ST_NOT_FOUND);
        failed("conn $c->{id}: Release $q->{res} of $name holding $held "
               . "answered $st") unless $ok;
        $c->{inflight}{$name} -= $q->{res};
        if ($st == ST_OK) {
            $c->{held}{$name} = $held - $q->{res};
            delete $c->{held}{$name} unless $c->{held}{$name};
            $fig{released}++;
        }
    } elsif ($q->{op} == OP_GET) {
        my $v = $st == ST_OK ? unpack('N', $body) : 0;
        failed("conn $c->{id}: Get $name answered $st / $v while holding $held")
            if ($held > 0 && ($st != ST_OK || $v < $held))
            || ($st != ST_OK && $st != ST_NOT_FOUND);
    } elsif ($st != ST_OK) {
        failed("conn $c->{id}: op $q->{op} answered $st");
    }
    shift @{ $c->{pending} };
    $fig{answers}++;
}

# Reads what the socket has; returns false on EOF or error.
sub conn_read {
    my ($c) = @_;
    my $n = sysread $c->{sock}, $c->{in}, 1 << 16, length $c->{in};
    return 1 if !defined $n && ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR);
    return 0 unless $n;
    while (length $c->{in} >= 12) {
        my ($m, $op, $st, $rsv, $len, $opq) = unpack 'CCCCNN', $c->{in};
        last if length $c->{in} < 12 + $len;
        my $raw = substr $c->{in}, 0, 12 + $len, '';
        my $a = { magic => $m, opcode => $op, status => $st,
                  body_len => $len, opaque => $opq, body => substr($raw, 12) };
        if ($m == 0x92) { check_event($c, $a) } else { check_answer($c, $a) }
    }
    return 1;
}

# Writes what is queued; returns false on error.
sub conn_write {
    my ($c) = @_;
    return 1 unless length $c->{out};
    my $n = syswrite $c->{sock}, $c->{out};
    return 1 if !defined $n && ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR);
    return 0 unless defined $n;
    substr $c->{out}, 0, $n, '';
    return 1;
}

# Ends a connection; the server must release everything it held.
sub conn_end {
    my ($c, $how) = @_;
    return if $c->{dead}++;
    delete $conns{$c->{fd}};
    # Its waits end with it, in whatever state they are (the server may
    # also have a grant on its way to it).
    for my $t (values %{ $c->{w} }) {
        $fig{w_end_queued}++ if $t->{state} eq 'queued';
        $fig{w_end_granted}++ if $t->{state} eq 'granted';
    }
    if ($how eq 'reset') {
        setsockopt $c->{sock}, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0);
    }
    close $c->{sock};
    $fig{"ends_$how"}++;
}

# Queues a batch of 1..8 pipelined requests, or starts the connection's end.
sub conn_next_batch {
    my ($c) = @_;
    if ($c->{batches}-- > 0) {
        my @auth;
        if (!$c->{started}++) {
            push @auth, auth_request($c, 1) if $c->{admin};
            push @auth, auth_request($c, 0) for 1 .. ($c->{fumbler} // 0);
            push @auth, auth_request($c, 0) for 1 .. ($c->{locked} ? 3 : 0);
        }
        for my $p (@auth) {
            push @{ $c->{pending} }, $p;
            $c->{out} .= $p->{bytes};
            $fig{requests}++;
        }
        for (1 .. ($c->{locked} ? int rand 3 : 1 + int rand 8)) {
            my $p = random_request($c);
            push @{ $c->{pending} }, $p;
            $c->{out} .= $p->{bytes};
            $fig{requests}++;
        }
        return;
    }
    my $fate = $c->{fate};
    if ($fate eq 'close') {
        conn_end($c, 'close');
    } elsif ($fate eq 'reset' || $fate eq 'lost') {
        # Requests still in flight: the answers are lost with the socket.
        my $p = random_request($c);
        syswrite $c->{sock}, $p->{bytes};
        conn_end($c, $fate);
    } elsif ($fate eq 'half') {
        # A last batch and half a request, then no more: the server sees
        # EOF mid-request and must still answer the complete ones.
        my $out = '';
        for (1 .. int rand 5) {
            my $p = random_request($c);
            push @{ $c->{pending} }, $p;
            $out .= $p->{bytes};
            $fig{requests}++;
        }
        my $p = random_request($c);
        $out .= substr($p->{bytes}, 0, 1 + int rand(length($p->{bytes}) - 1));
        $c->{sock}->blocking(1);
        syswrite $c->{sock}, $out;
        $c->{sock}->blocking(0);
        shutdown $c->{sock}, SHUT_WR;
        $c->{half_closed} = time;
    } else {
        # Stops reading while Dumps fill the server's send buffers.
        $c->{stalled} = time;
        my $d = '';
        $d .= req_dump(opaque => ++$c->{seq}) for 1 .. 200;
        syswrite $c->{sock}, $d;
    }
}

# Runs the event loop for up to $secs; with $drain set, issues no new
# batches and returns once no live connection waits for an answer.
sub run_loop {
    my ($secs, $drain) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        host_check();
        my ($r, $w) = (IO::Select->new, IO::Select->new);
        my $busy = 0;
        for my $c (values %conns) {
            if ($c->{stalled}) {
                conn_end($c, 'stall') if time - $c->{stalled} > 1;
                $busy++;
                next;
            }
            # A quiescent point needs the live connections' waits ended:
            # each releases what it has (queued, granted or expired).
            if ($drain && !@{ $c->{pending} } && !length $c->{out} &&
                !$c->{half_closed} && %{ $c->{w} }) {
                for my $name (sort keys %{ $c->{w} }) {
                    my $opq = ++$c->{seq};
                    push @{ $c->{pending} }, { op => OP_WAIT_RELEASE,
                        name => $name, opaque => $opq, sent => time };
                    $c->{out} .= req_wait_release($name, opaque => $opq);
                    $c->{releasing}{$name}++;
                    $fig{requests}++;
                }
            }
            if (!$drain && !@{ $c->{pending} } && !length $c->{out} &&
                !$c->{half_closed}) {
                conn_next_batch($c);
                next if $c->{dead} || $c->{stalled};
            }
            $busy++ if @{ $c->{pending} } || $c->{half_closed} ||
                       %{ $c->{w} };
            $r->add($c->{sock});
            $w->add($c->{sock}) if length $c->{out};
        }
        return 1 if $drain && !$busy;
        my ($rr, $ww) = IO::Select->select($r, $w, undef, 0.2);
        for my $s (@{ $ww // [] }) {
            my $c = $conns{fileno $s} or next;
            next if $c->{dead};
            conn_write($c) or conn_end($c, 'close');
        }
        for my $s (@{ $rr // [] }) {
            my $c = $conns{fileno $s} or next;
            next if $c->{dead} || conn_read($c);
            # EOF: expected only after our half-close; then every complete
            # request sent before must have been answered.
            if ($c->{half_closed}) {
                failed("conn $c->{id}: half-close lost "
                       . scalar(@{ $c->{pending} }) . " answers")
                    if @{ $c->{pending} };
                conn_end($c, 'half');
            } elsif ($c->{auth_closing}) {
                conn_end($c, 'auth');
            } else {
                failed("conn $c->{id}: server closed the connection");
                conn_end($c, 'close');
            }
        }
        if (!$drain) {
            conn_open() while keys %conns < $opt{conns};
        }
    }
    return 0;
}

# Compares the server's Get of every counter with the model, polling for a
# bounded time because closed connections are released asynchronously.
# The wait counters are in it too: the live connections released their
# waits before, so they hold nothing there, and nothing waits and no lease
# is left once the server has ended the closed connections' waits.
sub check_model {
    my ($what) = @_;
    my $chk = $srv->connect;
    my @all = (@names, @wnames);
    my $bad;
    my $ok = wait_until(sub {
        my $all = '';
        $all .= req_get($all[$_], opaque => $_) for 0 .. $#all;
        $all .= req_stats(opaque => scalar @all);
        $chk->send($all);
        $bad = undef;
        for my $i (0 .. $#all) {
            my $a = $chk->response or die "soak: checker lost its connection\n";
            my $v = $a->{status} == ST_OK ? unpack('N', $a->{body}) : 0;
            my $want = live_sum($all[$i]);
            failed("double grant on $all[$i]: live holders have $want > "
                   . "cap $cap{$all[$i]}") if $want > $cap{$all[$i]};
            if ($a->{opaque} != $i || $v != $want ||
                ($a->{status} != ST_OK && $a->{status} != ST_NOT_FOUND) ||
                ($want > 0 && $a->{status} != ST_OK)) {
                $bad //= "$all[$i]: server $v (status $a->{status}), model $want";
            }
        }
        my $s = $chk->response or die "soak: checker lost its connection\n";
        my %st = map { @$_ } CounterTest::Conn::parse_stats($s->{body});
        $bad //= "Stats waiting $st{waiting}, leases $st{leases}"
            if ($st{waiting} // -1) != 0 || ($st{leases} // -1) != 0;
        $fig{mismatch_waits}++ if $bad;
        return !$bad;
    }, 15);
    $chk->close;
    failed("$what: $bad") unless $ok;
    $fig{quiescent}++;
}

# ---- Throttr traffic on the Throttr port ----

my $tport = $srv->{stats}{counter_throttr_port}
    or die "soak: no counter_throttr_port in stats\n";

# Opens a few Throttr connections and writes each a pipeline of random
# well-formed requests on its own names (so no other client changes
# them: inserted with quotas below 1000 and 20-400 ms to live, updated
# by at most 9); some end with an unknown type, some in the middle of a
# request. Returns what throttr_collect needs.
sub throttr_send {
    my @out;
    for my $k (1 .. 4) {
        my $c = eval { CounterTest::Conn->new($tport) } or do {
            failed("cannot connect to the Throttr port: $@");
            next;
        };
        my ($bytes, @types) = ('');
        my $tag = int rand 1e9;
        for (1 .. 20 + int rand 200) {
            my $name = "thr-$tag-" . int rand 6;
            my $r = rand;
            my ($type, $b);
            if ($r < 0.35) {
                ($type, $b) = (THR_INSERT, thr_insert(2, int rand 1000,
                                   TTL_MS, 20 + int rand 380, $name));
            } elsif ($r < 0.65) {
                ($type, $b) = (THR_QUERY, thr_query($name));
            } elsif ($r < 0.9) {
                ($type, $b) = (THR_UPDATE, thr_update(2, int rand 2,
                                   int rand 3, 1 + int rand 9, $name));
            } else {
                ($type, $b) = (THR_PURGE, thr_purge($name));
            }
            $bytes .= $b;
            push @types, $type;
        }
        my $end = rand;
        my %e = (c => $c, types => \@types);
        if ($end < 0.15) {
            $bytes .= "\x09";
            $e{framing} = 1;
        } elsif ($end < 0.3) {
            # Cut: half of one more request, then the connection goes.
            $bytes .= substr thr_insert(2, 1, TTL_S, 1, "thr-$tag-cut"), 0, 4;
            $e{cut} = 1;
        }
        $thrsent{ (qw(x insert query update purge))[$_] }++ for @types;
        $thrfig{sent} += @types;
        $c->send($bytes);
        if ($e{cut}) {
            $e{c}->reset;
            $thrfig{cut}++;
            next;
        }
        push @out, \%e;
    }
    return @out;
}

# Reads every answer of the pipelines throttr_send wrote and checks each
# against its request: one byte 0 or 1; a QUERY's success in milliseconds
# with a quota and a time left (at least 1) that the pipeline's inserts
# and increases can have made: below 1000 and 400 plus 9 per request. A
# pipeline ending with an unknown type must then see the connection close.
sub throttr_collect {
    for my $e (@_) {
        my $c = $e->{c};
        my $more = 9 * @{ $e->{types} };
        for my $type (@{ $e->{types} }) {
            my $a = thr_answer($c, $type, 2);
            if (!defined $a) {
                failed("Throttr answer missing for a request of type $type");
                last;
            }
            $thrfig{answered}++;
            my $st = ord $a;
            failed(sprintf 'Throttr status byte 0x%02x', $st) if $st > 1;
            $thrfig{ok}++ if $st == 1;
            next unless $type == THR_QUERY && $st == 1;
            my ($q, $tt, $left) = unpack 'vCv', substr $a, 1;
            failed("Throttr QUERY answered quota $q, type $tt, $left left")
                if $q >= 1000 + $more || $tt != TTL_MS || $left < 1
                   || $left > 400 + $more;
        }
        if ($e->{framing}) {
            if ($c->closed_within(10)) {
                $thrfig{framing}++;
            } else {
                failed('Throttr connection not closed after an unknown type');
            }
        }
        $c->close;
    }
}

# Stats' Throttr figures against what was sent and answered.
sub check_throttr_end {
    my (%st) = @_;
    my $got = 0;
    for my $t (qw(insert query update purge)) {
        my $v = $st{"throttr_$t"} // -1;
        failed("Stats throttr_$t $v, more than the $thrsent{$t} sent")
            if $v < 0 || $v > $thrsent{$t};
        $got += $v;
    }
    failed("Stats counted $got Throttr requests, $thrfig{answered} answered")
        if $got < $thrfig{answered};
    failed("Stats throttr_bad_framing " . ($st{throttr_bad_framing} // '?')
           . ", $thrfig{framing} seen")
        if ($st{throttr_bad_framing} // -1) != $thrfig{framing};
}

# ---- WebSocket quota sessions on the HTTP port ----

my $hport = $srv->{stats}{counter_http_port}
    or die "soak: no counter_http_port in stats\n";
my %wsfig = map { $_ => 0 } qw(upgrades requests results passed timeouts
    expired released cancelled raced ends_close ends_reset ends_midframe
    ends_handshake ends_closeframe errors);

# Ends session c in one of the abrupt ways (or with a close handshake).
sub ws_end {
    my ($c, $f) = @_;
    my $r = rand;
    my $ws = $c->{ws};
    if ($r < 0.35) {
        $f->{ends_close}++;
    } elsif ($r < 0.55) {
        setsockopt $ws->sock, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0);
        $f->{ends_reset}++;
    } elsif ($r < 0.85) {
        # Half of a request's frame, then nothing more.
        my $fr = ws_frame(op => OP_TEXT, payload => ws_json('quota_request',
                          { qid => 'cut', key => 'soak-g1' }));
        $ws->send(substr $fr, 0, 1 + int rand(length($fr) - 1));
        $f->{ends_midframe}++;
    } else {
        $ws->send_close(1000);
        my $code = $ws->close_code(5);
        push @{ $f->{fail} }, 'no close frame answered a close frame'
            unless defined $code;
        $f->{ends_closeframe}++;
    }
    $ws->close;
}

# The child's work: WebSocket sessions for secs seconds; writes its
# figures and failures to fh, one per line.
sub ws_child {
    my ($secs, $fh) = @_;
    my %f = (fail => []);
    my $bad = sub { push @{ $f{fail} }, $_[0] };
    my @keys = sort keys %group;
    my @live;
    my $end = time + $secs;
    while (time < $end && @{ $f{fail} } < 10) {
        while (@live < 6) {
            if (rand() < 0.1) {
                # An upgrade cut in the middle.
                my $raw = eval { WsTest->new($hport, raw => 1) } or do {
                    $bad->("cannot connect to the HTTP port: $@");
                    last;
                };
                my $req = "GET /quota HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        . "Upgrade: websocket\r\nConnection: Upgrade\r\n";
                $raw->send(substr $req, 0, int rand length $req);
                $raw->close;
                $f{ends_handshake}++;
                next;
            }
            my $ws = eval { WsTest->new($hport) } or do {
                $bad->("cannot open a quota session: $@");
                last;
            };
            $f{upgrades}++;
            push @live, { ws => $ws, k => {}, qid => 0 };
        }
        for my $c (@live) {
            my $ws = $c->{ws};
            while (my $m = $ws->msg(0.0005)) {
                my ($name, $o) = @$m;
                my $key = ref $o eq 'HASH' ? $o->{key} // '' : '';
                my $st = $c->{k}{$key} // { state => 'none' };
                if ($name eq 'quota_request_result') {
                    my ($q) = grep { ($c->{k}{$_}{qid} // '') eq ($o->{qid} // '-') }
                              keys %{ $c->{k} };
                    if (($o->{result} // '') eq 'ok' && defined $q
                        && $c->{k}{$q}{state} eq 'sent') {
                        $c->{k}{$q}{state} = 'queued';
                        $f{results}++;
                    } elsif (($o->{error_code} // 0) == 1509) {
                        # A release that crossed the request's end.
                        $f{raced}++;
                    } else {
                        $bad->('unexpected result ' . ws_json($name, $o));
                    }
                } elsif ($name eq 'quota_release_result'
                         && ($o->{error_code} // 0) == 1509) {
                    # The release crossed the request's own end (its
                    # timeout or expiry was on the way): nothing to end.
                    $f{raced}++;
                } elsif ($st->{state} eq 'gone') {
                    # Sent before the server saw the release.
                    $f{raced}++;
                } elsif ($st->{state} eq 'sent' && $st->{stale}
                         && $name =~ /^quota_(passed|expired|timeout)$/) {
                    # The key was asked again right after a release, which
                    # has no answer: an event the server sent about the
                    # earlier request before it read the release comes
                    # before the new request's result.
                    $f{raced}++;
                } elsif ($name eq 'quota_passed' && $st->{state} eq 'queued') {
                    $st->{state} = 'held';
                    $st->{until} = time + rand 0.3;
                    $f{passed}++;
                    # Holders without an expiry keep their grant until they
                    # let it go: never more of them than the group's max.
                    # A session ended earlier in this round is gone (the
                    # server returned its grant, which may be this one),
                    # though it leaves the list only at the round's end.
                    my $n = grep { my $h = $_->{k}{$key};
                                   !$_->{dead} && $h && $h->{state} eq 'held'
                                   && !$h->{expires}
                                 } @live;
                    $bad->("double grant on $key: $n WebSocket holders")
                        if $n > $group{$key}{max};
                } elsif ($name eq 'quota_timeout' && $st->{state} eq 'queued') {
                    delete $c->{k}{$key};
                    $f{timeouts}++;
                } elsif ($name eq 'quota_expired' && $st->{state} eq 'held'
                         && $st->{expires}) {
                    delete $c->{k}{$key};
                    $f{expired}++;
                } else {
                    $bad->("$name for $key in state $st->{state}: "
                           . ws_json($name, $o));
                }
            }
            if ($ws->{closed} || ($ws->{error} // '') eq 'eof') {
                $bad->('the server ended a quota session: '
                       . ($ws->{closed} ? 'close frame' : 'EOF'));
                $c->{dead} = 1;
                next;
            }
            for my $key (keys %{ $c->{k} }) {
                my $st = $c->{k}{$key};
                my $cancel = $st->{state} eq 'queued' && rand() < 0.01;
                next unless $cancel || ($st->{state} eq 'held' && time > $st->{until});
                $ws->send_msg(quota_release => { qid => ++$c->{qid}, key => $key });
                $st->{state} = 'gone';
                $f{ $cancel ? 'cancelled' : 'released' }++;
            }
            if (rand() < 0.05) {
                my $key = $keys[rand @keys];
                my $st = $c->{k}{$key};
                if (!$st || $st->{state} eq 'gone') {
                    my %req = (qid => "q" . ++$c->{qid}, key => $key,
                               timeout => 0.02 + rand 0.2);
                    my $r = rand();
                    $req{expires} = $r < 0.4 ? 0 : $r < 0.8 ? 0.05 + rand 0.2 : undef;
                    delete $req{expires} unless defined $req{expires};
                    $ws->send_msg(quota_request => \%req);
                    my $lease = exists $req{expires} ? $req{expires}
                                                     : $group{$key}{lease} / 1000;
                    $c->{k}{$key} = { state => 'sent', qid => $req{qid},
                                      expires => $lease,
                                      stale => $st ? 1 : 0 };
                    $f{requests}++;
                }
            }
            if (rand() < 0.01) {
                ws_end($c, \%f);
                $c->{dead} = 1;
            }
        }
        @live = grep { !$_->{dead} } @live;
        select undef, undef, undef, 0.003;
    }
    ws_end($_, \%f) for @live;
    print $fh "fail=$_\n" for @{ $f{fail} };
    print $fh "$_=$f{$_}\n" for grep { $_ ne 'fail' } keys %f;
    close $fh;
}

# Starts the child for secs seconds; returns its pid and the read end.
sub ws_start {
    my ($secs) = @_;
    pipe my $r, my $w or die "soak: pipe: $!\n";
    my $kid = fork // die "soak: fork: $!\n";
    if ($kid == 0) {
        close $r;
        alarm($secs + 60);
        eval { ws_child($secs, $w) };
        if ($@) { print $w "fail=WebSocket child died: $@"; close $w }
        POSIX::_exit(0);
    }
    close $w;
    return ($kid, $r);
}

# Collects the child's figures and failures, and reaps it by pid.
sub ws_collect {
    my ($kid, $r) = @_;
    my $got = 0;
    while (my $line = <$r>) {
        chomp $line;
        my ($k, $v) = split /=/, $line, 2;
        $got = 1;
        if ($k eq 'fail') { failed("WebSocket: $v") }
        else { $wsfig{$k} += $v }
    }
    close $r;
    waitpid $kid, 0;
    failed('the WebSocket child reported nothing') unless $got;
}

# Stats' WebSocket figures at the end.
sub check_ws_end {
    my (%st) = @_;
    failed("Stats websocket_connections $st{websocket_connections} at the end")
        if ($st{websocket_connections} // -1) != 0;
    failed("Stats websocket_upgrades " . ($st{websocket_upgrades} // '?')
           . ", $wsfig{upgrades} sessions opened")
        if ($st{websocket_upgrades} // -1) != $wsfig{upgrades};
}

# ---- the run ----
# RSS baseline: after the first phase, with every connection and buffer
# of the steady state allocated once (allocators keep freed memory).
my $rss_start = rss_kib();
my $cpu0 = cpu_seconds();
my $t0 = time;
my $phase = 4;
my ($rss0, $rss_peak) = (undef, 0);
while (time - $t0 < $opt{duration}) {
    my @thr = throttr_send();
    my @ws = ws_start($phase);
    run_loop($phase, 0);
    throttr_collect(@thr);
    ws_collect(@ws);
    run_loop(15, 1) or failed('connections did not drain in 15 s');
    check_model(sprintf 'quiescent point at %.0f s', time - $t0);
    $rss0 //= rss_kib();
    my $r = rss_kib();
    $rss_peak = $r if $r > $rss_peak;
}
conn_end($_, 'close') for values %conns;
check_model('after every client left');

# Every counter is 0 now; within a few windows GC must remove them all.
my $chk = $srv->connect;
my $left;
wait_until(sub {
    my $recs = $chk->dump_records;
    $left = scalar @$recs;
    return $left == 0;
}, 4 * $opt{interval} + 10) or failed("GC left $left counters");
my %st = map { @$_ } $chk->stats_pairs;
$chk->close;
failed("Stats objects = $st{objects} after GC") if ($st{objects} // 0) != 0;
failed("Stats waiting $st{waiting}, leases $st{leases} at the end")
    if ($st{waiting} // -1) != 0 || ($st{leases} // -1) != 0;
failed("used_memory $st{used_memory} after GC, $used0 before the run")
    if ($st{used_memory} // -1) != $used0;
failed("Stats curr_connections = $st{curr_connections}")
    if defined $st{curr_connections} && $st{curr_connections} > 1;

# The rate limits: every record expires soon after its last use, and GC
# then frees it; the figures per kind agree with what was sent and seen,
# and their memory is back to what it was before the run.
check_limit_guarantees();
my %lst;
$chk = $srv->connect;
wait_until(sub {
    %lst = map { @$_ } $chk->stats_pairs;
    return !grep { ($lst{"${_}_objects"} // 1) != 0 } qw(ttl window gcra);
}, 4 * $opt{interval} + 30)
    or failed('rate-limit records left after expiry and GC: '
              . join ', ', map { "$_ " . ($lst{"${_}_objects"} // '?') }
                               qw(ttl window gcra));
$chk->close;
check_limit_figures(%lst);
check_throttle_end();
check_throttr_end(%lst);
check_ws_end(%lst);

my $rss1 = rss_kib();
my $cpu = cpu_seconds() - $cpu0;
printf "soak: %d requests, %d answers (%d acquired, %d refused, %d released)\n",
    @fig{qw(requests answers acquired refused released)};
printf "soak: connections ended by close %d, reset %d, half-close %d, "
     . "stalled reader %d, close with answers in flight %d\n",
    @fig{qw(ends_close ends_reset ends_half ends_stall ends_lost)};
printf "soak: %d wait_acquire: %d granted at once, %d queued, %d busy, "
     . "%d refused; events: %d granted, %d timed out, %d leases expired\n",
    @fig{qw(w_acquire w_granted w_queued w_busy w_refused w_ev_granted
            w_ev_timeout w_ev_expired)};
printf "soak: %d renewed, %d grants released, %d waits cancelled, %d grants "
     . "returned before their event, %d expiries acknowledged, %d queue "
     . "listings, %d lease listings; connections ended with %d waits "
     . "queued, %d granted\n",
    @fig{qw(w_renewed w_released w_cancelled w_raced w_expired_acks w_queues
            w_lease_lists w_end_queued w_end_granted)};
printf "soak: used_memory %d before the run, %d at the end; Stats "
     . "queue_grants %s, wait_timeouts %s, lease_expirations %s, "
     . "wait_cancels %s\n", $used0, $st{used_memory} // -1,
    map { $st{$_} // '?' } qw(queue_grants wait_timeouts lease_expirations
                              wait_cancels);
printf "soak: %d quiescent checks (%d re-polls), server CPU %.1f s, "
     . "RSS at start %d KiB, baseline after warm-up %d KiB, peak %d KiB, "
     . "end %d KiB, gc_count %s\n",
    $fig{quiescent}, $fig{mismatch_waits}, $cpu, $rss_start, $rss0,
    $rss_peak, $rss1, $st{gc_count} // '?';
printf "soak: %d rate-limit requests: %d TTL answers, checks %d allowed, "
     . "%d limited, %d never; multi-checks %d allowed, %d denied, %d "
     . "refused; %d allowed charges under the guarantees; %d busiest "
     . "listings (%d records); Stats expired "
     . "ttl %s, window %s, gcra %s; limits_used_memory %s (before %d)\n",
    @fig{qw(l_requests l_ttl l_allowed l_limited l_never l_multi_allowed
            l_multi_denied l_multi_refused l_guaranteed l_busiest
            l_busy_records)},
    map({ $lst{"${_}_expired"} // '?' } qw(ttl window gcra)),
    $lst{limits_used_memory} // '?', $lused0;
printf "soak: throttling: %d charges sent, %d answered: %d allowed "
     . "(%d units, %d unthrottled), %d throttled (reserve %d, pool %d, "
     . "hard limit %d); %d views, %d tenant lists (%d records); %d "
     . "connections authenticated, %d wrong secrets, %d connections "
     . "closed after three; privileged %d done, %d refused\n",
    @tfig{qw(sent answered allowed units unthr_units throttled reason_1
             reason_2 reason_3 views lists list_records admins bad_auth
             auth_closed priv_ok priv_refused)};
printf "soak: Throttr: %d requests sent, %d answered (%d succeeded), "
     . "%d connections closed for bad framing, %d cut mid-request\n",
    @thrfig{qw(sent answered ok framing cut)};
printf "soak: WebSocket: %d sessions, %d requests (%d results), %d passed, "
     . "%d timed out, %d expired, %d released, %d cancelled, %d raced; "
     . "ended by close %d, reset %d, mid-frame %d, mid-upgrade %d, close "
     . "handshake %d\n",
    @wsfig{qw(upgrades requests results passed timeouts expired released
              cancelled raced ends_close ends_reset ends_midframe
              ends_handshake ends_closeframe)};
failed("RSS did not return near its baseline: $rss0 -> $rss1 KiB")
    if $rss1 > $rss0 + $opt{'rss-slack'} * 1024;
$srv->stop;
my $err = $srv->stderr;
failed("sanitizer report from the server:\n$err")
    if $err =~ /(?:Sanitizer|runtime error:)/;
print $fail ? "soak: FAILED ($fail problems)\n" : "soak: passed\n";
exit($fail ? 1 : 0);
