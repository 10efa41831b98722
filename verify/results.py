"""Results of a run and their JSON form (documented in the README, ``schema_version`` 1)."""
from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.evidence import Evidence, json_float, to_json_value, worst
from verify.run import AssumptionOutcome
from verify.verdict import Verdict

SCHEMA_VERSION = 1


@dataclass
class ControlResult:
    """The negative control's run: what was planted and whether the check rejected it."""

    description: str
    rejected: bool
    verdict: Verdict
    reason: str
    evidence: list[Evidence] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return {"description": self.description, "rejected": self.rejected,
                "verdict_of_variant": self.verdict.value, "reason": self.reason,
                "evidence": [e.as_record() for e in self.evidence]}


@dataclass
class ClaimResult:
    claim: dict[str, Any]  # Claim.describe()
    fidelity: str
    parameters: dict[str, Any]
    seed: int
    device: str
    dtype: str
    verdict: Verdict
    reason: str
    seconds: float
    evidence: list[Evidence] = field(default_factory=list)
    assumptions: list[AssumptionOutcome] = field(default_factory=list)
    control: ControlResult | None = None
    derivations: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def id(self) -> str:
        return self.claim["id"]

    @property
    def inside_assumptions(self) -> bool:
        """Whether every assumption of the claim's own setting held (probes excluded)."""
        return all(a.holds for a in self.assumptions if not a.probe)

    def key_figure(self) -> dict[str, Any] | None:
        e = worst(self.evidence)
        if e is None:
            return None
        return {"quantity": e.quantity, "route": e.route.value,
                "discrepancy": json_float(e.discrepancy), "tolerance": e.tolerance.value,
                "metric": e.metric}

    def key_figure_text(self) -> str:
        e = worst(self.evidence)
        if e is None:
            return self.reason
        d = "undecided" if e.discrepancy is None else f"{e.discrepancy:.1e}"
        if not e.finite:
            d = "non-finite"
        return f"{e.quantity}: {d} (tol {e.tolerance.value:.0e})"

    def as_record(self) -> dict[str, Any]:
        return {
            **self.claim,
            "fidelity": self.fidelity,
            "parameters": to_json_value(self.parameters),
            "seed": self.seed,
            "device": self.device,
            "dtype": self.dtype,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "key_figure": self.key_figure(),
            "seconds": round(self.seconds, 4),
            "assumptions": [a.as_record() for a in self.assumptions],
            "inside_assumptions": self.inside_assumptions,
            "evidence": [e.as_record() for e in self.evidence],
            "negative_control": self.control.as_record() if self.control else None,
            "derivations": self.derivations,
            "figures": self.figures,
            "error": self.error,
        }


def run_record(metadata: dict[str, Any], results: list[ClaimResult], *, started: str,
               finished: str) -> dict[str, Any]:
    counts = Counter(r.verdict.value for r in results)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {**metadata, "started": started, "finished": finished},
        "summary": {v.value: counts.get(v.value, 0) for v in Verdict},
        "claims": [r.as_record() for r in results],
    }


def write_json(record: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write atomically: an interrupted write never leaves a half file over earlier results."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, allow_nan=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide results from co-workers
        with os.fdopen(fd, "w") as fh:
            fh.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
