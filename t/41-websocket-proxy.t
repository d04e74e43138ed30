#!/usr/bin/perl
# 41-websocket-proxy.t: the WebSocket quota API through a real nginx, as
# browsers on https pages reach it (wss:// terminated by the proxy): the
# test starts nginx on a free loopback port with the location block of
# contrib/nginx/quota.conf (plain HTTP: the TLS part is nginx's own), and
# a client requests, is granted and releases through it while a second
# client, connected directly, waits in the same queue. Skipped with a
# reason when nginx is not installed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use CounterTest;
use WsTest;
use IO::Socket::IP;
use File::Temp qw(tempdir);
use Test::More;

plan skip_all => 'mchost or counter.so not built' unless have_host;
my ($nginx) = grep { -x } '/usr/sbin/nginx', '/usr/bin/nginx';
plan skip_all => 'nginx not installed (Debian: nginx-light)' unless $nginx;

my $srv = start_ws(config => { 'group.abc' => 'max:1' });
my $dir = tempdir(CLEANUP => 1);

# The location block, as contrib/nginx/quota.conf has it.
open my $fh, '<', "$FindBin::Bin/../contrib/nginx/quota.conf" or die $!;
my $conf = do { local $/; <$fh> };
my ($location) = $conf =~ /(    location = \/quota \{.*?\n    \})/s;
ok($location, 'contrib/nginx/quota.conf has the /quota location');

my $proxy_port = ws_free_port();
my $pid;
for my $try (1 .. 3) {
    open my $out, '>', "$dir/nginx.conf" or die $!;
    print $out <<"EOC";
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $dir;
    proxy_temp_path $dir;
    upstream counter_quota { server 127.0.0.1:$srv->{http_port}; }
    server {
        listen 127.0.0.1:$proxy_port;
$location
    }
}
EOC
    close $out;
    $pid = spawn_to_files($dir, $nginx, '-p', $dir, '-c', "$dir/nginx.conf");
    last if wait_until(sub {
        IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $proxy_port)
    }, 5);
    kill_pid($pid);
    $proxy_port = ws_free_port();
}

my $p = WsTest->new($proxy_port);
ok($p, 'upgrade through nginx');
my $d = WsTest->new($srv->{http_port});
$p->send_msg(quota_request => { qid => 'p', key => 'abc' });
is_deeply($p->msg, ['quota_request_result', { qid => 'p', result => 'ok' }],
          'through the proxy: ok');
is_deeply($p->msg, ['quota_passed', { key => 'abc' }], 'passed');
$d->send_msg(quota_request => { qid => 'd', key => 'abc' });
is_deeply($d->msg, ['quota_request_result', { qid => 'd', result => 'ok' }],
          'direct client queued behind the proxied one');
$p->send_msg(quota_release => { qid => 'p', key => 'abc' });
is_deeply($d->msg, ['quota_passed', { key => 'abc' }],
          'the proxied release hands it to the direct client');
$d->close;
$p->send_close(1000);
is($p->close_code, 1000, 'close handshake through the proxy');
kill_pid($pid);
done_testing;
