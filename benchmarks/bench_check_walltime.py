"""Benchmark 4 (issue 9): the wall time of ``python -m verify check`` at quick fidelity for
every registered claim, on 2 CPU cores, with the results store off (no cached verdicts).

The command runs in a child process (``--no-store`` and ``THEORY_VERIFY_STORE=off``; its
results JSON goes to a temporary file, not the repository's ``results.json``), pinned to 2
CPUs where the machine has more. Reported: the command's wall time (start-up and imports
included) against the target of 60 s, each claim's own time (``seconds`` in the results
JSON) sorted, their sum, the child's CPU time, and the start-up alone (``verify list``:
imports and registration).

``verify check`` runs one torch thread at quick fidelity, so its CPU time (user + system)
estimates the wall time of the same run on an idle machine; on a busy one the wall times
are inflated by the other processes. So, unless ``--no-cpu-per-claim``, a second child runs
the same claims the way ``verify check`` does (``run_claim`` at quick fidelity, seed 0,
float64, one thread, negative controls included) and records each claim's CPU time.

Claims are being added all the time: the record names the claims measured, the git revision
and the UTC time of the run.

The machine is shared and its pace drifts (the same tree has measured 70 s and 84 s an hour
apart): a fixed reference workload (sympy expansion and float64 GEMMs, one thread) is timed
before and after the runs and recorded, so two records can be compared at equal pace.

Run: ``python benchmarks/bench_check_walltime.py`` (one run by default; ``--repeats N`` keeps
each claim's fastest time and the fastest total).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

NAME = "check_walltime"
TARGET_S = 60.0
CORES = 2
REPO = Path(__file__).resolve().parent.parent
CHILD_FLAG = "--child-cpu-per-claim"
REFERENCE_FLAG = "--child-reference"


def pin_to_cores() -> list[int] | None:
    """The first ``CORES`` CPUs of this process's affinity mask when it has more (None when
    it already has at most ``CORES``)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return cpus[:CORES] if len(cpus) > CORES else None


def git_state() -> dict[str, object]:
    """The HEAD revision and how many files differ from it (read-only git calls)."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    status = [line for line in git("status", "--porcelain").splitlines() if line]
    return {"revision": git("rev-parse", "HEAD") or None,
            "changed_or_untracked_files": len(status)}


def run_child(command: list[str], cpus: list[int] | None) -> tuple[float, float, str]:
    """Run ``command`` in the repository with the store off: wall and CPU seconds, stdout."""
    env = {**os.environ, "THEORY_VERIFY_STORE": "off"}
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, preexec_fn=pin)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def run_check(extra: list[str], cpus: list[int] | None) -> dict[str, object]:
    """One ``verify check`` in a child process: its wall and CPU seconds and its results."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        command = [sys.executable, "-m", "verify", "check", "--fidelity", "quick",
                   "--no-store", "--json", str(out), *extra]
        wall, cpu, _ = run_child(command, cpus)
        results = json.loads(out.read_text(encoding="utf-8"))
    return {"wall": wall, "cpu": cpu, "command": command, "results": results}


def cpu_per_claim(patterns: list[str]) -> None:
    """(Child mode.) Run the selected claims as ``verify check`` does at quick fidelity and
    print ``{id: [process CPU seconds, wall seconds]}`` as JSON."""
    import torch

    from numerics.device import resolve_device
    from verify import registry
    from verify.runner import run_claim

    torch.set_num_threads(1)  # verify check's choice at quick fidelity on the CPU
    registry.load_builtin_claims()
    device = resolve_device("auto")
    times = {}
    for claim in registry.select(patterns):
        c0, w0 = time.process_time(), time.perf_counter()
        run_claim(claim, fidelity="quick", device=device, dtype="float64", seed=0)
        times[claim.id] = [time.process_time() - c0, time.perf_counter() - w0]
    print(json.dumps(times))


def reference_work() -> None:
    """(Child mode.) A fixed workload of the two kinds ``verify check`` spends its time on,
    one thread: a symbolic expansion (pure-Python sympy, like the derivations) and float64
    GEMMs (like the simulations). Prints its process CPU seconds. The machine is shared, and
    its pace drifts by tens of per cent within an hour; this figure, taken before and after
    the timed runs, says at what pace a wall time was measured."""
    import sympy as sp
    import torch

    torch.set_num_threads(1)
    x = sp.symbols("x0:6")
    a = torch.randn(128, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    start = time.process_time()
    sp.expand(sum(x) ** 9)
    for _ in range(6000):
        a @ a
    print(time.process_time() - start)


def reference_seconds(cpus: list[int] | None) -> float:
    _, _, out = run_child([sys.executable, str(Path(__file__).resolve()), REFERENCE_FLAG], cpus)
    return float(out.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD_FLAG:
        cpu_per_claim(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == REFERENCE_FLAG:
        reference_work()
        return
    parser = common.arguments(__doc__.split("\n\n")[0], repeats=1, warmup=0)
    parser.add_argument("--cpu-per-claim", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure each claim's CPU time in a second child "
                             "(default on)")
    parser.add_argument("--jobs", type=int, default=2, metavar="N",
                        help="verify check --jobs N (default 2: one claim per core)")
    parser.add_argument("patterns", nargs="*",
                        help="claim ids or globs for verify check (default: every claim)")
    args = parser.parse_args()
    cpus = pin_to_cores()
    started, machine = common.now(), common.machine()
    machine["torch_threads"] = 1  # what verify check sets at quick fidelity
    machine["cpus_used"] = cpus or sorted(os.sched_getaffinity(0))
    print(f"# {common.describe(machine)}; verify check at quick fidelity, store off")
    git = git_state()

    for _ in range(args.warmup):
        run_check([*args.patterns, "--jobs", str(args.jobs)], cpus)
    # Start-up alone: `verify list` imports the package and registers every claim.
    startup_wall, startup_cpu, _ = run_child([sys.executable, "-m", "verify", "list"], cpus)
    reference = [reference_seconds(cpus)]
    runs = []
    for r in range(args.repeats):
        run = run_check([*args.patterns, "--jobs", str(args.jobs)], cpus)
        runs.append(run)
        print(f"  run {r + 1}/{args.repeats}: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU",
              file=sys.stderr, flush=True)
    reference.append(reference_seconds(cpus))
    claim_cpu: dict[str, list[float]] = {}
    if args.cpu_per_claim:
        _, _, out = run_child([sys.executable, str(Path(__file__).resolve()), CHILD_FLAG,
                               *args.patterns], cpus)
        claim_cpu = json.loads(out.strip().splitlines()[-1])

    per_claim: dict[str, dict[str, object]] = {}
    for run in runs:
        for claim in run["results"]["claims"]:
            entry = per_claim.setdefault(claim["id"], {"seconds": [], "verdict": set()})
            entry["seconds"].append(claim["seconds"])
            entry["verdict"].add(claim["verdict"])
    claims = sorted(({"id": cid, "seconds": min(e["seconds"]), "all_seconds": e["seconds"],
                      "verdict": "/".join(sorted(e["verdict"])),
                      "cpu_seconds": claim_cpu.get(cid, [None])[0]}
                     for cid, e in per_claim.items()), key=lambda c: -c["seconds"])
    wall = min(run["wall"] for run in runs)
    cpu = min(run["cpu"] for run in runs)
    claim_sum = sum(c["seconds"] for c in claims)
    cpu_sum = sum(c["cpu_seconds"] or 0.0 for c in claims)

    rows, cumulative = [], 0.0
    for rank, c in enumerate(claims, 1):
        cumulative += c["seconds"]
        rows.append([rank, c["id"], c["verdict"], f"{c['seconds']:.2f}",
                     f"{100 * c['seconds'] / claim_sum:.1f}%", f"{cumulative:.1f}",
                     "" if c["cpu_seconds"] is None else f"{c['cpu_seconds']:.2f}"])
    print()
    print(common.table(["#", "claim", "verdict", "wall s", "share", "cumulative s", "CPU s"],
                       rows))
    print(f"\n{len(claims)} claims; sum of claim wall times {claim_sum:.1f} s; command wall "
          f"time {wall:.1f} s with --jobs {args.jobs}; command "
          f"CPU time {cpu:.1f} s; target < {TARGET_S:.0f} s: "
          f"{'met' if wall < TARGET_S else 'missed'} by wall time, "
          f"{'met' if cpu < TARGET_S else 'missed'} by CPU time "
          f"(load average {common.load_average()})")
    print(f"start-up alone (`verify list`: imports, registration): {startup_wall:.1f} s wall, "
          f"{startup_cpu:.1f} s CPU")
    print(f"machine pace: the reference workload took {reference[0]:.2f} s CPU before the "
          f"timed runs and {reference[1]:.2f} s after (lower is faster)")
    if claim_cpu:
        print(f"sum of per-claim CPU times (second child): {cpu_sum:.1f} s")
    print(f"measured {started} at revision {git['revision']} "
          f"(+{git['changed_or_untracked_files']} changed or untracked files)")
    record = {
        "benchmark": NAME, "started": started, "finished": common.now(),
        "machine": machine, "load_average_after": common.load_average(), "git": git,
        "command": runs[0]["command"], "jobs": args.jobs, "target_s": TARGET_S,
        "wall_s": wall, "cpu_s": cpu, "claims_sum_s": claim_sum,
        "claim_count": len(claims),
        "startup": {"command": "python -m verify list", "wall_s": startup_wall,
                    "cpu_s": startup_cpu},
        "claims_cpu_sum_s": cpu_sum if claim_cpu else None,
        "reference_workload_cpu_s": {"before": reference[0], "after": reference[1]},
        "runs": [{"wall_s": r["wall"], "cpu_s": r["cpu"], "summary": r["results"]["summary"]}
                 for r in runs],
        "claims": claims,
    }
    print(f"wrote {common.write(NAME, record, args.out)}")


if __name__ == "__main__":
    main()
