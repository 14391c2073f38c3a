"""A file's media type from its name, the same on every machine.

``mimetypes.guess_type`` consults the machine: /etc/mime.types on Linux and macOS, the
registry on Windows, where installed software rewrites it (``.js`` as ``text/plain``,
``.csv`` as ``application/vnd.ms-excel``). The types a tool is likely to send come from
this table; any other extension from Python's built-in defaults only, never the system's.
"""

from __future__ import annotations

import mimetypes
from functools import cache
from pathlib import PurePath

TYPES = {
    # images
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".ico": "image/vnd.microsoft.icon",
    ".svg": "image/svg+xml",
    # audio
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    # text and data
    ".txt": "text/plain",
    ".log": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".html": "text/html",
    ".htm": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".py": "text/x-python",
    ".json": "application/json",
    ".ipynb": "application/x-ipynb+json",
    ".xml": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".pdf": "application/pdf",
    ".parquet": "application/vnd.apache.parquet",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".zip": "application/zip",
}


@cache
def _builtin() -> mimetypes.MimeTypes:
    # Python's own defaults only: no system files (filenames=()), no registry.
    return mimetypes.MimeTypes(filenames=(), strict=True)


def mime_for(path: str | PurePath) -> str | None:
    """The media type ``path``'s extension names, or None when it names none we know."""
    suffix = PurePath(path).suffix.lower()
    if suffix in TYPES:
        return TYPES[suffix]
    return _builtin().guess_type(PurePath(path).name, strict=True)[0]
