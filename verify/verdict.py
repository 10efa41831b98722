"""Verdicts, computed from evidence; never set by hand."""
from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from verify.evidence import Evidence


class Verdict(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    SKIPPED = "skipped"


def _names(items: Sequence[Evidence]) -> str:
    return "; ".join(f"{e.quantity} [{e.route.value}]" for e in items)


def verdict_from_evidence(evidence: Sequence[Evidence]) -> tuple[Verdict, str]:
    """pass only when every item agrees; NaN/Inf anywhere gives inconclusive, never pass.

    Order: no evidence -> inconclusive; any non-finite item -> inconclusive (a broken
    simulation voids the comparison it took part in, and a failure beside it may be the same
    breakage); any disagreeing item -> fail; any undecided item -> inconclusive; else pass.
    """
    if not evidence:
        return Verdict.INCONCLUSIVE, "the check returned no evidence"
    nonfinite = [e for e in evidence if not e.finite]
    if nonfinite:
        return Verdict.INCONCLUSIVE, f"non-finite values (NaN/Inf) in: {_names(nonfinite)}"
    failed = [e for e in evidence if e.ok is False]
    if failed:
        return Verdict.FAIL, f"routes disagree beyond tolerance in: {_names(failed)}"
    undecided = [e for e in evidence if e.ok is None]
    if undecided:
        detail = "; ".join(f"{e.quantity} [{e.route.value}]" + (f" ({e.note})" if e.note else "")
                           for e in undecided)
        return Verdict.INCONCLUSIVE, f"undecided: {detail}"
    return Verdict.PASS, f"all {len(evidence)} evidence items agree within tolerance"


def apply_ran(verdict: Verdict, reason: str, broken: Sequence[Any]) -> tuple[Verdict, str]:
    """A simulation that did not do what the check needs (``Run.ran`` false) makes a pass or
    a fail ``inconclusive``: its evidence compares numbers from a broken run (and an
    inconclusive one says so first, rather than naming what the broken run left undecided)."""
    if not broken or verdict not in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE):
        return verdict, reason
    what = "; ".join(f"{b.name}" + (f" ({b.detail})" if b.detail else "") for b in broken)
    return (Verdict.INCONCLUSIVE,
            f"the simulation did not do what the check needs: {what} (it would have been "
            f"{verdict.value})")


def apply_negative_control(verdict: Verdict, reason: str, rejected: bool) -> tuple[Verdict, str]:
    """A pass whose planted wrong variant also passes shows a check with no power."""
    if verdict is Verdict.PASS and not rejected:
        return (Verdict.INCONCLUSIVE,
                "the check has no power: its negative control was not rejected")
    return verdict, reason
