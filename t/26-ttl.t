#!/usr/bin/perl
# 26-ttl.t: TTL counters over real sockets (opcodes 0x30-0x33): insert
# (ok, Exists on a live record, an expired one replaced), query (every
# field, ttl_left in the record's unit rounded up, never 0 while alive),
# update of each attribute by each change (quota set, increased,
# decreased, Below zero changing nothing, overflow refused; ttl set,
# extended and shortened in other units, Below zero at or past zero,
# every TTL change rescheduling the expiry), purge, Not found for absent
# and expired records, and 0x04 for each malformed body of the spec.
# Expiries are short (at most 400 ms) and each check that a record is gone
# sleeps past its expiry; a record meant to stay alive has an hour left,
# so nothing depends on how fast the machine is, and nothing measures how
# long anything took.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 1 });
if (my $why = opcodes_pending($srv, OP_TTL_INSERT, OP_TTL_QUERY,
                              OP_TTL_UPDATE, OP_TTL_PURGE)) {
    plan skip_all => $why;
}
my $c = $srv->connect;

my $MAX = ~0;                       # 2^64 - 1
my $H = $NS_PER_UNIT[UNIT_H];
my $MIN = $NS_PER_UNIT[UNIT_MIN];

# Request bytes whose answer must be the error status with its text.
sub refused {
    my ($bytes, $status, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp_err($op, $status, $opaque),
                     $title);
}

# Request bytes whose answer must be OK with exactly body.
sub answered {
    my ($bytes, $body, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp($op, ST_OK, $body, $opaque),
                     $title);
}

# Insert that must succeed.
sub inserted {
    my ($name, $quota, $ttl, $unit, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return answered(req_ttl_insert($name, $quota, $ttl, $unit,
                                   opaque => 0x30), '', $title);
}

# Query of name that must answer exactly (quota, ttl_left, unit).
sub view_is {
    my ($name, $quota, $left, $unit, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return answered(req_ttl_query($name, opaque => 0x31),
                    ttl_view_body($quota, $left, $unit), $title);
}

# Update that must answer exactly the view (quota, ttl_left, unit).
sub updated {
    my ($name, $attr, $change, $unit, $value, $view, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return answered(req_ttl_update($name, $attr, $change, $unit, $value,
                                   opaque => 0x32),
                    ttl_view_body(@$view), $title);
}

# The parsed view of an answer r: checks its quota and unit exactly and
# its ttl_left within [lo, hi]; returns the view.
sub view_within {
    my ($r, $quota, $lo, $hi, $unit, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $v = parse_ttl_view($r);
    ok($v && $v->{quota} == $quota && $v->{unit} == $unit &&
       $v->{ttl_left} >= $lo && $v->{ttl_left} <= $hi,
       "$title: quota $quota, ttl_left in [$lo, $hi], unit $unit")
        or diag('got ' . ($v ? "quota $v->{quota} ttl_left $v->{ttl_left} "
                               . "unit $v->{unit}"
                             : 'no view: ' . hexdump($r ? $r->{raw} : '')));
    return $v;
}

# Answer to a query of name.
sub query { $c->call(req_ttl_query($_[0], opaque => 0x31)) }

# ---- Insert, Exists, query of every field ----
{
    inserted('a', 5, 2, UNIT_H, 'insert a: quota 5 for 2 h');
    view_is('a', 5, 2, UNIT_H, 'query a: quota 5, 2 h left, unit h');
    refused(req_ttl_insert('a', 9, 1, UNIT_S, opaque => 0x33), ST_EXISTS,
            'insert a again while it lives: 0x28 Exists');
    view_is('a', 5, 2, UNIT_H, 'query a: the refused insert changed nothing');
    refused(req_ttl_query('nope', opaque => 0x34), ST_NOT_FOUND,
            'query of an absent record: 0x01');

    inserted('big', $MAX, 1_000_000, UNIT_H,
             'insert big: quota 2^64-1 for a million hours');
    view_is('big', $MAX, 1_000_000, UNIT_H,
            'query big: 64-bit quota and ttl_left');
    inserted('far', 1, 5_124_095, UNIT_H,
             'insert far: the most hours that fit 64 bits of ns');
    view_within(query('far'), 1, 5_000_000, 5_124_095, UNIT_H,
                'query far: alive with its hours left');
    inserted('zero', 0, 1, UNIT_H, 'insert zero: quota 0 is legal');
    view_is('zero', 0, 1, UNIT_H, 'query zero: quota 0');

    # Each unit: the record answers in the unit it was inserted with.
    # Units of a minute and more are exact (less than a minute passes);
    # finer ones may have lost up to two minutes, never gained.
    my @units = ([UNIT_NS, 1_000_000_000_000], [UNIT_US, 1_000_000_000],
                 [UNIT_MS, 1_000_000], [UNIT_S, 1000], [UNIT_MIN, 30],
                 [UNIT_H, 3]);
    for my $u (@units) {
        my ($unit, $ttl) = @$u;
        inserted("u$unit", 7, $ttl, $unit,
                 "insert u$unit: $ttl of unit $unit");
        my $slack = int(120 * 1e9 / $NS_PER_UNIT[$unit]);
        my $lo = $unit >= UNIT_MIN ? $ttl : $ttl - $slack;
        view_within(query("u$unit"), 7, $lo, $ttl, $unit, "query u$unit");
    }

    # Bytes after the name are ignored, as for the reference opcodes.
    answered(req_ttl_insert('tail', 1, 1, UNIT_H, extra => 'junk',
                            opaque => 0x35), '',
             'insert with bytes after the name: ok');
    view_is('tail', 1, 1, UNIT_H, 'query tail: the name is "tail" only');
}

# ---- ttl_left is rounded up, in the record's unit ----
{
    inserted('r1', 1, 2, UNIT_H, 'r1: 2 h');
    updated('r1', TTL_ATTR_TTL, CHANGE_DECREASE, UNIT_MIN, 119,
            [1, 1, UNIT_H],
            'r1: 119 min shorter: under a minute left shows as 1 h');
    view_is('r1', 1, 1, UNIT_H, 'r1: query says 1 h too (never 0 alive)');
    inserted('r2', 1, 10, UNIT_MIN, 'r2: 10 min');
    updated('r2', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_S, 90, [1, 2, UNIT_MIN],
            'r2: set to 90 s: shows as 2 min (rounded up, unit kept)');
}

# ---- Expired records: gone for every request; insert replaces one ----
{
    $c->send(join '', map { req_ttl_insert("e$_", 3, 150, UNIT_MS,
                                           opaque => $_) } 1 .. 4);
    my @r = $c->responses(4);
    is(scalar(grep { $_->{status} == ST_OK } @r), 4,
       'e1..e4: inserted for 150 ms');
    sleep 0.4;
    refused(req_ttl_query('e1', opaque => 0x40), ST_NOT_FOUND,
            'e1: query after the expiry: 0x01');
    refused(req_ttl_update('e2', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1,
                           opaque => 0x41), ST_NOT_FOUND,
            'e2: update after the expiry: 0x01');
    refused(req_ttl_update('e2', TTL_ATTR_TTL, CHANGE_INCREASE, UNIT_H, 1,
                           opaque => 0x42), ST_NOT_FOUND,
            'e2: a ttl increase does not revive it: 0x01');
    refused(req_ttl_purge('e3', opaque => 0x43), ST_NOT_FOUND,
            'e3: purge after the expiry: 0x01');
    inserted('e4', 8, 1, UNIT_H, 'e4: insert over the expired record: ok');
    view_is('e4', 8, 1, UNIT_H, 'e4: the new record, not the old one');
    inserted('e1', 9, 1, UNIT_H, 'e1: insert after the expiry: ok');
    view_is('e1', 9, 1, UNIT_H, 'e1: the new record');
}

# ---- Update of the quota: patch, increase, decrease ----
{
    inserted('q', 10, 1, UNIT_H, 'q: quota 10');
    updated('q', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 7, [7, 1, UNIT_H],
            'q: patch 7');
    updated('q', TTL_ATTR_QUOTA, CHANGE_INCREASE, 0, 3, [10, 1, UNIT_H],
            'q: increase 3');
    refused(req_ttl_update('q', TTL_ATTR_QUOTA, CHANGE_INCREASE, 0, $MAX,
                           opaque => 0x50), ST_INVALID,
            'q: an increase past 2^64-1: 0x04');
    view_is('q', 10, 1, UNIT_H, 'q: the refused increase changed nothing');
    updated('q', TTL_ATTR_QUOTA, CHANGE_INCREASE, 0, $MAX - 10,
            [$MAX, 1, UNIT_H], 'q: an increase to exactly 2^64-1');
    updated('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, $MAX - 10,
            [10, 1, UNIT_H], 'q: and back down');
    updated('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 4, [6, 1, UNIT_H],
            'q: decrease 4');
    refused(req_ttl_update('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 7,
                           opaque => 0x51), ST_BELOW_ZERO,
            'q: decrease 7 of 6: 0x29 Below zero');
    view_is('q', 6, 1, UNIT_H, 'q: Below zero changed nothing');
    updated('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 6, [0, 1, UNIT_H],
            'q: decrease 6 of 6: 0');
    refused(req_ttl_update('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 1,
                           opaque => 0x52), ST_BELOW_ZERO,
            'q: decrease 1 of 0: 0x29');
    updated('q', TTL_ATTR_QUOTA, CHANGE_DECREASE, 0, 0, [0, 1, UNIT_H],
            'q: decrease 0 of 0: ok');
    updated('q', TTL_ATTR_QUOTA, CHANGE_PATCH, UNIT_S, 5, [5, 1, UNIT_H],
            'q: a unit with a quota change is ignored; the record keeps h');
    updated('q', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 0, [0, 1, UNIT_H],
            'q: patch 0');
    refused(req_ttl_update('q', TTL_ATTR_QUOTA, CHANGE_PATCH, 6, 1,
                           opaque => 0x53), ST_INVALID,
            'q: unit 6 is refused even for the quota: 0x04');
    view_is('q', 0, 1, UNIT_H, 'q: unchanged by the refusal');
}

# ---- Update of the ttl: patch, increase, decrease, in other units ----
{
    inserted('t', 1, 10, UNIT_MIN, 't: 10 min');
    updated('t', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_H, 3, [1, 180, UNIT_MIN],
            't: patch 3 h: 180 min, still shown in minutes');
    updated('t', TTL_ATTR_TTL, CHANGE_INCREASE, UNIT_S, 30,
            [1, 181, UNIT_MIN], 't: increase 30 s: 180.5 min, shown 181');
    updated('t', TTL_ATTR_TTL, CHANGE_DECREASE, UNIT_MIN, 1,
            [1, 180, UNIT_MIN], 't: decrease 1 min: 179.5 min, shown 180');
    refused(req_ttl_update('t', TTL_ATTR_TTL, CHANGE_DECREASE, UNIT_H, 3,
                           opaque => 0x60), ST_BELOW_ZERO,
            't: decrease 3 h: 0x29 Below zero');
    # What is left is 179.5 min less the time since the patch: taking
    # 179.5 min leaves 0 or less, however fast the server answers.
    refused(req_ttl_update('t', TTL_ATTR_TTL, CHANGE_DECREASE, UNIT_S,
                           10_770, opaque => 0x61), ST_BELOW_ZERO,
            't: decrease by all that is left: 0x29 (0 is not alive)');
    view_is('t', 1, 180, UNIT_MIN, 't: both refusals changed nothing');
    refused(req_ttl_update('t', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_S, 0,
                           opaque => 0x62), ST_INVALID, 't: patch 0: 0x04');
    refused(req_ttl_update('t', TTL_ATTR_TTL, CHANGE_PATCH, 6, 5,
                           opaque => 0x63), ST_INVALID, 't: unit 6: 0x04');
    refused(req_ttl_update('t', 2, CHANGE_PATCH, UNIT_S, 5, opaque => 0x64),
            ST_INVALID, 't: attribute 2: 0x04');
    refused(req_ttl_update('t', TTL_ATTR_TTL, 3, UNIT_S, 5, opaque => 0x65),
            ST_INVALID, 't: change 3: 0x04');
    refused(req_ttl_update('t', TTL_ATTR_QUOTA, 3, 0, 5, opaque => 0x66),
            ST_INVALID, 't: change 3 of the quota: 0x04');
    view_is('t', 1, 180, UNIT_MIN, 't: the 0x04 refusals changed nothing');
    updated('t', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_S, 45, [1, 1, UNIT_MIN],
            't: patch 45 s: shown as 1 min');
    updated('t', TTL_ATTR_TTL, CHANGE_INCREASE, UNIT_NS, 1,
            [1, 1, UNIT_MIN], 't: increase 1 ns: still 1 min');
    refused(req_ttl_update('nope', TTL_ATTR_TTL, CHANGE_INCREASE, UNIT_S, 1,
                           opaque => 0x67), ST_NOT_FOUND,
            'update of an absent record: 0x01');
    refused(req_ttl_update('nope', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1,
                           opaque => 0x68), ST_NOT_FOUND,
            'quota update of an absent record: 0x01');
}

# ---- Every TTL change reschedules the expiry ----
{
    # Each pair goes in one write, so the change reaches the record long
    # before its first expiry however busy the machine is.
    my %pairs = (
        rs1 => [req_ttl_insert('rs1', 1, 3_600_000, UNIT_MS, opaque => 1),
                req_ttl_update('rs1', TTL_ATTR_TTL, CHANGE_DECREASE, UNIT_MS,
                               3_600_000 - 300, opaque => 2)],
        rs2 => [req_ttl_insert('rs2', 1, 400, UNIT_MS, opaque => 3),
                req_ttl_update('rs2', TTL_ATTR_TTL, CHANGE_INCREASE, UNIT_H,
                               1, opaque => 4)],
        rs3 => [req_ttl_insert('rs3', 1, 3_600_000, UNIT_MS, opaque => 5),
                req_ttl_update('rs3', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_MS,
                               300, opaque => 6)],
        rs4 => [req_ttl_insert('rs4', 1, 400, UNIT_MS, opaque => 7),
                req_ttl_update('rs4', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_H, 1,
                               opaque => 8)],
    );
    my %v;
    for my $n (sort keys %pairs) {
        $c->send(join '', @{ $pairs{$n} });
        my ($ins, $upd) = $c->responses(2);
        answer_is($ins, resp(OP_TTL_INSERT, ST_OK, '', $ins ? $ins->{opaque}
                                                            : 0),
                  "$n: inserted");
        $v{$n} = $upd;
    }
    view_within($v{rs1}, 1, 1, 300, UNIT_MS, 'rs1: shortened to 300 ms');
    view_within($v{rs2}, 1, 3_600_000, 3_600_400, UNIT_MS,
                'rs2: 400 ms extended by 1 h');
    view_within($v{rs3}, 1, 1, 300, UNIT_MS, 'rs3: 1 h set to 300 ms');
    view_within($v{rs4}, 1, 3_599_000, 3_600_000, UNIT_MS,
                'rs4: 400 ms set to 1 h');
    sleep 0.7;
    refused(req_ttl_query('rs1', opaque => 0x70), ST_NOT_FOUND,
            'rs1: expired at its new, earlier time');
    refused(req_ttl_query('rs3', opaque => 0x71), ST_NOT_FOUND,
            'rs3: expired at its new, earlier time');
    view_within(query('rs2'), 1, 3_590_000, 3_600_400, UNIT_MS,
                'rs2: alive past its first expiry');
    view_within(query('rs4'), 1, 3_590_000, 3_600_000, UNIT_MS,
                'rs4: alive past its first expiry');
}

# ---- Purge ----
{
    inserted('p', 4, 1, UNIT_H, 'p: inserted');
    answered(req_ttl_purge('p', opaque => 0x80), '', 'p: purged: ok, empty');
    refused(req_ttl_query('p', opaque => 0x81), ST_NOT_FOUND,
            'p: query after the purge: 0x01');
    refused(req_ttl_purge('p', opaque => 0x82), ST_NOT_FOUND,
            'p: purge again: 0x01');
    refused(req_ttl_update('p', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1,
                           opaque => 0x83), ST_NOT_FOUND,
            'p: update after the purge: 0x01');
    inserted('p', 6, 2, UNIT_H, 'p: the name is free again');
    view_is('p', 6, 2, UNIT_H, 'p: the new record');
    refused(req_ttl_purge('nope', opaque => 0x84), ST_NOT_FOUND,
            'purge of an absent record: 0x01');
}

# ---- Malformed requests: 0x04, nothing created ----
{
    my $ins = sub { req_ttl_insert('bad', 1, 1, UNIT_H, @_) };
    refused(req_ttl_insert('bad', 1, 1, 6, opaque => 0x90), ST_INVALID,
            'insert: unit 6: 0x04');
    refused(req_ttl_insert('bad', 1, 1, 255, opaque => 0x91), ST_INVALID,
            'insert: unit 255: 0x04');
    refused(req_ttl_insert('bad', 1, 0, UNIT_S, opaque => 0x92), ST_INVALID,
            'insert: ttl 0: 0x04');
    refused(req_ttl_insert('bad', 1, 5_124_096, UNIT_H, opaque => 0x93),
            ST_INVALID, 'insert: 5124096 h overflows 64 bits of ns: 0x04');
    refused(req_ttl_insert('bad', 1, $MAX, UNIT_US, opaque => 0x94),
            ST_INVALID, 'insert: 2^64-1 us: 0x04');
    refused(req_ttl_insert('bad', 1, int($MAX / 1000) + 1, UNIT_US,
                           opaque => 0x95),
            ST_INVALID, 'insert: the least us that overflow: 0x04');
    refused(req(OP_TTL_INSERT, substr($ins->(), 12, 18), opaque => 0x96),
            ST_INVALID, 'insert: body of 18 bytes: 0x04');
    refused($ins->(name_len => 0, opaque => 0x97), ST_INVALID,
            'insert: name length 0: 0x04');
    refused($ins->(name_len => 4, opaque => 0x98), ST_INVALID,
            'insert: name running past the body: 0x04');
    refused(req_ttl_insert('', 1, 1, UNIT_H, opaque => 0x99), ST_INVALID,
            'insert: empty name: 0x04');
    refused(req(OP_TTL_QUERY, "\0", opaque => 0x9a), ST_INVALID,
            'query: body of 1 byte: 0x04');
    refused(req(OP_TTL_QUERY, '', opaque => 0x9b), ST_INVALID,
            'query: empty body: 0x04');
    refused(req_ttl_query('bad', name_len => 0, opaque => 0x9c), ST_INVALID,
            'query: name length 0: 0x04');
    refused(req_ttl_query('bad', name_len => 4, opaque => 0x9d), ST_INVALID,
            'query: name running past the body: 0x04');
    refused(req(OP_TTL_PURGE, "\0", opaque => 0x9e), ST_INVALID,
            'purge: body of 1 byte: 0x04');
    refused(req_ttl_purge('bad', name_len => 0, opaque => 0x9f), ST_INVALID,
            'purge: name length 0: 0x04');
    refused(req_ttl_purge('bad', name_len => 4, opaque => 0xa0), ST_INVALID,
            'purge: name running past the body: 0x04');
    my $upd = req_ttl_update('bad', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1);
    refused(req(OP_TTL_UPDATE, substr($upd, 12, 12), opaque => 0xa1),
            ST_INVALID, 'update: body of 12 bytes: 0x04');
    refused(req_ttl_update('bad', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1,
                           name_len => 0, opaque => 0xa2), ST_INVALID,
            'update: name length 0: 0x04');
    refused(req_ttl_update('bad', TTL_ATTR_QUOTA, CHANGE_PATCH, 0, 1,
                           name_len => 4, opaque => 0xa3), ST_INVALID,
            'update: name running past the body: 0x04');
    # A malformed update of a live record changes nothing either.
    refused(req_ttl_update('a', TTL_ATTR_TTL, CHANGE_PATCH, UNIT_H, 0,
                           opaque => 0xa4), ST_INVALID,
            'update: ttl patch 0 of a live record: 0x04');
    refused(req_ttl_update('a', 2, CHANGE_PATCH, 0, 1, opaque => 0xa5),
            ST_INVALID, 'update: attribute 2 of a live record: 0x04');
    refused(req_ttl_update('a', TTL_ATTR_QUOTA, 3, 0, 1, opaque => 0xa6),
            ST_INVALID, 'update: change 3 of a live record: 0x04');
    view_is('a', 5, 2, UNIT_H, 'a: untouched by the malformed updates');
    refused(req_ttl_query('bad', opaque => 0xa7), ST_NOT_FOUND,
            'no malformed insert created "bad"');

    # A declared body beyond the largest legal one is refused and skipped.
    my $huge = 70_000;
    $c->send(req(OP_TTL_INSERT, '', body_len => $huge, opaque => 0xa8)
             . ("\0" x $huge) . req_noop(opaque => 0xa9));
    answer_is($c->response, resp_err(OP_TTL_INSERT, ST_INVALID, 0xa8),
              'insert with a 70000-byte body: 0x04');
    answer_is($c->response, resp(OP_NOOP, ST_OK, '', 0xa9),
              'the body was skipped: the next request is answered');
}

# ---- counter.memory_limit: a record that does not fit is 0x82 ----
{
    my $s = start_host(config => { threads => 1, memory_limit => 4096 });
    my $m = $s->connect;
    my $pad = 'x' x 50;
    my ($n, $r) = (0);
    while ($n < 1000) {
        $r = $m->call(req_ttl_insert("m$n$pad", 1, 1, UNIT_H, opaque => $n));
        last unless $r && $r->{status} == ST_OK;
        $n++;
    }
    ok($n >= 1 && $n < 1000, "memory_limit: $n records fit, then a refusal");
    answer_is($r, resp_err(OP_TTL_INSERT, ST_NO_MEMORY, $n),
              'memory_limit: the refused insert answers 0x82');
    answer_is($m->call(req_ttl_query("m$n$pad", opaque => 1)),
              resp_err(OP_TTL_QUERY, ST_NOT_FOUND, 1),
              'memory_limit: the refused record does not exist');
    answer_is($m->call(req_ttl_purge("m0$pad", opaque => 2)),
              resp(OP_TTL_PURGE, ST_OK, '', 2), 'memory_limit: one purged');
    answer_is($m->call(req_ttl_insert("m$n$pad", 1, 1, UNIT_H, opaque => 3)),
              resp(OP_TTL_INSERT, ST_OK, '', 3),
              'memory_limit: its room is usable again');
    $m->close;
    $s->stop;
}

$c->close;
$srv->stop;
done_testing;
