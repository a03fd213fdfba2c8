"""The same FedAvg job on fedlib, a bare PyTorch loop, pfl and Flower: speed, start-up, CPU, memory, accuracy.

Every contestant gets one job (`Job`): the same data, the same Dirichlet split, the same initial weights, the same
cohort schedule and the same minibatches (client c's step k of round r uses the same sample indices everywhere).
The split, the cohorts and the minibatch order are drawn once by fedlib's own samplers (a planning `Simulation`
that never trains) and handed to the others, so the runs differ only in how each framework executes the work (the
peers' processes build that planning Simulation too: their start-up and memory include it):

  bare         one nn.Module, torch.optim.SGD, the sampled clients one after another, uniform mean of the models
  fedlib-loop  fedlib FedAvg, `oracle=loop` (the default on CPU)
  fedlib-vmap  fedlib FedAvg, `oracle=vmap` (torch.func over the cohort)
  pfl          pfl-research's FederatedAveraging with its SimulatedBackend (PyTorchModel, local SGD)
  flower       Flower's simulation (`flwr.simulation.run_simulation`, Ray backend, legacy FedAvg strategy);
               one Ray worker (`num_cpus=1`), so its clients also run one after another

Each repetition runs every contestant once, in turn, each in a fresh process (interleaved: a change of machine load
hits every contestant alike), with one torch thread. Per run it records the wall time of every round, the time
to round 1 (launch to the end of round 1: interpreter, imports, data, Ray, and round 1), CPU seconds of the whole
process tree, peak memory of the tree (the sum of RSS over the process and all its descendants, sampled with psutil
every 0.05 s; Flower starts Ray workers) and the final test accuracy. Steady-state s/round is the median round time
of one run without the first `--warmup` rounds and the last (which evaluates); the table prints min / median of
those over the repetitions and the ratio of medians to the bare loop measured in the same invocation.
`--json FILE` keeps every run's measurements; `--table FILE` prints the table of such a file again.

Job (the defaults): MNIST 8,000 train / 2,000 test images from the t10k idx files in `--mnist DIR`
(t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]; a fixed seeded permutation of the 10,000), 50 clients, one
Dirichlet alpha = 0.5 split (fedlib's `dirichlet` partitioner), fedlib's `cnn_mnist` (conv5x5 10/20, fc 50: the
classic "CNNMnist" of FL code bases, 21,840 parameters), 10 local SGD steps of batch 32, lr 0.05, 30 rounds, 10
clients per round, uniform aggregation. Without `--mnist` the job runs on the offline `digits` set fedlib ships
(8x8 images, model `cnn`), and the output says so.

    python bench/peers.py --mnist DIR                          # the issue's default setting
    python bench/peers.py --mnist DIR --clients-per-round 50   # and the other settings
    python bench/peers.py --mnist DIR --local-steps 100
    python bench/peers.py --contestants bare,fedlib-loop --rounds 5 --reps 1          # quick, digits

Installing the peers (optional extra `peers`: flwr[simulation], pfl, psutil). `pip install -e ".[peers]"` into
fedlib's own environment downgrades packages others may need (with torch 2.13 / numpy 2.4 it wants ray 2.55.1 and
protobuf 6 for flwr 1.42 and pfl 0.6.0), and an unpinned resolve may replace a CPU torch by a CUDA build, so pin
torch and numpy with a constraints file, or install the peers into their own environment layered over fedlib's:

    python -m venv venv-peers
    echo "import site; site.addsitedir('$VIRTUAL_ENV/lib/python3.11/site-packages')" \\
        > venv-peers/lib/python3.11/site-packages/zz_fedlib_base.pth     # fedlib's packages, after the venv's own
    python -c "import torch, numpy; print('torch==' + torch.__version__.split('+')[0]); print('numpy==' + \\
        numpy.__version__)" > constraints.txt                            # keep this torch and numpy
    venv-peers/bin/pip install -c constraints.txt -e ".[peers]"
    venv-peers/bin/python bench/peers.py --mnist DIR

A peer that is not installed is skipped with one line; the rest still runs.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

CONTESTANTS = ("bare", "fedlib-loop", "fedlib-vmap", "pfl", "flower")
PEER_MODULES = {"pfl": "pfl", "flower": "flwr"}          # the import a peer needs
RESULT_TAG = "PEERS_RESULT "                             # a worker's last stdout line: this tag + JSON
MNIST_TRAIN, MNIST_TEST = 8000, 2000
SAMPLE_EVERY_S = 0.05


# ---------------------------------------------------------------------------------------------- the job
@dataclass(frozen=True)
class Job:
    """Everything that defines the work; identical for every contestant."""

    mnist: str | None = None          # folder with the t10k idx files; None = the offline digits set
    n_clients: int = 50
    clients_per_round: int = 10
    local_steps: int = 10
    batch_size: int = 32
    lr: float = 0.05
    rounds: int = 30
    alpha: float = 0.5
    seed: int = 0
    device: str = "cpu"               # cpu or cuda: where bare and fedlib train (the plan is always drawn on CPU)

    @property
    def dataset(self) -> str:
        return "mnist" if self.mnist else "digits"

    @property
    def model(self) -> str:
        return "cnn_mnist" if self.mnist else "cnn"

    def fedlib_config(self, oracle: str, device: str | None = None) -> dict:
        return dict(dataset=self.dataset, model=self.model, algorithm="fedavg", partition="dirichlet",
                    alpha=self.alpha, n_clients=self.n_clients, clients_per_round=self.clients_per_round,
                    local_steps=self.local_steps, batch_size=self.batch_size, lr=self.lr, rounds=self.rounds,
                    eval_every=self.rounds, aggregation="uniform", oracle=oracle,
                    device=device or self.device, threads=1, seed=self.seed, progress=False)


def mnist_t10k(folder: str):
    """MNIST's t10k idx files as a FedDataset: 8,000 train / 2,000 test images, a fixed seeded permutation."""
    from fedlib.data import FedDataset
    from fedlib.data.images import SOURCES, read_idx

    paths = [_idx_file(Path(folder), stem) for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")]
    images, labels = read_idx(paths[0]), read_idx(paths[1]).astype(np.int64)
    if images.shape != (10_000, 28, 28) or labels.shape != (10_000,):
        raise SystemExit(f"{paths[0]} / {paths[1]}: expected 10,000 28x28 images and labels, got {images.shape} "
                         f"and {labels.shape}")
    order = np.random.default_rng(0).permutation(len(labels))
    train, test = order[:MNIST_TRAIN], order[MNIST_TRAIN:MNIST_TRAIN + MNIST_TEST]
    src = SOURCES["mnist"]
    return FedDataset(name="mnist", task="classification",
                      x_train=torch.from_numpy(images[train][:, None].copy()), y_train=torch.from_numpy(labels[train]),
                      x_test=torch.from_numpy(images[test][:, None].copy()), y_test=torch.from_numpy(labels[test]),
                      num_classes=10, mean=src.mean, std=src.std, source=f"MNIST t10k idx files in {folder}")


def _idx_file(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(f"--mnist {folder}: no {stem} or {stem}.gz there; give the folder with MNIST's t10k idx files")


def load_job_data(job: Job):
    from fedlib.data import load_dataset

    return mnist_t10k(job.mnist) if job.mnist else load_dataset("digits")


class Plan:
    """The job's split, initial weights, cohorts and minibatches, drawn by fedlib's samplers (a planning Simulation
    with the job's configuration that never trains; fedlib's own runs draw the very same sequence)."""

    def __init__(self, job: Job, data) -> None:
        import fedlib
        from fedlib.engine import Simulation

        fedlib.set_up_process()   # malloc as it was when Simulation set it (torch is loaded: no CPU pin)
        self.job = job
        self.sim = Simulation(job.fedlib_config("loop", device="cpu"), data=data)   # fedlib draws on CPU anyway
        self.x0 = self.sim.server["x"].clone()

    @property
    def split(self) -> list[np.ndarray]:
        """Each client's train indices (the Dirichlet split)."""
        index, sizes = self.sim.index.numpy(), self.sim.sizes.tolist()
        return [index[i, :n] for i, n in enumerate(sizes)]

    def next_round(self) -> list[tuple[int, np.ndarray]]:
        """The next round's cohort: (client id, [K, B] train indices of its K minibatches), in client order."""
        sim, K, B = self.sim, self.job.local_steps, self.job.batch_size
        cohort = sim.sample_cohort()
        perm = sim.batch_positions(cohort)                       # each client's fresh permutation of its data
        sizes = sim.sizes[cohort]
        pos = (torch.arange(K * B)[None, :] % sizes[:, None])    # step k uses positions kB .. kB+B-1, wrapping
        rows = torch.gather(perm, 1, pos)
        idx = torch.gather(sim.index[cohort], 1, rows).view(-1, K, B)
        return list(zip(cohort.tolist(), idx.numpy()))


def normalised_images(data) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole train split as model input once (what a peer's dataset holds), and the test split."""
    from fedlib.data import prepare_batch

    return prepare_batch(data, data.x_train), prepare_batch(data, data.x_test)


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        correct = sum(int((model(x[i:i + 2048]).argmax(1) == y[i:i + 2048]).sum()) for i in range(0, len(y), 2048))
    return correct / len(y)


def fresh_model(plan: Plan) -> torch.nn.Module:
    """A module of the job's architecture holding the shared initial weights."""
    from fedlib.models import build_model

    data = plan.sim.data
    model = build_model(plan.job.model, data.input_shape, data.num_classes)
    load_flat(model, plan.x0)
    return model


def load_flat(model: torch.nn.Module, x: torch.Tensor) -> None:
    """Copy flat weights into the module (vector_to_parameters would make the parameters views of `x`, so that
    training the module would change `x`)."""
    with torch.no_grad():
        start = 0
        for p in model.parameters():
            p.copy_(x[start:start + p.numel()].view_as(p))
            start += p.numel()


# ---------------------------------------------------------------------------------------------- contestants
@dataclass
class Outcome:
    """What one contestant's run leaves: round end times (time.time()), weights, accuracy."""

    round_ends: list[float]
    x0: torch.Tensor
    x: torch.Tensor
    accuracy: float
    split: list[np.ndarray]


def run_fedlib(job: Job, data, oracle: str) -> Outcome:
    from fedlib.engine import Simulation

    sim = Simulation(job.fedlib_config(oracle), data=data)
    x0, ends = sim.server["x"].clone(), []
    record: dict = {}
    while not sim.finished:
        record = sim.run_round()
        _sync(job)
        ends.append(time.time())
    split = [sim.index[i, :n].cpu().numpy() for i, n in enumerate(sim.sizes.tolist())]
    return Outcome(ends, x0.cpu(), sim.server["x"].cpu().clone(), float(record["test_acc"]), split)


def _sync(job: Job) -> None:
    """Wait for the GPU's queued work, so that a round's end time is when its work is done."""
    if job.device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_round(model: torch.nn.Module, x: torch.Tensor, cohort, train_x, train_y, lr: float) -> torch.Tensor:
    """One FedAvg round the hand-written way: client after client, module + SGD, then the mean of the models."""
    total = torch.zeros_like(x)
    for _, batches in cohort:
        load_flat(model, x)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        for idx in batches:
            idx = torch.from_numpy(idx).to(train_x.device)
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(train_x[idx]), train_y[idx]).backward()
            opt.step()
        total += torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    return total / len(cohort)


def run_bare(job: Job, data) -> Outcome:
    plan = Plan(job, data)
    dev = torch.device(job.device)
    model = fresh_model(plan).to(dev)
    train_x, test_x = (t.to(dev) for t in normalised_images(data))
    train_y, test_y = data.y_train.to(dev), data.y_test.to(dev)
    x, ends = plan.x0.to(dev), []
    for _ in range(job.rounds):
        x = bare_round(model, x, plan.next_round(), train_x, train_y, job.lr)
        _sync(job)
        ends.append(time.time())
    load_flat(model, x)
    return Outcome(ends, plan.x0, x.cpu(), accuracy(model, test_x, test_y), plan.split)


class PflCohorts:
    """pfl's user sampler and dataset maker, fed by the plan: the ids of each round's cohort in order, and each
    client's dataset = its K minibatches of the round back to back (pfl iterates a user dataset in order)."""

    def __init__(self, plan: Plan, train_x: torch.Tensor, train_y: torch.Tensor) -> None:
        self.plan, self.train_x, self.train_y = plan, train_x, train_y
        self.pending: list[tuple[int, np.ndarray]] = []
        self.batches: dict[int, np.ndarray] = {}

    def sample(self) -> int:
        if not self.pending:
            self.pending = self.plan.next_round()
            self.batches = dict(self.pending)
        return self.pending.pop(0)[0]

    def dataset(self, client: int):
        from pfl.data.dataset import Dataset

        idx = torch.from_numpy(self.batches[client].reshape(-1))
        return Dataset(raw_data=[self.train_x[idx], self.train_y[idx]], user_id=str(client))


def pfl_module(model: torch.nn.Module) -> torch.nn.Module:
    """The job's module with the `loss` and `metrics` methods pfl's PyTorchModel calls."""
    from pfl.metrics import Weighted

    class PflModule(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = model

        def forward(self, x):
            return self.net(x)

        def loss(self, x, y, eval=False):       # noqa: A002 (pfl's keyword)
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def metrics(self, x, y, eval=True):     # noqa: A002
            with torch.no_grad():
                logits = self.net(x)
            loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
            return {"loss": Weighted(float(loss), len(y)),
                    "accuracy": Weighted(float((logits.argmax(1) == y).sum()), len(y))}

    return PflModule()


def run_pfl(job: Job, data) -> Outcome:
    """pfl's FederatedAveraging (central SGD with lr 1 on the mean model difference) in its SimulatedBackend."""
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.callback.base import TrainingProcessCallback
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams
    from pfl.metrics import Metrics
    from pfl.model.pytorch import PyTorchModel

    plan = Plan(job, data)
    train_x, test_x = normalised_images(data)
    cohorts = PflCohorts(plan, train_x, data.y_train)
    module = pfl_module(fresh_model(plan))
    ends: list[float] = []

    class RoundClock(TrainingProcessCallback):
        def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
            ends.append(time.time())
            return False, Metrics()

    training = FederatedDataset(cohorts.dataset, cohorts.sample)
    model = PyTorchModel(module, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(module.parameters(), lr=1.0))
    FederatedAveraging().run(
        algorithm_params=NNAlgorithmParams(central_num_iterations=job.rounds, evaluation_frequency=job.rounds + 1,
                                           train_cohort_size=job.clients_per_round, val_cohort_size=0),
        backend=SimulatedBackend(training_data=training, val_data=training),
        model=model,
        model_train_params=NNTrainHyperParams(local_batch_size=job.batch_size, local_num_epochs=None,
                                              local_learning_rate=job.lr, local_num_steps=job.local_steps),
        model_eval_params=NNEvalHyperParams(local_batch_size=2048),
        callbacks=[RoundClock()], send_metrics_to_platform=False)
    x = torch.nn.utils.parameters_to_vector(module.net.parameters()).detach().clone()
    return Outcome(ends, plan.x0, x, accuracy(module.net, test_x, data.y_test), plan.split)


def run_flower(job: Job, data) -> Outcome:
    """Flower's simulation engine (Ray backend, one worker) with the legacy FedAvg strategy; the server hands each
    sampled node the plan's client and minibatch indices in its fit config, and evaluates centrally."""
    import flwr.simulation
    from flwr.client import NumPyClient
    from flwr.clientapp import ClientApp
    from flwr.common import FitIns, ndarrays_to_parameters
    from flwr.server import ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.serverapp import ServerApp

    plan = Plan(job, data)
    train_x, test_x = normalised_images(data)
    train_y, model = data.y_train, fresh_model(plan)
    ends: list[float] = []
    final: dict = {}

    def to_arrays(x: torch.Tensor) -> list[np.ndarray]:
        load_flat(model, x)
        return [p.detach().numpy().copy() for p in model.parameters()]

    class Client(NumPyClient):
        def fit(self, parameters, config):
            torch.set_num_threads(1)
            load_flat(model, torch.cat([torch.from_numpy(p).reshape(-1) for p in parameters]))
            opt = torch.optim.SGD(model.parameters(), lr=job.lr)
            batches = np.frombuffer(config["batches"], dtype=np.int64).reshape(job.local_steps, job.batch_size)
            for idx in batches:
                idx = torch.from_numpy(idx.copy())
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(model(train_x[idx]), train_y[idx]).backward()
                opt.step()
            return [p.detach().numpy().copy() for p in model.parameters()], 1, {}   # weight 1: a uniform mean

    class PlannedFedAvg(FedAvg):
        def configure_fit(self, server_round, parameters, client_manager):
            cohort = plan.next_round()
            nodes = client_manager.sample(num_clients=len(cohort), min_num_clients=len(cohort))
            return [(node, FitIns(parameters, {"client": client, "batches": batches.astype(np.int64).tobytes()}))
                    for node, (client, batches) in zip(nodes, cohort)]

        def configure_evaluate(self, server_round, parameters, client_manager):
            return []

    def evaluate(server_round, arrays, config):
        if server_round >= 1:
            ends.append(time.time())
        if server_round == job.rounds:
            final["x"] = torch.cat([torch.from_numpy(a).reshape(-1) for a in arrays])
            load_flat(model, final["x"])
            final["accuracy"] = accuracy(model, test_x, data.y_test)
        return None

    strategy = PlannedFedAvg(fraction_evaluate=0.0, min_available_clients=job.clients_per_round,
                             evaluate_fn=evaluate, initial_parameters=ndarrays_to_parameters(to_arrays(plan.x0)))
    server = ServerApp(server_fn=lambda context: ServerAppComponents(
        strategy=strategy, config=ServerConfig(num_rounds=job.rounds)))
    client = ClientApp(client_fn=lambda context: Client().to_client())
    flwr.simulation.run_simulation(
        server_app=server, client_app=client, num_supernodes=job.n_clients,
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                        "init_args": {"num_cpus": 1, "num_gpus": 0, "include_dashboard": False}})
    if "x" not in final:
        raise RuntimeError(f"Flower's simulation ended after {len(ends)} of {job.rounds} rounds")
    return Outcome(ends, plan.x0, final["x"], final["accuracy"], plan.split)


RUNNERS = {
    "bare": run_bare,
    "fedlib-loop": lambda job, data: run_fedlib(job, data, "loop"),
    "fedlib-vmap": lambda job, data: run_fedlib(job, data, "vmap"),
    "pfl": run_pfl,
    "flower": run_flower,
}


def run_contestant(name: str, job: Job, data=None) -> Outcome:
    """Run one contestant's whole job in this process (one torch thread)."""
    torch.set_num_threads(1)
    return RUNNERS[name](job, data if data is not None else load_job_data(job))


# ---------------------------------------------------------------------------------------------- measurement
def worker(name: str, job: Job) -> None:
    """The body of one measured process: run, print the result line, and leave at once (a framework's leftover
    threads, e.g. Ray's after a failed start, must not keep the process alive)."""
    import resource

    try:
        out = run_contestant(name, job)
    except Exception as exc:  # noqa: BLE001 -- any failure of a contestant becomes its one-line result
        print(RESULT_TAG + json.dumps({"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}), flush=True)
        os._exit(1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(RESULT_TAG + json.dumps({"round_ends": out.round_ends, "accuracy": out.accuracy,
                                   "self_cpu_s": usage.ru_utime + usage.ru_stime,
                                   "self_maxrss_bytes": usage.ru_maxrss * 1024}), flush=True)
    sys.stderr.flush()
    os._exit(0)


class TreeSampler(threading.Thread):
    """Samples a process and all its descendants: peak summed RSS, and each descendant's latest CPU seconds."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root = psutil.Process(pid)
        self.peak_rss = 0
        self.child_cpu: dict[int, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.done.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except psutil.Error:
                break
            rss = 0
            for p in procs:
                try:
                    rss += p.memory_info().rss
                    if p.pid != self.root.pid:
                        t = p.cpu_times()
                        self.child_cpu[p.pid] = t.user + t.system
                except psutil.Error:
                    continue
            self.peak_rss = max(self.peak_rss, rss)
            self.done.wait(SAMPLE_EVERY_S)


def measure(name: str, job: Job, warmup: int, timeout_s: float) -> dict:
    """Run one contestant in a fresh process and measure it from outside."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--job", json.dumps(asdict(job))]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    launched = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        stdout, stderr = proc.communicate()
        stdout += "\n" + RESULT_TAG + json.dumps({"error": f"no result within {timeout_s:.0f} s (--run-timeout)"})
    sampler.done.set()
    sampler.join()
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_TAG)]
    res = json.loads(lines[-1][len(RESULT_TAG):]) if lines else {"error": f"exit {proc.returncode}, no result"}
    if "error" in res:
        return {"error": res["error"] + framework_reason(stderr)}
    ends = res["round_ends"]
    times = np.diff([launched] + ends)
    steady = float(np.median(times[warmup:-1]))
    return {"steady_s": steady, "first_round_s": float(ends[0] - launched), "accuracy": res["accuracy"],
            "cpu_s": res["self_cpu_s"] + sum(sampler.child_cpu.values()),
            "peak_rss_bytes": max(sampler.peak_rss, res["self_maxrss_bytes"]), "wall_s": ends[-1] - launched}


def framework_reason(stderr: str) -> str:
    """The first exception a framework logged (Flower logs the cause and raises a generic RuntimeError)."""
    causes = [ln.strip() for ln in stderr.splitlines() if ln.startswith("Exception:") or "Error:" in ln[:40]]
    return f" (logged: {causes[0][:200]})" if causes else ""


def kill_tree(proc: subprocess.Popen) -> None:
    """Kill the process we started and every descendant it left (Ray's workers)."""
    import psutil

    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    for p in family:
        try:
            p.kill()
        except psutil.Error:
            continue
    proc.kill()


def available(name: str, device: str = "cpu") -> str | None:
    """None when the contestant can run here, else the one-line reason it cannot."""
    if name in PEER_MODULES and device != "cpu":
        return f"{name}: not run with --device {device} (this benchmark drives the peers on CPU only)"
    if device.startswith("cuda") and not torch.cuda.is_available():
        return f"{name}: --device {device} but torch sees no CUDA device"
    module = PEER_MODULES.get(name)
    if module and importlib.util.find_spec(module) is None:
        return f"{name}: not installed ({module} is not importable; pip install -e \".[peers]\", see the docstring)"
    return None


# ---------------------------------------------------------------------------------------------- the report
def summarise(runs: list[dict]) -> dict:
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return {"error": errors[0]}
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {"min_s": min(r["steady_s"] for r in runs), "median_s": med("steady_s"),
            "first_round_s": med("first_round_s"), "cpu_s": med("cpu_s"),
            "peak_mb": max(r["peak_rss_bytes"] for r in runs) / 2**20,
            "accuracy": [r["accuracy"] for r in runs]}


def table(summary: dict[str, dict]) -> str:
    base = summary.get("bare", {})
    lines = ["| contestant | s/round min / median | ratio to bare (medians) | launch to round 1 done, s | CPU s | "
             "CPU ratio | peak MB (tree) | test accuracy |", "|---|---|---|---|---|---|---|---|"]
    for name, s in summary.items():
        if "error" in s:
            lines.append(f"| {name} | failed: {s['error']} | | | | | | |")
            continue
        ratio = f"{s['median_s'] / base['median_s']:.2f}" if "median_s" in base else "-"
        cpu_ratio = f"{s['cpu_s'] / base['cpu_s']:.2f}" if "cpu_s" in base else "-"
        acc = " / ".join(f"{a:.4f}" for a in s["accuracy"])
        lines.append(f"| {name} | {s['min_s']:.3f} / {s['median_s']:.3f} | {ratio} | {s['first_round_s']:.1f} | "
                     f"{s['cpu_s']:.1f} | {cpu_ratio} | {s['peak_mb']:.0f} | {acc} |")
    return "\n".join(lines)


def header(job: Job, args) -> str:
    data = (f"MNIST t10k ({MNIST_TRAIN} train / {MNIST_TEST} test) from --mnist {job.mnist}, model cnn_mnist"
            if job.mnist else "digits (offline fallback: no --mnist given), model cnn")
    return (f"data: {data}\njob: {job.n_clients} clients, Dirichlet alpha={job.alpha}, {job.clients_per_round} "
            f"clients/round, {job.local_steps} local steps x batch {job.batch_size}, lr {job.lr}, {job.rounds} "
            f"rounds, 1 torch thread\nmachine: {platform.machine()}, {os.cpu_count()} cores, load "
            f"{os.getloadavg()[0]:.1f} at start, python {platform.python_version()}, torch {torch.__version__}"
            f"{peer_versions()}\ndevice: {device_name(job.device)}"
            f"\nsteady state: median round without the first {args.warmup} and the last; "
            f"{args.reps} interleaved repetitions")


def device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


def peer_versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("flwr", "pfl", "ray"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return (", " + ", ".join(out)) if out else ""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mnist", help="folder with MNIST's t10k idx files (without it: the offline digits set)")
    p.add_argument("--clients-per-round", type=int, default=10)
    p.add_argument("--local-steps", type=int, default=10)
    p.add_argument("--n-clients", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda: where bare and fedlib train; the peers "
                   "run on CPU only")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions of every contestant")
    p.add_argument("--warmup", type=int, default=3, help="first rounds left out of the steady state")
    p.add_argument("--contestants", default=",".join(CONTESTANTS))
    p.add_argument("--run-timeout", type=float, default=900, help="seconds one run may take before it is killed")
    p.add_argument("--json", help="also write every run's measurements here")
    p.add_argument("--table", metavar="JSON", help="print the table of a --json file again, and run nothing")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        return worker(args.worker, Job(**json.loads(args.job)))
    if args.table:
        saved = json.loads(Path(args.table).read_text())
        print(saved["header"] + "\n" + table({n: summarise(r) for n, r in saved["runs"].items()}))
        return None
    job = Job(mnist=args.mnist, n_clients=args.n_clients, clients_per_round=args.clients_per_round,
              local_steps=args.local_steps, batch_size=args.batch_size, lr=args.lr, rounds=args.rounds,
              device=args.device)
    if args.rounds < args.warmup + 2:
        raise SystemExit(f"--rounds {args.rounds} leaves no steady round; allowed: >= --warmup + 2 = {args.warmup + 2}")
    names = [n.strip() for n in args.contestants.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONTESTANTS]
    if unknown:
        raise SystemExit(f"unknown contestant {unknown[0]}; allowed: {', '.join(CONTESTANTS)}")
    if importlib.util.find_spec("psutil") is None:
        raise SystemExit("bench/peers.py measures process trees with psutil: pip install psutil (or the [peers] extra)")
    load_job_data(job)                                # a missing or corrupt --mnist folder fails here, in one line
    head = header(job, args)
    print(head, flush=True)
    refused = {n: why for n in names if (why := available(n, job.device))}
    for why in refused.values():
        print(why, flush=True)
    names = [n for n in names if n not in refused]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for rep in range(args.reps):
        for name in names:
            if any("error" in r for r in runs[name]):
                continue                              # a contestant that failed once is not retried
            runs[name].append(measure(name, job, args.warmup, args.run_timeout))
            print(f"rep {rep + 1} {name}: {runs[name][-1]}", flush=True)
    print(table({n: summarise(r) for n, r in runs.items()}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"header": head, "job": asdict(job), "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
