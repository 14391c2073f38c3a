"""The portable test helpers (tests/portable.py) do on each OS what the tests assume.

Windows and macOS are simulated on Linux: ``sys.platform`` patched, a fake Popen that
records what it was sent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests import portable

LINUX = pytest.mark.skipif(sys.platform != "linux", reason="compares with Linux's /proc")


class FakePopen:
    def __init__(self) -> None:
        self.sent: list[int] = []

    def send_signal(self, sig: int) -> None:
        self.sent.append(sig)


@pytest.mark.parametrize(
    ("platform", "expected"),
    [("win32", portable.CTRL_BREAK_EVENT), ("linux", signal.SIGTERM), ("darwin", signal.SIGTERM)],
)
def test_stop_sends_what_the_platform_can_catch(monkeypatch, platform, expected):
    monkeypatch.setattr(sys, "platform", platform)
    process = FakePopen()
    portable.stop(process)
    assert process.sent == [expected]


@pytest.mark.parametrize(
    ("platform", "expected"),
    [("win32", portable.CTRL_BREAK_EVENT), ("linux", signal.SIGINT), ("darwin", signal.SIGINT)],
)
def test_interrupt_sends_ctrl_c_or_what_stands_for_it(monkeypatch, platform, expected):
    monkeypatch.setattr(sys, "platform", platform)
    process = FakePopen()
    portable.interrupt(process)
    assert process.sent == [expected]


def test_a_child_gets_its_own_process_group_on_windows_only(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    assert portable.spawn_options() == {"creationflags": 0x00000200}
    if hasattr(subprocess, "CREATE_NEW_PROCESS_GROUP"):  # on Windows itself
        assert portable.CREATE_NEW_PROCESS_GROUP == subprocess.CREATE_NEW_PROCESS_GROUP
    monkeypatch.setattr(sys, "platform", "darwin")
    assert portable.spawn_options() == {}


def test_windows_constants_match_the_os():
    assert getattr(signal, "CTRL_BREAK_EVENT", 1) == portable.CTRL_BREAK_EVENT


@LINUX
def test_rss_agrees_with_proc():
    with open(f"/proc/{os.getpid()}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    from_proc = int(line.split()[1]) * 1024
    assert abs(portable.rss() - from_proc) < max(from_proc // 20, 4 * 1024 * 1024)


@LINUX
def test_open_handles_agrees_with_proc():
    # listdir holds one descriptor of its own while it reads the folder, as psutil's does.
    assert portable.open_handles() == len(os.listdir(f"/proc/{os.getpid()}/fd"))


def test_open_handles_counts_a_new_file(tmp_path):
    before = portable.open_handles()
    with open(tmp_path / "f", "w"):
        assert portable.open_handles() == before + 1
    assert portable.open_handles() == before


def test_children_alive_and_exited():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        assert child.pid in portable.children(os.getpid())
        assert portable.alive(child.pid)
        assert portable.cpu_seconds(child.pid) >= 0
    finally:
        child.stdin.close()  # it exits
        child.wait(30)
    assert not portable.alive(child.pid)


def test_owner_only_checks_the_mode_bits_on_posix(tmp_path):
    if sys.platform == "win32":
        pytest.skip(portable.OWNER_ONLY_ON_WINDOWS)
    path = tmp_path / "secret"
    path.write_text("x")
    path.chmod(0o600)
    portable.assert_owner_only(path)
    path.chmod(0o644)
    with pytest.raises(AssertionError, match="0o644"):
        portable.assert_owner_only(path)


def test_owner_only_says_why_it_skips_on_windows(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(pytest.skip.Exception, match="secure_write"):
        portable.assert_owner_only(tmp_path)


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_linux_only_tooling_says_what_it_needs_elsewhere(monkeypatch, platform):
    monkeypatch.setattr(sys, "platform", platform)
    for needs, named in (
        (portable.CHROMIUM_NEEDS, "chromium"),
        (portable.NODE_NEEDS, "node-linux"),
    ):
        with pytest.raises(pytest.skip.Exception, match=f"not {platform}: .*{named}"):
            portable.require_linux(needs)


def test_linux_only_tooling_runs_on_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    portable.require_linux("anything")  # no skip


def test_a_zombie_is_not_alive(monkeypatch):
    import psutil

    class Zombie:
        def __init__(self, pid: int) -> None:
            pass

        def status(self) -> str:
            return psutil.STATUS_ZOMBIE

    monkeypatch.setattr(psutil, "Process", Zombie)
    assert not portable.alive(12345)
