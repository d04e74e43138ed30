#!/usr/bin/perl
# 49-lease-list.t: Lease_list (0x24) over real sockets with two worker
# threads (counter.threads=2; consecutive connections land on different
# workers): leases held by connections on both workers are all listed,
# nearest expiry first, up to the count asked (and never more than 64);
# the empty list; waits and grants without a lease are not leases; a
# lease returned or expired leaves the list; a count of 0 is refused; a
# connection that closes while its listing is being gathered costs
# nothing; requests pipelined after a Lease_list are answered after
# its end marker; and many connections asking at once are all answered.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use POSIX ();
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_host(config => { threads => 2 });
my $watch = $srv->connect;

# Wait_acquire on c; the parsed answer (undef unless status 0).
sub wa {
    my ($c, @args) = @_;
    return parse_wait_answer($c->wcall(req_wait_acquire(@args)));
}

# ---- The empty list; a count of 0 ----
{
    my ($rec, $raw) = $watch->lease_records(10, opaque => 0x31);
    is(scalar @$rec, 0, 'no lease: no record');
    answer_is($raw->[-1], resp(OP_LEASE_LIST, ST_OK, '', 0x31),
              'no lease: the end marker alone, with the opaque');
    answer_is($watch->call(req_lease_list(0, opaque => 7)),
              resp_err(OP_LEASE_LIST, ST_INVALID, 7), 'count 0: 0x04');
    answer_is($watch->call(req(OP_LEASE_LIST, 'ab', opaque => 8)),
              resp_err(OP_LEASE_LIST, ST_INVALID, 8),
              'a body shorter than the count: 0x04');
}

# ---- Leases on both workers, nearest first ----
my @c = map { $srv->connect } 1 .. 4;
my %lease = (far => [0, 60000, 3], near => [1, 20000, 1],
             mid => [2, 40000, 2]);
my %id;
for my $n (sort keys %lease) {
    my ($k, $ms, $res) = @{ $lease{$n} };
    my $a = wa($c[$k], $n, $res, 10, 0, $ms);
    ok($a && $a->{state} == 0 && $a->{lease_id} > 0, "$n: granted");
    $id{$n} = $a->{lease_id};
}
# Not leases: a grant without a lease, and a wait in a queue.
ok(wa($c[3], 'nolease', 1, 1, 0, 0), 'nolease: granted without a lease');
ok(wa($c[0], 'full', 1, 1, 0, 60000), 'full: granted');
my $q = wa($c[1], 'full', 1, 1, 60000, 60000);
ok($q && $q->{state} == 1, 'full: a second request waits');
{
    my ($rec, $raw) = $watch->lease_records(10, opaque => 0x55);
    is_deeply([map { $_->{name} } @$rec], [qw(near mid far full)],
              'every lease of both workers, nearest first');
    my %by = map { $_->{name} => $_ } @$rec;
    for my $n (sort keys %lease) {
        my ($k, $ms, $res) = @{ $lease{$n} };
        ok($by{$n}{left_ms} > 0 && $by{$n}{left_ms} <= $ms,
           "$n: time left within its lease ($by{$n}{left_ms} of $ms ms)");
        is($by{$n}{lease_id}, $id{$n}, "$n: its lease id");
        is($by{$n}{resources}, $res, "$n: its resources");
    }
    ok(!grep({ $_->{opaque} != 0x55 } @$raw), 'every packet has the opaque');
    answer_is($raw->[-1], resp(OP_LEASE_LIST, ST_OK, '', 0x55),
              'the end marker follows the records');
    my $two = $c[2]->lease_records(2);
    is_deeply([map { $_->{name} } @$two], [qw(near mid)],
              'count 2: the two nearest, asked from another worker');
}

# ---- A lease returned or expired leaves the list ----
answer_is($c[1]->wcall(req_wait_release('near', opaque => 3)),
          resp(OP_WAIT_RELEASE, ST_OK, u32(1), 3), 'near: returned');
{
    my $short = wa($c[3], 'short', 1, 1, 0, 300);
    ok($short && $short->{state} == 0, 'short: a 300 ms lease');
    my $e = $c[3]->next_event;
    ok($e && $e->{code} == EV_LEASE_EXPIRED && $e->{name} eq 'short',
       'short: its lease expired');
    my $rec = $watch->lease_records(10);
    is_deeply([map { $_->{name} } @$rec], [qw(mid far full)],
              'returned and expired leases are gone');
}

# ---- At most 64 records, however many are asked ----
{
    my $many = $srv->connect;
    for my $i (0 .. 69) {
        my $a = wa($many, "m$i", 1, 1, 0, 100000 + $i);
        $a && $a->{state} == 0 or fail("m$i: granted"), last;
    }
    my $rec = $watch->lease_records(1000);
    is(scalar @$rec, LEASE_LIST_MAX, 'a count of 1000 is clamped to 64');
    my @left = map { $_->{left_ms} } @$rec;
    is_deeply(\@left, [sort { $a <=> $b } @left], 'nearest first');
    $many->close;
    ok(wait_until(sub { @{ $watch->lease_records(64) } == 3 }),
       'a closed connection takes its leases along');
}

# ---- Pipelined requests wait for the end marker ----
{
    $watch->send(req_lease_list(5, opaque => 1) . req_noop(opaque => 2) .
                 req_lease_list(1, opaque => 3) . req_noop(opaque => 4));
    my @r;
    while (my $r = $watch->answer) {
        push @r, $r;
        last if $r->{opcode} == OP_NOOP && $r->{opaque} == 4;
    }
    is_deeply([map { sprintf '%02x/%d/%d', $_->{opcode}, $_->{opaque},
                     $_->{body_len} ? 1 : 0 } @r],
              ['24/1/1', '24/1/1', '24/1/1', '24/1/0', '00/2/0',
               '24/3/1', '24/3/0', '00/4/0'],
              'records, end marker, then the next request, in order');
}

# ---- Many askers at once ----
# Forty connections on both workers send three listings each and a Noop,
# all before any answer is read: more listings than the server gathers at
# once (one per worker), so most wait their turn; each still gets every
# lease, nearest first, and its answers in order.
{
    my @want = map { $_->{name} } @{ $watch->lease_records(64) };
    is(scalar @want, 3, 'three leases before the crowd asks');
    my @ask = map { $srv->connect } 1 .. 40;
    for my $a (@ask) {
        $a->send(join '', (map { req_lease_list(64, opaque => $_) } 1 .. 3),
                 req_noop(opaque => 4));
    }
    my $bad = 0;
    for my $a (@ask) {
        my @got;
        while (my $r = $a->answer) {
            push @got, $r;
            last if $r->{opcode} == OP_NOOP;
        }
        my @seen = map { sprintf '%02x/%d/%d', $_->{opcode}, $_->{opaque},
                         $_->{body_len} ? 1 : 0 } @got;
        my @expect = ((map { my $o = $_; (("24/$o/1") x 3, "24/$o/0") }
                       1 .. 3), '00/4/0');
        $bad++ unless "@seen" eq "@expect";
    }
    is($bad, 0, 'every asker got its three full listings, in order');
    $_->close for @ask;
    is_deeply([map { $_->{name} } @{ $watch->lease_records(64) }], \@want,
              'the listing is the same afterwards');
}

# ---- The asker closes while its listing is gathered ----
{
    for my $i (1 .. 200) {
        my $gone = $srv->connect;
        $gone->send(req_lease_list(64));
        $i % 2 ? $gone->close : $gone->reset;
    }
    my $rec = $watch->lease_records(64);
    is(scalar @$rec, 3, 'the server answers as before after 200 askers left');
    my %st = map { @$_ } $watch->stats_pairs;
    ok($st{'command:lease_list'} >= 200, 'Stats counts the listings');
}

# ---- The server stops with listings being gathered ----
# Every worker has leases to walk; askers on both workers send a listing
# each and TERM follows at once: the server exits 0, its surveys freed
# (the sanitizer stages of scripts/robustness.sh would report a leak on
# stderr) whichever worker had answered.
{
    my @ask = map { $srv->connect } 1 .. 6;
    $_->send(req_lease_list(64)) for @ask;
    my $pid = $srv->{pid};
    kill 'TERM', $pid;
    my $st;
    wait_until(sub { my $r = waitpid($pid, POSIX::WNOHANG());
                     $st = $? if $r == $pid; defined $st }, 20);
    ok(defined $st, 'mchost exited with listings in flight');
    if (defined $st) {
        untrack_pid($pid);
        delete $srv->{pid};
    }
    is($st, 0, 'mchost exit status 0');
    unlike($srv->stderr, qr/(ERROR|WARNING|Assertion|Sanitizer)/i,
           'nothing alarming on stderr');
    $_->close for @ask, @c, $watch;
}
done_testing;
