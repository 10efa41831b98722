"""Parameter sweeps (phase diagrams such as Li2's Fig. 5, groups x p x seeds; eta and lr sweeps)
through one call, :func:`run_sweep`, run in-process or on a Dask cluster, streamed into the
results store.

A sweep is a *point function* and a list of *points* (:mod:`verify.points`: a dict of JSON
parameters in, a dict of JSON data out; :func:`batched` for a list of points per call).
:func:`stored_sweep` is the sweeper ``check`` hands down to the kernel (:mod:`verify.hooks`):
a claim's ``run.sweep`` goes through it.

Backends (the call is the same; only ``backend`` changes):

* ``local`` (default): chunks of ``batch_size`` points, one after the other, in this process;
* ``dask``: the same chunks as tasks on a ``distributed`` cluster (the optional extra
  ``theory-verify[dask]``): a ``Client`` given, a scheduler address, or a ``LocalCluster`` of
  single-threaded worker processes made for the call and closed after it.

Each chunk's points are committed to the store (the claims' SQLite file, table
``sweep_points``) the moment the chunk finishes, under a key of the sweep's name, the
function, the point, the code fingerprint and the package versions; a rerun reuses every point
stored as done and computes the rest. The fingerprint (:func:`code_fingerprint`) covers only
the code the point function can run, so a stopped paper-size run resumes after an edit
elsewhere in the tree. An exception in a point is recorded as that point's
error (a failed batched call is retried point by point, so one bad point loses no other); a
worker that dies loses only the chunk it held, recorded as an error that a rerun retries.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from verify.code_closure import module_code_digest
from verify.metadata import git_revision, package_versions
from verify.points import (
    Computed,
    PointFunction,
    canonical_points,
    chunks_of,
    failed_points,
    run_chunk,
)
from verify.store import BUSY_TIMEOUT_S, DEFAULT_PATH, ENV, ResultStore

BACKENDS = ("local", "dask")
#: Environment variables: the backend a call without ``backend`` uses (default ``local``) and
#: the Dask scheduler address a call without ``client`` connects to (default: a LocalCluster),
#: so that a claim's sweep moves to a cluster without a change to the claim.
ENV_BACKEND = "THEORY_VERIFY_SWEEP_BACKEND"
ENV_SCHEDULER = "THEORY_VERIFY_SCHEDULER"
#: Set to ``1`` (``check --force`` does), a call without ``force`` recomputes stored points:
#: rerunning a claim must rerun the sweep inside it too, not replay its stored points.
ENV_FORCE = "THEORY_VERIFY_SWEEP_FORCE"
#: Points per call of a batched point function (and per Dask task).
DEFAULT_BATCH = 16
SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep_points (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    sweep TEXT NOT NULL,
    function TEXT NOT NULL,
    point TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    result TEXT,
    error TEXT,
    seconds REAL NOT NULL,
    batch INTEGER NOT NULL,
    worker TEXT NOT NULL,
    code TEXT NOT NULL,
    revision TEXT,
    versions TEXT NOT NULL,
    recorded TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX IF NOT EXISTS sweep_points_key ON sweep_points(key);
CREATE INDEX IF NOT EXISTS sweep_points_sweep ON sweep_points(sweep);
"""

# --- the store ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredPoint:
    """One row of ``sweep_points``: a point computed once, done or failed."""

    sweep: str
    point: dict[str, Any]
    status: str
    result: dict[str, Any] | None
    error: str | None
    seconds: float
    batch: int
    worker: str
    recorded: str


class SweepStore:
    """The ``sweep_points`` table in a results database (the file :class:`ResultStore` holds
    the claims in; same WAL mode and busy timeout, so sweeps and checks can write at once)."""

    def __init__(self, path: str | Path = DEFAULT_PATH) -> None:
        self.path = ResultStore(path).path   # validates the file and creates the claims' tables
        with closing(self._connect()) as db:
            db.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return db

    def put(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Store the rows of one finished chunk in one transaction."""
        columns = ("key", "sweep", "function", "point", "status", "result", "error", "seconds",
                   "batch", "worker", "code", "revision", "versions")
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(f"INSERT INTO sweep_points ({', '.join(columns)}) VALUES "
                               f"({', '.join('?' * len(columns))})",
                               [tuple(r[c] for c in columns) for r in rows])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    _SELECT = ("SELECT sweep, point, status, result, error, seconds, batch, worker, recorded "
               "FROM sweep_points")

    @staticmethod
    def _row(r: tuple) -> StoredPoint:
        sweep, point, status, result, error, seconds, batch, worker, recorded = r
        return StoredPoint(sweep, json.loads(point), status,
                           None if result is None else json.loads(result), error, seconds,
                           batch, worker, recorded)

    def latest(self, key: str) -> StoredPoint | None:
        """The newest row stored under ``key``, if any."""
        with closing(self._connect()) as db:
            row = db.execute(f"{self._SELECT} WHERE key = ? ORDER BY id DESC LIMIT 1",
                             (key,)).fetchone()
        return None if row is None else self._row(row)

    def history(self, sweep: str) -> list[StoredPoint]:
        """Every row of the sweep ``sweep`` (all code versions), oldest first."""
        with closing(self._connect()) as db:
            rows = db.execute(f"{self._SELECT} WHERE sweep = ? ORDER BY id", (sweep,)).fetchall()
        return [self._row(r) for r in rows]


def default_store() -> SweepStore | None:
    """The store ``check`` uses: ``$THEORY_VERIFY_STORE`` or ``./theory-verify.sqlite``;
    None when the variable says ``off``."""
    path = os.environ.get(ENV) or DEFAULT_PATH
    return None if path == "off" else SweepStore(path)


# --- keys and JSON --------------------------------------------------------------------------------

def function_name(fn: PointFunction) -> str:
    """``module:qualname``: how a worker imports ``fn`` and how the store names it."""
    if not callable(fn):
        raise ValueError(f"fn: {fn!r} is not callable")
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<" in qualname:   # <lambda>, <locals>: no importable name
        raise ValueError(f"fn: {qualname or fn!r} must be a module-level function (a worker "
                         f"imports it by name and the store names it)")
    return f"{fn.__module__}:{qualname}"


def code_fingerprint(fn: PointFunction) -> str:
    """A digest of the code ``fn`` can run (:func:`verify.code_closure.module_code_digest`):
    the module that defines it and every project module that module imports, directly or
    not, without docstrings and comments. An edit elsewhere in the tree (a report, a
    docstring) keeps every stored point; one to the simulation computes them again.
    ``ValueError`` for a function whose module has no source file (an interactive session's):
    its points could not be told from those of an edited function."""
    source = getattr(sys.modules.get(fn.__module__), "__file__", None)
    return module_code_digest(fn.__module__, Path(source) if source else None)


def point_key(name: str, function: str, point: Mapping[str, Any], *, code: str,
              versions: Mapping[str, Any]) -> str:
    """The key a point's result is stored under (the backend is not part of it)."""
    parts = {"sweep": name, "function": function, "point": dict(point), "code": code,
             "versions": dict(versions)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# --- the driver -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PointOutcome:
    """One point of a sweep: its result, or the error that stopped it."""

    point: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    reused: bool                # read from the store, not computed by this call
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class SweepReport:
    """The outcomes of a sweep, in the order of its points."""

    name: str
    backend: str
    outcomes: tuple[PointOutcome, ...]
    seconds: float

    @property
    def results(self) -> list[dict[str, Any] | None]:
        """Each point's result (None where it failed)."""
        return [o.result for o in self.outcomes]

    @property
    def failed(self) -> list[PointOutcome]:
        return [o for o in self.outcomes if not o.ok]

    def summary(self) -> str:
        n, reused = len(self.outcomes), sum(o.reused for o in self.outcomes)
        return (f"sweep {self.name} ({self.backend}): {n} points, {n - reused} computed, "
                f"{reused} stored, {len(self.failed)} failed, {self.seconds:.1f} s")


def _tty_progress(message: str) -> None:
    if sys.stderr.isatty():
        print(message, file=sys.stderr, flush=True)


def _resolve_store(store: Any) -> SweepStore | None:
    if store is None:
        return default_store()
    if store == "off":
        return None
    if isinstance(store, (str, Path)):
        return SweepStore(store)
    if isinstance(store, ResultStore):
        return SweepStore(store.path)
    if isinstance(store, SweepStore):
        return store
    raise ValueError(f"store: {store!r} must be a SweepStore, a ResultStore, a path, 'off' "
                     f"or None")


def run_sweep(fn: PointFunction, points: Iterable[Mapping[str, Any]], *, name: str,
              backend: str | None = None, client: Any = None, batch_size: int = DEFAULT_BATCH,
              store: SweepStore | ResultStore | str | Path | None = None,
              force: bool | None = None,
              progress: Callable[[str], None] | None = _tty_progress) -> SweepReport:
    """Compute ``fn`` at every point, reusing stored points, streaming new ones into the store.

    ``fn``: a module-level point function (``dict -> dict``, or ``list -> list`` when
    :func:`batched`); ``points``: dicts of JSON parameters, no two equal; ``name``: the sweep's
    name in the store; ``backend``: ``'local'`` or ``'dask'`` (default
    ``$THEORY_VERIFY_SWEEP_BACKEND`` or ``'local'``); ``client`` (dask): a ``distributed.Client``,
    a scheduler address, or None for ``$THEORY_VERIFY_SCHEDULER`` or else a LocalCluster made
    for this call; ``batch_size``: points per call of a batched function (a point function that
    is not batched is called per point); ``store``: a store or a path; None (default) for
    ``check``'s store (``$THEORY_VERIFY_STORE`` or ``./theory-verify.sqlite``), ``'off'`` for none;
    ``force``: recompute stored points (default: whether ``$THEORY_VERIFY_SWEEP_FORCE`` is
    ``1``); ``progress``: called with a line per finished chunk
    (default: stderr when it is a terminal).

    Both backends call ``fn`` on the same chunks (consecutive runs of the points not yet
    stored), so a deterministic point function gives identical results on both.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name: {name!r} must be a non-empty string (the sweep's name in the "
                         f"store)")
    if backend is None:
        backend = os.environ.get(ENV_BACKEND) or "local"
    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of {', '.join(BACKENDS)} "
                         f"(from the argument or ${ENV_BACKEND})")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: {batch_size!r} must be an integer >= 1")
    if client is not None and backend != "dask":
        raise ValueError(f"client: given, but backend is {backend!r}; it needs backend='dask'")
    if force is None:
        force = os.environ.get(ENV_FORCE) == "1"
    function = function_name(fn)
    pts = canonical_points(points)
    store = _resolve_store(store)

    started = time.perf_counter()
    # keys only where a store reads and writes them: a function with no source file (an
    # interactive session's) still runs with store='off'
    code, versions = ((code_fingerprint(fn), package_versions()) if store is not None
                      else ("", {}))
    keys = [point_key(name, function, p, code=code, versions=versions) for p in pts]
    outcomes: list[PointOutcome | None] = [None] * len(pts)
    if store is not None and not force:
        for i, key in enumerate(keys):
            row = store.latest(key)
            if row is not None and row.status == "ok":
                outcomes[i] = PointOutcome(pts[i], row.result, None, True, row.seconds)
    pending = [i for i, o in enumerate(outcomes) if o is None]
    chunks = [[pending[j] for j in c] for c in chunks_of(fn, len(pending), batch_size)]
    git = git_revision() if store is not None and chunks else None
    done = len(pts) - len(pending)
    # on a terminal the default progress is a bar (points done, elapsed, remaining); a
    # caller's own progress function gets one line per chunk instead
    bar = None
    if progress is _tty_progress and chunks and sys.stderr.isatty():
        from tqdm import tqdm
        bar = tqdm(total=len(pts), initial=done, unit="point", desc=f"sweep {name}",
                   file=sys.stderr, dynamic_ncols=True, leave=False)
        progress = None

    def finish(chunk: list[int], computed: list[Computed]) -> None:
        nonlocal done
        if store is not None:
            store.put([{"key": keys[i], "sweep": name, "function": function,
                        "point": json.dumps(pts[i], sort_keys=True), "status": c.status,
                        "result": json.dumps(c.value) if c.status == "ok" else None,
                        "error": c.value if c.status == "error" else None,
                        "seconds": c.seconds, "batch": c.batch, "worker": c.worker,
                        "code": code, "revision": git and git["revision"],
                        "versions": json.dumps(versions, sort_keys=True)}
                       for i, c in zip(chunk, computed)])
        for i, c in zip(chunk, computed):
            ok = c.status == "ok"
            outcomes[i] = PointOutcome(pts[i], c.value if ok else None,
                                       None if ok else c.value, False, c.seconds)
        done += len(chunk)
        if bar is not None:
            bar.update(len(chunk))
        if progress is not None:
            failed = sum(o is not None and not o.ok for o in outcomes)
            progress(f"sweep {name}: {done}/{len(pts)} points ({failed} failed)")

    try:
        if backend == "local":
            for chunk in chunks:
                finish(chunk, run_chunk(fn, [pts[i] for i in chunk]))
        elif chunks:
            _run_on_dask(fn, [[pts[i] for i in chunk] for chunk in chunks], client,
                         lambda k, computed: finish(chunks[k], computed))
    finally:
        if bar is not None:
            bar.close()
    return SweepReport(name, backend, tuple(outcomes), time.perf_counter() - started)


def _run_on_dask(fn: PointFunction, chunks: list[list[dict[str, Any]]], client: Any,
                 finish: Callable[[int, list[Computed]], None]) -> None:
    """Each chunk a task; ``finish(k, computed)`` as each task ends, in the order they end."""
    try:
        import dask
        import distributed
    except ImportError:
        raise ImportError("backend 'dask' needs the optional extra: "
                          "pip install 'theory-verify[dask]'") from None
    with ExitStack() as stack:
        if client is None:
            client = os.environ.get(ENV_SCHEDULER) or None
        if client is None:
            # one task per worker thread at a time: a worker that dies holds no queued chunk
            with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
                cluster = stack.enter_context(distributed.LocalCluster(
                    processes=True, threads_per_worker=1, dashboard_address=None))
            client = stack.enter_context(distributed.Client(cluster))
        elif isinstance(client, str):
            client = stack.enter_context(distributed.Client(client))
        elif not isinstance(client, distributed.Client):
            raise ValueError(f"client: {client!r} must be a distributed.Client, a scheduler "
                             f"address or None")
        # one graph (map, not a submit per chunk): with more chunks than twice the worker
        # threads the scheduler queues them and hands a worker a new one only when it is free
        futures = dict(zip(client.map(partial(run_chunk, fn), chunks, pure=False),
                           range(len(chunks))))
        try:
            for future in distributed.as_completed(list(futures)):
                k = futures.pop(future)
                try:
                    computed = future.result()
                except Exception as exc:  # noqa: BLE001 - the chunk is lost, not the sweep
                    # run_chunk catches the point function's errors: what reaches here is the
                    # engine's (a dead worker, or a function the workers cannot import)
                    how = ("lost with its worker" if isinstance(exc, distributed.KilledWorker)
                           else "failed on the cluster")
                    computed = [Computed("error", f"{how}: {type(exc).__name__}: {exc}", 0.0,
                                         len(chunks[k]), "-") for _ in chunks[k]]
                finish(k, computed)
        finally:   # interrupted: leave nothing of this sweep running on a shared cluster
            for future in futures:
                future.cancel()


#: Seconds to wait for a named Dask scheduler before saying it cannot be reached.
CONNECT_TIMEOUT_S = 5.0


def describe_scheduler(address: str, timeout: float = CONNECT_TIMEOUT_S) -> str:
    """``Dask scheduler ADDRESS: N workers, T threads, dashboard URL``, asked of the scheduler
    itself; ``ConnectionError`` naming the address when it does not answer within
    ``timeout`` seconds (so a typo costs seconds, not a run)."""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:   # a plain socket first: a wrong address fails in milliseconds, not Dask's retries
        port = parts.port or 8786
        with socket.create_connection((parts.hostname or "localhost", port), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConnectionError(f"the Dask scheduler {address} cannot be reached ({why})"
                              ) from None
    import distributed

    try:
        with distributed.Client(address, timeout=f"{timeout}s") as client:
            workers = client.scheduler_info().get("workers", {})
            threads = sum(w.get("nthreads", 0) for w in workers.values())
            dashboard = client.dashboard_link or "none"
    except Exception as exc:  # noqa: BLE001 - whatever answered there, it is not a scheduler
        raise ConnectionError(f"the Dask scheduler {address} did not answer as one within "
                              f"{timeout:.0f} s ({type(exc).__name__})") from None
    return (f"Dask scheduler {address}: {len(workers)} workers, {threads} threads, "
            f"dashboard {dashboard}")


#: What :func:`stored_sweep` has done in this process: points computed, points read from the
#: store, and the seconds those stored points took when they were computed. A paper-size
#: reference made on a resumed run states its cost as this run's plus the stored points'.
_TALLY = {"computed": 0, "reused": 0, "reused_seconds": 0.0}


def sweep_tally() -> dict[str, float]:
    """A copy of this process's sweep tally (:data:`_TALLY`); subtract two to get a run's."""
    return dict(_TALLY)


def stored_sweep(fn: PointFunction, points: Iterable[Mapping[str, Any]], *, name: str,
                 batch_size: int = 1) -> list[dict[str, Any]]:
    """The sweeper of ``check`` (:class:`verify.hooks.Sweeper`): :func:`run_sweep` with the
    store and backend its environment names; the results in the points' order, or
    ``RuntimeError`` naming the points that failed."""
    report = run_sweep(fn, points, name=name, batch_size=batch_size)
    for o in report.outcomes:
        _TALLY["reused" if o.reused else "computed"] += 1
        _TALLY["reused_seconds"] += o.seconds if o.reused else 0.0
    if report.failed:
        raise failed_points(name, [(o.point, o.error) for o in report.failed],
                            len(report.outcomes))
    return report.results
