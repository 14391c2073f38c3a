"""Discovery files: how a bridge or `mcp-notebook list` finds running notebook servers.

Each started server writes ``<runtime dir>/mcp_notebook/<name>-<pid>.json`` (owner-only,
it holds the token; UTF-8 JSON) and removes it when it stops. Files whose process is gone,
or whose pid now belongs to another process, are pruned whenever the folder is read.

The runtime dir is ``$MCP_NOTEBOOK_RUNTIME_DIR``, else Jupyter's (which follows
``JUPYTER_RUNTIME_DIR``, ``JUPYTER_DATA_DIR``, ``JUPYTER_PLATFORM_DIRS``...). A client such
as Claude Desktop starts the bridge with a small environment of its own, so the client
snippets carry :func:`environment`: the bridge then looks where the kernel wrote.

Those variables may point at a folder others can write to (a shared or misconfigured
one). On POSIX the discovery folder must then be the user's own (ownerfolder.py): another
user's folder, or a link, is refused; the user's own that others may write to is made
owner-only. Files another user owns, and links, are ignored; ours are written into a fresh
temporary file opened with O_EXCL | O_NOFOLLOW, never through a planted name.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jupyter_core import paths

from . import ownerfolder
from .errors import McpNotebookError

logger = logging.getLogger(__name__)

RUNTIME_DIR_ENV = "MCP_NOTEBOOK_RUNTIME_DIR"
# A pid is reused only after its process died, and a server lives far longer than this
# between its process's start and its discovery file; Linux derives start times from the
# boot time in whole seconds, so two readings of one process can differ by a little.
START_TIME_SLACK = 1.0
LOCK_RETRIES = 5  # Windows refuses to replace or delete a file another process has open
LOCK_WAIT = 0.05


@dataclass(frozen=True)
class ServerRecord:
    name: str
    url: str
    token: str | None
    pid: int
    kernel_id: str | None = None
    notebook: str | None = None
    started: float = 0.0
    created: float | None = None  # the process's start time: tells a reused pid apart
    # Linux: the same in clock ticks since boot. ``created`` is derived from the boot time,
    # which moves when the wall clock is stepped (resume, NTP): this does not.
    boot_ticks: int | None = None
    path: str | None = None  # the discovery file itself; not written into it
    # The Jupyter Server extension's proof that it relayed a request (transports/relayed.py).
    relay_key: str | None = None
    # What the relay must know of the server's HTTP limits: the largest request body it
    # takes (the relay refuses a larger one without reading it whole) and how long it keeps
    # an idle connection (the relay keeps its pooled ones for less).
    max_body: int | None = None
    idle_timeout: float | None = None


_FIELDS = {f.name for f in dataclasses.fields(ServerRecord)} - {"path"}


def runtime_dir() -> Path:
    return Path(os.environ.get(RUNTIME_DIR_ENV) or paths.jupyter_runtime_dir())


def folder() -> Path:
    return runtime_dir() / "mcp_notebook"


def environment() -> dict[str, str]:
    """The variables a bridge needs to look in this process's discovery folder."""
    return {RUNTIME_DIR_ENV: os.path.abspath(runtime_dir())}


def _file_for(name: str, pid: int) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:100] or "server"
    return folder() / f"{safe}-{pid}.json"


def _process_start(pid: int) -> float | None:
    import psutil  # here: the kernel extension imports this module at start-up

    try:
        started: float = psutil.Process(pid).create_time()
        return started
    except psutil.Error:
        return None


def _boot_ticks(pid: int) -> int | None:
    """Linux: when ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat.rpartition(b")")[2].split()[19])  # fields after the command name
    except (OSError, ValueError, IndexError):
        return None  # not Linux, or the process is gone


def _patiently(action: Callable[[], Any]) -> Any:
    """Run a file operation, again for a moment while another process holds the file."""
    for attempt in range(LOCK_RETRIES):
        try:
            return action()
        except PermissionError:
            if attempt == LOCK_RETRIES - 1:
                raise
            time.sleep(LOCK_WAIT)
    return None


def register(
    name: str,
    url: str,
    token: str | None,
    *,
    kernel_id: str | None = None,
    notebook: str | None = None,
    relay_key: str | None = None,
    max_body: int | None = None,
    idle_timeout: float | None = None,
) -> Path:
    """Write this process's discovery file (owner-only, atomically); OSError if it cannot."""
    pid = os.getpid()
    target = _file_for(name, pid)
    target.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    record = ServerRecord(
        name,
        url,
        token,
        pid,
        kernel_id,
        notebook,
        time.time(),
        _process_start(pid),
        _boot_ticks(pid),
        relay_key=relay_key,
        max_body=max_body,
        idle_timeout=idle_timeout,
    )
    data = {k: v for k, v in asdict(record).items() if k != "path"}
    # ASCII: a notebook name that isn't UTF-8 (a lone surrogate) is written escaped, and
    # read back as the same name.
    body = json.dumps(data).encode("ascii")
    if sys.platform == "win32":
        _write_windows(target, body)
    else:
        ownerfolder.check(target.parent, create=True)
        ownerfolder.write_private(target, body, _patiently)
    return target


def _write_windows(target: Path, body: bytes) -> None:
    temporary = target.with_suffix(".tmp")
    try:
        # Jupyter's own writer for connection files: an owner-only ACL on Windows (where
        # mode bits do not protect a file).
        with paths.secure_write(str(temporary), binary=True) as handle:
            handle.write(body)
        _patiently(lambda: os.replace(temporary, target))
    except RuntimeError as exc:  # the file system would not make it owner-only
        unregister(temporary)
        raise PermissionError(str(exc)) from None
    except OSError:
        unregister(temporary)  # no token left behind in a stray file
        raise


def unregister(path: Path | str | None) -> None:
    if path is None:
        return
    try:
        _patiently(lambda: Path(path).unlink(missing_ok=True))
    except OSError as exc:
        logger.warning("could not remove the discovery file %s: %s", path, exc)


def _alive(record: ServerRecord) -> bool:
    """Whether the record's process runs and is the one that wrote it.

    Asks the process table through psutil: ``os.kill(pid, 0)`` is a harmless probe on
    POSIX only; on Windows signal 0 is CTRL_C_EVENT.
    """
    try:
        return _same_process(record)
    except Exception:  # e.g. psutil's C layer refusing an odd pid: cannot tell, keep it
        logger.debug("cannot tell whether pid %s runs", record.pid, exc_info=True)
        return True


def _same_process(record: ServerRecord) -> bool:
    import psutil

    try:
        process = psutil.Process(record.pid)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # cannot tell: keep the file
        return True
    try:
        started: float | None = process.create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # someone else's process (access denied): it exists
        started = None
    ticks = _boot_ticks(record.pid) if record.boot_ticks is not None else None
    if ticks is not None:
        if ticks != record.boot_ticks:
            return False  # the pid now names another process
    elif (
        started is not None
        and record.created is not None
        and abs(started - record.created) > START_TIME_SLACK
    ):
        return False  # the same, told by wall-clock start times (macOS, Windows)
    try:
        alive: bool = process.status() != psutil.STATUS_ZOMBIE
        return alive
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def _optional(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> bool:
    return data.get(key) is None or isinstance(data[key], kind)


def _read(path: Path) -> ServerRecord | None:
    """The record in ``path``, or None (with a warning) when it cannot be read."""
    try:
        data = json.loads(ownerfolder.read_own(path).decode("utf-8"))
    except ownerfolder.NotOurs as exc:  # planted by another user, or a link
        logger.warning("ignoring discovery file %s: %s", path, exc)
        return None
    except (OSError, ValueError) as exc:  # locked, unreadable, half-written, not UTF-8
        logger.warning("ignoring unreadable discovery file %s: %s", path, exc)
        return None
    valid = (
        isinstance(data, dict)
        and isinstance(data.get("name"), str)
        and isinstance(data.get("url"), str)
        and type(data.get("pid")) is int
        and 0 < data["pid"] < 2**32
        and all(
            _optional(data, key, str) for key in ("token", "kernel_id", "notebook", "relay_key")
        )
        and all(
            _optional(data, key, (int, float)) for key in ("started", "created", "idle_timeout")
        )
        and (data.get("max_body") is None or type(data["max_body"]) is int)
        and (data.get("boot_ticks") is None or type(data["boot_ticks"]) is int)
    )
    known = {k: v for k, v in data.items() if k in _FIELDS} if valid else {}
    try:
        known["started"] = _finite(known.get("started") or 0.0)
        for key in ("created", "idle_timeout"):
            if known.get(key) is not None:
                known[key] = _finite(known[key])
    except (OverflowError, ValueError):
        valid = False
    if not valid:
        logger.warning("ignoring discovery file %s: not a server record", path)
        return None
    return ServerRecord(**known, path=str(path))


def _finite(value: float) -> float:
    number = float(value)  # OverflowError for an int of hundreds of digits
    if not math.isfinite(number):
        raise ValueError(number)
    return number


def running() -> list[ServerRecord]:
    """The servers whose process still runs, newest first; stale files are removed.

    A discovery folder that is not the user's own is not read (logged; see refusal)."""
    problem = refusal()
    if problem:
        logger.warning("%s", problem)
        return []
    try:
        candidates = sorted(folder().glob("*.json"))
    except OSError as exc:
        logger.warning("cannot read the discovery folder %s: %s", folder(), exc)
        return []
    records: list[ServerRecord] = []
    for path in candidates:
        record = _read(path)
        if record is None:
            continue
        if _alive(record):
            records.append(record)
        else:
            unregister(path)
    return sorted(records, key=lambda r: r.started, reverse=True)


def refusal() -> str | None:
    """Why the discovery folder is not read (another user's, a link), or None (POSIX)."""
    if sys.platform == "win32":
        return None
    try:
        ownerfolder.check(folder(), create=False)
    except ownerfolder.UnsafeFolder as exc:
        return str(exc)
    except OSError as exc:  # e.g. it cannot be made owner-only: still ours, files checked
        logger.warning("cannot check the discovery folder %s: %s", folder(), exc)
    return None


class NotFound(McpNotebookError, LookupError):
    pass


def _where() -> str:
    return (
        f"looked in {folder()}; a notebook whose kernel uses another Jupyter runtime folder "
        f"is found with {RUNTIME_DIR_ENV} set as in its `%mcp config` snippet"
    )


def find(name: str | None) -> ServerRecord:
    """The newest running server called ``name``, or the only one when ``name`` is None."""
    problem = refusal()
    if problem:
        raise NotFound(problem)
    records = running()
    if name is not None:
        # Unicode-equal names are one name: macOS gives file names (a notebook's, which
        # names its server by default) decomposed ("e" + an accent), a typed name is not.
        wanted = unicodedata.normalize("NFC", name)
        matches = [r for r in records if unicodedata.normalize("NFC", r.name) == wanted]
        if not matches:
            known = ", ".join(sorted({r.name for r in records})) or "none"
            raise NotFound(
                f"no running notebook server named {name!r} (running: {known}; {_where()})"
            )
        return matches[0]
    if len(records) == 1:
        return records[0]
    if not records:
        raise NotFound(f"no running notebook server ({_where()})")
    names = ", ".join(r.name for r in records)
    raise NotFound(f"several notebook servers are running ({names}): name one")
