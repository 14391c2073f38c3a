"""The IPython extension: the ``mcp`` object in the namespace and the ``%mcp`` magics."""
