# 15-tenants.t: hostile clients of tenants on connections. Two hundred
# connections of one tenant pipeline Noops far over the node's capacity
# and are paused: the server's memory stays bounded and a user whose
# tenant has a reserve is still served. When the flooding clients vanish
# (reset mid-pause, their requests unanswered) every one of their
# connections is gone by its next resumption. Malformed logins (lengths
# that disagree with the body, an empty name, an unknown flag) are
# refused with 0x04 and the connection goes on; a 300-byte name is no
# user, and the third failed login closes the connection. The seed's
# JSON commands with a document over 4096 bytes, nested 2000 deep, or a
# number of 3000 digits are refused and change nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib", "$FindBin::Bin/../lib";
use CounterTest;
use Hostile;
use File::Temp qw(tempdir);
use Test::More;
use Socket qw(SOL_SOCKET SO_LINGER);
use Time::HiRes qw(sleep);

plan skip_all => 'mchost or counter.so not built' unless have_host();

use constant OP_AUTH_USER => 0x4a;

# Auth_user: flags, a zero byte, the secret's and the name's u16
# lengths, the name, the secret (the lengths may be given apart).
sub auth_user {
    my ($user, $secret, %o) = @_;
    return req(OP_AUTH_USER,
               pack('Cxnn', $o{flags} // 0, $o{secret_len} // length $secret,
                    $o{name_len} // length $user) . $user . $secret,
               opaque => $o{opaque} // 0);
}

sub stat_of {
    my ($c, $name) = @_;
    my %st = map { @$_ } $c->stats_pairs;
    return $st{$name};
}

my $dir = tempdir(CLEANUP => 1);
my $users = "$dir/users";
write_file($users, "ops o admin,unthrottled ops-secret-0123456\n"
                   . "alice a - alice-secret-012345\n");
chmod 0600, $users;
my $srv = start_throttle_host(
    secret => 'admin-secret-0123456789',
    config => { users_file => $users },
    throttle => "node.capacity = 100\ntenant.a = reserved:50\n");
my $pid = $srv->{pid};

# ---- A flood of paused connections ----
# The watching connection is Unthrottled: the flood cannot pause it.
my $watch = $srv->connect;
my $li = $watch->call(auth_user('ops', 'ops-secret-0123456', opaque => 1));
ok($li && $li->{status} == ST_OK, 'the watcher logs in as ops');
my $base_conns = stat_of($watch, 'curr_connections');
my $rss0 = rss_kib($pid);
my @flood;
my $burst = req_noop() x 2000;
for (1 .. 200) {
    my $c = $srv->connect;
    $c->sock->blocking(0);
    syswrite($c->sock, $burst);
    push @flood, $c;
}
ok(wait_until(sub { stat_of($watch, 'curr_connections') == $base_conns + 200 },
              10), 'flood: 200 connections open');
my $alice = $srv->connect;
my $r = $alice->call(auth_user('alice', 'alice-secret-012345', opaque => 1));
ok($r && $r->{status} == ST_OK, 'alice logs in while the flood waits');
my $served = 0;
for my $i (1 .. 20) {
    my $a = $alice->call(req_noop(opaque => 100 + $i), 5);
    $served++ if $a && $a->{status} == ST_OK && $a->{opaque} == 100 + $i;
}
is($served, 20, 'the reserved tenant is served during the flood');
my $grow = rss_kib($pid) - $rss0;
cmp_ok($grow, '<', 32768, "memory bounded with 200 paused floods (+$grow KiB)");

# The flooding clients vanish (reset, as the kernel does for a process
# that dies with answers unread) with their requests unanswered: each
# connection is seen to end at its next resumption, although its tenant
# stays over its share with what they left.
for my $f (@flood) {
    setsockopt($f->sock, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    $f->close;
}
ok(wait_until(sub { stat_of($watch, 'curr_connections') == $base_conns + 1 },
              30),
   'flood: every vanished connection is gone')
    or diag('curr_connections ' . stat_of($watch, 'curr_connections'));

# ---- Malformed logins ----
my $c = $srv->connect;
my %bad = (
    'a secret length past the body' =>
        auth_user('alice', 'alice-secret-012345', secret_len => 4000),
    'a name length past the body' =>
        auth_user('alice', 'alice-secret-012345', name_len => 4000),
    'a name of 0 bytes' => auth_user('', 'alice-secret-012345'),
    'an unknown flag' => auth_user('alice', 'alice-secret-012345',
                                   flags => 0x80),
);
my $i = 200;
for my $what (sort keys %bad) {
    my $bytes = $bad{$what};
    substr($bytes, 8, 4) = pack 'N', ++$i;
    my $a = $c->call($bytes, 5);
    ok($a && $a->{status} == ST_INVALID && $a->{opaque} == $i,
       "login with $what: 0x04") or diag explain $a;
}
$r = $c->call(req_noop(opaque => 300));
ok($r && $r->{status} == ST_OK, 'the connection goes on after them');
# A name longer than any user's is no user: a failed login like a wrong
# secret, and the third failure closes the connection.
my @st;
for my $u ('u' x 300, 'alice', 'alice') {
    my $a = $c->call(auth_user($u, 'not-the-secret-0000', opaque => 9));
    push @st, $a ? $a->{status} : -1;
}
is_deeply(\@st, [0x2b, 0x2b, 0x2b],
          'a 300-byte name, then two wrong secrets: 0x2B each');
ok($c->closed_within(5), 'and the connection is closed');

# ---- Hostile JSON documents ----
my $adm = $srv->connect;
$r = $adm->call(auth_user('ops', 'ops-secret-0123456', opaque => 1));
ok($r && $r->{status} == ST_OK, 'ops logs in');
my $big = '{"capacity": 1' . (' ' x 4096) . '}';
$r = $adm->call(req_node_set_json($big, opaque => 2));
ok($r && $r->{status} == ST_INVALID, 'a document over 4096 bytes: 0x04');
my $deep = ('[' x 2000) . (']' x 2000);
$r = $adm->call(req_node_set_json($deep, opaque => 3));
ok($r && $r->{status} == ST_INVALID, 'a document nested 2000 deep: 0x04');
$r = $adm->call(req_tenant_set_json('a', '{"reserved": ' . ('9' x 3000) . '}',
                                    opaque => 4));
ok($r && $r->{status} == ST_INVALID, 'a number of 3000 digits: 0x04');
my $n = parse_node_view($adm->call(req_node_show(opaque => 5)));
ok($n && $n->{capacity} == 100, 'none of them changed the capacity');
my $t = parse_tenant_view($adm->call(req_tenant_show('a', opaque => 6)));
ok($t && $t->{reserved} == 50, 'nor tenant a\'s reserve');

bystander_ok($srv, 'after the tenants\' hostile clients');
$_->close for $watch, $alice, $adm;
server_clean($srv);
done_testing;
