"""Tasks (both eras) as a hostile client uses them: a full store, many tasks, races."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session, modern
from tests.waiting import until

V = "2025-11-25"
EXT = "io.modelcontextprotocol/tasks"
_ids = itertools.count(1)


def make(max_tasks: int = 1000) -> tuple[Server, list[Any], asyncio.Event]:
    app = NotebookMCP()
    ran: list[Any] = []
    release = asyncio.Event()

    @app.tool
    async def hold(n: int) -> str:
        ran.append(n)
        await release.wait()
        return f"held {n}"

    @app.tool(task="required")
    async def must(n: int) -> str:
        ran.append(n)
        await release.wait()
        return "done"

    app.tasks.max_tasks = max_tasks
    return Server(app.registry, name="t", version="1", tasks=app.tasks), ran, release


async def send(server: Server, session: Session, method: str, params: Any = None) -> dict:
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    reply = await server.handle(message, session)
    assert reply is not None and reply["id"] == message["id"]
    return reply


async def opened(server: Server) -> Session:
    session = server.open_session(Session())
    session.outbound = lambda message, related: True
    params = {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "raw"}}
    await send(server, session, "initialize", params)
    return session


async def test_a_task_the_full_store_refuses_never_runs_handshake():
    server, ran, release = make(max_tasks=2)
    session = await opened(server)
    for n in range(2):
        reply = await send(
            server, session, "tools/call", {"name": "hold", "arguments": {"n": n}, "task": {}}
        )
        assert reply["result"]["task"]["status"] == "working"
    await until(lambda: len(ran) == 2, "the two tasks running")
    for n in range(2, 6):
        refused = await send(
            server, session, "tools/call", {"name": "hold", "arguments": {"n": n}, "task": {}}
        )
        assert refused["error"]["code"] == -32000
        assert "Too many tasks running" in refused["error"]["message"]
    ping = await send(server, session, "ping")  # a barrier: the loop ran what was scheduled
    assert ping["result"] == {}
    assert ran == [0, 1]  # the refused calls did not run behind the client's back
    statuses = [record.status for record in server.calls]
    assert statuses[2:] == ["error"] * 4  # and the history says so
    release.set()


async def test_a_task_the_full_store_refuses_never_runs_2026():
    server, ran, release = make(max_tasks=1)

    def request(n: int) -> dict:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
        }
        return {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "must", "arguments": {"n": n}, "_meta": meta},
        }

    first = await server.handle(request(1), modern.open_request(request(1)))
    assert first is not None and first["result"]["resultType"] == "task"
    await until(lambda: ran == [1], "the first task running")
    for n in (2, 3):
        refused = await server.handle(request(n), modern.open_request(request(n)))
        assert refused is not None and refused["id"] == n
        assert refused["error"]["code"] == -32000
    await asyncio.sleep(0)  # what a cancelled run would have done, it would have done now
    assert ran == [1]
    release.set()


async def test_a_session_lists_each_of_its_many_tasks_once_and_no_one_else_s():
    server, _ran, release = make()
    mine, other = await opened(server), await opened(server)
    release.set()  # they end at once; ended tasks are listed until their ttl
    ids = set()
    for n in range(250):
        reply = await send(
            server, mine, "tools/call", {"name": "hold", "arguments": {"n": n}, "task": {}}
        )
        ids.add(reply["result"]["task"]["taskId"])
    theirs = await send(
        server, other, "tools/call", {"name": "hold", "arguments": {"n": -1}, "task": {}}
    )
    listed: list[str] = []
    cursor = None
    for _ in range(300):  # bounded: a cursor that never ends would fail here
        page = await send(server, mine, "tasks/list", {"cursor": cursor} if cursor else {})
        listed += [task["taskId"] for task in page["result"]["tasks"]]
        cursor = page["result"].get("nextCursor")
        if cursor is None:
            break
    assert len(listed) == len(set(listed)) == 250 and set(listed) == ids
    assert theirs["result"]["task"]["taskId"] not in listed
    foreign = await send(server, mine, "tasks/get", {"taskId": theirs["result"]["task"]["taskId"]})
    assert foreign["error"]["code"] == -32602  # another session's task is "not found"


async def test_racing_cancels_and_a_waiting_result_each_get_exactly_one_answer():
    server, _ran, release = make()
    session = await opened(server)
    created = await send(
        server, session, "tools/call", {"name": "hold", "arguments": {"n": 1}, "task": {}}
    )
    task_id = created["result"]["task"]["taskId"]
    waiting = asyncio.ensure_future(send(server, session, "tasks/result", {"taskId": task_id}))
    cancels = await asyncio.gather(
        *(send(server, session, "tasks/cancel", {"taskId": task_id}) for _ in range(20))
    )
    acked = [reply for reply in cancels if "result" in reply]
    refused = [reply for reply in cancels if "error" in reply]
    assert len(acked) == 1 and acked[0]["result"]["status"] == "cancelled"
    assert len(refused) == 19
    assert all(
        r["error"]
        == {"code": -32602, "message": "Cannot cancel task: already in terminal status 'cancelled'"}
        for r in refused
    )
    result = await asyncio.wait_for(waiting, 30)
    assert result["error"]["code"] == -32000 and "cancelled" in result["error"]["message"]
    release.set()
    late = await send(server, session, "tasks/get", {"taskId": task_id})
    assert late["result"]["status"] == "cancelled"  # the work ending later changes nothing
