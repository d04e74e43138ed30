#!/bin/sh
# package-test.sh: the "packages" stage of CI. Builds the Debian packages
# of a copy of this tree (dpkg-buildpackage writes into the parent of the
# tree it builds, so the copy lives in a scratch directory), checks them
# with lintian (errors fail, warnings are listed), installs them with dpkg
# and checks the installed files: mchost started with counter.so the way
# memcached-counter.service starts it (its ExecStart line, the settings
# files under /etc, the service user), counterctl, the reload command of
# the unit, the Python module and pkg-config with a C program. Then it
# stops the server by its pid, purges the packages and removes the service
# user if this script created it, so the machine is left as it was.
# Needs root (dpkg -i); installs its build tools with install-deps.sh.
set -e
[ "$(id -u)" = 0 ] || exec sudo sh "$0" "$@"
cd "$(dirname "$0")/.."
src=$(pwd)
WITH_PACKAGES=1 WITH_BROWSER=0 WITH_REFERENCE=0 sh scripts/install-deps.sh

PKGS="memcached-counter counterctl libmccounter0 libmccounter-dev python3-mccounter"
UNIT=/lib/systemd/system/memcached-counter.service
scratch=$(mktemp -d /tmp/mcc-packages.XXXXXX)
server_pid=""
user_existed=no
getent passwd memcached-counter >/dev/null && user_existed=yes
etc=/etc/memcached-counter
# The test edits the settings in /etc and purges at the end: it does not
# run where the packages are in use.
for p in $PKGS; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        echo "package-test: $p is installed here; not touching it" >&2
        exit 1
    fi
done

cleanup() {
    rc=$?
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    dpkg --purge $PKGS >/dev/null 2>&1 || true
    # The files this script added next to the conffiles.
    rm -f $etc/admin.secret $etc/throttle.conf
    rmdir $etc 2>/dev/null || true
    if [ "$user_existed" = no ] && getent passwd memcached-counter >/dev/null; then
        userdel memcached-counter 2>/dev/null || true
        getent group memcached-counter >/dev/null &&
            groupdel memcached-counter 2>/dev/null || true
    fi
    rm -rf "$scratch"
    [ "$rc" = 0 ] && echo "package-test: ok" || echo "package-test: FAILED" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() { echo "package-test: $*" >&2; exit 1; }

# A copy of the tracked files (or of the tree, without build directories,
# outside git, e.g. in a release tarball).
tree="$scratch/memcached-counter"
mkdir "$tree"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z | xargs -0 cp --parents -t "$tree"
else
    tar -C "$src" --exclude=./_build --exclude=./.git -cf - . | tar -C "$tree" -xf -
fi

echo "package-test: dpkg-buildpackage (log: $scratch/build.log)"
# No -dbgsym packages: nothing here installs them.
(cd "$tree" && DEB_BUILD_OPTIONS=noddebs dpkg-buildpackage -us -uc -b -j2) >"$scratch/build.log" 2>&1 ||
    { tail -40 "$scratch/build.log" >&2; fail "dpkg-buildpackage failed"; }

# lintian exits non-zero on errors; warnings and the rest are printed.
lintian --allow-root "$scratch"/memcached-counter_*.changes ||
    fail "lintian reports errors"

debs=""
for p in $PKGS; do
    debs="$debs $(ls "$scratch/${p}_"*.deb)"
done
if ! dpkg -i $debs >"$scratch/dpkg.log" 2>&1; then
    # Dependencies this machine lacks: apt-get completes the installation.
    DEBIAN_FRONTEND=noninteractive apt-get install -f -y -qq >/dev/null ||
        { cat "$scratch/dpkg.log" >&2; fail "dpkg -i failed"; }
fi
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" | grep -q "ok installed" ||
        fail "$p is not installed"
done
getent passwd memcached-counter >/dev/null || fail "no user memcached-counter"
[ -f "$UNIT" ] || fail "no $UNIT"
# The unit's syntax and paths, where systemd's tools are (systemd itself
# need not run).
if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify "$UNIT" || fail "systemd-analyze verify $UNIT"
fi

# Free loopback ports for this run, written into the installed settings
# (conffiles: the purge below removes them).
ports=$(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
set -- $ports
mc_port=$1
cnt_port=$2
sed -i "s/-p 11211/-p $mc_port/; s/-p 11215/-p $cnt_port/" /etc/default/memcached-counter
sed -i "s/^counter.port = .*/counter.port = $cnt_port/" $etc/counter.conf
# What the reload path needs: an admin secret readable by the service
# user and a throttle settings file.
(umask 077; head -c 24 /dev/urandom | base64 > $etc/admin.secret)
chown memcached-counter:memcached-counter $etc/admin.secret
printf 'node.capacity = 1000\ntenant.acme = reserved:100\n' > $etc/throttle.conf
cat >> $etc/counter.conf <<CONF
counter.admin_secret_file = $etc/admin.secret
counter.throttle.config = $etc/throttle.conf
counter.group.backup = max:2
CONF

# The unit's commands, with the variables of its EnvironmentFile expanded
# as systemd expands an unquoted $VAR (split at white space).
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
exec_reload=$(sed -n 's/^ExecReload=//p' "$UNIT")
. /etc/default/memcached-counter
unit_user=$(sed -n 's/^User=//p' "$UNIT")
[ -n "$exec_start" ] && [ -n "$unit_user" ] || fail "cannot read $UNIT"

echo "package-test: starting as $unit_user: $exec_start"
eval "set -- $exec_start"
setpriv --reuid="$unit_user" --regid="$unit_user" --init-groups -- "$@" 2>"$scratch/server.log" &
server_pid=$!

# counterctl from /usr/bin, once the server listens.
ctl="/usr/bin/counterctl -p $cnt_port"
i=0
until $ctl stats >/dev/null 2>&1; do
    kill -0 "$server_pid" 2>/dev/null ||
        { cat "$scratch/server.log" >&2; fail "the server exited"; }
    i=$((i + 1))
    [ $i -le 100 ] || { cat "$scratch/server.log" >&2; fail "the server does not answer on $cnt_port"; }
    sleep 0.1
done
[ "$($ctl acquire licence 1 3)" = 1 ] || fail "counterctl acquire"
$ctl run backup 1 - --wait 5 -- true || fail "counterctl run on the group"
$ctl node show | grep -q "^capacity 1000" || fail "throttle.conf not read"

# The unit's reload command, run as the unit runs it, applies a changed
# throttle.conf.
sed -i 's/^node.capacity = 1000/node.capacity = 2000/' $etc/throttle.conf
eval "set -- $exec_reload"
setpriv --reuid="$unit_user" --regid="$unit_user" --init-groups -- "$@" || fail "the unit's ExecReload failed"
$ctl node show | grep -q "^capacity 2000" || fail "the reload did not apply"

# The Python client, from dist-packages, with Debian's interpreter (a
# python3 earlier in PATH, such as pyenv's, does not read dist-packages).
/usr/bin/python3 - "$cnt_port" <<'PY' || fail "python3-mccounter"
import sys
import mccounter
assert mccounter.__file__.startswith("/usr/lib/python3/dist-packages/")
with mccounter.Client("127.0.0.1:%s" % sys.argv[1], timeout=5) as c:
    c.acquire("py", 1, 2)
    assert c.get("py") == 1
print("package-test: mccounter", mccounter.__version__)
PY

# The C library through pkg-config, with the installed header and man page.
flags=$(pkg-config --cflags --libs mccounter) || fail "pkg-config mccounter"
cc -std=c11 -o "$scratch/licence" examples/licence.c $flags ||
    fail "examples/licence.c does not build against the packages"
"$scratch/licence" -s "127.0.0.1:$cnt_port" licence 3 1 ||
    fail "examples/licence.c, built against the packages, failed"
[ -f /usr/share/man/man3/mcc_acquire.3.gz ] || fail "no man page mcc_acquire(3)"

kill "$server_pid"
wait "$server_pid" || true
server_pid=""
echo "package-test: server log:"
sed 's/^/    /' "$scratch/server.log"
