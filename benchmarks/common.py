"""What every benchmark shares: the machine's description, interleaved timing (warm-up,
repeats, min and median of wall and CPU time), speed-up ratios, a printed table and the JSON
record in ``benchmarks/results/<name>.json``.

Why both wall and CPU time, and why the minimum: on a shared machine other processes only ever
*add* wall time to a run, so the fastest of several repeats is the best estimate of the
uncontended cost, and the median says how noisy the repeats were. With one torch thread the
process's CPU time (user + system) counts the work done whatever the load (contention still
inflates it a little through shared caches), so the ratio of CPU times is a second,
load-insensitive estimate of the same speed-up. Project and baseline are timed in turns
(interleaved, the order rotating every repeat), so a change of load hits both alike.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine() -> dict[str, Any]:
    """CPU model, cores, library versions, torch's thread counts and the load right now."""
    import numpy
    import scipy
    import torch

    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable_cpus(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "load_average": load_average(),
    }


def describe(m: Mapping[str, Any]) -> str:
    """One line: ``AMD EPYC, 2 usable of 2 CPUs, torch 2.13.0+cpu, 1 thread, load 7.9``."""
    load = m.get("load_average")
    busy = f", load {load[0]:.1f}" if load else ""
    threads = m["torch_threads"]
    return (f"{m['cpu_model']}, {m['usable_cpus']} usable of {m['logical_cpus']} CPUs, "
            f"torch {m['torch']}, {threads} torch thread{'s' * (threads != 1)}{busy}")


@dataclass
class Timing:
    """Wall-clock and process-CPU seconds of each repeat, and the last call's return value."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    result: Any = None

    def summary(self) -> dict[str, Any]:
        return {"repeats": len(self.wall),
                "wall_min": min(self.wall), "wall_median": statistics.median(self.wall),
                "cpu_min": min(self.cpu), "cpu_median": statistics.median(self.cpu),
                "wall": self.wall, "cpu": self.cpu}


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(wall seconds, process CPU seconds, return value)`` of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    value = fn()
    w1, c1 = time.perf_counter(), time.process_time()
    return w1 - w0, c1 - c0, value


def measure(fns: Mapping[str, Callable[[], Any]], *, repeats: int, warmup: int = 1,
            warmups: Mapping[str, Callable[[], Any]] | None = None,
            progress: bool = True) -> dict[str, Timing]:
    """Time each of ``fns`` ``repeats`` times, in turns, after ``warmup`` untimed rounds.

    Each round calls every function once; the starting function rotates from round to round
    so none is always first after a pause. ``warmups`` replaces a function by a cheaper one for
    the warm-up rounds (a long baseline loop needs no full warm-up run: it compiles nothing).
    """
    if repeats < 1:
        raise ValueError(f"repeats: {repeats} must be >= 1")
    if warmup < 0:
        raise ValueError(f"warmup: {warmup} must be >= 0")
    names = list(fns)
    warm = {name: (warmups or {}).get(name, fns[name]) for name in names}
    for _ in range(warmup):
        for name in names:
            warm[name]()
    timings = {name: Timing() for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            wall, cpu, value = timed(fns[name])
            t = timings[name]
            t.wall.append(wall)
            t.cpu.append(cpu)
            t.result = value
            if progress:
                print(f"  repeat {r + 1}/{repeats}  {name}: {wall:.3f} s wall, {cpu:.3f} s CPU",
                      file=sys.stderr, flush=True)
    return timings


def speedup(baseline: Timing, project: Timing) -> dict[str, float]:
    """Baseline time over project time: from the minima (the headline), the medians, and
    the minimal CPU times."""
    return {"min_wall": min(baseline.wall) / min(project.wall),
            "median_wall": statistics.median(baseline.wall) / statistics.median(project.wall),
            "min_cpu": min(baseline.cpu) / min(project.cpu)}


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table, columns padded to their widest cell (floats as ``%.3g``)."""
    def cell(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join([line, rule, *body])


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def arguments(description: str, *, repeats: int, warmup: int = 1) -> argparse.ArgumentParser:
    """A parser with the options every benchmark takes: ``--repeats``, ``--warmup``,
    ``--threads`` (torch intra-op threads, default 1 like ``verify check`` at quick fidelity)
    and ``--out`` (the JSON file; default ``benchmarks/results/<name>.json``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=repeats,
                        help=f"timed repeats of each variant (default {repeats})")
    parser.add_argument("--warmup", type=int, default=warmup,
                        help=f"untimed warm-up rounds (default {warmup})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (default 1)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the JSON (default benchmarks/results/<name>.json)")
    return parser


def set_threads(threads: int) -> None:
    if threads < 1:
        raise ValueError(f"threads: {threads} must be >= 1")
    import torch
    torch.set_num_threads(threads)


def write(name: str, record: Mapping[str, Any], out: Path | None = None) -> Path:
    """Write ``record`` as JSON to ``out`` (default ``benchmarks/results/<name>.json``)."""
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path
