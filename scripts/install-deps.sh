#!/bin/sh
# install-deps.sh: installs, with apt-get, whatever this Debian machine lacks
# to build and test memcached-counter. Quiet when everything is there.
set -e
pkgs="build-essential autoconf autoconf-archive automake libtool pkg-config
      libevent-dev libcmocka-dev libmemcached-dev perl memcached
      libwslay-dev libjansson-dev libssl-dev"
# The WebSocket front's tests: a real browser and the reverse proxy that
# gives browsers on https pages wss:// (skipped with a reason without them).
[ "${WITH_BROWSER:-1}" = 1 ] && pkgs="$pkgs chromium nginx-light"
[ "${WITH_REFERENCE:-1}" = 1 ] && pkgs="$pkgs yrmcds"
# The Python client's tests, and its type check (mypy --strict in make check).
pkgs="$pkgs python3 mypy"
# The packages stage (scripts/package-test.sh): Debian's packaging tools.
[ "${WITH_PACKAGES:-0}" = 1 ] && pkgs="$pkgs debhelper dh-python lintian autoconf-archive python3"
# counterctl top's interactive mode is tested in a tmux terminal, the
# Prometheus exposition and alert rules with promtool.
[ "${WITH_EXTRAS:-0}" = 1 ] && pkgs="$pkgs gcovr gnuplot-nox clang libclang-rt-14-dev valgrind strace linux-perf redis-server tmux prometheus"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
# yrmcds's, redis-server's and prometheus's packages start a service on
# install; we never use those (the benchmark starts its own redis-server on
# a free port; the tests use only prometheus's promtool).
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
