"""A request relayed by the Jupyter Server extension names its Jupyter user, provably."""

from __future__ import annotations

from types import SimpleNamespace

from mcp_notebook import discovery
from mcp_notebook.protocol import Session
from mcp_notebook.serverext.identity import relay_headers
from mcp_notebook.transports.relayed import RELAY_KEY_HEADER, RELAY_USER_HEADER, jupyter_user, via

KEY = "k" * 32


def test_the_user_counts_only_next_to_the_right_key():
    assert jupyter_user({RELAY_KEY_HEADER: KEY, RELAY_USER_HEADER: "alice"}, KEY) == "alice"
    assert jupyter_user({RELAY_KEY_HEADER: "wrong", RELAY_USER_HEADER: "alice"}, KEY) is None
    assert jupyter_user({RELAY_USER_HEADER: "alice"}, KEY) is None
    assert jupyter_user({RELAY_KEY_HEADER: "", RELAY_USER_HEADER: "alice"}, "") is None
    assert jupyter_user({RELAY_KEY_HEADER: KEY}, KEY) == "unknown"
    long = jupyter_user({RELAY_KEY_HEADER: KEY, RELAY_USER_HEADER: "a" * 10_000}, KEY)
    assert len(long) == 200


def test_the_relay_sends_what_the_server_reads_back_non_ascii_names_included():
    record = SimpleNamespace(relay_key=KEY)
    headers = relay_headers(record, SimpleNamespace(name="Zoë Ångström", username="x1"))
    headers[RELAY_USER_HEADER].encode("latin-1")  # a valid header value
    assert via(headers, SimpleNamespace(relay_key=KEY)) == "Jupyter user Zoë Ångström"
    assert relay_headers(SimpleNamespace(relay_key=None), SimpleNamespace(name="a")) == {}


def test_a_session_label_says_who_relayed_it():
    session = Session(client_info={"name": "claude-code", "version": "2.1"})
    assert session.client_label == "claude-code 2.1"
    session.via = "Jupyter user alice"
    assert session.client_label == "claude-code 2.1 via Jupyter user alice"


def test_the_discovery_file_keeps_the_relay_key(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.RUNTIME_DIR_ENV, str(tmp_path))
    path = discovery.register("n", "http://127.0.0.1:1/mcp", "t", relay_key=KEY)
    try:
        assert discovery.find("n").relay_key == KEY
    finally:
        discovery.unregister(path)
