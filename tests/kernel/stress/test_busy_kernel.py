"""A cell that blocks the kernel's main thread does not block the control plane: ping,
tools/list and initialize answer while it runs; a tool call waits its turn and then runs."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import Served
from tests.kernel.stress.client import KeepAlive
from tests.kernel.test_http_raw import wait_for_output

BLOCKING_CELL = """
print("cell started", flush=True)
while not os.path.exists({flag!r}):
    time.sleep(0.01)
"""


def test_control_plane_answers_while_a_cell_blocks_the_kernel(
    served: Served, figures: dict[str, Any]
) -> None:
    client = KeepAlive(served).open_session()
    caller = KeepAlive(served).open_session()
    flag = Path(tempfile.mkdtemp(prefix="stress-")) / "release"
    msg_id = served.kernel.client.execute(BLOCKING_CELL.format(flag=str(flag)))
    called: list[str] = []
    try:
        wait_for_output(served.kernel, msg_id, "cell started", timeout=60)
        call = threading.Thread(target=lambda: called.append(caller.tool("echo", client=0, seq=1)))
        call.start()

        began = time.perf_counter()
        assert client.call("ping")["result"] == {}
        tools = client.call("tools/list")["result"]["tools"]
        assert {"echo", "nap"} <= {tool["name"] for tool in tools}
        newcomer = KeepAlive(served).open_session()  # initialize
        assert newcomer.call("ping")["result"] == {}
        newcomer.close()
        control_ms = (time.perf_counter() - began) * 1000

        assert not flag.exists() and call.is_alive() and not called  # the cell still runs
    finally:
        flag.touch()
    reply = served.kernel.client.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    call.join(60)
    assert called == ["0:1"]  # the call waited for the cell, then ran
    figures["busy_kernel"] = {"control_plane_ms_while_cell_blocks": round(control_ms, 2)}
    client.close()
    caller.close()
