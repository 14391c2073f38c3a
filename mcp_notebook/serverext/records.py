"""Which kernel server a relayed request goes to: the discovery lookup, remembered.

``discovery.find`` reads every file of the discovery folder and asks the process table
about each: a fifth of the relay's time per request when it ran on every one. A name's
record is remembered while the folder and the record's file are unchanged (the same stat:
a server that starts, stops or restarts writes or removes a file, which changes the
folder), for at most ``TTL`` seconds (file systems whose times are coarse); the relay
forgets it at once when the kernel cannot be reached or refuses the token.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable

from .. import discovery

TTL = 5.0
MAX_NAMES = 256  # names remembered (only names that were found: each is a real server)

Stamp = tuple[int, int, int, int, int]


def search(name: str) -> discovery.ServerRecord:
    """The running server called ``name``, else the one whose kernel id is ``name`` (two
    notebooks of the same file name, in two folders, have the same server name)."""
    try:
        return discovery.find(name)
    except discovery.NotFound:
        for record in discovery.running():
            if record.kernel_id == name:
                return record
        raise


def _folder_stamp(folder: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(folder)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_ino)


def _stamp(folder: tuple[int, int] | None, path: str | None) -> Stamp | None:
    if folder is None or path is None:
        return None
    try:
        file = os.stat(path)
    except OSError:
        return None
    return (*folder, file.st_ino, file.st_mtime_ns, file.st_size)


class Records:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._known: OrderedDict[str, tuple[discovery.ServerRecord, Stamp, float]] = OrderedDict()

    def find(self, name: str) -> discovery.ServerRecord:
        """:func:`search`, from memory while nothing changed; ``discovery.NotFound``."""
        now = self._clock()
        known = self._known.get(name)
        if known is not None:
            record, stamp, until = known
            path = record.path or ""
            if now < until and _stamp(_folder_stamp(os.path.dirname(path)), path) == stamp:
                return record
            del self._known[name]
        # The folder's stat is taken before it is read: a file written meanwhile changes
        # the folder after this stamp, and so is not missed next time.
        folder = _folder_stamp(str(discovery.folder()))
        record = search(name)
        found = _stamp(folder, record.path)
        if found is not None:
            self._known[name] = (record, found, now + TTL)
            while len(self._known) > MAX_NAMES:
                self._known.popitem(last=False)
        return record

    def forget(self, name: str) -> None:
        self._known.pop(name, None)
