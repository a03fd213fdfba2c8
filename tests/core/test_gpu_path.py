"""The GPU path, checked on CPU: no host sync in the local-step loop, chunked vmap, autocast, host-resident state,
device-side evaluation sums. (The timings themselves need a GPU: bench/engine_overhead.py --preset flsim|pfl.)"""
from __future__ import annotations

import contextlib

import pytest
import torch

from fedlib import elementwise
from fedlib.engine import Simulation, run
from fedlib.models import build_model
from fedlib.oracle import Oracle

DIGITS = {"dataset": "digits", "model": "cnn", "n_clients": 10, "clients_per_round": 4, "local_steps": 3,
          "batch_size": 8, "rounds": 2, "device": "cpu", "oracle": "loop", "progress": False}

#: Tensor methods that read a device value back to the host (each one is a GPU sync on CUDA)
HOST_READS = ("item", "tolist", "numpy", "cpu", "nonzero", "__bool__", "__int__", "__float__", "__index__")


@contextlib.contextmanager
def count_host_reads():
    """Count every call of HOST_READS on any tensor while the block runs."""
    calls: list[str] = []
    saved = {name: getattr(torch.Tensor, name) for name in HOST_READS}

    def counting(name, fn):
        def wrapper(self, *args, **kwargs):
            calls.append(name)
            return fn(self, *args, **kwargs)
        return wrapper

    for name, fn in saved.items():
        setattr(torch.Tensor, name, counting(name, fn))
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)


def _counted_local_work(sim: Simulation) -> list[list[str]]:
    """Run two rounds, recording the host reads made inside each round's local-step loop."""
    seen = []
    inner = sim.local_work

    def wrapped(*args, **kwargs):
        with count_host_reads() as calls:
            out = inner(*args, **kwargs)
        seen.append(list(calls))
        return out

    sim.local_work = wrapped
    sim.run_round()
    sim.run_round()
    return seen


@pytest.mark.parametrize("overrides", [
    {"algorithm": "fedavg"},
    {"algorithm": "fadamgt", "augment": True, "clip_norm": 1.0},
    {"algorithm": "scaffold", "local_epochs": 1.0, "batch_size": 32, "oracle": "vmap"},   # unequal steps: masking
])
def test_the_local_step_loop_reads_nothing_back_from_the_device(overrides, monkeypatch):
    # fedlib.elementwise.sqrt views a CPU tensor's own memory through numpy (no transfer); on a GPU it is torch.sqrt,
    # which is what this CPU stand-in for the GPU path must run
    monkeypatch.setattr(elementwise, "sqrt", torch.sqrt)
    sim = Simulation({**DIGITS, **overrides})
    sim.run_round()                           # first round: the oracle path choice may time things
    seen = _counted_local_work(sim)
    assert seen == [[], []]


def test_the_counting_hook_sees_a_host_read():
    with count_host_reads() as calls:
        bool(torch.ones(2).all())
        int(torch.ones(2).sum())
    assert calls == ["__bool__", "__int__"]


def test_masked_rounds_keep_the_loss_count_of_the_active_clients():
    sim = Simulation({**DIGITS, "algorithm": "fedavg", "local_epochs": 1.0, "batch_size": 32})
    cohort = sim.sample_cohort()
    steps = sim.local_steps(cohort)
    from fedlib.algorithms.base import RoundContext

    ctx = RoundContext(cfg=sim.cfg, round=1, n=10, cohort=cohort, steps=steps,
                       weights=torch.full((cohort.numel(),), 1 / cohort.numel()), generator=sim.alg_gen)
    local = sim.alg.client_begin(sim.server, {}, ctx)
    _, loss_sum, count = sim.local_work(ctx, local, steps.tolist())
    assert count == int(steps.sum()) and len(set(steps.tolist())) > 1
    assert torch.isfinite(loss_sum)


def _oracle(mode="vmap", **kw):
    torch.manual_seed(0)
    model = build_model("cnn", (3, 16, 16), 10)
    return Oracle(model, "classification", mode, **kw)


def _cohort_batch(oracle, C=5, B=4):
    g = torch.Generator().manual_seed(1)
    params = oracle.flat_params().expand(C, -1) + 0.01 * torch.randn(C, oracle.d, generator=g)
    x = torch.randn(C, B, 3, 16, 16, generator=g)
    y = torch.randint(0, 10, (C, B), generator=g)
    return params, x, y


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_chunked_vmap_equals_unchunked(chunk):
    full = _oracle()
    params, x, y = _cohort_batch(full)
    loss0, grad0 = full(params, x, y)
    loss1, grad1 = _oracle(chunk_size=chunk)(params, x, y)
    # A vmapped call over fewer clients may take other kernels (another blocking of the batched matmul), which sum
    # in another order: equal to float32 round-off, not bit for bit (one ulp of a loss near 2.3 is 2.4e-7 on hosts
    # whose kernels differ). rtol 1e-6 is about 8 ulps; a wrong chunk (other clients' data) is off by O(1).
    torch.testing.assert_close(loss1, loss0, rtol=1e-6, atol=0)
    torch.testing.assert_close(grad1, grad0, rtol=1e-6, atol=1e-7)


def test_loop_gradients_written_in_place_equal_per_client_autograd():
    oracle = _oracle("loop")
    params, x, y = _cohort_batch(oracle, C=3)
    losses, grads = oracle(params, x, y)
    for c in range(3):
        p = params[c].detach().requires_grad_(True)
        loss = oracle._loss_one(p, x[c], y[c])
        (g,) = torch.autograd.grad(loss, p)
        assert torch.equal(grads[c], g) and float(losses[c]) == float(loss.detach())


def test_bf16_autocast_keeps_float32_state_and_close_numbers():
    params, x, y = _cohort_batch(_oracle())
    loss32, grad32 = _oracle()(params, x, y)
    loss16, grad16 = _oracle(autocast="bf16")(params, x, y)
    assert grad16.dtype == torch.float32 and loss16.dtype == torch.float32
    assert not torch.equal(grad16, grad32)                 # bf16 compute really happened
    torch.testing.assert_close(loss16, loss32, rtol=2e-2, atol=2e-2)
    cos = torch.nn.functional.cosine_similarity(grad16, grad32, dim=1)
    assert float(cos.min()) > 0.99
    rec = run({**DIGITS, "algorithm": "fedavg", "autocast": "bf16", "rounds": 2})
    assert rec["summary"]["status"] == "ok" and rec["config"]["autocast"] == "bf16"


def test_autocast_and_chunk_are_in_the_fingerprint_and_state_placement_is_not():
    from fedlib.config import RunConfig

    base = RunConfig.from_dict({"algorithm": "fedavg"})
    # a vmapped call over fewer clients may take other kernels (one ulp apart): chunked runs get their own cache key
    assert base.replace(chunk_size=2).fingerprint() != base.fingerprint()
    assert base.replace(state_device="host").fingerprint() == base.fingerprint()
    assert base.replace(autocast="bf16").fingerprint() != base.fingerprint()
    assert base.semantic_dict()["autocast"] == "off"


def test_host_resident_client_state_gives_the_same_run():
    cfg = {**DIGITS, "algorithm": "fadamgt", "rounds": 3}
    on_device = Simulation(cfg)
    on_host = Simulation({**cfg, "state_device": "host"})
    for _ in range(3):
        a, b = on_device.run_round(), on_host.run_round()
        assert a["train_loss"] == b["train_loss"] and a["test_acc"] == b["test_acc"]
    assert all(v.device.type == "cpu" for v in on_host.clients.values())
    for key in on_device.clients:
        assert torch.equal(on_device.clients[key], on_host.clients[key])


def test_gather_and_scatter_move_exactly_the_cohort_rows():
    from fedlib.engine import gather_rows, scatter_rows

    clients = {"y": torch.arange(15.0).view(5, 3)}
    cohort = torch.tensor([3, 1])
    got = gather_rows(clients, cohort, torch.device("cpu"))
    assert got["y"].tolist() == [[9.0, 10.0, 11.0], [3.0, 4.0, 5.0]]
    scatter_rows(clients, cohort, {"y": -got["y"]})
    assert clients["y"][:, 0].tolist() == [0.0, -3.0, 6.0, -9.0, 12.0]


def test_device_side_evaluation_equals_the_python_float_sum():
    sim = Simulation({**DIGITS, "algorithm": "fedavg", "eval_batch_size": 50})
    prep = lambda xb: sim.data.prepare(xb)  # noqa: E731
    loss, acc = sim.oracle.evaluate(sim.server["x"], sim.data.x_test, sim.data.y_test, prep, 50)
    total, correct = 0.0, 0
    params = sim.oracle.unflatten(sim.server["x"])
    with torch.no_grad():
        for s in range(0, 360, 50):
            out = torch.func.functional_call(sim.oracle.model, params, (prep(sim.data.x_test[s:s + 50]),))
            yb = sim.data.y_test[s:s + 50]
            total += float(sim.oracle.loss(out, yb)) * yb.shape[0]
            correct += int((out.argmax(-1) == yb).sum())
    assert loss == total / 360 and acc == correct / 360


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("oracle,model", [("vmap", "cnn"), ("stacked", "mlp_small")])
def test_cuda_local_step_loop_never_synchronises(oracle, model):
    sim = Simulation({**DIGITS, "algorithm": "fadamgt", "device": "cuda", "oracle": oracle, "model": model,
                      "augment": True})
    sim.run_round()                                   # round 1 reads the initial loss once (by design)
    inner = sim.local_work

    def strict(*args, **kwargs):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return inner(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    sim.local_work = strict
    sim.run_round()
    assert sim.oracle.mode == oracle


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="glibc malloc tuning is Linux-only")
@pytest.mark.slow
def test_freed_host_memory_is_kept_for_reuse_not_unmapped():
    """Where a 50 MB temporary (a flat-vector update) comes from, in a fresh process, read from glibc's own
    bookkeeping (mallinfo2), which no other process can move (page-fault counts can: the kernel reclaims pages under
    memory pressure). With glibc's defaults the block is mmapped while it lives and unmapped when freed; after
    reuse_freed_memory() it comes from the heap, and once freed it stays there for the next one."""
    import subprocess
    import sys

    code = ("import ctypes, torch\n"
            "from fedlib.hostmem import reuse_freed_memory\n"
            "class MI(ctypes.Structure):\n"
            "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', "
            "'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
            "libc = ctypes.CDLL('libc.so.6'); libc.mallinfo2.restype = MI\n"
            "def where():\n"
            "    x = torch.empty(12_500_000).fill_(1.0); live = libc.mallinfo2().hblkhd\n"
            "    del x; return live, libc.mallinfo2().fordblks\n"
            "print(*where(), reuse_freed_memory(), *where(), *where())\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "FEDLIB_HOST_MALLOC"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    mapped, freed_kept, applied, mapped2, kept2, mapped3, kept3 = out.split()
    block = 50_000_000
    assert int(mapped) >= block and int(freed_kept) < block        # glibc's default: mmapped, unmapped on free
    assert applied == "True"
    assert int(mapped2) < block and int(kept2) >= block            # from the heap, and kept once freed
    assert int(mapped3) < block and int(kept3) >= block            # and the next one reuses it
