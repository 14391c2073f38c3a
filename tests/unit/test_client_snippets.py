"""Client snippets per platform (sys.platform patched), and the CLI on a console that cannot
show every character. No kernel: the live server is this test process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from mcp_notebook import clients, discovery

NAME = "my book"
WINDOWS_PYTHONW = r"C:\Program Files\Python312\pythonw.exe"
WINDOWS_PYTHON = r"C:\Program Files\Python312\python.exe"
MAC_PYTHON = "/Users/ada/my envs/bin/python"


@pytest.fixture
def runtime(tmp_path, monkeypatch) -> str:
    folder = tmp_path / "Jupyter Runtime"
    monkeypatch.setenv("MCP_NOTEBOOK_RUNTIME_DIR", str(folder))
    return str(folder)


def on(monkeypatch, platform: str, executable: str) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(sys, "executable", executable)


@pytest.mark.parametrize(
    ("platform", "desktop", "cursor", "vscode"),
    [
        (
            "win32",
            r"%APPDATA%\Claude\claude_desktop_config.json",
            r"%USERPROFILE%\.cursor\mcp.json",
            r"%APPDATA%\Code\User\mcp.json",
        ),
        (
            "darwin",
            "~/Library/Application Support/Claude/claude_desktop_config.json",
            "~/.cursor/mcp.json",
            "~/Library/Application Support/Code/User/mcp.json",
        ),
        (
            "linux",
            "~/.config/Claude/claude_desktop_config.json",
            "~/.cursor/mcp.json",
            "~/.config/Code/User/mcp.json",
        ),
    ],
)
def test_snippets_name_the_clients_config_file_of_the_platform(
    monkeypatch, runtime, platform, desktop, cursor, vscode
):
    on(monkeypatch, platform, WINDOWS_PYTHON if platform == "win32" else MAC_PYTHON)
    for client, path in (("claude-desktop", desktop), ("cursor", cursor), ("vscode", vscode)):
        found = clients.snippet(client, NAME)
        assert found.where.startswith("Merge into ") and path in found.where, found.where
        entry = json.loads(found.text)["servers" if client == "vscode" else "mcpServers"][NAME]
        assert entry["env"] == {"MCP_NOTEBOOK_RUNTIME_DIR": runtime}


def test_windows_snippets_run_python_exe_with_windows_quoting(monkeypatch, runtime):
    on(monkeypatch, "win32", WINDOWS_PYTHONW)  # a kernel started from a GUI
    entry = json.loads(clients.snippet("claude-desktop", NAME).text)["mcpServers"][NAME]
    assert entry["command"] == WINDOWS_PYTHON
    stdio, http = clients.snippet(
        "claude-code", NAME, "http://127.0.0.1:8765/mcp", "tok"
    ).text.splitlines()
    assert stdio == (
        f'claude mcp add --transport stdio "my book" --env "MCP_NOTEBOOK_RUNTIME_DIR={runtime}"'
        rf' -- "{WINDOWS_PYTHON}" -m mcp_notebook bridge "my book"'
    )
    assert http == (
        'claude mcp add --transport http "my book" http://127.0.0.1:8765/mcp'
        ' --header "Authorization: Bearer tok"'
    )


def test_posix_snippets_use_sh_quoting(monkeypatch, runtime):
    on(monkeypatch, "darwin", MAC_PYTHON)
    entry = json.loads(clients.snippet("claude-desktop", NAME).text)["mcpServers"][NAME]
    assert entry["command"] == MAC_PYTHON
    stdio, http = clients.snippet(
        "claude-code", NAME, "http://127.0.0.1:8765/mcp", "tok"
    ).text.splitlines()
    assert shlex.split(stdio) == [
        *("claude", "mcp", "add", "--transport", "stdio", NAME),
        *("--env", f"MCP_NOTEBOOK_RUNTIME_DIR={runtime}", "--"),
        *(MAC_PYTHON, "-m", "mcp_notebook", "bridge", NAME),
    ]
    assert shlex.split(http) == [
        *("claude", "mcp", "add", "--transport", "http", NAME, "http://127.0.0.1:8765/mcp"),
        *("--header", "Authorization: Bearer tok"),
    ]


SERVER = "Café 数据"


def test_the_cli_prints_non_ascii_names_on_an_ascii_console(runtime):
    """A Windows console in cp1252, or PYTHONIOENCODING=ascii: escapes, not a crash."""
    path = discovery.register(SERVER, "http://127.0.0.1:9/mcp", "tok", notebook="/zoë/分析.ipynb")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUTF8"}
    env["PYTHONIOENCODING"] = "ascii"

    def cli(*args: str) -> tuple[str, str]:
        result = subprocess.run(
            [sys.executable, "-m", "mcp_notebook", *args], capture_output=True, env=env, timeout=60
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode("ascii"), result.stderr.decode("ascii")

    try:
        listed, _ = cli("list")
        name, url, *_, notebook = listed.rstrip("\n").split("\t")
        assert name.encode().decode("unicode_escape") == SERVER
        assert notebook.encode().decode("unicode_escape") == "/zoë/分析.ipynb"
        assert url == "http://127.0.0.1:9/mcp"

        pasted, _ = cli("config", "claude-desktop", SERVER)
        assert list(json.loads(pasted)["mcpServers"]) == [SERVER]  # JSON escapes: still JSON

        lines, note = cli("config", "claude-code", SERVER)
        assert "PYTHONIOENCODING=utf-8" in note  # the shell lines are not usable as shown
        assert lines.startswith("claude mcp add --transport stdio")
    finally:
        discovery.unregister(path)


@pytest.mark.parametrize("client", clients.CLIENTS)
def test_with_the_dispatcher_every_snippet_runs_the_bridge_that_asks_for_it(
    monkeypatch, runtime, client
):
    on(monkeypatch, "linux", MAC_PYTHON)
    found = clients.snippet(client, NAME, "http://127.0.0.1:8765/mcp", "t0k", dispatcher=True)
    if client in ("claude-code", "gemini-cli", "codex"):
        (line,) = found.text.splitlines()  # no HTTP line: only the bridge can ask for it
        assert shlex.split(line)[-3:] == ["bridge", NAME, "--dispatcher"]
        assert "t0k" not in line
        return
    servers = json.loads(found.text)
    (entry,) = (servers.get("mcpServers") or servers["servers"]).values()
    assert entry["args"] == ["-m", "mcp_notebook", "bridge", NAME, "--dispatcher"]
    plain = json.loads(clients.snippet(client, NAME).text)
    (entry,) = (plain.get("mcpServers") or plain["servers"]).values()
    assert "--dispatcher" not in entry["args"]


def test_gemini_and_codex_lines_put_each_word_where_that_cli_takes_it(monkeypatch, runtime):
    """Gemini CLI: name and command, then --env (it takes the words after it), then `--`
    and the arguments; --header last. Codex: no --transport, `NAME --env ... -- COMMAND`."""
    on(monkeypatch, "linux", MAC_PYTHON)
    url, env = "http://127.0.0.1:8765/mcp", f"MCP_NOTEBOOK_RUNTIME_DIR={runtime}"
    bridge = ["-m", "mcp_notebook", "bridge", NAME]
    stdio, http = clients.snippet("gemini-cli", NAME, url, "tok").text.splitlines()
    add = ["gemini", "mcp", "add", "--scope", "user"]
    assert shlex.split(stdio) == [*add, NAME, MAC_PYTHON, "--env", env, "--", *bridge]
    assert shlex.split(http) == [
        *add,
        "--transport",
        "http",
        NAME,
        url,
        "--header",
        "Authorization: Bearer tok",
    ]
    assert "trust" in clients.snippet("gemini-cli", NAME).where
    codex = clients.snippet("codex", NAME, url, "tok").text
    assert shlex.split(codex) == [
        "codex",
        "mcp",
        "add",
        "my-book",  # Codex refuses a space in a server's name
        "--env",
        env,
        "--",
        MAC_PYTHON,
        *bridge,
    ]
    assert "tok" not in codex  # the bridge reads the token from the discovery file
    assert shlex.split(clients.snippet("codex", "café 2").text)[3] == "caf--2"
    on(monkeypatch, "win32", WINDOWS_PYTHONW)
    line = clients.snippet("codex", NAME).text
    assert line.endswith(f'-- "{WINDOWS_PYTHON}" -m mcp_notebook bridge "my book"'), line
