"""fedlib's import graph: no cycle, the layers point one way, and every module imports on its own.

The static checks read the sources with `ast` (tests/import_graph.py; `python tests/import_graph.py` prints the
graph's cycles and the imports inside functions); the last test imports each module first in a fresh interpreter.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from import_graph import cycle_path, cycles, module_imports, module_names, walk

ROOT = Path(__file__).resolve().parents[2] / "fedlib"

#: Imports deliberately kept inside a function that point back up the layers; each with why it must stay lazy.
LAZY_BACK_EDGES = {
    ("fedlib", "fedlib.engine"): "fedlib.run: `import fedlib` loads no torch, so that an entry point can pin the "
                                 "CPU path (fedlib.set_up_process) before torch loads",
}

#: Leaf modules: what each may import from fedlib at module level.
LEAVES = {"fedlib.errors": set(), "fedlib.hparams": {"fedlib.errors"}}


@functools.cache
def _fedlib() -> tuple[dict[str, set[str]], dict]:
    """(module-level graph, imports inside functions) of fedlib, read once per session."""
    return walk(ROOT)


def _describe(graph: dict[str, set[str]], found: list[list[str]]) -> str:
    return "; ".join(" -> ".join(cycle_path(graph, comp)) for comp in found)


def test_no_import_cycle_at_module_level():
    graph = _fedlib()[0]
    assert len(graph) > 100                           # the walk found the package
    found = cycles(graph)
    assert not found, f"import cycle(s) in fedlib: {_describe(graph, found)}"


def test_the_layers_point_one_way_even_counting_imports_inside_functions():
    """An import moved into a function to dodge a cycle is still a dependency: counted here, the graph has no cycle
    but the listed lazy ones (and each of those is still inside a function)."""
    graph, inner = _fedlib()
    both = {m: graph[m] | {t for i in inner[m] for t in i.loads} - {m} for m in graph}
    for (importer, target), why in LAZY_BACK_EDGES.items():
        assert target not in graph[importer], f"{importer} imports {target} at module level ({why})"
        assert any(target in i.loads for i in inner[importer]), f"stale entry: {importer} no longer imports {target}"
        both[importer] = both[importer] - {target}
    found = cycles(both)
    assert not found, f"dependencies point both ways (an import inside a function closes a cycle): " \
                      f"{_describe(both, found)}"


def test_leaf_modules_and_config_import_no_layer_above_them():
    graph, inner = _fedlib()
    for leaf, allowed in LEAVES.items():
        assert graph[leaf] <= allowed, f"{leaf} is a leaf but imports {sorted(graph[leaf] - allowed)}"
        assert not inner[leaf], f"{leaf} imports inside functions: {inner[leaf]}"
    # config names no registry at module level (it loads them on first use, one way down) ...
    assert graph["fedlib.config"] <= set(LEAVES), sorted(graph["fedlib.config"])
    # ... and nothing under algorithms/, models/ or data/ reaches the configuration, at any level
    for name in graph:
        if name.split(".")[1:2] in (["algorithms"], ["models"], ["data"]):
            reached = graph[name] | {t for i in inner[name] for t in i.loads}
            assert "fedlib.config" not in reached, f"{name} imports fedlib.config (use fedlib.errors/fedlib.hparams)"


def test_config_names_its_errors_and_no_shim_is_left():
    from fedlib import comm, compress, config, errors, experiments, hparams

    assert config.ConfigError is errors.ConfigError and config.Refused is errors.Refused
    assert issubclass(config.ConfigError, config.Refused) and issubclass(config.Refused, ValueError)
    assert config.coerce_value is hparams.coerce_value
    # the shims are gone: each name is imported from its home (fedlib/hparams.py, bits.py, provenance.py, tracking)
    assert importlib.util.find_spec("fedlib.algorithms.hparams") is None
    assert not hasattr(comm, "tracking_vectors") and not hasattr(experiments, "source_hash")
    assert not hasattr(compress, "dense_bits") and not hasattr(experiments, "NUMERIC_SOURCES")


def test_the_cycle_check_names_a_cycle(tmp_path):
    """The checks above can fail: a package whose leaf imports back up is reported with its loop."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "leaf.py").write_text("import os\n\ndef f():\n    from toy import top\n")
    (pkg / "sub" / "__init__.py").write_text("from toy.sub.mid import X\n")
    (pkg / "sub" / "mid.py").write_text("from toy import leaf\nX = 1\n")
    (pkg / "top.py").write_text("from toy.sub import X\n")
    graph, inner = walk(pkg)
    assert cycles(graph) == []                        # the back-import is inside a function
    assert [i.loads for i in inner["toy.leaf"]] == [{"toy.top"}]
    (pkg / "leaf.py").write_text("from toy.top import Y\n")
    found = cycles(module_imports(pkg))
    assert found == [["toy.leaf", "toy.sub", "toy.sub.mid", "toy.top"]]
    assert cycle_path(module_imports(pkg), found[0]) == ["toy.leaf", "toy.top", "toy.sub", "toy.sub.mid", "toy.leaf"]


#: Optional libraries (extras in pyproject.toml): a module that needs one at import time is skipped without it.
OPTIONAL = ("ray", "transformers", "peft", "datasets", "papermill", "nbformat", "ipykernel", "ipywidgets", "IPython")

_IMPORT_EACH = textwrap.dedent("""
    import importlib, json, sys
    import fedlib
    fedlib.set_up_process()      # first, as every entry point: the CPU path before torch loads
    optional = set(sys.argv[1].split(","))
    failed, skipped = {}, {}
    for name in sys.argv[2:]:
        for loaded in [m for m in sys.modules if m.startswith("fedlib.")]:
            del sys.modules[loaded]
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if (exc.name or "").split(".")[0] in optional:
                skipped[name] = exc.name
            else:
                failed[name] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001
            failed[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"failed": failed, "skipped": skipped}))
""")


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module is imported with no other fedlib module loaded (third-party libraries stay loaded between
    modules, so the whole package takes one interpreter): an import that only works after another module was
    loaded first -- the symptom of a cycle -- fails here."""
    import json

    names = sorted(module_names(ROOT))
    proc = subprocess.run([sys.executable, "-c", _IMPORT_EACH, ",".join(OPTIONAL), *names], capture_output=True,
                          text=True, cwd=ROOT.parent, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not result["failed"], result["failed"]
    assert len(result["skipped"]) < len(names) // 4, result["skipped"]     # most of fedlib needs no extra


_LOADED_BY_A_RUN = textwrap.dedent("""
    import json, sys
    import fedlib
    from fedlib.engine import run
    run({"algorithm": "fedadam_ssm", "dataset": "lstsq", "model": "linear", "partition": "iid", "n_clients": 4,
         "clients_per_round": 2, "local_steps": 2, "rounds": 2, "progress": False})
    run({"algorithm": "fafed", "dataset": "pydoc_text", "model": "lstm_small", "partition": "stream_chunks",
         "n_clients": 2, "clients_per_round": 2, "batch_size": 2, "bptt": 4, "local_steps": 2, "rounds": 1,
         "progress": False})
    print(json.dumps(sorted(m for m in sys.modules if m == "fedlib" or m.startswith("fedlib."))))
""")


@pytest.mark.slow
def test_every_module_a_run_loads_is_in_the_provenance_hash_or_says_why_not():
    """A record's `source_hash` covers the code that decides its numbers: a module the engine loads for a run
    (a linear-model run of a compressing algorithm, and a stateful LSTM run) is under NUMERIC_SOURCES or listed
    in NOT_NUMERIC with its reason. (compress.py and streams.py were loaded by runs but hashed by nothing.)"""
    import json

    from fedlib.provenance import NOT_NUMERIC, NUMERIC_SOURCES

    proc = subprocess.run([sys.executable, "-c", _LOADED_BY_A_RUN], capture_output=True, text=True,
                          cwd=ROOT.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"fedlib.compress", "fedlib.streams", "fedlib.engine.simulation"} <= set(loaded)
    covered = {s.removesuffix(".py") for s in NUMERIC_SOURCES}
    exempt = {s.removesuffix(".py") for s in NOT_NUMERIC}
    unaccounted = []
    for name in loaded:
        top = name.split(".")[1] if "." in name else "__init__"
        if top not in covered and top not in exempt:
            unaccounted.append(name)
    assert not unaccounted, f"modules a run loads that the provenance hash does not cover: {unaccounted}"
    for source in (*NUMERIC_SOURCES, *NOT_NUMERIC):
        assert (ROOT / source).exists(), f"stale entry {source}"
    assert not covered & exempt


_ARTEFACTS_WITHOUT_TORCH = textwrap.dedent("""
    import importlib, json, sys
    from fedlib.reporting import artefact, notebook
    names = [f"fedlib.papers.{p}.{a}" for p in artefact.papers()
             for a in importlib.import_module(f"fedlib.papers.{p}").ARTEFACTS]
    pulled = "fedlib.reporting.notebook" if "torch" in sys.modules else None
    for name in names:
        if pulled:
            break                            # torch stays loaded: only the first module to load it is known
        if name not in sys.argv[1:]:
            importlib.import_module(name)
            pulled = name if "torch" in sys.modules else None
    print(json.dumps([len(names), pulled]))
""")

#: artefact modules that may load torch at import, each with why (none: fedlib/reporting/artefact.py's rule)
TORCH_AT_IMPORT: dict[str, str] = {}

#: libraries that load torch when imported
TORCH_LIBRARIES = {"torch", "torchvision", "transformers", "peft"}


def _loads_torch(path: Path) -> bool:
    """Whether the module at `path` imports torch (or a library that loads it) when it is loaded: at module level,
    in class bodies, under module-level `if`/`try`; not inside functions nor under `if TYPE_CHECKING:`."""
    def visit(node) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return any(visit(child) for child in node.orelse)
        if isinstance(node, ast.Import):
            return any(a.name.split(".")[0] in TORCH_LIBRARIES for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return not node.level and (node.module or "").split(".")[0] in TORCH_LIBRARIES
        return any(visit(child) for child in ast.iter_child_nodes(node))
    return visit(ast.parse(path.read_text()))


def _torch_chain(start: str, graph: dict[str, set[str]], names: dict[str, Path]) -> list[str] | None:
    """The import chain from module `start` to the first module that loads torch, or None (breadth first)."""
    parents, queue = {start: None}, [start]
    for name in queue:
        if _loads_torch(names[name]):
            chain = [name]
            while parents[chain[-1]]:
                chain.append(parents[chain[-1]])
            return chain[::-1]
        for nxt in sorted(graph.get(name, ())):
            if nxt not in parents:
                parents[nxt] = name
                queue.append(nxt)
    return None


def test_artefact_modules_and_the_notebook_runner_import_without_torch():
    """The rule of fedlib/reporting/artefact.py, read statically: a notebook's first cell imports its artefact module
    and `fedlib.reporting.notebook`, then `notebook.start` pins the CPU path, which must precede torch."""
    from fedlib.reporting import artefact

    graph, names = _fedlib()[0], module_names(ROOT)
    modules = [f"fedlib.papers.{a.paper}.{a.name}" for p in artefact.papers() for a in artefact.artefacts(p)]
    assert len(modules) >= 21
    pulled = {m: _torch_chain(m, graph, names) for m in [*modules, "fedlib.reporting.notebook", "fedlib"]}
    assert {m: " -> ".join(chain) for m, chain in pulled.items() if chain and m not in TORCH_AT_IMPORT} == {}


def test_the_torch_check_finds_torch_through_a_chain(tmp_path):
    """The check above can fail: torch imported two modules down (under `try`) is found; inside a function or under
    TYPE_CHECKING it is not."""
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "art.py").write_text("from toy import mid\n")
    (pkg / "mid.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n"
                                "def f():\n    import torch\nfrom toy import low\n")
    (pkg / "low.py").write_text("try:\n    from torch import nn\nexcept ImportError:\n    nn = None\n")
    graph, names = module_imports(pkg), module_names(pkg)
    assert _torch_chain("toy.art", graph, names) == ["toy.art", "toy.mid", "toy.low"]
    (pkg / "low.py").write_text("import numpy\n")
    assert _torch_chain("toy.art", graph, names) is None


@pytest.mark.slow
def test_notebooks_start_their_workers_before_torch_loads():
    """A notebook's first cell imports its artefact module and calls `notebook.start`, which starts the run workers'
    fork server when runs are to be computed; that server then loads torch while the kernel does. An artefact
    module that loads torch itself makes the workers wait for it (about 2 s per stage; FedAdam-SSM's five run
    stages did, through fedlib.compress's bit constants). Every artefact module imports without torch, but those
    listed in TORCH_AT_IMPORT."""
    import json

    proc = subprocess.run([sys.executable, "-c", _ARTEFACTS_WITHOUT_TORCH, *TORCH_AT_IMPORT], capture_output=True,
                          text=True, cwd=ROOT.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, pulled = json.loads(proc.stdout.strip().splitlines()[-1])
    assert count >= 21 and pulled is None
