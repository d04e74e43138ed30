#!/usr/bin/env perl
# check-opcodes.pl: every opcode of the wire table reaches every client.
# Reads the opcodes from protocol/wire.h (enum cnt_opcode and the rows of
# CNT_OPCODE_ROWS, which must name the same opcodes) and fails, naming
# each gap, when one of them is missing from
#   - the C client's header, client/mccounter.h: mcc_NAME and
#     mcc_NAME_async;
#   - the Python protocol module: Op.ID with the same value;
#   - the Python request builders (ops.py): a function NAME using Op.ID;
#   - the blocking Python client (client.py): a method NAME of its own,
#     or class Client inheriting ops.py's Operations, which makes the
#     builder NAME a method (NAME = Operation(NAME));
#   - the asyncio Python client (aio.py): an async method NAME, or class
#     AsyncClient inheriting Operations, as above;
# where ID is the opcode's enum name (GCRA_CHECK) and NAME its row's
# name (gcra_check). An opcode a client lacks on purpose goes in
# %DELIBERATE below with the reason. Python opcodes the wire table does
# not have fail too (a client must not send what the server never knew).
#
# Then it checks itself: the same check over a copy of wire.h with one
# more opcode must name that opcode in every place above, so a check
# that silently matches nothing cannot pass.
#
# Usage: check-opcodes.pl [SOURCE_ROOT] (default: the directory above
# this script). Exit 0 when complete, 1 with the gaps on stderr. make
# check runs it.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

# A table this script cannot read is a failure like a gap (exit 1), not a
# crash of the harness.
$SIG{__DIE__} = sub { print STDERR $_[0]; exit 1 };

# Opcodes a consumer lacks on purpose: consumer => { NAME => reason }.
# Consumers: c_client, py_protocol, py_ops, py_client, py_aio. None today:
# every client speaks every opcode.
my %DELIBERATE = ();

my $root = $ARGV[0] // File::Spec->catdir(dirname(File::Spec->rel2abs($0)),
                                          File::Spec->updir);

sub slurp {
    my ($path) = @_;
    open my $fh, '<', $path or die "check-opcodes: cannot read $path: $!\n";
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text;
}

# The opcodes of wire.h's text: a list of [ID, value, name], or dies
# naming what does not agree between the enum and the rows.
sub wire_opcodes {
    my ($wire) = @_;
    my ($enum) = $wire =~ /typedef\s+enum\s+cnt_opcode\s*\{(.*?)\}/s
        or die "check-opcodes: no enum cnt_opcode in protocol/wire.h\n";
    my %value;
    my @order;
    while ($enum =~ /\bCNT_OP_(\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+)/g) {
        my ($id, $v) = ($1, $2);
        $value{$id} = $v =~ /^0x/i ? hex $v : $v + 0;
        push @order, $id;
    }
    die "check-opcodes: enum cnt_opcode has no CNT_OP_ values\n"
        unless @order;
    my ($rows) = $wire =~ /#define\s+CNT_OPCODE_ROWS\(ROW\)((?:[^\n]*\\\n)*[^\n]*)/
        or die "check-opcodes: no CNT_OPCODE_ROWS in protocol/wire.h\n";
    my %row;
    $row{$1} = 1 while $rows =~ /\bROW\((\w+),/g;
    my @errors;
    for my $id (@order) {
        push @errors, "CNT_OP_$id has no row in CNT_OPCODE_ROWS"
            unless $row{$id};
        my $name = lc $id;
        push @errors, "CNT_OP_$id: no row is named \"$name\""
            unless $wire =~ /\.name\s*=\s*"\Q$name\E"|\("\Q$name\E"/;
    }
    for my $id (sort keys %row) {
        push @errors, "row $id of CNT_OPCODE_ROWS has no CNT_OP_$id"
            unless exists $value{$id};
    }
    die join('', map { "check-opcodes: protocol/wire.h: $_\n" } @errors)
        if @errors;
    return map { [$_, $value{$_}, lc $_] } @order;
}

# The gaps of every consumer for the opcodes given: a list of messages.
sub gaps {
    my ($ops) = @_;
    my $py = "clients/python/src/mccounter";
    my %text = (
        c_client    => slurp("$root/client/mccounter.h"),
        py_protocol => slurp("$root/$py/protocol.py"),
        py_ops      => slurp("$root/$py/ops.py"),
        py_client   => slurp("$root/$py/client.py"),
        py_aio      => slurp("$root/$py/aio.py"),
    );
    my ($op_class) = $text{py_protocol} =~
        /^class Op\b[^\n]*\n((?:[ \t]+[^\n]*\n|\n)*)/m
        or die "check-opcodes: $py/protocol.py has no class Op\n";
    my %py_value;
    $py_value{$1} = hex $2 while $op_class =~ /^\s+(\w+)\s*=\s*0x([0-9A-Fa-f]+)/mg;
    # The builders ops.py's class Operations turns into methods, and
    # whether each client inherits it.
    my %shared;
    if ($text{py_ops} =~ /^class Operations\b[^\n]*\n((?:[ \t]+[^\n]*\n|\n)*)/m) {
        my $body = $1;
        $shared{$1} = 1 while $body =~ /^\s+\w+\s*=\s*Operation\((\w+)\)/mg;
    }
    my $client_shares = $text{py_client} =~ /^class Client\([^)]*\bOperations\b/m;
    my $aio_shares = $text{py_aio} =~ /^class AsyncClient\([^)]*\bOperations\b/m;

    my @gaps;
    my %wire_ids;
    for my $op (@$ops) {
        my ($id, $value, $name) = @$op;
        $wire_ids{$id} = 1;
        my %missing;
        for my $fn ("mcc_$name", "mcc_${name}_async") {
            push @{$missing{c_client}}, "client/mccounter.h: no $fn()"
                unless $text{c_client} =~ /\b\Q$fn\E\s*\(/;
        }
        if (!exists $py_value{$id}) {
            push @{$missing{py_protocol}}, "$py/protocol.py: no Op.$id";
        } elsif ($py_value{$id} != $value) {
            push @{$missing{py_protocol}}, sprintf(
                "$py/protocol.py: Op.%s is 0x%02X, the wire table's 0x%02X",
                $id, $py_value{$id}, $value);
        }
        push @{$missing{py_ops}}, "$py/ops.py: no def $name() sending Op.$id"
            unless $text{py_ops} =~ /^def \Q$name\E\(/m
                && $text{py_ops} =~ /\bOp\.\Q$id\E\b/;
        push @{$missing{py_client}}, "$py/client.py: no method $name()"
            unless $text{py_client} =~ /^[ \t]+def \Q$name\E\(/m
                || ($client_shares && $shared{$name});
        push @{$missing{py_aio}}, "$py/aio.py: no async method $name()"
            unless $text{py_aio} =~ /^[ \t]+async def \Q$name\E\(/m
                || ($aio_shares && $shared{$name});
        for my $who (sort keys %missing) {
            next if exists $DELIBERATE{$who}{$name};
            push @gaps, map { sprintf "opcode 0x%02X %s: %s", $value, $name, $_ }
                @{$missing{$who}};
        }
    }
    for my $id (sort keys %py_value) {
        push @gaps, "$py/protocol.py: Op.$id is not in protocol/wire.h"
            unless $wire_ids{$id};
    }
    return @gaps;
}

my $wire = slurp("$root/protocol/wire.h");
my @ops = wire_opcodes($wire);
my @gaps = gaps(\@ops);
if (@gaps) {
    print STDERR "check-opcodes: $_\n" for @gaps;
    print STDERR "check-opcodes: every opcode of protocol/wire.h needs "
        . "these (doc/design.md, \"Adding an opcode\")\n";
    exit 1;
}

# The self-check: one more opcode, which nothing speaks, must show up as
# a gap of every consumer.
my $probe = $wire;
$probe =~ s/(typedef\s+enum\s+cnt_opcode\s*\{)/$1\n    CNT_OP_SELF_PROBE = 0xEE,/s
    or die "check-opcodes: self-check: cannot extend the enum\n";
$probe =~ s/(#define\s+CNT_OPCODE_ROWS\(ROW\)\s*\\\n)/$1    ROW(SELF_PROBE, CNT_ROW_SKIPPED_BODY("self_probe")) \\\n/
    or die "check-opcodes: self-check: cannot extend the rows\n";
my @probe_gaps = grep { /self_probe/ } gaps([wire_opcodes($probe)]);
my @places = ('mcc_self_probe\(', 'mcc_self_probe_async\(', 'Op\.SELF_PROBE',
              'ops\.py', 'client\.py', 'aio\.py');
for my $place (@places) {
    next if grep { /$place/ } @probe_gaps;
    print STDERR "check-opcodes: self-check: an opcode missing from every "
        . "client was not reported at $place\n";
    exit 1;
}
printf "check-opcodes: %d opcodes, each in the C client, the Python "
    . "protocol module and both Python clients\n", scalar @ops;
exit 0;
