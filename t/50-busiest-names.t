#!/usr/bin/perl
# 50-busiest-names.t: Busiest (opcode 0x37) over real sockets: the
# rate-limit names with the most checks in the last whole second, one
# packet each, busiest first (ties by kind, then name), then an empty one
# with the request's opaque. An empty list from a server nobody checked;
# names of every kind (window, GCRA, TTL operations); the count bounds
# the answer (0 lists none, more than 16 lists at most 16); a name no
# longer checked drops out as the seconds pass; a TTL counter purged, or
# freed once expired, is gone from the next listing; a body too short is
# 0x04 (bytes after the count are ignored); Stats counts command:busiest;
# `counterctl busiest` prints the names (and exits 1 against the
# reference, which does not know the opcode). Only what the listings show is
# asserted, never how long anything took: a listing ranks a second that
# has passed, so each expectation is waited for (bounded), with the
# traffic going on meanwhile.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 2 });
if (my $why = opcodes_pending($srv, OP_BUSIEST)) {
    plan skip_all => $why;
}
my $c = $srv->connect;
my $H = 3_600_000_000_000;

# The listing of count names: its parsed records and raw answers.
sub listing { return $c->busy_records(@_) }

# Whether the records of a listing are busiest first, ties by kind then
# name.
sub ordered {
    my ($rec) = @_;
    for my $i (1 .. $#$rec) {
        my ($a, $b) = @$rec[$i - 1, $i];
        return 0 unless $a && $b;
        my $cmp = $b->{checks} <=> $a->{checks} || $a->{kind} <=> $b->{kind}
                  || $a->{name} cmp $b->{name};
        return 0 if $cmp > 0;
    }
    return 1;
}

# The record of name (and kind) in a listing, or undef.
sub find_rec {
    my ($rec, $name, $kind) = @_;
    for my $r (@$rec) {
        return $r if $r && $r->{name} eq $name && $r->{kind} == $kind;
    }
    return undef;
}

# Nobody checked anything: only the end marker, with the opaque.
{
    $c->send(req_busiest(16, opaque => 0x5151));
    my $r = $c->response;
    is($r->{status}, ST_OK, 'empty listing: status 0');
    is($r->{body_len}, 0, 'empty listing: only the end marker');
    is($r->{opcode}, OP_BUSIEST, 'the end marker is a Busiest answer');
    is($r->{opaque}, 0x5151, 'with the request\'s opaque');
}

# Traffic on names of each kind: hot (window) three checks a round, warm
# (GCRA) two, cool (a TTL counter) one query, plus a TTL counter that
# will be purged.
my $tc = $srv->connect;
is($tc->call(req_ttl_insert('cool', 1000, 3600, UNIT_S))->{status}, ST_OK,
   'cool inserted');
is($tc->call(req_ttl_insert('doomed', 1000, 3600, UNIT_S))->{status}, ST_OK,
   'doomed inserted');

# One round of the traffic, sent at once and its answers read.
sub round {
    my @req = ((map { req_window_check('hot', 1_000_000, window_ns => $H) }
                1 .. 3),
               (map { req_gcra_check('warm', 1_000_000, 1_000_000, $H) }
                1 .. 2),
               req_ttl_query('cool'), req_ttl_query('doomed'));
    $tc->send(join '', @req);
    $tc->response for @req;
}

my ($rec, $raw);
my $all = wait_until(sub {
    round();
    ($rec, $raw) = listing(16, opaque => 7);
    return find_rec($rec, 'hot', KIND_WINDOW)
        && find_rec($rec, 'warm', KIND_GCRA)
        && find_rec($rec, 'cool', KIND_TTL)
        && find_rec($rec, 'doomed', KIND_TTL);
});
ok($all, 'names of every kind show once a second of their checks passed')
    or diag(explain($rec));
ok(ordered($rec), 'busiest first, ties by kind then name')
    or diag(explain($rec));
is(scalar(grep { !defined } @$rec), 0, 'every record well formed');
is($raw->[-1]{body_len}, 0, 'the listing ends with an empty answer');
is(scalar(grep { $_->{opaque} != 7 || $_->{opcode} != OP_BUSIEST } @$raw),
   0, 'every packet a Busiest answer with the request\'s opaque');
cmp_ok(find_rec($rec, 'hot', KIND_WINDOW)->{checks}, '>=', 1,
       'hot: its checks counted');

# The count bounds the answer.
($rec, $raw) = listing(0);
is(scalar @$rec, 0, 'count 0: no names');
is($raw->[-1]{body_len}, 0, 'count 0: the end marker');
round();
($rec) = listing(1);
cmp_ok(scalar @$rec, '<=', 1, 'count 1: at most one name');

# Twenty names more checked each round: a count above 16 lists 16.
my @many = map { "many-$_" } 1 .. 20;
sub many_round {
    my @req = map { req_gcra_check($_, 1_000_000, 1_000_000, $H) } @many;
    $tc->send(join '', @req);
    $tc->response for @req;
}
my $full = wait_until(sub {
    many_round();
    ($rec) = listing(1000);
    return @$rec == BUSIEST_MAX;
});
ok($full, 'count 1000: 16 names, the most there are') or diag(scalar @$rec);
ok(ordered($rec), 'and in order');

# A purged TTL counter is gone from the next listing, though its second
# has passed with checks.
ok(wait_until(sub {
       round();
       ($rec) = listing(16);
       find_rec($rec, 'doomed', KIND_TTL);
   }), 'doomed is listed while queried');
is($tc->call(req_ttl_purge('doomed'))->{status}, ST_OK, 'doomed purged');
($rec) = listing(16);
ok(!find_rec($rec, 'doomed', KIND_TTL), 'purged: gone from the listing');

# Nobody checks any more: the names drop out as the seconds pass.
ok(wait_until(sub { my ($r) = listing(16); @$r == 0 }),
   'no checks for a whole second: an empty listing');

# A short TTL counter, queried until it expires: the query that finds it
# expired (or the GC) frees it, and it is not listed (a listing that read
# the freed record would name it).
is($tc->call(req_ttl_insert('brief', 1, 300, UNIT_MS))->{status}, ST_OK,
   'brief inserted for 300 ms');
my $gone = wait_until(sub {
    my $q = $tc->call(req_ttl_query('brief'));
    ($rec) = listing(16);
    return !find_rec($rec, 'brief', KIND_TTL) && $q->{status} == ST_NOT_FOUND;
});
ok($gone, 'an expired TTL counter is not listed');

# Malformed bodies: 0x04.
for my $case (['', 'no body'], [pack('n', 5), 'a short body']) {
    my ($body, $what) = @$case;
    my $bytes = req(OP_BUSIEST, $body, opaque => 9);
    answer_is($c->call($bytes), resp_err(OP_BUSIEST, ST_INVALID, 9),
              "$what: 0x04");
}
# Bytes after the count are ignored, as for the reference opcodes.
{
    $c->send(req_busiest(3, extra => 'junk', opaque => 10));
    my $r = $c->response;
    is($r->{status}, ST_OK, 'bytes after the count: ignored');
    is($r->{body_len}, 0, 'and nothing checked lately: the end marker');
}

# Stats counts the requests, malformed ones included.
my %st = mc_stats($srv->{mc_port}, 'counter');
cmp_ok($st{'command:busiest'} // 0, '>=', 10, 'Stats: command:busiest');

# counterctl busiest: a line per name, `name kind checks`.
SKIP: {
    my $CTL = $ENV{COUNTERCTL};
    skip 'counterctl not built', 9 unless $CTL && -x $CTL;
    my $dir = tempdir(CLEANUP => 1);
    my $port = $srv->{counter_port};
    my ($rc, $out, $err);
    my $shown = wait_until(sub {
        $tc->call(req_gcra_check('ctl-api', 1_000_000, 1_000_000, $H))
            for 1 .. 3;
        ($rc, $out, $err) = run_bounded($dir, $CTL, '-p', $port, 'busiest',
                                        '5');
        return $rc == 0 && $out =~ /^ctl-api gcra [1-9]\d*$/m;
    });
    ok($shown, 'counterctl busiest: the name checked, its kind, its checks')
        or diag("$rc: $out$err");
    my @lines = split /\n/, $out;
    cmp_ok(scalar @lines, '<=', 5, 'at most COUNT lines');
    ($rc, $out) = run_bounded($dir, $CTL, '-p', $port, 'busiest', '0');
    is($rc, 0, 'busiest 0: exit 0');
    is($out, '', 'and nothing printed');
    ($rc, undef, $err) = run_bounded($dir, $CTL, '-p', $port, 'busiest',
                                     'many');
    is($rc, 2, 'a COUNT that is no number: 2');
    like($err, qr/busiest: COUNT must be a number/, 'says so');
    ($rc) = run_bounded($dir, $CTL, '-p', $port, 'busiest', '1', '2');
    is($rc, 2, 'two arguments: 2');
    my ($ref, $why) = start_yrmcds();
    skip "reference server: $why", 2 unless $ref;
    ($rc, undef, $err) = run_bounded($dir, $CTL, '-p', $ref->{counter_port},
                                     'busiest');
    is($rc, 1, 'the reference: exit 1');
    like($err, qr/busiest: Unknown command \(status 0x81\)/, 'says why');
    $ref->stop;
}

$srv->stop;
done_testing;
