"""Sans-IO MCP protocol core: JSON-RPC messages, lifecycle and methods over a Registry.

The names below are imported when first used: the stdio bridge reads ``jsonrpc`` or
``lifecycle`` without paying for the server and its registry (pydantic) at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import lazy

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
    return lazy.load(globals(), _WHERE, name)


def __dir__() -> list[str]:
    return lazy.names(globals())
