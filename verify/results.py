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
                "metric": e.metric, "finite": e.finite}

    def key_figure_text(self) -> str:
        return key_figure_text(self.key_figure(), self.reason)

    def _repr_html_(self) -> str:
        """Jupyter: the claim's report section (evidence, derivations, plots)."""
        from verify.report.html import claim_section
        return claim_section(self.as_record())

    def _repr_latex_(self) -> str:
        return f"$$ {self.claim['statement']} $$"

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


def key_figure_text(key_figure: dict[str, Any] | None, reason: str) -> str:
    """One line for a result's worst evidence item (the reason when there is none)."""
    if key_figure is None:
        return reason
    d = key_figure["discrepancy"]
    text = "undecided" if d is None else d if isinstance(d, str) else f"{d:.1e}"
    if not key_figure.get("finite", True):
        text = "non-finite"
    return f"{key_figure['quantity']}: {text} (tol {key_figure['tolerance']:.0e})"


def run_record(metadata: dict[str, Any], claims: list[dict[str, Any]], *, started: str,
               finished: str) -> dict[str, Any]:
    """The results JSON of a run, from the claims' records (``ClaimResult.as_record``)."""
    counts = Counter(c["verdict"] for c in claims)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {**metadata, "started": started, "finished": finished},
        "summary": {v.value: counts.get(v.value, 0) for v in Verdict},
        "claims": list(claims),
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
