"""Who an artefact is: its paper, name, params.yaml section, DVC stage, notebook, report and run-cache folders.

An artefact is a module `fedlib/papers/<paper>/<name>.py`; everything else follows from those two names:

    section / stage   <paper>_<name>                       (params.yaml block, dvc.yaml stage)
    notebook          notebooks/<paper>_<name>.ipynb
    reports           reports/<paper>/<name>.{md,csv,json,png,svg}
    run cache         runs/<paper>/<name>/<fingerprint>.json

A paper package's `__init__.py` holds `PAPER` (a `Paper`) and `ARTEFACTS`, the artefact names in report order.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


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
    def order(self) -> int:
        """Position in the paper's ARTEFACTS (the order of the reports index)."""
        return list(self.package.ARTEFACTS).index(self.name)


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
    """The paper's artefacts in report order."""
    pkg = importlib.import_module(f"fedlib.papers.{paper}")
    return [Artefact(paper, name) for name in pkg.ARTEFACTS]
