# Hostile.pm: small additions to CounterTest for the hostile-input tests:
# the server's RSS and CPU time from /proc, a bystander client that must
# keep getting right answers, and latency percentiles for reporting.
package Hostile;

use strict;
use warnings;

use Exporter 'import';
use Test::More;
use Time::HiRes qw(time);
use CounterTest;

our @EXPORT = qw(rss_kib cpu_seconds bystander_ok percentiles server_clean);

# Servers close on hostile clients; a write after that must fail, not kill.
$SIG{PIPE} = 'IGNORE';

# Resident set of process pid, in KiB (0 if it is gone).
sub rss_kib {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/status" or return 0;
    while (<$fh>) { return $1 if /^VmRSS:\s+(\d+)/ }
    return 0;
}

# User + system CPU seconds used by process pid.
sub cpu_seconds {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my @f = split ' ', (split /\)/, scalar <$fh>)[-1];
    return ($f[11] + $f[12]) / 100;
}

# Runs an Acquire / Get / Release round on a fresh connection to srv and
# checks every answer: the server still serves ordinary clients.
sub bystander_ok {
    my ($srv, $what) = @_;
    my $c = eval { $srv->connect };
    return ok(0, "$what: bystander cannot connect: $@") unless $c;
    my $name = "bystander-$$";
    my $a = $c->call(req_acquire($name, 1, 5, opaque => 1));
    my $g = $c->call(req_get($name, opaque => 2));
    my $r = $c->call(req_release($name, 1, opaque => 3));
    $c->close;
    return ok($a && $a->{status} == ST_OK && $g && $g->{status} == ST_OK &&
              unpack('N', $g->{body}) >= 1 && $r && $r->{status} == ST_OK,
              "$what: a bystander is served");
}

# Stops srv and checks its stderr for sanitizer reports (ASan, LSan at
# exit, UBSan): a report there is a bug even when every answer was right.
sub server_clean {
    my ($srv) = @_;
    $srv->stop;
    my $err = $srv->stderr;
    ok($err !~ /(?:Sanitizer|runtime error:)/, 'no sanitizer report from the server')
        or diag($err);
}

# Returns (p50, p99, max) of a list of numbers.
sub percentiles {
    my @s = sort { $a <=> $b } @_;
    return (0, 0, 0) unless @s;
    return ($s[int(@s * 0.50)], $s[int(@s * 0.99)], $s[-1]);
}

1;
