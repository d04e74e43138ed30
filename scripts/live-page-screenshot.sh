#!/bin/sh
# live-page-screenshot.sh: makes doc/live-page.png, the picture of the
# live page (GET / on counter.http.port) that doc/operations.md shows.
# Starts mchost with counter.so from a build directory on loopback ports,
# with three groups and two throttled tenants, keeps it busy (holders and
# a waiter on the groups, throttle charges, GCRA checks, Noops), lets the
# page's chart fill for a few seconds, and has headless Chromium take the
# screenshot. Every process it starts is stopped by its pid on the way out,
# whatever happens.
#
#   sh scripts/live-page-screenshot.sh [BUILD_DIR] [OUTPUT.png]
#
# BUILD_DIR defaults to _build/dev, OUTPUT to doc/live-page.png. The ports
# come from MEMCACHE_PORT, COUNTER_PORT and HTTP_PORT (default 21411,
# 21415, 21480); the page settles for SETTLE seconds (default 8) before
# the shot. Needs chromium (Debian: chromium).
set -eu
cd "$(dirname "$0")/.."
build=${1:-_build/dev}
out=${2:-doc/live-page.png}
mc_port=${MEMCACHE_PORT:-21411}
counter_port=${COUNTER_PORT:-21415}
http_port=${HTTP_PORT:-21480}
settle=${SETTLE:-8}

for f in "$build/mchost" "$build/.libs/counter.so" "$build/counterctl"; do
    if [ ! -x "$f" ] && [ ! -f "$f" ]; then
        echo "live-page-screenshot: $f is missing; build first" >&2
        exit 1
    fi
done
command -v chromium >/dev/null || {
    echo "live-page-screenshot: chromium is not installed" >&2
    exit 1
}

scratch=$(mktemp -d /tmp/live-page.XXXXXX)
pids=""
cleanup() {
    rc=$?
    # Loops first (they would start new clients), then the clients they
    # left, then the holders, the server last.
    for p in $pids; do
        kill "$p" 2>/dev/null || true
    done
    for p in $pids; do
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$scratch"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ctl() {
    "$build/counterctl" -p "$counter_port" "$@"
}

cat >"$scratch/throttle.conf" <<EOF
node.capacity = 1000
tenant.acme = reserved:200,hard_limit:500
tenant.beta = reserved:100
EOF
settings="counter.enable=true;counter.port=$counter_port"
settings="$settings;counter.http.port=$http_port"
settings="$settings;counter.group.nightly=max:1;counter.group.backup=max:2"
settings="$settings;counter.group.licence=max:3"
settings="$settings;counter.throttle.config=$scratch/throttle.conf"
"$build/mchost" -p "$mc_port" -X "$build/.libs/counter.so,$settings" \
    >"$scratch/mchost.log" 2>&1 &
server=$!
pids="$server"

# Wait for the counter port, at most 10 s.
i=0
until ctl noop >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 100 ] || ! kill -0 "$server" 2>/dev/null; then
        echo "live-page-screenshot: the server did not start:" >&2
        cat "$scratch/mchost.log" >&2
        exit 1
    fi
    sleep 0.1
done

# One holder of nightly and one request waiting behind it, with leases the
# holders renew; each counterctl run stops its sleep when it is killed.
ctl run nightly 1 - --lease 30 -- sleep 600 >/dev/null 2>&1 &
pids="$! $pids"
sleep 0.3
ctl run nightly 1 - --wait 600 -- sleep 600 >/dev/null 2>&1 &
pids="$! $pids"
ctl run backup 1 - --lease 30 -- sleep 600 >/dev/null 2>&1 &
pids="$! $pids"

# Traffic: each loop runs one counterctl after another until cleanup
# sends it SIGTERM, which it passes on to the counterctl of the moment.
loop() {
    child=""
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
    while :; do
        "$build/counterctl" -p "$counter_port" "$@" >/dev/null 2>&1 &
        child=$!
        wait "$child" || true
    done
}
loop throttle acme 7 &
pids="$! $pids"
loop throttle beta 3 &
pids="$! $pids"
loop gcra api 10 5 1s &
pids="$! $pids"
loop noop &
pids="$! $pids"

# Chromium shows the page in real time (a virtual-time budget would run
# the page's once-a-second timer faster than the server's seconds, and the
# chart would stay empty); after SETTLE seconds the screenshot is taken
# over its DevTools protocol, with the WebSocket client of the t/ tests.
chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
    --hide-scrollbars --user-data-dir="$scratch/profile" \
    --remote-debugging-port=0 --window-size=1200,757 \
    --disable-background-timer-throttling --disable-renderer-backgrounding \
    --disable-backgrounding-occluded-windows \
    "http://127.0.0.1:$http_port/" >"$scratch/chromium.log" 2>&1 &
pids="$! $pids"
perl -It/lib - "$scratch/profile/DevToolsActivePort" "$settle" \
    "$scratch/shot.png" <<'EOF'
use strict;
use warnings;
use JSON::PP;
use MIME::Base64;
use WsTest;

my ($portfile, $settle, $png) = @ARGV;
my $port;
for (1 .. 100) {
    if (open my $fh, '<', $portfile) {
        $port = <$fh>;
        last if defined $port && $port =~ /^\d+$/;
    }
    select undef, undef, undef, 0.1;
}
chomp $port if defined $port;
die "chromium wrote no DevTools port\n" unless $port && $port =~ /^\d+$/;
sleep $settle;
my $list = WsTest->new($port, raw => 1);
$list->send("GET /json/list HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
my ($body) = ($list->http_answer // '') =~ /\r\n\r\n(.*)\z/s;
die "DevTools listed no targets\n" unless defined $body && length $body;
my ($page) = grep { $_->{type} eq 'page' } @{ decode_json($body) };
die "no page in DevTools' list\n" unless $page;
my ($path) = $page->{webSocketDebuggerUrl} =~ m{^ws://[^/]+(/.*)$};
my $c = WsTest->new($port, path => $path);
$c->send_text('{"id":1,"method":"Page.captureScreenshot",'
              . '"params":{"format":"png","captureBeyondViewport":true,'
              . '"clip":{"x":0,"y":0,"width":1200,"height":757,'
              . '"scale":1}}}');
while (1) {
    my ($msg, $f) = ('');
    do {
        $f = $c->frame(30) or die "DevTools: $c->{error}\n";
        $msg .= $f->{payload};
    } until $f->{fin};
    my $m = decode_json($msg);
    next unless ($m->{id} // 0) == 1;
    die "DevTools: $m->{error}{message}\n" if $m->{error};
    open my $out, '>:raw', $png or die "$png: $!\n";
    print $out decode_base64($m->{result}{data});
    close $out or die "$png: $!\n";
    last;
}
EOF
if [ ! -s "$scratch/shot.png" ]; then
    echo "live-page-screenshot: no screenshot; chromium said:" >&2
    cat "$scratch/chromium.log" >&2
    exit 1
fi
cp "$scratch/shot.png" "$out"
echo "live-page-screenshot: wrote $out"
