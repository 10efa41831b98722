"""Run a claim's check (and its negative control) and turn the evidence into a verdict."""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import torch

from numerics.device import resolve_device, verification_precision
from numerics.errors import Diverged
from verify.claim import FIDELITIES, Claim, SkipClaim
from verify.evidence import Evidence
from verify.results import ClaimResult, ControlResult
from verify.run import AssumptionOutcome, Run
from verify.verdict import Verdict, apply_negative_control, verdict_from_evidence

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def parse_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"dtype: {name!r} is not one of {', '.join(DTYPES)}")
    return DTYPES[name]


def _execute(claim: Claim, run: Run) -> tuple[list[Evidence], Verdict | None, str]:
    """Run the check; an exception becomes a verdict (skipped, inconclusive, error)."""
    try:
        evidence = list(claim.check(run))
    except SkipClaim as exc:
        return [], Verdict.SKIPPED, str(exc)
    except Diverged as exc:
        return [], Verdict.INCONCLUSIVE, f"simulation diverged: {exc}"
    return evidence, None, ""


def run_claim(
    claim: Claim,
    *,
    fidelity: str = "quick",
    device: str | torch.device = "auto",
    dtype: str | torch.dtype = "float64",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    control: bool = True,
) -> ClaimResult:
    """Check ``claim`` and, unless ``control=False``, its negative control.

    The verdict is computed from the evidence. A check that raises gives ``error`` with the
    traceback recorded; bad arguments (fidelity, dtype, device, seed) raise ``ValueError``.
    """
    if fidelity not in FIDELITIES:
        raise ValueError(f"fidelity: {fidelity!r} is not one of {', '.join(FIDELITIES)}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: {seed!r} must be a non-negative integer")
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    dt = dtype if isinstance(dtype, torch.dtype) else parse_dtype(dtype)
    verification_precision()
    params = {**claim.parameters[fidelity], **(overrides or {})}
    assumptions = [AssumptionOutcome(a.name, a.description, bool(a.holds(params)), "parameters")
                   for a in claim.assumptions]

    def make_run(stated: Mapping[str, Callable[..., Any]], is_control: bool) -> Run:
        return Run(claim_id=claim.id, fidelity=fidelity, params=params, stated=stated,
                   seed=seed, device=dev, dtype=dt, is_control=is_control)

    start = time.perf_counter()
    run = make_run(claim.stated, False)
    error = None
    try:
        evidence, forced, reason = _execute(claim, run)
    except Exception:  # noqa: BLE001 - any failure of a check is reported, not raised
        evidence, forced = [], Verdict.ERROR
        error = traceback.format_exc()
        reason = error.strip().splitlines()[-1]
    verdict, why = (forced, reason) if forced else verdict_from_evidence(evidence)

    control_result = None
    if control and forced is None:
        ctl_run = make_run({**claim.stated, **claim.control.stated}, True)
        try:
            ctl_evidence, ctl_forced, ctl_reason = _execute(claim, ctl_run)
            ctl_verdict, ctl_why = ((ctl_forced, ctl_reason) if ctl_forced
                                    else verdict_from_evidence(ctl_evidence))
        except Exception:  # noqa: BLE001
            ctl_evidence, ctl_verdict = [], Verdict.ERROR
            ctl_why = traceback.format_exc().strip().splitlines()[-1]
        rejected = ctl_verdict is Verdict.FAIL
        control_result = ControlResult(claim.control.description, rejected, ctl_verdict,
                                       ctl_why, ctl_evidence)
        verdict, why = apply_negative_control(verdict, why, rejected)

    return ClaimResult(
        claim=claim.describe(), fidelity=fidelity, parameters=params, seed=seed,
        device=str(dev), dtype=str(dt).removeprefix("torch."), verdict=verdict, reason=why,
        seconds=time.perf_counter() - start, evidence=evidence,
        assumptions=assumptions + run.data_assumptions, control=control_result,
        derivations=[{"title": d.title, "steps": d.as_records()} for d in run.derivations],
        figures=run.figures, error=error)
