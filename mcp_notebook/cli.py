"""The ``mcp-notebook`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from importlib import resources
from pathlib import Path

from . import __version__


def _default_notebook() -> Path:
    """The quickstart notebook: the checkout's copy if here, else the one in the package."""
    local = Path("notebooks/quickstart.ipynb")
    if local.is_file():
        return local
    return Path(str(resources.files("mcp_notebook") / "_data" / "quickstart.ipynb"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-notebook", description="Serve a Jupyter notebook as an MCP server."
    )
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a notebook in a fresh kernel and serve it")
    serve.add_argument(
        "notebook", nargs="?", type=Path, help="the .ipynb to serve (default: the quickstart)"
    )
    serve.add_argument("--transport", choices=["http"], default="http")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=None, help="default 8765, or any free port")
    serve.add_argument("--name", default=None, help="server name (default: the notebook's)")
    auth = serve.add_mutually_exclusive_group()
    auth.add_argument("--token", default=None, help="bearer token (default: random)")
    auth.add_argument("--no-auth", action="store_true", help="accept requests without a token")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command == "serve":
        from .headless import ServeOptions, serve_http

        path = args.notebook or _default_notebook()
        if not path.is_file():
            print(f"mcp-notebook: no such notebook: {path}", file=sys.stderr)
            return 2
        options = ServeOptions(
            host=args.host,
            port=args.port,
            token=args.token,
            auth=not args.no_auth,
            name=args.name,
        )
        return serve_http(path, options)
    return 2


if __name__ == "__main__":
    sys.exit(main())
