#!/usr/bin/perl
# 47-throttle-json.t: the seed's JSON commands over a real socket,
# Tenant_set_json (0x2a, SetBucketThrottleProperties) and Node_set_json
# (0x2c, SetNodeThrottleProperties): refused with 0x2A without a secret
# and before auth; after it, applied and answered with the settings they
# left (a field left out keeps its value), visible through tenant_show
# and node_show; every malformed document class answered with its status
# and a text naming the field, changing nothing. A JSON settings file
# (counter.throttle.config) gives the values at start; reload re-reads a
# good one, and a bad one answers 0x04, changes nothing and the log names
# the field. counterctl's `node set --json FILE` and `tenant set TENANT
# --json FILE`: exit 0 and the applied document on stdout, exit 1 and the
# server's text on stderr; `node show` and `tenant show` print the result.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use File::Temp qw(tempdir);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;

my $SECRET = 'json documents, test 47';

# Request bytes on c whose answer must be exactly status and body.
sub answered {
    my ($c, $bytes, $status, $body, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my ($op, $opaque) = unpack 'xCx6N', $bytes;
    return answer_is($c->call($bytes), resp($op, $status, $body, $opaque),
                     $title);
}

# The parsed views, read now on c.
sub node_of { parse_node_view($_[0]->call(req_node_show())) }
sub tenant_of { parse_tenant_view($_[0]->call(req_tenant_show($_[1]))) }

# [reserved, hard_limit, configured flag] of a tenant, read on c.
sub tenant_is {
    my ($c, $name, $want, $title) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $v = tenant_of($c, $name);
    return is_deeply($v ? [@$v{qw(reserved hard_limit flags)}] : undef,
                     $want, $title);
}

# ---- No secret: nobody may send them ----
{
    # No skip when the server lacks the opcodes: it must have them.
    my $s = start_throttle_host();
    my $c = $s->connect;
    answer_is($c->call(req_node_set_json('{"capacity": 5}', opaque => 1)),
              resp_err(OP_NODE_SET_JSON, ST_NOT_PERMITTED, 1),
              'no secret: node_set_json: 0x2A');
    answer_is($c->call(req_tenant_set_json('a', '{"reserved": 1}',
                                           opaque => 2)),
              resp_err(OP_TENANT_SET_JSON, ST_NOT_PERMITTED, 2),
              'no secret: tenant_set_json: 0x2A');
    is(node_of($c)->{capacity}, 0, 'no secret: the capacity did not change');
    $c->close;
    $s->stop;
}

# ---- A secret: before and after auth, every document class ----
my $s = start_throttle_host(secret => $SECRET);
my $c = $s->connect;
answer_is($c->call(req_node_set_json('{"capacity": 5}', opaque => 1)),
          resp_err(OP_NODE_SET_JSON, ST_NOT_PERMITTED, 1),
          'before auth: node_set_json: 0x2A');
answer_is($c->call(req_tenant_set_json('a', '{"reserved": 1}',
                                       opaque => 2)),
          resp_err(OP_TENANT_SET_JSON, ST_NOT_PERMITTED, 2),
          'before auth: tenant_set_json: 0x2A');
answered($c, req_auth($SECRET, opaque => 3), ST_OK, '', 'auth');

answered($c, req_node_set_json('{"capacity": 25000}', opaque => 4), ST_OK,
         '{"capacity":25000}', 'node_set_json: applied, answered');
my $n = node_of($c);
is($n->{capacity}, 25000, 'node_show: capacity 25000');
answered($c, req_tenant_set_json('acme', '{"reserved": 100, "hard_limit": '
                                         . '"unlimited"}', opaque => 5),
         ST_OK, '{"reserved":100,"hard_limit":"unlimited"}',
         'tenant_set_json: the seed\'s example, answered');
tenant_is($c, 'acme', [100, UNLIMITED, TENANT_CONFIGURED],
          'tenant_show: reserve 100, unlimited, configured');
answered($c, req_tenant_set_json('acme', '{"hard_limit": 500}', opaque => 6),
         ST_OK, '{"reserved":100,"hard_limit":500}',
         'tenant_set_json: reserved left out keeps 100');
answered($c, req_tenant_set_json('acme', " \n{\"reserved\":200}\n",
                                 opaque => 7),
         ST_OK, '{"reserved":200,"hard_limit":500}',
         'tenant_set_json: white space around the document');
tenant_is($c, 'acme', [200, 500, TENANT_CONFIGURED],
          'tenant_show: reserve 200, hard limit 500');

# Every refusal: status, the text naming what is wrong, nothing changed.
my $big = '{"reserved": 1' . (' ' x 4096) . '}';
my @refused = (
    [tenant => '{"reserved": 1', ST_INVALID, qr/^malformed JSON: /,
     'malformed JSON'],
    [tenant => '', ST_INVALID, qr/^malformed JSON: /, 'an empty document'],
    [tenant => '{"reserved": 1} {}', ST_INVALID, qr/^malformed JSON: /,
     'text after the document'],
    [tenant => '{"reserved": 1, "reserved": 2}', ST_INVALID,
     qr/^malformed JSON: duplicate/, 'a field given twice'],
    [tenant => '[100]', ST_INVALID,
     qr/^the tenant document must be a JSON object, got an array$/,
     'an array'],
    [tenant => '{}', ST_INVALID, qr/^the document sets nothing/,
     'an empty object'],
    [tenant => '{"reserve": 1}', ST_INVALID,
     qr/^unknown field "reserve" \(expected reserved or hard_limit\)$/,
     'an unknown field'],
    [tenant => '{"reserved": "1"}', ST_INVALID,
     qr/^reserved: expected a whole number 0\.\.4294967295, got a string$/,
     'a string for a number'],
    [tenant => '{"reserved": 1.5}', ST_INVALID,
     qr/^reserved: expected a whole number .*, got a number with a/,
     'a fraction'],
    [tenant => '{"hard_limit": true}', ST_INVALID,
     qr/^hard_limit: expected .* or "unlimited", got a boolean$/,
     'a boolean hard limit'],
    [tenant => '{"hard_limit": "none"}', ST_INVALID,
     qr/^hard_limit: expected .*, got a string other than "unlimited"$/,
     'a hard limit string other than unlimited'],
    [tenant => '{"reserved": -1}', ST_INVALID,
     qr/^reserved: -1 is out of range \(0\.\.4294967295\)$/,
     'a negative number'],
    [tenant => '{"reserved": 4294967296}', ST_INVALID,
     qr/^reserved: 4294967296 is out of range/, 'a number above 32 bits'],
    [tenant => '{"hard_limit": 4294967295}', ST_INVALID,
     qr/^hard_limit: 4294967295 is out of range \(0\.\.4294967294\)$/,
     'the unlimited value as a number'],
    [tenant => '{"reserved": 99999999999999999999999}', ST_INVALID,
     qr/^malformed JSON: too big integer/, 'a number past 64 bits'],
    [tenant => '{"reserved": 10, "hard_limit": 9}', ST_INVALID,
     qr/^hard_limit: 9 is below reserved 10$/,
     'a hard limit below its reserve in the document'],
    [tenant => '{"hard_limit": 150}', ST_INVALID,
     qr/^hard_limit: 150 is below the tenant's reserve$/,
     'a hard limit below the reserve kept'],
    [tenant => '{"reserved": 600}', ST_INVALID,
     qr/^reserved: 600 is above the tenant's hard limit$/,
     'a reserve above the hard limit kept'],
    [tenant => '{"reserved": 25001, "hard_limit": "unlimited"}',
     ST_OVER_CAPACITY,
     qr/^reserved: 25001 would bring the reserves above the node's capacity$/,
     'reserves above the capacity'],
    [node => '{"capacity": 199}', ST_OVER_CAPACITY,
     qr/^capacity: 199 is below the tenants' reserves \(200\)$/,
     'a capacity below the reserves'],
    [node => '{"capacity": "25000"}', ST_INVALID,
     qr/^capacity: expected a whole number 0\.\.4294967295, got a string$/,
     'a string capacity'],
    [node => '{"capacity": 1, "reserved": 1}', ST_INVALID,
     qr/^unknown field "reserved" \(expected capacity\)$/,
     'an unknown node field'],
    [node => '{}', ST_INVALID, qr/^capacity: missing/, 'no capacity'],
    [node => '{"capacity": -5}', ST_INVALID,
     qr/^capacity: -5 is out of range/, 'a negative capacity'],
    [node => 'capacity=5', ST_INVALID, qr/^malformed JSON: /,
     'not JSON at all'],
);
my $opq = 100;
for my $r (@refused) {
    my ($who, $doc, $status, $text, $title) = @$r;
    my $other = $who eq 'node' ? 'acme' : 'other';
    my $req = $who eq 'node'
        ? req_node_set_json($doc, opaque => ++$opq)
        : req_tenant_set_json($who eq 'tenant' ? 'acme' : $other, $doc,
                              opaque => ++$opq);
    my $a = $c->call($req);
    ok($a && $a->{status} == $status && $a->{opaque} == $opq,
       sprintf('%s: status 0x%02x', $title, $status))
        or diag($a ? sprintf('status 0x%02x body %s', $a->{status},
                             $a->{body}) : 'no answer');
    like($a ? $a->{body} : '', $text, "$title: the text names it");
    tenant_is($c, 'acme', [200, 500, TENANT_CONFIGURED],
              "$title: acme did not change");
    is(node_of($c)->{capacity}, 25000, "$title: the capacity did not change");
}
answer_is($c->call(req_tenant_set_json('acme', $big, opaque => 200)),
          resp_err(OP_TENANT_SET_JSON, ST_INVALID, 200),
          'a document over 4096 bytes: 0x04 from the decoder');
answer_is($c->call(req_tenant_set_json('', '{"reserved": 1}',
                                       opaque => 201)),
          resp_err(OP_TENANT_SET_JSON, ST_INVALID, 201),
          'an empty tenant name: 0x04');
tenant_is($c, 'acme', [200, 500, TENANT_CONFIGURED],
          'after the decoder\'s refusals: acme did not change');

my %st = map { @$_ } $c->stats_pairs;
is($st{'command:tenant_set_json'}, 1 + 3 + 2 +
   scalar(grep { $_->[0] eq 'tenant' } @refused),
   'Stats: command:tenant_set_json counts every one');
is($st{'command:node_set_json'}, 1 + 1 +
   scalar(grep { $_->[0] eq 'node' } @refused),
   'Stats: command:node_set_json counts every one');
my $err;
ok(wait_until(sub { $err = $s->stderr;
                    $err =~ /tenant set "acme" \(json\): Invalid arguments: hard_limit: 150 is below/ }, 5),
   'the log names the refused field') or diag("stderr: $err");
$c->close;

# ---- counterctl ----
my $CTL = $ENV{COUNTERCTL};
SKIP: {
    skip 'counterctl not built', 1 unless $CTL && -x $CTL;
    my $dir = tempdir(CLEANUP => 1);
    my $secret_file = "$dir/secret";
    write_file($secret_file, "$SECRET\n");
    my @base = ('-p', $s->{counter_port}, '--secret-file', $secret_file);
    my $ctl = sub { run_bounded($dir, $CTL, @base, @_) };
    write_file("$dir/node.json", "{\"capacity\": 30000}\n");
    my ($rc, $out, $e) = $ctl->(qw(node set --json), "$dir/node.json");
    is($rc, 0, 'counterctl node set --json: exit 0') or diag($e);
    is($out, "{\"capacity\":30000}\n", 'node set --json: prints what was '
                                       . 'applied');
    ($rc, $out) = run_bounded($dir, $CTL, '-p', $s->{counter_port},
                              qw(node show));
    like($out, qr/^capacity 30000$/m, 'node show: capacity 30000');
    write_file("$dir/t.json", '{"reserved": 300, "hard_limit": "unlimited"}');
    ($rc, $out, $e) = $ctl->(qw(tenant set json-t --json), "$dir/t.json");
    is($rc, 0, 'counterctl tenant set --json: exit 0') or diag($e);
    is($out, "{\"reserved\":300,\"hard_limit\":\"unlimited\"}\n",
       'tenant set --json: prints the tenant\'s settings');
    ($rc, $out) = run_bounded($dir, $CTL, '-p', $s->{counter_port},
                              qw(tenant show json-t));
    like($out, qr/^reserved 300\nhard_limit unlimited\n/m,
         'tenant show: reserved 300, hard_limit unlimited');
    write_file("$dir/bad.json", '{"reserved": 300, "hard_limit": 5}');
    ($rc, $out, $e) = $ctl->(qw(tenant set json-t --json), "$dir/bad.json");
    is($rc, 1, 'tenant set --json of a refused document: exit 1');
    like($e, qr/hard_limit: 5 is below reserved 300 \(status 0x04\)/,
         'tenant set --json: the server\'s text on stderr');
    is($out, '', 'tenant set --json refused: nothing on stdout');
    write_file("$dir/over.json", '{"capacity": 299}');
    ($rc, $out, $e) = $ctl->(qw(node set --json), "$dir/over.json");
    is($rc, 1, 'node set --json below the reserves: exit 1');
    like($e, qr/capacity: 299 is below the tenants' reserves \(500\) \(status 0x2c\)/,
         'node set --json: the server\'s text on stderr');
    ($rc, $out, $e) = $ctl->(qw(node set --json), "$dir/missing.json");
    is($rc, 1, 'node set --json of a missing file: exit 1');
    like($e, qr/missing\.json.*cannot open/, 'the missing file is named');
    write_file("$dir/huge.json", '{' . (' ' x 5000) . '}');
    ($rc, $out, $e) = $ctl->(qw(node set --json), "$dir/huge.json");
    is($rc, 1, 'node set --json of a file over 4096 bytes: exit 1');
    like($e, qr/more than 4096 bytes/, 'the bound is named');
    ($rc, $out, $e) = run_bounded($dir, $CTL, '-p', $s->{counter_port},
                                  qw(node set --json), "$dir/node.json");
    is($rc, 2, 'node set --json without --secret-file: exit 2');
    ($rc, $out, $e) = $ctl->(qw(tenant set x --reserved 1 --json),
                             "$dir/t.json");
    is($rc, 2, 'tenant set --json with --reserved: a usage error');
    ($rc, $out, $e) = $ctl->(qw(tenant set json-t --reserved 310
                                --hard-limit unlimited));
    is($rc, 0, 'tenant set --reserved --hard-limit keeps working');
    ($rc, $out, $e) = $ctl->(qw(node set --capacity 31000));
    is($rc, 0, 'node set --capacity keeps working');
    ($rc, $out) = run_bounded($dir, $CTL, '-p', $s->{counter_port},
                              qw(node show));
    like($out, qr/^capacity 31000$/m, 'node show: capacity 31000');
}
$s->stop;

# ---- doc/protocol.md's examples are what the server sends ----
{
    my $doc = "$FindBin::Bin/../doc/protocol.md";
    open my $fh, '<', $doc or die "$doc: $!";
    my ($in, %lines);
    while (my $l = <$fh>) {
        if ($l =~ /^###? /) {
            ($in) = $l =~ /^### (Tenant_set_json|Node_set_json) \(/;
            next;
        }
        next unless $in &&
            $l =~ /^\s{4,}(request|response)\s+([0-9a-f| ]+?)\s*$/;
        (my $hex = $2) =~ s/[| ]//g;
        push @{ $lines{$in} }, pack('H*', $hex);
    }
    my ($nj, $tj) = @lines{qw(Node_set_json Tenant_set_json)};
    is(scalar(@{ $nj // [] }), 4, 'doc: Node_set_json has its four lines');
    is(scalar(@{ $tj // [] }), 7, 'doc: Tenant_set_json has its seven lines');
    my $d = start_throttle_host(secret => $SECRET);
    my $p = $d->connect;
    my $o = $d->connect;
    answered($p, req_auth($SECRET, opaque => 1), ST_OK, '', 'doc: auth');
    for my $i (0, 2) {
        my $r = $p->call($nj->[$i]);
        ok($r && $r->{raw} eq $nj->[$i + 1],
           "doc: Node_set_json example @{[ $i / 2 + 1 ]} answered as shown")
            or diag($r ? hexdump($r->{raw}) : 'no answer');
    }
    my $r = $p->call($tj->[0]);
    ok($r && $r->{raw} eq $tj->[1], 'doc: Tenant_set_json example 1');
    $r = $o->call($tj->[0]);
    ok($r && $r->{raw} eq $tj->[2],
       'doc: Tenant_set_json example 1 without privilege');
    for my $i (3, 5) {
        $r = $p->call($tj->[$i]);
        ok($r && $r->{raw} eq $tj->[$i + 1],
           "doc: Tenant_set_json example at line $i answered as shown")
            or diag($r ? hexdump($r->{raw}) : 'no answer');
    }
    $p->close;
    $o->close;
    $d->stop;
}

# ---- A JSON settings file: at start, reload good and bad ----
{
    my $start = <<'EOF';
{
  "node": {"capacity": 1000},
  "default": {"hard_limit": 500},
  "tenants": {
    "a": {"reserved": 100, "hard_limit": "unlimited"},
    "b": {"reserved": 50}
  }
}
EOF
    my $f = start_throttle_host(secret => $SECRET, throttle => $start);
    my $c = $f->connect;
    answered($c, req_auth($SECRET, opaque => 1), ST_OK, '', 'file: auth');
    my $v = node_of($c);
    is_deeply([@$v{qw(capacity reserved_sum tenants)}], [1000, 150, 2],
              'file: the node at start');
    tenant_is($c, 'a', [100, UNLIMITED, TENANT_CONFIGURED],
              'file: a as the document says');
    tenant_is($c, 'b', [50, 500, TENANT_CONFIGURED],
              'file: b with the default hard limit');
    tenant_is($c, 'z', [0, 500, 0], 'file: the default hard limit applies');

    write_file($f->{throttle_file}, '{"node": {"capacity": 2000}, '
               . '"tenants": {"a": {"reserved": 10}, "c": {"hard_limit": 7}}}');
    answered($c, req_reload(opaque => 2), ST_OK, '', 'reload of a good file');
    is(node_of($c)->{capacity}, 2000, 'reload: capacity 2000');
    # No default in the file now: a's hard limit is unlimited, as for a
    # line without one; the server's default stays 500.
    tenant_is($c, 'a', [10, UNLIMITED, TENANT_CONFIGURED],
              'reload: a as the file says now');
    tenant_is($c, 'z', [0, 500, 0], 'reload: the default kept');
    tenant_is($c, 'c', [0, 7, TENANT_CONFIGURED], 'reload: c is new');
    tenant_is($c, 'b', [50, 500, TENANT_CONFIGURED],
              'reload: b, not named, stays');

    my @bad = (
        ['{"node": {"capacity": 2000}, "tenants": {"a": {"reserved": '
         . '"ten"}}}', qr/tenants\.a: reserved: expected a whole number/,
         'a wrong type'],
        ['{"node": {"capacity": 20}, "tenants": {"a": {"reserved": 30}}}',
         qr/node\.capacity: over capacity/, 'reserves above the capacity'],
        ['{"nodes": {}}', qr/unknown member "nodes"/, 'an unknown member'],
        ['{"node": {"capacity": 5}', qr/malformed JSON/, 'malformed JSON'],
    );
    my $i = 10;
    for my $b (@bad) {
        my ($text, $why, $title) = @$b;
        write_file($f->{throttle_file}, $text);
        answer_is($c->call(req_reload(opaque => ++$i)),
                  resp_err(OP_RELOAD, ST_INVALID, $i),
                  "reload of a file with $title: 0x04");
        is(node_of($c)->{capacity}, 2000,
           "reload of a file with $title: the capacity did not change");
        tenant_is($c, 'a', [10, UNLIMITED, TENANT_CONFIGURED],
                  "reload of a file with $title: a did not change");
        my $log;
        ok(wait_until(sub { $log = $f->stderr; $log =~ $why }, 5),
           "reload of a file with $title: the log names it")
            or diag("stderr: $log");
    }
    $c->close;
    $f->stop;
}

done_testing;
