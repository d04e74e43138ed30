#!/usr/bin/perl
# 31-protocol-doc.t: the hex examples of doc/protocol.md's "Rate limits"
# section are what the server sends. Every request line of the section is
# sent as written and every response line is compared with the real
# answer byte for byte, except the fields the section says depend on
# when the request arrives (times left, retry and reset hints, the checks
# of a second in a Busiest record), which
# must lie within the bounds the section gives for them. Each packet
# line must also be well formed (its header's body length is its body's),
# and each one must be used by the scenario below, so an example added to
# the section without being checked here fails the test. The example of
# the "Lease_list (0x24)" section is checked the same way at the end.
# The server's clock is the real one: requests whose answers depend on
# each other are sent in one write, as t/27 and t/28 do.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my $DOC = "$FindBin::Bin/../doc/protocol.md";
plan skip_all => "no $DOC" unless -r $DOC;

my $MS = 1_000_000;
my $SEC = 1_000 * $MS;

# The packet lines of the section: { kind, bytes, line }, in order.
sub section_packets {
    open my $fh, '<', $DOC or die "$DOC: $!";
    my ($in, @p);
    while (my $l = <$fh>) {
        if ($l =~ /^## /) {
            last if $in;
            $in = $l =~ /^## Rate limits/;
            next;
        }
        next unless $in;
        next unless $l =~ /^\s{4,}(request|response)\s+([0-9a-f| ]+?)\s*$/;
        my ($kind, $hex) = ($1, $2);
        $hex =~ s/[| ]//g;
        push @p, { kind => $kind, bytes => pack('H*', $hex), line => $. };
    }
    return @p;
}

my @packets = section_packets();
ok(@packets >= 20, 'doc/protocol.md has the rate-limit examples')
    or BAIL_OUT('no examples found in the "Rate limits" section');

# Each line: a whole packet of the right magic.
for my $p (@packets) {
    my ($magic, $op, $len, $opaque) = unpack 'CCx2NN', $p->{bytes};
    @$p{qw(opcode opaque)} = ($op, $opaque);
    my $want = $p->{kind} eq 'request' ? 0x90 : 0x91;
    ok(length $p->{bytes} >= 12 && $magic == $want &&
       length $p->{bytes} == 12 + $len,
       "line $p->{line}: a $p->{kind} whose header gives its body's length")
        or diag(sprintf 'magic %02x, declared %u, body %d', $magic, $len,
                length($p->{bytes}) - 12);
}

# The n-th (from 1) packet of kind with this opaque.
sub ex {
    my ($kind, $opaque, $n) = @_;
    my @m = grep { $_->{kind} eq $kind && $_->{opaque} == $opaque } @packets;
    my $p = $m[($n // 1) - 1]
        or die sprintf "doc/protocol.md has no %s #%d with opaque 0x%02x",
                       $kind, $n // 1, $opaque;
    $p->{used} = 1;
    return $p;
}

# A time field of an answer's body: u64 at off, within [lo, hi].
sub t64 { my ($off, $lo, $hi) = @_; return [$off, 8, $lo, $hi] }

# The body offsets of a check answer's two hints, at answer base b.
sub retry_at { $_[0] + 16 }
sub reset_at { $_[0] + 24 }

# Compares got with the documented packet doc: equal outside the time
# fields, and each time field (of both) within its bounds.
sub same_but_time {
    my ($got, $doc, $times, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my @bad;
    if (!defined $got) {
        push @bad, 'no answer';
    } else {
        my ($g, $d) = ($got, $doc->{bytes});
        for my $t (@$times) {
            my ($off, $size, $lo, $hi) = @$t;
            my $at = 12 + $off;
            for my $which (['server', \$g], ['doc', \$d]) {
                my ($who, $ref) = @$which;
                next if length $$ref < $at + $size;
                my $v = unpack $size == 8 ? 'Q>' : 'N',
                               substr($$ref, $at, $size);
                push @bad, "$who: field at body offset $off is $v, not in"
                           . " [$lo, $hi]"
                    unless $v >= $lo && $v <= $hi;
                substr($$ref, $at, $size) = "\0" x $size;
            }
        }
        push @bad, 'bytes differ' if $g ne $d;
    }
    ok(!@bad, $title) or diag(join("\n", @bad) . "\ngot:  "
                              . (defined $got ? hexdump($got) : 'nothing')
                              . "\ndoc:  " . hexdump($doc->{bytes})
                              . " (line $doc->{line})");
}

# Sends the steps' requests in one write and checks each answer. A step:
# { send => bytes or a documented packet, want => documented packet,
#   times => [time fields], ok => sub (answer) for an undocumented one }.
sub run_steps {
    my ($c, $what, @steps) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $c->send(join '', map { ref $_->{send} ? $_->{send}{bytes}
                                           : $_->{send} } @steps);
    for my $s (@steps) {
        my $r = $c->response;
        my $got = $r ? $r->{raw} : undef;
        if ($s->{want}) {
            same_but_time($got, $s->{want}, $s->{times} // [],
                          "$what: line $s->{want}{line}");
        } else {
            ok($r && $s->{ok}->($r), "$what: $s->{title}");
        }
    }
}

# An answer that is an allowed check.
sub allowed {
    my ($r) = @_;
    my $a = parse_check_answer($r);
    return $a && $a->{state} == CHECK_ALLOWED;
}

my $srv = start_host(config => { threads => 1 });
if (my $why = opcodes_pending($srv, 0x30 .. 0x36)) {
    plan skip_all => $why;
}
my $c = $srv->connect;

# ---- TTL counters: job, quota 5 for 3 s ----
# The time left (view offset 8) is 3 s rounded up while less than 1 s has
# passed: never more than the documented value, never 0.
my $LEFT = 8;
run_steps($c, 'ttl',
    { send => ex(request => 0x30), want => ex(response => 0x30, 1) },
    { send => ex(request => 0x30), want => ex(response => 0x30, 2) },
    { send => ex(request => 0x31), want => ex(response => 0x31, 1),
      times => [t64($LEFT, 1, 3)] },
    { send => ex(request => 0x32), want => ex(response => 0x32),
      times => [t64($LEFT, 1, 3)] },
    { send => ex(request => 0x33), want => ex(response => 0x33) },
    { send => ex(request => 0x34), want => ex(response => 0x34),
      times => [t64($LEFT, 1, 4)] },
    { send => ex(request => 0x35), want => ex(response => 0x35) },
    { send => ex(request => 0x31), want => ex(response => 0x31, 2) });

{
    my $tiny = start_host(config => { threads => 1, memory_limit => 1 });
    my $t = $tiny->connect;
    run_steps($t, 'ttl beyond the memory limit',
        { send => ex(request => 0x30), want => ex(response => 0x30, 3) });
    $t->close;
    $tiny->stop;
}

# ---- Sliding window: api, 10 per second in 10 slots of 100 ms ----
# A first call's cost is remembered until its slot is 11 slots old: 1.1 s
# at most, more than 1 s. Once limited, the hints depend on how far apart
# the calls fell: at most 1.1 s.
my $W = 0;
run_steps($c, 'window',
    { send => ex(request => 0x36), want => ex(response => 0x36),
      times => [t64(reset_at($W), $SEC + 1, 1.1 * $SEC)] },
    { send => req_window_check('api', 2, opaque => 0x99),
      ok => \&allowed, title => 'a second call of api, limit 2' },
    { send => ex(request => 0x37), want => ex(response => 0x37),
      times => [t64(retry_at($W), 1, 1.1 * $SEC),
                t64(reset_at($W), 1, 1.1 * $SEC)] },
    { send => ex(request => 0x38), want => ex(response => 0x38) },
    { send => ex(request => 0x39), want => ex(response => 0x39) });

# ---- GCRA: api, 10 per second, burst 5 (T = 100 ms, L = 6) ----
# The first call's reset is exactly T; the seventh, sent in the same
# write, comes less than T later: its hints are T and 6 T less that time.
my @five = map {
    { send => req_gcra_check('api', 5, 10, $SEC, opaque => 0x99),
      ok => \&allowed, title => "call $_ of 6 at once" }
} 2 .. 6;
my @limited = (t64(retry_at($W), 1, 100 * $MS),
               t64(reset_at($W), 500 * $MS + 1, 600 * $MS));
run_steps($c, 'gcra',
    { send => ex(request => 0x3a), want => ex(response => 0x3a) },
    @five,
    { send => ex(request => 0x3b), want => ex(response => 0x3b),
      times => \@limited },
    { send => ex(request => 0x3c), want => ex(response => 0x3c),
      times => \@limited },
    { send => ex(request => 0x3b), want => ex(response => 0x3b),
      times => \@limited });
$c->close;
$srv->stop;

# ---- Multi-check: the window and the GCRA limit api, fresh ----
{
    my $m = start_host(config => { threads => 1 });
    my $mc = $m->connect;
    my ($win, $gcra) = (2, 2 + 32);
    my @more = ((map {
        { send => req_window_check('api', 10, opaque => 0x99),
          ok => \&allowed, title => "window call $_ of 10" }
    } 2 .. 10), (map {
        { send => req_gcra_check('api', 5, 10, $SEC, opaque => 0x99),
          ok => \&allowed, title => "gcra call $_ of 6" }
    } 2 .. 6));
    run_steps($mc, 'multi',
        { send => ex(request => 0x3d), want => ex(response => 0x3d, 1),
          times => [t64(reset_at($win), $SEC + 1, 1.1 * $SEC)] },
        @more,
        { send => ex(request => 0x3d), want => ex(response => 0x3d, 2),
          times => [t64(retry_at($win), 1, 1.1 * $SEC),
                    t64(reset_at($win), 1, 1.1 * $SEC),
                    t64(retry_at($gcra), 1, 100 * $MS),
                    t64(reset_at($gcra), 500 * $MS + 1, 600 * $MS)] });
    $mc->close;
    $m->stop;
}

# Lease_list's example: the request as written, the record equal but for
# the time left (at most the lease's 1.5 s) and the lease id (whatever
# the server gave), and the end marker exactly.
{
    open my $fh, '<', $DOC or die "$DOC: $!";
    my ($in, %ex);
    while (my $l = <$fh>) {
        if ($l =~ /^#{2,3} /) {
            last if $in;
            $in = $l =~ /^### Lease_list \(0x24\)/;
            next;
        }
        next unless $in && $l =~ /^\s{4,}(request|record|end)\s+([0-9a-f| ]+?)\s*$/;
        my ($kind, $hex) = ($1, $2);
        $hex =~ s/[| ]//g;
        $ex{$kind} = pack 'H*', $hex;
    }
    is(scalar keys %ex, 3, 'Lease_list: request, record and end documented');
    my $m = start_host(config => { threads => 2 });
    my $holder = $m->connect;
    my $a = parse_wait_answer(
        $holder->call(req_wait_acquire('job', 1, 1, 0, 1500)));
    ok($a && $a->{state} == 0, 'Lease_list: job granted with a 1.5 s lease');
    my $asker = $m->connect;
    $asker->send($ex{request} // '');
    my ($rec, $end) = $asker->responses(2);
    my ($got, $doc) = ($rec ? $rec->{raw} : '', $ex{record} // '');
    my ($left, $id) = length $got >= 28 ? unpack 'x12NQ>', $got : (-1, 0);
    ok($left >= 0 && $left <= 1500, "Lease_list: time left $left ms");
    is($id, $a ? $a->{lease_id} : -1, 'Lease_list: the grant\'s lease id');
    substr($_, 12, 12) = "\0" x 12 for grep { length $_ >= 24 } $got, $doc;
    is(hexdump($got), hexdump($doc), 'Lease_list: the record as documented');
    is(hexdump($end ? $end->{raw} : ''), hexdump($ex{end} // 'x'),
       'Lease_list: the end marker as documented');
    $holder->close;
    $asker->close;
    $m->stop;
}

# ---- Busiest: a fresh server, then the window api checked three times ----
{
    my $b = start_host(config => { threads => 1 });
    my $bc = $b->connect;
    run_steps($bc, 'busiest, nothing checked',
        { send => ex(request => 0x3e), want => ex(response => 0x3e, 1) });
    run_steps($bc, 'busiest: the checks',
        map { { send => req_window_check('api', 10, opaque => 0x99),
                ok => \&allowed, title => "window call $_ of 3" } } 1 .. 3);
    # The listing ranks a second that has passed: asked until it names
    # the window (bounded), then compared; its checks (body offset 0) are
    # 3, or fewer when the second turned between the checks.
    my @got;
    wait_until(sub {
        $bc->send(ex(request => 0x3e)->{bytes});
        @got = ();
        while (my $r = $bc->response) {
            push @got, $r;
            last if $r->{body_len} == 0 || $r->{status} != ST_OK;
        }
        return @got > 1;
    });
    is(scalar @got, 2, 'busiest: one record, then the end');
    same_but_time($got[0] && $got[0]{raw}, ex(response => 0x3e, 2),
                  [[0, 4, 1, 3]], 'busiest: the window api');
    same_but_time($got[1] && $got[1]{raw}, ex(response => 0x3e, 1), [],
                  'busiest: the end');
    $bc->close;
    $b->stop;
}

# Every packet line of the section was checked above.
my @unused = grep { !$_->{used} } @packets;
ok(!@unused, 'every example of the section is checked')
    or diag(join "\n", map { "line $_->{line}: $_->{kind} not checked" }
                           @unused);

done_testing;
