"""T11: communication accounting (docs/papers/fadamgt.md §2.2 and §3)."""
from __future__ import annotations

import pytest

from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.tracking import tracking_vectors
from fedlib.comm import comm_bits, vectors_per_round
from fedlib.config import RunConfig
from fedlib.papers.fadamgt.table1_comm import comm_cell, comm_column, comm_table, parse_cell, round_half_up

# Table 1 as PRINTED (S000 values), columns per method, rows CIFAR-10 / CIFAR-100 / TinyImageNet.
TABLE1_ITERATIONS = {
    "fedavg":    ["1388.5 ± 98.6", ">3000", "1994.5 ± 198.9"],
    "scaffold":  ["561.8 ± 41.3", "662.5 ± 29.0", "209.8 ± 7.2"],
    "localadam": ["589.5 ± 74.0", "678.3 ± 40.6", "177.3 ± 8.3"],
    "fedlada":   ["790.3 ± 19.1", ">3000", "198.8 ± 8.7"],
    "fadamet":   ["394.8 ± 31.3", "530.3 ± 17.6", "157.0 ± 6.4"],
    "fadamgt":   ["310.0 ± 16.8", "323.8 ± 16.3", "66.3 ± 4.4"],
}
TABLE1_COMMUNICATION = {
    "fedavg":    ["2777.0 ± 197.1", ">6000", "3989.0 ± 397.8"],
    "scaffold":  ["2247.0 ± 165.2", "2650.0 ± 116.0", "839.0 ± 28.9"],
    "localadam": ["1179.0 ± 148.0", "1356.5 ± 81.3", "354.5 ± 16.6"],
    "fedlada":   ["3951.3 ± 95.6", ">15000", "988.8 ± 43.6"],
    "fadamet":   ["1381.6 ± 109.4", "1855.9 ± 61.6", "549.5 ± 22.4"],
    "fadamgt":   ["1085.0 ± 58.9", "1133.1 ± 57.0", "231.9 ± 15.3"],
}
# the one printed cell that is not c × iterations (docs/papers/fadamgt.md §3): 5 × 198.75 = 993.75 -> 993.8
# (5 × the printed 198.8 = 994.0); the paper prints 988.8. Do not "fix" the reference table.
KNOWN_TYPOS = {("fedlada", 2): "993.8"}

TABLE1_CFG = RunConfig(n_clients=100, clients_per_round=10)        # S = 10, Y = S // 2 = 5


def test_vectors_per_round_counts():
    expected = {"fedavg": 2, "localadam": 2, "scaffold": 4, "fedlada": 5, "fadamet": 3.5, "fadamgt": 3.5}
    for name, c in expected.items():
        assert vectors_per_round(name, TABLE1_CFG) == c
        assert ALGORITHMS[name].comm_vectors(TABLE1_CFG) == c       # the registry agrees
    # Figure 4 (S = 50): 3 + Y/50, 3.02 at Y = 1 up to 4 at Y = 50; PEFT Y = S gives 4
    fig4 = RunConfig.from_dict({"algorithm": "fadamgt", "n_clients": 100, "clients_per_round": 50,
                                "tracking_size": 1})
    assert vectors_per_round("fadamgt", fig4) == pytest.approx(3.02, abs=1e-12)
    assert vectors_per_round("fadamet", fig4.replace(tracking_size=50)) == 4.0
    assert vectors_per_round("fadamet", fig4.replace(tracking_size=0)) == 3.0
    assert vectors_per_round("fadamgt", fig4.replace(algorithm="fadamet")) == pytest.approx(3.02, abs=1e-12)
    assert tracking_vectors(5, 10) == 3.5
    with pytest.raises(KeyError):
        vectors_per_round("no-such-method", TABLE1_CFG)


def test_comm_bits():
    assert comm_bits(2, 1000) == 64_000
    assert comm_bits(3.5, 11_173_962) == 3.5 * 11_173_962 * 32
    assert isinstance(comm_bits(3.5, 7), int)
    assert comm_bits(3.02, 1) == pytest.approx(96.64)
    assert comm_bits(1, 10, bits=16) == 160


def test_round_half_up_matches_paper_rounding():
    assert round_half_up(5 * 790.25) == "3951.3"        # Python's round-half-even would print 3951.2
    assert round_half_up(3.5 * 394.75) == "1381.6"
    assert round_half_up(3.5 * 66.25) == "231.9"


def test_parse_cell():
    assert parse_cell("1388.5 ± 98.6") == ("value", 1388.5, 98.6)
    assert parse_cell("66.3+-4.4") == ("value", 66.3, 4.4)
    assert parse_cell(">3000") == ("cap", 3000.0, None)
    assert parse_cell(12) == ("value", 12.0, None)
    assert parse_cell((394.75, 31.26)) == ("value", 394.75, 31.26)
    assert parse_cell("–") == ("empty", None, None)
    with pytest.raises(ValueError):
        parse_cell("about 5")


def test_t11_table1_communication_column_reproduced():
    """Communication = c_alg × iterations (unrounded mean: 4 trials -> multiples of 0.25); every printed mean cell
    is reproduced exactly, every std cell to within the propagated rounding c·0.05 (+0.05 for its own print)."""
    checked = 0
    for name, iterations in TABLE1_ITERATIONS.items():
        c = vectors_per_round(name, TABLE1_CFG)
        ours = comm_column(iterations, c, trials=4)
        for row, (mine, printed) in enumerate(zip(ours, TABLE1_COMMUNICATION[name])):
            kind, m_mine, s_mine = parse_cell(mine)
            _, m_paper, s_paper = parse_cell(printed)
            if (name, row) in KNOWN_TYPOS:
                assert mine.split(" ± ")[0] == KNOWN_TYPOS[(name, row)] != printed.split(" ± ")[0]
            elif kind == "cap":
                assert mine == printed
            else:
                assert mine.split(" ± ")[0] == printed.split(" ± ")[0], (name, row, mine, printed)
            if s_paper is not None:
                assert abs(s_mine - s_paper) <= c * 0.05 + 0.05 + 1e-9, (name, row, mine, printed)
            checked += 1
    assert checked == 18


def test_comm_column_inputs():
    assert comm_column([">3000"], 5) == [">15000"]
    assert comm_column(">3000", 3.5) == ">10500"
    assert comm_column([(394.75, 31.26), 100, None], 3.5) == ["1381.6 ± 109.4", "350.0", "–"]
    assert comm_cell("394.8 ± 31.3", 3.5) == "1381.8 ± 109.6"               # without snapping: printed mean
    assert comm_cell("394.8 ± 31.3", 3.5, trials=4) == "1381.6 ± 109.6"     # snapped to 394.75
    with pytest.raises(ValueError):
        comm_cell("394.6", 3.5, trials=4)                                   # not a rounded multiple of 0.25
    table = comm_table({"localadam": ["678.3 ± 40.6"], "fadamgt": ["66.3 ± 4.4"]}, TABLE1_CFG, trials=4)
    assert table == {"localadam": ["1356.5 ± 81.2"], "fadamgt": ["231.9 ± 15.4"]}


def test_engine_records_count_vectors():
    from fedlib.engine import Simulation
    sim = Simulation(dict(algorithm="fadamgt", dataset="lstsq", partition="natural", n_clients=10,
                          clients_per_round=4, tracking_size=1, rounds=2, progress=False, eval_every=100))
    rec = [sim.run_round() for _ in range(2)][-1]
    assert sim.comm_per_round == 3.25
    assert rec["comm_vectors"] == 6.5
    assert rec["comm_bits"] == comm_bits(6.5, sim.oracle.d)
