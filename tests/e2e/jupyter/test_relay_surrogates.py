"""A lone surrogate through the Jupyter Server relay: the kernel's refusal (400, -32600)
reaches the client as it is, the relay's own answers never echo an id it could not
encode, and a tool's lone surrogate arrives as U+FFFD. It used to be a 500, empty."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.jupyter.server import JupyterServer, ServerKernel
from tests.kernel.test_http_modern import Modern
from tests.unit.export.test_lone_surrogates import ODD_TEXT, ODD_TOOL
from tests.unit.protocol.test_json_policy import LONE_SURROGATES

NAME = "odd-via-jupyter"
INVALID_REQUEST = -32600


@pytest.fixture(scope="module")
def jupyter() -> Iterator[JupyterServer]:
    server = JupyterServer("/base/")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kernel(jupyter) -> Iterator[ServerKernel]:
    k = jupyter.start_kernel()
    k.run("%load_ext mcp_notebook")
    k.run(ODD_TOOL)
    k.run(f"%mcp start --port 0 --name {NAME}")
    try:
        yield k
    finally:
        k.shutdown()


def post(url: str, token: str, body: bytes) -> tuple[int, Any]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    try:
        connection.request("POST", parts.path, body, headers)
        response = connection.getresponse()
        data = response.read()
        assert response.headers.get("Content-Type", "").startswith("application/json")
        return response.status, json.loads(data)
    finally:
        connection.close()


@pytest.mark.parametrize("text, request_id", LONE_SURROGATES.values(), ids=LONE_SURROGATES)
def test_the_kernels_refusal_of_a_lone_surrogate_comes_through_the_relay(
    jupyter, kernel, text, request_id
):
    for name in (NAME, "nobody-serves-this"):  # the kernel's answer, and the relay's own
        status, body = post(jupyter.endpoint(name), jupyter.token, text.encode())
        assert status == (400 if name == NAME else 404), body
        assert body["error"]["code"] == INVALID_REQUEST
        if name == NAME:
            assert "lone surrogate" in body["error"]["message"]
        # The relay reads the id by the same policy as the kernel: never the surrogate.
        assert body.get("id") == request_id and ("id" in body) == (request_id is not None)


def test_a_lone_surrogate_in_a_result_arrives_as_a_replacement_through_the_relay(jupyter, kernel):
    modern = Modern(jupyter.endpoint(NAME), jupyter.token)
    call = modern.message("tools/call", {"name": "odd", "arguments": {"text": "x"}})
    status, _, messages = modern.send(call)
    assert status == 200, messages
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": ODD_TEXT}]
