#!/usr/bin/perl
# ab-report.pl: reads what bench/ab-run.sh wrote and prints, per cell, new/old
# of each round (the two measured back to back), their median, and every
# round's figure, as a Markdown table. usage: ab-report.pl [AB.kv]
use strict; use warnings;
my (%v, @order);
my $file = $ARGV[0] // 'ab.kv';
open my $fh, '<', $file or die "ab-report: $file: $!\n";
while (<$fh>) {
    my %kv = map { split /=/, $_, 2 } grep { /=/ } split ' ';
    my $cell;
    if (defined $kv{ops_s}) {
        $cell = "$kv{workload} c=$kv{conns} d=$kv{depth} k=$kv{keys}" . (($kv{hot} // 0) ? ' hot' : '');
        $v{$cell}{$kv{round}}{$kv{ver}} = $kv{ops_s};
    } elsif (($kv{workload} // '') eq 'handoff') {
        $cell = 'handoff p50 / noop p50 (lower better)';
        $v{$cell}{$kv{round}}{$kv{ver}} = $kv{handoff_p50_us} / $kv{noop_p50_us};
        my $c2 = 'handoff p99 / noop p99 (lower better)';
        $v{$c2}{$kv{round}}{$kv{ver}} = $kv{handoff_p99_us} / $kv{noop_p99_us};
        push @order, $c2 unless grep { $_ eq $c2 } @order;
    } elsif (($kv{workload} // '') eq 'semaphore') {
        $cell = 'semaphore grants/s';
        $v{$cell}{$kv{round}}{$kv{ver}} = $kv{grants_s};
    } else { next }
    push @order, $cell unless grep { $_ eq $cell } @order;
}
sub med { my @s = sort { $a <=> $b } @_; @s % 2 ? $s[$#s/2] : ($s[@s/2-1] + $s[@s/2]) / 2 }
printf "| %s | %s | %s |\n", 'cell', 'new/old median', 'every round';
print "|---|---:|---|\n";
for my $c (@order) {
    my @r;
    for my $round (sort keys %{$v{$c}}) {
        my $x = $v{$c}{$round};
        push @r, $x->{new} / $x->{old} if $x->{new} && $x->{old};
    }
    next unless @r;
    printf "| %s | %.2f | %s |\n", $c, med(@r), join ' ', map { sprintf '%.2f', $_ } @r;
}
