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
Event = tuple[Kind, str | None]
# A change to a registry's dicts, made under its lock; returns what to announce.
Change = Callable[["Registry"], list[Event]]


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
        # serve --watch (``staged``): a copy's owner thread and the registry it stands in
        # for; once adopted or dropped, where changes to it go; the changes made to a
        # registry while a copy of it is staged.
        self._owner: int | None = None
        self._parent: Registry | None = None
        self._handed_to: Registry | None = None
        self._journal: list[Change] | None = None

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

    # -- changes -----------------------------------------------------------------------
    # Each change is a function of a registry, run under its lock, returning what to
    # announce; ``_apply`` runs it here or where this registry routes it (``staged``).
    def _apply(self, change: Change) -> list[Event]:
        with self._lock:
            target = self._route()
            if target is None:
                events = change(self)
                if self._journal is not None:
                    self._journal.append(change)
        if target is not None:
            return target._apply(change)
        for kind, detail in events:
            self._changed(kind, detail)
        return events

    def _route(self) -> Registry | None:
        """Where a change made now belongs if not here (called under the lock)."""
        if self._handed_to is not None:
            return self._handed_to
        if self._owner is not None and threading.get_ident() != self._owner:
            return self._parent
        return None

    # ``quiet_if_same``: no list_changed when the listing would show exactly what it did (an
    # app view's cell run again). Other re-registrations are announced even then: a cell
    # that ran is news to clients that re-list on it (tests rely on it).
    def add_tool(self, tool: Tool, *, quiet_if_same: bool = False) -> Tool:
        def change(r: Registry) -> list[Event]:
            old = r.tools.get(tool.name)
            r.tools = {**r.tools, tool.name: tool}
            if quiet_if_same and old is not None and old.definition == tool.definition:
                return []
            return [("tools", None)]

        self._apply(change)
        return tool

    def add_resource(self, resource: Resource, *, quiet_if_same: bool = False) -> Resource:
        def change(r: Registry) -> list[Event]:
            old = r.resources.get(resource.uri)
            # A resource is known by its URI; re-registering a name at a new URI moves it.
            # A skill's files keep their place: a resource that shares a skill's name is
            # not that skill (mcp.skill replaces it, mcp.remove drops it).
            stale = [
                u
                for u, x in r.resources.items()
                if x.name == resource.name and not getattr(x, "skill_path", "")
            ]
            items = {u: x for u, x in r.resources.items() if u not in stale or u == resource.uri}
            r.resources = {**items, resource.uri: resource}
            moved = any(u != resource.uri for u in stale)
            same = old is not None and not moved and old.definition == resource.definition
            events: list[Event] = []
            if not (quiet_if_same and same):
                events.append(("resources", None))
            if old is not None:
                events.append(("updated", resource.uri))
            return events

        self._apply(change)
        return resource

    def add_skill(self, path: str, files: list[Resource]) -> None:
        """Serve a skill's files (registry/skills.py), replacing what was served under
        ``skill://<path>/`` before, at the same place in the listing; every file whose
        bytes a client may hold is announced as updated."""
        root = f"skill://{path}/"

        def change(r: Registry) -> list[Event]:
            for uri, held in r.resources.items():
                owner = getattr(held, "skill_path", None)
                if (
                    owner
                    and owner != path
                    and (uri.startswith(root) or root.startswith(f"skill://{owner}/"))
                ):
                    raise ValueError(
                        f"Skill {path!r} would overlap the skill {owner!r}: register the "
                        "enclosing folder instead (its nested skills come with it)"
                    )
            new = {f.uri: f for f in files}
            old = [u for u in r.resources if u.startswith(root)]
            items: dict[str, Resource] = {}
            for uri, held in r.resources.items():
                if uri in old:
                    items.update(new)  # the first old file marks the skill's place
                    continue
                items[uri] = held
            items.update(new)
            r.resources = items
            return [("resources", None), *(("updated", u) for u in old)]

        self._apply(change)

    def add_template(self, template: ResourceTemplate) -> ResourceTemplate:
        def change(r: Registry) -> list[Event]:
            r.templates = {**r.templates, template.uri_template: template}
            return [("resources", None)]

        self._apply(change)
        return template

    def add_prompt(self, prompt: Prompt) -> Prompt:
        def change(r: Registry) -> list[Event]:
            r.prompts = {**r.prompts, prompt.name: prompt}
            return [("prompts", None)]

        self._apply(change)
        return prompt

    def remove(self, name: str) -> list[Kind]:
        """Remove every component called ``name`` (or a resource with that URI)."""

        def change(r: Registry) -> list[Event]:
            removed: list[Event] = []
            if name in r.tools:
                r.tools = {k: v for k, v in r.tools.items() if k != name}
                removed.append(("tools", None))
            # A skill's files go together, whichever of them (or its path) is named.
            skills = {
                getattr(v, "skill_path", None)
                for k, v in r.resources.items()
                if name in (k, v.name)
            }
            skills = (skills | {name}) - {None}
            resources = {
                k: v
                for k, v in r.resources.items()
                if name not in (k, v.name) and getattr(v, "skill_path", None) not in skills
            }
            templates = {k: v for k, v in r.templates.items() if name not in (k, v.name)}
            if len(resources) != len(r.resources) or len(templates) != len(r.templates):
                r.resources, r.templates = resources, templates
                removed.append(("resources", None))
            if name in r.prompts:
                r.prompts = {k: v for k, v in r.prompts.items() if k != name}
                removed.append(("prompts", None))
            return removed

        return [kind for kind, _ in self._apply(change)]

    def clear(self) -> None:
        def change(r: Registry) -> list[Event]:
            r.tools, r.resources, r.templates, r.prompts = {}, {}, {}, {}
            return [("tools", None), ("resources", None), ("prompts", None)]

        self._apply(change)

    def resource_updated(self, uri: str) -> None:
        """Announce that the content at ``uri`` changed (subscribers are told)."""
        with self._lock:
            target = self._route()
        if target is not None:
            target.resource_updated(uri)
        else:
            self._changed("updated", uri)

    # -- whole states: `serve --watch` re-runs cells into a copy, then applies it ---------
    def state(self) -> RegistryState:
        with self._lock:
            return self._state()

    def _state(self) -> RegistryState:
        return RegistryState(self.tools, self.resources, self.templates, self.prompts)

    def _replace(self, state: RegistryState) -> None:
        self.tools, self.resources = dict(state.tools), dict(state.resources)
        self.templates, self.prompts = dict(state.templates), dict(state.prompts)

    def restore(self, state: RegistryState, updated: Iterable[str] = ()) -> list[str]:
        """Make ``state`` current in one step and tell listeners only what differs.

        A list is announced when what its ``*/list`` shows changed (definitions, order), not
        when a component was merely registered again the same way. A resource still at its
        URI but registered anew (its cell ran again) is announced as updated, with the URIs
        in ``updated``. Returns what was announced: kinds, then ``updated:<uri>``.
        """
        with self._lock:
            old = self._state()
            self._replace(state)
        return self._announce_difference(old, state, updated)

    def staged(self, state: RegistryState) -> Registry:
        """A copy holding ``state`` for this thread's cells to register into, unseen.

        Until it is ``adopt``ed or ``dropped``, changes made to the copy from any other
        thread go to this registry at once (clients see them), and every change made to
        this registry is recorded, to be made again over the copy when it is adopted: a
        background thread's registration is never lost to a reload.
        """
        copy = Registry()
        copy._replace(state)  # nobody listens yet: no announcements
        copy._owner, copy._parent = threading.get_ident(), self
        with self._lock:
            self._journal = []
        return copy

    def adopt(self, updated: Iterable[str] = ()) -> list[str]:
        """Make this staged copy's registry hold what it holds, in one step (``restore``),
        then what was changed there meanwhile; later changes to the copy go there too."""
        live = self._parent
        if live is None:
            raise RuntimeError("not a staged copy")
        # Both locks: a change racing the hand-over lands before it (and is taken along)
        # or after it (and goes to ``live``), never in between.
        with self._lock, live._lock:
            state = self._state()
            self._handed_to = live
            old = live._state()
            live._replace(state)
            for change in live._journal or ():
                change(live)
            live._journal = None
            new = live._state()
        return live._announce_difference(old, new, updated)

    def drop(self) -> None:
        """Give up this staged copy: its registry keeps what it has; later changes to the
        copy go there."""
        live = self._parent
        if live is None:
            raise RuntimeError("not a staged copy")
        with self._lock, live._lock:
            self._handed_to = live
            live._journal = None

    def _announce_difference(
        self, old: RegistryState, state: RegistryState, updated: Iterable[str]
    ) -> list[str]:
        kinds: list[Kind] = []
        if _listed(old.tools) != _listed(state.tools):
            kinds.append("tools")
        if (_listed(old.resources), _listed(old.templates), _digests(old.resources)) != (
            _listed(state.resources),
            _listed(state.templates),
            _digests(state.resources),
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


def _digests(resources: Mapping[str, Resource]) -> list[str | None]:
    """The digests of skill files (registry/skills.py): a skill whose bytes changed at the
    same size is listed the same, yet its manifest (``skills/list``) is not."""
    return [getattr(r, "digest", None) for r in resources.values()]


def _listed(components: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a ``*/list`` shows of these components, in its order."""
    return [c.definition for c in components.values()]
