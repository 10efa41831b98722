"""The ``reference`` sub-command: make a claim's paper-size reference result
(:mod:`verify.references`) and commit-ready provenance.

``theory-verify reference li2.eq6`` runs ``check li2.eq6 --fidelity full`` in this process
(the results store keeps every finished training point, so a killed run resumes where it
stopped), measures the CPU seconds and the load, and writes ``verify/references/li2.eq6.json``.
``--from RESULTS.json --cpu-seconds S --wall-seconds W`` turns a full run made elsewhere (a
background job timed by ``/usr/bin/time``, a GPU session) into a reference instead.
"""
from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from pathlib import Path

from verify import references, registry
from verify.cli.arguments import UsageError
from verify.sweep import sweep_tally


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number of seconds >= 0")
    return value


def add_reference_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("reference", help="make claims' paper-size reference results "
                                         "(verify/references/ID.json)")
    p.add_argument("ids", nargs="*", metavar="ID", help="claim ids (no globs: each run is long)")
    p.add_argument("--list", action="store_true",
                   help="list the references there are (verdict, date, revision, stale or "
                        "not, CPU and wall seconds) and run nothing")
    p.add_argument("--from", dest="from_path", default=None, metavar="RESULTS.json",
                   help="take the full-fidelity records from this results file instead of "
                        "running them")
    p.add_argument("--cpu-seconds", type=_seconds, default=None, metavar="S",
                   help="with --from: the CPU seconds the run took (e.g. /usr/bin/time's user "
                        "+ system)")
    p.add_argument("--wall-seconds", type=_seconds, default=None, metavar="W",
                   help="with --from: its wall seconds (default: the record's own)")
    p.add_argument("--load", type=_seconds, default=None, metavar="L",
                   help="with --from: the 1-minute load average while it ran")
    p.add_argument("--out", default=str(references.FOLDER), metavar="DIR",
                   help="where to write (default: the package's verify/references)")
    return p


def _claim_ids(ids: list[str]) -> list[str]:
    out = []
    for name in ids:
        try:
            out.append(registry.get(name).id)
        except registry.UnknownClaim as exc:
            raise UsageError(f"ID: {exc}") from None
    return out


def _from_file(args: argparse.Namespace, ids: list[str], folder: Path) -> int:
    if args.cpu_seconds is None:
        raise UsageError("--cpu-seconds: needed with --from (a reference states its CPU time)")
    try:
        data = json.loads(Path(args.from_path).read_text(encoding="utf-8"))
        run, claims = data["run"], {c["id"]: c for c in data["claims"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--from: {args.from_path} is not a results file ({exc})") from None
    made = (run.get("finished") or datetime.now(timezone.utc).isoformat())[:10]
    for claim_id in ids:
        record = claims.get(claim_id)
        if record is None:
            raise UsageError(f"--from: {args.from_path} holds no record of {claim_id}")
        if record.get("fidelity") != references.FIDELITY:
            raise UsageError(f"--from: {claim_id} ran at {record.get('fidelity')!r} there; a "
                             f"reference is made at {references.FIDELITY!r}")
        load = {"1min": args.load} if args.load is not None else {"1min": None}
        path = references.save(record, module=registry.get(claim_id).check.__module__,
                               run=run, cpu_seconds=args.cpu_seconds,
                               wall_seconds=args.wall_seconds or float(record["seconds"]),
                               load=load, made=made, folder=folder)
        print(f"{claim_id}: {record['verdict']} at full; wrote {path}")
    return 0


def _stored_text(points: Mapping[str, float] | None) -> str:
    """`` (+ 12 of 40 training points from the store, 3105 s when computed)`` where a run
    resumed from stored points, else nothing."""
    if not points or not points.get("reused"):
        return ""
    total = int(points["reused"] + points.get("computed", 0))
    return (f" (+ {int(points['reused'])} of {total} training points from the store, "
            f"{points.get('reused_seconds', 0):.0f} s when computed)")


def _list(folder: Path) -> int:
    """One line per reference in ``folder``, in claim-id order."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        try:
            ref = references.load(path.stem, folder)
        except references.ReferenceError as exc:
            rows.append(f"{path.stem}  unreadable: {exc}")
            continue
        p = ref.provenance
        cpu = "-" if p.get("cpu_seconds") is None else f"{p['cpu_seconds']:.0f}"
        rows.append(f"{ref.claim:<22} {ref.verdict:<12} {ref.made}  rev "
                    f"{(ref.revision or '-')[:7]}  {'STALE' if ref.stale else 'fresh'}  "
                    f"{cpu:>6} CPU-s  {p.get('wall_seconds', 0):>7.0f} s wall  "
                    f"{p.get('sizes_text', '')}{_stored_text(p.get('sweep_points'))}")
    print("\n".join(rows) if rows else f"no references in {folder}")
    return 0


def cmd_reference(args: argparse.Namespace, cli_main: Callable[[list[str]], int]) -> int:
    """Make the references ``args`` ask for; ``cli_main`` is the command line's own entry
    point, which runs the ``check`` each reference is made of."""
    folder = Path(args.out)
    if args.list:
        return _list(folder)
    if not args.ids:
        raise UsageError("ID: name at least one claim (or --list)")
    ids = _claim_ids(args.ids)
    if args.from_path is not None:
        return _from_file(args, ids, folder)
    if args.cpu_seconds is not None or args.wall_seconds is not None or args.load is not None:
        raise UsageError("--cpu-seconds, --wall-seconds, --load: only with --from (a run "
                         "made here is timed here)")
    for claim_id in ids:
        results = folder / f".{claim_id}.results.json"
        before = references.load_average()
        cpu, wall = references.cpu_seconds_used(), time.monotonic()
        tally = sweep_tally()
        modules = [x for m in args.modules for x in ("--module", m)]
        code = cli_main(["check", claim_id, "--fidelity", references.FIDELITY, "--jobs", "1",
                         "--time-limit", "none", "--yes", "--json", str(results), *modules])
        cpu, wall = references.cpu_seconds_used() - cpu, time.monotonic() - wall
        points = {k: v - tally[k] for k, v in sweep_tally().items()}
        if code != 0:
            return code
        data = json.loads(results.read_text(encoding="utf-8"))
        results.unlink()
        (record,) = [c for c in data["claims"] if c["id"] == claim_id]
        # a result the store already held took no CPU here: say so rather than report ~0
        reused = wall < 0.5 * float(record.get("seconds") or 0.0)
        path = references.save(record, module=registry.get(claim_id).check.__module__,
                               run=data["run"], cpu_seconds=None if reused else cpu,
                               wall_seconds=float(record["seconds"]) if reused else wall,
                               load={"before": before, "after": references.load_average(),
                                     **({"reused_from_store": True} if reused else {})},
                               made=data["run"]["finished"][:10], folder=folder,
                               sweep_points=points)
        print(f"{claim_id}: {record['verdict']} at full in {wall:.0f} s wall, {cpu:.0f} CPU-s"
              f"{_stored_text(points)}; wrote {path}")
    return 0
