"""Fuzzing a long-lived stdio server: structured cases from the MCP schemas, and junk.

A *case* is one frame (or one line) of bytes and what its answer must be, known before it
is sent: a request with a readable id (a string or an integer, as MCP allows) is owed
exactly one reply with that id; a response, a notification, or anything whose id cannot
be read is owed none (an error without an id may come). Cases come from the method names
and params shapes of ``tests/spec/*.schema.json``, then mutated (wrong types, missing
fields, odd ids, deep nesting, huge numbers, NaN tokens, invalid UTF-8, cut frames), and
from random bytes. The expectation is computed from the final bytes by an independent
strict decoder, never by the code under test.

Each hypothesis example is a batch of cases, written in random pieces, then a sentinel
request; once the sentinel and every owed reply are in, the batch is checked: every frame
the server wrote is strict JSON (no NaN/Infinity tokens, UTF-8) and valid JSON-RPC 2.0, no
id was answered twice or was never sent, and the server is alive. The number of cases per
transport is ``MCP_NOTEBOOK_FUZZ_EXAMPLES`` (default 20,000).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.stdio import FramedStdio, encode_frame

CASES = int(os.environ.get("MCP_NOTEBOOK_FUZZ_EXAMPLES", "20000"))
BATCH = 50  # cases per hypothesis example: one write, one sentinel, one check
SETTINGS = settings(
    max_examples=max(1, -(-CASES // BATCH)),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
WAIT = 30.0  # seconds for a batch's replies (they take milliseconds): a hang fails fast
# The whole fuzz of one transport (pytest-timeout's default of 300 s is per test).
TIMEOUT = max(300, CASES // 20)
SPEC = Path(__file__).resolve().parents[1] / "spec"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
}
# Requests that legitimately stay open (a stream answered only when it ends).
NEVER_ANSWERED = {"subscriptions/listen"}


# -- what the client may read back ---------------------------------------------------------


MAX_DEPTH = 128  # the nesting the server reads (wire/jsontext.py), stated independently


def readable(request_id: Any) -> bool:
    return isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    )


def key(request_id: Any) -> tuple[str, Any]:
    return type(request_id).__name__, request_id  # 1 and "1" are different ids


def strict_decode(data: bytes) -> tuple[bool, Any]:
    """The independent oracle: (decodes, value) under UTF-8, no NaN/Infinity (nor numbers
    that overflow to it), at most MAX_DEPTH levels of nesting (the policy in
    docs/security.md; RFC 8259 lets a parser limit both)."""

    def refuse(token: str) -> Any:
        raise ValueError(token)

    def finite(text: str) -> float:
        if math.isinf(float(text)):
            raise ValueError(text)
        return float(text)

    def depth(value: Any) -> int:
        children = value.values() if isinstance(value, dict) else value
        if not isinstance(value, (dict, list)):
            return 0
        return 1 + max(map(depth, children), default=0)

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=refuse, parse_float=finite)
        return (True, value) if depth(value) <= MAX_DEPTH else (False, None)
    except (ValueError, RecursionError):
        return False, None


def owed(value: Any) -> tuple[Any, list[Any]]:
    """(the id owed exactly one reply or None, ids that may get at most one)."""
    if isinstance(value, list):
        return None, [m["id"] for m in value if isinstance(m, dict) and readable(m.get("id"))]
    if not isinstance(value, dict) or not readable(value.get("id")):
        return None, []
    if "method" not in value and ("result" in value) != ("error" in value):
        return None, []  # a response: relayed, never answered
    if isinstance(value.get("method"), str) and value["method"] in NEVER_ANSWERED:
        return None, [value["id"]]
    return value["id"], []


def check_message(message: Any) -> str | None:
    """Why ``message`` is not valid JSON-RPC 2.0 from a server, or None."""
    if isinstance(message, list):
        if not message:
            return "an empty batch reply"
        return next(filter(None, map(check_message, message)), None)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 object"
    if "method" in message:
        return None if isinstance(message["method"], str) else "a method that is not a string"
    if "id" not in message and "error" not in message:
        return "a result without an id"
    if "id" in message and not readable(message["id"]):
        return "a response whose id is neither a string nor an integer (MCP forbids null)"
    if ("result" in message) == ("error" in message):
        return "a response with both or neither of result and error"
    error = message.get("error")
    if "error" in message and not (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    ):
        return "an error without an integer code and a string message"
    return None


# -- the server under test -----------------------------------------------------------------


class FuzzedServer(FramedStdio):
    """A :class:`FramedStdio` that indexes replies by id instead of searching them."""

    def __init__(self, *args: str, framing: str = "ndjson") -> None:
        self.answers: dict[tuple[str, Any], int] = {}
        self.problems: list[str] = []
        self.received = 0
        self.results = 0  # replies that are results, not errors: how deep the cases went
        super().__init__(*args, framing=framing)

    def _received(self, message: Any) -> None:
        super()._received(message)
        self.received += 1
        problem = check_message(message)
        if problem:
            self.problems.append(f"{problem}: {json.dumps(message)[:300]}")
        for reply in message if isinstance(message, list) else [message]:
            self.results += isinstance(reply, dict) and "result" in reply
            if isinstance(reply, dict) and "method" not in reply and reply.get("id") is not None:
                self.answers[key(reply["id"])] = self.answers.get(key(reply["id"]), 0) + 1

    def stderr_tail(self) -> str:
        return b"".join(self.stderr[-30:]).decode(errors="replace")


@dataclass
class Case:
    data: bytes
    required: Any = None
    allowed: list[Any] = field(default_factory=list)

    def build(self) -> Case:
        return self


class Run:
    """Sends batches to one server and keeps the books across them."""

    def __init__(self, server: FuzzedServer, sentinel: dict[str, Any]) -> None:
        self.server, self.sentinel = server, sentinel
        self.required: set[tuple[str, Any]] = set()
        self.known: set[tuple[str, Any]] = set(server.answers)  # the handshake's
        self.cases = 0
        self.seconds = 0.0
        self._sentinels = itertools.count(1)

    def send(self, drafts: list[Any], cuts: list[int]) -> None:
        started = time.perf_counter()
        cases = [draft.build() for draft in drafts]
        server = self.server
        sentinel_id = f"sentinel-{next(self._sentinels)}"
        sentinel = encode_frame(
            server.framing, json.dumps({**self.sentinel, "id": sentinel_id}).encode()
        )
        for case in cases:
            if case.required is not None:
                self.required.add(key(case.required))
                self.known.add(key(case.required))
            self.known.update(key(i) for i in case.allowed)
        self.known.add(key(sentinel_id))
        data = b"".join(case.data for case in cases)
        at = 0
        for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
            if cut > at:
                server.write(data[at:cut])  # a frame may arrive in pieces
                at = cut
        server.write(sentinel)
        waiting = [key(c.required) for c in cases if c.required is not None] + [key(sentinel_id)]
        with server._arrived:
            done = server._arrived.wait_for(
                lambda: (
                    all(k in server.answers for k in waiting) or server.process.poll() is not None
                ),
                WAIT,
            )
        missing = [k for k in waiting if k not in server.answers]
        assert server.process.poll() is None, f"the server died:\n{server.stderr_tail()}"
        assert done and not missing, f"no reply to {missing[:5]}:\n{server.stderr_tail()}"
        self.check()
        self.cases += len(cases)
        self.seconds += time.perf_counter() - started

    def check(self) -> None:
        server = self.server
        with server._arrived:
            assert not server.bad, f"not strict JSON: {server.bad[:3]}"
            assert not server.problems, server.problems[:3]
            twice = [k for k, n in server.answers.items() if n > 1]
            assert not twice, f"answered more than once: {twice[:5]}"
            unknown = [k for k in server.answers if k not in self.known]
            assert not unknown, f"answers to ids never sent: {unknown[:5]}"

    def report(self, name: str) -> str:
        rate = self.cases / self.seconds if self.seconds else 0.0
        return (
            f"{name}: {self.cases} cases sent and checked in {self.seconds:.1f} s "
            f"({rate:.0f} cases/s), {self.server.results} results, "
            f"{len(self.server.answers)} ids answered"
        )


# -- the cases -----------------------------------------------------------------------------

_counter = itertools.count(1_000_000)  # clear of the ids of the handshakes

# How the harness writes an id: unique per case, in every style a client might use.
ID_STYLES = {
    "int": lambda n: n,
    "negative": lambda n: -n,
    "zero-padded-string": lambda n: f"{n:08d}",
    "unicode-string": lambda n: f"é✓🎉-{n}",
    "escaped-string": lambda n: f'q"\\\n\t{n}',
    "huge-int": lambda n: 10**30 + n,
    "int64-edge": lambda n: 2**63 + n,
    # Not ids a reply can carry: owed nothing, an error without an id may come.
    "fraction": lambda n: n + 0.5,
    "bool": lambda n: True,
    "null": lambda n: None,
    "object": lambda n: {"n": n},
    "array": lambda n: [n],
}


def _load(version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = json.loads((SPEC / f"{version}.schema.json").read_text())
    defs = schema.get("$defs") or schema.get("definitions") or {}
    shapes: dict[str, Any] = {}
    for union in ("ClientRequest", "ClientNotification"):
        for ref in defs.get(union, {}).get("anyOf", []):
            definition = defs[ref["$ref"].rsplit("/", 1)[1]]
            method = definition["properties"]["method"]["const"]
            shapes[method] = definition["properties"].get("params", {"type": "object"})
    return shapes, defs


STANDARD, STANDARD_DEFS = _load("2025-11-25")
MODERN, MODERN_DEFS = _load("2026-07-28")
for _method in NEVER_ANSWERED:
    MODERN.pop(_method, None)

# Values that reach real code paths of the fuzzed notebooks, beside random ones.
KNOWN_STRINGS = {
    "name": ["add", "summarize", "missing"],
    "uri": ["df://sales", "text://nothing", "file:///etc/passwd"],
    "level": ["debug", "error", "emergency"],
    "protocolVersion": ["2025-11-25", "2024-11-05", "1999-01-01"],
}

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def from_schema(schema: Any, defs: dict[str, Any], name: str = "", depth: int = 0) -> Any:
    """A strategy for values that roughly follow ``schema`` (enough to get past the door)."""
    if not isinstance(schema, dict) or depth > 4:
        return json_values
    if "$ref" in schema:
        return from_schema(defs.get(schema["$ref"].rsplit("/", 1)[1], {}), defs, name, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return st.one_of([from_schema(s, defs, name, depth + 1) for s in schema[union]])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "string":
        known = KNOWN_STRINGS.get(name)
        return st.sampled_from(known) | st.text(max_size=30) if known else st.text(max_size=30)
    if kind == "integer":
        return st.integers(min_value=-(2**40), max_value=2**40)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers()
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(from_schema(schema.get("items"), defs, name, depth + 1), max_size=3)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = [p for p in schema.get("required", []) if p in properties]
        optional = [p for p in properties if p not in required]
        return st.fixed_dictionaries(
            {p: from_schema(properties[p], defs, p, depth + 1) for p in required},
            optional={p: from_schema(properties[p], defs, p, depth + 1) for p in optional},
        )
    return json_values


def _load_tasks() -> tuple[dict[str, Any], dict[str, Any]]:
    """The 2026-07-28 Tasks extension's client requests (tasks/get, update, cancel)."""
    schema = json.loads((SPEC / "ext-tasks.schema.json").read_text())
    defs = schema.get("$defs") or {}
    shapes = {}
    for name in ("GetTaskRequest", "UpdateTaskRequest", "CancelTaskRequest"):
        parts = [defs[name], *defs[name].get("allOf", [])]
        properties = next(p["properties"] for p in parts if "method" in p.get("properties", {}))
        shapes[properties["method"]["const"]] = properties.get("params", {"type": "object"})
    return shapes, defs


def _messages(
    shapes: dict[str, Any], defs: dict[str, Any], modern: bool, meta: dict[str, Any] | None = None
) -> Any:
    meta = MODERN_META if meta is None else meta
    strategies = []
    for method, params in sorted(shapes.items()):
        body = from_schema(params, defs)
        if method == "notifications/cancelled":
            # Never one of ours: a cancelled request is owed no reply.
            body = st.fixed_dictionaries({"requestId": st.text(max_size=8).map("nc-{}".format)})
        if modern:
            body = body.map(lambda p: {**(p if isinstance(p, dict) else {}), "_meta": meta})
        notification = method.startswith("notifications/")
        strategies.append(
            st.fixed_dictionaries(
                {"jsonrpc": st.just("2.0"), "method": st.just(method), "params": body},
            ).map(lambda m, n=notification: {**m, "_request": not n})
        )
    return st.one_of(strategies)


SEED_METHODS = ["mcp/listTools", "mcp/listResources", "mcp/listPrompts", "mcp/executeTool"]
seed_messages = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "method": st.sampled_from([*SEED_METHODS, "initialize", "tools/list", "mcp/nothing"]),
        "params": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                "id": st.sampled_from(["mcp://quickstart/tools/add:v1", "mcp://x/tools/y:v1"])
                | st.text(max_size=20),
                "arguments": st.fixed_dictionaries(
                    {}, optional={"a": json_values, "b": json_values}
                )
                | json_values,
            },
        ),
        "_request": st.just(True),
    }
) | st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "method": st.sampled_from(["initialized", "$/setTrace", "$/cancelRequest", "exit"]),
        "params": st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3),
        "_request": st.just(False),
    }
)

MUTATIONS = [
    *[None] * 8,  # most cases well formed, so that they reach the methods behind the door
    "drop-jsonrpc",
    "drop-method",
    "drop-params",
    "method-type",
    "params-type",
    "jsonrpc-version",
    "extra-field",
    "deep",
    "huge-number",
    "nan-token",
    "invalid-utf8",
    "cut",
    "response-shaped",
]


@dataclass
class Draft:
    """A message and the mutation drawn for it; ids are given when it is sent, so that
    they are unique across the whole run without making the strategy depend on state."""

    message: dict[str, Any]
    style: str | None
    mutation: str | None
    tail: bytes
    cut: int
    ascii: bool
    lying: bool
    framing: str

    def build(self) -> Case:
        message = dict(self.message)
        if self.style is not None:
            message["id"] = ID_STYLES[self.style](next(_counter))
        text = json.dumps(message, ensure_ascii=self.ascii).encode()
        if self.tail:
            text = text[:-1] + (self.tail if len(message) else self.tail[1:]) + b"}"
        if self.mutation == "cut":
            text = text[: 1 + self.cut % max(1, len(text) - 1)]
        return _framed(text, self.framing, self.lying)


@st.composite
def json_case(draw: Any, messages: Any, framing: str) -> Draft:
    message = dict(draw(messages))
    is_request = message.pop("_request")
    style = draw(st.sampled_from(list(ID_STYLES))) if is_request or draw(st.booleans()) else None
    mutation = draw(st.sampled_from(MUTATIONS))
    tail = b""
    if mutation == "drop-jsonrpc":
        message.pop("jsonrpc")
    elif mutation == "drop-method":
        message.pop("method")
    elif mutation == "drop-params":
        message.pop("params", None)
    elif mutation == "method-type":
        message["method"] = draw(
            st.none() | st.integers() | st.lists(st.text(max_size=3), max_size=2)
        )
    elif mutation == "params-type":
        message["params"] = draw(st.lists(json_scalars, max_size=2) | json_scalars)
    elif mutation == "jsonrpc-version":
        message["jsonrpc"] = draw(st.sampled_from(["1.0", 2.0, None, "2.0 "]))
    elif mutation == "extra-field":
        name = draw(st.text(max_size=10))
        message[name if name not in (*message, "id") else f"x-{name}"] = draw(json_values)
    elif mutation == "deep":
        levels = draw(st.sampled_from([50, 300, 5000, 100_000]))
        tail = b',"deep":' + b"[" * levels + b"]" * levels
    elif mutation == "huge-number":
        tail = b',"n":' + draw(
            st.sampled_from([b"1e400", b"-1e999", b"9" * 5000, b"1" + b"0" * 40])
        )
    elif mutation == "nan-token":
        tail = b',"n":' + draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]))
    elif mutation == "invalid-utf8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"]))
        tail = b',"s":"' + bad + b'"'
    elif mutation == "response-shaped":
        message.pop("method", None)
        message[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    return Draft(
        message,
        style,
        mutation,
        tail,
        cut=draw(st.integers(min_value=0, max_value=10**6)),
        ascii=draw(st.booleans()),
        lying=draw(st.integers(0, 19)) == 0,
        framing=framing,
    )


def _framed(body: bytes, framing: str, lying: bool = False) -> Case:
    decodes, value = strict_decode(body)
    required, allowed = owed(value) if decodes else (None, [])
    if framing == "ndjson":
        body = body.replace(b"\n", b" ")  # a line must stay one line
        return Case(body + b"\n", required, allowed)
    if lying and decodes and isinstance(value, dict):
        # A length over the limit: refused unread, answered with the id read from its
        # start, whatever the message is (a response or a listen too: at most once then).
        head = b"Content-Length: 99999999999\r\n\r\n"
        ids = [value["id"]] if readable(value.get("id")) and required is None else []
        return Case(head + body, required, ids)
    return Case(encode_frame(framing, body), required, allowed)


@st.composite
def junk_case(draw: Any, framing: str) -> Case:
    junk = draw(st.binary(min_size=1, max_size=200))
    if framing == "ndjson":
        return _framed(junk.replace(b"\n", b""), framing)
    # In Content-Length framing junk is a header that cannot be read; the framer finds
    # the next "Content-Length: N" line, so junk must not spell one.
    junk = junk.replace(b"ength", b"engtx").replace(b"ENGTH", b"ENGTX")
    return Case(junk + draw(st.sampled_from([b"", b"\r\n\r\n", b"\n"])))


def batches(messages: Any, framing: str) -> Any:
    structured = json_case(messages, framing)
    case = st.one_of(structured, structured, structured, junk_case(framing))  # 3 : 1
    return st.tuples(
        st.lists(case, min_size=BATCH, max_size=BATCH),
        st.lists(st.integers(min_value=0), max_size=4),
    )


STANDARD_CASES = _messages(STANDARD, STANDARD_DEFS, modern=False)
MODERN_CASES = _messages(MODERN, MODERN_DEFS, modern=True)
# With the extension declared, so that the task methods get past the capability check
# (and a tools/call may become a task); without it they get -32021, in MODERN_CASES.
TASKS_META = {
    **MODERN_META,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}
TASK_SHAPES, TASK_DEFS = _load_tasks()
TASK_CASES = _messages(
    {**TASK_SHAPES, "tools/call": MODERN["tools/call"]},
    {**MODERN_DEFS, **TASK_DEFS},
    True,
    TASKS_META,
)
standard_messages = STANDARD_CASES | MODERN_CASES | TASK_CASES


def stop(server: FuzzedServer, run: Run, name: str, timeout: float = 60) -> None:
    """Close stdin and print the figures (seen with ``pytest -s``); it must end cleanly."""
    print(run.report(name))
    code = server.close(timeout)
    assert code == 0, f"exit code {code}:\n{server.stderr_tail()}"
