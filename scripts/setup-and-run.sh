#!/bin/sh
# setup-and-run.sh: from a fresh checkout on Debian, install what is
# missing, build, and run the bundled host mchost with counter.so enabled:
# memcache text protocol on 127.0.0.1:11211, counter protocol on
# 127.0.0.1:11215. Stops with Ctrl-C. Extra arguments go to mchost.
set -e
cd "$(dirname "$0")/.."
WITH_REFERENCE=0 sh scripts/install-deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p _build/run && cd _build/run
[ -f Makefile ] || ../../configure
make -j"$(nproc)"
echo "memcache protocol: 127.0.0.1:11211   counter protocol: 127.0.0.1:11215"
exec ./mchost -p 11211 -X "$PWD/.libs/counter.so,counter.enable=true" "$@"
