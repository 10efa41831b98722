r"""Issue 21: one GPU session, one process: the trainer's speed and fraction of peak at the
Fig. 3 size, then the training claims at the paper's size, within a wall budget.

Run on the device (from a copy of the tree, no network, no install)::

    PYTHONPATH=. python benchmarks/gpu_session.py --out $OUT/gpu --budget-s 420

(under 8 minutes on one H100: a 420 s budget, claims that would not fit are skipped and a
claim that overruns is stopped 30 s past the budget). On the CPU, end to end at toy sizes
(well under a minute; what ``tests/quality/test_gpu_session.py`` runs)::

    PYTHONPATH=. python benchmarks/gpu_session.py --device cpu --smoke --out /tmp/gpu-smoke

Steps, each announced on stderr with the elapsed time and the budget left:

1. **Environment** (``environment.json``): device, GPU name and memory, driver (from
   ``nvidia-smi`` where present) and CUDA versions, torch build, Python, numpy, the git
   revision where the tree is a repository, and the precision flags, with TF32 off
   (``allow_tf32 = False`` for matmul and cuDNN, ``float32_matmul_precision = 'highest'``):
   the fraction of fp32 peak below is of true fp32 arithmetic, not TF32's.
2. **Agreement** (``agreement.json``), before anything is timed: the trainer on the chosen
   device against the CPU trainer, both float64, same seeds (hence the same initialisation,
   drawn on a CPU generator, and the same split), a small task, a few dozen epochs: the
   per-epoch training-loss curves (max relative difference) and the train/test accuracies.
3. **Timing** (``timing.json``): :class:`numerics.li2.trainer.GroupTrainer` at the Fig. 3
   size (:math:`\mathbb Z_{71}`, :math:`K=2048`, :math:`n=2016`, :math:`x^2`, Adam lr
   :math:`10^{-3}`, weight decay :math:`2\times10^{-4}`, float32, full batch) at 1, 16, 64
   and 256 seeds, eager and compiled, in epochs x seeds per second and as a fraction of the
   fp32 peak, counting the three top-layer GEMMs of a step: forward :math:`O=FV`
   (:math:`n\times K` by :math:`K\times M`), :math:`\partial V=F^\top\partial O` and
   :math:`\partial F=\partial O\,V^\top`, each :math:`2nKM` flops, so :math:`6nKM` per seed
   and epoch (:math:`1.76\times10^9` at the Fig. 3 size). A large fp32 matmul's achieved
   rate is measured beside it as a second reference.
4. **Claims** (``checks/<id>.json``), in order of value while the budget lasts, each through
   the CLI's ``main`` in this process: ``li2.fig3``, ``li2.eq6``, ``li2.thm6-training``,
   ``li2.fig8``, ``li2.fig5`` (its cyclic panel, via ``--set panels=...``) and
   ``li2.sec7-predictions`` at full fidelity; with ``--smoke`` the first at quick fidelity.

``summary.json`` and ``summary.md`` collect the verdicts, wall times and devices. Nothing here
imports ``latex2mathml`` or ``dask`` (the device has neither).
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import platform
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the tree this file sits in, first: an installed (editable) copy of the package elsewhere must
# not be what runs, and `common` / `bench_trainer` are imported as top-level modules
for _p in (str(HERE), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import common  # noqa: E402
import torch  # noqa: E402
from bench_trainer import cyclic_table, per_unit, synchronise  # noqa: E402

from numerics.device import precision_flags, verification_precision  # noqa: E402
from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig  # noqa: E402
from numerics.li2.train_splits import train_count  # noqa: E402

NAME = "gpu_session"
EVERY = 50          # test metrics every 50 epochs (as bench_trainer): timed runs are multiples


@dataclass(frozen=True)
class Size:
    """A cyclic task and width: :math:`\\mathbb Z_M`, :math:`K` hidden nodes, fraction ``p``."""

    M: int
    K: int
    p: float

    @property
    def n(self) -> int:
        return train_count(self.M, self.p)


FIG3 = Size(71, 2048, 0.4)
SMOKE = Size(11, 32, 0.5)
LR, ETA = 1e-3, 2e-4
# agreement: li2.fig3's quick size (a real grokking task, a few dozen float64 epochs cost
# seconds on the CPU); the smoke a smaller one
AGREE, AGREE_SMOKE = Size(29, 512, 0.6), Size(13, 64, 0.6)
AGREE_SEEDS, AGREE_EPOCHS, AGREE_EVAL_EVERY, AGREE_ETA = (0, 1), 40, 10, 8e-4
# float64 on both sides (bench_trainer's reasoning): the same mathematics, rounding differs
# only through the order of summation (CUDA's atomic index_add_, other GEMM blockings), about
# 1e-16 relative per evaluation; Adam's normalised steps carry relative gradient errors into
# the weights without amplifying them, so forty steps stay near 1e-14. 1e-9 leaves that five
# orders of margin and still sits seven below float32 rounding: a float32 (or TF32) operation
# on either side fails it.
LOSS_TOLERANCE = 1e-9
# an accuracy is a count over the samples: at agreement to ~1e-14 a prediction flips only at
# an exact near-tie of two outputs, so at most one sample per set may differ
ACC_SAMPLES = 1

# fp32 peak, non-tensor-core (TF32 is off), dense, boost clock, by the name torch reports;
# NVIDIA's datasheets: H100 Tensor Core GPU (SXM5 67 TFLOP/s, PCIe 51) and H200 (SXM 67).
# NVL variants and anything else: unknown (no fraction rather than a guessed one).
FP32_PEAK_TFLOPS: tuple[tuple[str, float | None], ...] = (
    ("NVL", None), ("H100 PCIe", 51.0), ("H100", 67.0), ("H200", 67.0))

PLAN = ("li2.fig3", "li2.eq6", "li2.thm6-training", "li2.fig8", "li2.fig5",
        "li2.sec7-predictions")
OVERRUN_GRACE_S = 30.0      # a running claim is stopped this long past the budget


# --- budget and progress --------------------------------------------------------------------

class Budget:
    """The session's wall budget, counted from construction."""

    def __init__(self, seconds: float) -> None:
        self.total = seconds
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        return self.total - self.elapsed()

    def say(self, message: str) -> None:
        print(f"[gpu_session {self.elapsed():6.1f} s, {self.remaining():6.1f} s left] {message}",
              file=sys.stderr, flush=True)


def write_json(path: Path, record: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return path


# --- 1. environment -------------------------------------------------------------------------

def nvidia_smi() -> dict[str, str] | None:
    """Driver version, GPU name and memory from ``nvidia-smi`` (None where it is missing)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,name,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20, check=True).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out:
        return None
    driver, name, memory = (s.strip() for s in out[0].split(",", 2))
    return {"driver_version": driver, "name": name, "memory_total": memory}


def fp32_peak(gpu_name: str | None) -> tuple[float | None, str]:
    """fp32 non-tensor peak (FLOP/s) for a GPU name, and where the number comes from."""
    if gpu_name is None:
        return None, "unknown (not a GPU)"
    for key, tflops in FP32_PEAK_TFLOPS:
        if key in gpu_name:
            if tflops is None:
                return None, f"unknown ({key} variant: not in the table)"
            return tflops * 1e12, f"NVIDIA datasheet, '{key}': {tflops} TFLOP/s fp32 non-tensor"
    return None, "unknown (not in the table)"


def environment(device: str, revision: str | None = None) -> dict[str, Any]:
    """What ran, where, with which precision flags (TF32 off, checked after setting)."""
    import numpy

    from verify.metadata import git_revision

    verification_precision()
    flags = precision_flags()
    if flags["cuda_matmul_allow_tf32"] or flags["cudnn_allow_tf32"] \
            or flags["float32_matmul_precision"] != "highest":
        raise RuntimeError(f"TF32 still on after verification_precision(): {flags}")
    env: dict[str, Any] = {
        "started": common.now(), "argv": sys.argv, "device": device,
        "python": platform.python_version(), "numpy": numpy.__version__,
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "torch_debug": torch.version.debug, "precision": flags,
        # the device's copy of the tree carries a stale .git (the session's first commit): the
    # revision given on the command line wins
        "git": ({"revision": revision, "dirty": None, "source": "--revision"} if revision
                else git_revision()),
        "machine": common.machine(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = {"name": props.name, "memory_bytes": props.total_memory,
                      "multiprocessors": props.multi_processor_count,
                      "capability": f"{props.major}.{props.minor}",
                      "count": torch.cuda.device_count(),
                      "cudnn": torch.backends.cudnn.version()}
        env["nvidia_smi"] = nvidia_smi()
    peak, source = fp32_peak(env["gpu"]["name"] if device == "cuda" else None)
    env["fp32_peak_flops"], env["fp32_peak_source"] = peak, source
    return env


# --- 2. agreement ---------------------------------------------------------------------------

def small_trainer(size: Size, seeds: Sequence[int], *, device: str, dtype: torch.dtype,
                  eta: float = ETA, eval_every: int = EVERY,
                  compile: str | None = None) -> GroupTrainer:
    """The Fig. 3 recipe (x^2, class-centred MSE, Adam lr 1e-3) at ``size``, no diagnostics
    groups (the step and the test metrics only)."""
    config = TrainConfig(K=size.K, activation="x2", loss="mse_class", eval_every=eval_every,
                         diag_every=eval_every, diagnostics=())
    hyper = Hyper.batch(seed=list(seeds), eta=eta, lr=LR, p=size.p)
    return GroupTrainer(cyclic_table(size.M), hyper, config, device=device, dtype=dtype,
                        compile=compile)


def agreement(device: str, size: Size, epochs: int = AGREE_EPOCHS) -> dict[str, Any]:
    r"""float64 on ``device`` against float64 on the CPU, same seeds: the training loss of
    every epoch :math:`0..T` (max over epochs and seeds of :math:`|a-b|/|b|`) and the
    accuracies (train every epoch, test every 10 epochs, as sample counts)."""
    curves = {}
    for side, where in (("device", device), ("cpu", "cpu")):
        trainer = small_trainer(size, AGREE_SEEDS, device=where, dtype=torch.float64,
                                eta=AGREE_ETA, eval_every=AGREE_EVAL_EVERY)
        history = trainer.train(epochs)
        curves[side] = {
            k: history.series(k)[1].double().cpu() for k in ("train_loss", "train_acc",
                                                             "test_acc")}
    dev, cpu = curves["device"], curves["cpu"]
    n, n_test = size.n, size.M ** 2 - size.n
    loss = float(((dev["train_loss"] - cpu["train_loss"]).abs() / cpu["train_loss"].abs()).max())
    train_flips = float((dev["train_acc"] - cpu["train_acc"]).abs().max()) * n
    test_flips = float((dev["test_acc"] - cpu["test_acc"]).abs().max()) * n_test
    return {
        "device": device, "dtype": "float64", "M": size.M, "K": size.K, "p": size.p, "n": n,
        "seeds": list(AGREE_SEEDS), "eta": AGREE_ETA, "lr": LR, "epochs": epochs,
        "loss_max_rel_diff": loss, "loss_tolerance": LOSS_TOLERANCE,
        "train_acc_max_diff_samples": round(train_flips, 6),
        "test_acc_max_diff_samples": round(test_flips, 6),
        "acc_tolerance_samples": ACC_SAMPLES,
        "loss_first_last_cpu": [float(cpu["train_loss"][0, 0]), float(cpu["train_loss"][-1, 0])],
        "test_acc_last_cpu": cpu["test_acc"][-1].tolist(),
        "passed": (loss <= LOSS_TOLERANCE and train_flips <= ACC_SAMPLES + 1e-6
                   and test_flips <= ACC_SAMPLES + 1e-6),
    }


# --- 3. timing ------------------------------------------------------------------------------

def step_flops(size: Size) -> float:
    r"""The three top-layer GEMMs of one step for one seed: :math:`3\cdot 2nKM`
    (:math:`6\cdot2016\cdot2048\cdot71=1.759\times10^9` at the Fig. 3 size)."""
    return 6.0 * size.n * size.K * size.M


def matmul_rate(device: str, n: int, dtype: torch.dtype, seconds: float = 0.5) -> dict[str, Any]:
    r"""Achieved FLOP/s of an :math:`n\times n` by :math:`n\times n` product (:math:`2n^3`
    flops), best of three runs of as many products as fill ``seconds``."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    torch.mm(a, b)
    synchronise(device)
    t0 = time.perf_counter()
    torch.mm(a, b)
    synchronise(device)
    reps = max(1, min(200, int(seconds / max(time.perf_counter() - t0, 1e-6))))
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.mm(a, b)
        synchronise(device)
        best = min(best, (time.perf_counter() - t0) / reps)
    return {"n": n, "dtype": str(dtype).removeprefix("torch."), "seconds_per_product": best,
            "flops_per_second": 2.0 * n ** 3 / best}


def compile_unavailable(device: str) -> str | None:
    """Why ``torch.compile`` cannot run here (None when it can)."""
    if not hasattr(torch, "compile"):
        return "torch.compile missing from this torch"
    if device == "cuda":
        import importlib.util
        if importlib.util.find_spec("triton") is None:
            return "triton not installed (inductor needs it on CUDA)"
    return None


def time_row(device: str, size: Size, seeds: int, mode: str | None, *, repeats: int,
             target_s: float, peak: float | None, matmul: float | None) -> dict[str, Any]:
    """Build a trainer of ``seeds`` seeds, warm it up (compiles where ``mode`` is set), pick a
    number of epochs (a multiple of 50) that takes about ``target_s``, then time ``repeats``
    runs of it with ``common.measure``; rates from the fastest repeat."""
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    built = time.perf_counter()
    trainer = small_trainer(size, range(seeds), device=device, dtype=torch.float32,
                            compile=mode)
    built = time.perf_counter() - built

    def run(epochs: int) -> Callable[[], None]:
        def go() -> None:
            synchronise(device)     # nothing queued from before is counted ...
            trainer.train(epochs, record_last=False)
            synchronise(device)     # ... and everything launched here is
        return go

    # warm-up, not timed: the first epochs compile (and, with CUDA graphs, record), and the
    # calibration run of 50 epochs is both the rest of the warm-up and the per-epoch estimate
    warm, _, _ = common.timed(run(2))
    calibration, _, _ = common.timed(run(EVERY - 2))      # back on a multiple of 50
    per_epoch = calibration / (EVERY - 2)
    epochs = EVERY * max(1, min(10, round(target_s / (EVERY * per_epoch))))
    timing = common.measure({"run": run(epochs)}, repeats=repeats, warmup=0,
                            progress=False)["run"]
    unit = per_unit(timing, epochs * seeds)
    rate = 1.0 / min(unit.wall)
    flops = rate * step_flops(size)
    row = {
        "mode": mode or "eager", "seeds": seeds, "epochs_per_repeat": epochs,
        "repeats": repeats, "build_s": built, "warmup_s": warm,
        "calibration_s_per_epoch": per_epoch,
        "wall_s": timing.wall, "cpu_s": timing.cpu,
        "epochs_x_seeds_per_second": rate,
        "epochs_x_seeds_per_second_median": 1.0 / statistics.median(unit.wall),
        "ms_per_epoch": 1e3 * min(timing.wall) / epochs,
        "flop_per_seed_epoch": step_flops(size), "achieved_flops": flops,
        "fraction_of_fp32_peak": None if peak is None else flops / peak,
        "fraction_of_matmul_rate": None if not matmul else flops / matmul,
    }
    if device == "cuda":
        row["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    trainer = None   # the next size's trainer gets its memory (the closures are done with it)
    return row


def timing(args: argparse.Namespace, env: Mapping[str, Any], budget: Budget,
           deadline: float) -> dict[str, Any]:
    """Eager, then each compile mode, at each seed count while the timing share of the
    budget lasts (``deadline``: seconds of elapsed time); a seed count that would not fit in
    memory or time is skipped, and so are the larger ones of that mode."""
    device, size = args.device, SMOKE if args.smoke else FIG3
    verification_precision()
    seconds = 0.05 if args.smoke else 0.5
    reference = matmul_rate(device, args.matmul_n, torch.float32, seconds)
    reference64 = matmul_rate(device, args.matmul_n, torch.float64, seconds)
    budget.say(f"fp32 matmul {args.matmul_n}^3: {reference['flops_per_second'] / 1e12:.3f} "
               f"TFLOP/s; fp64 {reference64['flops_per_second'] / 1e12:.3f} TFLOP/s")
    peak = env["fp32_peak_flops"]
    modes: list[str | None] = [None]
    skipped: list[dict[str, Any]] = []
    why_not = compile_unavailable(device)
    if why_not is None and args.smoke and device == "cpu" and args.compile_modes is None:
        why_not = ("--smoke on the CPU: inductor's C++ build takes longer than the smoke's "
                   "budget (pass --compile-modes to force it)")
    wanted = (args.compile_modes.split(",") if args.compile_modes is not None
              else ["reduce-overhead", "default"] if device == "cuda" else ["default"])
    if why_not is None:
        modes += [m for m in wanted if m]
    else:
        skipped += [{"mode": m, "seeds": None, "reason": why_not} for m in wanted if m]
    rows: list[dict[str, Any]] = []
    total_memory = env.get("gpu", {}).get("memory_bytes")
    for mode in modes:
        label = mode or "eager"
        if mode is not None:
            # a fresh cache per mode; within a mode a new seed count recompiles once with
            # dynamic shapes and later ones reuse that graph (CUDA graphs re-record per shape,
            # cheaply), which keeps the compile time per mode near two compiles, not four
            torch._dynamo.reset()
        previous: dict[str, Any] | None = None
        for i, seeds in enumerate(args.seeds):
            reason = None
            # time: warm-up (the last row's, a recompile at most; a first compile guessed at
            # 60 s), the 48 calibration epochs and the repeats, the per-epoch time scaled from
            # the previous seed count linearly in seeds (conservative: larger batches only
            # use the GPU better), the epochs per repeat chosen as time_row will choose them
            if previous is None:
                guess = 60.0 if mode is not None and device == "cuda" else 5.0
            else:
                scale = seeds / previous["seeds"]
                per_epoch = previous["calibration_s_per_epoch"] * scale
                epochs = EVERY * max(1, min(10, round(args.target_s / (EVERY * per_epoch))))
                guess = (previous["warmup_s"] + previous["build_s"] * scale
                         + per_epoch * (EVERY - 2 + args.repeats * epochs))
            # the first eager row always runs: it is the baseline every other figure (and
            # the claims' estimates) is read against, and it costs seconds at any size here
            first = mode is None and previous is None
            if not first and budget.elapsed() + guess > deadline:
                reason = (f"timing budget: about {guess:.0f} s needed, "
                          f"{deadline - budget.elapsed():.0f} s left for timing")
            elif previous is not None and total_memory and "peak_memory_bytes" in previous:
                need = previous["peak_memory_bytes"] / previous["seeds"] * seeds * 1.1
                if need > 0.9 * total_memory:
                    reason = (f"memory: about {need / 2**30:.1f} GiB needed (from "
                              f"{previous['seeds']} seeds), {total_memory / 2**30:.1f} GiB")
            if reason is None:
                budget.say(f"timing {label}, {seeds} seed(s) ...")
                try:
                    row = time_row(device, size, seeds, mode, repeats=args.repeats,
                                   target_s=args.target_s, peak=peak,
                                   matmul=reference["flops_per_second"])
                except torch.cuda.OutOfMemoryError as exc:
                    reason = f"out of memory: {str(exc).splitlines()[0]}"
                except Exception as exc:  # noqa: BLE001 - a compile failure is a finding
                    reason = f"error: {type(exc).__name__}: {exc}"
                    traceback.print_exc()
                if device == "cuda":
                    torch.cuda.empty_cache()
            if reason is not None:
                budget.say(f"timing {label}: skipping {list(args.seeds[i:])} seeds: {reason}")
                skipped += [{"mode": label, "seeds": s, "reason": reason}
                            for s in args.seeds[i:]]
                break
            frac = row["fraction_of_fp32_peak"]
            budget.say(f"  {label}, {seeds} seed(s): {row['epochs_x_seeds_per_second']:.1f} "
                       f"epochs x seeds/s, {row['achieved_flops'] / 1e12:.3f} TFLOP/s"
                       + ("" if frac is None else f", {100 * frac:.1f}% of fp32 peak"))
            rows.append(row)
            previous = row
    return {
        "size": {"M": size.M, "K": size.K, "p": size.p, "n": size.n},
        "recipe": {"activation": "x2", "loss": "mse_class", "optimizer": "adam", "lr": LR,
                   "eta": ETA, "dtype": "float32", "full_batch": True,
                   "test_metrics_every": EVERY, "diagnostics": []},
        "flop_per_seed_epoch": step_flops(size),
        "flop_formula": "6 n K M: the three top-layer GEMMs (forward, dV, dF), 2nKM each",
        "fp32_peak_flops": peak, "fp32_peak_source": env["fp32_peak_source"],
        "matmul_fp32": reference, "matmul_fp64": reference64,
        "warmup_excluded": "2 epochs (compile) and 48 calibration epochs before the repeats",
        "rows": rows, "skipped": skipped,
    }


def kernel_class(name: str) -> str:
    """A kernel's class by its name: GEMM, reduction, elementwise or other."""
    low = name.lower()
    if any(k in low for k in ("gemm", "sgemm", "dgemm", "cutlass", "matmul", "bmm", "addmm",
                              "mm_", "::mm", "cublas")):
        return "gemm"
    if any(k in low for k in ("reduce", "sum", "norm", "mean", "max")):
        return "reduction"
    if any(k in low for k in ("elementwise", "triton", "vectorized", "fused", "pointwise",
                              "copy", "fill", "index", "scatter", "gather", "mul", "add")):
        return "elementwise"
    return "other"


def profile(device: str, size: Size, seeds: int, mode: str | None,
            epochs: int = EVERY) -> dict[str, Any]:
    r"""Where a step's time goes: ``epochs`` warm epochs of the float32 trainer under
    :mod:`torch.profiler`, the device kernels' self time summed by class (GEMM, reduction,
    elementwise, other) and the fifteen largest kernels. On the CPU the operators' self
    time stands in for kernels."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    trainer = small_trainer(size, range(seeds), device=device, dtype=torch.float32,
                            compile=mode)
    trainer.train(EVERY, record_last=False)         # warm: compiles, allocates
    synchronise(device)
    cuda = device == "cuda"
    activity = ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU
    with torch_profile(activities=[activity]) as prof:
        trainer.train(epochs, record_last=False)
        synchronise(device)
    rows = []
    for e in prof.key_averages():
        us = (getattr(e, "self_device_time_total", None) if cuda
              else getattr(e, "self_cpu_time_total", None)) or 0.0
        if us > 0:
            rows.append({"name": e.key[:160], "class": kernel_class(e.key),
                         "calls": e.count, "self_ms": us / 1e3})
    rows.sort(key=lambda r: -r["self_ms"])
    total = sum(r["self_ms"] for r in rows)
    by_class: dict[str, float] = {}
    for r in rows:
        by_class[r["class"]] = by_class.get(r["class"], 0.0) + r["self_ms"]
    del trainer
    return {"mode": mode or "eager", "seeds": seeds, "epochs": epochs,
            "time_kind": "device kernel self time" if cuda else "cpu operator self time",
            "total_ms": total, "ms_per_epoch": total / epochs,
            "share_by_class": {k: v / total for k, v in sorted(by_class.items())} if total else {},
            "gemm_flops_per_gemm_second": (step_flops(size) * seeds * epochs
                                           / (by_class.get("gemm", 0.0) / 1e3)
                                           if by_class.get("gemm") else None),
            "top": rows[:15]}


# --- 4. claims ------------------------------------------------------------------------------

def _gemm(n: int, K: int, M: int) -> float:
    return 6.0 * n * K * M          # a step's three top-layer GEMMs, one seed


def _gram(n: int, K: int) -> float:
    return 2.0 * n * K * (n + K)    # the n x n and K x K Grams (full products: an upper bound)


def _test(M: int, n: int, K: int) -> float:
    return 2.0 * (M * M - n) * K * M     # a forward pass over the test set


def training_cost(claim_id: str, p: Mapping[str, Any]) -> tuple[float, float, str]:
    """``(flops, sequential steps, dtype)`` of a claim's training at parameters ``p``: a
    rough model (GEMMs, Grams and test passes; an upper bound on steps where runs stop
    early), good for deciding whether a claim fits, not for reporting."""
    if claim_id == "li2.fig3":
        n = train_count(p["M"], p["p"])
        runs = len(p["etas"]) * len(p["seeds"])
        per = (_gemm(n, p["K"], p["M"]) + _gram(n, p["K"]) / p["diag_every"]
               + _test(p["M"], n, p["K"]) / p["eval_every"])
        # li2.x.fig3-third-party reads the same runs (seed 0 among the seeds): no runs of its own
        return runs * p["epochs"] * per, p["epochs"], "float64"
    if claim_id == "li2.eq6":
        n = train_count(p["M"], p["p"])
        runs = len(p["etas"]) * len(p["seeds"])
        per = _gemm(n, p["K"], p["M"]) + (_gram(n, p["K"]) + _test(p["M"], n, p["K"])) / p["every"]
        return runs * p["epochs"] * per, p["epochs"], "float64"
    if claim_id == "li2.thm6-training":
        n, epochs = train_count(p["M"], p["p"]), max(p["checkpoints"])
        flops = len(p["seeds"]) * epochs * (_gemm(n, p["K"], p["M"])
                                            + _test(p["M"], n, p["K"]) / p["eval_every"])
        # an n x n solve per checkpoint and per swept eta, per seed
        solves = len(p["checkpoints"]) + len(p["eta_sweep"]) * len(p["sweep_at"])
        flops += len(p["seeds"]) * solves * 2.0 * n ** 3
        return flops, epochs * (2 if p["third_party"] else 1), "float64"
    if claim_id == "li2.fig8":
        n = train_count(p["M"], p["p"])
        flops = steps = 0.0
        for K in p["Ks"]:
            runs = ((len(p["adam_lrs"]) + len(p["muon_lrs"])) * len(p["selection_seeds"])
                    + 2 * len(p["seeds"]))
            flops += runs * p["epochs"] * _gemm(n, K, p["M"])
            steps += 4 * p["epochs"] * 2     # 2 optimisers x (selection, evaluation); Muon x2
        return flops, steps, "float64"
    if claim_id == "li2.fig5":
        from numerics.li2.phase_boundary import group_table
        from verify.claims.li2._phase_transition import ratio_grid
        from verify.claims.li2.fig5 import THIRD_PARTY
        tr = p["training"]
        flops = steps = 0.0
        # the sequential design (li2.fig5's full fidelity) probes the two ends and bisects to
        # its resolution: that many ratios of the grid's, each with at most the paper's seeds
        # and budget, so the grid's cost scaled by probes / grid points is an upper bound
        design = p.get("design") or {"kind": "grid"}
        share = 1.0
        if design["kind"] == "bisection":
            lo, hi = design["range"]
            probes = 2 + math.ceil(math.log2(math.log(hi / lo) / math.log(design["resolution"])))
            share = min(1.0, probes / len(p["multipliers"]))
        for groups in p["panels"].values():
            for name, max_dk in groups.items():
                M = int(group_table(name).shape[0])
                for ratio in ratio_grid(M, max_dk, p["multipliers"]):
                    n = train_count(M, ratio)
                    flops += share * len(tr["seeds"]) * tr["epochs"] * (
                        _gemm(n, tr["K"], M) + _test(M, n, tr["K"]) / tr["eval_every"])
                steps += tr["epochs"]
        tp = p["third_party"]
        if tp:
            for name, outcomes in THIRD_PARTY.items():
                M = int(group_table(name).shape[0])
                for ratio in outcomes:
                    n = train_count(M, ratio)
                    flops += len(tp["seeds"]) * tp["epochs"] * (
                        _gemm(n, tp["K"], M) + _test(M, n, tp["K"]) / tp["eval_every"])
                steps += tp["epochs"]
        return flops, steps, tr.get("dtype", "float64")
    if claim_id == "li2.sec7-predictions":
        M = int(str(p["group"]).removeprefix("Z"))
        base, seeds = p["base"], len(p["seeds"])
        flops = steps = 0.0
        for axis, values in p["grids"].items():
            for v in values:
                K = v if axis == "K" else p["K"]
                n = train_count(M, v if axis == "p" else base["p"])
                flops += seeds * p["budget"] * _gemm(n, K, M)
            steps += p["budget"] * (len(values) if axis == "K" else 1)
        gd = p["gradient_descent"]
        flops += (len(gd["eta"]) * seeds * gd["budget"]
                  * _gemm(train_count(M, base["p"]), p["K"], M))
        return flops, steps + gd["budget"], "float64"
    raise KeyError(claim_id)


def estimate_seconds(flops: float, steps: float, dtype: str, rates: Mapping[str, float],
                     step_latency: float) -> float:
    """GEMM time at the measured matmul rate times the trainer's measured efficiency, plus
    one launch-bound step latency per sequential step, times 1.5, plus 20 s of set-up
    (imports, derivations, the control's replay)."""
    return 1.5 * (flops / rates[dtype] + steps * step_latency) + 20.0


class BudgetExceeded(BaseException):
    """Raised by the alarm in a claim that overruns: BaseException, so the runner's and the
    CLI's ``except Exception`` let it through to this script."""


def _alarm(signum: int, frame: Any) -> None:
    raise BudgetExceeded("stopped: past the session's budget")


def check_claim(claim_id: str, extra: Sequence[str], args: argparse.Namespace, out: Path,
                budget: Budget) -> dict[str, Any]:
    """``verify check`` of one claim through the CLI's ``main`` in this process; the verdict
    from its JSON. Errors (and an overrun past the budget) are recorded, never raised."""
    from verify.cli import main as cli_main

    path = out / "checks" / f"{claim_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)   # check names a missing folder, never makes it
    fidelity = "quick" if args.smoke else "full"
    argv = ["check", claim_id, "--device", args.device, "--fidelity", fidelity,
            "--json", str(path), "--store", str(out / "store.sqlite"), *extra]
    entry: dict[str, Any] = {"id": claim_id, "fidelity": fidelity, "device": args.device,
                             "argv": argv, "json": str(path.relative_to(out))}
    alarm = hasattr(signal, "setitimer")
    if alarm:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, max(1.0, budget.remaining() + OVERRUN_GRACE_S))
    t0 = time.perf_counter()
    try:
        entry["exit_code"] = cli_main(argv)
    except BudgetExceeded as exc:
        entry["status"], entry["error"] = "stopped", str(exc)
    except BaseException as exc:  # noqa: BLE001 - one claim must not end the session
        entry["status"], entry["error"] = "error", f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        entry["wall_s"] = time.perf_counter() - t0
    if "status" not in entry:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))["claims"][0]
            entry.update(status="ran", verdict=record["verdict"], reason=record["reason"],
                         seconds=record["seconds"], device=record["device"],
                         error=record.get("error") and record["error"].strip().splitlines()[-1])
        except (OSError, ValueError, KeyError, IndexError) as exc:
            entry.update(status="error", error=f"no results JSON (exit code "
                         f"{entry.get('exit_code')}): {type(exc).__name__}: {exc}")
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return entry


def claims(args: argparse.Namespace, timing_record: Mapping[str, Any], out: Path,
           budget: Budget) -> list[dict[str, Any]]:
    """The plan, in order, each claim run when its estimate fits the budget left."""
    from verify import registry
    registry.load_builtin_claims()
    plan = args.claims or (PLAN[:args.smoke_claims] if args.smoke else PLAN)
    # measured rates for the estimates: the large matmul's, times the trainer's own fraction
    # of it at its best eager row (0.3 when nothing was timed); latency: a 1-seed eager epoch
    eager = [r for r in timing_record["rows"] if r["mode"] == "eager"]
    efficiency = max((r["fraction_of_matmul_rate"] or 0.0 for r in eager), default=0.0) or 0.3
    rates = {"float32": timing_record["matmul_fp32"]["flops_per_second"] * efficiency,
             "float64": timing_record["matmul_fp64"]["flops_per_second"] * efficiency}
    latency = min((r["ms_per_epoch"] / 1e3 for r in eager if r["seeds"] == 1), default=1e-3)
    done: list[dict[str, Any]] = []
    for claim_id in plan:
        claim = registry.get(claim_id)
        extra: list[str] = []
        params = dict(claim.parameters["quick" if args.smoke else "full"])
        if claim_id == "li2.fig5":     # the cyclic panel only (`panels` is a --set parameter)
            cyclic = params["panels"]["cyclic"]
            params["panels"] = {"cyclic": {g: d for g, d in cyclic.items()
                                           if args.fig5_groups is None or g in args.fig5_groups}}
            extra = ["--set", f"panels={params['panels']!r}"]
            assert ast.literal_eval(extra[1].partition("=")[2]) == params["panels"]
        estimate = None
        if not args.smoke:
            flops, steps, dtype = training_cost(claim_id, params)
            estimate = estimate_seconds(flops, steps, dtype, rates, latency)
        left = budget.remaining()
        if estimate is not None and estimate > left:
            budget.say(f"skipping {claim_id}: estimated {estimate:.0f} s, {left:.0f} s left")
            done.append({"id": claim_id, "status": "skipped", "estimate_s": estimate,
                         "reason": f"estimated {estimate:.0f} s > {left:.0f} s left",
                         "device": args.device})
            continue
        if estimate is None and left <= 0:
            done.append({"id": claim_id, "status": "skipped", "reason": "budget spent",
                         "device": args.device})
            continue
        budget.say(f"check {claim_id} {' '.join(extra)} (estimate "
                   f"{'-' if estimate is None else f'{estimate:.0f} s'}) ...")
        entry = check_claim(claim_id, extra, args, out, budget)
        entry["estimate_s"] = estimate
        budget.say(f"  {claim_id}: {entry.get('verdict', entry['status'])} in "
                   f"{entry['wall_s']:.1f} s" + (f" ({entry['error']})" if entry.get("error")
                                                  else ""))
        done.append(entry)
    return done


# --- summary --------------------------------------------------------------------------------

def summary_markdown(summary: Mapping[str, Any]) -> str:
    """A short table a person can read: agreement, timing rows, claims."""
    env, agree, tim = summary["environment"], summary["agreement"], summary["timing"]
    gpu = env.get("gpu", {}).get("name", "no GPU")
    lines = [f"# GPU session ({'smoke' if summary['smoke'] else 'full'})", "",
             f"Device {env['device']} ({gpu}), torch {env['torch']} (CUDA {env['torch_cuda']}), "
             f"Python {env['python']}, revision {(env.get('git') or {}).get('revision')}; "
             f"TF32 off: {not env['precision']['cuda_matmul_allow_tf32']}. "
             f"Wall {summary['wall_s']:.0f} s of a {summary['budget_s']:.0f} s budget.", "",
             f"Agreement (float64, {agree['device']} vs cpu, {agree['epochs']} epochs): loss "
             f"{agree['loss_max_rel_diff']:.1e} (tol {agree['loss_tolerance']:.0e}), accuracy "
             f"flips {agree['train_acc_max_diff_samples']:g} / "
             f"{agree['test_acc_max_diff_samples']:g} samples: "
             f"**{'pass' if agree['passed'] else 'FAIL'}**.", ""]
    if tim is not None:
        s = tim["size"]
        lines += [f"Timing: Z_{s['M']}, K={s['K']}, n={s['n']}, float32; "
                  f"{tim['flop_per_seed_epoch'] / 1e9:.3g} GFLOP per seed-epoch; fp32 peak "
                  f"{tim['fp32_peak_source']}; matmul {tim['matmul_fp32']['n']}^3 "
                  f"{tim['matmul_fp32']['flops_per_second'] / 1e12:.3g} TFLOP/s.", "",
                  "| mode | seeds | epochs x seeds / s | ms / epoch | TFLOP/s | of fp32 peak |",
                  "|---|---|---|---|---|---|"]
        for r in tim["rows"]:
            frac = r["fraction_of_fp32_peak"]
            lines.append(f"| {r['mode']} | {r['seeds']} | {r['epochs_x_seeds_per_second']:.4g} "
                         f"| {r['ms_per_epoch']:.3g} | {r['achieved_flops'] / 1e12:.3g} | "
                         f"{'-' if frac is None else f'{100 * frac:.1f}%'} |")
        for s in tim["skipped"]:
            lines.append(f"| {s['mode']} | {s['seeds']} | skipped: {s['reason']} | | | |")
        lines.append("")
    lines += ["| claim | status | verdict | wall s | estimate s | device | note |",
              "|---|---|---|---|---|---|---|"]
    for c in summary["claims"]:
        est, wall = c.get("estimate_s"), c.get("wall_s")
        note = (c.get("error") or c.get("reason") or "").replace("|", "/")[:160]
        lines.append(f"| {c['id']} | {c['status']} | {c.get('verdict', '-')} | "
                     f"{'-' if wall is None else f'{wall:.1f}'} | "
                     f"{'-' if est is None else f'{est:.0f}'} | {c.get('device', '-')} | "
                     f"{note} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for every output")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--smoke", action="store_true",
                        help="toy sizes and quick fidelity: end to end on the CPU in seconds")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="total wall budget in seconds (default 420; 60 with --smoke)")
    parser.add_argument("--timing-share", type=float, default=0.4,
                        help="share of the budget the timing step may use (default 0.4)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="seed counts to time (default 1 16 64 256; 1 4 16 with --smoke)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed repeats per row (default 3; 2 with --smoke)")
    parser.add_argument("--target-s", type=float, default=None,
                        help="seconds per timed repeat (default 1; 0.05 with --smoke)")
    parser.add_argument("--compile-modes", default=None,
                        help="comma-separated torch.compile modes to time after eager "
                             "(default reduce-overhead,default on CUDA; none on a CPU smoke)")
    parser.add_argument("--matmul-n", type=int, default=None,
                        help="size of the reference matmul (default 8192; 256 with --smoke)")
    parser.add_argument("--claims", nargs="+", choices=PLAN, default=None,
                        help="check these claims of the plan only, in this order "
                             "(default: the plan; the first --smoke-claims with --smoke)")
    parser.add_argument("--no-timing", action="store_true",
                        help="skip the timing step (a second session for more claims)")
    parser.add_argument("--profile", type=int, default=None, metavar="SEEDS",
                        help="profile the float32 trainer at this many seeds (profile.json: "
                             "kernel time by class, the largest kernels)")
    parser.add_argument("--profile-modes", default=None,
                        help="comma-separated compile modes to profile after eager")
    parser.add_argument("--fig5-groups", nargs="+", default=None, metavar="GROUP",
                        help="li2.fig5: these groups of its cyclic panel only (default all)")
    parser.add_argument("--revision", default=None,
                        help="git revision to record where the tree has no .git (a copy)")
    parser.add_argument("--smoke-claims", type=int, default=1,
                        help="with --smoke: how many claims of the plan to check (default 1)")
    args = parser.parse_args(argv)
    smoke = args.smoke
    for name, full, toy in (("budget_s", 420.0, 60.0), ("seeds", [1, 16, 64, 256], [1, 4, 16]),
                            ("target_s", 1.0, 0.05), ("matmul_n", 8192, 256),
                            ("repeats", 3, 2)):
        if getattr(args, name) is None:
            setattr(args, name, toy if smoke else full)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch finds no CUDA device (use --device cpu)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    budget = Budget(args.budget_s)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    budget.say(f"environment ({args.device}{', smoke' if args.smoke else ''}) -> {out}")
    env = environment(args.device, args.revision)
    write_json(out / "environment.json", env)

    budget.say("agreement: float64 trainer, device vs cpu ...")
    agree = agreement(args.device, AGREE_SMOKE if args.smoke else AGREE)
    write_json(out / "agreement.json", agree)
    budget.say(f"agreement: loss {agree['loss_max_rel_diff']:.2e} (tol {LOSS_TOLERANCE:.0e}), "
               f"{'pass' if agree['passed'] else 'FAIL'}")

    timing_record = None
    if agree["passed"] and not args.no_timing:
        timing_record = timing(args, env, budget, args.timing_share * args.budget_s)
        timing_record["agreement_passed"] = True
    elif not agree["passed"]:
        budget.say("agreement failed: the trainer's timings would be of a wrong computation; "
                   "not timing")
    why = "--no-timing" if agree["passed"] else "agreement failed"
    write_json(out / "timing.json", timing_record or {"skipped": why, "rows": [],
                                                     "agreement": agree})
    if timing_record is None:      # the claims' estimates still need rates: measure them
        timing_record = {"rows": [],
                         "matmul_fp32": matmul_rate(args.device, args.matmul_n, torch.float32),
                         "matmul_fp64": matmul_rate(args.device, args.matmul_n, torch.float64)}
        timing_record_for_summary = None
    else:
        timing_record_for_summary = timing_record

    if args.profile:
        size = SMOKE if args.smoke else FIG3
        profiles = []
        for mode in (None, *(m for m in (args.profile_modes or "").split(",") if m)):
            budget.say(f"profile {mode or 'eager'}, {args.profile} seed(s) ...")
            try:
                profiles.append(profile(args.device, size, args.profile, mode))
            except Exception as exc:  # noqa: BLE001 - a profiler failure is recorded
                profiles.append({"mode": mode or "eager", "error": f"{type(exc).__name__}: {exc}"})
                traceback.print_exc()
        write_json(out / "profile.json", {"size": size.__dict__ | {"n": size.n},
                                          "profiles": profiles})

    checked = claims(args, timing_record, out, budget)
    summary = {"smoke": args.smoke, "budget_s": args.budget_s, "wall_s": budget.elapsed(),
               "finished": common.now(), "environment": env, "agreement": agree,
               "timing": timing_record_for_summary, "claims": checked}
    write_json(out / "summary.json", summary)
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    budget.say(f"done: {out / 'summary.md'}")
    return 0 if agree["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
