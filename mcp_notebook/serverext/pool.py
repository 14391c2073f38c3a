"""Idle keep-alive connections to kernel servers, kept for the relay's next request.

A connection of its own per relayed request cost the relay the connect and the kernel an
accept and its screening of a new connection: the larger part of the relay's time. A
connection comes back here only after a whole plain (not SSE) response on a kept-alive
HTTP/1.1 connection whose client stayed (relay.py decides); one with a stream in flight
never does, so closing it is still how a client's disconnect cancels its request.

A pooled connection the kernel closed meanwhile (it restarted, or the connection was idle
for its ``idle_timeout``) is told by a peek before it is used, and dropped. Connections are
kept for less than half the kernel's idle timeout, so the kernel rarely closes one just as
a request is sent on it.
"""

from __future__ import annotations

import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import cast

from tornado.ioloop import IOLoop
from tornado.iostream import IOStream

IDLE_PER_KERNEL = 4  # idle connections kept per kernel server; concurrency opens more
MAX_KERNELS = 64  # kernel servers with idle connections; the least recently used go first
KEEP_IDLE = 30.0  # seconds an idle connection is kept, at most

Key = tuple[str, int]


def keep_for(idle_timeout: float | None) -> float:
    """How long to keep an idle connection to a server that closes idle ones after
    ``idle_timeout`` seconds (None: not told, an older server: its default was 60)."""
    return KEEP_IDLE if idle_timeout is None else min(KEEP_IDLE, idle_timeout / 2)


def usable(stream: IOStream) -> bool:
    """Whether an idle connection is still open, with nothing unread on it: a peek that
    finds nothing to read. End of file (the kernel closed it), a reset, or bytes the kernel
    sent unasked all make it unusable."""
    unread: int = getattr(stream, "_read_buffer_size", 0)  # IOStream's; no public name
    if stream.closed() or unread:
        return False
    # tornado sets it to None on close; its declared type says a socket always
    sock = cast("socket.socket | None", stream.socket)
    if sock is None:
        return False
    try:
        sock.recv(1, socket.MSG_PEEK)  # non-blocking: IOStream made it so
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


class Pool:
    """Idle connections by kernel server address; used on Jupyter Server's loop only."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._idle: OrderedDict[Key, deque[tuple[IOStream, float]]] = OrderedDict()
        self._sweeping: tuple[IOLoop, object] | None = None
        self.reused = self.opened = 0  # for status and tests

    def take(self, key: Key) -> IOStream | None:
        """An idle connection to ``key`` that is still usable, else None."""
        idle = self._idle.get(key)
        now = self._clock()
        while idle:
            stream, until = idle.pop()  # the most recently used one
            if until > now and usable(stream):
                if not idle:
                    del self._idle[key]
                self.reused += 1
                return stream
            stream.close()
        self._idle.pop(key, None)
        return None

    def give(self, key: Key, stream: IOStream, keep: float) -> None:
        """Keep ``stream`` (a whole response read from it) for ``keep`` seconds."""
        if keep <= 0 or not usable(stream):
            stream.close()
            return
        idle = self._idle.get(key)
        if idle is None:
            idle = self._idle[key] = deque()
        self._idle.move_to_end(key)
        idle.append((stream, self._clock() + keep))
        while len(idle) > IDLE_PER_KERNEL:
            idle.popleft()[0].close()
        while len(self._idle) > MAX_KERNELS:
            _, dropped = self._idle.popitem(last=False)
            for old, _ in dropped:
                old.close()
        self._schedule_sweep(keep)

    def idle(self, key: Key) -> int:
        return len(self._idle.get(key, ()))

    def drop(self, key: Key) -> None:
        """Close the idle connections to ``key`` (its server is gone or changed)."""
        for stream, _ in self._idle.pop(key, ()):
            stream.close()

    def close(self) -> None:
        for key in list(self._idle):
            self.drop(key)

    # Expired connections are closed by one timer for the whole pool, not one each.
    def _schedule_sweep(self, delay: float) -> None:
        loop = IOLoop.current()
        if self._sweeping is not None and self._sweeping[0] is loop:
            return
        self._sweeping = (loop, loop.call_later(delay, self._sweep))

    def _sweep(self) -> None:
        self._sweeping = None
        now = self._clock()
        soonest: float | None = None
        for key in list(self._idle):
            kept: deque[tuple[IOStream, float]] = deque()
            for stream, until in self._idle[key]:
                if until > now:
                    kept.append((stream, until))
                else:
                    stream.close()
            if kept:
                self._idle[key] = kept
                first = min(until for _, until in kept)
                soonest = first if soonest is None else min(soonest, first)
            else:
                del self._idle[key]
        if soonest is not None:
            self._schedule_sweep(max(0.05, soonest - now))
