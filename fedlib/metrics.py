"""Summary metrics of a run: rounds-to-target, communication-to-target, best/final accuracy."""
from __future__ import annotations

import math

BLOWUP_FACTOR = 1e4
DIVERGENCE_RULE = (f"diverged when the round's train loss or the global model is NaN/inf, or the train loss exceeds "
                   f"{BLOWUP_FACTOR:g} x the initial loss (the mean minibatch loss of round 1's cohort at the "
                   f"initial model)")


def divergence_reason(train_loss: float, model_finite: bool, initial_loss: float | None) -> str | None:
    """Why a round counts as diverged under DIVERGENCE_RULE, or None.

    NaN/inf alone misses runs that blow up without overflowing (FAdamGT at lr = 1e6 trains at loss ~1e28). A loss
    10^4 times the loss of the untrained model is a blow-up for any bounded-below loss (cross-entropy starts near
    ln C, least squares at its initial residual), yet far above the noise of a healthy run.
    """
    if not math.isfinite(train_loss):
        return f"train loss is {train_loss}"
    if not model_finite:
        return "the global model has NaN/inf entries"
    if initial_loss is not None and initial_loss > 0 and train_loss > BLOWUP_FACTOR * initial_loss:
        return f"train loss {train_loss:.4g} > {BLOWUP_FACTOR:g} x initial loss {initial_loss:.4g}"
    return None


def rounds_to_target(records: list[dict], target: float | None) -> int | None:
    """First round whose evaluated global test accuracy is >= target (spec A13); None if never reached."""
    if target is None:
        return None
    for rec in records:
        acc = rec.get("test_acc")
        if acc is not None and acc >= target:
            return int(rec["round"])
    return None


def comm_at_round(records: list[dict], rnd: int | None) -> float | None:
    if rnd is None:
        return None
    for rec in records:
        if rec["round"] == rnd:
            return rec["comm_vectors"]
    return None


def summarize(records: list[dict], status: str, target: float | None, rounds_cap: int) -> dict:
    accs = [r["test_acc"] for r in records if r.get("test_acc") is not None]
    finite_losses = [r["train_loss"] for r in records if r["train_loss"] is not None and math.isfinite(r["train_loss"])]
    rtt = rounds_to_target(records, target)
    return {
        "status": status,
        "diverged_round": records[-1]["round"] if status == "diverged" and records else None,
        "rounds_run": len(records),
        "rounds_cap": rounds_cap,
        "final_test_acc": accs[-1] if accs else None,
        "best_test_acc": max(accs) if accs else None,
        "final_train_loss": finite_losses[-1] if finite_losses else None,
        "final_test_loss": next((r["test_loss"] for r in reversed(records) if r.get("test_loss") is not None), None),
        "target_acc": target,
        "rounds_to_target": rtt,
        "comm_to_target": comm_at_round(records, rtt),
        "wall_s": sum(r.get("wall_s", 0.0) for r in records),
    }
