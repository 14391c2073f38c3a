"""Agent Skills served over MCP (the ``io.modelcontextprotocol/skills`` extension).

A skill is a directory of files, minimally ``SKILL.md`` (YAML frontmatter, then markdown).
Each file is served as a ``skill://<skill-path>/<file-path>`` resource whose bytes are fixed
when the skill is registered, so the manifest (``sha256:`` digest and size of each file)
describes exactly what ``resources/read`` returns. Names follow the Agent Skills rules and
are checked here, at registration: a bad name is a clear error, never a broken listing.
Files come only from what was registered (text, bytes, or a folder read once, here): no
path a client sends ever reaches the file system.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from ..errors import McpNotebookError
from .components import Resource
from .filetypes import mime_for

SCHEME = "skill://"
EXTENSION = "io.modelcontextprotocol/skills"
SKILL_FILE = "SKILL.md"
DIRECTORY_MIME = "inode/directory"
# The extension's per-skill limits (hosts must accept up to these; we serve no more).
MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONTMATTER = re.compile(rb"\A---\r?\n(.*?\r?\n)?---\r?\n?", re.DOTALL)
# Frontmatter fields the Agent Skills specification defines (its validator refuses others).
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


class SkillError(McpNotebookError, ValueError):
    """A skill that cannot be served as registered (bad name, path, size or frontmatter)."""


def check_name(name: Any, what: str = "skill name") -> str:
    """``name`` if it is a valid Agent Skills name (lowercase letters, digits, single
    hyphens, 1-64 characters), else a SkillError that says which rule it breaks."""
    if not isinstance(name, str) or not name:
        raise SkillError(f"The {what} must be a non-empty string, not {name!r}")
    if len(name) > MAX_NAME:
        raise SkillError(f"The {what} {name!r} is longer than {MAX_NAME} characters")
    if not _NAME.match(name):
        raise SkillError(
            f"The {what} {name!r} may hold only lowercase letters a-z, digits and single "
            "hyphens, neither first nor last (e.g. 'sales-analysis')"
        )
    return name


def check_skill_path(path: str) -> str:
    """A skill path: ``name`` or ``prefix/.../name``, each segment a valid name."""
    if not isinstance(path, str) or not path:
        raise SkillError(f"A skill needs a name, not {path!r}")
    for segment in path.split("/"):
        check_name(segment, "skill name" if segment == path.split("/")[-1] else "skill prefix")
    return path


def check_file_path(path: Any) -> str:
    """A supporting file's path inside its skill: relative, ``/``-separated, no ``..``."""
    if not isinstance(path, str) or not path:
        raise SkillError(f"A skill file needs a relative path, not {path!r}")
    if path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        raise SkillError(f"Skill file {path!r}: use a relative path with '/' separators")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise SkillError(f"Skill file {path!r}: no empty, '.' or '..' segments")
    if any(ord(c) < 32 or c in "?#%" for c in path):
        raise SkillError(f"Skill file {path!r}: no control characters, '?', '#' or '%'")
    return path


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: the exact bytes served, their digest and size."""

    uri: str
    path: str  # relative to the skill root
    data: bytes
    mime_type: str

    @property
    def digest(self) -> str:
        return _digest(self.data)

    @property
    def size(self) -> int:
        return len(self.data)

    def served(self) -> str | bytes:
        """What the resource reader returns: text when the bytes are UTF-8 text (its
        UTF-8 encoding is these bytes again), else the bytes themselves (a blob)."""
        if self.mime_type.startswith("text/") or self.mime_type in _TEXT_TYPES:
            try:
                return self.data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return self.data


_TEXT_TYPES = frozenset({"application/json", "application/x-python", "application/yaml"})


def _mime(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    if path.endswith(".py"):
        return "text/x-python"
    return mime_for(path) or "application/octet-stream"


@dataclass(eq=False, repr=False)
class Skill:
    """A skill at ``path`` (``[prefix/]name``) with its SKILL.md and supporting files."""

    path: str
    skill_md: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)
    frontmatter: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        check_skill_path(self.path)
        self.name = self.path.rsplit("/", 1)[-1]
        self.root = SCHEME + self.path
        self.uri = f"{self.root}/{SKILL_FILE}"
        self.frontmatter = parse_frontmatter(self.skill_md, self.uri)
        if self.frontmatter["name"] != self.name:
            raise SkillError(
                f"{self.uri}: the frontmatter says name {self.frontmatter['name']!r}; a "
                f"skill's name must equal the last segment of its path ({self.name!r})"
            )
        chosen: dict[str, SkillFile] = {
            SKILL_FILE: SkillFile(self.uri, SKILL_FILE, self.skill_md, "text/markdown")
        }
        for relative, data in self.files.items():
            check_file_path(relative)
            if relative == SKILL_FILE:
                raise SkillError(f"{self.uri}: SKILL.md is made from the text, not files=")
            if not isinstance(data, bytes):
                raise SkillError(f"Skill file {relative!r} must be str or bytes")
            chosen[relative] = SkillFile(f"{self.root}/{relative}", relative, data, _mime(relative))
        self.contents = chosen
        if len(chosen) > MAX_FILES:
            raise SkillError(f"{self.uri}: {len(chosen)} files, more than {MAX_FILES}")
        total = sum(f.size for f in chosen.values())
        if total > MAX_TOTAL_BYTES:
            raise SkillError(f"{self.uri}: {total} bytes, more than {MAX_TOTAL_BYTES}")
        self.entry = {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [
                {"uri": f.uri, "digest": f.digest, "size": f.size} for f in chosen.values()
            ],
        }

    def __repr__(self) -> str:  # a cell's last line shows it: the bytes would fill the page
        files = list(self.contents.values())
        size = sum(f.size for f in files)
        return f"<skill {self.uri}: {len(files)} file{'s' * (len(files) != 1)}, {size:,} bytes>"

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    def resources(self, owner: str | None = None) -> list[SkillResource]:
        """Each file as a resource; ``owner`` is the path of the skill that registered
        them (an enclosing folder's, for a nested skill)."""
        made = []
        for file in self.contents.values():
            top = file.path == SKILL_FILE
            made.append(
                SkillResource(
                    uri=file.uri,
                    name=self.name if top else f"{self.path}/{file.path}",
                    reader=_constant(file.served()),
                    description=self.description if top else None,
                    mime_type=file.mime_type,
                    size=file.size,
                    digest=file.digest,
                    skill=self if top else None,
                    skill_path=owner or self.path,
                )
            )
        return made


@dataclass(eq=False)
class SkillResource(Resource):
    """A file of a skill; the SKILL.md one carries the skill (its entry)."""

    skill: Skill | None = None
    skill_path: str = ""
    # A reload compares it too (Registry.restore): new bytes of the same size are news.
    digest: str = ""


def _constant(value: str | bytes) -> Any:
    return lambda: value


def parse_frontmatter(skill_md: bytes, where: str) -> dict[str, Any]:
    """SKILL.md's YAML frontmatter as a JSON object, checked for name and description."""
    match = _FRONTMATTER.match(skill_md)
    if match is None:
        raise SkillError(f"{where} must begin with YAML frontmatter between '---' lines")
    import yaml  # type: ignore[import-untyped]  # only a SKILL.md read from disk needs it

    try:
        loaded = yaml.safe_load((match.group(1) or b"").decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise SkillError(f"{where}: its frontmatter is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise SkillError(f"{where}: its frontmatter must be a mapping (name: ..., ...)")
    try:  # verbatim as JSON (a date becomes its ISO text, as JSON cannot hold one)
        frontmatter = json.loads(json.dumps(loaded, default=str))
    except (TypeError, ValueError) as error:
        raise SkillError(f"{where}: frontmatter that JSON cannot hold: {error}") from None
    check_name(frontmatter.get("name"))
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{where}: the frontmatter needs a description (what it is for)")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{where}: the description is longer than {MAX_DESCRIPTION} characters")
    return dict(frontmatter)


def render_skill_md(name: str, description: str, body: str, extra: Mapping[str, Any]) -> bytes:
    """SKILL.md from frontmatter fields and a markdown body. Values are written as JSON
    scalars and mappings, which YAML reads back as the same values."""
    unknown = sorted(set(extra) - set(FIELDS))
    if unknown:
        raise SkillError(f"Unknown frontmatter field(s) {unknown}: use {', '.join(FIELDS)}")
    lines = [
        "---",
        f"name: {check_name(name)}",
        f"description: {_scalar(description)}",
    ]
    for key, value in extra.items():
        if key in ("name", "description") or value is None:
            continue
        if isinstance(value, Mapping):
            lines.append(f"{key}:")
            lines += [f"  {_scalar(k)}: {_scalar(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return ("\n".join([*lines, "---", "", body.strip(), ""])).encode("utf-8")


def _scalar(value: Any) -> str:
    """A YAML double-quoted string (JSON's syntax, which YAML reads the same)."""
    return json.dumps(str(value), ensure_ascii=False)


def folder_resources(skills: list[Skill]) -> list[SkillResource]:
    """The resources of a folder's skills: the outer skill's files, each nested SKILL.md
    carrying its own skill (the same bytes, listed in both manifests)."""
    outer = skills[0]
    made = {r.uri: r for r in outer.resources()}
    for nested in skills[1:]:
        top = nested.resources(owner=outer.path)[0]
        made[top.uri] = top
    return list(made.values())


def read_folder(folder: Path, prefix: str | None = None) -> list[Skill]:
    """The skill in ``folder`` (named by its SKILL.md) and the skills nested in it.

    Every regular file under the folder is read now, and only then: a symlink that leads
    out of the folder, a symlinked directory, a special file (a pipe, a device), or more
    than the limits allow is refused, so nothing a client sends later touches the disk.
    """
    files = read_files(folder)
    root = folder.resolve()
    name = parse_frontmatter(files[SKILL_FILE], str(root / SKILL_FILE))["name"]
    path = f"{prefix}/{name}" if prefix else name
    skill_md = files.pop(SKILL_FILE)
    outer = Skill(path, skill_md, files)
    nested = [
        Skill(f"{path}/{relative[: -len(SKILL_FILE) - 1]}", data, _under(files, relative))
        for relative, data in files.items()
        if relative.endswith("/" + SKILL_FILE)
    ]
    return [outer, *nested]


def folder_key(path: str | os.PathLike[str]) -> str:
    """``mcp.skill(path=...)``'s folder as written, one spelling for each (``./a/b/``,
    ``a/b`` and ``a\\b`` on Windows are ``a/b``): how an export finds its copy."""
    return PurePath(path).as_posix()


def read_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under the skill ``folder``, by its ``/``-separated relative
    path, under read_folder's rules (what an export copies is what a kernel serves)."""
    root = folder.resolve()
    if not (root / SKILL_FILE).is_file():
        raise SkillError(f"{folder} has no {SKILL_FILE}")
    files: dict[str, bytes] = {}
    total = 0
    for here, directories, names in os.walk(root):
        directories.sort()
        for name in directories:
            if (Path(here) / name).is_symlink():
                raise SkillError(f"{Path(here) / name} is a symlinked directory; not served")
        for name in sorted(names):
            entry = Path(here) / name
            real = entry.resolve()
            if root not in real.parents:
                raise SkillError(f"{entry} leads out of the skill folder {folder}; not served")
            if not stat.S_ISREG(real.stat().st_mode):
                raise SkillError(f"{entry} is not a regular file; not served")
            relative = entry.relative_to(root).as_posix()
            check_file_path(relative)
            if len(files) >= MAX_FILES:
                raise SkillError(f"{folder} holds more than {MAX_FILES} files; not served")
            with real.open("rb") as file:  # bounded: a file may grow while it is read
                data = file.read(MAX_TOTAL_BYTES - total + 1)
            total += len(data)
            if total > MAX_TOTAL_BYTES:
                raise SkillError(f"{folder} holds more than {MAX_TOTAL_BYTES} bytes; not served")
            files[relative] = data
    return files


def read_name(folder: Path) -> str:
    """The name in ``folder``'s SKILL.md frontmatter (a SkillError if it has none)."""
    skill_md = folder / SKILL_FILE
    if not skill_md.is_file():
        raise SkillError(f"{folder} has no {SKILL_FILE}")
    with skill_md.open("rb") as file:
        data = file.read(MAX_TOTAL_BYTES + 1)
    return str(parse_frontmatter(data, str(skill_md))["name"])


def _under(files: Mapping[str, bytes], skill_md: str) -> dict[str, bytes]:
    base = skill_md[: -len(SKILL_FILE)]
    return {k[len(base) :]: v for k, v in files.items() if k.startswith(base) and k != skill_md}


def directory(resources: Mapping[str, Resource], uri: str) -> list[dict[str, Any]] | None:
    """The direct children of the skill directory ``uri`` (files, then directories as
    ``inode/directory`` resources), or None when ``uri`` is no such directory."""
    if not uri.startswith(SCHEME) or uri.endswith("/") or len(uri) == len(SCHEME):
        return None
    base = uri + "/"
    children: dict[str, dict[str, Any]] = {}
    for child_uri, resource in resources.items():
        if not isinstance(resource, SkillResource) or not child_uri.startswith(base):
            continue
        head, _, rest = child_uri[len(base) :].partition("/")
        if rest:
            children.setdefault(
                base + head, {"uri": base + head, "name": head, "mimeType": DIRECTORY_MIME}
            )
        else:
            children[child_uri] = {**resource.definition, "name": head}
    if not children:
        return None
    return sorted(children.values(), key=lambda c: (c["mimeType"] == DIRECTORY_MIME, c["uri"]))
