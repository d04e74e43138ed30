# clients/python/local.mk: the pure-Python client (included by the top
# Makefile.am). make check runs its unittest suite through run-tests.sh
# (skipped, 77, without python3 >= 3.11) and mypy --strict through
# run-mypy.sh (skipped without mypy); everything ships in the tarball.
TESTS += clients/python/run-tests.sh clients/python/run-mypy.sh
EXTRA_DIST += clients/python/run-tests.sh clients/python/run-mypy.sh \
	clients/python/pyproject.toml \
	clients/python/mcc_build.py clients/python/README.md \
	clients/python/bench.py \
	clients/python/src/mccounter/__init__.py \
	clients/python/src/mccounter/protocol.py \
	clients/python/src/mccounter/duration.py \
	clients/python/src/mccounter/ops.py \
	clients/python/src/mccounter/ketama.py \
	clients/python/src/mccounter/quota.py \
	clients/python/src/mccounter/client.py \
	clients/python/src/mccounter/aio.py \
	clients/python/src/mccounter/py.typed \
	clients/python/tests/support.py \
	clients/python/tests/test_codec.py \
	clients/python/tests/test_refusals.py \
	clients/python/tests/test_duration.py \
	clients/python/tests/test_ketama.py \
	clients/python/tests/test_quota.py \
	clients/python/tests/test_live.py \
	clients/python/tests/test_install.py \
	clients/python/tests/test_examples.py \
	clients/python/tests/test_robustness.py \
	examples/README.md examples/rate_limiter.py examples/job_runner.py \
	examples/get_lease.py
