"""Words of a `%mcp` line and of $MCP_REPLAY_COMMAND keep Windows paths whole on Windows.

sh rules (shlex) take a backslash as an escape: on Windows `%mcp export C:\\Users\\me\\out`
wrote the package to `C:Usersmeout` (relative to drive C's current folder). Simulated with
a patched `sys.platform`; the Windows rules are checked as the inverse of
`subprocess.list2cmdline`, which is how Windows programs quote their arguments.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_notebook import NotebookMCP, commandline
from mcp_notebook.protocol.replays import pytest_source

WINDOWS_ARGVS = [
    [r"C:\Users\me\out"],
    [r"C:\Program Files\Python312\python.exe", "-m", "calc_mcp"],
    [r"\\server\share\my notebooks\a.ipynb", r"ends in a backslash\\"],
    ['say "hi"', "it's", "", "tab\there"],
    ["\\"],
]


@pytest.mark.parametrize("argv", WINDOWS_ARGVS, ids=range(len(WINDOWS_ARGVS)))
def test_windows_rules_undo_what_windows_quoting_does(argv):
    line = subprocess.list2cmdline(argv)
    assert commandline.split_windows(line) == argv


def test_the_platform_picks_the_rules(monkeypatch):
    line = r"export C:\Users\me\out --notebook "
    monkeypatch.setattr(sys, "platform", "win32")
    assert commandline.split(line + r'"C:\My Files\a.ipynb"') == [
        "export",
        r"C:\Users\me\out",
        "--notebook",
        r"C:\My Files\a.ipynb",
    ]
    monkeypatch.setattr(sys, "platform", "darwin")
    assert commandline.split(line + "'my files/a.ipynb'") == [
        "export",
        "C:Usersmeout",  # sh rules: what a POSIX shell would make of it too
        "--notebook",
        "my files/a.ipynb",
    ]


def test_mcp_export_on_windows_gets_the_paths_as_typed(monkeypatch):
    pytest.importorskip("IPython")
    from mcp_notebook.export import package
    from mcp_notebook.kernel.magics import McpMagics

    asked: list[tuple[Path, Path]] = []

    class Stop(Exception):
        pass

    def export_notebook(notebook, directory, **_):
        asked.append((notebook, directory))
        raise Stop

    monkeypatch.setattr(package, "export_notebook", export_notebook)
    monkeypatch.setattr(sys, "platform", "win32")
    magics = McpMagics(None, NotebookMCP())
    with pytest.raises(Stop):
        magics.mcp(r'export C:\Users\me\out --notebook "C:\My Files\a.ipynb"')
    assert asked == [(Path(r"C:\My Files\a.ipynb"), Path(r"C:\Users\me\out"))]


@pytest.mark.parametrize(
    "python", [r"C:\Python312\python.exe", r"C:\Program Files\Python312\python.exe"]
)
def test_a_replay_file_runs_a_windows_replay_command_as_written(python, tmp_path, monkeypatch):
    pytest.importorskip("mcp.client")
    calls = [{"method": "tools/call", "target": "add", "arguments": {}, "expected": {}}]
    path = tmp_path / "test_replay.py"
    path.write_text(pytest_source(calls, [], None, "0"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("replay_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("MCP_REPLAY_COMMAND", subprocess.list2cmdline([python, "-m", "calc_mcp"]))
    monkeypatch.setattr(sys, "platform", "win32")
    server = module.server()
    assert [server.command, *server.args] == [python, "-m", "calc_mcp"]


@pytest.mark.parametrize("windows", [False, True])
def test_a_trailing_comment_ends_a_magic_line_when_asked(windows):
    line = "start --port 0  # serve on any free port"
    assert commandline.split(line, windows=windows, comments=True) == ["start", "--port", "0"]
    assert "#" in " ".join(commandline.split(line, windows=windows))  # not asked: kept
    if not windows:  # a quoted # is a value, not a comment
        assert commandline.split("start --token '#abc'", comments=True) == [
            "start",
            "--token",
            "#abc",
        ]
