#!/bin/sh
# setup-and-run.sh: from a fresh checkout on Debian, install what is
# missing, build into _build/run, and run the bundled host mchost in the
# foreground with counter.so enabled, on 127.0.0.1 only, with the group
# "backup" the README's example uses. Stops with Ctrl-C.
# Ports: MEMCACHE_PORT (memcache text protocol, default 11211) and
# COUNTER_PORT (counter protocol, default 11215) in the environment.
# COUNTER_SETTINGS: further extension settings, KEY=VALUE separated by
# ";" as in the -X string, appended to the ones given here (for example
# COUNTER_SETTINGS="counter.admin_secret_file=$PWD/admin.secret").
# Further arguments go to mchost, after the ones given here.
set -e
MEMCACHE_PORT=${MEMCACHE_PORT:-11211}
COUNTER_PORT=${COUNTER_PORT:-11215}
for p in "$MEMCACHE_PORT" "$COUNTER_PORT"; do
    case $p in
    ''|*[!0-9]*|0*) ok=0 ;;
    *) [ "$p" -le 65535 ] && ok=1 || ok=0 ;;
    esac
    if [ "$ok" = 0 ]; then
        echo "setup-and-run.sh: port \"$p\" is not a number from 1 to 65535" >&2
        exit 2
    fi
done
if [ "$MEMCACHE_PORT" = "$COUNTER_PORT" ]; then
    echo "setup-and-run.sh: MEMCACHE_PORT and COUNTER_PORT are both $COUNTER_PORT" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
WITH_REFERENCE=0 WITH_BROWSER=0 sh scripts/install-deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p _build/run && cd _build/run
[ -f Makefile ] || ../../configure
make -j"$(nproc)"
SETTINGS="counter.enable=true;counter.port=$COUNTER_PORT;counter.group.backup=max:2"
[ -z "$COUNTER_SETTINGS" ] || SETTINGS="$SETTINGS;$COUNTER_SETTINGS"
echo "memcache protocol: 127.0.0.1:$MEMCACHE_PORT   counter protocol: 127.0.0.1:$COUNTER_PORT"
exec ./mchost -p "$MEMCACHE_PORT" \
    -X "$PWD/.libs/counter.so,$SETTINGS" "$@"
