"""2026-07-28 Streamable HTTP: the headers that must agree with the JSON-RPC body.

``Mcp-Method`` names the method, ``Mcp-Name`` the tool / prompt / resource, and a tool
argument whose schema says ``"x-mcp-header": "Region"`` is mirrored in ``Mcp-Param-Region``
(verbatim, or ``=?base64?...?=`` for values a header cannot carry). Proxies route and
authorize on these headers, so a request whose headers disagree with its body is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# One rendering of a mirrored value for the server and the bridge (protocol/mirror.py).
from ..protocol.mirror import decode_value, header_matches
from ..protocol.names import (
    HEADER_ANNOTATION,
    METHOD_HEADER,
    NAME_FIELDS,
    NAME_HEADER,
    PARAM_HEADER_PREFIX,
)

NAME_PARAMS = NAME_FIELDS


def mismatch(
    message: dict[str, Any],
    headers: Mapping[str, str],
    tools: Mapping[str, Any],
    serves: Callable[[str], bool] = lambda method: True,
) -> str | None:
    """Why the headers disagree with the body, or None when they agree. ``Mcp-Name`` is
    checked only for methods the server ``serves``: another is "method not found"."""
    method = message["method"]
    sent = headers.get(METHOD_HEADER)
    if sent is None:
        return f"the {METHOD_HEADER} header is missing (the method is {method!r})"
    if sent.strip() != method:
        return f"{METHOD_HEADER} header {sent!r} does not match the method {method!r}"
    params = given if isinstance(given := message.get("params"), dict) else {}
    key = NAME_PARAMS.get(method)
    if key is not None and serves(method):
        sent = headers.get(NAME_HEADER)
        if sent is None:
            return f"the {NAME_HEADER} header is missing (params.{key} is {params.get(key)!r})"
        # A name a header cannot carry verbatim (e.g. non-ASCII) comes base64-encoded.
        if decode_value(sent.strip()) != params.get(key):
            return f"{NAME_HEADER} header {sent!r} does not match params.{key} {params.get(key)!r}"
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments")
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is not None and isinstance(arguments, dict | None):
            return _parameter_mismatch(tool.input_schema or {}, arguments or {}, headers)
    return None


def mirrored_parameters(schema: dict[str, Any]) -> dict[str, str]:
    """Argument name -> header suffix, for arguments annotated with ``x-mcp-header``."""
    properties = given if isinstance(given := schema.get("properties"), dict) else {}
    return {
        name: spec[HEADER_ANNOTATION]
        for name, spec in properties.items()
        if isinstance(spec, dict) and isinstance(spec.get(HEADER_ANNOTATION), str)
    }


def _parameter_mismatch(
    schema: dict[str, Any], arguments: dict[str, Any], headers: Mapping[str, str]
) -> str | None:
    for argument, suffix in mirrored_parameters(schema).items():
        header = PARAM_HEADER_PREFIX + suffix
        sent = headers.get(header)
        if arguments.get(argument) is None:  # absent or null: the client sends no header
            if sent is not None:
                return f"{header} is set but argument {argument!r} is not"
            continue
        if sent is None:
            return f"argument {argument!r} must be mirrored in the {header} header"
        decoded = decode_value(sent.strip())
        if decoded is None:
            return f"{header} is not valid base64"
        if not header_matches(decoded, arguments[argument]):
            return f"{header} does not match argument {argument!r}"
    return None


__all__ = ["decode_value", "mirrored_parameters", "mismatch"]
