r"""What each Li2 training claim costs at full fidelity on 2 CPU cores, modelled from short
timings of its own training points (issue 28, item 2: "designed to finish in at most 3 hours
on 2 CPU cores"; ``check --fidelity full --dry-run`` gives every one an estimate).

How (one fresh interpreter per claim, ``torch.set_num_threads(--threads)``, default 2):

* The claim runs through :func:`verify.runner.run_claim` at full fidelity, with its negative
  control and readings as ``check`` runs it, but with a **capturing sweeper**
  (:mod:`verify.hooks`): every training point the claim hands to its sweeper (``run.sweep``
  or ``run.sweeper``; the point functions of :mod:`numerics.li2.sweep_points`,
  :mod:`numerics.li2.init_sweep_points`, ...) is run in this process with its length cut to
  ``--short`` epochs (``epochs``; ``budget`` and ``chunk``; ``checkpoints``; the lock-in
  ``checks``; the alignment window), and its real result at that length is handed back, so
  the claim goes on to its next sweep and its analysis. So the points are exactly the ones
  the claim trains at full: their groups, widths K, batch axes (seeds x learning rates x
  ...), optimisers, diagnostics and evaluation intervals.
* Per **shape** (the point with its seeds counted, learning rates, weight decays and scales
  dropped: what the cost depends on) the first point is run again at ``--short`` epochs
  (the first run warmed the code paths up) and at ``--long`` epochs or more (the extra
  epochs grow fourfold until they cost at least 2 CPU seconds); the difference gives the
  marginal cost of one epoch, in CPU seconds (``time.process_time``, all threads) and wall
  seconds.
* A later point of a shape already timed is not run: the first one's short result and
  cost stand for it (``--no-reuse`` runs every point), so a claim of many points of few
  shapes is modelled in the time of its shapes.
* A point's modelled cost: its short run, plus (full length - short) x the marginal cost
  per epoch of its shape. The full length is the point's ``epochs``, its ``budget`` (an
  upper bound: a grokking point stops when every run has crossed every threshold), or its
  last checkpoint.
* What the claim does outside its sweeps (derivations, the analysis of the results, any
  training not run through a sweeper) is timed as it ran: the claim's whole run minus its
  sweeps. It ran on the cut-short results, so analysis that grows with the length (number
  of checkpoints, of logged epochs) is underestimated; it is small beside the training.
* Modelled wall on 2 cores: the sweeps' modelled CPU seconds x :func:`wall_factor` (1/2 when
  timed with 2 threads, which both stay busy; 0.75 when timed with 1 thread, from
  ``benchmarks/results/trainer*.json``), plus the outside part's measured wall.
* On a loaded machine use ``--threads 1``: two threads that wait on each other spin, and
  at a load average of 10-15 on 2 cores that inflated the CPU seconds per epoch about 10x
  (li2.sec7-predictions: 432 CPU-ms per epoch for a step of about 20 on a quiet machine).

The load average (1 min) and the CPU seconds are reported beside every timing: on a shared
machine wall time grows with the load, CPU seconds much less (two busy threads that wait
on each other still spin, so they are inflated a little too).

Run: ``python benchmarks/full_fidelity_costs.py`` (all claims, a few minutes each at most),
``python benchmarks/full_fidelity_costs.py li2.fig8 li2.sec6-deep``; ``--write-estimates``
puts the modelled wall seconds of the claims named by ``--estimate`` (default: the training
claims that have no shipped full-fidelity CPU entry) into ``verify/measured_times.json`` as
``{"seconds": S, "model": true}``. Results go to
``benchmarks/results/full_fidelity_costs.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "full_fidelity_costs.json"
TIMES = ROOT / "verify" / "measured_times.json"
THREE_HOURS = 3 * 3600.0

#: The training claims of issue 28, item 2 (li2.fig5 is redesigned elsewhere; thm4's whole
#: check is timed, its network part being fig5's points).
CLAIMS = ("li2.fig3", "li2.eq6", "li2.fig6", "li2.fig7", "li2.fig8", "li2.fig10-ridge-top",
          "li2.fig11-complex", "li2.fig14-zero-init", "li2.thm4", "li2.thm6-training",
          "li2.sec6-deep", "li2.sec7-predictions", "li2.sec8-discussion", "li2.x.lock-in",
          "li2.x.paper-vs-code")

#: Point keys that do not change a point's cost per epoch (values, not sizes).
_VALUE_KEYS = {"seed", "lr", "eta", "etas", "top_init", "out_scale", "init_scale",
               "weight_decay", "data_seed", "ridge_lambda", "thresholds"}
#: Point keys that only set its length (cut by :func:`cut`).
_LENGTH_KEYS = {"epochs", "budget", "chunk", "checkpoints", "checks", "alignment"}


# --- the child: one claim, its points captured and timed ------------------------------------------

def full_length(point: Mapping[str, Any]) -> int | None:
    """The number of epochs the point trains at full fidelity (``budget``: at most)."""
    if "budget" in point:
        return int(point["budget"])
    if "epochs" in point:
        return int(point["epochs"])
    if point.get("checkpoints"):
        return int(max(point["checkpoints"]))
    return None


def unit(point: Mapping[str, Any]) -> int:
    """The cut lengths are multiples of this: the point's logging intervals of at most 10
    epochs (checkpoints must fall on logged epochs; a diagnostic every 5 is then timed in
    its share)."""
    import math

    intervals = [int(point[k]) for k in ("eval_every", "every", "diag_every", "purity_every",
                                         "rho_every")
                 if isinstance(point.get(k), int) and 1 <= point[k] <= 10]
    return math.lcm(*intervals) if intervals else 1


def cut(point: Mapping[str, Any], epochs: int) -> dict[str, Any]:
    """``point`` trained ``epochs`` epochs instead of its full length."""
    q = dict(point)
    if "budget" in q:
        q["budget"] = epochs
        if "chunk" in q:
            q["chunk"] = min(int(q["chunk"]), epochs)
    if "epochs" in q:
        q["epochs"] = epochs
    if q.get("checkpoints"):          # as many checkpoints, on logged epochs
        k, every = len(q["checkpoints"]), int(q.get("eval_every", 1))
        step = every * max(1, -(-epochs // (k * every)))
        q["checkpoints"] = [step * (i + 1) for i in range(k)]
    if "checks" in q:
        q["checks"] = [epochs]
    if isinstance(q.get("alignment"), Mapping):
        q["alignment"] = {**q["alignment"], "window": min(int(q["alignment"]["window"]), epochs)}
    for key in ("eval_every", "purity_every", "every", "rho_every", "diag_every"):
        if isinstance(q.get(key), int) and q[key] > full_length(q):
            q[key] = epochs
    # an early-stopped run's give-up epoch (numerics.li2.grok_run) must lie within the cut
    # budget: a cut run gives up at its end at the latest
    if isinstance(q.get("give_up_epoch"), int) and q["give_up_epoch"] > epochs:
        every = int(q.get("eval_every", 1))
        q["give_up_epoch"] = every * (epochs // every)
    return q


def shape(fn: Callable[..., Any], point: Mapping[str, Any]) -> str:
    """What a point's cost per epoch depends on: the function, the group's size, the batch
    axis (counts of seeds, learning rates, ...) and every size and switch, not the values."""
    out: dict[str, Any] = {"fn": getattr(fn, "__qualname__", str(fn))}
    for k, v in sorted(point.items()):
        if k in _LENGTH_KEYS:
            continue
        if k == "table":
            out["M"] = len(v)
        elif k == "projectors":
            out["projectors"] = v.get("shape") if isinstance(v, Mapping) else None
        elif k in ("seeds", "lrs", "runs", "p_values") or (k == "etas"):
            out[k] = len(v)
        elif k in _VALUE_KEYS:
            continue
        else:
            out[k] = v
    return json.dumps(out, sort_keys=True, default=str)


def _describe(fn: Callable[..., Any], point: Mapping[str, Any]) -> str:
    parts = [getattr(fn, "__name__", "?")]
    if "table" in point:
        parts.append(f"M={len(point['table'])}")
    elif "group" in point:
        parts.append(str(point["group"]))
    for k in ("K", "layers", "activation", "optimizer", "top_layer", "residual", "loss"):
        if k in point:
            parts.append(f"{k}={point[k]}")
    batch = 1
    for k in ("seeds", "lrs", "etas", "runs", "p_values"):
        if isinstance(point.get(k), (list, tuple)):
            batch *= len(point[k])
    parts.append(f"B={batch}")
    if "p" in point:
        parts.append(f"p={point['p']:g}")
    return " ".join(parts)


class Capture:
    """The sweeper handed to the claim: every point cut short, run and timed here."""

    def __init__(self, short: int, long: int, reuse: bool = True) -> None:
        self.short, self.long = short, long
        #: a point of a shape already timed is not run again: its short run's result and
        #: cost are the first one's (the claim's analysis of cut-short runs is not the point)
        self.reuse = reuse
        self.reused: dict[str, tuple[dict[str, Any], float, float, float]] = {}
        #: CPU seconds the long run must exceed the short one by (timer and load noise)
        self.target = 2.0
        self.points: list[dict[str, Any]] = []
        self.slopes: dict[str, dict[str, float]] = {}
        self.sweep_cpu = 0.0
        self.sweep_wall = 0.0

    def _timed(self, fn: Callable[..., Any], point: dict[str, Any], name: str, batch_size: int
               ) -> tuple[dict[str, Any], float, float, float]:
        from verify.points import in_process_sweep

        load = os.getloadavg()[0]
        c0, w0 = time.process_time(), time.perf_counter()
        result = in_process_sweep(fn, [point], name=name, batch_size=batch_size)[0]
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        self.sweep_cpu += cpu
        self.sweep_wall += wall
        return result, cpu, wall, load

    def _slope(self, fn: Callable[..., Any], point: Mapping[str, Any], E: int, short: int,
               name: str, batch_size: int) -> dict[str, Any]:
        """The marginal cost of one epoch of ``point``'s shape: the short run again (the
        first one warmed up the code paths), then runs ``n`` epochs longer, ``n`` growing
        until the difference is at least ``self.target`` CPU seconds (or the full length)."""
        _, cpu, wall, load = self._timed(fn, cut(point, short), name, batch_size)
        u = unit(point)
        n = max(self.long - short, 1)
        n = max(n, int(self.target / max(cpu / short, 1e-3)))
        while True:
            n = u * -(-n // u)
            long = full_length(cut(point, min(short + n, E)))
            _, cpu_l, wall_l, load_l = self._timed(fn, cut(point, long), name, batch_size)
            if cpu_l - cpu >= self.target or long >= E or n >= 1000 or long <= short:
                break
            n *= 4
        if long <= short:
            return {"cpu": cpu / short, "wall": wall / short, "epochs": [short],
                    "cpu_s": [cpu], "wall_s": [wall], "load": [load]}
        return {"cpu": max(cpu_l - cpu, 0.0) / (long - short),
                "wall": max(wall_l - wall, 0.0) / (long - short), "epochs": [short, long],
                "cpu_s": [cpu, cpu_l], "wall_s": [wall, wall_l], "load": [load, load_l]}

    def __call__(self, fn: Callable[..., Any], points: Sequence[Mapping[str, Any]], *, name: str,
                 batch_size: int = 1) -> list[dict[str, Any]]:
        results = []
        for point in points:
            E = full_length(point)
            key = shape(fn, point)
            if E is None:                                   # no length: timed as it is
                result, cpu, wall, load = self._timed(fn, dict(point), name, batch_size)
                self.points.append({"sweep": name, "what": _describe(fn, point), "epochs": None,
                                    "short_cpu": cpu, "short_wall": wall, "load": load,
                                    "model_cpu": cpu, "model_wall": wall})
                results.append(result)
                continue
            u = unit(point)
            short = full_length(cut(point, min(u * -(-self.short // u), E)))
            if key in self.reused:                  # same shape: same cost, result reused
                result, cpu, wall, load = self.reused[key]
            else:
                result, cpu, wall, load = self._timed(fn, cut(point, short), name, batch_size)
                self.slopes[key] = self._slope(fn, point, E, short, name, batch_size)
                if self.reuse:
                    self.reused[key] = (result, cpu, wall, load)
            s = self.slopes[key]
            self.points.append({
                "sweep": name, "what": _describe(fn, point), "epochs": E,
                "short_cpu": cpu, "short_wall": wall, "load": load,
                "cpu_per_epoch": s["cpu"], "wall_per_epoch": s["wall"],
                "model_cpu": cpu + (E - short) * s["cpu"],
                "model_wall": wall + (E - short) * s["wall"]})
            results.append(result)
        return results


def child(claim_id: str, short: int, long: int, threads: int, time_limit: float,
          reuse: bool = True) -> dict:
    import torch

    torch.set_num_threads(threads)
    from verify import registry
    from verify.runner import run_claim

    registry.load_builtin_claims()
    claim = registry.get(claim_id)
    capture = Capture(short, long, reuse)
    load0 = os.getloadavg()
    c0, w0 = time.process_time(), time.perf_counter()
    result = run_claim(claim, fidelity="full", device="cpu", time_limit=time_limit,
                       sweeper=capture)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    record = result.as_record()
    return {"claim": claim_id, "parameters": repr(claim.parameters["full"]),
            "verdict_on_cut_runs": record.get("verdict"),
            "error": (str(record.get("error") or record.get("reason") or "")[-600:]
                      if record.get("verdict") == "error" else None),
            "threads": threads, "short": short, "long": long,
            "load_start": load0, "load_end": os.getloadavg(),
            "claim_cpu": cpu, "claim_wall": wall,
            "sweep_cpu": capture.sweep_cpu, "sweep_wall": capture.sweep_wall,
            "points": capture.points, "slopes": capture.slopes}


# --- the parent: one child per claim, the table, the estimates ---------------------------------

def wall_factor(threads: int) -> float:
    """Wall seconds on 2 quiet cores per CPU second measured with ``threads`` threads. With 2
    threads the trainer's threads both spin, CPU = 2 x wall (benchmarks/results/trainer.json:
    44 CPU-ms, 22 wall-ms per epoch at M=71, K=2048), so 1/2. With 1 thread (what to measure
    with on a loaded machine: spinning threads that wait on each other inflate the CPU
    seconds of 2 threads many times over), 2 threads' wall over 1 thread's CPU is 0.47
    (1 and 16 seeds) to 0.92 (64 seeds) in benchmarks/results/trainer*.json: 0.75."""
    return 0.75 if threads == 1 else 1.0 / threads


def summarise(rec: dict) -> dict:
    threads = rec["threads"]
    points = rec["points"]
    other_cpu = max(rec["claim_cpu"] - rec["sweep_cpu"], 0.0)
    other_wall = max(rec["claim_wall"] - rec["sweep_wall"], 0.0)
    model_cpu = sum(p["model_cpu"] for p in points) + other_cpu
    model_wall = sum(p["model_cpu"] for p in points) * wall_factor(threads) + other_wall
    measured_wall = sum(p["model_wall"] for p in points) + other_wall
    kinds: dict[str, list[dict]] = {}
    for p in points:
        kinds.setdefault(p["what"], []).append(p)
    trains = [f"{len(v)} x [{k}, {v[0]['epochs']} ep, "
              f"{1e3 * v[0].get('cpu_per_epoch', float('nan')):.0f} CPU-ms/ep]"
              for k, v in kinds.items()]
    loads = [p["load"] for p in points] or [rec["load_start"][0]]
    return {"claim": rec["claim"], "points": len(points), "trains": trains,
            "model_cpu": model_cpu, "model_wall_2cores": model_wall,
            "model_wall_as_measured": measured_wall, "other_cpu": other_cpu,
            "other_wall": other_wall, "fits_3h": model_wall <= THREE_HOURS,
            "load_min": min(loads), "load_max": max(loads),
            "error": rec.get("error")}


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def print_table(rows: Sequence[dict]) -> None:
    print(f"\n{'claim':<22} {'model CPU':>10} {'wall/2cores':>11} {'fits 3h':>7} "
          f"{'load':>9}  what it trains (points x [shape, full epochs, CPU-ms/epoch])")
    for r in rows:
        print(f"{r['claim']:<22} {_h(r['model_cpu']):>10} {_h(r['model_wall_2cores']):>11} "
              f"{'yes' if r['fits_3h'] else 'NO':>7} {r['load_min']:4.1f}-{r['load_max']:<4.1f}  "
              + "; ".join(r["trains"]))
        if r["other_wall"] > 1:
            print(f"{'':<22} outside the sweeps: {r['other_cpu']:.0f} CPU-s, "
                  f"{r['other_wall']:.0f} wall-s (at full parameters, cut-short results)")
        if r["error"]:
            print(f"{'':<22} (the claim stopped on the cut-short runs: "
                  f"{r['error'].strip().splitlines()[-1][:150]})")


def write_estimates(rows: Sequence[dict], claims: Sequence[str]) -> None:
    data = json.loads(TIMES.read_text(encoding="utf-8"))
    table = data["full"]["cpu"]["claims"]
    for r in rows:
        if r["claim"] in claims and r["claim"] != "li2.fig5":
            table[r["claim"]] = {"seconds": round(r["model_wall_2cores"]), "model": True}
    TIMES.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def save(args: argparse.Namespace, rec: dict, row: dict) -> None:
    """Merge one claim's record into ``args.out`` (written after every claim)."""
    import torch

    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    claims = {**old.get("claims", {}), row["claim"]: {"summary": row, "record": rec}}
    args.out.write_text(json.dumps({
        "benchmark": "full_fidelity_costs", "threads": args.threads,
        "short": args.short, "long": args.long, "torch": torch.__version__,
        "cpus": os.cpu_count(), "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "claims": claims}, indent=1, default=str) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("claims", nargs="*", default=list(CLAIMS))
    ap.add_argument("--short", type=int, default=3, help="epochs of every cut-short point")
    ap.add_argument("--long", type=int, default=8,
                    help="epochs of the second timing of each shape (per-epoch cost)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=300.0,
                    help="seconds one claim's cut-short run may take")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--write-estimates", action="store_true")
    ap.add_argument("--estimate", nargs="*", default=None,
                    help="claims whose estimate to write (default: those with none shipped)")
    ap.add_argument("--load", nargs="+", type=Path, default=None,
                    help="time nothing: print the table (and --write-estimates) from these "
                         "result files")
    ap.add_argument("--no-reuse", action="store_true",
                    help="run every point, not one per shape")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.load:
        loaded: dict[str, dict] = {}
        for path in args.load:
            loaded.update(json.loads(path.read_text())["claims"])
        rows = [summarise(v["record"]) for k, v in loaded.items()
                if not args.claims or k in args.claims or args.claims == list(CLAIMS)]
        print_table(rows)
        if args.write_estimates:
            write_estimates(rows, args.estimate or [r["claim"] for r in rows])
        return 0
    if args.one:
        rec = child(args.one, args.short, args.long, args.threads, args.time_limit,
                    not args.no_reuse)
        print("RESULT " + json.dumps(rec, default=str))
        return 0
    records, rows = [], []
    for claim_id in args.claims:
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--one", claim_id, "--short", str(args.short),
             "--long", str(args.long), "--threads", str(args.threads),
             "--time-limit", str(args.time_limit)] + (["--no-reuse"] if args.no_reuse else []),
            cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(f"{claim_id}: no result (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
            continue
        rec = json.loads(line.removeprefix("RESULT "))
        records.append(rec)
        rows.append(summarise(rec))
        r = rows[-1]
        print(f"{claim_id}: {r['points']} points, model {_h(r['model_cpu'])} CPU, "
              f"{_h(r['model_wall_2cores'])} on 2 cores (timed in "
              f"{time.perf_counter() - started:.0f} s, load {r['load_min']:.1f}-"
              f"{r['load_max']:.1f})", flush=True)
        save(args, rec, r)
    print_table(rows)
    if args.write_estimates:
        if args.estimate is not None:
            chosen = args.estimate
        else:
            shipped = json.loads(TIMES.read_text())["full"]["cpu"]["claims"]
            chosen = [r["claim"] for r in rows if r["claim"] not in shipped]
        write_estimates(rows, chosen)
        print(f"\nwrote the modelled wall seconds of {', '.join(chosen) or 'no claim'} to {TIMES}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
