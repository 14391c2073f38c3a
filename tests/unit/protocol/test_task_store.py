"""The task store (protocol/tasks.py): statuses, the spec's errors, bounds, ttl."""

from __future__ import annotations

import pytest

from mcp_notebook.protocol.jsonrpc import INVALID_PARAMS, RpcError
from mcp_notebook.protocol.tasks import TaskNotFound, TaskStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_created_task_resolves_at_once_and_moves_only_along_the_spec_s_steps():
    store = TaskStore()
    task = store.create("tools/call slow", "client")
    assert store.get(task.id) is task and task.status == "working"
    assert store.set_status(task, "input_required", "asks")
    assert store.set_status(task, "working")
    assert store.complete(task, {"content": [], "isError": False})
    assert task.status == "completed"
    # A terminal task never changes again; a cancelled one stays cancelled.
    assert not store.set_status(task, "working")
    assert not store.cancel(task)
    other = store.create("tools/call slow")
    assert store.cancel(other)
    assert not store.complete(other, {"content": []})
    assert other.status == "cancelled" and other.result is None


def test_an_ended_task_s_status_message_never_changes_either():
    store = TaskStore()
    cancelled = store.create("tools/call slow")
    store.cancel(cancelled, "cancelled from the notebook")
    updated = cancelled.updated
    # e.g. the follower, a moment late, saying the call still waits for approval
    assert not store.set_status(cancelled, "cancelled", "waiting for approval in the notebook")
    assert cancelled.message == "cancelled from the notebook"
    assert cancelled.updated == updated


def test_unknown_and_expired_ids_get_the_spec_s_invalid_params_error():
    clock = Clock()
    store = TaskStore(clock=clock)
    with pytest.raises(TaskNotFound) as unknown:
        store.get("nope")
    assert unknown.value.code == INVALID_PARAMS
    assert "not found" in unknown.value.message
    task = store.create("tools/call x", ttl_ms=1000)
    store.complete(task, {"content": []})
    clock.now += 0.999
    assert store.get(task.id) is task  # kept for its whole ttl
    clock.now += 0.002
    with pytest.raises(TaskNotFound) as expired:
        store.get(task.id)
    assert expired.value.code == INVALID_PARAMS and "expired" in expired.value.message
    with pytest.raises(RpcError):
        store.get(42)


def test_a_running_task_outlives_its_ttl_until_it_ends():
    clock = Clock()
    store = TaskStore(clock=clock)
    task = store.create("tools/call x", ttl_ms=10)
    clock.now += 60
    assert store.get(task.id) is task


def test_another_owner_s_task_is_not_found():
    store = TaskStore()
    task = store.create("tools/call x", owner="alice")
    assert store.get(task.id, owner="alice") is task
    with pytest.raises(TaskNotFound):
        store.get(task.id, owner="bob")
    with pytest.raises(TaskNotFound):
        store.get(task.id)


def test_the_store_is_bounded_in_count_keeping_running_tasks():
    store = TaskStore(max_tasks=3)
    running = store.create("a")
    ended = [store.create("b"), store.create("c")]
    for task in ended:
        store.complete(task, {"content": []})
    newer = [store.create("d"), store.create("e")]  # the oldest ended ones make room
    assert len(store) == 3
    assert store.get(running.id) is running
    with pytest.raises(TaskNotFound):
        store.get(ended[0].id)
    with pytest.raises(RpcError) as full:  # three running: a fourth is refused
        store.create("f")
    assert "Too many tasks" in full.value.message
    assert all(store.get(t.id) for t in newer)


def test_the_store_is_bounded_in_bytes():
    store = TaskStore(max_bytes=200_000)
    big = {"content": [{"type": "text", "text": "x" * 60_000}]}
    tasks = [store.create(f"t{i}") for i in range(5)]
    for task in tasks:
        store.complete(task, big)
    assert store.bytes <= 200_000
    assert len(store) < 5
    assert store.get(tasks[-1].id).result == big  # the newest stays
    huge = store.create("huge")
    store.complete(huge, {"content": [{"type": "text", "text": "y" * 300_000}]})
    with pytest.raises(TaskNotFound):  # too big to keep at all
        store.get(huge.id)


def test_a_result_too_big_to_keep_at_all_costs_no_other_task_its_result():
    store = TaskStore(max_bytes=200_000)
    kept = [store.create(f"t{i}") for i in range(2)]
    for task in kept:
        store.complete(task, {"content": [{"type": "text", "text": "x" * 60_000}]})
    huge = store.create("huge")
    store.complete(huge, {"content": [{"type": "text", "text": "y" * 300_000}]})
    with pytest.raises(TaskNotFound, match="expired"):
        store.get(huge.id)
    assert [store.get(t.id) for t in kept] == kept  # another client's results stay
    assert store.bytes <= 200_000


def test_cancel_stops_the_work_and_observers_hear_every_change():
    store = TaskStore()
    heard: list[str] = []
    store.observe(lambda t: heard.append(t.status))
    stopped: list[bool] = []
    task = store.create("x")
    task.stop = lambda: stopped.append(True)
    store.set_status(task, "input_required")
    store.cancel(task)
    assert stopped == [True]
    assert heard == ["working", "input_required", "cancelled"]


def test_wire_shapes_of_both_eras():
    store = TaskStore()
    task = store.create("x", ttl_ms=60_000)
    task.input_requests = lambda: {"k": {"method": "elicitation/create", "params": {}}}
    store.set_status(task, "input_required")
    modern = task.modern()
    assert modern["inputRequests"]["k"]["method"] == "elicitation/create"
    assert modern["ttlMs"] == 60_000 and isinstance(modern["pollIntervalMs"], int)
    assert modern["createdAt"].endswith("Z")
    store.fail(task, {"code": -32603, "message": "boom"})
    modern = task.modern()
    assert modern["status"] == "failed" and modern["error"]["code"] == -32603
    assert "result" not in modern and "inputRequests" not in modern
    old = task.handshake()
    assert old["ttl"] == 60_000 and "ttlMs" not in old and "pollInterval" in old
