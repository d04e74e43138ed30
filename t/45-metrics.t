#!/usr/bin/perl
# 45-metrics.t: the operator's side of the HTTP port. GET /metrics answers
# the Prometheus exposition (content type, length, close; per configured
# group and tenant only; promtool check metrics accepts it, and promtool
# check rules accepts contrib/prometheus/alerts.yml); the /live WebSocket
# answers each message with the same text; GET / serves the live page,
# which refers to nothing outside itself, and headless Chromium shows it
# filled in against a busy server (the groups, the tenants, the chart).
# promtool (Debian: prometheus) and Chromium are optional: their parts are
# skipped with a reason without them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use WsTest;
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $dir = tempdir(CLEANUP => 1);
open my $fh, '>', "$dir/throttle.conf" or die;
print $fh "node.capacity = 1000\n",
          "tenant.acme = reserved:200,hard_limit:500\n",
          "tenant.beta = reserved:100\n";
close $fh;
my $srv = start_ws(threads => 2, config => {
    'group.jobs' => 'max:1', 'group.spare' => 'max:4',
    'throttle.config' => "$dir/throttle.conf",
});
my $port = $srv->{http_port};
my ($promtool) = grep { -x } map { "$_/promtool" } split /:/, $ENV{PATH};
my ($chromium) = grep { -x } map { "$_/chromium" } split /:/, $ENV{PATH};

# One plain HTTP request; returns the answer's head and body, read to the
# server's close.
sub http {
    my ($request) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Timeout => 10) or die "connect: $@";
    binmode $s;
    print $s $request;
    my $all = '';
    my $deadline = time + 20;
    while (time < $deadline) {
        my $n = sysread $s, $all, 65536, length $all;
        last unless $n;
    }
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $all, 2;
    return ($head // '', $body // '');
}

# The state to look at: jobs held by one connection and waited for by
# another; two tenants charged, and one nobody configured.
my $holder = $srv->connect;
is($holder->wcall(req_acquire('jobs', 1, 1))->{status}, ST_OK,
   'jobs acquired');
my $waiter = $srv->connect;
$waiter->send(req_wait_acquire('jobs', 1, GROUP_DEFAULT, 60000, 0));
ok(wait_until(sub { my %st = mc_stats($srv->{mc_port}, 'counter');
                    ($st{waiting} // 0) == 1 }),
   'a request waits for jobs');
# Two leases, on two connections (so on both workers): the live feed
# lists them, nearest first, from every worker's wheel.
my (@lessees, %lease_id);
for my $l (['leased-near', 50000], ['leased-far', 55000]) {
    my $c = $srv->connect;
    my $a = parse_wait_answer(
        $c->wcall(req_wait_acquire($l->[0], 1, 1, 0, $l->[1])));
    ok($a && $a->{state} == 0, "$l->[0]: granted with a lease");
    $lease_id{$l->[0]} = $a ? $a->{lease_id} : -1;
    push @lessees, $c;
}
for my $t (['acme', 7], ['beta', 3], ['drive-by', 2]) {
    is(system("'$ENV{COUNTERCTL}' -p $srv->{counter_port} throttle"
              . " $t->[0] $t->[1] >/dev/null"), 0, "throttle $t->[0] $t->[1]");
}

# Over acme's hard limit of 500: one charge throttled for that reason.
{
    my $c = $srv->connect;
    my $a = parse_throttle_answer($c->call(req_throttle('acme', 600)));
    is($a ? $a->{reason} : -1, 3, 'acme throttled by its hard limit');
    $c->close;
}

# ---- GET /metrics ----
my ($head, $body) = http("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
like($head, qr/^HTTP\/1\.1 200 OK\r\n/, '/metrics: 200');
like($head, qr/\r\nContent-Type: text\/plain; version=0\.0\.4/,
     'the exposition format 0.0.4');
like($head, qr/\r\nConnection: close/, 'then the connection closes');
my ($len) = $head =~ /\r\nContent-Length: (\d+)/;
is($len, length $body, 'Content-Length is the body');
for my $line ('counter_group_maximum{group="jobs"} 1',
              'counter_group_consumption{group="jobs"} 1',
              'counter_group_waiting{group="jobs"} 1',
              'counter_group_waiting{group="spare"} 0',
              'counter_tenant_units_total{tenant="acme"} 7',
              'counter_tenant_units_total{tenant="beta"} 3',
              'counter_tenant_reserved{tenant="acme"} 200',
              'counter_tenant_hard_limit{tenant="acme"} 500',
              'counter_tenant_hard_limit{tenant="beta"} +Inf',
              'counter_tenant_throttled_by_reason_total{tenant="acme",reason="hard_limit"} 1',
              'counter_tenant_throttled_by_reason_total{tenant="acme",reason="pool_empty"} 0',
              'counter_tenant_throttled_by_reason_total{tenant="beta",reason="hard_limit"} 0',
              'counter_throttle_throttled_by_reason_total{reason="hard_limit"} 1',
              'counter_throttle_throttled_by_reason_total{reason="reserve"} 0',
              'counter_throttle_capacity 1000',
              'counter_throttle_reserved 300',
              'counter_waiting 1',
              'counter_leases 2',
              'counter_commands_total{opcode="wait_acquire"} 3',
              'counter_commands_total{opcode="throttle"} 4') {
    like($body, qr/^\Q$line\E$/m, "shows $line");
}
like($body, qr/^# TYPE counter_commands_total counter$/m, 'typed');
like($body, qr/^# HELP counter_objects /m, 'helped');
unlike($body, qr/drive-by/, 'a tenant nobody configured has no series');
unlike($body, qr/counter_lease_seconds_left/,
       'the leases nearest to expiry are the live feed\'s alone');

SKIP: {
    skip 'promtool not installed (Debian: prometheus)', 2 unless $promtool;
    open my $out, '>', "$dir/metrics.txt" or die;
    print $out $body;
    close $out;
    my $check = `$promtool check metrics < $dir/metrics.txt 2>&1`;
    is($?, 0, 'promtool check metrics accepts it') or diag($check);
    my $rules = "$FindBin::Bin/../contrib/prometheus/alerts.yml";
    $check = `$promtool check rules $rules 2>&1`;
    is($?, 0, 'promtool check rules accepts contrib/prometheus/alerts.yml')
        or diag($check);
}

($head) = http("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
like($head, qr/^HTTP\/1\.1 405 /, 'POST /metrics: 405');
($head) = http("GET /metric HTTP/1.1\r\nHost: x\r\n\r\n");
like($head, qr/^HTTP\/1\.1 404 /, 'another path: 404');

# ---- The /live feed ----
{
    my $c = WsTest->new($port, path => '/live');
    for my $round (1, 2) {
        $c->send_text('snapshot');
        my $f = $c->frame;
        ok($f && $f->{op} == 1, "live: snapshot $round is a text message");
        like($f ? $f->{payload} : '',
             qr/^counter_group_waiting\{group="jobs"\} 1$/m,
             "live: snapshot $round holds the figures");
        like($f ? $f->{payload} : '',
             qr/^counter_lease_seconds_left\{name="leased-near",lease_id="$lease_id{'leased-near'}"\} (?:4\d|50)\.\d{3}\n(?:.*\n)*?counter_lease_seconds_left\{name="leased-far",lease_id="$lease_id{'leased-far'}"\} (?:5[0-5])\.\d{3}$/m,
             "live: snapshot $round lists the leases of both workers, nearest first");
    }
    $c->send_close(1000);
    is($c->close_code, 1000, 'live: closes cleanly');
}

# Many pages asking at once: more surveys than the server lets out at a
# time (one per worker), so some wait their turn; each still gets the
# figures and the leases.
{
    my @pages = map { WsTest->new($port, path => '/live') } 1 .. 8;
    $_->send_text('snapshot') for @pages;
    my $full = 0;
    for my $c (@pages) {
        my $f = $c->frame;
        $full++ if $f && $f->{op} == 1 &&
            $f->{payload} =~ /^counter_group_waiting\{group="jobs"\} 1$/m &&
            $f->{payload} =~ /^counter_lease_seconds_left\{name="leased-far",/m;
    }
    is($full, 8, 'live: eight pages at once, each answered in full');
    for my $c (@pages) {
        $c->send_close(1000);
        $c->close_code;
    }
}

# ---- The page ----
($head, $body) = http("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
like($head, qr/^HTTP\/1\.1 200 OK\r\n/, '/: 200');
like($head, qr/\r\nContent-Type: text\/html/, 'an HTML page');
like($body, qr/<script>/, 'its script is inline');
unlike($body, qr/\b(?:src|href)\s*=|\@import|url\(/i,
       'it loads nothing from elsewhere');

SKIP: {
    skip 'chromium not installed (Debian: chromium)', 14 unless $chromium;
    # Keep the server busy while the page watches it.
    my $busy = fork // die "fork: $!";
    if ($busy == 0) {
        my $c = $srv->connect;
        while (1) {
            $c->wcall(req_noop());
            $c->wcall(req_gcra_check('api', 1000, 1000, 1_000_000_000));
        }
        POSIX::_exit(0);
    }
    track_pid($busy);
    ok(wait_until(sub { my %st = mc_stats($srv->{mc_port}, 'counter');
                        ($st{'command:noop'} // 0) > 0 }),
       'the busy client is at work');
    # Its checks show once a whole second of them has passed.
    ok(wait_until(sub {
           my (undef, $m) = http("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
           $m =~ /^counter_limit_busiest_checks\{kind="gcra",name="api"\} [1-9]\d*$/m
       }), '/metrics: the busiest rate-limit name');
    # Chromium's virtual time may run out before the first snapshot
    # arrives on a loaded machine; the DOM is then the empty page, and
    # another load is tried (at most three).
    my ($rc, $dom, $err);
    for my $try (1 .. 3) {
        ($rc, $dom, $err) = finish_bounded(
            spawn_to_files($dir, $chromium, '--headless=new', '--no-sandbox',
                           '--disable-gpu', '--no-first-run',
                           "--user-data-dir=$dir/profile",
                           '--virtual-time-budget=10000', '--dump-dom',
                           "http://127.0.0.1:$port/"),
            $dir, 60);
        last if $rc != 0 || $dom =~ /data-group=/;
        diag("try $try: no snapshot shown yet");
    }
    kill_pid($busy);
    is($rc, 0, 'chromium ran') or diag($err);
    like($dom, qr/<span id="status" class="live">live<\/span>/,
         'the page is live');
    like($dom, qr/<tr class="row" data-group="jobs"><td>jobs<\/td><td class="n held">1<\/td><td class="n">1<\/td><td class="n waiting">1<\/td><\/tr>/,
         'the jobs group: held 1 of 1, 1 waiting') or diag($dom);
    like($dom, qr/data-group="spare"/, 'the spare group');
    like($dom, qr/<tr class="row" data-tenant="acme"><td>acme<\/td>.*?<td class="n">200<\/td><td class="n">500<\/td>/,
         'tenant acme with its reserve and hard limit');
    like($dom, qr/data-tenant="acme">.*?<td class="n throttled" title="hard limit 1, pool empty 0, reserve 0">1<\/td>/,
         'acme throttled once, for its hard limit') or diag($dom);
    # The chart's line needs two snapshots a second apart, which the
    # browser's virtual time may not reach with a busy server: the test
    # checks the chart is there, and the figures that one snapshot gives.
    like($dom, qr/<svg id="cps-chart"[^>]*><polyline id="cps-line"/,
         'the chart of commands per second');
    like($dom, qr/<b id="conns">[1-9]\d*<\/b>/, 'connections counted')
        or diag($dom);
    like($dom, qr/<b id="waiting">1<\/b>/, 'one request waiting');
    like($dom, qr/data-opcode="noop"/, 'the busy traffic shows');
    like($dom, qr/<tr class="row" data-lease="leased-near"><td>leased-near<\/td><td class="n">$lease_id{'leased-near'}<\/td><td class="n">(?:4\d|50)\.\d<\/td><\/tr><tr class="row" data-lease="leased-far">/,
         'the leases about to expire, nearest first') or diag($dom);
    like($dom, qr/<tr class="row" data-limit="gcra:api"><td>gcra<\/td><td>api<\/td><td class="n">[1-9][\d,]*<\/td><\/tr>/,
         'the busiest rate-limit name') or diag($dom);
}

done_testing;
