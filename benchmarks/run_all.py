"""Run every ``benchmarks/bench_*.py`` in turn (one at a time: they would slow each other
down), each with its default settings; each prints its table and writes its JSON to
``benchmarks/results/``. Exits non-zero if any benchmark failed.

Run: ``python benchmarks/run_all.py [NAME ...]`` (names such as ``steepest_flows``; default:
all of them).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    wanted = set(sys.argv[1:])
    known = {s.stem.removeprefix("bench_") for s in scripts}
    if wanted - known:
        print(f"unknown benchmark(s): {', '.join(sorted(wanted - known))}; "
              f"known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    failed = []
    for script in scripts:
        if wanted and script.stem.removeprefix("bench_") not in wanted:
            continue
        print(f"\n=== {script.name}", flush=True)
        done = subprocess.run([sys.executable, str(script)], check=False)
        if done.returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
