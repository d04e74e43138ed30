"""The package installs offline: a venv, `pip install --no-index` of this
directory (the in-tree build backend needs nothing from an index), then an
import. Skipped when venv or pip is unavailable."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TestInstall(unittest.TestCase):
    """pip install --no-index clients/python in a fresh venv."""

    def test_offline_install(self) -> None:
        try:
            import ensurepip  # noqa: F401
            import venv  # noqa: F401
        except ImportError:
            self.skipTest("venv or ensurepip not available")
        tmp = tempfile.mkdtemp(prefix="mcc-venv-")
        self.addCleanup(shutil.rmtree, tmp, True)
        env_dir = os.path.join(tmp, "v")
        r = subprocess.run([sys.executable, "-m", "venv", env_dir],
                           capture_output=True, timeout=300)
        if r.returncode != 0:
            self.skipTest("venv failed: %s" % r.stderr.decode()[-200:])
        py = os.path.join(env_dir, "bin", "python")
        # A copy: pip may write into the source tree it builds from, and
        # the tree may be read-only (make distcheck).
        src = os.path.join(tmp, "src")
        shutil.copytree(HERE, src, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc"))
        # Without PYTHONPATH: the import must find the installed copy, not
        # the source tree the test suite runs from.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-index",
                            src], capture_output=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        r = subprocess.run([py, "-c", "import mccounter, sys; "
                            "sys.stdout.write(mccounter.__file__)"],
                           capture_output=True, timeout=60, cwd=tmp,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertTrue(r.stdout.decode().startswith(env_dir))


if __name__ == "__main__":
    unittest.main()
