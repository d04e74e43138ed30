# 03-storms.t: storms of bad magic bytes and unknown opcodes, pipelined in
# thousands, with valid requests in between. Every bad packet gets its
# status (0x04 / 0x81, opaque and opcode copied) in order, the valid ones
# their normal answers, and the connection and the server survive.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host();

my $srv = start_host(config => {});
my %valid = map { $_ => 1 } @KNOWN_OPCODES;
my @unknown = grep { !$valid{$_} } 0 .. 255;

# Sends rounds of 1000 packets and checks the answers of each round.
sub storm {
    my ($c, $rounds, $make) = @_;
    my ($sent, $good) = (0, 0);
    for my $round (1 .. $rounds) {
        my (@want, $bytes);
        for (1 .. 1000) {
            my $opq = ++$sent;
            my ($pkt, $check) = $make->($opq);
            $bytes .= $pkt;
            push @want, [$opq, $check];
        }
        $c->send($bytes);
        for my $w (@want) {
            my $r = $c->response(10) or last;
            $good++ if $r->{opaque} == $w->[0] && $w->[1]->($r);
        }
    }
    return ($sent, $good);
}

my $c = $srv->connect;
my ($n, $good) = storm($c, 20, sub {
    my ($opq) = @_;
    if ($opq % 100 == 0) {
        return (req_noop(opaque => $opq),
                sub { $_[0]{status} == ST_OK && $_[0]{opcode} == OP_NOOP });
    }
    my $magic = 0x90;
    $magic = int rand 256 while $magic == 0x90;
    my $op = int rand 256;
    return (req($op, 'abc', magic => $magic, opaque => $opq),
            sub { $_[0]{status} == ST_INVALID && $_[0]{opcode} == $op &&
                  $_[0]{magic} == 0x91 && $_[0]{body} eq 'Invalid arguments' });
});
is($good, $n, "bad-magic storm: $n packets, every answer right and in order");
bystander_ok($srv, 'after the bad-magic storm');

($n, $good) = storm($c, 20, sub {
    my ($opq) = @_;
    my $op = $unknown[$opq % @unknown];
    my $body = 'x' x ($opq % 40);
    return (req($op, $body, opaque => $opq),
            sub { $_[0]{status} == ST_UNKNOWN && $_[0]{opcode} == $op &&
                  $_[0]{body} eq 'Unknown command' });
});
is($good, $n, "unknown-opcode storm: $n packets, every answer right and in order");

# Invalid arguments of valid opcodes, mixed with a live counter.
($n, $good) = storm($c, 5, sub {
    my ($opq) = @_;
    my $k = $opq % 4;
    return $k == 0 ? (req_acquire('storm', 0, 5, opaque => $opq),
                      sub { $_[0]{status} == ST_INVALID })
         : $k == 1 ? (req_acquire('storm', 6, 5, opaque => $opq),
                      sub { $_[0]{status} == ST_INVALID })
         : $k == 2 ? (req(OP_GET, "\0", opaque => $opq),
                      sub { $_[0]{status} == ST_INVALID })
         :           (req(OP_RELEASE, pack('Nn', 1, 9) . 'a', opaque => $opq),
                      sub { $_[0]{status} == ST_INVALID });
});
is($good, $n, "invalid-arguments storm: $n packets answered 0x04");
my $r = $c->call(req_get('storm', opaque => 1));
ok($r && $r->{status} == ST_NOT_FOUND, 'no counter was created by invalid requests');
$c->close;
bystander_ok($srv, 'after all storms');
server_clean($srv);
done_testing;
