"""Counting the work of a round in FLOPs, on the meta device (nothing is computed), and the reference rate that
turns FLOPs into projected GPU time.

Without a GPU, `fedlib estimate` projects GPU-hours from the work at the throughput FL-Simulator's published V100
timing implies (`REFERENCE`: 10 clients x 50 steps x batch 50 plus evaluation of 60,000 images in 15.86 s), i.e. what
a sequential peer framework would need on a V100. That round's work is counted on the model FL-Simulator times:
torchvision's ResNet-18 unchanged on 32x32 CIFAR images, with the 7x7 stride-2 stem convolution and the 3x3 stride-2
max-pool (fedlib's `resnet18_imagenet`, GroupNorm for BatchNorm: 37.0 MMAC per image forward). Counting the
CIFAR-stem `resnet18` instead (556 MMAC per image) made the rate, and every projection, 15x too optimistic.
"""
from __future__ import annotations

import copy
from functools import lru_cache

import torch

from fedlib.models import build_model
from fedlib.oracle import Oracle

#: FL-Simulator's published timing (bench/README.md, *Speed against peers*): the throughput a sequential peer
#: framework reaches on a V100
REFERENCE = {"name": "V100 (FL-Simulator FedAvg, sequential clients)", "seconds_per_round": 15.86,
             "model": "resnet18_imagenet", "input_shape": (3, 32, 32), "num_classes": 10, "client_steps": 500,
             "batch": 50, "eval_images": 60_000}


def count_flops(sim) -> tuple[float, float]:
    """(FLOPs of one client gradient on one batch, FLOPs of evaluating one test image -- or token, for a token
    stream), counted on meta tensors."""
    from torch.utils.flop_counter import FlopCounterMode

    model = copy.deepcopy(sim.oracle.model).to("meta")
    oracle = Oracle(model, sim.data.task, "loop")
    cohort = sim.sample_cohort()[:1]
    if sim.stream is None:
        x, y = sim.batch(cohort, sim.batch_positions(cohort), 0)
        x, y = x.to("meta"), y.to("meta")
        one, per = x[0], x.shape[1]                      # one client's batch: FLOPs per image
    else:                                                # a token stream: (tokens, carried state, dropout masks)
        (tokens, state, masks), y = sim.stream.batch(cohort)
        x = (tokens.to("meta"), state.to("meta"), None if masks is None else masks.to("meta"))
        y = y.to("meta")
        one, per = (x[0][0], x[1][0], None), x[0][0].numel()    # evaluated without dropout: FLOPs per token
    with FlopCounterMode(display=False) as grad_count:
        oracle(oracle.flat_params()[None], x, y)
    with FlopCounterMode(display=False) as eval_count, torch.no_grad():
        model(one)
    return float(grad_count.get_total_flops()), float(eval_count.get_total_flops()) / per


@lru_cache(maxsize=1)
def reference_flops_per_s() -> float:
    """The FLOP rate FL-Simulator's published V100 round implies, counted by the same rule as every entry."""
    from torch.utils.flop_counter import FlopCounterMode

    r = REFERENCE
    model = build_model(r["model"], r["input_shape"], r["num_classes"]).to("meta")
    oracle = Oracle(model, "classification", "loop")
    x = torch.empty(1, r["batch"], *r["input_shape"], device="meta")
    y = torch.zeros(1, r["batch"], dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as grad_count:
        oracle(oracle.flat_params()[None], x, y)
    with FlopCounterMode(display=False) as eval_count, torch.no_grad():
        model(x[0])
    work = r["client_steps"] * grad_count.get_total_flops() + r["eval_images"] * eval_count.get_total_flops() / r[
        "batch"]
    return float(work) / r["seconds_per_round"]
