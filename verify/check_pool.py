"""Run whole claims in worker processes (``python -m verify check --jobs N``).

Each worker imports the claims once (the built-in ones and the ``--module`` ones), sets its
torch threads, and runs a claim's check and its negative control with
:func:`verify.runner.run_claim`, so a record is the one a serial run makes: every draw comes from
a generator seeded by ``(seed, claim id, stream)``, never from process state. Claims are handed
out longest-first when their durations are known (a long claim started last would otherwise
set the wall time alone).
"""
from __future__ import annotations

import concurrent.futures as cf
import gc
import importlib
import multiprocessing
from collections.abc import Iterator, Mapping, Sequence
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
             seed: int) -> dict:
    from verify import registry
    from verify.runner import run_claim

    result = run_claim(registry.get(task.claim_id), fidelity=fidelity, device=device,
                       dtype=dtype, seed=seed, overrides=dict(task.overrides))
    return result.as_record()


#: How workers may be started: ``spawn`` (a fresh interpreter that imports everything again)
#: or ``fork`` (a copy of the caller, imports included).
START_METHODS = ("spawn", "fork")


def run_claims_in_pool(tasks: Sequence[ClaimTask], *, jobs: int, fidelity: str,
                       device: torch.device, dtype: torch.dtype, seed: int,
                       modules: Sequence[str] = (), threads: int | None = None,
                       start_method: str = "spawn") -> Iterator[tuple[int, dict]]:
    """Yield ``(index into tasks, result record)`` as each claim finishes.

    ``jobs`` worker processes, started with ``start_method``. ``spawn`` is the safe default:
    a forked child inherits the caller's OpenMP thread pool (not fork-safe: the child's first
    parallel region can hang) and CUDA context. ``fork`` saves each worker the imports (about
    4 s of CPU per worker on 2 cores) and is for a caller that has only imported modules and
    set thread counts, run no torch operation in parallel and touched no GPU, as
    ``python -m verify check`` on the CPU. A check that raises is already an ``error`` record
    (see :func:`verify.runner.run_claim`); a worker that dies takes the pool down and the
    error propagates after the finished records were yielded.
    """
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: {jobs!r} must be an integer >= 1")
    if start_method not in START_METHODS:
        raise ValueError(f"start_method: {start_method!r} must be one of {START_METHODS}")
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].expected_seconds)
    context = multiprocessing.get_context(start_method)
    with cf.ProcessPoolExecutor(min(jobs, max(len(tasks), 1)), mp_context=context,
                                initializer=_start_worker,
                                initargs=(tuple(modules), threads)) as pool:
        futures = {pool.submit(_run_one, tasks[i], fidelity, device, dtype, seed): i
                   for i in order}
        for future in cf.as_completed(futures):
            yield futures[future], future.result()
