"""The endpoint's rules as one table, run against both servers that apply them.

transports/policy.py decides, for every server, what a request gets; the tornado transport
(``HttpTransport``, what a kernel and ``mcp-notebook serve`` run) and the export's ASGI app
(under uvicorn) carry the decision out. Each row is one request -- method, headers, body --
and the answer a client relies on: the status, the JSON-RPC error code and the id it
names (or a result, or no body), and the headers that must come with it. A row that
differs between the two says so (``asgi=``); everything else must be the same.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn

from mcp_notebook.auth.config import AuthConfig
from mcp_notebook.export.runtime import exported_app, server_of
from mcp_notebook.transports import dialects
from mcp_notebook.transports.asgi import McpAsgiApp
from mcp_notebook.transports.http import HttpTransport
from tests.waiting import wait_until

TOKEN = "endpoint-cases-token"
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
NO_BODY = object()  # the answer has no body
RESULT = object()  # the answer is a result (not an error)
ANY = object()  # a header that must be there, whatever its value
DOCUMENT = object()  # the answer is OAuth's protected-resource metadata, not JSON-RPC
SESSION = "{session}"  # stands for the session the fixture opened


def rpc(method: str, id: Any = 7, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    return message


INITIALIZE = rpc(
    "initialize",
    1,
    protocolVersion=HANDSHAKE,
    capabilities={},
    clientInfo={"name": "cases", "version": "0"},
)
CALL = rpc("tools/call", name="add", arguments={"a": 2})
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_LIST = rpc("tools/list", _meta=META)
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
ON_SESSION = {"Mcp-Session-Id": SESSION}


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    body: Any = None  # a message (sent as JSON), raw bytes, or None
    headers: dict[str, Any] = field(default_factory=dict)  # None drops a default header
    status: int = 200
    code: Any = RESULT  # the error's code, RESULT, or NO_BODY
    id: Any = None  # the id the answer names
    answer_headers: dict[str, Any] = field(default_factory=dict)
    asgi: dict[str, Any] = field(default_factory=dict)  # what the ASGI app answers instead
    path: str = "/mcp"


CASES = [
    # -- before the body: where from, who, how big -----------------------------------
    Case("no token", "POST", CALL, {"Authorization": None}, 401, -32600, None,
         {"WWW-Authenticate": 'Bearer realm="mcp-notebook"'}),
    Case("a wrong token", "POST", CALL, {"Authorization": "Bearer nope"}, 401, -32600),
    Case("a foreign Host", "POST", CALL, {"Host": "evil.example"}, 403, -32600),
    Case("a foreign Origin", "POST", CALL, {"Origin": "http://evil.example"}, 403, -32600),
    Case("a body announced over the limit", "POST", None,
         {"Content-Length": str(10**12)}, 413, -32600),
    Case("another path", "POST", CALL, {}, 404, -32600, path="/elsewhere"),
    # The ASGI app served "/mcp/" and tornado answered 404: both serve it now.
    Case("the path with a trailing slash", "POST", CALL, ON_SESSION, 200, RESULT, 7,
         path="/mcp/"),
    Case("a longer path under it", "POST", CALL, ON_SESSION, 404, -32600, path="/mcp/x"),
    # OAuth's protected-resource metadata exists only with an issuer configured
    # (tests/oauth/ runs both servers with one): the static token's servers have none.
    Case("the resource metadata, without OAuth", "GET", None, {}, 404, -32600,
         path="/.well-known/oauth-protected-resource"),
    Case("the path-aware resource metadata, without OAuth", "GET", None, {}, 404, -32600,
         path="/.well-known/oauth-protected-resource/mcp"),
    # -- a POST's way ----------------------------------------------------------------
    Case("not JSON's media type", "POST", CALL, {"Content-Type": "text/plain"}, 415, -32600, 7),
    Case("an Accept it cannot answer", "POST", CALL, {"Accept": "text/html"}, 406, -32600, 7),
    Case("a body that is not JSON", "POST", b"{not json", ON_SESSION, 400, -32700),
    Case("not JSON-RPC", "POST", {"jsonrpc": "1.0", "id": 3, "method": "ping"}, ON_SESSION,
         400, -32600, 3),
    Case("initialize opens a session", "POST", INITIALIZE, {}, 200, RESULT, 1,
         {"Mcp-Session-Id": ANY}),
    Case("a call on its session", "POST", CALL, ON_SESSION, 200, RESULT, 7),
    Case("a notification on its session", "POST", rpc("notifications/initialized", None),
         ON_SESSION, 202, NO_BODY),
    Case("a malformed notification", "POST", rpc("notifications/cancelled", None),
         ON_SESSION, 400, -32602),
    Case("a response on its session", "POST", {"jsonrpc": "2.0", "id": "s-1", "result": {}},
         ON_SESSION, 202, NO_BODY),
    Case("a call without a session", "POST", CALL, {}, 400, -32600, 7),
    Case("a call on a session that never was", "POST", CALL, {"Mcp-Session-Id": "nope"},
         404, -32600, 7),
    Case("a call on its session with another era's version", "POST", CALL,
         {**ON_SESSION, "MCP-Protocol-Version": MODERN}, 400, -32600, 7),
    Case("a method of no era, without a session", "POST", rpc("no/such"), {}, 404, -32601, 7),
    Case("a 2026-07-28 request", "POST", MODERN_LIST, MODERN_HEADERS, 200, RESULT, 7),
    Case("a 2026-07-28 request whose header disagrees", "POST", MODERN_LIST,
         {**MODERN_HEADERS, "Mcp-Method": "prompts/list"}, 400, -32020, 7),
    Case("a 2026-07-28 notification", "POST", rpc("notifications/initialized", None, _meta=META),
         {"MCP-Protocol-Version": MODERN}, 202, NO_BODY),
    Case("a seed-dialect request (a plug-in of tornado's only)", "POST",
         rpc("mcp/listTools", 5), {}, 200, RESULT, 5,
         asgi={"status": 400, "code": -32600, "id": 5}),
    # -- GET, DELETE, the rest -------------------------------------------------------
    Case("a GET stream that is not SSE", "GET", None, {**ON_SESSION, "Accept": "*/*"},
         406, -32600),
    Case("a GET stream of 2026-07-28", "GET", None,
         {"Accept": "text/event-stream", "MCP-Protocol-Version": MODERN}, 405, -32600,
         answer_headers={"Allow": "POST"}),
    Case("a GET stream without a session", "GET", None, {"Accept": "text/event-stream"},
         400, -32600),
    Case("a GET stream of a session that never was", "GET", None,
         {"Accept": "text/event-stream", "Mcp-Session-Id": "nope"}, 404, -32600),
    Case("DELETE of a session that never was", "DELETE", None, {"Mcp-Session-Id": "nope"},
         404, -32600),
    Case("DELETE in 2026-07-28", "DELETE", None, {"MCP-Protocol-Version": MODERN}, 405,
         -32600, answer_headers={"Allow": "POST"}),
    Case("OPTIONS", "OPTIONS", None, {}, 204, NO_BODY),
    Case("a method the endpoint has not", "PUT", CALL, ON_SESSION, 405, -32600,
         answer_headers={"Allow": "GET, POST, DELETE, OPTIONS"}),
    Case("HEAD", "HEAD", None, {}, 405, NO_BODY,
         answer_headers={"Allow": "GET, POST, DELETE, OPTIONS"}),
]  # fmt: skip


def tornado_server(auth: AuthConfig | None = None) -> Iterator[int]:
    """The notebook's HTTP endpoint serving ``add``; yields its port (test_http_exchange too)."""
    transport = HttpTransport(server_of(_app(), inline=True), token=TOKEN, auth=auth)
    transport.start()
    try:
        assert transport.port is not None
        yield transport.port
    finally:
        transport.stop()


def _asgi(auth: AuthConfig | None = None) -> Iterator[int]:
    asgi = McpAsgiApp(server_of(_app(), inline=True), token=TOKEN, auth=auth)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "uvicorn listening")
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def _app() -> Any:
    app = exported_app("cases", {})

    @app.tool
    def add(a: int, b: int = 1) -> int:
        return a + b

    return app


@dataclass
class Endpoint:
    kind: str
    port: int
    session: str = ""
    token: str = TOKEN  # what Authorization carries unless a row says otherwise

    def send(
        self,
        method: str,
        body: Any = None,
        headers: dict[str, Any] | None = None,
        path: str = "/mcp",
    ) -> tuple[int, dict[str, str], bytes]:
        fields: dict[str, Any] = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        }
        sent = {
            k: str(v).replace(SESSION, self.session) for k, v in fields.items() if v is not None
        }
        raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_host="Host" in sent)
            for name, value in sent.items():
                conn.putheader(name, value)
            if raw is not None and "Content-Length" not in sent:
                conn.putheader("Content-Length", str(len(raw)))
            conn.endheaders(raw)
            response = conn.getresponse()
            data = response.read()
            answer_headers = {name.lower(): value for name, value in response.getheaders()}
            return response.status, answer_headers, data
        finally:
            conn.close()


@pytest.fixture(scope="module", params=["tornado", "asgi"])
def endpoint(request: pytest.FixtureRequest) -> Iterator[Endpoint]:
    serving = tornado_server() if request.param == "tornado" else _asgi()
    port = next(serving)
    served = Endpoint(request.param, port)
    status, headers, _ = served.send("POST", INITIALIZE)
    assert status == 200
    served.session = headers["mcp-session-id"]
    yield served
    serving.close()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_request_gets_the_answer_of_the_table(endpoint: Endpoint, case: Case) -> None:
    expected = {"status": case.status, "code": case.code, "id": case.id}
    if endpoint.kind == "asgi":
        expected.update(case.asgi)
    status, headers, data = endpoint.send(case.method, case.body, case.headers, case.path)
    assert status == expected["status"], data
    for name, value in case.answer_headers.items():
        assert name.lower() in headers, f"{name} missing: {headers}"
        assert value is ANY or headers[name.lower()] == value
    if expected["code"] is NO_BODY:
        assert data == b""
        return
    body = json.loads(data)
    if expected["code"] is DOCUMENT:
        assert body["resource"] == f"http://127.0.0.1:{endpoint.port}/mcp", body
        return
    assert body.get("id") == expected["id"]
    if expected["code"] is RESULT:
        assert "result" in body, body
    else:
        assert body["error"]["code"] == expected["code"], body


# -- with OAuth configured: the same policy, an issuer's tokens instead of TOKEN --------
PRM = "/.well-known/oauth-protected-resource"
OAUTH_CASES = [
    Case("OAuth: no token", "POST", CALL, {"Authorization": None}, 401, -32600, None,
         {"WWW-Authenticate": ANY}),
    Case("OAuth: the static token is no access token", "POST", CALL,
         {"Authorization": f"Bearer {TOKEN}"}, 401, -32600, None, {"WWW-Authenticate": ANY}),
    Case("OAuth: a call with an access token", "POST", CALL, ON_SESSION, 200, RESULT, 7),
    Case("OAuth: the resource metadata, no token needed", "GET", None,
         {"Authorization": None}, 200, DOCUMENT, path=PRM),
    Case("OAuth: the path-aware resource metadata", "GET", None, {"Authorization": None},
         200, DOCUMENT, path=PRM + "/mcp"),
    Case("OAuth: the resource metadata from a foreign Origin", "GET", None,
         {"Authorization": None, "Origin": "http://evil.example"}, 403, -32600, path=PRM),
    Case("OAuth: the resource metadata is read-only", "POST", CALL, {"Authorization": None},
         405, -32600, answer_headers={"Allow": "GET"}, path=PRM),
]  # fmt: skip


@pytest.fixture(scope="module", params=["tornado", "asgi"])
def oauth_endpoint(request: pytest.FixtureRequest) -> Iterator[Endpoint]:
    from tests.oauth.issuer import running_issuer

    with running_issuer() as issuer:
        auth = AuthConfig(issuer=issuer.url)
        serving = tornado_server(auth) if request.param == "tornado" else _asgi(auth)
        port = next(serving)
        token = issuer.mint(aud=f"http://127.0.0.1:{port}/mcp")
        served = Endpoint(request.param, port, token=token)
        status, headers, _ = served.send("POST", INITIALIZE)
        assert status == 200
        served.session = headers["mcp-session-id"]
        yield served
        serving.close()


@pytest.mark.parametrize("case", OAUTH_CASES, ids=[case.name for case in OAUTH_CASES])
def test_each_oauth_request_gets_the_answer_of_the_table(
    oauth_endpoint: Endpoint, case: Case
) -> None:
    test_each_request_gets_the_answer_of_the_table(oauth_endpoint, case)


def test_a_deleted_session_is_gone_for_every_method(endpoint: Endpoint) -> None:
    _, headers, _ = endpoint.send("POST", INITIALIZE)
    session = {"Mcp-Session-Id": headers["mcp-session-id"]}
    assert endpoint.send("DELETE", None, session)[0] == 200
    assert endpoint.send("POST", CALL, session)[0] == 404
    assert endpoint.send("DELETE", None, session)[0] == 404
    get = {**session, "Accept": "text/event-stream"}
    assert endpoint.send("GET", None, get)[0] == 404


# -- a dialect plug-in, registered as a third party would, and taken away again --------
TOY = "application/x-toy"


def _claim(body: bytes, message: Any) -> Any:
    return message.get("toy") if isinstance(message, dict) else None


async def _serve(handler: Any, server: Any, claim: Any) -> None:
    handler.set_header("Content-Type", TOY)
    handler.finish(f"toy says {claim}".encode())


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    dialects.registered()  # the built-ins first, so that the toy is added to them
    monkeypatch.setitem(dialects._registered, "toy", dialects.Dialect("toy", TOY, _claim, _serve))


def test_a_registered_dialect_answers_what_it_claims(toy: None, endpoint: Endpoint) -> None:
    headers = {"Content-Type": TOY, "Accept": TOY}
    status, answer, data = endpoint.send("POST", {"toy": "hello", "id": 4}, headers)
    if endpoint.kind == "tornado":
        assert (status, answer["content-type"], data) == (200, TOY, b"toy says hello")
    else:  # the ASGI app serves no plug-in: it says which dialect it refused
        body = json.loads(data)
        assert (status, body["id"], body["error"]["code"]) == (400, 4, -32600)
        assert "the toy dialect" in body["error"]["message"]
    # What it does not claim is standard MCP, as before.
    status, _, data = endpoint.send("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert (status, json.loads(data)["error"]["code"]) == (400, -32600)  # no session


def test_without_the_plug_in_its_media_type_is_refused(endpoint: Endpoint) -> None:
    headers = {"Content-Type": TOY, "Accept": TOY}
    assert endpoint.send("POST", {"toy": "hello", "id": 4}, headers)[0] == 415
