"""A file's media type does not depend on the machine's MIME database.

On Windows ``mimetypes`` reads the registry, which installed software rewrites: ``.js``
becomes ``text/plain``, ``.csv`` ``application/vnd.ms-excel``. Here the registry read is
simulated by polluting ``mimetypes`` the same way; the package must not follow it.
"""

from __future__ import annotations

import mimetypes

import pytest

from mcp_notebook import Audio, Image
from mcp_notebook.registry import filetypes

POLLUTED = {
    ".js": "text/plain",
    ".csv": "application/vnd.ms-excel",
    ".png": "image/x-odd",
    ".json": "text/plain",
    ".wav": "audio/x-wav-from-some-player",
    ".svg": "text/xml",
    ".mp4": "application/x-some-player",  # not in our table: Python's defaults answer
}


@pytest.fixture
def polluted_registry(monkeypatch):
    """``mimetypes`` initialised from a Windows registry that installed software rewrote."""
    for name in ("_db", "inited", "types_map", "common_types", "suffix_map", "encodings_map"):
        monkeypatch.setattr(mimetypes, name, getattr(mimetypes, name))

    def read_windows_registry(self, strict=True):
        for extension, mime in POLLUTED.items():
            self.add_type(mime, extension, strict)

    monkeypatch.setattr(mimetypes.MimeTypes, "read_windows_registry", read_windows_registry)
    monkeypatch.setattr(mimetypes, "knownfiles", [])  # no /etc/mime.types on Windows
    monkeypatch.setattr(mimetypes, "inited", False)
    mimetypes.init()
    filetypes._builtin.cache_clear()
    assert mimetypes.guess_type("app.js")[0] == "text/plain"  # the simulation took
    yield
    filetypes._builtin.cache_clear()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("app.js", "text/javascript"),
        ("sales.csv", "text/csv"),
        ("plot.png", "image/png"),
        ("PLOT.PNG", "image/png"),
        ("data.json", "application/json"),
        ("hello.wav", "audio/wav"),
        ("chart.svg", "image/svg+xml"),
        ("clip.mp4", "video/mp4"),
    ],
)
def test_types_do_not_follow_a_polluted_registry(polluted_registry, name, expected):
    assert filetypes.mime_for(name) == expected


def test_an_image_file_gets_its_type_from_our_table(polluted_registry, tmp_path):
    path = tmp_path / "plot.png"
    path.write_bytes(b"not sniffable")  # the type can only come from the name
    assert Image(path=path).block()["mimeType"] == "image/png"
    sound = tmp_path / "hello.wav"
    sound.write_bytes(b"not sniffable")
    assert Audio(path=sound).block()["mimeType"] == "audio/wav"


def test_an_unknown_extension_still_falls_back_to_the_bytes(polluted_registry, tmp_path):
    path = tmp_path / "picture.unknown-extension"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 8)
    assert Image(path=path).block()["mimeType"] == "image/png"
