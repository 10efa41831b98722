"""The ``sweep`` sub-command: run a point function over a grid or a list of points, in-process or
on a Dask cluster, streamed into the results store (:func:`verify.sweep.run_sweep`).

``python -m verify sweep MODULE:FUNCTION --name NAME --grid p=[0.2,0.3] --grid seed=[0,1,2]``
"""
from __future__ import annotations

import argparse
import ast
import importlib
import itertools
import json
import sys
from typing import Any

from verify.cli.arguments import UsageError, positive_int
from verify.sweep import (BACKENDS, DEFAULT_BATCH, ENV_BACKEND, ENV_SCHEDULER,
                          describe_scheduler, run_sweep)


def _axis(text: str) -> tuple[str, list[Any]]:
    name, sep, values = text.partition("=")
    try:
        parsed = ast.literal_eval(values) if sep and name.isidentifier() else None
    except (ValueError, SyntaxError):
        parsed = None
    if not isinstance(parsed, (list, tuple)) or not parsed:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=[v1, v2, ...] (a non-empty "
                                         f"Python list of literals)")
    return name, list(parsed)


def add_sweep_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``sweep`` to the sub-commands ``sub``; its handler is :func:`cmd_sweep`."""
    p = sub.add_parser("sweep", help="run a point function over a grid of parameters, locally "
                                     "or on a Dask cluster, streamed into the results store")
    p.add_argument("function", metavar="MODULE:FUNCTION",
                   help="a module-level point function (dict -> dict, or batched)")
    points = p.add_mutually_exclusive_group(required=True)
    points.add_argument("--grid", type=_axis, action="append", metavar="NAME=[v1,...]",
                        help="an axis of the grid (repeatable; the first varies slowest)")
    points.add_argument("--points", metavar="PATH", help="a JSON file: a list of point objects")
    p.add_argument("--name", required=True, help="the sweep's name in the store")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help=f"default ${ENV_BACKEND} or local")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help=f"Dask scheduler (default ${ENV_SCHEDULER}, else a LocalCluster here)")
    p.add_argument("--batch-size", type=positive_int, default=DEFAULT_BATCH, metavar="N",
                   help=f"points per call of a batched function (default {DEFAULT_BATCH})")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="torch intra-op threads in this process (default: torch's choice)")
    p.add_argument("--store", default=None, metavar="PATH",
                   help="results database (default: $THEORY_VERIFY_STORE or "
                        "./theory-verify.sqlite; 'off' disables it)")
    p.add_argument("--force", action="store_true", help="recompute stored points")
    p.add_argument("--json", dest="json_path", default=None, metavar="PATH",
                   help="also write every point's outcome as JSON")
    p.add_argument("--strict", action="store_true", help="exit 1 when any point failed")
    return p


def _function(spec: str):
    module, sep, name = spec.partition(":")
    try:
        if not sep:
            raise ImportError("expected MODULE:FUNCTION")
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"function: cannot import {spec!r} ({exc})") from None


def _points(args: argparse.Namespace) -> list[Any]:
    if args.grid:
        names = [n for n, _ in args.grid]
        return [dict(zip(names, row)) for row in itertools.product(*(v for _, v in args.grid))]
    try:
        with open(args.points, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ValueError(f"--points: cannot read {args.points} ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--points: {args.points} is not JSON ({exc})") from None


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run the sweep ``args`` describe; bad input raises ``verify.cli.UsageError`` (exit 2)."""
    from verify.results import write_json

    if args.threads is not None:
        import torch
        torch.set_num_threads(args.threads)
    if args.scheduler is not None:
        try:
            print(describe_scheduler(args.scheduler), file=sys.stderr)
        except ConnectionError as exc:
            raise UsageError(f"--scheduler: {exc}") from None
        except ImportError:
            raise UsageError("--scheduler: dask.distributed is not installed "
                             "(pip install 'theory-verify[dask]')") from None
    try:
        report = run_sweep(_function(args.function), _points(args), name=args.name,
                           backend=args.backend, client=args.scheduler,
                           batch_size=args.batch_size, store=args.store, force=args.force)
    except (ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    for o in report.failed:
        print(f"  failed {json.dumps(o.point, sort_keys=True)}: {o.error}")
    print(report.summary())
    if args.json_path:
        write_json({"sweep": report.name, "function": args.function, "backend": report.backend,
                    "points": [{"point": o.point, "result": o.result, "error": o.error,
                                "reused": o.reused, "seconds": o.seconds}
                               for o in report.outcomes]}, args.json_path)
    return 1 if args.strict and report.failed else 0
