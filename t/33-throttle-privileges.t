#!/usr/bin/perl
# 33-throttle-privileges.t: who may change the throttling, and the
# settings file. Without counter.admin_secret_file, auth and every
# privileged opcode (tenant_set, tenant_remove, node_set, unthrottle,
# reload) answer 0x2A. With a secret: privileged opcodes before auth 0x2A;
# a wrong secret 0x2B, counted, logged without the attempt, and the third
# failure of a connection answered and then the connection closed; the
# right secret (one trailing newline of the file removed) makes the
# connection privileged, that connection only. counter.throttle.config
# gives the values at start; reload re-reads it (the file wins for the
# tenants it names, the others stay), a broken file answers 0x04 and
# changes nothing, and without a file reload is 0x01. Past the server's
# limits on failed authentications (per client address, and in all) an
# attempt is refused without comparing (0x2A, even the right secret),
# counted in auth_refused and logged with the client's address; every
# privileged change is logged with the client's address, and every line
# of the log starts with its time. (Start-up errors of bad secret files
# belong to t/10-config-errors.t.)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $srv = start_throttle_host();
if (my $why = opcodes_pending($srv, @THROTTLE_OPCODES)) {
    plan skip_all => $why;
}

# Request bytes on c whose answer must be OK with exactly body.
sub answered {
    my ($c, $bytes, $body, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp($op, ST_OK, $body, $opaque),
                     $title);
}

# Request bytes on c whose answer must be the error status with its text.
sub refused {
    my ($c, $bytes, $status, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp_err($op, $status, $opaque),
                     $title);
}

# One well-formed request of each privileged opcode: [name, bytes].
sub privileged_requests {
    return (['tenant_set', req_tenant_set('p', 1, 2, opaque => 0x45)],
            ['tenant_remove', req_tenant_remove('p', opaque => 0x46)],
            ['node_set', req_node_set(100, opaque => 0x47)],
            ['unthrottle', req_unthrottle(opaque => 0x48)],
            ['reload', req_reload(opaque => 0x49)]);
}

# The Stats items of s as a hash.
sub stats_of {
    my ($s) = @_;
    my $c = $s->connect;
    my %st = map { @$_ } $c->stats_pairs;
    $c->close;
    return %st;
}

# The parsed views, read now on c.
sub node_of { parse_node_view($_[0]->call(req_node_show())) }

# Checks the keys of want in a parsed view.
sub view_is {
    my ($v, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    return fail("$title: a 32-byte view") unless $v;
    my $ok = is_deeply({ map { $_ => $v->{$_} } keys %$want }, $want,
                       $title);
    diag(join ' ', map { "$_=$v->{$_}" } sort grep { $_ ne 'pad' } keys %$v)
        unless $ok;
    return $ok;
}

# Checks tenant_show of name on c: [reserved, hard_limit, flags].
sub tenant_is {
    my ($c, $name, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $v = parse_tenant_view($c->call(req_tenant_show($name)));
    return view_is($v, { reserved => $want->[0], hard_limit => $want->[1],
                         flags => $want->[2] }, $title);
}

# ---- No secret configured: nobody is privileged ----
{
    my $c = $srv->connect;
    for my $i (1 .. 4) {
        refused($c, req_auth('anything', opaque => $i), ST_NOT_PERMITTED,
                "no secret: auth attempt $i: 0x2A");
    }
    for my $p (privileged_requests()) {
        refused($c, $p->[1], ST_NOT_PERMITTED, "no secret: $p->[0]: 0x2A");
    }
    answer_is($c->call(req_noop(opaque => 9)), resp(OP_NOOP, ST_OK, '', 9),
              'no secret: the connection stays open');
    my $a = parse_throttle_answer($c->call(req_throttle('free', 1)));
    ok($a && $a->{state} == THROTTLE_ALLOWED,
       'no secret: throttle works for everyone');
    answered($c, req_tenant_show('p', opaque => 1),
             tenant_view_body(0, UNLIMITED, 0, 0, 0, 0),
             'no secret: tenant_show works; p was not set');
    view_is(node_of($c), { capacity => 0, tenants => 0 },
            'no secret: node_show works; the capacity was not set');
    my %st = stats_of($srv);
    is($st{auth_failures}, 0, 'no secret: 0x2A is no authentication failure');
    $c->close;
}
$srv->stop;

# ---- A secret: privileged opcodes need auth; wrong secrets ----
my $SECRET = 'Tr0ub4dor & 3 horses';
{
    # Without the limits on failures, which have their own section below:
    # this one is about what one connection may try.
    my $s = start_throttle_host(secret => $SECRET,
                                config => { auth_fail_limit => 0,
                                            auth_fail_limit_per_address => 0 });
    my $c = $s->connect;
    for my $p (privileged_requests()) {
        refused($c, $p->[1], ST_NOT_PERMITTED,
                "secret: $p->[0] before auth: 0x2A");
    }
    my @attempts = ('WRONG-ATTEMPT-one', 'WRONG-ATTEMPT-two',
                    'WRONG-ATTEMPT-three');
    refused($c, req_auth($attempts[0], opaque => 1), ST_AUTH_FAILED,
            'secret: a wrong secret: 0x2B');
    refused($c, req_tenant_set('p', 1, 2, opaque => 2), ST_NOT_PERMITTED,
            'secret: still not privileged: 0x2A');
    refused($c, req_auth($attempts[1], opaque => 3), ST_AUTH_FAILED,
            'secret: a second wrong secret: 0x2B');
    answer_is($c->call(req_noop(opaque => 4)), resp(OP_NOOP, ST_OK, '', 4),
              'secret: open after two failures');
    answer_is($c->call(req_auth($attempts[2], opaque => 5)),
              resp_err(OP_AUTH, ST_AUTH_FAILED, 5),
              'secret: the third wrong secret is answered 0x2B');
    ok($c->closed_within(5), 'secret: and then the connection is closed');
    $c->close;

    # Near misses, each on its own connection (no closes).
    my @near = (['a prefix of the secret', substr($SECRET, 0, 5)],
                ['the secret and one more byte', "${SECRET}x"],
                ['the secret with its newline', "$SECRET\n"],
                ['the secret with one byte changed',
                 substr($SECRET, 0, -1) . 'X']);
    for my $n (@near) {
        my $k = $s->connect;
        refused($k, req_auth($n->[1], opaque => 6), ST_AUTH_FAILED,
                "secret: $n->[0]: 0x2B");
        $k->close;
    }
    # Three wrong secrets, the right one and privileged requests in one
    # write: the connection answers the three failures and nothing after
    # them (no fourth guess, nothing privileged), then closes.
    my $p = $s->connect;
    $p->send(join '', (map { req_auth("WRONG-$_", opaque => 20 + $_) } 1 .. 3),
             req_auth($SECRET, opaque => 24),
             req_node_set(0, opaque => 25), req_node_show(opaque => 26));
    my @got;
    while (my $r = $p->response(5)) { push @got, $r }
    is_deeply([map { [$_->{opaque}, $_->{status}] } @got],
              [map { [20 + $_, ST_AUTH_FAILED] } 1 .. 3],
              'secret: pipelined guesses: three 0x2B answers, nothing after');
    ok($p->closed_within(5), 'secret: pipelined guesses: then the close');
    $p->close;

    my $z = $s->connect;
    refused($z, req_auth('', opaque => 7), ST_INVALID,
            'secret: auth with a secret of 0 bytes: 0x04');
    refused($z, req_auth('abc', secret_len => 9, opaque => 8), ST_INVALID,
            'secret: auth cut inside the secret: 0x04');
    $z->close;

    my $err;
    my $logged = wait_until(sub {
        $err = $s->stderr;
        return scalar(() = $err =~ /authentication failed on connection/g)
               >= 6 + @near;
    }, 5);
    ok($logged, 'secret: every failure is logged') or diag("stderr: $err");
    my $line = 'counter: authentication failed on connection ';
    like($err, qr/^$LOG_TS \Q$line\E127\.0\.0\.1:\d+ \(fd \d+, attempt 1 of 3\)$/m,
         'secret: the log names the client, the connection and the attempt');
    like($err, qr/, attempt 3 of 3\)/, 'secret: the third attempt logged');
    unlike($err, qr/WRONG|\Q$SECRET\E|\Q$near[0][1]\E/,
           'secret: neither the attempts nor the secret are logged');
    unlike($err, qr/attempt 4 of 3/,
           'secret: no fourth attempt is ever judged');
    my %st = stats_of($s);
    # Two connections closed after three failures each (one of them in
    # one write), and the near misses.
    is($st{auth_failures}, 6 + @near, 'secret: Stats auth_failures');
    is($st{auth_closes}, 2, 'secret: Stats auth_closes');
    my %host = mc_stats($s->{mc_port});
    is($host{counter_auth_failures}, 6 + @near,
       'secret: host stats counter_auth_failures');

    # The right secret: this connection only is privileged.
    my $a = $s->connect;
    my $o = $s->connect;
    answered($a, req_auth($SECRET, opaque => 10), '',
             'secret: the right secret: ok, empty');
    answered($a, req_node_set(100, opaque => 11), '',
             'secret: node_set after auth: ok');
    answered($a, req_tenant_set('p', 1, 2, opaque => 12), '',
             'secret: tenant_set after auth: ok');
    tenant_is($a, 'p', [1, 2, TENANT_CONFIGURED], 'secret: p was set');
    refused($o, req_tenant_remove('p', opaque => 13), ST_NOT_PERMITTED,
            'secret: another connection is still not privileged');
    answered($a, req_tenant_remove('p', opaque => 14), '',
             'secret: tenant_remove after auth: ok');
    refused($a, req_reload(opaque => 15), ST_NOT_FOUND,
            'secret: reload without counter.throttle.config: 0x01');
    answered($a, req_unthrottle(opaque => 16), '',
             'secret: unthrottle after auth: ok');
    answered($o, req_auth($SECRET, extra => 'ignored', opaque => 17), '',
             'secret: bytes after the secret are ignored');
    answered($o, req_node_set(0, opaque => 18), '',
             'secret: that connection is privileged now');
    view_is(node_of($o), { capacity => 0 }, 'secret: capacity 0 again');
    $a->close;
    $o->close;
    # Every privileged change, with the client's address and how it ended.
    my $by = qr/^$LOG_TS counter: privileged change by connection 127\.0\.0\.1:\d+ \(fd \d+\): /m;
    my @changes = ('node set capacity 100: done',
                   'tenant set "p" reserved 1 hard_limit 2: done',
                   'tenant remove "p": done', 'reload: Not found',
                   'unthrottle: done', 'node set capacity 0: done');
    wait_until(sub { ($err = $s->stderr) =~ /capacity 0: done/ }, 5);
    for my $w (@changes) {
        like($err, qr/$by\Q$w\E$/m, "secret: logged: $w");
    }
    is(scalar(() = $err =~ /privileged change/g), scalar @changes,
       'secret: one line per privileged request, refused ones not');
    my @bad = grep { !/^$LOG_TS (?:counter|mchost): / } split /\n/, $err;
    is_deeply(\@bad, [], 'secret: every log line starts with its time');
    $s->stop;
}

# ---- The limits on failed authentications ----
# A connection to s from the loopback address local (127.0.0.1 or
# another of 127/8), so that two client addresses can be told apart.
sub connect_from {
    my ($s, $local) = @_;
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => $s->{counter_port},
                                   LocalHost => $local,
                                   Timeout => $CounterTest::TIMEOUT)
        or die "connect from $local: $@";
    binmode $sock;
    return bless { sock => $sock, buf => '' }, 'CounterTest::Conn';
}

# Runs steps (a list of [local address, secret]: each on a new
# connection) within one second of the server's clock, trying again after
# the next second starts when a second boundary fell in the middle (the
# counts start afresh each second). Returns the statuses, or undef when no
# try fitted in one second.
sub auth_steps_in_one_second {
    my ($s, @steps) = @_;
    for my $try (1 .. 5) {
        wait_fresh_second(force => 1);
        my $t0 = int mono_now();
        my @st = map {
            my $c = connect_from($s, $_->[0]);
            my $r = $c->call(req_auth($_->[1], opaque => 0x77));
            $c->close;
            $r ? $r->{status} : -1;
        } @steps;
        return \@st if int mono_now() == $t0;
    }
    return undef;
}

SKIP: {
    my $probe = eval { IO::Socket::IP->new(LocalHost => '127.0.0.2',
                                           Listen => 1) };
    skip 'cannot bind 127.0.0.2', 9 unless $probe;
    close $probe;

    # Per address: 2 failures a second.
    my $s = start_throttle_host(secret => $SECRET,
                                config => { auth_fail_limit => 0,
                                            auth_fail_limit_per_address => 2 });
    my $st = auth_steps_in_one_second($s, ['127.0.0.1', 'WRONG-A1'],
                                      ['127.0.0.1', 'WRONG-A2'],
                                      ['127.0.0.1', 'WRONG-A3'],
                                      ['127.0.0.1', $SECRET],
                                      ['127.0.0.2', 'WRONG-B1']);
    is_deeply($st, [ST_AUTH_FAILED, ST_AUTH_FAILED, ST_NOT_PERMITTED,
                    ST_NOT_PERMITTED, ST_AUTH_FAILED],
              'per address: past 2 failures refused unjudged, even the '
              . 'right secret; another address is still judged');
    my %st = stats_of($s);
    ok($st{auth_refused} >= 2, 'per address: Stats auth_refused counted');
    my $c = $s->connect;
    wait_fresh_second(force => 1);
    answered($c, req_auth($SECRET, opaque => 1), '',
             'per address: the next second the right secret works');
    $c->close;
    my $err;
    wait_until(sub { ($err = $s->stderr) =~ /127\.0\.0\.2:/ }, 5);
    like($err, qr/^$LOG_TS counter: authentication failed on connection 127\.0\.0\.1:\d+ \(fd \d+, attempt 1 of 3\): refused unjudged, too many failed authentications \(counter\.auth_fail_limit, counter\.auth_fail_limit_per_address\)$/m,
         'per address: a refusal is logged with the address and why');
    like($err, qr/^$LOG_TS counter: authentication failed on connection 127\.0\.0\.2:\d+ \(fd \d+, attempt 1 of 3\)$/m,
         'per address: the other address is logged as judged');
    unlike($err, qr/WRONG|\Q$SECRET\E/, 'per address: no attempt logged');
    $s->stop;

    # Server-wide: 2 failures a second from all addresses together.
    $s = start_throttle_host(secret => $SECRET,
                             config => { auth_fail_limit => 2,
                                         auth_fail_limit_per_address => 0 });
    $st = auth_steps_in_one_second($s, ['127.0.0.1', 'WRONG-C1'],
                                   ['127.0.0.2', 'WRONG-C2'],
                                   ['127.0.0.3', 'WRONG-C3'],
                                   ['127.0.0.1', $SECRET]);
    is_deeply($st, [ST_AUTH_FAILED, ST_AUTH_FAILED, ST_NOT_PERMITTED,
                    ST_NOT_PERMITTED],
              'server-wide: past 2 failures from any address, refused');
    %st = stats_of($s);
    ok($st{auth_refused} >= 2, 'server-wide: Stats auth_refused');
    my %host = mc_stats($s->{mc_port});
    is($host{counter_auth_refused}, $st{auth_refused},
       'server-wide: host stats counter_auth_refused');
    $s->stop;
}

# ---- The secret file: one trailing "\n" or "\r\n" is not the secret ----
for my $case (["plain secret, 16+\n", 'plain secret, 16+',
               'a trailing newline'],
              ["crlf secret, 16+\r\n", 'crlf secret, 16+',
               'a trailing CR LF'],
              ['bare secret, 16+', 'bare secret, 16+', 'no trailing newline'],
              ["two newlines, 16+\n\n", "two newlines, 16+\n",
               'two newlines: one stays']) {
    my ($text, $secret, $title) = @$case;
    my $s = start_throttle_host(secret_text => $text);
    my $c = $s->connect;
    answered($c, req_auth($secret, opaque => 1), '',
             "secret file with $title: the secret works");
    if ($secret ne $text) {
        my $k = $s->connect;
        refused($k, req_auth($text, opaque => 2), ST_AUTH_FAILED,
                "secret file with $title: the file's raw bytes do not");
        $k->close;
    }
    $c->close;
    $s->stop;
}

# ---- counter.throttle.config: values at start, reload ----
{
    my $start = <<'EOF';
# Throttling of the test node.
node.capacity = 100
default.hard_limit = 50

tenant.alpha = reserved:10
tenant.beta = reserved:20,hard_limit:30
tenant.gamma.x:y-z_1 = reserved:0,hard_limit:unlimited
EOF
    my $s = start_throttle_host(secret => $SECRET, throttle => $start);
    my $c = $s->connect;
    answered($c, req_auth($SECRET, opaque => 1), '', 'file: auth');
    view_is(node_of($c), { capacity => 100, pool => 70, reserved_sum => 30,
                           tenants => 3 },
            'file: the node at start: capacity, pool, reserves, tenants');
    tenant_is($c, 'alpha', [10, 50, TENANT_CONFIGURED],
              'file: alpha: reserve 10, the default hard limit 50');
    tenant_is($c, 'beta', [20, 30, TENANT_CONFIGURED],
              'file: beta: reserve 20, hard limit 30');
    tenant_is($c, 'gamma.x:y-z_1', [0, UNLIMITED, TENANT_CONFIGURED],
              'file: gamma.x:y-z_1: no reserve, unlimited');
    tenant_is($c, 'zeta', [0, 50, 0],
              'file: an unconfigured tenant has the default hard limit 50');
    my $a = parse_throttle_answer($c->call(req_throttle('zeta', 51)));
    ok($a && $a->{state} == THROTTLE_THROTTLED &&
       $a->{reason} == REASON_HARD_LIMIT,
       'file: 51 units to an unconfigured tenant: throttled, hard limit');

    # Run-time changes, then the file changes on disk and is reloaded.
    answered($c, req_tenant_set('beta', undef, 40, opaque => 2), '',
             'reload: beta set to hard limit 40 at run time');
    answered($c, req_tenant_set('runtime', 7, 70, opaque => 3), '',
             'reload: runtime set at run time (7, 70)');
    write_file($s->{throttle_file}, <<'EOF');
node.capacity = 200
default.hard_limit = unlimited
tenant.alpha = reserved:15,hard_limit:60
tenant.beta = reserved:20,hard_limit:30
tenant.gamma.x:y-z_1 = reserved:0,hard_limit:unlimited
# a new one
tenant.delta = reserved:5,hard_limit:9
EOF
    answered($c, req_reload(opaque => 4), '', 'reload: ok');
    my %want = (alpha => [15, 60], beta => [20, 30],
                'gamma.x:y-z_1' => [0, UNLIMITED], delta => [5, 9],
                runtime => [7, 70]);
    for my $t (sort keys %want) {
        tenant_is($c, $t, [@{ $want{$t} }, TENANT_CONFIGURED],
                  "reload: $t is (@{ $want{$t} })");
    }
    tenant_is($c, 'eta', [0, UNLIMITED, 0],
              'reload: the default hard limit is unlimited now');
    my $node = { capacity => 200, pool => 153, reserved_sum => 47,
                 tenants => 5 };
    view_is(node_of($c), $node, 'reload: the node after the reload');

    # A broken file: 0x04, nothing changes, the error is logged.
    my @broken = (
        ["node.capacity = lots\n", 'a bad capacity'],
        ["node.capacity = 300\ntenant.alpha = reserved:5,hard_limit:4\n",
         'a hard limit below the reserve'],
        ["node.capacity = 300\ntenant.bad/name = reserved:1\n",
         'a tenant name with a bad byte'],
        ["node.capacity = 300\nnode.frobnicate = 1\n", 'an unknown key'],
        ["node.capacity = 300\ntenant.alpha = reserved\n",
         'a tenant without a value'],
    );
    my $i = 10;
    for my $b (@broken) {
        my ($text, $title) = @$b;
        write_file($s->{throttle_file}, $text);
        refused($c, req_reload(opaque => ++$i), ST_INVALID,
                "reload of a file with $title: 0x04");
        view_is(node_of($c), $node, "reload of a file with $title: the "
                                    . 'node did not change');
        tenant_is($c, 'alpha', [15, 60, TENANT_CONFIGURED],
                  "reload of a file with $title: alpha did not change");
    }
    my $err;
    ok(wait_until(sub { $err = $s->stderr;
                        index($err, $s->{throttle_file}) >= 0 }, 5),
       'reload: the log names the broken file') or diag("stderr: $err");
    unlink $s->{throttle_file};
    refused($c, req_reload(opaque => 30), ST_INVALID,
            'reload of a file gone from disk: 0x04');
    view_is(node_of($c), $node, 'reload of a missing file: nothing changed');
    my $o = $s->connect;
    refused($o, req_reload(opaque => 31), ST_NOT_PERMITTED,
            'reload on a connection without auth: 0x2A');
    my %st = stats_of($s);
    is($st{'command:reload'}, 3 + @broken, 'reload: Stats command:reload');
    $o->close;
    $c->close;
    $s->stop;
}

done_testing;
