"""What the ``stress`` sub-command prints and writes (:func:`verify.stress.stress` searches).

A search can take long and be stopped from outside (Ctrl-C, ``timeout``, a batch scheduler's
SIGTERM). So its report file is rewritten after every run, its run block marked
``in_progress`` until the search ends, and SIGTERM interrupts the search the way Ctrl-C does:
the search then returns what it found so far, which is printed and written with the reason it
stopped early.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from verify.results import write_json
from verify.stress import StressReport


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside, SIGTERM raises ``KeyboardInterrupt("SIGTERM")`` in the main thread (Python's
    default would end the process at once, leaving nothing printed)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def report_writer(path: str, run: Mapping[str, Any]) -> Callable[..., Path]:
    """``write(report, in_progress=True)`` writes ``report`` to ``path`` (atomically) under the
    run block ``run``; while ``in_progress`` the block says how many runs are done."""
    def write(report: StressReport, in_progress: bool = True) -> Path:
        block = {**run, "in_progress": f"{len(report.points)} runs so far"} if in_progress \
            else dict(run)
        return write_json({"kind": "stress", "run": block, **report.as_record()}, path)
    return write


def summary(report: StressReport) -> Iterator[str]:
    """The lines ``stress`` prints: the search, why it stopped early (if it did), the regime
    map and the minimal counterexample with its re-checks and reproduce line."""
    yield (f"{report.claim_id}: stress ({report.mode}), budget {report.budget}, "
           f"seed {report.seed}: {len(report.points)} runs in {report.seconds:.1f} s")
    if report.stopped:
        yield f"  stopped early: {report.stopped}"
    if report.note:
        yield f"  {report.note}"
    yield "regime map (pass/fail/inconclusive/error; inside/outside the assumptions):"
    for name, bins in report.regime_map().items():
        cells = ", ".join(
            f"{b}: {c.get('pass', 0)}/{c.get('fail', 0)}/{c.get('inconclusive', 0)}/"
            f"{c.get('error', 0)} ({c.get('inside', 0)} in, {c.get('outside', 0)} out)"
            for b, c in bins.items())
        yield f"  {name}  {cells}"
    cx = report.counterexample
    if cx is None:
        yield ("no counterexample found before the search stopped" if report.stopped
               else "no counterexample within the budget")
        return
    where = "inside" if cx.inside else "OUTSIDE"
    what = "smallest counterexample so far" if report.stopped else "minimal counterexample"
    yield f"{what} ({cx.status}, {where} the assumptions): {cx.config}"
    yield from (f"  failed: {item}" for item in cx.failed)
    yield from (f"  re-check: {r['how']}: {r['verdict']}" for r in cx.rechecks)
    yield f"  reproduce: {cx.reproduce}"
