"""The round loop: sample a cohort, run its local steps through the oracle, aggregate, evaluate, checkpoint.

`Simulation(cfg)` holds all state (server dict, per-client dict `[n, ...]`, seeded generators) and exposes
`run_round()`; `run(cfg, out_dir)` drives it to the end and returns (and writes) the result record.
"""
from __future__ import annotations

import json
import math
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

import fedlib
from fedlib import cpu_path
from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import RoundContext
from fedlib.algorithms.hparams import to_dict as hparams_to_dict
from fedlib.config import ConfigError, RunConfig
from fedlib.data import DATASETS, DatasetUnavailable, load_dataset, partition_dataset, prepare_batch
from fedlib.data.transforms import client_colour_factors
from fedlib.hostmem import reuse_freed_memory
from fedlib.jsonio import json_safe, write_atomic, write_json_atomic
from fedlib.metrics import DIVERGENCE_RULE, divergence_reason, summarize
from fedlib.models import MODELS, build_model, model_kwargs
from fedlib.oracle import AUTO_RULE, Oracle, auto_mode, choose_mode
from fedlib.outdir import OutputError, WriteFailed, check_targets, claimed
from fedlib.streams import StreamFeed

CHECKPOINT = "checkpoint.pt"
CHECKPOINT_FORMAT = "fedlib-checkpoint/1"
RESULT = "result.json"
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve(cfg: RunConfig | dict) -> RunConfig:
    """Validate and fill the 'auto'/None defaults that depend on the algorithm or dataset."""
    if isinstance(cfg, dict):
        cfg = RunConfig.from_dict(cfg)
    cfg.validate()
    changes: dict[str, Any] = {}
    if cfg.lr is None:
        changes["lr"] = ALGORITHMS[cfg.algorithm].lr_default
    if cfg.model == "auto":
        changes["model"] = DATASETS[cfg.dataset].default_model
    device = pick_device(cfg.device).type
    if cfg.device != device:                # cpu or cuda: the same configuration computes differently on each
        changes["device"] = device
    model = changes.get("model", cfg.model)
    if cfg.oracle == "auto":                # a fixed rule, never timing: the path is part of the fingerprint
        changes["oracle"] = auto_mode(device, MODELS[model].stacked)
    elif cfg.oracle == "stacked" and not MODELS[model].stacked:
        raise ConfigError(f"oracle=stacked needs a model with a stacked forward; model={model} has none; allowed: "
                          f"oracle in auto, vmap, loop, timed, or model in "
                          f"{', '.join(k for k, m in MODELS.items() if m.stacked)}")
    if cfg.cpu_path == "auto":              # this process's CPU math path (fedlib/cpu_path.py)
        changes["cpu_path"] = cpu_path.active()
    full = hparams_to_dict(cfg.hp)
    if full != cfg.hparams:
        changes["hparams"] = full           # every default of the algorithm's own hyperparameters, recorded
    options = hparams_to_dict(cfg.model_opts)
    if options != cfg.model_options:
        changes["model_options"] = options  # and of the model's own settings (e.g. LoRA rank)
    return cfg.replace(**changes) if changes else cfg


def partition_for(cfg: RunConfig, data) -> list[np.ndarray]:
    """The configuration's partition of `data`'s train split (each partitioner takes only the params it declares).

    A partition that cannot be satisfied is a ConfigError naming the partition and the partitioner's reason."""
    try:
        parts = partition_dataset(data, cfg.partition, cfg.n_clients, cfg.seed, alpha=cfg.alpha,
                                  classes_per_client=cfg.classes_per_client, similarity=cfg.similarity,
                                  min_client_size=cfg.min_client_size)
    except ValueError as exc:
        raise ConfigError(f"partition={cfg.partition} cannot be satisfied on dataset={cfg.dataset} "
                          f"({data.n_train} train samples): {exc}") from None
    if len(parts) != cfg.n_clients:
        raise ConfigError(f"partition={cfg.partition} produced {len(parts)} clients, expected n_clients="
                          f"{cfg.n_clients}")
    empty = [i for i, p in enumerate(parts) if len(p) == 0]
    if empty:
        raise ConfigError(f"partition={cfg.partition} leaves {len(empty)} of n_clients={cfg.n_clients} clients "
                          f"without data on dataset={cfg.dataset}; allowed: fewer clients or another partition")
    return parts


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but torch sees no CUDA GPU on this machine; allowed here: auto, cpu")
    return torch.device(name)


@contextmanager
def torch_threads(n: int):
    """Run the block with `n` torch intra-op threads (0 = leave torch's default), restoring the previous count."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def environment(device: torch.device, oracle_info: dict, cfg: RunConfig) -> dict:
    env = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
           "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
           "device": str(device), "threads": torch.get_num_threads(), "dtype": cfg.dtype,
           "cpu_path": cpu_path.describe(),
           "oracle": {**oracle_info, "rule": AUTO_RULE}}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def clip_by_norm(grads: Tensor, max_norm: float | None) -> Tensor:
    """Scale each client's gradient row to L2 norm <= max_norm (torch.nn.utils.clip_grad_norm_ per client)."""
    if max_norm is None:
        return grads
    norms = torch.linalg.vector_norm(grads, dim=1, keepdim=True)
    return grads * torch.clamp(max_norm / (norms + 1e-6), max=1.0)


def _merge_active(new: dict, old: dict, active: Tensor) -> dict:
    """Take `new` for clients still stepping and keep `old` for the rest (unequal local work is masked).

    Pure device work (no host read); the step loop skips it on steps every client takes (known on the host)."""
    out = {}
    for key, value in new.items():
        mask = active.view(-1, *([1] * (value.dim() - 1)))
        out[key] = torch.where(mask, value, old[key])
    return out


def _sq_dist(points: Tensor, center: Tensor) -> Tensor:
    """||points_c − center||² per row, with one [C, d] temporary (squared in place)."""
    diff = points - center
    return diff.pow_(2).sum(1)


def _all_finite(x: Tensor) -> bool:
    """isfinite(x).all() without its three d-sized temporaries: min and max are finite iff every entry is (NaN
    propagates through both)."""
    lo, hi = torch.aminmax(x)
    return math.isfinite(float(lo)) and math.isfinite(float(hi))


# ---------------------------------------------------------------------- where per-client state lives
def state_home(state_device: str, device: torch.device) -> torch.device:
    """Per-client [n, d] state lives on the compute device, or in host memory (`state_device=host`, for n·d that
    does not fit: ResNet-18 with n = 100 is 4.5 GB per state tensor); only the cohort's rows travel each round."""
    return torch.device("cpu") if state_device == "host" else device


def place_clients(clients: dict, home: torch.device, device: torch.device) -> dict:
    """Move per-client state to its home; host state next to a CUDA device is pinned (page-locked) memory."""
    out = {k: v.to(home) for k, v in clients.items()}
    if home.type == "cpu" and device.type == "cuda":
        out = {k: v.pin_memory() for k, v in out.items()}
    return out


def init_state(alg, x0: Tensor, cfg: RunConfig, device: torch.device, home: torch.device) -> tuple[dict, dict]:
    """The algorithm's initial server state (on the device) and per-client state (at its home), built at home so
    host-resident state never has to fit on the device."""
    server, clients = alg.init(x0.to(home), cfg.n_clients, cfg)
    return {k: v.to(device) for k, v in server.items()}, place_clients(clients, home, device)


def gather_rows(clients: dict, cohort: Tensor, device: torch.device) -> dict:
    """The cohort's rows of every per-client tensor, on the compute device."""
    out = {}
    for key, value in clients.items():
        rows = value[cohort.to(value.device)]
        out[key] = rows.to(device, non_blocking=rows.device != device)
    return out


def scatter_rows(clients: dict, cohort: Tensor, values: dict) -> None:
    """Write the cohort's new rows back into the per-client tensors, wherever they live."""
    for key, value in values.items():
        home = clients[key].device
        clients[key][cohort.to(home)] = value.to(home)


def _cast(data, dtype: torch.dtype):
    """The dataset with its floating tensors (tabular features, regression targets) in `dtype`; uint8 images and
    integer labels stay as they are (images are converted per batch by prepare_batch)."""
    if dtype == torch.float32:
        return data
    cast = {k: getattr(data, k).to(dtype) for k in ("x_train", "y_train", "x_test", "y_test")
            if getattr(data, k).is_floating_point()}
    return replace(data, **cast)


def _fitted_model(cfg: RunConfig, data, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """Build the model and check it maps one test input to the right output shape; ConfigError if it cannot."""
    want = (1, data.num_classes) if data.num_classes else (1,)
    where = f"model={cfg.model} on dataset={cfg.dataset} (input shape {tuple(data.input_shape)})"
    try:
        model = build_model(cfg.model, data.input_shape, data.num_classes, **model_kwargs(cfg, data))
        model = model.to(device=device, dtype=dtype)
        with torch.no_grad():
            if hasattr(model, "initial_state"):        # a stateful language model: ((tokens, state, masks)) -> logits
                out = model((data.x_test[:2].view(1, 2), model.initial_state(1), None))[0][:, -1]
            else:
                out = model(prepare_batch(data, data.x_test[:1], False, None, dtype=dtype))
    except (ConfigError, DatasetUnavailable):
        raise                                 # already one line (e.g. a text model on image data, weights offline)
    except (ValueError, RuntimeError, IndexError, TypeError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{where} cannot be built: {why}; allowed: a model that fits the input "
                          f"(the dataset's default: model=auto)") from None
    if tuple(out.shape) != want:
        raise ConfigError(f"{where} outputs shape {tuple(out.shape)[1:]} per sample, expected "
                          f"{want[1:]}; allowed: model=auto")
    return model


def _init_state(alg, oracle: Oracle, cfg: RunConfig, device: torch.device, home: torch.device
                ) -> tuple[dict, dict]:
    """init_state, refusing a per-client state that does not fit in memory in one line."""
    try:
        return init_state(alg, oracle.flat_params(), cfg, device, home)
    except (MemoryError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and "alloc" not in str(exc).lower() and "memory" not in str(exc).lower():
            raise
        raise ConfigError(f"the per-client state of algorithm={cfg.algorithm} for n_clients={cfg.n_clients} "
                          f"x d={oracle.d} parameters does not fit in memory; allowed: fewer clients or a smaller "
                          f"model") from None


class Simulation:
    """All state of one federated run, advanced one round at a time."""

    def __init__(self, cfg: RunConfig | dict, data=None):
        """Load, partition and build everything; every input that cannot run is refused here, before any compute
        (ConfigError for the configuration, DatasetUnavailable for missing or corrupt data files).

        `data`: a FedDataset to use instead of loading `cfg.dataset` (cost estimates time shape-identical stand-ins
        of datasets that are not on this machine)."""
        self.cfg = cfg = resolve(cfg)
        refused = cpu_path.refusal(cfg.cpu_path)
        if refused:
            raise ConfigError(refused)
        cpu_path.apply(cfg.cpu_path)
        self.device = pick_device(cfg.device)
        if self.device.type == "cpu":
            reuse_freed_memory()          # large flat-vector temporaries without page faults (fedlib/hostmem.py)
        self.dtype = DTYPES[cfg.dtype]
        self.alg = ALGORITHMS[cfg.algorithm]
        data = data if data is not None else load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
        self.data = _cast(data, self.dtype).to(self.device)
        if cfg.batch_size > self.data.n_train:
            raise ConfigError(f"batch_size={cfg.batch_size} is larger than dataset={cfg.dataset}'s "
                              f"{self.data.n_train} train samples; allowed: 1 <= batch_size <= {self.data.n_train}")
        if cfg.target_acc is not None and self.data.task != "classification":
            raise ConfigError(f"target_acc needs a classification dataset (test accuracy); dataset={cfg.dataset} is "
                              f"{self.data.task}; allowed: target_acc=null")
        if cfg.eval_local and self.data.task != "classification":
            raise ConfigError(f"eval_local=true needs a classification dataset; dataset={cfg.dataset} is "
                              f"{self.data.task}; allowed: eval_local=false")
        parts = partition_for(cfg, self.data)
        self.sizes = torch.tensor([len(p) for p in parts], dtype=torch.long, device=self.device)
        width = int(self.sizes.max())
        index = np.zeros((cfg.n_clients, width), dtype=np.int64)
        for i, p in enumerate(parts):
            index[i, : len(p)] = p
        self.index = torch.from_numpy(index).to(self.device)       # [n, max size], padded rows
        self.colour = self._colour_factors()                       # [n, 2] or None (train images only)

        torch.manual_seed(cfg.seed)
        model = _fitted_model(cfg, self.data, self.device, self.dtype)
        self.oracle = Oracle(model, self.data.task, chunk_size=cfg.chunk_size, autocast=cfg.autocast)
        # token streams (language models): sequential BPTT windows and carried per-client model state
        self.stream = (StreamFeed(self.data.x_train, parts, cfg.batch_size, cfg.bptt, model, cfg.seed,
                                  self.device)
                       if self.data.task == "language_model" else None)
        self.state_device = state_home(cfg.state_device, self.device)
        self.server, self.clients = _init_state(self.alg, self.oracle, cfg, self.device, self.state_device)
        self.cohort_gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 1)
        self.alg_gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + 2)
        self.batch_gen = torch.Generator(device=self.device).manual_seed(cfg.seed * 1_000_003 + 3)
        self.round = 0
        self.records: list[dict] = []
        self.status = "ok"
        self.divergence: str | None = None       # why the run stopped as diverged (DIVERGENCE_RULE)
        self.initial_loss: float | None = None   # mean minibatch loss of round 1's cohort at the initial model
        self.oracle_info: dict | None = None
        self.comm_per_round = float(self.alg.comm_vectors(cfg))
        # one pass over a client's data: the stream's windows, else ⌈smallest client / B⌉ minibatches
        self.epoch_steps = (self.stream.windows if self.stream is not None
                            else max(1, math.ceil(int(self.sizes.min()) / cfg.batch_size)))

    def _colour_factors(self) -> Tensor | None:
        cfg = self.cfg
        if cfg.color_jitter is None:
            return None
        if not self.data.is_image or self.data.input_shape[0] != 3:
            raise ConfigError(f"color_jitter={cfg.color_jitter} needs RGB images, but dataset={cfg.dataset} has input "
                              f"shape {list(self.data.input_shape)}; allowed: an RGB image dataset (cifar_shaped, "
                              f"cifar10, cifar100, svhn, tinyimagenet) or color_jitter=null")
        factors = client_colour_factors(cfg.n_clients, cfg.color_jitter, cfg.seed)
        return torch.from_numpy(factors).to(self.device, torch.float32)

    # ------------------------------------------------------------------ sampling
    def sample_cohort(self) -> Tensor:
        n, S = self.cfg.n_clients, self.cfg.clients_per_round
        if self.cfg.participation == "uniform":
            ids = torch.randperm(n, generator=self.cohort_gen)[:S]
        else:  # Bernoulli(S/n) per client, redrawn when empty (FL-Simulator)
            while True:
                ids = torch.nonzero(torch.rand(n, generator=self.cohort_gen) < S / n).flatten()
                if ids.numel():
                    break
        return torch.sort(ids).values.to(self.device)

    def local_steps(self, cohort: Tensor) -> Tensor:
        if self.cfg.local_epochs is None:
            return torch.full_like(cohort, self.cfg.local_steps)
        # K_i = ceil(E · n_i / B) in exact integers: E is the fraction its decimal spelling says (1.1 = 11/10), so
        # 1.1 epochs of 100 samples at B = 10 are 11 steps, not the 12 that float's 11.000000000000002 would give
        epochs = Fraction(repr(float(self.cfg.local_epochs)))
        num, den = epochs.numerator, epochs.denominator * self.cfg.batch_size
        sizes = self.sizes[cohort].long()
        return ((num * sizes + den - 1) // den).clamp(min=1)

    def batch_positions(self, cohort: Tensor) -> Tensor:
        """A fresh per-client permutation of its own data each round: [C, max size] positions."""
        sizes = self.sizes[cohort]
        width = self.index.shape[1]
        keys = torch.rand(cohort.numel(), width, generator=self.batch_gen, device=self.device)
        keys = keys + (torch.arange(width, device=self.device) >= sizes[:, None])  # padding sorts last
        return keys.argsort(dim=1)

    def batch(self, cohort: Tensor, perm: Tensor, k: int) -> tuple[Tensor, Tensor]:
        """Minibatch k of the round: positions k·B .. k·B+B-1 of each client's permutation (wrapping around)."""
        B = self.cfg.batch_size
        sizes = self.sizes[cohort]
        pos = (k * B + torch.arange(B, device=self.device))[None, :] % sizes[:, None]
        rows = torch.gather(perm, 1, pos)
        idx = torch.gather(self.index[cohort], 1, rows)                       # [C, B] dataset indices
        colour = None if self.colour is None else self.colour[cohort][:, None, :].expand(-1, B, -1)
        x = prepare_batch(self.data, self.data.x_train[idx], self.cfg.augment, self.batch_gen, colour=colour,
                          dtype=self.dtype)
        return x, self.data.y_train[idx]

    # ------------------------------------------------------------------ one round
    def run_round(self) -> dict:
        cfg, alg = self.cfg, self.alg
        start = time.perf_counter()
        self.round += 1
        cohort = self.sample_cohort()
        steps = self.local_steps(cohort)
        if cfg.aggregation == "size":           # weights in the run's dtype: 1/3 in float32 is off by 1e-8
            w = self.sizes[cohort].to(self.dtype)
        else:
            w = torch.ones(cohort.numel(), device=self.device, dtype=self.dtype)
        ctx = RoundContext(cfg=cfg, round=self.round, n=cfg.n_clients, cohort=cohort, steps=steps,
                           weights=w / w.sum(), generator=self.alg_gen, epoch_steps=self.epoch_steps)
        gathered = gather_rows(self.clients, cohort, self.device)
        local = alg.client_begin(self.server, gathered, ctx)
        local, loss_sum, loss_count = self.local_work(ctx, local, steps.tolist())
        upload, new_clients = alg.client_end(local, self.server, gathered, ctx)
        scatter_rows(self.clients, cohort, new_clients)
        self.server = alg.server_update(self.server, upload, ctx)
        # local consistency (FedMIM Fig. 2b): (1/|S|) Σ_i ||x_i,K − x̄||² with x̄ the plain mean of the cohort's local
        # models (the paper's definition), and against the server output x^(t+1) (FL-Simulator's; differs for
        # server-adaptive methods such as FedAdam and FedDyn)
        consistency = float(_sq_dist(local["x"], local["x"].mean(0)).mean())
        consistency_server = float(_sq_dist(local["x"], self.server["x"]).mean())

        train_loss = float(loss_sum) / max(loss_count, 1)
        record = {"round": self.round, "cohort_size": int(cohort.numel()), "train_loss": train_loss,
                  "test_loss": None, "test_acc": None, "consistency": consistency,
                  "consistency_server": consistency_server, "lr": ctx.lr,
                  "comm_vectors": self.comm_per_round * self.round, **self.count_bits()}
        self.divergence = divergence_reason(train_loss, _all_finite(self.server["x"]), self.initial_loss)
        if self.divergence is not None:
            self.status = "diverged"
        elif self.round % cfg.eval_every == 0 or self.round == cfg.rounds:
            record["test_loss"], record["test_acc"] = self.evaluate()
            if cfg.eval_local:
                record["local_test_acc"] = self.evaluate_local(cohort, local["x"])
        record["wall_s"] = time.perf_counter() - start
        record = json_safe(record)                      # non-finite numbers are recorded as None (strict JSON)
        self.records.append(record)
        return record

    def local_work(self, ctx: RoundContext, local: dict, steps: list[int]) -> tuple[dict, Tensor, int]:
        """The local-step loop of one round: no host synchronisation inside it.

        `steps` is ctx.steps read once as a list, so which steps every client takes (no masking), how many clients
        step, and the loop bound are known without reading the device; the training loss is summed on the device.
        Returns (local state, device sum of the first loss of every client step, its count)."""
        cfg, alg, cohort = self.cfg, self.alg, ctx.cohort
        perm = self.batch_positions(cohort) if self.stream is None else None
        every, active_count = min(steps), [sum(s > k for s in steps) for k in range(max(steps))]
        loss_sum = torch.zeros((), device=self.device)
        loss_count = 0
        for k in range(len(active_count)):
            x, y = self.batch(cohort, perm, k) if self.stream is None else self.stream.batch(cohort)
            if self.oracle_info is None:
                mode, self.oracle_info = choose_mode(cfg.oracle, self.oracle, local["x"], x, y)
                self.oracle.mode = mode
            first_loss: list[Tensor] = []
            first_state: list[Tensor] = []

            def grad_fn(points: Tensor, _x=x, _y=y) -> tuple[Tensor, Tensor]:
                losses, grads, *state = self.oracle(points, _x, _y)      # stateful models: + next state
                if not first_loss:
                    first_loss.append(losses)
                    first_state.extend(state)
                return losses, clip_by_norm(grads, cfg.clip_norm)

            active = ctx.active(k)
            new = alg.client_step(local, grad_fn, self.server, ctx, k)
            local = new if k < every else _merge_active(new, local, active)
            if self.stream is not None:
                self.stream.advance(cohort, active, first_state[0])
            if first_loss:
                loss_sum = loss_sum + (first_loss[0] * active).sum()
                loss_count += active_count[k]
                if self.initial_loss is None:           # round 1, step 0: every client is at the initial model
                    self.initial_loss = float(first_loss[0].mean())   # one host sync per run
        return local, loss_sum, loss_count

    def count_bits(self) -> dict:
        """Cumulative bits per participating client after this round: total, and uplink/downlink when the algorithm
        states them (`round_bits`); otherwise every vector is a dense float32 d-vector."""
        if self.alg.round_bits is None:
            return {"comm_bits": self.comm_per_round * self.round * self.oracle.d * 32}
        bits = self.alg.round_bits(self.cfg, self.oracle.d, self.round)
        prev = self.records[-1] if self.records else {"uplink_bits": 0, "downlink_bits": 0}
        up = prev["uplink_bits"] + bits["up"]
        down = prev["downlink_bits"] + bits["down"]
        return {"comm_bits": up + down, "uplink_bits": up, "downlink_bits": down}

    def _colour_record(self) -> dict:
        """The colour perturbation's configured and drawn factor ranges (absent when it is off)."""
        if self.colour is None:
            return {}
        s, f = self.cfg.color_jitter, self.colour.cpu()
        return {"color_perturbation": {"range": [1.0 - s, 1.0 + s], "applies_to": "train images (per client)",
                                       "brightness": [float(f[:, 0].min()), float(f[:, 0].max())],
                                       "saturation": [float(f[:, 1].min()), float(f[:, 1].max())]}}

    def evaluate(self) -> tuple[float, float | None]:
        if self.stream is not None:
            return self.stream.evaluate(self.oracle, self.server["x"], self.data.x_test)
        prep = lambda xb: prepare_batch(self.data, xb, False, None, dtype=self.dtype)  # noqa: E731
        return self.oracle.evaluate(self.server["x"], self.data.x_test, self.data.y_test, prep,
                                    self.cfg.eval_batch_size)

    def evaluate_local(self, cohort: Tensor, local_x: Tensor) -> float:
        """Pooled accuracy of every cohort client's end-of-round local model (before aggregation) on its own
        contiguous 1/n shard of the test set: total correct / total count (the FAFED authors' test metric)."""
        prep = lambda xb: prepare_batch(self.data, xb, False, None, dtype=self.dtype)  # noqa: E731
        shards = np.array_split(np.arange(self.data.x_test.shape[0]), self.cfg.n_clients)
        correct, count = 0, 0
        for row, client in enumerate(cohort.tolist()):
            idx = torch.from_numpy(shards[client]).to(self.device)
            _, acc = self.oracle.evaluate(local_x[row], self.data.x_test[idx], self.data.y_test[idx], prep,
                                          self.cfg.eval_batch_size)
            correct += round(acc * len(idx))
            count += len(idx)
        return correct / max(count, 1)

    @property
    def finished(self) -> bool:
        if self.status != "ok" or self.round >= self.cfg.rounds:
            return True
        if self.cfg.stop_at_target and self.records:
            acc = self.records[-1]["test_acc"]
            return acc is not None and acc >= self.cfg.target_acc
        return False

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict:
        return {"format": CHECKPOINT_FORMAT, "fingerprint": self.cfg.fingerprint(), "round": self.round,
                "records": self.records, "status": self.status, "divergence": self.divergence,
                "initial_loss": self.initial_loss, "server": self.server, "clients": self.clients,
                "cohort_gen": self.cohort_gen.get_state(), "alg_gen": self.alg_gen.get_state(),
                "batch_gen": self.batch_gen.get_state(), "oracle_info": self.oracle_info,
                "stream": self.stream.state_dict() if self.stream is not None else None}

    def load_state_dict(self, state: dict) -> None:
        """Restore a state_dict of this configuration; ValueError naming the first mismatch otherwise."""
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"not a {CHECKPOINT_FORMAT} state")
        if state.get("fingerprint") != self.cfg.fingerprint():
            raise ValueError(f"it belongs to another configuration (fingerprint {state.get('fingerprint')}, this "
                             f"run's is {self.cfg.fingerprint()})")
        for name, mine in (("server", self.server), ("clients", self.clients)):
            theirs = state.get(name)
            if not isinstance(theirs, dict) or set(theirs) != set(mine) or any(
                    not isinstance(theirs[k], Tensor) or theirs[k].shape != v.shape or theirs[k].dtype != v.dtype
                    for k, v in mine.items()):
                raise ValueError(f"its {name} state does not match this configuration's")
        _check_progress(state, self.cfg.rounds)
        self.round, self.records, self.status = int(state["round"]), list(state["records"]), state["status"]
        self.divergence, self.initial_loss = state["divergence"], state["initial_loss"]
        self.server = {k: v.to(self.device) for k, v in state["server"].items()}
        self.clients = place_clients(state["clients"], self.state_device, self.device)
        self.cohort_gen.set_state(state["cohort_gen"])
        self.alg_gen.set_state(state["alg_gen"])
        self.batch_gen.set_state(state["batch_gen"])
        self.oracle_info = state["oracle_info"]
        if self.stream is not None:
            self.stream.load_state_dict(state["stream"])
        if self.oracle_info is not None:
            self.oracle.mode = self.oracle_info["mode"]

    def save_checkpoint(self, path: Path) -> None:
        """Write the state atomically (unique temporary name, then rename): a failed write leaves no partial file
        and keeps the previous checkpoint."""
        state = self.state_dict()
        write_atomic(path, lambda fh: torch.save(state, fh))

    def load_checkpoint(self, path: Path) -> None:
        """Resume from `path` (loaded with weights_only=True: tensors and plain data, never pickled code).
        OutputError in one line, naming the file and the fix, if it cannot be resumed."""
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            self.load_state_dict(state)
        except Exception as exc:  # noqa: BLE001 -- truncated, empty, foreign or tampered: one clear refusal
            why = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            raise OutputError(f"cannot resume from {path}: {why}; move it aside (or pass --force) to start this "
                              f"run afresh") from None

    def largest_file(self) -> tuple[int, str]:
        """About the size of the largest file `run` writes, and which one (checked against the file-size limit before
        round 1): a checkpoint holds every state tensor; result.json is the record without rounds + ~256 B a round."""
        rounds = 1 if self.cfg.stop_at_target else self.cfg.rounds
        record = len(json.dumps(self.result(), indent=1)) + 256 * rounds
        state = sum(v.numel() * v.element_size() for d in (self.server, self.clients) for v in d.values())
        if self.cfg.checkpoint_every and self.cfg.checkpoint_every <= self.cfg.rounds and state > record:
            return state, CHECKPOINT
        return record, f"{RESULT} ({rounds} round(s))"

    def output_bytes(self) -> int:
        """About how much `run` writes under --out: two checkpoints (old + temporary) and the result record."""
        state = sum(v.numel() * v.element_size() for d in (self.server, self.clients) for v in d.values())
        ckpt = 2 * (state + 1024 * self.cfg.rounds) if self.cfg.checkpoint_every else 0
        return ckpt + 2048 * self.cfg.rounds + 64 * self.cfg.n_clients + 2**16

    # ------------------------------------------------------------------ the record
    def result(self) -> dict:
        cfg = self.cfg
        summary = summarize(self.records, self.status, cfg.target_acc, cfg.rounds)
        summary["divergence"] = {"rule": DIVERGENCE_RULE, "reason": self.divergence,
                                 "initial_loss": self.initial_loss}
        return json_safe({
            "fedlib_version": fedlib.__version__,
            "config": cfg.to_dict(),
            "fingerprint": cfg.fingerprint(),
            "environment": environment(self.device, self.oracle_info or {}, cfg),
            "model": {"name": cfg.model, "num_params": self.oracle.d, "frozen_params": self.oracle.frozen},
            "dataset": {"name": cfg.dataset, "source": self.data.source, "n_train": int(self.data.x_train.shape[0]),
                        "n_test": int(self.data.x_test.shape[0]), "num_classes": self.data.num_classes},
            "partition": {"name": cfg.partition, "client_sizes": self.sizes.tolist()},
            **self._colour_record(),
            "comm": {"vectors_per_round": self.comm_per_round, "bits_per_vector": 32 * self.oracle.d},
            "rounds": self.records,
            "summary": summary,
        })


def _check_progress(state: dict, rounds: int) -> None:
    """A checkpoint's round counter and round records must agree (one record per round, numbered 1..round, with
    the fields the summary reads): a tampered or mismatched pair is refused, not fed to the metrics."""
    t, records = state.get("round"), state.get("records")
    if not (isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= rounds):
        raise ValueError(f"its round {t!r} is not a round of this run (0..{rounds})")
    if not (isinstance(records, list) and len(records) == t):
        raise ValueError(f"it holds {len(records) if isinstance(records, list) else type(records).__name__} round "
                         f"records for round {t}")
    for i, rec in enumerate(records, 1):
        if not (isinstance(rec, dict) and rec.get("round") == i
                and all(k in rec and isinstance(rec[k], (int, float, type(None))) and not isinstance(rec[k], bool)
                        for k in ("train_loss", "test_loss", "test_acc", "comm_vectors", "comm_bits", "wall_s"))):
            raise ValueError(f"its round record {i} is malformed")
    if state.get("status") not in ("ok", "diverged"):
        raise ValueError(f"its status {state.get('status')!r} is neither 'ok' nor 'diverged'")
    loss = state.get("initial_loss")
    if not (loss is None or isinstance(loss, float)):
        raise ValueError(f"its initial loss {loss!r} is not a number")


def _progress(sim: Simulation, initial: int):
    from tqdm.auto import tqdm

    quiet = not (sim.cfg.progress and sys.stderr.isatty())
    return tqdm(total=sim.cfg.rounds, initial=initial, disable=quiet, desc=f"{sim.cfg.algorithm}/{sim.cfg.dataset}",
                unit="round", leave=False)


def _drive(sim: Simulation, ckpt: Path | None, stop_after: int | None) -> None:
    """Run rounds until the simulation is finished (or `stop_after`), checkpointing every checkpoint_every rounds."""
    bar = _progress(sim, sim.round)
    try:
        while not sim.finished:
            rec = sim.run_round()
            bar.update(1)
            if rec["test_acc"] is not None:
                bar.set_postfix(acc=f"{rec['test_acc']:.3f}", loss=f"{rec['train_loss']:.3f}")
            if ckpt is not None and sim.cfg.checkpoint_every and sim.round % sim.cfg.checkpoint_every == 0:
                try:
                    sim.save_checkpoint(ckpt)
                except OSError as exc:
                    raise WriteFailed(f"cannot write checkpoint {ckpt} after round {sim.round} "
                                      f"({exc.strerror or exc}); no partial file was left and the previous "
                                      f"checkpoint is intact: free space, then run the same command to resume"
                                      ) from None
            if stop_after is not None and sim.round >= stop_after:
                return
    finally:
        bar.close()


def run(cfg: RunConfig | dict, out_dir: str | Path | None = None, *, stop_after: int | None = None,
        force: bool = False) -> dict:
    """Run one configuration to the end and return its result record.

    With `out_dir`, the record is written to `out_dir/result.json` (atomically) and, when `checkpoint_every > 0`,
    a checkpoint every N rounds; an existing checkpoint for the same configuration is resumed exactly.
    Everything that can be refused is refused before round 1, in one line, with nothing left under `out_dir`:
    the configuration, the data and the model (`Simulation`), then the directory (`fedlib.outdir.claimed`: another
    run holds it, unwritable, too little space), an existing result.json, a checkpoint that cannot be resumed.
    `force=True` ignores an existing result.json and checkpoint and starts afresh (they are replaced as the new
    run writes). `stop_after` ends the run early after that round (used to test kill-and-resume); the record is
    returned but not written.
    """
    cfg = resolve(cfg)
    with torch_threads(cfg.threads):
        sim = Simulation(cfg)
        if out_dir is None:
            _drive(sim, None, stop_after)
            return sim.result()
        with claimed(out_dir, sim.output_bytes(), sim.largest_file()) as out:
            ckpt = out / CHECKPOINT
            check_targets(out, [RESULT, CHECKPOINT] if cfg.checkpoint_every else [RESULT])
            if not force and (out / RESULT).exists():
                raise OutputError(f"{out / RESULT} exists; pass --force to overwrite it, or choose another --out")
            if not force and ckpt.exists():
                sim.load_checkpoint(ckpt)
            _drive(sim, ckpt, stop_after)
            result = sim.result()
            if stop_after is not None and sim.round >= stop_after:
                return result
            try:
                write_json_atomic(out / RESULT, result)
            except OSError as exc:
                kept = f"; the checkpoint {ckpt} is kept" if ckpt.exists() else ""
                raise WriteFailed(f"cannot write {out / RESULT} ({exc.strerror or exc}){kept}") from None
            ckpt.unlink(missing_ok=True)
            return result
