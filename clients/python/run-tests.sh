#!/bin/sh
# run-tests.sh: make check's entry for the Python client. Finds a python3
# of version 3.11 or later (exit 77, skipped, without one) and runs the
# unittest suite in clients/python/tests against this build's mchost and
# counter.so (MCHOST and COUNTER_SO, defaulting to the top build
# directory, where make check runs tests) and, when built, the C ketama
# check program (KETAMA_MAP).
here=$(cd "$(dirname "$0")" && pwd)
py=
for cand in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$cand" ] || continue
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "no python3 >= 3.11: the Python client's tests were skipped" >&2
    exit 77
fi
top=$(pwd)
: "${MCHOST:=$top/mchost}"
: "${COUNTER_SO:=$top/.libs/counter.so}"
if [ -z "${KETAMA_MAP:-}" ] && [ -x "$top/tests/ketama_map" ]; then
    KETAMA_MAP=$top/tests/ketama_map
fi
export MCHOST COUNTER_SO KETAMA_MAP
PYTHONPATH="$here/src:$here/tests${PYTHONPATH:+:$PYTHONPATH}"
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
cd "$here/tests" || exit 99
exec "$py" -m unittest discover -v -s "$here/tests" -t "$here/tests" -p 'test_*.py'
