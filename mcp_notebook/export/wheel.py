"""The runtime's wheel and sdist, written with zipfile, tarfile and hashlib alone.

Used by the exporter (the wheel inside an exported package, built from the installed
package's own files) and by ``runtime/pyproject.toml``'s build backend (runtime/_backend.py).
Reproducible: entries sorted, fixed timestamps and permissions, so two builds of the same
files are byte-identical.

Imports only the standard library and runtime_modules.py: the build backend runs it from a
source tree with nothing installed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path

from . import runtime_modules as rt

# The earliest time a zip entry can carry (1980-01-01), and the same in seconds for tar.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
TAR_TIME = 315532800
_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)


def source_version(root: Path) -> str:
    """``__version__`` of the tree under ``root``, read (not imported)."""
    found = _VERSION.search((root / "mcp_notebook" / "_version.py").read_text("utf-8"))
    if found is None:
        raise ValueError(f"no __version__ in {root / 'mcp_notebook' / '_version.py'}")
    return found.group(1)


def wheel_name(version: str) -> str:
    return f"{_snake(rt.DISTRIBUTION)}-{version}-py3-none-any.whl"


def metadata(version: str) -> str:
    """The core metadata (METADATA in a wheel, PKG-INFO in an sdist)."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {rt.DISTRIBUTION}",
        f"Version: {version}",
        f"Summary: {rt.SUMMARY}",
        "License: MIT",
        f"Requires-Python: {rt.REQUIRES_PYTHON}",
        *(f"Requires-Dist: {requirement}" for requirement in rt.REQUIRES),
    ]
    return "\n".join(lines) + "\n"


def build_wheel(root: Path, directory: Path, *, version: str | None = None) -> Path:
    """Write the runtime's wheel of the files under ``root`` into ``directory``.

    ``version`` other than the tree's is written into ``_version.py`` too (what a release
    of another version would hold)."""
    tree_version = source_version(root)
    version = version or tree_version
    contents: dict[str, bytes] = {}
    for name in rt.files(root):
        data = (root / name).read_bytes()
        if name == "mcp_notebook/_version.py" and version != tree_version:
            data = _VERSION.sub(f'__version__ = "{version}"', data.decode("utf-8")).encode()
        contents[name] = data
    info = f"{_snake(rt.DISTRIBUTION)}-{version}.dist-info"
    contents[f"{info}/METADATA"] = metadata(version).encode()
    contents[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: mcp-notebook\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in contents.items()]
    contents[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / wheel_name(version)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents.items():  # files sorted, then METADATA, WHEEL, RECORD
            entry = zipfile.ZipInfo(name, ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return path


def build_sdist(root: Path, project: Path, directory: Path) -> Path:
    """Write the runtime's sdist: ``project``'s files (runtime/: pyproject.toml, the build
    backend, README.md) at its top, and the runtime's files of ``root`` under it."""
    version = source_version(root)
    top = f"{_snake(rt.DISTRIBUTION)}-{version}"
    members: dict[str, bytes] = {"PKG-INFO": metadata(version).encode()}
    for name in ("pyproject.toml", "_backend.py", "README.md"):
        members[name] = (project / name).read_bytes()
    for name in rt.files(root):
        members[name] = (root / name).read_bytes()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{top}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(members):
            data = members[name]
            entry = tarfile.TarInfo(f"{top}/{name}")
            entry.size, entry.mtime, entry.mode = len(data), TAR_TIME, 0o644
            archive.addfile(entry, io.BytesIO(data))
    # mtime=0 and no file name in the gzip header: the bytes depend on the contents only.
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
        gz.write(buffer.getvalue())
    return path


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _snake(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()
