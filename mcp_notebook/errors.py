"""The one base class of the package's exceptions.

Every exception mcp_notebook defines derives from :class:`McpNotebookError` and keeps its
standard base, so ``except McpNotebookError`` catches all of ours and the existing
``except ValueError`` / ``LookupError`` / ... clauses keep working::

    McpNotebookError
    ├── ArgumentError (ValueError)           registry: arguments that do not fit a signature
    ├── NotJsonError (ValueError)            registry: a result JSON cannot carry
    ├── JsonTextError (ValueError)           wire: text that is not JSON by our policy
    ├── FramingError (ValueError)            wire: bytes that are not a message
    │   ├── JsonError, FrameRefused
    ├── RpcError                             protocol: becomes a JSON-RPC error reply
    │   ├── SeedError, MissingCapabilityError
    ├── CapabilityError (RuntimeError)       the client lacks what a tool asks of it
    ├── ClientUnavailable (RuntimeError), Declined, Interrupted    protocol
    ├── InvalidAnnotation (ValueError)       protocol: an x-mcp-header that breaks the rules
    ├── BadEventId (ValueError)              transports: a Last-Event-ID we did not issue
    ├── LinkDown, LinkLost (ConnectionError), Unreachable     bridge
    ├── NotFound (LookupError)               discovery: no running notebook server matches
    ├── UnsafeFolder (PermissionError), NotOurs (OSError)    ownerfolder: not the user's own
    ├── UnsafeBind (ValueError)              exposure: a bind address others can reach
    ├── UpstreamError (ConnectionError)      serverext: the kernel's endpoint is unreachable
    ├── AuthConfigError (ValueError)         auth: OAuth settings that cannot work
    ├── TokenRefused (ValueError), UnknownKey    auth: an access token this server refuses
    ├── FetchError, KeysUnavailable, IntrospectionUnavailable (RuntimeError)    auth: issuer away
    └── NotebookError (RuntimeError)         headless: the served notebook failed

This module imports nothing, so that every layer (wire/ at the bottom) can use it.
"""


class McpNotebookError(Exception):
    """Base class of every exception mcp_notebook raises or defines."""
