"""Run whole claims in worker processes (``python -m verify check --jobs N``).

Each worker imports the claims once (the built-in ones and the ``--module`` ones), sets its
torch threads, and runs a claim's check and its negative control with
:func:`verify.runner.run_claim`, so a record is the one a serial run makes: every draw comes from
a generator seeded by ``(seed, claim id, stream)``, never from process state. Claims are handed
out longest-first when their durations are known (a long claim started last would otherwise
set the wall time alone). The pool is the module's own (a pipe per worker): a claim past its
time limit or a worker that dies takes down that worker only, never the run.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import gc
import importlib
import math
import multiprocessing
import multiprocessing.connection as mp_connection
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class ClaimTask:
    """One claim to run: its id, its parameter overrides and a duration hint for ordering."""

    claim_id: str
    overrides: Mapping[str, Any]
    expected_seconds: float = 0.0


#: First-generation threshold of the cyclic garbage collector in a worker (Python's default:
#: 700 allocations). Derivations allocate sympy objects by the million, so the default runs
#: the collector over a thousand times in a quick check, 2-4% of its CPU time; at 50 000 it
#: runs a dozen times, and the peak memory is the same (measured on the li2 claims: 736 MB
#: against 733 MB).
GC_THRESHOLD = 50_000


def _start_worker(modules: Sequence[str], threads: int | None) -> None:
    from verify import registry

    registry.load_builtin_claims()
    for module in modules:
        importlib.import_module(module)
    if threads is not None:
        torch.set_num_threads(threads)
    # The imported modules live as long as the worker: the collector need not walk them again.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD)


def _run_one(task: ClaimTask, fidelity: str, device: torch.device, dtype: torch.dtype,
             seed: int, time_limit: float | None) -> dict:
    from verify import registry
    from verify.diagnosis import diagnosed
    from verify.runner import run_claim
    from verify.sweep import stored_sweep

    result = run_claim(registry.get(task.claim_id), fidelity=fidelity, device=device,
                       dtype=dtype, seed=seed, overrides=dict(task.overrides),
                       time_limit=time_limit, sweeper=stored_sweep)
    return diagnosed(result.as_record())


#: How workers may be started: ``spawn`` (a fresh interpreter that imports everything again)
#: or ``fork`` (a copy of the caller, imports included).
START_METHODS = ("spawn", "fork")
#: Seconds a worker gets past a claim's time limit to send back the ``error`` record of its
#: own limit (:func:`verify.runner.run_claim`: raise, format the traceback, pickle) before it
#: is killed: that is a native call that never returned (the limit acts between bytecodes).
KILL_GRACE_S = 10.0
#: How often a claim whose worker was lost (killed, crashed) is run again in a fresh worker.
RETRIES = 1


#: Linux's ``prctl`` option that sends a signal to a process when its parent dies.
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """On Linux, have this worker killed when the process that started it dies, SIGKILL
    included: a forked worker inherits the other workers' ends of their pipes, so the end of
    file it waits for never comes and an orphan would sleep on its pipe for good (found: two
    250 MB workers left behind by a killed ``check``). Elsewhere nothing is done."""
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl
    except (OSError, AttributeError, TypeError):
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:   # the parent died before the request took effect
        os._exit(1)


def _serve(connection: Any, modules: Sequence[str], threads: int | None, parent: int) -> None:
    """A worker: set up once, then run the claims the parent sends until it sends None (or
    is gone: the pipe's end of file, or on Linux the parent's death)."""
    _die_with_parent(parent)
    _start_worker(modules, threads)
    while (job := _receive(connection)) is not None:
        index, task, settings = job
        try:
            connection.send((index, _run_one(task, **settings), None))
        except Exception as exc:  # noqa: BLE001 - bad arguments: raised in the parent
            connection.send((index, None, exc))


def _receive(connection: Any) -> Any:
    try:
        return connection.recv()
    except EOFError:
        return None


class _Worker:
    """One worker process, its end of the pipe and the claim it runs (None when idle)."""

    def __init__(self, context: Any, modules: Sequence[str], threads: int | None) -> None:
        self.connection, child = context.Pipe()
        # not a daemon: a claim may start processes of its own (a Dask LocalCluster)
        self.process = context.Process(target=_serve,
                                       args=(child, tuple(modules), threads, os.getpid()))
        self.process.start()
        child.close()
        self.index: int | None = None
        self.started = self.deadline = math.inf

    def give(self, index: int, task: ClaimTask, settings: dict, limit: float | None) -> None:
        from verify.runner import WALL_FACTOR

        self.connection.send((index, task, settings))
        self.index, self.started = index, time.monotonic()
        # the worker stops its claim by CPU seconds, or by WALL_FACTOR x the limit on the
        # clock when it waits; only past that (and the grace) is it deaf and killed
        self.deadline = (self.started + WALL_FACTOR * limit + KILL_GRACE_S if limit
                         else math.inf)

    def stop(self, *, kill: bool) -> None:
        if not kill and self.process.is_alive():
            with contextlib.suppress(OSError):
                self.connection.send(None)
            self.process.join(KILL_GRACE_S)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()

    def how_it_ended(self) -> str:
        self.process.join(KILL_GRACE_S)
        code = self.process.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"


def run_claims_in_pool(tasks: Sequence[ClaimTask], *, jobs: int, fidelity: str,
                       device: torch.device, dtype: torch.dtype, seed: int,
                       modules: Sequence[str] = (), threads: int | None = None,
                       start_method: str = "spawn", time_limit: float | None = None,
                       notify: Callable[[str], None] | None = None
                       ) -> Iterator[tuple[int, dict]]:
    """Yield ``(index into tasks, result record)`` as each claim finishes.

    ``jobs`` worker processes, started with ``start_method``. ``spawn`` is the safe default:
    a forked child inherits the caller's OpenMP thread pool (not fork-safe: the child's first
    parallel region can hang) and CUDA context. ``fork`` saves each worker the imports (about
    4 s of CPU per worker on 2 cores) and is for a caller that has only imported modules and
    set thread counts, run no torch operation in parallel and touched no GPU, as
    ``python -m verify check`` on the CPU. A check that raises is already an ``error`` record
    (see :func:`verify.runner.run_claim`), and so is one past ``time_limit`` seconds: the
    worker stops it between bytecodes, or, :data:`KILL_GRACE_S` later, is killed and replaced.
    A worker that dies (killed, crashed) is replaced and its claim run again in the new one,
    :data:`RETRIES` times; then the claim's record is an ``error`` naming it. Every claim
    gets a record; ``notify`` (if given) hears of each lost worker.
    """
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: {jobs!r} must be an integer >= 1")
    if start_method not in START_METHODS:
        raise ValueError(f"start_method: {start_method!r} must be one of {START_METHODS}")
    from verify import registry
    from verify.diagnosis import diagnosed
    from verify.runner import error_result, lost_worker_reason, time_limit_reason

    settings = {"fidelity": fidelity, "device": device, "dtype": dtype, "seed": seed,
                "time_limit": time_limit}
    queue = collections.deque(sorted(range(len(tasks)),
                                     key=lambda i: -tasks[i].expected_seconds))
    losses = collections.Counter()
    context = multiprocessing.get_context(start_method)
    workers = [_Worker(context, modules, threads) for _ in range(min(jobs, len(tasks)))]

    def lost(w: _Worker, reason: str, error: str) -> dict:
        task = tasks[w.index]
        result = error_result(registry.get(task.claim_id), fidelity=fidelity, device=device,
                              dtype=dtype, seed=seed, overrides=task.overrides, reason=reason,
                              seconds=time.monotonic() - w.started, error=error)
        return diagnosed(result.as_record())

    finished = False
    try:
        while queue or any(w.index is not None for w in workers):
            for w in workers:
                if w.index is None and queue:
                    index = queue.popleft()
                    w.give(index, tasks[index], settings, time_limit)
            busy = [w for w in workers if w.index is not None]
            wait = min(w.deadline for w in busy) - time.monotonic()
            ready = set(mp_connection.wait(
                [w.connection for w in busy] + [w.process.sentinel for w in busy],
                timeout=None if math.isinf(wait) else max(wait, 0.0)))
            for n, w in enumerate(workers):
                if w.index is None:
                    continue
                index, claim_id = w.index, tasks[w.index].claim_id
                if w.connection in ready or w.process.sentinel in ready:
                    try:
                        _, record, raised = w.connection.recv()
                    except (EOFError, OSError):  # it died before sending its record
                        how = w.how_it_ended()
                        losses[index] += 1
                        w.stop(kill=True)
                        workers[n] = _Worker(context, modules, threads)
                        if losses[index] <= RETRIES:
                            if notify:
                                notify(f"worker lost running {claim_id} ({how}); running it "
                                       f"again in a fresh worker")
                            queue.appendleft(index)
                            continue
                        yield index, lost(w, lost_worker_reason(claim_id, how),
                                          f"the worker process running {claim_id} ended "
                                          f"({how}) before sending its result, twice")
                        continue
                    if raised is not None:
                        raise raised
                    w.index, w.deadline = None, math.inf
                    yield index, record
                elif time.monotonic() >= w.deadline:
                    w.stop(kill=True)
                    workers[n] = _Worker(context, modules, threads)
                    reason = time_limit_reason(time_limit, claim_id, wall=True)
                    yield index, lost(w, reason, f"{reason}: its worker process had not "
                                                 f"returned {KILL_GRACE_S:g} s later and was "
                                                 f"killed")
        finished = True
    finally:
        for w in workers:
            w.stop(kill=not finished)
