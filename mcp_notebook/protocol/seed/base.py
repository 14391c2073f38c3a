"""What every part of a seed session shares: the standard side and background work.

:class:`SeedBase` holds the calls to the standard server and the state the tools,
resources and prompts parts read; :class:`~.session.SeedSession` puts them together.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .. import jsonrpc
from ..jsonrpc import Message, RpcError
from .naming import mcp_id

logger = logging.getLogger("mcp_notebook.protocol.seed")

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
NotifyStandard = Callable[[str, dict[str, Any]], Awaitable[None]]
NotifyOut = Callable[[Message], object]

MAX_PAGES = 1000
READ_CONCURRENCY = 8  # resource reads / prompt renders in flight while listing


class SeedBase:
    call: Call
    notify_out: NotifyOut | None
    max_inline_bytes: int
    _server: str | None
    _standard_caps: dict[str, Any]
    _tasks: set[asyncio.Task[Any]]

    @property
    def initialized(self) -> bool:
        raise NotImplementedError

    def _mcp_id(self, kind: str, name: str) -> str:
        return mcp_id(self._server, kind, name)

    async def _list_all(self, kind: str) -> list[dict[str, Any]]:
        """Every item of a standard ``<kind>/list``, all pages; [] when it is not served."""
        if kind not in self._standard_caps:
            return []
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        for _ in range(MAX_PAGES):
            page = await self.call(f"{kind}/list", params)
            items.extend(item for item in page.get(kind) or [] if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor == params.get("cursor"):
                break
            params = {"cursor": cursor}
        return items

    def _emit(self, method: str, params: dict[str, Any]) -> None:
        if self.notify_out is not None and self.initialized:
            self.notify_out(jsonrpc.notification(method, params))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @staticmethod
    async def _logged(work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except RpcError as error:
            logger.warning("seed dialect: background request failed: %s", error.message)
        except Exception:
            logger.exception("seed dialect: background work failed")
