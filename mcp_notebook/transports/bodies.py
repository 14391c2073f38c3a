"""How big a request body is, and whether tornado may read it whole before the handler.

Bodies tornado reads whole go to ``McpHandler`` (handler.py); the others to
``StreamedMcpHandler`` (streamed.py), which counts them as they arrive.
"""

from __future__ import annotations

import tornado.httputil

from .policy import announced_length

__all__ = ["announced_length", "read_whole"]


def read_whole(request: tornado.httputil.HTTPServerRequest, limit: int) -> bool:
    """Whether the request's body may be read whole before the handler runs.

    Streaming a body costs every request an extra turn of the loop; only chunked bodies,
    those announced over ``limit`` and those not yet all received need it.
    """
    headers = request.headers
    if "Transfer-Encoding" in headers:
        return False
    try:
        length = announced_length(headers)
    except ValueError:
        return False  # not a size: the streamed handler answers 400 before any body
    if length is not None and length > limit:
        return False
    return not length or _buffered(request) >= length  # still arriving: streamed, bounded


def _buffered(request: tornado.httputil.HTTPServerRequest) -> int:
    # Bytes already read from the socket past the headers. Checked here, instead of a
    # tornado body_timeout, which would cost every request a timer (~25 us) though nearly
    # every body arrives with its headers. IOStream has no public name for this size: when
    # it is missing, every body goes the bounded, streamed way.
    stream = getattr(request.connection, "stream", None)
    return getattr(stream, "_read_buffer_size", 0)
