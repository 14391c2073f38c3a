"""How big a request body is, and whether tornado may read it whole before the handler.

Bodies tornado reads whole go to ``McpHandler`` (handler.py); the others to
``StreamedMcpHandler`` (streamed.py), which counts them as they arrive.
"""

from __future__ import annotations

from typing import Any

import tornado.httputil
import tornado.routing

from .policy import announced_length

__all__ = ["WholeBody", "announced_length"]


class WholeBody(tornado.routing.PathMatches):
    """Requests to ``path`` whose body may be read whole before the handler runs.

    Streaming a body costs every request an extra turn of the loop; only chunked bodies,
    those announced over ``limit`` and those not yet all received need it.
    """

    def __init__(self, path: str, limit: int) -> None:
        super().__init__(path)
        self.limit = limit

    def match(self, request: tornado.httputil.HTTPServerRequest) -> dict[str, Any] | None:
        headers = request.headers
        if "Transfer-Encoding" in headers:
            return None
        try:
            length = announced_length(headers)
        except ValueError:
            return None  # not a size: the streamed handler answers 400 before any body
        if length is not None and length > self.limit:
            return None
        if length and _buffered(request) < length:
            return None  # still arriving: the streamed handler bounds how long it may take
        return super().match(request)


def _buffered(request: tornado.httputil.HTTPServerRequest) -> int:
    # Bytes already read from the socket past the headers. Checked here, instead of a
    # tornado body_timeout, which would cost every request a timer (~25 us) though nearly
    # every body arrives with its headers. IOStream has no public name for this size: when
    # it is missing, every body goes the bounded, streamed way.
    stream = getattr(request.connection, "stream", None)
    return getattr(stream, "_read_buffer_size", 0)
