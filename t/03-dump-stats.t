#!/usr/bin/perl
# 03-dump-stats.t: Dump records (current, max consumption, name) and the
# terminator carry the request's opaque and opcode; Stats pairs carry every
# reference item name.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless target_available;
my $srv = start_target(config => {});
my $c = $srv->connect;

my ($rec, $raw) = $c->dump_records(opaque => 0x1234);
is(scalar @$rec, 0, 'empty table: no records');
is($raw->[-1]{raw}, resp(OP_DUMP, ST_OK, '', 0x1234),
   'empty table: terminator only (status 0, empty body, opaque copied)');

my $bin = "bin\x00\xff name";
my $long = 'L' x 40000;
is($c->call(req_acquire('ds-a', 5, 9))->{status}, ST_OK, 'acquire ds-a 5');
is($c->call(req_release('ds-a', 4))->{status}, ST_OK, 'release ds-a 4');
is($c->call(req_acquire($bin, 2, 2))->{status}, ST_OK, 'acquire a binary name');
is($c->call(req_acquire($long, 1, 1))->{status}, ST_OK, 'acquire a 40000-byte name');

($rec, $raw) = $c->dump_records(opaque => 0xfeedface);
is(scalar @$raw, 4, 'three records and a terminator');
ok(!(grep { $_->{opaque} != 0xfeedface || $_->{opcode} != OP_DUMP ||
            $_->{status} != ST_OK || $_->{magic} != 0x91 } @$raw),
   'every Dump answer: magic 0x91, opcode 0x11, status 0, opaque copied');
is($raw->[-1]{body_len}, 0, 'the last answer has an empty body');
my %by = map { $_->{name} => $_ } @$rec;
is_deeply([@{ $by{'ds-a'} }{qw(current max)}], [1, 5],
          'ds-a: current 1, max consumption 5 (the peak)');
is_deeply([@{ $by{$bin} }{qw(current max)}], [2, 2], 'binary name intact');
ok($by{$long} && $by{$long}{current} == 1, 'long name intact');
my ($one) = grep { $_->{body} =~ /ds-a$/ } @$raw;
is($one->{raw}, resp(OP_DUMP, ST_OK, pack('NNn', 1, 5, 4) . 'ds-a', 0xfeedface),
   'record layout: current u32, max u32, name length u16, name');

my $r = $c->call(req_stats(opaque => 0x77));
is($r->{opaque}, 0x77, 'stats: opaque copied');
is($r->{status}, ST_OK, 'stats: status 0');
my @pairs = CounterTest::Conn::parse_stats($r->{body});
my $len = 0;
$len += 4 + length($_->[0]) + length($_->[1]) for @pairs;
is($len, $r->{body_len}, 'stats body is exactly a list of pairs');
my @names = map { $_->[0] } @pairs;
my @ref = qw(objects total_objects used_memory conflicts gc_count
             last_gc_elapsed total_gc_elapsed curr_connections
             total_connections command:noop command:get command:acquire
             command:release command:stats command:dump);
my %pos;
@pos{@names} = 0 .. $#names;
is_deeply([grep { !exists $pos{$_} } @ref], [], 'every reference item present');
is_deeply([sort { $pos{$a} <=> $pos{$b} } @ref], \@ref,
          'reference items in the reference order');
ok(!(grep { $_->[1] !~ /^[0-9]+(\.[0-9]+)?$/ } @pairs), 'values are numbers')
    or diag explain \@pairs;
my %st = map { @$_ } @pairs;
is($st{objects}, 3, 'objects counts the live counters') unless $ENV{CNT_TEST_REFERENCE};
cmp_ok($st{'command:acquire'}, '>=', 3, 'command:acquire counted');
cmp_ok($st{curr_connections}, '>=', 1, 'curr_connections counts us');

$srv->stop;
done_testing;
