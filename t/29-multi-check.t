#!/usr/bin/perl
# 29-multi-check.t: multi_check over real sockets (opcode 0x36): all or
# nothing (every item allowed and charged, or nothing charged and each
# item's state as a peek of it alone would say), never items, peek, one
# name in two kinds being no duplicate, 16 items and the body bound, 0x04
# for each malformed body (duplicates included), and all or nothing under
# concurrent multi-checks from several connections on two workers. Then
# the rate limits as a whole: counter.memory_limit shared by semaphore
# counters and rate-limit records in both directions, the Stats figures
# (Stats opcode and the host's `stats`) of a scripted scenario, and the GC
# sweep freeing expired records of each kind without anyone asking.
# Windows and GCRA intervals are an hour long; the records meant to
# expire live 100-200 ms and are only checked after sleeping past that or
# by a bounded wait. Nothing measures how long the server took.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 2 });
if (my $why = opcodes_pending($srv, OP_TTL_INSERT, OP_TTL_QUERY,
                              OP_TTL_UPDATE, OP_TTL_PURGE, OP_WINDOW_CHECK,
                              OP_GCRA_CHECK, OP_MULTI_CHECK)) {
    plan skip_all => $why;
}
my $c = $srv->connect;

my $H = 3_600_000_000_000;
my $SLACK = 60_000_000_000;     # more than the test takes between calls

# An item: a window of an hour in 10 slots on name with limit.
sub W {
    my ($name, $limit, @o) = @_;
    return [OP_WINDOW_CHECK, $name, $limit, window_ns => $H, slots => 10,
            @o];
}

# An item: a GCRA limit of one an hour with burst on name.
sub G {
    my ($name, $burst, @o) = @_;
    return [OP_GCRA_CHECK, $name, $burst, 1, $H, @o];
}

# Request bytes whose answer must be the error status with its text.
sub refused {
    my ($bytes, $status, $title, $conn) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is(($conn // $c)->call($bytes),
                     resp_err($op, $status, $opaque), $title);
}

# Checks a parsed check answer a against want: each key a number (equal)
# or [lo, hi] (within, inclusive); true when all match.
sub fields_match {
    my ($a, $want, $bad) = @_;
    if (!$a) { push @$bad, 'no check answer'; return 0 }
    my $n = @$bad;
    push @$bad, 'pad not zero' if $a->{pad} ne "\0\0\0";
    for my $k (sort keys %$want) {
        my $w = $want->{$k};
        my ($lo, $hi) = ref $w ? @$w : ($w, $w);
        push @$bad, "$k $a->{$k} not in [$lo, $hi]"
            unless $a->{$k} >= $lo && $a->{$k} <= $hi;
    }
    return @$bad == $n;
}

# Sends a multi_check of items (options opts) and checks the answer:
# overall byte, count, and each item against its want (see fields_match).
# Returns the parsed answer.
sub multi_is {
    my ($items, $opts, $overall, $wants, $title, $conn) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $r = ($conn // $c)->call(req_multi_check($items, %$opts));
    my $m = parse_multi_answer($r);
    my @bad;
    if (!$m) {
        @bad = ('no multi answer: '
                . ($r ? hexdump(substr $r->{raw}, 0, 64) : 'nothing'));
    } else {
        push @bad, "overall $m->{overall}, not $overall"
            if $m->{overall} != $overall;
        push @bad, "count $m->{count}, not " . scalar @$wants
            if $m->{count} != @$wants;
        for my $i (0 .. $#$wants) {
            my @b;
            fields_match($m->{items}[$i], $wants->[$i], \@b);
            push @bad, map { "item $i: $_" } @b;
        }
    }
    ok(!@bad, $title) or diag(join "\n", @bad);
    return $m;
}

# A single check that must answer exactly these fields.
sub single_exact {
    my ($item, $fields, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, @a) = @$item;
    my $bytes = $op == OP_WINDOW_CHECK ? req_window_check(@a, opaque => 7)
                                       : req_gcra_check(@a, opaque => 7);
    return answer_is($c->call($bytes),
                     resp($op, ST_OK, check_body(@$fields), 7), $title);
}

# A single check whose answer must match want (see fields_match).
sub single_is {
    my ($item, $want, $title, $conn) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, @a) = @$item;
    my $bytes = $op == OP_WINDOW_CHECK ? req_window_check(@a)
                                       : req_gcra_check(@a);
    my @bad;
    fields_match(parse_check_answer(($conn // $c)->call($bytes)), $want,
                 \@bad);
    ok(!@bad, $title) or diag(join "\n", @bad);
}

my $WRESET = [$H + 1, $H + $H / 10];    # a window count made now
my %ALLOWED = (state => CHECK_ALLOWED, retry_after_ns => 0);
my %LIMITED = (state => CHECK_LIMITED);
my %NEVER = (state => CHECK_NEVER, retry_after_ns => RETRY_NEVER);

# ---- All allowed: every item charged ----
{
    multi_is([W('aw', 2), G('ag', 1)], {}, 0,
             [{ %ALLOWED, limit => 2, remaining => 1, used => 1,
                reset_after_ns => $WRESET },
              { %ALLOWED, limit => 2, remaining => 1, used => 1,
                reset_after_ns => $H }],
             'all allowed: overall 0, each item allowed with its figures');
    multi_is([W('aw', 2), G('ag', 1)], {}, 0,
             [{ %ALLOWED, remaining => 0, used => 2 },
              { %ALLOWED, remaining => 0, used => 2,
                reset_after_ns => [2 * $H - $SLACK, 2 * $H] }],
             'again: both charged a second time');
    multi_is([W('aw', 2), G('ag', 1)], {}, 1,
             [{ %LIMITED, limit => 2, used => 2 },
              { %LIMITED, limit => 2, retry_after_ns => [$H - $SLACK, $H] }],
             'a third: both limited, overall 1');
    single_is(W('aw', 3), { %ALLOWED, used => 3 },
              'aw: the window holds the 2 charged by the multis');
}

# ---- All or nothing: one denied item and nothing is charged ----
{
    single_is(W('dw', 1), { %ALLOWED, used => 1 }, 'dw: filled');
    multi_is([W('dw', 1), G('dg', 0), W('dw2', 5)], {}, 1,
             [{ %LIMITED, limit => 1, used => 1 },
              { %ALLOWED, limit => 1 },
              { %ALLOWED, limit => 5 }],
             'denied: the full window limited, the others allowed as alone');
    single_exact(G('dg', 0), [CHECK_ALLOWED, 1, 0, 1, 0, $H],
                 'dg: charged nothing by the denied multi');
    single_is(W('dw2', 5), { %ALLOWED, used => 1 },
              'dw2: charged nothing by the denied multi');
    multi_is([G('dg2', 0), W('dw3', 4), W('dw', 1)], {}, 1,
             [{ %ALLOWED }, { %ALLOWED }, { %LIMITED }],
             'denied by the last item: the earlier ones allowed as alone');
    single_exact(G('dg2', 0), [CHECK_ALLOWED, 1, 0, 1, 0, $H],
                 'dg2: charged nothing');
    single_is(W('dw3', 4), { %ALLOWED, used => 1 }, 'dw3: charged nothing');
    single_is(W('dw', 1, peek => 1), { %LIMITED, used => 1 },
              'dw: still its own 1');

    multi_is([W('nw', 1, cost => 2), G('ng', 0)], {}, 1,
             [{ %NEVER, limit => 1 }, { %ALLOWED }],
             'never: cost 2 of limit 1 is never; overall 1');
    multi_is([W('nw2', 3), G('ng2', 0, cost => 2)], {}, 1,
             [{ %ALLOWED }, { %NEVER, limit => 1 }],
             'never: GCRA cost 2 with burst 0 is never');
    single_exact(G('ng', 0), [CHECK_ALLOWED, 1, 0, 1, 0, $H],
                 'ng: charged nothing');
    single_is(W('nw2', 3), { %ALLOWED, used => 1 }, 'nw2: charged nothing');
    single_is(W('nw', 1), { %ALLOWED, used => 1 },
              'nw: the never item charged nothing either');
}

# ---- Peek: answers as usual, charges nothing ----
{
    multi_is([W('pw', 1), G('pg', 0)], { peek => 1 }, 0,
             [{ %ALLOWED, limit => 1 }, { %ALLOWED, limit => 1 }],
             'peek: both allowed, overall 0');
    multi_is([W('pw', 1), G('pg', 0)], { peek => 1 }, 0,
             [{ %ALLOWED }, { %ALLOWED }], 'peek again: the same');
    single_exact(G('pg', 0), [CHECK_ALLOWED, 1, 0, 1, 0, $H],
                 'pg: nothing was charged by the peeks');
    single_is(W('pw', 1), { %ALLOWED, used => 1 },
              'pw: nothing was charged by the peeks');
    multi_is([W('pw', 1), G('pg', 0)], { peek => 1 }, 1,
             [{ %LIMITED }, { %LIMITED }], 'peek of full limits: overall 1');
}

# ---- One name in two kinds is no duplicate; 16 items; the body bound ----
{
    multi_is([W('same', 1), G('same', 0)], {}, 0,
             [{ %ALLOWED, used => 1 }, { %ALLOWED, used => 1 }],
             'a window and a GCRA limit of one name: two items');
    my @sixteen = map { W("i$_", 1) } 1 .. MULTI_MAX;
    multi_is(\@sixteen, {}, 0, [map { { %ALLOWED, used => 1 } } 1 .. 16],
             '16 items: all allowed');
    multi_is(\@sixteen, {}, 1, [map { { %LIMITED, used => 1 } } 1 .. 16],
             '16 items again: all limited');

    # 16 items of 4000-byte names fit the largest body; of 4100 they do
    # not, and the body is skipped unread.
    my @long = map { W(sprintf('%02d', $_) . ('n' x 3998), 1) } 1 .. 16;
    multi_is(\@long, {}, 0, [map { { %ALLOWED } } 1 .. 16],
             '16 items with 4000-byte names: answered');
    my @over = map { W(sprintf('%02d', $_) . ('o' x 4098), 1) } 1 .. 16;
    my $bytes = req_multi_check(\@over, opaque => 0x36);
    cmp_ok(length($bytes) - 12, '>', 18 + 65535,
           'the 16 items of 4100-byte names pass the largest body');
    $c->send($bytes . req_noop(opaque => 0x37));
    answer_is($c->response, resp_err(OP_MULTI_CHECK, ST_INVALID, 0x36),
              'a multi_check past the largest body: 0x04');
    answer_is($c->response, resp(OP_NOOP, ST_OK, '', 0x37),
              'its body was skipped: the next request is answered');
    single_is($over[0], { %ALLOWED, used => 1 },
              'the refused multi charged nothing');
}

# ---- Malformed bodies: 0x04, nothing charged ----
{
    my $wbody = window_check_body('ma', 1, window_ns => $H);
    my $gbody = gcra_check_body('mg', 0, 1, $H);
    my $abc = window_check_body('abc', 1, window_ns => $H);
    my @bad = (
        [[W('ma', 1)], { flags => 0x02 }, 'flags bit 1'],
        [[W('ma', 1)], { flags => 0x81 }, 'peek with bit 7'],
        [[], {}, 'count 0, no items'],
        [[W('ma', 1)], { count => 0 }, 'count 0 with an item'],
        [[map { W("ma$_", 1) } 1 .. 17], {}, '17 items'],
        [[W('ma', 1)], { count => 2 }, 'count 2, one item'],
        [[W('ma', 1), G('mg', 0)], { count => 1 }, 'count 1, two items'],
        [[W('ma', 1)], { extra => "\0" }, 'a byte after the items'],
        [[[0x30, \substr(req_ttl_insert('ma', 1, 1, UNIT_H), 12)]], {},
         'an item of opcode 0x30'],
        [[[0x36, \"\0\1"]], {}, 'an item of opcode 0x36'],
        [[[0x01, \"\0\2ma"]], {}, 'an item of opcode 0x01'],
        [[[OP_WINDOW_CHECK, \$wbody, length($wbody) + 5]], {},
         'item_len past the body'],
        [[[OP_WINDOW_CHECK, \substr($wbody, 0, 21)]], {},
         'a window item of 21 bytes'],
        [[[OP_GCRA_CHECK, \substr($gbody, 0, 25)]], {},
         'a GCRA item of 25 bytes'],
        [[[OP_WINDOW_CHECK, \$abc, length($abc) - 1]], {},
         'an item whose name runs past its item_len'],
        [[W('ma', 1, cost => 0)], {}, 'a window item with cost 0'],
        [[W('ma', 1, slots => 65)], {}, 'a window item with 65 slots'],
        [[W('ma', 1, window_ns => $H + 1)], {},
         'a window item whose window is no multiple of its slots'],
        [[W('ma', 1, name_len => 0)], {}, 'a window item with an empty name'],
        [[G('mg', 0, cost => 0)], {}, 'a GCRA item with cost 0'],
        [[[OP_GCRA_CHECK, 'mg', 0, 0, $H]], {}, 'a GCRA item with count 0'],
        [[[OP_GCRA_CHECK, 'mg', 0, 1, 0]], {}, 'a GCRA item with period 0'],
        [[W('ma', 1, peek => 1)], {}, 'an item with its own peek flag'],
        [[G('mg', 0, flags => 0x02)], {}, 'an item with flags bit 1'],
        [[W('ma', 1), W('ma', 2)], {}, 'two windows of one name'],
        [[G('mg', 0), G('mg', 1)], {}, 'two GCRA limits of one name'],
        [[W('ma', 1), G('ma', 0), W('ma', 1)], {},
         'a window repeated after a GCRA limit of the same name'],
        [[W('ma', 1), W('mb', 1), W('mc', 1), W('mb', 1)], {},
         'a duplicate among four'],
    );
    my $op = 0x100;
    for my $b (@bad) {
        my ($items, $o, $what) = @$b;
        refused(req_multi_check($items, %$o, opaque => $op++), ST_INVALID,
                "multi_check: $what: 0x04");
    }
    refused(req(OP_MULTI_CHECK, '', opaque => $op++), ST_INVALID,
            'multi_check: empty body: 0x04');
    refused(req(OP_MULTI_CHECK, "\0", opaque => $op++), ST_INVALID,
            'multi_check: body of 1 byte: 0x04');
    refused(req(OP_MULTI_CHECK, pack('CCC', 0, 1, OP_WINDOW_CHECK),
                opaque => $op++), ST_INVALID,
            'multi_check: an item cut inside its header: 0x04');
    single_is(W('ma', 1), { %ALLOWED, used => 1 },
              'ma: none of the refused multis charged it');
    single_exact(G('mg', 0), [CHECK_ALLOWED, 1, 0, 1, 0, $H],
                 'mg: none of the refused multis charged it');
    single_is(W('mb', 1), { %ALLOWED, used => 1 }, 'mb: nor this one');
}

# ---- All or nothing while several connections race ----
{
    # Multis on (A, B) and (B, C), all limit 100: B reaches 100 first, and
    # until then every multi is allowed. Charged items must always come in
    # whole multis: A's count is the allowed (A, B) multis, C's the
    # allowed (B, C) ones, and B's their sum, exactly 100.
    my $per = 60;
    my @conns = map { $srv->connect } 1 .. 4;
    for my $k (0 .. $#conns) {
        $conns[$k]->send(join '', map {
            my $ab = ($k + $_) % 2 == 0;
            req_multi_check($ab ? [W('cA', 100), W('cB', 100)]
                                : [W('cB', 100), W('cC', 100)],
                            opaque => $ab ? 0xab : 0xbc)
        } 1 .. $per);
    }
    my %allowed = (0xab => 0, 0xbc => 0);
    my ($answers, $inconsistent) = (0, 0);
    for my $conn (@conns) {
        for my $r ($conn->responses($per)) {
            my $m = parse_multi_answer($r) or next;
            $answers++;
            my $denied = grep { $_->{state} != CHECK_ALLOWED }
                         @{ $m->{items} };
            $inconsistent++ if ($m->{overall} == 0) == ($denied > 0);
            $allowed{ $r->{opaque} }++ if $m->{overall} == 0;
        }
    }
    is($answers, 4 * $per, 'race: every multi answered');
    is($inconsistent, 0, 'race: overall 0 exactly when every item allowed');
    # Reads a window's count: a call of cost 100 against limit 100 is
    # limited (charging nothing) unless the window is empty.
    my %used;
    for my $n (qw(cA cB cC)) {
        my $a = parse_check_answer($c->call(req_window_check(
            $n, 100, cost => 100, window_ns => $H, slots => 10)));
        $used{$n} = !$a ? -1 : $a->{state} == CHECK_ALLOWED ? $a->{used} - 100
                                                            : $a->{used};
    }
    is($used{cB}, 100, 'race: B reached exactly its limit');
    is($used{cA}, $allowed{0xab}, "race: A holds the $allowed{0xab} "
                                  . 'allowed (A, B) multis');
    is($used{cC}, $allowed{0xbc}, "race: C holds the $allowed{0xbc} "
                                  . 'allowed (B, C) multis');
    $_->close for @conns;
}

# ---- counter.memory_limit: one budget for counters and rate limits ----
{
    my $long = 'L' x 200;
    my $s = start_host(config => { threads => 1, memory_limit => 4096 });
    my $m = $s->connect;
    my ($n, $r) = (0);
    while ($n < 1000) {
        $r = $m->call(req_acquire("c$n", 1, 1));
        last unless $r && $r->{status} == ST_OK;
        $n++;
    }
    ok($n >= 1 && $r && $r->{status} == ST_NO_MEMORY,
       "budget: $n semaphore counters fill it");
    refused(req_ttl_insert($long, 1, 1, UNIT_H, opaque => 1), ST_NO_MEMORY,
            'budget: then a TTL counter does not fit: 0x82', $m);
    refused(req_window_check($long, 1, opaque => 2), ST_NO_MEMORY,
            'budget: nor a window: 0x82', $m);
    refused(req_gcra_check($long, 0, 1, $H, opaque => 3), ST_NO_MEMORY,
            'budget: nor a GCRA limit: 0x82', $m);
    refused(req_multi_check([W("W$long", 1), G("G$long", 0)], opaque => 4),
            ST_NO_MEMORY, 'budget: nor the records of a multi_check: 0x82',
            $m);
    answer_is($m->call(req_ttl_query($long, opaque => 5)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 5),
              'budget: the refused TTL counter does not exist');
    $m->close;
    $s->stop;

    $s = start_host(config => { threads => 1, memory_limit => 4096 });
    $m = $s->connect;
    $n = 0;
    while ($n < 1000) {
        $r = $m->call(req_ttl_insert("t$n", 1, 1, UNIT_H));
        last unless $r && $r->{status} == ST_OK;
        $n++;
    }
    ok($n >= 1 && $r && $r->{status} == ST_NO_MEMORY,
       "budget: $n TTL counters fill it");
    refused(req_acquire($long, 1, 1, opaque => 6), ST_NO_MEMORY,
            'budget: then a semaphore counter does not fit: 0x82', $m);
    refused(req_window_check($long, 1, opaque => 7), ST_NO_MEMORY,
            'budget: nor a window: 0x82', $m);
    $m->send(join '', map { req_ttl_purge("t$_", opaque => $_) }
                      0 .. $n - 1);
    my @p = $m->responses($n);
    is(scalar(grep { $_->{status} == ST_OK } @p), $n,
       'budget: every TTL counter purged');
    answer_is($m->call(req_acquire($long, 1, 1, opaque => 8)),
              resp(OP_ACQUIRE, ST_OK, u32(1), 8),
              'budget: the purged records\' room takes a counter');
    my $a = parse_check_answer($m->call(req_window_check($long, 1)));
    ok($a && $a->{state} == CHECK_ALLOWED, 'budget: and a window');
    $m->close;
    $s->stop;
}

# The Stats items of srv as a hash.
sub stats_of {
    my ($s) = @_;
    my $sc = $s->connect;
    my %st = map { @$_ } $sc->stats_pairs;
    $sc->close;
    return %st;
}

my @KINDS = qw(ttl window gcra);
my @FIGURES = qw(objects checks allowed limited expired);

# ---- Stats after a scripted scenario (fresh server, exact figures) ----
{
    my $s = start_host(config => { threads => 1 });
    my $k = $s->connect;
    my @script = (
        [req_ttl_insert('a', 5, 1, UNIT_H), ST_OK],
        [req_ttl_insert('a', 5, 1, UNIT_H), ST_EXISTS],
        [req_ttl_query('a'), ST_OK],
        [req_ttl_query('z'), ST_NOT_FOUND],
        [req_ttl_update('a', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 100),
         ST_BELOW_ZERO],
        [req_ttl_update('a', TTL_ATTR_QUOTA, CHANGE_INCREASE, 0, 1), ST_OK],
        [req_ttl_purge('a'), ST_OK],
        [req_ttl_purge('a'), ST_NOT_FOUND],
        [req_ttl_insert('b', 1, 1, UNIT_H), ST_OK],
        [req_ttl_insert('c', 1, 100, UNIT_MS), ST_OK],
    );
    my $step = 0;
    for my $row (@script) {
        my $r = $k->call($row->[0]);
        is($r ? $r->{status} : -1, $row->[1],
           sprintf('stats: ttl step %d answers 0x%02x', ++$step, $row->[1]));
    }
    sleep 0.3;
    is($k->call(req_ttl_query('c'))->{status}, ST_NOT_FOUND,
       'stats: c expired');
    my @checks = (
        [req_window_check('w1', 1, window_ns => $H), CHECK_ALLOWED],
        [req_window_check('w1', 1, window_ns => $H), CHECK_LIMITED],
        [req_window_check('w1', 1, window_ns => $H, cost => 5), CHECK_NEVER],
        [req_gcra_check('g1', 0, 1, $H), CHECK_ALLOWED],
        [req_gcra_check('g1', 0, 1, $H), CHECK_LIMITED],
    );
    for my $ch (@checks) {
        my $a = parse_check_answer($k->call($ch->[0]));
        is($a ? $a->{state} : -1, $ch->[1], "stats: check state $ch->[1]");
    }
    my $m = parse_multi_answer($k->call(req_multi_check([W('w2', 5),
                                                         G('g2', 0)])));
    is($m ? $m->{overall} : -1, 0, 'stats: an allowed multi');
    $m = parse_multi_answer($k->call(req_multi_check([W('w1', 1),
                                                      G('g1', 0)])));
    ok($m && $m->{overall} == 1 &&
       !(grep { $_->{state} != CHECK_LIMITED } @{ $m->{items} }),
       'stats: a multi with both items limited');

    my %want = (
        ttl_objects => 1, ttl_checks => 11, ttl_allowed => 6,
        ttl_limited => 5, ttl_expired => 1,
        window_objects => 2, window_checks => 5, window_allowed => 2,
        window_limited => 3, window_expired => 0,
        gcra_objects => 2, gcra_checks => 4, gcra_allowed => 2,
        gcra_limited => 2, gcra_expired => 0,
    );
    my %cmd = ('command:ttl_insert' => 4, 'command:ttl_query' => 3,
               'command:ttl_update' => 2, 'command:ttl_purge' => 2,
               'command:window_check' => 3, 'command:gcra_check' => 2,
               'command:multi_check' => 2);
    my %st = stats_of($s);
    is_deeply({ map { $_ => $st{$_} } keys %want }, \%want,
              'stats: per-kind figures (multi items under their kinds)');
    is_deeply({ map { $_ => $st{$_} } keys %cmd }, \%cmd,
              'stats: one command row per opcode, counting requests');
    my %host = mc_stats($s->{mc_port});
    my %hw = map { my $h = "counter_$_"; $h =~ tr/:/_/; ($h => $want{$_}) }
             keys %want;
    $hw{"counter_command_$_"} = $cmd{"command:$_"}
        for map { /^command:(.*)/ ? $1 : () } keys %cmd;
    is_deeply({ map { $_ => $host{$_} } keys %hw }, \%hw,
              'stats: the host\'s stats lines say the same');
    $k->close;
    $s->stop;
}

# ---- The GC sweep frees expired records of every kind by itself ----
{
    # stat_interval 1: the collector sweeps every second.
    my $s = start_host(config => { threads => 1, stat_interval => 1 });
    my $k = $s->connect;
    $k->send(req_ttl_insert('sw', 1, 200, UNIT_MS, opaque => 1)
             . req_window_check('sw', 5, window_ns => 100_000_000,
                                opaque => 2)
             . req_gcra_check('sw', 0, 1, 100_000_000, opaque => 3)
             . req_stats(opaque => 4));
    my @r = $k->responses(4);
    is(scalar(grep { $_->{status} == ST_OK } @r), 4,
       'sweep: a record of each kind made, Stats read in the same write');
    my %st = map { @$_ } CounterTest::Conn::parse_stats($r[3] ? $r[3]{body}
                                                              : '');
    is_deeply([map { $st{"${_}_objects"} } @KINDS], [1, 1, 1],
              'sweep: one object of each kind');
    my $swept = wait_until(sub {
        %st = stats_of($s);
        return 1 unless grep { ($st{"${_}_objects"} // 1) != 0 ||
                               ($st{"${_}_expired"} // 0) != 1 } @KINDS;
        sleep 0.1;
        return 0;
    }, 20);
    ok($swept, 'sweep: every record freed and counted as expired, '
               . 'without a request touching it')
        or diag(join ' ', map { "$_=" . ($st{$_} // 'none') }
                          map { my $kd = $_; map { "${kd}_$_" } @FIGURES }
                          @KINDS);
    my %host = mc_stats($s->{mc_port});
    is_deeply([map { ($host{"counter_${_}_objects"},
                      $host{"counter_${_}_expired"}) } @KINDS],
              [0, 1, 0, 1, 0, 1], 'sweep: the host\'s stats say the same');
    answer_is($k->call(req_ttl_query('sw', opaque => 5)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 5),
              'sweep: the TTL counter is gone');
    $k->close;
    $s->stop;
}

$c->close;
$srv->stop;
done_testing;
