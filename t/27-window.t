#!/usr/bin/perl
# 27-window.t: sliding-window limits over real sockets (opcode 0x34):
# allowed answers with every field, limited with its retry hint, allowed
# again when retried at that hint, never (a cost above the limit, nothing
# charged even without peek), peek charging nothing, a changed limit
# applying on the next call, the defaults (1 s, 10 slots), a record
# re-shaped by a call with another window or slot count, at most `limit`
# allowed in any window of real time, 0x04 for each malformed body, and
# the four namespaces (semaphore, TTL, window, GCRA) of one name.
# Windows meant to keep their counts are an hour long; the short ones are
# only ever checked in the direction time cannot break: a call sent in
# the same write as the one that filled the window is limited, and a call
# sent after sleeping the retry hint is allowed. Nothing measures how long
# the server took.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;
use Time::HiRes qw(sleep clock_gettime CLOCK_MONOTONIC);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 1 });
if (my $why = opcodes_pending($srv, OP_WINDOW_CHECK, OP_GCRA_CHECK,
                              OP_TTL_INSERT)) {
    plan skip_all => $why;
}
my $c = $srv->connect;

my $HOUR = 3_600_000_000_000;
my $SEC = 1_000_000_000;

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

# Sends a window check and checks its answer's fields (see fields_are).
sub window_is {
    my ($name, $limit, $opts, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $r = $c->call(req_window_check($name, $limit, %$opts));
    return fields_are(parse_check_answer($r), $want, $title);
}

# Hour-long window with 10 slots of 6 minutes.
my %HOURLY = (window_ns => $HOUR, slots => 10);
my $S = $HOUR / 10;
# A count made by this call falls out after one window and at most one
# slot more; the last of older counts, whose slot may have passed since,
# at least one slot less.
my $RESET = [$HOUR + 1, $HOUR + $S];
my $RESET_OLD = [$HOUR - $S, $HOUR + $S];

# ---- Allowed until the limit, then limited; a changed limit applies ----
{
    for my $i (1 .. 3) {
        window_is('w', 3, \%HOURLY,
                  { state => CHECK_ALLOWED, limit => 3, remaining => 3 - $i,
                    used => $i, retry_after_ns => 0,
                    reset_after_ns => $RESET },
                  "w: call $i of limit 3 allowed");
    }
    my $a = window_is('w', 3, \%HOURLY,
                      { state => CHECK_LIMITED, limit => 3, remaining => 0,
                        used => 3, retry_after_ns => [$HOUR - $S, $HOUR + $S],
                        reset_after_ns => $RESET_OLD },
                      'w: the 4th is limited: retry when the counts age out');
    ok($a && $a->{retry_after_ns} <= $a->{reset_after_ns},
       'w: retry_after_ns <= reset_after_ns');
    window_is('w', 3, { %HOURLY, peek => 1 },
              { state => CHECK_LIMITED, used => 3 },
              'w: a peek agrees: the limited call charged nothing');
    window_is('w', 5, \%HOURLY,
              { state => CHECK_ALLOWED, limit => 5, remaining => 1,
                used => 4, retry_after_ns => 0 },
              'w: limit 5 on the next call: allowed');
    window_is('w', 5, \%HOURLY,
              { state => CHECK_ALLOWED, limit => 5, remaining => 0,
                used => 5 }, 'w: the 5th of 5');
    window_is('w', 3, \%HOURLY,
              { state => CHECK_LIMITED, limit => 3, remaining => 0,
                used => 5, retry_after_ns => [1, $HOUR + $S] },
              'w: back to limit 3: limited');
    window_is('w', 6, { %HOURLY, cost => 2 },
              { state => CHECK_LIMITED, limit => 6, used => 5 },
              'w: cost 2 with limit 6 and 5 used: limited (not never)');
    window_is('w', 7, { %HOURLY, cost => 2 },
              { state => CHECK_ALLOWED, limit => 7, remaining => 0,
                used => 7 }, 'w: cost 2 with limit 7: allowed, 7 used');
}

# ---- Never: a cost above the limit; nothing charged, even without peek ----
{
    window_is('nv', 3, { %HOURLY, cost => 4 },
              { state => CHECK_NEVER, limit => 3,
                retry_after_ns => RETRY_NEVER },
              'nv: cost 4 of limit 3: never, retry_after all ones');
    window_is('nv', 0, \%HOURLY,
              { state => CHECK_NEVER, limit => 0,
                retry_after_ns => RETRY_NEVER }, 'nv: limit 0: never');
    window_is('nv', 3, { %HOURLY, cost => 3 },
              { state => CHECK_ALLOWED, limit => 3, remaining => 0,
                used => 3, retry_after_ns => 0, reset_after_ns => $RESET },
              'nv: cost 3 allowed: the never answers charged nothing');
    window_is('nv', 3, { %HOURLY, cost => 4 },
              { state => CHECK_NEVER, retry_after_ns => RETRY_NEVER },
              'nv: never also on a full window (not limited)');
    window_is('nv', 4, { %HOURLY, cost => 1 },
              { state => CHECK_ALLOWED, used => 4 },
              'nv: still 3 used before this call');
}

# ---- Peek charges nothing ----
{
    window_is('pk', 1, { %HOURLY, peek => 1 },
              { state => CHECK_ALLOWED, limit => 1, retry_after_ns => 0 },
              'pk: peek on a new name: allowed');
    window_is('pk', 1, { %HOURLY, peek => 1 },
              { state => CHECK_ALLOWED, limit => 1 }, 'pk: peek again');
    window_is('pk', 1, \%HOURLY,
              { state => CHECK_ALLOWED, remaining => 0, used => 1,
                reset_after_ns => $RESET },
              'pk: a real call: 1 used, so the peeks took nothing');
    window_is('pk', 1, { %HOURLY, peek => 1 },
              { state => CHECK_LIMITED, limit => 1,
                retry_after_ns => [1, $HOUR + $S] },
              'pk: a peek now says limited, with a hint');
    window_is('pk', 2, { %HOURLY, peek => 1 },
              { state => CHECK_ALLOWED }, 'pk: peek with limit 2: allowed');
    window_is('pk', 2, { %HOURLY, cost => 2 },
              { state => CHECK_LIMITED, used => 1 },
              'pk: cost 2 of limit 2: limited, still 1 used');
}

# ---- Limited, then allowed when retried at the hint ----
{
    # Window 500 ms in 5 slots: the third call, in the same write as the
    # first two, is limited; sleeping its hint makes the same call allowed.
    my %short = (window_ns => 500_000_000, slots => 5);
    $c->send(join '', map { req_window_check('rt', 2, %short, opaque => $_) }
                      1 .. 3);
    my @a = map { parse_check_answer($_) } $c->responses(3);
    fields_are($a[0], { state => CHECK_ALLOWED, used => 1 }, 'rt: 1 of 2');
    fields_are($a[1], { state => CHECK_ALLOWED, used => 2 }, 'rt: 2 of 2');
    fields_are($a[2], { state => CHECK_LIMITED, used => 2, remaining => 0,
                        retry_after_ns => [1, 600_000_000] },
               'rt: the 3rd is limited, retry within window + slot');
    my $retry = $a[2] ? $a[2]{retry_after_ns} : 0;
    sleep $retry / 1e9;
    window_is('rt', 2, \%short, { state => CHECK_ALLOWED },
              "rt: allowed when retried after the hint ($retry ns)");

    # The defaults: window 0 is one second, slots 0 is 10.
    $c->send(req_window_check('df', 1, opaque => 1)
             . req_window_check('df', 1, opaque => 2)
             . req_window_check('df', 1, window_ns => $SEC, slots => 10,
                                opaque => 3));
    @a = map { parse_check_answer($_) } $c->responses(3);
    fields_are($a[0], { state => CHECK_ALLOWED, used => 1,
                        reset_after_ns => [$SEC + 1, $SEC * 11 / 10] },
               'df: default shape: the count stays 1 s to 1.1 s');
    fields_are($a[1], { state => CHECK_LIMITED,
                        retry_after_ns => [1, $SEC * 11 / 10] },
               'df: limited, retry within 1.1 s');
    fields_are($a[2], { state => CHECK_LIMITED, used => 1 },
               'df: 1 s in 10 slots given explicitly is the same record');
    $retry = $a[1] ? $a[1]{retry_after_ns} : 0;
    sleep $retry / 1e9;
    window_is('df', 1, {}, { state => CHECK_ALLOWED },
              'df: allowed after sleeping the hint');
}

# ---- Any interval of one window holds at most `limit` allowed calls ----
{
    # Calls every few ms for 1.5 s against a 300 ms window of 3 slots. For
    # allowed calls i < j that are `limit` apart, the server saw j at least
    # a window after i; the client sent i before the server saw it and got
    # j's answer after, so the client's times can only be further apart:
    # this cannot fail on a slow machine, only on a server that allows too
    # much.
    my ($limit, $win) = (4, 300_000_000);
    my @allowed;                # [sent, answered] of each allowed call
    my ($calls, $bad) = (0, 0);
    my $end = clock_gettime(CLOCK_MONOTONIC) + 1.5;
    while (clock_gettime(CLOCK_MONOTONIC) < $end) {
        my $sent = clock_gettime(CLOCK_MONOTONIC);
        my $a = parse_check_answer($c->call(req_window_check(
            'sl', $limit, window_ns => $win, slots => 3)));
        my $got = clock_gettime(CLOCK_MONOTONIC);
        $calls++;
        if (!$a || $a->{state} == CHECK_NEVER) { $bad++; last }
        push @allowed, [$sent, $got] if $a->{state} == CHECK_ALLOWED;
        sleep 0.003;
    }
    is($bad, 0, "sl: $calls calls, each answered allowed or limited");
    cmp_ok(scalar @allowed, '>', $limit, 'sl: more than one window allowed');
    my @short;
    for my $i (0 .. $#allowed - $limit) {
        my $gap = $allowed[$i + $limit][1] - $allowed[$i][0];
        push @short, sprintf('%d..%d: %.0f ms', $i, $i + $limit, $gap * 1e3)
            if $gap * 1e9 < $win;
    }
    is_deeply(\@short, [],
              "sl: no $limit+1 allowed calls within one window");
}

# ---- A call with another shape re-shapes the record conservatively ----
{
    for my $i (1 .. 3) {
        window_is('sh', 3, \%HOURLY, { state => CHECK_ALLOWED, used => $i },
                  "sh: $i of 3 in an hour of 10 slots");
    }
    window_is('sh', 3, { window_ns => $HOUR / 2, slots => 5 },
              { state => CHECK_LIMITED, limit => 3 },
              'sh: half an hour of 5 slots: still limited');
    window_is('sh', 3, { window_ns => 2 * $HOUR, slots => 64 },
              { state => CHECK_LIMITED, limit => 3 },
              'sh: two hours of 64 slots: still limited');
    window_is('sh', 4, { window_ns => $HOUR, slots => 60 },
              { state => CHECK_ALLOWED, limit => 4, used => 4,
                remaining => 0 },
              'sh: an hour of 60 slots with limit 4: allowed, the 3 kept');
    window_is('sh', 4, \%HOURLY, { state => CHECK_LIMITED, used => 4 },
              'sh: back to 10 slots: limited, 4 used');
    window_is('s1', 1, { window_ns => $HOUR, slots => 1 },
              { state => CHECK_ALLOWED, used => 1,
                reset_after_ns => [$HOUR + 1, 2 * $HOUR] },
              's1: one slot: the count stays one to two windows');
    window_is('s64', 1, { window_ns => 64_000, slots => 64 },
              { state => CHECK_ALLOWED, limit => 1 },
              's64: 64 slots of 1 us: the smallest legal slot');
    window_is('s1us', 1, { window_ns => 1000, slots => 1 },
              { state => CHECK_ALLOWED, limit => 1 },
              's1us: a window of 1 us in 1 slot');
}

# ---- Malformed requests: 0x04, nothing charged ----
{
    my @bad = (
        [{ flags => 0x02 }, 'flags bit 1'],
        [{ flags => 0x80 }, 'flags bit 7'],
        [{ flags => 0x03 }, 'peek with another flag bit'],
        [{ slots => 65 }, 'slots 65'],
        [{ slots => 255 }, 'slots 255'],
        [{ cost => 0 }, 'cost 0'],
        [{ window_ns => $SEC + 1, slots => 10 },
         'window not a multiple of the slots'],
        [{ window_ns => 9_990, slots => 10 }, 'slots of 999 ns'],
        [{ window_ns => 999, slots => 1 }, 'a window of 999 ns'],
        [{ window_ns => 63_936, slots => 64 }, '64 slots of 999 ns'],
        [{ name_len => 0 }, 'name length 0'],
        [{ name_len => 4 }, 'name running past the body'],
    );
    my $op = 0xb0;
    for my $b (@bad) {
        my ($o, $what) = @$b;
        refused(req_window_check('bad', 1, %$o, opaque => $op++), ST_INVALID,
                "window_check: $what: 0x04");
    }
    refused(req(OP_WINDOW_CHECK,
                substr(req_window_check('bad', 1), 12, 21), opaque => $op++),
            ST_INVALID, 'window_check: body of 21 bytes: 0x04');
    refused(req(OP_WINDOW_CHECK, '', opaque => $op++), ST_INVALID,
            'window_check: empty body: 0x04');
    refused(req_window_check('', 1, opaque => $op++), ST_INVALID,
            'window_check: empty name: 0x04');
    window_is('bad', 1, \%HOURLY,
              { state => CHECK_ALLOWED, used => 1, remaining => 0 },
              'bad: none of the refused calls charged it');
    window_is('ok', 1, { %HOURLY, reserved => 0xffff, extra => 'junk' },
              { state => CHECK_ALLOWED, used => 1 },
              'reserved bytes and bytes after the name are ignored');
    window_is('ok', 1, \%HOURLY, { state => CHECK_LIMITED, used => 1 },
              'ok: the name was "ok" only');
}

# ---- One name, four namespaces ----
{
    my $n = 'ns';
    my $gcra = sub { req_gcra_check($n, 0, 1, $HOUR, opaque => $_[0]) };
    answer_is($c->call(req_acquire($n, 1, 1, opaque => 1)),
              resp(OP_ACQUIRE, ST_OK, u32(1), 1), 'ns: semaphore 1 of 1');
    answer_is($c->call(req_ttl_insert($n, 5, 1, UNIT_H, opaque => 2)),
              resp(OP_TTL_INSERT, ST_OK, '', 2), 'ns: TTL counter inserted');
    window_is($n, 1, \%HOURLY, { state => CHECK_ALLOWED, used => 1 },
              'ns: window 1 of 1 allowed');
    fields_are(parse_check_answer($c->call($gcra->(3))),
               { state => CHECK_ALLOWED, limit => 1, remaining => 0,
                 used => 1, reset_after_ns => $HOUR },
               'ns: GCRA allowed as on a new name');
    answer_is($c->call(req_acquire($n, 1, 1, opaque => 4)),
              resp_err(OP_ACQUIRE, ST_NOT_AVAILABLE, 4),
              'ns: the semaphore is full');
    refused(req_ttl_insert($n, 9, 1, UNIT_H, opaque => 5), ST_EXISTS,
            'ns: the TTL counter exists');
    window_is($n, 1, \%HOURLY, { state => CHECK_LIMITED, used => 1 },
              'ns: the window is full with its own 1');
    fields_are(parse_check_answer($c->call($gcra->(6))),
               { state => CHECK_LIMITED }, 'ns: the GCRA limit is reached');
    answer_is($c->call(req_ttl_query($n, opaque => 7)),
              resp(OP_TTL_QUERY, ST_OK, ttl_view_body(5, 1, UNIT_H), 7),
              'ns: the TTL counter kept its quota 5');
    answer_is($c->call(req_ttl_purge($n, opaque => 8)),
              resp(OP_TTL_PURGE, ST_OK, '', 8), 'ns: TTL counter purged');
    answer_is($c->call(req_get($n, opaque => 9)),
              resp(OP_GET, ST_OK, u32(1), 9),
              'ns: the semaphore still holds 1');
    window_is($n, 1, { %HOURLY, peek => 1 },
              { state => CHECK_LIMITED, used => 1 },
              'ns: the window still counts its 1');
    answer_is($c->call(req_release($n, 1, opaque => 10)),
              resp(OP_RELEASE, ST_OK, '', 10), 'ns: semaphore released');
    window_is($n, 1, { %HOURLY, peek => 1 }, { state => CHECK_LIMITED },
              'ns: the window is unmoved by the release');
    fields_are(parse_check_answer($c->call($gcra->(11))),
               { state => CHECK_LIMITED }, 'ns: and so is the GCRA limit');
    answer_is($c->call(req_ttl_query('x-none', opaque => 12)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 12),
              'a window-only name has no TTL counter');
    window_is('ns-w', 1, \%HOURLY, { state => CHECK_ALLOWED },
              'ns-w: a window');
    answer_is($c->call(req_get('ns-w', opaque => 13)),
              resp_err(OP_GET, ST_NOT_FOUND, 13),
              'ns-w: no semaphore counter was created');
    answer_is($c->call(req_ttl_query('ns-w', opaque => 14)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 14),
              'ns-w: no TTL counter either');
}

$c->close;
$srv->stop;
done_testing;
