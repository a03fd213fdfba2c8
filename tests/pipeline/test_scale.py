"""The scale sentence of a page says what its own settings table shows smaller than the paper
(fedlib/reporting/scale.py), never a blanket "fewer clients, rounds and seeds"."""
from fedlib.reporting import report as R
from fedlib.reporting import scale as S

TABLE = R.settings_table([("clients n", 100, 20), ("devices N (per round)", 20, "20 (20)"),
                          ("trials / seeds", 4, "5 (0 1 2 3 4)"), ("rounds T", 1000, 100),
                          ("local steps per epoch", "10 (500 samples per client)", "3 (digits)"),
                          ("batch size", "not stated (one of {20, 50}); A4", 32), ("learning rate η", 0.1, 0.003),
                          ("seeds", "not given", "5: 0 1 2 3 4"), ("width \\| depth", "1,024", "256")])


def test_only_size_settings_below_the_papers_stated_value_are_smaller():
    assert S.table_rows(TABLE)[5] == ("batch size", "not stated (one of {20, 50}); A4", "32")
    assert S.smaller(S.table_rows(TABLE)) == ["clients n: 20 against 100", "rounds T: 100 against 1000",
                                              "local steps per epoch: 3 against 10", "width \\| depth: 256 against 1,024"]
    assert S.number("5: 0 1 2 3 4") == 5.0 and S.number("1,024") == 1024.0 and S.number("1e-08 (coupled)") == 1e-08
    assert S.number("not given") is None and S.number("S/2 = 5") is None and S.number("0.1 × 0.998^t") == 0.1


def test_the_scale_sentence_is_rewritten_from_the_table_on_the_same_page():
    page = R.SCALE_TEXT["embedded"] + "\n\n" + TABLE + "\n"
    out = S.rewrite(page)
    assert S.CLAUSE in R.SCALE_TEXT["embedded"] and S.CLAUSE not in out
    assert "smaller than the paper in clients n: 20 against 100; rounds T: 100 against 1000; local steps per " \
           "epoch: 3 against 10; width \\| depth: 256 against 1,024 (settings table below)" in out
    same = R.settings_table([("clients n", 20, 20), ("trials / seeds", 4, 5)])
    assert "no size setting smaller than the paper's" in S.rewrite(R.SCALE_TEXT["embedded"] + "\n" + same)
    assert "has no paper-against-here table" in S.rewrite(R.SCALE_TEXT["embedded"])
    assert S.rewrite("no scale sentence here") == "no scale sentence here"
