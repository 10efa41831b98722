r"""Mutation testing of a claim's stated forms: does the check notice a wrong formula?

The negative control plants one wrong variant by hand. :func:`mutate` plants many, each one
operator applied to what one stated form returns (the callables in ``Claim.stated``):

* ``scale``: :math:`1.05\,v`, a wrong constant;
* ``nudge``: :math:`(1+10^{-3})\,v`, a small wrong constant (survives any tolerance above
  :math:`10^{-3}`, which Monte Carlo and rate checks justify: expect survivors there);
* ``sign``: :math:`-v`, a flipped sign;
* ``power``: :math:`\operatorname{sign}(v)\,|v|^{1.1}`, a wrong exponent (``v**(11/10)``
  on sympy expressions).

Numbers, sympy expressions and matrices, numpy arrays and torch tensors are mutated, and
tuples, lists and dicts of them element by element; a form that returns anything else (a
yes/no value: a bool, a sympy truth value or relation, a bool array; a string) has no mutant
of that kind ("not applicable", whatever the check did with the refusal).

A mutant is **killed** when an evidence item that agreed at the baseline (the unmutated claim,
same seed and setting) now disagrees, when the mutant's run yields a disagreeing item the
baseline does not have (on a failing baseline too), or when the check raises on it;
**survived** when no item turns; **undecided** when it only turns items undecided; **masked**
when the only items it moves already disagree at the baseline (the claim fails there as
printed, so a wrong variant of the same form cannot fail it further: the check reads the
form, and has shown it wrong) or were already undecided there (the setting cannot decide the
form either way).
A claim declares the survivors that are right to survive in ``Claim.equivalent_mutants``
(``"form:operator"`` or ``"form:*"`` ->
a short reason, e.g. ``"order-only: the check compares slopes"``); those are reported as
**equivalent**, and so is a mutant that changed none of the values its form returned in the
run (a sign flip of zeros, a power of ones: equivalent by construction). A survivor that is
neither is a gap in the check.

Mutants reuse the baseline's memoised simulations wherever a route does not read the
mutated form (``run.memo`` keys hold the stated functions a route uses), so a mutant costs
about what the negative control costs.

>>> mutate_value(2.0, "scale"), mutate_value((1, -8.0), "power")[1] < -8.0
(2.1, True)
"""
from __future__ import annotations

import dataclasses
import math
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verify.claim import Claim
from verify.results import ClaimResult
from verify.runner import run_claim
from verify.sweep import stored_sweep
from verify.verdict import Verdict

OPERATORS = ("scale", "nudge", "sign", "power")
#: The operators whose mutants no justified tolerance should let through (``nudge`` is
#: inside Monte Carlo and rate tolerances by design): what the CI tier plants.
STRICT = ("scale", "sign", "power")
STATUSES = ("killed", "masked", "survived", "equivalent", "undecided", "not applicable")
#: Seconds to decide whether a sympy mutant equals its original (:func:`_same`).
SAME_TIMEOUT = 5.0


class NotApplicable(TypeError):
    """The stated form returned something the operator cannot mutate."""


def _number(v: Any, op: str) -> Any:
    if op == "scale":
        return v * 1.05
    if op == "nudge":
        return v * (1 + 1e-3)
    if op == "sign":
        return -v
    if isinstance(v, complex):
        raise NotApplicable("power of a complex number")
    return math.copysign(abs(v) ** 1.1, v)


def _is_boolean(value: Any) -> bool:
    """Whether ``value`` is a yes/no value of a numeric library: a sympy truth value or
    relation, or a numpy or torch array of bools (scaling one is not a wrong constant: numpy
    and torch would turn it into numbers, sympy raises)."""
    module = type(value).__module__.split(".")[0]
    if module == "sympy":
        import sympy as sp
        # a Symbol is a Boolean too (it can stand in logic), but as an expression it is a
        # number to mutate: li2.lemma3's correlation at n = m = 1 is the symbol r itself
        return isinstance(value, sp.logic.boolalg.Boolean) and not isinstance(value, sp.Expr)
    if module in ("numpy", "torch"):
        return str(getattr(value, "dtype", "")).removeprefix("torch.") == "bool"
    return False


def mutate_value(value: Any, op: str) -> Any:
    """``value`` with operator ``op`` applied (recursively into tuples, lists and dicts);
    :class:`NotApplicable` for a value that is not numeric."""
    if op not in OPERATORS:
        raise ValueError(f"operator: {op!r} is not one of {', '.join(OPERATORS)}")
    if isinstance(value, bool) or _is_boolean(value):
        raise NotApplicable(f"{type(value).__name__} is a yes/no value")
    if value is None or isinstance(value, str):
        raise NotApplicable(f"{type(value).__name__} is not a number")
    if isinstance(value, (int, float, complex)):
        return _number(value, op)
    if isinstance(value, tuple) and hasattr(value, "_fields"):     # a named tuple
        return type(value)(*(mutate_value(v, op) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(mutate_value(v, op) for v in value)
    if isinstance(value, Mapping):
        return {k: mutate_value(v, op) for k, v in value.items()}
    module = type(value).__module__.split(".")[0]
    if module == "torch":
        if op == "power":
            return value.sign() * value.abs() ** 1.1
        return value * 1.05 if op == "scale" else value * (1 + 1e-3) if op == "nudge" else -value
    if module == "numpy":
        import numpy as np
        if op == "power":
            return np.sign(value) * np.abs(value) ** 1.1
        return value * 1.05 if op == "scale" else value * (1 + 1e-3) if op == "nudge" else -value
    if module == "sympy":
        import sympy as sp
        factor = {"scale": sp.Rational(21, 20), "nudge": sp.Rational(1001, 1000)}
        if op in factor:
            return value * factor[op]
        if op == "sign":
            return -value
        if hasattr(value, "applyfunc"):                   # a matrix: entry by entry
            return value.applyfunc(lambda e: e ** sp.Rational(11, 10))
        return value ** sp.Rational(11, 10)
    raise NotApplicable(f"{type(value).__name__} is not a number")


def _same(a: Any, b: Any) -> bool:
    """Whether a mutated value equals the original (then that call was a no-op)."""
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping):
        return all(_same(a[k], b[k]) for k in a)
    module = type(a).__module__.split(".")[0]
    if module == "torch":
        import torch
        return bool(torch.equal(a, b))
    if module == "numpy":
        import numpy as np
        return bool(np.array_equal(a, b))
    if module == "sympy":
        import sympy as sp

        from theory.identity import ZeroStatus, is_zero
        if a == b:
            return True
        # Not sympy's simplify, which ran for hours on li2.thm8's muon_time^1.1: a no-op (the
        # sign of 0, a power of 1) is equal as it stands or after expand/cancel at once, and
        # an undecided difference counts as a change, which can only report a survivor.
        diff = sp.Matrix(a) - sp.Matrix(b) if hasattr(a, "shape") else a - b
        return is_zero(diff, timeout=SAME_TIMEOUT).status is ZeroStatus.ZERO
    return bool(a == b)


def mutant(fn: Callable[..., Any], op: str) -> Callable[..., Any]:
    """``fn`` with ``op`` applied to what it returns; ``mutant.changed`` counts the calls
    whose value the operator changed (0 after a run: the mutant was a no-op, e.g. a sign
    flip of zeros, a power of ones), and ``mutant.inapplicable`` holds why the operator could
    not apply to a returned value (:class:`NotApplicable`), whatever the check then did with
    the exception (a crash, or an item that caught it)."""
    def mutated(*args: Any, **kwargs: Any) -> Any:
        value = fn(*args, **kwargs)
        try:
            out = mutate_value(value, op)
        except NotApplicable as exc:
            mutated.inapplicable = mutated.inapplicable or str(exc)
            raise
        if not mutated.changed and not _same(value, out):
            mutated.changed += 1
        return out
    mutated.changed = 0
    mutated.inapplicable = ""
    mutated.__name__ = f"{getattr(fn, '__name__', 'form')}_{op}"
    mutated.__qualname__ = mutated.__name__
    return mutated


@dataclass(frozen=True)
class MutantOutcome:
    """What one mutant did: ``status`` (one of :data:`STATUSES`), the mutated run's verdict,
    and the items it turned (or why it survived)."""

    form: str
    operator: str
    status: str
    verdict: str
    detail: str = ""

    def as_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class MutationReport:
    """All mutants of one claim, against its baseline run."""

    claim_id: str
    baseline: str
    outcomes: list[MutantOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def gaps(self) -> list[MutantOutcome]:
        """Survivors the claim does not declare equivalent."""
        return [o for o in self.outcomes if o.status == "survived"]

    def summary(self) -> str:
        counts = ", ".join(f"{self.count(s)} {s}" for s in STATUSES if self.count(s))
        return f"{self.claim_id}: {len(self.outcomes)} mutants: {counts or 'none'}"

    def as_record(self) -> dict[str, Any]:
        return {"claim": self.claim_id, "baseline": self.baseline, "seconds": self.seconds,
                "counts": {s: self.count(s) for s in STATUSES},
                "outcomes": [o.as_record() for o in self.outcomes]}


def declared_equivalent(claim: Claim, form: str, op: str) -> str | None:
    """The claim's reason why ``op`` on ``form`` may survive (None: it may not)."""
    table = claim.equivalent_mutants
    return table.get(f"{form}:{op}") or table.get(f"{form}:*")


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _fingerprint(e: Any) -> tuple[Any, str, str]:
    """What a mutant can move in an item: its discrepancy and its stated and measured values
    (a sign indicator can enter the measured side, li2.fig8's)."""
    return e.discrepancy, repr(e.stated)[:400], repr(e.measured)[:400]


def _keyed(evidence: Sequence[Any]) -> dict[tuple[str, int], Any]:
    """Items by their quantity with the numbers in it blanked, and the occurrence of that
    name (a check yields its items in the same order, so the k-th "Z#: ..." item of one run
    is the k-th of another): an item may carry the stated value in its name ("order vs stated
    2" becomes "order vs stated 2.2" under an exponent mutant)."""
    seen: dict[str, int] = {}
    keyed = {}
    for e in evidence:
        name = _NUMBER.sub("#", e.quantity)
        keyed[(name, seen.get(name, 0))] = e
        seen[name] = seen.get(name, 0) + 1
    return keyed


def _turned(baseline: ClaimResult, result: ClaimResult
            ) -> tuple[list[str], list[str], list[str]]:
    """Items that agreed at the baseline and now disagree, or that the baseline did not have
    and that disagree (a mutant can send the check down another branch, li2.thm4's sign
    test of a negative threshold scale); those now undecided; and items that already disagreed
    (or were undecided) at the baseline that the mutant moved. Items are matched by
    :func:`_keyed`."""
    before_items = _keyed(baseline.evidence)
    failed, undecided, moved = [], [], []
    for key, after in _keyed(result.evidence).items():
        before = before_items.get(key)
        if before is None:
            if after.ok is False:
                failed.append(f"{after.quantity} (an item the baseline does not have)")
        elif before.ok is not True:     # failing or undecided at the baseline already
            if _fingerprint(after) != _fingerprint(before):
                moved.append(after.quantity)
        elif after.ok is False:
            failed.append(after.quantity)
        elif after.ok is None:
            undecided.append(after.quantity)
    return failed, undecided, moved


def plan(claim: Claim, operators: Sequence[str] = OPERATORS) -> list[tuple[str, str]]:
    """Every (form, operator) pair, forms in the claim's order."""
    return [(form, op) for form in claim.stated for op in operators]


def sample(claim: Claim, budget: int, operators: Sequence[str] = STRICT,
           seed: int = 0) -> list[tuple[str, str]]:
    """``budget`` pairs of :func:`plan`, chosen by a hash of the claim id and ``seed`` (the
    same claim and seed give the same mutants, on every machine)."""
    pairs = plan(claim, operators)
    start = zlib.crc32(f"{claim.id}:{seed}".encode()) % max(len(pairs), 1)
    step = max(1, len(pairs) // max(budget, 1))
    return [pairs[(start + k * step) % len(pairs)] for k in range(min(budget, len(pairs)))]


def mutate(claim: Claim, *, pairs: Sequence[tuple[str, str]] | None = None,
           fidelity: str = "quick", seed: int = 0, device: str = "cpu",
           dtype: str = "float64", baseline: ClaimResult | None = None,
           progress: Callable[[str], None] | None = None) -> MutationReport:
    """Plant each mutant of ``pairs`` (default: :func:`plan`, every operator on every form)
    in ``claim`` and run it at ``fidelity`` without its control; classify each against the
    baseline run (``baseline`` if given, e.g. a run the caller already has)."""
    import time

    start = time.perf_counter()
    settings = dict(fidelity=fidelity, seed=seed, device=device, dtype=dtype, control=False,
                    readings=False, sweeper=stored_sweep)
    base = baseline if baseline is not None else run_claim(claim, **settings)
    report = MutationReport(claim.id, base.verdict.value)
    for form, op in (plan(claim) if pairs is None else pairs):
        if form not in claim.stated:
            raise ValueError(f"form: {form!r} is not a stated form of {claim.id} "
                             f"({', '.join(claim.stated)})")
        planted_form = mutant(claim.stated[form], op)
        planted = dataclasses.replace(claim, stated={**claim.stated, form: planted_form})
        result = run_claim(planted, **settings)
        failed, undecided, moved = _turned(base, result)
        if planted_form.inapplicable:
            # a yes/no form (or a string): there is no wrong constant to plant, so its crash
            # says nothing about the check's power
            status, detail = "not applicable", planted_form.inapplicable
        elif result.verdict is Verdict.ERROR:
            status, detail = "killed", (result.error or result.reason).strip().splitlines()[-1]
        elif failed:
            status, detail = "killed", "; ".join(failed[:3])
        elif result.verdict is Verdict.FAIL and base.verdict is not Verdict.FAIL:
            # an item undecided at the baseline now fails: the check decides against it
            status, detail = "killed", result.reason
        elif undecided:
            status, detail = "undecided", "; ".join(undecided[:3])
        elif result.verdict is not base.verdict and result.verdict is not Verdict.PASS:
            # e.g. the stated route's own solver gives up on the mutant: no evidence
            status, detail = "undecided", result.reason
        elif moved:
            status, detail = "masked", ("read only by items that fail or are undecided at "
                                        "the baseline: " + "; ".join(moved[:3]))
        elif not any(e.ok is True for e in base.evidence):
            status, detail = "undecided", ("no item agrees at the baseline, so none can turn: "
                                           "this setting cannot test the form")
        elif not planted_form.changed:
            status, detail = "equivalent", ("no-op: the operator changed none of the values "
                                            "the form returned in this run")
        else:
            why = declared_equivalent(claim, form, op)
            status = "equivalent" if why else "survived"
            detail = why or "no item that agreed at the baseline disagrees"
        outcome = MutantOutcome(form, op, status, result.verdict.value, detail)
        report.outcomes.append(outcome)
        if progress:
            progress(f"{claim.id} {form}:{op} -> {status} ({detail[:80]})")
    report.seconds = time.perf_counter() - start
    return report
