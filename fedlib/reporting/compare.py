"""Check that committed reports are what the code produces: compare a regenerated report tree with the committed one.

    python -m fedlib.reporting.compare reports /path/to/regenerated/reports            # exact (the default)
    python -m fedlib.reporting.compare reports /tmp/regen --ulps 1                      # native CPU path runs

It regenerates nothing itself. The pipeline runs on the portable CPU path (fedlib/cpu_path.py), whose numbers do not
depend on the host's instruction set, so a regenerated report should equal the committed one exactly (`--ulps 0`).
Reports made from runs on the native path (`FEDLIB_CPU_PATH=native`) can differ between hosts; `--ulps N` then
allows N units of each number's last printed digit — the claim verdicts must still agree. Two report trees agree
when:
* the same files exist (PNG/SVG are compared by existence only: their pixels follow the numbers);
* every claim verdict and verdict count in every `<artefact>.json` is equal;
* all other text is equal token by token, except decimal numbers, which may differ by at most `ulps` units of their
  last printed digit ("12.5" vs "12.6" agree at ulps=1; "12.5" vs "12.8" do not). Integers (seed counts, round caps,
  reached counts) must be equal.
Exit status: 0 the trees agree; 1 they differ (one line per difference); 2 refused arguments (a missing or
non-folder argument, a folder compared with itself, a negative `--ulps`, a tree holding no report file or a symbolic
link); 3 a file that cannot be read or is malformed (not UTF-8, a JSON that is not a report's). Every refusal is one
line on stderr naming the argument or file; two trees never "agree" on nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from decimal import Decimal
from pathlib import Path

from fedlib.reporting import dvc_metrics

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
BINARY = {".png", ".svg"}
PROG = "python -m fedlib.reporting.compare"


class Refused(Exception):
    """Two trees that cannot be compared: `code` is the exit status (2 arguments, 3 a file), the message one line."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _tokens(text: str) -> tuple[list[str], list[str]]:
    return NUMBER.split(text), NUMBER.findall(text)


def _unit(token: str) -> Decimal:
    """Value of one unit in the last printed digit of a decimal number."""
    return Decimal(1).scaleb(Decimal(token).as_tuple().exponent)


def compare_text(a: str, b: str, ulps: int = 0) -> str | None:
    """None when `a` and `b` agree (numbers within tolerance), else a short description of the first difference."""
    (words_a, nums_a), (words_b, nums_b) = _tokens(a), _tokens(b)
    if words_a != words_b or len(nums_a) != len(nums_b):
        i = next((k for k, (x, y) in enumerate(zip(words_a, words_b)) if x != y), min(len(words_a), len(words_b)))
        near = (words_a[i] if i < len(words_a) else "")[:60]
        return f"text differs near {near!r}"
    for x, y in zip(nums_a, nums_b):
        if x == y:
            continue
        if "." not in x or "." not in y:
            return f"integer {x} vs {y}"
        try:
            within = abs(Decimal(x) - Decimal(y)) <= ulps * max(_unit(x), _unit(y))
        except ArithmeticError:            # an exponent beyond Decimal's range: not equal, so not within
            within = False
        if not within:
            return f"number {x} vs {y} (more than {ulps} unit(s) of the last digit)"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(3, f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise Refused(3, f"{path}: cannot be read ({exc.strerror or exc})") from None


def _verdicts(path: Path, text: str) -> tuple[list, object]:
    """The claim verdicts and verdict counts of a report's JSON; Refused (3) naming `path` for any other file."""
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Refused(3, f"{path}: not JSON ({' '.join(str(exc).split())[:120]})") from None
    claims = meta.get("claims", []) if isinstance(meta, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        raise Refused(3, f"{path}: not a report's JSON (an object whose `claims` is a list of objects)")
    return [(c.get("id"), c.get("status")) for c in claims], meta.get("claims_summary")


#: folders of reports/ that `dvc repro` does not write (the test suite's generated pages: scripts/mutants.py and
#: scripts/planted_bugs.py write reports/testing/), so a regenerated tree is not compared on them
NOT_REPORTS = ("testing",)


def _files(root: Path) -> set[Path]:
    """The report files under `root`; Refused (2) for a missing folder, one holding a symbolic link anywhere (a link
    is not a report file, and a loop of them would hide a tree's content), or one holding no file."""
    if not root.is_dir():
        raise Refused(2, f"{root}: {'no such folder' if not root.exists() else 'not a folder'}")
    files = set()
    for folder, dirs, names in os.walk(root):         # never follows a link: each one is seen, and refused
        for name in sorted(dirs + names):
            path = Path(folder) / name
            if path.is_symlink():
                raise Refused(2, f"{path}: a symbolic link; allowed: plain files and folders (copy the target in)")
            if name in names and path.is_file() and path.relative_to(root).parts[0] not in NOT_REPORTS:
                files.add(path.relative_to(root))
    if not files:
        raise Refused(2, f"{root}: holds no report file (nothing to compare)")
    return files


def compare_trees(committed: str | Path, regenerated: str | Path, ulps: int = 0) -> list[str]:
    """One line per difference between two report trees (empty list: they agree). Refused (one line, its exit
    status) when they cannot be compared."""
    a, b = Path(committed), Path(regenerated)
    if ulps < 0:
        raise Refused(2, f"--ulps {ulps}: must be 0 or more")
    files_a, files_b = _files(a), _files(b)
    if a.resolve() == b.resolve():
        raise Refused(2, f"{a} and {b} are the same folder (nothing to compare)")
    out = [f"{f}: only in {a}" for f in sorted(files_a - files_b)]
    out += [f"{f}: only in {b}" for f in sorted(files_b - files_a)]
    for f in sorted(files_a & files_b):
        if f.suffix in BINARY:
            continue
        ta, tb = _read(a / f), _read(b / f)
        if f.suffix == ".json" and not f.name.endswith(dvc_metrics.SUFFIX):   # headline numbers, no claims
            va, vb = _verdicts(a / f, ta), _verdicts(b / f, tb)
            if va != vb:
                out.append(f"{f}: claim verdicts differ: {va} vs {vb}")
                continue
        diff = compare_text(ta, tb, ulps)
        if diff:
            out.append(f"{f}: {diff}")
    return out


def _ulps(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 0 or more")
    return int(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message):                        # one line, exit 2 (not a usage block)
        self.exit(2, f"{PROG}: {' '.join(message.split())} (see --help)\n")


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("committed")
    ap.add_argument("regenerated")
    ap.add_argument("--ulps", type=_ulps, default=0,
                    help="allowed units of the last printed digit (default 0: the portable path is exact)")
    args = ap.parse_args(argv)
    try:
        diffs = compare_trees(args.committed, args.regenerated, args.ulps)
    except Refused as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.code
    for line in diffs:
        print(line)
    print("reports agree" + (f" within {args.ulps} unit(s) of the last digit" if args.ulps else "") if not diffs
          else f"{len(diffs)} difference(s)", file=sys.stderr)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
