"""The origins a view's HTML loads from, so ``_meta.ui.csp`` lists exactly those.

Hosts block every origin a view did not declare, so a view that loads plotly.js from a
CDN must say so; a self-contained one (inline scripts, ``data:`` images: the default
here) declares none. Found from the markup: ``src`` of scripts, images, media and
frames, ``href`` of style sheets and icons, ``url(...)``/``@import`` in inline styles,
``<base href>``. What a script fetches at run time cannot be seen: give ``csp=``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

from ..registry.views import Csp

_RESOURCE_TAGS = {"script", "img", "audio", "video", "source", "track", "embed", "input"}
_FRAME_TAGS = {"iframe", "frame"}
_LINK_RELS = {"stylesheet", "icon", "preload", "modulepreload", "manifest"}
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])([^'")\s]+)""", re.IGNORECASE)


def origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an absolute http(s)/ws(s) URL, else None (relative,
    ``data:``, ``blob:``: nothing to declare)."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https", "ws", "wss") or not parts.hostname:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme.lower()}://{parts.hostname.lower()}{port}"


class _Scanner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.resource: list[str] = []
        self.frame: list[str] = []
        self.base: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag in _RESOURCE_TAGS:
            self._add(self.resource, values.get("src"))
            self._add(self.resource, values.get("poster"))
        elif tag in _FRAME_TAGS:
            self._add(self.frame, values.get("src"))
        elif tag == "link" and _LINK_RELS & set(values.get("rel", "").lower().split()):
            self._add(self.resource, values.get("href"))
        elif tag == "base":
            self._add(self.base, values.get("href"))
        elif tag == "image":  # SVG
            self._add(self.resource, values.get("href") or values.get("xlink:href"))
        if "style" in values:
            self._css(values["style"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)

    def _css(self, text: str) -> None:
        for url in _CSS_URL.findall(text):
            self._add(self.resource, url)

    @staticmethod
    def _add(into: list[str], url: str | None) -> None:
        found = origin(url) if url else None
        if found is not None and found not in into:
            into.append(found)


def scan(markup: str) -> Csp:
    """The origins ``markup`` loads from, by directive."""
    scanner = _Scanner()
    scanner.feed(markup)
    scanner.close()
    return Csp(
        resource=tuple(scanner.resource), frame=tuple(scanner.frame), base_uri=tuple(scanner.base)
    )
