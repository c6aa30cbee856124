"""The folders show the data flow: every module sits in a layer, imports only from its own layer or
lower ones, and no modules import each other round a circle.

Imports are read from the source (top-level, inside functions and under ``TYPE_CHECKING`` alike),
so a lazy import that climbs a floor counts as much as an eager one.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "cudaenv"

# Lowest first. The data flow is matrix -> resolver -> project -> images -> engine -> run/export ->
# cli; in imports the engine sits below images, since images hand it plain requests (BuildRequest,
# ContainerSpec) and the one that hands over imports the receiver, and hosts sit below projects,
# whose [target] and lock name a target host.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("cudaenv", "cudaenv.errors", "cudaenv.versions", "cudaenv.core", "cudaenv.secrets")),
    ("matrix", ("cudaenv.matrix",)),
    ("resolver", ("cudaenv.resolver",)),
    ("hosts", ("cudaenv.hosts", "cudaenv.cluster")),
    ("project", ("cudaenv.project",)),
    ("engine", ("cudaenv.engine",)),
    ("images", ("cudaenv.images",)),
    ("run/export", ("cudaenv.run", "cudaenv.export", "cudaenv.monitor")),
    ("cli", ("cudaenv.cli", "cudaenv.entry", "cudaenv.__main__")),
)
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "entry.py", "errors.py", "versions.py"}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The cudaenv modules this file imports (``from P import m`` counts as ``P.m`` when m is one)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name.split(".")[0] == "cudaenv"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "cudaenv":
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                out.add(name if name in known else node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; cudaenv spells its imports out")
    return out


def layer_of(module: str) -> int:
    """The layer whose longest prefix names the module."""
    best, where = -1, None
    for index, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), index
    assert where is not None, f"{module} is in no layer: add its package to LAYERS"
    return where


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, known) - {name} for name, path in known.items()}


def test_at_most_four_modules_besides_the_package_itself_sit_at_the_top():
    top = {path.name for path in PACKAGE.glob("*.py")}
    assert top <= TOP_LEVEL_MODULES, f"modules at cudaenv/ top level: {sorted(top - TOP_LEVEL_MODULES)}"


def test_every_module_has_a_layer():
    for module in modules():
        layer_of(module)


def test_no_import_climbs_a_layer():
    climbs = []
    for module, imported in graph().items():
        for target in imported:
            if layer_of(target) > layer_of(module):
                climbs.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert not climbs, "\n".join(sorted(climbs))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in edges:
                continue
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_circle():
    """A package's ``__init__`` may load its own submodules (a facade, lazily, as ``get_engine``
    and ``load_matrix`` do); apart from that, no two modules reach each other."""
    edges = {module: {t for t in imported if not t.startswith(module + ".")}
             for module, imported in graph().items()}
    assert cycles(edges) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_suite_spells_the_command_line_in_one_place():
    """tests/support/cli.py runs the CLI in a subprocess; no test module keeps a copy of its own."""
    tests = PACKAGE.parent / "tests"
    needle = '"-m", ' + '"cudaenv"'  # split, so that this file does not match itself
    spelled = [str(path.relative_to(tests)) for path in tests.rglob("*.py")
               if path != tests / "support" / "cli.py" and needle in path.read_text(encoding="utf-8")]
    assert spelled == []
