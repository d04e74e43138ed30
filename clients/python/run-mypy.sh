#!/bin/sh
# run-mypy.sh: make check's type check of the Python client: mypy --strict
# over the package (clients/python/src/mccounter), as Debian's mypy runs
# it. Skipped (77) with a message when mypy is not installed, unless
# MCC_REQUIRE_MYPY=1 (the CI, which installs it) makes that a failure.
# The cache goes to /dev/null so that nothing is written in the source or
# build tree.
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v mypy >/dev/null 2>&1; then
    if [ "${MCC_REQUIRE_MYPY:-0}" = 1 ]; then
        echo "FAIL: mypy is not installed (apt-get install mypy)" >&2
        exit 1
    fi
    echo "SKIP: mypy is not installed: the Python client's type check" \
         "did not run (apt-get install mypy)" >&2
    exit 77
fi
cd "$here/src" || exit 99
exec mypy --strict --cache-dir=/dev/null mccounter
