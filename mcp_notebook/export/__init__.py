"""A notebook -> a standalone, installable MCP server package (``mcp-notebook export``).

- extract.py: the notebook's code cells -> a module's code, and what was left out (pure);
- package.py: writing the package (pyproject pinned to the installed versions, README,
  tests) and checking that it imports;
- runtime.py: what the package runs on, without IPython: the ``mcp`` object, workers for
  tools, ``python -m PACKAGE`` and the ASGI app (transports/asgi.py);
- stdio.py: MCP over stdio without a kernel.

Nothing is imported here, so ``import mcp_notebook.export.runtime`` loads no exporter.
"""
