"""The round loop: `Simulation(cfg)` holds all state of one run and `run_round()` advances it by one round.

A round, top to bottom (`run_round`): sample a cohort, its step counts and aggregation weights, gather the cohort's
rows of the per-client state, the algorithm's `client_begin`, the local steps (`local_work`: one minibatch per step,
its gradients through the oracle, masked for clients that finished their steps), `client_end`, scatter the rows back,
`server_update`, then the round's record (loss, consistency, communication), the divergence rule and the evaluation.
What a round calls follows it in this file: sampling and batching, communication bits, evaluation.

The Simulation's set-up is fedlib/engine/setup.py, its checkpoints fedlib/engine/checkpoint.py, its result record
fedlib/engine/record.py; `fedlib.engine.run` (fedlib/engine/driver.py) drives it to the end.
"""
from __future__ import annotations

import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from fedlib import cpu_path
from fedlib.algorithms import ALGORITHMS
from fedlib.algorithms.base import RoundContext
from fedlib.config import ConfigError, Resolved, RunConfig
from fedlib.data import load_dataset, prepare_batch
from fedlib.engine import checkpoint, output_size
from fedlib.engine.record import result as run_record
from fedlib.engine.resolution import pick_device, resolve
from fedlib.engine.setup import (
    DTYPES,
    cast_data,
    check_data,
    checked_init_state,
    client_index,
    colour_factors,
    fitted_model,
    partition_for,
)
from fedlib.engine.state import gather_rows, scatter_rows, state_home
from fedlib.gpu_options import apply_process
from fedlib.jsonio import json_safe
from fedlib.metrics import divergence_reason
from fedlib.oracle import Oracle, choose_mode
from fedlib.streams import StreamFeed


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


class Simulation:
    """All state of one federated run, advanced one round at a time."""

    def __init__(self, cfg: Resolved | RunConfig | dict, data=None):
        """Load, partition and build everything; every input that cannot run is refused here, before any compute
        (ConfigError for the configuration, DatasetUnavailable for missing or corrupt data files).

        `data`: a FedDataset to use instead of loading `cfg.dataset` (cost estimates time shape-identical stand-ins
        of datasets that are not on this machine)."""
        self.cfg: Resolved = resolve(cfg)
        cfg = self.cfg
        refused = cpu_path.refusal(cfg.cpu_path)
        if refused:
            raise ConfigError(refused)
        cpu_path.apply(cfg.cpu_path)
        self.device = pick_device(cfg.device)
        self.dtype = DTYPES[cfg.dtype]
        self.alg = ALGORITHMS[cfg.algorithm]
        data = data if data is not None else load_dataset(cfg.dataset, cfg.data_dir, seed=cfg.seed)
        self.data = cast_data(data, self.dtype).to(self.device)
        check_data(cfg, self.data)
        parts = partition_for(cfg, self.data)
        self.sizes, self.index = client_index(parts, self.device)     # [n] and [n, max size], padded rows
        self.colour = colour_factors(cfg, self.data, self.device)    # [n, 2] or None (train images only)

        torch.manual_seed(cfg.seed)
        model = fitted_model(cfg, self.data, self.device, self.dtype)
        apply_process(cfg, self.device)
        self.oracle = Oracle(model, self.data.task, chunk_size=cfg.chunk_size, autocast=cfg.autocast,
                             channels_last=cfg.channels_last, cuda_graph=cfg.cuda_graph, compile=cfg.compile)
        self.idle_s = 0.0           # time waited for runs this one is merged with (lockstep.py): not in wall_s
        # token streams (language models): sequential BPTT windows and carried per-client model state
        self.stream = (StreamFeed(self.data.x_train, parts, cfg.batch_size, cfg.bptt, model, cfg.seed,
                                  self.device)
                       if self.data.task == "language_model" else None)
        self.state_device = state_home(cfg.state_device, self.device)
        self.server, self.clients = checked_init_state(self.alg, self.oracle, cfg, self.device, self.state_device)
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
        record["wall_s"] = time.perf_counter() - start - self.idle_s
        self.idle_s = 0.0
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
                losses, grads, *state = self.gradients(points, _x, _y)   # stateful models: + next state
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

    def gradients(self, points: Tensor, x, y: Tensor):
        """The local steps' oracle call; fedlib/engine/lockstep.py replaces it per instance with a call merged with
        other runs'."""
        return self.oracle(points, x, y)

    # ------------------------------------------------------------------ what the round calls: sampling, batching, bits
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

    # ------------------------------------------------------------------ evaluation
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

    # ------------------------------------------------------------------ checkpoints (checkpoint.py)
    def state_dict(self) -> dict:
        return checkpoint.state_dict(self)

    def load_state_dict(self, state: dict) -> None:
        """Restore a state_dict of this configuration; ValueError naming the first mismatch otherwise."""
        checkpoint.load_state_dict(self, state)

    def save_checkpoint(self, path: Path) -> None:
        """Write the state atomically: a failed write leaves no partial file and keeps the previous checkpoint."""
        checkpoint.save_checkpoint(self, path)

    def load_checkpoint(self, path: Path) -> None:
        """Resume from `path`; OutputError in one line, naming the file and the fix, if it cannot be resumed."""
        checkpoint.load_checkpoint(self, path)

    # ------------------------------------------------------------------ what `run` writes (output_size.py)
    def largest_file(self) -> tuple[int, str]:
        """About the size of the largest file `run` writes, and which one."""
        return output_size.largest_file(self)

    def output_bytes(self) -> int:
        """About how much `run` writes under --out."""
        return output_size.output_bytes(self)

    # ------------------------------------------------------------------ the record (record.py)
    def result(self) -> dict:
        return run_record(self)
