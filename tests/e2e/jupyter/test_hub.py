"""Through a real JupyterHub: one user's notebook server at the hub's URL, behind the hub's
login; another user's login cannot reach it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx2
import pytest
from mcp.client import Client

from tests import portable
from tests.conftest import MODES
from tests.e2e.jupyter.hub import NEEDS, Hub, SingleUser
from tests.e2e.jupyter.server import ServerKernel
from tests.e2e.jupyter.test_relay import CALL, sdk
from tests.sources import ADD_ONE_BARE
from tests.stdio import module_params
from tests.waiting import OPEN_GET_STREAMS, until

NAME = "sales"


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    portable.require_linux(NEEDS)
    hub = Hub()
    try:
        yield hub
    finally:
        hub.stop()


@pytest.fixture(scope="module")
def alice(hub) -> SingleUser:
    return hub.spawn("alice")


@pytest.fixture(scope="module")
def bob(hub) -> SingleUser:
    return hub.spawn("bob")


@pytest.fixture(scope="module")
def kernel(alice) -> Iterator[ServerKernel]:
    k = alice.start_kernel()
    k.run("%load_ext mcp_notebook")
    k.run(ADD_ONE_BARE)
    try:
        yield k
    finally:
        k.shutdown()


@pytest.fixture(scope="module")
def started(kernel) -> str:
    return kernel.run(f"%mcp start --port 0 --name {NAME}")[1]


def test_start_prints_the_hubs_public_url(hub, alice, started):
    line = next(x for x in started.splitlines() if "through Jupyter Server" in x)
    assert line.endswith(f" {hub.url}/user/alice/mcp-notebook/{NAME}/mcp")
    assert alice.token not in started


@MODES
async def test_the_sdk_reaches_the_notebook_at_the_hubs_url_as_alice(
    hub, alice, kernel, started, mode
):
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    tool = f"hub_tool_{mode}"
    async with sdk(alice.endpoint(NAME), alice.headers, mode, message_handler=on_message) as c:
        assert (await c.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
        assert kernel.eval("mcp.calls[-1].client").endswith(" via Jupyter user alice")
        define = f"@mcp.tool\ndef {tool}() -> str:\n    return 'hub'\n"
        if mode == "legacy":
            await until(lambda: kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")
            kernel.run(define)
        else:
            async with c.listen(tools_list_changed=True) as subscription:
                kernel.run(define)
                await asyncio.wait_for(subscription.__anext__(), 20)
        await asyncio.wait_for(changed.wait(), 20)
        assert tool in {t.name for t in (await c.list_tools()).tools}


def test_bobs_login_cannot_reach_alices_notebook(hub, alice, bob, kernel, started):
    calls = kernel.eval("len(mcp.calls)")
    headers = {**bob.headers, "Content-Type": "application/json", "Accept": "application/json"}
    refused = httpx2.post(alice.endpoint(NAME), json=CALL, headers=headers, timeout=30)
    assert refused.status_code == 403, refused.text
    listing = httpx2.get(alice.url + "mcp-notebook/api/servers", headers=bob.headers, timeout=30)
    assert listing.status_code == 403
    # Bob's own server has discovery files of its own: alice's server is not among them.
    assert bob.api("GET", "mcp-notebook/api/servers").json() == {"servers": []}
    own = httpx2.post(bob.endpoint(NAME), json=CALL, headers=headers, timeout=30)
    assert own.status_code == 404
    assert kernel.eval("len(mcp.calls)") == calls


@MODES
async def test_the_bridge_takes_the_hubs_url_and_a_hub_token(alice, started, mode):
    params = module_params("bridge", "--url", alice.endpoint(NAME), "--token", alice.token)
    async with Client(params, mode=mode) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"
