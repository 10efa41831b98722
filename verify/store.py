"""The results store: every claim result a ``check`` produced, in SQLite (WAL), so a rerun
reuses what did not change and an interrupted run continues where it stopped.

A result is keyed by what determines it: the claim id, its parameters, fidelity, seed, dtype,
device type, the package versions, and a fingerprint of the code (the toolkit's sources and the
claim's own module). Any change to one of them is a different key, so a stored result is reused
only where rerunning would compute the same thing.

Each result is committed in its own transaction the moment its claim finishes; a run killed
mid-way keeps every claim it finished. WAL mode with a busy timeout lets several processes
write at once (SQLite serialises the writers; readers never block).
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from verify.claim import Claim
from verify.evidence import to_json_value

DEFAULT_PATH = "theory-verify.sqlite"
#: Environment variable that moves the default store; ``off`` disables it.
ENV = "THEORY_VERIFY_STORE"
SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    claim_id TEXT NOT NULL,
    fidelity TEXT NOT NULL,
    seed INTEGER NOT NULL,
    dtype TEXT NOT NULL,
    device TEXT NOT NULL,
    parameters TEXT NOT NULL,
    code TEXT NOT NULL,
    revision TEXT,
    verdict TEXT NOT NULL,
    seconds REAL NOT NULL,
    recorded TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_key ON results(key);
CREATE INDEX IF NOT EXISTS results_claim ON results(claim_id);
CREATE TABLE IF NOT EXISTS evidence (
    result_id INTEGER NOT NULL REFERENCES results(id),
    position INTEGER NOT NULL,
    route TEXT NOT NULL,
    quantity TEXT NOT NULL,
    discrepancy REAL,
    tolerance REAL NOT NULL,
    ok INTEGER,
    PRIMARY KEY (result_id, position)
);
"""
#: Seconds a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0


@cache
def package_sources_digest() -> str:
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for package in ("theory", "numerics", "verify"):
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return repr(obj)


def code_fingerprint(claim: Claim) -> str:
    """A digest of the toolkit's sources, of the module that defines ``claim`` and of its
    check and stated forms (two claims planted under one id in one module differ here).

    All the sources, unlike a sweep point's key (:func:`verify.sweep.code_fingerprint`): a
    record holds what the kernel computed from the evidence (verdict, diagnosis), and a
    training claim's rerun reuses its stored sweep points, where its time goes."""
    h = hashlib.sha256(package_sources_digest().encode())
    source = inspect.getsourcefile(claim.check)
    if source and Path(source).exists():
        h.update(Path(source).read_bytes())
    for name in sorted(claim.stated):
        h.update(name.encode() + _source(claim.stated[name]).encode())
    h.update(_source(claim.check).encode())
    return h.hexdigest()[:20]


def result_key(claim: Claim, *, parameters: Mapping[str, Any], fidelity: str, seed: int,
               dtype: str, device: str, versions: Mapping[str, Any], threads: int) -> str:
    """The key under which a result of ``claim`` in this setting is stored. ``threads`` (the
    torch intra-op threads it runs with) is part of it: a reduction split over more threads
    sums in another order, and a figure can move with it."""
    parts = {"claim": claim.id, "parameters": to_json_value(dict(parameters)),
             "fidelity": fidelity, "seed": seed, "dtype": dtype, "device": device,
             "versions": dict(versions), "code": code_fingerprint(claim), "threads": threads}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _real(x: Any) -> float | None:
    """Discrepancies come as JSON ('inf', 'nan' as strings); SQLite stores inf, NaN as NULL."""
    return None if x is None or x == "nan" else float(x)


class StoreError(ValueError):
    """A store that cannot be read as one (a row that is not JSON): one line, naming it."""


class StoreWriteError(OSError):
    """A result that could not be written (disk full, read-only file): the original sqlite
    error in one line; the rows stored before are intact (the transaction is rolled back)."""


@dataclass(frozen=True)
class StoredResult:
    """A result read back from the store: the record ``ClaimResult.as_record`` wrote."""

    record: dict[str, Any]
    recorded: str
    revision: str | None

    @property
    def id(self) -> str:
        return self.record["id"]

    @property
    def verdict(self) -> str:
        return self.record["verdict"]


class ResultStore:
    """An SQLite file of claim results (see the module docstring)."""

    def __init__(self, path: str | Path = DEFAULT_PATH) -> None:
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise ValueError(f"store: {self.path} is a directory, not a database file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with closing(self._connect()) as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"store: {self.path} is not a results database ({exc})") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return db

    def put(self, key: str, record: Mapping[str, Any], *, revision: str | None) -> int:
        """Store one claim result (one transaction); returns its row id."""
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                cur = db.execute(
                    "INSERT INTO results (key, claim_id, fidelity, seed, dtype, device, "
                    "parameters, code, revision, verdict, seconds, record) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, record["id"], record["fidelity"], record["seed"], record["dtype"],
                     record["device"], json.dumps(record["parameters"], sort_keys=True),
                     key[:20], revision, record["verdict"], record["seconds"],
                     json.dumps(record)))
                row = cur.lastrowid
                db.executemany(
                    "INSERT INTO evidence VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(row, i, e["route"], e["quantity"], _real(e.get("discrepancy")),
                      e["tolerance"], None if e.get("ok") is None else int(e["ok"]))
                     for i, e in enumerate(record.get("evidence", []))])
                db.execute("COMMIT")
            except BaseException as exc:
                # SQLite rolls a transaction back by itself on some errors (SQLITE_FULL,
                # SQLITE_IOERR); a second ROLLBACK would then hide the real error behind
                # "cannot rollback - no transaction is active".
                if db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreWriteError(f"store: cannot write the result of {record['id']} "
                                          f"to {self.path} ({exc})") from exc
                raise
        return row

    def _stored(self, row_id: int, record: Any, recorded: str, revision: str | None
                ) -> StoredResult:
        """A row read back; :class:`StoreError` naming the row when its record is not a
        JSON object with an id and a verdict."""
        try:
            value = json.loads(record)
        except (TypeError, ValueError):
            raise StoreError(f"store: row {row_id} of {self.path} is not JSON") from None
        if not (isinstance(value, dict) and isinstance(value.get("id"), str)
                and isinstance(value.get("verdict"), str)):
            raise StoreError(f"store: row {row_id} of {self.path} is not a claim result "
                             f"(a JSON object with id and verdict)")
        return StoredResult(value, recorded, revision)

    def latest(self, key: str) -> StoredResult | None:
        """The newest result stored under ``key``, if any."""
        with closing(self._connect()) as db:
            row = db.execute("SELECT id, record, recorded, revision FROM results WHERE key = ? "
                             "ORDER BY id DESC LIMIT 1", (key,)).fetchone()
        return None if row is None else self._stored(*row)

    def history(self, claim_id: str) -> Iterator[StoredResult]:
        """Every stored result of ``claim_id``, oldest first."""
        with closing(self._connect()) as db:
            rows = db.execute("SELECT id, record, recorded, revision FROM results "
                              "WHERE claim_id = ? ORDER BY id", (claim_id,)).fetchall()
        for row in rows:
            yield self._stored(*row)

    def latest_per_claim(self) -> list[StoredResult]:
        """The newest stored result of every claim (for a report built from the store)."""
        with closing(self._connect()) as db:
            rows = db.execute("SELECT id, record, recorded, revision FROM results WHERE id IN "
                              "(SELECT MAX(id) FROM results GROUP BY claim_id) "
                              "ORDER BY claim_id").fetchall()
        return [self._stored(*row) for row in rows]

    def integrity(self) -> str:
        """SQLite's own integrity check ('ok' when the file is sound)."""
        with closing(self._connect()) as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]
