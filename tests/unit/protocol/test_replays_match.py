"""How a replayed result is compared with the recorded one (protocol/replays.py)."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from mcp_notebook.protocol.calls import CallLog, CallRecord
from mcp_notebook.protocol.replays import assert_matches, replays


def png(width: int, height: int, colour: str = "red") -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_text_and_json_are_exact_and_floats_tolerant():
    assert_matches({"text": "abc", "n": 1, "x": 0.3}, {"text": "abc", "n": 1, "x": 0.1 + 0.2})
    assert_matches({"text": '{"mean": 0.3}'}, {"text": '{"mean":0.30000000000000004}'})
    with pytest.raises(AssertionError, match=r"result.text: 'abd' != 'abc'"):
        assert_matches({"text": "abc"}, {"text": "abd"})
    with pytest.raises(AssertionError, match="not close"):
        assert_matches({"x": 0.3}, {"x": 0.31})
    with pytest.raises(AssertionError, match="!="):
        assert_matches({"n": 1}, {"n": True})
    with pytest.raises(AssertionError, match="keys"):
        assert_matches({"a": 1}, {"a": 1, "b": 2})
    with pytest.raises(AssertionError, match="expected 2 items"):
        assert_matches([1, 2], [1])


def test_images_are_compared_by_type_and_size():
    red, blue = png(40, 20), png(40, 20, "blue")
    assert_matches(
        {"type": "image", "mimeType": "image/png", "data": red},
        {"type": "image", "mimeType": "image/png", "data": blue},
    )
    with pytest.raises(AssertionError, match=r"\(40, 21\) image, expected \(40, 20\)"):
        assert_matches(
            {"type": "image", "mimeType": "image/png", "data": red},
            {"type": "image", "mimeType": "image/png", "data": png(40, 21)},
        )
    with pytest.raises(AssertionError, match="expected an image"):
        assert_matches({"type": "image", "mimeType": "image/png", "data": red}, {"type": "text"})


def test_only_finished_whole_calls_of_three_methods_are_replayed(tmp_path):
    log = CallLog()
    done = log.add(CallRecord("tools/call", "add", {"a": 1}, "client"))
    done.finish("done", result={"content": [{"type": "text", "text": "2"}], "isError": False})
    log.add(CallRecord("tools/call", "add", {"a": "x"}, "client")).finish("error")
    log.add(CallRecord("completion/complete", "p", {}, "client")).finish("done", result={})
    chosen, skipped = replays(log)
    assert [c["target"] for c in chosen] == ["add"]
    assert chosen[0]["expected"] == {"content": [{"type": "text", "text": "2"}], "isError": False}
    assert len(skipped) == 2
    path = tmp_path / "test_x.py"
    assert log.to_pytest(path, notebook="nb.ipynb") == skipped
    compile(path.read_text(), str(path), "exec")
    with pytest.raises(ValueError, match="none of these calls"):
        log.to_pytest(path, [log[1]])
