"""GPT-2 sequence classifiers fine-tuned with LoRA through PEFT (FedIT, the parameter-tracking paper's §6.3).

Two models share one wrapper, `LoRAClassifier`, around a PEFT-wrapped `GPT2ForSequenceClassification`
(`LoraConfig(task_type=SEQ_CLS)`):

* `gpt2_lora`: the pretrained GPT-2 (`checkpoint`, default `openai-community/gpt2`, 124M) downloaded from the Hugging
  Face hub on first use (paper profile).
* `tiny_gpt2_lora`: a randomly initialised tiny GPT-2 built from a `GPT2Config` (no download; the embedded stand-in).

Only the LoRA matrices and the classification head (`score`, a PEFT `modules_to_save` copy) require grad, so the
oracle's flat vector holds exactly those; the frozen GPT-2 weights stay inside the one module that every client
shares and are never copied per client.

Input is token ids `[B, T]` (right-padded with `pad_id`; GPT-2 has no pad token, so pad = eos). The wrapper
truncates to `max_length`, masks the padding and lets GPT-2 pool the last non-pad token (its rightmost token that is
not `pad_id`, as `GPT2ForSequenceClassification` does). Dropout is off everywhere (GPT-2's three dropouts and the
LoRA dropout): the oracle needs a deterministic forward pass, so same-seed runs are bit-identical. Attention runs
in PyTorch's "eager" implementation: the SDPA mask path of transformers branches on tensor values, which `vmap`
cannot batch.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from fedlib.errors import ConfigError
from fedlib.hparams import hp, positive, positive_int

PAPER_CHECKPOINT = "openai-community/gpt2"


def _targets(name: str, v) -> None:
    if not v or not all(isinstance(t, str) and t for t in v):
        raise ConfigError(f"{name}={list(v) if isinstance(v, tuple) else v!r} must be a non-empty list of module "
                          "names (GPT-2: c_attn, c_proj, c_fc, wte, wpe)")


@dataclass(frozen=True)
class GPT2LoRAOptions:
    """LoRA and input settings shared by both GPT-2 models (the paper states none of them: spec A16)."""

    lora_rank: int = hp(16, positive_int, "LoRA rank r (16 on all four projections = 1.9% of GPT-2 small)")
    lora_alpha: float = hp(32.0, positive, "LoRA alpha (the update is scaled by alpha / r)")
    lora_targets: tuple[str, ...] = hp(("c_attn", "c_proj", "c_fc"), _targets,
                                       "module-name suffixes that get LoRA (c_proj matches attn.c_proj and "
                                       "mlp.c_proj)")
    max_length: int = hp(128, positive_int, "tokens per sequence; longer inputs keep their first max_length")
    checkpoint: str = hp(PAPER_CHECKPOINT, None, "Hugging Face hub id of the pretrained GPT-2")


@dataclass(frozen=True)
class TinyGPT2LoRAOptions:
    """The embedded stand-in: a random GPT-2 small enough for CPU.

    A random frozen base has no useful token features, so by default LoRA also targets the token embedding `wte`
    (a trainable rank-r correction of every token's vector): with the paper's targets alone the classifier stays
    near the majority class within the embedded budget. Init std is 0.1 instead of GPT-2's 0.02, so that the random
    attention mixes the tokens into the pooled last position.
    """

    lora_rank: int = hp(16, positive_int, "LoRA rank r")
    lora_alpha: float = hp(32.0, positive, "LoRA alpha (the update is scaled by alpha / r)")
    lora_targets: tuple[str, ...] = hp(("c_attn", "c_proj", "c_fc", "wte"), _targets,
                                       "module-name suffixes that get LoRA (wte: the token embedding)")
    max_length: int = hp(32, positive_int, "tokens per sequence (also the model's number of positions)")
    n_layer: int = hp(1, positive_int, "transformer blocks")
    n_embd: int = hp(32, positive_int, "model width (a multiple of n_head)")
    n_head: int = hp(4, positive_int, "attention heads")
    init_std: float = hp(0.1, positive, "std of the random weight init (GPT-2's initializer_range is 0.02)")


class LoRAClassifier(nn.Module):
    """Token ids [B, T] -> logits [B, num_labels] through a PEFT LoRA GPT-2 sequence classifier."""

    def __init__(self, peft_model: nn.Module, pad_id: int, max_length: int) -> None:
        super().__init__()
        self.peft = peft_model
        self.pad_id = int(pad_id)
        self.max_length = int(max_length)

    def forward(self, x: Tensor) -> Tensor:
        ids = x[..., : self.max_length].long()
        mask = (ids != self.pad_id).long()
        return self.peft(input_ids=ids, attention_mask=mask).logits

    def stacked_forward(self, p: dict[str, Tensor], x: Tensor) -> Tensor:
        """Every client at once: trainable tensors `p` [C, ...], token ids [C, B, T] -> logits [C, B, labels]
        (fedlib/models/gpt2_stacked.py)."""
        from fedlib.models import gpt2_stacked

        return gpt2_stacked.forward(self, p, x)


def gpt2_config(vocab_size: int, num_labels: int, pad_id: int, **sizes):
    """A GPT2Config with dropout off, pad = eos = bos = `pad_id`, eager attention; `sizes` override the shape
    (none given = GPT-2 small: 12 layers, width 768, 12 heads, 1024 positions)."""
    from transformers import GPT2Config

    cfg = GPT2Config(vocab_size=vocab_size, num_labels=num_labels, pad_token_id=pad_id, bos_token_id=pad_id,
                     eos_token_id=pad_id, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     summary_first_dropout=0.0, **sizes)
    cfg._attn_implementation = "eager"
    return cfg


def lora_config(rank: int, alpha: float, targets) -> object:
    from peft import LoraConfig, TaskType

    return LoraConfig(task_type=TaskType.SEQ_CLS, r=int(rank), lora_alpha=float(alpha), lora_dropout=0.0,
                      target_modules=list(targets), fan_in_fan_out=True)


def wrap_lora(base: nn.Module, rank: int, alpha: float, targets) -> nn.Module:
    """PEFT-wrap a GPT2ForSequenceClassification; refuses a target that matches no module (one line)."""
    from peft import get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in base.named_modules()}
    missing = [t for t in targets if t not in names]
    if missing:
        raise ConfigError(f"lora_targets={list(targets)} names modules GPT-2 does not have ({', '.join(missing)}); "
                          "allowed: c_attn, c_proj, c_fc, wte, wpe")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fan_in_fan_out.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        model = get_peft_model(base, lora_config(rank, alpha, targets))
    return model.eval()


def build_tiny_gpt2_lora(input_shape: tuple[int, ...], num_classes: int, *, vocab_size: int, pad_id: int,
                         lora_rank: int = 16, lora_alpha: float = 32.0,
                         lora_targets=("c_attn", "c_proj", "c_fc", "wte"), max_length: int = 32, n_layer: int = 1,
                         n_embd: int = 32, n_head: int = 4, init_std: float = 0.1, **_ignored) -> LoRAClassifier:
    """A random tiny GPT-2 (weights from the global torch RNG) with LoRA; no download."""
    from transformers import GPT2ForSequenceClassification

    cfg = gpt2_config(vocab_size, num_classes, pad_id, n_positions=max_length, n_embd=n_embd, n_layer=n_layer,
                      n_head=n_head, initializer_range=init_std)
    base = GPT2ForSequenceClassification(cfg)
    return LoRAClassifier(wrap_lora(base, lora_rank, lora_alpha, lora_targets), pad_id, max_length)


def build_gpt2_lora(input_shape: tuple[int, ...], num_classes: int, *, vocab_size: int, pad_id: int,
                    tokenizer: str | None, cache_dir: Path | None = None, lora_rank: int = 16,
                    lora_alpha: float = 32.0, lora_targets=("c_attn", "c_proj", "c_fc"), max_length: int = 128,
                    checkpoint: str = PAPER_CHECKPOINT, **_ignored) -> LoRAClassifier:
    """Pretrained GPT-2 from the hub (cached under `cache_dir`) with a fresh head and LoRA.

    The data must be tokenised with the same checkpoint's tokenizer; offline without the weights in the cache the
    download fails with one line (DatasetUnavailable, CLI exit 3)."""
    from fedlib.data import DatasetUnavailable

    if tokenizer != checkpoint:
        raise ConfigError(f"model=gpt2_lora needs token ids from the {checkpoint} tokenizer, but the dataset was "
                          f"tokenised with {tokenizer!r}; allowed: a text dataset tokenised with {checkpoint}, or "
                          "model=tiny_gpt2_lora")
    from transformers import GPT2ForSequenceClassification

    cfg = gpt2_config(vocab_size, num_classes, pad_id)

    def load(local: bool):
        return GPT2ForSequenceClassification.from_pretrained(
            checkpoint, config=_pretrained_config(checkpoint, cfg, cache_dir, local),
            cache_dir=str(cache_dir) if cache_dir else None, local_files_only=local)

    try:
        with warnings.catch_warnings(), _quiet_hub():
            warnings.simplefilter("ignore")
            try:
                base = load(local=True)             # the local Hugging Face cache first: no network at all
            except Exception:  # noqa: BLE001 -- not cached (or a broken cache entry): try the hub, if it answers
                unreachable = hub_unreachable()
                if unreachable:
                    raise ConnectionError(f"the hub is unreachable: {unreachable}") from None
                base = load(local=False)
    except Exception as exc:  # noqa: BLE001 -- any download failure becomes one clear line
        why = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]
        cache = f"the Hugging Face cache {cache_dir}" if cache_dir else "the local Hugging Face cache"
        raise DatasetUnavailable(
            f"model 'gpt2_lora' is not available: the pretrained weights of '{checkpoint}' are not in {cache} and "
            f"could not be downloaded ({why}). Run once with network access and `pip install transformers peft`."
        ) from None
    return _lora_classifier(base, checkpoint, pad_id, max_length, lora_rank, lora_alpha, lora_targets)


def build_gpt2_lora_random(input_shape: tuple[int, ...], num_classes: int, *, vocab_size: int, pad_id: int,
                           lora_rank: int = 16, lora_alpha: float = 32.0, lora_targets=("c_attn", "c_proj", "c_fc"),
                           max_length: int = 128, checkpoint: str = PAPER_CHECKPOINT, **_ignored) -> LoRAClassifier:
    """`gpt2_lora`'s architecture (GPT-2 small, the paper's checkpoint) with random weights and no download: what a
    round of `gpt2_lora` costs, for `fedlib estimate` to time offline. Its accuracy means nothing."""
    from transformers import GPT2ForSequenceClassification

    if checkpoint != PAPER_CHECKPOINT:
        raise ConfigError(f"checkpoint={checkpoint!r} has no offline shape to time; allowed: {PAPER_CHECKPOINT} "
                          "(GPT-2 small)")
    base = GPT2ForSequenceClassification(gpt2_config(vocab_size, num_classes, pad_id))
    return _lora_classifier(base, checkpoint, pad_id, max_length, lora_rank, lora_alpha, lora_targets)


def _lora_classifier(base: nn.Module, checkpoint: str, pad_id: int, max_length: int, rank: int, alpha: float,
                     targets) -> LoRAClassifier:
    """A GPT-2 small classifier (pretrained or random) wrapped with LoRA, once `max_length` fits its positions."""
    if max_length > base.config.n_positions:
        raise ConfigError(f"max_length={max_length} is out of range; allowed: 1 .. {base.config.n_positions} "
                          f"(the positions of {checkpoint})")
    return LoRAClassifier(wrap_lora(base, rank, alpha, targets), pad_id, max_length)


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the Hugging Face hub cannot be reached (None when a TCP connection to it opens, or a proxy is set): an
    unreachable hub is refused at once instead of after huggingface_hub's ~30 s of retries."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None                                  # the proxy decides; let the download try
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
    return None


class _quiet_hub:
    """Silence huggingface_hub's and transformers' retry warnings (the refusal, if any, is one line)."""

    NAMES = ("huggingface_hub", "transformers")

    def __enter__(self):
        import logging

        self.levels = {n: logging.getLogger(n).level for n in self.NAMES}
        for n in self.NAMES:
            logging.getLogger(n).setLevel(logging.ERROR)
        return self

    def __exit__(self, *exc) -> None:
        import logging

        for n, level in self.levels.items():
            logging.getLogger(n).setLevel(level)


def _pretrained_config(checkpoint: str, overrides, cache_dir: Path | None, local: bool = False):
    """The checkpoint's config with our head size, pad id, dropout off and eager attention."""
    from transformers import GPT2Config

    cfg = GPT2Config.from_pretrained(checkpoint, cache_dir=str(cache_dir) if cache_dir else None,
                                     local_files_only=local)
    for key in ("num_labels", "pad_token_id", "resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_first_dropout"):
        setattr(cfg, key, getattr(overrides, key))
    cfg.id2label = overrides.id2label
    cfg.label2id = overrides.label2id
    cfg._attn_implementation = "eager"
    return cfg


# ---------------------------------------------------------------------------------------------- state size
def state_size(model: nn.Module) -> dict:
    """Trainable (per-client state: LoRA + head) vs frozen (shared base) parameter counts and their ratio."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    head = sum(p.numel() for n, p in model.named_parameters() if p.requires_grad and "modules_to_save" in n)
    return {"trainable": trainable, "lora": trainable - head, "head": head, "frozen": frozen,
            "trainable_over_frozen": trainable / frozen if frozen else float("inf")}


def paper_state_size(num_labels: int, lora_rank: int = 16, lora_alpha: float = 32.0,
                     lora_targets=("c_attn", "c_proj", "c_fc"), vocab_size: int = 50257) -> dict:
    """`state_size` of GPT-2 small with LoRA, built shape-only on the meta device (no download, no memory).

    GPT-2 small's shape is GPT2Config's default; the frozen count includes PEFT's frozen copy of the original head
    (768 x num_labels)."""
    from transformers import GPT2ForSequenceClassification

    with torch.device("meta"):
        base = GPT2ForSequenceClassification(gpt2_config(vocab_size, num_labels, vocab_size - 1))
        model = wrap_lora(base, lora_rank, lora_alpha, lora_targets)
    return state_size(model)


# ---------------------------------------------------------------------------------------------- flat <-> PEFT
def trainable_names(model: nn.Module) -> list[str]:
    return [n for n, p in model.named_parameters() if p.requires_grad]


@torch.no_grad()
def load_flat(model: nn.Module, flat: Tensor) -> None:
    """Write a flat trainable vector (the oracle's order: named_parameters with requires_grad) into the model."""
    params = [p for p in model.parameters() if p.requires_grad]
    total = sum(p.numel() for p in params)
    if flat.numel() != total:
        raise ValueError(f"flat vector has {flat.numel()} values, the model has {total} trainable parameters")
    offset = 0
    for p in params:
        p.copy_(flat[offset: offset + p.numel()].view_as(p))
        offset += p.numel()


def adapter_state(model: LoRAClassifier) -> dict[str, Tensor]:
    """The PEFT adapter state dict (what `save_pretrained` writes: LoRA matrices + head) of the wrapped model."""
    from peft import get_peft_model_state_dict

    return get_peft_model_state_dict(model.peft)


__all__ = ["GPT2LoRAOptions", "LoRAClassifier", "TinyGPT2LoRAOptions", "adapter_state", "build_gpt2_lora",
           "build_gpt2_lora_random", "build_tiny_gpt2_lora", "gpt2_config", "load_flat", "paper_state_size",
           "state_size", "trainable_names"]
