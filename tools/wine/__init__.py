"""Windows' CPython with the pinned runtime under Wine: built from registry packages, cached, and run.

`python3 dev.py wine` (tools/wine/cli.py). Wine is not Windows: what this proves and what it does not is in
docs/wine.md. Stdlib only, so it runs from dev.py's venv or any Python 3.10+.
"""
