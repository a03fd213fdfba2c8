"""The scorecard (fedlib/reporting/scorecard.py): claims resting on the same evidence count once, and the opening
paragraph of each paper says the numbers its verdicts give (on hand-made claims and on every committed report)."""
import json
import re
from pathlib import Path

from fedlib.reporting import claims as C
from fedlib.reporting import scorecard as SC

ACC = "final accuracy (%)"
ROOT = Path(__file__).resolve().parents[2] / "reports"


def seeds(values):
    return dict(enumerate(float(v) for v in values))


def cmp(a, b, method_b="B", setting="s", method_a="A"):
    return C.compare_values(seeds(a), seeds(b), (method_a, method_b), setting=setting, metric=ACC)


HIGH, LOW = [93, 94, 92, 95, 93], [88, 89, 87.5, 90, 88]
MID = [90, 90, 89, 91, 90]


def meta(paper, claims, artefact="t"):
    return {"paper": paper, "artefact": artefact, "title": artefact, "scale": "embedded",
            "claims_detail": [c.to_dict() for c in claims]}


def rows_of(*metas):
    root = Path("/r")
    return SC.rows([(root / m["paper"] / f"{m['artefact']}.json", m) for m in metas], root)


def test_the_same_comparison_confirming_two_claims_is_one_observation():
    t15 = C.judge("T1.5", "A beats B everywhere", "Table 1", [cmp(HIGH, MID), cmp(HIGH, MID, setting="s2")])
    f34 = C.judge("F3.4", "A beats B at every α", "Fig. 3", [cmp(HIGH, MID, setting="s2"),
                                                            cmp(HIGH, LOW, setting="s3")])
    other = C.judge("X", "A beats C", "§2", [cmp(HIGH, MID, "C")])      # A's runs again, another comparison
    assert {t15.status, f34.status, other.status} == {C.CONFIRMED}
    rows = rows_of(meta("p", [t15]), meta("p", [f34, other], "f"))
    c = SC.counts(rows)
    assert c["claims"]["confirmed"] == 3 and c["observations"]["confirmed"] == 2 and c["independent"] == 2
    assert [[r["id"] for r in g] for g in SC.groups(rows)] == [["T1.5", "F3.4"], ["X"]]


def test_one_cell_refuting_several_claims_is_one_observation():
    weak = dict(method_a="SSM", setting="lin")
    r1 = C.judge("T1.2", "SSM beats Top", "T", [cmp(LOW, MID, "Top", **weak), cmp(HIGH, MID, "Top")])
    r2 = C.judge("T1.4", "SSM beats V", "T", [cmp(LOW, MID, "V", **weak)])
    r3 = C.judge("T1.9", "SSM beats W", "T", [cmp(LOW, MID, "W", method_a="SSM", setting="mlp")])
    open_ = C.judge("T1.3", "SSM beats U", "T", [C.compare_values(seeds([90, 95, 85, 92, 88]),
                                                                  seeds([91, 90, 89, 93, 86]), metric=ACC)])
    nt = C.not_testable(C.judge("T1.7", "misses in 3000 rounds", "T", []), "the cap; the paper's")
    rows = rows_of(meta("ssm", [r1, r2, r3, open_, nt]))
    assert [r["status"] for r in rows] == [C.REFUTED, C.REFUTED, C.REFUTED, C.INCONCLUSIVE, C.NOT_TESTABLE]
    c = SC.counts(rows)
    assert c["claims"]["refuted"] == 3 and c["observations"]["refuted"] == 2       # T1.2 + T1.4 share SSM on lin
    assert c["n"] == 5 and c["independent"] == 4
    text = SC.paragraph("ssm", rows)
    assert text == ("**ssm** — 5 claims, 4 independent observations. The embedded evidence contradicts 3 claims "
                    "(T1.2, T1.4, T1.9) resting on 2 independent observations. It leaves 1 claim inconclusive. It "
                    "cannot test 1 at this scale (T1.7). What it would take — T1.7: the cap; T1.3 (underpowered): "
                    "more seeds at the δ the verdict uses (a design's power calculation says how many).")


def test_underpowered_and_equivalent_have_their_own_columns():
    design = C.Design("m", "r", "t", 1.0, 9)
    under = C.judge("U", "t", "s", [C.compare_values(seeds([90, 95, 85, 92, 88]), seeds([91, 90, 89, 93, 86]),
                                                     metric=ACC)], design=design)
    eq = C.judge("E", "t", "s", [C.compare_values(seeds([90.2, 90.3, 90.25, 90.2, 90.3]), seeds([90.0] * 5),
                                                  metric=ACC)])
    rows = rows_of(meta("p", [under, eq]))
    c = SC.counts(rows)
    assert (c["claims"]["underpowered"], c["claims"]["inconclusive"], c["claims"]["equivalent"]) == (1, 0, 1)
    text = SC.paragraph("p", rows)
    assert "finds the claimed difference absent (within the smallest effect of interest) for 1 claim (E)" in text
    assert "1 claim inconclusive, 1 of them underpowered (U)" in text and "U: 9 seeds where 5 ran" in text


PARAGRAPH = re.compile(r"^\*\*(?P<paper>[^*]+)\*\* — (?P<n>\d+) claims, (?P<ind>\d+) independent observations\.")
PARTS = {"confirmed": r"supports (\d+) claim", "refuted": r"contradicts (\d+) claim",
         "equivalent": r"absent \(within the smallest effect of interest\) for (\d+) claim",
         "not testable": r"cannot test (\d+) at this scale"}


def _metas():
    out = []
    for p in sorted(ROOT.glob("*/*.json")):
        m = json.loads(p.read_text())
        if "claims_detail" in m:
            out.append((p, m))
    return out


def test_every_papers_paragraph_has_the_numbers_of_its_verdicts():
    metas = _metas()
    assert metas, "no committed reports to read"
    md = SC.markdown(metas, ROOT)
    paragraphs = [ln for ln in md.splitlines() if PARAGRAPH.match(ln)]
    papers = sorted({m["paper"] for _, m in metas})
    assert sorted(PARAGRAPH.match(p)["paper"] for p in paragraphs) == papers
    for text in paragraphs:
        paper = PARAGRAPH.match(text)["paper"]
        claims = [c for _, m in metas if m["paper"] == paper for c in m["claims_detail"]
                  if c.get("kind", "sentence") != "check"]
        status = [("not testable" if c["status"] == C.NOT_TESTABLE else
                   "underpowered" if c.get("underpowered") else c["status"]) for c in claims]
        assert int(PARAGRAPH.match(text)["n"]) == len(claims)
        rows = [r for r in SC.rows(metas, ROOT) if r["paper"] == paper]
        assert int(PARAGRAPH.match(text)["ind"]) == len(SC.groups(rows)) <= len(claims)
        for key, pattern in PARTS.items():
            found = re.search(pattern, text)
            assert (int(found[1]) if found else 0) == status.count(key), (paper, key)
        found = re.search(r"It leaves (\d+) claims? inconclusive", text)
        assert (int(found[1]) if found else 0) == status.count("inconclusive") + status.count("underpowered")
