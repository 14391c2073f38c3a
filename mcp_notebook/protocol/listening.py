"""What a ``subscriptions/listen`` stream (2026-07-28) asked for and gets: the filter its
acknowledgement echoes and the server then sends change notifications by."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonrpc import invalid_params
from .session import kept_subscriptions
from .taskcalls import declares_tasks, missing_extension

LIST_CHANGES = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


def honored_filter(
    params: dict[str, Any], capabilities: dict[str, Any], known_task: Callable[[str], bool]
) -> dict[str, Any]:
    """The notifications a listen request's ``notifications`` filter asks for that it may
    have (a JSON-RPC error for a bad filter): list changes it set to true, the first
    resource URIs within a session's bounds, the task ids this server knows (only for a
    client that declares the Tasks extension)."""
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise invalid_params("subscriptions/listen needs a notifications filter object")
    honored: dict[str, Any] = {key: True for key in LIST_CHANGES if wanted.get(key) is True}
    uris = wanted.get("resourceSubscriptions")
    if isinstance(uris, list) and uris:
        honored["resourceSubscriptions"] = kept_subscriptions(uris)
    task_ids = wanted.get("taskIds")
    if task_ids is not None:
        if not declares_tasks(capabilities):
            raise missing_extension("task status notifications")
        if not isinstance(task_ids, list):
            raise invalid_params("notifications.taskIds must be a list of task ids")
        # Each once: every status change looks its task up in this list.
        named = dict.fromkeys(t for t in task_ids if isinstance(t, str))
        honored["taskIds"] = [t for t in named if known_task(t)]
    return honored
