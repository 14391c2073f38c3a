"""Discovery files: how a bridge or `mcp-notebook list` finds running notebook servers.

Each started server writes ``<jupyter runtime dir>/mcp_notebook/<name>-<pid>.json``
(owner-only, it holds the token) and removes it when it stops. Files whose process is
gone are pruned whenever the folder is read.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_runtime_dir

from .errors import McpNotebookError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerRecord:
    name: str
    url: str
    token: str | None
    pid: int
    kernel_id: str | None = None
    notebook: str | None = None
    started: float = 0.0
    path: str | None = None  # the discovery file itself; not written into it


def folder() -> Path:
    return (
        Path(os.environ.get("MCP_NOTEBOOK_RUNTIME_DIR") or jupyter_runtime_dir()) / "mcp_notebook"
    )


def _file_for(name: str, pid: int) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:100] or "server"
    return folder() / f"{safe}-{pid}.json"


def register(
    name: str,
    url: str,
    token: str | None,
    *,
    kernel_id: str | None = None,
    notebook: str | None = None,
) -> Path:
    """Write this process's discovery file (0600, written atomically)."""
    target = _file_for(name, os.getpid())
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = ServerRecord(name, url, token, os.getpid(), kernel_id, notebook, time.time())
    data = {k: v for k, v in asdict(record).items() if k != "path"}
    temporary = target.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(data, handle)
    os.chmod(temporary, 0o600)
    os.replace(temporary, target)
    return target


def unregister(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running() -> list[ServerRecord]:
    """The servers whose process still runs, newest first; stale files are removed."""
    records: list[ServerRecord] = []
    if not folder().is_dir():
        return records
    for path in folder().glob("*.json"):
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            record = ServerRecord(**data, path=str(path))
        except (OSError, ValueError, TypeError):
            logger.warning("ignoring unreadable discovery file %s", path)
            continue
        if _alive(record.pid):
            records.append(record)
        else:
            path.unlink(missing_ok=True)
    return sorted(records, key=lambda r: r.started, reverse=True)


class NotFound(McpNotebookError, LookupError):
    pass


def find(name: str | None) -> ServerRecord:
    """The newest running server called ``name``, or the only one when ``name`` is None."""
    records = running()
    if name is not None:
        matches = [r for r in records if r.name == name]
        if not matches:
            known = ", ".join(sorted({r.name for r in records})) or "none"
            raise NotFound(
                f"no running notebook server named {name!r} (running: {known}; "
                f"looked in {folder()})"
            )
        return matches[0]
    if len(records) == 1:
        return records[0]
    if not records:
        raise NotFound(f"no running notebook server (looked in {folder()})")
    names = ", ".join(r.name for r in records)
    raise NotFound(f"several notebook servers are running ({names}): name one")
