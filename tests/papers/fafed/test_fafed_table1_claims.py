"""FAFED Table 1's claim function (fedlib/papers/fafed/table1.py: claims) on a hand-made payload table: the rates
claim is never testable at a finite scale (with its reason), and the payload check compares each described method's
measured upload with its description within 1e-9 d-vectors (exactly at the tolerance on both sides), skips methods
without a description, and says what each sends. Written to kill the claim function's mutants
(scripts/mutants.sh fafed-table1-claims)."""
from __future__ import annotations

import pandas as pd

from fedlib.papers.fafed import reference as P
from fedlib.papers.fafed import table1
from fedlib.reporting import claims as C

SETTINGS = {"run": {"dataset": "digits", "model": "mlp_small"}}
WHERE = "digits (mlp_small), round 2"


def payloads(up=None) -> pd.DataFrame:
    up = up or {}
    rows = [("FAFED", 3.0, 3), ("FedAvg", 1.0, 1), ("SCAFFOLD", 2.0, 2), ("extra", 5.0, None)]
    return pd.DataFrame([{"algorithm": m.lower(), "method": m, "up per round (d-vectors)": up.get(m, v),
                          "down per round": 1.0 + (m == "SCAFFOLD"), "extra in round 1": 0.5 if m == "FAFED" else 0.0,
                          "paper's description (up)": d, "measured from": "bits"} for m, v, d in rows])


def run(pay=None, settings=SETTINGS) -> dict[str, C.Claim]:
    return {c.id: c for c in table1.claims(payloads() if pay is None else pay, settings)}


def test_rates_claim_is_not_testable_with_its_reason_text_and_source():
    c = run()["T1.1"]
    assert c.status == C.NOT_TESTABLE and c.kind == "table" and c.comparisons == []
    assert c.text == ("FAFED finds an ε-stationary point with Õ(ε⁻³) samples and Õ(ε⁻²) communication rounds, where "
                      "FedAvg and the adaptive FedAdagrad/FedYogi/FedAdam/FedAMS need O(ε⁻⁴) of each")
    assert c.source == P.CLAIMS["table1_rates"][1]
    assert c.rule == "rates as ε → 0 are not observable at a fixed, finite scale"
    assert c.reason == ("asymptotic rates in ε (with the theory's step sizes and α_t = cη_t², which the experiments do "
                        "not use, A1/A2): no finite run measures an exponent of ε; Figures 1-2 test the practical "
                        "consequence (a lower training loss after the same rounds)")
    assert c.evidence == [f"not testable at this scale: {c.reason}"]


def test_payload_check_compares_each_described_method_with_its_description():
    got = run()
    assert list(got) == ["T1.1", "T1.2"]
    c = got["T1.2"]
    assert c.status == C.CONFIRMED and c.kind == "check" and c.aggregate == "all"
    assert [(x["a"]["method"], x["a"]["setting"], x["a"]["metric"], x["b"]["method"], x["b"]["metric"],
             x["higher_is_better"], x["exact"]) for x in c.comparisons] == [
        (m, WHERE, "|measured − described| d-vectors up per round", "tolerance", "1e-09 d-vectors", False, True)
        for m in ("FAFED", "FedAvg", "SCAFFOLD")]
    objs = c._comparison_objects
    assert [o.a.values for o in objs] == [{0: 0.0}] * 3 and [o.b.values for o in objs] == [{0: 1e-9}] * 3
    assert [o.b.setting for o in objs] == [WHERE] * 3
    assert c.evidence[0] == "better: FAFED: FAFED 0.0e+00 vs tolerance 1.0e-09 (exact values)"
    assert c.evidence[3:] == [
        "FAFED: 3 d-vectors up per round (described: 3); down 1; round 1 extra 0.5",
        "FedAvg: 1 d-vectors up per round (described: 1); down 1; round 1 extra 0",
        "SCAFFOLD: 2 d-vectors up per round (described: 2); down 2; round 1 extra 0"]
    assert c.text == ("Each worker uploads x, m and v every q steps in FAFED (3 d-vectors), x and one more vector in "
                      "SCAFFOLD and STEM, x alone in FedAvg, FedAdam, FedAMS and Algorithm 1: the engine's bit "
                      "accounting counts what each algorithm sends")
    assert c.source == ("reproduction check (the algorithms as described in docs/papers/fafed.md; the paper states "
                        "no payloads)")
    assert c.rule == ("exact values: confirmed if every method's measured upload is within 1e-9 d-vectors of its "
                      "description")


def test_payload_check_at_and_beyond_the_tolerance_either_way():
    assert run(payloads({"FedAvg": 1.0 + 2e-9}))["T1.2"].status == C.REFUTED
    assert run(payloads({"FedAvg": 1.0 - 2e-9}))["T1.2"].status == C.REFUTED          # |measured − described|
    assert run(payloads({"FedAvg": 1.0 + 0.5e-9}))["T1.2"].status == C.CONFIRMED
    wrong = run(payloads({"SCAFFOLD": 1.0}))["T1.2"]
    assert [x["outcome"] for x in wrong.comparisons] == ["better", "better", "worse"]
    assert wrong.evidence[-1] == "SCAFFOLD: 1 d-vectors up per round (described: 2); down 2; round 1 extra 0"


def test_a_method_without_a_description_is_left_out_not_counted_within_tolerance():
    """A bug before: beside numbers, pandas stores the missing description as NaN, `want is None` let it through and
    C.exact ordered |5 − NaN| = NaN as 'better' than the tolerance (a silent pass for an undescribed method)."""
    pay = payloads()
    assert pd.isna(pay.loc[3, "paper's description (up)"])
    c = run(pay)["T1.2"]
    assert "extra" not in [x["a"]["method"] for x in c.comparisons] and len(c.comparisons) == 3
    assert not any(e.startswith("extra") for e in c.evidence)


def test_the_setting_names_the_data_and_model_that_ran():
    c = run(settings={"run": {"dataset": "synthetic"}})["T1.2"]
    assert c.comparisons[0]["a"]["setting"] == "synthetic (auto), round 2"
    none = run(payloads().iloc[3:].astype({"paper's description (up)": float}))["T1.2"]
    assert none.status == C.INCONCLUSIVE and none.comparisons == []             # nothing described: no comparison


def test_an_undescribed_method_before_described_ones_skips_only_itself():
    """The undescribed row first: the methods after it are still compared (a `break` for the `continue` would leave
    the check with nothing to compare, and a mismatch after it unseen)."""
    pay = payloads({"SCAFFOLD": 2.5})
    pay = pd.concat([pay.iloc[[3]], pay.iloc[:3]], ignore_index=True)
    c = run(pay)["T1.2"]
    assert [x["a"]["method"] for x in c.comparisons] == ["FAFED", "FedAvg", "SCAFFOLD"]
    assert c.status == C.REFUTED
