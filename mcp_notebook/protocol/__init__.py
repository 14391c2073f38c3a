"""Sans-IO MCP protocol core: JSON-RPC messages, lifecycle and methods over a Registry.

The names below are imported when first used: the stdio bridge reads ``jsonrpc`` or
``lifecycle`` without paying for the server and its registry (pydantic) at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .calls import CallLog, CallRecord
    from .executor import Executor, InlineExecutor, LoopExecutor
    from .jsonrpc import RpcError
    from .request import ReplyChannel, RequestContext
    from .server import Server
    from .session import Session

_WHERE = {
    "CallLog": ".calls",
    "CallRecord": ".calls",
    "Executor": ".executor",
    "InlineExecutor": ".executor",
    "LoopExecutor": ".executor",
    "ReplyChannel": ".request",
    "RequestContext": ".request",
    "RpcError": ".jsonrpc",
    "Server": ".server",
    "Session": ".session",
}

__all__ = [
    "CallLog",
    "CallRecord",
    "Executor",
    "InlineExecutor",
    "LoopExecutor",
    "ReplyChannel",
    "RequestContext",
    "RpcError",
    "Server",
    "Session",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
