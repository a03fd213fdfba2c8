"""The paper's local Adam primitive, written by hand as pure functions (docs/papers/fadamgt.md §1.1, Alg. 1
lines 13-16).

    m  <- β1·m + (1−β1)·ĝ
    v  <- β2·v + (1−β2)·ĝ⊙ĝ
    v̂  <- max(v̂, v)                 AMSGrad running max, after the EMA, before Δ
    Δ   = m / (sqrt(v̂) + ε)         ε OUTSIDE the sqrt, NO bias correction

`torch.optim.Adam` is *not* this algorithm (it bias-corrects, and its amsgrad keeps the max of the raw v but then
bias-corrects it). Every Adam-based method of this family (LocalAdam, FedLADA, FAdamET, FAdamGT) calls these
functions, so a change here changes all four the same way.

All functions work on any shape; the federated callers pass cohort tensors [C, d].

Round bookkeeping of v̂ (A1 in docs/papers/fadamgt.md, the hyperparameter `vhat_init`):
  v1  v̂^(t,1) = v_i^(t)                 the max restarts each round from the persisted v     (recommended)
  v2  v̂_i persisted per client across rounds (its own [n, d] state, initialised to 0)
  v3  v̂^(t,1) = 0
  v4  v̂^(t,1) = v_i^(t) and the client persists v_i^(t+1) = v̂^(t,K+1) (instead of v^(t,K+1))
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib import elementwise
from fedlib.hparams import hp, in_range, one_of, positive

LR_DEFAULT = 0.001          # paper §2.1: η_l = 0.001 for every Adam-based method
VHAT_MODES = ("v1", "v2", "v3", "v4")


@dataclass(frozen=True)
class AdamHParams:
    """Adam's moment settings: the hyperparameters of every local-Adam method (their own classes extend it)."""
    beta1: float = hp(0.9, in_range(0.0, 1.0, hi_open=True), "β1, the first moment's EMA weight")
    beta2: float = hp(0.99, in_range(0.0, 1.0, hi_open=True), "β2, the second moment's EMA weight")
    eps: float = hp(1e-8, positive, "ε, added outside the square root")


@dataclass(frozen=True)
class PaperAdamHParams(AdamHParams):
    """+ the v̂ reading of the parameter-tracking paper (A1): LocalAdam, FedLADA, FAdamET/GT."""
    vhat_init: str = hp("v1", one_of(*VHAT_MODES), "v̂ at a round's start: v1, v2, v3 or v4 (A1 in "
                                                   "docs/papers/fadamgt.md)")


def config_of(arg):
    """`init` receives a RunConfig (protocol) or a RoundContext-like object with .cfg (engine docstring)."""
    return getattr(arg, "cfg", arg)


# ---- the primitive ------------------------------------------------------------------------------

def moments(m: Tensor, v: Tensor, vhat: Tensor, g: Tensor, beta1: float, beta2: float
            ) -> tuple[Tensor, Tensor, Tensor]:
    """Lines 13-15: EMA of ĝ and ĝ⊙ĝ, then the AMSGrad max. Returns (m⁺, v⁺, v̂⁺)."""
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    vhat = torch.maximum(vhat, v)
    return m, v, vhat


def direction(m: Tensor, vhat: Tensor, eps: float) -> Tensor:
    """Line 16: Δ = m / (sqrt(v̂) + ε); no bias correction."""
    return m / (elementwise.sqrt(vhat) + eps)


def adam_update(m: Tensor, v: Tensor, vhat: Tensor, g: Tensor, cfg) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One full primitive step with cfg's β1, β2, ε. Returns (m⁺, v⁺, v̂⁺, Δ)."""
    h = cfg.hp
    m, v, vhat = moments(m, v, vhat, g, h.beta1, h.beta2)
    return m, v, vhat, direction(m, vhat, h.eps)


# ---- weight decay (A8) ---------------------------------------------------------------------

def coupled_grad(grad: Tensor, x: Tensor, cfg) -> Tensor:
    """The 'raw' gradient every method feeds into tracking/moments: g + wd·x under coupled decay."""
    if cfg.weight_decay and cfg.wd_mode == "coupled":
        return grad + cfg.weight_decay * x
    return grad


def apply_step(x: Tensor, step_dir: Tensor, lr: float, cfg) -> Tensor:
    """x − η_l·dir, then decoupled decay AdamW-style: x ← x − η_l·wd·x (x = the point before this step)."""
    new = x - lr * step_dir
    if cfg.weight_decay and cfg.wd_mode == "decoupled":
        new = new - lr * cfg.weight_decay * x
    return new


# ---- v̂ round bookkeeping (A1) --------------------------------------------------------------

def _mode(cfg) -> str:
    return cfg.hp.vhat_init


def init_client_moments(n: int, x0: Tensor, cfg) -> dict[str, Tensor]:
    """Persistent per-client Adam state for all n clients: v_i^(1) = 0 (A4) and, under v2, v̂_i = 0."""
    d = x0.numel()
    state = {"v": torch.zeros(n, d, dtype=x0.dtype, device=x0.device)}
    if _mode(cfg) == "v2":
        state["vhat"] = torch.zeros(n, d, dtype=x0.dtype, device=x0.device)
    return state


def begin_moments(v: Tensor, clients: dict[str, Tensor], cfg) -> dict[str, Tensor]:
    """Round-start local moments for the cohort: m = 0 (line 8), v = v_i^(t) (given), v̂ per A1."""
    mode = _mode(cfg)
    if mode == "v2":
        vhat = clients["vhat"].clone()
    elif mode == "v3":
        vhat = torch.zeros_like(v)
    else:                       # v1, v4
        vhat = v.clone()
    return {"m": torch.zeros_like(v), "v": v.clone(), "vhat": vhat}


def end_moments(local: dict[str, Tensor], cfg) -> dict[str, Tensor]:
    """What each cohort client persists of its moments (line 24, or its A1 variant)."""
    mode = _mode(cfg)
    if mode == "v4":
        return {"v": local["vhat"].clone()}
    out = {"v": local["v"].clone()}
    if mode == "v2":
        out["vhat"] = local["vhat"].clone()
    return out
