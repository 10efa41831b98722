r"""Benchmark 1 (issue 9): Li2 training at the Fig. 3 size, the project's batched trainer vs an
author-style loop over seeds, in epochs x seeds per second for 1, 16 and 64 seeds.

The task (verify/claims/li2/SOURCES.md §5, Fig. 3, as the third party reads it): :math:`\mathbb
Z_{71}`,
:math:`K = 2048`, training fraction 0.4 (:math:`n = 2016`), :math:`\sigma(x)=x^2`, the code's
class-centred MSE, Adam with lr :math:`10^{-3}` and weight decay :math:`\eta = 2\times10^{-4}`,
float32, full batch, one step per epoch.

* Project: :class:`numerics.li2.trainer.GroupTrainer` with all seeds on the batch axis; the
  training loss and accuracy every epoch (from the step's own forward pass), the test metrics
  and the diagnostics groups ``--diagnostics`` (default: the trainer's default groups,
  ``gradient``, ``gram`` on all nodes and samples, ``energy``, ``updates``) every 50 epochs;
  no host synchronisation in the loop. At one seed also "step only": no diagnostics groups
  (test metrics still every 50 epochs).
* Baseline (the issue's: "a straightforward per-seed loop with dense one-hot inputs,
  per-epoch diagnostics and host syncs"), written the way the author's script is (SOURCES
  §6.2-§6.5; ``modular_addition_simple2.py``), one seed at a time: a frozen identity
  ``nn.Embedding`` makes the two one-hot operands, concatenated into dense :math:`2M` inputs,
  then ``nn.Linear(2M, K)``, :math:`x^2`, ``nn.Linear(K, M)`` (autograd throughout),
  ``torch.optim.Adam``; every epoch, before the step, the training and test sets evaluated
  with ``.item()`` host syncs (loss and accuracy); the training forward pass computes the
  author's per-epoch diagnostics (SOURCES §6.5: the :math:`K\times K` Gram of
  :math:`\tilde F`, the :math:`n\times n` Gram :math:`FF^\top` and its centred form, each
  reduced and read with ``.item()``, and :math:`\|(Y_c-\hat Y)V^\top\|`) and keeps a copy
  of :math:`F`, then backward and step. Same initialisation (``nn.Linear``'s, as the trainer
  draws it), same split, same math. No checkpoints are written (the script writes one every
  epoch for the first 200).
* Baseline without the per-epoch diagnostics (one seed, informative): the same loop with the
  evaluations and their syncs but without the Grams, :math:`\|G_F\|` and the copy: what a
  bare author-style loop costs, so the table separates the two sources of the speed-up
  (the step itself, and diagnostics every epoch vs every 50).

Same curve, checked before timing: seed 0 is trained ``--check-epochs`` epochs by the project
and by the author-style loop, in float64 and in float32; the training loss of every epoch must
agree to ``1e-9`` (float64: the same mathematics; rounding differs only through the order of
summation, about :math:`10^{-16}` per evaluation, and Adam's normalised steps carry relative
gradient errors into the weights without amplifying them, so thirty steps stay near
:math:`10^{-14}`; the margin still sits seven orders below float32 rounding, so a float32
operation in either path would fail it) and ``1e-4`` (float32: every loss and gradient entry
is a sum of up to :math:`2K` or :math:`n` float32 terms, rounding error up to about
:math:`\sqrt{n}\,u \approx 3\times10^{-6}` relative per evaluation; the table also shows each
float32 curve's distance from its float64 twin, which is what that tolerance bounds).

Timing (``benchmarks/common.py``): interleaved repeats, min of repeats, CPU time as the
cross-check. Each variant is timed on ``--epochs`` epochs (project) or ``--baseline-epochs``
(baseline, whose cost per epoch and seed does not depend on the number of seeds or epochs, so
the 16- and 64-seed loops run fewer epochs) and reported per epoch and seed. The project's
epoch counts are multiples of 50, so every timed run carries its share of diagnostics
exactly. Construction (splits, initialisation, data) is not timed, for either side.

Run: ``python benchmarks/bench_trainer.py`` (2 torch threads by default; about 10 minutes on
2 quiet cores); ``--device cuda`` and ``--compile reduce-overhead`` for the GPU path.
"""
from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import common
import torch

from numerics.li2.trainer import DEFAULT_DIAGNOSTICS, GroupTrainer, Hyper, TrainConfig
from numerics.li2.trainer.init import _init_weights

NAME = "trainer"
M, K, P, LR, ETA = 71, 2048, 0.4, 1e-3, 2e-4
EVERY = 50
BASELINE = "author-style loop"
BARE = "author-style loop, no per-epoch diagnostics"
CHECK_TOLERANCE = {torch.float64: 1e-9, torch.float32: 1e-4}   # see the module docstring


def cyclic_table(M: int) -> list[list[int]]:
    """The Cayley table of :math:`\\mathbb Z_M`: ``table[a][b] = (a + b) mod M``."""
    return [[(a + b) % M for b in range(M)] for a in range(M)]


def project_trainer(seeds: int, diagnostics: Sequence[str], *, device: str,
                    dtype: torch.dtype = torch.float32, compile: str | None = None
                    ) -> GroupTrainer:
    config = TrainConfig(K=K, activation="x2", loss="mse_class", eval_every=EVERY,
                         diag_every=EVERY, diagnostics=tuple(diagnostics))
    hyper = Hyper.batch(seed=list(range(seeds)), eta=ETA, lr=LR, p=P)
    return GroupTrainer(cyclic_table(M), hyper, config, device=device, dtype=dtype,
                        compile=compile)


class AuthorNet(torch.nn.Module):
    """The author's two-layer model with the square activation, as an ``nn.Module``."""

    def __init__(self, W: torch.Tensor, Vt: torch.Tensor) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(M, M).requires_grad_(False)
        self.W = torch.nn.Linear(2 * M, K, bias=False)
        self.V = torch.nn.Linear(K, M, bias=False)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.eye(M))
            self.W.weight.copy_(W.T)
            self.V.weight.copy_(Vt)
        self.kept: torch.Tensor | None = None

    def hidden(self, ops: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.embedding(ops[:, 0]), self.embedding(ops[:, 1])], dim=1)
        return self.W(x).pow(2)

    def forward(self, ops: torch.Tensor) -> torch.Tensor:
        return self.V(self.hidden(ops))


def author_mse(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    r"""The code's MSE (SOURCES §6.3): :math:`\frac1n\sum_i\|o_i-\bar o_i\|^2-2(o_i-\bar
    o_i)_{y_i}+1-\frac1M`,
    i.e. :math:`\frac1n\sum_i\|P_M^\perp o_i-(e_{y_i}-\frac1M\mathbf 1)\|^2`."""
    centred = out - out.mean(dim=1, keepdim=True)
    return (centred.pow(2).sum(dim=1).mean() - 2 * centred.gather(1, labels[:, None]).mean()
            + 1 - 1.0 / out.shape[1])


def _diag_off(kernel: torch.Tensor) -> tuple[float, float]:
    a = kernel.abs()
    k = kernel.shape[0]
    return a.diag().mean().item(), ((a.sum() - a.diag().sum()) / (k * (k - 1))).item()


class AuthorRun:
    """One seed of the author-style loop: model, ``torch.optim.Adam``, dense data and the
    per-epoch log of train/test loss and accuracy (Python floats, as the script logs them)."""

    def __init__(self, trainer: GroupTrainer, b: int, *, shipped: bool = False) -> None:
        task, dtype, device = trainer.task, trainer.dtype, trainer.device
        W, Vt = _init_weights(trainer.hyper.seed[b], M, K)
        self.model = AuthorNet(W, Vt).to(device=device, dtype=dtype)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR, weight_decay=ETA)
        self.data = {}
        for name, S in (("train", trainer.train_set), ("test", trainer.test_set)):
            index = S.index[b, :int(S.count[b])]
            self.data[name] = (torch.stack([task.left[index], task.right[index]], 1),
                               task.target[index])
        self.shipped = shipped
        self.log: list[dict[str, float]] = []
        labels = self.data["train"][1]
        self.Y_centred = torch.nn.functional.one_hot(labels, M).to(dtype) - 1.0 / M

    def evaluate(self, name: str) -> tuple[float, float]:
        ops, labels = self.data[name]
        self.model.eval()
        with torch.no_grad():
            out = self.model(ops)
            accuracy = (torch.max(out, 1).indices == labels).sum().item() / len(labels)
            loss = author_mse(out, labels).item()
        return loss, accuracy

    def _diagnostics(self, F: torch.Tensor) -> dict[str, float]:
        """What the author's training forward pass computes every epoch (SOURCES §6.5)."""
        centred = F - F.mean(dim=0, keepdim=True)
        ftf_diag, ftf_off = _diag_off(centred.T @ centred)
        kernel = F @ F.T
        n = kernel.shape[0]
        a = kernel.diag().mean().item()
        b = (kernel.sum() - kernel.diag().sum()) / (n * (n - 1))
        ideal = (a - b) * torch.eye(n, dtype=F.dtype, device=F.device) + b
        dist = (torch.norm(ideal - kernel) / torch.norm(kernel)).item()
        fft_diag, fft_off = _diag_off(kernel - kernel.mean(dim=0, keepdim=True))
        grad = torch.norm((self.Y_centred - self.model.V(F)) @ self.model.V.weight).item()
        return {"ftf_diag": ftf_diag, "ftf_off": ftf_off, "fft_dist": dist,
                "fft_diag": fft_diag, "fft_off": fft_off, "gf_norm": grad}

    def epoch(self) -> None:
        train_loss, train_acc = self.evaluate("train")
        test_loss, test_acc = self.evaluate("test")
        self.log.append({"train_loss": train_loss, "train_acc": train_acc,
                         "test_loss": test_loss, "test_acc": test_acc})
        self.model.train()
        self.optimizer.zero_grad()
        ops, labels = self.data["train"]
        if self.shipped:
            F = self.model.hidden(ops)
            self.model.kept = F.clone()
            with torch.no_grad():
                self.log[-1].update(self._diagnostics(F))
            out = self.model.V(F)
        else:
            out = self.model(ops)
        author_mse(out, labels).backward()
        self.optimizer.step()

    def train(self, epochs: int) -> None:
        for _ in range(epochs):
            self.epoch()


def synchronise(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def check_curves(epochs: int, device: str) -> dict[str, Any]:
    """Seed 0 for ``epochs`` epochs, project vs author-style, float64 and float32: the largest
    relative difference of the training loss over epochs ``0..epochs``."""
    curves = {}
    for dtype in (torch.float64, torch.float32):
        trainer = project_trainer(1, (), device=device, dtype=dtype)
        run = AuthorRun(trainer, 0)
        run.train(epochs + 1)               # logs epochs 0..epochs (each before its step)
        trainer.train(epochs)
        curves[dtype] = (trainer.history.series("train_loss")[1][:, 0],
                         torch.tensor([e["train_loss"] for e in run.log], dtype=torch.float64))

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float(((a - b).abs() / b.abs()).max())

    (p64, b64), (p32, b32) = curves[torch.float64], curves[torch.float32]
    out = {"epochs": epochs,
           "float64_project_vs_author": rel(p64, b64),
           "float32_project_vs_author": rel(p32, b32),
           "float32_project_vs_float64": rel(p32, p64),
           "float32_author_vs_float64": rel(b32, b64),
           "tolerance_float64": CHECK_TOLERANCE[torch.float64],
           "tolerance_float32": CHECK_TOLERANCE[torch.float32],
           "loss_first_last": [float(p64[0]), float(p64[-1])]}
    out["passed"] = (out["float64_project_vs_author"] <= CHECK_TOLERANCE[torch.float64]
                     and out["float32_project_vs_author"] <= CHECK_TOLERANCE[torch.float32])
    return out


def per_unit(t: common.Timing, units: int) -> common.Timing:
    """The timing divided by ``units`` (epochs x seeds)."""
    return common.Timing(wall=[w / units for w in t.wall], cpu=[c / units for c in t.cpu])


def time_seeds(args: argparse.Namespace, seeds: int, epochs: int, base_epochs: int,
               diagnostics: Sequence[str]) -> tuple[int, dict[str, tuple]]:
    """Time the variants at ``seeds`` seeds: ``(n, {name: (timing per epoch and seed, epochs
    per seed, speed-up over the author-style loop)})``."""
    device = args.device

    def timed_training(trainer: GroupTrainer, epochs: int) -> tuple[Callable, Callable, int]:
        def run() -> None:
            trainer.train(epochs, record_last=False)
            synchronise(device)

        def warm() -> None:     # compiles where compile is on (epoch 1 records nothing)
            trainer.train(2, record_last=False)
            synchronise(device)
        return run, warm, len(trainer.hyper) * epochs

    def timed_loop(runs: list[AuthorRun], epochs: int) -> tuple[Callable, Callable, int]:
        def loop(epochs: int) -> None:
            for r in runs:
                r.train(epochs)
            synchronise(device)
        return (lambda: loop(epochs)), (lambda: loop(1)), len(runs) * epochs

    trainer = project_trainer(seeds, diagnostics, device=device, compile=args.compile)
    variants = {f"project, diagnostics every {EVERY}": timed_training(trainer, epochs)}
    if seeds == 1:
        bare = project_trainer(1, (), device=device, compile=args.compile)
        variants["project, step only"] = timed_training(bare, epochs)
    variants[BASELINE] = timed_loop([AuthorRun(trainer, b, shipped=True) for b in range(seeds)],
                                    base_epochs)
    if seeds == 1 and args.bare_epochs:
        variants[BARE] = timed_loop([AuthorRun(trainer, 0)], args.bare_epochs)
    timings = common.measure({k: v[0] for k, v in variants.items()}, repeats=args.repeats,
                             warmup=args.warmup, warmups={k: v[1] for k, v in variants.items()})
    unit = {k: per_unit(t, variants[k][2]) for k, t in timings.items()}
    return int(trainer.train_set.count[0]), {
        k: (t, variants[k][2] // seeds, common.speedup(unit[BASELINE], t),
            common.speedup(unit[BARE], t) if BARE in unit else None)
        for k, t in unit.items()}


def main() -> None:
    parser = common.arguments(__doc__.split("\n\n")[0], repeats=3)
    parser.set_defaults(threads=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--epochs", type=int, nargs="+", default=[100, 50, 50],
                        help="project epochs per timed run, one per --seeds entry "
                             f"(multiples of {EVERY})")
    parser.add_argument("--baseline-epochs", type=int, nargs="+", default=[10, 2, 1],
                        help="author-style epochs per timed run, one per --seeds entry")
    parser.add_argument("--bare-epochs", type=int, default=30,
                        help="epochs of the loop without per-epoch diagnostics (one seed; "
                             "0: skip it)")
    parser.add_argument("--check-epochs", type=int, default=30)
    parser.add_argument("--diagnostics", default=",".join(DEFAULT_DIAGNOSTICS),
                        help="the project's diagnostics groups, comma-separated")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", default=None,
                        help="torch.compile mode for the project's step (default: eager)")
    args = parser.parse_args()
    if not len(args.seeds) == len(args.epochs) == len(args.baseline_epochs):
        parser.error("--seeds, --epochs and --baseline-epochs need the same number of entries")
    if any(e % EVERY for e in args.epochs):
        parser.error(f"--epochs: multiples of {EVERY}, so each run carries whole diagnostics")
    common.set_threads(args.threads)
    started, machine = common.now(), common.machine()
    # on a shared machine OpenMP threads that spin while they wait (the default) burn the
    # time slices their partners need; OMP_WAIT_POLICY=PASSIVE makes them sleep
    machine["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY")
    if torch.device(args.device).type == "cuda":
        machine["device"] = torch.cuda.get_device_name()
    print(f"# {common.describe(machine)}, device {args.device}")
    diagnostics = tuple(g for g in args.diagnostics.split(",") if g)

    check = check_curves(args.check_epochs, args.device)
    print(f"same curve, {check['epochs']} epochs: float64 {check['float64_project_vs_author']:.1e}"
          f" (tol {check['tolerance_float64']:.0e}), float32 "
          f"{check['float32_project_vs_author']:.1e} (tol {check['tolerance_float32']:.0e}); "
          f"float32 vs float64: project {check['float32_project_vs_float64']:.1e}, author-style "
          f"{check['float32_author_vs_float64']:.1e}", flush=True)
    if not check["passed"]:
        raise SystemExit("the loss curves disagree: not timing")

    rows, record_rows = [], []
    for seeds, epochs, base_epochs in zip(args.seeds, args.epochs, args.baseline_epochs):
        print(f"\n## {seeds} seed(s)", flush=True)
        n, variants = time_seeds(args, seeds, epochs, base_epochs, diagnostics)
        for name, (t, per_seed_epochs, ratio, bare) in variants.items():
            rate = 1 / min(t.wall)
            rows.append([seeds, name, per_seed_epochs, 1e3 * min(t.wall),
                         1e3 * statistics.median(t.wall), 1e3 * min(t.cpu), rate,
                         f"{ratio['min_wall']:.1f}x", f"{ratio['min_cpu']:.1f}x",
                         "" if bare is None else f"{bare['min_wall']:.1f}x"])
            record_rows.append({"seeds": seeds, "variant": name, "epochs": per_seed_epochs,
                                "epochs_x_seeds_per_second": rate,
                                "ms_per_epoch_per_seed": {
                                    "wall_min": 1e3 * min(t.wall),
                                    "wall_median": 1e3 * statistics.median(t.wall),
                                    "cpu_min": 1e3 * min(t.cpu),
                                    "cpu_median": 1e3 * statistics.median(t.cpu)},
                                "speedup_over_author_style": ratio,
                                "speedup_over_bare_loop": bare})

    headers = ["seeds", "variant", "epochs", "ms/ep/seed min", "ms/ep/seed med",
               "CPU ms/ep/seed", "ep*seeds/s", "speed-up", "CPU speed-up", "vs bare loop"]
    print()
    print(common.table(headers, rows))
    record = {
        "benchmark": NAME, "started": started, "finished": common.now(),
        "machine": machine, "load_average_after": common.load_average(),
        "parameters": {**{k: v for k, v in vars(args).items() if k != "out"},
                       "M": M, "K": K, "p": P, "n": n,
                       "lr": LR, "eta": ETA,
                       "activation": "x2", "loss": "mse_class (the code's)",
                       "optimizer": "adam", "dtype": "float32", "every": EVERY,
                       "diagnostics": diagnostics},
        "ratio_statistic": "author-style (per-epoch diagnostics) min wall / project min wall, "
                           "per epoch and seed (see common.py); vs bare loop: the same "
                           "against the loop without per-epoch diagnostics",
        "curve_check": check, "rows": record_rows,
    }
    print(f"wrote {common.write(NAME, record, args.out)}")


if __name__ == "__main__":
    main()
