#!/bin/sh
# test_exports.sh: checks the installed interface of libmccounter: the
# public header compiles alone as C11, and the shared library exports
# only mcc_* symbols (the embedded codec's cnt_* are hidden by the
# version script, the internal mcc_* helpers by hidden visibility), and
# exactly the functions the header declares. Run by make check with the paths in its environment.
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
      awk 'NF >= 3 && $3 !~ /^mcc_/ && $3 !~ /^MCCOUNTER_1(\.[12])?$/ {
               print $3 }')
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside mcc_*:" >&2
    printf '%s\n' "$bad" >&2
    exit 1
fi
count=$(printf '%s\n' "$syms" | awk '$3 ~ /^mcc_/' | wc -l)
echo "ok: $count symbols exported, all mcc_*"

# Exactly the functions the header declares: internal mcc_* helpers are
# hidden, and nothing declared is missing.
# shellcheck disable=SC2086
declared=$($CLIENT_CC -std=c11 -E -P -x c "$CLIENT_HEADER" |
           grep -oE '\bmcc_[a-z0-9_]+ *\(' | sed 's/ *($//' | sort -u)
exported=$(printf '%s\n' "$syms" |
           awk '$3 ~ /^mcc_/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
if [ "$declared" != "$exported" ]; then
    echo "FAIL: exported and declared functions differ:" >&2
    printf '%s\n' "$declared" > exports-declared.tmp
    printf '%s\n' "$exported" > exports-exported.tmp
    diff exports-declared.tmp exports-exported.tmp >&2
    rm -f exports-declared.tmp exports-exported.tmp
    exit 1
fi
echo "ok: the exports are exactly the header's functions"

# The version nodes: 1.1's additions under MCCOUNTER_1.1 and 1.2's under
# MCCOUNTER_1.2 (programs built against them need that release),
# everything else under MCCOUNTER_1.
for f in mcc_check mcc_check_async mcc_wait_for mcc_wait_for_async \
         mcc_lease_start mcc_tenant_set_json mcc_tenant_set_json_async \
         mcc_node_set_json mcc_node_set_json_async \
         mcc_auth_user mcc_auth_user_async mcc_client_set_user; do
    if ! printf '%s\n' "$syms" | grep -q " $f@@MCCOUNTER_1\.1\$"; then
        echo "FAIL: $f is not exported as $f@@MCCOUNTER_1.1" >&2
        exit 1
    fi
done
# 1.2's additions under MCCOUNTER_1.2.
for f in mcc_lease_list mcc_lease_list_async mcc_busiest mcc_busiest_async; do
    if ! printf '%s\n' "$syms" | grep -q " $f@@MCCOUNTER_1\.2\$"; then
        echo "FAIL: $f is not exported as $f@@MCCOUNTER_1.2" >&2
        exit 1
    fi
done
if ! printf '%s\n' "$syms" | grep -q ' mcc_window_check@@MCCOUNTER_1$'; then
    echo "FAIL: mcc_window_check left MCCOUNTER_1" >&2
    exit 1
fi
echo "ok: the version nodes MCCOUNTER_1, MCCOUNTER_1.1 and MCCOUNTER_1.2"
