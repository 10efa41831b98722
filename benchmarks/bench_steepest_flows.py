r"""Benchmark 2 (issue 9): the batched steepest-flow integrator vs scipy's ``solve_ivp`` one
initialisation at a time, at the same accuracy.

The flow: :class:`numerics.ns.steepest_flows.ProductFlow` on :math:`x=\prod_{i=1}^L w_i` for the
default regression of Never Saddle's sources (verify/claims/ns/SOURCES.md §4.0: :math:`N=10`,
:math:`d=20`,
:math:`f(x)=\tfrac1{2N}\|Ax-y\|^2`), :math:`\dot w_i=-\psi_q(\partial_{w_i}F)`, from
``--inits`` random initialisations (factor entries of magnitude uniform in
:math:`[a/2, 3a/2]`, random signs) up to time ``--horizon``.

* Project, adaptive (the headline):
  :func:`numerics.adaptive_integrators.integrate_adaptive` with Dormand–Prince 5(4) and with
  DOP853 8(5,3), the algorithms of scipy's RK45 and DOP853 (the same step control, per
  initialisation), on all initialisations at once, one ``(L, B, d)`` tensor; finished
  initialisations leave the batch (``restrict``).
* Project, fixed step: :func:`numerics.integrators.integrate` (RK4) on the same tensor (the
  previous project way, kept for the comparison).
* Baseline: ``scipy.integrate.solve_ivp`` (adaptive RK45 and DOP853) in a Python loop over
  the initialisations, with a vectorised numpy right-hand side (the same field; it is checked
  against the torch field before timing). For ``q = 2`` the numpy field skips the power.

Same accuracy, measured: a reference end state is integrated (project RK4 on a fine step,
refined until halving the step changes it by at most a tenth of the tightest target,
cross-checked against DOP853 at ``rtol = atol = 1e-13`` on a few initialisations). For each
target error :math:`\varepsilon` (``--targets``) each method gets its cheapest setting whose
largest error over *all* initialisations and coordinates, :math:`\max|W_T-W_T^{\rm ref}|`, is
at most :math:`\varepsilon`: the fewest RK4 steps on a ladder of ratio :math:`2^{1/4}` (error
factor about 2 between rungs) and the loosest ``rtol = atol`` on a ladder of ratio
:math:`10^{1/4}` (the batched adaptive integrator and scipy alike). scipy's rung is walked on
``--calibration-inits`` initialisations and then confirmed (tightened if needed) on all of
them; the project's rungs are walked on all of them; the errors reported are those of the
timed runs.

The headline ratio is the faster scipy loop over the faster batched adaptive method, each chosen
anew for each statistic; the same-algorithm ratios (RK45 vs DP5, DOP853 vs DOP853) are also
printed. The exponent is passed as the number ``q`` (one exponent for the whole batch), so at
``q = 2`` :func:`numerics.ns.steepest_flows.odd_power` skips the power (same bits).

The default ``q = 2`` keeps the field smooth. For ``q < 2`` the field is not Lipschitz where a
partial derivative vanishes, both integrators lose their order there and no reference reaches
the tight targets (the script stops with a message).

Run: ``python benchmarks/bench_steepest_flows.py`` (about 10 minutes on 2 busy cores).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import common
import numpy as np
import torch
from scipy.integrate import solve_ivp

from numerics.adaptive_integrators import (
    DOP853,
    DORMAND_PRINCE,
    AdaptiveResult,
    integrate_adaptive,
)
from numerics.integrators import integrate
from numerics.ns.steepest_flows import ProductFlow, default_regression

NAME = "steepest_flows"
SCIPY_METHODS = ("RK45", "DOP853")
#: The project's adaptive pairs, each the same algorithm as one of scipy's methods.
PAIRS = {"DP5": DORMAND_PRINCE, "DOP853": DOP853}
SAME_ALGORITHM = {"DP5": "RK45", "DOP853": "DOP853"}
RK4_EVALUATIONS = 4  # field evaluations per RK4 step


def initialisations(generator: torch.Generator, depth: int, inits: int, d: int,
                    scale: float) -> torch.Tensor:
    """``(depth, inits, d)`` factors: magnitudes uniform in [scale/2, 3 scale/2], random signs
    (no factor starts at 0, where the flow would not move it)."""
    magnitude = scale * (0.5 + torch.rand(depth, inits, d, generator=generator,
                                          dtype=torch.float64))
    signs = torch.randint(0, 2, (depth, inits, d), generator=generator).to(torch.float64) * 2 - 1
    return magnitude * signs


def numpy_field(A: np.ndarray, y: np.ndarray, q: float, depth: int
                ) -> Callable[[float, np.ndarray], np.ndarray]:
    r"""The same field for one initialisation, flattened ``(depth * d,)``, in numpy:
    :math:`\dot w_i=-\psi_q(\nabla f(x)\prod_{j\ne i}w_j)` with prefix/suffix products."""
    N, d = A.shape
    ones = np.ones((1, d))

    def rhs(t: float, state: np.ndarray) -> np.ndarray:
        W = state.reshape(depth, d)
        g = (A @ W.prod(0) - y) @ A / N
        others = (np.concatenate([ones, np.cumprod(W[:-1], 0)])
                  * np.concatenate([np.cumprod(W[:0:-1], 0)[::-1], ones]))
        partial = g * others
        if q == 2:
            return -partial.ravel()
        return (-np.sign(partial) * np.abs(partial) ** (q - 1)).ravel()

    return rhs


def rk4_final(flow: ProductFlow, W0: torch.Tensor, horizon: float, steps: int) -> torch.Tensor:
    return integrate(flow, W0, dt=horizon / steps, steps=steps, method="rk4",
                     record_every=steps).final


def adaptive_final(flow: ProductFlow, W0: torch.Tensor, horizon: float, method: str,
                   rtol: float) -> AdaptiveResult:
    """The batched adaptive integrator on all initialisations, ``rtol = atol`` as for scipy;
    finished initialisations leave the batch (the flow restricted to the rest: only its mask
    is per-initialisation, the exponent being one number)."""
    def restrict(index: torch.Tensor) -> ProductFlow:
        return dataclasses.replace(flow, mask=flow.mask[:, index])

    return integrate_adaptive(flow, W0, horizon, rtol=rtol, atol=rtol, method=PAIRS[method],
                              batch_dim=1, restrict=restrict)


def best_against_best(timings: dict[str, common.Timing], baselines: list[str],
                      projects: list[str]) -> dict[str, object]:
    """The fastest baseline over the fastest project variant, each chosen anew for each
    statistic (min wall, median wall, min CPU): under a changing load the statistics may
    disagree on which is fastest, and this never flatters the project."""
    ratio: dict[str, object] = {}
    for key, stat in (("min_wall", lambda t: min(t.wall)),
                      ("median_wall", lambda t: float(np.median(t.wall))),
                      ("min_cpu", lambda t: min(t.cpu))):
        base = min(baselines, key=lambda n: stat(timings[n]))
        proj = min(projects, key=lambda n: stat(timings[n]))
        ratio[key] = stat(timings[base]) / stat(timings[proj])
        ratio[f"{key}_pair"] = f"{base} / {proj}"
    return ratio


def scipy_loop(rhs: Callable, starts: np.ndarray, horizon: float, method: str,
               rtol: float) -> tuple[np.ndarray, int]:
    """End states ``(B, depth * d)`` of one ``solve_ivp`` per row of ``starts`` and the total
    number of field evaluations."""
    finals, evaluations = np.empty_like(starts), 0
    for b in range(starts.shape[0]):
        sol = solve_ivp(rhs, (0.0, horizon), starts[b], method=method, rtol=rtol, atol=rtol)
        if not sol.success:
            raise RuntimeError(f"solve_ivp {method} rtol={rtol:.1e}: {sol.message}")
        finals[b], evaluations = sol.y[:, -1], evaluations + sol.nfev
    return finals, evaluations


def step_ladder(start: int = 8) -> Iterator[int]:
    """RK4 step counts ``round(start * 2**(k/4))``, distinct and increasing."""
    last = 0
    for k in range(200):
        n = round(start * 2 ** (k / 4))
        if n > last:
            last = n
            yield n


def rtol_ladder() -> Iterator[float]:
    """``rtol = 10**(-2 - k/4)`` down to 1e-13."""
    for k in range(45):
        yield 10 ** (-2 - k / 4)


def reference(flow: ProductFlow, W0: torch.Tensor, horizon: float, accuracy: float,
              max_steps: int = 2**15) -> tuple[torch.Tensor, int, float]:
    """RK4 end state with the step halved until the change is at most ``accuracy``; returns
    the finer state, its step count and the last change (an upper bound on its error for a
    convergent scheme of order >= 1)."""
    steps = 512
    coarse = rk4_final(flow, W0, horizon, steps)
    while True:
        fine = rk4_final(flow, W0, horizon, 2 * steps)
        change = float((fine - coarse).abs().max())
        if change <= accuracy:
            return fine, 2 * steps, change
        if 2 * steps >= max_steps:
            raise SystemExit(f"reference: RK4 with {2 * steps} steps still changes by "
                             f"{change:.1e} > {accuracy:.1e} when the step is halved (a q < 2 "
                             "field is not smooth enough for these targets)")
        coarse, steps = fine, 2 * steps


def main() -> None:
    parser = common.arguments(__doc__.split("\n\n")[0], repeats=3)
    parser.add_argument("--inits", type=int, default=1024)
    parser.add_argument("--q", type=float, default=2.0, help="exponent in [1, 2] (default 2)")
    parser.add_argument("--depth", type=int, default=3, help="factors L (default 3)")
    parser.add_argument("--horizon", type=float, default=20.0, help="end time T (default 20)")
    parser.add_argument("--scale", type=float, default=0.5, help="init scale a (default 0.5)")
    parser.add_argument("--targets", type=float, nargs="+", default=[1e-6, 1e-8, 1e-10])
    parser.add_argument("--calibration-inits", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    common.set_threads(args.threads)
    started, machine = common.now(), common.machine()
    print(f"# {common.describe(machine)}")

    generator = torch.Generator().manual_seed(args.seed)
    problem, _ = default_regression(generator)
    W0 = initialisations(generator, args.depth, args.inits, problem.A.shape[1], args.scale)
    B = args.inits
    flow = ProductFlow(problem.grad, args.q, torch.ones(args.depth, B, 1, dtype=torch.float64))
    rhs = numpy_field(problem.A.numpy(), problem.y.numpy(), args.q, args.depth)
    starts = W0.permute(1, 0, 2).reshape(B, -1).numpy().copy()  # row b: init b, flattened
    field_gap = max(float(np.abs(rhs(0.0, starts[b]) - flow(0.0, W0)[:, b].reshape(-1).numpy())
                          .max()) for b in range(min(B, 8)))
    if field_gap > 1e-12:
        raise SystemExit(f"the numpy field differs from ProductFlow by {field_gap:.1e}")

    targets = sorted(args.targets, reverse=True)
    print(f"reference (RK4, step halved until the change is <= {targets[-1] / 10:.0e}) ...",
          flush=True)
    ref, ref_steps, ref_change = reference(flow, W0, args.horizon, targets[-1] / 10)
    ref_rows = ref.permute(1, 0, 2).reshape(B, -1).numpy()
    check = min(B, 4)
    dop, _ = scipy_loop(rhs, starts[:check], args.horizon, "DOP853", 1e-13)
    ref_vs_dop = float(np.abs(dop - ref_rows[:check]).max())
    print(f"  {ref_steps} steps, last change {ref_change:.1e}; vs DOP853 rtol=1e-13 on "
          f"{check} inits: {ref_vs_dop:.1e}")

    # Project: walk the step ladder and the rtol ladder on all initialisations (errors
    # measured, not assumed).
    rk4_steps: dict[float, int] = {}
    rungs = step_ladder()
    while len(rk4_steps) < len(targets):
        n = next(rungs)
        error = float((rk4_final(flow, W0, args.horizon, n) - ref).abs().max())
        for eps in targets:
            if eps not in rk4_steps and error <= eps:
                rk4_steps[eps] = n
    ladder = list(rtol_ladder())
    adaptive_level: dict[tuple[str, float], int] = {}
    for method in PAIRS:
        k = 0
        for eps in targets:
            while k < len(ladder) - 1:
                final = adaptive_final(flow, W0, args.horizon, method, ladder[k]).final
                if float((final - ref).abs().max()) <= eps:
                    break
                k += 1
            adaptive_level[(method, eps)] = k
    # Baseline: the loosest rtol meeting each target, walked on a subset first (cheap), then
    # confirmed on all initialisations (one untimed run per rung).
    subset = np.linspace(0, B - 1, min(B, args.calibration_inits)).round().astype(int)
    calibrate: dict[tuple[str, float], int] = {}
    for method in SCIPY_METHODS:
        k = 0
        for eps in targets:
            for which in (subset, slice(None)):
                while k < len(ladder) - 1:
                    finals, _ = scipy_loop(rhs, starts[which], args.horizon, method, ladder[k])
                    if float(np.abs(finals - ref_rows[which]).max()) <= eps:
                        break
                    k += 1
            calibrate[(method, eps)] = k

    rows, record_rows, headline, fixed_step, same_algorithm = [], [], {}, {}, {}
    for eps in targets:
        n = rk4_steps[eps]
        print(f"target {eps:.0e}: RK4 {n} steps, "
              + ", ".join(f"project {m} rtol {ladder[adaptive_level[(m, eps)]]:.1e}"
                          for m in PAIRS) + ", "
              + ", ".join(f"scipy {m} rtol {ladder[calibrate[(m, eps)]]:.1e}"
                          for m in SCIPY_METHODS), flush=True)
        fns, settings = {}, {}
        for m in PAIRS:
            rtol = ladder[adaptive_level[(m, eps)]]
            fns[f"project {m}"] = lambda m=m, rtol=rtol: adaptive_final(flow, W0, args.horizon,
                                                                        m, rtol)
            settings[f"project {m}"] = f"rtol=atol={rtol:.1e}"
        rk4 = "project RK4"
        fns[rk4], settings[rk4] = (lambda n=n: rk4_final(flow, W0, args.horizon, n)), \
            f"{n} steps"
        for m in SCIPY_METHODS:
            rtol = ladder[calibrate[(m, eps)]]
            fns[f"scipy {m} loop"] = lambda m=m, rtol=rtol: scipy_loop(rhs, starts,
                                                                       args.horizon, m, rtol)
            settings[f"scipy {m} loop"] = f"rtol=atol={rtol:.1e}"
        warm = {f"scipy {m} loop": (lambda m=m: scipy_loop(rhs, starts[:4], args.horizon, m,
                                                           1e-6)) for m in SCIPY_METHODS}
        timings = common.measure(fns, repeats=args.repeats, warmup=args.warmup, warmups=warm)
        errors, evaluations, extra = {}, {}, {}
        for m in PAIRS:
            result: AdaptiveResult = timings[f"project {m}"].result
            errors[f"project {m}"] = float((result.final - ref).abs().max())
            # Evaluations each initialisation needed (what it would cost alone); the batch's
            # field calls also evaluate the initialisations waiting for the next compaction.
            evaluations[f"project {m}"] = float(result.evaluations.double().mean())
            extra[f"project {m}"] = {"batched_field_calls": result.field_calls,
                                     "max_evaluations": int(result.evaluations.max())}
        errors[rk4] = float((timings[rk4].result - ref).abs().max())
        evaluations[rk4] = RK4_EVALUATIONS * n
        for m in SCIPY_METHODS:
            errors[f"scipy {m} loop"] = float(np.abs(timings[f"scipy {m} loop"].result[0]
                                                     - ref_rows).max())
            evaluations[f"scipy {m} loop"] = timings[f"scipy {m} loop"].result[1] / B
        baselines = [f"scipy {m} loop" for m in SCIPY_METHODS]
        adaptive = [f"project {m}" for m in PAIRS]
        headline[f"{eps:.0e}"] = best_against_best(timings, baselines, adaptive)
        fixed_step[f"{eps:.0e}"] = best_against_best(timings, baselines, [rk4])
        same_algorithm[f"{eps:.0e}"] = {
            f"{SAME_ALGORITHM[m]} / {m}": common.speedup(
                timings[f"scipy {SAME_ALGORITHM[m]} loop"], timings[f"project {m}"])
            for m in PAIRS}
        for name, t in timings.items():
            is_project = name.startswith("project")
            ratio = best_against_best(timings, baselines, [name]) if is_project else None
            per_eval = 1e6 * min(t.cpu) / (B * evaluations[name])  # CPU us per init-eval
            rows.append([f"{eps:.0e}", name, settings[name], f"{errors[name]:.1e}",
                         f"{evaluations[name]:.0f}", f"{per_eval:.2f}", min(t.wall),
                         float(np.median(t.wall)), min(t.cpu),
                         f"{ratio['min_wall']:.1f}x" if is_project else "",
                         f"{ratio['min_cpu']:.1f}x" if is_project else ""])
            record_rows.append({"target": eps, "variant": name, "setting": settings[name],
                                "max_error": errors[name],
                                "evaluations_per_init": evaluations[name],
                                "cpu_us_per_init_evaluation": per_eval,
                                "timing": t.summary(),
                                "speedup_over_faster_scipy": ratio, **extra.get(name, {})})

    headers = ["target", "variant", "setting", "max err", "evals/init", "CPU us/eval",
               "wall min s", "wall med s", "CPU min s", "speed-up", "CPU speed-up"]
    print()
    print(common.table(headers, rows))
    print("\n(speed-up: the faster scipy loop over this variant, min wall and min CPU)")
    for what, ratios in (("faster batched adaptive", headline), ("batched RK4", fixed_step)):
        print(f"\nspeed-up of the {what} over the faster scipy loop:")
        for eps, h in ratios.items():
            print(f"  error <= {eps}: {h['min_wall']:.1f}x min wall ({h['min_wall_pair']}), "
                  f"{h['median_wall']:.1f}x median, {h['min_cpu']:.1f}x min CPU "
                  f"({h['min_cpu_pair']})")
    print("\nsame algorithm, batched vs scipy's loop (min wall, min CPU):")
    for eps, pairs in same_algorithm.items():
        print(f"  error <= {eps}: " + ", ".join(f"{k}: {v['min_wall']:.1f}x, {v['min_cpu']:.1f}x"
                                               for k, v in pairs.items()))
    machine_after = common.machine()
    record = {
        "benchmark": NAME, "started": started, "finished": common.now(),
        "machine": machine, "load_average_after": machine_after["load_average"],
        "parameters": {**{k: v for k, v in vars(args).items() if k != "out"},
                       "problem": "default_regression N=10 d=20", "dtype": "float64"},
        "reference": {"rk4_steps": ref_steps, "halving_change": ref_change,
                      "vs_dop853_1e-13": ref_vs_dop, "dop853_inits": check},
        "accuracy": "max over all inits and coordinates of |W_T - W_T_ref| <= target",
        "ratio_statistic": "faster scipy loop / faster batched adaptive integrator, each chosen "
                           "per statistic (min wall, median wall, min CPU; see common.py)",
        "headline": headline, "fixed_step_rk4": fixed_step, "same_algorithm": same_algorithm,
        "rows": record_rows,
    }
    print(f"wrote {common.write(NAME, record, args.out)}")


if __name__ == "__main__":
    main()
