r"""Benchmark 3 (issue 9): projected ascent of Li2's energy (Eq. 7) from many random starts on
:math:`\mathbb Z_{71}` with full data, batched vs a Python loop over the starts.

The task: the Cayley table of :math:`\mathbb Z_{71}` (:math:`(a+b) \bmod 71`), all
:math:`n = 71^2 = 5041` pairs (:func:`numerics.li2.group_task.group_task`), :math:`\sigma(x)=x^2`,
``--starts`` Gaussian starts in :math:`\mathbb R^{142}` drawn as
:func:`numerics.li2.landscape.find_local_maxima` draws them. Step and stopping rule are the
``li2.thm2`` claim's: ``lr = 0.4 / M``, gradient tolerance :math:`10^4\,u\,M`
(:math:`u = 2^{-53}`), at most ``--max-steps`` steps.

* Project, active set (the headline): :func:`numerics.li2.batched_ascent.ascend_sphere_active`:
  all starts in one batch evaluated in cache-sized chunks; a start leaves the batch when it
  meets the tolerance, and the energy's gradient is taken by the chain rule on the Cayley grid
  (checked against autograd in ``tests/numerics/li2/test_batched_ascent.py``).
* Project, chunked (the previous way): :func:`numerics.li2.landscape.ascend_in_chunks` with its
  default chunks of about :math:`2^{20}/n` starts; every start of a chunk steps until the
  chunk's slowest start converges.
* Baseline: :func:`~numerics.li2.landscape.ascend_sphere` called on one start at a time in a
  Python loop (autograd of :func:`numerics.li2.group_task.group_energy`, each start stopping at its
  own tolerance).
* Same math, one start at a time: ``ascend_sphere_active`` called on one start at a time,
  which separates what batching buys from what the grid gradient buys.

The end points are compared with the baseline's: the largest relative energy difference, the
largest distance between end points and the number of starts whose step count differs. The
active set takes the baseline's steps, so it agrees to rounding; the chunked ascent steps the
starts of a chunk further, so it agrees only to about the tolerance over the curvature.

Run: ``python benchmarks/bench_energy_ascent.py`` (about 10 minutes on 2 busy cores: the
baseline loop takes one to two minutes a repeat).
"""
from __future__ import annotations

import statistics

import common
import torch

from numerics.activations import activation
from numerics.li2.batched_ascent import ascend_sphere_active
from numerics.li2.group_task import group_task
from numerics.li2.landscape import AscentResult, ascend_in_chunks, ascend_sphere

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

    def active(w: torch.Tensor) -> AscentResult:
        return ascend_sphere_active(w, task, act, lr, args.max_steps, gtol)

    project = "ascend_sphere_active (active set)"
    chunked = f"ascend_in_chunks ({chunk} starts a chunk)"
    baseline = "loop: ascend_sphere per start"
    same_math = "loop: ascend_sphere_active per start"
    fns = {project: lambda: active(w0),
           chunked: lambda: ascend_in_chunks(w0, task, act, lr, args.max_steps, gtol),
           baseline: lambda: loop(w0, one),
           same_math: lambda: loop(w0, active)}
    warm = {baseline: lambda: loop(w0[:2], one), same_math: lambda: loop(w0[:2], active)}
    timings = common.measure(fns, repeats=args.repeats, warmup=args.warmup, warmups=warm)

    def merged(result) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Energies, end points, per-start steps and converged flags of a batch or a loop."""
        if isinstance(result, list):
            return (torch.cat([r.energy for r in result]), torch.cat([r.w for r in result]),
                    torch.tensor([r.steps for r in result]),
                    torch.cat([r.converged for r in result]))
        steps = getattr(result, "start_steps", torch.full_like(result.energy, result.steps,
                                                               dtype=torch.long))
        return result.energy, result.w, steps, result.converged

    e_loop, w_loop, loop_steps, _ = merged(timings[baseline].result)
    agreement, step_counts, converged = {}, {}, {}
    for name in fns:
        e, w, steps, ok = merged(timings[name].result)
        step_counts[name], converged[name] = steps, int(ok.sum())
        if name != baseline:
            agreement[name] = {
                "energy_rel_diff": float(((e - e_loop).abs() / e_loop.abs()).max()),
                "endpoint_distance": float((w - w_loop).norm(dim=-1).max()),
                "starts_with_other_step_count": int((steps != loop_steps).sum())}

    rows, record_rows = [], []
    for name, t in timings.items():
        is_baseline = name == baseline
        ratio = None if is_baseline else common.speedup(timings[baseline], t)
        steps = step_counts[name]
        # Start-steps: the steps taken summed over the starts (a chunk steps all its starts
        # until its slowest one converges).
        if name == chunked:
            start_steps = sum(int(steps[i:i + chunk].max()) * steps[i:i + chunk].numel()
                              for i in range(0, args.starts, chunk))
        else:
            start_steps = int(steps.sum())
        a = agreement.get(name)
        check = "" if a is None else (f"{a['energy_rel_diff']:.1e} / "
                                      f"{a['endpoint_distance']:.1e} / "
                                      f"{a['starts_with_other_step_count']}")
        per_start_step = 1e6 * min(t.cpu) / start_steps
        rows.append([name, f"{int(steps.min())}..{int(steps.max())}", start_steps,
                     f"{converged[name]}/{args.starts}", check, f"{per_start_step:.0f}",
                     min(t.wall), statistics.median(t.wall), min(t.cpu),
                     "" if is_baseline else f"{ratio['min_wall']:.1f}x",
                     "" if is_baseline else f"{ratio['min_cpu']:.1f}x"])
        record_rows.append({"variant": name, "timing": t.summary(),
                            "speedup_over_loop": ratio, "agreement_with_loop": a,
                            "start_steps": start_steps,
                            "cpu_us_per_start_step": per_start_step,
                            "steps": steps.tolist(), "converged": converged[name]})
    headers = ["variant", "steps", "start-steps", "converged",
               "dE rel / |dw| / other steps vs loop", "CPU us/start-step", "wall min s",
               "wall med s", "CPU min s", "speed-up", "CPU speed-up"]
    print()
    print(common.table(headers, rows))
    headline = common.speedup(timings[baseline], timings[project])
    batching = common.speedup(timings[same_math], timings[project])
    print(f"\nspeed-up of {project} over the {baseline}: {headline['min_wall']:.1f}x (min wall),"
          f" median {headline['median_wall']:.1f}x, CPU {headline['min_cpu']:.1f}x")
    print(f"speed-up of {project} over the {same_math} (batching alone): "
          f"{batching['min_wall']:.1f}x (min wall), median {batching['median_wall']:.1f}x, "
          f"CPU {batching['min_cpu']:.1f}x")
    record = {
        "benchmark": NAME, "started": started, "finished": common.now(),
        "machine": machine, "load_average_after": common.load_average(),
        "parameters": {**{k: v for k, v in vars(args).items() if k != "out"},
                       "n": task.n, "activation": "x2", "lr": lr, "gtol": gtol,
                       "chunk": chunk, "dtype": "float64"},
        "ratio_statistic": "loop min wall / batched min wall (see common.py)",
        "headline": {"variant": project, "baseline": baseline, **headline},
        "batching_alone": {"variant": project, "baseline": same_math, **batching},
        "rows": record_rows,
    }
    print(f"wrote {common.write(NAME, record, args.out)}")


if __name__ == "__main__":
    main()
