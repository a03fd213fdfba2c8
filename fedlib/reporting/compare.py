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
Exit status 0 when the trees agree, 1 with one line per difference otherwise.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
BINARY = {".png", ".svg"}


def _tokens(text: str) -> tuple[list[str], list[str]]:
    return NUMBER.split(text), NUMBER.findall(text)


def _unit(token: str) -> Decimal | None:
    """Value of one unit in the last printed digit of a decimal number; None for an integer."""
    if "." not in token:
        return None
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
        ux, uy = _unit(x), _unit(y)
        if ux is None or uy is None:
            return f"integer {x} vs {y}"
        if abs(Decimal(x) - Decimal(y)) > ulps * max(ux, uy):
            return f"number {x} vs {y} (more than {ulps} unit(s) of the last digit)"
    return None


def _verdicts(meta) -> object:
    if not isinstance(meta, dict):
        return None
    return ([(c.get("id"), c.get("status")) for c in meta.get("claims", [])], meta.get("claims_summary"))


def compare_trees(committed: str | Path, regenerated: str | Path, ulps: int = 0) -> list[str]:
    """One line per difference between two report trees (empty list: they agree)."""
    a, b = Path(committed), Path(regenerated)
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = [f"{f}: only in {a}" for f in sorted(files_a - files_b)]
    out += [f"{f}: only in {b}" for f in sorted(files_b - files_a)]
    for f in sorted(files_a & files_b):
        if f.suffix in BINARY:
            continue
        ta, tb = (a / f).read_text(), (b / f).read_text()
        if f.suffix == ".json":
            try:
                va, vb = _verdicts(json.loads(ta)), _verdicts(json.loads(tb))
            except ValueError:
                va = vb = None
            if va != vb:
                out.append(f"{f}: claim verdicts differ: {va} vs {vb}")
                continue
        diff = compare_text(ta, tb, ulps)
        if diff:
            out.append(f"{f}: {diff}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedlib.reporting.compare", description=__doc__.split("\n")[0])
    ap.add_argument("committed")
    ap.add_argument("regenerated")
    ap.add_argument("--ulps", type=int, default=0,
                    help="allowed units of the last printed digit (default 0: the portable path is exact)")
    args = ap.parse_args(argv)
    diffs = compare_trees(args.committed, args.regenerated, args.ulps)
    for line in diffs:
        print(line)
    print("reports agree" + (f" within {args.ulps} unit(s) of the last digit" if args.ulps else "") if not diffs
          else f"{len(diffs)} difference(s)", file=sys.stderr)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
