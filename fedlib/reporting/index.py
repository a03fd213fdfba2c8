"""Write reports/README.md, the index of every generated artefact: `python -m fedlib.reporting.index reports`."""
from __future__ import annotations

import sys

from fedlib.reporting.report import write_index


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = argv[0] if argv else "reports"
    try:
        path = write_index(root)           # written atomically: a failure leaves the previous index
    except OSError as exc:
        print(f"fedlib.reporting.index: {' '.join(str(exc.strerror or exc).split())}; the previous "
              f"{root}/README.md is unchanged", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
