"""The set of registered components, readable from any thread.

Cells change it on the kernel thread; the server reads it on its own thread. Every change
publishes a fresh dict (copy-on-write), so a reader always sees a consistent snapshot
without locks, and re-registering a name keeps its position in the listing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .components import Prompt, Resource, ResourceTemplate, Tool

Kind = Literal["tools", "resources", "prompts", "updated"]
# Called with a kind whose list changed, or ("updated", uri) when a resource's content did.
Listener = Callable[[Kind, str | None], None]


@dataclass(frozen=True)
class RegistryState:
    """Everything registered at one moment. The registry never changes its dicts in
    place (copy-on-write), so holding them keeps that moment."""

    tools: Mapping[str, Tool]
    resources: Mapping[str, Resource]
    templates: Mapping[str, ResourceTemplate]
    prompts: Mapping[str, Prompt]


class Registry:
    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    # -- listening ---------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners = [*self._listeners, listener]

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = [x for x in self._listeners if x is not listener]

        return unsubscribe

    def _changed(self, kind: Kind, detail: str | None = None) -> None:
        for listener in self._listeners:
            listener(kind, detail)

    def resource_updated(self, uri: str) -> None:
        """Announce that the content at ``uri`` changed (subscribers are told)."""
        self._changed("updated", uri)

    # -- changes -----------------------------------------------------------------------
    # ``quiet_if_same``: no list_changed when the listing would show exactly what it did (an
    # app view's cell run again). Other re-registrations are announced even then: a cell
    # that ran is news to clients that re-list on it (tests rely on it).
    def add_tool(self, tool: Tool, *, quiet_if_same: bool = False) -> Tool:
        with self._lock:
            old = self.tools.get(tool.name)
            self.tools = {**self.tools, tool.name: tool}
        if not (quiet_if_same and old is not None and old.definition == tool.definition):
            self._changed("tools")
        return tool

    def add_resource(self, resource: Resource, *, quiet_if_same: bool = False) -> Resource:
        with self._lock:
            old = self.resources.get(resource.uri)
            # A resource is known by its URI; re-registering a name at a new URI moves it.
            stale = [u for u, r in self.resources.items() if r.name == resource.name]
            items = {u: r for u, r in self.resources.items() if u not in stale or u == resource.uri}
            self.resources = {**items, resource.uri: resource}
        moved = any(u != resource.uri for u in stale)
        same = old is not None and not moved and old.definition == resource.definition
        if not (quiet_if_same and same):
            self._changed("resources")
        if old is not None:
            self._changed("updated", resource.uri)
        return resource

    def add_template(self, template: ResourceTemplate) -> ResourceTemplate:
        with self._lock:
            self.templates = {**self.templates, template.uri_template: template}
        self._changed("resources")
        return template

    def add_prompt(self, prompt: Prompt) -> Prompt:
        with self._lock:
            self.prompts = {**self.prompts, prompt.name: prompt}
        self._changed("prompts")
        return prompt

    def remove(self, name: str) -> list[Kind]:
        """Remove every component called ``name`` (or a resource with that URI)."""
        removed: list[Kind] = []
        with self._lock:
            if name in self.tools:
                self.tools = {k: v for k, v in self.tools.items() if k != name}
                removed.append("tools")
            resources = {k: v for k, v in self.resources.items() if name not in (k, v.name)}
            templates = {k: v for k, v in self.templates.items() if name not in (k, v.name)}
            if len(resources) != len(self.resources) or len(templates) != len(self.templates):
                self.resources, self.templates = resources, templates
                removed.append("resources")
            if name in self.prompts:
                self.prompts = {k: v for k, v in self.prompts.items() if k != name}
                removed.append("prompts")
        for kind in removed:
            self._changed(kind)
        return removed

    def clear(self) -> None:
        with self._lock:
            self.tools, self.resources, self.templates, self.prompts = {}, {}, {}, {}
        self._changed("tools")
        self._changed("resources")
        self._changed("prompts")

    # -- whole states: `serve --watch` re-runs cells into a copy, then applies it ---------
    def state(self) -> RegistryState:
        with self._lock:
            return RegistryState(self.tools, self.resources, self.templates, self.prompts)

    def restore(self, state: RegistryState, updated: Iterable[str] = ()) -> list[str]:
        """Make ``state`` current in one step and tell listeners only what differs.

        A list is announced when what its ``*/list`` shows changed (definitions, order), not
        when a component was merely registered again the same way. A resource still at its
        URI but registered anew (its cell ran again) is announced as updated, with the URIs
        in ``updated``. Returns what was announced: kinds, then ``updated:<uri>``.
        """
        with self._lock:
            old = RegistryState(self.tools, self.resources, self.templates, self.prompts)
            self.tools, self.resources = dict(state.tools), dict(state.resources)
            self.templates, self.prompts = dict(state.templates), dict(state.prompts)
        kinds: list[Kind] = []
        if _listed(old.tools) != _listed(state.tools):
            kinds.append("tools")
        if (_listed(old.resources), _listed(old.templates)) != (
            _listed(state.resources),
            _listed(state.templates),
        ):
            kinds.append("resources")
        if _listed(old.prompts) != _listed(state.prompts):
            kinds.append("prompts")
        renewed = [u for u, r in state.resources.items() if old.resources.get(u) not in (None, r)]
        uris = list(dict.fromkeys([*renewed, *updated]))
        for kind in kinds:
            self._changed(kind)
        for uri in uris:
            self._changed("updated", uri)
        return [*kinds, *(f"updated:{uri}" for uri in uris)]

    # -- lookups -----------------------------------------------------------------------
    def resources_by_name(self, name: str) -> str:
        """The URI of the resource called ``name``."""
        for uri, resource in self.resources.items():
            if resource.name == name:
                return uri
        raise KeyError(name)

    def find_resource(self, uri: str) -> tuple[Any, dict[str, str] | None] | None:
        """The resource at ``uri``, or the first template matching it with its values."""
        resource = self.resources.get(uri)
        if resource is not None:
            return resource, None
        for template in self.templates.values():
            values = template.match(uri)
            if values is not None:
                return template, values
        return None


def _listed(components: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a ``*/list`` shows of these components, in its order."""
    return [c.definition for c in components.values()]
