"""The quantised baselines' unspecified settings (A8, A9 in docs/papers/fedadam_ssm.md), and what a verdict that
depends on them is worth.

The paper gives neither 1-bit Adam's warm-up length T_w ("a warm-up stage", A8) nor the form in which Efficient Adam,
a one-step-per-communication method, runs with L local steps (A9). Table I's `ablation` block reruns each of them at
other plausible settings (T_w = 2 and 4 beside the budget's T_w = 1; one local step per round, Chen et al.'s own
form, beside L). Every claim that compares one of them is judged once per setting, the others' runs unchanged. A
verdict that holds over the whole range stands, with the range in its evidence; one that changes within it is
"inconclusive (depends on an unspecified baseline setting, A8/A9)": the claim's `reason` carries that label, so the
scorecard can show it, and the verdicts per setting are its first evidence line.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fedlib.papers.fedadam_ssm.common import NAMES, ablation_variants
from fedlib.reporting import claims as C

WHAT = "an unspecified baseline setting (A8/A9)"
LABEL = f"depends on {WHAT}"
WHICH = {"onebit_adam": "A8", "efficient_adam": "A9"}


def describe(alg: str, fields: Mapping[str, Any]) -> str:
    """A setting in words: '1-bit Adam T_w = 2', 'Efficient Adam with one local step per round'."""
    if set(fields) == {"warmup_rounds"}:
        return f"{NAMES[alg]} T_w = {fields['warmup_rounds']}"
    if fields.get("quantizer") == "stochastic" and set(fields) <= {"quantizer", "quant_bits"}:
        return f"{NAMES[alg]} with a {fields.get('quant_bits', 4)}-bit stochastic quantiser"
    if set(fields) == {"local_steps"}:
        steps = fields["local_steps"]
        return f"{NAMES[alg]} with {'one local step' if steps == 1 else f'{steps} local steps'} per round"
    return f"{NAMES[alg]} with " + ", ".join(f"{k} = {v}" for k, v in fields.items())


def alternatives(settings: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, algorithm, variant name) for each alternative setting of a baseline in the block's `ablation`."""
    return [(describe(alg, fields), alg, name) for alg, fields, name in ablation_variants(settings)
            if alg in WHICH]


def default_label(settings: Mapping[str, Any]) -> str:
    """The comparison's own settings, in words (T_w as sized from the budget, L local steps)."""
    parts = []
    if "onebit_adam" in settings["algorithms"]:
        parts.append("1-bit Adam T_w from the budget (A8)")
    if "efficient_adam" in settings["algorithms"]:
        parts.append(f"Efficient Adam with L = {settings['run']['local_steps']} local steps")
    return ", ".join(parts) or "as run"


def involves(claim: C.Claim, alg: str) -> bool:
    """Whether one of the claim's comparisons has `alg` on a side (by its display name, e.g. '1-bit Adam')."""
    name = NAMES[alg]
    return any(side and side["method"].startswith(name) for c in claim.comparisons for side in (c["a"], c["b"]))


def robust(default: Sequence[C.Claim], judge_with: Callable[[str, str], Sequence[C.Claim]],
           settings: Mapping[str, Any]) -> list[C.Claim]:
    """`default` (the claims under the comparison's own settings), each claim that compares a baseline re-judged
    with `judge_with(algorithm, variant)` (the same claims, that baseline's runs replaced by the variant's), by the
    rule's `claims.over_range`: the verdict stands when every setting gives it, else the claim is "inconclusive
    (depends on an unspecified baseline setting)"; every setting's comparisons are kept with their per-seed rows."""
    ids = {alg: {c.id for c in default if involves(c, alg)} for alg in WHICH}
    alts = [(label, {c.id: c for c in judge_with(alg, var) if c.id in ids.get(alg, set())})
            for label, alg, var in alternatives(settings)]
    return C.over_range(default, alts, WHAT, default_label(settings))


def is_dependent(claim: Mapping[str, Any] | C.Claim) -> bool:
    reason = claim.get("reason", "") if isinstance(claim, Mapping) else claim.reason
    return (claim.get("status") if isinstance(claim, Mapping) else claim.status) == C.INCONCLUSIVE and \
        reason.startswith(LABEL)


def markdown(claims: Sequence[C.Claim], settings: Mapping[str, Any]) -> str:
    """The page section: each claim that compares a quantised baseline, its verdict per plausible setting."""
    rows = []
    for c in claims:
        line = c.reason if is_dependent(c) else next((e for e in c.evidence if e.startswith(WHAT)), "")
        if not line:
            continue
        per = line.split("verdict per setting: ", 1)[1].split(" — ")[0]
        rows.append(f"| {c.id} | {per} | {'inconclusive (' + LABEL + ')' if is_dependent(c) else c.status} |")
    if not rows:
        return ""
    settings_text = "; ".join(label for label, _, _ in alternatives(settings))
    return ("### The quantised baselines' unspecified settings (A8, A9)\n\n"
            "The paper gives neither 1-bit Adam's warm-up length (A8) nor how Efficient Adam, a method with one step "
            f"per communication, runs with L local steps (A9). Besides the comparison's own settings "
            f"({default_label(settings)}) each claim that compares one of them is judged with that baseline's runs "
            f"at: {settings_text} (extra runs, the other methods' runs unchanged). A verdict that changes within "
            f"this range is 'inconclusive ({LABEL})', never refuted or confirmed.\n\n"
            "| Claim | Verdict per setting | Verdict |\n| :--- | :--- | :--- |\n" + "\n".join(rows))
