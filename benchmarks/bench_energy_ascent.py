r"""Benchmark 3 (issue 9): projected ascent of Li2's energy (Eq. 7) from many random starts on
:math:`\mathbb Z_{71}` with full data, batched vs a Python loop over the starts.

The task: the Cayley table of :math:`\mathbb Z_{71}` (:math:`(a+b) \bmod 71`), all
:math:`n = 71^2 = 5041` pairs (:func:`numerics.group_task.group_task`), :math:`\sigma(x)=x^2`,
``--starts`` Gaussian starts in :math:`\mathbb R^{142}` drawn as
:func:`numerics.landscape.find_local_maxima` draws them. Step and stopping rule are the
``li2.thm2`` claim's: ``lr = 0.4 / M``, gradient tolerance :math:`10^4\,u\,M`
(:math:`u = 2^{-53}`), at most ``--max-steps`` steps.

* Project, chunked: :func:`numerics.landscape.ascend_in_chunks` with its default chunks of
  about :math:`2^{20}/n` starts, which is what ``find_local_maxima`` runs.
* Project, one batch: :func:`numerics.landscape.ascend_sphere` on all starts at once.
* Baseline: the same :func:`~numerics.landscape.ascend_sphere` called on one start at a time
  in a Python loop: the same per-start math (autograd of the same gather-based energy, the
  same step, each start stopping at its own tolerance, so the loop never steps a start that
  has converged, while a batch steps until its slowest start converges).

The end points are compared: the largest relative energy difference and the largest distance
between a start's batched and looped end point (both runs meet the same gradient tolerance,
so they agree to about the tolerance over the curvature, not to rounding).

Run: ``python benchmarks/bench_energy_ascent.py`` (about 20 minutes on 2 busy cores: the loop
takes several minutes a repeat).
"""
from __future__ import annotations

import statistics

import common
import torch

from numerics.activations import activation
from numerics.group_task import group_task
from numerics.landscape import AscentResult, ascend_in_chunks, ascend_sphere

NAME = "energy_ascent"
UNIT_ROUNDOFF = 2.0**-53  # float64


def cyclic_table(M: int) -> list[list[int]]:
    """The Cayley table of :math:`\\mathbb Z_M`: ``table[a][b] = (a + b) mod M``."""
    return [[(a + b) % M for b in range(M)] for a in range(M)]


def loop(w0: torch.Tensor, ascend) -> list[AscentResult]:
    """The baseline: one ascent per start."""
    return [ascend(w0[i:i + 1]) for i in range(w0.shape[0])]


def main() -> None:
    parser = common.arguments(__doc__.split("\n\n")[0], repeats=3)
    parser.add_argument("--M", type=int, default=71, help="group order (default 71)")
    parser.add_argument("--starts", type=int, default=1024)
    parser.add_argument("--max-steps", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    common.set_threads(args.threads)
    started, machine = common.now(), common.machine()
    print(f"# {common.describe(machine)}")

    M = args.M
    task = group_task(cyclic_table(M))
    act = activation("x2")
    lr, gtol = 0.4 / M, 1e4 * UNIT_ROUNDOFF * M  # as li2.thm2 (see its comments)
    generator = torch.Generator().manual_seed(args.seed)
    w0 = torch.randn(args.starts, 2 * M, generator=generator, dtype=torch.float64)
    chunk = max(1, 2**20 // task.n)

    def one(w: torch.Tensor) -> AscentResult:
        return ascend_sphere(w, task, act, lr, args.max_steps, gtol)

    chunked = f"ascend_in_chunks ({chunk} starts a chunk)"
    single = f"ascend_sphere, one batch of {args.starts}"
    baseline = "loop: ascend_sphere per start"
    fns = {chunked: lambda: ascend_in_chunks(w0, task, act, lr, args.max_steps, gtol),
           single: lambda: one(w0),
           baseline: lambda: loop(w0, one)}
    warm = {baseline: lambda: loop(w0[:2], one)}
    timings = common.measure(fns, repeats=args.repeats, warmup=args.warmup, warmups=warm)

    looped: list[AscentResult] = timings[baseline].result
    e_loop = torch.cat([r.energy for r in looped])
    w_loop = torch.cat([r.w for r in looped])
    loop_steps = [r.steps for r in looped]
    agreement = {}
    for name in (chunked, single):
        res: AscentResult = timings[name].result
        agreement[name] = {
            "energy_rel_diff": float(((res.energy - e_loop).abs() / e_loop.abs()).max()),
            "endpoint_distance": float((res.w - w_loop).norm(dim=-1).max()),
            "steps": res.steps, "converged": int(res.converged.sum()),
        }
    loop_converged = sum(int(r.converged.sum()) for r in looped)

    rows, record_rows = [], []
    for name, t in timings.items():
        is_baseline = name == baseline
        ratio = None if is_baseline else common.speedup(timings[baseline], t)
        if is_baseline:
            steps = f"{min(loop_steps)}..{max(loop_steps)} (sum {sum(loop_steps)})"
            check, converged = "", loop_converged
        else:
            a = agreement[name]
            steps, converged = str(a["steps"]), a["converged"]
            check = f"{a['energy_rel_diff']:.1e} / {a['endpoint_distance']:.1e}"
        rows.append([name, steps, f"{converged}/{args.starts}", check, min(t.wall),
                     statistics.median(t.wall), min(t.cpu),
                     "" if is_baseline else f"{ratio['min_wall']:.1f}x",
                     "" if is_baseline else f"{ratio['min_cpu']:.1f}x"])
        record_rows.append({"variant": name, "timing": t.summary(),
                            "speedup_over_loop": ratio,
                            "agreement_with_loop": agreement.get(name),
                            "steps": loop_steps if is_baseline else agreement[name]["steps"],
                            "converged": converged})
    headers = ["variant", "steps", "converged", "dE rel / |dw| vs loop", "wall min s",
               "wall med s", "CPU min s", "speed-up", "CPU speed-up"]
    print()
    print(common.table(headers, rows))
    headline = common.speedup(timings[baseline], timings[chunked])
    print(f"\nspeed-up of {chunked} over the loop: {headline['min_wall']:.1f}x (min wall), "
          f"median {headline['median_wall']:.1f}x, CPU {headline['min_cpu']:.1f}x")
    record = {
        "benchmark": NAME, "started": started, "finished": common.now(),
        "machine": machine, "load_average_after": common.load_average(),
        "parameters": {**{k: v for k, v in vars(args).items() if k != "out"},
                       "n": task.n, "activation": "x2", "lr": lr, "gtol": gtol,
                       "chunk": chunk, "dtype": "float64"},
        "ratio_statistic": "loop min wall / batched min wall (see common.py)",
        "headline": {"variant": chunked, **headline}, "rows": record_rows,
    }
    print(f"wrote {common.write(NAME, record, args.out)}")


if __name__ == "__main__":
    main()
