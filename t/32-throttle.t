#!/usr/bin/perl
# 32-throttle.t: tenant throttling over real sockets (opcodes 0x40-0x49):
# charges allowed and throttled for each reason (reserve when the reserves
# fill the capacity, pool empty, hard limit), a charge reaching the hard
# limit exactly passes, retry_after_ns in (0, 1 s], a new second refills,
# the limit is the tenant's whatever connection charges, tenant_show and
# node_show figures, tenant_list streaming many tenants, capacity 0 turns
# throttling off, unthrottled connections are accounted and eat the pool,
# Over capacity (0x2C) and Invalid (0x04) cases, Out of memory for a new
# tenant, and the Stats rows (Stats opcode and the host's stats).
# Figures are per second of the server's monotonic clock: every group of
# charges whose outcome depends on falling in one second goes out in one
# pipelined burst that is checked to have fitted in one second (and sent
# again when it straddled two); the only sleeps wait for a new second
# before asserting that a charge is allowed again. Nothing is timed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

# The probe runs on a host without the new configuration keys, which a
# host that does not know the opcodes does not know either.
my $srv = start_throttle_host();
if (my $why = opcodes_pending($srv, @THROTTLE_OPCODES)) {
    plan skip_all => $why;
}
my $SECRET = 'open sesame, test 32';

# A connection to srv that authenticated with the secret.
sub admin_conn {
    my ($s) = @_;
    my $c = $s->connect;
    my $r = $c->auth($SECRET);
    die 'auth with the right secret failed: ' . hexdump($r ? $r->{raw} : '')
        unless $r && $r->{raw} eq resp(OP_AUTH, ST_OK, '', 0);
    return $c;
}

# A fresh server (throttling as configured by nothing: capacity 0) and an
# authenticated connection to it.
sub fresh {
    my (%o) = @_;
    my $s = start_throttle_host(secret => $SECRET, %o);
    return ($s, admin_conn($s));
}

# Request bytes on c whose answer must be OK with exactly body.
sub answered {
    my ($c, $bytes, $body, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp($op, ST_OK, $body, $opaque),
                     $title);
}

# Request bytes on c whose answer must be the error status with its text.
sub refused {
    my ($c, $bytes, $status, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp_err($op, $status, $opaque),
                     $title);
}

# Checks a parsed throttle answer: the keys of want exactly, the padding
# zero, retry_after_ns 0 when allowed and in (0, 1e9] when throttled.
sub throttle_is {
    my ($a, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    unless ($a) {
        fail("$title: a 24-byte throttle answer");
        return 0;
    }
    my %got = map { $_ => $a->{$_} } keys %$want;
    my $retry_ok = $a->{state} == THROTTLE_ALLOWED
        ? $a->{retry_after_ns} == 0
        : $a->{retry_after_ns} > 0 && $a->{retry_after_ns} <= 1_000_000_000;
    my $ok = is_deeply(\%got, $want, $title);
    $ok &= ok($retry_ok && $a->{pad} eq "\0\0" && $a->{pad2} eq "\0" x 4,
              "$title: retry_after_ns $a->{retry_after_ns} fits the state, "
              . 'padding zero');
    return $ok;
}

# Shorthands for the expected throttle answers.
sub allowed { +{ state => THROTTLE_ALLOWED, reason => REASON_NONE,
                 used => $_[0], remaining => $_[1] } }
sub throttled { +{ state => THROTTLE_THROTTLED, reason => $_[0],
                   used => $_[1], remaining => $_[2] } }

# Checks each answer of a burst against the expected list.
sub burst_is {
    my ($res, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    ok($res->{same_second}, "$title: the burst fitted in one second")
        or diag("tries: $res->{tries}");
    for my $i (0 .. $#$want) {
        throttle_is($res->{answers}[$i], $want->[$i], "$title: charge $i");
    }
}

# The parsed node view / tenant view read now on c.
sub node_of { parse_node_view($_[0]->call(req_node_show())) }
sub tenant_of { parse_tenant_view($_[0]->call(req_tenant_show($_[1]))) }

# Checks the keys of want in a parsed view.
sub view_is {
    my ($v, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return fail("$title: a 32-byte view") unless $v;
    my $ok = is_deeply({ map { $_ => $v->{$_} } keys %$want }, $want,
                       $title);
    diag(join ' ', map { "$_=$v->{$_}" } sort grep { $_ ne 'pad' } keys %$v)
        unless $ok;
    return $ok;
}

# Throttled charges of a burst's tries (all of them), optionally of one
# tenant only; and the allowed units.
sub throttled_in {
    my ($res, $tenant) = @_;
    return scalar grep {
        $_->[1] && $_->[1]{state} == THROTTLE_THROTTLED &&
        (!defined $tenant || $_->[0][1] eq $tenant)
    } @{ $res->{all} };
}
sub units_in {
    my ($res, $tenant) = @_;
    my $n = 0;
    for (@{ $res->{all} }) {
        $n += $_->[0][2] if $_->[1] && $_->[1]{state} == THROTTLE_ALLOWED &&
                            (!defined $tenant || $_->[0][1] eq $tenant);
    }
    return $n;
}

# Sleeps past the retry hint of a throttled answer: the next second has
# begun for the server once it has passed.
sub sleep_past {
    my ($a) = @_;
    sleep((($a && $a->{retry_after_ns}) || 1e9) / 1e9 + 0.02);
}

# ---- Defaults: a fresh node and a tenant never seen ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_show(opaque => 1),
             node_view_body(0, 0, 0, 0, 0, 0, 0),
             'node_show of a fresh node: capacity 0 (off), all zero');
    answered($c, req_tenant_show('never', opaque => 2),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'tenant_show of a tenant never seen: the defaults, zeros');
    answered($c, req_tenant_show('tail', extra => 'junk', opaque => 3),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'tenant_show with bytes after the name: ok');
    my ($rec, $raw) = $c->tenant_records(opaque => 4);
    ok(@$raw == 1 && $raw->[0]{raw} eq resp(OP_TENANT_LIST, ST_OK, '', 4),
       'tenant_list of a fresh node: the end marker only');
    $s->stop;
}

# ---- Capacity 0: throttling off, every charge allowed and accounted ----
{
    my ($s, $c) = fresh();
    answered($c, req_tenant_set('off-h', undef, 10, opaque => 1), '',
             'off: tenant_set off-h hard limit 10');
    my $res = throttle_burst([[$c, 'off-a', 1_000_000], [$c, 'off-a', 5],
                              [$c, 'off-h', 8], [$c, 'off-h', 5]],
                             then => [req_tenant_show('off-a'),
                                      req_tenant_show('off-h')]);
    ok($res->{same_second}, 'off: the burst fitted in one second');
    throttle_is($res->{answers}[0], allowed(1_000_000, UNLIMITED),
                'off: a million units allowed, remaining unlimited');
    throttle_is($res->{answers}[1], allowed(1_000_005, UNLIMITED),
                'off: and 5 more');
    throttle_is($res->{answers}[2], allowed(8, 2),
                'off: a hard limit still shows in remaining (H - used)');
    throttle_is($res->{answers}[3], { state => THROTTLE_ALLOWED,
                                      reason => REASON_NONE, used => 13 },
                'off: past the hard limit still allowed (throttling off)');
    view_is($res->{after}, { capacity => 0, used => 1_000_018,
                             throttled => 0 },
            'off: node used counts every unit');
    view_is(parse_tenant_view($res->{then}[0]),
            { reserved => 0, hard_limit => UNLIMITED, used => 1_000_005,
              flags => 0, throttled => 0, units => units_in($res, 'off-a') },
            'off: tenant_show off-a: used and units, unconfigured');
    view_is(parse_tenant_view($res->{then}[1]),
            { reserved => 0, hard_limit => 10, used => 13,
              flags => TENANT_CONFIGURED, throttled => 0,
              units => units_in($res, 'off-h') },
            'off: tenant_show off-h: configured, used 13');
    $s->stop;
}

# ---- Hard limit: at or below passes, above is throttled; refill ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(1000, opaque => 1), '', 'hard: capacity 1000');
    answered($c, req_tenant_set('hl', undef, 5, opaque => 2), '',
             'hard: hl gets a hard limit of 5');
    my $res = throttle_burst([[$c, 'hl', 3], [$c, 'hl', 2], [$c, 'hl', 1],
                              [$c, 'hl', 5]],
                             then => [req_tenant_show('hl')]);
    burst_is($res, [allowed(3, 2), allowed(5, 0),
                    throttled(REASON_HARD_LIMIT, 5, 0),
                    throttled(REASON_HARD_LIMIT, 5, 0)],
             'hard: 3, 2 (reaching 5 exactly), 1 and 5 over');
    view_is(parse_tenant_view($res->{then}[0]),
            { reserved => 0, hard_limit => 5, used => 5,
              flags => TENANT_CONFIGURED, throttled => throttled_in($res),
              units => units_in($res) },
            'hard: tenant_show hl: used 5, the throttled charges counted');
    view_is($res->{after}, { capacity => 1000, used => 5, pool => 1000,
                             pool_used => 5, reserved_sum => 0, tenants => 1,
                             throttled => throttled_in($res) },
            'hard: node_show figures');
    my $a = $res->{answers}[3];
    sleep_past($a);
    throttle_is(parse_throttle_answer($c->call(req_throttle('hl', 5))),
                allowed(5, 0),
                'hard: after the retry hint, a new second: 5 allowed again');
    answered($c, req_tenant_set('hl-big', undef, 5, opaque => 3), '',
             'hard: hl-big gets a hard limit of 5');
    my $big = parse_throttle_answer($c->call(req_throttle('hl-big', 6)));
    ok($big && $big->{state} == THROTTLE_THROTTLED &&
       $big->{reason} == REASON_HARD_LIMIT,
       'hard: 6 units against a limit of 5: throttled, hard limit, in any '
       . 'second');
    ok($big && $big->{retry_after_ns} > 0 &&
       $big->{retry_after_ns} <= 1_000_000_000,
       'hard: retry_after_ns in (0, 1e9]');
    answered($c, req_tenant_set('hl-max', undef, 0xfffffffe, opaque => 4),
             '', 'hard: a hard limit of 2^32 - 2 is a limit');
    $a = parse_throttle_answer($c->call(req_throttle('hl-zero', 1)));
    ok($a && $a->{state} == THROTTLE_ALLOWED,
       'hard: an unconfigured tenant has no hard limit by default');
    $s->stop;
}

# ---- Reserve: the reserves fill the capacity, the pool is 0 ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(10, opaque => 1), '', 'reserve: capacity 10');
    answered($c, req_tenant_set('r1', 6, undef, opaque => 2), '',
             'reserve: r1 reserves 6');
    answered($c, req_tenant_set('r2', 4, undef, opaque => 3), '',
             'reserve: r2 reserves 4 (the reserves fill the node)');
    my $res = throttle_burst([[$c, 'r1', 6], [$c, 'r1', 1], [$c, 'r2', 5],
                              [$c, 'r2', 4], [$c, 'nobody', 1]]);
    burst_is($res, [allowed(6, 0), throttled(REASON_RESERVE, 6, 0),
                    throttled(REASON_RESERVE, 0, 4), allowed(4, 0),
                    throttled(REASON_RESERVE, 0, 0)],
             'reserve: r1 spends its 6, r2 cannot take 5, takes its 4, '
             . 'an unconfigured tenant has nothing');
    view_is($res->{after}, { capacity => 10, used => 10, pool => 0,
                             pool_used => 0, reserved_sum => 10,
                             tenants => 2 },
            'reserve: node_show figures');
    $s->stop;
}

# ---- Pool empty; a reserve is still granted from an empty pool ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(10, opaque => 1), '', 'pool: capacity 10');
    answered($c, req_tenant_set('g', 3, undef, opaque => 2), '',
             'pool: g reserves 3 (pool 7)');
    my $res = throttle_burst(
        [[$c, 'a', 5], [$c, 'b', 2], [$c, 'b', 1], [$c, 'g', 2],
         [$c, 'g', 1], [$c, 'g', 1], [$c, 'a', 1]],
        then => [req_tenant_show('g'), req_tenant_show('a'),
                 req_tenant_show('b')]);
    burst_is($res, [allowed(5, 2), allowed(2, 0),
                    throttled(REASON_POOL_EMPTY, 2, 0), allowed(2, 1),
                    allowed(3, 0), throttled(REASON_POOL_EMPTY, 3, 0),
                    throttled(REASON_POOL_EMPTY, 5, 0)],
             'pool: a and b empty the pool, g still gets its reserve');
    view_is($res->{after}, { capacity => 10, used => 10, pool => 7,
                             pool_used => 7, reserved_sum => 3, tenants => 1,
                             throttled => throttled_in($res) },
            'pool: node_show figures');
    view_is(parse_tenant_view($res->{then}[0]),
            { reserved => 3, hard_limit => UNLIMITED, used => 3,
              flags => TENANT_CONFIGURED, throttled => throttled_in($res, 'g'),
              units => units_in($res, 'g') }, 'pool: tenant_show g');
    view_is(parse_tenant_view($res->{then}[1]),
            { reserved => 0, hard_limit => UNLIMITED, used => 5, flags => 0,
              throttled => throttled_in($res, 'a'),
              units => units_in($res, 'a') }, 'pool: tenant_show a');
    my $a = $res->{answers}[2];
    ok($a && $a->{retry_after_ns} > 0 && $a->{retry_after_ns} <= 1e9,
       'pool: retry_after_ns in (0, 1e9]');
    sleep_past($a);
    throttle_is(parse_throttle_answer($c->call(req_throttle('b', 7))),
                allowed(7, 0), 'pool: a new second refills the pool: b 7');

    # One charge above what is left is refused whole, the rest passes.
    $res = throttle_burst([[$c, 'd', 4], [$c, 'e', 4], [$c, 'e', 3]]);
    burst_is($res, [allowed(4, 3), throttled(REASON_POOL_EMPTY, 0, 3),
                    allowed(3, 0)],
             'pool: all or nothing: 4 of 3 left refused, then 3 allowed');
    $s->stop;
}

# ---- Per tenant, not per connection ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(1000, opaque => 1), '', 'shared: capacity');
    answered($c, req_tenant_set('shared', undef, 4, opaque => 2), '',
             'shared: hard limit 4');
    my ($x, $y) = ($s->connect, $s->connect);
    my $res = throttle_burst([(map { [$x, 'shared', 1] } 1 .. 3),
                              (map { [$y, 'shared', 1] } 1 .. 3)],
                             observer => $c);
    ok($res->{same_second}, 'shared: both bursts fitted in one second');
    my @a = grep { defined } @{ $res->{answers} };
    is(scalar @a, 6, 'shared: six answers');
    my @ok = grep { $_->{state} == THROTTLE_ALLOWED } @a;
    my @no = grep { $_->{state} == THROTTLE_THROTTLED } @a;
    is(scalar @ok, 4, 'shared: two connections of one tenant: 4 allowed '
                      . 'together, not 3 + 3');
    is_deeply([sort map { $_->{used} } @ok], [1, 2, 3, 4],
              'shared: the allowed ones counted 1, 2, 3, 4');
    ok(@no == 2 && !(grep { $_->{reason} != REASON_HARD_LIMIT ||
                            $_->{used} != 4 } @no),
       'shared: the other 2 throttled, hard limit, used 4');
    $x->close;
    $y->close;
    $s->stop;
}

# ---- Unthrottled connections: allowed always, accounted ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(10, opaque => 1), '', 'unthrottled: capacity');
    answered($c, req_tenant_set('u', 2, undef, opaque => 2), '',
             'unthrottled: u reserves 2');
    answered($c, req_tenant_set('w', 3, undef, opaque => 3), '',
             'unthrottled: w reserves 3 (pool 5)');
    answered($c, req_tenant_set('uh', undef, 2, opaque => 4), '',
             'unthrottled: uh has a hard limit of 2');
    my $un = admin_conn($s);
    answered($un, req_unthrottle(opaque => 5), '',
             'unthrottled: unthrottle on an authenticated connection: ok');
    my $res = throttle_burst([[$un, 'uh', 4], [$un, 'u', 9], '|',
                              [$c, 'v', 1],
                              [$c, 'u', 1], [$c, 'w', 3]], observer => $c);
    ok($res->{same_second}, 'unthrottled: the burst fitted in one second');
    my $A = $res->{answers};
    throttle_is($A->[0], { state => THROTTLE_ALLOWED, used => 4,
                           remaining => 0 },
                'unthrottled: past the hard limit: allowed');
    throttle_is($A->[1], { state => THROTTLE_ALLOWED, used => 9,
                           remaining => 0 },
                'unthrottled: 9 units, 7 above the reserve, past the pool');
    throttle_is($A->[2], throttled(REASON_POOL_EMPTY, 0, 0),
                'unthrottled: the pool is gone for the others');
    throttle_is($A->[3], throttled(REASON_POOL_EMPTY, 9, 0),
                'unthrottled: also for u on a throttled connection');
    throttle_is($A->[4], allowed(3, 0),
                'unthrottled: w still gets its reserve');
    view_is($res->{after}, { capacity => 10, used => 16, pool => 5,
                             pool_used => 11, reserved_sum => 5,
                             tenants => 3 },
            'unthrottled: node used and pool_used count unthrottled units');
    my %st = map { @$_ } $c->stats_pairs;
    my $unth = 0;
    $unth += $_->[0][2] for grep { $_->[0][0] == $un } @{ $res->{all} };
    is($st{throttle_unthrottled_units}, $unth,
       "unthrottled: Stats throttle_unthrottled_units $unth");
    $un->close;
    $s->stop;
}

# ---- tenant_set, tenant_remove, node_set; 0x2C and 0x04 ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(10, opaque => 1), '', 'set: capacity 10');
    answered($c, req_tenant_set('a', 6, undef, opaque => 2), '',
             'set: a reserves 6');
    answered($c, req_tenant_show('a', opaque => 3),
             tenant_view_body(6, UNLIMITED, 0, TENANT_CONFIGURED, 0, 0),
             'set: a: reserved 6, hard limit the default, configured');
    refused($c, req_tenant_set('b', 5, undef, opaque => 4), ST_OVER_CAPACITY,
            'set: b reserving 5 would pass capacity 10: 0x2C');
    answered($c, req_tenant_show('b', opaque => 5),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'set: the refused tenant_set left b unconfigured');
    answered($c, req_tenant_set('a', 10, undef, opaque => 6), '',
             'set: a reserves 10 instead of 6 (sum 10 = capacity)');
    refused($c, req_tenant_set('a', 11, undef, opaque => 7), ST_OVER_CAPACITY,
            'set: a reserving 11: 0x2C');
    answered($c, req_tenant_set('a', undef, 20, opaque => 8), '',
             'set: a: only the hard limit set');
    answered($c, req_tenant_show('a', opaque => 9),
             tenant_view_body(10, 20, 0, TENANT_CONFIGURED, 0, 0),
             'set: a: the reserve kept, hard limit 20');
    answered($c, req_tenant_set('a', undef, 10, opaque => 31), '',
             'set: a: hard limit 10 = the reserve is allowed');
    answered($c, req_tenant_show('a', opaque => 32),
             tenant_view_body(10, 10, 0, TENANT_CONFIGURED, 0, 0),
             'set: a: reserve 10, hard limit 10');
    refused($c, req_tenant_set('a', undef, 9, opaque => 10), ST_INVALID,
            'set: a hard limit below the reserve: 0x04');
    answered($c, req_tenant_show('a', opaque => 33),
             tenant_view_body(10, 10, 0, TENANT_CONFIGURED, 0, 0),
             'set: the refused tenant_set changed nothing');
    refused($c, req_tenant_set('c', 5, 4, opaque => 11), ST_INVALID,
            'set: reserve 5 with hard limit 4: 0x04');
    answered($c, req_tenant_show('c', opaque => 13),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'set: the refused tenant_set left c unconfigured');
    answered($c, req_tenant_set('c', 0, 4, opaque => 14), '',
             'set: c: reserve 0, hard limit 4');
    answered($c, req_tenant_set('d', undef, UNLIMITED, opaque => 16), '',
             'set: d: hard limit unlimited, explicitly');
    answered($c, req_tenant_show('d', opaque => 17),
             tenant_view_body(0, UNLIMITED, 0, TENANT_CONFIGURED, 0, 0),
             'set: d is configured with the defaults\' values');
    answered($c, req_node_show(opaque => 18),
             node_view_body(10, 0, 0, 0, 10, 3, 0),
             'set: node: capacity 10, pool 0, reserved_sum 10, 3 tenants');
    refused($c, req_node_set(9, opaque => 19), ST_OVER_CAPACITY,
            'node_set 9 below the reserves (10): 0x2C');
    answered($c, req_node_set(0, opaque => 20), '',
             'node_set 0 (off) is always possible');
    answered($c, req_tenant_set('b', 5, undef, opaque => 21), '',
             'set: with capacity 0 any reserve may be set (sum 15)');
    refused($c, req_node_set(14, opaque => 22), ST_OVER_CAPACITY,
            'node_set 14 below the reserves (15): 0x2C');
    answered($c, req_node_set(15, opaque => 23), '',
             'node_set 15 = the reserves: ok');
    answered($c, req_node_show(opaque => 24),
             node_view_body(15, 0, 0, 0, 15, 4, 0),
             'set: node: capacity 15, pool 0, reserved_sum 15, 4 tenants');
    answered($c, req_tenant_remove('b', opaque => 25), '',
             'tenant_remove b: ok');
    refused($c, req_tenant_remove('b', opaque => 26), ST_NOT_FOUND,
            'tenant_remove b again: 0x01');
    refused($c, req_tenant_remove('never', opaque => 27), ST_NOT_FOUND,
            'tenant_remove of a tenant never configured: 0x01');
    answered($c, req_tenant_show('b', opaque => 28),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'b is back to the defaults');
    answered($c, req_node_show(opaque => 29),
             node_view_body(15, 0, 5, 0, 10, 3, 0),
             'set: node: the removed reserve went back to the pool');

    # A removed tenant keeps its usage until the second ends.
    my $res = throttle_burst([[$c, 'd', 3]],
                             then => [req_tenant_remove('d'),
                                      req_tenant_show('d')]);
    ok($res->{same_second}, 'remove: the burst fitted in one second');
    is($res->{then}[0] ? $res->{then}[0]{status} : -1, ST_OK,
       'remove: d removed');
    view_is(parse_tenant_view($res->{then}[1]),
            { reserved => 0, hard_limit => UNLIMITED, used => 3,
              flags => 0 }, 'remove: d unconfigured, its usage kept');

    # Malformed bodies and values.
    my %bad = (
        'throttle of 0 units' => req_throttle('z', 0),
        'throttle with an empty body' => req(OP_THROTTLE, ''),
        'throttle with a name of 0 bytes' => req_throttle('', 1),
        'throttle with a name longer than the body' =>
            req_throttle('z', 1, name_len => 9),
        'throttle cut inside units' => req(OP_THROTTLE, "\0\0"),
        'tenant_show with a name of 0 bytes' => req_tenant_show(''),
        'tenant_show cut inside the name' =>
            req_tenant_show('zz', name_len => 3),
        'tenant_set with no flag' => req_tenant_set('z', 1, 1, flags => 0),
        'tenant_set with an unknown flag' =>
            req_tenant_set('z', 1, 1, flags => 0x04),
        'tenant_set with a known and an unknown flag' =>
            req_tenant_set('z', 1, 1, flags => 0x81),
        'tenant_set with a name of 0 bytes' => req_tenant_set('', 1, undef),
        'tenant_set cut before the name' =>
            req(OP_TENANT_SET, pack('Cx3NN', 1, 1, 1)),
        'tenant_remove with a name of 0 bytes' => req_tenant_remove(''),
        'node_set cut inside the capacity' => req(OP_NODE_SET, "\0\0\0"),
    );
    my $i = 100;
    for my $t (sort keys %bad) {
        my $bytes = $bad{$t};
        substr($bytes, 8, 4) = pack 'N', ++$i;
        refused($c, $bytes, ST_INVALID, "0x04: $t");
    }
    answered($c, req_tenant_show('z', opaque => 30),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             '0x04: none of the refused requests made z');
    my $a = parse_throttle_answer($c->call(req_throttle('tailed', 1,
                                                        extra => 'junk')));
    ok($a, 'throttle with bytes after the name: a throttle answer');
    my $v = tenant_of($c, 'tailed');
    ok($v && $v->{units} + $v->{throttled} == 1,
       'throttle with bytes after the name: one charge of "tailed"');
    $s->stop;
}

# ---- tenant_list streams many tenants ----
{
    my ($s, $c) = fresh();
    my $N = 1500;
    my %want = map {
        ("tenant-$_" => [$_ % 7, $_ % 3 ? UNLIMITED : 100 + $_])
    } 1 .. $N;
    $want{"odd \x00\xff bytes"} = [1, 2];
    $want{'L' x 1000} = [0, 9];
    my $i = 0;
    $c->send(join '', map {
        req_tenant_set($_, @{ $want{$_} }, opaque => ++$i)
    } sort keys %want);
    my @r = $c->responses(scalar keys %want);
    is(scalar(grep { $_->{status} == ST_OK } @r), scalar keys %want,
       'list: ' . (scalar keys %want) . ' tenants configured (capacity 0)');
    answered($c, req_tenant_remove('tenant-7', opaque => 1), '',
             'list: tenant-7 removed again');
    delete $want{'tenant-7'};
    my ($rec, $raw) = $c->tenant_records(opaque => 0x43);
    my $end = $raw->[-1];
    ok($end && $end->{raw} eq resp(OP_TENANT_LIST, ST_OK, '', 0x43),
       'list: ends with the empty end marker');
    ok(!(grep { $_->{opcode} != OP_TENANT_LIST || $_->{opaque} != 0x43 ||
                $_->{status} != ST_OK } @$raw),
       'list: every answer has the opcode, the opaque and status 0');
    ok(!(grep { !defined } @$rec), 'list: every record is well formed');
    my @conf = grep { defined && $_->{flags} & TENANT_CONFIGURED } @$rec;
    my %got = map { ($_->{name} => [$_->{reserved}, $_->{hard_limit}]) }
              @conf;
    is(scalar @conf, scalar keys %got, 'list: each tenant once');
    is_deeply(\%got, \%want,
              'list: every configured tenant with its reserve and limit');
    ok(!(grep { defined && !($_->{flags} & TENANT_CONFIGURED) &&
                $_->{name} ne 'tenant-7' } @$rec),
       'list: no record of a tenant never charged nor configured');
    my $sum = 0;
    $sum += $_->[0] for values %want;
    view_is(node_of($c), { capacity => 0, used => 0, pool_used => 0,
                           reserved_sum => $sum,
                           tenants => scalar keys %want, throttled => 0 },
            'list: node_show counts the configured tenants and reserves');
    $s->stop;
}

# ---- Out of memory: a new tenant record that does not fit ----
{
    my ($s, $c) = fresh(config => { memory_limit => 4096 });
    my ($n, $r) = (0);
    while ($n < 2000) {
        $r = $c->call(req_tenant_set("t$n", undef, 100));
        last unless $r && $r->{status} == ST_OK;
        $n++;
    }
    ok($r && $r->{raw} eq resp_err(OP_TENANT_SET, ST_NO_MEMORY),
       "memory: $n tenants fill the budget, then tenant_set: 0x82");
    my $long = 'x' x 200;
    refused($c, req_throttle($long, 1, opaque => 1), ST_NO_MEMORY,
            'memory: a charge needing a new tenant record: 0x82');
    answered($c, req_tenant_show($long, opaque => 2),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'memory: the tenant was not made');
    if ($n >= 1) {
        answered($c, req_tenant_set('t0', undef, 50, opaque => 3), '',
                 'memory: changing an existing tenant still works');
        answered($c, req_tenant_remove('t0', opaque => 4), '',
                 'memory: tenant_remove t0');
    }
    $s->stop;
}

# ---- Stats: throttling figures and command rows (fresh server) ----
{
    my ($s, $c) = fresh();
    answered($c, req_node_set(100, opaque => 1), '', 'stats: capacity 100');
    answered($c, req_tenant_set('s5', undef, 5, opaque => 2), '',
             'stats: s5 hard limit 5');
    answered($c, req_tenant_set('s6', 1, 5, opaque => 3), '',
             'stats: s6 reserve 1, hard limit 5');
    # Outcomes that do not depend on the second: one charge per tenant.
    my @script = ([req_throttle('s5', 5), THROTTLE_ALLOWED],
                  [req_throttle('s6', 6), THROTTLE_THROTTLED],
                  [req_throttle('s7', 2), THROTTLE_ALLOWED],
                  [req_throttle('s8', 101), THROTTLE_THROTTLED]);
    for my $row (@script) {
        my $a = parse_throttle_answer($c->call($row->[0]));
        is($a ? $a->{state} : -1, $row->[1], "stats: charge state $row->[1]");
    }
    refused($c, req_throttle('s9', 0, opaque => 4), ST_INVALID,
            'stats: a refused charge');
    $c->call(req_tenant_show('s5'));
    $c->call(req_tenant_show('none'));
    $c->tenant_records;
    $c->call(req_node_show());
    refused($c, req_tenant_remove('none', opaque => 5), ST_NOT_FOUND,
            'stats: tenant_remove of nothing');
    my $bad = $s->connect;
    refused($bad, req_auth('wrong', opaque => 6), ST_AUTH_FAILED,
            'stats: a wrong secret');
    $bad->close;
    my %want = (throttle_capacity => 100, throttle_tenants => 2,
                throttle_checks => 4, throttle_allowed => 2,
                throttle_throttled => 2, throttle_throttled_reserve => 0,
                throttle_throttled_pool_empty => 1,
                throttle_throttled_hard_limit => 1, throttle_units => 7,
                throttle_unthrottled_units => 0, auth_failures => 1,
                auth_closes => 0);
    my %cmd = ('command:auth' => 2, 'command:throttle' => 5,
               'command:tenant_show' => 2, 'command:tenant_list' => 1,
               'command:node_show' => 1, 'command:tenant_set' => 2,
               'command:tenant_remove' => 1, 'command:node_set' => 1,
               'command:unthrottle' => 0, 'command:reload' => 0);
    my %st = map { @$_ } $c->stats_pairs;
    is_deeply({ map { $_ => $st{$_} } keys %want }, \%want,
              'stats: the throttling figures');
    ok(exists $st{throttle_used}, 'stats: throttle_used is there');
    is_deeply({ map { $_ => $st{$_} } keys %cmd }, \%cmd,
              'stats: one command row per opcode, counting requests');
    my %host = mc_stats($s->{mc_port});
    my %hw = map { my $h = "counter_$_"; $h =~ tr/:/_/; ($h => $want{$_}) }
             keys %want;
    $hw{"counter_command_$_"} = $cmd{"command:$_"}
        for map { /^command:(.*)/ ? $1 : () } keys %cmd;
    is_deeply({ map { $_ => $host{$_} } keys %hw }, \%hw,
              'stats: the host\'s stats lines say the same');
    ok(exists $host{counter_throttle_used}, 'stats: counter_throttle_used');

    # throttle_used is this second's node usage.
    my $res = throttle_burst([[$c, 's7', 3]], then => [req_stats()]);
    my $sr = $res->{then}[0];
    my %now = map { @$_ } CounterTest::Conn::parse_stats($sr ? $sr->{body}
                                                             : '');
    ok($res->{same_second}, 'stats: the burst fitted in one second');
    is($now{throttle_used}, $res->{after}{used},
       'stats: throttle_used is the node\'s used this second');
    $s->stop;
}

$srv->stop;
done_testing;
