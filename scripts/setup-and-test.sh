#!/bin/sh
# setup-and-test.sh: from a fresh checkout on Debian, install what is
# missing, build with -Werror and run every test: the cmocka unit tests,
# the end-to-end suite in t/ and the differential test against yrmcds,
# make distcheck, the robustness stages (scripts/robustness.sh), and the
# packages stage (scripts/package-test.sh: build, install and check the
# Debian packages).
set -e
cd "$(dirname "$0")/.."
WITH_EXTRAS=1 sh scripts/install-deps.sh
autoreconf -fi
rm -rf _build/test && mkdir -p _build/test && cd _build/test
../../configure --enable-werror
make -j"$(nproc)"
# mypy is installed above: its check must run here, not be skipped.
MCC_REQUIRE_MYPY=1 make -j"$(nproc)" check
make distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror
sh ../../scripts/check-memcached-headers.sh
# Robustness stage: ASan+UBSan and TSan builds, valgrind, time-boxed
# fuzzing, the short soak and the hostile-input tests.
cd ../..
sh scripts/robustness.sh
# Packages stage: the Debian packages built, checked with lintian,
# installed with dpkg, tried, and purged.
sh scripts/package-test.sh
