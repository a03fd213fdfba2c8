"""A typed, validated run configuration.

Every field has a type, a default and a rule. `RunConfig.from_dict` coerces strings from the command line,
refuses unknown keys, and `validate()` checks every rule before any compute starts. Errors are ConfigError with a
one-line message naming the field and what is allowed.

`fedlib.engine.resolve` turns a RunConfig into a `Resolved` one: every default filled, read-only all the way down
(its hyperparameters and model options are read-only mappings), and the only kind that `engine.run`, `Simulation`
and the workers take. Its fingerprint, the content hash of every field but NON_NUMERIC, is the run-cache key.

Kept as one module (over 400 lines) because the fields, their rules and the fingerprint rule are one contract, and
this module may load only the leaves fedlib.errors and fedlib.hparams (tests/pipeline/test_imports.py), so the lazy
registry look-ups and value checks it needs stay here as well.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from fedlib.errors import ConfigError, Refused  # noqa: F401  -- re-exported: `from fedlib.config import Refused` works
from fedlib.hparams import build, coerce_value, fields_of

MAX_THREADS = 1024
MAX_SEED = 2**32 - 1       # generators are seeded with seed·1_000_003 + k, which must fit torch's 64-bit seed


@dataclass(frozen=True)
class RunConfig:
    # what to run
    algorithm: str = "fedavg"
    dataset: str = "digits"
    model: str = "auto"                     # "auto" picks the dataset's default model
    # federation
    n_clients: int = 20                     # n
    clients_per_round: int = 5              # S (expected cohort size under Bernoulli participation)
    participation: Literal["uniform", "bernoulli"] = "uniform"
    aggregation: Literal["uniform", "size"] = "uniform"   # server mean unweighted (papers) or by client data size
    # partition
    partition: str = "dirichlet"
    alpha: float = 0.1                      # Dirichlet concentration (dirichlet, dirichlet_balanced, dirichlet_fedma)
    classes_per_client: int = 2             # k_classes / shards per client
    similarity: float = 0.1                 # FAFED s-similarity fraction in [0, 1]
    min_client_size: int = 10               # per-label Dirichlet retries until every client has this many samples
    # local work
    rounds: int = 50
    local_steps: int = 3                    # K (minibatch steps) unless local_epochs is set
    local_epochs: float | None = None    # if set, K_i = ceil(local_epochs * |D_i| / batch_size), masked
    batch_size: int = 32                    # minibatch size; token streams: the number of parallel columns b
    bptt: int = 35                          # token streams: truncated-BPTT window length (FAFED's LM code: 35)
    lr: float | None = None              # η_l; None = the algorithm's paper default
    lr_decay: float = 1.0                   # η_l of round t = lr · lr_decay^(t-1) (FL-Simulator: 0.998)
    clip_norm: float | None = None       # clip each client's minibatch gradient to this L2 norm (FL-Simulator: 10)
    server_lr: float = 1.0                  # η_g
    weight_decay: float = 0.0
    wd_mode: Literal["coupled", "decoupled"] = "coupled"   # A8, docs/papers/fadamgt.md
    augment: bool = False                   # pad-crop + flip for image datasets
    color_jitter: float | None = None    # s: per-client brightness/saturation ~ U[1-s, 1+s] on train images (FedMIM)
    # (Adam's β1, β2, ε, the v̂ reading, the tracking subset and FedLADA's α are the hyperparameters of the
    # algorithms that read them: fedlib/algorithms/adam.py, tracking.py, fedlada.py)
    bn_policy: Literal["average"] = "average"              # A11 (models here use GroupNorm; no BN buffers)
    # evaluation and bookkeeping
    eval_every: int = 1
    eval_local: bool = False                # also record local_test_acc: each cohort client's end-of-round local
                                            # model on its own contiguous 1/n shard of the test set (FAFED's code)
    eval_batch_size: int = 2048
    target_acc: float | None = None      # fraction in (0, 1]; rounds-to-target is computed against it
    stop_at_target: bool = False
    seed: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"
    oracle: Literal["auto", "vmap", "loop", "stacked", "timed"] = "auto"   # auto: fedlib.oracle.auto_mode
    threads: int = 1                        # torch intra-op threads for `run`; 0 = torch's default (every core)
    cpu_path: Literal["auto", "portable", "native"] = "auto"   # CPU kernels: fedlib/cpu_path.py (auto: this process's)
    dtype: Literal["float32", "float64"] = "float32"       # model, data and state precision
    # GPU path (docs/scale.md); chunk_size and state_device never change the numbers, autocast does
    chunk_size: int | None = None        # vmapped oracle: clients per vmap chunk (bounds activation memory)
    autocast: Literal["off", "bf16", "tf32"] = "off"       # compute precision of forward/backward; state stays fp32
    state_device: Literal["device", "host"] = "device"     # per-client [n, d] state on the device or in host memory
    # GPU switches (fedlib/gpu_options.py), off by default; each can change the kernels, so each is fingerprinted
    channels_last: bool = False             # NHWC activations in the CNNs' stacked forward
    cudnn_benchmark: bool = False           # cuDNN picks its algorithms by timing them
    cuda_graph: bool = False                # the stacked oracle call captured as a CUDA graph and replayed
    compile: bool = False                   # torch.compile of the stacked forward and loss
    checkpoint_every: int = 0               # rounds; 0 = no checkpoints
    data_dir: str | None = None          # None = $FEDLIB_DATA or ~/.cache/fedlib
    progress: bool = True
    # the chosen algorithm's own hyperparameters (fedlib/hparams.py); flat keys on the CLI and in YAML
    hparams: Mapping[str, Any] = field(default_factory=dict)
    # the chosen model's own settings (fedlib/models: ModelSpec.options, e.g. LoRA rank); flat keys as well
    model_options: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RunConfig:
        """Coerce a mapping of config keys. Keys that are not RunConfig fields must be hyperparameters of the chosen
        algorithm (they go into `hparams`); anything else is refused naming the key and what is allowed."""
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        hparams: dict[str, Any] = {}
        model_options: dict[str, Any] = {}
        algorithm = values.get("algorithm", cls.algorithm)
        model = _model_name(values.get("model", cls.model), values.get("dataset", cls.dataset))
        for key, raw in values.items():
            if not isinstance(key, str):
                raise ConfigError(f"config key {key!r} is not a string; allowed keys: {', '.join(known)}")
            if key == "hparams":
                if raw is None:
                    continue
                if not isinstance(raw, Mapping):
                    raise ConfigError(f"hparams={raw!r} must be a mapping of the algorithm's hyperparameters")
                hparams.update(raw)
            elif key == "model_options":
                if raw is None:
                    continue
                if not isinstance(raw, Mapping):
                    raise ConfigError(f"model_options={raw!r} must be a mapping of the model's options")
                model_options.update(raw)
            elif key in known:
                kwargs[key] = coerce_value(key, raw, _field_type(cls, key))
            else:
                owners = _hparam_owners(key)
                if isinstance(algorithm, str) and algorithm in owners:
                    hparams[key] = raw
                    continue
                model_owners = _model_option_owners(key)
                if model in model_owners:
                    model_options[key] = raw
                    continue
                if model_owners and not owners:
                    raise ConfigError(f"'{key}' is an option of model {', '.join(model_owners)}, not of model="
                                      f"{model}; its options: {', '.join(_model_option_names(model)) or 'none'}")
                if owners:
                    raise ConfigError(f"'{key}' is a hyperparameter of {', '.join(owners)}, not of "
                                      f"algorithm={algorithm}; its hyperparameters: "
                                      f"{', '.join(_hparam_names(algorithm)) or 'none'}")
                hint = difflib.get_close_matches(key, list(known) + _all_hparam_names(), n=1)
                more = f" (did you mean '{hint[0]}'?)" if hint else ""
                raise ConfigError(f"unknown config key '{key}'{more}; allowed keys: {', '.join(known)}, and the "
                                  f"algorithm's hyperparameters and the model's options (fedlib config "
                                  f"algorithm=NAME lists them)")
        kwargs["hparams"] = hparams
        kwargs["model_options"] = model_options
        return cls(**kwargs)

    def replace(self, **changes) -> RunConfig:
        """A new configuration with `changes` (coerced and routed like `from_dict`). It is unresolved, but for a
        resolved one whose changes are all NON_NUMERIC (where or how visibly it runs): that stays resolved."""
        if isinstance(self, Resolved) and set(changes) <= set(NON_NUMERIC):
            typed = {key: coerce_value(key, raw, _field_type(RunConfig, key)) for key, raw in changes.items()}
            return dataclasses.replace(self, **typed)
        return RunConfig.from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Every field, the hyperparameters and model options as plain dicts (lists for tuples, as JSON keeps them)."""
        d = {f.name: getattr(self, f.name) for f in fields(RunConfig)}
        for key in ("hparams", "model_options"):
            d[key] = {k: list(v) if isinstance(v, tuple) else v for k, v in d[key].items()}
        return d

    @property
    def hp(self):
        """The chosen algorithm's hyperparameters as its typed, validated dataclass (None if it has none): built on
        each read (a Resolved configuration builds it once)."""
        spec = _algorithms().get(self.algorithm)
        return None if spec is None or spec.hparams is None else build(spec.hparams, self.hparams, self.algorithm)

    @property
    def model_opts(self):
        """The chosen model's own settings as its typed, validated dataclass (None if it has none)."""
        spec = _models().get(_model_name(self.model, self.dataset))
        return None if spec is None or spec.options is None else build(spec.options, self.model_options, spec.name,
                                                                        owner="model")

    # ------------------------------------------------------------------ validation
    def validate(self) -> RunConfig:
        """Check every rule; raise ConfigError naming the first offending field. Returns self."""
        ALGORITHMS, MODELS = _algorithms(), _models()
        _choice("algorithm", self.algorithm, ALGORITHMS)
        build(ALGORITHMS[self.algorithm].hparams, self.hparams, self.algorithm)
        _choice("dataset", self.dataset, _datasets())
        _choice("partition", self.partition, _partitioners())
        if self.model != "auto":
            _choice("model", self.model, MODELS)
        model = _model_name(self.model, self.dataset)
        build(MODELS[model].options, self.model_options, model, owner="model")
        for name in _type_hints(RunConfig):
            allowed = _literal_values(_field_type(RunConfig, name))
            if allowed is not None:
                _choice(name, getattr(self, name), allowed)
        _positive_int("n_clients", self.n_clients)
        _positive_int("clients_per_round", self.clients_per_round)
        if self.clients_per_round > self.n_clients:
            raise ConfigError(f"clients_per_round={self.clients_per_round} is larger than n_clients="
                              f"{self.n_clients}; allowed: 1 <= clients_per_round <= n_clients")
        _positive_float("alpha", self.alpha)
        _positive_int("classes_per_client", self.classes_per_client)
        _range("similarity", self.similarity, 0.0, 1.0)
        _nonneg_int("min_client_size", self.min_client_size)
        _positive_int("rounds", self.rounds)
        _positive_int("local_steps", self.local_steps)
        if self.local_epochs is not None:
            _positive_float("local_epochs", self.local_epochs)
        _positive_int("batch_size", self.batch_size)
        _positive_int("bptt", self.bptt)
        if self.lr is not None:
            _positive_float("lr", self.lr)
        _range("lr_decay", self.lr_decay, 0.0, 1.0, lo_open=True)
        if self.clip_norm is not None:
            _positive_float("clip_norm", self.clip_norm)
        _positive_float("server_lr", self.server_lr)
        _nonneg_float("weight_decay", self.weight_decay)
        if self.color_jitter is not None:
            _range("color_jitter", self.color_jitter, 0.0, 1.0, hi_open=True)
        _positive_int("eval_every", self.eval_every)
        _positive_int("eval_batch_size", self.eval_batch_size)
        if self.target_acc is not None:
            _range("target_acc", self.target_acc, 0.0, 1.0, lo_open=True)
        if self.stop_at_target and self.target_acc is None:
            raise ConfigError("stop_at_target=true needs target_acc; allowed: set target_acc in (0, 1]")
        _nonneg_int("seed", self.seed)
        if self.seed > MAX_SEED:
            raise ConfigError(f"seed={self.seed} is too large; allowed: 0 <= seed <= {MAX_SEED}")
        _range("threads", self.threads, 0, MAX_THREADS)
        _nonneg_int("checkpoint_every", self.checkpoint_every)
        if self.chunk_size is not None:
            _positive_int("chunk_size", self.chunk_size)
        if self.dtype == "float64" and self.autocast != "off":
            raise ConfigError(f"autocast={self.autocast} lowers the compute precision that dtype=float64 asks for; "
                              f"allowed: autocast=off with dtype=float64")
        check = ALGORITHMS[self.algorithm].check   # its hyperparameters against the run's fields
        if check is not None:
            check(self)
        return self

    # ------------------------------------------------------------------ derived values
    def semantic_dict(self) -> dict[str, Any]:
        """The fields that change the numbers of a run: all but NON_NUMERIC (where or how visibly it runs).

        The oracle path (resolved by `engine.resolve`) and the dtype are in: the two paths agree per call only to
        float tolerance, so their records must never share a cache key. So are the thread count (a reduction split
        over more threads sums in another order) and the CPU math path (fedlib/cpu_path.py), resolved by
        `engine.resolve`.
        """
        d = self.to_dict()
        for key in NON_NUMERIC:
            d.pop(key)
        return d

    def fingerprint(self) -> str:
        """Content hash of the semantic fields: the run-cache key."""
        blob = json.dumps(self.semantic_dict(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: The only fields left out of the fingerprint: they decide where or how visibly a run happens, never its numbers.
#: progress prints; a checkpointed run resumes bit-identically (tests/core/test_resume.py); data_dir only locates files
#: whose content is checked; state_device only moves the [n, d] state between host and device memory (a copy).
#: Everything else is in, including fields that change only the round-off: device (resolved to cpu/cuda), threads,
#: cpu_path, oracle, chunk_size (a vmapped call over fewer clients can take other kernels) and eval_batch_size
#: (the test loss is summed over evaluation batches).
NON_NUMERIC = ("progress", "checkpoint_every", "data_dir", "state_device")

#: The values `engine.resolve` replaces (by the algorithm's learning rate, the dataset's model, this machine's device,
#: oracle path and CPU math path): a configuration holding one of them is not resolved.
UNRESOLVED = {"lr": None, "model": "auto", "device": "auto", "oracle": "auto", "cpu_path": "auto"}


@dataclass(frozen=True)
class Resolved(RunConfig):
    """A resolved configuration, made by `fedlib.engine.resolve`: validated, with no UNRESOLVED value left and every
    hyperparameter and model option filled in, read-only all the way down (`hparams` and `model_options` are
    read-only mappings of immutable values), its typed `hp` and `model_opts` built once. It is what a run records and
    what its fingerprint is computed from; `engine.run`, `Simulation` and the workers take it as it is."""

    def __post_init__(self):
        left = [f"{key}={value!r}" for key, value in UNRESOLVED.items() if getattr(self, key) == value]
        if left:
            raise ConfigError(f"{', '.join(left)} is not resolved; allowed: a configuration from fedlib.engine.resolve")
        for key, built in (("hparams", RunConfig.hp.fget(self)), ("model_options", RunConfig.model_opts.fget(self))):
            values = {} if built is None else {f.name: getattr(built, f.name) for f in fields(built)}
            object.__setattr__(self, key, MappingProxyType(values))      # every default filled in, typed
        self.validate()

    hp = functools.cached_property(RunConfig.hp.fget)
    model_opts = functools.cached_property(RunConfig.model_opts.fget)

    def __reduce__(self):          # a read-only mapping does not pickle: a worker rebuilds it from the plain values
        return _resolved, (self.to_dict(),)


def _resolved(values: dict[str, Any]) -> Resolved:
    return Resolved(**values)


def drop_unread(values: dict[str, Any]) -> dict[str, Any]:
    """A config dict without the hyperparameters of other algorithms than its own (for blocks shared by several
    algorithms, e.g. a `run:` block that sets FAdamGT's tracking_size beside FedAvg); all of them are kept for an
    algorithm that is not registered (validation refuses it anyway)."""
    algorithm = values.get("algorithm", RunConfig.algorithm)
    if algorithm not in _algorithms():
        return dict(values)
    return {k: v for k, v in values.items() if algorithm in _hparam_owners(k) or not _hparam_owners(k)}


# ---------------------------------------------------------------------- registries
# Loaded on first use, one way down (algorithms, models and data never import this module): they load torch and
# every algorithm, model and dataset module (seconds), which `import fedlib.config` (the CLI's start, the run-record
# readers) does not need.

def _algorithms() -> dict:
    from fedlib.algorithms import ALGORITHMS
    return ALGORITHMS


def _models() -> dict:
    from fedlib.models import MODELS
    return MODELS


def _datasets() -> dict:
    from fedlib.data import DATASETS
    return DATASETS


def _partitioners() -> dict:
    from fedlib.data import PARTITIONERS
    return PARTITIONERS


# ---------------------------------------------------------------------- helpers

def _field_type(cls, name: str):
    return _type_hints(cls)[name]


@functools.cache
def _type_hints(cls) -> dict[str, Any]:
    """The class's resolved annotations, evaluated once (typing.get_type_hints costs milliseconds per call, and
    validating a grid of configurations asks for every field of every configuration)."""
    return typing.get_type_hints(cls)


def _literal_values(tp) -> tuple | None:
    if typing.get_origin(tp) is Literal:
        return typing.get_args(tp)
    return None


def _hparam_owners(key: str) -> list[str]:
    return [name for name, spec in _algorithms().items() if key in fields_of(spec.hparams)]


def _hparam_names(algorithm) -> list[str]:
    spec = _algorithms().get(algorithm) if isinstance(algorithm, str) else None
    return list(fields_of(spec.hparams)) if spec is not None else []


def _model_name(model, dataset) -> str | None:
    """The model a config runs: `model`, or the dataset's default when it is "auto" (None if unknown)."""
    if model != "auto":
        return model
    spec = _datasets().get(dataset) if isinstance(dataset, str) else None
    return spec.default_model if spec is not None else None


def _model_option_owners(key: str) -> list[str]:
    return [name for name, spec in _models().items() if key in fields_of(spec.options)]


def _model_option_names(model) -> list[str]:
    spec = _models().get(model) if isinstance(model, str) else None
    return list(fields_of(spec.options)) if spec is not None else []


def _all_hparam_names() -> list[str]:
    return sorted({k for spec in _algorithms().values() for k in fields_of(spec.hparams)}
                  | {k for spec in _models().values() for k in fields_of(spec.options)})


def _choice(name, value, allowed):
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not known; allowed: {', '.join(map(str, allowed))}")


def _positive_int(name, v):
    if v < 1:
        raise ConfigError(f"{name}={v} must be a positive integer (>= 1)")


def _nonneg_int(name, v):
    if v < 0:
        raise ConfigError(f"{name}={v} must be a non-negative integer (>= 0)")


def _positive_float(name, v):
    if not v > 0 or v != v or v == float("inf"):
        raise ConfigError(f"{name}={v} must be a finite number > 0")


def _nonneg_float(name, v):
    if not v >= 0 or v == float("inf"):
        raise ConfigError(f"{name}={v} must be a finite number >= 0")


def _range(name, v, lo, hi, lo_open=False, hi_open=False):
    ok_lo = v > lo if lo_open else v >= lo
    ok_hi = v < hi if hi_open else v <= hi
    if not (ok_lo and ok_hi):
        lb = "(" if lo_open else "["
        rb = ")" if hi_open else "]"
        raise ConfigError(f"{name}={v} is out of range; allowed: {lb}{lo}, {hi}{rb}")
