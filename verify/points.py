"""Point functions, the unit of a sweep: what a point is, how one call computes a chunk of
them, and how the kernel runs a grid in this process (:func:`in_process_sweep`).

A point is a dict of JSON parameters (its own seed among them: a point function never draws
from a global RNG, so a point's result does not depend on where or with which other points it
ran); a result is a dict of JSON data. A point function decorated with :func:`batched` takes a
list of points and returns the list of their results, so that one call trains a whole chunk on
the trainer's leading batch axis. The sweep engine (:mod:`verify.sweep`: the store, Dask) calls
:func:`run_chunk` on the same chunks, so a grid gives the same bits through either.

>>> in_process_sweep(lambda p: {"y": p["x"] ** 2}, [{"x": 2}, {"x": 3}], name="demo")
[{'y': 4}, {'y': 9}]
"""
from __future__ import annotations

import json
import math
import os
import socket
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

PointFunction = Callable[[Any], Any]


def batched(fn: PointFunction) -> PointFunction:
    """Mark ``fn`` as taking a list of points and returning the list of their results."""
    fn.sweep_batched = True
    return fn


def json_data(value: Any, where: str) -> Any:
    """``value`` as JSON data; non-finite floats become the strings 'nan', 'inf', '-inf' (as
    everywhere in the toolkit's records); anything else that is not JSON raises TypeError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):   # numpy's float64 too: stored and returned as a float
        return float(value) if math.isfinite(value) else (
            "nan" if math.isnan(value) else "inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{where}: key {bad[0]!r} is not a string")
        return {k: json_data(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_data(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"{where}: {type(value).__name__} is not JSON data (use .item(), .tolist())")


def canonical_points(points: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The points as JSON round trips them (tuples become lists), each checked once."""
    if isinstance(points, (str, bytes, Mapping)) or not isinstance(points, Iterable):
        raise ValueError(f"points: needs a list of dicts, got {type(points).__name__}")
    out, seen = [], {}
    for i, p in enumerate(points):
        if not isinstance(p, Mapping):
            raise ValueError(f"points[{i}]: {p!r} is not a dict of parameters")
        try:
            text = json.dumps(p, sort_keys=True, allow_nan=False)
            if any(not isinstance(k, str) for k in p):
                raise TypeError("keys must be strings")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"points[{i}]: {p!r} is not JSON data (string keys; strings, "
                             f"ints, finite floats, bools, None, lists, dicts): {exc}") from None
        if text in seen:
            raise ValueError(f"points[{i}]: repeats points[{seen[text]}] ({text})")
        seen[text] = i
        out.append(json.loads(text))
    if not out:
        raise ValueError("points: empty; a sweep needs at least one point")
    return out


class Computed(NamedTuple):
    """One point's outcome as a worker returns it."""

    status: str                 # 'ok' or 'error'
    value: Any                  # the result (ok) or the error message
    seconds: float              # wall time of the call that computed it
    batch: int                  # points in that call
    worker: str                 # host:pid


def error_text(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" \
        if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def run_chunk(fn: PointFunction, points: list[dict[str, Any]]) -> list[Computed]:
    """Compute ``points`` (runs in-process or on a worker): per point, its result or error."""
    worker = f"{socket.gethostname()}:{os.getpid()}"
    is_batched = getattr(fn, "sweep_batched", False)
    if not is_batched and len(points) > 1:
        return [c for p in points for c in run_chunk(fn, [p])]
    start = time.perf_counter()
    try:
        # copies: a point function that edits its points cannot edit the ones stored
        if is_batched:
            results = fn([dict(p) for p in points])
            if not isinstance(results, Sequence) or len(results) != len(points):
                raise TypeError(f"a batched point function must return a list of "
                                f"{len(points)} results, got {results!r:.80}")
        else:
            results = [fn(dict(points[0]))]
        for i, r in enumerate(results):
            if not isinstance(r, Mapping):
                raise TypeError(f"result {i}: {type(r).__name__} is not a dict")
        results = [json_data(r, "result") for r in results]
    except Exception as exc:  # noqa: BLE001 - the point's error is its result; others go on
        if len(points) > 1:   # find the bad point: each alone, so no other point is lost
            return [c for p in points for c in run_chunk(fn, [p])]
        seconds = time.perf_counter() - start
        return [Computed("error", error_text(exc), seconds, 1, worker)]
    seconds = time.perf_counter() - start
    return [Computed("ok", r, seconds, len(points), worker) for r in results]


def short_point(point: Mapping[str, Any], limit: int = 160) -> str:
    """A sweep point for an error message: its scalar fields (a point can carry a whole
    Cayley table), cut to ``limit`` characters."""
    text = repr({k: v for k, v in point.items() if isinstance(v, (int, float, str, bool))})
    return text if len(text) <= limit else text[:limit - 3] + "..."


def failed_points(name: str, failures: Sequence[tuple[Mapping[str, Any], str]],
                  total: int) -> RuntimeError:
    """The error a sweeper raises when points failed: how many, and the first three with
    their errors' last lines."""
    return RuntimeError(f"sweep {name}: {len(failures)} of {total} points failed: " + "; ".join(
        f"{short_point(point)}: {str(error).strip().splitlines()[-1]}"
        for point, error in failures[:3]))


def chunks_of(fn: PointFunction, count: int, batch_size: int) -> list[range]:
    """The consecutive chunks of ``count`` points that ``fn`` is called on: ``batch_size``
    points per call when it is :func:`batched`, one otherwise."""
    size = batch_size if getattr(fn, "sweep_batched", False) else 1
    return [range(j, min(j + size, count)) for j in range(0, count, size)]


def in_process_sweep(fn: PointFunction, points: Iterable[Mapping[str, Any]], *, name: str,
                     batch_size: int = 1) -> list[dict[str, Any]]:
    """The kernel's sweeper (:mod:`verify.hooks`): ``fn``'s results at ``points`` in their
    order, computed here on the chunks the sweep engine would use, nothing stored. Raises
    ``RuntimeError`` naming the points that failed."""
    pts = canonical_points(points)
    computed = [c for chunk in chunks_of(fn, len(pts), batch_size)
                for c in run_chunk(fn, [pts[i] for i in chunk])]
    failures = [(p, c.value) for p, c in zip(pts, computed) if c.status != "ok"]
    if failures:
        raise failed_points(name, failures, len(pts))
    return [c.value for c in computed]
