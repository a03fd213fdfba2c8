"""Language modelling for the FAFED paper: tokenizer and WikiText-2 loader, the LSTM, the stateful oracle (vmap and
loop paths, dropout masks), token-stream batches with carried and reset BPTT state, determinism and exact resume."""
import sys
import types

import numpy as np
import pytest
import torch
from torch import nn

from fedlib.config import ConfigError
from fedlib.data import DatasetUnavailable, load_dataset
from fedlib.data import token_stream as T
from fedlib.data.partition import stream_chunks
from fedlib.engine import Simulation, run
from fedlib.models import build_model, num_params
from fedlib.oracle import Oracle
from fedlib.streams import StreamFeed, batchify, windows_per_epoch

LM = dict(dataset="pydoc_text", partition="stream_chunks", n_clients=4, clients_per_round=4, batch_size=3,
          bptt=6, local_steps=4, rounds=3, lr=0.5, clip_norm=0.25, progress=False, oracle="vmap",
          eval_every=3, seed=1)


# ---------------------------------------------------------------------------------------------- tokens
def test_tokenizer_eos_per_nonempty_line_and_shared_vocab():
    lines = [" = Title = \n", "", "   ", "a b  a\n", "c"]
    assert T.tokenize(lines) == ["=", "Title", "=", "<eos>", "a", "b", "a", "<eos>", "c", "<eos>"]
    ds = T.stream_dataset("toy", lines, ["a z", "", "b"], "test")
    assert ds.extras["vocab"] == ["=", "Title", "<eos>", "a", "b", "c", "<unk>"]      # train split only
    assert ds.x_test.tolist() == [3, 6, 2, 4, 2]                                      # z -> <unk>
    assert ds.num_classes == 7 and ds.task == "language_model"
    capped = T.build_vocab(["x", "y", "y", "z", "z", "z", "w"], max_size=2)
    assert capped == ["y", "z", "<unk>"]


def fake_datasets(calls):
    rows = {"train": [" = Valkyria = \n", "", " the <unk> game \n"], "test": [" the end \n"]}

    def load_dataset(hub_id, config, split, cache_dir):
        calls.append((hub_id, config, split))
        return {"text": rows[split]}                      # the real column name
    return types.SimpleNamespace(load_dataset=load_dataset)


def test_wikitext2_loader_via_hub_then_cache_then_raw_files(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets(calls))
    ds = load_dataset("wikitext2", tmp_path)
    assert calls == [("Salesforce/wikitext", "wikitext-2-v1", "train"), ("Salesforce/wikitext", "wikitext-2-v1",
                                                                         "test")]
    assert ds.extras["vocab"] == ["=", "Valkyria", "<eos>", "the", "<unk>", "game"]
    assert ds.x_train.tolist() == [0, 1, 0, 2, 3, 4, 5, 2] and ds.x_test.tolist() == [3, 4, 2]
    monkeypatch.setitem(sys.modules, "datasets", None)          # no hub now: the cache must serve
    again = load_dataset("wikitext2", tmp_path)
    assert again.x_train.tolist() == ds.x_train.tolist() and "cache" in again.source
    raw = tmp_path / "raw" / "wikitext2"
    raw.mkdir(parents=True)
    (raw / "wiki.train.tokens").write_text(" = A = \n\n b \n")
    (raw / "wiki.test.tokens").write_text(" b c \n")
    from_raw = load_dataset("wikitext2", tmp_path / "raw")
    assert from_raw.extras["vocab"] == ["=", "A", "<eos>", "b", "<unk>"] and "raw files" in from_raw.source


def test_wikitext2_unavailable_names_the_files(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DatasetUnavailable, match="wiki.train.tokens, wiki.test.tokens"):
        load_dataset("wikitext2", tmp_path)


def test_pydoc_stand_in():
    ds = load_dataset("pydoc_text")
    assert ds.num_classes == T.PYDOC_VOCAB + 1 and ds.extras["vocab"][-1] == "<unk>"
    assert 60_000 < ds.n_train < 75_000 and 4_000 < ds.x_test.numel() < 15_000


# ---------------------------------------------------------------------------------------------- the LSTM
def test_lstm_equals_nn_lstm_and_paper_size():
    torch.manual_seed(0)
    model = build_model("lstm_small", (), 50)
    ref = nn.LSTM(32, 32, num_layers=2, batch_first=True)
    ref.load_state_dict({k: v for k, v in model.state_dict().items() if "_l" in k})
    tokens = torch.randint(0, 50, (3, 7))
    state = torch.randn(2, 2, 3, 32)
    logits, nxt = model((tokens, state, None))
    out, (h, c) = ref(model.encoder(tokens), (state[0], state[1]))
    torch.testing.assert_close(logits, model.decoder(out), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(nxt, torch.stack([h, c]), rtol=1e-5, atol=1e-6)
    # init ranges of the authors' code; 2 x 650 untied on the WikiText-2 vocabulary: 50,065,078 parameters
    assert model.encoder.weight.abs().max() <= 0.1 and model.decoder.weight.abs().max() <= 0.1
    assert model.decoder.bias.abs().max() == 0
    v, e = 33_278, 650
    assert v * e + 2 * (2 * 4 * e * e + 2 * 4 * e) + e * v + v == 50_065_078
    assert num_params(build_model("lstm_wt2", (), v)) == 50_065_078


def _oracle_inputs(c=3, b=2, length=5, vocab=40, seed=0):
    torch.manual_seed(seed)
    model = build_model("lstm_small", (), vocab)
    oracle = Oracle(model, "language_model")
    gen = torch.Generator().manual_seed(seed)
    params = oracle.flat_params() + 0.01 * torch.randn(c, oracle.d, generator=gen)
    tokens = torch.randint(0, vocab, (c, b, length + 1), generator=gen)
    state = 0.1 * torch.randn(c, 2, 2, b, 32, generator=gen)
    masks = model.dropout_masks((c, b, length), gen, "cpu")
    return oracle, params, (tokens[..., :-1], state, masks), tokens[..., 1:]


def test_stateful_oracle_vmap_and_loop_agree_per_call():
    oracle, params, x, y = _oracle_inputs()
    out = {}
    for mode in ("vmap", "loop"):
        oracle.mode = mode
        out[mode] = oracle(params, x, y)
    for a, b in zip(out["vmap"], out["loop"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    loss, grad, state = out["loop"]
    manual = [nn.functional.cross_entropy(oracle.forward(params[i], tuple(t[i] for t in x))[0].reshape(-1, 40),
                                          y[i].reshape(-1)) for i in range(3)]
    torch.testing.assert_close(loss, torch.stack(manual).detach())
    assert grad.shape == (3, oracle.d) and state.shape == (3, 2, 2, 2, 32)


def test_dropout_masks_are_per_client_and_change_the_loss():
    oracle, params, (tok, state, masks), y = _oracle_inputs()
    assert set(torch.unique(masks).tolist()) == {0.0, 2.0}                 # p = 0.5: kept units scaled by 2
    assert not torch.equal(masks[0], masks[1])
    same = params[:1].expand(3, -1)
    shared = masks[:1].expand_as(masks)
    l_shared, _, _ = oracle(same, (tok[:1].expand_as(tok), state[:1].expand_as(state), shared), y[:1].expand_as(y))
    l_own, _, _ = oracle(same, (tok[:1].expand_as(tok), state[:1].expand_as(state), masks), y[:1].expand_as(y))
    assert torch.allclose(l_shared, l_shared[0]) and not torch.allclose(l_own, l_own[0])


# ---------------------------------------------------------------------------------------------- streams
def test_stream_partition_contiguous_disjoint_covering():
    parts = stream_chunks(1003, 16)
    flat = np.concatenate(parts)
    assert np.array_equal(flat, np.arange(1003))                           # covering, disjoint, in order
    assert all(np.array_equal(p, np.arange(p[0], p[-1] + 1)) for p in parts)
    assert [len(p) for p in parts] == [63] * 11 + [62] * 5


def test_batchify_windows_and_reset():
    tokens = torch.arange(100)
    assert batchify(tokens, 3).tolist()[1][:3] == [33, 34, 35]            # column j is the j-th contiguous piece
    parts = stream_chunks(100, 2)                                           # 50 tokens each: 16 rows of 3 columns
    assert windows_per_epoch([50, 50], 3, 4) == 3                           # (16 - 1) // 4
    model = build_model("lstm_small", (), 100)
    feed = StreamFeed(tokens, parts, 3, 4, model, seed=0, device="cpu")
    cohort, active = torch.tensor([0, 1]), torch.tensor([True, True])
    seen = []
    for step in range(4):
        (x, state, masks), y = feed.batch(cohort)
        seen.append((x.clone(), state.clone()))
        assert torch.equal(y[..., :-1], x[..., 1:])                         # targets are the next tokens
        feed.advance(cohort, active, torch.full_like(state, float(step + 1)))
    assert seen[0][0][1, 0].tolist() == [50, 51, 52, 53] and seen[1][0][1, 0].tolist() == [54, 55, 56, 57]
    assert seen[0][0][0, 2].tolist() == [32, 33, 34, 35]                   # client 0, column 2
    assert float(seen[0][1].abs().sum()) == 0                               # epoch start: zero state
    assert float(seen[1][1].min()) == float(seen[1][1].max()) == 1.0        # carried from step 1
    assert float(seen[2][1].min()) == 2.0
    assert float(seen[3][1].abs().sum()) == 0 and torch.equal(seen[3][0], seen[0][0])   # W = 3: new epoch
    feed.advance(cohort, torch.tensor([True, False]), torch.full_like(state, 9.0))
    assert feed.pos.tolist() == [2, 1] and float(feed.state[1].max()) == 4.0   # inactive client unchanged


def test_carried_state_is_the_first_calls_output():
    sim = Simulation({**LM, "algorithm": "fafed", "rounds": 2})
    outputs = []
    original = sim.oracle.__call__

    def spy(params, x, y):
        out = original(params, x, y)
        outputs.append(out[2])
        return out
    sim.oracle = _Callable(spy, sim.oracle)
    sim.oracle_info = {"mode": "vmap"}
    sim.run_round()
    # after step 4 of round 1 (t = 1..4; the first step also evaluates the initial point), the carried state is
    # the output of that step's first call (at x_t), not its second (at x_{t-1})
    assert torch.equal(sim.stream.state, outputs[-2]) and not torch.equal(sim.stream.state, outputs[-1])


class _Callable:
    def __init__(self, fn, ns):
        self.fn, self.mode, self.d = fn, ns.mode, ns.d

    def __call__(self, *args):
        return self.fn(*args)


# ---------------------------------------------------------------------------------------------- engine
def strip(rec):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rec["rounds"]]


def test_lm_runs_are_deterministic_and_paths_agree():
    a = run({**LM, "algorithm": "fafed"})
    b = run({**LM, "algorithm": "fafed"})
    c = run({**LM, "algorithm": "fafed", "oracle": "loop"})
    d = run({**LM, "algorithm": "fafed", "seed": 2})
    assert strip(a) == strip(b)
    np.testing.assert_allclose([r["train_loss"] for r in a["rounds"]], [r["train_loss"] for r in c["rounds"]],
                               rtol=1e-4)
    assert strip(a) != strip(d)
    last = a["rounds"][-1]
    assert last["test_loss"] is not None and 0 <= last["test_acc"] <= 1
    assert a["rounds"][0]["train_loss"] == pytest.approx(np.log(T.PYDOC_VOCAB + 1), rel=0.05)


@pytest.mark.parametrize("name", ["fafed", "stem", "fedavg"])
def test_lm_resume_is_exact_with_hidden_state(tmp_path, name):
    cfg = {**LM, "algorithm": name, "rounds": 4, "checkpoint_every": 1}
    full = run(cfg, tmp_path / "full")
    run(cfg, tmp_path / "killed", stop_after=2)
    state = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=False)["stream"]
    assert float(state["state"].abs().sum()) > 0                             # a non-zero carried state was saved
    assert strip(run(cfg, tmp_path / "killed")) == strip(full)


def test_bad_stream_settings_are_refused():
    with pytest.raises(ConfigError, match=r"^batch_size=5000 x \(bptt=\d+ \+ 1\) tokens do not fit in the shortest "
                                          r"client's token stream \(\d+ tokens with these n_clients\); allowed: "):
        Simulation({**LM, "algorithm": "fedavg", "batch_size": 5000})
    with pytest.raises(ConfigError, match="allowed: batch_size"):
        Simulation({**LM, "algorithm": "fedavg", "n_clients": 5000, "clients_per_round": 5})
    with pytest.raises(ValueError, match="class labels"):
        Simulation({**LM, "algorithm": "fedavg", "partition": "dirichlet"})
