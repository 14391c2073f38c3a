"""The skill folders an export carries: ``mcp.skill(path=...)``'s folders, copied in.

A notebook's ``mcp.skill(path="skills/sales")`` reads a folder beside the notebook (the
kernel runs in the notebook's folder). The exporter's probe runs the code there and
reports each folder read (``BaseMCP.skill_folders_read``); :func:`copy_folders` writes
their files into ``PACKAGE/skill_folders/`` under the rules a kernel reads them by
(registry/skills.py ``read_files``: no symlink out, no special file, the size bounds), and
an index of where each went. The exported runtime (:func:`copies`) then reads a folder's
copy wherever the package runs from: the same bytes, so the same digests.

A relative path that stays below the notebook's folder keeps its shape
(``relative/skills/sales``); an absolute path, or one climbing out with ``..``, is copied
as ``outside/<n>-<folder name>``: the package must not depend on the machine it was made
on, and nothing of the exporter's file system layout is carried but the folder itself.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from ..registry.skills import read_files

FOLDER = "skill_folders"  # beside the exported notebook.py
INDEX = "index.json"  # the path as the code wrote it -> the copy, relative to FOLDER


def copies(package_dir: Path) -> dict[str, Path]:
    """The folder copies of the package in ``package_dir``: the path as written -> copy."""
    index = package_dir / FOLDER / INDEX
    if not index.is_file():
        return {}
    written: dict[str, str] = json.loads(index.read_text(encoding="utf-8"))
    return {key: package_dir / FOLDER / value for key, value in written.items()}


def clear(package_dir: Path) -> None:
    """Remove an earlier export's copies: the probe must read the notebook's folders."""
    if (package_dir / FOLDER).exists():
        shutil.rmtree(package_dir / FOLDER)


def copy_folders(read: Mapping[str, str], package_dir: Path) -> dict[str, str]:
    """Copy each folder of ``read`` (the path as written -> the folder it led to) into
    ``package_dir``; returns the index written (the path as written -> the copy)."""
    target = package_dir / FOLDER
    clear(package_dir)
    index: dict[str, str] = {}
    for number, (written, folder) in enumerate(sorted(read.items()), start=1):
        index[written] = _place(written, number)
        for relative, data in read_files(Path(folder)).items():
            path = target / index[written] / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if index:
        (target / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True), "utf-8")
    return index


def _place(written: str, number: int) -> str:
    """Where the copy of the folder written as ``written`` goes, under FOLDER."""
    path = PurePosixPath(written)
    parts = [p for p in path.parts if p != "."]
    if not path.is_absolute() and ":" not in written and parts and ".." not in parts:
        return "/".join(["relative", *parts])
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", PurePosixPath(written.replace("\\", "/")).name)
    return f"outside/{number}-{name.strip('.-') or 'folder'}"
