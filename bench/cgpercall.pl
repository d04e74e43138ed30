#!/usr/bin/perl
# cgpercall.pl: reads a callgrind output file and prints, as key=value, how
# many times FUNCTION was called (calls), the instructions of those calls
# with everything they called (ir) and their quotient (ir_per_call), from
# the call records. usage: cgpercall.pl CALLGRIND.OUT FUNCTION
use strict;
use warnings;

my ($path, $fn) = @ARGV;
die "usage: cgpercall.pl CALLGRIND.OUT FUNCTION\n" unless defined $fn;
open my $fh, '<', $path or die "$path: $!\n";
my (%name, $callee, $pending);
my ($calls, $ir) = (0, 0);
while (my $line = <$fh>) {
    # Names are compressed: "(id) name" the first time, "(id)" later.
    if ($line =~ /^(c?)fn=\((\d+)\)(?: (\S+))?/) {
        my ($is_call, $id, $n) = ($1, $2, $3);
        $name{$id} = $n if defined $n;
        $callee = $is_call ? $name{$id} : undef;
    } elsif ($line =~ /^calls=(\d+)/) {
        $pending = defined $callee && $callee eq $fn ? $1 : undef;
    } elsif (defined $pending && $line =~ /^[+\-*]?\w*\s+(\d+)/) {
        # The line after calls= is the call's position and inclusive cost.
        $calls += $pending;
        $ir += $1;
        $pending = undef;
    }
}
printf "calls=%d ir=%d ir_per_call=%.1f\n", $calls, $ir,
    $calls ? $ir / $calls : 0;
