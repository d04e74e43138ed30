"""The package installs offline: a venv, `pip install --no-index` of this
directory (the in-tree build backend needs nothing from an index), then an
import. Skipped when venv or pip is unavailable."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGURE_AC = os.path.join(HERE, "..", "..", "configure.ac")


def project_version() -> str:
    """AC_INIT's version in configure.ac: the one version of the project."""
    with open(CONFIGURE_AC, encoding="utf-8") as f:
        m = re.search(r"^AC_INIT\(\[[^]]*\],\s*\[([^]]+)\]", f.read(),
                      re.M)
    assert m, "no AC_INIT version in configure.ac"
    return m.group(1)


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
        # configure.ac two levels up, as in the project, holds the version.
        src = os.path.join(tmp, "top", "clients", "python")
        shutil.copytree(HERE, src, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc"))
        shutil.copy(CONFIGURE_AC, os.path.join(tmp, "top", "configure.ac"))
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
        # One version: the installed package's and its metadata's are
        # configure.ac's.
        r = subprocess.run([py, "-c", "import mccounter, importlib.metadata "
                            "as md, sys; sys.stdout.write(mccounter."
                            "__version__ + ' ' + md.version('mccounter'))"],
                           capture_output=True, timeout=60, cwd=tmp,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        v = project_version()
        self.assertEqual(r.stdout.decode(), "%s %s" % (v, v))

    def test_source_version(self) -> None:
        """The package run from the source tree reads configure.ac too."""
        import mccounter
        self.assertEqual(mccounter.__version__, project_version())


if __name__ == "__main__":
    unittest.main()
