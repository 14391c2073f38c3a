"""The seed-000 "MCP v1.0" dialect's plug-in of the bridge: its sniff, registered when this
module is imported (dialects.py does, at a connection's first message).

Light on purpose: the sniff needs only the dialect's method names; its relay
(seed_relay.py, with the dialect's session, schemas and the registry behind them) is
imported only for a connection that speaks the dialect.
"""

from __future__ import annotations

from ..protocol.seed.naming import is_seed_message
from . import dialects
from .channel import Channel
from .upstream import Target


def _relay(target: Target, channel: Channel) -> dialects.Relay:
    from .seed_relay import SeedRelay

    # Its initialize reports what is registered: it waits for the notebook (in the
    # target), as everything else of the dialect does.
    return SeedRelay(target, channel)


dialects.register(dialects.Dialect("MCP v1.0 (seed 000)", is_seed_message, _relay))
