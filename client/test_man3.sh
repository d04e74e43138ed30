#!/bin/sh
# test_man3.sh: every function of libmccounter finds its manual page:
# doc/man3-links.sh's check (each function declared in exactly one page's
# SYNOPSIS and named in its NAME), then the pages and their links
# installed as make install does into a temporary man tree, where
# `man FUNCTION` must show the page (when man is installed). Run by make
# check with the paths in its environment.
set -u
: "${CLIENT_CC:?}" "${CLIENT_HEADER:?}"
top=$(cd "$(dirname "$CLIENT_HEADER")/.." && pwd)
pages="$top/doc/mcc_client_new.3 $top/doc/mcc_ops.3 $top/doc/mcc_async.3 $top/doc/mcc_lease.3 $top/doc/mcc_get_lease.3"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man3" || exit 99
# shellcheck disable=SC2086 # the list of pages
CC=$CLIENT_CC sh "$top/doc/man3-links.sh" check "$CLIENT_HEADER" $pages ||
    exit 1
# shellcheck disable=SC2086
cp $pages "$tmp/man3/" || exit 99
# shellcheck disable=SC2086
CC=$CLIENT_CC sh "$top/doc/man3-links.sh" install "$tmp/man3" \
    "$CLIENT_HEADER" $pages >/dev/null || exit 1
# mcc_client_new(3)'s example compiles, and its servers are counter ports:
# a memcache port (11211) would only answer MCC_ERR_MEMCACHE_PORT.
sed -n '/^\.SH EXAMPLE/,/^\.SH /p' "$top/doc/mcc_client_new.3" |
    sed -n '/^\.nf$/,/^\.fi$/p' | sed '/^\.nf$/d; /^\.fi$/d' |
    sed 's/\\e/\\/g; s/\\-/-/g' > "$tmp/body.c" || exit 99
if grep -q ':11211' "$tmp/body.c"; then
    echo "FAIL: mcc_client_new.3's example points at a memcache port" >&2
    exit 1
fi
{
    printf '#include <stdio.h>\n#include "%s"\nint main(void)\n{\n' \
        "$CLIENT_HEADER"
    cat "$tmp/body.c"
    printf 'return 0;\n}\n'
} > "$tmp/example.c"
# shellcheck disable=SC2086 # CLIENT_CC may carry flags
if ! $CLIENT_CC -std=c11 -Wall -Wextra -Werror -fsyntax-only "$tmp/example.c"
then
    echo "FAIL: mcc_client_new.3's example does not compile" >&2
    exit 1
fi
echo "ok: mcc_client_new.3's example compiles"
# So does mcc_get_lease.3's (the body of a function returning int).
sed -n '/^\.SH EXAMPLE/,/^\.SH /p' "$top/doc/mcc_get_lease.3" |
    sed -n '/^\.nf$/,/^\.fi$/p' | sed '/^\.nf$/d; /^\.fi$/d' |
    sed 's/\\e/\\/g; s/\\-/-/g' > "$tmp/body2.c" || exit 99
{
    printf '#include <stdio.h>\n#include "%s"\nint main(void)\n{\n' \
        "$CLIENT_HEADER"
    cat "$tmp/body2.c"
    printf 'return 0;\n}\n'
} > "$tmp/example2.c"
# shellcheck disable=SC2086 # CLIENT_CC may carry flags
if ! $CLIENT_CC -std=c11 -Wall -Wextra -Werror -fsyntax-only "$tmp/example2.c"
then
    echo "FAIL: mcc_get_lease.3's example does not compile" >&2
    exit 1
fi
echo "ok: mcc_get_lease.3's example compiles"

if ! command -v man >/dev/null 2>&1; then
    echo "SKIP: no man to look the links up with" >&2
    exit 77
fi
bad=0
for f in mcc_acquire mcc_wait_acquire_async mcc_lease_release mcc_strerror \
         mcc_get_lease; do
    if ! MANPAGER=cat MANWIDTH=80 man -M "$tmp" 3 "$f" 2>/dev/null |
         grep -q "$f("; then
        echo "FAIL: man $f does not show its page" >&2
        bad=1
    fi
done
[ "$bad" = 0 ] && echo "ok: man finds the pages by function name"
exit "$bad"
