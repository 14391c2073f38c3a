"""The server's listening sockets: which addresses, and who else may bind the port.

- ``localhost`` listens on both loopbacks, 127.0.0.1 and ::1, at one port: macOS resolves
  ``localhost`` to ::1 first (Node clients then fail against an IPv4-only server), and on
  Windows a refused connect to ::1 costs about 2 s before the client tries 127.0.0.1.
  Without IPv6 on the machine, only 127.0.0.1 listens (the URL then names it).
- An *exclusive* bind (the default port, which another app may use too) never shares the
  port: see :func:`share_address`. Otherwise a busy port fails the bind (the caller may
  fall back to a free port).
"""

from __future__ import annotations

import errno
import socket
import sys
from typing import Any

BACKLOG = 128  # as tornado
PROBE_TIMEOUT = 2.0  # seconds to connect to a port on loopback, to see if it is in use
LOCALHOST = (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6))
# Windows' option; the socket module has it only there (winsock2.h: ~SO_REUSEADDR, and
# SO_REUSEADDR is 4 there).
SO_EXCLUSIVEADDRUSE = getattr(socket, "SO_EXCLUSIVEADDRUSE", -5)
# A port 0 shared by several addresses is taken from the first; another program may hold
# it on the others: try again with a new one this many times.
FREE_PORT_TRIES = 10
# Errors of an address this machine does not have (no IPv6 loopback, IPv6 turned off).
_NO_SUCH_ADDRESS = {errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT}


def share_address(sock: socket.socket, exclusive: bool) -> None:
    """Set whether other sockets may bind ``sock``'s address; before ``bind``.

    - Windows: ``SO_EXCLUSIVEADDRUSE`` when exclusive, so that no other program binds the
      port (a specific address over our wildcard, or the reverse). Never SO_REUSEADDR,
      which there lets anyone bind over a port in use.
    - macOS and the BSDs: SO_REUSEADDR (what tornado sets, to rebind despite connections
      in TIME_WAIT) also lets a specific address (127.0.0.1:8765) shadow another program's
      wildcard listener (``*:8765``): not set when exclusive (but see :func:`listen`).
    - Linux: SO_REUSEADDR always; Linux never lets it bind over a listening socket, so it
      only allows a restart despite TIME_WAIT.
    """
    if sys.platform == "win32":
        if exclusive:
            sock.setsockopt(socket.SOL_SOCKET, SO_EXCLUSIVEADDRUSE, 1)
    elif not (exclusive and reuse_can_shadow()):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)


def reuse_can_shadow() -> bool:
    """Whether SO_REUSEADDR lets a socket bind over another program's listener (BSD
    semantics: macOS, FreeBSD, ...; not Linux, and Windows is another story)."""
    return sys.platform != "win32" and not sys.platform.startswith("linux")


# The free port of the first address may be unusable on the next: taken there, or (Windows)
# refused with WSAEACCES, in a range Hyper-V/WSL2 excluded for IPv6 only or held with
# SO_EXCLUSIVEADDRUSE: another free port is then tried.
_PORT_TAKEN = frozenset({errno.EADDRINUSE, errno.EACCES, getattr(errno, "WSAEACCES", 10013)})


def listen(host: str, port: int, *, exclusive: bool = False) -> list[socket.socket]:
    """Sockets listening at ``port`` (0: one free port, the same for all) on ``host``.

    Where an exclusive bind goes without SO_REUSEADDR, connections in TIME_WAIT (those of
    a server that just stopped: a restarted kernel) hold the port for a while. If nothing
    listens there, the bind is made again with SO_REUSEADDR: there is nobody to shadow.
    """
    addresses = _addresses(host)
    if exclusive and port and reuse_can_shadow():
        try:
            return _listen_all(addresses, port, exclusive)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or _someone_listens(addresses, port):
                raise
        exclusive = False
    tries = FREE_PORT_TRIES if port == 0 and len(addresses) > 1 else 1
    for attempt in range(tries):
        try:
            return _listen_all(addresses, port, exclusive)
        except OSError as exc:
            if exc.errno not in _PORT_TAKEN or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def _someone_listens(addresses: list[tuple[int, tuple[Any, ...], bool]], port: int) -> bool:
    """Whether a connection to ``port`` on these addresses (loopback for a wildcard) is
    accepted; True if that cannot be told."""
    for family, address, _ in addresses:
        host = address[0] or ("::1" if family == socket.AF_INET6 else "127.0.0.1")
        if host in ("0.0.0.0", "::"):
            host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.settimeout(PROBE_TIMEOUT)
                probe.connect((host, port, *address[2:]))
        except ConnectionRefusedError:
            continue
        except OSError as exc:
            if exc.errno in _NO_SUCH_ADDRESS:
                continue  # no IPv6 here: nobody listens there either
            return True
        return True
    return False


def _addresses(host: str) -> list[tuple[int, tuple[Any, ...], bool]]:
    """(family, address, required) for each address to listen on."""
    if host == "localhost":
        return [(family, (address, 0), family == socket.AF_INET) for address, family in LOCALHOST]
    # As before: IPv6 for an address with a colon, else IPv4 (a name resolves to its
    # IPv4 addresses; "" and "0.0.0.0" are every IPv4 address).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        found = socket.getaddrinfo(
            host or None, 0, family, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
    except UnicodeError:  # "a..b", a label over 63 characters: the IDNA codec refuses it
        raise socket.gaierror(socket.EAI_NONAME, f"{host!r} is not a valid host name") from None
    unique = dict.fromkeys((info[0], info[4]) for info in found)
    return [(family, address, True) for family, address in unique]


def _listen_all(
    addresses: list[tuple[int, tuple[Any, ...], bool]], port: int, exclusive: bool
) -> list[socket.socket]:
    sockets: list[socket.socket] = []
    try:
        for family, address, required in addresses:
            sock = _listen_one(family, (address[0], port, *address[2:]), exclusive, required)
            if sock is not None:
                sockets.append(sock)
                port = sock.getsockname()[1]  # the others take the same port
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _listen_one(
    family: int, address: tuple[Any, ...], exclusive: bool, required: bool
) -> socket.socket | None:
    """A socket listening at ``address``; None if the machine has no such address and it
    is not ``required``."""
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        if not required and exc.errno in _NO_SUCH_ADDRESS:
            return None
        raise
    try:
        share_address(sock, exclusive)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # "::" is IPv6 only
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if not required and exc.errno in _NO_SUCH_ADDRESS:
            return None
        raise
    except BaseException:
        sock.close()
        raise
    return sock


def check_address(host: str) -> None:
    """Raise OSError if this machine cannot listen on ``host`` (on any port)."""
    for sock in listen(host, 0):
        sock.close()
