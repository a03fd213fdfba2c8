"""Set-up: what `Simulation(cfg)` builds before round 1, each piece refused in one line when it cannot run.

The data in the run's dtype and its fit to the configuration, the clients' partition as a padded index, the colour
perturbation's per-client factors, the model (checked on one test input) and the algorithm's initial state.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from torch import Tensor

from fedlib.config import ConfigError, RunConfig
from fedlib.data import DatasetUnavailable, partition_dataset, prepare_batch
from fedlib.data.transforms import client_colour_factors
from fedlib.engine.state import init_state
from fedlib.models import build_model, model_kwargs
from fedlib.oracle import Oracle

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def cast_data(data, dtype: torch.dtype):
    """The dataset with its floating tensors (tabular features, regression targets) in `dtype`; uint8 images and
    integer labels stay as they are (images are converted per batch by prepare_batch)."""
    if dtype == torch.float32:
        return data
    cast = {k: getattr(data, k).to(dtype) for k in ("x_train", "y_train", "x_test", "y_test")
            if getattr(data, k).is_floating_point()}
    return replace(data, **cast)


def check_data(cfg: RunConfig, data) -> None:
    """Refuse a configuration the (loaded) dataset cannot serve: a batch larger than its train split, or a
    classification-only setting on another task."""
    if cfg.batch_size > data.n_train:
        raise ConfigError(f"batch_size={cfg.batch_size} is larger than dataset={cfg.dataset}'s "
                          f"{data.n_train} train samples; allowed: 1 <= batch_size <= {data.n_train}")
    if cfg.target_acc is not None and data.task != "classification":
        raise ConfigError(f"target_acc needs a classification dataset (test accuracy); dataset={cfg.dataset} is "
                          f"{data.task}; allowed: target_acc=null")
    if cfg.eval_local and data.task != "classification":
        raise ConfigError(f"eval_local=true needs a classification dataset; dataset={cfg.dataset} is "
                          f"{data.task}; allowed: eval_local=false")


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


def client_index(parts: list[np.ndarray], device: torch.device) -> tuple[Tensor, Tensor]:
    """(sizes [n], index [n, max size]): each client's sample count and its dataset indices, rows padded with 0."""
    sizes = torch.tensor([len(p) for p in parts], dtype=torch.long, device=device)
    width = int(sizes.max())
    index = np.zeros((len(parts), width), dtype=np.int64)
    for i, p in enumerate(parts):
        index[i, : len(p)] = p
    return sizes, torch.from_numpy(index).to(device)


def colour_factors(cfg: RunConfig, data, device: torch.device) -> Tensor | None:
    """The colour perturbation's per-client (brightness, saturation) factors [n, 2], or None when it is off."""
    if cfg.color_jitter is None:
        return None
    if not data.is_image or data.input_shape[0] != 3:
        raise ConfigError(f"color_jitter={cfg.color_jitter} needs RGB images, but dataset={cfg.dataset} has input "
                          f"shape {list(data.input_shape)}; allowed: an RGB image dataset (cifar_shaped, "
                          f"cifar10, cifar100, svhn, tinyimagenet) or color_jitter=null")
    factors = client_colour_factors(cfg.n_clients, cfg.color_jitter, cfg.seed)
    return torch.from_numpy(factors).to(device, torch.float32)


def fitted_model(cfg: RunConfig, data, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
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


def checked_init_state(alg, oracle: Oracle, cfg: RunConfig, device: torch.device, home: torch.device
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
