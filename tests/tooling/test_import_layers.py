"""The project's imports go one way. Drawn from every import statement of scripts/ and tools/ (ast: at module level
and inside functions, never by running them), the graph has no cycle, and no file imports one of a higher layer:
entry scripts -> packages (platform_runtime, evidence_index, tools/nfsvm) -> rules -> common. The rules and the
common leaf import the standard library only."""

from __future__ import annotations

import sys
from pathlib import Path

from common.imports import imports_of

from tests.conftest import ROOT

SCRIPTS, TOOLS = ROOT / "scripts", ROOT / "tools"
# How Python finds the project's modules: scripts/ and tools/ on sys.path (every entry point puts them there), the
# reprise folder for the evidence index's re-runs of it (evidence_index.crossfile), a script's own folder.
SEARCH = [SCRIPTS, TOOLS, SCRIPTS / "reprise"]
# Layer of each part, lowest first: a file may import its own layer and the ones below, never one above.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("standalone", ("scripts/reprise/", "scripts/kernodeck_diagnostic.py")),  # copied alone: import nothing else
    ("common", ("scripts/common/",)),
    ("rules", ("scripts/rules/",)),
    ("packages", ("scripts/platform_runtime/", "scripts/evidence_index/", "tools/nfsvm/", "tools/wine/")),
    ("entry scripts", ("scripts/", "tools/")),
]
STDLIB_ONLY = ("scripts/common/", "scripts/rules/")


def _files() -> list[Path]:
    return sorted(p for base in (SCRIPTS, TOOLS) for p in base.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.resolve().relative_to(ROOT.resolve()).as_posix()


def layer_of(relative: str) -> int:
    return next(i for i, (_, prefixes) in enumerate(LAYERS) if relative.startswith(prefixes))


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """{file: the project files it imports}, {file: the names it imports from outside the project}."""
    edges, outside = {}, {}
    for path in _files():
        found, names = imports_of(path, SEARCH, own_folder=True)
        edges[_rel(path)] = {_rel(p) for p in found if p.resolve().is_relative_to(ROOT.resolve())}
        outside[_rel(path)] = names
    return edges, outside


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan), and any file importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def arrows_up(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{source} ({LAYERS[layer_of(source)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                  for source, targets in edges.items() for target in targets if layer_of(target) > layer_of(source))


def test_no_import_cycle_in_scripts_and_tools():
    edges, _ = graph()
    assert len(edges) > 150 and edges["scripts/platform_runtime/gate.py"]  # the whole project was read
    assert cycles(edges) == []


def test_no_import_goes_from_a_lower_layer_to_a_higher_one():
    edges, _ = graph()
    assert arrows_up(edges) == []


def test_the_rules_and_the_common_leaf_import_the_standard_library_only():
    _, outside = graph()
    foreign = {path: sorted(n for n in names if n.split(".")[0] not in sys.stdlib_module_names)
               for path, names in outside.items() if path.startswith(STDLIB_ONLY)}
    assert {path: names for path, names in foreign.items() if names} == {}


def test_a_cycle_and_an_arrow_up_are_found_where_they_are():
    """The checks can fail: a made-up graph with each fault is refused, naming the files."""
    edges = {"scripts/rules/a.py": {"scripts/rules/b.py"}, "scripts/rules/b.py": {"scripts/rules/a.py"},
             "scripts/common/x.py": {"scripts/platform_runtime/gate.py"}, "scripts/platform_runtime/gate.py": set()}
    assert cycles(edges) == [["scripts/rules/a.py", "scripts/rules/b.py"]]
    assert arrows_up(edges) == ["scripts/common/x.py (common) imports scripts/platform_runtime/gate.py (packages)"]


def test_function_level_imports_are_edges_of_the_graph(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from pkg import high\n    return high\n")
    (package / "high.py").write_text("from pkg import low\n")
    found, _ = imports_of(package / "low.py", [tmp_path])
    assert package / "high.py" in found
    edges = {p.name: {q.name for q in imports_of(p, [tmp_path])[0] if q.name != "__init__.py"}
             for p in (package / "low.py", package / "high.py")}
    assert cycles(edges) == [["high.py", "low.py"]]
