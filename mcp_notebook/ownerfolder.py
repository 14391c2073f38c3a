"""A folder that is this user's own, and files in it that this user wrote (POSIX).

The discovery folder may sit where ``$MCP_NOTEBOOK_RUNTIME_DIR`` or ``$JUPYTER_RUNTIME_DIR``
points: possibly a shared or misconfigured place that another user can write to. There, a
planted file could name a server of theirs, and a planted link could make a writer
overwrite one of our files. So:

- the folder must be ours, a real folder and not a link; if others may write to it, it is
  made owner-only (0700, as Jupyter creates its runtime dir);
- a file is read only if it is a regular file we own, opened without following a link;
- a file is written into a fresh temporary name opened with ``O_CREAT | O_EXCL |
  O_NOFOLLOW`` (no planted name or link can be followed), then renamed over the target,
  both relative to the folder we checked (a folder swapped meanwhile is not written).

Windows has no owner ids or O_NOFOLLOW here; discovery.py keeps Jupyter's ACL writer there.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_core import paths

from .errors import McpNotebookError

logger = logging.getLogger(__name__)

MAX_FILE = 1 << 20  # bytes: a discovery file is a few hundred; a planted giant is not read
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFolder(McpNotebookError, PermissionError):
    """The discovery folder is not this user's own: nothing is read from it or written."""


class NotOurs(McpNotebookError, OSError):
    """A file another user owns, a link, or no regular file: it is not read."""


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _refusal(path: Path, status: os.stat_result) -> str | None:
    """Why ``path`` (lstat or fstat ``status``) is not a folder of ours, or None."""
    how = (
        "; point MCP_NOTEBOOK_RUNTIME_DIR (or JUPYTER_RUNTIME_DIR) at a folder of your own, "
        "or unset it"
    )
    if stat.S_ISLNK(status.st_mode):
        return f"refusing the discovery folder {path}: it is a symbolic link{how}"
    if not stat.S_ISDIR(status.st_mode):
        return f"refusing the discovery folder {path}: it is not a folder{how}"
    if status.st_uid != os.geteuid():
        return (
            f"refusing the discovery folder {path}: it belongs to {_owner(status.st_uid)}, "
            f"not to you, who could plant a server in it{how}"
        )
    return None


def _tighten(path: Path, status: os.stat_result, fd: int | None = None) -> None:
    """Our own folder that others may write to: make it owner-only, and say so."""
    if not stat.S_IMODE(status.st_mode) & 0o022:
        return
    if fd is not None:
        os.fchmod(fd, 0o700)
    else:
        os.chmod(path, 0o700, follow_symlinks=False)
    logger.warning(
        "made the discovery folder %s owner-only: it was %s, which let others plant files in it",
        path,
        oct(stat.S_IMODE(status.st_mode)),
    )


def check(path: Path, *, create: bool) -> None:
    """Refuse (UnsafeFolder) a discovery folder that is not ours; make ours owner-only.

    ``create``: make it (0700) if missing; otherwise a missing folder is fine (empty).
    """
    if create:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    refusal = _refusal(path, status)
    if refusal:
        raise UnsafeFolder(refusal)
    _tighten(path, status)


def read_own(path: Path) -> bytes:
    """The bytes of ``path`` if it is a regular file of ours (NotOurs if not), no link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotOurs(errno.ELOOP, "it is a symbolic link") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotOurs(errno.EINVAL, "it is not a regular file")
        if status.st_uid != os.geteuid():
            raise NotOurs(errno.EACCES, f"it belongs to {_owner(status.st_uid)}, not to you")
        if status.st_size > MAX_FILE:
            raise NotOurs(errno.EFBIG, f"it is larger than {MAX_FILE} bytes")
        chunks, left = [], MAX_FILE + 1
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise NotOurs(errno.EFBIG, f"it is larger than {MAX_FILE} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_private(target: Path, body: bytes, patiently: Callable[[Callable[[], Any]], Any]) -> None:
    """Write ``body`` to ``target`` (0600), atomically, in a folder :func:`check` accepted.

    ``patiently`` runs the final rename again while another process holds the target.
    """
    folder = os.open(target.parent, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    try:
        status = os.fstat(folder)  # the folder we opened, not whatever the name means now
        refusal = _refusal(target.parent, status)
        if refusal:
            raise UnsafeFolder(refusal)
        _tighten(target.parent, status, folder)
        temporary = f".{target.stem}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        handle = os.open(temporary, flags, 0o600, dir_fd=folder)
        try:
            try:
                os.fchmod(handle, 0o600)  # whatever the umask took away
                mode = paths.get_file_mode(str(target.parent / temporary))
                if mode != 0o600:
                    raise PermissionError(
                        errno.EACCES,
                        f"Permissions assignment failed for secure file: '{target}'. "
                        f"Got '{oct(mode)}' instead of '0o0600'.",
                    )
                view = memoryview(body)
                while view:
                    view = view[os.write(handle, view) :]
            finally:
                os.close(handle)
            patiently(
                lambda: os.replace(temporary, target.name, src_dir_fd=folder, dst_dir_fd=folder)
            )
        except BaseException:
            with contextlib.suppress(OSError):  # no token left behind in a stray file
                os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)
