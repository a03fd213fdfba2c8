"""papermill's command line for the DVC stages, minus two costs paid by every stage: an import that is never used
(1.8 s) and a graceful kernel shutdown after the last cell (1.3 s).

papermill reads and writes notebooks through nbformat, which validates them with jsonschema. When the optional
package `rfc3987_syntax` is installed (jupyterlab's dependencies bring it in), jsonschema imports it for its "iri"
format checker, and it compiles a Lark grammar at import: 1.8 s of every `papermill` start on this project's 2-core
machine (`python -X importtime -c "import papermill"`), for a format nbformat's schema never uses. Marking the module
absent makes jsonschema skip that one checker; everything else is papermill's own CLI, with the same arguments:

    python -m fedlib.reporting.run_notebook notebooks/fadamgt_fig3.ipynb runs/fadamgt/fig3.ipynb -k python3 ...

The kernel is stopped at once when the last cell has run (nbclient's `shutdown_kernel="immediate"`) instead of
being asked to shut down and waited for: by then every output is in the notebook papermill writes, every report was
written (atomically) by a cell, and the run pool was closed by the cell that opened it, so nothing in the kernel is
left to finish. A failing cell still ends the run with papermill's error and exit status.

An unknown `FEDLIB_CPU_PATH` is refused in one line (exit 2) before the kernel starts (fedlib/cpu_path.py); the
kernel's `notebook.start` refuses it too, for plain `papermill`. Plain `papermill` gives the same notebook (a test
executes both); this only starts and stops faster. It also exits when the `dvc repro` that started it dies
(`lifeline.die_with_launcher`), and its kernel and run pool with it.
"""
from __future__ import annotations

import sys

from fedlib.cpu_path import check_switch
from fedlib.errors import Refused
from fedlib.lifeline import die_with_launcher


def main() -> None:
    die_with_launcher()
    try:
        check_switch()                      # an unknown $FEDLIB_CPU_PATH: one line before the kernel starts
    except Refused as exc:
        print(f"fedlib: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    sys.modules.setdefault("rfc3987_syntax", None)      # None in sys.modules: `import` raises ImportError
    from papermill.cli import papermill
    from papermill.engines import NBClientEngine, papermill_engines

    class PromptShutdown(NBClientEngine):
        """papermill's default engine, stopping the kernel at once after the last cell."""

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            return super().execute_managed_notebook(nb_man, kernel_name, shutdown_kernel="immediate", **kwargs)

    papermill_engines.register(None, PromptShutdown)          # the engine used when no --engine is given
    papermill(prog_name="papermill")


if __name__ == "__main__":
    main()
