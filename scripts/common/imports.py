"""What a set of Python files imports, read from their source with `ast`, never by running them: every `import`
and `from ... import` statement, at module level or inside a function, resolved to the files under a root that
Python would load for it (the package `__init__.py` files on the way included).

Used for the gate's hashed sources (rules.gate_sources: the closure of what its processes import, over the
gate's own checkout or over a source root the judge compares a result with, whose code is data there and never
runs) and for the project's import graph (tests/tooling/test_import_layers.py: no cycle, no arrow back up).

Stdlib only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


class NotReadable(ValueError):
    """A file that is not there or not Python this reader can parse."""


def parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except OSError as error:
        raise NotReadable(f"{path.name} cannot be read: {error.strerror or type(error).__name__}") from None
    except (SyntaxError, ValueError) as error:
        raise NotReadable(f"{path.name} is not Python this reader can parse: {error}") from None


def literal_of(path: Path, name: str) -> Any:
    """The value of the top-level `NAME = <literal>` (or `NAME: T = <literal>`) of a Python file. NotReadable
    when the file assigns no such name, or assigns it a value computed at run time."""
    for node in parse(path).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            try:
                return ast.literal_eval(node.value)  # type: ignore[union-attr]
            except ValueError:
                raise NotReadable(f"{path.name}: {name} is not a literal (it is computed)") from None
    raise NotReadable(f"{path.name} assigns no {name}")


def _module_file(base: Path, parts: Sequence[str]) -> Path | None:
    target = base.joinpath(*parts)
    if target.with_suffix(".py").is_file():
        return target.with_suffix(".py")
    if (target / "__init__.py").is_file():
        return target / "__init__.py"
    return None


def _packages(base: Path, parts: Sequence[str]) -> list[Path]:
    """The `__init__.py` of each package on the way to base/parts (Python runs each before the module)."""
    return [init for i in range(1, len(parts)) if (init := base.joinpath(*parts[:i], "__init__.py")).is_file()]


def _absolute(name: str, search: Sequence[Path]) -> tuple[Path, list[Path]] | None:
    parts = name.split(".")
    for base in search:
        found = _module_file(base, parts)
        if found is not None:
            return found, _packages(base, parts)
    return None


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement, nested ones included (in functions, classes, branches, handlers), never an expression:
    an import is a statement, and expressions are most of a tree's nodes."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            yield node
        for name in _BODIES:
            todo += getattr(node, name, None) or []


def imports_of(path: Path, search: Sequence[Path], own_folder: bool = False) -> tuple[set[Path], set[str]]:
    """(the files under the search folders that `path`'s import statements load, the names that resolved to no
    file there: the standard library's and third parties'). `own_folder`: the file runs as a script, so its own
    folder is searched after the others (sys.path[0])."""
    folders = [*search, path.parent] if own_folder else list(search)
    files: set[Path] = set()
    outside: set[str] = set()
    for node in _statements(parse(path).body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = _absolute(alias.name, folders)
                if found is None:
                    outside.add(alias.name)
                else:
                    files.add(found[0])
                    files.update(found[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's own package
                package = path.parent
                for _ in range(node.level - 1):
                    package = package.parent
                parts = node.module.split(".") if node.module else []
                module = _module_file(package, parts) if parts else (package / "__init__.py")
                packages = _packages(package, parts)
                base: Path | None = package.joinpath(*parts)
            else:
                found = _absolute(node.module or "", folders)
                if found is None:
                    outside.add(node.module or "")
                    continue
                module, packages = found
                base = module.parent if module.name == "__init__.py" else None
            files.update(packages)
            submodules = [_module_file(base, [alias.name]) if base is not None else None for alias in node.names]
            files.update(s for s in submodules if s is not None)
            if module is not None and module.is_file() and (not all(submodules) or module.name == "__init__.py"):
                files.add(module)
    files.discard(path)
    return files, outside


def closure(entries: Iterable[Path], search: Sequence[Path], scripts: Iterable[Path] = ()) -> set[Path]:
    """Every file under the search folders that the entries load, the entries included, following each file's
    imports in turn. `scripts`: the entries that run as scripts (their own folder is searched too)."""
    run_as_script = {p.resolve() for p in scripts}
    seen: set[Path] = set()
    todo = [Path(p).resolve() for p in entries]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        found, _ = imports_of(path, search, own_folder=path in run_as_script)
        todo += [p.resolve() for p in found if p.resolve() not in seen]
    return seen


def relative(paths: Iterable[Path], root: Path) -> list[str]:
    """Sorted repository-relative POSIX paths."""
    resolved = root.resolve()
    return sorted(p.resolve().relative_to(resolved).as_posix() for p in paths)
