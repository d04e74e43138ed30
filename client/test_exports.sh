#!/bin/sh
# test_exports.sh: checks the installed interface of libmccounter: the
# public header compiles alone as C11, and the shared library exports
# only mcc_* symbols (the embedded codec's cnt_* stay hidden by the
# version script). Run by make check with the paths in its environment.
set -u
: "${CLIENT_CC:?}" "${CLIENT_NM:?}" "${CLIENT_HEADER:?}" "${CLIENT_SO:?}"

# shellcheck disable=SC2086 # CLIENT_CC may carry flags
if ! $CLIENT_CC -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c \
        "$CLIENT_HEADER"; then
    echo "FAIL: $CLIENT_HEADER does not compile alone" >&2
    exit 1
fi
echo "ok: the header compiles alone"

if [ ! -f "$CLIENT_SO" ]; then
    echo "SKIP: no shared library at $CLIENT_SO" >&2
    exit 77
fi
syms=$($CLIENT_NM -D --defined-only "$CLIENT_SO") || exit 1
# The version node itself shows as an absolute symbol; anything else must
# start with mcc_.
bad=$(printf '%s\n' "$syms" |
      awk 'NF >= 3 && $3 !~ /^mcc_/ && $3 != "MCCOUNTER_1" { print $3 }')
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside mcc_*:" >&2
    printf '%s\n' "$bad" >&2
    exit 1
fi
count=$(printf '%s\n' "$syms" | awk '$3 ~ /^mcc_/' | wc -l)
echo "ok: $count symbols exported, all mcc_*"
