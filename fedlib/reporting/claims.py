"""Checking a paper's claims against reproduced numbers: one verdict per claim, with the evidence and the rule.

Verdicts: confirmed / refuted / inconclusive / not testable at this scale. The last is for a claim the setting that
ran cannot exercise (e.g. "FedAvg misses the CIFAR-100 target within 3000 rounds" when the embedded target was
chosen so that most methods reach it): `not_testable(claim, reason)` keeps the computed evidence for information
but never reports it as a refutation or a confirmation. Evidence names the data actually run ("digits (cnn)"),
never the paper dataset it stands in for.

Every claim has a `kind`: `sentence` (a sentence of the paper, quoted in `quote` with its section), `table` (read off
a table or figure of the paper) or `check` (a check of the reproduction itself, e.g. that the engine counts the
bits the paper's formula gives). Checks are reported in their own list and never enter a paper's tally.

The decision rule (docs/claims.md, "The decision rule", of 2026-12-05; its history is on that page): methods are
compared **paired by seed** (`fedlib.reporting.stats`; censored costs bound in one direction only), each comparison
against the smallest effect of interest δ of its quantity (`fedlib.reporting.effects`), the comparisons a claim
makes adjusted together with Holm's method, the interval printed at the level of Holm's last step (so that it
excludes 0 exactly when the label says better or worse), and a claim "A beats B in every case" is

* confirmed when every comparison is better,
* refuted when one excludes a gain of δ without lying inside ±δ (or the gain holds in some cases only),
* equivalent when the comparisons that exclude the gain all lie inside ±δ (the claimed difference is absent),
* inconclusive otherwise (printed "underpowered" when its design needs more seeds than ran).

A comparison on runs still moving at their last round is unknown (`judge(..., not_converged=...)`). Deterministic
numbers (one exact value per side, e.g. bits counted by a formula) are compared exactly (`exact`).

A comparison of two methods (`Side`, `Comparison`, `paired`, `exact`, `compare_values`, `compare_costs`) is made in
fedlib/reporting/pairwise.py and re-exported here; this module turns a claim's comparisons into its verdict, its
record (JSON, per-seed table, markdown) and the papers' helpers on aggregated cost tables.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from fedlib.reporting import stats
from fedlib.reporting.pairwise import (  # noqa: F401  -- re-exported: the comparisons are the claims' vocabulary
    OUTCOMES,
    Comparison,
    Side,
    compare_costs,
    compare_values,
    exact,
    moving_reason,
    paired,
    relabel,
)

CONFIRMED, REFUTED, INCONCLUSIVE, EQUIVALENT = "confirmed", "refuted", "inconclusive", "equivalent"
NOT_TESTABLE = "not testable at this scale"
VERDICTS = (CONFIRMED, REFUTED, EQUIVALENT, INCONCLUSIVE, NOT_TESTABLE)
ICON = {CONFIRMED: "✅ confirmed", REFUTED: "❌ refuted", EQUIVALENT: "🟰 equivalent (the claimed gain is absent)",
        INCONCLUSIVE: "❔ inconclusive", NOT_TESTABLE: "➖ not testable at this scale"}
KINDS = ("sentence", "table", "check")
#: where every report links for the rule (relative to reports/<paper>/<artefact>.md)
RULE_LINK = "../../docs/claims.md#the-decision-rule"
RULE_TEXT = ("paired by seed, each claim's comparisons Holm-adjusted together, the interval printed at the level of "
             "Holm's last step; δ = the smallest effect of interest; confirmed when every comparison is better, "
             "refuted when one excludes a gain of δ without being equivalent, equivalent when the decided ones lie "
             "inside ±δ, else inconclusive")
#: said once on every page: what the printed interval is
INTERVAL_TEXT = ("Intervals are paired t intervals of the mean per-seed difference at the level of the claim's last "
                 "Holm step (95 % when the claim makes one comparison or Holm declares all of them; "
                 "100·(1 − 0.05/k) % otherwise, k = the comparisons left undeclared): an interval excludes 0 exactly "
                 "when Holm declares the comparison better or worse")


@dataclass(frozen=True)
class Design:
    """A claim's design, fixed on pilot seeds that are never evaluated (docs/claims.md, "Design before results"):
    the mechanism the claim rests on, the regime that exercises it, the target, the smallest effect of interest
    (in the compared metric's units), the seeds a power calculation asks for (`stats.seeds_needed`), the pilot
    seeds and the commit at which it was fixed."""
    mechanism: str
    regime: str
    target: str
    margin: float | None
    seeds_needed: int
    pilot_seeds: tuple[int, ...] = ()
    fixed_at: str = ""
    seeds: tuple[int, ...] = ()      # the evaluated seeds it registers (never a pilot seed, never run before it)

    def to_dict(self) -> dict:
        return {**asdict(self), "pilot_seeds": list(self.pilot_seeds), "seeds": list(self.seeds)}


@dataclass
class Claim:
    id: str
    text: str                       # the claim, in words
    source: str                     # where the paper makes it (section, table, figure)
    status: str                     # one of VERDICTS
    evidence: list[str] = field(default_factory=list)
    rule: str = ""
    kind: str = "sentence"          # sentence | table | check (checks never enter a paper's tally)
    quote: str = ""                 # the paper's own words, when kind == "sentence"
    aggregate: str = "all"          # how the comparisons make the verdict (AGGREGATES)
    comparisons: list[dict] = field(default_factory=list)   # the serialised comparisons (recomputable, see below)
    reason: str = ""                # why not testable, when status == NOT_TESTABLE
    design: dict | None = None      # Design.to_dict(), when the claim has one
    seeds_run: int | None = None    # informative seed pairs of the thinnest statistical comparison
    underpowered: bool = False      # inconclusive for want of seeds alone (cause "underpowered")
    cause: str = ""                 # why an inconclusive claim is undecided (`cause_of`; CAUSES), "" otherwise
    ranges: list[dict] = field(default_factory=list)   # the claim judged at each other plausible setting (`over_range`)

    def to_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """The verdict as printed: with "underpowered" and "n needed / n run" when the claim has a design."""
        return verdict_label(self.status, self.underpowered, self.design, self.seeds_run, self.cause)


def verdict_label(status: str, underpowered: bool = False, design: Mapping | None = None,
                  seeds_run: int | None = None, cause: str = "") -> str:
    """The verdict as printed. An inconclusive claim names its cause (`cause_of`); "n needed" is printed once, and
    only where it means what it says: for a claim undecided for want of seeds (underpowered), or a decided one."""
    icon = ICON.get(status, status)
    needed = design.get("seeds_needed") if design else None
    if underpowered:
        return f"{icon} (underpowered: {needed} needed, {seeds_run} run)"
    if status == INCONCLUSIVE and cause and cause != UNDERPOWERED:
        return f"{icon} ({cause})"
    if needed is not None and seeds_run is not None:
        return f"{icon} ({needed} needed / {seeds_run} run)"
    return icon


# ---------------------------------------------------------------------------------------------- claim verdicts
def adjust(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Holm-adjust a claim's statistical comparisons together and decide each at the interval of Holm's last step
    (`stats.holm_alpha`), so that the printed interval and the label agree. Comparisons flagged not converged are
    left out of the family (their outcome is unknown)."""
    comps = list(comparisons)
    stat = [c for c in comps if not c.exact and c.diff is not None]
    pvalues = [math.nan if c.not_converged else c.diff.p for c in stat]
    alpha = stats.holm_alpha(pvalues)
    for c, p_adj in zip(stat, stats.holm(pvalues)):
        c.decide(alpha, p_adj)
    return comps


def reading(c: Comparison) -> str:
    """What one comparison says about the gain a claim gives its first side: "gain" (better), "negligible" (a gain
    of δ excluded and the interval inside ±δ: equivalent), "no gain" (a gain of δ excluded, not inside ±δ: a
    contrary effect, or one that may reach δ), or "open". A comparison without an interval (exact values, or an
    outcome alone) reads from its outcome."""
    if c.not_converged:
        return "open"
    o = c.oriented()
    if o is None or c.margin is None:
        return {"better": "gain", "worse": "no gain", "equivalent": "negligible"}.get(c.outcome, "open")
    if o.excludes_gain(c.margin):
        return "negligible" if o.equivalent(c.margin) else "no gain"
    return "gain" if c.outcome == "better" else "open"


def all_better(comparisons: Iterable[Comparison]) -> tuple[str, list[str]]:
    """Verdict for 'better in every case' (after Holm) plus one evidence line per comparison."""
    comps = adjust(list(comparisons))
    return _verdict_all(comps), [evidence_line(c) for c in comps] or ["no comparisons available"]


def _verdict_all(comps: Sequence[Comparison]) -> str:
    """'A is better than B in every case': confirmed when every comparison is better (and not negligible); refuted
    when one excludes a gain of δ without being equivalent (a contrary effect, or one that may reach δ), or when
    the gain is shown in some cases and excluded in others; equivalent when the only decided cases are equivalent
    (the claimed gain is absent: A and B within ±δ); inconclusive otherwise."""
    if not comps:
        return INCONCLUSIVE
    r = [reading(c) for c in comps]
    if "no gain" in r:
        return REFUTED
    if "negligible" in r:
        return REFUTED if "gain" in r else EQUIVALENT
    return CONFIRMED if all(x == "gain" for x in r) else INCONCLUSIVE


def _verdict_majority(comps: Sequence[Comparison]) -> str:
    """'A beats most of the others': confirmed when more than half of the comparisons show the gain; when at least
    half exclude it, equivalent if all of those are equivalent, else refuted; inconclusive otherwise."""
    if not comps:
        return INCONCLUSIVE
    r = [reading(c) for c in comps]
    if r.count("gain") > len(r) / 2:
        return CONFIRMED
    excluded = [x for x in r if x in ("no gain", "negligible")]
    if len(excluded) >= len(r) / 2:
        return EQUIVALENT if all(x == "negligible" for x in excluded) else REFUTED
    return INCONCLUSIVE


def _verdict_unconfirmable(comps: Sequence[Comparison]) -> str:
    """'all', except that a confirmation is only inconclusive: for a sentence whose own numbers contradict the
    paper's table (the paper does not support it), agreement of the reproduced numbers cannot confirm it."""
    verdict = _verdict_all(comps)
    return INCONCLUSIVE if verdict == CONFIRMED else verdict


def _verdict_match(comps: Sequence[Comparison]) -> str:
    """'Every count is the one the paper prints' (e.g. Table I's ∞: 0 of 5 seeds reach the target): exact
    comparisons of a reproduced count with the paper's; confirmed when every one ties, refuted when one differs."""
    if not comps or any(c.outcome == "unknown" for c in comps):
        return INCONCLUSIVE
    return CONFIRMED if all(c.outcome == "tie" for c in comps) else REFUTED


def _verdict_peak(comps: Sequence[Comparison]) -> str:
    """'First rises, then falls' over a grid: the comparisons are the best interior value against each end.
    Confirmed when it beats both ends (by more than a negligible gain); refuted when both ends beat it (a valley);
    equivalent when it is equivalent to both (flat); otherwise inconclusive, in particular when an end beats every
    interior value: a grid that stops before the turn cannot show it."""
    if not comps:
        return INCONCLUSIVE
    r = [reading(c) for c in comps]
    if all(x == "gain" for x in r):
        return CONFIRMED
    if all(c.outcome == "worse" for c in comps):
        return REFUTED
    return EQUIVALENT if all(x == "negligible" for x in r) else INCONCLUSIVE


def _verdict_no_gain(comps: Sequence[Comparison]) -> str:
    """'A brings no gain over B' (e.g. "incorporating ET doesn't bring visible improvement"): confirmed when every
    comparison excludes a gain of δ for A (the upper end of its interval below δ: one of the two one-sided tests at
    δ; censoring must allow it); refuted when one shows a gain of at least δ (the lower end at δ or above) or, for a
    comparison without an interval, when it is better; inconclusive otherwise, so that a tie from too few seeds does
    not confirm. Two comparisons with the sides swapped make a claim of equivalence ("the gap becomes negligible"):
    both one-sided tests at δ."""
    if not comps:
        return INCONCLUSIVE
    for c in comps:
        o = None if c.not_converged else c.oriented()
        if o is None or c.margin is None:
            if c.outcome == "better":
                return REFUTED
        elif o.n >= 2 and o.can_lo and o.lo >= c.margin:
            return REFUTED
    for c in comps:
        o = None if c.not_converged else c.oriented()
        if o is None or c.margin is None or not o.excludes_gain(c.margin):
            return INCONCLUSIVE
    return CONFIRMED


#: how a claim's (adjusted) comparisons make its verdict; `recompute` looks the claim's `aggregate` up here
AGGREGATES: dict[str, Callable[[Sequence[Comparison]], str]] = {
    "all": _verdict_all, "majority": _verdict_majority, "unconfirmable": _verdict_unconfirmable,
    "match": _verdict_match, "peak": _verdict_peak, "no_gain": _verdict_no_gain}


# ---------------------------------------------------------------------------------------------- plausible ranges
def over_range(default: Sequence[Claim], alternatives: Sequence[tuple[str, Mapping[str, Claim]]], what: str,
               own: str) -> list[Claim]:
    """Each claim of `default` (judged at the comparison's own setting, in words `own`) against the same claim judged
    at every other plausible setting of something the paper leaves open (`alternatives`: (setting in words,
    {claim id: claim}), only the claims that setting changes). A verdict the whole range gives stands, with the
    range in its evidence; one that changes within it is "inconclusive (depends on `what`)". Either way every
    setting's comparisons are kept (`Claim.ranges`, their Sides' settings suffixed " [setting]") so that the
    per-seed table holds their rows and every verdict of the range recomputes from committed files."""
    out = []
    for claim in default:
        alts = [(label, by[claim.id]) for label, by in alternatives if claim.id in by]
        if not alts:
            out.append(claim)
            continue
        claim.ranges = [{"setting": own, "status": claim.status, "comparisons": None}]
        claim._range_objects = []
        for label, alt in alts:
            comps = [_suffixed(c, label) for c in getattr(alt, "_comparison_objects", [])]
            claim.ranges.append({"setting": label, "status": alt.status,
                                 "comparisons": [{**c.to_dict(), "reading": reading(c)} for c in comps]})
            claim._range_objects += comps
        line = "verdict per setting: " + "; ".join(f"{r['setting']}: {r['status']}" for r in claim.ranges)
        if len({r["status"] for r in claim.ranges}) == 1:
            claim.evidence.append(f"{what}: {line} — the same verdict over the whole range")
            out.append(claim)
            continue
        label = f"{DEPENDS} {what}"
        dep = replace(claim, status=INCONCLUSIVE, evidence=[f"inconclusive ({label}): {line}", *claim.evidence],
                      reason=f"{label}: {line}", cause=label, underpowered=False)
        dep._comparison_objects = getattr(claim, "_comparison_objects", [])
        dep._range_objects = claim._range_objects
        out.append(dep)
    return out


def _suffixed(c: Comparison, label: str) -> Comparison:
    """A copy of the comparison whose Sides name the setting they ran at (their rows stay apart in the seed table)."""
    import copy

    out = copy.copy(c)
    for key in ("a", "b"):
        side = getattr(c, key)
        if side is not None:
            setattr(out, key, replace(side, setting=f"{side.setting} [{label}]"))
    return out


#: marks a tie whose interval excludes a gain of δ for the first side (it refutes a "better" claim)
EXCLUDES = " (excludes a gain of δ)"


def evidence_line(c: Comparison) -> str:
    p = "" if c.exact or math.isnan(c.p_adjusted) else f", Holm p = {c.p_adjusted:.3g}"
    delta = "" if c.exact or c.margin is None else f", δ = {c.fmt.format(c.margin)}"
    if c.outcome == "tie" and reading(c) == "no gain":
        delta += EXCLUDES                        # a tie that still decides a "better" claim: say so on its line
    return f"{c.outcome}: {c.text}{p}{delta}"


def judge(cid: str, text: str, source: str, comparisons: Iterable[Comparison], *, kind: str = "sentence",
          quote: str = "", aggregate: str = "all", rule: str = "", notes: Sequence[str] = (),
          design: Design | None = None, not_converged: Mapping | None = None) -> Claim:
    """A claim decided from its comparisons: Holm-adjusted, aggregated by `aggregate`, evidence and comparisons
    kept so that the verdict can be recomputed from the per-seed table alone (`recompute`).

    `design`: the claim's Design; the verdict prints "n needed / n run", and an inconclusive verdict with fewer seeds
    run than needed is "inconclusive (underpowered)". `not_converged`: {Side key or (method, setting): why} for
    cells still moving at their last round (`convergence.moving`); a comparison reading such a cell is "unknown
    (not converged)": a claim about final values is not decided on runs that have not finished moving."""
    if kind not in KINDS:
        raise ValueError(f"claim {cid}: kind={kind!r}; allowed: {', '.join(KINDS)}")
    comps = list(comparisons)
    for c in comps:
        if not_converged is not None:
            _flag_sides(c, not_converged)
        if c.a is not None and c.b is not None and not c.exact and not c.not_converged:
            c.not_converged = moving_reason(c.a, c.b)
        check_resolution(cid, c)
    comps = adjust(comps)
    status = AGGREGATES[aggregate](comps)
    run = seeds_run(comps)
    why = cause_of(status, comps, aggregate)
    under = bool(design and why == UNDERPOWERED and run is not None and run < design.seeds_needed)
    evidence = [evidence_line(c) for c in comps] or ["no comparisons available"]
    if design is not None:
        evidence.append(design_line(design, run))
    claim = Claim(cid, text, source, status, [*evidence, *notes], rule or RULE_TEXT, kind, quote, aggregate,
                  [{**c.to_dict(), "reading": reading(c)} for c in comps], "", design.to_dict() if design else None,
                  run, under, why)
    claim._comparison_objects = comps          # not serialised: their per-seed values go to the seed table
    return claim


def _flag_sides(c: Comparison, flags: Mapping) -> None:
    """The artefact's convergence check of its cells written onto the comparison's Sides: a cell it lists as moving
    gets its reason, any other it checked is flat (a Side's own status, set where it was built, is kept)."""
    for side in (c.a, c.b):
        if side is None or side.convergence or side.cap is not None:
            continue
        side.convergence = flags.get(side.key()) or flags.get(side.key()[:2]) or "flat"


def check_resolution(cid: str, c: Comparison) -> None:
    """A δ finer than the comparison's resolution is refused in one line naming the claim: no interval resolves it."""
    if c.exact or c.margin is None or c.resolution is None or c.margin >= c.resolution:
        return
    metric = c.a.metric if c.a is not None else "?"
    raise ValueError(f"claim {cid}: δ = {c.margin:g} for {metric!r} is finer than its resolution "
                     f"{c.resolution:g}; declare a margin of at least the resolution")


#: the causes of an undecided claim (`cause_of`), each with what would decide it
NOT_CONVERGED, CENSORED, GRID_EDGE, DEPENDS, UNDERPOWERED = (
    "not converged", "censored", "best at the grid's edge", "depends on", "underpowered")
CAUSES = {
    NOT_CONVERGED: "runs extended until the curves it reads flatten (or a round budget the paper names)",
    CENSORED: "a cap under which every run reaches the target (a censored run bounds the cost in one direction only)",
    GRID_EDGE: "a grid extended past its best end (the grid stops before the turn it asks about)",
    DEPENDS: "the paper's value of the setting or reading it depends on",
    UNDERPOWERED: "more seeds at the δ the verdict uses (a design's power calculation says how many)",
}


def cause_of(status: str, comps: Sequence[Comparison], aggregate: str = "all") -> str:
    """Why an inconclusive claim is undecided, from its comparisons: a peak whose end beats the best interior value →
    best at the grid's edge; else among its open comparisons (reading "open"), one on a curve still moving → not
    converged; one whose direction censoring blocks → censored; otherwise the intervals are too wide at the margin,
    resolvable on converged runs → underpowered. "" for a decided claim."""
    if status != INCONCLUSIVE or not comps:
        return ""
    if aggregate == "peak" and any(c.outcome == "worse" for c in comps):
        return GRID_EDGE                       # an end beats the best interior value: no run inside the grid decides
    open_ = [c for c in comps if reading(c) == "open"] or list(comps)
    if any(c.not_converged for c in open_):
        return NOT_CONVERGED
    if any(_censor_blocked(c) for c in open_):
        return CENSORED
    return UNDERPOWERED


def _censor_blocked(c: Comparison) -> bool:
    o = None if c.exact else c.oriented()
    return bool(o is not None and o.n >= 2 and (not o.can_lo or not o.can_hi) and c.outcome in ("unknown", "tie"))


def what_it_would_take(cause: str) -> str:
    """What would decide a claim undecided for `cause` (`CAUSES`; a "depends on …" cause names the setting)."""
    key = DEPENDS if cause.startswith(DEPENDS) else cause
    return CAUSES.get(key, "")


def seeds_run(comps: Sequence[Comparison]) -> int | None:
    """Informative seed pairs of the thinnest statistical comparison (None without one)."""
    ns = [c.diff.n for c in comps if not c.exact and c.diff is not None]
    return min(ns) if ns else None


def design_line(design: Design, run: int | None) -> str:
    fixed = f", fixed at {design.fixed_at}" if design.fixed_at else ""
    if design.seeds:
        fixed += f" for evaluated seeds {_span(design.seeds)}"
    pilots = f", pilot seeds {', '.join(map(str, design.pilot_seeds))}" if design.pilot_seeds else ""
    margin = "" if design.margin is None else f"δ = {design.margin:g}; "
    return (f"design: {margin}seeds {design.seeds_needed} needed / {run if run is not None else 'n/a'} run"
            f"{pilots}{fixed}; regime: {design.regime}; target: {design.target}; mechanism: {design.mechanism}")


def _span(seeds: Sequence[int]) -> str:
    """'5–9' for a run of consecutive seeds, else '0, 2, 5'."""
    s = sorted(seeds)
    return f"{s[0]}–{s[-1]}" if len(s) > 2 and s == list(range(s[0], s[-1] + 1)) else ", ".join(map(str, s))


def recompute(claim: Mapping, table) -> tuple[str, list[str]]:
    """The verdict and per-comparison outcomes of a committed claim (its JSON `claims_detail` entry), recomputed from
    the artefact's per-seed table alone (a DataFrame with method, setting, metric, seed, value, censored, cap), every
    point of its declared plausible range included (`over_range`)."""
    status, comps = rejudge(claim, table)
    points = [p for p in claim.get("ranges") or [] if p.get("comparisons")]
    if points:          # judged over a declared plausible range: a verdict that changes within it depends on it
        statuses = {status, *(rejudge({**claim, "comparisons": p["comparisons"]}, table)[0] for p in points)}
        status = status if len(statuses) == 1 else INCONCLUSIVE
    if claim["status"] == NOT_TESTABLE:
        status = NOT_TESTABLE
    return status, [c.outcome for c in comps]


def rejudge(claim: Mapping, table) -> tuple[str, list[Comparison]]:
    """A committed claim decided under the current rule from the per-seed table: its recorded margins, its recorded
    convergence flags, its aggregation. NOT_TESTABLE is not kept (see `recompute`)."""
    comps = adjust(rebuild(claim, table))
    status = AGGREGATES[claim.get("aggregate", "all")](comps) if comps else claim["status"]
    return status, comps


def rebuild(claim: Mapping, table) -> list[Comparison]:
    """The (unadjusted) comparisons of a committed claim, their per-seed numbers read from the table."""
    comps = []
    for spec in claim.get("comparisons", []):
        sides = []
        for key in ("a", "b"):
            s = spec[key]
            rows = table[(table["method"] == s["method"]) & (table["setting"] == s["setting"])
                         & (table["metric"] == s["metric"])]
            values = {int(r.seed): (None if bool(r.censored) else float(r.value)) for r in rows.itertuples()}
            sides.append(Side(s["method"], s["setting"], s["metric"], values, s.get("cap")))
        if spec.get("exact"):
            comps.append(exact(*sides, higher_is_better=spec["higher_is_better"]))
        else:
            margin = spec.get("margin")
            comps.append(paired(*sides, higher_is_better=spec["higher_is_better"], margin=margin,
                                not_converged=spec.get("not_converged") or "", resolution=spec.get("resolution")))
    return comps


def seed_table(claims: Sequence[Claim]):
    """The tidy per-seed evidence of every comparison of `claims`: one row per (method, setting, metric, seed)."""
    import pandas as pd

    rows, seen = [], {}
    for c in claims:
        for cmp in [*getattr(c, "_comparison_objects", []), *getattr(c, "_range_objects", [])]:
            for side in (cmp.a, cmp.b):
                if side is None:
                    continue
                if side.key() in seen:
                    if seen[side.key()] != side.values:
                        raise ValueError(f"claim {c.id}: {side.key()} has two sets of per-seed numbers; give each "
                                         "its own setting or metric name")
                    continue
                seen[side.key()] = side.values
                for seed, v in sorted(side.values.items()):
                    rows.append({"method": side.method, "setting": side.setting, "metric": side.metric,
                                 "seed": seed, "value": side.cap if v is None else v, "censored": v is None,
                                 "cap": side.cap})
    return pd.DataFrame(rows, columns=["method", "setting", "metric", "seed", "value", "censored", "cap"])


def claims_markdown(claims: Sequence[Claim]) -> str:
    """A markdown section: the rule (linked), a summary table of the paper's claims, then the reproduction's own
    checks, then each claim with its quote, rule and evidence."""
    paper = [c for c in claims if c.kind != "check"]
    checks = [c for c in claims if c.kind == "check"]
    lines = [f"Decision rule ([docs/claims.md]({RULE_LINK})): {RULE_TEXT}. {INTERVAL_TEXT}. Counts: "
             f"{_counts_text(claims_summary(claims))}.", ""]
    for title, group in (("The paper's claims", paper), ("Checks of the reproduction (not counted as the paper's "
                                                           "claims)", checks)):
        if not group:
            continue
        lines += [f"**{title}**", "", "| # | Claim | Kind | Verdict | Comparisons |",
                  "| :--- | :--- | :--- | :--- | :--- |"]
        for c in group:
            cell = f"{c.text} ({c.source})".replace("|", "\\|")        # a '|' in the text would split the cell
            lines.append(f"| {c.id} | {cell} | {c.kind} | {_label(c)} | {_tally(c.evidence)} |")
        lines.append("")
    for c in claims:
        lines.append(f"**{c.id}. {c.text}** — {_label(c)}  ")
        if c.quote:
            lines.append(f"Paper ({c.source}): “{c.quote}”  ")
        if c.rule:
            lines.append(f"Rule: {c.rule}  ")
        lines.append("Evidence:")
        lines.extend(f"- {e}" for e in c.evidence)
        lines.append("")
    return "\n".join(lines)


def _label(c) -> str:
    return c.label() if hasattr(c, "label") else ICON[c.status]


def _counts_text(s: Mapping) -> str:
    text = (f"{s.get('confirmed', 0)} confirmed / {s.get('refuted', 0)} refuted / {s.get('equivalent', 0)} "
            f"equivalent / {s.get('inconclusive', 0)} inconclusive / {s.get('underpowered', 0)} underpowered / "
            f"{s.get('not_testable', 0)} not testable")
    return text + (f" (paper claims), plus {s['checks']} check(s)" if s.get("checks") else "")


def _tally(evidence: Sequence[str]) -> str:
    """'3 better, 1 tie' from evidence lines that start with a comparison outcome; '' when there are none. Ties that
    exclude a gain of δ are counted as such."""
    counts: dict[str, int] = {}
    for line in evidence:
        head = line.split(":", 1)[0]
        if head in OUTCOMES:
            counts[head] = counts.get(head, 0) + 1
    excluding = sum(line.startswith("tie:") and line.endswith(EXCLUDES) for line in evidence)
    text = ", ".join(f"{counts[k]} {k}" for k in ("better", "equivalent", "tie", "worse", "unknown") if k in counts)
    return text + (f" ({excluding} excluding a gain of δ)" if excluding else "")


def not_testable(claim: Claim, reason: str) -> Claim:
    """The claim with verdict "not testable at this scale": `reason` first, the computed evidence kept below it."""
    evidence = [f"not testable at this scale: {reason}"] + [f"(for information) {e}" for e in claim.evidence]
    out = Claim(claim.id, claim.text, claim.source, NOT_TESTABLE, evidence, claim.rule, claim.kind, claim.quote,
                claim.aggregate, claim.comparisons, reason, claim.design, claim.seeds_run, False, "", claim.ranges)
    out._comparison_objects = getattr(claim, "_comparison_objects", [])
    out._range_objects = getattr(claim, "_range_objects", [])
    return out


def claims_summary(claims: Sequence[Claim]) -> dict:
    """Verdict counts of the paper's claims (sentence and table kinds); checks are counted apart."""
    paper = [c for c in claims if getattr(c, "kind", "sentence") != "check"]
    under = [getattr(c, "underpowered", False) for c in paper]
    counts = {s: sum(c.status == s and not u for c, u in zip(paper, under)) for s in (CONFIRMED, REFUTED, EQUIVALENT,
                                                                                   INCONCLUSIVE)}
    counts["underpowered"] = sum(under)                 # inconclusive for want of seeds (not in "inconclusive")
    counts["not_testable"] = sum(c.status == NOT_TESTABLE for c in paper)
    checks = [c for c in claims if getattr(c, "kind", "sentence") == "check"]
    return {"n_claims": len(paper), **counts, "checks": len(checks),
            "checks_confirmed": sum(c.status == CONFIRMED for c in checks)}


# ---------------------------------------------------------------------------------------------- on cost tables
def std_error(values: Sequence[float]) -> float:
    """Standard error of the mean (sample std, ddof = 1); 0 for fewer than two values (for display only: verdicts
    come from paired comparisons)."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0


def cost_comparison(agg, metric: str, a: dict, b: dict, label: str, names: dict[str, str]) -> Comparison:
    """`compare_costs` of the aggregated rows selected by `a` and `b` (column == value), paired by seed, labelled
    for evidence; the setting of the per-seed table is `label`."""
    from fedlib.reporting.tables import cap_cost, lookup

    ra, rb = lookup(agg, **a), lookup(agg, **b)
    if ra is None or rb is None:
        return Comparison("unknown", f"{label}: missing runs")
    return compare_costs(ra[f"{metric}_by_seed"], rb[f"{metric}_by_seed"], cap_cost(ra, metric),
                         cap_cost(rb, metric), names=(names.get(a.get("algorithm"), "A"),
                                                      names.get(b.get("algorithm"), "B")),
                         setting=label, metric=f"{metric} to target", label=label)


def gap_bounds(agg, metric: str, base: dict, ours: dict) -> tuple[float, float, list]:
    """Bounds [lo, hi] of mean(base) − mean(ours) under censoring, plus the lower-bound values (for the noise)."""
    from fedlib.reporting.tables import cap_cost, lookup

    rb, ro = lookup(agg, **base), lookup(agg, **ours)
    if rb is None or ro is None:
        return -math.inf, math.inf, []

    def bounds(row):
        cap = cap_cost(row, metric)
        vals = list(row[f"{metric}_values"])
        lo = [cap + 1 if v is None else v for v in vals]
        hi = [math.inf if v is None else v for v in vals]
        return float(np.mean(lo)), float(np.mean(hi)), lo

    b_lo, b_hi, b_vals = bounds(rb)
    o_lo, o_hi, o_vals = bounds(ro)
    return b_lo - o_hi, b_hi - o_lo, [b_vals, o_vals]


def fmt_gap(lo: float, hi: float) -> str:
    if lo == hi:
        return f"{lo:.1f}"
    return f"[{lo:.1f}, {hi:.1f}]" if math.isfinite(hi) else f"≥ {lo:.1f}"
