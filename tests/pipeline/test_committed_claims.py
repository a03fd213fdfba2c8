"""The committed reports are internally consistent: every verdict is recomputed from the per-seed table alone, the
scorecard's counts are the artefacts' counts, every verdict rests on at least 5 seeds per side, and no two methods
whose definitions differ produced identical per-seed numbers (a baseline that never ran as itself)."""
import json
import math
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest

from fedlib.reporting import claims as C
from fedlib.reporting.report import write_scorecard

ROOT = Path(__file__).resolve().parents[2] / "reports"
#: the reason of a verdict that changes within an unspecified baseline's plausible settings (FedAdam-SSM, A8/A9)
BASELINE_DEPENDENT = "depends on an unspecified baseline setting"
METAS = sorted(p for p in ROOT.glob("*/*.json"))

#: pairs (sorted method labels) whose equal per-seed numbers are explained, with the reason; any other pair fails
SAME_BY_DEFINITION: dict[tuple[str, str], str] = {
    ("FAFED", "FAFED (high)"): "one method's runs under two labels (the high-heterogeneity row read twice)",
    ("Efficient Adam", "Efficient Adam (as in Table I)"): "the ablation's reference row is Table I's own runs",
    ("FedAMS", "FedAdam"): "early fluctuation is 0 on every seed for both (no upward loss move): a count, not a run",
    ("1-bit Adam", "end of 1-bit Adam's warm-up (T_w)"): "T1.9 compares 1-bit Adam's rounds to the target with its "
    "warm-up length, a constant: equal on every seed where it reaches the target as the warm-up ends (T_w = 2)",
    ("FedMIM 0.6 0.3 0.1 0.9", "FedMIM 0.6 0.3 0.5 0.5"): "same correct-sample count of 360 at round 100 on every "
    "seed; their curves differ by up to 1.67 points (the page says so)",
}


def _meta(path):
    return json.loads(path.read_text())


def _artefacts():
    return [p for p in METAS if isinstance(_meta(p), dict) and {"paper", "artefact", "claims_detail"} <= set(_meta(p))]


def _current(path):
    """A committed report's meta; every claim carries its kind and comparisons (reports of the pre-0.2 unpaired rule
    are gone: regenerate any that reappears)."""
    meta = _meta(path)
    assert all("kind" in c for c in meta["claims_detail"]), f"{path.parent.name}/{path.name} predates paired evidence"
    return meta


def _table(path, meta):
    name = meta.get("seed_table")
    return pd.read_csv(path.parent / name) if name else None


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_verdict_is_recomputed_from_the_per_seed_table(path):
    meta = _current(path)
    table = _table(path, meta)
    for claim in meta["claims_detail"]:
        if claim["status"] != C.NOT_TESTABLE:
            assert claim.get("comparisons"), f"{claim['id']}: a verdict without comparisons cannot be re-checked"
        if not claim.get("comparisons"):
            continue
        assert table is not None, f"{path.name}: claims compare numbers but no per-seed table was written"
        status, outcomes = C.recompute(claim, table)
        for point in claim.get("ranges") or []:          # every point of a declared plausible range
            if point["comparisons"] is not None:
                got, _ = C.rejudge({**claim, "comparisons": point["comparisons"]}, table)
                assert got == point["status"], f"{claim['id']} at {point['setting']}"
        if claim.get("ranges"):
            statuses = {p["status"] for p in claim["ranges"]}
            if len(statuses) > 1:
                assert claim["status"] == C.INCONCLUSIVE and claim["cause"].startswith(C.DEPENDS), claim["id"]
                status = claim["status"]
            else:
                assert statuses == {claim["status"]}, claim["id"]
        elif claim.get("reason", "").startswith(BASELINE_DEPENDENT):
            # judged once per plausible setting of an unspecified baseline; the comparisons kept are the comparison's
            # own setting's, whose verdict differs from at least one other setting's (the reason lists them)
            assert claim["status"] == C.INCONCLUSIVE and f": {status}" in claim["reason"], claim["id"]
            assert len(set(v.rsplit(": ", 1)[1] for v in claim["reason"].split("verdict per setting: ", 1)[1]
                           .split("; "))) > 1, claim["id"]
            status = claim["status"]
        assert status == claim["status"], claim["id"]
        assert outcomes == [c["outcome"] for c in claim["comparisons"]], claim["id"]


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_statistical_verdicts_rest_on_at_least_five_seeds(path):
    meta = _current(path)
    table = _table(path, meta)
    if table is None or meta.get("scale") != "embedded":
        return
    exact = {(c[s]["method"], c[s]["setting"], c[s]["metric"]) for cl in meta["claims_detail"]
             for c in [*cl.get("comparisons", []), *(x for p in cl.get("ranges") or [] for x in p["comparisons"] or [])]
             if c.get("exact") for s in ("a", "b") if c[s]}
    for key, g in table.groupby(["method", "setting", "metric"]):
        if key not in exact:
            assert g["seed"].nunique() >= 5, f"{path.name}: {key} has {g['seed'].nunique()} seeds"


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_two_methods_have_identical_per_seed_numbers(path):
    meta = _current(path)
    table = _table(path, meta)
    if table is None:
        return
    for (setting, metric), g in table.groupby(["setting", "metric"]):
        per_method = {m: tuple(zip(h["seed"], h["value"], h["censored"])) for m, h in g.groupby("method")}
        for a, b in combinations(sorted(per_method), 2):
            if (a, b) in SAME_BY_DEFINITION or a.split(" (")[0] == b.split(" (")[0] or len(per_method[a]) < 2:
                continue                                     # explained above, or one method under two labels
            if (a, b) == ("1-bit Adam", "FedAdam") and "[1-bit Adam T_w = " in setting:
                continue                                     # a longer dense warm-up is FedAdam until it ends: runs
                #                                              that reach the target within it are FedAdam's
            if all(c for _, _, c in per_method[a]) and all(c for _, _, c in per_method[b]):
                continue                                     # both missed the target on every seed: no record to tell
            same = per_method[a] == per_method[b]
            assert not same, f"{path.name}: {a} and {b} give identical per-seed {metric} in {setting}"


def test_scorecard_is_generated_from_the_artefacts_and_its_counts_match(tmp_path):
    metas = [(p, _meta(p)) for p in _artefacts()]
    out = tmp_path / "reports"                   # regenerate in a copy: a test never writes into reports/
    for p, m in metas:
        (out / p.parent.name).mkdir(parents=True, exist_ok=True)
        (out / p.parent.name / p.name).write_text(json.dumps(m))
    fresh = write_scorecard(out, [(out / p.parent.name / p.name, m) for p, m in metas])[-1].read_text()
    committed = (ROOT / "scorecard.md").read_text()
    line = next(ln for ln in fresh.splitlines() if ln.startswith("| **all** |"))
    cells = [c.strip(" *").split(" (")[0] for c in line.strip("|").split("|")]
    keys = ("confirmed", "refuted", "equivalent", "inconclusive", "underpowered", "not_testable")
    assert [int(c) for c in cells[2:8]] == [sum(m["claims_summary"].get(k, 0) for _, m in metas) for k in keys]
    assert int(cells[1]) == sum(m["claims_summary"]["n_claims"] for _, m in metas)
    assert committed == fresh


def test_effects_in_the_json_are_finite_or_absent():
    for p in _artefacts():
        for claim in _meta(p)["claims_detail"]:
            for c in claim.get("comparisons", []):
                for k in ("effect", "lo", "hi"):
                    v = c.get(k)
                    assert v is None or math.isfinite(v)


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_tie_prints_an_interval_that_excludes_0(path):
    """The committed interval is the one the label rests on (a report of the rule before 2026-12-05 printed unadjusted
    intervals: 71 ties at accc5ab excluded 0)."""
    for claim in _current(path)["claims_detail"]:
        for c in claim.get("comparisons", []):
            if c["outcome"] == "tie" and c["lo"] is not None:
                assert c["lo"] <= 0 <= c["hi"], f"{claim['id']}: tie with [{c['lo']}, {c['hi']}]"


def test_every_report_is_written_under_the_current_rule():
    """Every non-exact comparison carries its margin δ (the rule of 2026-12-05; the old rule's had none)."""
    old = [f"{p.parent.name}/{p.stem}" for p in _artefacts()
           if any(not c.get("exact") and "margin" not in c for cl in _meta(p)["claims_detail"]
                  for c in cl.get("comparisons", []))]
    assert not old, f"written under the rule before 2026-12-05, regenerate: {', '.join(old)}"


#: the kinds of quantity read off a curve at a round (a final value), which rule 7 asks a convergence flag of
FINAL_VALUE = ("accuracy", "loss", "consistency")


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_final_value_comparison_carries_a_convergence_flag(path):
    """Rule 7, on every committed comparison: a final value (accuracy, loss, consistency) read from a curve names the
    convergence status of both cells; a cost to a target names its censoring; no moving cell decides anything."""
    from fedlib.reporting import effects

    for claim in _meta(path)["claims_detail"]:
        for points in [claim.get("comparisons", [])] + [p["comparisons"] or [] for p in claim.get("ranges") or []]:
            for c in points:
                if c.get("exact") or not c.get("a"):
                    continue
                flags = c["convergence"]
                if effects.kind_of(c["a"]["metric"]) in FINAL_VALUE and c["a"].get("cap") is None:
                    assert flags["a"] and flags["b"], f"{claim['id']}: {c['text'][:80]} has no convergence flag"
                moving = [f for f in flags.values() if f.startswith(("still", "not converged", "too short"))]
                if moving:
                    assert c["outcome"] == "unknown" and c["not_converged"], f"{claim['id']}: decided on {moving}"


@pytest.mark.parametrize("path", _artefacts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_margin_below_its_resolution_and_every_cause_is_its_comparisons(path):
    meta = _meta(path)
    table = _table(path, meta)
    for claim in meta["claims_detail"]:
        for c in claim.get("comparisons", []):
            if c.get("resolution") is not None and c.get("margin") is not None:
                assert c["margin"] >= c["resolution"], f"{claim['id']}: δ {c['margin']} < {c['resolution']}"
        if claim["status"] != C.INCONCLUSIVE or not claim.get("comparisons"):
            continue
        if claim.get("cause", "").startswith(C.DEPENDS):
            continue
        _, comps = C.rejudge(claim, table)
        assert claim["cause"] == C.cause_of(C.INCONCLUSIVE, comps, claim.get("aggregate", "all")), claim["id"]
        if claim.get("underpowered"):
            assert claim["cause"] == C.UNDERPOWERED, claim["id"]
