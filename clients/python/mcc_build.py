"""mcc_build: a minimal PEP 517 build backend for mccounter, written with
the standard library only, so that installing the package works offline.
It builds a pure wheel of src/mccounter (with METADATA, WHEEL and RECORD),
an sdist of this directory, and an editable wheel that points at src/."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import time
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
PKG = "mccounter"
SDIST_FILES = ["pyproject.toml", "mcc_build.py", "README.md", "bench.py"]


def _project() -> dict:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version() -> str:
    """The project's version: AC_INIT's in ../../configure.ac (the source
    tree), else the Version of PKG-INFO (an unpacked sdist)."""
    import re
    conf = os.path.join(HERE, "..", "..", "configure.ac")
    if os.path.isfile(conf):
        with open(conf, encoding="utf-8") as f:
            m = re.search(r"^AC_INIT\(\[[^]]*\],\s*\[([^]]+)\]", f.read(),
                          re.M)
        if m:
            return m.group(1)
        raise RuntimeError("%s: no version in AC_INIT" % conf)
    info = os.path.join(HERE, "PKG-INFO")
    if os.path.isfile(info):
        with open(info, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version: "):
                    return line.split(":", 1)[1].strip()
    raise RuntimeError("no version: neither ../../configure.ac nor PKG-INFO "
                       "next to %s" % HERE)


def _dist_name() -> tuple[str, str]:
    proj = _project()
    return proj["name"].replace("-", "_"), _version()


def _metadata() -> str:
    proj = _project()
    lines = ["Metadata-Version: 2.1", "Name: %s" % proj["name"],
             "Version: %s" % _version(),
             "Summary: %s" % proj.get("description", ""),
             "Requires-Python: %s" % proj.get("requires-python", ">=3.11")]
    readme = os.path.join(HERE, proj.get("readme", "README.md"))
    text = ""
    if os.path.isfile(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
    return "\n".join(lines) + "\n\n" + text


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (path, digest.rstrip(b"=").decode(),
                                len(data))


def _write_wheel(wheel_directory: str, files: list[tuple[str, bytes]]) -> str:
    name, version = _dist_name()
    wheel = "%s-%s-py3-none-any.whl" % (name, version)
    info = "%s-%s.dist-info" % (name, version)
    files = list(files)
    files.append(("%s/METADATA" % info, _metadata().encode()))
    files.append(("%s/WHEEL" % info, (
        "Wheel-Version: 1.0\nGenerator: mcc_build\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n").encode()))
    record = [_record_line(p, d) for p, d in files]
    record.append("%s/RECORD,," % info)
    files.append(("%s/RECORD" % info, ("\n".join(record) + "\n").encode()))
    path = os.path.join(wheel_directory, wheel)
    # A fixed timestamp keeps wheels reproducible.
    stamp = (2020, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files:
            zi = zipfile.ZipInfo(p, stamp)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d)
    return wheel


def _package_files() -> list[tuple[str, bytes]]:
    out = []
    root = os.path.join(SRC, PKG)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                rel = os.path.relpath(full, SRC).replace(os.sep, "/")
                with open(full, "rb") as f:
                    out.append((rel, f.read()))
    out.append(("%s/_version.py" % PKG,
                ('"""Written by mcc_build: the project\'s version."""\n'
                 '__version__ = "%s"\n' % _version()).encode()))
    return out


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    """Nothing to install before building a wheel."""
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    """Nothing to install before building an sdist."""
    return []


def get_requires_for_build_editable(config_settings=None) -> list[str]:
    """Nothing to install before building an editable wheel."""
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None) -> str:
    """Builds the pure wheel of the package; returns its file name."""
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None) -> str:
    """Builds a wheel whose .pth file puts src/ on sys.path."""
    return _write_wheel(wheel_directory,
                        [("%s_editable.pth" % PKG, (SRC + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None) -> str:
    """Builds the source archive; returns its file name."""
    name, version = _dist_name()
    base = "%s-%s" % (name, version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    members = [f for f in SDIST_FILES if os.path.isfile(os.path.join(HERE, f))]
    for dirpath, dirnames, filenames in os.walk(SRC):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            members.append(os.path.relpath(os.path.join(dirpath, fn), HERE))
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in members:
            tar.add(os.path.join(HERE, rel), arcname=base + "/" + rel)
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        ti.mtime = int(time.time())
        tar.addfile(ti, io.BytesIO(pkg_info))
    return os.path.basename(path)
