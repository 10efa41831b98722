r"""Evidence: one quantity computed by up to three routes and compared within a tolerance.

The three routes of every evidence item:

* ``stated``: what the paper's formula predicts (the claim as printed);
* ``derived``: the toolkit's own derivation from the definitions (sympy, or a numerical
  solve of the defining equations);
* ``measured``: a simulation, autograd, or a Monte Carlo estimate.

The discrepancy is the largest pairwise discrepancy among the routes present, so an item
fails when *any* two routes disagree; ``ok`` is computed, never given. Values are reduced to
JSON-ready summaries as soon as they are compared; the raw tensors are not kept.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import combinations
from typing import Any

import numpy as np
import sympy as sp
import torch

from theory import printing
from theory.identity import ZeroStatus, is_zero


class Route(str, Enum):
    SYMBOLIC = "symbolic"
    NUMERIC = "numeric"
    MONTE_CARLO = "monte-carlo"
    RATE = "rate"
    PROPERTY = "property"


METRICS = ("relative", "absolute")


@dataclass(frozen=True)
class Tolerance:
    """A tolerance and the reason for its size (finite-size error, step size, float precision)."""

    value: float
    why: str

    def __post_init__(self) -> None:
        if not (self.value >= 0 and math.isfinite(self.value)):
            raise ValueError(f"tolerance: {self.value} must be finite and >= 0")
        if not self.why.strip():
            raise ValueError("tolerance: every tolerance needs a reason (why)")


@dataclass(frozen=True)
class Evidence:
    """One compared quantity. Build it with :func:`compare` or :func:`symbolic_identity`."""

    route: Route
    quantity: str
    stated: Any
    derived: Any
    measured: Any
    metric: str
    discrepancy: float | None
    tolerance: Tolerance
    parameters: Mapping[str, Any]
    finite: bool
    comparisons: Mapping[str, float | None] = field(default_factory=dict)
    note: str = ""

    @property
    def ok(self) -> bool | None:
        """True/False when the routes were compared, None when undecided or non-finite."""
        if not self.finite or self.discrepancy is None:
            return None
        return self.discrepancy <= self.tolerance.value

    @property
    def ratio(self) -> float:
        """Discrepancy in units of the tolerance (inf when the tolerance is 0 and d > 0)."""
        if self.discrepancy is None or not self.finite:
            return math.inf
        if self.tolerance.value == 0:
            return 0.0 if self.discrepancy == 0 else math.inf
        return self.discrepancy / self.tolerance.value

    def as_record(self) -> dict[str, Any]:
        return {
            "route": self.route.value,
            "quantity": self.quantity,
            "stated": self.stated,
            "derived": self.derived,
            "measured": self.measured,
            "metric": self.metric,
            "discrepancy": json_float(self.discrepancy),
            "comparisons": {k: json_float(v) for k, v in self.comparisons.items()},
            "tolerance": self.tolerance.value,
            "tolerance_why": self.tolerance.why,
            "parameters": to_json_value(self.parameters),
            "finite": self.finite,
            "ok": self.ok,
            "note": self.note,
        }


def json_float(x: float | None) -> float | str | None:
    """JSON has no NaN/Inf: they are written as the strings 'nan', 'inf', '-inf'."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def to_json_value(value: Any) -> Any:
    """Plain-data summary of a number, array, tensor, sympy object or container."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return json_float(value)
    if isinstance(value, complex):
        return {"re": json_float(value.real), "im": json_float(value.imag)}
    if isinstance(value, (sp.Basic, sp.MatrixBase)):
        return {"latex": printing.latex(value), "sympy": printing.sympy_string(value)}
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, (torch.Tensor, np.ndarray)):
        a = _as_array(value)
        if a.size <= 16:
            if np.iscomplexobj(a):
                return {"re": to_json_value(a.real.tolist()), "im": to_json_value(a.imag.tolist())}
            return to_json_value(a.tolist())
        mags = np.abs(a)
        return {"shape": list(a.shape), "max_abs": json_float(np.max(mags)),
                "fro": json_float(np.sqrt(np.sum(mags**2)))}
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    return str(value)


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = value.to(torch.complex128 if value.is_complex() else torch.float64).numpy()
    a = np.asarray(value)
    if a.dtype == object:
        raise TypeError(f"cannot compare a value of type {type(value).__name__} numerically")
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _discrepancy(a: np.ndarray, b: np.ndarray, metric: str) -> float:
    if a.shape != b.shape:
        raise ValueError(f"compared values have shapes {a.shape} and {b.shape}")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    if metric == "absolute":
        return diff
    scale = max(float(np.max(np.abs(a))) if a.size else 0.0,
                float(np.max(np.abs(b))) if b.size else 0.0)
    return 0.0 if diff == 0 else diff / scale if scale > 0 else math.inf


def compare(
    route: Route,
    quantity: str,
    *,
    tolerance: Tolerance,
    stated: Any = None,
    derived: Any = None,
    measured: Any = None,
    parameters: Mapping[str, Any] | None = None,
    metric: str = "relative",
    note: str = "",
) -> Evidence:
    r"""Compare the routes given (at least two) numerically.

    ``relative``: :math:`\max|a-b| / \max(\max|a|, \max|b|)`, the max-norm relative error;
    ``absolute``: :math:`\max|a-b|`. NaN or Inf in any route makes the item non-finite
    (``ok`` is None), whatever the other routes say.
    """
    if metric not in METRICS:
        raise ValueError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    raw = {k: v for k, v in (("stated", stated), ("derived", derived), ("measured", measured))
           if v is not None}
    if len(raw) < 2:
        raise ValueError(f"compare({quantity!r}) needs at least two of stated/derived/measured")
    arrays = {k: _as_array(v) for k, v in raw.items()}
    finite = all(bool(np.all(np.isfinite(a))) for a in arrays.values())
    comparisons: dict[str, float | None] = {}
    for (na, a), (nb, b) in combinations(arrays.items(), 2):
        comparisons[f"{na}~{nb}"] = _discrepancy(a, b, metric) if finite else None
    discrepancy = max(comparisons.values()) if finite else None
    return Evidence(
        route=route, quantity=quantity,
        stated=to_json_value(stated), derived=to_json_value(derived),
        measured=to_json_value(measured), metric=metric, discrepancy=discrepancy,
        tolerance=tolerance, parameters=dict(parameters or {}), finite=finite,
        comparisons=comparisons, note=note)


EXACT = Tolerance(0.0, "exact identity: the difference must reduce to 0 in exact arithmetic")


def symbolic_identity(
    quantity: str,
    *,
    stated: Any,
    derived: Any,
    parameters: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
    note: str = "",
) -> Evidence:
    """Compare the paper's expression with the toolkit's derivation exactly (three-valued).

    A timeout or an undecidable difference gives ``ok = None`` (inconclusive), never a pass.
    """
    check = is_zero(sp.Matrix(stated) - sp.Matrix(derived)
                    if isinstance(stated, sp.MatrixBase) else stated - derived, timeout=timeout)
    discrepancy = {ZeroStatus.ZERO: 0.0, ZeroStatus.NONZERO: check.residual,
                   ZeroStatus.UNDECIDED: None}[check.status]
    detail = f"{check.status.value} by {check.method}"
    if check.witness:
        detail += f"; witness {check.witness}"
    return Evidence(
        route=Route.SYMBOLIC, quantity=quantity, stated=to_json_value(stated),
        derived=to_json_value(derived), measured=None, metric="exact",
        discrepancy=discrepancy, tolerance=EXACT, parameters=dict(parameters or {}),
        finite=True, comparisons={"stated~derived": discrepancy},
        note="; ".join(x for x in (note, detail) if x))


def _inequality(route: Route, quantity: str, measured: Any, bound: Any, tolerance: Tolerance,
                parameters: Mapping[str, Any] | None, note: str, direction: str) -> Evidence:
    m, b = _as_array(measured), _as_array(bound)
    if m.shape != b.shape:
        raise ValueError(f"{quantity!r}: shapes {m.shape} and {b.shape} differ")
    finite = bool(np.all(np.isfinite(m)) and np.all(np.isfinite(b)))
    discrepancy = None
    if finite:
        scale = np.maximum(np.maximum(np.abs(m), np.abs(b)), np.finfo(np.float64).tiny)
        excess = b - m if direction == ">=" else m - b
        discrepancy = float(np.max(np.maximum(excess, 0.0) / scale)) if m.size else 0.0
    slack = slack_text(m, b, direction) if finite else ""
    return Evidence(
        route=route, quantity=quantity, stated=to_json_value(bound), derived=None,
        measured=to_json_value(measured), metric="violation", discrepancy=discrepancy,
        tolerance=tolerance, parameters=dict(parameters or {}), finite=finite,
        comparisons={f"measured{direction}stated": discrepancy},
        note="; ".join(x for x in (note, slack) if x))


def slack_text(measured: np.ndarray, bound: np.ndarray, direction: str) -> str:
    r"""How far a one-sided bound is from the measured values: the larger side over the smaller
    (``bound / measured`` for ``measured <= bound``, ``measured / bound`` for ``>=``) at the
    tightest and the loosest entry, so 1 means the bound is attained and a weaker bound would
    still pass by that factor. Only where both sides are positive (a ratio of values of either
    sign, or of 0, says nothing about tightness).

    >>> slack_text(np.array([1.0, 2.0]), np.array([1.0, 3.0]), "<=")
    'slack bound/measured 1 (tightest, entry 0) to 1.5'
    >>> slack_text(np.array([0.0]), np.array([1.0]), "<=")
    ''
    """
    if not measured.size or not (np.all(measured > 0) and np.all(bound > 0)):
        return ""
    ratio = (bound / measured if direction == "<=" else measured / bound).ravel()
    name = "bound/measured" if direction == "<=" else "measured/bound"
    tight = int(np.argmin(ratio))
    where = f", entry {tight}" if ratio.size > 1 else ""
    text = f"slack {name} {ratio[tight]:.6g} (tightest{where})"
    return text + (f" to {ratio.max():.6g}" if ratio.size > 1 else "")


def at_least(
    route: Route,
    quantity: str,
    *,
    measured: Any,
    bound: Any,
    tolerance: Tolerance,
    parameters: Mapping[str, Any] | None = None,
    note: str = "",
) -> Evidence:
    r"""Check an inequality :math:`\text{measured} \ge \text{bound}` entry by entry (the bound is
    the paper's, the ``stated`` route). The discrepancy is the largest relative violation
    :math:`\max(0, (b - m)/\max(|m|, |b|))`, 0 when the inequality holds everywhere.
    """
    return _inequality(route, quantity, measured, bound, tolerance, parameters, note, ">=")


def at_most(
    route: Route,
    quantity: str,
    *,
    measured: Any,
    bound: Any,
    tolerance: Tolerance,
    parameters: Mapping[str, Any] | None = None,
    note: str = "",
) -> Evidence:
    r"""Check :math:`\text{measured} \le \text{bound}` entry by entry; the discrepancy is the
    largest relative excess :math:`\max(0, (m - b)/\max(|m|, |b|))`."""
    return _inequality(route, quantity, measured, bound, tolerance, parameters, note, "<=")


def undecided(
    route: Route,
    quantity: str,
    reason: str,
    *,
    tolerance: Tolerance,
    parameters: Mapping[str, Any] | None = None,
) -> Evidence:
    """An item that could not be measured here (e.g. below the dtype's roundoff floor).

    ``ok`` is None, so the claim is inconclusive with ``reason``, never passed or failed.
    """
    return Evidence(route=route, quantity=quantity, stated=None, derived=None, measured=None,
                    metric="none", discrepancy=None, tolerance=tolerance,
                    parameters=dict(parameters or {}), finite=True, comparisons={},
                    note=reason)


def worst(evidence: Sequence[Evidence]) -> Evidence | None:
    """The item furthest from its tolerance (the run's key figure)."""
    return max(evidence, key=lambda e: (e.ok is not True, e.ratio), default=None)


def compare_cases(
    route: Route,
    quantity: str,
    cases: Sequence[tuple[Mapping[str, Any], Any, Any]],
    *,
    tolerance: Tolerance,
    names: tuple[str, str] = ("stated", "measured"),
    parameters: Mapping[str, Any] | None = None,
) -> Evidence:
    """Compare two routes over many sampled configurations; the worst case decides.

    Each case is ``(config, a, b)``. Each pair is scaled by its own max-abs so the relative
    discrepancy of the item is the largest per-case relative discrepancy; the worst
    configuration is recorded in the note (the start of a counterexample search).
    """
    if not cases:
        raise ValueError(f"compare_cases({quantity!r}) needs at least one case")
    per_case, finite = [], True
    for config, a, b in cases:
        a, b = _as_array(a), _as_array(b)
        ok = bool(np.all(np.isfinite(a)) and np.all(np.isfinite(b)))
        finite &= ok
        per_case.append((_discrepancy(a, b, "relative") if ok else math.inf, config))
    d_worst, config_worst = max(per_case, key=lambda t: t[0])
    values = [d for d, _ in per_case]
    summary = {"cases": len(cases), "max": json_float(max(values)),
               "median": json_float(float(np.median(values)))}
    return Evidence(
        route=route, quantity=quantity,
        stated=summary if "stated" in names else None,
        derived=summary if "derived" in names else None,
        measured=summary if "measured" in names else None,
        metric="relative", discrepancy=d_worst if finite else None, tolerance=tolerance,
        parameters=dict(parameters or {}), finite=finite,
        comparisons={"~".join(names): d_worst if finite else None},
        note=f"worst of {len(cases)} sampled cases at {to_json_value(config_worst)}")
