"""Framers: bytes in, JSON-RPC messages out, and back; no sockets (see ``framing``)."""

from .framing import (
    DEFAULT_MAX_BODY,
    ContentLengthFramer,
    Framer,
    FrameRefused,
    FramingError,
    FramingKind,
    JsonError,
    NdjsonFramer,
    detect,
    dumps,
    make_framer,
)

__all__ = [
    "DEFAULT_MAX_BODY",
    "ContentLengthFramer",
    "FrameRefused",
    "Framer",
    "FramingError",
    "FramingKind",
    "JsonError",
    "NdjsonFramer",
    "detect",
    "dumps",
    "make_framer",
]
