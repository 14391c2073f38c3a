"""An MCP App document: one self-contained HTML5 page around a view's fragment.

Everything it runs is inline: the official view SDK and its glue (``static/view.min.js``,
built by ``js/apps/build.sh`` from pinned npm packages and vendored with their licences in
``static/THIRD-PARTY-LICENSES.txt``), and, only when the fragment holds widgets, the
ipywidgets HTML manager (``static/widgets.min.js`` and ``.css``). So a view declares no
origin unless its own HTML loads from one.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from typing import Any

from .render import Fragment

# Host theme variables (spec "Theming") with fallbacks, so a host that sends none still
# gets a readable page.
_STYLE = """
:root { color-scheme: light dark; }
body {
  margin: 0; padding: 8px;
  font-family: var(--font-sans, system-ui, sans-serif);
  color: var(--color-text-primary, CanvasText);
  background: var(--color-background-primary, Canvas);
}
#mcp-notebook-view img.mcp-notebook-image, #mcp-notebook-view svg { max-width: 100%; height: auto; }
#mcp-notebook-view pre {
  font-family: var(--font-mono, ui-monospace, monospace); white-space: pre-wrap;
}
#mcp-notebook-view table { border-collapse: collapse; }
#mcp-notebook-view th, #mcp-notebook-view td {
  padding: 2px 8px; border-bottom: 1px solid var(--color-border-secondary, #8884);
}
"""


@cache
def asset(name: str) -> str:
    """A vendored bundle, read once per process."""
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


# ipywidgets' own variables, after its style sheet: the controls take the host's colours.
_WIDGET_STYLE = """
html:root {
  --jp-widgets-color: var(--color-text-primary, CanvasText);
  --jp-widgets-label-color: var(--color-text-primary, CanvasText);
  --jp-widgets-readout-color: var(--color-text-primary, CanvasText);
  --jp-ui-font-color1: var(--color-text-primary, CanvasText);
  --jp-content-font-color1: var(--color-text-primary, CanvasText);
  --jp-widgets-font-family: var(--font-sans, system-ui, sans-serif);
  --jp-widgets-input-color: var(--color-text-primary, CanvasText);
  --jp-widgets-input-background-color: var(--color-background-secondary, Canvas);
}
"""


def _inline_script(source: str) -> str:
    # "</script" inside the code would end the element early; "<\/" means the same in JS.
    return "<script>" + source.replace("</script", "<\\/script") + "</script>"


def _json_script(element_id: str, value: Any) -> str:
    text = json.dumps(value).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def document(fragment: Fragment, *, title: str, config: dict[str, Any]) -> str:
    """The whole page. ``config`` reaches the glue (the view's URI, its widget tool)."""
    head = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style>",
    ]
    scripts = [_json_script("mcp-notebook-config", config)]
    if fragment.widgets:
        head.append(
            "<style>" + asset("widgets.min.css").replace("</style", "<\\/style") + "</style>"
        )
        head.append(f"<style>{_WIDGET_STYLE}</style>")
        scripts.append(_inline_script(asset("widgets.min.js")))
    scripts.append(_inline_script(asset("view.min.js")))
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        + "\n".join(head)
        + '\n</head>\n<body>\n<main id="mcp-notebook-view">'
        + fragment.html
        + "</main>\n"
        + "\n".join(scripts)
        + "\n</body>\n</html>\n"
    )
