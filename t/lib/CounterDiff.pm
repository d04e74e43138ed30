# CounterDiff.pm: drives the reference server (yrmcds) and ours side by side.
# Every request goes to both over parallel connections and the answers are
# compared byte for byte, apart from the differences the project documents
# (Stats values, Dump order, the opcode byte of 0x81 answers).
package CounterDiff;

use strict;
use warnings;

use CounterTest;
use Time::HiRes qw(sleep);

# Builds a pair over two started servers (ref first, ours second).
sub new {
    my ($class, $ref, $ours) = @_;
    my $self = bless { srv => [$ref, $ours], conns => {}, mismatches => [],
                       compared => 0 }, $class;
    $self->{control} = [map { $_->connect } $ref, $ours];
    return $self;
}

# The connection pair with key k, opened on first use.
sub conns {
    my ($self, $k) = @_;
    return $self->{conns}{$k} //= [map { $_->connect } @{ $self->{srv} }];
}

# Closes pair k: how is close, reset or (already) eof.
sub drop {
    my ($self, $k, $how) = @_;
    my $p = delete $self->{conns}{$k} or return;
    for my $c (@$p) {
        if ($how eq 'reset') { $c->reset } else { $c->close }
    }
}

# Records a mismatch with enough context to reproduce it.
sub _mismatch {
    my ($self, $what, $req, $ref, $ours) = @_;
    push @{ $self->{mismatches} }, sprintf(
        "%s\n  request:   %s\n  reference: %s\n  ours:      %s", $what,
        hexdump(substr $req // '', 0, 64),
        $ref ? hexdump($ref->{raw}) : 'none (' . ($self->{why}[0] // '?') . ')',
        $ours ? hexdump($ours->{raw}) : 'none (' . ($self->{why}[1] // '?') . ')');
    return 0;
}

# Stats names of a body, in order.
sub _stat_names { map { $_->[0] } CounterTest::Conn::parse_stats($_[0]) }

# Compares one answer pair for a request of opcode op; returns true if equal
# up to the documented differences.
sub same {
    my ($self, $op, $ref, $ours, $req) = @_;
    $self->{compared}++;
    return $self->_mismatch('missing answer', $req, $ref, $ours)
        unless $ref && $ours;
    my $want = $ref->{raw};
    if ($ref->{status} == ST_UNKNOWN && $ref->{opcode} == 0x12
        && !$self->{self_test}) {
        # Deliberate difference 2: we copy the request's opcode.
        substr($want, 1, 1) = chr $op;
        $self->{mapped_unknown}++;
    }
    if ($op == OP_STATS && $ref->{status} == ST_OK && $ref->{magic} == 0x91) {
        my @rn = _stat_names($ref->{body});
        my %on = map { $_ => 1 } _stat_names($ours->{body});
        my @missing = grep { !$on{$_} } @rn;
        return $self->_mismatch("stats names missing: @missing", $req, $ref,
                                $ours)
            if @missing || substr($ref->{raw}, 0, 4) ne substr($ours->{raw}, 0, 4)
               || substr($ref->{raw}, 8, 4) ne substr($ours->{raw}, 8, 4);
        return 1;
    }
    return 1 if $want eq $ours->{raw};
    return $self->_mismatch('answers differ', $req, $ref, $ours);
}

# Sends bytes on pair k and compares the answers, one per opcode in ops.
# A Dump opcode stands for its whole series. Returns true if all matched.
sub exchange {
    my ($self, $k, $bytes, @ops) = @_;
    my $p = $self->conns($k);
    $_->send($bytes) for @$p;
    my $ok = 1;
    for my $op (@ops) {
        if ($op == OP_DUMP) { $ok &= $self->_dump_series($p, $bytes); next }
        my @r = map { $_->response } @$p;
        $self->{why} = [map { $_->{error} } @$p];
        $ok &= $self->same($op, @r, $bytes);
    }
    return $ok;
}

# Reads one Dump series from both and compares the sorted records and the
# terminator.
sub _dump_series {
    my ($self, $p, $req) = @_;
    my @sets;
    for my $c (@$p) {
        my @rec;
        while (my $r = $c->response) {
            push @rec, $r;
            last if $r->{body_len} == 0 || $r->{status} != ST_OK;
        }
        push @sets, \@rec;
    }
    $self->{compared}++;
    my @sorted = map { [sort map { $_->{raw} } @$_] } @sets;
    my ($x, $y) = map { join "\n", map { hexdump($_) } @$_ } @sorted;
    return 1 if $x eq $y && @{ $sets[0] };
    return $self->_mismatch("dump differs (reference " . @{ $sets[0] } .
                            " answers, ours " . @{ $sets[1] } . ")\n$x\n--\n$y",
                            $req, $sets[0][-1], $sets[1][-1]);
}

# One polling round: returns the names of want (name => value) whose Get
# answers that value on both servers. Sends one pipelined batch each.
sub settled {
    my ($self, $want) = @_;
    my @names = sort keys %$want;
    my %ok = map { $_ => 1 } @names;
    my $batch = join '', map { req_get($_) } @names;
    for my $c (@{ $self->{control} }) {
        my @r = $c->send($batch)->responses(scalar @names);
        for my $i (0 .. $#names) {
            delete $ok{$names[$i]}
                unless $r[$i] && $r[$i]{status} == ST_OK &&
                       unpack('N', $r[$i]{body}) == $want->{$names[$i]};
        }
    }
    return keys %ok;
}

# Waits until every name of want has settled at its value on both servers:
# a closed connection's holdings are released asynchronously.
sub settle {
    my ($self, $want) = @_;
    my %left = %$want;
    wait_until(sub {
        delete @left{ $self->settled(\%left) };
        return !%left;
    }) and return 1;
    return $self->_mismatch('counters never settled: ' . join(' ', keys %left),
                            '', undef, undef);
}

# Mismatch descriptions so far.
sub mismatches { @{ $_[0]{mismatches} } }

1;
