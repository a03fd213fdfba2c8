"""A typed, validated run configuration.

Every field has a type, a default and a rule. `RunConfig.from_dict` coerces strings from the command line,
refuses unknown keys, and `validate()` checks every rule before any compute starts. Errors are ConfigError with a
one-line message naming the field and what is allowed.

Kept as one module (over 400 lines) because the fields, their rules and the fingerprint rule (NON_NUMERIC,
ADAPTIVE_FIELDS) are one contract, the run-cache key, and this module may load only the leaves fedlib.errors and
fedlib.hparams (tests/pipeline/test_imports.py), so the lazy registry look-ups and value checks it needs stay here as
well.
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
from typing import Any, Literal

from fedlib.errors import ConfigError, Refused  # noqa: F401  -- re-exported: `from fedlib.config import Refused` works
from fedlib.hparams import build, coerce_value, fields_of

MAX_THREADS = 1024
MAX_SEED = 2**32 - 1       # generators are seeded with seed·1_000_003 + k, which must fit torch's 64-bit seed


@dataclass
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
    # GPU switches (fedlib/gpu_options.py), off by default; each one that is on is fingerprinted
    channels_last: bool = False             # NHWC activations in the CNNs' stacked forward
    cudnn_benchmark: bool = False           # cuDNN picks its algorithms by timing them
    cuda_graph: bool = False                # the stacked oracle call captured as a CUDA graph and replayed
    compile: bool = False                   # torch.compile of the stacked forward and loss
    checkpoint_every: int = 0               # rounds; 0 = no checkpoints
    data_dir: str | None = None          # None = $FEDLIB_DATA or ~/.cache/fedlib
    progress: bool = True
    # the chosen algorithm's own hyperparameters (fedlib/hparams.py); flat keys on the CLI and in YAML
    hparams: dict[str, Any] = field(default_factory=dict)
    # the chosen model's own settings (fedlib/models: ModelSpec.options, e.g. LoRA rank); flat keys as well
    model_options: dict[str, Any] = field(default_factory=dict)

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
                if not isinstance(raw, dict):
                    raise ConfigError(f"hparams={raw!r} must be a mapping of the algorithm's hyperparameters")
                hparams.update(raw)
            elif key == "model_options":
                if raw is None:
                    continue
                if not isinstance(raw, dict):
                    raise ConfigError(f"model_options={raw!r} must be a mapping of the model's options")
                model_options.update(raw)
            elif key in known:
                kwargs[key] = coerce_value(key, raw, _field_type(cls, key))
            else:
                owners = _hparam_owners(key)
                if isinstance(algorithm, str) and algorithm in owners:
                    hparams[key] = raw
                    continue
                if key in ADAPTIVE_FIELDS:      # a shared adaptive setting this algorithm does not have
                    default = ADAPTIVE_FIELDS[key]
                    if _same(raw, default):
                        continue    # at its default: a record written while it was a RunConfig field carries it
                    build(_algorithms()[owners[0]].hparams, {key: raw}, owners[0])   # a bad value named as such
                    raise ConfigError(f"{key}={_typed(raw, default)!r} is not read by algorithm={algorithm}; it is a "
                                      f"setting of {', '.join(owners)}; allowed: leave {key} unset (default "
                                      f"{default!r})")
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
        if self.resolved and set(changes) <= set(NON_NUMERIC):
            typed = {key: coerce_value(key, raw, _field_type(RunConfig, key)) for key, raw in changes.items()}
            return dataclasses.replace(self, **typed).validate().bind()
        return RunConfig.from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # ------------------------------------------------------------------ resolution
    # `engine.resolve` fills the defaults once and then binds the typed hyperparameters and model options to the
    # configuration (`bind`): a bound configuration is resolved, read-only, and is what the driver, the simulation
    # and the worker processes accept as is. The binding lives in the instance's __dict__, not in a field, so it
    # travels with pickling and never enters `to_dict` or the fingerprint.
    def bind(self) -> RunConfig:
        """Mark this (fully resolved) configuration resolved: build its hyperparameters and model options once and
        make it read-only. Called by `fedlib.engine.resolve`, which is how a configuration should be resolved."""
        hp, opts = self._build_hp(), self._build_model_opts()
        self.__dict__["_bound"] = (hp, opts)
        return self

    @property
    def resolved(self) -> bool:
        return "_bound" in self.__dict__

    def __setattr__(self, name: str, value: Any) -> None:
        if "_bound" in self.__dict__:
            raise AttributeError(f"a resolved RunConfig is read-only (setting {name}); use cfg.replace({name}=...) "
                                 f"and resolve the result")
        object.__setattr__(self, name, value)

    @property
    def hp(self):
        """The chosen algorithm's hyperparameters as its typed, validated dataclass (None if it has none): bound
        once on a resolved configuration, built on each read otherwise."""
        bound = self.__dict__.get("_bound")
        return bound[0] if bound is not None else self._build_hp()

    @property
    def model_opts(self):
        """The chosen model's own settings as its typed, validated dataclass (None if it has none)."""
        bound = self.__dict__.get("_bound")
        return bound[1] if bound is not None else self._build_model_opts()

    def _build_hp(self):
        spec = _algorithms().get(self.algorithm)
        if spec is None or spec.hparams is None:
            return None
        return build(spec.hparams, self.hparams, self.algorithm)

    def _build_model_opts(self):
        spec = _models().get(_model_name(self.model, self.dataset))
        if spec is None or spec.options is None:
            return None
        return build(spec.options, self.model_options, spec.name, owner="model")

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
        """The fields that change the numbers of a run (not where or how visibly it runs).

        The oracle path (resolved by `engine.resolve`) and the dtype are in: the two paths agree per call only to
        float tolerance, so their records must never share a cache key. So are the thread count (a reduction split
        over more threads sums in another order) and the CPU math path (fedlib/cpu_path.py), resolved by
        `engine.resolve`. NON_NUMERIC lists the fields that cannot change the numbers.
        """
        d = self.flat_dict()
        for key in NON_NUMERIC:
            d.pop(key)
        if d["autocast"] == "off":    # full precision keeps the fingerprints it had before the field existed
            d.pop("autocast")
        if not d["hparams"]:          # algorithms without hyperparameters keep their earlier fingerprints
            d.pop("hparams")
        if d["bptt"] == 35:           # the default window length leaves earlier fingerprints unchanged
            d.pop("bptt")
        if not d["eval_local"]:       # an extra metric, off by default: earlier fingerprints unchanged
            d.pop("eval_local")
        if not d["model_options"]:    # so do models without options
            d.pop("model_options")
        for key in ("channels_last", "cudnn_benchmark", "cuda_graph", "compile"):   # GPU switches that are off
            if not d[key]:
                d.pop(key)
        if d["color_jitter"] is None:  # runs without the colour perturbation keep their earlier fingerprints
            d.pop("color_jitter")
        return d

    def flat_dict(self) -> dict[str, Any]:
        """`to_dict` with the algorithm's shared adaptive hyperparameters (ADAPTIVE_FIELDS) at the top level, where
        they were RunConfig fields until 2026-12-05: the fingerprint and the cost table's keys are computed from this
        layout, so the run records and cost entries written before the move keep their keys."""
        d = self.to_dict()
        own = dict(d["hparams"])
        d.update({key: own.pop(key) for key in ADAPTIVE_FIELDS if key in own})
        d["hparams"] = own
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

#: Hyperparameters that several adaptive algorithms share (Adam's β1, β2, ε, the v̂ reading, the tracking subset,
#: FedLADA's α), with their default, the same in every algorithm that has it (tests/core/test_shared_fields.py). They
#: were RunConfig fields until 2026-12-05 (`flat_dict` keeps that layout for the keys). A params block shared by several
#: algorithms passes its configurations through `drop_unread`, which leaves each algorithm only those it has; given
#: to an algorithm without it, a value other than the default is refused, so `tracking_size=1` never silently does
#: nothing for FedAvg.
ADAPTIVE_FIELDS = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "vhat_init": "v1", "tracking_size": None,
                   "tracking_init": "zeros", "lada_alpha": 0.5}


def algorithm_reads(algorithm: str) -> tuple[str, ...]:
    """The shared adaptive hyperparameters `algorithm` has (all of them for a name that is not registered:
    validation refuses it anyway)."""
    spec = _algorithms().get(algorithm)
    return tuple(ADAPTIVE_FIELDS) if spec is None else tuple(k for k in fields_of(spec.hparams)
                                                             if k in ADAPTIVE_FIELDS)


def drop_unread(values: dict[str, Any]) -> dict[str, Any]:
    """A config dict without the shared adaptive settings its algorithm does not have (for blocks shared by several
    algorithms, e.g. a `run:` block that sets FAdamGT's tracking_size beside FedAvg)."""
    reads = algorithm_reads(values.get("algorithm", RunConfig.algorithm))
    return {k: v for k, v in values.items() if k not in ADAPTIVE_FIELDS or k in reads}


def adaptive_setting(config: Mapping[str, Any], key: str) -> Any:
    """A shared adaptive setting of a run's config dict: its algorithm's hyperparameter, the top-level field of a
    record written before 2026-12-05, else the default (an algorithm without it ran as if at the default)."""
    own = config.get("hparams") or {}
    return own[key] if key in own else config.get(key, ADAPTIVE_FIELDS[key])


def _typed(raw: Any, default: Any) -> Any:
    """`raw` as the type of a shared setting's default where it converts (for messages), else as it is."""
    try:
        return type(default)(raw) if default is not None else int(raw)
    except (TypeError, ValueError):
        return raw


def _same(raw: Any, default: Any) -> bool:
    """A raw config value (YAML, JSON or a CLI string) equal to a shared setting's default."""
    if raw is None or default is None:
        return raw is None and default is None or str(raw).strip().lower() in ("none", "null") and default is None
    try:
        return type(default)(raw) == default
    except (TypeError, ValueError):
        return False


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
