"""The stdio bridge: MCP over stdin/stdout, relayed to a notebook's HTTP endpoint.

Modules: ``relay`` (the entry point, standard MCP), ``dialects`` (plug-ins: ``seed_dialect``
and ``seed_relay``, seed 000's), ``modern`` and ``headers`` (2026-07-28 requests), ``upstream`` (the
session with the notebook), ``link`` and ``sse`` (HTTP), ``channel`` (stdio framing),
``workers``.
"""

from __future__ import annotations

from ..stdoutclaim import protocol_stdout
from .relay import Bridge
from .upstream import Target

__all__ = ["Bridge", "Target", "protocol_stdout"]
