"""Agent Skills served over MCP (io.modelcontextprotocol/skills): the registry's rules
(names, digests, folders on disk) and the extension's methods in the sans-IO core."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, modern
from mcp_notebook.protocol.session import Session
from mcp_notebook.registry.skills import MAX_TOTAL_BYTES, SkillError

MODERN = "2026-07-28"
SKILLS = "io.modelcontextprotocol/skills"
BODY = "# Sales analysis\n\nLoad the sales with `load_sales`, then plot them.\n"


def modern_request(method: str, params: dict | None = None) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


async def ask(server: Server, method: str, params: dict | None = None) -> dict:
    message = modern_request(method, params)
    reply = await server.handle(message, modern.open_request(message))
    assert reply is not None
    return reply


def app_with_skill() -> NotebookMCP:
    app = NotebookMCP()

    @app.tool
    def load_sales(region: str) -> str:
        """The sales of one region."""
        return region

    app.skill(
        "team/sales-analysis",
        description="Analyse the sales data of this notebook.",
        text=BODY,
        files={"data/regions.csv": "region\nnorth\n", "assets/logo.bin": b"\x89\x00\xff"},
    )
    return app


def read_bytes(contents: dict[str, Any]) -> bytes:
    if "blob" in contents:
        return base64.b64decode(contents["blob"])
    return contents["text"].encode("utf-8")


# -- names and frontmatter ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, rule",
    [
        ("Sales", "lowercase"),
        ("sales--analysis", "single hyphens"),
        ("-sales", "single hyphens"),
        ("sales-", "single hyphens"),
        ("x" * 65, "longer than 64"),
        ("", "needs a name"),
        ("team//sales", "non-empty"),
        ("../sales", "lowercase"),
        ("sales_analysis", "lowercase"),
    ],
)
def test_a_bad_skill_name_is_refused_at_registration_saying_which_rule(name, rule):
    app = NotebookMCP()
    with pytest.raises(SkillError, match=rule):
        app.skill(name, description="d", text="body")
    assert app.registry.resources == {}  # nothing half-registered


def test_a_skill_file_path_that_climbs_out_or_is_absolute_is_refused():
    app = NotebookMCP()
    for bad in ("../x.md", "/etc/passwd", "a/../../x", "a//b", "C:/x", "a\\b", "./x"):
        with pytest.raises(SkillError):
            app.skill("s", description="d", text="body", files={bad: "x"})
    assert app.registry.resources == {}


def test_skill_md_is_frontmatter_then_body_and_the_entry_repeats_the_frontmatter():
    app = NotebookMCP()
    made = app.skill(
        "notes",
        description='Say "hi" — in any language: really.',
        text="Body text.",
        frontmatter={"license": "MIT", "metadata": {"version": "1.2"}},
        tools=False,
    )
    import yaml

    text = made.contents["SKILL.md"].data.decode()
    head, body = text.split("\n---\n", 1)
    assert yaml.safe_load(head.removeprefix("---\n")) == made.entry["frontmatter"]
    assert made.entry["frontmatter"] == {
        "name": "notes",
        "description": 'Say "hi" — in any language: really.',
        "license": "MIT",
        "metadata": {"version": "1.2"},
    }
    assert body.strip() == "Body text."


def test_an_unknown_frontmatter_field_or_no_description_is_a_clear_error():
    app = NotebookMCP()
    with pytest.raises(SkillError, match="Unknown frontmatter"):
        app.skill("s", description="d", text="b", frontmatter={"hooks": "rm -rf /"})
    with pytest.raises(SkillError, match="description"):
        app.skill("s", text="# Only a heading")


# -- manifests and the methods --------------------------------------------------------------


async def test_skills_list_get_and_every_read_match_the_manifest_byte_for_byte():
    app = app_with_skill()
    server = Server(app.registry, name="t", version="1")
    listed = (await ask(server, "skills/list"))["result"]
    assert listed["resultType"] == "complete"
    assert {"ttlMs", "cacheScope"} <= set(listed)
    [entry] = listed["skills"]
    assert entry["uri"] == "skill://team/sales-analysis/SKILL.md"
    assert entry["frontmatter"]["name"] == "sales-analysis"
    got = (await ask(server, "skills/get", {"uri": entry["uri"]}))["result"]
    assert got["skill"] == entry and {"ttlMs", "cacheScope"} <= set(got)
    uris = [r["uri"] for r in entry["resources"]]
    assert uris[0] == entry["uri"]
    assert "skill://team/sales-analysis/references/tools.md" in uris  # generated
    for listed_file in entry["resources"]:
        read = (await ask(server, "resources/read", {"uri": listed_file["uri"]}))["result"]
        data = read_bytes(read["contents"][0])
        assert listed_file["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert listed_file["size"] == len(data)
    reference = app.registry.resources["skill://team/sales-analysis/references/tools.md"]
    text = reference.reader()
    assert "load_sales" in text and '"region"' in text  # the tool and its schema


async def test_the_skill_md_links_the_generated_tools_reference():
    app = app_with_skill()
    skill_md = app.registry.resources["skill://team/sales-analysis/SKILL.md"].reader()
    assert "(references/tools.md)" in skill_md


async def test_skills_get_of_an_unknown_or_non_skill_uri_is_invalid_params():
    server = Server(app_with_skill().registry, name="t", version="1")
    for uri in (
        "skill://team/other/SKILL.md",
        "skill://team/sales-analysis/data/regions.csv",
        "file:///etc/passwd",
    ):
        error = (await ask(server, "skills/get", {"uri": uri}))["error"]
        assert error["code"] == -32602 and uri in error["message"]
    assert (await ask(server, "skills/get", {}))["error"]["code"] == -32602
    for uri in (
        "skill://team/sales-analysis/../../../etc/passwd",
        "skill://team/sales-analysis/%2e%2e/secret",
        "skill:///etc/passwd",
    ):
        for method in ("skills/get", "resources/read", "resources/directory/read"):
            assert (await ask(server, method, {"uri": uri}))["error"]["code"] == -32602


async def test_directory_read_lists_direct_children_and_refuses_files():
    server = Server(app_with_skill().registry, name="t", version="1")
    root = (await ask(server, "resources/directory/read", {"uri": "skill://team/sales-analysis"}))[
        "result"
    ]
    children = {r["uri"]: r["mimeType"] for r in root["resources"]}
    assert children == {
        "skill://team/sales-analysis/SKILL.md": "text/markdown",
        "skill://team/sales-analysis/assets": "inode/directory",
        "skill://team/sales-analysis/data": "inode/directory",
        "skill://team/sales-analysis/references": "inode/directory",
    }
    data = await ask(
        server, "resources/directory/read", {"uri": "skill://team/sales-analysis/data"}
    )
    assert [r["name"] for r in data["result"]["resources"]] == ["regions.csv"]
    for uri in (
        "skill://team/sales-analysis/SKILL.md",
        "skill://nothing",
        "skill://team/sales-analysis/",
    ):
        error = (await ask(server, "resources/directory/read", {"uri": uri}))["error"]
        assert error["code"] == -32602


async def test_discover_declares_the_extension_and_a_2025_handshake_does_not():
    server = Server(NotebookMCP().registry, name="t", version="1")
    discovered = (await ask(server, "server/discover"))["result"]
    assert discovered["capabilities"]["extensions"][SKILLS] == {"directoryRead": True}
    assert "resources" in discovered["capabilities"]
    session = Session()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    answer = await server.handle(init, session)
    assert SKILLS not in answer["result"]["capabilities"].get("extensions", {})


async def test_a_2025_session_sees_skill_files_as_ordinary_resources():
    app = app_with_skill()
    server = Server(app.registry, name="t", version="1")
    session = Session()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    await server.handle(init, session)
    listing = await server.handle({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}, session)
    uris = [r["uri"] for r in listing["result"]["resources"]]
    assert "skill://team/sales-analysis/SKILL.md" in uris
    top = next(r for r in listing["result"]["resources"] if r["uri"].endswith("SKILL.md"))
    assert top["name"] == "sales-analysis" and top["mimeType"] == "text/markdown"
    assert top["description"] == "Analyse the sales data of this notebook."
    refused = await server.handle({"jsonrpc": "2.0", "id": 3, "method": "skills/list"}, session)
    assert refused["error"]["code"] == -32601


def test_re_registering_a_skill_replaces_its_files_and_announces_the_change():
    app = app_with_skill()
    seen: list[tuple[str, str | None]] = []
    app.registry.subscribe(lambda kind, detail: seen.append((kind, detail)))
    before = app.registry.resources["skill://team/sales-analysis/SKILL.md"]
    app.skill("team/sales-analysis", description="Analyse the sales.", text="New text.")
    after = app.registry.resources["skill://team/sales-analysis/SKILL.md"]
    assert (
        after.skill.entry["resources"][0]["digest"] != before.skill.entry["resources"][0]["digest"]
    )
    assert "skill://team/sales-analysis/data/regions.csv" not in app.registry.resources
    assert ("resources", None) in seen
    assert ("updated", "skill://team/sales-analysis/SKILL.md") in seen


def test_a_skill_cannot_sit_inside_another_registered_skill():
    app = app_with_skill()
    with pytest.raises(ValueError, match="overlap"):
        app.skill("team/sales-analysis/inner", description="d", text="b")


def test_removing_a_skill_by_name_removes_all_its_files():
    app = app_with_skill()
    app.remove("sales-analysis")
    assert not [u for u in app.registry.resources if u.startswith("skill://")]


# -- folders on disk -----------------------------------------------------------------------


def write_skill(folder: Path, name: str, extra: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: A skill on disk.\nlicense: MIT\n---\n\nDo it.\n"
    )
    for relative, text in (extra or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


async def test_a_folder_is_served_with_every_file_and_nested_skills_listed_flat(tmp_path):
    folder = write_skill(tmp_path / "refunds", "refunds", {"examples/email.md": "Dear ..."})
    write_skill(folder / "chargebacks", "chargebacks")
    app = NotebookMCP()
    app.skill("acme/refunds", path=folder)
    server = Server(app.registry, name="t", version="1")
    entries = {e["uri"]: e for e in (await ask(server, "skills/list"))["result"]["skills"]}
    outer = entries["skill://acme/refunds/SKILL.md"]
    inner = entries["skill://acme/refunds/chargebacks/SKILL.md"]
    assert outer["frontmatter"] == {
        "name": "refunds",
        "description": "A skill on disk.",
        "license": "MIT",
    }
    outer_uris = {r["uri"] for r in outer["resources"]}
    assert outer_uris == {
        "skill://acme/refunds/SKILL.md",
        "skill://acme/refunds/examples/email.md",
        "skill://acme/refunds/chargebacks/SKILL.md",  # nested files belong to both
    }
    assert [r["uri"] for r in inner["resources"]] == ["skill://acme/refunds/chargebacks/SKILL.md"]
    on_disk = (folder / "SKILL.md").read_bytes()
    digest = next(r["digest"] for r in outer["resources"] if r["uri"] == outer["uri"])
    assert digest == "sha256:" + hashlib.sha256(on_disk).hexdigest()


def test_a_folder_whose_name_disagrees_with_the_call_is_refused(tmp_path):
    folder = write_skill(tmp_path / "refunds", "refunds")
    with pytest.raises(SkillError, match="refunds"):
        NotebookMCP().skill("acme/other", path=folder)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    folder = write_skill(tmp_path / "leaky", "leaky")
    os.symlink(secret, folder / "notes.md")
    app = NotebookMCP()
    with pytest.raises(SkillError, match="leads out"):
        app.skill(path=folder)
    (folder / "notes.md").unlink()
    os.symlink(tmp_path, folder / "up")
    with pytest.raises(SkillError, match="symlinked directory"):
        app.skill(path=folder)
    assert app.registry.resources == {}


def test_a_special_file_or_too_many_bytes_in_a_folder_is_refused(tmp_path):
    folder = write_skill(tmp_path / "big", "big")
    os.mkfifo(folder / "pipe")  # a read of it would block forever
    with pytest.raises(SkillError, match="not a regular file"):
        NotebookMCP().skill(path=folder)
    (folder / "pipe").unlink()
    with open(folder / "huge.bin", "wb") as file:
        file.truncate(MAX_TOTAL_BYTES + 1)
    with pytest.raises(SkillError, match="more than"):
        NotebookMCP().skill(path=folder)


def test_a_skill_md_whose_name_is_not_its_folder_path_is_refused():
    with pytest.raises(SkillError, match="last segment"):
        from mcp_notebook.registry.skills import Skill

        Skill("team/x", b"---\nname: y\ndescription: d\n---\nbody\n")


# -- from the notebook's markdown cells ----------------------------------------------------


def notebook(tmp_path: Path) -> Path:
    document = nbformat.v4.new_notebook()
    document.cells = [
        nbformat.v4.new_markdown_cell("# Quarterly Sales\n\nThis notebook serves the sales."),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("## How to use\n\nCall `load_sales` first."),
        nbformat.v4.new_markdown_cell("Then plot."),
        nbformat.v4.new_markdown_cell("## Internals\n\nNot for agents."),
        nbformat.v4.new_markdown_cell("Tagged advice.", metadata={"tags": ["skill"]}),
    ]
    path = tmp_path / "sales.ipynb"
    nbformat.write(document, str(path))
    return path


def test_from_cells_takes_the_name_from_the_first_heading_and_the_chosen_cells(tmp_path):
    app = NotebookMCP()
    app.notebook_path = str(notebook(tmp_path))
    every = app.skill()
    assert every.path == "quarterly-sales"
    assert every.entry["frontmatter"]["description"] == "This notebook serves the sales."
    under = app.skill("how-to", from_cells={"heading": "How to use"})
    text = under.contents["SKILL.md"].data.decode()
    assert "Call `load_sales` first." in text and "Then plot." in text
    assert "Not for agents" not in text and "Quarterly" not in text
    tagged = app.skill("tagged", description="d", from_cells={"tag": "skill"})
    assert "Tagged advice." in tagged.contents["SKILL.md"].data.decode()
    assert "Then plot" not in tagged.contents["SKILL.md"].data.decode()


def test_from_cells_without_a_notebook_file_says_what_to_pass():
    with pytest.raises(SkillError, match="notebook file"):
        NotebookMCP().skill("s", description="d")


def test_every_generated_skill_passes_the_agent_skills_validator(tmp_path):
    validator = pytest.importorskip("skills_ref.validator")  # published for 3.11+ only
    app = app_with_skill()
    app.notebook_path = str(notebook(tmp_path))
    app.skill()
    app.skill("how-to", from_cells={"heading": "How to use"}, frontmatter={"license": "MIT"})
    for entry in [
        r.skill.entry for r in app.registry.resources.values() if getattr(r, "skill", None)
    ]:
        name = entry["frontmatter"]["name"]
        folder = tmp_path / "out" / name
        root = entry["uri"].removesuffix("SKILL.md")
        for listed in entry["resources"]:
            target = folder / listed["uri"].removeprefix(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            value = app.registry.resources[listed["uri"]].reader()
            target.write_bytes(value.encode() if isinstance(value, str) else value)
        assert validator.validate(folder) == [], name


async def test_the_tools_reference_shows_a_call_that_worked_from_the_call_history():
    app = app_with_skill()
    server = Server(app.registry, name="t", version="1", calls=app.calls)
    called = await ask(
        server, "tools/call", {"name": "load_sales", "arguments": {"region": "north"}}
    )
    assert called["result"]["isError"] is False
    made = app.skill("team/sales-analysis", description="d", text=BODY)
    reference = made.contents["references/tools.md"].data.decode()
    assert '"region": "north"' in reference


async def test_a_huge_or_missing_uri_is_a_short_invalid_params_error():
    server = Server(app_with_skill().registry, name="t", version="1")
    for method in ("skills/get", "resources/directory/read"):
        for params in ({"uri": "skill://" + "a" * 1_000_000}, {"uri": 7}, {}):
            error = (await ask(server, method, params))["error"]
            assert error["code"] == -32602 and len(error["message"]) < 200


def test_a_path_from_the_servers_root_is_found_in_the_kernels_folder(tmp_path, monkeypatch):
    notebook(tmp_path)
    monkeypatch.chdir(tmp_path)
    app = NotebookMCP()
    app.notebook_path = "projects/q3/sales.ipynb"  # as an older Jupyter Server says it
    assert app.skill().path == "quarterly-sales"


def test_the_panel_lists_each_skill_once_not_each_of_its_files(tmp_path):
    from mcp_notebook.ui.panelrows import registrations

    app = app_with_skill()
    folder = write_skill(tmp_path / "refunds", "refunds", {"examples/email.md": "Dear ..."})
    write_skill(folder / "chargebacks", "chargebacks")
    app.skill(path=folder)
    rows = [(r["kind"], r["name"], r["description"]) for r in registrations(app.registry)]
    assert rows == [
        ("tool", "load_sales", "The sales of one region."),
        ("skill", "team/sales-analysis", "Analyse the sales data of this notebook."),
        ("skill", "refunds", "A skill on disk."),
        ("skill", "refunds/chargebacks", "A skill on disk."),
    ]


def test_a_resource_named_like_a_skill_leaves_the_skill_whole():
    """``mcp.resource(name=X)`` beside a skill named X moved "X" to its URI: the skill lost
    its SKILL.md, and skills/list no longer listed it."""
    app = app_with_skill()
    app.resource("notes", uri="notes://sales", name="sales-analysis")
    assert "skill://team/sales-analysis/SKILL.md" in app.registry.resources
    assert "notes://sales" in app.registry.resources


def test_a_skill_shows_as_its_uri_and_size_not_its_bytes():
    """``mcp.skill(...)`` as a cell's last line displayed the whole dataclass, file bytes
    included."""
    skill = app_with_skill().skill("short", description="A short one.", text="Hi.")
    assert (
        repr(skill)
        == f"<skill skill://short/SKILL.md: 1 file, {skill.entry['resources'][0]['size']:,} bytes>"
    )
