"""Who an artefact is: its paper, name, params.yaml section, DVC stage, notebook, report and run-cache folders.

An artefact is a module `fedlib/papers/<paper>/<name>.py`; everything else follows from those two names:

    section / stage   <paper>_<name>                       (params.yaml block, dvc.yaml stage)
    notebook          notebooks/<paper>_<name>.ipynb
    reports           reports/<paper>/<name>.{md,csv,json,png,svg}
    run cache         runs/<paper>/<name>/<fingerprint>.json

A paper package's `__init__.py` holds `PAPER` (a `Paper`) and `ARTEFACTS`, the artefact names in report order; a
module of the package that declares DESC but is not (yet) listed there comes after them, by name.

What an artefact needs beyond that, its module declares (module constants; `python -m fedlib.reporting.stages`
writes its dvc.yaml stage from them):

    DESC            the stage's one-line description
    FIGURES         suffixes of the figures it writes: ("",) for <name>.png/.svg; none for a table
    BORROWS         an artefact of the same paper whose run cache it copies shared runs from (dependency on it)
    SHARES_CACHE    an artefact of the same paper whose run cache it reads as its own (it keeps none)
    READS_BLOCKS    artefacts of the same paper whose params.yaml blocks it reads too
    WORKERS         the stage's worker processes when not the `workers` of params.yaml (e.g. 1: in-process)
    BUDGET_S        seconds its embedded stage may take (papermill's notebook time on the reference 2-core machine);
                    the budgets of all artefacts together stay within PIPELINE_BUDGET_S, and each measured stage
                    (docs/performance.md, generated from the last `dvc repro`) within its own
                    (tests/pipeline/test_stages.py)

An artefact module imports without torch (nothing it loads at module level imports torch; import torch, and the
engine, inside the functions that run it). Its notebook imports it before `notebook.start`, which pins the portable
CPU path for the kernel, and that pin must come before torch loads (fedlib/cpu_path.py); a module that loaded torch
would leave the kernel on the host's native kernels. Checked by tests/pipeline/test_imports.py (statically, fast).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: seconds a cold embedded `dvc repro` of every artefact may take on the reference 2-core machine (the sum of the
#: artefacts' BUDGET_S must fit: a new artefact's budget comes out of what is left)
PIPELINE_BUDGET_S = 1200


@dataclass(frozen=True)
class Paper:
    key: str                        # the package name, e.g. "fadamgt"
    title: str
    authors: tuple[str, ...]
    venue: str                      # venue or arXiv id
    doc: str                        # docs/papers/<key>.md: the account of the paper this replication follows

    @property
    def short(self) -> str:
        """'Title (Surname et al.)', as report headers cite the paper."""
        surname = self.authors[0].split()[-1]
        return f"{self.title} ({surname} et al.)" if len(self.authors) > 1 else f"{self.title} ({surname})"

    @property
    def citation(self) -> str:
        return f"{', '.join(self.authors)}. {self.title}. {self.venue}."


@dataclass(frozen=True)
class Artefact:
    paper: str
    name: str

    @property
    def section(self) -> str:
        return f"{self.paper}_{self.name}"

    stage = section

    @property
    def notebook(self) -> str:
        return f"notebooks/{self.section}.ipynb"

    @property
    def reports_dir(self) -> Path:
        return Path("reports") / self.paper

    @property
    def cache_dir(self) -> Path:
        return Path("runs") / self.paper / self.name

    @property
    def package(self) -> ModuleType:
        return importlib.import_module(f"fedlib.papers.{self.paper}")

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(f"fedlib.papers.{self.paper}.{self.name}")

    @property
    def desc(self) -> str:
        return self.module.DESC

    @property
    def figures(self) -> tuple[str, ...]:
        return tuple(getattr(self.module, "FIGURES", ()))

    @property
    def borrows(self) -> str | None:
        return getattr(self.module, "BORROWS", None)

    @property
    def shares_cache(self) -> str | None:
        return getattr(self.module, "SHARES_CACHE", None)

    @property
    def reads_blocks(self) -> tuple[str, ...]:
        return tuple(getattr(self.module, "READS_BLOCKS", ()))

    @property
    def workers(self) -> str:
        """The stage's `-p workers` value: the module's WORKERS, else params.yaml's `workers`."""
        return str(getattr(self.module, "WORKERS", "${workers}"))

    @property
    def budget_s(self) -> int:
        """Seconds its embedded stage may take (the module's BUDGET_S; AttributeError names the module without)."""
        try:
            return self.module.BUDGET_S
        except AttributeError:
            raise AttributeError(f"{self.module.__name__} declares no BUDGET_S (seconds its embedded stage may "
                                 "take; docs/extending.md)") from None

    @property
    def run_cache(self) -> Path:
        """The run cache its stage reads and fills: its own, or the one of the artefact it shares."""
        return Path("runs") / self.paper / (self.shares_cache or self.name)

    @property
    def order(self) -> int:
        """Position among the paper's artefacts (the order of the reports index)."""
        return [a.name for a in artefacts(self.paper)].index(self.name)


def of(module: ModuleType | str) -> Artefact:
    """The artefact a module `fedlib.papers.<paper>.<name>` (or its `__name__`) implements."""
    name = module if isinstance(module, str) else module.__name__
    parts = name.split(".")
    if len(parts) != 4 or parts[:2] != ["fedlib", "papers"]:
        raise ValueError(f"'{name}' is not an artefact module (expected fedlib.papers.<paper>.<artefact>)")
    return Artefact(parts[2], parts[3])


def papers() -> list[str]:
    """Every paper package under fedlib/papers/."""
    import fedlib.papers

    return sorted(m.name for m in pkgutil.iter_modules(fedlib.papers.__path__) if m.ispkg)


def artefacts(paper: str) -> list[Artefact]:
    """The paper's artefacts in report order: its ARTEFACTS, then any other module of the package declaring DESC."""
    pkg = importlib.import_module(f"fedlib.papers.{paper}")
    listed = list(pkg.ARTEFACTS)
    unlisted = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.ispkg and m.name not in listed
                      and hasattr(importlib.import_module(f"{pkg.__name__}.{m.name}"), "DESC"))
    return [Artefact(paper, name) for name in listed + unlisted]
