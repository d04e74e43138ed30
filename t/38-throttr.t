#!/usr/bin/perl
# 38-throttr.t: the Throttr v5 front over real sockets, with each value
# size (1, 2, 4 and 8 bytes): every example of the specification byte for
# byte, pipelined requests answered in order, requests split at every
# byte, the requests that frame but fail (unknown TTL type, key length 0,
# unknown attribute) with the connection going on, a value that does not
# fit the size answered with the failure byte, an unknown request type
# closing the connection with a log line and a Stats count, and one
# namespace with the counter port (counterctl ttl query sees a Throttr
# INSERT; a ttl_update on the counter port shows in a Throttr QUERY). Live
# records have an hour or more left; no check depends on timing.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use ThrottrTest;
use File::Temp qw(tempdir);
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $KEY = "\x07" x 5;           # the specification's key
my $CTL = $ENV{COUNTERCTL};

for my $n (1, 2, 4, 8) {
    my $srv = start_throttr(value_size => $n);
    my $c = $srv->connect(port => $srv->{throttr_port});
    my $call = sub {
        my ($bytes, $type) = @_;
        $c->send($bytes);
        return thr_answer($c, $type, $n) // '(nothing)';
    };

    # The specification's examples (its 2-byte values widened to n).
    my $ins = "\x01" . lenum(2, $n) . "\x04" . lenum(3, $n) . "\x05" . $KEY;
    is(thr_insert($n, 2, TTL_S, 3, $KEY), $ins, "n=$n: INSERT bytes");
    is($call->($ins, THR_INSERT), "\x01", "n=$n: INSERT creates: 0x01");
    is($call->($ins, THR_INSERT), "\x00",
       "n=$n: INSERT of a live key: 0x00");
    my $q = "\x02\x05" . $KEY;
    is($call->($q, THR_QUERY),
       "\x01" . lenum(2, $n) . "\x04" . lenum(3, $n),
       "n=$n: QUERY: 0x01, quota 2, seconds, 3 left");
    my $upd = "\x03\x00\x01" . lenum(2, $n) . "\x05" . $KEY;
    is($call->($upd, THR_UPDATE), "\x01", "n=$n: UPDATE quota +2: 0x01");
    is($call->($q, THR_QUERY), thr_query_answer($n, 4, TTL_S, 3),
       "n=$n: QUERY sees quota 4");
    my $purge = "\x04\x05" . $KEY;
    is($call->($purge, THR_PURGE), "\x01", "n=$n: PURGE of a key: 0x01");
    is($call->($purge, THR_PURGE), "\x00", "n=$n: PURGE again: 0x00");
    is($call->($q, THR_QUERY), "\x00", "n=$n: QUERY of nothing: 0x00");
    is($call->(thr_update($n, ATTR_QUOTA, INCREASE, 1, $KEY), THR_UPDATE),
       "\x00", "n=$n: UPDATE of nothing: 0x00");

    # Quota decrease below zero fails and changes nothing; TTL changes are
    # in the record's unit and reschedule it.
    is($call->(thr_insert($n, 5, TTL_MIN, 60, 'q'), THR_INSERT), "\x01",
       "n=$n: INSERT quota 5, 60 min");
    is($call->(thr_update($n, ATTR_QUOTA, DECREASE, 6, 'q'), THR_UPDATE),
       "\x00", "n=$n: decrease below zero: 0x00");
    is($call->(thr_update($n, ATTR_QUOTA, DECREASE, 5, 'q'), THR_UPDATE),
       "\x01", "n=$n: decrease to zero: 0x01");
    is($call->(thr_update($n, ATTR_TTL, INCREASE, 30, 'q'), THR_UPDATE),
       "\x01", "n=$n: TTL +30 (minutes)");
    is($call->(thr_query('q'), THR_QUERY), thr_query_answer($n, 0, TTL_MIN, 90),
       "n=$n: 90 minutes left, quota 0");
    is($call->(thr_update($n, ATTR_TTL, PATCH, 100, 'q'), THR_UPDATE),
       "\x01", "n=$n: TTL patched to 100");
    is($call->(thr_update($n, ATTR_TTL, DECREASE, 100, 'q'), THR_UPDATE),
       "\x00", "n=$n: TTL decreased to 0: 0x00");
    is($call->(thr_query('q'), THR_QUERY),
       thr_query_answer($n, 0, TTL_MIN, 100), "n=$n: still 100 left");

    # Framed but failing: the failure byte, and the connection goes on.
    is($call->(thr_insert($n, 1, 0x07, 1, 'bad'), THR_INSERT), "\x00",
       "n=$n: unknown TTL type 0x07: 0x00");
    is($call->(thr_insert($n, 1, 0x00, 1, 'bad'), THR_INSERT), "\x00",
       "n=$n: TTL type 0x00: 0x00");
    is($call->(thr_insert($n, 1, TTL_S, 1, ''), THR_INSERT), "\x00",
       "n=$n: key length 0: 0x00");
    is($call->("\x02\x00", THR_QUERY), "\x00", "n=$n: QUERY, key length 0");
    is($call->(thr_update($n, 2, PATCH, 1, 'q'), THR_UPDATE), "\x00",
       "n=$n: unknown attribute: 0x00");
    is($call->(thr_update($n, ATTR_QUOTA, 3, 1, 'q'), THR_UPDATE), "\x00",
       "n=$n: unknown change: 0x00");
    is($call->(thr_insert($n, 1, TTL_S, 0, 'zero'), THR_INSERT), "\x00",
       "n=$n: TTL 0: 0x00");
    is($call->(thr_query('q'), THR_QUERY),
       thr_query_answer($n, 0, TTL_MIN, 100), "n=$n: the connection goes on");

    # Pipelining: 60 requests in one write, answers in order.
    my ($req, $want) = ('', '');
    for my $i (1 .. 20) {
        $req .= thr_insert($n, $i, TTL_H, 2, "p$i");
        $want .= "\x01";
    }
    for my $i (1 .. 20) {
        $req .= thr_query("p$i") . thr_purge("p$i");
        $want .= thr_query_answer($n, $i, TTL_H, 2) . "\x01";
    }
    $c->send($req);
    is(thr_read($c, length $want) // '', $want,
       "n=$n: 60 pipelined requests answered in order");

    # Split at every byte: the examples' stream written one byte at a time.
    my $stream = $ins . $q . $upd . $q . $purge;
    my $expect = "\x01" . thr_query_answer($n, 2, TTL_S, 3) . "\x01"
               . thr_query_answer($n, 4, TTL_S, 3) . "\x01";
    for my $byte (split //, $stream) {
        $c->send($byte);
        sleep 0.002;
    }
    is(thr_read($c, length $expect) // '', $expect,
       "n=$n: the examples split at every byte");

    # A value that does not fit n bytes (only possible through the counter
    # port, which keeps 64 bits): the failure byte.
    if ($n < 8) {
        my $big = 1 << (8 * $n);
        my $cc = $srv->connect;
        my $r = $cc->call(req_ttl_insert('wide', $big, 1, UNIT_H));
        is($r && $r->{status}, ST_OK, "n=$n: counter port inserts quota $big");
        is($call->(thr_query('wide'), THR_QUERY), "\x00",
           "n=$n: QUERY of a quota that does not fit: 0x00");
        $r = $cc->call(req_ttl_insert('long', 1, $big, UNIT_S));
        is($call->(thr_query('long'), THR_QUERY), "\x00",
           "n=$n: QUERY of a TTL that does not fit: 0x00");
        $r = $cc->call(req_ttl_update('wide', TTL_ATTR_QUOTA, CHANGE_PATCH,
                                      0, $big - 1));
        is($call->(thr_query('wide'), THR_QUERY),
           thr_query_answer($n, $big - 1, TTL_H, 1),
           "n=$n: the largest quota that fits is answered");
    }

    # An unknown request type: the answers before it, then the close.
    $c->send(thr_query('q') . "\x05" . thr_query('q'));
    is(thr_answer($c, THR_QUERY, $n) // '',
       thr_query_answer($n, 0, TTL_MIN, 100),
       "n=$n: the request before a bad type is answered");
    ok($c->closed_within, "n=$n: unknown type 0x05: connection closed");
    is(length $c->{buf}, 0, "n=$n: and nothing answered after it");
    ok(wait_until(sub { $srv->stderr =~
           /connection 127\.0\.0\.1:\d+ \(fd \d+\) on the throttr port: lost request framing \(request type 0x05\)/ }),
       "n=$n: logged with the client's address");
    my %st = mc_stats($srv->{mc_port});
    is($st{counter_throttr_bad_framing}, 1, "n=$n: counted in Stats");
    cmp_ok($st{counter_throttr_insert}, '>=', 20, "n=$n: INSERTs counted");
    cmp_ok($st{counter_throttr_failures}, '>=', 10,
           "n=$n: failure answers counted");
    my @framing = $srv->stderr =~ /lost request framing/g;
    is(scalar @framing, 1, "n=$n: logged once");

    # One namespace with the counter port.
    my $t = $srv->connect(port => $srv->{throttr_port});
    $t->send(thr_insert($n, 7, TTL_H, 3, 'shared'));
    is(thr_answer($t, THR_INSERT, $n), "\x01", "n=$n: Throttr INSERT shared");
    my $cc = $srv->connect;
    my $r = $cc->call(req_ttl_query('shared'));
    is($r && $r->{raw}, resp(OP_TTL_QUERY, ST_OK, ttl_view_body(7, 3, UNIT_H)),
       "n=$n: the counter port's ttl_query sees it (unit h)");
    $r = $cc->call(req_ttl_update('shared', TTL_ATTR_QUOTA, CHANGE_INCREASE,
                                  0, 5));
    is($r && $r->{status}, ST_OK, "n=$n: counter port increases the quota");
    $t->send(thr_query('shared'));
    is(thr_answer($t, THR_QUERY, $n), thr_query_answer($n, 12, TTL_H, 3),
       "n=$n: the next Throttr QUERY sees 12");
    $r = $cc->call(req_ttl_purge('shared'));
    $t->send(thr_query('shared'));
    is(thr_answer($t, THR_QUERY, $n), "\x00",
       "n=$n: purged on the counter port, gone on Throttr");
    if ($n == 2 && $CTL && -x $CTL) {
        $t->send(thr_insert($n, 999, TTL_H, 24, 'quota'));
        is(thr_answer($t, THR_INSERT, $n), "\x01", 'INSERT quota 999, 24 h');
        my $dir = tempdir(CLEANUP => 1);
        my ($rc, $out) = run_bounded($dir, $CTL, '-p', $srv->{counter_port},
                                     'ttl', 'query', 'quota');
        is($rc, 0, 'counterctl ttl query quota: exit 0');
        like($out, qr/^quota 999$/m, 'counterctl sees quota 999');
        like($out, qr/^ttl 24$/m, 'ttl 24');
        like($out, qr/^unit h$/m, 'unit h');
    }
    $srv->stop;
}

# doc/throttr.md's example lines, sent as written to a server of the
# default size, in their order: each answer exactly as the line says.
{
    my $doc = "$FindBin::Bin/../doc/throttr.md";
    open my $fh, '<', $doc or die "$doc: $!";
    my @lines = grep { /^    [A-Z].*:\s+[0-9a-f ]+->\s+[0-9a-f ]+$/ } <$fh>;
    close $fh;
    cmp_ok(scalar @lines, '>=', 5, 'doc/throttr.md has its example lines');
    my $srv = start_throttr();
    my $c = $srv->connect(port => $srv->{throttr_port});
    for my $l (@lines) {
        my ($what, $req, $ans) = $l =~ /^    (.*?):\s+([0-9a-f ]+?)\s+->\s+([0-9a-f ]+?)\s*$/;
        (my $rh = $req) =~ s/ //g;
        (my $ah = $ans) =~ s/ //g;
        $c->send(pack 'H*', $rh);
        my $got = thr_read($c, length($ah) / 2) // '';
        is(unpack('H*', $got), $ah, "doc example: $what");
    }
    $srv->stop;
}

done_testing;
