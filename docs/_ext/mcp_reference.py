"""Reference pages generated from the code, so they cannot drift from it.

``argparse-reference`` renders an ``argparse`` parser: the whole parser's help, then each
subcommand's help under a rubric of its own (an anchor to link to). It documents both
``mcp-notebook`` (``mcp_notebook.cli:_parser``) and ``%mcp``
(``mcp_notebook.kernel.magicparser:magic_parser``) from the parsers the commands run with.
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def load_parser(target: str) -> argparse.ArgumentParser:
    """The parser ``module:function`` builds."""
    module, _, function = target.partition(":")
    parser = getattr(importlib.import_module(module), function)()
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError(f"{target} did not return an argparse.ArgumentParser")
    return parser


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, Any]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {
                choice.dest: (choice.help or "").replace("%%", "%")
                for choice in action._choices_actions
            }
            for name, sub in action.choices.items():
                found.append((name, helps.get(name, ""), sub))
    return found


def help_text(parser: argparse.ArgumentParser) -> str:
    """``parser``'s help at a fixed width, whatever the terminal building the docs."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"
    try:
        return parser.format_help()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


class ArgparseReference(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        parser = load_parser(self.arguments[0])
        prog = parser.prog
        out: list[nodes.Node] = [nodes.literal_block(text=help_text(parser), language="text")]
        table = nodes.bullet_list()
        for name, summary, _ in subcommands(parser):
            item = nodes.list_item()
            para = nodes.paragraph()
            ref = nodes.reference("", "", internal=True, refid=anchor(prog, name))
            ref += nodes.literal(text=f"{prog} {name}")
            para += ref
            para += nodes.Text(f": {summary}" if summary else "")
            item += para
            table += item
        out.append(table)
        for name, summary, sub in subcommands(parser):
            title = nodes.rubric(text=f"{prog} {name}", ids=[anchor(prog, name)])
            out.append(title)
            if summary:
                out.append(nodes.paragraph(text=summary[0].upper() + summary[1:] + "."))
            out.append(nodes.literal_block(text=help_text(sub), language="text"))
        return out


def anchor(prog: str, name: str) -> str:
    return nodes.make_id(f"{prog.strip('%')}-{name}")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("argparse-reference", ArgparseReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
