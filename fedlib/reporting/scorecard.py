"""reports/scorecard.md: what the replication concludes about each paper, and every claim with its verdict.

Claims that rest on the same evidence and reach the same verdict are one observation, not several: they form a
group, and the totals count each group once ("independent observations"). The comparisons a verdict rests on are
its decisive ones: all of them for a confirmation (each is needed), those that exclude the claimed gain for a
refutation or an equivalence (their `reading`, or under the rule before 2026-12-05 the "worse" ones). Two
confirmations are grouped when they share a decisive comparison (the same two Sides: same methods, setting and
quantity, hence the same runs); two refutations (or equivalences) when their decisive comparisons share a cell of
the claimed method itself (its first Side: the same runs of the method the claim is about, on one quantity; one cell
of it that misses the claimed gain fails every claim that reads it). A baseline's runs shared by two claims do not
link them: each claim is about its own method's cells. Inconclusive and not testable claims rest on no decisive
comparison and count alone; each names its cause and what would decide it (`claims.cause_of`).

The page opens with one paragraph per paper (supports / contradicts / finds absent / cannot test, and what it would
take), every number in it filled from the verdicts (`tests/pipeline/test_scorecard.py` reads them back).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: the verdict columns, in order: (key, heading); "underpowered" = inconclusive for want of seeds
COLUMNS = (("confirmed", "Confirmed"), ("refuted", "Refuted"), ("equivalent", "Equivalent"),
           ("inconclusive", "Inconclusive"), ("underpowered", "Underpowered"), ("not testable", "Not testable"))


def rows(metas: Sequence[tuple[Path, Mapping[str, Any]]], root: Path) -> list[dict]:
    """One row per claim of every artefact (from `<artefact>.json`'s claims_detail)."""
    out = []
    for path, meta in metas:
        rel = path.parent.relative_to(root)
        for c in meta.get("claims_detail", []):
            out.append({"paper": meta["paper"], "artefact": meta["artefact"], "page": f"{rel}/{meta['artefact']}.md",
                        "title": meta["title"], "scale": meta["scale"], "id": c["id"], "text": c["text"],
                        "source": c.get("source", ""), "kind": c.get("kind", "sentence"), "status": c["status"],
                        "aggregate": c.get("aggregate", "all"),
                        "underpowered": bool(c.get("underpowered")), "reason": c.get("reason", ""),
                        "design": c.get("design"), "seeds_run": c.get("seeds_run"), "cause": c.get("cause", ""),
                        "comparisons": c.get("comparisons", []), "order": meta.get("order", 99)})
    return out


def verdict(row: Mapping) -> str:
    """The column a claim counts in."""
    status = row["status"]
    if status.startswith("not testable"):
        return "not testable"
    return "underpowered" if status == "inconclusive" and row.get("underpowered") else status


def comparison_key(c: Mapping) -> frozenset | None:
    """The runs a comparison reads: its two Sides (method, setting, metric), unordered."""
    if not c.get("a") or not c.get("b"):
        return None
    return frozenset((s["method"], s["setting"], s["metric"]) for s in (c["a"], c["b"]))


def decisive(row: Mapping) -> set:
    """The comparisons a decided claim's verdict rests on (empty for inconclusive and not testable claims)."""
    return {k for k in map(comparison_key, decisive_comparisons(row)) if k is not None}


def decisive_comparisons(row: Mapping) -> list:
    """The committed comparisons a decided claim's verdict rests on, in order ([] when undecided)."""
    comps = row["comparisons"]
    status = verdict(row)
    if status == "confirmed":
        chosen = comps
    elif status in ("refuted", "equivalent"):
        if any("reading" in c for c in comps):
            wanted = ("no gain", "negligible") if status == "refuted" else ("negligible",)
            chosen = [c for c in comps if c.get("reading") in wanted]
        else:                                                   # the rule before 2026-12-05: refuted by "worse"
            contrary = "better" if row.get("aggregate") == "no_gain" else "worse"
            chosen = [c for c in comps if c["outcome"] == contrary] or comps
    else:
        return []
    return chosen


def _linking_keys(row: Mapping) -> set:
    """What links a claim to another with the same verdict: a confirmation, its decisive comparisons (both Sides:
    the same comparison); a refutation or an equivalence, the claimed method's own cells among its decisive
    comparisons (their first Side: one cell of that method that fails the claimed gain fails every claim that reads
    it, whatever it is compared with; a baseline's cell shared by two claims is no link)."""
    if verdict(row) == "confirmed":
        return decisive(row)
    return {(c["a"]["method"], c["a"]["setting"], c["a"]["metric"]) for c in decisive_comparisons(row) if c.get("a")}


def groups(paper_rows: Sequence[Mapping]) -> list[list[Mapping]]:
    """The paper claims of one paper, grouped: two claims with the same verdict linked by `_linking_keys` are one
    group (transitively). Order: first appearance."""
    claims = [r for r in paper_rows if r["kind"] != "check"]
    parent = list(range(len(claims)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [_linking_keys(r) for r in claims]
    for i in range(len(claims)):
        for j in range(i):
            if verdict(claims[i]) == verdict(claims[j]) and keys[i] & keys[j]:
                parent[find(i)] = find(j)
    out: dict[int, list] = {}
    for i, r in enumerate(claims):
        out.setdefault(find(i), []).append(r)
    return list(out.values())


def counts(paper_rows: Sequence[Mapping]) -> dict:
    """Claims and independent observations per verdict column, and in all."""
    gs = groups(paper_rows)
    claims = {k: 0 for k, _ in COLUMNS}
    obs = {k: 0 for k, _ in COLUMNS}
    for g in gs:
        obs[verdict(g[0])] += 1
        for r in g:
            claims[verdict(r)] += 1
    return {"claims": claims, "observations": obs, "n": sum(claims.values()), "independent": len(gs)}


def _ids(rs: Sequence[Mapping]) -> str:
    return ", ".join(r["id"] for r in rs)


def _part(n_claims: int, n_obs: int, what: str, rs: Sequence[Mapping]) -> str:
    obs = "" if n_obs == n_claims else f" resting on {n_obs} independent observation{'s' * (n_obs != 1)}"
    return f"{what} {n_claims} claim{'s' * (n_claims != 1)} ({_ids(rs)}){obs}"


def paragraph(paper: str, paper_rows: Sequence[Mapping]) -> str:
    """What the embedded evidence supports, contradicts, finds absent and cannot test, and what it would take."""
    c = counts(paper_rows)
    by = {k: [r for r in paper_rows if r["kind"] != "check" and verdict(r) == k] for k, _ in COLUMNS}
    n, cl, ob = c["n"], c["claims"], c["observations"]
    parts = [f"**{paper}** — {n} claims, {c['independent']} independent observations."]
    said = []
    for key, what in (("confirmed", "supports"), ("refuted", "contradicts"),
                      ("equivalent", "finds the claimed difference absent (within the smallest effect of interest) "
                                     "for")):
        if cl[key]:
            said.append(_part(cl[key], ob[key], what, by[key]))
    parts.append(("The embedded evidence " + "; it ".join(said) + ".") if said else
                 "The embedded evidence decides none of its claims.")
    open_ = cl["inconclusive"] + cl["underpowered"]
    if open_:
        under = (f", {cl['underpowered']} of them underpowered ({_ids(by['underpowered'])})"
                 if cl["underpowered"] else "")
        parts.append(f"It leaves {open_} claim{'s' * (open_ != 1)} inconclusive{under}.")
    if cl["not testable"]:
        parts.append(f"It cannot test {cl['not testable']} at this scale ({_ids(by['not testable'])}).")
    take = []
    for r in by["not testable"]:
        take.append(f"{r['id']}: {r['reason'].split(';')[0].strip()}" if r["reason"] else r["id"])
    for r in by["underpowered"]:
        d = r.get("design") or {}
        take.append(f"{r['id']}: {d.get('seeds_needed')} seeds where {r.get('seeds_run')} ran")
    by_cause: dict[str, list] = {}
    for r in by["inconclusive"]:
        by_cause.setdefault(cause(r), []).append(r)
    for why, rs in by_cause.items():
        take.append(f"{_ids(rs)} ({why}): {what_it_would_take(why) or 'a decided comparison'}")
    if take:
        parts.append("What it would take — " + "; ".join(take) + ".")
    return " ".join(parts)


def cause(row: Mapping) -> str:
    """Why an inconclusive claim is undecided: its recorded cause, a baseline or reading it depends on, else the
    cause `claims.cause_of` would give (reports written before causes were recorded)."""
    from fedlib.reporting.claims import DEPENDS, UNDERPOWERED

    if row.get("reason", "").startswith(DEPENDS):
        return row["reason"].split(":")[0]
    return row.get("cause") or UNDERPOWERED


def what_it_would_take(why: str) -> str:
    from fedlib.reporting.claims import what_it_would_take as take

    return take(why)


def effect_pick(row: Mapping) -> Mapping | None:
    """The comparison whose effect the Effect cell prints: among the decisive comparisons of a decided claim (the
    ones its verdict rests on), else among all, the one with the largest Holm-adjusted p-value (the weakest link)."""
    stat = [c for c in (decisive_comparisons(row) or row["comparisons"]) if c.get("effect") is not None]
    if not stat:
        return None
    return max(stat, key=lambda c: c.get("p_adjusted") if c.get("p_adjusted") is not None else -1.0)


def _effect_cell(row: Mapping) -> str:
    """The decisive comparison's effect and the interval its label rests on (`effect_pick`), with the tally."""
    comparisons = row["comparisons"]
    pick = effect_pick(row)
    if pick is None:
        return ""
    tally: dict[str, int] = {}
    for c in comparisons:
        tally[c["outcome"]] = tally.get(c["outcome"], 0) + 1
    lo, hi = pick.get("lo"), pick.get("hi")
    ci = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
    level = pick.get("level")
    ci += f" ({100 * level:.3g} %)" if ci and level is not None and round(level, 6) != 0.95 else ""
    head = f"Δ = {pick['effect']:.3g}{ci}"
    if pick.get("margin") is not None:
        head += f", δ = {pick['margin']:.3g}"
    if len(comparisons) > 1:
        head += " (" + ", ".join(f"{tally[k]} {k}" for k in ("better", "equivalent", "tie", "worse", "unknown")
                                 if k in tally) + ")"
    return head


def markdown(metas: Sequence[tuple[Path, Mapping[str, Any]]], root: Path, summary: str = "") -> str:
    """The page; `summary` (the summary figure's section, fedlib/reporting/summary.py) opens it."""
    from fedlib.reporting.claims import ICON, INTERVAL_TEXT, verdict_label

    all_rows = rows(metas, root)
    papers = list(dict.fromkeys(r["paper"] for r in all_rows))
    lines = ["# Scorecard: what the replication concludes, and every claim of every paper", "",
             "Generated by the `reports_index` stage from each artefact's `<artefact>.json`; do not edit by hand. "
             "Verdicts follow the decision rule of [docs/claims.md](../docs/claims.md#the-decision-rule) (paired by "
             "seed, Holm-adjusted within a claim, δ = the smallest effect of interest of the compared quantity). "
             "Claims that rest on the same comparison (the same runs, the same quantity) with the same verdict form "
             "a group and count once among the independent observations.", "",
             *([summary, ""] if summary else []), "## What the replication concludes", ""]
    for paper in papers:
        lines += [paragraph(paper, [r for r in all_rows if r["paper"] == paper]), ""]
    heads = " | ".join(f"{h}" for _, h in COLUMNS)
    lines += ["## Counts", "",
              "Each cell: claims (independent observations). Paper claims (kinds *sentence* and *table*) are "
              "counted; checks of the reproduction are listed apart.", "",
              f"| Paper | Claims (independent) | {heads} | Checks (confirmed) |",
              "| :--- | ---: | " + "---: | " * len(COLUMNS) + "---: |"]
    total = {"n": 0, "ind": 0, "checks": 0, "ok": 0, **{k: [0, 0] for k, _ in COLUMNS}}
    for paper in papers:
        mine = [r for r in all_rows if r["paper"] == paper]
        c = counts(mine)
        checks = [r for r in mine if r["kind"] == "check"]
        ok = sum(r["status"] == "confirmed" for r in checks)
        cells = []
        for k, _ in COLUMNS:
            cells.append(f"{c['claims'][k]} ({c['observations'][k]})")
            total[k][0] += c["claims"][k]
            total[k][1] += c["observations"][k]
        total["n"] += c["n"]
        total["ind"] += c["independent"]
        total["checks"] += len(checks)
        total["ok"] += ok
        lines.append(f"| {paper} | {c['n']} ({c['independent']}) | " + " | ".join(cells) + f" | {len(checks)} ({ok}) |")
    lines.append(f"| **all** | **{total['n']} ({total['ind']})** | "
                 + " | ".join(f"**{total[k][0]} ({total[k][1]})**" for k, _ in COLUMNS)
                 + f" | **{total['checks']} ({total['ok']})** |")
    lines += ["", f"Effect column: the decisive comparison's mean paired difference Δ with its interval. "
              f"{INTERVAL_TEXT} (reports written before 2026-12-05 print the unadjusted 95 % interval)."]
    for paper in papers:
        mine = sorted((r for r in all_rows if r["paper"] == paper), key=lambda r: (r["order"], r["kind"] == "check"))
        gs = [g for g in groups(mine) if len(g) > 1]
        name = {r["id"] + r["artefact"]: f"G{i}" for i, g in enumerate(gs, 1) for r in g}
        lines += ["", f"## {paper}", ""]
        if gs:
            lines.append("Claims resting on the same evidence (one independent observation each): "
                         + "; ".join(f"G{i} = {_ids(g)} ({verdict(g[0])})" for i, g in enumerate(gs, 1)) + ".")
            lines.append("")
        lines += ["| Id | Claim | Artefact | Scale | Kind | Verdict | Group | Effect [interval] |",
                  "| :--- | :--- | :--- | :--- | :--- | :--- | :--- | :--- |"]
        for r in mine:
            text = f"{r['text']} ({r['source']})" if r["source"] else r["text"]
            label = verdict_label(r["status"], r["underpowered"], r["design"], r["seeds_run"],
                                  cause(r) if r["status"] == "inconclusive" else "") \
                if r["status"] in ICON else r["status"]
            lines.append(f"| {r['id']} | {text.replace('|', chr(92) + '|')} | [{r['title']}]({r['page']}) | "
                         f"{r['scale']} | {r['kind']} | {label} | {name.get(r['id'] + r['artefact'], '')} | "
                         f"{_effect_cell(r)} |")
    return "\n".join(lines)
