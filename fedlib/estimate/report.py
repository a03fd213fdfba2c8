"""Per artefact: which runs each artefact of each paper asks for at a profile (`artefacts`), what they cost beyond
its run cache (`estimate_artefacts`), and the table `fedlib estimate` prints with its assumptions
(`format_report`).
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fedlib.costs import read_table
from fedlib.errors import ConfigError
from fedlib.estimate.flops import REFERENCE
from fedlib.estimate.run_costs import TimingProgress, estimate_configs, to_time
from fedlib.experiments import load_cached
from fedlib.reporting import artefact as A
from fedlib.reporting import profiles


@dataclass
class Artefact:
    name: str                      # the params.yaml section / DVC stage
    configs: list[dict]
    expected_rounds: Callable[[dict], float | None] | None
    cache_dir: Path | None


def artefacts(profile: str, target: str | None = None, params_file: str | Path = "params.yaml") -> list[Artefact]:
    """Every artefact of every paper package (or those whose stage or paper is `target`) at `profile`."""
    found = []
    for paper in A.papers():
        for art in A.artefacts(paper):
            if target not in (None, "all", paper, art.section):
                continue
            module = art.module
            settings = profiles.load_settings(art.section, profile, None, params_file, schema=module.PARAMS)
            hint = getattr(module, "expected_rounds", None)
            found.append(Artefact(art.section, module.configs(settings),
                                  (lambda c, _h=hint, _s=settings: _h(c, _s)) if hint else None, art.cache_dir))
    if not found:
        every = [a.section for p in A.papers() for a in A.artefacts(p)]
        raise ConfigError(f"estimate target {target!r} is not an artefact or paper; allowed: all, "
                          f"{', '.join(A.papers())}, {', '.join(every)}")
    return found


def estimate_artefacts(arts: list[Artefact], **kwargs) -> list[dict]:
    """Per artefact: runs, runs already in its run cache, and the cost of the rest (estimate_configs' keywords;
    what is timed is counted k/N over all the artefacts)."""
    if kwargs.get("progress") is None and (kwargs.get("measure_missing", True) or kwargs.get("remeasure")):
        table = kwargs.setdefault("table", read_table())
        todo = to_time([c for art in arts for c in art.configs], table=table,
                       measure_missing=kwargs.get("measure_missing", True), remeasure=kwargs.get("remeasure", False))
        kwargs["progress"] = TimingProgress(len(todo), kwargs.get("log"))
    out = []
    for art in arts:
        rows = estimate_configs(art.configs, expected_rounds=art.expected_rounds, **kwargs)
        todo = [r for r in rows if art.cache_dir is None or load_cached(r["config"], art.cache_dir) is None]
        timed = [r for r in todo if r["entry"] is not None]
        out.append({
            "artefact": art.name, "runs": len(rows), "to_run": len(todo), "untimed": len(todo) - len(timed),
            "cost_configs": len({r["cost_id"] for r in rows}),
            "mean_rounds": statistics.fmean(r["rounds"] for r in rows) if rows else 0.0,
            "rounds_basis": sorted({r["rounds_basis"] for r in rows}),
            "hours": sum(r["seconds"] for r in timed) / 3600,
            "reference_hours": sum(r["reference_seconds"] for r in timed) / 3600,
            "devices": sorted({r["entry"]["device"] for r in timed}),
            "timed_as": sorted({r["entry"]["timed_as"] for r in timed}),
            "stand_ins": sorted({r["entry"]["stand_in"] for r in timed if r["entry"].get("stand_in")}),
        })
    return out


def _hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 10 else f"{h:.3g}"


_SCALED = re.compile(r"^(\d+ clients x \d+ steps) and (\d+) test images, scaled x\S+ \(CPU time is linear in "
                     r"client-steps\)(; .*)?$")


def _timed_summary(timed_as: list[str]) -> str:
    """How the entries were timed, one phrase per kind (the scale factors and evaluation sizes of the scaled-down
    timings are in each fedlib/costs.json entry)."""
    kinds, images = set(), []
    for t in timed_as:
        m = _SCALED.match(t)
        if m:
            kinds.add(m.group(1))
            images.append(int(m.group(2)))
        else:
            kinds.add(t)
    text = "; ".join(sorted(kinds)) or "nothing"
    if images:
        text += (f" (scaled-down rounds: scaled up linearly in client-steps, evaluation timed on {min(images)}-"
                 f"{max(images)} test images and scaled; per entry in the cost table)")
    return text


def format_report(results: list[dict], profile: str) -> str:
    """The table `fedlib estimate` prints, with its assumptions."""
    devices = sorted({d for r in results for d in r["devices"]})
    on_gpu = bool(devices) and all(d.startswith("cuda/") for d in devices)
    head = "GPU h (measured)" if on_gpu else f"{'/'.join(devices) or 'device'} h"
    lines = [f"fedlib estimate: profile {profile}; per-round costs from {', '.join(devices) or 'nothing timed'}",
             "",
             f"| artefact | runs | to run | cost configs | rounds/run | {head} | GPU h (V100-equiv., projected) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    def cell(hours: float, untimed: int, to_run: int) -> str:
        """Hours, as a lower bound (≥) when some runs are untimed, and 'untimed' when none is timed."""
        if untimed and untimed == to_run:
            return "untimed"
        return ("≥ " if untimed else "") + _hours(hours)

    for r in results:
        untimed = f" ({r['untimed']} untimed)" if r["untimed"] else ""
        lines.append(f"| {r['artefact']} | {r['runs']} | {r['to_run']}{untimed} | {r['cost_configs']} | "
                     f"{r['mean_rounds']:.0f} | {cell(r['hours'], r['untimed'], r['to_run'])} | "
                     f"{cell(r['reference_hours'], r['untimed'], r['to_run'])} |")
    n_untimed = sum(r["untimed"] for r in results)
    lines.append(f"| **total** | {sum(r['runs'] for r in results)} | {sum(r['to_run'] for r in results)} | "
                 f"{sum(r['cost_configs'] for r in results)} | | "
                 f"{('≥ ' if n_untimed else '') + _hours(sum(r['hours'] for r in results))} | "
                 f"{('≥ ' if n_untimed else '') + _hours(sum(r['reference_hours'] for r in results))} |")
    if n_untimed:
        lines += ["", f"{n_untimed} runs have no stored per-round cost (`untimed`; totals are lower bounds): run "
                  "without --table-only to time them here, or `--remeasure --save` on the target device."]
    bases = sorted({b for r in results for b in r["rounds_basis"]})
    timed_as = sorted({t for r in results for t in r["timed_as"]})
    stand = sorted({s for r in results for s in r["stand_ins"]})
    lines += ["", "Assumptions:",
              f"- rounds per run: {' or '.join(bases)} (runs that stop at a target use the paper's rounds to target "
              "where the artefact knows them, else the cap: an upper bound)",
              "- a round costs its measured local steps + aggregation, plus one evaluation every eval_every rounds; "
              "runs already in the artefact's run cache cost nothing",
              f"- timed: {_timed_summary(timed_as)}"]
    if stand:
        lines.append(f"- stand-ins (nothing downloaded): {'; '.join(stand)}")
    if not on_gpu:
        lines.append(f"- projected GPU hours: counted FLOPs at the rate of {REFERENCE['name']} "
                     f"({REFERENCE['seconds_per_round']} s per round of 10 clients x 50 steps x batch 50 + 60,000 "
                     f"evaluated images, its work counted on {REFERENCE['model']}, the 7x7-stem ResNet-18 it times); "
                     "measure on your GPU with `fedlib estimate --remeasure --save`")
    return "\n".join(lines)

