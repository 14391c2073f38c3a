"""The ``mcp`` object a notebook works with: register components, start and stop serving."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from . import discovery, exposure
from ._version import __version__
from .auth.config import AuthConfig, oauth_settings
from .base import BaseMCP
from .openfiles import raise_open_file_limit
from .protocol import InlineExecutor, LoopExecutor, Server
from .protocol.confirmation import Confirmer
from .protocol.executor import Executor
from .protocol.telemetry import apply as apply_tracing
from .protocol.unattended import parse_headless
from .registry import Kind
from .transports.binding import check_address
from .transports.security import new_token as random_token
from .transports.settings import DEFAULT_MAX_BODY, Limits

if TYPE_CHECKING:  # imported by _bind: tornado loads when a server starts, not before
    from .transports.http import HttpTransport

logger = logging.getLogger(__name__)
DEFAULT_PORT = 8765
# The options of `start` that `mcp-notebook serve` pins (serve_headless).
PINNABLE = ("host", "port", "token", "auth", "name", "allow_remote_no_auth", "dispatcher", "oauth")


@dataclass(frozen=True)
class ServerInfo:
    url: str
    token: str | None
    name: str
    host: str = "127.0.0.1"  # the address it listens on (a serve option may override the cell's)
    port: int | None = None


class NotebookMCP(BaseMCP):
    """Registers tools, resources and prompts, and serves them while the notebook runs."""

    def __init__(self, name: str | None = None, *, history: int = 1000) -> None:
        super().__init__(name, history=history)
        # Filled in by the kernel extension (with ``ui`` and ``namespace``): what a
        # discovery file says about this server.
        self.kernel_id: str | None = None
        self.notebook_path: str | None = None
        self._transport: HttpTransport | None = None
        # Connection, timeout and session caps of the HTTP server (transports/limits.py),
        # read by the next start.
        self.limits = Limits()
        self._server: Server | None = None
        self._token: str | None = None
        self._oauth: AuthConfig | None = None  # the OAuth resource server's settings
        # Proves a request came through the Jupyter Server extension (transports/relayed.py):
        # in the discovery file for the relay, in no client snippet.
        self._relay_key = secrets.token_urlsafe(24)
        self._discovery_file: Path | None = None
        self._lock = threading.Lock()
        self._pinned: Mapping[str, Any] | None = None  # serve_headless
        self.registry.subscribe(self._announce)
        self.add_log_target(self._announce_log)  # mcp.log: to this kernel's clients

    # -- serving -----------------------------------------------------------------------
    def _default_name(self) -> str:
        """``--name`` else the notebook's file name."""
        return Path(self.notebook_path).stem if self.notebook_path else super()._default_name()

    @property
    def running(self) -> bool:
        """Whether the notebook is serving."""
        return self._transport is not None

    @property
    def url(self) -> str | None:
        """The endpoint clients connect to, while serving (else None)."""
        return self._transport.url if self._transport else None

    @property
    def token(self) -> str | None:
        """The bearer token clients must send, while serving; never printed into a cell."""
        return self._token if self._transport else None

    def start(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        *,
        token: str | None = None,
        auth: bool = True,
        name: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        executor: Executor | None = None,
        allow_remote_no_auth: bool = False,
        dispatcher: bool = False,
        oauth: AuthConfig | Mapping[str, Any] | None = None,
    ) -> ServerInfo:
        """Serve over Streamable HTTP on a thread of its own; user code stays on this loop.

        While serving, a new start replaces the server only once the new one listens: if
        it cannot (a busy port, a bad address), the old one keeps serving, sessions and
        all, and the error is raised. On the same port the old one must stop before the
        new one binds; if the port is taken in that moment, the old server is put back
        on it, with its settings but without its sessions (clients initialize again).
        Without ``port``, a restart keeps the current port. ``auth=False`` on an address
        other than loopback needs ``allow_remote_no_auth=True`` (:class:`UnsafeBind`).
        ``dispatcher=True`` offers every client two stable tools that list and call the
        notebook's current tools (for clients that ignore ``list_changed``).
        ``oauth``: accept the access tokens of an OAuth issuer instead of the static token
        (an ``AuthConfig``, or ``{"issuer": URL, "scopes": "a,b", ...}`` by the names of
        the ``--auth-*`` flags); docs/how-to/security-settings.md "OAuth 2.1" says more.
        Options pinned by :meth:`serve_headless` replace the ones given here.
        """
        pinned = self._pinned or {}  # mcp-notebook serve's options win over the cell's
        host = pinned.get("host", host)
        port = pinned.get("port", port)
        token = pinned.get("token", token)
        auth = pinned.get("auth", auth)
        name = pinned.get("name", name)
        allow_remote_no_auth = pinned.get("allow_remote_no_auth", allow_remote_no_auth)
        dispatcher = pinned.get("dispatcher", dispatcher)
        oauth_config = oauth_settings(pinned.get("oauth", oauth))  # AuthConfigError: bad ones
        if oauth_config is not None:
            auth = False  # no static token: the issuer's tokens are the credential
        exposure.check(host, auth or oauth_config is not None, allow_remote_no_auth)
        raise_open_file_limit()  # macOS' 256 files would cap clients before Limits does
        with self._lock:
            old = self._transport
            if old is not None and port is None:
                port = old.port  # the pasted client configs name this URL
            # Keep the token across restarts so pasted client configs stay valid.
            new_token = (token or self._token or random_token()) if auth else None
            server = self._new_server(name or self.name, executor, dispatcher)
            if old is not None and port == old.port:
                transport = self._rebind(old, server, host, max_body, new_token, oauth_config)
            else:  # may raise
                transport = self._bind(server, host, port, max_body, new_token, oauth_config)
                if old is not None:
                    self._stop_locked(handing_over=True)
            if name:
                self.name = name
            self._token, self._oauth = new_token, oauth_config
            self._serve(transport, server)
        return ServerInfo(transport.url, self._token, self.name, transport.host, transport.port)

    @property
    def headless(self) -> bool:
        """True when ``mcp-notebook serve`` runs this kernel (nobody sits at the notebook)."""
        return self._pinned is not None

    def serve_headless(self, *, confirm: str = "deny", **options: Any) -> None:
        """Run headless, with ``start``'s ``options`` pinned for the rest of this kernel's life.

        ``mcp-notebook serve`` calls it once in the fresh kernel, before the notebook's
        cells: the notebook's own ``%mcp start --port X`` then serves where the command
        line says (any of host, port, token, auth, name, allow_remote_no_auth, dispatcher
        given here wins), and nobody is asked at the notebook (:attr:`headless`): ``confirm``
        (serve's ``--confirm``) is :attr:`confirm_headless`. A second call raises: the
        notebook cannot change what the command line chose.
        """
        unknown = sorted(set(options) - set(PINNABLE))
        if unknown:
            raise TypeError(f"serve_headless: unknown options {unknown}; known: {PINNABLE}")
        if self._pinned is not None:
            raise RuntimeError("serve_headless: the options are pinned already")
        self._confirm_headless = parse_headless(confirm)
        self._pinned = MappingProxyType(dict(options))
        if self.ui is not None:  # the extension was loaded before this call
            self.ui.headless = True

    def _new_server(self, name: str, executor: Executor | None, dispatcher: bool) -> Server:
        server = Server(
            self.registry,
            name=name,
            version=__version__,
            instructions=self.instructions,
            executor=executor or self._executor(),
            calls=self.calls,
            dispatcher=dispatcher,
            tasks=self.tasks,
        )
        server.confirm = Confirmer(self).confirm
        apply_tracing(self.tracing_settings, server)
        return server

    def _serve(self, transport: HttpTransport, server: Server) -> None:
        """Make a listening transport the notebook's server, and tell the discovery folder."""
        self._transport, self._server = transport, server
        if self.ui is not None:
            self.ui.attach(server)
        previous, self._discovery_file = self._discovery_file, None
        try:
            # Written atomically over the previous server's file when the name is the same:
            # a bridge looking for this server never finds the folder without it.
            self._discovery_file = discovery.register(
                self.name,
                transport.url,
                self._token,
                kernel_id=self.kernel_id,
                notebook=self.notebook_path,
                relay_key=self._relay_key,
                max_body=transport.max_body,
                idle_timeout=transport.limits.idle_timeout,
            )
        except OSError as exc:
            logger.warning("could not write the discovery file: %s", exc)
        if previous is not None and previous != self._discovery_file:
            discovery.unregister(previous)  # renamed (--name): the old name is gone

    def _rebind(
        self,
        old: HttpTransport,
        server: Server,
        host: str,
        max_body: int,
        token: str | None,
        oauth: AuthConfig | None,
    ) -> HttpTransport:
        """Serve ``server`` on the port ``old`` listens on (lock held).

        One port cannot listen twice: stop, rebind, and put the old one back if the bind
        fails. A bad new address fails here, before anything stops (a put-back server
        starts without the old one's sessions)."""
        port = old.port
        assert port is not None  # it is listening: start() bound it
        if host != old.host:
            check_address(host)
        previous = (old.host, port, old.max_body, self._token, self._server)
        self._stop_locked(handing_over=True)
        try:
            return self._bind(server, host, port, max_body, token, oauth)
        except BaseException:  # a bad address, a port taken in between
            self._restore(*previous)
            raise

    def _restore(
        self, host: str, port: int, max_body: int, token: str | None, old: Server | None
    ) -> None:
        """Serve again where the stopped server was (a failed restart on its port).

        Whatever goes wrong here is logged: the caller raises the error of the restart."""
        executor, dispatcher = (
            (old.executor, old.dispatcher_tools_for_all) if old is not None else (None, False)
        )
        server = self._new_server(self.name, executor, dispatcher)
        try:
            transport = self._bind(server, host, port, max_body, token, self._oauth)
        except Exception as exc:
            logger.warning("could not serve again at %s:%s: %s", host, port, exc)
            discovery.unregister(self._discovery_file)  # nothing serves there any more
            self._discovery_file = None
            return
        self._serve(transport, server)

    def _bind(
        self,
        server: Server,
        host: str,
        port: int | None,
        max_body: int,
        token: str | None,
        oauth: AuthConfig | None = None,
    ) -> HttpTransport:
        from .transports.http import HttpTransport  # tornado: only once a server starts

        candidates = [port] if port is not None else [DEFAULT_PORT, 0]
        for index, candidate in enumerate(candidates):
            transport = HttpTransport(
                server,
                host=host,
                port=candidate,
                token=token,
                max_body=max_body,
                limits=self.limits,
                relay_key=self._relay_key,
                exclusive=port is None and candidate == DEFAULT_PORT,  # shared with other apps
                auth=oauth,
            )
            try:
                transport.start()
                return transport
            except OSError:
                if index == len(candidates) - 1:
                    raise
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stop serving and close the port; what is registered stays."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self, *, handing_over: bool = False) -> None:
        """Stop serving; when another server takes over, its discovery file replaces ours."""
        transport, self._transport, self._server = self._transport, None, None
        if not handing_over:
            discovery.unregister(self._discovery_file)
            self._discovery_file = None
        if transport is not None:
            transport.stop()

    @property
    def oauth_issuer(self) -> str | None:
        """The issuer whose access tokens the running server takes (None: no OAuth)."""
        oauth = self._oauth
        return oauth.issuer if oauth is not None and self._transport is not None else None

    def status(self) -> dict[str, Any]:
        """The server's state (URL, authentication, sessions) and what is registered."""
        transport = self._transport
        return {
            "running": transport is not None,
            "url": transport.url if transport else None,
            "auth": bool(self._token) if transport else None,
            "oauth": self.oauth_issuer,
            "dispatcher": self._server.dispatcher_tools_for_all if self._server else None,
            "sessions": len(transport.sessions) if transport else 0,
            **{k: v for k, v in super().status().items() if k not in ("running", "url")},
        }

    # -- the notebook UI: confirmations and the monitor --------------------------------
    def _check_headless_change(self) -> None:
        if self._pinned is not None:  # the notebook cannot overrule `serve --confirm`
            raise RuntimeError("mcp-notebook serve --confirm chose it for this kernel")

    def monitor(self) -> Any:
        """A live monitor widget of calls and confirmations; show as many as you like."""
        if self.ui is None:
            raise RuntimeError("the monitor needs the notebook: %load_ext mcp_notebook")
        return self.ui.monitor()

    def _executor(self) -> Executor:
        # In a kernel, each call runs in its own context and its output goes to its record.
        return self.ui.executor() if self.ui is not None else _current_executor()

    def _announce(self, kind: Kind, detail: str | None) -> None:
        transport, server = self._transport, self._server
        if transport is None or server is None:
            return
        if kind == "updated":
            transport.call_soon(server.resource_updated, detail)
        else:
            transport.call_soon(server.list_changed, kind)

    def _announce_log(self, level: str, data: Any, logger: str | None) -> None:
        transport, server = self._transport, self._server
        if transport is not None and server is not None:
            transport.call_soon(server.log, level, data, logger)

    def __repr__(self) -> str:
        state = f"serving {self.url}" if self.running else "not serving"
        return f"{super().__repr__()[:-1]}; {state}>"


def _current_executor() -> Executor:
    """The running loop of the calling thread (the kernel's) if there is one."""
    try:
        return LoopExecutor(asyncio.get_running_loop())
    except RuntimeError:
        return InlineExecutor()


mcp = NotebookMCP()
