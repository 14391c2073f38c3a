"""`serve --transport stdio` and a lone surrogate, in both framings: while the notebook
still starts (answered by the fast start, before the kernel is up) and once it serves.

It used to exit with status 1 during the start, and to answer nothing after it. Now each
request is refused with one ``-32600`` (to its id when that is readable), a held request
is still answered once the notebook is up, and a tool's lone surrogate comes back as
U+FFFD. The same messages against the bridge, the export and HTTP: test_lone_surrogates.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.serve.test_stdio_start import INITIALIZED, request, wait_for_file, write_notebook
from tests.stdio import INITIALIZE, FramedStdio, encode_frame
from tests.unit.export.test_lone_surrogates import ODD_TEXT, ODD_TOOL, assert_each_refused_once
from tests.unit.protocol.test_json_policy import LONE_SURROGATES


def send_lone_surrogates(raw: FramedStdio) -> None:
    for text, _ in LONE_SURROGATES.values():
        raw.write(encode_frame(raw.framing, text.encode()))


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_serve_refuses_lone_surrogates_while_the_notebook_starts_and_after(tmp_path, framing):
    go = tmp_path / "go"
    path = write_notebook(tmp_path, "odd", wait_for_file(go), "%load_ext mcp_notebook", ODD_TOOL)
    raw = FramedStdio("serve", path, "--transport", "stdio", framing=framing)
    try:
        raw.send(INITIALIZE)
        assert raw.reply_to(1, 120)["result"]["serverInfo"]["name"] == "odd"
        raw.send(INITIALIZED)
        raw.send(request(2, "tools/list"))  # held until the notebook has run
        send_lone_surrogates(raw)
        raw.send(request(3, "ping"))  # answered by the fast start: after the refusals
        raw.reply_to(3, 120)
        assert_each_refused_once(raw.messages)
        assert raw.replies_to(2) == []  # the first cell still waits for the test
        go.touch()
        assert [t["name"] for t in raw.reply_to(2, 120)["result"]["tools"]] == ["odd"]
        before = len(raw.messages)
        send_lone_surrogates(raw)
        raw.send(request(4, "tools/call", {"name": "odd", "arguments": {"text": "x"}}))
        called = raw.reply_to(4, 120)
        assert called["result"]["content"] == [{"type": "text", "text": ODD_TEXT}]
        assert_each_refused_once(raw.messages[before:])
        assert len(raw.replies_to(2)) == 1
    finally:
        code = raw.close()
    assert code == 0, b"".join(raw.stderr).decode(errors="replace")
    assert raw.bad == []
