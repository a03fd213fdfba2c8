"""papermill's command line for the DVC stages, minus one import that costs 1.8 s per stage and is never used.

papermill reads and writes notebooks through nbformat, which validates them with jsonschema. When the optional
package `rfc3987_syntax` is installed (jupyterlab's dependencies bring it in), jsonschema imports it for its "iri"
format checker, and it compiles a Lark grammar at import: 1.8 s of every `papermill` start on this project's 2-core
machine (`python -X importtime -c "import papermill"`), for a format nbformat's schema never uses. Marking the module
absent makes jsonschema skip that one checker; everything else is papermill's own CLI, with the same arguments:

    python -m fedlib.reporting.run_notebook notebooks/fadamgt_fig3.ipynb runs/fadamgt/fig3.ipynb -k python3 ...

Plain `papermill` gives the same notebook (a test executes both); this only starts faster.
"""
from __future__ import annotations

import sys


def main() -> None:
    sys.modules.setdefault("rfc3987_syntax", None)      # None in sys.modules: `import` raises ImportError
    from papermill.cli import papermill

    papermill(prog_name="papermill")


if __name__ == "__main__":
    main()
