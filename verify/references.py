"""Reference results: a claim's verdict at the paper's size, made once on a stated machine and
committed beside the code, so that a quick (toy-size) verdict is never read alone.

A reference is one JSON file, ``verify/references/<claim id>.json``: the claim's full record
(as ``check --json`` writes it) and its provenance (the git revision, the digest of the claim
code it was made by, the machine, torch and its threads, the seed, dtype and device, CPU and
wall seconds and the load beside them, the sizes). ``theory-verify reference ID`` makes one;
``check`` shows it beside the verdict it has just computed:

    li2.eq6   pass   42.0 deg < 45 deg ...
      paper size: fail (reference, full, 2026-12-07, rev cbac5f2)

A reference is **stale** when the claim code it was made by has changed since
(:func:`verify.code_closure.claim_code_digest`: the claim's module, its paper's shared
modules and the numerics and theory they call; the toolkit's machinery is left out). A stale
reference is still shown, marked so. A verdict that differs from its reference is a
**contradiction**: the diagnosis leads with it (toy size and paper size disagree).
"""
from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.code_closure import claim_code_digest

FOLDER = Path(__file__).resolve().parent / "references"
SCHEMA = 1
#: The fidelity a reference is made at: the paper's sizes.
FIDELITY = "full"


class ReferenceError(ValueError):
    """A reference file that cannot be read: names the file and what is wrong."""


def path_of(claim_id: str, folder: Path | None = None) -> Path:
    """Where ``claim_id``'s reference lies (``folder`` default: :data:`FOLDER`)."""
    return (FOLDER if folder is None else Path(folder)) / f"{claim_id}.json"


@dataclass(frozen=True)
class Reference:
    claim: str
    fidelity: str
    verdict: str
    diagnosis: str
    made: str                   # ISO date
    revision: str | None
    code: str                   # claim_code_digest at the time
    module: str                 # the claim's module
    provenance: dict[str, Any]
    record: dict[str, Any]

    @property
    def stale(self) -> bool:
        """Whether the claim code has changed since the reference was made."""
        try:
            return claim_code_digest(self.module) != self.code
        except (OSError, SyntaxError):
            return True

    def summary(self) -> dict[str, Any]:
        """What a results record carries of its reference."""
        return {"verdict": self.verdict, "fidelity": self.fidelity, "made": self.made,
                "revision": self.revision, "stale": self.stale, "diagnosis": self.diagnosis,
                "cpu_seconds": self.provenance.get("cpu_seconds"),
                "stored_seconds": (self.provenance.get("sweep_points") or {}).get(
                    "reused_seconds"),
                "sizes": self.provenance.get("sizes_text")}


def summary_text(summary: Mapping[str, Any], *, label: bool = True) -> str:
    """``paper size: fail (reference, full, 2026-12-07, rev cbac5f2)`` (without its first two
    words when not ``label``) and ``; stale: the claim code changed since`` where it is."""
    rev = (summary.get("revision") or "no revision")[:7]
    text = (f"{'paper size: ' if label else ''}{summary['verdict']} (reference, "
            f"{summary['fidelity']}, {summary['made']}, rev {rev})")
    return text + ("; stale: the claim code changed since" if summary.get("stale") else "")


def load(claim_id: str, folder: Path | None = None) -> Reference | None:
    """The reference of ``claim_id``, None when there is none; :class:`ReferenceError` naming
    the file and the field when it is malformed."""
    path = path_of(claim_id, folder)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReferenceError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ReferenceError(f"{path}: schema must be {SCHEMA}")
    try:
        ref = Reference(claim=data["claim"], fidelity=data["fidelity"],
                        verdict=data["record"]["verdict"],
                        diagnosis=data["record"].get("diagnosis", ""), made=data["made"],
                        revision=data["provenance"].get("revision"), code=data["code"],
                        module=data["module"], provenance=data["provenance"],
                        record=data["record"])
    except (KeyError, TypeError) as exc:
        raise ReferenceError(f"{path}: field {exc} is missing") from None
    if ref.claim != claim_id or ref.record.get("id") != claim_id:
        raise ReferenceError(f"{path}: holds {ref.claim!r}, not {claim_id!r}")
    return ref


def machine() -> dict[str, Any]:
    """The CPU (model name, cores) and the platform a reference was made on."""
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh
                          if line.startswith("model name")), None)
    except OSError:
        pass
    return {"cpu": model or platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "platform": platform.platform()}


def sizes_text(parameters: Mapping[str, Any], limit: int = 160) -> str:
    """The scalar sizes of a run's parameters (``M=71, K=2048, ...``), cut to ``limit``."""
    keys = ("group", "groups", "M", "K", "n", "p", "epochs", "seeds", "lr", "eta")
    parts = [f"{k}={parameters[k]}" for k in keys if k in parameters
             and isinstance(parameters[k], (int, float, str, list, tuple))]
    text = ", ".join(parts) or "see the record's parameters"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def save(record: Mapping[str, Any], *, module: str, run: Mapping[str, Any],
         cpu_seconds: float | None, wall_seconds: float, load: Mapping[str, Any],
         made: str, folder: Path | None = None,
         sweep_points: Mapping[str, float] | None = None) -> Path:
    """Write ``record`` (a diagnosed claim record at :data:`FIDELITY`) as its claim's
    reference, with the provenance from ``run`` (the results JSON's run block: versions,
    device and threads, seed, dtype, git) and the measured times and load.
    ``sweep_points``: the run's training points computed and read from the store
    (:func:`verify.sweep.sweep_tally`), so a resumed run's cost is stated whole:
    ``cpu_seconds`` and ``wall_seconds`` are this run's, ``reused_seconds`` what the stored
    points took when they were computed."""
    if record.get("fidelity") != FIDELITY:
        raise ValueError(f"record: fidelity {record.get('fidelity')!r}; a reference is made "
                         f"at {FIDELITY!r}")
    git = run.get("git") or {}
    device = run.get("device") or {}
    provenance = {
        "revision": git.get("revision"), "dirty": git.get("dirty"),
        "machine": machine(), "device": device.get("type"),
        "torch": (run.get("versions") or {}).get("torch"),
        "threads": device.get("torch_threads"), "seed": run.get("seed"),
        "dtype": run.get("dtype"), "versions": run.get("versions"),
        "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 1),
        "wall_seconds": round(wall_seconds, 1), "load": dict(load),
        "sizes_text": sizes_text(record.get("parameters") or {}),
        **({"sweep_points": {k: round(v, 1) for k, v in sweep_points.items()}}
           if sweep_points and sweep_points.get("reused") else {}),
    }
    data = {"schema": SCHEMA, "claim": record["id"], "fidelity": record["fidelity"],
            "made": made, "module": module, "code": claim_code_digest(module),
            "provenance": provenance, "record": dict(record)}
    path = path_of(record["id"], folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return path


def attach(record: dict[str, Any], folder: Path | None = None) -> dict[str, Any]:
    """``record`` with its claim's reference summary under ``"reference"`` when there is one
    made at another fidelity than the record's (a full run is its own reference)."""
    ref = load(record["id"], folder)
    if ref is None or ref.fidelity == record.get("fidelity"):
        return record
    return {**record, "reference": ref.summary()}


def contradicts(record: Mapping[str, Any]) -> bool:
    """Whether a decided verdict (pass / fail) differs from its decided reference."""
    ref = record.get("reference")
    decided = ("pass", "fail")
    return (isinstance(ref, Mapping) and record.get("verdict") in decided
            and ref.get("verdict") in decided and ref["verdict"] != record["verdict"])


def cpu_seconds_used() -> float:
    """CPU seconds (user + system) of this process and its waited-for children so far."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def load_average() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1min": round(one, 2), "5min": round(five, 2), "15min": round(fifteen, 2)}
