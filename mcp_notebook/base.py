"""The kernel-free ``mcp`` object: what is registered, the calls, and who is asked first.

:class:`BaseMCP` is all an exported notebook's ``mcp`` is (export/runtime.py serves it over
stdio or ASGI); the notebook's :class:`~mcp_notebook.app.NotebookMCP` adds serving from a
kernel (tornado, discovery files, the notebook UI). Imports nothing of the kernel, the UI
or tornado: it is part of the runtime distribution (export/runtime_modules.py).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .protocol import CallLog
from .protocol.confirmation import Policy, needs_confirmation, parse_policy
from .protocol.session import LOG_LEVELS
from .protocol.tasks import TaskStore
from .protocol.telemetry import TracingSettings, apply
from .protocol.unattended import parse_headless
from .registration import Registrations
from .registry import Registry, Tool
from .skills import SkillRegistrations

# Sends a log message to the clients of one server: (level, data, logger name).
LogTarget = Callable[[str, Any, "str | None"], None]


class BaseMCP(Registrations, SkillRegistrations):
    """Registers tools, resources and prompts; whoever serves it reads :attr:`registry`."""

    def __init__(self, name: str | None = None, *, history: int = 1000) -> None:
        self.registry = Registry()
        self.calls = CallLog(maxlen=history)  # the last `history` calls: mcp.calls.maxlen
        # Tool calls answered with a task handle; kept across server stops, not restarts.
        self.tasks = TaskStore()
        self._name = name
        self.instructions: str | None = None
        # Which tools ask the person at the notebook before they run (protocol/confirmation.py), and
        # how many seconds a question waits before the call is denied.
        self._confirm_policy: Policy = "marked"
        self._confirm_timeout = 120.0
        # What a tool that asks first does when no person's front end is attached: "deny",
        # "elicit" (the client's user is asked) or "allow" (confirmation.HEADLESS).
        self._confirm_headless = "deny"
        # The notebook UI (output capture, monitors, prompts); None without a kernel.
        self.ui: Any = None
        # The variables that mcp.resource(var=...) reads: the notebook's, or the module's.
        self.namespace: dict[str, Any] | None = None
        self.watched: dict[str, str] = {}  # variable -> URI of the resource that serves it
        # mcp.skill(path=...): each folder as written -> where it led (an export copies
        # those); in an exported package, each as written -> the package's copy.
        self.skill_folders_read: dict[str, str] = {}
        self.skill_folder_copies: dict[str, Path] = {}
        self._log_targets: list[LogTarget] = []
        self._log_lock = threading.Lock()
        self._serving_url: str | None = None  # set by whoever serves it over HTTP
        # OpenTelemetry traces of the requests (protocol/telemetry.py): env, or mcp.tracing().
        self.tracing_settings = TracingSettings()

    def tracing(
        self, on: bool = True, *, tracer_provider: Any = None, meter_provider: Any = None
    ) -> None:
        """Trace every MCP request with OpenTelemetry from the next server on (the one
        running, too): ``tracer_provider`` / ``meter_provider`` default to the global
        ones. ``on=False`` leaves the next servers untraced (a traced one stays so)."""
        self.tracing_settings = TracingSettings(on, tracer_provider, meter_provider)
        server = getattr(self, "_server", None)
        if server is not None:
            apply(self.tracing_settings, server)

    @property
    def running(self) -> bool:
        """Whether it is serving over HTTP."""
        return self.url is not None

    @property
    def url(self) -> str | None:
        """The endpoint clients connect to, while serving over HTTP (else None)."""
        return self._serving_url

    def status(self) -> dict[str, Any]:
        """Whether and where it serves over HTTP, and what is registered."""
        return {
            "running": self.running,
            "url": self.url,
            "tools": list(self.registry.tools),
            "resources": [r.uri for r in self.registry.resources.values()],
            "resource_templates": list(self.registry.templates),
            "prompts": list(self.registry.prompts),
        }

    @property
    def name(self) -> str:
        """The server's name, shown to clients."""
        return self._name or self._default_name()

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value

    def _default_name(self) -> str:
        return "mcp-notebook"

    # -- confirmations -----------------------------------------------------------------
    @property
    def confirm_policy(self) -> Policy:
        """Which tools ask the person at the notebook before they run.

        "marked" (the ``confirm=True`` ones), "all", "none", "destructive" (those whose
        ``destructiveHint`` is true, and the marked ones) or a tuple of tool names (and the
        marked ones); ``%mcp confirm`` sets it.
        """
        return self._confirm_policy

    @confirm_policy.setter
    def confirm_policy(self, value: str | tuple[str, ...] | list[str]) -> None:
        self._confirm_policy = parse_policy(value)

    @property
    def confirm_timeout(self) -> float:
        """How many seconds a confirmation waits for Approve / Deny before the call is
        denied; ``%mcp confirm --timeout`` sets it."""
        return self._confirm_timeout

    @confirm_timeout.setter
    def confirm_timeout(self, value: float) -> None:
        # Checked here: a bad value would only show when a call waits (and then deny it).
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"confirm_timeout must be a number of seconds, not {value!r}")
        if not 0 < value < math.inf:
            raise ValueError(
                f"confirm_timeout must be a positive, finite number of seconds, not {value!r}"
            )
        self._confirm_timeout = float(value)

    @property
    def confirm_headless(self) -> str:
        """What a tool that asks first does with no notebook front end: "deny" (refused),
        "elicit" (the client's user is asked) or "allow" (runs unasked)."""
        return self._confirm_headless

    @confirm_headless.setter
    def confirm_headless(self, value: str) -> None:
        self._check_headless_change()
        self._confirm_headless = parse_headless(value)

    def _check_headless_change(self) -> None:
        """Raises when :attr:`confirm_headless` may not change (serve pinned it)."""

    def needs_confirmation(self, tool: Tool | str) -> bool:
        """Whether a call of ``tool`` (a Tool or its name) waits for Approve / Deny."""
        if isinstance(tool, str):
            tool = self.registry.tools[tool]
        return needs_confirmation(self._confirm_policy, tool)

    # -- logging to clients ------------------------------------------------------------
    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message (``notifications/message``) to every connected client that
        listens at ``level`` ("debug" ... "emergency"); nothing when not serving."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LOG_LEVELS)}")
        with self._log_lock:
            targets = list(self._log_targets)
        for send in targets:
            send(level, data, logger)

    def add_log_target(self, send: LogTarget) -> Callable[[], None]:
        """Let :meth:`log` reach one more server's clients; returns the undo (a server
        that stops). ``send`` is called on the logging thread: it hands over to its loop."""
        with self._log_lock:
            self._log_targets.append(send)

        def remove() -> None:
            with self._log_lock:
                if send in self._log_targets:
                    self._log_targets.remove(send)

        return remove

    def __repr__(self) -> str:
        counts = (
            f"{len(self.registry.tools)} tools, {len(self.registry.resources)} resources, "
            f"{len(self.registry.templates)} templates, {len(self.registry.prompts)} prompts"
        )
        return f"<mcp {self.name!r}: {counts}>"
