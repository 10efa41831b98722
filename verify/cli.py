"""Command line: ``python -m verify {list,show,check}`` (also installed as ``theory-verify``).

Exit codes: 0 the run completed (whatever the verdicts); 1 with ``--strict`` when any claim is
not ``pass``; 2 usage error (one line naming the parameter and what is allowed); 3 internal error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from typing import NoReturn

from verify import registry
from verify.claim import FIDELITIES
from verify.results import run_record, write_json
from verify.runner import DTYPES, run_claim

EXIT_OK, EXIT_STRICT, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
PROG = "theory-verify"


class UsageError(Exception):
    """Bad input from the user: reported on one line, exit code 2."""


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


def _threads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
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
                         help="quick: CPU-sized (default); full: the paper's sizes")
    p_check.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p_check.add_argument("--dtype", choices=tuple(DTYPES), default="float64")
    p_check.add_argument("--seed", type=_seed, default=0, help="base seed (default 0)")
    p_check.add_argument("--threads", type=_threads, default=None, metavar="N",
                         help="torch intra-op CPU threads (default: 1 at quick fidelity on "
                              "the CPU, whose small tensors only wait on each other's threads; "
                              "torch's own choice otherwise)")
    p_check.add_argument("--json", dest="json_path", default="results.json", metavar="PATH",
                         help="where to write the results (default results.json)")
    p_check.add_argument("--strict", action="store_true",
                         help="exit 1 when any claim is not pass")
    return parser


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


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
    print(f"\nstatement (as the paper states it):\n  {d['statement']}")
    print(f"\nreading (the toolkit's precise version):\n  {d['reading']}")
    if d["assumptions"]:
        print("\nassumptions:")
        for a in d["assumptions"]:
            print(f"  - {a['name']}: {a['description']}")
    print(f"\nnegative control: {d['negative_control']}")
    for fidelity, params in d["parameters"].items():
        print(f"\nparameters ({fidelity}): {json.dumps(params)}")
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        claims = registry.select(args.patterns)
    except registry.UnknownClaim as exc:
        raise UsageError(exc.args[0]) from None
    from numerics.device import resolve_device
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from verify.metadata import run_metadata

    threads = args.threads
    if threads is None and args.fidelity == "quick" and device.type == "cpu":
        threads = 1
    if threads is not None:
        import torch
        torch.set_num_threads(threads)

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    width = max(len(c.id) for c in claims)
    results = []
    for i, claim in enumerate(claims, 1):
        _progress(f"[{i}/{len(claims)}] {claim.id} ...")
        result = run_claim(claim, fidelity=args.fidelity, device=device,
                           dtype=DTYPES[args.dtype], seed=args.seed)
        results.append(result)
        flag = "" if result.inside_assumptions else "  [outside assumptions]"
        print(f"{result.id:<{width}}  {result.verdict.value:<12}  {result.key_figure_text()}"
              f"  {result.seconds:.2f}s{flag}", flush=True)
    finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    metadata = run_metadata(device=device, dtype=DTYPES[args.dtype], seed=args.seed,
                            fidelity=args.fidelity)
    path = write_json(run_record(metadata, results, started=started, finished=finished),
                      args.json_path)
    _progress(f"wrote {path}")
    if args.strict and any(r.verdict.value != "pass" for r in results):
        return EXIT_STRICT
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        for module, problem in registry.load_builtin_claims().items():
            print(f"{PROG}: warning: claims in {module} not loaded ({problem})", file=sys.stderr)
        return {"list": _cmd_list, "show": _cmd_show, "check": _cmd_check}[args.command](args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line; THEORY_VERIFY_DEBUG=1 re-raises
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        if os.environ.get("THEORY_VERIFY_DEBUG"):
            raise
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
