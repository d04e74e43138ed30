#!/usr/bin/perl
# 28-gcra.t: GCRA limits over real sockets (opcode 0x35): each answer
# field as redis-cell's CL.THROTTLE defines it (limit = burst + 1,
# remaining, used, retry_after and reset_after rounded up), exact
# arithmetic with an emission interval that is no whole number of ns,
# a million calls per second and more, never (a cost above the limit,
# nothing charged), peek charging nothing, a changed burst, count or
# period applying on the next call, allowed again when retried at the
# hint, one state seen from two connections on two workers, 0x04 for
# each malformed body, and a GCRA limit beside a window, a TTL counter
# and a semaphore of the same name.
# Limits meant to stay reached have emission intervals of an hour; the
# short ones are only checked in the direction time cannot break (a call
# in the same write as the one that reached the limit is limited; a call
# after sleeping the hint is allowed). Nothing measures how long the server
# took.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 2 });
if (my $why = opcodes_pending($srv, OP_GCRA_CHECK, OP_WINDOW_CHECK,
                              OP_TTL_INSERT)) {
    plan skip_all => $why;
}
my $c = $srv->connect;

my $H = 3_600_000_000_000;
my $SEC = 1_000_000_000;
my $SLACK = 60 * $SEC;      # more than the test can take between two calls

# Request bytes whose answer must be the error status with its text.
sub refused {
    my ($bytes, $status, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp_err($op, $status, $opaque),
                     $title);
}

# Checks a parsed check answer a against want: each key a number (equal)
# or [lo, hi] (within, inclusive). Returns a.
sub fields_are {
    my ($a, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my @bad;
    if (!$a) {
        @bad = ('no check answer');
    } else {
        push @bad, 'pad not zero' if $a->{pad} ne "\0\0\0";
        for my $k (sort keys %$want) {
            my $w = $want->{$k};
            my ($lo, $hi) = ref $w ? @$w : ($w, $w);
            push @bad, "$k $a->{$k} not in [$lo, $hi]"
                unless $a->{$k} >= $lo && $a->{$k} <= $hi;
        }
    }
    ok(!@bad, $title) or diag(join "\n", @bad);
    return $a;
}

# Sends a GCRA check on conn (default c) and checks its answer's fields.
sub gcra_is {
    my ($name, $burst, $count, $period, $opts, $want, $title, $conn) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $r = ($conn // $c)->call(req_gcra_check($name, $burst, $count,
                                               $period, %$opts));
    return fields_are(parse_check_answer($r), $want, $title);
}

# A GCRA check whose answer must be exactly these fields, byte for byte.
sub gcra_exact {
    my ($name, $burst, $count, $period, $opts, $fields, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $bytes = req_gcra_check($name, $burst, $count, $period, %$opts,
                               opaque => 0x35);
    return answer_is($c->call($bytes),
                     resp(OP_GCRA_CHECK, ST_OK, check_body(@$fields), 0x35),
                     $title);
}

# Up to a minute less than t, and t.
sub about { [$_[0] - $SLACK, $_[0]] }

# ---- One an hour, burst 2: every field; changed parameters apply ----
{
    # T = 1 h, L = 3: the first call's figures are exact (tat = now).
    gcra_exact('g', 2, 1, $H, {}, [CHECK_ALLOWED, 3, 2, 1, 0, $H],
               'g: first call: limit 3, remaining 2, used 1, reset 1 h');
    gcra_is('g', 2, 1, $H, {},
            { state => CHECK_ALLOWED, limit => 3, remaining => 1, used => 2,
              retry_after_ns => 0, reset_after_ns => about(2 * $H) },
            'g: second: remaining 1, reset about 2 h');
    gcra_is('g', 2, 1, $H, {},
            { state => CHECK_ALLOWED, limit => 3, remaining => 0, used => 3,
              retry_after_ns => 0, reset_after_ns => about(3 * $H) },
            'g: third: remaining 0, reset about 3 h');
    gcra_is('g', 2, 1, $H, {},
            { state => CHECK_LIMITED, limit => 3, remaining => 0, used => 3,
              retry_after_ns => about($H), reset_after_ns => about(3 * $H) },
            'g: fourth: limited, retry in about 1 h, nothing charged');
    gcra_is('g', 2, 1, $H, { peek => 1 },
            { state => CHECK_LIMITED, limit => 3,
              retry_after_ns => about($H), reset_after_ns => about(3 * $H) },
            'g: a peek agrees: the limited call charged nothing');
    gcra_is('g', 5, 1, $H, {},
            { state => CHECK_ALLOWED, limit => 6, remaining => 2, used => 4,
              retry_after_ns => 0, reset_after_ns => about(4 * $H) },
            'g: burst 5 on the next call: allowed (limit 6)');
    gcra_is('g', 2, 1, $H, {},
            { state => CHECK_LIMITED, limit => 3, remaining => 0, used => 3,
              retry_after_ns => about(2 * $H),
              reset_after_ns => about(4 * $H) },
            'g: burst 2 again: limited, retry in about 2 h');
    gcra_is('g', 0, 3600, $H, {},
            { state => CHECK_LIMITED, limit => 1,
              retry_after_ns => about(4 * $H),
              reset_after_ns => about(4 * $H) },
            'g: count 3600 an hour (T = 1 s), burst 0: limited for 4 h');
    gcra_is('g', 1, 1, 10 * $H, {},
            { state => CHECK_ALLOWED, limit => 2, remaining => 0, used => 2,
              retry_after_ns => 0, reset_after_ns => about(14 * $H) },
            'g: period 10 h, burst 1: allowed, TAT 14 h ahead');
    gcra_is('g', 1, 1, 10 * $H, {},
            { state => CHECK_LIMITED, limit => 2,
              retry_after_ns => about(4 * $H) },
            'g: and then limited');
}

# ---- Exact arithmetic: T = 1 s / 3 is no whole number of ns ----
{
    gcra_exact('x1', 2, 3, $SEC, {},
               [CHECK_ALLOWED, 3, 2, 1, 0, 333_333_334],
               'x1: cost 1: reset ceil(1e9/3) = 333333334');
    gcra_exact('x2', 2, 3, $SEC, { cost => 2 },
               [CHECK_ALLOWED, 3, 1, 2, 0, 666_666_667],
               'x2: cost 2: reset ceil(2e9/3) = 666666667');
    gcra_exact('x3', 2, 3, $SEC, { cost => 3 },
               [CHECK_ALLOWED, 3, 0, 3, 0, $SEC],
               'x3: cost 3 = the whole tolerance (3T = 1 s): allowed');
    # Reached with cost 3, limited with cost 1 in the same write; then
    # allowed after sleeping the hint, which is at most T rounded up.
    $c->send(req_gcra_check('x4', 2, 3, $SEC, cost => 3, opaque => 1)
             . req_gcra_check('x4', 2, 3, $SEC, opaque => 2));
    my @a = map { parse_check_answer($_) } $c->responses(2);
    fields_are($a[0], { state => CHECK_ALLOWED, remaining => 0, used => 3 },
               'x4: cost 3 allowed');
    fields_are($a[1], { state => CHECK_LIMITED, limit => 3, remaining => 0,
                        used => 3, retry_after_ns => [1, 333_333_334],
                        reset_after_ns => [1, $SEC] },
               'x4: cost 1 limited, retry within T');
    my $retry = $a[1] ? $a[1]{retry_after_ns} : 0;
    sleep $retry / 1e9;
    gcra_is('x4', 2, 3, $SEC, {}, { state => CHECK_ALLOWED, limit => 3 },
            "x4: allowed when retried after the hint ($retry ns)");

    # Two a second with burst 1: two at once, the third limited; its hint
    # works.
    $c->send(join '', map { req_gcra_check('rt', 1, 2, $SEC, opaque => $_) }
                      1 .. 3);
    @a = map { parse_check_answer($_) } $c->responses(3);
    fields_are($a[0], { state => CHECK_ALLOWED, limit => 2, remaining => 1,
                        used => 1 }, 'rt: first allowed');
    fields_are($a[1], { state => CHECK_ALLOWED, remaining => 0, used => 2 },
               'rt: second allowed (the burst)');
    fields_are($a[2], { state => CHECK_LIMITED, remaining => 0, used => 2,
                        retry_after_ns => [1, $SEC / 2],
                        reset_after_ns => [1, $SEC] },
               'rt: third limited, retry within 0.5 s');
    $retry = $a[2] ? $a[2]{retry_after_ns} : 0;
    sleep $retry / 1e9;
    gcra_is('rt', 1, 2, $SEC, {}, { state => CHECK_ALLOWED },
            "rt: allowed after the hint ($retry ns)");
}

# ---- A million a second, and more ----
{
    # T = 1 us, burst 9999999: 10 s of tolerance.
    $c->send(req_gcra_check('mps', 9_999_999, 1_000_000, $SEC,
                            cost => 10_000_000, opaque => 1)
             . req_gcra_check('mps', 9_999_999, 1_000_000, $SEC,
                              cost => 1_000_000, opaque => 2));
    my ($r1, $r2) = $c->responses(2);
    answer_is($r1, resp(OP_GCRA_CHECK, ST_OK,
                        check_body(CHECK_ALLOWED, 10_000_000, 0, 10_000_000,
                                   0, 10 * $SEC), 1),
              'mps: 1e6/s: the whole burst of 1e7 at once, reset 10 s');
    my $a = fields_are(parse_check_answer($r2),
                       { state => CHECK_LIMITED, limit => 10_000_000,
                         remaining => [0, 999_999],
                         retry_after_ns => [1, $SEC],
                         reset_after_ns => [9 * $SEC, 10 * $SEC] },
                       'mps: a second\'s worth more: limited within 1 s');
    ok($a && $a->{used} == 10_000_000 - $a->{remaining},
       'mps: used = limit - remaining');
    gcra_exact('mps1', 0, 1_000_000, $SEC, {},
               [CHECK_ALLOWED, 1, 0, 1, 0, 1000],
               'mps1: 1e6/s, burst 0: reset 1 us');
    gcra_exact('q1', 3, 4_000_000_000, $SEC, {},
               [CHECK_ALLOWED, 4, 3, 1, 0, 1],
               'q1: 4e9/s (T = 0.25 ns): reset rounded up to 1 ns');
    gcra_exact('q2', 3, 4_000_000_000, $SEC, { cost => 4 },
               [CHECK_ALLOWED, 4, 0, 4, 0, 1],
               'q2: 4e9/s, cost 4 = the tolerance of 1 ns: allowed');
    gcra_exact('big', 0, 1, 1_000_000 * $H, {},
               [CHECK_ALLOWED, 1, 0, 1, 0, 1_000_000 * $H],
               'big: a period of a million hours (64-bit ns)');
}

# ---- Never: a cost above burst + 1; nothing charged ----
{
    gcra_is('nv', 2, 1, $H, { cost => 4 },
            { state => CHECK_NEVER, limit => 3,
              retry_after_ns => RETRY_NEVER },
            'nv: cost 4 of limit 3: never, retry_after all ones');
    gcra_exact('nv', 2, 1, $H, { cost => 3 },
               [CHECK_ALLOWED, 3, 0, 3, 0, 3 * $H],
               'nv: cost 3 allowed as on a new name: nothing was charged');
    gcra_is('nv', 2, 1, $H, { cost => 4 },
            { state => CHECK_NEVER, limit => 3,
              retry_after_ns => RETRY_NEVER },
            'nv: never also when the limit is reached (not limited)');
    gcra_is('nv', 5, 1, $H, { cost => 3 },
            { state => CHECK_ALLOWED, limit => 6, used => 6,
              remaining => 0 },
            'nv: with burst 5, 3 more fit: the never charged nothing');
}

# ---- Peek charges nothing ----
{
    gcra_is('pk', 2, 1, $H, { peek => 1, cost => 3 },
            { state => CHECK_ALLOWED, limit => 3, retry_after_ns => 0 },
            'pk: peek of the whole burst on a new name: allowed');
    gcra_is('pk', 2, 1, $H, { peek => 1, cost => 3 },
            { state => CHECK_ALLOWED }, 'pk: and again');
    gcra_exact('pk', 2, 1, $H, { cost => 3 },
               [CHECK_ALLOWED, 3, 0, 3, 0, 3 * $H],
               'pk: the real call: as on a new name');
    gcra_is('pk', 2, 1, $H, { peek => 1 },
            { state => CHECK_LIMITED, limit => 3, remaining => 0,
              retry_after_ns => about($H) }, 'pk: a peek says limited');
    gcra_is('pk', 3, 1, $H, { peek => 1 },
            { state => CHECK_ALLOWED, limit => 4 },
            'pk: a peek with burst 3: allowed');
    gcra_is('pk', 3, 1, $H, {},
            { state => CHECK_ALLOWED, limit => 4, remaining => 0, used => 4,
              reset_after_ns => about(4 * $H) },
            'pk: burst 3 for real: the peek left room for it');
}

# ---- One state for every connection and worker ----
{
    my @o = map { $srv->connect } 1 .. 3;
    gcra_is('sh', 1, 1, $H, {}, { state => CHECK_ALLOWED, remaining => 1 },
            'sh: one connection takes 1 of 2', $o[0]);
    gcra_is('sh', 1, 1, $H, {}, { state => CHECK_ALLOWED, remaining => 0 },
            'sh: another takes the 2nd', $o[1]);
    gcra_is('sh', 1, 1, $H, {}, { state => CHECK_LIMITED },
            'sh: a third is limited', $o[2]);
    $_->close for @o;
}

# ---- Malformed requests: 0x04, nothing charged ----
{
    my @bad = (
        [0, 1, $SEC, { flags => 0x02 }, 'flags bit 1'],
        [0, 1, $SEC, { flags => 0x81 }, 'peek with bit 7'],
        [0, 0, $SEC, {}, 'count 0'],
        [0, 1, $SEC, { cost => 0 }, 'cost 0'],
        [0, 1, 0, {}, 'period 0'],
        [0, 1, $SEC, { name_len => 0 }, 'name length 0'],
        [0, 1, $SEC, { name_len => 4 }, 'name running past the body'],
    );
    my $op = 0xc0;
    for my $b (@bad) {
        my ($burst, $count, $period, $o, $what) = @$b;
        refused(req_gcra_check('bad', $burst, $count, $period, %$o,
                               opaque => $op++), ST_INVALID,
                "gcra_check: $what: 0x04");
    }
    refused(req(OP_GCRA_CHECK,
                substr(req_gcra_check('bad', 0, 1, $H), 12, 25),
                opaque => $op++),
            ST_INVALID, 'gcra_check: body of 25 bytes: 0x04');
    refused(req(OP_GCRA_CHECK, '', opaque => $op++), ST_INVALID,
            'gcra_check: empty body: 0x04');
    refused(req_gcra_check('', 0, 1, $H, opaque => $op++), ST_INVALID,
            'gcra_check: empty name: 0x04');
    gcra_exact('bad', 0, 1, $H, {}, [CHECK_ALLOWED, 1, 0, 1, 0, $H],
               'bad: none of the refused calls charged it');
    gcra_exact('ok', 0, 1, $H, { extra => 'junk' },
               [CHECK_ALLOWED, 1, 0, 1, 0, $H],
               'bytes after the name are ignored');
    gcra_is('ok', 0, 1, $H, {}, { state => CHECK_LIMITED },
            'ok: the name was "ok" only');
}

# ---- A GCRA limit beside a window, a TTL counter, a semaphore ----
{
    gcra_exact('gw', 0, 1, $H, {}, [CHECK_ALLOWED, 1, 0, 1, 0, $H],
               'gw: GCRA allowed');
    my $w = parse_check_answer($c->call(req_window_check(
        'gw', 1, window_ns => $H, slots => 10)));
    ok($w && $w->{state} == CHECK_ALLOWED && $w->{used} == 1,
       'gw: a window of the same name starts empty');
    gcra_is('gw', 0, 1, $H, {}, { state => CHECK_LIMITED },
            'gw: the GCRA limit is reached');
    $w = parse_check_answer($c->call(req_window_check(
        'gw', 2, window_ns => $H, slots => 10)));
    ok($w && $w->{state} == CHECK_ALLOWED && $w->{used} == 2,
       'gw: the window counts only its own calls');
    answer_is($c->call(req_ttl_query('gw', opaque => 1)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 1),
              'gw: no TTL counter of that name');
    answer_is($c->call(req_get('gw', opaque => 2)),
              resp_err(OP_GET, ST_NOT_FOUND, 2),
              'gw: no semaphore counter of that name');
    answer_is($c->call(req_ttl_insert('gw', 1, 1, UNIT_H, opaque => 3)),
              resp(OP_TTL_INSERT, ST_OK, '', 3),
              'gw: a TTL counter of the name is new');
    answer_is($c->call(req_acquire('gw', 1, 1, opaque => 4)),
              resp(OP_ACQUIRE, ST_OK, u32(1), 4),
              'gw: so is a semaphore counter');
    gcra_is('gw', 0, 1, $H, { peek => 1 }, { state => CHECK_LIMITED },
            'gw: the GCRA limit is still reached');
}

$c->close;
$srv->stop;
done_testing;
