"""The Python examples against a real host: the rate limiter's self-test,
and the job runner keeping to a tenant's hard limit."""
from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import unittest

import mccounter as m

from support import Host, have_host

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "..", "examples")


def load(name: str):
    """Imports examples/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, name + ".py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules.
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@unittest.skipUnless(have_host(), "MCHOST/COUNTER_SO not set")
class TestExamples(unittest.TestCase):
    """Each example's behaviour, without timed assertions."""

    def setUp(self) -> None:
        if not os.path.isdir(EXAMPLES):
            self.skipTest("examples/ not found")
        self.host = Host(throttle="node.capacity = 100\n"
                                  "tenant.acme = reserved:10, hard_limit:50\n")
        self.addCleanup(self.host.stop)

    def test_rate_limiter(self) -> None:
        load("rate_limiter").selftest(self.host.server)

    def test_rate_limiter_warns_when_failing_open(self) -> None:
        """Server down: requests pass, and one warning says so (the
        second request within WARN_EVERY adds none)."""
        from support import free_port
        rl = load("rate_limiter")
        with m.Client("127.0.0.1:%d" % free_port(), timeout=5) as c:
            app = rl.GcraLimiter(rl.hello, c, rate=1, burst=1)
            with self.assertLogs("rate_limiter", "WARNING") as logs:
                for _ in range(2):
                    status, _ = rl.call(app, {"REMOTE_ADDR": "192.0.2.9"})
                    self.assertEqual(status, "200 OK")
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("failing open", logs.output[0])
        self.assertIn("1 request(s)", logs.output[0])

    def test_job_runner(self) -> None:
        jr = load("job_runner")
        r = asyncio.run(jr.run(self.host.server, "acme", jobs=24, units=5,
                               workers=3))
        self.assertEqual(r.done, 24)
        # Every allowed charge left the tenant at most its hard limit.
        self.assertLessEqual(r.peak_used, 50)
        self.assertGreater(r.peak_used, 0)


if __name__ == "__main__":
    unittest.main()
