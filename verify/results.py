"""Results of a run and their JSON form (documented in the README, ``schema_version`` 1)."""
from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.evidence import Evidence, json_float, to_json_value
from verify.hooks import render_html
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
class ReadingResult:
    """The check under one alternative reading (:class:`verify.claim.Reading`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    verdict: Verdict
    reason: str
    evidence: list[Evidence] = field(default_factory=list)
    assumptions: list[AssumptionOutcome] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        """Every item; the results JSON keeps those the reading decides on, after its
        diagnosis has read them all (``verify.diagnosis.diagnosed``)."""
        record = {"name": self.name, "description": self.description,
                  "parameters": to_json_value(self.parameters),
                  "verdict": self.verdict.value, "reason": self.reason,
                  "evidence": [e.as_record() for e in self.evidence],
                  "assumptions": [a.as_record() for a in self.assumptions]}
        record["key_figure"] = _key_figure(self.evidence)
        return record


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
    #: One per alternative reading when they were checked; None when they were not.
    readings: list[ReadingResult] | None = None

    @property
    def id(self) -> str:
        return self.claim["id"]

    @property
    def inside_assumptions(self) -> bool:
        """Whether every assumption of the claim's own setting held (probes and the
        simulations' own health, ``Run.ran``, excluded)."""
        return all(a.holds for a in self.assumptions if not a.probe and a.source != "ran")

    def key_figure(self) -> dict[str, Any] | None:
        return _key_figure(self.evidence)

    def key_figure_text(self) -> str:
        return key_figure_text(self.key_figure(), self.reason)

    def _repr_html_(self) -> str | None:
        """Jupyter: the claim's report section (evidence, derivations, plots), once
        :mod:`verify.report` is imported (:mod:`verify.hooks`)."""
        return render_html("result", self.as_record())

    def _repr_latex_(self) -> str:
        return f"$$ {self.claim['statement']} $$"

    def as_record(self) -> dict[str, Any]:
        """The claim's entry of the results JSON, less the one-line diagnosis the services
        add (``verify.diagnosis.diagnosed``)."""
        record = {
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
        # Readings not checked (``run_claim(readings=False)``) leave no verdicts to show.
        record.pop("readings", None)
        if self.readings is not None:
            record["readings"] = [r.as_record() for r in self.readings]
        return record


def _key_figure(evidence: Sequence[Evidence]) -> dict[str, Any] | None:
    e = key_item(evidence)
    if e is None:
        return None
    return {"quantity": e.quantity, "route": e.route.value,
            "discrepancy": json_float(e.discrepancy), "tolerance": e.tolerance.value,
            "metric": e.metric, "finite": e.finite}


def key_item(evidence: Sequence[Evidence]) -> Evidence | None:
    """The run's key figure: a failing item first (the one furthest beyond its tolerance),
    else an undecided or non-finite one, else the passing item closest to its tolerance."""
    def rank(e: Evidence) -> tuple[int, float]:
        return (2 if e.ok is False else 1 if e.ok is None else 0, e.ratio)

    return max(evidence, key=rank, default=None)


def compared_texts(discrepancy: float, tolerance: float) -> tuple[str, str]:
    """``discrepancy`` and ``tolerance`` in scientific notation with the fewest significant
    digits (two at least for the discrepancy; the tolerance's own, up to two) that keep
    ``discrepancy <= tolerance`` as true or false as it is: 42 against 45 prints ``4.2e+01``
    and ``4.5e+01``, not ``4e+01``."""
    holds = discrepancy <= tolerance
    first = next((p for p in range(2) if math.isclose(float(f"{tolerance:.{p}e}"), tolerance,
                                                     rel_tol=1e-9)), 1)
    for more in range(16):  # from the tolerance's own digits (45 is 4.5e+01, not 4e+01)
        d_text, t_text = f"{discrepancy:.{1 + more}e}", f"{tolerance:.{first + more}e}"
        if (float(d_text) <= float(t_text)) == holds:
            return d_text, t_text
    return repr(float(discrepancy)), repr(float(tolerance))


def key_figure_text(key_figure: dict[str, Any] | None, reason: str) -> str:
    """One line for a result's key evidence item (the reason when there is none)."""
    if key_figure is None:
        return reason
    d, tol = key_figure["discrepancy"], key_figure["tolerance"]
    if not key_figure.get("finite", True):
        text, tol_text = "non-finite", f"{tol:.0e}"
    elif d is None or isinstance(d, str):
        text, tol_text = "undecided" if d is None else d, f"{tol:.0e}"
    else:
        text, tol_text = compared_texts(d, tol)
    return f"{key_figure['quantity']}: {text} (tol {tol_text})"


def verdict_summary(claims: Sequence[dict[str, Any]]) -> dict[str, int]:
    """A results file's ``summary``: how many of ``claims`` have each verdict."""
    counts = Counter(c["verdict"] for c in claims)
    return {v.value: counts.get(v.value, 0) for v in Verdict}


def run_record(metadata: dict[str, Any], claims: list[dict[str, Any]], *, started: str,
               finished: str) -> dict[str, Any]:
    """The results JSON of a run, from the claims' records (``ClaimResult.as_record``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {**metadata, "started": started, "finished": finished},
        "summary": verdict_summary(claims),
        "claims": list(claims),
    }


def merge_runs(previous: Any, record: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
    """``record`` (a run of some claims) merged into ``previous`` (an earlier results file):
    the same ids replaced, the other claims kept, the summary recounted; the run metadata is
    the new run's. None when ``previous`` is not a results file of the same fidelity, seed,
    dtype and device type (then the new record is written anew). Also returns how many
    earlier claims were kept."""
    if not (isinstance(previous, dict) and previous.get("schema_version") == SCHEMA_VERSION
            and isinstance(previous.get("run"), dict)
            and isinstance(previous.get("claims"), list)
            and all(isinstance(c, dict) and "id" in c and "verdict" in c
                    for c in previous["claims"])):
        return None
    old, new = previous["run"], record["run"]
    if any(old.get(k) != new.get(k) for k in ("fidelity", "seed", "dtype")):
        return None
    if (old.get("device") or {}).get("type") != (new.get("device") or {}).get("type"):
        return None
    fresh = {c["id"]: c for c in record["claims"]}
    claims, kept = [], 0
    for c in previous["claims"]:
        if c["id"] in fresh:
            claims.append(fresh.pop(c["id"]))
        else:
            claims.append(c)
            kept += 1
    claims.extend(fresh.values())
    return {**record, "summary": verdict_summary(claims), "claims": claims}, kept


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
