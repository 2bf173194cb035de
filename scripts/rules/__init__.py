"""The rules: pure functions from recorded facts to problems (stdlib only; they import only `common`), and the
registry that maps every (document kind, check) to its rule."""
