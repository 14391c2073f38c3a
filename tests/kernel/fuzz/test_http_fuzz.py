"""Fuzzing the HTTP endpoint of one real kernel: both protocol eras and the seed dialect.

Structured cases from the JSON-RPC/MCP schemas, mutated (``http_strategies``), go over one
keep-alive connection to one server. Every reply must be a valid JSON-RPC 2.0 message (or
batch, or SSE / NDJSON stream of them) or an empty 202, with an expected status (never
500), the request's id when it had a readable one, and no NaN/Infinity tokens. Afterwards
the server still answers ``ping`` and the kernel logged no error or traceback.

``MCP_NOTEBOOK_FUZZ_EXAMPLES`` sets the number of cases (default 20000 in all, shared out
by ``SHARES``); a long run sets it higher, with pytest's per-test timeout lifted:
``MCP_NOTEBOOK_FUZZ_EXAMPLES=200000 pytest --timeout 0 -s tests/kernel/fuzz/test_http_fuzz.py``.
Each strategy prints its cases/s (with ``-s``).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_notebook.wire import jsontext
from tests.conftest import Served, start_server
from tests.fuzz import http_strategies as hs
from tests.kernels import Kernel
from tests.sources import ADD

TOTAL = int(os.environ.get("MCP_NOTEBOOK_FUZZ_EXAMPLES", "20000"))
# Share of the cases per strategy: most go to the two eras' POSTs.
SHARES = {"handshake": 0.4, "modern": 0.3, "seed": 0.15, "other": 0.15}
EXPECTED_STATUS = {200, 202, 204, 400, 401, 403, 404, 405, 406, 408, 409, 413, 415, 429, 503}
UNREAD = {401, 403, 408, 413, 429, 503}  # answered before the body is looked at

SETUP = (
    """
import logging
from mcp_notebook import Context

"""
    + ADD
    + '''
@mcp.tool
def echo(text: str, times: int = 1, tags: list[str] | None = None, flag: bool = False) -> dict:
    """Echo the arguments back."""
    return {"text": text * max(0, min(times, 3)), "tags": tags or [], "flag": flag}

@mcp.tool
def mean(values: list[float]) -> float:
    """The mean (NaN for no values: JSON cannot carry it)."""
    return sum(values) / len(values) if values else float("nan")

@mcp.tool(
    description="Mirrors its region in a header",
    input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]},
)
def where(region: str) -> str:
    return region

@mcp.tool
def noisy(ctx: Context, text: str = "") -> str:
    """Logs and reports progress while it runs."""
    ctx.info(text)
    ctx.report_progress(1, total=2)
    return text

@mcp.tool
def fails() -> str:
    """Always fails."""
    raise RuntimeError("on purpose")

mcp.resource("some notes", name="notes", uri="text://notes")

@mcp.resource_template("notes://{day}")
def notes_for(day: str) -> str:
    return f"notes for {day}"

mcp.prompt("summarize", "Summarize {topic} in {n} bullet points.")

class _Errors(logging.Handler):
    """Every error the kernel logs while it is fuzzed (tracebacks included)."""
    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []
    def emit(self, record):
        if record.levelno >= logging.ERROR or record.exc_info:
            self.seen.append(self.format(record))

_fuzz_errors = _Errors()
logging.getLogger().addHandler(_fuzz_errors)
'''
)


def _strict(data: bytes | str) -> Any:
    """JSON as a strict client reads it: NaN/Infinity tokens are an error."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} token in a reply")

    return json.loads(data, parse_constant=refuse)


def _header_bytes(value: str) -> bytes:
    """A header value as a hostile client may send it: UTF-8 bytes (tornado reads them as
    latin-1), with line breaks flattened, since those would end the header section."""
    return value.encode("utf-8", "surrogatepass").replace(b"\r", b" ").replace(b"\n", b" ")


class Connection:
    """One keep-alive connection, reopened only when the server closed it."""

    def __init__(self, served: Served) -> None:
        parts = urlsplit(served.url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.conn: http.client.HTTPConnection | None = None
        self.opened = 0

    def send(self, case: hs.HttpCase) -> tuple[int, http.client.HTTPMessage, bytes]:
        reused = self.conn is not None
        try:
            return self._send(case)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            if not reused:
                raise
            # A kept-alive connection the server closed meanwhile (a connection that never
            # showed the token has limits.header_timeout to do so): as every HTTP client
            # does, send again once on a new connection.
            return self._send(case)

    def _send(self, case: hs.HttpCase) -> tuple[int, http.client.HTTPMessage, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            self.opened += 1
        conn = self.conn
        try:
            conn.putrequest(case.method, self.path, skip_accept_encoding=True)
            for name, value in case.headers.items():
                conn.putheader(name, _header_bytes(value))
            if case.method not in ("GET", "HEAD") or case.body:
                conn.putheader("Content-Length", str(len(case.body)))
            conn.endheaders(case.body or None)
            response = conn.getresponse()
            body = response.read()
        except BaseException:
            self.close()  # whatever broke, the next case starts on a clean connection
            raise
        if response.will_close:
            self.close()
        return response.status, response.headers, body

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


# -- checking one reply ------------------------------------------------------------------
def check_message(message: Any) -> None:
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:  # a server notification (or request) on a stream
        assert isinstance(message["method"], str), message
        return
    assert ("result" in message) != ("error" in message), message
    if "id" in message:  # never null: an unreadable id means no id member at all
        assert hs.readable_id(message) is not None, message
    if "error" in message:
        error = message["error"]
        assert isinstance(error, dict), message
        assert isinstance(error.get("code"), int) and not isinstance(error["code"], bool)
        assert isinstance(error.get("message"), str), message


def messages_of(content_type: str, body: bytes, era: str) -> list[Any]:
    if content_type == "application/json":
        if era == "seed" and body.count(b"\n") > 1:
            # docs/seed-dialect.md: an NDJSON body is answered one reply per line.
            return [_strict(line) for line in body.split(b"\n") if line.strip()]
        decoded = _strict(body)
        return decoded if isinstance(decoded, list) else [decoded]
    if content_type == "application/x-ndjson":
        return [_strict(line) for line in body.split(b"\n") if line.strip()]
    if content_type == "text/event-stream":
        found = []
        for block in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
            if data and "".join(data).strip():
                found.append(_strict("\n".join(data)))
        return found
    raise AssertionError(f"unexpected Content-Type {content_type!r}")


def expected_id(case: hs.HttpCase) -> Any:
    """The id a reply to ``case`` must carry: a single request whose id can be read."""
    try:
        message = jsontext.loads(case.body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    return hs.readable_id(message)


def check_reply(case: hs.HttpCase, status: int, headers: Any, body: bytes) -> None:
    assert status in EXPECTED_STATUS, (status, body[:300])
    if status in (202, 204) or not body:
        assert body == b"", (status, body[:300])
        # 200 with nothing: DELETE and the like, or a dialect stream of notifications only.
        streamed = "ndjson" in case.headers.get("Accept", "")
        assert status != 200 or case.method != "POST" or streamed, status
        return
    content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    replies = messages_of(content_type, body, case.era)
    assert replies, (status, body[:300])
    for message in replies:
        if isinstance(message, list):  # a dialect batch inside NDJSON
            for item in message:
                check_message(item)
        else:
            check_message(message)
    request_id = expected_id(case)
    if request_id is None or status in UNREAD or case.method != "POST":
        return
    answers = [m for m in replies if isinstance(m, dict) and "method" not in m]
    if case.era == "seed" and not answers:
        return  # a dialect notification-only body (e.g. a lone `initialized`)
    assert answers and answers[-1].get("id") == request_id, (request_id, body[:300])


# -- the server --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(kernel: Kernel) -> Iterator[Served]:
    served = start_server(kernel, SETUP)
    assert served.token
    yield served


@pytest.fixture(scope="module")
def conn(served: Served) -> Iterator[Connection]:
    connection = Connection(served)
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def session(served: Served, conn: Connection) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": hs.HANDSHAKE,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    headers = {
        "Authorization": f"Bearer {served.token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    status, reply_headers, _ = conn.send(
        hs.HttpCase("POST", headers, json.dumps(init).encode(), "handshake")
    )
    assert status == 200
    session_id = reply_headers["Mcp-Session-Id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _ = conn.send(
        hs.HttpCase(
            "POST", {**headers, "Mcp-Session-Id": session_id}, json.dumps(done).encode(), "x"
        )
    )
    assert status == 202
    return session_id


RATES: dict[str, float] = {}


def fuzz(strategy: st.SearchStrategy[hs.HttpCase], era: str, conn: Connection) -> None:
    count = max(1, int(TOTAL * SHARES[era]))
    started = time.perf_counter()
    cases = 0

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(case: hs.HttpCase) -> None:
        nonlocal cases
        cases += 1
        status, headers, body = conn.send(case)
        check_reply(case, status, headers, body)

    run()
    seconds = time.perf_counter() - started
    RATES[era] = cases / seconds
    print(f"\n{era}: {cases} cases in {seconds:.1f} s, {cases / seconds:.0f} cases/s")


def test_handshake_era_posts(served: Served, session: str, conn: Connection) -> None:
    fuzz(hs.handshake_cases(session, served.token), "handshake", conn)


def test_modern_era_posts(served: Served, conn: Connection) -> None:
    fuzz(hs.modern_cases(served.token), "modern", conn)


def test_seed_dialect_posts(served: Served, conn: Connection) -> None:
    fuzz(hs.seed_cases(served.token), "seed", conn)


def test_other_methods_and_streams(served: Served, session: str, conn: Connection) -> None:
    fuzz(hs.other_cases(session, served.token), "other", conn)


def test_the_server_survived_and_logged_no_error(
    served: Served, session: str, conn: Connection, kernel: Kernel
) -> None:
    ping = {"jsonrpc": "2.0", "id": "after", "method": "ping"}
    headers = {
        "Authorization": f"Bearer {served.token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Mcp-Session-Id": session,
    }
    status, _, body = conn.send(hs.HttpCase("POST", headers, json.dumps(ping).encode(), "x"))
    assert (status, _strict(body)) == (200, {"jsonrpc": "2.0", "id": "after", "result": {}})
    assert kernel.alive()
    errors = kernel.eval("_fuzz_errors.seen")
    assert errors == [], "\n\n".join(errors[:5])
    stderr = []
    while kernel.client.iopub_channel.msg_ready():
        message = kernel.client.get_iopub_msg(timeout=1)
        if message["msg_type"] == "stream" and message["content"]["name"] == "stderr":
            stderr.append(message["content"]["text"])
    assert "Traceback" not in "".join(stderr), "".join(stderr)[:3000]
