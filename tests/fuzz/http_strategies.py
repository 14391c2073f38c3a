"""Hypothesis strategies for fuzzing the HTTP endpoint: structured, then mutated.

Requests are drawn from the official ``schema.json`` of each revision (method names and
the shape of their params, ``$ref`` and all), filled with the names the fuzzed notebook
registers so that real paths run, and then bent: wrong types, missing and extra fields,
odd ids, deep nesting, huge numbers, NaN tokens, invalid UTF-8, truncation, and odd
values for every header the endpoint reads.

A case is an :class:`HttpCase`: method, headers and body bytes, plus what the reply must
echo. Cases never ask for something that stays open by design (a GET stream, a listen
stream, an NDJSON dialect session after a full handshake): those would wait for events.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

SPEC = Path(__file__).parents[1] / "spec"
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", HANDSHAKE, MODERN]
# Methods whose valid form opens a stream that lasts until the client hangs up.
STAYS_OPEN = {"subscriptions/listen"}

# What the fuzzed notebook registers (see SETUP in test_http_fuzz.py).
TOOLS = ["add", "echo", "mean", "where", "noisy", "fails"]
ARGUMENT_NAMES = ["a", "b", "text", "times", "tags", "flag", "values", "region"]
URIS = ["text://notes", "notes://monday", "notes://..%2Fsecret", "notes://", "nope://x"]
PROMPTS = ["summarize", "nope"]
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_LEVEL = "io.modelcontextprotocol/logLevel"


@dataclass
class HttpCase:
    method: str
    headers: dict[str, str]
    body: bytes
    era: str
    # The id a reply must carry (a request with a readable id), else None.
    request_id: Any = None
    notes: list[str] = field(default_factory=list)


# -- the schema ----------------------------------------------------------------------------
@cache
def schema(version: str) -> dict[str, Any]:
    return json.loads((SPEC / f"{version}.schema.json").read_text())


@cache
def request_params(version: str) -> dict[str, dict[str, Any]]:
    """method -> params schema, for every ClientRequest and ClientNotification."""
    defs = schema(version)["$defs"]
    found: dict[str, dict[str, Any]] = {}
    for union in ("ClientRequest", "ClientNotification"):
        for ref in defs.get(union, {}).get("anyOf", ()):
            definition = defs[ref["$ref"].split("/")[-1]]
            method = definition["properties"]["method"]["const"]
            found[method] = definition["properties"].get("params") or {}
    return found


def _resolve(version: str, node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema(version)["$defs"][node["$ref"].split("/")[-1]]
    return node


# -- JSON values ---------------------------------------------------------------------------
text = st.text(max_size=12)
odd_text = st.one_of(
    text,
    st.sampled_from(["", "../", "%2F..", "\u0000", "é", "\ud7ff", "\u202e", "NaN", "x" * 300]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    odd_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)
request_ids = st.one_of(
    st.integers(-(2**63), 2**63),
    st.text(max_size=10),
    st.sampled_from([None, True, 1.5, [1], {"a": 1}, "", 0, -1]),
)


def _hinted(name: str, version: str) -> st.SearchStrategy[Any] | None:
    """Values for fields whose good values are few: they reach the real code paths."""
    hints: dict[str, st.SearchStrategy[Any]] = {
        "name": st.sampled_from(TOOLS + PROMPTS),
        "uri": st.sampled_from(URIS),
        "level": st.sampled_from(LOG_LEVELS),
        "protocolVersion": st.sampled_from(VERSIONS),
        "requestId": request_ids,
        "cursor": st.one_of(st.text(max_size=20), st.just("eyJrIjoidG9vbHMiLCJvIjoxfQ")),
        "arguments": st.dictionaries(st.sampled_from(ARGUMENT_NAMES), json_values, max_size=4),
        "requestState": st.one_of(st.text(max_size=20), st.just("é.é")),
    }
    return hints.get(name)


def _field(key: str, node: dict[str, Any], version: str, depth: int) -> st.SearchStrategy[Any]:
    hinted = _hinted(key, version)
    return hinted if hinted is not None else from_schema(version, node, depth + 1)


def from_schema(version: str, node: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that fit ``node`` (loosely: enough to pass the server's own checks)."""
    node = _resolve(version, node)
    if depth > 4:
        return scalars
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node or "oneOf" in node:
        return st.one_of(
            [from_schema(version, n, depth + 1) for n in node.get("anyOf") or node["oneOf"]]
        )
    kind = node.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object" or "properties" in node:
        properties = node.get("properties") or {}
        required = set(node.get("required") or ())
        fields = {
            key: _field(key, sub, version, depth)
            for key, sub in properties.items()
            if key != "_meta"
        }
        return st.fixed_dictionaries(
            {k: v for k, v in fields.items() if k in required},
            optional={k: v for k, v in fields.items() if k not in required},
        )
    if kind == "array":
        return st.lists(from_schema(version, node.get("items") or {}, depth + 1), max_size=3)
    if kind == "string":
        return odd_text
    if kind == "integer":
        return st.integers(-(2**40), 2**40)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    return json_values


# -- messages and their mutations ----------------------------------------------------------
# Strategies are built once: building them per example costs more than the requests.
@cache
def _params(version: str, method: str) -> st.SearchStrategy[Any]:
    return from_schema(version, request_params(version)[method])


message_ids = st.one_of(st.integers(0, 2**31), st.text(min_size=1, max_size=8))


@cache
def messages(version: str) -> st.SearchStrategy[dict[str, Any]]:
    """A client message of ``version``: a request (or a notification) with schema params."""
    methods = sorted(m for m in request_params(version) if m not in STAYS_OPEN)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        method = draw(st.sampled_from(methods))
        params = draw(_params(version, method))
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if not method.startswith("notifications/"):
            message["id"] = draw(message_ids)
        if params or draw(st.booleans()):
            message["params"] = params
        return message

    return build()


PARAM_KEYS = st.sampled_from(["name", "uri", "arguments", "cursor", "level", "requestId", "ref"])
BAD_JSONRPC = st.sampled_from(["1.0", 2, None, "2.0 "])
BAD_METHODS = st.one_of(st.none(), st.integers(), odd_text)
BAD_PARAMS = st.one_of(json_values, st.just([1, 2]))
TOP_KEYS = st.sampled_from(["id", "jsonrpc", "method", "params"])


@st.composite
def mutate(draw: st.DrawFn, message: dict[str, Any]) -> Any:
    """The message, or one bent the way a careless or hostile client bends it."""
    kind = draw(st.integers(0, 10))
    if kind <= 2:
        return message
    if kind == 3:
        return {**message, "id": draw(request_ids)}
    if kind == 4:
        return {**message, "jsonrpc": draw(BAD_JSONRPC)}
    if kind == 5:
        return {**message, "method": draw(BAD_METHODS)}
    if kind == 6:
        return {**message, "params": draw(BAD_PARAMS)}
    if kind == 7:
        params = message.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        params[draw(PARAM_KEYS)] = draw(json_values)
        return {**message, "params": params}
    if kind == 8:
        key = draw(TOP_KEYS)
        return {k: v for k, v in message.items() if k != key}
    if kind == 9:
        return [message, message]
    return []


def deep(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


JUNK = st.sampled_from([b"\xff", b"\xc3", b"}", b" \n", b"x"])
ODD_BODIES = st.sampled_from([b"NaN", b"[Infinity]", b'{"a":-Infinity}', b"", b"null", b"\xef{}"])
RAW_TOKENS = st.sampled_from(["NaN", "Infinity", "1" + "0" * 5000, "1e999", "-0", "deep"])
DEPTHS = st.sampled_from([100, 128, 129, 900, 990, 20_000])


@st.composite
def encode(draw: st.DrawFn, value: Any) -> bytes:
    """The body: the value's JSON, or its bytes bent (raw text tricks JSON cannot express)."""
    text = json.dumps(value, allow_nan=True)
    data = text.encode()
    kind = draw(st.integers(0, 8))
    if kind <= 2:
        return data
    if kind == 3:
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    if kind == 4:
        return data + draw(JUNK)
    if kind == 5:
        position = draw(st.integers(0, len(data)))
        return data[:position] + b"\xff\xfe" + data[position:]
    if kind == 6:
        return draw(ODD_BODIES)
    if kind == 7:
        token = draw(RAW_TOKENS)
        raw = deep(draw(DEPTHS)) if token == "deep" else token
        return _in_params(text, raw).encode()
    return deep(draw(DEPTHS)).encode()


def _in_params(text: str, raw: str) -> str:
    """Put a raw JSON token where a value goes (a member of its own, so that no duplicate
    key hides it from the decoder), whatever the message is."""
    if text.startswith("{") and len(text) > 2:
        return '{"x-raw":' + raw + "," + text[1:]
    return '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + raw + "}}"


# -- headers -------------------------------------------------------------------------------
header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=20
)
ACCEPTS = [
    "application/json, text/event-stream",
    "application/json",
    "text/event-stream",
    "*/*",
    "text/html",
    "application/x-ndjson",
    "",
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-ndjson",
    "",
]


def readable_id(message: Any) -> Any:
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return request_id


def is_finite_json(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(is_finite_json(v) for v in value.values())
    if isinstance(value, list):
        return all(is_finite_json(v) for v in value)
    return True


# -- cases, era by era ---------------------------------------------------------------------
SEED_METHODS = ["initialize", "mcp/listTools", "mcp/listResources", "mcp/listPrompts"]
SEED_ALL = [*SEED_METHODS, "mcp/executeTool", "initialized", "$/x"]
SEED_TOOL_IDS = ["mcp://mcp-notebook/tools/add:v1", "mcp://mcp-notebook/tools/echo:v1", "x"]
OTHER_METHODS = ["GET", "GET", "DELETE", "PUT", "OPTIONS", "PATCH", "HEAD"]
EVENT_IDS = ["g." + "9" * 5000, "zz.1", "g.\u00b2", "p999999.1", "x", "g"]
_KINDS = st.integers(0, 4)
_SMALL = st.integers(0, 20)
_PROGRESS = st.one_of(st.integers(), st.text(max_size=5))
_SEED_IDS = st.one_of(st.integers(1, 99), st.text(min_size=1, max_size=4))
_SEED_ARGUMENTS = st.dictionaries(st.sampled_from(ARGUMENT_NAMES), json_values, max_size=3)
_SEED_COUNT = st.integers(1, 3)


@cache
def _index(size: int) -> st.SearchStrategy[int]:
    return st.integers(0, size - 1)


def pick(draw: st.DrawFn, options: list[Any]) -> Any:
    return options[draw(_index(len(options)))]


def bent(draw: st.DrawFn, good: Any) -> Any:
    """A header's (or field's) good value most of the time; else absent, or anything."""
    kind = draw(_KINDS)
    return good if kind <= 2 else None if kind == 3 else draw(header_text)


def _headers(**values: str | None) -> dict[str, str]:
    return {name.replace("_", "-"): v for name, v in values.items() if v is not None}


@st.composite
def handshake_cases(draw: st.DrawFn, session: str, token: str) -> HttpCase:
    """A POST of a handshake-era message inside ``session`` (mostly), bent."""
    message = draw(messages(HANDSHAKE))
    body = draw(encode(draw(mutate(message))))
    auth = f"Bearer {token}"
    headers = _headers(
        Authorization=bent(draw, auth) if draw(_SMALL) == 0 else auth,
        Accept=bent(draw, pick(draw, ACCEPTS)),
        Content_Type=bent(draw, pick(draw, CONTENT_TYPES[:3])),
        Mcp_Session_Id=bent(draw, session),
        MCP_Protocol_Version=bent(draw, pick(draw, VERSIONS[:4])) if draw(_KINDS) else None,
        Last_Event_ID=draw(header_text) if draw(_SMALL) == 0 else None,
    )
    return HttpCase("POST", headers, body, "handshake")


@st.composite
def modern_cases(draw: st.DrawFn, token: str) -> HttpCase:
    """A self-contained 2026-07-28 POST: _meta in the body, the headers that mirror it."""
    message = draw(messages(MODERN))
    meta: dict[str, Any] = {META_VERSION: bent(draw, MODERN), META_CAPS: bent(draw, {})}
    if draw(_KINDS):
        meta[META_INFO] = {"name": "fuzz", "version": "1"}
    if draw(_KINDS) == 0:
        meta[META_LEVEL] = pick(draw, LOG_LEVELS)
    if draw(_KINDS) == 0:
        meta["progressToken"] = draw(_PROGRESS)
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    message["params"] = {**params, "_meta": {k: v for k, v in meta.items() if v is not None}}
    name = params.get("name", params.get("uri"))
    arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    region = arguments.get("region")
    body = draw(encode(draw(mutate(message))))
    headers = _headers(
        Authorization=f"Bearer {token}",
        Accept=bent(draw, pick(draw, ACCEPTS[:4])),
        Content_Type=bent(draw, "application/json"),
        MCP_Protocol_Version=bent(draw, MODERN),
        Mcp_Method=bent(draw, str(message.get("method"))),
        Mcp_Name=bent(draw, name if isinstance(name, str) and name.isascii() else "x"),
        Mcp_Param_Region=bent(draw, region if isinstance(region, str) else "eu")
        if draw(_KINDS) == 0 or region is not None
        else None,
    )
    return HttpCase("POST", headers, body, "modern")


@st.composite
def seed_messages(draw: st.DrawFn) -> Any:
    method = pick(draw, SEED_ALL)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if method != "initialized":
        message["id"] = draw(_SEED_IDS)
    if method == "initialize":
        message["params"] = {"clientCapabilities": bent(draw, {})}
    elif method == "mcp/executeTool":
        message["params"] = {
            "id": bent(draw, pick(draw, SEED_TOOL_IDS)),
            "arguments": draw(_SEED_ARGUMENTS),
        }
    return draw(mutate(message))


@st.composite
def seed_cases(draw: st.DrawFn, token: str) -> HttpCase:
    """The seed-000 dialect: one POST is one dialect session (single, batch or NDJSON)."""
    items = [draw(seed_messages()) for _ in range(draw(_SEED_COUNT))]
    shape = pick(draw, ["single", "batch", "lines"])
    if shape == "single":
        body = draw(encode(items[0]))
    elif shape == "batch":
        body = json.dumps(items).encode()
    else:
        body = b"\n".join(json.dumps(i).encode() for i in items)
    accept = pick(draw, ["application/json", "*/*", "application/x-ndjson"])
    if b'"initialized"' in body and "ndjson" in accept:
        accept = "application/json"  # an NDJSON dialect session would stay open for events
    headers = _headers(
        Authorization=f"Bearer {token}",
        Accept=accept,
        Content_Type=pick(draw, ["application/json", "application/x-ndjson"]),
    )
    return HttpCase("POST", headers, body, "seed")


@st.composite
def other_cases(draw: st.DrawFn, session: str, token: str) -> HttpCase:
    """GET (never a stream that stays open), DELETE (never of ``session``), and others.

    Every GET names a ``Last-Event-ID`` that is no live stream's (or is not one at all),
    so none of them opens a stream that would wait for events."""
    method = pick(draw, OTHER_METHODS)
    other_session = bent(draw, "no-such-session")
    keep = method != "DELETE" and draw(_KINDS) <= 2
    event_id = pick(draw, EVENT_IDS) if draw(_KINDS) else "q" + draw(header_text)
    headers = _headers(
        Authorization=f"Bearer {token}",
        Accept=bent(draw, "text/event-stream"),
        Mcp_Session_Id=session if keep else other_session,
        MCP_Protocol_Version=bent(draw, pick(draw, VERSIONS)) if draw(_KINDS) == 0 else None,
        Last_Event_ID=event_id,
    )
    body = pick(draw, [b"", b"{}", b"\xff"])
    return HttpCase(method, headers, body, "other")
