"""FAdamET and FAdamGT: federated Adam with parameter tracking (docs/papers/fadamgt.md §1.2–1.5, Algorithm 1).

Shared skeleton (state for ALL n clients: y_i and v_i [n, d]; server: x, y):
  round t:  S^t (engine), Y^t ⊆ S^t uniform without replacement, |Y^t| = min(Y, |S^t|), from ctx.generator
  every i ∈ S^t starts at x^(t) with m = 0, v = v_i, v̂ per A1, and a constant correction y^(t) − y_i^(t)
    ET  (estimate tracking): moments see the raw g; x ← x − η_l (Δ + y − y_i)                (lines 11, 17)
    GT  (gradient tracking): ĝ = g + y − y_i feeds BOTH moments; x ← x − η_l Δ               (lines 12, 18)
  after K_i = ctx.steps[c] steps, only i ∈ Y^t update y_i:
    ET  y_i ← y_i − y + (x^(t) − x_i^(t,K_i+1)) / (K_i η_l)        (= mean Δ of the round when wd = 0)  (line 21)
    GT  y_i ← (1/K_i) Σ_k g_i^(t,k), raw (uncorrected) minibatch gradients along the trajectory       (line 22)
  every i ∈ S^t persists v_i (line 24, A1 variant); clients outside S^t are untouched.
  server: x ← x + η_g Σ_c w_c (x_c − x)        (w = ctx.weights, uniform 1/S by default: the paper's η_g/S)
          y ← y + (1/n) Σ_{i∈Y^t} (y_i⁺ − y_i)   (1/n, no η_g: keeps y = mean_i y_i, test T4)

"Raw gradient" includes the coupled L2 term wd·x when wd_mode = "coupled" (A8). With tracking_size = 0 both
methods reduce bit-for-bit to LocalAdam (test T6): the correction is 0 and Y^t = ∅ (no random draw is made).
Communication per participating client per round: x↓, y↓, Δx↑ from all of S^t, Δy↑ from Y^t only = 3 + Y/S.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from fedlib.algorithms import adam
from fedlib.algorithms.base import AlgorithmSpec, server_model_step, weighted_mean
from fedlib.errors import ConfigError
from fedlib.hparams import hp, one_of

TRACKING_INITS = ("zeros",)


def _size_or_none(name: str, v) -> None:
    if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        raise ConfigError(f"{name}={v!r} must be a whole number >= 0, or null for S // 2")


@dataclass(frozen=True)
class TrackingHParams(adam.PaperAdamHParams):
    tracking_size: int | None = hp(None, _size_or_none, "Y, the clients of S^t that update their tracking term "
                                                        "(0 <= Y <= S); null: S // 2 (the paper's Table 1)")
    tracking_init: str = hp("zeros", one_of("zeros", "warm"), "y_i at round 1 (A3): zeros; warm is the paper's "
                                                              "other option, which cannot run (it is refused)")


def subset_size(cfg) -> int:
    """Y: the tracking subset's size (S // 2 unless tracking_size is set). A configuration of another algorithm
    (communication tables price several methods from one run's S) has no tracking_size: S // 2, the paper's."""
    size = getattr(cfg.hp, "tracking_size", None)
    return cfg.clients_per_round // 2 if size is None else size


def check(cfg) -> None:
    """What the hyperparameters cannot check alone: Y within the cohort size, and no warm start (A3)."""
    size = cfg.hp.tracking_size
    if size is not None and size > cfg.clients_per_round:
        raise ConfigError(f"tracking_size={size} is out of range; allowed: 0 <= tracking_size <= clients_per_round "
                          f"({cfg.clients_per_round})")
    if cfg.hp.tracking_init == "warm":
        raise ConfigError("tracking_init=warm needs every client's gradient at x^(1) before round 1, which the "
                          "paper does not define (A3 in docs/papers/fadamgt.md); allowed: zeros")


def tracking_factor(ctx) -> float:
    """The factor of the tracking aggregation y += factor · Σ_{i∈Y^t} Δy_i (Alg. 1 line 29): 1/n."""
    return 1.0 / ctx.n


def tracking_count(ctx) -> int:
    """|Y^t| = min(Y, |S^t|) (S^t can be smaller than S under Bernoulli participation)."""
    return max(0, min(subset_size(ctx.cfg), ctx.size))


def sample_tracking_subset(ctx, device) -> torch.Tensor:
    """BoolTensor [C]: membership of each cohort client in Y^t, uniform without replacement inside S^t."""
    C, Y = ctx.size, tracking_count(ctx)
    mask = torch.zeros(C, dtype=torch.bool)
    if Y == C:
        mask[:] = True
    elif Y > 0:
        mask[torch.randperm(C, generator=ctx.generator)[:Y]] = True
    return mask.to(device)


# ---- the two methods: functions of `kind` ("et" or "gt"), bound with functools.partial below ------------------
# (plain module-level functions rather than closures built at import time, so every line runs when the algorithm
# runs: mutation testing, scripts/mutants.sh, can only test code that executes after the module is imported)

def init(kind, x0, n, cfg):
    cfg = adam.config_of(cfg)
    init_mode = cfg.hp.tracking_init
    if init_mode not in TRACKING_INITS:
        raise ConfigError(
            f"tracking_init={init_mode!r} is not supported by fadam{kind}: a warm start needs every client's "
            f"gradient at x^(1) before round 1, which the paper does not define (A3 in docs/papers/fadamgt.md) and "
            f"the algorithm protocol cannot compute at init; allowed: {', '.join(TRACKING_INITS)}")
    server = {"x": x0.clone(), "y": torch.zeros_like(x0)}
    clients = {"y": torch.zeros(n, x0.numel(), dtype=x0.dtype, device=x0.device),
               **adam.init_client_moments(n, x0, cfg)}
    return server, clients


def client_begin(kind, server, clients, ctx):
    C = ctx.size
    local = {"x": server["x"].unsqueeze(0).expand(C, -1).clone(),
             "corr": server["y"].unsqueeze(0) - clients["y"],        # y^(t) − y_i^(t), constant this round
             **adam.begin_moments(clients["v"], clients, ctx.cfg)}
    if kind == "gt":
        local["gsum"] = torch.zeros_like(local["x"])                 # Σ_k raw g_i^(t,k)
    return local


def client_step(kind, local, grad_fn, server, ctx, k):
    cfg = ctx.cfg
    x = local["x"]
    _, grad = grad_fn(x)
    g = adam.coupled_grad(grad, x, cfg)
    out = dict(local)
    if kind == "gt":
        g_hat = g + local["corr"]
        out["gsum"] = local["gsum"] + g
    else:
        g_hat = g
    m, v, vhat, delta = adam.adam_update(local["m"], local["v"], local["vhat"], g_hat, cfg)
    step_dir = delta + local["corr"] if kind == "et" else delta
    out.update(x=adam.apply_step(x, step_dir, ctx.lr, cfg), m=m, v=v, vhat=vhat)
    return out


def client_end(kind, local, server, clients, ctx):
    x = local["x"]
    tracked = sample_tracking_subset(ctx, x.device) & (ctx.steps > 0)
    steps = ctx.steps.clamp(min=1).to(x.dtype).unsqueeze(1)
    if kind == "et":
        y_round = clients["y"] - server["y"].unsqueeze(0) + (server["x"] - x) / (steps * ctx.lr)
    else:
        y_round = local["gsum"] / steps
    y_new = torch.where(tracked.unsqueeze(1), y_round, clients["y"])
    upload = {"dx": x - server["x"], "dy": y_new - clients["y"], "tracked": tracked}
    return upload, {"y": y_new, **adam.end_moments(local, ctx.cfg)}


def server_update(server, upload, ctx):
    new = dict(server)
    new["x"] = server_model_step(server, weighted_mean(upload["dx"], ctx.weights), ctx.cfg.server_lr)
    new["y"] = server["y"] + tracking_factor(ctx) * upload["dy"].sum(0)
    return new


def tracking_vectors(Y: int, S: int) -> float:
    """FAdamET/GT: x↓ and y↓ to all S, Δx↑ from all S, Δy↑ from the Y tracked clients: 3 + Y/S per client."""
    if S <= 0:
        raise ValueError(f"clients_per_round={S} must be >= 1")
    return 3.0 + Y / S


def comm_vectors(cfg) -> float:
    return tracking_vectors(subset_size(cfg), cfg.clients_per_round)


FADAMET, FADAMGT = (   # module-level code, not a factory function: see the note above
    AlgorithmSpec(
        name=f"fadam{kind}",
        description=f"FAdam{kind.upper()}: local Adam with {noun} tracking (correction y − y_i on the {where}; "
                    f"3 + Y/S vectors/round)",
        init=partial(init, kind), client_begin=partial(client_begin, kind), client_step=partial(client_step, kind),
        client_end=partial(client_end, kind), server_update=server_update, comm_vectors=comm_vectors,
        lr_default=adam.LR_DEFAULT, hparams=TrackingHParams, check=check)
    for kind, noun, where in (("et", "estimate", "Adam direction, after the moments"),
                              ("gt", "gradient", "raw gradient, before both moments")))
SPECS = (FADAMET, FADAMGT)
