"""The PEFT LoRA GPT-2 classifier through the cohort oracle: flat vector <-> PEFT adapter, padding, vmap = loop."""
import pytest
import torch

pytest.importorskip("peft")

from fedlib.models import build_model  # noqa: E402
from fedlib.models.gpt2_lora import adapter_state, load_flat, paper_state_size, state_size  # noqa: E402
from fedlib.oracle import Oracle  # noqa: E402

VOCAB, PAD, CLASSES = 50, 0, 3


def _tiny(seed=0, **options):
    return build_model("tiny_gpt2_lora", (12,), CLASSES, seed=seed, vocab_size=VOCAB, pad_id=PAD,
                       **{"max_length": 12, "n_embd": 16, "n_head": 2, "n_layer": 2, "lora_rank": 4, **options})


def _tokens(C, B, T=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1, VOCAB, (C, B, T), generator=g, dtype=torch.int32)
    lengths = torch.randint(2, T + 1, (C, B), generator=g)
    x = torch.where(torch.arange(T) < lengths[..., None], x, torch.full_like(x, PAD))
    return x, torch.randint(0, CLASSES, (C, B), generator=g)


def _perturbed(oracle, C, seed=1):
    g = torch.Generator().manual_seed(seed)
    return oracle.flat_params() + 0.05 * torch.randn(C, oracle.d, generator=g)


def test_flat_vector_is_exactly_lora_plus_head_and_roundtrips_into_peft():
    model = _tiny()
    oracle = Oracle(model, "classification")
    assert all(("lora_" in n) or ("modules_to_save" in n) for n in oracle.names)
    assert sum("modules_to_save" in n for n in oracle.names) == 1                 # the score head copy
    sizes = state_size(model)
    assert oracle.d == sizes["trainable"] and oracle.frozen == sizes["frozen"] and sizes["head"] == 16 * CLASSES
    flat = _perturbed(oracle, 1)[0]
    load_flat(model, flat)
    assert torch.equal(oracle.flat_params(), flat)
    saved = adapter_state(model)                            # what PEFT's save_pretrained writes
    assert len(saved) == len(oracle.names)
    assert torch.equal(torch.cat([t.reshape(-1) for t in saved.values()]), flat)
    from peft import set_peft_model_state_dict

    fresh = _tiny(seed=5)
    assert not torch.equal(Oracle(fresh, "classification").flat_params(), flat)
    set_peft_model_state_dict(fresh.peft, saved)
    assert torch.equal(Oracle(fresh, "classification").flat_params(), flat)


def test_unflatten_matches_module_forward():
    model = _tiny()
    oracle = Oracle(model, "classification")
    flat = _perturbed(oracle, 1)[0]
    x, _ = _tokens(1, 4)
    out = oracle.forward(flat, x[0])
    load_flat(model, flat)
    with torch.no_grad():
        assert torch.equal(out.detach(), model(x[0]))


def test_padding_does_not_change_logits_and_last_real_token_is_read():
    model = _tiny()
    x, _ = _tokens(1, 1, T=8, seed=3)
    seq = x[0, 0][x[0, 0] != PAD]
    with torch.no_grad():
        short = model(seq[None])
        padded = model(torch.cat([seq, torch.full((5,), PAD, dtype=seq.dtype)])[None])
        other_tail = model(torch.cat([seq[:-1], torch.tensor([(int(seq[-1]) % (VOCAB - 1)) + 1], dtype=seq.dtype)])[None])
    torch.testing.assert_close(padded, short, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(other_tail, short)                           # the last real token matters


def test_max_length_truncates_to_the_first_tokens():
    model = _tiny(max_length=5)
    x, _ = _tokens(1, 3, T=12, seed=4)
    x[0, :, :6] = torch.randint(1, VOCAB, (3, 6), dtype=x.dtype)           # no padding in the first 6 tokens
    with torch.no_grad():
        torch.testing.assert_close(model(x[0]), model(x[0, :, :5]))


def test_vmap_and_loop_agree_per_call_and_match_peft_backward():
    model = _tiny()
    oracle = Oracle(model, "classification")
    params = _perturbed(oracle, 3)
    x, y = _tokens(3, 5)
    oracle.mode = "vmap"
    lv, gv = oracle(params, x, y)
    oracle.mode = "loop"
    ll, gl = oracle(params, x, y)
    torch.testing.assert_close(lv, ll, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gv, gl, rtol=1e-4, atol=1e-6)
    assert float(gv.abs().sum()) > 0
    for c in range(3):                                       # the loop path is the PEFT module's own backward
        load_flat(model, params[c])
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x[c]), y[c]).backward()
        expected = torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.requires_grad])
        torch.testing.assert_close(gl[c], expected, rtol=1e-5, atol=1e-7)


def test_lora_targets_are_options_and_unknown_targets_are_refused():
    from fedlib.config import ConfigError

    only_attn = Oracle(_tiny(lora_targets=("c_attn",)), "classification")
    assert {n.split(".")[-4] for n in only_attn.names if "lora_" in n} == {"c_attn"}
    with pytest.raises(ConfigError, match=r"lora_targets=.*q_proj.*allowed: c_attn"):
        _tiny(lora_targets=("q_proj",))


def test_paper_state_ratio_is_the_papers_1_9_percent_without_download():
    """GPT-2 small on the meta device: r = 16 on all four projections, or r = 64 on c_attn, is 1.9 % of the base."""
    for kwargs in ({}, {"lora_rank": 64, "lora_targets": ("c_attn",)}):
        s = paper_state_size(num_labels=2, **kwargs)
        assert s["lora"] == 2_359_296 and s["head"] == 768 * 2
        assert s["frozen"] == 124_439_808 + 768 * 2 - 50257 * 768 + 50257 * 768     # base + PEFT's frozen head
        assert round(100 * s["lora"] / 124_439_808, 1) == 1.9
