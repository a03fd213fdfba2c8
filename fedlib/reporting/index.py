"""Write reports/README.md, the index of every generated artefact: `python -m fedlib.reporting.index reports`."""
from __future__ import annotations

import sys

from fedlib.reporting.atomic_files import ReportWriteFailed
from fedlib.reporting.report import write_index


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = argv[0] if argv else "reports"
    try:
        path = write_index(root)           # all or nothing: a failure leaves the previous README.md and scorecard.md
    except ReportWriteFailed as exc:
        print(f"fedlib.reporting.index: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:                 # an artefact's json that cannot be read
        print(f"fedlib.reporting.index: {' '.join(str(exc.strerror or exc).split())}; the files in {root} are "
              "unchanged", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
