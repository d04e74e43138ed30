#!/usr/bin/perl
# 48-tenant-connections.t: tenants on connections, over real sockets.
# counter.users_file: refused at start when group or others may read it
# (the message names the file and the mode) and for each bad line (named
# with its line number); with a good file, Auth_user (0x4a) logs a
# connection in as a user (a wrong secret 0x2B). Every request is charged
# to its connection's tenant: over the node's capacity a plain
# connection's requests wait and are all answered, in order (the node
# counts the throttled charges); a connection that logged in with the
# non-blocking flag gets 0x2D Throttled answers carrying the retry hint
# and the reason, and the same request sent again once the hint has
# passed is answered; an Unthrottled user is never throttled but counted.
# A cost no second could pay is answered Throttled even without the
# flag. The Throttr front's connections pay as the default tenant, and
# wait. counterctl --user logs in with Auth_user before its command.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use ThrottrTest;
use File::Temp qw(tempdir);
use Test::More;
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host;

use constant OP_AUTH_USER => 0x4a;
use constant ST_THROTTLED => 0x2d;

my $dir = tempdir(CLEANUP => 1);

# Auth_user USER SECRET, flags (1: non-blocking).
sub req_auth_user {
    my ($user, $secret, $flags, @o) = @_;
    return req(OP_AUTH_USER, pack('CxnnA*A*', $flags // 0, length $secret,
                                  length $user, $user, $secret), @o);
}

# A users file of text with mode.
sub users_file {
    my ($name, $text, $mode) = @_;
    write_file("$dir/$name", $text);
    chmod $mode // 0600, "$dir/$name";
    return "$dir/$name";
}

my $base = 'counter.enable=true;counter.port=0;counter.threads=1';

# ---- The file's errors, each refused at start ----
my @bad = (
    ["bob b - bob-secret-0123456\n", 0644,
     ['counter.users_file: file', 'has mode 0644', 'chmod 600'],
     'group- and world-readable'],
    ["bob b - bob-secret-0123456\n", 0640, ['has mode 0640'],
     'group-readable'],
    ["# users\nbob b - bob-secret-0123456\nbob c - bob-secret-6543210\n",
     0600, [':3: counter.users_file: user "bob" is already on line 2'],
     'a user twice'],
    ["bob b root bob-secret-0123456\n", 0600,
     [':1: counter.users_file: unknown privilege "root"'],
     'an unknown privilege'],
    ["\nbob b - short\n", 0600,
     [':2: counter.users_file: user "bob": its secret has 5 bytes'],
     'a short secret'],
    ["bob b -\n", 0600, [':1: counter.users_file: expected 4 fields'],
     'a missing field'],
    ["bob b/c - bob-secret-0123456\n", 0600,
     [':1: counter.users_file: tenant name "b/c"'], 'a bad tenant name'],
);
my $i = 0;
for my $case (@bad) {
    my ($text, $mode, $needles, $title) = @$case;
    my $f = users_file('bad' . $i++, $text, $mode);
    my ($st, $err) = run_host(raw_x => "$ENV{COUNTER_SO},$base;"
                                       . "counter.users_file=$f");
    ok(defined $st && $st != 0, "$title: host exits non-zero")
        or diag "status " . ($st // 'none (had to be killed)');
    like($err, qr/\Q$_\E/, "$title: message says \"$_\"")
        or diag "stderr: $err" for @$needles;
    unlike($err, qr/secret-\d/, "$title: no secret in the message");
}

# ---- A good file ----
my $users = users_file('users', <<'EOT');
# name  tenant  privileges         secret
bob     b       -                  bob-secret-0123456
ops     o       admin,unthrottled  ops-secret-0123456
EOT
# o and default are configured (with no reserve) so that the GC sweep,
# which frees an unconfigured record once its second is over, keeps the
# records whose units are read below.
my $srv = start_throttle_host(
    config => { users_file => $users },
    throttle => "node.capacity = 5\ntenant.o = reserved:0\n"
                . "tenant.default = reserved:0\n");

my $ops = $srv->connect;
answer_is($ops->call(req_auth_user('ops', 'ops-secret-0123456', 0,
                                   opaque => 1)),
          resp(OP_AUTH_USER, ST_OK, '', 1), 'ops logs in');
my $bad = $srv->connect;
answer_is($bad->call(req_auth_user('bob', 'not-bobs-secret-00', 0,
                                   opaque => 2)),
          resp_err(OP_AUTH_USER, 0x2b, 2), 'a wrong secret: 0x2B');
$bad->close;

# An Unthrottled user is never throttled: 20 requests at capacity 5.
$ops->send(join '', map { req_noop(opaque => $_) } 1 .. 20);
my @opq = map { my $r = $ops->answer; $r && $r->{status} == 0
                                            ? $r->{opaque} : -1 } 1 .. 20;
is_deeply(\@opq, [1 .. 20], 'unthrottled: 20 answers at once, in order');
my $o = parse_tenant_view($ops->call(req_tenant_show('o')));
ok($o && $o->{units} >= 20, 'unthrottled: its use is counted')
    or diag explain $o;

# A plain connection (the default tenant) sends 12 requests at once at a
# capacity of 5 a second: every one is answered, in order, and the node
# counts throttled charges (the connection waited).
my $before = parse_node_view($ops->call(req_node_show()))->{throttled};
my $plain = $srv->connect;
$plain->send(join '', map { req_noop(opaque => 100 + $_) } 1 .. 12);
@opq = map { my $r = $plain->answer(10); $r && $r->{status} == 0
                                             ? $r->{opaque} : -1 } 1 .. 12;
is_deeply(\@opq, [101 .. 112], 'blocking: all 12 answered, in order');
my $after = parse_node_view($ops->call(req_node_show()))->{throttled};
cmp_ok($after, '>', $before, 'blocking: its connection was held back');
my $d = parse_tenant_view($ops->call(req_tenant_show('default')));
ok($d && $d->{units} >= 12, 'blocking: charged to the default tenant')
    or diag explain $d;
$plain->close;

# The non-blocking mode: bob asks for it at login.
my $nb = $srv->connect;
answer_is($nb->call(req_auth_user('bob', 'bob-secret-0123456', 1,
                                  opaque => 3)),
          resp(OP_AUTH_USER, ST_OK, '', 3), 'bob logs in, non-blocking');
wait_fresh_second();
$nb->send(join '', map { req_noop(opaque => 200 + $_) } 1 .. 10);
my (@ok, @thr);
for (1 .. 10) {
    my $r = $nb->answer(5) or last;
    push @ok, $r->{opaque} if $r->{status} == 0;
    push @thr, $r if $r->{status} == ST_THROTTLED;
}
is(@ok + @thr, 10, 'non-blocking: every request answered at once');
cmp_ok(scalar @thr, '>=', 1, 'non-blocking: some are Throttled');
my $well_formed = 1;
for my $r (@thr) {
    my ($retry, $reason, $text) = unpack 'Q>Ca*', $r->{body};
    $well_formed &&= $retry >= 1 && $retry <= 1_000_000_000 && $reason >= 1
                     && $reason <= 3 && $text eq 'Throttled';
}
ok($well_formed, 'non-blocking: each carries a hint, a reason, its text');
# The hint is never too early: sent again once it has passed, it runs.
if (@thr) {
    my ($retry) = unpack 'Q>', $thr[-1]{body};
    sleep($retry / 1e9);
    my $r = $nb->call(req_noop(opaque => 299));
    ok($r && $r->{status} == 0 && $r->{opaque} == 299,
       'non-blocking: a retry after the hint is answered');
} else {
    fail('non-blocking: a retry after the hint is answered');
}
$nb->close;

# counterctl --user NAME --secret-file F logs in with Auth_user before
# its command: an Admin user may run privileged commands (this server has
# no admin secret, so Auth could not), a user without Admin may not, and
# the command's requests are charged to the user's tenant.
SKIP: {
    my $ctl = $ENV{COUNTERCTL};
    skip 'counterctl not built', 11 unless $ctl && -x $ctl;
    my $port = $srv->{counter_port};
    write_file("$dir/ops.secret", "ops-secret-0123456\n");
    write_file("$dir/bob.secret", "bob-secret-0123456\n");
    write_file("$dir/wrong.secret", "not-bobs-secret-00\n");
    chmod 0600, map { "$dir/$_.secret" } qw(ops bob wrong);
    my $ctl_run = sub { run_bounded($dir, $ctl, '-p', $port, @_) };
    my ($rc, $out, $err) = $ctl_run->(qw(--user ops --secret-file),
                                      "$dir/ops.secret", qw(node set
                                      --capacity 5));
    is($rc, 0, 'counterctl --user ops: node set runs (Admin)')
        or diag $err;
    ($rc, $out, $err) = $ctl_run->(qw(--user bob --secret-file),
                                   "$dir/bob.secret",
                                   qw(node set --capacity 5));
    is($rc, 1, 'counterctl --user bob: node set refused, exit 1');
    like($err, qr/Not permitted/, 'counterctl --user bob: Not permitted');
    my $b0 = parse_tenant_view($ops->call(req_tenant_show('b')));
    ($rc, $out, $err) = $ctl_run->(qw(--user bob --secret-file),
                                   "$dir/bob.secret", qw(get ctl-user));
    is($rc, 1, 'counterctl --user bob get: runs (Not found, exit 1)');
    like($err, qr/Not found/, 'counterctl --user bob get: Not found')
        or diag $err;
    my $b1 = parse_tenant_view($ops->call(req_tenant_show('b')));
    ok($b0 && $b1 && $b1->{units} > $b0->{units},
       'counterctl --user bob: charged to bob\'s tenant')
        or diag explain [$b0, $b1];
    ($rc, $out, $err) = $ctl_run->(qw(--user bob --secret-file),
                                   "$dir/wrong.secret", 'noop');
    is($rc, 1, 'counterctl --user with a wrong secret: exit 1');
    like($err, qr/\Acounterctl: login as user "bob" with --secret-file "\Q$dir\E\/wrong\.secret": Auth failed \(status 0x2b\)\n\z/,
         'counterctl --user with a wrong secret: one line naming both');
    unlike($err, qr/secret-0|not-bobs/, 'the message shows no secret');
    ($rc, $out, $err) = $ctl_run->(qw(--user bob noop));
    is($rc, 2, 'counterctl --user without --secret-file: usage, exit 2');
    like($err, qr/--user bob needs --secret-file PATH/,
         'counterctl --user without --secret-file: says so');
}
$ops->close;
$srv->stop;

# A cost no second could pay (10 units a read at a capacity of 5) is
# answered Throttled at once even on a blocking connection: pausing for
# it would stop the connection for good (and never see it close).
my $big = start_throttle_host(config => { default_tenant => 'big',
                                          'tenant_cost.read' => 10 },
                              throttle => "node.capacity = 5\n");
my $bc = $big->connect;
my $r = $bc->call(req_noop(opaque => 7), 5);
ok($r && $r->{status} == ST_THROTTLED && $r->{opaque} == 7,
   'a cost above the whole capacity: Throttled at once, not paused')
    or diag explain $r;
$bc->close;
$big->stop;

# The Throttr front pays as the default tenant: 8 requests at a capacity
# of 3 are all answered, in order, and the node counts throttled charges.
write_file("$dir/thr.conf", "node.capacity = 3\n");
my $thr = start_throttr(config => { default_tenant => 'thr',
                                    'throttle.config' => "$dir/thr.conf" });
my $t = $thr->connect(port => $thr->{throttr_port});
$t->send(join '', map { thr_purge("missing$_") } 1 .. 8);
is(thr_read($t, 8, 10), "\x00" x 8, 'throttr: all 8 answered');
$t->close;
my $c = $thr->connect;
my $n = parse_node_view($c->call(req_node_show(), 10));
ok($n && $n->{throttled} >= 1, 'throttr: its connection was held back')
    or diag explain $n;
$c->close;
$thr->stop;
done_testing;
