"""Skills from a real notebook kernel, through the official SDK client over HTTP (and over
stdio through `mcp-notebook bridge`), in both eras: list, get, read every file and
recompute its digest; a cell run again changes the digest and the client hears it. The
SDK has no skills helper: skills/* go as raw requests through its session (which stamps
2026-07-28's _meta and headers)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from typing import Any

import pytest
from mcp.client import Client
from mcp_types import Request
from pydantic import TypeAdapter

from tests.conftest import MODES, connect, start_server
from tests.stdio import module_params
from tests.waiting import OPEN_GET_STREAMS, until

SKILLS = "io.modelcontextprotocol/skills"
SKILL_MD = "skill://sales-analysis/SKILL.md"
SETUP = '''
import json, pathlib, tempfile

@mcp.tool
def load_sales(region: str) -> str:
    """The sales of one region."""
    return f"sales of {region}"

def make_skill(words):
    return mcp.skill(
        "sales-analysis",
        description="Analyse this notebook's sales.",
        text=f"# Sales\\n\\n{words} Start with `load_sales`.",
        files={"data/regions.csv": "region\\nnorth\\n", "assets/mark.bin": bytes(range(256))},
    )

make_skill("Regions first.")
folder = pathlib.Path(tempfile.mkdtemp()) / "refunds"
(folder / "examples").mkdir(parents=True)
skill_md = "---\\nname: refunds\\ndescription: Refund policy.\\n---\\nAsk first.\\n"
(folder / "SKILL.md").write_text(skill_md)
(folder / "examples" / "email.md").write_text("Dear customer, ...\\n")
mcp.skill("acme/refunds", path=folder)
'''


@pytest.fixture(scope="module")
def served(kernel):
    return start_server(kernel, SETUP, "%mcp start --port 0 --name skills")


async def raw(client: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request the SDK has no helper for, sent through its session as any other."""
    request = Request[dict[str, Any], str](method=method, params=params or {})
    return await client.session.send_request(request, TypeAdapter(dict[str, Any]))


def content_bytes(contents: Any) -> bytes:
    blob = getattr(contents, "blob", None)
    return base64.b64decode(blob) if blob is not None else contents.text.encode("utf-8")


async def check_manifest(client: Any, entry: dict[str, Any]) -> None:
    """Every file of the entry read with resources/read: its bytes match digest and size."""
    assert entry["resources"][0]["uri"] == entry["uri"]
    for listed in entry["resources"]:
        read = await client.read_resource(listed["uri"])
        data = content_bytes(read.contents[0])
        assert listed["size"] == len(data), listed["uri"]
        assert listed["digest"] == "sha256:" + hashlib.sha256(data).hexdigest(), listed["uri"]


async def test_2026_lists_gets_and_reads_every_skill_file_with_matching_digests(served):
    async with connect(served, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        extensions = client.server_capabilities.model_dump(by_alias=True)["extensions"]
        assert extensions[SKILLS] == {"directoryRead": True}
        listed = await raw(client, "skills/list")
        assert listed["resultType"] == "complete" and "ttlMs" in listed
        entries = {e["uri"]: e for e in listed["skills"]}
        assert set(entries) == {SKILL_MD, "skill://acme/refunds/SKILL.md"}
        for uri, entry in entries.items():
            got = await raw(client, "skills/get", {"uri": uri})
            assert got["skill"] == entry
            await check_manifest(client, entry)
        uris = [r["uri"] for r in entries[SKILL_MD]["resources"]]
        assert "skill://sales-analysis/references/tools.md" in uris
        assert "skill://sales-analysis/assets/mark.bin" in uris  # a blob, digest checked
        children = await raw(client, "resources/directory/read", {"uri": "skill://acme/refunds"})
        assert [c["uri"] for c in children["resources"]] == [
            "skill://acme/refunds/SKILL.md",
            "skill://acme/refunds/examples",
        ]
        with pytest.raises(Exception, match="No skill is served"):
            await raw(client, "skills/get", {"uri": "skill://acme/nothing/SKILL.md"})


async def test_2025_sees_the_skill_files_as_ordinary_resources(served):
    async with connect(served, "legacy") as client:
        assert client.protocol_version.startswith("2025")
        extensions = client.server_capabilities.model_dump(by_alias=True).get("extensions") or {}
        assert SKILLS not in extensions
        listing = await client.list_resources()
        by_uri = {r.uri: r for r in listing.resources}
        assert by_uri[SKILL_MD].name == "sales-analysis"
        assert by_uri[SKILL_MD].description == "Analyse this notebook's sales."
        read = await client.read_resource(SKILL_MD)
        assert read.contents[0].text.startswith("---\nname: sales-analysis\n")
        with pytest.raises(Exception, match=r"(?i)method not found"):
            await raw(client, "skills/list")


@MODES
async def test_a_cell_run_again_changes_the_digest_and_the_client_hears_it(
    served, mode, afterwards
):
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/list_changed":
            changed.set()

    afterwards(served.kernel, 'make_skill("Regions first.")')
    before = json.loads(served.kernel.eval("json.dumps(make_skill('Regions first.').entry)"))
    async with connect(served, mode, message_handler=on_message) as client:
        if mode == "legacy":
            await until(lambda: served.kernel.eval(OPEN_GET_STREAMS) >= 1, "the GET stream")
            served.kernel.run(f'make_skill("Totals first, {mode}.")')
        else:  # 2026-07-28: changes arrive on a subscriptions/listen stream
            async with client.listen(resources_list_changed=True) as subscription:
                served.kernel.run(f'make_skill("Totals first, {mode}.")')
                await asyncio.wait_for(subscription.__anext__(), 10)
        await asyncio.wait_for(changed.wait(), 10)
        read = await client.read_resource(SKILL_MD)
        data = content_bytes(read.contents[0])
        assert f"Totals first, {mode}." in data.decode()
        new_digest = "sha256:" + hashlib.sha256(data).hexdigest()
        assert new_digest != before["resources"][0]["digest"]
        if mode == "auto":
            got = await raw(client, "skills/get", {"uri": SKILL_MD})
            assert got["skill"]["resources"][0]["digest"] == new_digest


@MODES
async def test_through_the_bridge_over_stdio_the_same_bytes_and_digests(served, mode):
    async with Client(module_params("bridge", "skills"), mode=mode) as client:
        if mode == "legacy":
            listing = await client.list_resources()
            assert SKILL_MD in [r.uri for r in listing.resources]
            read = await client.read_resource(SKILL_MD)
            assert read.contents[0].text.startswith("---\nname: sales-analysis\n")
            return
        assert client.protocol_version == "2026-07-28"
        extensions = client.server_capabilities.model_dump(by_alias=True)["extensions"]
        assert extensions[SKILLS] == {"directoryRead": True}
        entries = (await raw(client, "skills/list"))["skills"]
        assert {e["uri"] for e in entries} == {SKILL_MD, "skill://acme/refunds/SKILL.md"}
        for entry in entries:
            assert (await raw(client, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
            await check_manifest(client, entry)


async def test_through_the_bridge_a_cell_run_again_is_heard_with_its_new_bytes(served, afterwards):
    """A client of ``mcp-notebook bridge`` (stdio) hears the skill change as a client of the
    notebook's HTTP endpoint does, and reads the new bytes."""
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/list_changed":
            changed.set()

    afterwards(served.kernel, 'make_skill("Regions first.")')
    params = module_params("bridge", "skills")
    streams = served.kernel.eval(OPEN_GET_STREAMS)
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        await client.read_resource(SKILL_MD)  # the bridge is through to the notebook
        await until(
            lambda: served.kernel.eval(OPEN_GET_STREAMS) > streams, "the bridge's GET stream"
        )
        served.kernel.run('make_skill("Totals first, through the bridge.")')
        await asyncio.wait_for(changed.wait(), 10)
        read = await client.read_resource(SKILL_MD)
        assert "Totals first, through the bridge." in read.contents[0].text
