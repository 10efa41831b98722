"""Command line: ``python -m verify {list,show,check,stress,history,report,sweep}``.

Also installed as ``theory-verify``.

Exit codes: 0 the run completed (whatever the verdicts); 1 with ``--strict`` when any claim is
not ``pass``; 2 usage error (one line naming the parameter and what is allowed); 3 internal error.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import inspect
import json
import math
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NoReturn

from verify import registry
from verify.claim import FIDELITIES
from verify.cli.arguments import (UsageError, integer_power, positive_int, thread_count,
                                  time_limit)
from verify.cli.plain_math import readable, wrapped
from verify.metadata import git_revision, package_versions, run_metadata
from verify.diagnosis import diagnose, diagnosed
from verify.results import key_figure_text, merge_runs, run_record, write_json
from verify.runner import (DTYPES, TIME_LIMITS, ParameterError, interrupted, merge_overrides,
                           run_claim, validate_overrides)
from verify.references import ReferenceError, attach, summary_text
from verify.store import StoreError, StoreWriteError, result_key
from verify.sweep import stored_sweep
from verify.cli.reference import add_reference_parser, cmd_reference
from verify.cli.sweep import add_sweep_parser, cmd_sweep

if TYPE_CHECKING:
    import torch

EXIT_OK, EXIT_STRICT, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
PROG = "theory-verify"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump, no traceback
        raise UsageError(message)


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer in [0, 2**63)") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{value} is outside [0, 2**63)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Check the claims of learning-dynamics papers.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p_list = sub.add_parser("list", help="list the registered claims")
    p_list.add_argument("--json", action="store_true", help="print the claims as JSON")

    p_show = sub.add_parser("show", help="show one claim: statement, reading, assumptions")
    p_show.add_argument("id", help="claim id or alias, e.g. li2.thm6")

    p_check = sub.add_parser("check", help="run claims and write their verdicts as JSON")
    p_check.add_argument("patterns", nargs="*", metavar="ID",
                         help="claim ids or globs ('li2.*'); default: every claim")
    p_check.add_argument("--fidelity", choices=FIDELITIES, default="quick",
                         help="quick: CPU-sized (default); medium: the training claims at "
                              "a size where the paper-size verdict already shows (others "
                              "run quick); full: the paper's sizes")
    p_check.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p_check.add_argument("--dtype", choices=tuple(DTYPES), default="float64")
    p_check.add_argument("--seed", type=_seed, default=0, help="base seed (default 0)")
    p_check.add_argument("--threads", type=thread_count, default=None, metavar="N",
                         help="torch intra-op CPU threads, at most 4 x the CPUs (default: 1 "
                              "at quick fidelity on the CPU, whose small tensors only wait on "
                              "each other's threads; otherwise the usable cores shared among "
                              "the --jobs workers, or torch's own choice in one process)")
    p_check.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                         help="run claims in N worker processes (default: the usable cores "
                              "on the CPU, 1 on CUDA; 1 runs them in this process); each "
                              "worker gets --threads torch threads (forked on Linux CPU runs, "
                              "spawned otherwise)")
    p_check.add_argument("--json", dest="json_path", default="results.json", metavar="PATH",
                         help="where to write the results (default results.json)")
    p_check.add_argument("--strict", action="store_true",
                         help="exit 1 when any claim is not pass")
    p_check.add_argument("--time-limit", type=time_limit, default=None, metavar="SECONDS",
                         help="stop a claim once it has used SECONDS of CPU time (check and "
                              "control together, all its threads; or waited 6 x SECONDS on "
                              "the clock): its verdict is error, naming the limit, and the "
                              "run goes on (default: " + ", ".join(
                                  f"{s:g} at {f}" for f, s in TIME_LIMITS.items())
                              + "; 'none' for no limit). With --jobs 1 a single native call "
                                "that never returns is not cut; worker processes are killed")
    p_check.add_argument("--set", dest="assignments", type=_assignment, action="append",
                         default=[], metavar="NAME=VALUE",
                         help="override one of the claim's parameters (repeatable), e.g. "
                              "--set n=3 --set group=Z4")

    for p in (p_check,):
        p.add_argument("--store", default=None, metavar="PATH",
                       help="results database (default: $THEORY_VERIFY_STORE or "
                            "./theory-verify.sqlite; 'off' disables it)")
        p.add_argument("--no-store", action="store_true", help="neither read nor write the store")
        p.add_argument("--force", action="store_true",
                       help="rerun claims whose result is stored for the same key, and "
                            "recompute the stored sweep points inside them")
    p_check.add_argument("--backend", choices=("local", "dask"), default=None,
                         help="where the training grids inside claims run (verify.sweep): "
                              "local (default), or dask (the extra theory-verify[dask]; a "
                              "LocalCluster unless --scheduler names one)")
    p_check.add_argument("--scheduler", default=None, metavar="ADDRESS",
                         help="with --backend dask: the Dask scheduler, e.g. tcp://host:8786")
    p_check.add_argument("--dry-run", action="store_true",
                         help="print the plan (each claim's estimated time and where the "
                              "estimate comes from) and run nothing")
    p_check.add_argument("--yes", action="store_true",
                         help="run even when the estimate exceeds ten minutes")
    p_check.add_argument("--report", default=None, metavar="DIR",
                         help="also write the report (index.html, report.md, findings.html, "
                              "findings.md) into DIR")
    p_report = sub.add_parser("report", help="render a report (HTML with MathML and SVG, "
                                             "Markdown) from stored results")
    source = p_report.add_mutually_exclusive_group()
    source.add_argument("--from", dest="from_path", default="results.json", metavar="PATH",
                        help="a results JSON written by check (default results.json)")
    source.add_argument("--from-store", action="store_true",
                        help="the newest stored result of every claim")
    p_report.add_argument("--store", default=None, metavar="PATH")
    p_report.add_argument("--claims", action="append", default=[], metavar="GLOB",
                          help="only these claims (repeatable)")
    p_report.add_argument("--out", required=True, metavar="DIR")
    p_report.add_argument("--findings", action="store_true",
                          help="write only the findings page (findings.html, findings.md: the "
                               "failing and inconclusive claims per paper) and print its path; "
                               "the full report includes it")
    p_report.set_defaults(no_store=False)
    p_history = sub.add_parser("history", help="past verdicts of a claim from the store")
    p_history.add_argument("id", help="claim id or alias")
    p_history.add_argument("--store", default=None, metavar="PATH")
    p_history.set_defaults(no_store=False)

    p_mutate = sub.add_parser("mutate", help="plant wrong variants of claims' stated forms "
                                             "and report which the checks notice")
    p_mutate.add_argument("patterns", nargs="+", metavar="ID",
                          help="claim ids or globs ('li2.*')")
    p_mutate.add_argument("--operators", default="scale,nudge,sign,power",
                          help="comma-separated: scale (x1.05), nudge (x1.001), sign, power "
                               "(|v|^1.1); default all")
    p_mutate.add_argument("--budget", type=positive_int, default=None, metavar="N",
                          help="at most N mutants per claim, chosen by a hash of the claim id "
                               "and --seed (default: every form x operator)")
    p_mutate.add_argument("--fidelity", choices=FIDELITIES, default="quick")
    p_mutate.add_argument("--seed", type=_seed, default=0)
    p_mutate.add_argument("--json", dest="json_path", default=None, metavar="PATH",
                          help="also write the outcomes as JSON")
    p_mutate.add_argument("--strict", action="store_true",
                          help="exit 1 when a mutant survives that its claim does not "
                               "declare equivalent")
    p_mutate.add_argument("--table", default=None, metavar="PATH",
                          help="update the per-claim table of outcomes in PATH (e.g. "
                               "docs/mutants.md) after each claim; every mutant at quick "
                               "fidelity, seed 0")

    p_stress = sub.add_parser("stress", help="search a claim's parameter space for the "
                                             "smallest configuration that breaks it")
    p_stress.add_argument("id", help="claim id or alias")
    p_stress.add_argument("--budget", type=positive_int, default=20, metavar="N",
                          help="configurations to try before shrinking (default 20)")
    mode = p_stress.add_mutually_exclusive_group()
    for name, text in (("inside", "only where the claim's assumptions hold"),
                       ("outside", "only where an assumption fails"),
                       ("both", "everywhere (default)")):
        mode.add_argument(f"--{name}", dest="mode", action="store_const", const=name,
                          help=text)
    p_stress.set_defaults(mode="both")
    p_stress.add_argument("--fidelity", choices=FIDELITIES, default="quick")
    p_stress.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p_stress.add_argument("--dtype", choices=tuple(DTYPES), default="float64")
    p_stress.add_argument("--seed", type=_seed, default=0,
                          help="seed of the search (and of runs when seeds are not drawn)")
    p_stress.add_argument("--threads", type=thread_count, default=None, metavar="N",
                          help="torch intra-op CPU threads, at most 4 x the CPUs")
    p_stress.add_argument("--json", dest="json_path", default="stress.json", metavar="PATH",
                          help="where to write the report (default stress.json), rewritten "
                               "after every run")
    p_stress.add_argument("--time-limit", type=time_limit, default=math.inf, metavar="SECONDS",
                          help="start no new run after SECONDS of wall time, and report what "
                               "was found by then (default none)")
    p_sweep = add_sweep_parser(sub)
    p_reference = add_reference_parser(sub)
    for p in (p_list, p_show, p_check, p_history, p_stress, p_mutate, p_report, p_sweep,
              p_reference):
        p.add_argument("--module", dest="modules", action="append", default=[],
                       metavar="MODULE", help="import MODULE first: it registers a project's "
                                              "own claims (repeatable); a module name (found "
                                              "from the current directory, as python -m "
                                              "does), a .py file or a package folder")
    return parser


#: Bare words read as the floats they name (so --set x=nan is refused as not finite).
_FLOAT_WORDS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"),
                "+inf": float("inf")}


def _assignment(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not all(part.isidentifier() for part in name.split(".")):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    if value.strip().lower() in _FLOAT_WORDS:
        return name, _FLOAT_WORDS[value.strip().lower()]
    power = integer_power(value)
    if power is not None:
        return name, power
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return name, value  # a bare word such as Z4


def _overrides(claim, assignments: list[tuple[str, object]], fidelity: str,
               time_limit: float) -> dict[str, object]:
    """The --set assignments for ``claim``, checked by :func:`validate_overrides` (the check
    ``run_claim`` makes: types, bounds, and memory and work at ``fidelity`` within this
    machine and ``time_limit``), so a bad value is refused before any claim runs."""
    seen: dict[str, object] = {}
    for name, value in assignments:
        if name in seen:
            raise UsageError(f"--set: {name} is given twice ({seen[name]!r} and {value!r}); "
                             f"give each parameter once")
        seen[name] = value
    try:
        return validate_overrides(claim, seen, fidelity=fidelity, time_limit=time_limit)
    except ParameterError as exc:
        raise UsageError(f"--set: {exc} ({claim.id})") from None


def check_output_path(option: str, path: str | os.PathLike, *, directory: bool = False) -> None:
    """Refuse, before any work, an output that could not be written at the end, by writing
    there: ``path`` is a directory (for a file) or a file (for a directory), its parent folder
    does not exist (named: nothing is created silently), or a file cannot be created in the
    folder (a test file, removed at once; ``os.access`` alone says yes to root, even under
    /proc). A report directory is created here, so the run ends where it was checked."""
    target = os.path.abspath(os.fspath(path))
    if directory:
        if os.path.exists(target) and not os.path.isdir(target):
            raise UsageError(f"{option}: {path} exists and is not a directory")
        parent = os.path.dirname(target)
        if not os.path.isdir(target) and not os.path.isdir(parent):
            raise UsageError(f"{option}: cannot write {path}: the folder {parent} does not "
                             f"exist")
        try:
            os.makedirs(target, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{option}: cannot create {path}: {exc.strerror}") from None
        folder = target
    else:
        if os.path.isdir(target):
            raise UsageError(f"{option}: {path} is a directory, not a file")
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise UsageError(f"{option}: cannot write {path}: the folder {folder} does not "
                             f"exist")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
        if not directory and os.path.exists(target):
            with open(target, "a"):
                pass
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path}: {exc.strerror}") from None


def torch_threads(threads: int | None, fidelity: str, device) -> int | None:
    """--threads, or 1 at quick fidelity on the CPU (small tensors only wait on each other's
    threads); None leaves torch's own choice."""
    if threads is None and fidelity == "quick" and device.type == "cpu":
        return 1
    return threads


def claim_threads(args: argparse.Namespace, device, claims: int) -> int:
    """The torch threads each of ``--jobs`` worker processes runs its claims with: --threads,
    else 1 at quick fidelity on the CPU, else the usable cores shared among the workers (no
    workers x cores oversubscription); on CUDA torch's own count."""
    threads = torch_threads(args.threads, args.fidelity, device)
    if threads is None and device.type == "cpu":
        threads = max(1, usable_cores() // min(args.jobs, claims))
    import torch
    return threads if threads is not None else torch.get_num_threads()


def _set_threads(threads: int | None, fidelity: str, device) -> None:
    threads = torch_threads(threads, fidelity, device)
    if threads is not None:
        import torch
        torch.set_num_threads(threads)


#: Line width when stdout is not a terminal (a pipe, a file, a CI log).
PIPE_COLUMNS = 100
#: ANSI colours of the verdict words on a terminal (NO_COLOR turns them off).
VERDICT_COLOURS = {"pass": "32", "fail": "31", "inconclusive": "33", "error": "33"}


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def terminal_columns() -> int:
    """The terminal's width, or :data:`PIPE_COLUMNS` when stdout is not a terminal."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size((PIPE_COLUMNS, 24)).columns
    return PIPE_COLUMNS


def use_colour() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def claim_line(record: dict, id_width: int, note: str = "", *, columns: int = PIPE_COLUMNS,
               colour: bool = False) -> str:
    """``id  verdict  diagnosis  time``, cut to ``columns``: the diagnosis (the middle) is cut
    with "...", the id, the verdict, the time and the flags are kept whole."""
    flag = "" if record.get("inside_assumptions", True) else "  [outside assumptions]"
    middle = record.get("diagnosis") or diagnose(record)
    verdict = record["verdict"]
    head = f"{record['id']:<{id_width}}  {verdict:<12}  "
    tail = f"  {float(record.get('seconds') or 0):.2f}s{flag}{note}"
    room = columns - len(head) - len(tail)
    if len(middle) > room:
        middle = middle[:max(room - 3, 0)].rstrip() + "..."
    if colour and verdict in VERDICT_COLOURS:
        head = head.replace(verdict, f"\033[{VERDICT_COLOURS[verdict]}m{verdict}\033[0m", 1)
    return head + middle + tail


def summary_line(records: list[dict], seconds: float, jobs: int, written: str,
                 report: str | None = None) -> str:
    """``58 claims: 39 pass, 18 fail, 1 inconclusive in 79.1 s (--jobs 2); <where>``."""
    from collections import Counter

    counts = Counter(r["verdict"] for r in records)
    order = ("pass", "fail", "inconclusive", "error", "skipped")
    parts = ", ".join(f"{counts[v]} {v}" for v in order if counts.get(v))
    text = (f"{len(records)} claim{'s' if len(records) != 1 else ''}: {parts or 'none'} "
            f"in {seconds:.1f} s (--jobs {jobs}); {written}")
    return text + (f"; report in {report}" if report else "")


def _print_line(record: dict, width: int, note: str) -> None:
    print(claim_line(record, width, note, columns=terminal_columns(), colour=use_colour()),
          flush=True)
    if record.get("reference"):
        print(f"{'':<{width}}    {summary_text(record['reference'])}", flush=True)


def _with_reference(record: dict) -> dict:
    """``record`` beside its claim's paper-size reference, the diagnosis saying where the two
    disagree (:mod:`verify.references`); a reference file that cannot be read is reported, and
    the record kept as it is."""
    try:
        attached = attach(record)
    except ReferenceError as exc:
        print(f"{PROG}: warning: {exc}", file=sys.stderr)
        return record
    return attached if attached is record else diagnosed(attached)


def _last_durations(store) -> dict[str, float]:
    """Each claim's last recorded run time (for handing out long claims first)."""
    if store is None:
        return {}
    return {r.id: float(r.record.get("seconds") or 0.0) for r in store.latest_per_claim()}


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def _check_backend(args: argparse.Namespace) -> None:
    """``--backend dask`` needs dask installed; ``--scheduler`` needs ``--backend dask``."""
    if args.scheduler is not None and args.backend != "dask":
        raise UsageError("--scheduler: needs --backend dask")
    if args.backend == "dask":
        import importlib.util
        if importlib.util.find_spec("distributed") is None:
            raise UsageError("--backend dask: dask.distributed is not installed "
                             "(pip install 'theory-verify[dask]')")
        if args.scheduler is not None:
            from verify.sweep import describe_scheduler
            try:
                print(f"{PROG}: {describe_scheduler(args.scheduler)}", file=sys.stderr)
            except ConnectionError as exc:
                raise UsageError(f"--scheduler: {exc}") from None
        else:
            print(f"{PROG}: Dask: a LocalCluster of single-threaded worker processes is made "
                  f"for each training grid", file=sys.stderr)


def _confirm_plan(args: argparse.Namespace, ids: list[str], device_type: str, store,
                  runnable: int) -> bool:
    """``--dry-run``: print the plan and say no. Otherwise print the estimate (stderr) when
    it is over a minute, and refuse a run over :data:`~verify.estimates.CONFIRM_SECONDS`
    without ``--yes`` (exit 2, before any work). On the CPU the estimates are scaled to this
    machine's load with the run's ``runnable`` threads added (:func:`~verify.estimates.
    for_load`)."""
    from verify.estimates import (CONFIRM_SECONDS, Load, describe_seconds, estimate, for_load,
                                  plan_lines, total)

    load = Load.now() if device_type == "cpu" else None
    estimates = [estimate(i, args.fidelity, device_type, store) for i in ids]
    if load is not None:
        estimates = [for_load(e, load, runnable) for e in estimates]
    if args.dry_run:
        for line in plan_lines(estimates, fidelity=args.fidelity, device_type=device_type,
                               jobs=args.jobs, load=load):
            print(line)
        return False
    seconds, unknown = total(estimates, args.jobs)
    if seconds > CONFIRM_SECONDS and not args.yes:
        longest = max((e for e in estimates if e.seconds is not None), key=lambda e: e.seconds)
        raise UsageError(f"this run is estimated at {describe_seconds(seconds)} (longest "
                         f"{longest.claim_id}, {longest.text()}: {longest.basis()}); "
                         f"--dry-run shows the plan, --yes runs it")
    if seconds > 60:
        print(f"{PROG}: estimated {describe_seconds(seconds)} for {len(ids)} claim(s)"
              + (f" ({unknown} without an estimate)" if unknown else "")
              + (f", at the {load.text()}" if load is not None else "")
              + "; --dry-run shows the plan", file=sys.stderr, flush=True)
    return True


def _progress_bar(count: int, fidelity: str):
    """A tqdm bar over the claims on stderr (elapsed and remaining time) when stderr is a
    terminal and there is more than one claim; None otherwise (logs stay clean)."""
    if count < 2 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm
    return tqdm(total=count, unit="claim", desc=f"check ({fidelity})", file=sys.stderr,
                dynamic_ncols=True, leave=False)


def _cmd_list(args: argparse.Namespace) -> int:
    claims = registry.all_claims()
    if args.json:
        print(json.dumps([c.describe() for c in claims], indent=2))
        return EXIT_OK
    width = max((len(c.id) for c in claims), default=0)
    for c in claims:
        print(f"{c.id:<{width}}  {c.kind:<12} {c.title}")
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    try:
        claim = registry.get(args.id)
    except registry.UnknownClaim as exc:
        raise UsageError(exc.args[0]) from None
    d = claim.describe()
    print(f"{d['id']}  ({d['paper']}, {d['source']})  {d['title']}")
    if d["aliases"]:
        print(f"aliases: {', '.join(d['aliases'])}")
    width = terminal_columns()
    print(f"\nstatement (as the paper states it):\n{wrapped(d['statement'], width=width)}")
    print(f"\nreading (the toolkit's precise version):\n"
          f"{wrapped(d['reading'], width=width)}")
    if d["assumptions"]:
        print("\nassumptions:")
        for a in d["assumptions"]:
            print(f"  - {a['name']}: {readable(a['description'])}")
    print(f"\nnegative control: {d['negative_control']}")
    for fidelity, params in d["parameters"].items():
        print(f"\nparameters ({fidelity}): {json.dumps(params)}")
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    wall_start = time.monotonic()
    try:
        claims = registry.select(args.patterns)
    except registry.UnknownClaim as exc:
        raise UsageError(exc.args[0]) from None
    limit = TIME_LIMITS[args.fidelity] if args.time_limit is None else args.time_limit
    all_overrides = [_overrides(claim, args.assignments, args.fidelity, limit)
                     for claim in claims]
    _check_backend(args)
    check_output_path("--json", args.json_path)
    if args.report:
        check_output_path("--report", args.report, directory=True)
    from numerics.device import resolve_device
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _set_threads(args.threads, args.fidelity, device)
    if args.jobs is None:  # CUDA: one process keeps one context on the GPU
        args.jobs = usable_cores() if device.type == "cpu" else 1

    store = _open_store(args)
    with _sweep_store_env(args):
        versions = package_versions()
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        width = max(len(c.id) for c in claims)
        import torch

        pooled = args.jobs > 1 and len(claims) > 1
        threads = claim_threads(args, device, len(claims)) if pooled else torch.get_num_threads()
        records: list[dict | None] = [None] * len(claims)
        keys, pending = [], []
        for i, claim in enumerate(claims):
            overrides = all_overrides[i]
            key = result_key(claim, parameters=merge_overrides(claim.parameters[args.fidelity],
                                                               overrides),
                             fidelity=args.fidelity, seed=args.seed, dtype=args.dtype,
                             device=device.type, versions=versions, threads=threads)
            keys.append(key)
            stored = store.latest(key) if store is not None and not args.force else None
            if stored is not None:
                records[i] = stored.record
                if "diagnosis" not in records[i]:  # stored before diagnoses were recorded
                    records[i] = {**records[i], "diagnosis": diagnose(records[i])}
                records[i] = _with_reference(records[i])
                _print_line(records[i], width, "  (stored; --force reruns)")
            else:
                pending.append((i, overrides))

        # threads this run keeps runnable: the workers' (one process: torch's own)
        runnable = min(usable_cores(), (args.jobs if pooled else 1) * threads)
        if not _confirm_plan(args, [claims[i].id for i, _ in pending], device.type, store,
                             runnable):
            return EXIT_OK
        bar = _progress_bar(len(pending), args.fidelity)

        # the file as the run found it: what a selection merges into, and what a run that
        # dies midway leaves beside its finished claims
        earlier, existed = _read_results(args.json_path), os.path.exists(args.json_path)

        def results_record(progress: str | None = None) -> tuple[dict, str]:
            """The results file's record of the claims finished so far, merged into an
            earlier file for a selection (or, while the run goes on, always: the claims not
            yet rerun keep their earlier records), and the summary's words for it."""
            done = [r for r in records if r is not None]
            finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
            metadata = run_metadata(device=device, dtype=DTYPES[args.dtype], seed=args.seed,
                                    fidelity=args.fidelity, threads=threads)
            if progress:
                metadata["in_progress"] = progress
            record = run_record(metadata, done, started=started, finished=finished)
            written = f"wrote {args.json_path}"
            if args.patterns or progress:
                merged = merge_runs(earlier, record)
                if merged is not None:
                    record, kept = merged
                    written = (f"merged into {args.json_path} ({len(done)} replaced or added, "
                               f"{kept} kept)")
                elif existed:
                    written += " (new: the earlier file is not a results file of the same " \
                               "fidelity, seed, dtype and device)"
            return record, written

        def finished_claim(i: int, record: dict) -> None:
            if args.modules and not claims[i].check.__module__.startswith("verify.claims."):
                record["modules"] = list(args.modules)  # the report's reproduce line needs them
            if store is not None and not interrupted(record):  # the run's error, not the claim's
                store.put(keys[i], record, revision=claim_revision(claims[i]))
            # the store keeps the run alone: a reference can change without the claim's code
            record = records[i] = _with_reference(record)
            if bar is not None:
                bar.clear()
            _print_line(record, width, "")
            if bar is not None:
                bar.update(1)
            if store is None:   # nothing else keeps it: the results file grows claim by claim
                done = sum(r is not None for r in records)
                write_json(results_record(f"{done} of {len(claims)} claims finished")[0],
                           args.json_path)

        limit = None if math.isinf(limit) else limit
        if pooled and pending:
            from verify.check_pool import ClaimTask, run_claims_in_pool
            durations = _last_durations(store)
            tasks = [ClaimTask(claims[i].id, overrides, durations.get(claims[i].id, 0.0))
                     for i, overrides in pending]
            _progress(f"running {len(tasks)} claims in {args.jobs} processes ...")
            for j, record in run_claims_in_pool(
                    tasks, jobs=args.jobs, fidelity=args.fidelity, device=device,
                    dtype=DTYPES[args.dtype], seed=args.seed, modules=args.module_names,
                    threads=threads, start_method=_pool_start_method(device), time_limit=limit,
                    notify=lambda text: print(f"{PROG}: {text}", file=sys.stderr, flush=True)):
                finished_claim(pending[j][0], record)
        else:
            for done, (i, overrides) in enumerate(pending, 1):
                if bar is not None:
                    bar.set_postfix_str(claims[i].id)
                else:
                    _progress(f"[{done}/{len(pending)}] {claims[i].id} ...")
                result = run_claim(claims[i], fidelity=args.fidelity, device=device,
                                   dtype=DTYPES[args.dtype], seed=args.seed, overrides=overrides,
                                   time_limit=limit, sweeper=stored_sweep)
                finished_claim(i, diagnosed(result.as_record()))
        if bar is not None:
            bar.close()
        record, written = results_record()
        write_json(record, args.json_path)
        report = None
        if args.report:  # the claims this run selected, of all the merged file holds
            from verify.report.files import shown_only
            ran = {c.id for c in claims}
            report = str(_write_report(
                shown_only(record, lambda c: c["id"] in ran, source=args.json_path,
                           command=_render_all(f"--from {shlex.quote(args.json_path)}")),
                args.report))
        print(summary_line(records, time.monotonic() - wall_start, args.jobs, written, report),
              flush=True)
        if args.strict and any(r["verdict"] != "pass" for r in records):
            return EXIT_STRICT
        return EXIT_OK


def _read_results(path: str):
    """The JSON at ``path``, or None when there is none or it does not parse."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


#: The revision shown for a claim whose module is not in a git checkout.
NOT_UNDER_GIT = "not under git"


def claim_revision(claim) -> str | None:
    """The code revision a stored result of ``claim`` records: the toolkit's git revision for a
    built-in claim; for a project's own claim, the revision of the git checkout its module
    lies in, or :data:`NOT_UNDER_GIT`."""
    module = getattr(claim.check, "__module__", "") or ""
    if module.startswith("verify.claims."):
        git = git_revision()
        return git and git["revision"]
    try:
        source = inspect.getsourcefile(claim.check)
    except TypeError:
        source = None
    if not source:
        return NOT_UNDER_GIT
    return _folder_revision(os.path.dirname(os.path.abspath(source))) or NOT_UNDER_GIT


@functools.lru_cache(maxsize=64)
def _folder_revision(folder: str) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding ``folder`` (None outside git)."""
    try:
        return subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _pool_start_method(device: torch.device) -> str:
    """``fork`` on Linux for CPU runs: this process has only imported the claims and set its
    thread count (no parallel region, no GPU context), so a forked worker starts with the
    imports done instead of repeating them; ``spawn`` elsewhere (CUDA contexts do not survive
    a fork, and other platforms' system libraries are not fork-safe)."""
    return "fork" if sys.platform == "linux" and device.type == "cpu" else "spawn"


def _open_store(args: argparse.Namespace):
    """The results store named by --store (or $THEORY_VERIFY_STORE); None when off."""
    from verify.store import DEFAULT_PATH, ENV, ResultStore

    path = args.store or os.environ.get(ENV) or DEFAULT_PATH
    if args.no_store or path == "off":
        return None
    try:
        return ResultStore(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"store: cannot open {path} ({exc})") from None


@contextlib.contextmanager
def _sweep_store_env(args: argparse.Namespace) -> Iterator[None]:
    """Sweeps inside claims (li2.fig5) store their points where --store / --no-store say, and
    --force recomputes their stored points too, in this process and in --jobs workers (they
    inherit the environment); the variables are restored afterwards, so a caller of
    :func:`main` keeps its own settings."""
    from verify.store import ENV
    from verify.sweep import ENV_BACKEND, ENV_FORCE, ENV_SCHEDULER

    values = {ENV: "off" if args.no_store else args.store,
              ENV_FORCE: "1" if args.force else None,
              ENV_BACKEND: getattr(args, "backend", None),
              ENV_SCHEDULER: getattr(args, "scheduler", None)}
    previous = {name: os.environ.get(name) for name in values}
    for name, value in values.items():
        if value:
            os.environ[name] = value
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _render_all(source: str) -> str:
    """The command that renders every claim of a results ``source`` (``report``'s
    arguments), named on a page that shows a selection."""
    return f"python -m verify report {source} --out DIR"


def _write_report(record: dict, out: str, findings: bool = False):
    from verify.report.files import write_findings, write_report
    try:
        return (write_findings if findings else write_report)(record, out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_report(args: argparse.Namespace) -> int:
    from verify.report.files import select_claims

    if args.from_store:
        store = _open_store(args)
        if store is None:
            raise UsageError("--from-store: the store is off (--store PATH names one)")
        claims = [r.record for r in store.latest_per_claim()]
        if not claims:
            raise UsageError(f"--from-store: {store.path} holds no results")
        from collections import Counter
        counts = Counter(c["verdict"] for c in claims)
        record = {"schema_version": 1, "run": {"source": f"store {store.path}"},
                  "summary": dict(counts), "claims": claims}
    else:
        try:
            with open(args.from_path, encoding="utf-8") as fh:
                record = json.load(fh)
        except IsADirectoryError:
            raise UsageError(f"--from: {args.from_path} is a directory, not a results "
                             f"file") from None
        except OSError as exc:
            raise UsageError(f"--from: cannot read {args.from_path} ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--from: {args.from_path} is not a results file (not JSON: "
                             f"{exc})") from None
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise UsageError(f"--from: {args.from_path} is not a results file (not UTF-8 "
                             f"JSON: {type(exc).__name__})") from None
        problem = results_problem(record)
        if problem:
            raise UsageError(f"--from: {args.from_path} is not a results file ({problem})")
        bad = nonfinite_field(record)
        if bad:
            raise UsageError(f"--from: {args.from_path}: field {bad[0]} is {bad[1]}, which a "
                             f"results file writes as the string '{bad[1]}' (JSON has no "
                             f"{bad[1]})")
    check_output_path("--out", args.out, directory=True)
    try:
        if args.from_store:
            source = f"the store {store.path}"
            everything = f"--from-store --store {shlex.quote(str(store.path))}"
        else:
            source, everything = args.from_path, f"--from {shlex.quote(args.from_path)}"
        record = select_claims(record, args.claims, source=source,
                               command=_render_all(everything))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.from_store:
        print(_write_report(record, args.out, args.findings))
        return EXIT_OK
    try:
        index = _write_report(record, args.out, args.findings)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:  # a shape not checked
        raise UsageError(f"--from: {args.from_path} is not a results file (rendering it "
                         f"failed: {type(exc).__name__}: {exc})") from None
    print(index)
    return EXIT_OK


#: Keys every claim of a results file has (schema_version 1; ``diagnosis`` may be absent).
RESULT_CLAIM_KEYS = ("id", "title", "statement", "verdict", "reason", "parameters",
                     "assumptions", "evidence")


def nonfinite_field(value: object, where: str = "") -> tuple[str, str] | None:
    """The first field holding a bare NaN or infinity (Python's json reads them; the
    toolkit writes them as strings), as ``(path, 'nan')``; None when there is none."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top)", "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        found = nonfinite_field(item, f"{where}[{key}]" if isinstance(key, int)
                                else f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def results_problem(record: object) -> str | None:
    """Why ``record`` is not a results file of schema_version 1 (None when it is one)."""
    from verify.verdict import Verdict

    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    if record.get("schema_version") != 1:
        return "no schema_version 1"
    claims = record.get("claims")
    if not isinstance(claims, list):
        return "no claims list"
    verdicts = [v.value for v in Verdict]
    for n, claim in enumerate(claims):
        if not isinstance(claim, dict):
            return f"claims[{n}] is not an object"
        missing = [k for k in RESULT_CLAIM_KEYS if k not in claim]
        name = (f"claim {claim['id']!r}" if isinstance(claim.get("id"), str)
                else f"claims[{n}]")
        if missing:
            return f"{name} lacks {', '.join(missing)}"
        if claim["verdict"] not in verdicts:
            return f"{name}: verdict {claim['verdict']!r} is not one of {', '.join(verdicts)}"
        for key, kind in (("evidence", list), ("assumptions", list), ("parameters", dict)):
            if not isinstance(claim[key], kind):
                return f"{name}: {key} is not a {kind.__name__}"
        if not all(isinstance(e, dict) for e in claim["evidence"] + claim["assumptions"]):
            return f"{name}: an evidence or assumption item is not an object"
    return None


def _cmd_history(args: argparse.Namespace) -> int:
    try:  # an alias resolves; an id no longer registered still has its history
        claim_id, known = registry.get(args.id).id, True
    except registry.UnknownClaim:
        claim_id, known = args.id, False
    store = _open_store(args)
    if store is None:
        raise UsageError("history: the store is off (--store PATH names one)")
    rows = list(store.history(claim_id))
    if not rows and not known:
        raise UsageError(f"ID: unknown claim id {claim_id!r}, and {store.path} holds no "
                         f"results under it (see `python -m verify list`)")
    if not rows:
        print(f"{claim_id}: no stored results in {store.path}")
        return EXIT_OK
    print(f"{claim_id}: {len(rows)} stored results in {store.path}")
    for r in rows:
        rec = r.record
        rev = r.revision or "-"
        if all(ch in "0123456789abcdef" for ch in rev):
            rev = rev[:10]
        print(f"  {r.recorded}  {rec['verdict']:<12}  {rec['fidelity']:<5}  seed {rec['seed']}  "
              f"{rec['dtype']}  {rec['device']}  rev {rev}  "
              f"{key_figure_text(rec['key_figure'], rec['reason'])}")
    return EXIT_OK


def _cmd_mutate(args: argparse.Namespace) -> int:
    """One line per mutant that is not killed, a summary per claim, a total; survivors that
    the claim does not declare equivalent are the gaps (``--strict``: exit 1)."""
    from verify import mutant_table
    from verify.mutate import OPERATORS, mutate, plan, sample

    try:
        claims = registry.select(args.patterns)
    except registry.UnknownClaim as exc:
        raise UsageError(exc.args[0]) from None
    operators = [o.strip() for o in args.operators.split(",") if o.strip()]
    unknown = [o for o in operators if o not in OPERATORS]
    if unknown or not operators:
        raise UsageError(f"--operators: {', '.join(unknown) or 'none given'} not among "
                         f"{', '.join(OPERATORS)}")
    if args.json_path:
        check_output_path("--json", args.json_path)
    if args.table:
        _check_table_run(args, operators)
    reports = []
    for claim in claims:
        pairs = (plan(claim, operators) if args.budget is None
                 else sample(claim, args.budget, operators, args.seed))
        report = mutate(claim, pairs=pairs, fidelity=args.fidelity, seed=args.seed,
                        progress=_progress)
        reports.append(report)
        if args.table:      # after each claim: a run stopped midway keeps its finished rows
            mutant_table.update(args.table, [report])
        print(f"{report.summary()} (baseline {report.baseline}, {report.seconds:.1f} s)",
              flush=True)
        for o in report.outcomes:
            if o.status != "killed":
                print(f"  {o.form}:{o.operator:<6} {o.status:<14} {o.detail}", flush=True)
    gaps = sum(len(r.gaps) for r in reports)
    total = sum(len(r.outcomes) for r in reports)
    killed = sum(r.count("killed") for r in reports)
    print(f"{len(reports)} claim(s), {total} mutants: {killed} killed, {gaps} survived "
          f"undeclared", flush=True)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump({"mutation": [r.as_record() for r in reports]}, fh, indent=2)
    return EXIT_STRICT if args.strict and gaps else EXIT_OK


def _check_table_run(args: argparse.Namespace, operators: list[str]) -> None:
    """The table holds one kind of run, so that its rows compare: every operator on every form
    at quick fidelity and seed 0."""
    from verify.mutate import OPERATORS

    if args.budget is not None or sorted(operators) != sorted(OPERATORS) \
            or args.fidelity != "quick" or args.seed != 0:
        raise UsageError("--table: the table's rows are complete runs (every operator, no "
                         "--budget, --fidelity quick, --seed 0)")
    check_output_path("--table", args.table)


def _cmd_stress(args: argparse.Namespace) -> int:
    from numerics.device import resolve_device
    from verify.cli.stress import report_writer, sigterm_interrupts, summary
    from verify.stress import stress

    try:
        claim = registry.get(args.id)
        device = resolve_device(args.device)
    except (registry.UnknownClaim, ValueError) as exc:
        raise UsageError(exc.args[0]) from None
    check_output_path("--json", args.json_path)
    _set_threads(args.threads, args.fidelity, device)
    write = report_writer(args.json_path, run_metadata(
        device=device, dtype=DTYPES[args.dtype], seed=args.seed, fidelity=args.fidelity))
    # the drawn configurations are explored once: their training grids (run.sweep) are not
    # stored, so a search does not fill the user's results store
    from verify.store import ENV
    previous = os.environ.get(ENV)
    os.environ[ENV] = "off"
    try:
        with sigterm_interrupts():
            report = stress(claim, budget=args.budget, mode=args.mode, seed=args.seed,
                            fidelity=args.fidelity, dtype=args.dtype, device=str(device),
                            progress=_progress, modules=args.modules,
                            time_limit=None if args.time_limit == math.inf
                            else args.time_limit, checkpoint=write)
    finally:
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous
    for line in summary(report):
        print(line, flush=True)
    _progress(f"wrote {write(report, in_progress=False)}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        for module, problem in registry.load_builtin_claims().items():
            print(f"{PROG}: warning: claims in {module} not loaded ({problem})", file=sys.stderr)
        args.module_names = []
        for module in args.modules:
            try:
                args.module_names.append(registry.import_claim_module(module))
            except registry.ModuleLoadError as exc:
                raise UsageError(f"--module: {exc}") from None
        return {"list": _cmd_list, "show": _cmd_show, "check": _cmd_check,
                "stress": _cmd_stress, "history": _cmd_history, "mutate": _cmd_mutate,
                "report": _cmd_report, "sweep": cmd_sweep,
                "reference": functools.partial(cmd_reference, cli_main=main),
                }[args.command](args)
    except (UsageError, StoreError) as exc:  # StoreError: a store row that is not a result
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreWriteError as exc:  # the disk, not the input: the original sqlite error
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`list | head`): nothing left to say
        with contextlib.suppress(OSError):  # and no second error when Python flushes at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - one line; THEORY_VERIFY_DEBUG=1 re-raises
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("THEORY_VERIFY_DEBUG"):
            raise
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
