#!/usr/bin/perl
# cgcount.pl: reads a callgrind output file and prints, as key=value, the
# instructions it counted (ir) and how many times the C allocator's entry
# points were called (malloc, calloc, realloc, free, aligned_alloc,
# posix_memalign), from the call records. usage: cgcount.pl CALLGRIND.OUT
use strict;
use warnings;

my ($path) = @ARGV;
die "usage: cgcount.pl CALLGRIND.OUT\n" unless defined $path;
open my $fh, '<', $path or die "$path: $!\n";
my %want = map { $_ => 1 } qw(malloc calloc realloc free aligned_alloc posix_memalign);
my (%name, %calls);
my ($ir, $callee) = (0, undef);
while (my $line = <$fh>) {
    # Names are compressed: "(id) name" the first time, "(id)" later.
    if ($line =~ /^cfn=\((\d+)\)(?: (\S+))?/) {
        $name{$1} = $2 if defined $2;
        $callee = $name{$1};
    } elsif ($line =~ /^fn=\((\d+)\)(?: (\S+))?/) {
        $name{$1} = $2 if defined $2;
    } elsif ($line =~ /^calls=(\d+)/) {
        $calls{$callee} += $1 if defined $callee && $want{$callee};
        $callee = undef;
    } elsif ($line =~ /^(?:totals|summary): (\d+)/) {
        $ir = $1 if $1 > $ir;
    }
}
my $allocs = 0;
$allocs += $calls{$_} // 0 for qw(malloc calloc realloc aligned_alloc posix_memalign);
print join(' ', "ir=$ir", "allocs=$allocs",
           map { "$_=" . ($calls{$_} // 0) } sort keys %want), "\n";
