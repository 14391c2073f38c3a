"""Sans-IO MCP protocol core: JSON-RPC messages, lifecycle and methods over a Registry."""

from .calls import CallLog, CallRecord
from .executor import Executor, InlineExecutor, LoopExecutor
from .jsonrpc import RpcError
from .request import ReplyChannel, RequestContext
from .server import Server
from .session import Session

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
