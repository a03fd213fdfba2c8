"""The import graph of a package, read statically with `ast`, and its cycles.

`module_imports(root)` maps every module under `root` (e.g. fedlib/) to the package modules it imports when it is
loaded: imports at module level, in class bodies and under module-level `if`/`try`, but not those inside functions
(they run later) nor under `if TYPE_CHECKING:` (they never run). An import of `a.b.c` also loads the packages `a.b`
and `a` (their `__init__`), so it is an edge to each of them that the importer is not already inside. A module-level
`importlib.import_module(f"a.b.{name}")` is taken to load every module under `a.b.`.

`function_imports(root)` lists the package imports inside functions, and `cycles(graph)` the strongly connected
components of more than one module (or a module importing itself). Run as a script it prints both:

    python tests/import_graph.py [fedlib]
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under the package directory `root` (packages by their __init__)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_package(name: str, names: dict[str, Path]) -> bool:
    return names[name].name == "__init__.py"


def _targets(node: ast.Import | ast.ImportFrom, module: str, names: dict[str, Path]) -> dict[str, bool]:
    """The package modules an import statement names -> whether it reads their content. `from m import x` reads m
    unless every x is a submodule (then it only needs m to exist, as a package being loaded does)."""
    if isinstance(node, ast.Import):
        return {alias.name: True for alias in node.names}
    if node.level:
        base = module.split(".") if _is_package(module, names) else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    subs = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in names]
    return {source: len(subs) < len(node.names), **{sub: True for sub in subs}}


def _loaded(target: str, importer: str, names: dict[str, Path], reads: bool = True) -> set[str]:
    """The modules that importing `target` from `importer` needs loaded: `target` itself if the import reads it
    (even a package `importer` is inside: `from pkg import NAME` needs pkg's __init__ to have run), and its
    parent packages that are not already loading around `importer`."""
    while target and target not in names:    # `import a.b.attr`-like forms: the deepest known module
        target = target.rpartition(".")[0]
    parts = target.split(".") if target else []
    out = set()
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name == importer or name not in names:
            continue
        if (i == len(parts) and reads) or not importer.startswith(name + "."):
            out.add(name)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _dynamic_prefix(node: ast.AST) -> str | None:
    """The constant prefix of `importlib.import_module(f"prefix{...}")` or of a constant argument."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
            and node.args):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return arg.values[0].value
    return None


@dataclass(frozen=True)
class Inner:
    """One package import statement inside a function: its line, the module it names, the names it takes, and the
    modules it loads (the edges it would add at module level)."""

    line: int
    source: str
    names: tuple[str, ...]
    loads: frozenset[str] | set[str]


class _Walker(ast.NodeVisitor):
    def __init__(self, module: str, names: dict[str, Path], package: str):
        self.module, self.names, self.package = module, names, package
        self.top: set[str] = set()
        self.inner: list[Inner] = []                # package imports inside functions
        self.depth = 0

    def _record(self, node, targets):
        targets = {t: r for t, r in targets.items() if t == self.package or t.startswith(self.package + ".")}
        if not targets:
            return
        loaded = set().union(*(_loaded(t, self.module, self.names, r) for t, r in targets.items()))
        if self.depth:
            self.inner.append(Inner(node.lineno, next(iter(targets)), tuple(a.name for a in node.names), loaded))
        else:
            self.top |= loaded

    def visit_Import(self, node):
        self._record(node, _targets(node, self.module, self.names))

    visit_ImportFrom = visit_Import

    def visit_If(self, node):
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Call(self, node):
        prefix = _dynamic_prefix(node)
        if prefix is not None and not self.depth:
            if prefix in self.names:
                self.top |= _loaded(prefix, self.module, self.names)
            else:
                for name in self.names:
                    if name.startswith(prefix):
                        self.top |= _loaded(name, self.module, self.names)
        self.generic_visit(node)

    def _function(self, node):
        for d in [*getattr(node, "decorator_list", []), *node.args.defaults, *node.args.kw_defaults]:
            if d is not None:                            # decorators and defaults run at definition time
                self.visit(d)
        self.depth += 1
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self.visit(child)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function


def walk(root: Path) -> tuple[dict[str, set[str]], dict[str, list[Inner]]]:
    """(module-level graph, function-level imports) of the package directory `root`."""
    names = module_names(root)
    graph, inner = {}, {}
    for name, path in names.items():
        w = _Walker(name, names, root.name)
        w.visit(ast.parse(path.read_text(), str(path)))
        graph[name] = w.top
        inner[name] = w.inner
    return graph, inner


def module_imports(root: Path) -> dict[str, set[str]]:
    return walk(root)[0]


def function_imports(root: Path) -> dict[str, list[Inner]]:
    return walk(root)[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with a cycle (Tarjan), each sorted, largest first."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out, key=lambda c: (-len(c), c))


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One shortest loop through the component's first module, for a readable message (a -> b -> ... -> a)."""
    members, start = set(component), component[0]
    prev, queue = {start: start}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return component


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else Path(__file__).resolve().parents[1] / "fedlib")
    graph, inner = walk(root)
    found = cycles(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} module-level edges")
    print(f"{len(found)} import cycle(s) at module level")
    for comp in found:
        print(f"  [{len(comp)}] {' -> '.join(cycle_path(graph, comp))}")
    stmts = [i for v in inner.values() for i in v]
    config_error = [i for i in stmts if i.names == ("ConfigError",)]
    print(f"{len(stmts)} {root.name} import statements inside functions, {len(config_error)} of them only for "
          f"ConfigError; most named:")
    for source, n in Counter(i.source for i in stmts).most_common(12):
        print(f"  {n:4d}  {source}")
    both = {m: graph[m] | {t for i in inner[m] for t in i.loads} - {m} for m in graph}
    layered = cycles(both)
    print(f"{len(layered)} cycle(s) once the imports inside functions count too (dependencies pointing both ways):")
    for comp in layered:
        print(f"  [{len(comp)}] {', '.join(comp)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
