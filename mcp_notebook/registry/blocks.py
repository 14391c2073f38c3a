"""Small types a tool returns to send images, audio, files and links as MCP content.

return Image(path="plot.png")
return ["Here it is:", Image(png_bytes), ResourceLink("df://sales", name="sales")]
return ToolResult(content=["done"], structured={"rows": 3}, is_error=False)
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
    b"RIFF": "audio/wav",
    b"ID3": "audio/mpeg",
    b"OggS": "audio/ogg",
    b"fLaC": "audio/flac",
}


def sniff_mime(data: bytes) -> str:
    for magic, mime in _MAGIC.items():
        if data.startswith(magic):
            return mime
    return "application/octet-stream"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _load(data: bytes | None, path: str | Path | None, mime_type: str | None) -> tuple[bytes, str]:
    if (data is None) == (path is None):
        raise ValueError("give either data or path")
    if path is not None:
        data = Path(path).read_bytes()
        mime_type = mime_type or mimetypes.guess_type(str(path))[0]
    assert data is not None
    return data, mime_type or sniff_mime(data)


def _extras(annotations: dict[str, Any] | None, meta: dict[str, Any] | None) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if annotations:
        extra["annotations"] = annotations
    if meta:
        extra["_meta"] = meta
    return extra


@dataclass
class _Media:
    """Bytes (or a file) sent as base64 with their mime type."""

    data: bytes | None = None
    path: str | Path | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    kind = ""  # the content block's type

    def block(self) -> dict[str, Any]:
        data, mime = _load(self.data, self.path, self.mime_type)
        return {
            "type": self.kind,
            "data": _b64(data),
            "mimeType": mime,
            **_extras(self.annotations, self.meta),
        }


class Image(_Media):
    """An image: ``Image(png_bytes)`` or ``Image(path="plot.png")``."""

    kind = "image"


class Audio(_Media):
    """Audio: ``Audio(wav_bytes)`` or ``Audio(path="hello.wav")``."""

    kind = "audio"


@dataclass
class EmbeddedResource:
    """A resource's contents inside a result: ``text`` or ``blob`` bytes."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def block(self) -> dict[str, Any]:
        if (self.text is None) == (self.blob is None):
            raise ValueError("an embedded resource has either text or blob")
        contents: dict[str, Any] = {"uri": self.uri}
        if self.text is not None:
            contents.update(mimeType=self.mime_type or "text/plain", text=self.text)
        else:
            assert self.blob is not None
            contents.update(mimeType=self.mime_type or sniff_mime(self.blob), blob=_b64(self.blob))
        return {"type": "resource", "resource": contents, **_extras(self.annotations, self.meta)}


@dataclass
class ResourceLink:
    """A pointer to a resource the client can read later."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def block(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
        ):
            if value is not None:
                block[key] = value
        return {**block, **_extras(self.annotations, self.meta)}


@dataclass
class Blob:
    """Raw bytes with a mime type: an image, audio, or an embedded file as it fits."""

    data: bytes
    mime_type: str
    uri: str = "blob:tool-result"

    def block(self) -> dict[str, Any]:
        return bytes_block(self.data, self.mime_type, self.uri)


@dataclass
class ToolResult:
    """Full control over a tool's result."""

    content: list[Any] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None


def bytes_block(
    data: bytes, mime_type: str | None = None, uri: str = "blob:tool-result"
) -> dict[str, Any]:
    mime_type = mime_type or sniff_mime(data)
    if mime_type.startswith("image/"):
        return {"type": "image", "data": _b64(data), "mimeType": mime_type}
    if mime_type.startswith("audio/"):
        return {"type": "audio", "data": _b64(data), "mimeType": mime_type}
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "blob": _b64(data)}}


BLOCK_TYPES = (Image, Audio, EmbeddedResource, ResourceLink, Blob)
