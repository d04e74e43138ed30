#!/bin/sh
# check-memcached-headers.sh: installs our memcached interface declarations
# as a separate engine-line prefix and builds the tree against it, to prove
# code that builds here needs no more than a real installed header set.
#
# Usage: scripts/check-memcached-headers.sh [DIR]
#   With DIR, uses the headers already in DIR/include/memcached (a real
#   memcached engine-line install, say) instead of installing ours.
# Stages:
#   1. Header hygiene: each header either compiles on its own or needs
#      <stdbool.h> from its includer, exactly as in memcached's set
#      (config_parser.h, engine_common.h and callback.h use bool without
#      including <stdbool.h>), so a file that forgets <stdbool.h> fails
#      here as it would against the real headers.
#   2. An out-of-tree build of the whole tree, mchost included, with
#      --with-memcached=PREFIX --enable-werror, and the layout/type check
#      (make check TESTS=include/abi_check, which also compiles every
#      other check program against the prefix).
#   3. Every memcached/*.h the compiler read must come from the prefix,
#      never from the source tree's include/memcached (configure must not
#      put it on the include path) nor from /usr/include/memcached.
# Everything happens in a temporary directory removed on exit.
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-cc}
JOBS=${JOBS:-2}

work=$(mktemp -d "${TMPDIR:-/tmp}/cnt-mchdr.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

if [ $# -gt 1 ]; then
    echo "usage: $0 [DIR]" >&2
    exit 2
fi
if [ $# -eq 1 ]; then
    if [ ! -f "$1/include/memcached/extension.h" ]; then
        echo "$0: no include/memcached/extension.h under $1" >&2
        exit 2
    fi
    prefix=$(cd "$1" && pwd)
else
    prefix=$work/prefix
    mkdir -p "$prefix/include/memcached"
    cp "$srcdir"/include/memcached/*.h "$prefix/include/memcached/"
fi
echo "check-memcached-headers: headers from $prefix/include/memcached"

# Runs a command with its output in a log; on failure shows the log's end.
run() {
    log=$1
    shift
    if ! "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "check-memcached-headers: FAILED: $*" >&2
        exit 1
    fi
}

# Stage 1: what each header demands of its includer.
hdr_cflags="-std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror"
need_header() { # need_header NAME: the prefix must have memcached/NAME
    if [ ! -f "$prefix/include/memcached/$1" ]; then
        echo "check-memcached-headers: FAILED: no memcached/$1 in the" \
             "prefix" >&2
        exit 1
    fi
}
compile_tu() { # compile_tu TU-FILE LOG
    # shellcheck disable=SC2086 # hdr_cflags is a list of flags
    $CC $hdr_cflags -fsyntax-only -I"$prefix/include" "$1" >"$2" 2>&1
}
for h in config_parser.h engine_common.h callback.h; do
    need_header "$h"
    printf '#include <memcached/%s>\n' "$h" >"$work/tu.c"
    if compile_tu "$work/tu.c" "$work/tu.log" ||
       ! grep -q "bool" "$work/tu.log"; then
        echo "check-memcached-headers: FAILED: <memcached/$h> must need" \
             "<stdbool.h> from its includer, as memcached's does" >&2
        exit 1
    fi
    printf '#include <stdbool.h>\n#include <memcached/%s>\n' "$h" \
        >"$work/tu.c"
    if ! compile_tu "$work/tu.c" "$work/tu.log"; then
        cat "$work/tu.log" >&2
        echo "check-memcached-headers: FAILED: <memcached/$h> after" \
             "<stdbool.h>" >&2
        exit 1
    fi
done
for h in types.h server_api.h extension.h engine.h protocol_binary.h \
         vbucket.h visibility.h; do
    need_header "$h"
    printf '#include <memcached/%s>\n' "$h" >"$work/tu.c"
    if ! compile_tu "$work/tu.c" "$work/tu.log"; then
        cat "$work/tu.log" >&2
        echo "check-memcached-headers: FAILED: <memcached/$h> alone" >&2
        exit 1
    fi
done
echo "check-memcached-headers: header hygiene ok"

# Stage 2: the whole tree against the prefix.
mkdir "$work/build"
cd "$work/build"
run configure.log "$srcdir/configure" --with-memcached="$prefix" \
    --enable-werror
if ! grep -qx "MEMCACHED_CPPFLAGS = -I$prefix/include" Makefile; then
    grep '^MEMCACHED_CPPFLAGS' Makefile >&2 || true
    echo "check-memcached-headers: FAILED: configure did not use" \
         "-I$prefix/include alone" >&2
    exit 1
fi
run make.log make -j"$JOBS"
run check.log make -j"$JOBS" check TESTS=include/abi_check
echo "check-memcached-headers: build and include/abi_check ok"

# Stage 3: which memcached headers the compiler actually read. Anything
# outside the prefix (the source tree's include/memcached, or the
# protocol_binary.h a distribution's memcached package puts in
# /usr/include/memcached) means the prefix was not the whole story.
deps=$(find . -name '*.Po' -o -name '*.Plo')
# shellcheck disable=SC2086 # deps is a list of file names without blanks
read_hdrs=$(grep -ho '[^ :]*/memcached/[^ /:]*\.h' $deps | sort -u)
if [ -z "$read_hdrs" ]; then
    echo "check-memcached-headers: FAILED: no object read a memcached" \
         "header" >&2
    exit 1
fi
stray=$(printf '%s\n' "$read_hdrs" | grep -v "^$prefix/include/memcached/" ||
        true)
if [ -n "$stray" ]; then
    printf '%s\n' "$stray" >&2
    echo "check-memcached-headers: FAILED: the headers above were read" \
         "from outside $prefix/include/memcached" >&2
    exit 1
fi
echo "check-memcached-headers: ok (only $prefix/include/memcached was used)"
